// Segments and endpoints beyond gex_Segment_Attach through the GASNet-EX C
// API over any conduit (api_tests.bzl), end to end: jobs of segment_client
// (C11, SEQ) started by the conduit's launcher at 1, 2, 3, 4 and 8 ranks,
// on the default path and with GEX_RMA_FORCE_AM=1.
//
//  - primordial: a segment from gex_Segment_Create, bound to the
//    primordial endpoint and published over the primordial team instead of
//    gex_Segment_Attach: every rank finds every other's with
//    gex_Segment_QueryBound (mapped here exactly for its neighbourhood),
//    Puts into every rank's segment and Gets out of it, every byte checked.
//  - endpoints: gex_EP_Create (RMA only; the other capabilities refused
//    with GASNET_ERR_BAD_ARG), segments of client memory and of GASNet's
//    bound to them and published, gex_Segment_Create's refusals, a
//    publication refused on every rank when one rank's arguments are bad,
//    gex_TM_TranslateRankToEP, Put and Get through gex_TM_Pair into
//    every rank's additional endpoints' segments (client memory and
//    GASNet's), gex_System_QueryProgressThreads (none),
//    gex_Segment_Destroy.
//  - subteam, subset (SegmentSubTeamJobTest): the primordial endpoint's
//    created segment published over a permuted team of the same members
//    (testsegment's two calls, num_eps 0 on some ranks and 1 on others),
//    or first over half the ranks and then over all: QueryBound, Put/Get
//    over that team, an AM Long into every rank's segment.
//  - misuse: fatal, naming the call, with no survivors.
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"

namespace gexrt::testing {
namespace {

class SegmentJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {};

TEST_P(SegmentJobTest, EveryRankAgrees) {
  const auto& [mode, n, force_am] = GetParam();
  const JobResult r =
      RunApiJob("segment_client", n, {mode}, ForceAmEnv(force_am));
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    if (mode == "primordial") {
      EXPECT_EQ(Field(line, "ranks"), n) << line;
      EXPECT_EQ(Field(line, "bytes"), n * (8192 + 13)) << line;
    } else {
      EXPECT_EQ(Field(line, "eps"), 3) << line;
      EXPECT_EQ(Field(line, "refused"), 20) << line;
      // Every rank whose allocated segment is mapped here: its
      // neighbourhood (itself included).
      int mapped = 0;
      for (int r = 0; r < n; ++r) mapped += SameSupernode(n, rank, r) ? 1 : 0;
      EXPECT_EQ(Field(line, "mapped"), mapped) << line;
      // A Put and a Get to each of two endpoints of every rank.
      EXPECT_EQ(Field(line, "rma"), 4 * n) << line;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModesRanksPaths, SegmentJobTest,
    ::testing::Combine(::testing::Values("primordial", "endpoints"),
                       ::testing::Values(1, 2, 3, 4, 8), ::testing::Bool()),
    [](const auto& info) {
      return absl::StrFormat("%s_n%d_%s", std::get<0>(info.param),
                             std::get<1>(info.param),
                             PathName(std::get<2>(info.param)));
    });

// gex_EP_PublishBoundSegment over a team other than the primordial one
// for the primordial endpoint's created segment (spec,
// gex_EP_PublishBoundSegment: collective over tm, it publishes the bound
// segments to tm's members; issue 34, GASNet's testsegment).
class SegmentSubTeamJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {};

TEST_P(SegmentSubTeamJobTest, EveryRankAgrees) {
  const auto& [mode, n, force_am] = GetParam();
  const JobResult r =
      RunApiJob("segment_client", n, {mode}, ForceAmEnv(force_am));
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    EXPECT_EQ(Field(line, "ranks"), n) << line;
    // Up to 20000 bytes (the largest Long every rank takes, if smaller).
    EXPECT_GE(Field(line, "long"), 1000) << line;
    EXPECT_LE(Field(line, "long"), 20000) << line;
    if (mode == "subteam") {
      // A Get of one slot from every rank.
      EXPECT_EQ(Field(line, "bytes"), n * (8192 + 13)) << line;
    } else {
      // Half the ranks (this one's parity), then all of them.
      const int half = rank % 2 == 0 ? (n + 1) / 2 : n / 2;
      EXPECT_EQ(Field(line, "half"), half) << line;
      EXPECT_EQ(Field(line, "bytes"), (half + n) * (8192 + 13)) << line;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModesRanksPaths, SegmentSubTeamJobTest,
    ::testing::Combine(::testing::Values("subteam", "subset"),
                       ::testing::Values(1, 2, 3, 4), ::testing::Bool()),
    [](const auto& info) {
      return absl::StrFormat("%s_n%d_%s", std::get<0>(info.param),
                             std::get<1>(info.param),
                             PathName(std::get<2>(info.param)));
    });

struct BadInput {
  std::string mode;
  std::string call;
  bool needs_peer = false;    // rank 1 must be a supernode peer of rank 0
  bool needs_remote = false;  // rank 1 must be outside rank 0's supernode
};

class SegmentBadInputJobTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(SegmentBadInputJobTest, IsFatalAndNamesTheCall) {
  const BadInput& b = GetParam();
  if (b.needs_peer && !SameSupernode(2, 0, 1)) {
    GTEST_SKIP() << Layout(2) << ": no supernode peer to refuse it for";
  }
  if (b.needs_remote && SameSupernode(2, 0, 1)) {
    GTEST_SKIP() << Layout(2) << ": rank 1 shares rank 0's supernode";
  }
  ExpectFatal(RunApiJob("segment_client", 2, {b.mode}), 0, b.call);
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, SegmentBadInputJobTest,
    ::testing::Values(
        BadInput{"bind-twice", "gex_EP_BindSegment"},
        BadInput{"bind-bound-segment", "gex_EP_BindSegment"},
        BadInput{"bind-null", "gex_EP_BindSegment"},
        BadInput{"bind-attached", "gex_EP_BindSegment"},
        BadInput{"bind-client-primordial", "gex_EP_BindSegment", true},
        BadInput{"long-unregistered", "gex_AM_RequestLong", false, true},
        BadInput{"destroy-published", "gex_Segment_Destroy"},
        BadInput{"destroy-attached", "gex_Segment_Destroy"},
        BadInput{"query-index-bad", "gex_EP_QueryIndex"}),
    [](const auto& info) { return TestName(info.param.mode); });

}  // namespace
}  // namespace gexrt::testing
