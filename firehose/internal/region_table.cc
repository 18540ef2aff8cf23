#include "firehose/internal/region_table.h"

#include <cassert>

namespace gexrt::firehose::internal {

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

}  // namespace gexrt::firehose::internal
