#include "conduit/ibv/verbs/select.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/env/settings.h"
#include "conduit/ibv/verbs/ibverbs_device.h"
#include "conduit/ibv/verbs/soft_device.h"

namespace gexrt::ibv::verbs {
namespace {

absl::StatusOr<Selection> Software(const std::string& job_key,
                                   std::string reason) {
  SoftDeviceOptions options;
  options.job_key = job_key;
  absl::StatusOr<int64_t> count =
      env::TryGetInt(kSoftwareDevicesVariable, 1, 1, kMaxSoftDevices);
  if (!count.ok()) return count.status();
  options.num_devices = static_cast<uint32_t>(*count);
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
