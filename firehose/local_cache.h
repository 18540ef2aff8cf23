// The local half of firehose: a cache of pinned regions of this process's
// memory, so that RDMA from or to memory outside the pinned segment pins
// each page once rather than once per transfer.
//
// Memory is pinned in regions: runs of whole buckets (aligned blocks of
// `bucket_size` bytes, normally the page size) of at most
// `max_region_size` bytes. A request for [addr, addr + length) is a hit
// when one region already covers its buckets: it costs a hash lookup and a
// reference count, and never allocates. A miss pins a new region over the
// request's buckets, taking in any unreferenced region it overlaps, so
// neighbouring requests end up sharing one registration.
//
// A region with holders is never unpinned. When its last hold is released
// it becomes a victim: still pinned, kept in least-recently-used order for
// the next request that needs it, and unpinned (oldest first) when a new
// region needs room or the victims exceed their own bound. Limits hold
// exactly: the bytes and regions pinned through the Pinner never exceed
// max_pinned_bytes / max_pinned_regions, nor the victims theirs.
//
// When a miss cannot get room even after evicting every victim (the rest
// is held by operations in flight), TryAcquire says so with an Unavailable
// status and pins nothing: the caller polls its network, so that
// operations complete and release their holds, and tries again. Acquire
// does that loop with the caller's poll function. A request that could
// never fit fails with another code.
//
//   absl::StatusOr<LocalCache::Hold> hold = cache.Acquire(
//       addr, len, [&] { conduit.Poll(); });
//   if (!hold.ok()) return hold.status();
//   PostRdmaWrite(addr, len, hold->registration().local_key, ...);
//   ...                    // on completion:
//   cache.Release(*hold);
//
// Thread-safe: any thread may acquire and release. One lock guards the
// cache. A miss pins without holding it, so other threads' hits do not
// wait for the device; a request for a region still being pinned by
// another thread is Unavailable until the pin completes.
#ifndef GEX_FIREHOSE_LOCAL_CACHE_H_
#define GEX_FIREHOSE_LOCAL_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "firehose/internal/region_table.h"
#include "firehose/pinner.h"

namespace gexrt::firehose {

struct LocalLimits {
  // Alignment and granularity of every pinning: a power of two.
  size_t bucket_size = 4096;
  // The largest region: a multiple of bucket_size.
  size_t max_region_size = 128 << 10;
  // Bounds on everything pinned at once, in use or victim.
  size_t max_pinned_bytes = 0;
  size_t max_pinned_regions = 0;
  // Bounds on the victims (pinned, unreferenced).
  size_t max_victim_bytes = 0;
  size_t max_victim_regions = 0;
  // Scales the index's initial size (GASNET_FIREHOSE_TABLE_SCALE).
  double table_scale = 1.0;
  // Report the limits at creation and the counters at destruction.
  bool verbose = false;
};

// InvalidArgument naming the first field that breaks the rules above.
absl::Status ValidateLocalLimits(const LocalLimits& limits);

class LocalCache {
 public:
  // A reference to a pinned region, from Acquire to Release. Copyable
  // (a pointer); release it exactly once.
  class Hold {
   public:
    Hold() = default;
    const Registration& registration() const { return region_->registration; }
    uint64_t local_key() const { return region_->registration.local_key; }
    uint64_t remote_key() const { return region_->registration.remote_key; }
    bool valid() const { return region_ != nullptr; }

   private:
    friend class LocalCache;
    explicit Hold(internal::Region* region) : region_(region) {}
    internal::Region* region_ = nullptr;
  };

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;  // Every TryAcquire that was not a hit.
    uint64_t pins = 0;
    uint64_t unpins = 0;
    uint64_t evictions = 0;    // Victims unpinned to make room.
    uint64_t unavailable = 0;  // TryAcquire calls told to wait.
    size_t pinned_bytes = 0;
    size_t pinned_regions = 0;
    size_t victim_bytes = 0;
    size_t victim_regions = 0;
  };

  // `pinner` must outlive the cache. Invalid limits: InvalidArgument.
  static absl::StatusOr<std::unique_ptr<LocalCache>> Create(
      const LocalLimits& limits, Pinner* pinner);

  // Unpins every region. Holds still outstanding are a caller bug; their
  // regions are unpinned all the same (and reported when verbose).
  ~LocalCache();
  LocalCache(const LocalCache&) = delete;
  LocalCache& operator=(const LocalCache&) = delete;

  // A hold on a region covering [addr, addr + length), pinning one if
  // needed. Errors:
  //  - Unavailable: no room until holds are released, or the region is
  //    being pinned by another thread; nothing changed (victims may have
  //    been evicted). Poll and retry.
  //  - InvalidArgument: length 0, or the request spans more than one
  //    region can (see Acquirable).
  //  - ResourceExhausted: the request is larger than the limits could ever
  //    allow.
  //  - whatever the Pinner returned, with the range added to the message.
  absl::StatusOr<Hold> TryAcquire(uintptr_t addr, size_t length);

  // TryAcquire, calling `poll` between tries while it is Unavailable.
  absl::StatusOr<Hold> Acquire(uintptr_t addr, size_t length,
                               absl::FunctionRef<void()> poll);

  // Ends a hold; a region left with no holders becomes a victim (or is
  // unpinned, when it can no longer be found or the victims are full).
  void Release(Hold hold);

  // How many bytes from `addr` one hold can cover: min(length, the rest of
  // the largest region that starts at addr's bucket). A conduit splits a
  // longer transfer into chunks of this size.
  size_t Acquirable(uintptr_t addr, size_t length) const;

  // The memory [addr, addr + length) is going away (munmap, free of a huge
  // block): victims over it are unpinned now, and regions in use over it
  // are unpinned at their last release and never found again.
  void Invalidate(uintptr_t addr, size_t length);

  // Unpins every victim.
  void Flush();

  Stats stats() const;
  const LocalLimits& limits() const { return limits_; }

 private:
  LocalCache(const LocalLimits& limits, Pinner* pinner);

  // Unpins and deletes an unreferenced region.
  void EvictLocked(internal::Region* region);
  // Unpins the oldest victims until the victim bounds hold.
  void TrimVictimsLocked();

  const LocalLimits limits_;
  Pinner* const pinner_;
  mutable std::mutex mu_;  // Guards everything below.
  internal::RegionTable table_;
  Stats stats_;
  // Scratch for misses, kept to avoid allocating each time.
  std::vector<internal::Region*> overlap_;
};

}  // namespace gexrt::firehose

#endif  // GEX_FIREHOSE_LOCAL_CACHE_H_
