// Misuse of the Active Message API is reported, not survived: each mode of
// bad_input_client makes one mistake in a 2-rank job, which must exit
// nonzero with a "*** FATAL ERROR (proc P): <call>: ..." line naming the
// misused call, with no rank getting past the mistake and no process left.
// The exception proves the opposite: gex_EP_RegisterHandlers with
// gex_nargs 17 returns GASNET_ERR_BAD_ARG (the client checks it) and the
// job carries on and exits 0. The DebugMistakes cases are the debug
// build's checks (overlapping copies, unmapped buffers): run them with
// `bazel test --config=dbg`; the default build reports them skipped.
#include <ostream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"

namespace gexrt::testing {
namespace {

struct BadInput {
  std::string mode;
  int proc;  // the rank that must report it; -1: either may (receiver-side)
  std::string call;
  std::string detail = "";  // also in the message, when not empty
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.mode; }

void ExpectFatalMisuse(const BadInput& b) {
  const JobResult r = RunApiJob("bad_input_client", 2, {b.mode});
  ExpectFatal(r, b.proc, b.call);
  if (!b.detail.empty()) {
    // On the fatal error's own line, after the call.
    bool found = false;
    for (const std::string& line : Lines(r.err)) {
      const size_t at = line.find(b.call + ": ");
      found = found || (at != std::string::npos &&
                        line.find(b.detail, at) != std::string::npos);
    }
    EXPECT_TRUE(found) << "no line naming " << b.call << " with \"" << b.detail
                       << "\"\n"
                       << Describe(r);
  }
}

class BadInputJobTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputJobTest, IsFatalAndNamesTheCall) {
  ExpectFatalMisuse(GetParam());
}

// The costlier checks of the debug build (--config=dbg, GEX_DEBUG=1): the
// default build lets these mistakes through (the library checks them only
// in the debug build), so there the cases are skipped.
class DebugBadInputJobTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(DebugBadInputJobTest, IsFatalAndNamesTheCall) {
#if !defined(GEX_DEBUG) || !GEX_DEBUG
  GTEST_SKIP() << "a debug-build check: run with bazel test --config=dbg";
#endif
  ExpectFatalMisuse(GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, BadInputJobTest,
    ::testing::Values(
        BadInput{"unregistered", -1, "gex_AM_RequestShort"},
        BadInput{"nargs-mismatch", -1, "gex_AM_RequestShort"},
        BadInput{"category-mismatch", -1, "gex_AM_RequestMedium"},
        BadInput{"medium-over-max", 0, "gex_AM_RequestMedium"},
        BadInput{"long-outside", 0, "gex_AM_RequestLong"},
        BadInput{"long-straddle", 0, "gex_AM_RequestLong"},
        BadInput{"reply-from-reply", 0, "gex_AM_ReplyShort"},
        BadInput{"double-reply", 1, "gex_AM_ReplyShort"},
        BadInput{"request-in-handler", 1, "gex_AM_RequestShort"},
        // A team that is not the client's, on each AM kind.
        BadInput{"tm-null-short", 0, "gex_AM_RequestShort",
                 "tm NULL is not this client's team"},
        BadInput{"tm-null-medium", 0, "gex_AM_RequestMedium",
                 "tm NULL is not this client's team"},
        BadInput{"tm-null-long", 0, "gex_AM_RequestLong",
                 "tm NULL is not this client's team"},
        BadInput{"tm-null-prepare-medium", 0, "gex_AM_PrepareRequestMedium",
                 "tm NULL is not this client's team"},
        BadInput{"tm-null-query-bound-segment", 0, "gex_EP_QueryBoundSegmentNB",
                 "tm NULL is not this client's team"},
        BadInput{"tm-garbage-short", 0, "gex_AM_RequestShort",
                 "is not this client's team"},
        BadInput{"tm-garbage-medium", 0, "gex_AM_RequestMedium",
                 "is not this client's team"},
        BadInput{"tm-garbage-long", 0, "gex_AM_RequestLong",
                 "is not this client's team"},
        BadInput{"tm-garbage-prepare-long", 0, "gex_AM_PrepareRequestLong",
                 "is not this client's team"},
        // The runtime's own handler indices (1-127).
        BadInput{"internal-request-8", 0, "gex_AM_RequestShort",
                 "handler index 8 is reserved"},
        BadInput{"internal-request-4", 0, "gex_AM_RequestShort",
                 "handler index 4 is reserved"},
        BadInput{"internal-reply-8", 1, "gex_AM_ReplyShort",
                 "handler index 8 is reserved"},
        BadInput{"internal-reply-4", 1, "gex_AM_ReplyShort",
                 "handler index 4 is reserved"},
        BadInput{"internal-medium-4", 0, "gex_AM_RequestMedium",
                 "handler index 4 is reserved"},
        BadInput{"internal-long-4", 0, "gex_AM_RequestLong",
                 "handler index 4 is reserved"},
        BadInput{"internal-commit-8", 0, "gex_AM_CommitRequestMedium",
                 "handler index 8 is reserved"},
        // NULL local buffers with bytes to move.
        BadInput{"null-src-medium", 0, "gex_AM_RequestMedium",
                 "source buffer is NULL with nbytes 8"},
        BadInput{"null-src-long", 0, "gex_AM_RequestLong",
                 "source buffer is NULL with nbytes 8"},
        BadInput{"null-src-put", 0, "gex_RMA_PutBlocking",
                 "source buffer (src) is NULL with nbytes 8"},
        BadInput{"null-src-put-nbi", 0, "gex_RMA_PutNBI",
                 "source buffer (src) is NULL with nbytes 8"},
        BadInput{"null-dst-get", 0, "gex_RMA_GetBlocking",
                 "destination buffer (dest) is NULL with "
                 "nbytes 8"},
        BadInput{"null-dst-get-nb", 0, "gex_RMA_GetNB",
                 "destination buffer (dest) is NULL with "
                 "nbytes 8"}),
    [](const auto& info) { return TestName(info.param.mode); });

INSTANTIATE_TEST_SUITE_P(
    DebugMistakes, DebugBadInputJobTest,
    ::testing::Values(
        BadInput{"overlap-get", 0, "gex_RMA_GetBlocking", "the source"},
        BadInput{"overlap-put", 0, "gex_RMA_PutBlocking", "the source"},
        BadInput{"overlap-long", 0, "gex_AM_RequestLong", "the source"},
        BadInput{"wild-src-put", 0, "gex_RMA_PutBlocking",
                 "source buffer (src) [0x10, +8) is not mapped "
                 "memory"}),
    [](const auto& info) { return TestName(info.param.mode); });

TEST(BadInputJobTest, Nargs17IsAnErrorReturnNotAFatalError) {
  const JobResult r = RunApiJob("bad_input_client", 2, {"nargs17"});
  ExpectEveryRankOk(r, 2, "nargs17 ok");
}

}  // namespace
}  // namespace gexrt::testing
