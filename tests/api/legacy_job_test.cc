// The GASNet-1 ("legacy") path of <gasnet.h> over any conduit (api_tests.bzl),
// end to end: jobs of legacy_client (C11, built with -Wall -Wextra -Wpedantic
// -Werror over all three public headers). Proves gasnet_init/gasnet_attach with
// a handler table, node and segment queries agreeing with the GASNet-EX
// objects, gasnet_AMRequest*/Reply* of every category (0 and M arguments) at 1,
// 2, 4 and 8 ranks, legacy barriers, and gasnet_exit: 0 and a common code from
// every rank, and a code from one rank ending the others.
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"

namespace gexrt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

class LegacyJobTest : public ::testing::TestWithParam<int> {};

TEST_P(LegacyJobTest, HandlerTableSegmentsAndEveryAmCall) {
  const int n = GetParam();
  const JobResult r = RunApiJob("legacy_client", n, {"am"});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "am ok")) {
    // 7 kinds of request to every rank, each answered.
    EXPECT_EQ(Field(line, "requests"), 7LL * n) << line;
    EXPECT_EQ(Field(line, "replies"), 7LL * n) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, LegacyJobTest, ::testing::Values(1, 2, 4, 8),
                         [](const auto& info) {
                           return absl::StrFormat("n%d", info.param);
                         });

// The legacy RMA family (put/get/memset/value/handle/NBI forms), directly
// and over Active Messages.
class LegacyRmaJobTest
    : public ::testing::TestWithParam<std::tuple<bool, int>> {};

TEST_P(LegacyRmaJobTest, EveryFormToEveryRank) {
  const auto [force_am, n] = GetParam();
  const JobResult r =
      RunApiJob("legacy_client", n, {"rma"}, ForceAmEnv(force_am));
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "rma ok")) {
    EXPECT_EQ(Field(line, "peers"), n) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, LegacyRmaJobTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(1, 2, 3, 4, 8)),
                         [](const auto& info) {
                           return absl::StrFormat(
                               "%s_n%d", PathName(std::get<0>(info.param)),
                               std::get<1>(info.param));
                         });

// gasnet_AM{Request,Reply}*N for N = 0..16 and gasnet_AMRequestLongAsyncN,
// and handler-safe locks.
TEST_P(LegacyJobTest, NumberedAmFormsUpTo16Args) {
  const int n = GetParam();
  const JobResult r = RunApiJob("legacy_client", n, {"am16"});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "am16 ok")) {
    // Short, Medium, Long and LongAsync with 0..16 arguments to every rank.
    EXPECT_EQ(Field(line, "requests"), 4LL * 17 * n) << line;
    EXPECT_EQ(Field(line, "replies"), 4LL * 17 * n) << line;
  }
}

TEST_P(LegacyJobTest, HandlerSafeLocks) {
  const int n = GetParam();
  const JobResult r = RunApiJob("legacy_client", n, {"hsl"});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "hsl ok")) {
    EXPECT_EQ(Field(line, "count"), n * (n + 1) / 2) << line;
  }
}

// legacy_gex_client: the names GASNet-EX clients expect from gasnetex.h
// alone, the unnamed barrier, and zero-byte Longs before attach.
class LegacyGexJobTest : public ::testing::TestWithParam<int> {};

TEST_P(LegacyGexJobTest, GasnetexNames) {
  const int n = GetParam();
  const JobResult r = RunApiJob("legacy_gex_client", n, {"names"});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "names ok")) {
    // A Medium and a Long reply from every rank.
    EXPECT_EQ(Field(line, "replies"), 2LL * n) << line;
  }
}

TEST_P(LegacyGexJobTest, HostMemoryKind) {
  const int n = GetParam();
  ExpectEveryRankOk(RunApiJob("legacy_gex_client", n, {"mk"}), n, "mk ok");
}

TEST_P(LegacyGexJobTest, UnnamedBarrierIsAnonymous) {
  const int n = GetParam();
  ExpectEveryRankOk(RunApiJob("legacy_gex_client", n, {"unnamed"}), n,
                    "unnamed ok");
}

TEST_P(LegacyGexJobTest, ZeroByteLongBeforeAttach) {
  const int n = GetParam();
  const JobResult r = RunApiJob("legacy_gex_client", n, {"early-long"});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "early-long ok")) {
    // Three Longs to every rank before attach and three after, each
    // answered.
    EXPECT_EQ(Field(line, "requests"), 6LL * n) << line;
    EXPECT_EQ(Field(line, "replies"), 6LL * n) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, LegacyGexJobTest,
                         ::testing::Values(1, 2, 3, 4, 8),
                         [](const auto& info) {
                           return absl::StrFormat("n%d", info.param);
                         });

TEST(LegacyExitTest, EveryRankExitingWithACodeIsTheJobsCode) {
  const JobResult r = RunApiJob("legacy_client", 2, {"exit-code"});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_EQ(RankLines(r, "exit-code calling gasnet_exit(3)").size(), 2u)
      << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
}

TEST(LegacyExitTest, OneRankExitingEndsTheOthers) {
  const JobResult r = RunApiJob("legacy_client", 3, {"exit-one"});
  EXPECT_EQ(r.exit_code, 5) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("rank 0: exit-one calling gasnet_exit(5)\n"))
      << Describe(r);
  EXPECT_THAT(r.out, Not(HasSubstr("survived"))) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
}

}  // namespace
}  // namespace gexrt::testing
