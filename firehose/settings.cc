#include "firehose/settings.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "base/env/settings.h"
#include "base/fatal.h"

namespace gexrt::firehose {
namespace {

constexpr char kUseVar[] = "GASNET_USE_FIREHOSE";
constexpr char kMVar[] = "GASNET_FIREHOSE_M";
constexpr char kVictimMVar[] = "GASNET_FIREHOSE_MAXVICTIM_M";
constexpr char kRVar[] = "GASNET_FIREHOSE_R";
constexpr char kVictimRVar[] = "GASNET_FIREHOSE_MAXVICTIM_R";
constexpr char kRegionVar[] = "GASNET_FIREHOSE_MAXREGION_SIZE";
constexpr char kScaleVar[] = "GASNET_FIREHOSE_TABLE_SCALE";
constexpr char kVerboseVar[] = "GASNET_FIREHOSE_VERBOSE";
constexpr char kRegionsMaxVar[] = "GASNET_PINNED_REGIONS_MAX";

constexpr uint64_t kDefaultRegionSize = 128 << 10;
constexpr uint64_t kFallbackRegionsPerHost = 65536;

bool IsSet(const char* name) {
  std::optional<std::string> raw = env::GetRaw(name);
  return raw.has_value() && !raw->empty();
}

absl::Status Invalid(const char* name, const std::string& why) {
  std::optional<std::string> raw = env::GetRaw(name);
  return absl::InvalidArgumentError(absl::StrFormat(
      "environment variable %s has the invalid value \"%s\": %s", name,
      raw.value_or(""), why));
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

// GASNET_PINNED_REGIONS_MAX, as this rank's share.
absl::StatusOr<uint64_t> RegionsPerRank(const Resources& r) {
  uint64_t per_host = r.default_regions_per_host;
  if (per_host == 0) per_host = r.device_max_regions;
  if (per_host == 0) per_host = kFallbackRegionsPerHost;
  absl::StatusOr<double> value =
      env::TryGetDecimal(kRegionsMaxVar, static_cast<double>(per_host));
  if (!value.ok()) return value.status();
  if (!(*value > 0)) {
    return Invalid(kRegionsMaxVar, "not a positive fraction or count");
  }
  if (*value < 1.0) {
    if (r.device_max_regions == 0) {
      return Invalid(kRegionsMaxVar,
                     "a fraction of the device's region limit, which the "
                     "device does not report; give a count");
    }
    per_host = static_cast<uint64_t>(
        std::floor(*value * static_cast<double>(r.device_max_regions)));
  } else {
    if (*value != std::floor(*value) || *value > 1e18) {
      return Invalid(kRegionsMaxVar,
                     "a count must be a whole number (or give a fraction "
                     "below 1 of the device's limit)");
    }
    per_host = static_cast<uint64_t>(*value);
  }
  return std::max<uint64_t>(1,
                            per_host / std::max<uint32_t>(1, r.ranks_on_host));
}

}  // namespace

absl::StatusOr<Settings> SettingsFromEnv(const Resources& resources) {
  Settings s;
  s.bucket_size = resources.page_size != 0
                      ? resources.page_size
                      : static_cast<size_t>(sysconf(_SC_PAGESIZE));

  absl::StatusOr<bool> use = env::TryGetBool(kUseVar, true);
  if (!use.ok()) return use.status();
  if (!*use && resources.required) {
    return Invalid(kUseVar,
                   "firehose cannot be disabled here: the segment is not "
                   "pinned in advance, so RDMA needs dynamic registration");
  }
  s.enabled = *use;

  absl::StatusOr<bool> verbose = env::TryGetBool(kVerboseVar, false);
  if (!verbose.ok()) return verbose.status();
  s.verbose = *verbose;

  absl::StatusOr<double> scale = env::TryGetDecimal(kScaleVar, 1.0);
  if (!scale.ok()) return scale.status();
  if (!(*scale > 0) || !std::isfinite(*scale)) {
    return Invalid(kScaleVar, "the table scale must be a positive number");
  }
  s.table_scale = *scale;

  absl::StatusOr<uint64_t> regions = RegionsPerRank(resources);
  if (!regions.ok()) return regions.status();
  s.pinned_regions = *regions;

  // The two pools' bytes.
  const uint64_t pool = resources.pool_bytes;
  const bool m_set = IsSet(kMVar);
  const bool v_set = IsSet(kVictimMVar);
  uint64_t m_default =
      static_cast<uint64_t>(static_cast<double>(pool) *
                            std::clamp(resources.main_fraction, 0.0, 1.0));
  m_default -= m_default % s.bucket_size;
  uint64_t v_default = pool - m_default;
  if (m_set != v_set) {
    // One set: the other makes up the pool. (Each getter is read once, so
    // read the set one first.)
    if (m_set) {
      absl::StatusOr<uint64_t> m =
          env::TryGetSize(kMVar, m_default, env::SizeUnit::kMiB);
      if (!m.ok()) return m.status();
      v_default = pool > *m ? pool - *m : 0;
    } else {
      absl::StatusOr<uint64_t> v =
          env::TryGetSize(kVictimMVar, v_default, env::SizeUnit::kMiB);
      if (!v.ok()) return v.status();
      m_default = pool > *v ? pool - *v : 0;
    }
  }
  absl::StatusOr<uint64_t> m =
      env::TryGetSize(kMVar, m_default, env::SizeUnit::kMiB);
  if (!m.ok()) return m.status();
  absl::StatusOr<uint64_t> v =
      env::TryGetSize(kVictimMVar, v_default, env::SizeUnit::kMiB);
  if (!v.ok()) return v.status();
  s.m_bytes = *m;
  s.maxvictim_m_bytes = *v;
  if (s.m_bytes + s.maxvictim_m_bytes > pool && !env::Quiet()) {
    WarningF(
        "%s + %s = %d bytes is more than the %d bytes firehose was offered; "
        "pinning that much may exhaust the system's resources",
        kMVar, kVictimMVar, s.m_bytes + s.maxvictim_m_bytes, pool);
  }

  // The region size.
  absl::StatusOr<uint64_t> region =
      env::TryGetSize(kRegionVar, kDefaultRegionSize, env::SizeUnit::kMiB);
  if (!region.ok()) return region.status();
  if (*region == 0) {
    // The smallest power of two (of pages) that lets the regions address
    // both pools, up to a page of pages.
    const uint64_t total = s.m_bytes + s.maxvictim_m_bytes;
    const uint64_t cap = uint64_t{s.bucket_size} * s.bucket_size;
    uint64_t size = s.bucket_size;
    while (size < cap && CeilDiv(total, size) > s.pinned_regions) size *= 2;
    s.max_region_size = size;
  } else if (*region % s.bucket_size != 0) {
    return Invalid(kRegionVar,
                   absl::StrFormat("a region size must be a multiple of the "
                                   "page size (%d bytes), or 0 to choose one",
                                   s.bucket_size));
  } else {
    s.max_region_size = *region;
  }

  // The two pools' regions.
  const uint64_t total_regions = s.pinned_regions;
  const uint64_t bytes = s.m_bytes + s.maxvictim_m_bytes;
  uint64_t r_default =
      bytes == 0 ? total_regions / 2
                 : static_cast<uint64_t>(static_cast<double>(total_regions) *
                                         static_cast<double>(s.m_bytes) /
                                         static_cast<double>(bytes));
  uint64_t vr_default = total_regions - r_default;
  constexpr int64_t kMaxCount = int64_t{1} << 40;
  const bool r_set = IsSet(kRVar);
  const bool vr_set = IsSet(kVictimRVar);
  if (r_set != vr_set) {
    if (r_set) {
      absl::StatusOr<int64_t> r =
          env::TryGetInt(kRVar, r_default, 0, kMaxCount);
      if (!r.ok()) return r.status();
      vr_default =
          total_regions > static_cast<uint64_t>(*r) ? total_regions - *r : 0;
    } else {
      absl::StatusOr<int64_t> vr =
          env::TryGetInt(kVictimRVar, vr_default, 0, kMaxCount);
      if (!vr.ok()) return vr.status();
      r_default =
          total_regions > static_cast<uint64_t>(*vr) ? total_regions - *vr : 0;
    }
  }
  absl::StatusOr<int64_t> r = env::TryGetInt(kRVar, r_default, 0, kMaxCount);
  if (!r.ok()) return r.status();
  absl::StatusOr<int64_t> vr =
      env::TryGetInt(kVictimRVar, vr_default, 0, kMaxCount);
  if (!vr.ok()) return vr.status();
  if (static_cast<uint64_t>(*r + *vr) > total_regions && !env::Quiet()) {
    WarningF(
        "%s + %s = %d regions is more than this rank's share of %s (%d); "
        "registering that many may exhaust the device's resources",
        kRVar, kVictimRVar, *r + *vr, kRegionsMaxVar, total_regions);
  }
  // Regions a pool cannot fill are of no use: cut them silently.
  s.r_regions = std::min<uint64_t>(*r, CeilDiv(s.m_bytes, s.max_region_size));
  s.maxvictim_r_regions =
      std::min<uint64_t>(*vr, CeilDiv(s.maxvictim_m_bytes, s.max_region_size));
  return s;
}

LocalLimits LocalLimitsFor(const Settings& s) {
  LocalLimits limits;
  limits.bucket_size = s.bucket_size;
  limits.max_region_size = s.max_region_size;
  limits.max_pinned_bytes = s.m_bytes + s.maxvictim_m_bytes;
  limits.max_pinned_regions = s.r_regions + s.maxvictim_r_regions;
  limits.max_victim_bytes = s.maxvictim_m_bytes;
  limits.max_victim_regions = s.maxvictim_r_regions;
  limits.table_scale = s.table_scale;
  limits.verbose = s.verbose;
  return limits;
}

absl::StatusOr<RemoteLimits> RemoteLimitsFor(const Settings& s,
                                             uint32_t peers) {
  RemoteLimits limits;
  limits.bucket_size = s.bucket_size;
  limits.max_region_size = s.max_region_size;
  limits.table_scale = s.table_scale;
  limits.verbose = s.verbose;
  if (peers == 0) return limits;
  limits.max_bytes_per_peer = s.m_bytes / peers;
  limits.max_bytes_per_peer -= limits.max_bytes_per_peer % s.bucket_size;
  limits.max_regions_per_peer = s.r_regions / peers;
  if (limits.max_bytes_per_peer == 0 || limits.max_regions_per_peer == 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "firehose: %s = %d bytes in %s = %d regions, shared among %d peers, "
        "leaves a peer less than one page or one region; raise them",
        kMVar, s.m_bytes, kRVar, s.r_regions, peers));
  }
  limits.max_victim_bytes_per_peer = limits.max_bytes_per_peer;
  limits.max_victim_regions_per_peer = limits.max_regions_per_peer;
  return limits;
}

}  // namespace gexrt::firehose
