#include "am/handler_table.h"

#include "gtest/gtest.h"

namespace gexrt::am {
namespace {

void Fn() {}
const HandlerFn kFn = &Fn;
constexpr uint32_t kShortReq = kFlagShort | kFlagRequest;

TEST(HandlerTableTest, AssignsFreeIndicesAroundFixedOnes) {
  HandlerTable table;
  Entry e[3] = {{0, kFn, kShortReq, 0, nullptr, "a"},
                {128, kFn, kShortReq, 1, nullptr, "b"},
                {0, kFn, kFlagMedium | kFlagReply, 2, nullptr, "c"}};
  ASSERT_TRUE(table.Register(e, 3, false).ok());
  EXPECT_EQ(e[0].index, 129);
  EXPECT_EQ(e[1].index, 128);
  EXPECT_EQ(e[2].index, 130);
  ASSERT_NE(table.Find(130), nullptr);
  EXPECT_STREQ(table.Find(130)->name, "c");
  EXPECT_EQ(table.Find(131), nullptr);
}

TEST(HandlerTableTest, RejectsBadEntriesAndLeavesTableUnchanged) {
  HandlerTable table;
  Entry dup[2] = {{200, kFn, kShortReq, 0, nullptr, "x"},
                  {200, kFn, kShortReq, 0, nullptr, "y"}};
  absl::Status s = table.Register(dup, 2, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("index 200 is already registered"),
            std::string::npos);
  EXPECT_EQ(table.Find(200), nullptr);

  Entry low{5, kFn, kShortReq, 0, nullptr, nullptr};
  EXPECT_NE(table.Register(&low, 1, false).message().find("outside"),
            std::string::npos);
  Entry many{0, kFn, kShortReq, 17, nullptr, "m"};
  EXPECT_NE(table.Register(&many, 1, false).message().find("gex_nargs 17"),
            std::string::npos);
  Entry noflags{0, kFn, kFlagShort, 0, nullptr, "f"};
  EXPECT_FALSE(table.Register(&noflags, 1, false).ok());
  Entry null{0, nullptr, kShortReq, 0, nullptr, "n"};
  EXPECT_FALSE(table.Register(&null, 1, false).ok());
  Entry mixed{0, kFn, kFlagShort | kFlagLong | kFlagRequest, 0, nullptr, "x"};
  EXPECT_FALSE(table.Register(&mixed, 1, false).ok());
}

TEST(HandlerTableTest, RunsOutOfIndices) {
  HandlerTable table;
  Entry e[129];
  for (Entry& x : e) x = {0, kFn, kShortReq, 0, nullptr, nullptr};
  absl::Status s = table.Register(e, 129, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(table.Find(128), nullptr);  // All or none.
  ASSERT_TRUE(table.Register(e, 128, false).ok());
  EXPECT_EQ(e[127].index, 255);
}

TEST(HandlerTableTest, InternalRangeIsSeparate) {
  HandlerTable table;
  Entry e{0, kFn, kShortReq, 0, nullptr, nullptr};
  ASSERT_TRUE(table.Register(&e, 1, true).ok());
  EXPECT_EQ(e.index, 1);
}

TEST(HandlerTableTest, MismatchNamesTheProblem) {
  Entry e{140, kFn, kFlagMedium | kFlagRequest, 2, nullptr, "put"};
  EXPECT_EQ(HandlerTable::Mismatch(e, Category::kMedium, true, 2), "");
  EXPECT_NE(HandlerTable::Mismatch(e, Category::kShort, true, 2)
                .find("not registered for Short"),
            std::string::npos);
  EXPECT_NE(HandlerTable::Mismatch(e, Category::kMedium, false, 2)
                .find("not registered for Reply messages"),
            std::string::npos);
  EXPECT_NE(HandlerTable::Mismatch(e, Category::kMedium, true, 3)
                .find("takes 2 arguments, the message carries 3"),
            std::string::npos);
  e.nargs = kAnyArgs;
  EXPECT_EQ(HandlerTable::Mismatch(e, Category::kMedium, true, 3), "");
}

}  // namespace
}  // namespace gexrt::am
