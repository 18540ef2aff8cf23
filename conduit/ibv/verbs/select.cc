#include "conduit/ibv/verbs/select.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/env/parse.h"
#include "base/env/settings.h"
#include "conduit/ibv/verbs/ibverbs_device.h"
#include "conduit/ibv/verbs/soft_device.h"

namespace gexrt::ibv::verbs {
namespace {

// GASNET_IBV_SOFTWARE_PKEYS: "0xffff,0x8123" -> {0xffff, 0x8123}.
absl::Status ReadPkeyTable(std::vector<uint16_t>* table) {
  std::optional<std::string> raw = env::GetRaw(kSoftwarePkeysVariable);
  if (!raw.has_value() || raw->empty()) return absl::OkStatus();
  std::vector<uint16_t> keys;
  const std::vector<std::string> entries = absl::StrSplit(*raw, ',');
  for (const std::string& entry : entries) {
    absl::StatusOr<int64_t> key = env::ParseInt(entry, 0, 0xffff);
    if (!key.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("environment variable ", kSoftwarePkeysVariable, "=",
                       *raw, ": '", entry, "': ", key.status().message(),
                       " (a comma-separated list of 16-bit P_Keys)"));
    }
    keys.push_back(static_cast<uint16_t>(*key));
  }
  *table = std::move(keys);
  return absl::OkStatus();
}

absl::StatusOr<Selection> Software(const std::string& job_key,
                                   std::string reason) {
  SoftDeviceOptions options;
  options.job_key = job_key;
  absl::StatusOr<int64_t> count =
      env::TryGetInt(kSoftwareDevicesVariable, 1, 1, kMaxSoftDevices);
  if (!count.ok()) return count.status();
  options.num_devices = static_cast<uint32_t>(*count);
  // Every rank of a host opens the device once: a job of more ranks per
  // host than this fails at Init with the device's "more than N
  // processes" error. Queue memory is sparse, so a larger value costs
  // address space, not memory.
  absl::StatusOr<int64_t> max_procs =
      env::TryGetInt(kSoftwareMaxProcsVariable, 64, 1, 4095);
  if (!max_procs.ok()) return max_procs.status();
  options.max_procs = static_cast<uint32_t>(*max_procs);
  if (absl::Status s = ReadPkeyTable(&options.pkeys); !s.ok()) return s;
  auto provider = MakeSoftProvider(options);
  if (!provider.ok()) return provider.status();
  return Selection{std::move(*provider), std::move(reason)};
}

}  // namespace

absl::StatusOr<Selection> SelectProvider(const std::string& job_key) {
  std::optional<std::string> raw = env::GetRaw(kSoftwareDeviceVariable);
  if (raw.has_value() && !raw->empty()) {
    absl::StatusOr<bool> soft = env::TryGetBool(kSoftwareDeviceVariable, false);
    if (!soft.ok()) return soft.status();
    if (*soft) {
      return Software(job_key, absl::StrCat("the software device (",
                                            kSoftwareDeviceVariable, "=yes)"));
    }
    return Selection{
        MakeIbverbsProvider(),
        absl::StrCat("libibverbs (", kSoftwareDeviceVariable, "=no)")};
  }
  std::unique_ptr<Provider> hw = MakeIbverbsProvider();
  absl::StatusOr<std::vector<DeviceInfo>> devices = hw->ListDevices();
  if (devices.ok() && !devices->empty()) {
    return Selection{
        std::move(hw),
        absl::StrCat("libibverbs (", devices->size(), " device(s) found)")};
  }
  return Software(job_key,
                  absl::StrCat("the software device (libibverbs found no "
                               "device; ",
                               kSoftwareDeviceVariable, " unset)"));
}

}  // namespace gexrt::ibv::verbs
