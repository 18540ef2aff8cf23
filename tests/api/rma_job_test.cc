// One-sided RMA through the GASNet-EX C API over any conduit (api_tests.bzl),
// end to end: jobs of rma_client (C11, SEQ) and rma_par_client (C++, PAR)
// started by the conduit's launcher, at 1, 2, 4 and 8 ranks, each both ways: on
// the default path (a peer in this rank's supernode is mapped, a Put or Get to
// it is a memcpy; any other goes over the conduit) and with GEX_RMA_FORCE_AM=1
// (everything over the Active Message engine: Long Requests for Puts, Long or
// Medium Replies for Gets, 64 KiB chunks). The clients check every byte and
// the guard bytes around it (through the API where the peer is not mapped),
// local completion (sources overwritten as soon as it is promised), the events
// each path returns, and every sync order; see rma_client.c's header for the
// modes. Misuse is fatal and names the call, with no survivors, whatever the
// peer's layout (the engine checks the segment before any conduit).
//
// Under ThreadSanitizer (bazel test --config=tsan //tests/api:rma_job_test)
// the PAR jobs write each rank's reports to a file, and the test fails on any
// report about process-private memory, and with one rank on any report at
// all (as par_job_test judges them: between processes ThreadSanitizer cannot
// see the other side's synchronization).
#include <ostream>
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

class RmaJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {};

TEST_P(RmaJobTest, EveryByteArrivesAndEveryEventCompletes) {
  if (kTsan) GTEST_SKIP() << "the SEQ client is not threaded";
  const auto& [mode, n, force_am] = GetParam();
  const JobResult r = RunApiJob("rma_client", n, {mode}, ForceAmEnv(force_am));
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    if (mode == "forms") {
      // 12 sizes x 2 buffer kinds x 8 Put and 4 Get forms.
      EXPECT_EQ(Field(line, "puts"), 12 * 2 * 8) << line;
      EXPECT_EQ(Field(line, "gets"), 12 * 2 * 4) << line;
    } else if (mode == "leaf-array") {
      // GASNet-EX spec, Events (leaf events; gex_Event_{Test,Wait}{All,
      // Some}): roots and their leaves in one array, any order.
      EXPECT_EQ(Field(line, "ops"), 16 * 12) << line;
    } else if (mode == "events") {
      EXPECT_EQ(Field(line, "ops"), 21 * 12) << line;
      // Every op has nbytes > 0: real events for all of them on the AM
      // path; else for those to peers outside this rank's supernode (each
      // round 6 Puts to the next rank, 6 Gets from the previous one).
      const int remote = (SameSupernode(n, rank, (rank + 1) % n) ? 0 : 1) +
                         (SameSupernode(n, rank, (rank + n - 1) % n) ? 0 : 1);
      EXPECT_EQ(Field(line, "real"), force_am ? 21 * 12 : 21 * 6 * remote)
          << line;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModesRanksPaths, RmaJobTest,
    ::testing::Combine(::testing::Values("forms", "events", "leaf-array", "nbi",
                                         "values"),
                       ::testing::Values(1, 2, 4, 8), ::testing::Bool()),
    [](const auto& info) {
      return absl::StrFormat("%s_n%d_%s", TestName(std::get<0>(info.param)),
                             std::get<1>(info.param),
                             PathName(std::get<2>(info.param)));
    });

// ---------------------------------------------------------------------------
// PAR: several threads per rank, each with its own events and regions.

class RmaParJobTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(RmaParJobTest, ThreadsWithTheirOwnEventsAndRegions) {
  const auto& [n, force_am] = GetParam();
  std::vector<std::string> env = ForceAmEnv(force_am);
  const std::string tsan_dir = MakeTempDir("tsan");
  for (std::string& v : TsanEnv(tsan_dir)) env.push_back(std::move(v));
  const int rounds = kTsan ? 3 : 8;
  const JobResult r =
      RunApiJob("rma_par_client", n, {"par", std::to_string(rounds)}, env);
  // Per thread and round: 3 x 6 operations and 4 blocking ones.
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "par ok")) {
    EXPECT_EQ(Field(line, "ops"), 4LL * rounds * (3 * 6 + 4)) << line;
  }
  ExpectNoTsanReports(tsan_dir, n);
}

INSTANTIATE_TEST_SUITE_P(RanksPaths, RmaParJobTest,
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
  int proc;  // the rank that must report it
  std::string call;
  bool force_am = false;  // needs a real event
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.mode; }

class RmaBadInputJobTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(RmaBadInputJobTest, IsFatalAndNamesTheCall) {
  if (kTsan) GTEST_SKIP() << "the SEQ client is not threaded";
  const BadInput& b = GetParam();
  const JobResult r =
      RunApiJob("rma_client", 2, {b.mode}, ForceAmEnv(b.force_am));
  ExpectFatal(r, b.proc, b.call);
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, RmaBadInputJobTest,
    ::testing::Values(BadInput{"put-outside", 0, "gex_RMA_PutBlocking"},
                      BadInput{"put-straddle", 0, "gex_RMA_PutNB"},
                      BadInput{"get-outside", 0, "gex_RMA_GetBlocking"},
                      BadInput{"getnbi-outside", 0, "gex_RMA_GetNBI"},
                      BadInput{"put-overflow", 0, "gex_RMA_PutBlocking"},
                      BadInput{"get-overflow", 0, "gex_RMA_GetNB"},
                      BadInput{"bad-rank", 0, "gex_RMA_PutNBI"},
                      BadInput{"nb-group", 0, "gex_RMA_PutNB"},
                      BadInput{"nbi-pointer", 0, "gex_RMA_PutNBI"},
                      BadInput{"val-size", 0, "gex_RMA_PutBlockingVal"},
                      BadInput{"wait-non-event", 0, "gex_Event_Wait"},
                      BadInput{"testall-non-event", 0, "gex_Event_TestAll"},
                      BadInput{"wait-twice", 0, "gex_Event_Wait", true},
                      BadInput{"leaf-category", 0, "gex_Event_QueryLeaf", true},
                      BadInput{"end-no-begin", 0, "gex_NBI_EndAccessRegion"},
                      BadInput{"nested-begin", 0, "gex_NBI_BeginAccessRegion"},
                      BadInput{"rma-in-handler", 1, "gex_RMA_GetBlocking"}),
    [](const auto& info) { return TestName(info.param.mode); });

// The AM path checks the same ranges (the engine checks before either path).
TEST(RmaBadInputJobTest, OutsideTheSegmentIsFatalOnTheAmPathToo) {
  if (kTsan) GTEST_SKIP() << "the SEQ client is not threaded";
  ExpectFatal(RunApiJob("rma_client", 2, {"put-straddle"}, ForceAmEnv(true)), 0,
              "gex_RMA_PutNB");
  ExpectFatal(RunApiJob("rma_client", 2, {"getnbi-outside"}, ForceAmEnv(true)),
              0, "gex_RMA_GetNBI");
}

}  // namespace
}  // namespace gexrt::testing
