#include "conduit/ibv/memory_limits.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gexrt::ibv {
namespace {

std::string Errno(int err) { return std::strerror(err); }

std::string RlimitToString(rlim_t value) {
  if (value == RLIM_INFINITY) return "unlimited";
  return absl::StrCat(static_cast<uint64_t>(value), " bytes");
}

// "1.5 GiB"-style, for messages.
std::string Bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

uint64_t PageSize() {
  const long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<uint64_t>(page) : 4096;
}

}  // namespace

absl::Status MaximizeMemlock(bool enabled) {
  if (!enabled) return absl::OkStatus();
  rlimit limit;
  if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) {
    const int err = errno;
    return absl::InternalError(absl::StrCat(
        "GASNET_MAXIMIZE_MEMLOCK: getrlimit(RLIMIT_MEMLOCK) failed: ",
        Errno(err)));
  }
  if (limit.rlim_cur == limit.rlim_max) return absl::OkStatus();
  const rlim_t old_soft = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_MEMLOCK, &limit) != 0) {
    const int err = errno;
    return absl::PermissionDeniedError(absl::StrCat(
        "GASNET_MAXIMIZE_MEMLOCK: could not raise RLIMIT_MEMLOCK from ",
        RlimitToString(old_soft), " to its hard limit ",
        RlimitToString(limit.rlim_max), ": ", Errno(err)));
  }
  return absl::OkStatus();
}

uint64_t MlockProber::PinnableBytes(uint64_t limit) {
  const uint64_t page = PageSize();
  const uint64_t cap = limit / page * page;  // never map more than asked
  const uint64_t min_step =
      std::max<uint64_t>(page, options_.min_step / page * page);
  const absl::Time deadline = absl::Now() + options_.deadline;

  std::vector<std::pair<void*, uint64_t>> locked;
  uint64_t total = 0;
  uint64_t step = cap;
  int attempts = 0;
  while (total < cap && step >= min_step && attempts < options_.max_attempts &&
         absl::Now() < deadline) {
    ++attempts;
    const uint64_t size = std::min(step, cap - total);
    void* region = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED) {
      step = step / 2 / page * page;
      continue;
    }
    if (mlock(region, size) != 0) {
      const int err = errno;
      munmap(region, size);
      // EPERM: no privilege and a zero limit, so nothing more will lock.
      if (err == EPERM) break;
      step = step / 2 / page * page;
      continue;
    }
    locked.emplace_back(region, size);
    total += size;
  }
  for (const auto& [region, size] : locked) {
    munlock(region, size);
    munmap(region, size);
  }
  return total == cap ? limit : total;
}

uint64_t PhysicalMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "MemTotal:")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    const bool kib = absl::ConsumeSuffix(&rest, "kB");
    rest = absl::StripAsciiWhitespace(rest);
    uint64_t value = 0;
    if (absl::SimpleAtoi(rest, &value) && value > 0) {
      return kib ? value * 1024 : value;
    }
    break;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  if (pages <= 0) return 0;
  return static_cast<uint64_t>(pages) * PageSize();
}

absl::StatusOr<PhysmemPlan> PlanPhysmem(const Settings& settings,
                                        uint32_t ranks_on_host,
                                        uint64_t physical_bytes,
                                        Prober* prober) {
  if (ranks_on_host == 0) {
    return absl::InvalidArgumentError("PlanPhysmem: no ranks on this host");
  }
  if (physical_bytes == 0) physical_bytes = PhysicalMemoryBytes();
  if (physical_bytes == 0) {
    return absl::InvalidArgumentError(
        "cannot tell this host's physical memory (no MemTotal in "
        "/proc/meminfo, no sysconf(_SC_PHYS_PAGES)) to resolve "
        "GASNET_PHYSMEM_MAX");
  }
  // Unset means the README's default of 2/3, whatever the struct holds,
  // computed exactly (the double 2/3 is a little less than two thirds).
  const env::MemoryAmount amount = settings.physmem_max_set
                                       ? settings.physmem_max
                                       : env::MemoryAmount::Fraction(2.0 / 3.0);
  const uint64_t host_bytes =
      settings.physmem_max_set
          ? amount.Resolve(physical_bytes)
          : physical_bytes / 3 * 2 + physical_bytes % 3 * 2 / 3;
  if (host_bytes > physical_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GASNET_PHYSMEM_MAX=", amount.ToString(), " (", Bytes(host_bytes),
        ") is more than this host's physical memory (", Bytes(physical_bytes),
        "); give at most that, or a fraction such as 2/3"));
  }

  PhysmemPlan plan;
  plan.bytes = host_bytes / ranks_on_host;
  if (!settings.physmem_probe || plan.bytes == 0) return plan;
  if (prober == nullptr) {
    return absl::InvalidArgumentError(
        "PlanPhysmem: GASNET_PHYSMEM_PROBE is on but no prober was given");
  }
  const uint64_t asked = plan.bytes;
  const uint64_t found = std::min(prober->PinnableBytes(asked), asked);
  plan.bytes = found;
  plan.probed = true;
  if (found < asked && settings.physmem_warn) {
    rlimit limit{};
    const std::string memlock = getrlimit(RLIMIT_MEMLOCK, &limit) == 0
                                    ? RlimitToString(limit.rlim_cur)
                                    : std::string("unknown");
    plan.note = absl::StrCat(
        "WARNING: GASNET_PHYSMEM_MAX", settings.physmem_max_set ? "=" : " ",
        settings.physmem_max_set ? amount.ToString() : "default 2/3",
        " allows ", Bytes(asked), " of pinned memory per rank (",
        Bytes(host_bytes), " shared by ", ranks_on_host,
        " ranks), but GASNET_PHYSMEM_PROBE could pin only ", Bytes(found),
        "; using that. RLIMIT_MEMLOCK (ulimit -l) is ", memlock,
        " (GASNET_MAXIMIZE_MEMLOCK=", settings.maximize_memlock ? 1 : 0,
        "). Raise the limit or lower GASNET_PHYSMEM_MAX; "
        "GASNET_PHYSMEM_WARN=0 silences this.");
  }
  return plan;
}

OdpChoice ChooseOdp(const Settings& settings, const verbs::DeviceAttr& attr,
                    uint32_t rank) {
  OdpChoice choice;
  if (!settings.use_odp) return choice;
  if (attr.odp_supported) {
    choice.use = true;
    choice.access_flags = verbs::kAccessOnDemand;
    return choice;
  }
  const bool speaks =
      settings.odp_verbose >= 2 || (settings.odp_verbose == 1 && rank == 0);
  if (speaks) {
    choice.note = absl::StrCat(
        "WARNING: rank ", rank,
        ": GASNET_USE_ODP is on but the device does not support on-demand "
        "paging; registering without it (GASNET_USE_ODP=0 or "
        "GASNET_ODP_VERBOSE=0 silences this).");
  }
  return choice;
}

}  // namespace gexrt::ibv
