// The job-wide segment table: every rank's segment (where it lies in its
// owner's addresses) and, for supernode peers, where it is mapped here.
// Filled once, when the segments are attached (core::AttachSegment); read
// by the API's checks, the RMA engine (through rma::SegmentView) and the
// AM router's Long path.
#ifndef GEX_CORE_SEGMENT_TABLE_H_
#define GEX_CORE_SEGMENT_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "rma/segment_view.h"

namespace gexrt::core {

class SegmentTable {
 public:
  SegmentTable() = default;
  SegmentTable(const SegmentTable&) = delete;
  SegmentTable& operator=(const SegmentTable&) = delete;

  // Sets the table (by job rank); afterwards attached() is true.
  void Fill(std::vector<rma::SegmentEntry> entries);

  bool attached() const { return view_.attached(); }
  // The table as the RMA engine reads it; the same object for the life of
  // the process, so it may be handed out before Fill.
  const rma::SegmentView& view() const { return view_; }

  rma::SegmentEntry segment(Rank r) const { return view_.segment(r); }
  bool Contains(Rank r, uintptr_t address, size_t len) const {
    return view_.Contains(r, address, len);
  }
  void* Translate(Rank r, uintptr_t address, size_t len) const {
    return view_.Translate(r, address, len);
  }

 private:
  std::vector<rma::SegmentEntry> entries_;
  rma::SegmentView view_;
};

}  // namespace gexrt::core

#endif  // GEX_CORE_SEGMENT_TABLE_H_
