// Teams through the GASNet-EX C API over any conduit (api_tests.bzl), end to
// end: jobs of team_client (C11, SEQ) at 1, 2, 3, 4 and 8 ranks. The client
// computes every expected member list and result itself and checks it on
// every rank (see team_client.c's header for the modes): gex_TM_Split by
// colour and key (several splits, excluded ranks, a nested split), the TM
// queries and rank translations, barriers, broadcasts and reductions on
// sibling sub-teams at once, AMs addressing team ranks, gex_TM_Pair RMA and
// AM, gex_TM_Create, destroy then split again, and gasnet_coll.h's every
// operation with every sync-flag combination. Misuse is fatal and names the
// call, with no survivors.
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"

namespace gexrt::testing {
namespace {

// The checks rank r reports in mode `mode` of a job of n ranks.
long long ExpectedChecks(const std::string& mode, int n, int r) {
  if (mode == "split") return (r % 3 == 2 || r == 1) ? 6 : 7;
  // GASNet-EX spec, gex_TM_Split / gex_TM_Create: the scratch-size
  // queries, and a split where ranks 3k+1 pass NULL new_tm_p.
  if (mode == "split-null") return r % 3 == 1 ? 2 : 3;
  if (mode == "coll") return (n + 1) / 2;
  if (mode == "am") return 40;
  if (mode == "pair") return 4;
  if (mode == "create") return r % 2 == 0 ? 2 : 0;
  if (mode == "legacy") return 2 * (36 * 5 + 3 + 1);
  if (mode == "legacy-sizes") return 2 * 2;
  if (mode == "legacy-allsync") return 1;
  return -1;
}

class TeamJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(TeamJobTest, EveryRankGetsTheRightResult) {
  const auto& [mode, n] = GetParam();
  const JobResult r = RunApiJob("team_client", n, {mode});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    EXPECT_EQ(Field(line, "checks"), ExpectedChecks(mode, n, rank)) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModesAndRanks, TeamJobTest,
    ::testing::Combine(::testing::Values("split", "split-null", "coll", "am",
                                         "pair", "create", "legacy",
                                         "legacy-sizes", "legacy-allsync"),
                       ::testing::Values(1, 2, 3, 4, 8)),
    [](const auto& info) {
      return absl::StrFormat("%s_n%d", TestName(std::get<0>(info.param)),
                             std::get<1>(info.param));
    });

struct BadInput {
  std::string mode;
  std::string call;
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.mode; }

class TeamBadInputJobTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(TeamBadInputJobTest, IsFatalAndNamesTheCall) {
  const BadInput& b = GetParam();
  ExpectFatal(RunApiJob("team_client", 2, {b.mode}), 0, b.call);
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, TeamBadInputJobTest,
    ::testing::Values(BadInput{"destroyed-team", "gex_Coll_BarrierNB"},
                      BadInput{"garbage-team", "gex_TM_QueryRank"},
                      BadInput{"am-bad-rank", "gex_AM_RequestShort"},
                      BadInput{"null-parent", "gex_TM_Split"},
                      BadInput{"pair-coll", "gex_Coll_BroadcastNB"},
                      BadInput{"coll-flags", "gasnet_coll_broadcast_nb"},
                      BadInput{"destroy-primordial", "gex_TM_Destroy"},
                      BadInput{"size-flags", "gex_TM_Split"}),
    [](const auto& info) { return TestName(info.param.mode); });

}  // namespace
}  // namespace gexrt::testing
