#include "rma/event.h"

#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rma/nbi.h"

namespace gexrt::rma {
namespace {

TEST(CounterTest, DoneWhenEveryStartedOperationCompleted) {
  Counter c;
  EXPECT_TRUE(c.Done());
  c.Start(3);
  EXPECT_FALSE(c.Done());
  c.Complete();
  c.Complete();
  EXPECT_FALSE(c.Done());
  c.Complete();
  EXPECT_TRUE(c.Done());
  c.Start(2);
  c.Unstart(2);
  EXPECT_TRUE(c.Done());
}

TEST(OperationTest, RootTestRetiresAndLeafFollowsLocalCompletion) {
  Operation* op = Operation::Allocate();
  EXPECT_EQ(op->magic, kLiveEvent);
  EXPECT_TRUE(Operation::Is(op));
  gex_Event_opaque* leaf = op->lc_leaf();
  EXPECT_FALSE(Operation::Is(leaf));
  op->rc.Start(1);
  op->lc.Start(1);
  EXPECT_FALSE(leaf->test(leaf));
  op->lc.Complete();
  EXPECT_TRUE(leaf->test(leaf));
  EXPECT_TRUE(leaf->test(leaf));  // a leaf is not consumed
  EXPECT_FALSE(op->test(op));
  op->rc.Complete();
  EXPECT_TRUE(op->test(op));  // retired
  EXPECT_EQ(op->magic, kDeadEvent);
  EXPECT_EQ(leaf->magic, kDeadEvent);
}

TEST(OperationTest, FreeListReusesOperationsWithoutAllocating) {
  std::vector<Operation*> first;
  for (int i = 0; i < 10; ++i) first.push_back(Operation::Allocate());
  const std::set<Operation*> seen(first.begin(), first.end());
  for (Operation* op : first) op->Release();
  for (int round = 0; round < 100; ++round) {
    std::vector<Operation*> again;
    for (int i = 0; i < 10; ++i) {
      Operation* op = Operation::Allocate();
      EXPECT_EQ(seen.count(op), 1u) << "round " << round;
      EXPECT_TRUE(op->Done());
      EXPECT_EQ(op->magic, kLiveEvent);
      again.push_back(op);
    }
    for (Operation* op : again) op->Release();
  }
}

TEST(OperationTest, ReleasedOnAnotherThreadAndCompletedFromOthers) {
  constexpr int kOps = 1000;
  std::vector<Operation*> ops;
  for (int i = 0; i < kOps; ++i) {
    Operation* op = Operation::Allocate();
    op->rc.Start(2);
    ops.push_back(op);
  }
  // Completions from two threads, retirement on a third, allocation again
  // here: exercises the shared list (and, under tsan, the ordering).
  std::thread a([&] {
    for (Operation* op : ops) op->rc.Complete();
  });
  std::thread b([&] {
    for (Operation* op : ops) op->rc.Complete();
  });
  a.join();
  b.join();
  std::thread retire([&] {
    for (Operation* op : ops) EXPECT_TRUE(op->test(op));
  });
  retire.join();
  for (int i = 0; i < kOps; ++i) Operation::Allocate()->Release();
}

TEST(NbiTest, CountsOutsideRegionsByCategory) {
  std::thread t([] {
    Nbi& nbi = Nbi::Mine();
    EXPECT_TRUE(nbi.Done(kEcAll));
    nbi.get().Start(1);
    nbi.lc().Start(1);
    EXPECT_FALSE(nbi.Done(kEcGet));
    EXPECT_TRUE(nbi.Done(kEcPut | kEcAm | kEcRmw));
    EXPECT_FALSE(nbi.Done(kEcLc));
    nbi.get().Complete();
    nbi.lc().Complete();
    EXPECT_TRUE(nbi.Done(kEcAll));
  });
  t.join();
}

TEST(NbiTest, RegionCollectsItsOperations) {
  std::thread t([] {
    Nbi& nbi = Nbi::Mine();
    nbi.Begin("begin");
    EXPECT_TRUE(nbi.in_region());
    nbi.put().Start(1);
    nbi.get().Start(1);
    EXPECT_TRUE(nbi.Done(kEcAll));  // not the thread's counters
    Operation* op = nbi.End("end");
    ASSERT_NE(op, nullptr);
    EXPECT_FALSE(nbi.in_region());
    EXPECT_FALSE(op->test(op));
    op->rc.Complete();
    op->rc.Complete();
    EXPECT_TRUE(op->test(op));
    // An empty region completes at End.
    nbi.Begin("begin");
    EXPECT_EQ(nbi.End("end"), nullptr);
  });
  t.join();
}

TEST(NbiDeathTest, NestedBeginAndEndWithoutBeginAreFatal) {
  EXPECT_DEATH(
      {
        Nbi::Mine().Begin("gex_NBI_BeginAccessRegion");
        Nbi::Mine().Begin("gex_NBI_BeginAccessRegion");
      },
      "gex_NBI_BeginAccessRegion: this thread is already in an access region");
  EXPECT_DEATH(
      Nbi::Mine().End("gex_NBI_EndAccessRegion"),
      "gex_NBI_EndAccessRegion: this thread has no open access region");
}

}  // namespace
}  // namespace gexrt::rma
