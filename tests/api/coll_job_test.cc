// Collectives through the GASNet-EX C API over any conduit (api_tests.bzl), end
// to end: jobs of coll_client (C11, SEQ) at 1, 2, 3, 4 and 8 ranks (3 is not a
// power of two: the trees are uneven). The client computes every expected
// result itself and checks it on every rank (see coll_client.c's header for the
// modes): gex_Coll_BroadcastNB from every root at 0 B..1 MiB, every built-in
// type x operation to one root and to all, GEX_OP_USER with user data and
// elements larger than a Medium, GEX_OP_USER_NC whose results only rank order
// gives, in-place calls, several collectives and barriers in flight retired
// in reverse order, data that arrives before the call, and 0-element calls.
// Misuse is fatal and names the call, with no survivors.
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"
#include "tests/api/tsan_reports.h"

namespace gexrt::testing {
namespace {

// The collectives each rank checks, by mode, in a job of n ranks.
long long ExpectedColls(const std::string& mode, int n) {
  if (mode == "bcast") return 6LL * n;
  if (mode == "reduce") {
    // 36 type x op pairs; per pair: (n + 1) for 1 and for 37 elements, and
    // ReduceToOne to rank n-1 and ReduceToAll for 20000.
    return 36LL * (2 * (n + 1) + 2);
  }
  if (mode == "user") return 4LL * (n + 1);
  if (mode == "nc") return 5LL * (n + 1);
  if (mode == "inplace") return 2LL * n + 2 * 6 * (1 + n) + 1;
  if (mode == "overlap") return 6 * 5;
  if (mode == "early") return 6;
  if (mode == "zero") return n * (6 * 2 + 1) + 1;
  return -1;
}

class CollJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(CollJobTest, EveryRankGetsTheRightResult) {
  if (kTsan) GTEST_SKIP() << "the SEQ client is not threaded";
  const auto& [mode, n] = GetParam();
  const JobResult r = RunApiJob("coll_client", n, {mode});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    EXPECT_EQ(Field(line, "colls"), ExpectedColls(mode, n)) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModesAndRanks, CollJobTest,
    ::testing::Combine(::testing::Values("bcast", "reduce", "user", "nc",
                                         "inplace", "overlap", "early", "zero"),
                       ::testing::Values(1, 2, 3, 4, 8)),
    [](const auto& info) {
      return absl::StrFormat("%s_n%d", TestName(std::get<0>(info.param)),
                             std::get<1>(info.param));
    });

// ---------------------------------------------------------------------------
// Misuse.

struct BadInput {
  std::string mode;
  int proc;  // the rank that must report it
  std::string call;
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.mode; }

class CollBadInputJobTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(CollBadInputJobTest, IsFatalAndNamesTheCall) {
  if (kTsan) GTEST_SKIP() << "the SEQ client is not threaded";
  const BadInput& b = GetParam();
  ExpectFatal(RunApiJob("coll_client", 2, {b.mode}), b.proc, b.call);
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, CollBadInputJobTest,
    ::testing::Values(BadInput{"bad-bcast-root", 0, "gex_Coll_BroadcastNB"},
                      BadInput{"bad-reduce-root", 0, "gex_Coll_ReduceToOneNB"},
                      BadInput{"bad-dt", 0, "gex_Coll_ReduceToAllNB"},
                      BadInput{"bad-op", 0, "gex_Coll_ReduceToAllNB"},
                      BadInput{"atomic-op", 0, "gex_Coll_ReduceToOneNB"},
                      BadInput{"float-bitwise", 0, "gex_Coll_ReduceToAllNB"},
                      BadInput{"user-dt-builtin-op", 0,
                               "gex_Coll_ReduceToAllNB"},
                      BadInput{"dt-size", 0, "gex_Coll_ReduceToOneNB"},
                      BadInput{"zero-dt-size", 0, "gex_Coll_ReduceToAllNB"},
                      BadInput{"overflow", 0, "gex_Coll_ReduceToAllNB"},
                      BadInput{"negative-size", 0, "gex_Coll_BroadcastNB"},
                      BadInput{"null-user-op", 0, "gex_Coll_ReduceToAllNB"},
                      BadInput{"null-dst", 0, "gex_Coll_ReduceToOneNB"},
                      BadInput{"bad-tm", 0, "gex_Coll_ReduceToAllNB"},
                      BadInput{"wait-twice", 0, "gex_Event_Wait"},
                      BadInput{"coll-in-handler", 1, "gex_Coll_ReduceToAllNB"}),
    [](const auto& info) { return TestName(info.param.mode); });

}  // namespace
}  // namespace gexrt::testing
