// PAR mode over any conduit (api_tests.bzl), end to end: jobs of par_client
// (C++, built against a conduit's PAR library with -Wall -Wextra -Wpedantic
// -Werror over all three public headers) where 4 threads per rank send Short,
// Medium and Long Requests to every rank at once while other threads poll, at
// 1, 2 and 4 ranks; every reply must come back to the thread that asked and
// every request must be seen once, in order.
//
// Under ThreadSanitizer (bazel test --config=tsan //tests/api:par_job_test)
// each rank writes its reports to a file of its own, and the test fails on
// every report about memory private to a process (heap, globals, stacks).
// Reports about the job's shared memory (the PSHM queues, pools and
// segments, mapped from GASNT* objects) are judged only with one rank:
// between processes the synchronization happens in the other process, where
// this process's ThreadSanitizer cannot see it, so such reports are noise
// there (they are counted in the log).
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"
#include "tests/api/tsan_reports.h"

namespace gexrt::testing {
namespace {

constexpr int kRounds = kTsan ? 8 : 30;  // ThreadSanitizer is 5-15x slower

class ParJobTest : public ::testing::TestWithParam<int> {};

TEST_P(ParJobTest, ConcurrentRequestsFromFourThreadsAllAnswered) {
  const int n = GetParam();
  std::vector<std::string> env;
  const std::string tsan_dir = MakeTempDir("tsan");
  for (std::string& v : TsanEnv(tsan_dir)) env.push_back(std::move(v));
  const JobResult r =
      RunApiJob("par_client", n, {"par", std::to_string(kRounds)}, env);
  // Per rank: 4 threads x 3 categories x kRounds to each of n ranks.
  const long long each = 4LL * 3 * kRounds * n;
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "par ok")) {
    EXPECT_EQ(Field(line, "requests"), each) << line;
    EXPECT_EQ(Field(line, "replies"), each) << line;
  }
  ExpectNoTsanReports(tsan_dir, n);
}

// 2 ranks x (1 thread doing blocking Puts and Gets with a barrier after
// each phase + 3 threads spinning in gasnet_AMPoll without a pause): more
// threads than this machine's CPUs, all of them runnable. The job must
// finish; the job runner's limit catches a stall (no timing assert). Over
// both RMA paths: direct (no progress needed for the transfer itself, only
// for the barrier) and over Active Messages (the peer's spinners must run
// the handlers).
class ParRmaPollTest : public ::testing::TestWithParam<bool> {};

TEST_P(ParRmaPollTest, SpinningPollersDoNotStarveTheRmaThread) {
  constexpr int kRanks = 2;
  constexpr int kPhases = kTsan ? 40 : 600;
  const JobResult r =
      RunApiJob("par_client", kRanks, {"rma-poll", std::to_string(kPhases)},
                ForceAmEnv(GetParam()));
  for (const auto& [rank, line] : ExpectEveryRankOk(r, kRanks, "rma-poll ok")) {
    EXPECT_EQ(Field(line, "phases"), kPhases) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, ParRmaPollTest, ::testing::Bool(),
                         [](const auto& info) { return PathName(info.param); });

INSTANTIATE_TEST_SUITE_P(Ranks, ParJobTest, ::testing::Values(1, 2, 4),
                         [](const auto& info) {
                           return absl::StrFormat("n%d", info.param);
                         });

}  // namespace
}  // namespace gexrt::testing
