// The ucx conduit's environment settings (conduit/ucx/README.md lists them
// with their defaults), read once at start-up and checked together, so that
// a bad value is one message naming the variable before any UCX resource
// exists.
//
// Two kinds of variable share the GASNET_UCX_ prefix. Ours (kOwnVariables:
// GASNET_UCX_MAX_MEDIUM, ..._SPAWNER, ...) are read here. UCX's own
// settings for our context alone (GASNET_UCX_TLS, GASNET_UCX_NET_DEVICES,
// any GASNET_UCX_<key> that `ucx_info -f` lists as UCX_<key>) are read by
// UCX itself: the conduit passes "GASNET" as the prefix of
// ucp_config_read. HiddenOwnVariables keeps ours out of UCX's sight while
// it reads, so UCX never reports them as unused (the seed's bug 4301),
// while a misspelt UCX setting under our prefix still gets its warning.
#ifndef GEX_CONDUIT_UCX_SETTINGS_H_
#define GEX_CONDUIT_UCX_SETTINGS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gexrt::ucx {

struct Settings {
  // GASNET_UCX_MAX_MEDIUM: the Medium payload LUB, and so the size of the
  // pre-allocated AM buffers (at least 512).
  size_t max_medium = 3992;
  // GASNET_UCX_AM_ORDERED_TLS: a Long's header may follow its RMA payload
  // without waiting for the payload's remote completion. Unset: the
  // conduit decides (yes when PSHM carries all traffic within each host).
  std::optional<bool> am_ordered_tls;
  // GASNET_UCX_MAX_REQUEST_BUFFS / _MAX_REPLY_BUFFS: the most send buffers
  // of each pool (each max_medium plus headers); a send waits for one.
  size_t max_request_buffs = 1024;
  size_t max_reply_buffs = 1024;
  // GASNET_UCX_STATS: each rank prints one line of counters at exit.
  bool print_stats = false;
  // GASNET_UCX_OFFLOAD_ATOMICS: remote atomics UCP performs (integer add,
  // sub, inc, dec, and, or, xor, set, swap, cas, get, fetching or not) go
  // through UCP; 0 keeps every atomic domain on the generic path.
  bool offload_atomics = true;
  // GASNET_UCX_TLS and GASNET_UCX_NET_DEVICES as set (for messages; UCX
  // reads them itself). Empty: unset.
  std::string tls;
  std::string net_devices;
};

inline constexpr size_t kMinMaxMedium = 512;
inline constexpr size_t kDefaultMaxMedium = 3992;

// The GASNET_UCX_* variables that are ours, not UCX's.
inline constexpr const char* kOwnVariables[] = {
    "GASNET_UCX_MAX_MEDIUM",      "GASNET_UCX_SPAWNER",
    "GASNET_UCX_AM_ORDERED_TLS",  "GASNET_UCX_MAX_REQUEST_BUFFS",
    "GASNET_UCX_MAX_REPLY_BUFFS", "GASNET_UCX_STATS",
    "GASNET_UCX_OFFLOAD_ATOMICS",
};

// Reads and checks every setting, GASNET_UCX_TLS's names included (see
// CheckTransportList). A malformed or out-of-range value is an error
// naming the variable.
absl::StatusOr<Settings> ReadSettings();

// Whether every entry of a UCX_TLS-style list (`value` of `variable`) is a
// transport or alias UCX 1.13 knows ("tcp", "sm", "^cma", "\\posix",
// "all", ...). Whether one is available on this host is UCX's to say, at
// ucp_init; this catches a misspelling with a message naming the variable
// and what UCX accepts, instead of a warning followed by "no such device".
absl::Status CheckTransportList(const char* variable, const std::string& value);

// While alive, the variables of kOwnVariables are absent from the
// environment (unset, restored by the destructor). Only for the single-
// threaded moment of ucp_config_read, ucp_init and the first
// ucp_worker_create (where UCX reports unused variables).
class HiddenOwnVariables {
 public:
  HiddenOwnVariables();
  ~HiddenOwnVariables();
  HiddenOwnVariables(const HiddenOwnVariables&) = delete;
  HiddenOwnVariables& operator=(const HiddenOwnVariables&) = delete;

 private:
  std::vector<std::pair<std::string, std::string>> saved_;
};

}  // namespace gexrt::ucx

#endif  // GEX_CONDUIT_UCX_SETTINGS_H_
