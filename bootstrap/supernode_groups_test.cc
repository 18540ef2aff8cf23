#include "bootstrap/supernode_groups.h"

#include <vector>

#include "gtest/gtest.h"

namespace gexrt {
namespace {

TEST(SupernodeGroupsTest, NoRequestIsOneGroupLedByTheFirstMember) {
  for (uint32_t requested : {0u, 5u, 100u}) {
    const SupernodeGroups first = SupernodeGroups::Split(5, 0, requested);
    EXPECT_EQ(first.groups, 1u);
    EXPECT_EQ(first.size, 5u);
    EXPECT_TRUE(first.leader);
    const SupernodeGroups other = SupernodeGroups::Split(5, 3, requested);
    EXPECT_EQ(other.group, 0u);
    EXPECT_EQ(other.first, 0u);
    EXPECT_FALSE(other.leader);
  }
}

TEST(SupernodeGroupsTest, TheLastGroupTakesWhatIsLeft) {
  // 7 members in groups of 3: {0,1,2} {3,4,5} {6}.
  const SupernodeGroups g4 = SupernodeGroups::Split(7, 4, 3);
  EXPECT_EQ(g4.groups, 3u);
  EXPECT_EQ(g4.group, 1u);
  EXPECT_EQ(g4.first, 3u);
  EXPECT_EQ(g4.size, 3u);
  EXPECT_FALSE(g4.leader);
  const SupernodeGroups g6 = SupernodeGroups::Split(7, 6, 3);
  EXPECT_EQ(g6.group, 2u);
  EXPECT_EQ(g6.first, 6u);
  EXPECT_EQ(g6.size, 1u);
  EXPECT_TRUE(g6.leader);
}

TEST(SupernodeGroupsTest, RoundsReachEveryLeader) {
  SupernodeGroups g = SupernodeGroups::Split(1, 0, 0);
  g.SetLeaders({0, 3, 6, 9, 12}, 6);
  EXPECT_EQ(g.my_leader, 2);
  EXPECT_EQ(g.rounds, 3u);  // ceil(log2 5)
  EXPECT_EQ(g.RoundPeer(0), 9u);
  EXPECT_EQ(g.RoundPeer(1), 12u);
  EXPECT_EQ(g.RoundPeer(2), 3u);  // (2 + 4) mod 5 = 1.
  g.SetLeaders({4}, 4);
  EXPECT_EQ(g.rounds, 0u);
  g.SetLeaders({1, 2}, 7);  // Not a leader.
  EXPECT_EQ(g.my_leader, -1);
  EXPECT_EQ(g.rounds, 1u);
}

}  // namespace
}  // namespace gexrt
