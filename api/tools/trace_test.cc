// Tracing and statistics in a tools-only process (no job: rank 0), compiled
// with GASNET_TRACE and GASNET_STATS for this target: threads tracing,
// counting and changing masks at once must leave every line whole and
// counted once (also run under --config=tsan). The settings are read once
// per process, so this file holds one test.
#include <pthread.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "gasnet_tools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(TraceTest, ThreadsTraceWholeLinesCountedOnce) {
  const char* tmp = getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  const std::string trace_path = dir + "/tools-trace-%.log";
  const std::string stats_path = dir + "/tools-stats-%.log";
  setenv("GASNET_TRACEFILE", trace_path.c_str(), 1);
  setenv("GASNET_STATSFILE", stats_path.c_str(), 1);
  setenv("GASNET_TRACEMASK", "HI", 1);
  // Every line reaches the file as it is written, for reading it below.
  setenv("GASNET_TRACEFLUSH", "1", 1);

  ASSERT_TRUE(GASNETT_TRACE_ENABLED);
  EXPECT_STREQ(GASNETT_TRACE_GETMASK(), "IH");  // GASNet's letter order

  constexpr int kThreads = 4;
  constexpr int kLines = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      GASNETT_TRACE_SETSOURCELINE("worker.cc", 10 + t);
      for (int i = 0; i < kLines; ++i) {
        GASNETT_TRACE_PRINTF("thread %d line %d", t, i);
        GASNETT_STATS_PRINTF("thread %d stat %d", t, i);
        // Readers of the masks race with nothing that changes them here;
        // they must not disturb the writers either.
        if (!GASNETT_TRACE_ENABLED) ADD_FAILURE() << "tracing turned off";
        (void)GASNETT_STATS_GETMASK();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  GASNETT_STATS_DUMP(0);

  // A rank outside any job is rank 0: '%' became 0.
  const std::string trace = ReadFile(dir + "/tools-trace-0.log");
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kLines; ++i) {
      // No N in the mask: no source-line prefix.
      const std::string line = absl::StrFormat("(H) thread %d line %d\n", t, i);
      const size_t at = trace.find(line);
      ASSERT_NE(at, std::string::npos) << line;
      EXPECT_EQ(trace.find(line, at + 1), std::string::npos) << line;
    }
  }
  EXPECT_THAT(trace, ::testing::Not(HasSubstr("[worker.cc")));
  const std::string stats = ReadFile(dir + "/tools-stats-0.log");
  EXPECT_THAT(stats,
              HasSubstr(absl::StrFormat("(S) client trace messages (H): %d\n",
                                        kThreads * kLines)));
  EXPECT_THAT(stats, HasSubstr(absl::StrFormat(
                         "(S) client statistics messages (H): %d\n",
                         kThreads * kLines)));
  EXPECT_THAT(stats, HasSubstr("(H) thread 3 stat 199\n"));
}

}  // namespace
