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

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "base/env/parse.h"
#include "conduit/ibv/verbs/types.h"

namespace gexrt::ibv {

// One port as the provider reported it.
struct PortInfo {
  std::string device;
  uint8_t port = 1;
  verbs::PortAttr attr;
  // False for a port of a device the filter does not name: listed (for
  // messages) but never opened, so `attr` says nothing about it.
  bool queried = true;
  // The P_Key the QPs on this port use and its table index (FindPkeyIndex;
  // index 0 without GASNET_IBV_PKEY).
  uint16_t pkey = 0;
  uint16_t pkey_index = 0;
};

// The ports to use, in the order of the filter (or of the listing), each
// active and each at most once. Errors (NotFound) name `variable`, what
// it asked for and what the listing has: a device or port that does not
// exist or is not active, or no active port at all.
absl::StatusOr<std::vector<PortInfo>> ChoosePorts(
    const std::vector<PortInfo>& listing,
    const std::vector<env::PortSpec>& filter, const std::string& variable);

// What GASNET_IBV_PORTS_VERBOSE reports about the probe that chose
// `chosen` from `listing` with `filter` (`variable` names it), one line
// each: at 1 (the default), every port the filter admits but that was left
// out because it is not active; at 2 and more, every port listed and what
// was decided for it. Nothing at 0.
std::vector<std::string> DescribeProbe(const std::vector<PortInfo>& listing,
                                       const std::vector<PortInfo>& chosen,
                                       const std::vector<env::PortSpec>& filter,
                                       const std::string& variable,
                                       uint32_t verbose);

// Where GASNET_IBV_PKEY's `key` (15 bits, 2..0x7fff) is in a port's P_Key
// table of `table_len` entries, read through `entry(index)`: a full-member
// entry (0x8000 set) if the table has one, else a limited one. NotFound
// names the setting, `port_name` and the keys the table holds.
absl::StatusOr<uint16_t> FindPkeyIndex(
    uint16_t key, uint16_t table_len,
    absl::FunctionRef<absl::StatusOr<uint16_t>(uint16_t index)> entry,
    const std::string& port_name);

// The listing as lines for GASNET_IBV_LIST_PORTS: "gexsoft0:1 ACTIVE lid 3
// mtu 4096 pkey 0xffff (index 0)".
std::string DescribePorts(const std::vector<PortInfo>& ports);

}  // namespace gexrt::ibv

#endif  // GEX_CONDUIT_IBV_PORTS_H_
