// The job's segments as the RMA engine reads them: for every rank, where
// its segment lies in its owner's addresses and, when the owner is a
// supernode peer, where that segment is mapped in this process.
//
// The table itself belongs to core/ (core/segment_table.h), which fills it
// when the segments are attached; the engine and the API's checks only
// read it, through this view, so rma/ knows nothing of how a segment came
// to be mapped (PSHM today) or registered (a conduit).
//
//   const SegmentView& v = ...;
//   if (void* p = v.Translate(rank, addr, n)) std::memcpy(p, src, n);
//   else if (v.Contains(rank, addr, n)) { /* conduit RDMA or AMs */ }
#ifndef GEX_RMA_SEGMENT_VIEW_H_
#define GEX_RMA_SEGMENT_VIEW_H_

#include <cstddef>
#include <cstdint>

#include "absl/types/span.h"
#include "bootstrap/bootstrap.h"

namespace gexrt::rma {

// One rank's segment.
struct SegmentEntry {
  uintptr_t base = 0;  // In the owner's addresses.
  size_t size = 0;     // 0: no segment.
  // Where the segment is mapped here (a supernode peer's, this rank's
  // own), or null when it can be reached only through the network.
  unsigned char* local = nullptr;
};

class SegmentView {
 public:
  SegmentView() = default;
  explicit SegmentView(absl::Span<const SegmentEntry> entries)
      : entries_(entries) {}

  // Whether the segments have been attached (before that no rank has one).
  bool attached() const { return !entries_.empty(); }

  // Rank `r`'s segment (all zero before attach).
  SegmentEntry segment(Rank r) const {
    return r < entries_.size() ? entries_[r] : SegmentEntry{};
  }

  // Whether [address, +len) lies in rank `r`'s segment (len 0: the
  // address lies in it or at its end).
  bool Contains(Rank r, uintptr_t address, size_t len) const {
    if (r >= entries_.size()) return false;
    const SegmentEntry& s = entries_[r];
    return address >= s.base && len <= s.size &&
           address - s.base <= s.size - len;
  }

  // Where [address, +len) of rank `r`'s segment (an address as `r` sees
  // it) is mapped in this process, for direct loads and stores; null when
  // the segment is not mapped here or the range is not inside it.
  void* Translate(Rank r, uintptr_t address, size_t len) const {
    if (r >= entries_.size()) return nullptr;
    const SegmentEntry& s = entries_[r];
    if (s.local == nullptr || address < s.base || len > s.size ||
        address - s.base > s.size - len) {
      return nullptr;
    }
    return s.local + (address - s.base);
  }

 private:
  absl::Span<const SegmentEntry> entries_;
};

}  // namespace gexrt::rma

#endif  // GEX_RMA_SEGMENT_VIEW_H_
