// core::CreateConduit() for the socket conduit: linked into a final
// library (gex_conduit(name = "socket", ...)) it makes the socket conduit
// the process's conduit, and SocketConduit::Created() the instance.
#include <memory>

#include "core/conduit.h"
#include "core/testing/socket_conduit.h"

namespace gexrt {

std::unique_ptr<core::Conduit> core::CreateConduit() {
  auto conduit = std::make_unique<core::testing::SocketConduit>();
  core::testing::SocketConduit::SetCreated(conduit.get());
  return conduit;
}

}  // namespace gexrt
