// The C++ API (<gex/gex.hpp>) over any conduit (api_tests.bzl), end to end:
// jobs of cpp_client (SEQ) and cpp_par_client (PAR) started by the conduit's
// launcher at 1, 2, 4 and 8 ranks, each both ways: on the default path (direct
// copies to peers in this rank's supernode, the conduit to the others) and
// with GEX_RMA_FORCE_AM=1 (every Put and Get over the Active Message engine, so
// NB calls return real events). The clients check every byte and the guard
// bytes around it (through the API where the peer is not mapped), local
// completion, the Events each path returns and every
// way of syncing them, and typed Active Messages with 0..16 arguments; see
// cpp_client.cc's header for the modes.
//
// Under ThreadSanitizer (bazel test --config=tsan //tests/api:cpp_job_test)
// only the PAR jobs run; each rank writes its reports to a file, and the
// test fails on any report about process-private memory, and with one rank
// on any report at all (as rma_job_test judges them: between processes
// ThreadSanitizer cannot see the other side's synchronization).
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"
#include "tests/api/tsan_reports.h"

namespace gexrt::testing {
namespace {

class CppJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {};

TEST_P(CppJobTest, EveryByteArrivesAndEveryEventCompletes) {
  if (kTsan) GTEST_SKIP() << "the SEQ client is not threaded";
  const auto& [mode, n, force_am] = GetParam();
  const JobResult r = RunApiJob("cpp_client", n, {mode}, ForceAmEnv(force_am));
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    if (mode == "forms") {
      // 12 sizes x 2 buffer kinds x 8 Put and 4 Get forms.
      EXPECT_EQ(Field(line, "puts"), 12 * 2 * 8) << line;
      EXPECT_EQ(Field(line, "gets"), 12 * 2 * 4) << line;
    } else if (mode == "events") {
      // 30 rounds (3 x 10 orders) of 12, each 6 puts to the next rank and
      // 6 gets from the previous one: real events for every one on the AM
      // path, else for those to peers outside this rank's supernode.
      EXPECT_EQ(Field(line, "ops"), 30 * 12) << line;
      const int remote = (SameSupernode(n, rank, (rank + 1) % n) ? 0 : 1) +
                         (SameSupernode(n, rank, (rank + n - 1) % n) ? 0 : 1);
      EXPECT_EQ(Field(line, "real"), force_am ? 30 * 12 : 30 * 6 * remote)
          << line;
    } else if (mode == "nbi") {
      // 6 rounds x (12 outside + 12 region + 36 two regions + 12 closed by
      // its destructor).
      EXPECT_EQ(Field(line, "ops"), 6 * 72) << line;
    } else if (mode == "am") {
      // 2 passes x 17 arities x Short, Medium, Long.
      EXPECT_EQ(Field(line, "requests"), 2 * 17 * 3) << line;
      EXPECT_EQ(Field(line, "replies"), 2 * 17 * 3) << line;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModesRanksPaths, CppJobTest,
    ::testing::Combine(::testing::Values("forms", "events", "nbi", "values",
                                         "am"),
                       ::testing::Values(1, 2, 4, 8), ::testing::Bool()),
    [](const auto& info) {
      return absl::StrFormat("%s_n%d_%s", std::get<0>(info.param),
                             std::get<1>(info.param),
                             PathName(std::get<2>(info.param)));
    });

// ---------------------------------------------------------------------------
// PAR: several threads per rank, each with its own events and regions.

class CppParJobTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(CppParJobTest, ThreadsWithTheirOwnEventsAndRegions) {
  const auto& [n, force_am] = GetParam();
  std::vector<std::string> env = ForceAmEnv(force_am);
  const std::string tsan_dir = MakeTempDir("tsan");
  for (std::string& v : TsanEnv(tsan_dir)) env.push_back(std::move(v));
  const int rounds = kTsan ? 3 : 8;
  const JobResult r =
      RunApiJob("cpp_par_client", n, {"par", std::to_string(rounds)}, env);
  // Per thread and round: 3 x 6 operations, 4 blocking ones, 1 AM.
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "par ok")) {
    EXPECT_EQ(Field(line, "ops"), 4LL * rounds * (3 * 6 + 4 + 1)) << line;
  }
  ExpectNoTsanReports(tsan_dir, n);
}

INSTANTIATE_TEST_SUITE_P(RanksPaths, CppParJobTest,
                         ::testing::Combine(::testing::Values(1, 2, 4),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return absl::StrFormat(
                               "n%d_%s", std::get<0>(info.param),
                               PathName(std::get<1>(info.param)));
                         });

}  // namespace
}  // namespace gexrt::testing
