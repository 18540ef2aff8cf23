// The router over a real conduit, end to end: jobs of router_client (C++,
// SEQ) started by gasnetrun_socket with 4 ranks and
// GASNET_SUPERNODE_MAXSIZE=2, so that ranks {0,1} and {2,3} are supernodes
// and each rank has a PSHM peer (rank^1) and a conduit peer (rank^2) over
// the socket conduit (core/testing). Each job must exit with the expected
// code, every rank must print its success line, and nothing may survive
// it: no process, no shared memory object (/dev/shm/GASNT<job id>.*), no
// file in the job's GASNET_TMPDIR. The client checks the details (see its
// header comment); the fields of the ranks' lines are checked again here.
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

extern char** environ;

namespace gexrt::testing {
namespace {

constexpr int kRanks = 4;

struct RouterJob {
  JobResult r;
  std::string tmpdir;
};

// Runs router_client with `args` on 4 ranks in two supernodes, with none of
// the test's own GASNET_* and GEX_* variables, then `env`.
RouterJob RunRouterJob(const std::vector<std::string>& args,
                       const std::vector<std::string>& env = {},
                       const std::string& client = "router_client") {
  BecomeSubreaper();
  RouterJob job;
  job.tmpdir = MakeTempDir("router");
  JobSpec spec;
  spec.argv = {Runfile("tests/core/gasnetrun_socket"), "-n",
               std::to_string(kRanks), "-spawner=fork",
               Runfile("tests/core/" + client)};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("GASNET_", 0) == 0 || name.rfind("GEX_", 0) == 0) {
      spec.env.push_back(name);
    }
  }
  spec.env.push_back("GASNET_SUPERNODE_MAXSIZE=2");
  // A non-collective exit waits half of it for a collective one first.
  spec.env.push_back("GASNET_EXITTIMEOUT=4");
  spec.env.push_back("GASNET_TMPDIR=" + job.tmpdir);
  spec.env.push_back("TMPDIR=" + job.tmpdir);
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  spec.limit = absl::Seconds(60);
  job.r = RunJob(spec);
  return job;
}

std::string Describe(const JobResult& r) {
  return absl::StrFormat(
      "command: %s\nexit: %d\nsurvivors: %d\nstdout:\n%s\nstderr:\n%s",
      r.command, r.exit_code, r.survivors.size(), r.out, r.err);
}

// Lines "rank R: <what>..." by rank (a rank printing one twice fails).
std::map<int, std::string> RankLines(const JobResult& r,
                                     const std::string& what) {
  std::map<int, std::string> lines;
  for (const std::string& line : Lines(r.out)) {
    int rank = -1;
    int consumed = 0;
    if (sscanf(line.c_str(), "rank %d: %n", &rank, &consumed) != 1 ||
        consumed == 0 || line.compare(consumed, what.size(), what) != 0) {
      continue;
    }
    EXPECT_EQ(lines.count(rank), 0u) << "rank " << rank << " twice: " << line;
    lines[rank] = line;
  }
  return lines;
}

long long Field(const std::string& line, const std::string& key) {
  const std::regex re("(^| )" + key + "=(-?[0-9]+)");
  std::smatch m;
  if (!std::regex_search(line, m, re)) return -1;
  return std::atoll(m[2].str().c_str());
}

// The job ended with `code`, nothing of it survived, and it left no shared
// memory behind.
void ExpectCleanEnd(const RouterJob& job, int code) {
  const JobResult& r = job.r;
  EXPECT_EQ(r.exit_code, code) << Describe(r);
  EXPECT_THAT(r.survivors, ::testing::IsEmpty()) << Describe(r);
  const std::map<int, std::string> ids = RankLines(r, "job=");
  ASSERT_EQ(ids.size(), static_cast<size_t>(kRanks)) << Describe(r);
  const std::string id =
      ids.begin()->second.substr(ids.begin()->second.find("job=") + 4);
  ASSERT_FALSE(id.empty()) << Describe(r);
  for (const auto& [rank, line] : ids) {
    EXPECT_EQ(line.substr(line.find("job=") + 4), id) << line;
  }
  EXPECT_THAT(EntriesWithPrefix("/dev/shm", "GASNT" + id + "."),
              ::testing::IsEmpty());
  EXPECT_THAT(EntriesWithPrefix(job.tmpdir, "GASNT"), ::testing::IsEmpty());
}

// Exit 0, every rank's "<what>" line; returns them by rank.
std::map<int, std::string> ExpectEveryRankOk(const RouterJob& job,
                                             const std::string& what) {
  ExpectCleanEnd(job, 0);
  std::map<int, std::string> lines = RankLines(job.r, what);
  EXPECT_EQ(lines.size(), static_cast<size_t>(kRanks)) << Describe(job.r);
  return lines;
}

TEST(RouterJobTest, AmRoutesEachPeerItsWayAndRepliesReturnByOrigin) {
  const RouterJob job = RunRouterJob({"am"});
  // Short, 4 Mediums, 3 Longs to each peer.
  for (const auto& [rank, line] : ExpectEveryRankOk(job, "am ok")) {
    EXPECT_EQ(Field(line, "pshm"), 8) << line;
    EXPECT_EQ(Field(line, "conduit"), 8) << line;
    // Nothing for the PSHM peer touched the conduit, replies included.
    EXPECT_EQ(Field(line, "pshm_conduit_requests"), 0) << line;
    EXPECT_EQ(Field(line, "pshm_conduit_replies"), 0) << line;
    // Every conduit peer's request was answered over the conduit.
    EXPECT_EQ(Field(line, "conduit_requests"), 8) << line;
    EXPECT_EQ(Field(line, "conduit_replies"), 8) << line;
    EXPECT_EQ(Field(line, "conduit_replies_received"), 8) << line;
  }
}

TEST(RouterJobTest, ImmediateIsRefusedByAFullConduitAndAcceptedOnesArrive) {
  const RouterJob job = RunRouterJob({"immediate"});
  const auto lines = ExpectEveryRankOk(job, "immediate ok");
  ASSERT_EQ(lines.size(), static_cast<size_t>(kRanks));
  const long long sent = Field(lines.at(0), "sent");
  EXPECT_GE(sent, 1) << lines.at(0);
  EXPECT_LT(sent, 100000) << lines.at(0);
  EXPECT_EQ(Field(lines.at(0), "would_block"), 3) << lines.at(0);
  EXPECT_EQ(Field(lines.at(2), "received"), sent) << lines.at(2);
  EXPECT_EQ(Field(lines.at(3), "released"), sent) << lines.at(3);
}

struct RmaCase {
  std::string path;  // what router_client expects
  std::vector<std::string> env;
};

class RmaLadderTest : public ::testing::TestWithParam<RmaCase> {};

TEST_P(RmaLadderTest, EachPeerTakesItsRung) {
  const RmaCase& c = GetParam();
  const RouterJob job = RunRouterJob({"rma", c.path}, c.env);
  const bool rdma = c.path == "rdma";
  for (const auto& [rank, line] : ExpectEveryRankOk(job, "rma ok")) {
    EXPECT_EQ(Field(line, "pshm_requests"), 0) << line;
    EXPECT_EQ(Field(line, "pshm_rdma"), 0) << line;
    EXPECT_EQ(Field(line, "pshm_nb_inline"), c.path == "force-am" ? 0 : 1)
        << line;
    EXPECT_EQ(Field(line, "conduit_requests"), rdma ? 0 : 15) << line;
    EXPECT_EQ(Field(line, "conduit_rdma_puts"), rdma ? 3 : 0) << line;
    EXPECT_EQ(Field(line, "conduit_rdma_gets"), rdma ? 3 : 0) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Paths, RmaLadderTest,
    ::testing::Values(RmaCase{"rdma", {}},
                      RmaCase{"am", {"GEX_TEST_CONDUIT_RDMA=0"}},
                      RmaCase{"force-am", {"GEX_RMA_FORCE_AM=1"}}),
    [](const auto& info) {
      std::string name = info.param.path;
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

TEST(RouterJobTest, CollectivesSpanBothSupernodes) {
  const RouterJob job = RunRouterJob({"coll"});
  long long conduit_requests = 0;
  for (const auto& [rank, line] : ExpectEveryRankOk(job, "coll ok")) {
    EXPECT_GE(Field(line, "conduit_requests"), 0) << line;
    conduit_requests += Field(line, "conduit_requests");
  }
  // The supernodes can only have agreed through the conduit.
  EXPECT_GT(conduit_requests, 0) << Describe(job.r);
}

TEST(RouterJobTest, FloodingBothPeersAtOnceDoesNotDeadlock) {
  const RouterJob job = RunRouterJob({"flood"});
  for (const auto& [rank, line] : ExpectEveryRankOk(job, "flood ok")) {
    EXPECT_EQ(Field(line, "requests"), 3000) << line;
    EXPECT_EQ(Field(line, "replies"), 3000) << line;
  }
}

TEST(RouterJobTest, ParThreadsSendAndPollOverBothTransports) {
  const RouterJob job = RunRouterJob({"par"}, {}, "router_par_client");
  for (const auto& [rank, line] : ExpectEveryRankOk(job, "par ok")) {
    EXPECT_EQ(Field(line, "requests"), 3 * 400) << line;
    EXPECT_EQ(Field(line, "replies"), 3 * 400) << line;
    EXPECT_EQ(Field(line, "conduit_rdma_puts"), 3) << line;
    EXPECT_EQ(Field(line, "conduit_rdma_gets"), 3) << line;
  }
  EXPECT_THAT(job.r.err,
              ::testing::Not(::testing::HasSubstr("ThreadSanitizer")));
}

TEST(RouterJobTest, CollectiveExitEndsTheJobWithItsCode) {
  const RouterJob job = RunRouterJob({"exit", "7"});
  ExpectCleanEnd(job, 7);
}

TEST(RouterJobTest, OneRanksExitEndsTheOthersAcrossTheConduit) {
  const RouterJob job = RunRouterJob({"exit-one", "5"});
  ExpectCleanEnd(job, 5);
  EXPECT_THAT(job.r.out, ::testing::Not(::testing::HasSubstr("survived")))
      << Describe(job.r);
}

}  // namespace
}  // namespace gexrt::testing
