// Which device ports the ibv conduit uses (its rails), from what the verbs
// provider lists and GASNET_IBV_PORTS.
//
// Without a filter, the first active port of every device is used; a
// filter entry "hca" takes that device's first active port, "hca:1,2"
// those ports (each must be active). GASNET_NUM_QPS then says how many
// queue pairs go to each peer: 0 one per port, more than the ports
// round-robin over them.
#ifndef GEX_CONDUIT_IBV_PORTS_H_
#define GEX_CONDUIT_IBV_PORTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/env/parse.h"
#include "conduit/ibv/verbs/types.h"

namespace gexrt::ibv {

// One port as the provider reported it.
struct PortInfo {
  std::string device;
  uint8_t port = 1;
  verbs::PortAttr attr;
};

// The ports to use, in the order of the filter (or of the listing), each
// active and each at most once. Errors (NotFound) name `variable`, what
// it asked for and what the listing has: a device or port that does not
// exist or is not active, or no active port at all.
absl::StatusOr<std::vector<PortInfo>> ChoosePorts(
    const std::vector<PortInfo>& listing,
    const std::vector<env::PortSpec>& filter, const std::string& variable);

// The listing as lines for GASNET_IBV_LIST_PORTS: "gexsoft0:1 ACTIVE lid 3
// mtu 4096".
std::string DescribePorts(const std::vector<PortInfo>& ports);

}  // namespace gexrt::ibv

#endif  // GEX_CONDUIT_IBV_PORTS_H_
