// The bookkeeping both firehose caches share: which bucket-aligned regions
// exist, which region each bucket maps to, their reference counts, and the
// LRU list of unreferenced ("victim") regions. Not thread-safe: the cache
// that owns a table locks around it. Internal to //firehose.
//
// Regions never overlap in the index: a bucket maps to at most one region.
// A new region that covers buckets of a region still in use takes those
// buckets over ("shadows" them); the old region stays alive for its holders
// and is dropped when the last one lets go, since a region that no longer
// owns all its buckets is never kept as a victim. A victim always owns all
// its buckets.
#ifndef GEX_FIREHOSE_INTERNAL_REGION_TABLE_H_
#define GEX_FIREHOSE_INTERNAL_REGION_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "firehose/pinner.h"

namespace gexrt::firehose::internal {

// A region's state. A local region is kPending while its pin runs (outside
// the cache's lock), then kReady. A remote region is kPending from the move
// request until the peer's answer, then kReady or kFailed.
enum class RegionState : uint8_t { kPending, kReady, kFailed };

struct Region {
  uintptr_t base = 0;
  size_t length = 0;
  Registration registration;
  uint32_t refs = 0;
  // How many of the region's buckets map to it.
  size_t owned_buckets = 0;
  // Remote regions: what the move protocol calls this pinning.
  uint64_t ticket = 0;
  // Written under the owner's lock; read by holders without it.
  std::atomic<RegionState> state{RegionState::kReady};
  absl::Status failure;  // When kFailed.
  // Victim list links, while `victim`.
  bool victim = false;
  Region* older = nullptr;
  Region* newer = nullptr;

  uintptr_t end() const { return base + length; }
};

// The buckets [*lo, *hi) that cover [addr, addr + length). InvalidArgument
// for an empty range, one that wraps the address space, or one whose buckets
// span more than `max_region` bytes.
absl::Status BucketRange(uintptr_t addr, size_t length, size_t bucket_size,
                         size_t max_region, uintptr_t* lo, uintptr_t* hi);

// InvalidArgument unless bucket_size is a power of two, max_region a
// positive multiple of it and table_scale positive.
absl::Status ValidateGeometry(size_t bucket_size, size_t max_region,
                              double table_scale);

// Index entries to reserve for a table of up to `max_bytes`.
size_t ReserveBuckets(size_t max_bytes, size_t bucket_size, double scale,
                      size_t cap);

// Writes a GASNET_FIREHOSE_VERBOSE line: "firehose (proc N): <line>".
void VerboseLine(std::string_view line);

class RegionTable;

// Where a miss on [lo, hi) (bucket-aligned) would pin, in a table whose
// held (non-victim) regions and the new one may use at most `max_bytes` in
// `max_regions`: the range grown over the victims it overlaps, as far as
// one region of `max_region` bytes and the room beside the held regions
// allow (only victims can make room, so merging never turns a request that
// fits into one that does not). `overlap` gets the regions the range
// overlaps; the caller evicts the victims among them before adding the new
// region.
struct MissPlan {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  size_t held_bytes = 0;
  size_t held_regions = 0;
  // The new region fits once every victim is gone.
  bool fits = false;
};
MissPlan PlanMiss(const RegionTable& table, uintptr_t lo, uintptr_t hi,
                  size_t max_bytes, size_t max_regions, size_t max_region,
                  std::vector<Region*>* overlap);

class RegionTable {
 public:
  // `bucket_size` is a power of two; `reserve_buckets` sizes the index.
  RegionTable(size_t bucket_size, size_t reserve_buckets);
  // Frees every region (without unpinning: the owner does that first).
  ~RegionTable();
  RegionTable(const RegionTable&) = delete;
  RegionTable& operator=(const RegionTable&) = delete;

  size_t bucket_size() const { return bucket_size_; }
  uintptr_t AlignDown(uintptr_t a) const { return a & ~(bucket_size_ - 1); }
  uintptr_t AlignUp(uintptr_t a) const {
    return (a + bucket_size_ - 1) & ~(bucket_size_ - 1);
  }

  // The region that owns the bucket at `lo` when it covers [lo, hi);
  // nullptr otherwise. Does not allocate.
  Region* FindCovering(uintptr_t lo, uintptr_t hi) const;

  // The distinct regions owning any bucket of [lo, hi) (bucket-aligned),
  // appended to `out`.
  void Overlapping(uintptr_t lo, uintptr_t hi, std::vector<Region*>* out) const;

  // A new region over [base, base + length) (bucket-aligned), unreferenced,
  // not a victim, owning all its buckets. No bucket in the range may belong
  // to a victim.
  Region* Add(uintptr_t base, size_t length);

  // Gives up every bucket `region` owns, so no lookup finds it again; it
  // stays alive (and counted) until Delete.
  void Detach(Region* region);

  // Removes `region` from the index and the victim list, and frees it.
  void Delete(Region* region);

  bool FullyOwned(const Region* region) const {
    return region->owned_buckets == region->length / bucket_size_;
  }

  // The victim list: MakeVictim appends as the newest; OldestVictim is the
  // next to evict (nullptr when none).
  void MakeVictim(Region* region);
  void RemoveVictim(Region* region);
  Region* OldestVictim() const { return oldest_; }

  // Over every live region, detached ones included.
  size_t bytes() const { return bytes_; }
  size_t regions() const { return live_.size(); }
  size_t victim_bytes() const { return victim_bytes_; }
  size_t victims() const { return victims_; }
  const absl::flat_hash_set<Region*>& live() const { return live_; }

 private:
  const size_t bucket_size_;
  absl::flat_hash_map<uintptr_t, Region*> buckets_;  // By bucket address.
  absl::flat_hash_set<Region*> live_;
  Region* oldest_ = nullptr;
  Region* newest_ = nullptr;
  size_t bytes_ = 0;
  size_t victim_bytes_ = 0;
  size_t victims_ = 0;
};

}  // namespace gexrt::firehose::internal

#endif  // GEX_FIREHOSE_INTERNAL_REGION_TABLE_H_
