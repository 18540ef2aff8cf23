// The barrier's merge rule: what the dissemination rounds combine. The
// rule must be commutative, associative and idempotent (a value may reach
// a rank along several paths), and must flag two different names.
#include "api/barrier.h"

#include <vector>

#include "gtest/gtest.h"

namespace gexrt::api {
namespace {

using V = Barrier::Value;

bool Same(const V& a, const V& b) {
  return a.anonymous == b.anonymous && a.mismatch == b.mismatch &&
         (a.anonymous || a.id == b.id);
}

TEST(BarrierMergeTest, NamesWinOverAnonymousAndDifferentNamesMismatch) {
  const V anon{true, false, 0};
  const V seven{false, false, 7};
  const V eight{false, false, 8};
  EXPECT_TRUE(Same(Barrier::Merge(anon, seven), seven));
  EXPECT_TRUE(Same(Barrier::Merge(seven, anon), seven));
  EXPECT_TRUE(Same(Barrier::Merge(seven, seven), seven));
  EXPECT_TRUE(Barrier::Merge(seven, eight).mismatch);
  EXPECT_FALSE(Barrier::Merge(anon, anon).mismatch);
  EXPECT_TRUE(Barrier::Merge(anon, V{true, true, 0}).mismatch);
}

TEST(BarrierMergeTest, OrderAndRepetitionDoNotMatter) {
  const std::vector<V> values = {{true, false, 0},  {false, false, 3},
                                 {false, false, 3}, {false, false, 4},
                                 {true, true, 0},   {false, false, -1}};
  for (const V& a : values) {
    for (const V& b : values) {
      EXPECT_TRUE(Same(Barrier::Merge(a, b), Barrier::Merge(b, a)));
      EXPECT_TRUE(
          Same(Barrier::Merge(a, Barrier::Merge(a, b)), Barrier::Merge(a, b)));
      for (const V& c : values) {
        EXPECT_TRUE(Same(Barrier::Merge(Barrier::Merge(a, b), c),
                         Barrier::Merge(a, Barrier::Merge(b, c))));
      }
    }
  }
}

}  // namespace
}  // namespace gexrt::api
