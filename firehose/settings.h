// Firehose's GASNET_* settings, read once at start-up, and the cache limits
// they imply.
//
// Firehose splits the memory it may pin into two pools (GASNet's scheme):
// the main pool, GASNET_FIREHOSE_M bytes in GASNET_FIREHOSE_R regions, is
// what peers may have pinned here on their behalf (each of N-1 peers gets
// 1/(N-1) of it); the victim pool, GASNET_FIREHOSE_MAXVICTIM_M bytes in
// GASNET_FIREHOSE_MAXVICTIM_R regions, is what this rank keeps pinned for
// its own use and unreferenced. Defaults:
//
//   GASNET_USE_FIREHOSE            yes (no is an error where the conduit
//                                  needs firehose: segment not pre-pinned)
//   GASNET_FIREHOSE_M              75% of the pool the conduit offers
//   GASNET_FIREHOSE_MAXVICTIM_M    the rest of the pool
//                                  (one set: the other is the pool minus it)
//   GASNET_PINNED_REGIONS_MAX      the conduit's default per host (from the
//                                  device), divided among the host's ranks; a
//                                  value below 1 is a fraction of the device's
//                                  region limit, else a count
//   GASNET_FIREHOSE_R              the regions split like M : MAXVICTIM_M
//   GASNET_FIREHOSE_MAXVICTIM_R    (one set: the other is the rest), each cut
//                                  to what its pool can address
//   GASNET_FIREHOSE_MAXREGION_SIZE 128K; 0 picks the smallest power of two
//                                  that lets the regions address both pools
//   GASNET_FIREHOSE_TABLE_SCALE    1 (scales the index tables' initial size)
//   GASNET_FIREHOSE_VERBOSE        no
//
// Sizes take the K/M/G/T suffixes of base/env/parse.h, and without one are
// in megabytes. A malformed or impossible value is an InvalidArgument
// naming the variable. Enlarging the total beyond the pool is allowed with
// a warning.
#ifndef GEX_FIREHOSE_SETTINGS_H_
#define GEX_FIREHOSE_SETTINGS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "firehose/local_cache.h"
#include "firehose/remote_cache.h"

namespace gexrt::firehose {

// What the conduit knows and firehose does not.
struct Resources {
  // The memory firehose may pin in this process: with a segment that is
  // not pre-pinned, the most the process may pin (after
  // GASNET_PHYSMEM_MAX); with a pre-pinned segment, the size of the bounce
  // buffer pool it replaces.
  uint64_t pool_bytes = 0;
  // The share of pool_bytes that goes to the main pool by default: 0.75
  // where the segment is not pre-pinned; smaller where it is (the main
  // pool then serves only internal uses).
  double main_fraction = 0.75;
  // The device's limit on registrations (ibv's max_mr); 0 if unknown.
  uint64_t device_max_regions = 0;
  // The default for GASNET_PINNED_REGIONS_MAX (per host); 0 means
  // device_max_regions, or 65536 if that is unknown too.
  uint64_t default_regions_per_host = 0;
  // Ranks on this host sharing the device.
  uint32_t ranks_on_host = 1;
  // The bucket size; 0 means the system page size.
  size_t page_size = 0;
  // Whether the conduit cannot work without firehose (its segment is not
  // pre-pinned): GASNET_USE_FIREHOSE=0 is then an error.
  bool required = false;
};

struct Settings {
  bool enabled = true;
  uint64_t m_bytes = 0;
  uint64_t maxvictim_m_bytes = 0;
  uint64_t r_regions = 0;
  uint64_t maxvictim_r_regions = 0;
  uint64_t max_region_size = 0;
  // GASNET_PINNED_REGIONS_MAX's share for this rank.
  uint64_t pinned_regions = 0;
  double table_scale = 1.0;
  bool verbose = false;
  size_t bucket_size = 0;
};

// Reads and checks every setting above.
absl::StatusOr<Settings> SettingsFromEnv(const Resources& resources);

// The local cache's limits: everything pinned within M + MAXVICTIM_M bytes
// and R + MAXVICTIM_R regions, victims within MAXVICTIM_M / _R.
LocalLimits LocalLimitsFor(const Settings& settings);

// The remote cache's limits for a rank with `peers` peers: 1/peers of M and
// R at each peer, all of which may be kept as victims. FailedPrecondition
// naming the settings when that leaves a peer less than one bucket or one
// region.
absl::StatusOr<RemoteLimits> RemoteLimitsFor(const Settings& settings,
                                             uint32_t peers);

}  // namespace gexrt::firehose

#endif  // GEX_FIREHOSE_SETTINGS_H_
