// Tracing and statistics for real: trace_client (compiled with GASNET_TRACE
// and GASNET_STATS) run as jobs of gasnetrun_smp with GASNET_TRACEFILE and
// GASNET_STATSFILE naming per-rank files ('%' = rank). Each rank's file is
// read back and checked line by line: its own messages and no other rank's,
// the mask's effect, source lines, the statistics block and its counts. Bad
// settings end the job with an error that names the variable.
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

JobResult RunTraceJob(int n, const std::string& mode,
                      const std::vector<std::string>& env,
                      const std::string& client = "trace_client") {
  BecomeSubreaper();
  JobSpec spec;
  spec.argv = {Runfile("tools/gasnetrun_smp"), "-n", std::to_string(n),
               Runfile("tests/tools/" + client), mode};
  // Only the case's settings: none inherited from the test's environment.
  spec.env = {"GASNET_TRACEFILE",  "GASNET_TRACEMASK",
              "GASNET_STATSFILE",  "GASNET_STATSMASK",
              "GASNET_TRACENODES", "GASNET_STATSNODES",
              "GASNET_TRACEFLUSH", "GASNET_TRACELOCAL",
              "GASNET_PSHM_NODES", "GASNET_SUPERNODE_MAXSIZE"};
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  return RunJob(spec);
}

std::string Describe(const JobResult& r) {
  return absl::StrFormat("command: %s\nexit: %d\nstdout:\n%s\nstderr:\n%s",
                         r.command, r.exit_code, r.out, r.err);
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// (client, ranks): the C and the C++ builds of the client, SEQ and PAR.
class TraceJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(TraceJobTest, EachRankWritesItsOwnTraceAndStatistics) {
  const auto& [client, n] = GetParam();
  // The PAR builds trace 4 x 50 more lines, from threads.
  const bool par = absl::EndsWith(client, "_par");
  const int traced = par ? 3 + 4 * 50 : 3;
  const std::string dir = MakeTempDir("trace");
  const JobResult r = RunTraceJob(n, "trace",
                                  {"GASNET_TRACEFILE=" + dir + "/trace-%.log",
                                   "GASNET_STATSFILE=" + dir + "/stats-%.log"},
                                  client);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty());
  for (int rank = 0; rank < n; ++rank) {
    SCOPED_TRACE(absl::StrFormat("rank %d", rank));
    EXPECT_THAT(r.out, HasSubstr(absl::StrFormat(
                           "rank %d: trace ok traced=%d mask=GPRSWBLAXIOCDNHU",
                           rank, traced)))
        << Describe(r);

    const std::string trace_path =
        absl::StrFormat("%s/trace-%d.log", dir, rank);
    const std::string trace = ReadFile(trace_path);
    ASSERT_FALSE(trace.empty()) << trace_path << "\n" << Describe(r);
    // Every line is this rank's: "<rank> <seconds>s> (<category>) ...".
    for (const std::string& line : Lines(trace)) {
      EXPECT_TRUE(absl::StartsWith(line, absl::StrFormat("%d ", rank))) << line;
      EXPECT_THAT(line, HasSubstr("s> (")) << line;
    }
    EXPECT_THAT(trace, HasSubstr("(I) GASNET_TRACEMASK: GPRSWBLAXIOCDNHU\n"));
    // N is in the mask: the source line prefixes the message.
    EXPECT_THAT(trace, HasSubstr(absl::StrFormat(
                           "(H) [trace_client.c:%d] hello from rank %d\n",
                           100 + rank, rank)));
    EXPECT_THAT(trace, HasSubstr("GASNETT_TRACE_SETMASK: mask now \"I\"\n"));
    // Mask "I": PRINTF suppressed, FORCE written (no N: no source line).
    EXPECT_THAT(trace, Not(HasSubstr("suppressed from rank")));
    EXPECT_THAT(trace,
                HasSubstr(absl::StrFormat("(H) forced from rank %d\n", rank)));
    EXPECT_THAT(trace, HasSubstr("GASNET_TRACELOCAL now 0"));
    EXPECT_THAT(trace, HasSubstr(absl::StrFormat(
                           "(H) [trace_client.c:200] after the dump from rank "
                           "%d\n",
                           rank)));
    EXPECT_THAT(trace, HasSubstr("(I) end of trace\n"));
    if (par) {
      // Every thread's every line, whole and once, with its own source line.
      for (int t = 0; t < 4; ++t) {
        for (int i = 0; i < 50; ++i) {
          const std::string line = absl::StrFormat(
              "(H) [thread.c:%d] thread %d line %d of rank %d\n", 1000 + t, t,
              i, rank);
          const size_t at = trace.find(line);
          EXPECT_NE(at, std::string::npos) << line;
          if (at != std::string::npos) {
            EXPECT_EQ(trace.find(line, at + 1), std::string::npos) << line;
          }
        }
      }
    }
    for (int other = 0; other < n; ++other) {
      if (other == rank) continue;
      EXPECT_THAT(trace, Not(HasSubstr(absl::StrFormat("rank %d\n", other))));
    }

    const std::string stats =
        ReadFile(absl::StrFormat("%s/stats-%d.log", dir, rank));
    ASSERT_FALSE(stats.empty()) << Describe(r);
    for (const std::string& line : Lines(stats)) {
      EXPECT_TRUE(absl::StartsWith(line, absl::StrFormat("%d ", rank))) << line;
    }
    EXPECT_THAT(stats, HasSubstr(absl::StrFormat(
                           "(H) stats line from rank %d\n", rank)));
    EXPECT_THAT(stats, Not(HasSubstr("suppressed stats line")));
    EXPECT_THAT(stats, HasSubstr(absl::StrFormat(
                           "(H) forced stats line from rank %d\n", rank)));
    // The dump with reset counts 3 trace calls and 2 statistics lines, and
    // runs the callback; the exit-time dump counts only what came after.
    const size_t dump = stats.find("(dump, then reset) ---");
    const size_t final_dump = stats.find("(dump) ---");
    ASSERT_NE(dump, std::string::npos) << stats;
    ASSERT_NE(final_dump, std::string::npos) << stats;
    ASSERT_LT(dump, final_dump) << stats;
    const std::string first = stats.substr(dump, final_dump - dump);
    const std::string last = stats.substr(final_dump);
    EXPECT_THAT(first, HasSubstr("(S) GASNET_STATSMASK: H\n"));
    EXPECT_THAT(first, HasSubstr(absl::StrFormat(
                           "(S) client trace messages (H): %d\n", traced)));
    EXPECT_THAT(first, HasSubstr("(S) client statistics messages (H): 2\n"));
    EXPECT_THAT(first,
                HasSubstr(absl::StrFormat("(H) callback of rank %d\n", rank)));
    EXPECT_THAT(last, HasSubstr("(S) client trace messages (H): 1\n"));
    EXPECT_THAT(last, HasSubstr("(S) client statistics messages (H): 0\n"));
    EXPECT_THAT(last, HasSubstr("--- end of statistics ---"));
  }
  EXPECT_FALSE(Exists(absl::StrFormat("%s/trace-%d.log", dir, n)));
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, TraceJobTest,
    ::testing::Combine(::testing::Values("trace_client", "trace_client_cxx",
                                         "trace_client_par",
                                         "trace_client_cxx_par"),
                       ::testing::Values(1, 3)),
    [](const auto& info) {
      return absl::StrFormat("%s_n%d", std::get<0>(info.param),
                             std::get<1>(info.param));
    });

TEST(TraceSettingsTest, MaskFromTheEnvironment) {
  const std::string dir = MakeTempDir("trace");
  const std::string file = "GASNET_TRACEFILE=" + dir + "/t-%";
  JobResult r = RunTraceJob(2, "touch", {file, "GASNET_TRACEMASK=H"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("rank 1: touch enabled=1")) << Describe(r);
  EXPECT_THAT(ReadFile(dir + "/t-1"), HasSubstr("(I) GASNET_TRACEMASK: H\n"));

  r = RunTraceJob(2, "touch", {file, "GASNET_TRACEMASK=^H"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("rank 0: touch enabled=0")) << Describe(r);
  EXPECT_THAT(ReadFile(dir + "/t-0"),
              HasSubstr("(I) GASNET_TRACEMASK: GPRSWBLAXIOCDNU\n"));
}

TEST(TraceSettingsTest, TraceLocalFromTheEnvironment) {
  const std::string dir = MakeTempDir("trace");
  const std::string file = "GASNET_TRACEFILE=" + dir + "/t-%";
  JobResult r = RunTraceJob(1, "touch", {file});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("rank 0: touch enabled=1 tracelocal=1"))
      << Describe(r);
  r = RunTraceJob(1, "touch", {file, "GASNET_TRACELOCAL=0"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("rank 0: touch enabled=1 tracelocal=0"))
      << Describe(r);
  r = RunTraceJob(1, "touch", {file, "GASNET_TRACELOCAL=perhaps"});
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("GASNET_TRACELOCAL")) << Describe(r);
}

TEST(TraceSettingsTest, TraceFlushWritesEachLineAtOnce) {
  // The client writes a line, then _exit()s: no stdio buffer is flushed.
  // With GASNET_TRACEFLUSH the line is in the file; without, it is lost.
  const std::string dir = MakeTempDir("trace");
  JobResult r = RunTraceJob(
      1, "vanish",
      {"GASNET_TRACEFILE=" + dir + "/flushed-%", "GASNET_TRACEFLUSH=1"});
  EXPECT_EQ(r.exit_code, 7) << Describe(r);
  EXPECT_THAT(ReadFile(dir + "/flushed-0"),
              HasSubstr("(H) before the end of rank 0\n"))
      << Describe(r);
  r = RunTraceJob(1, "vanish", {"GASNET_TRACEFILE=" + dir + "/buffered-%"});
  EXPECT_EQ(r.exit_code, 7) << Describe(r);
  EXPECT_TRUE(Exists(dir + "/buffered-0"));
  EXPECT_THAT(ReadFile(dir + "/buffered-0"), Not(HasSubstr("before the end")))
      << Describe(r);
}

TEST(TraceSettingsTest, GasnetExitClosesTheFilesWithTheFinalStatistics) {
  const std::string dir = MakeTempDir("trace");
  const JobResult r = RunTraceJob(
      2, "exit",
      {"GASNET_TRACEFILE=" + dir + "/t-%", "GASNET_STATSFILE=" + dir + "/s-%",
       "GASNET_TRACEMASK=H", "GASNET_STATSMASK=H"});
  EXPECT_EQ(r.exit_code, 5) << Describe(r);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_THAT(
        ReadFile(absl::StrFormat("%s/t-%d", dir, rank)),
        HasSubstr(absl::StrFormat("(H) before gasnet_exit on rank %d\n", rank)))
        << Describe(r);
    EXPECT_THAT(ReadFile(absl::StrFormat("%s/s-%d", dir, rank)),
                HasSubstr("--- end of statistics ---"))
        << Describe(r);
  }
}

TEST(TraceSettingsTest, NoFileNoTracing) {
  const JobResult r = RunTraceJob(2, "touch", {"GASNET_TRACEMASK=H"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("rank 0: touch enabled=0")) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("rank 1: touch enabled=0")) << Describe(r);
}

TEST(TraceSettingsTest, TraceNodesPicksTheRanksThatWrite) {
  const std::string dir = MakeTempDir("trace");
  const JobResult r = RunTraceJob(
      3, "touch",
      {"GASNET_TRACEFILE=" + dir + "/t-%", "GASNET_TRACENODES=0,2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(Exists(dir + "/t-0"));
  EXPECT_FALSE(Exists(dir + "/t-1"));
  EXPECT_TRUE(Exists(dir + "/t-2"));
  EXPECT_THAT(r.out, HasSubstr("rank 1: touch enabled=0")) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("rank 2: touch enabled=1")) << Describe(r);
}

TEST(TraceSettingsTest, StdoutAsTheTraceFile) {
  const JobResult r = RunTraceJob(1, "touch", {"GASNET_TRACEFILE=stdout"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("0 ")) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("(I) GASNET_TRACEMASK: GPRSWBLAXIOCDNHU\n"))
      << Describe(r);
}

TEST(TraceSettingsTest, UnknownMaskLetterIsAnErrorNamingTheVariable) {
  const std::string dir = MakeTempDir("trace");
  JobResult r = RunTraceJob(
      2, "touch", {"GASNET_TRACEFILE=" + dir + "/t-%", "GASNET_TRACEMASK=HZ"});
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("environment variable GASNET_TRACEMASK has the "
                               "invalid value \"HZ\": 'Z'"))
      << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty());

  r = RunTraceJob(1, "touch", {"GASNET_STATSMASK=Hq"});
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("GASNET_STATSMASK")) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("'q'")) << Describe(r);
}

TEST(TraceSettingsTest, UnwritableFileIsAnErrorNamingTheVariable) {
  const std::string dir = MakeTempDir("trace");
  const JobResult r =
      RunTraceJob(2, "touch", {"GASNET_STATSFILE=" + dir + "/no/such/dir/s-%"});
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("environment variable GASNET_STATSFILE"))
      << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("cannot open \"" + dir + "/no/such/dir/s-"))
      << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty());
}

}  // namespace
}  // namespace gexrt::testing
