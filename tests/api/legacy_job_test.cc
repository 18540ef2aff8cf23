// The GASNet-1 ("legacy") path of <gasnet.h> over any conduit (api_tests.bzl),
// end to end: jobs of legacy_client (C11, built with -Wall -Wextra -Wpedantic
// -Werror over all three public headers). Proves gasnet_init/gasnet_attach with
// a handler table, node and segment queries agreeing with the GASNet-EX
// objects, gasnet_AMRequest*/Reply* of every category (0 and M arguments) at 1,
// 2, 4 and 8 ranks, legacy barriers, and gasnet_exit: 0 and a common code from
// every rank, and a code from one rank ending the others.
#include <string>

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
