// Which implementation of the verbs interface a process uses.
//
// GASNET_IBV_SOFTWARE_DEVICE (boolean, unset by default):
//   yes  the software device (soft_device.h), whatever hardware exists;
//   no   libibverbs, even if it finds no device (the conduit then says so);
//   unset: libibverbs when ibv_get_device_list finds a device, else the
//        software device.
// GASNET_IBV_SOFTWARE_DEVICES (1..8, default 1): how many software devices
// (gexsoft0, gexsoft1, ...) it lists, for multi-rail runs.
// GASNET_IBV_SOFTWARE_PKEYS (comma-separated 16-bit values, default
// 0xffff): the software ports' P_Key table, index 0 first, in place of the
// one a subnet manager would set (for testing GASNET_IBV_PKEY).
// The software device only connects processes of one host: a conduit that
// gets it for a job spanning hosts must refuse with a clear message
// (Selection::reason says why it was chosen).
#ifndef GEX_CONDUIT_IBV_VERBS_SELECT_H_
#define GEX_CONDUIT_IBV_VERBS_SELECT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "conduit/ibv/verbs/verbs.h"

namespace gexrt::ibv::verbs {

inline constexpr char kSoftwareDeviceVariable[] = "GASNET_IBV_SOFTWARE_DEVICE";
inline constexpr char kSoftwareDevicesVariable[] =
    "GASNET_IBV_SOFTWARE_DEVICES";
inline constexpr char kSoftwarePkeysVariable[] = "GASNET_IBV_SOFTWARE_PKEYS";
inline constexpr char kSoftwareMaxProcsVariable[] =
    "GASNET_IBV_SOFTWARE_MAX_PROCS";

struct Selection {
  std::unique_ptr<Provider> provider;
  std::string reason;  // one line, for GASNET_VERBOSEENV-style reporting
};

// `job_key` names the software device's instance (the same on every rank
// of the job; soft_device.h). A malformed setting is InvalidArgument naming
// the variable.
absl::StatusOr<Selection> SelectProvider(const std::string& job_key);

}  // namespace gexrt::ibv::verbs

#endif  // GEX_CONDUIT_IBV_VERBS_SELECT_H_
