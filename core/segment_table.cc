#include "core/segment_table.h"

#include <utility>

namespace gexrt::core {

void SegmentTable::Fill(std::vector<rma::SegmentEntry> entries) {
  entries_ = std::move(entries);
  view_ = rma::SegmentView(entries_);
}

}  // namespace gexrt::core
