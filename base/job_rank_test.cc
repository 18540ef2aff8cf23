#include "base/job_rank.h"

#include "gtest/gtest.h"

namespace gexrt {
namespace {

int g_seen = -100;
void Remember(int rank) { g_seen = rank; }

TEST(JobRankTest, UnknownUntilSetThenListenersHearIt) {
  EXPECT_EQ(JobRank(), kUnknownRank);
  AddJobRankListener(&Remember);
  SetJobRank(4);
  EXPECT_EQ(JobRank(), 4);
  EXPECT_EQ(g_seen, 4);
  SetJobRank(0);
  EXPECT_EQ(g_seen, 0);
}

}  // namespace
}  // namespace gexrt
