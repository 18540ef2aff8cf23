#include "core/segment_table.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace gexrt::core {
namespace {

TEST(SegmentTableTest, NothingIsAttachedBeforeFill) {
  SegmentTable table;
  EXPECT_FALSE(table.attached());
  EXPECT_EQ(table.segment(0).size, 0u);
  EXPECT_FALSE(table.Contains(0, 0, 0));
  EXPECT_EQ(table.Translate(0, 0, 0), nullptr);
}

TEST(SegmentTableTest, TranslatesMappedPeersAndBoundsEveryRange) {
  std::vector<unsigned char> mine(4096), peer(4096);
  SegmentTable table;
  const rma::SegmentView& view = table.view();  // Handed out before Fill.
  std::vector<rma::SegmentEntry> entries(3);
  entries[0] = {0x10000, 4096, mine.data()};  // This rank.
  entries[1] = {0x20000, 4096, peer.data()};  // A supernode peer.
  entries[2] = {0x30000, 8192, nullptr};      // Off the supernode.
  table.Fill(entries);
  ASSERT_TRUE(view.attached());

  EXPECT_EQ(view.Translate(1, 0x20000, 4096), peer.data());
  EXPECT_EQ(view.Translate(1, 0x20000 + 4095, 1), peer.data() + 4095);
  EXPECT_EQ(view.Translate(1, 0x20000 + 4095, 2), nullptr);  // Past the end.
  EXPECT_EQ(view.Translate(1, 0x20000 - 1, 1), nullptr);     // Before it.
  EXPECT_EQ(view.Translate(1, 0x20001, SIZE_MAX), nullptr);  // Wraps.
  EXPECT_EQ(view.Translate(0, 0x10000, 1), mine.data());

  // A remote rank's segment is known but not mapped here.
  EXPECT_TRUE(view.Contains(2, 0x30000, 8192));
  EXPECT_FALSE(view.Contains(2, 0x30000, 8193));
  EXPECT_EQ(view.Translate(2, 0x30000, 1), nullptr);

  // Ranks outside the job have no segment.
  EXPECT_FALSE(view.Contains(3, 0, 0));
  EXPECT_EQ(view.Translate(3, 0, 0), nullptr);
}

}  // namespace
}  // namespace gexrt::core
