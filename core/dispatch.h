// Inbound dispatch: running the handler of a message that arrived, from
// whichever transport brought it. The PSHM network and the conduit each
// hand their messages to one of the two entry points below; both end in
// the same checks (the handler is registered, for this category and kind,
// with this many arguments) and the same call.
#ifndef GEX_CORE_DISPATCH_H_
#define GEX_CORE_DISPATCH_H_

#include "am/token.h"
#include "am/vocabulary.h"
#include "core/conduit.h"
#include "pshm/am_network.h"

namespace gexrt::core {

class Runtime;

// The PSHM network's dispatcher; `context` is the core::Runtime.
void DispatchShared(void* context, const pshm::Message& m);
// The conduit's Sink; `context` is the core::Runtime.
void DispatchConduit(void* context, const Inbound& m);

// The C API call that sends a message of `category` as a Request or a
// Reply ("gex_AM_RequestMedium"), for messages about it.
inline const char* SendCallName(am::Category category, bool request) {
  static const char* const kNames[2][3] = {
      {"gex_AM_ReplyShort", "gex_AM_ReplyMedium", "gex_AM_ReplyLong"},
      {"gex_AM_RequestShort", "gex_AM_RequestMedium", "gex_AM_RequestLong"}};
  return kNames[request][static_cast<int>(category)];
}

}  // namespace gexrt::core

#endif  // GEX_CORE_DISPATCH_H_
