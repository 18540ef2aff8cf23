#include "firehose/internal/region_table.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <string>

#include "absl/strings/str_format.h"
#include "base/job_rank.h"
#include "base/stderr_line.h"

namespace gexrt::firehose::internal {

absl::Status BucketRange(uintptr_t addr, size_t length, size_t bucket_size,
                         size_t max_region, uintptr_t* lo, uintptr_t* hi) {
  if (length == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("firehose: empty range at 0x%x", addr));
  }
  if (addr > std::numeric_limits<uintptr_t>::max() - length - bucket_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "firehose: range [0x%x, +%d) wraps the address space", addr, length));
  }
  *lo = addr & ~(bucket_size - 1);
  *hi = (addr + length + bucket_size - 1) & ~(bucket_size - 1);
  if (*hi - *lo > max_region) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "firehose: range [0x%x, +%d) spans %d bytes of buckets, more than "
        "the largest region (%d bytes, GASNET_FIREHOSE_MAXREGION_SIZE); split "
        "it (Acquirable)",
        addr, length, *hi - *lo, max_region));
  }
  return absl::OkStatus();
}

absl::Status ValidateGeometry(size_t bucket_size, size_t max_region,
                              double table_scale) {
  if (bucket_size == 0 || (bucket_size & (bucket_size - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "firehose: bucket size %d is not a power of two", bucket_size));
  }
  if (max_region == 0 || max_region % bucket_size != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "firehose: the largest region (%d bytes) is not a positive multiple "
        "of the bucket size (%d bytes)",
        max_region, bucket_size));
  }
  if (!(table_scale > 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "firehose: table scale %g is not positive", table_scale));
  }
  return absl::OkStatus();
}

size_t ReserveBuckets(size_t max_bytes, size_t bucket_size, double scale,
                      size_t cap) {
  const size_t base = std::min<size_t>(max_bytes / bucket_size, cap);
  return static_cast<size_t>(static_cast<double>(base) * scale);
}

void VerboseLine(std::string_view line) {
  const int rank = JobRank();
  WriteStderrLine(absl::StrFormat(
      "firehose (proc %s): %s",
      rank == kUnknownRank ? std::string("?") : absl::StrFormat("%d", rank),
      line));
}

RegionTable::RegionTable(size_t bucket_size, size_t reserve_buckets)
    : bucket_size_(bucket_size) {
  buckets_.reserve(reserve_buckets);
}

RegionTable::~RegionTable() {
  for (Region* region : live_) delete region;
}

Region* RegionTable::FindCovering(uintptr_t lo, uintptr_t hi) const {
  auto it = buckets_.find(lo);
  if (it == buckets_.end()) return nullptr;
  Region* region = it->second;
  return hi <= region->end() ? region : nullptr;
}

void RegionTable::Overlapping(uintptr_t lo, uintptr_t hi,
                              std::vector<Region*>* out) const {
  Region* last = nullptr;
  for (uintptr_t b = lo; b < hi; b += bucket_size_) {
    auto it = buckets_.find(b);
    if (it == buckets_.end() || it->second == last) continue;
    last = it->second;
    bool seen = false;
    for (Region* r : *out) seen = seen || r == last;
    if (!seen) out->push_back(last);
  }
}

Region* RegionTable::Add(uintptr_t base, size_t length) {
  Region* region = new Region;
  region->base = base;
  region->length = length;
  for (uintptr_t b = base; b < base + length; b += bucket_size_) {
    Region*& slot = buckets_[b];
    if (slot != nullptr) {
      assert(!slot->victim);
      --slot->owned_buckets;
    }
    slot = region;
  }
  region->owned_buckets = length / bucket_size_;
  live_.insert(region);
  bytes_ += length;
  return region;
}

void RegionTable::Detach(Region* region) {
  if (region->owned_buckets == 0) return;
  for (uintptr_t b = region->base; b < region->end(); b += bucket_size_) {
    auto it = buckets_.find(b);
    if (it != buckets_.end() && it->second == region) buckets_.erase(it);
  }
  region->owned_buckets = 0;
}

void RegionTable::Delete(Region* region) {
  if (region->victim) RemoveVictim(region);
  Detach(region);
  live_.erase(region);
  bytes_ -= region->length;
  delete region;
}

void RegionTable::MakeVictim(Region* region) {
  assert(!region->victim && region->refs == 0 && FullyOwned(region));
  region->victim = true;
  region->older = newest_;
  region->newer = nullptr;
  if (newest_ != nullptr) {
    newest_->newer = region;
  } else {
    oldest_ = region;
  }
  newest_ = region;
  victim_bytes_ += region->length;
  ++victims_;
}

void RegionTable::RemoveVictim(Region* region) {
  assert(region->victim);
  if (region->older != nullptr) {
    region->older->newer = region->newer;
  } else {
    oldest_ = region->newer;
  }
  if (region->newer != nullptr) {
    region->newer->older = region->older;
  } else {
    newest_ = region->older;
  }
  region->older = region->newer = nullptr;
  region->victim = false;
  victim_bytes_ -= region->length;
  --victims_;
}

MissPlan PlanMiss(const RegionTable& table, uintptr_t lo, uintptr_t hi,
                  size_t max_bytes, size_t max_regions, size_t max_region,
                  std::vector<Region*>* overlap) {
  overlap->clear();
  table.Overlapping(lo, hi, overlap);
  MissPlan plan;
  plan.held_bytes = table.bytes() - table.victim_bytes();
  plan.held_regions = table.regions() - table.victims();
  const size_t room =
      plan.held_bytes < max_bytes ? max_bytes - plan.held_bytes : 0;
  plan.lo = lo;
  plan.hi = hi;
  for (const Region* other : *overlap) {
    if (!other->victim) continue;
    const uintptr_t merged_lo = std::min(plan.lo, other->base);
    const uintptr_t merged_hi = std::max(plan.hi, other->end());
    if (merged_hi - merged_lo <= max_region && merged_hi - merged_lo <= room) {
      plan.lo = merged_lo;
      plan.hi = merged_hi;
    }
  }
  plan.fits = plan.held_bytes + (plan.hi - plan.lo) <= max_bytes &&
              plan.held_regions + 1 <= max_regions;
  return plan;
}

}  // namespace gexrt::firehose::internal
