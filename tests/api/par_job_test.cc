// PAR mode on the smp conduit, end to end: jobs of par_client (C++, built
// against //conduit/smp:gasnet_smp_par with -Wall -Wextra -Wpedantic -Werror
// over all three public headers) where 4 threads per rank send Short, Medium
// and Long Requests to every rank at once while other threads poll, at 1, 2 and
// 4 ranks; every reply must come back to the thread that asked and every
// request must be seen once, in order.
//
// Under ThreadSanitizer (bazel test --config=tsan //tests/api:par_job_test)
// each rank writes its reports to a file of its own, and the test fails on
// every report about memory private to a process (heap, globals, stacks).
// Reports about the job's shared memory (the PSHM queues, pools and
// segments, mapped from GASNT* objects) are judged only with one rank:
// between processes the synchronization happens in the other process, where
// this process's ThreadSanitizer cannot see it, so such reports are noise
// there (they are counted in the log).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"

namespace gex::testing {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr bool kTsan = true;
constexpr int kRounds = 8;  // ThreadSanitizer is 5-15x slower
#else
constexpr bool kTsan = false;
constexpr int kRounds = 30;
#endif

struct TsanReports {
  std::vector<std::string> private_memory;  // always a failure
  std::vector<std::string> shared_memory;   // a failure with one rank
};

// The reports in the files "<dir>/tsan.<pid>" (TSAN_OPTIONS log_path).
TsanReports ReadTsanReports(const std::string& dir) {
  TsanReports out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("tsan", 0) != 0) continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string report;
    for (const std::string& line : Lines(text.str())) {
      if (absl::StrContains(line, "WARNING: ThreadSanitizer")) report.clear();
      report += line + "\n";
      if (!absl::StartsWith(line, "SUMMARY: ThreadSanitizer")) continue;
      // "Location is global '<null>' at 0x0 (GASNT<job>.<rank>.<n> (deleted)
      // +0x304)" for the PSHM objects; heap, stack or a named global else.
      const bool shared = absl::StrContains(report, "  Location is ") &&
                          absl::StrContains(report, "(GASNT");
      (shared ? out.shared_memory : out.private_memory).push_back(report);
      report.clear();
    }
  }
  return out;
}

class ParJobTest : public ::testing::TestWithParam<int> {};

TEST_P(ParJobTest, ConcurrentRequestsFromFourThreadsAllAnswered) {
  const int n = GetParam();
  std::vector<std::string> env;
  const std::string tsan_dir = MakeTempDir("tsan");
  if (kTsan) {
    // Keep going after a report (the test judges them), one file per rank.
    env.push_back(absl::StrFormat(
        "TSAN_OPTIONS=halt_on_error=0:exitcode=0:second_deadlock_stack=1:"
        "log_path=%s/tsan",
        tsan_dir));
  }
  const JobResult r =
      RunApiJob("par_client", n, {"par", std::to_string(kRounds)}, env);
  // Per rank: 4 threads x 3 categories x kRounds to each of n ranks.
  const long long each = 4LL * 3 * kRounds * n;
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "par ok")) {
    EXPECT_EQ(Field(line, "requests"), each) << line;
    EXPECT_EQ(Field(line, "replies"), each) << line;
  }
  const TsanReports reports = ReadTsanReports(tsan_dir);
  EXPECT_THAT(reports.private_memory, ::testing::IsEmpty())
      << absl::StrJoin(reports.private_memory, "\n");
  if (n == 1) {
    EXPECT_THAT(reports.shared_memory, ::testing::IsEmpty())
        << absl::StrJoin(reports.shared_memory, "\n");
  } else if (!reports.shared_memory.empty()) {
    std::cout << reports.shared_memory.size()
              << " ThreadSanitizer reports about memory shared between "
                 "processes (not judged with "
              << n << " ranks)\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ParJobTest, ::testing::Values(1, 2, 4),
                         [](const auto& info) {
                           return absl::StrFormat("n%d", info.param);
                         });

}  // namespace
}  // namespace gex::testing
