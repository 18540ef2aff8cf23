// VIS (gasnet_vis.h) through the GASNet-EX C API over any conduit
// (api_tests.bzl), end to end: jobs of vis_client (C11, SEQ) started by the
// conduit's launcher at 1, 2, 3, 4 and 8 ranks, each both ways: on the
// default path (a peer in this rank's supernode, and this rank, are copied
// to directly through the mapped segment; any other peer over packed
// Active Messages through the conduit) and with GEX_RMA_FORCE_AM=1 (every
// call packed into Active Messages). The client checks every shape
// (Vector, Indexed, Strided), Put and Get, in every form against a
// reference computed byte by byte (shapes), peer completion handlers
// (peer) and GEX_FLAG_IMMEDIATE (immediate); see vis_client.c's header. Misuse
// is fatal and names the call.
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"
#include "tests/api/tsan_reports.h"

namespace gexrt::testing {
namespace {

// The client's cases per direction (vector 5, indexed 5, strided 12) in 5
// forms.
constexpr long long kOpsPerTarget = 2 * (5 + 5 + 12) * 5;

class VisJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {};

TEST_P(VisJobTest, EveryShapeMatchesTheReference) {
  const auto& [mode, n, force_am] = GetParam();
  const JobResult r = RunApiJob("vis_client", n, {mode}, ForceAmEnv(force_am));
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    // edge: strided regions at the segment's very ends (GASNet-EX spec,
    // VIS "Strided": legal when every element is in the segment), two
    // operations per case and end.
    if (mode == "edge") {
      EXPECT_EQ(Field(line, "ops"), 2 * 2 * 160) << line;
    }
    if (mode == "shapes") {
      const int targets = n == 1 ? 1 : 2;
      EXPECT_EQ(Field(line, "ops"), targets * kOpsPerTarget) << line;
      // NB calls that move data return GEX_EVENT_INVALID on the direct
      // path only: never with GEX_RMA_FORCE_AM=1, always to this rank
      // otherwise.
      if (force_am) {
        EXPECT_EQ(Field(line, "direct"), 0) << line;
      } else {
        EXPECT_GT(Field(line, "direct"), 0) << line;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModesRanksPaths, VisJobTest,
    ::testing::Combine(::testing::Values("shapes", "peer", "immediate", "edge"),
                       ::testing::Values(1, 2, 3, 4, 8), ::testing::Bool()),
    [](const auto& info) {
      return absl::StrFormat("%s_n%d_%s", std::get<0>(info.param),
                             std::get<1>(info.param),
                             PathName(std::get<2>(info.param)));
    });

// VIS over a sub-team whose ranks run backwards: the calls address team
// ranks.
class VisSubteamJobTest
    : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(VisSubteamJobTest, TeamRanksReachTheirMembers) {
  const auto& [n, force_am] = GetParam();
  const JobResult r =
      RunApiJob("vis_client", n, {"subteam"}, ForceAmEnv(force_am));
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "subteam ok")) {
    const long long size = (n + (rank % 2 == 0 ? 1 : 0)) / 2;
    EXPECT_EQ(Field(line, "size"), size) << line;
    EXPECT_EQ(Field(line, "ops"), 3 * size) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(RanksPaths, VisSubteamJobTest,
                         ::testing::Combine(::testing::Values(1, 3, 4),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return absl::StrFormat(
                               "n%d_%s", std::get<0>(info.param),
                               PathName(std::get<1>(info.param)));
                         });

// ---------------------------------------------------------------------------
// PAR: 4 threads a rank, each with its own NBI counters and peer completion.

class VisParJobTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(VisParJobTest, ThreadsWithTheirOwnNbiAndPeerCompletion) {
  const auto& [n, force_am] = GetParam();
  std::vector<std::string> env = ForceAmEnv(force_am);
  const std::string tsan_dir = MakeTempDir("tsan");
  for (std::string& v : TsanEnv(tsan_dir)) env.push_back(std::move(v));
  const int rounds = kTsan ? 3 : 10;
  const JobResult r =
      RunApiJob("vis_par_client", n, {"par", std::to_string(rounds)}, env);
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "par ok")) {
    EXPECT_EQ(Field(line, "ops"), 4LL * rounds * 5) << line;
    EXPECT_EQ(Field(line, "notes"), 4LL * rounds) << line;
  }
  ExpectNoTsanReports(tsan_dir, n);
}

INSTANTIATE_TEST_SUITE_P(RanksPaths, VisParJobTest,
                         ::testing::Combine(::testing::Values(1, 2, 4),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return absl::StrFormat(
                               "n%d_%s", std::get<0>(info.param),
                               PathName(std::get<1>(info.param)));
                         });

// ---------------------------------------------------------------------------
// Misuse.

struct BadInput {
  std::string mode;
  std::string call;
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.mode; }

class VisBadInputJobTest
    : public ::testing::TestWithParam<std::tuple<BadInput, bool>> {};

TEST_P(VisBadInputJobTest, IsFatalAndNamesTheCall) {
  const auto& [b, force_am] = GetParam();
  const JobResult r =
      RunApiJob("vis_client", 2, {b.mode}, ForceAmEnv(force_am));
  ExpectFatal(r, 0, b.call);
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, VisBadInputJobTest,
    ::testing::Combine(
        ::testing::Values(BadInput{"null-list", "gex_VIS_VectorPutBlocking"},
                          BadInput{"outside", "gex_VIS_IndexedGetNBI"},
                          BadInput{"outside-strided", "gex_VIS_StridedPutNB"},
                          BadInput{"mismatch", "gex_VIS_VectorGetBlocking"},
                          BadInput{"immediate-armed", "gex_VIS_StridedGetNBI"}),
        ::testing::Bool()),
    [](const auto& info) {
      return TestName(std::get<0>(info.param).mode) + "_" +
             PathName(std::get<1>(info.param));
    });

}  // namespace
}  // namespace gexrt::testing
