// Misuse of the Active Message API is reported, not survived: each mode of
// bad_input_client makes one mistake in a 2-rank job, which must exit
// nonzero with a "*** FATAL ERROR (proc P): <call>: ..." line naming the
// misused call, with no rank getting past the mistake and no process left.
// The exception proves the opposite: gex_EP_RegisterHandlers with
// gex_nargs 17 returns GASNET_ERR_BAD_ARG (the client checks it) and the
// job carries on and exits 0.
#include <ostream>
#include <string>

#include "gtest/gtest.h"
#include "tests/api/api_job.h"

namespace gexrt::testing {
namespace {

struct BadInput {
  std::string mode;
  int proc;  // the rank that must report it; -1: either may (receiver-side)
  std::string call;
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.mode; }

class BadInputJobTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputJobTest, IsFatalAndNamesTheCall) {
  const BadInput& b = GetParam();
  const JobResult r = RunApiJob("bad_input_client", 2, {b.mode});
  ExpectFatal(r, b.proc, b.call);
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, BadInputJobTest,
    ::testing::Values(BadInput{"unregistered", -1, "gex_AM_RequestShort"},
                      BadInput{"nargs-mismatch", -1, "gex_AM_RequestShort"},
                      BadInput{"category-mismatch", -1, "gex_AM_RequestMedium"},
                      BadInput{"medium-over-max", 0, "gex_AM_RequestMedium"},
                      BadInput{"long-outside", 0, "gex_AM_RequestLong"},
                      BadInput{"long-straddle", 0, "gex_AM_RequestLong"},
                      BadInput{"reply-from-reply", 0, "gex_AM_ReplyShort"},
                      BadInput{"double-reply", 1, "gex_AM_ReplyShort"},
                      BadInput{"request-in-handler", 1, "gex_AM_RequestShort"}),
    [](const auto& info) { return TestName(info.param.mode); });

TEST(BadInputJobTest, Nargs17IsAnErrorReturnNotAFatalError) {
  const JobResult r = RunApiJob("bad_input_client", 2, {"nargs17"});
  ExpectEveryRankOk(r, 2, "nargs17 ok");
}

}  // namespace
}  // namespace gexrt::testing
