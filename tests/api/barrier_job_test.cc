// Barriers through the legacy gasnet.h calls and gex_Coll_Barrier* on the
// smp conduit, end to end: jobs of barrier_client at 1, 2, 4 and 8 ranks.
// Proves named, anonymous and mixed barriers succeed with the right
// gasnet_barrier_result; a named-id mismatch or GASNET_BARRIERFLAG_MISMATCH
// on any one rank is reported as GASNET_ERR_BARRIER_MISMATCH on every rank;
// gex_Coll_BarrierNB completes through gex_Event_Test/Wait/TestAll/WaitAll
// (and not before the last rank arrives); and that every barrier
// synchronizes (barrier_client counts arrivals in shared memory).
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"

namespace gex::testing {
namespace {

class BarrierJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(BarrierJobTest, EveryRankSeesTheRightResult) {
  const auto& [mode, n] = GetParam();
  const JobResult r = RunApiJob("barrier_client", n, {mode});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    EXPECT_GT(Field(line, "barriers"), 0) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(ModesAndRanks, BarrierJobTest,
                         ::testing::Combine(::testing::Values("legacy",
                                                              "mismatch", "nb",
                                                              "nb-overlap"),
                                            ::testing::Values(1, 2, 4, 8)),
                         [](const auto& info) {
                           return absl::StrFormat(
                               "%s_n%d", TestName(std::get<0>(info.param)),
                               std::get<1>(info.param));
                         });

}  // namespace
}  // namespace gex::testing
