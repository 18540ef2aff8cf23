// Jobs only the ucx conduit has: bounded AM buffering under a one-way
// flood and an all-to-all storm, each bad GASNET_UCX_* setting's message,
// a ring of RMA and large Longs over each transport, and UCX staying quiet
// about our own GASNET_UCX_* variables. Every job pins UCX to loopback
// (GASNET_UCX_TLS=tcp, UCX_NET_DEVICES=lo) and sends everything through
// UCX (GASNET_SUPERNODE_MAXSIZE=1) unless a case says otherwise. (The API
// suites run over ucx too: tests/api.)
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

JobResult RunUcxJob(int n, const std::vector<std::string>& args,
                    const std::vector<std::string>& env,
                    absl::Duration limit = absl::Seconds(120)) {
  BecomeSubreaper();
  JobSpec spec;
  spec.argv = {Runfile("tools/gasnetrun_ucx"), "-n", std::to_string(n),
               Runfile("tests/ucx/ucx_client")};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  const std::string tmpdir = MakeTempDir("ucx");
  spec.env = {"GASNET_SUPERNODE_MAXSIZE=1",
              "GASNET_UCX_TLS=tcp",
              "GASNET_UCX_NET_DEVICES=lo",
              "UCX_NET_DEVICES=lo",
              "UCX_TLS",
              "GASNET_UCX_SPAWNER",
              "GASNET_UCX_MAX_MEDIUM",
              "GASNET_SSH_SERVERS",
              "GASNET_SSH_NODEFILE",
              "GASNET_TMPDIR=" + tmpdir,
              "TMPDIR=" + tmpdir};
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  spec.limit = limit;
  return RunJob(spec);
}

std::string Describe(const JobResult& r) {
  return absl::StrFormat(
      "command: %s\nexit: %d\nsurvivors: %d\nstdout:\n%s\nstderr:\n%s",
      r.command, r.exit_code, r.survivors.size(), r.out.substr(0, 4000),
      r.err.substr(0, 4000));
}

// The number after "key=" in `line`, or -1.
long long Field(const std::string& line, const std::string& key) {
  const size_t at = line.find(key + "=");
  if (at == std::string::npos) return -1;
  return std::stoll(line.substr(at + key.size() + 1));
}

std::string RankLine(const JobResult& r, int rank, const std::string& what) {
  const std::string prefix = absl::StrFormat("rank %d: %s", rank, what);
  for (const std::string& line : Lines(r.out)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

// The job id the ranks printed before init ("rank ?: job=<id>").
std::string JobId(const JobResult& r) {
  for (const std::string& line : Lines(r.out)) {
    const std::string prefix = "rank ?: job=";
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  return "";
}

// A one-way flood of AM Mediums that are never answered: without flow
// control UCX would queue every message the receiver has not handled yet
// (the seed's bug 4337). The credits stop the sender whenever the
// receiver is behind: counts are exact, each rank's peak RSS grows by less
// than 64 MiB, and the receive pool (GASNET_UCX_STATS) stays within the
// credits (32 per peer by default) plus a few. (300 thousand here, for
// CI's time; conduit/ucx/README.md gives longer runs.)
TEST(UcxFloodTest, ManyRequestsExactCountBoundedMemory) {
  constexpr long long kMessages = 300'000;
  constexpr long long kRssBoundKb = 64 * 1024;
  const JobResult r = RunUcxJob(2, {"flood", std::to_string(kMessages)},
                                {"GASNET_UCX_STATS=1"}, absl::Seconds(280));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(r.survivors.empty());
  for (int rank = 0; rank < 2; ++rank) {
    const std::string line = RankLine(r, rank, "flood ok");
    ASSERT_FALSE(line.empty()) << Describe(r);
    EXPECT_EQ(Field(line, "count"), kMessages) << line;
    const long long growth = Field(line, "rss_growth_kb");
    EXPECT_GE(growth, 0) << line;
    EXPECT_LT(growth, kRssBoundKb) << line;
    bool found = false;
    for (const std::string& s : Lines(r.out)) {
      if (s.rfind(absl::StrFormat("ucx: rank %d: ", rank), 0) != 0) continue;
      found = true;
      // The pool's initial 64 buffers cover 32 credits, the hidden credit
      // messages and the barrier's AMs; far below what an unbounded
      // queue would reach.
      EXPECT_LE(Field(s, "rx_buffers"), 256) << s;
      EXPECT_LE(Field(s, "tx_buffers"), 2 * 1024) << s;
    }
    EXPECT_TRUE(found) << Describe(r);
  }
}

// Every rank floods every other at once (8 ranks, 2 CPUs): counts exact,
// memory bounded the same way.
TEST(UcxFloodTest, AllToAllStormAtEightRanks) {
  constexpr long long kRounds = 5'000;
  const JobResult r = RunUcxJob(8, {"storm", std::to_string(kRounds)},
                                {"GASNET_UCX_STATS=1"}, absl::Seconds(280));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(r.survivors.empty());
  for (int rank = 0; rank < 8; ++rank) {
    const std::string line = RankLine(r, rank, "storm ok");
    ASSERT_FALSE(line.empty()) << Describe(r);
    EXPECT_EQ(Field(line, "count"), kRounds * 7) << line;
    EXPECT_LT(Field(line, "rss_growth_kb"), 64 * 1024) << line;
  }
}

struct BadSetting {
  const char* name;
  std::vector<std::string> env;
  const char* message;  // what the fatal line must say
};

class UcxBadInputTest : public ::testing::TestWithParam<BadSetting> {};

TEST_P(UcxBadInputTest, ClearMessageNonzeroExitNothingLeft) {
  const JobResult r = RunUcxJob(2, {"hello"}, GetParam().env);
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("*** FATAL ERROR")) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr(GetParam().message)) << Describe(r);
  // The conduit is named once ("the ucx conduit: ucx conduit: ..." was the
  // runtime's prefix before the conduit's own).
  EXPECT_THAT(r.err, Not(HasSubstr("conduit: ucx conduit:"))) << Describe(r);
  EXPECT_THAT(r.out, Not(HasSubstr("hello ok"))) << Describe(r);
  EXPECT_TRUE(r.survivors.empty()) << Describe(r);
  // Nothing left in /dev/shm under the job's name.
  const std::string job = JobId(r);
  ASSERT_FALSE(job.empty()) << Describe(r);
  EXPECT_THAT(EntriesWithPrefix("/dev/shm", "GASNT" + job + "."),
              ::testing::IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(
    Settings, UcxBadInputTest,
    ::testing::Values(
        BadSetting{"MaxMediumTooSmall",
                   {"GASNET_UCX_MAX_MEDIUM=100"},
                   "GASNET_UCX_MAX_MEDIUM=100 is out of range: at least 512"},
        BadSetting{"MaxMediumNotASize",
                   {"GASNET_UCX_MAX_MEDIUM=lots"},
                   "GASNET_UCX_MAX_MEDIUM"},
        BadSetting{"UnknownTransport",
                   {"GASNET_UCX_TLS=tcp,carrier_pigeon"},
                   "GASNET_UCX_TLS=tcp,carrier_pigeon: 'carrier_pigeon' is "
                   "not a UCX transport"},
        // Known to UCX, absent here (no InfiniBand): ucp_init finds none.
        BadSetting{"TransportNotOnThisHost",
                   {"GASNET_UCX_TLS=rc"},
                   "UCX found no usable transport (No such device) with "
                   "GASNET_UCX_TLS=rc"},
        // self reaches only this process: ranks cannot reach each other.
        BadSetting{"NoReachableTransport",
                   {"GASNET_UCX_TLS=self"},
                   "with the transports UCX was given: GASNET_UCX_TLS=self"},
        BadSetting{"BadOrderedTls",
                   {"GASNET_UCX_AM_ORDERED_TLS=sometimes"},
                   "GASNET_UCX_AM_ORDERED_TLS"},
        BadSetting{
            "BadCredits", {"GASNET_AM_CREDITS_PP=0"}, "GASNET_AM_CREDITS_PP"}),
    [](const ::testing::TestParamInfo<BadSetting>& info) {
      return std::string(info.param.name);
    });

// Each transport carries RMA from and to heap buffers and a Long larger
// than a Medium (payload by RMA, then the header), with the Long's header
// waiting for remote completion and, forced, without.
struct Transport {
  const char* name;
  std::vector<std::string> env;
};

class UcxTransportTest : public ::testing::TestWithParam<Transport> {};

TEST_P(UcxTransportTest, RingOverEveryRank) {
  const JobResult r = RunUcxJob(3, {"ring"}, GetParam().env);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(r.survivors.empty());
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_FALSE(RankLine(r, rank, "ring ok").empty()) << Describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Transports, UcxTransportTest,
    ::testing::Values(Transport{"tcp", {}},
                      Transport{"tcp_ordered", {"GASNET_UCX_AM_ORDERED_TLS=1"}},
                      Transport{"posix", {"GASNET_UCX_TLS=posix"}},
                      Transport{"sysv", {"GASNET_UCX_TLS=sysv"}},
                      Transport{"sm", {"GASNET_UCX_TLS=sm"}},
                      Transport{"tcp_sn2", {"GASNET_SUPERNODE_MAXSIZE=2"}}),
    [](const ::testing::TestParamInfo<Transport>& info) {
      return std::string(info.param.name);
    });

// Bug 4301, fixed: our own GASNET_UCX_* settings never draw UCX's
// "unused env variable" warning, while a misspelt UCX key under our
// prefix still does (the warning is UCX's way to catch it).
TEST(UcxEnvTest, OurVariablesDrawNoUnusedWarningAMisspeltOneDoes) {
  const JobResult r =
      RunUcxJob(2, {"hello"},
                {"GASNET_UCX_SPAWNER=fork", "GASNET_UCX_MAX_MEDIUM=4096",
                 "GASNET_UCX_AM_ORDERED_TLS=0", "GASNET_UCX_STATS=0",
                 "GASNET_UCX_NET_DEVICEZ=lo", "UCX_WARN_UNUSED_ENV_VARS"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  // UCX logs to stdout by default.
  const std::string both = r.out + r.err;
  EXPECT_THAT(both, Not(HasSubstr("GASNET_UCX_SPAWNER"))) << Describe(r);
  EXPECT_THAT(both, Not(HasSubstr("GASNET_UCX_MAX_MEDIUM"))) << Describe(r);
  EXPECT_THAT(both, Not(HasSubstr("GASNET_UCX_AM_ORDERED_TLS"))) << Describe(r);
  EXPECT_THAT(both, Not(HasSubstr("GASNET_UCX_STATS"))) << Describe(r);
  EXPECT_THAT(both, HasSubstr("unused env variable")) << Describe(r);
  EXPECT_THAT(both, HasSubstr("GASNET_UCX_NET_DEVICEZ")) << Describe(r);
}

}  // namespace
}  // namespace gexrt::testing
