// Barriers through the legacy gasnet.h calls and gex_Coll_Barrier* over any
// conduit (api_tests.bzl), end to end: jobs of barrier_client at 1, 2, 4 and 8
// ranks. Proves named, anonymous and mixed barriers succeed with the right
// gasnet_barrier_result; a wait's own id and flags checked against the
// barrier's outcome (mode wait-flags; GASNet-1 spec gasnet_barrier_wait:
// an anonymous notify followed by a named wait succeeds); a named-id mismatch
// or GASNET_BARRIERFLAG_MISMATCH on any one rank is reported as
// GASNET_ERR_BARRIER_MISMATCH on every rank; gex_Coll_BarrierNB completes
// through gex_Event_Test/Wait/TestAll/WaitAll (and not before the last rank
// arrives); and that every barrier synchronizes (barrier_client counts arrivals
// with Active Messages, so any layout of supernodes is checked the same way).
// Each job runs with the barrier's groups (GEX_BARRIER_GROUP) as in production
// (the whole supernode: shared flags only), of 1 (every rank a leader: the
// dissemination over Active Messages alone) and of 2 and 3 (shared flags
// within a group, Active Messages between the leaders, uneven last group).
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"

namespace gexrt::testing {
namespace {

class BarrierJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int, int>> {};

TEST_P(BarrierJobTest, EveryRankSeesTheRightResult) {
  const auto& [mode, n, group] = GetParam();
  const JobResult r =
      RunApiJob("barrier_client", n, {mode},
                {group == 0 ? std::string("GEX_BARRIER_GROUP")
                            : absl::StrFormat("GEX_BARRIER_GROUP=%d", group)});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    EXPECT_GT(Field(line, "barriers"), 0) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModesRanksGroups, BarrierJobTest,
    ::testing::Combine(::testing::Values("legacy", "mismatch", "wait-flags",
                                         "nb", "nb-overlap"),
                       ::testing::Values(1, 2, 3, 4, 8),
                       ::testing::Values(0, 1, 2, 3)),
    [](const auto& info) {
      const int group = std::get<2>(info.param);
      return absl::StrFormat("%s_n%d_%s", TestName(std::get<0>(info.param)),
                             std::get<1>(info.param),
                             group == 0
                                 ? std::string("supernode")
                                 : absl::StrFormat("groups_of_%d", group));
    });

}  // namespace
}  // namespace gexrt::testing
