#include "pshm/segment_limits.h"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "base/string_view.h"
#include "pshm/shared_object.h"

namespace gexrt::pshm {
namespace {

constexpr char kVariable[] = "GASNET_MAX_SEGSIZE";

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrFormat("%u bytes", bytes)
                   : absl::StrFormat("%.1f %s", value, units[unit]);
}

std::string_view SharedMemoryPlace() {
  if (MechanismName() == "posix") return "free in /dev/shm";
  if (MechanismName() == "sysv") return "left under the SysV limits";
  return "free in the PSHM file directory";
}

}  // namespace

std::string MaxSegSize::ToString() const {
  return absl::StrFormat("%s/%s", amount.ToString(), per_host ? "H" : "P");
}

absl::StatusOr<MaxSegSize> ParseMaxSegSize(std::string_view text) {
  std::string_view amount_text = text;
  std::optional<bool> per_host;
  if (size_t slash = text.rfind('/'); slash != std::string_view::npos) {
    std::string suffix =
        absl::AsciiStrToUpper(ToAbsl(StripWhitespace(text.substr(slash + 1))));
    if (suffix == "H" || suffix == "P") {
      per_host = suffix == "H";
      amount_text = text.substr(0, slash);
    }
    // Anything else after '/' is a fraction such as "5/8".
  }
  absl::StatusOr<env::MemoryAmount> amount =
      env::ParseMemoryAmount(amount_text, env::SizeUnit::kBytes);
  if (!amount.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s; optionally followed by /H (for the whole host) or /P (per "
        "process)",
        amount.status().message()));
  }
  MaxSegSize result;
  result.amount = *amount;
  result.per_host = per_host.value_or(amount->is_fraction);
  return result;
}

absl::StatusOr<MaxSegSize> TryMaxSegSizeFromEnv() {
  const std::string text = env::GetString(kVariable, "0.85/H");
  absl::StatusOr<MaxSegSize> parsed = ParseMaxSegSize(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "environment variable %s has the invalid value \"%s\": %s", kVariable,
        text, parsed.status().message()));
  }
  return parsed;
}

MaxSegSize MaxSegSizeFromEnv() {
  absl::StatusOr<MaxSegSize> parsed = TryMaxSegSizeFromEnv();
  if (!parsed.ok()) FatalError(ToStd(parsed.status().message()));
  return *parsed;
}

uint64_t MaxLocalSegmentSize(const SegmentLimitInputs& in) {
  const uint32_t ranks = std::max<uint32_t>(in.host_ranks, 1);
  uint64_t limit = in.max_segsize.amount.Resolve(in.physical_memory);
  if (in.max_segsize.per_host) limit /= ranks;
  limit = std::min(limit, in.shared_available / ranks);
  const uint64_t page = std::max<uint64_t>(in.page_size, 1);
  return limit / page * page;
}

std::string DescribeSegmentLimit(const SegmentLimitInputs& in) {
  return absl::StrFormat(
      "%s=%s of %s physical memory, %s %s, shared by %u rank(s) on this host",
      kVariable, in.max_segsize.ToString(), HumanBytes(in.physical_memory),
      HumanBytes(in.shared_available), SharedMemoryPlace(),
      std::max<uint32_t>(in.host_ranks, 1));
}

SegmentLimitInputs CurrentSegmentLimitInputs(uint32_t host_ranks) {
  return CurrentSegmentLimitInputs(host_ranks, MaxSegSizeFromEnv());
}

SegmentLimitInputs CurrentSegmentLimitInputs(uint32_t host_ranks,
                                             const MaxSegSize& max_segsize) {
  SegmentLimitInputs in;
  in.max_segsize = max_segsize;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  in.page_size = page > 0 ? static_cast<uint64_t>(page) : 4096;
  in.physical_memory =
      pages > 0 ? static_cast<uint64_t>(pages) * in.page_size : 0;
  in.shared_available = AvailableSharedMemory();
  in.host_ranks = host_ranks;
  return in;
}

}  // namespace gexrt::pshm
