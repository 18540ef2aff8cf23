#include "firehose/local_cache.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_format.h"

namespace gexrt::firehose {
absl::Status ValidateLocalLimits(const LocalLimits& limits) {
  return internal::ValidateGeometry(limits.bucket_size, limits.max_region_size,
                                    limits.table_scale);
}

absl::StatusOr<std::unique_ptr<LocalCache>> LocalCache::Create(
    const LocalLimits& limits, Pinner* pinner) {
  if (absl::Status s = ValidateLocalLimits(limits); !s.ok()) return s;
  if (pinner == nullptr) {
    return absl::InvalidArgumentError("firehose: no pinner");
  }
  return std::unique_ptr<LocalCache>(new LocalCache(limits, pinner));
}

LocalCache::LocalCache(const LocalLimits& limits, Pinner* pinner)
    : limits_(limits),
      pinner_(pinner),
      table_(
          limits.bucket_size,
          internal::ReserveBuckets(limits.max_pinned_bytes, limits.bucket_size,
                                   limits.table_scale, size_t{1} << 16)) {
  if (limits_.verbose) {
    internal::VerboseLine(absl::StrFormat(
        "local cache: at most %d bytes in %d regions pinned, "
        "%d bytes in %d regions as victims; regions of up to %d bytes in "
        "buckets of %d",
        limits_.max_pinned_bytes, limits_.max_pinned_regions,
        limits_.max_victim_bytes, limits_.max_victim_regions,
        limits_.max_region_size, limits_.bucket_size));
  }
}

LocalCache::~LocalCache() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t held = 0;
  for (internal::Region* region : table_.live()) {
    if (region->refs > 0) ++held;
    pinner_->Unpin(region->registration);
    ++stats_.unpins;
  }
  if (limits_.verbose) {
    internal::VerboseLine(absl::StrFormat(
        "local cache: %d hits, %d misses, %d pins, %d unpins, %d "
        "evictions, %d waits; %d regions still held at exit",
        stats_.hits, stats_.misses, stats_.pins, stats_.unpins,
        stats_.evictions, stats_.unavailable, held));
  }
  // table_'s destructor frees the regions.
}

absl::StatusOr<LocalCache::Hold> LocalCache::TryAcquire(uintptr_t addr,
                                                        size_t length) {
  uintptr_t lo;
  uintptr_t hi;
  if (absl::Status s = internal::BucketRange(addr, length, limits_.bucket_size,
                                             limits_.max_region_size, &lo, &hi);
      !s.ok()) {
    return s;
  }

  std::unique_lock<std::mutex> lock(mu_);
  // The hit path: a lookup and a count, no allocation.
  if (internal::Region* region = table_.FindCovering(lo, hi)) {
    if (region->state.load(std::memory_order_relaxed) ==
        internal::RegionState::kPending) {
      ++stats_.misses;
      ++stats_.unavailable;
      return absl::UnavailableError(absl::StrFormat(
          "firehose: [0x%x, +%d) is being pinned by another thread; poll and "
          "retry",
          addr, length));
    }
    if (region->victim) table_.RemoveVictim(region);
    ++region->refs;
    ++stats_.hits;
    return Hold(region);
  }

  ++stats_.misses;
  if (hi - lo > limits_.max_pinned_bytes || limits_.max_pinned_regions == 0) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "firehose: range [0x%x, +%d) needs %d pinned bytes; the limits allow "
        "%d bytes in %d regions (GASNET_FIREHOSE_M, GASNET_FIREHOSE_R and "
        "their victim pools)",
        addr, length, hi - lo, limits_.max_pinned_bytes,
        limits_.max_pinned_regions));
  }

  // Take in the victims the request overlaps, as far as one region can.
  const internal::MissPlan plan = internal::PlanMiss(
      table_, lo, hi, limits_.max_pinned_bytes, limits_.max_pinned_regions,
      limits_.max_region_size, &overlap_);
  const uintptr_t new_lo = plan.lo;
  const size_t need = plan.hi - plan.lo;

  // Room check before any eviction: only victims can make room.
  if (!plan.fits) {
    ++stats_.unavailable;
    return absl::UnavailableError(absl::StrFormat(
        "firehose: no room to pin [0x%x, +%d): %d bytes in %d regions are "
        "held by operations in flight (limits: %d bytes, %d regions); poll "
        "and retry",
        new_lo, need, plan.held_bytes, plan.held_regions,
        limits_.max_pinned_bytes, limits_.max_pinned_regions));
  }
  // The victims the new region replaces go first, then the oldest others.
  for (internal::Region* other : overlap_) {
    if (other->victim) EvictLocked(other);
  }
  while (table_.bytes() + need > limits_.max_pinned_bytes ||
         table_.regions() + 1 > limits_.max_pinned_regions) {
    EvictLocked(table_.OldestVictim());
    ++stats_.evictions;
  }

  // Reserve the region (it counts against the limits from now on), then pin
  // without the lock: other threads' hits and releases need not wait for
  // the device. A request for it meanwhile is told to retry.
  internal::Region* region = table_.Add(new_lo, need);
  region->state.store(internal::RegionState::kPending,
                      std::memory_order_relaxed);
  region->refs = 1;
  lock.unlock();
  absl::StatusOr<Registration> registration = pinner_->Pin(new_lo, need);
  lock.lock();
  if (!registration.ok()) {
    table_.Delete(region);
    return absl::Status(
        registration.status().code(),
        absl::StrFormat("firehose: pinning [0x%x, +%d) failed: %s", new_lo,
                        need, registration.status().message()));
  }
  ++stats_.pins;
  region->registration = *registration;
  region->state.store(internal::RegionState::kReady, std::memory_order_relaxed);
  return Hold(region);
}

absl::StatusOr<LocalCache::Hold> LocalCache::Acquire(
    uintptr_t addr, size_t length, absl::FunctionRef<void()> poll) {
  while (true) {
    absl::StatusOr<Hold> hold = TryAcquire(addr, length);
    if (hold.ok() || !absl::IsUnavailable(hold.status())) return hold;
    poll();
  }
}

void LocalCache::Release(Hold hold) {
  internal::Region* region = hold.region_;
  std::lock_guard<std::mutex> lock(mu_);
  if (--region->refs > 0) return;
  if (!table_.FullyOwned(region)) {
    // Shadowed by a newer region or invalidated: no lookup can find it.
    EvictLocked(region);
    return;
  }
  if (region->length > limits_.max_victim_bytes ||
      limits_.max_victim_regions == 0) {
    // Could never be kept: unpin it rather than push out the others.
    EvictLocked(region);
    return;
  }
  table_.MakeVictim(region);
  TrimVictimsLocked();
}

size_t LocalCache::Acquirable(uintptr_t addr, size_t length) const {
  const uintptr_t lo = addr & ~(limits_.bucket_size - 1);
  return std::min<size_t>(length, limits_.max_region_size - (addr - lo));
}

void LocalCache::Invalidate(uintptr_t addr, size_t length) {
  if (length == 0) return;
  const uintptr_t lo = addr & ~(limits_.bucket_size - 1);
  const uintptr_t hi =
      (addr + length + limits_.bucket_size - 1) & ~(limits_.bucket_size - 1);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<internal::Region*> overlap;
  table_.Overlapping(lo, hi, &overlap);
  for (internal::Region* region : overlap) {
    if (region->refs == 0) {
      EvictLocked(region);
    } else {
      table_.Detach(region);
    }
  }
}

void LocalCache::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  while (internal::Region* victim = table_.OldestVictim()) EvictLocked(victim);
}

LocalCache::Stats LocalCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats stats = stats_;
  stats.pinned_bytes = table_.bytes();
  stats.pinned_regions = table_.regions();
  stats.victim_bytes = table_.victim_bytes();
  stats.victim_regions = table_.victims();
  return stats;
}

void LocalCache::EvictLocked(internal::Region* region) {
  pinner_->Unpin(region->registration);
  ++stats_.unpins;
  table_.Delete(region);
}

void LocalCache::TrimVictimsLocked() {
  while (table_.victim_bytes() > limits_.max_victim_bytes ||
         table_.victims() > limits_.max_victim_regions) {
    EvictLocked(table_.OldestVictim());
    ++stats_.evictions;
  }
}

}  // namespace gexrt::firehose
