// gasnetrun_smp end to end: real jobs of bootstrap_client started with the
// fork spawner (and the ssh spawner over a stand-in remote shell), checked
// from the outside: exit codes, output, error messages, and that no process
// of a job survives it.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::string Launcher() { return Runfile("tools/gasnetrun_smp"); }
std::string Client() { return Runfile("tests/bootstrap/bootstrap_client"); }
std::string FakeSsh() { return Runfile("tests/bootstrap/fake_ssh.sh"); }
std::string RecordingSsh() {
  return Runfile("tests/bootstrap/recording_ssh.sh");
}

// Every job in this file gets a short exit timeout: tests that need the
// launcher to kill stragglers must not wait the default.
std::vector<std::string> BaseEnv() {
  return {"GASNET_EXITTIMEOUT=1", "GASNET_SMP_SPAWNER"};
}

JobResult Launch(std::vector<std::string> args,
                 std::vector<std::string> env = {}) {
  JobSpec spec;
  spec.argv = {Launcher()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = BaseEnv();
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  return RunJob(spec);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool IsHex(const std::string& s) {
  return !s.empty() &&
         s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A job id as the launcher makes it: 8 hex digits (host id), the
// launcher's pid in decimal, 16 hex digits (64 random bits); at most 31
// characters.
bool IsJobId(const std::string& id) {
  if (id.size() < 8 + 1 + 16 || id.size() > 31) return false;
  const std::string middle = id.substr(8, id.size() - 24);
  return IsHex(id.substr(0, 8)) && IsHex(id.substr(id.size() - 16)) &&
         middle.find_first_not_of("0123456789") == std::string::npos;
}

std::string Describe(const JobResult& r) {
  return absl::StrFormat("command: %s\nexit: %d\nstdout:\n%s\nstderr:\n%s",
                         r.command, r.exit_code, r.out, r.err);
}

// Lines of stdout that say "rank R/N collectives ok", as a sorted rank list.
std::vector<int> RanksReporting(const std::string& out, int n,
                                const std::string& what) {
  std::vector<int> ranks;
  for (const std::string& line : Lines(out)) {
    int r, size;
    char tail[64];
    if (sscanf(line.c_str(), "rank %d/%d %63[a-z ]", &r, &size, tail) == 3 &&
        size == n && what == tail) {
      ranks.push_back(r);
    }
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::vector<int> Iota(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

class ForkJobTest : public ::testing::TestWithParam<int> {};

TEST_P(ForkJobTest, CollectivesDeliverCheckedContents) {
  const int n = GetParam();
  const std::string pids = MakeTempDir("pids");
  JobResult r = Launch(
      {"-n", std::to_string(n), Client(), "--pids", pids, "collectives"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(RanksReporting(r.out, n, "collectives ok"),
              ElementsAreArray(Iota(n)))
      << Describe(r);
  EXPECT_EQ(PidsInDir(pids).size(), static_cast<size_t>(n));
  EXPECT_THAT(LivePids(PidsInDir(pids)), IsEmpty());
  EXPECT_THAT(r.survivors, IsEmpty());
}

TEST_P(ForkJobTest, NodeMapFindsOneHost) {
  const int n = GetParam();
  JobResult r = Launch({"-n", std::to_string(n), Client(), "nodemap"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  int lines = 0;
  for (const std::string& line : Lines(r.out)) {
    EXPECT_THAT(line,
                HasSubstr(absl::StrFormat("/%d host 0/1 supernode 0/1", n)));
    ++lines;
  }
  EXPECT_EQ(lines, n) << Describe(r);
}

TEST_P(ForkJobTest, SupernodeMaxSizeSplitsTheHost) {
  const int n = GetParam();
  JobResult r = Launch({"-n", std::to_string(n), Client(), "nodemap"},
                       {"GASNET_SUPERNODE_MAXSIZE=1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (const std::string& line : Lines(r.out)) {
    int rank, size, host, hosts, sn, sns;
    ASSERT_EQ(sscanf(line.c_str(), "rank %d/%d host %d/%d supernode %d/%d",
                     &rank, &size, &host, &hosts, &sn, &sns),
              6)
        << line;
    EXPECT_EQ(sns, n) << line;
    EXPECT_EQ(sn, rank) << line;
    EXPECT_EQ(hosts, 1) << line;
  }
}

TEST_P(ForkJobTest, OneRankExitingWithThreeMakesTheJobExitThree) {
  const int n = GetParam();
  const std::string pids = MakeTempDir("pids");
  JobResult r = Launch({"-n", std::to_string(n), Client(), "--pids", pids,
                        "exit", "3", std::to_string(n - 1)});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_THAT(r.out,
              HasSubstr(absl::StrFormat("rank %d exiting with 3", n - 1)));
  if (n > 1) {
    // The others were in a barrier the exited rank never joins: they are
    // told at once, not left to the exit timeout.
    EXPECT_THAT(r.err, HasSubstr(absl::StrFormat(
                           "rank %d exited with code 3 before joining "
                           "bootstrap barrier",
                           n - 1)))
        << Describe(r);
    EXPECT_THAT(r.out, Not(HasSubstr("barrier completed")));
  }
  EXPECT_THAT(LivePids(PidsInDir(pids)), IsEmpty());
  EXPECT_THAT(r.survivors, IsEmpty());
}

TEST_P(ForkJobTest, EveryRankExitingWithACodeGivesThatCode) {
  const int n = GetParam();
  JobResult r = Launch({"-n", std::to_string(n), Client(), "exit-all", "7"});
  EXPECT_EQ(r.exit_code, 7) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty());
}

TEST_P(ForkJobTest, SigkilledRankEndsTheJobAndNothingSurvives) {
  const int n = GetParam();
  const std::string pids = MakeTempDir("pids");
  // The others spin without ever calling the bootstrap again, each with a
  // child process of its own: only the launcher's kill can end them.
  JobResult r = Launch({"-n", std::to_string(n), Client(), "--pids", pids,
                        "--child", "kill-self", std::to_string(n - 1)});
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr(absl::StrFormat("rank %d was killed by signal 9",
                                               n - 1)));
  if (n > 1) {
    // These ranks have no graceful exit (no ExitReady): nobody asks them to
    // exit, and the exit timeout ends them.
    EXPECT_THAT(r.err, HasSubstr("GASNET_EXITTIMEOUT"));
    EXPECT_THAT(r.err, Not(HasSubstr("asking")));
  }
  const std::vector<pid_t> all = PidsInDir(pids);
  EXPECT_EQ(all.size(), static_cast<size_t>(2 * n));  // ranks + children
  EXPECT_THAT(LivePids(all), IsEmpty());
  EXPECT_THAT(r.survivors, IsEmpty());
}

TEST_P(ForkJobTest, DaemonsTheRanksStartDoNotOutliveTheJob) {
  const int n = GetParam();
  const std::string pids = MakeTempDir("pids");
  // Each rank's child leaves the process group and closes its output: only
  // the launcher adopting it (child subreaper) can still find it.
  JobResult r = Launch({"-n", std::to_string(n), Client(), "--pids", pids,
                        "--escape", "collectives"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const std::vector<pid_t> all = PidsInDir(pids);
  EXPECT_EQ(all.size(), static_cast<size_t>(2 * n));
  EXPECT_THAT(LivePids(all), IsEmpty());
  EXPECT_THAT(r.survivors, IsEmpty());
}

TEST_P(ForkJobTest, OutputLinesArriveWhole) {
  const int n = GetParam();
  const int k = 300;
  JobResult r =
      Launch({"-n", std::to_string(n), Client(), "lines", std::to_string(k)});
  ASSERT_EQ(r.exit_code, 0) << Describe(r).substr(0, 2000);
  std::map<int, int> next_line;  // per rank, lines arrive in order
  int total = 0;
  for (const std::string& line : Lines(r.out)) {
    int rank, index;
    char x[1024];
    ASSERT_EQ(
        sscanf(line.c_str(), "rank %d line %d %1023[x] end", &rank, &index, x),
        3)
        << "torn line: " << line;
    EXPECT_EQ(std::string(x).size(), 100u + (index * 37 + rank * 11) % 300)
        << line;
    EXPECT_EQ(index, next_line[rank]++) << line;
    ++total;
  }
  EXPECT_EQ(total, n * k);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ForkJobTest, ::testing::Values(1, 2, 4, 8),
                         [](const auto& info) {
                           return absl::StrFormat("n%d", info.param);
                         });

TEST(LauncherTest, AbortEndsTheJobWithItsCode) {
  const std::string pids = MakeTempDir("pids");
  JobResult r =
      Launch({"-n", "4", Client(), "--pids", pids, "abort", "5", "1"});
  EXPECT_EQ(r.exit_code, 5) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("rank 1 ended the job with exit code 5: test "
                               "abort"));
  EXPECT_THAT(LivePids(PidsInDir(pids)), IsEmpty());
  EXPECT_THAT(r.survivors, IsEmpty());
}

TEST(LauncherTest, HungRankIsNamedWhenTheBootstrapTimeoutExpires) {
  JobResult r = Launch({"-n", "3", Client(), "hang", "2"},
                       {"GASNET_BOOTSTRAP_TIMEOUT=1"});
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("timed out after 1s (GASNET_BOOTSTRAP_TIMEOUT)"
                               ": rank(s) 2 did not join"))
      << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty());
}

TEST(LauncherTest, StdinGoesToRankZero) {
  JobSpec spec;
  spec.argv = {Launcher(), "-n", "3", Client(), "stdin"};
  spec.env = BaseEnv();
  spec.stdin_data = "first line\nsecond line\n";
  JobResult r = RunJob(spec);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "first line\nsecond line\n");
}

TEST(LauncherTest, RanksShareOneJobId) {
  JobResult r = Launch({"-n", "4", Client(), "env", "GEX_JOB_ID"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::set<std::string> ids;
  for (const std::string& line : Lines(r.out)) {
    ids.insert(line.substr(line.find('=') + 1));
  }
  ASSERT_EQ(ids.size(), 1u) << r.out;
  EXPECT_THAT(*ids.begin(), Not(AllOf(IsEmpty(), HasSubstr("unset"))));
  // It names the job's shared memory objects (/dev/shm/GASNT<id>.*), which
  // every local user can list and pre-create: host id, launcher pid and 64
  // random bits, so the names cannot be guessed ahead of the job.
  const std::string id = *ids.begin();
  EXPECT_TRUE(IsJobId(id)) << id;
}

TEST(LauncherTest, SigtermToTheLauncherEndsTheJob) {
  const std::string pids = MakeTempDir("pids");
  JobSpec spec;
  spec.argv = {Launcher(), "-n", "4",       Client(),
               "--pids",   pids, "--child", "spin"};
  spec.env = BaseEnv();
  spec.signal = SIGTERM;
  spec.signal_when_file = pids + "/ready";
  JobResult r = RunJob(spec);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("received signal 15"));
  EXPECT_THAT(LivePids(PidsInDir(pids)), IsEmpty());
  EXPECT_THAT(r.survivors, IsEmpty());
}

TEST(LauncherTest, SigkilledLauncherTakesItsRanksWithIt) {
  const std::string pids = MakeTempDir("pids");
  JobSpec spec;
  spec.argv = {Launcher(), "-n", "4", Client(), "--pids", pids, "spin"};
  spec.env = BaseEnv();
  spec.signal = SIGKILL;
  spec.signal_when_file = pids + "/ready";
  JobResult r = RunJob(spec);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  const std::vector<pid_t> ranks = PidsInDir(pids);
  EXPECT_EQ(ranks.size(), 4u);
  // The kernel kills them (parent-death signal); give it a moment to act.
  EXPECT_THAT(WaitForPidsGone(ranks, absl::Seconds(30)), IsEmpty());
}

TEST(LauncherTest, VerboseNamesEachRankAndDryRunStartsNothing) {
  JobResult v = Launch({"-v", "-n", "2", Client(), "collectives"});
  ASSERT_EQ(v.exit_code, 0) << Describe(v);
  EXPECT_THAT(v.err, HasSubstr("started rank 0 (pid"));
  EXPECT_THAT(v.err, HasSubstr("started rank 1 (pid"));

  const std::string pids = MakeTempDir("pids");
  JobResult t = Launch({"-t", "-n", "3", Client(), "--pids", pids, "spin"});
  EXPECT_EQ(t.exit_code, 0) << Describe(t);
  EXPECT_THAT(t.out, HasSubstr("rank 2: " + Client()));
  EXPECT_THAT(PidsInDir(pids), IsEmpty());
  EXPECT_THAT(t.survivors, IsEmpty());
}

TEST(LauncherTest, HelpPrintsUsage) {
  JobResult r = Launch({"-h"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("gasnetrun_smp"));
  EXPECT_THAT(r.out, HasSubstr("-spawner"));
}

struct BadInput {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::string message;
};

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, ClearMessageNonzeroExitNothingLeft) {
  const BadInput& c = GetParam();
  std::vector<std::string> args;
  for (const std::string& a : c.args) {
    args.push_back(a == "CLIENT" ? Client() : a == "FAKESSH" ? FakeSsh() : a);
  }
  std::vector<std::string> env;
  for (const std::string& e : c.env) {
    env.push_back(absl::StrReplaceAll(e, {{"FAKESSH", FakeSsh()}}));
  }
  JobResult r = Launch(args, env);
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr(c.message)) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(
    Launcher, BadInputTest,
    ::testing::Values(
        BadInput{"UnknownOption", {"-x", "CLIENT"}, {}, "unknown option '-x'"},
        BadInput{
            "ZeroRanks", {"-n", "0", "CLIENT"}, {}, "-n must be at least 1"},
        BadInput{"MissingProgram", {"-n", "2"}, {}, "no program"},
        BadInput{"UnknownSpawner",
                 {"-n", "2", "-spawner=carrier-pigeon", "CLIENT"},
                 {},
                 "unknown spawner 'carrier-pigeon'"},
        BadInput{"UnknownSpawnerInEnvironment",
                 {"-n", "2", "CLIENT"},
                 {"GASNET_SMP_SPAWNER=bogus"},
                 "GASNET_SMP_SPAWNER"},
        BadInput{"PmiTemplateWithoutProgram",
                 {"-n", "2", "-spawner=pmi", "CLIENT"},
                 {"GASNET_PMI_LAUNCHER=mpirun -n %n"},
                 "GASNET_PMI_LAUNCHER: the template has no %P"},
        BadInput{"ProgramNotFound",
                 {"-n", "2", "/no/such/program"},
                 {},
                 "/no/such/program"},
        BadInput{"ForkSpawnerOnManyNodes",
                 {"-n", "4", "-N", "2", "CLIENT", "collectives"},
                 {},
                 "the fork spawner runs every rank on this host"},
        BadInput{"MalformedExitTimeout",
                 {"-n", "2", "CLIENT", "collectives"},
                 {"GASNET_EXITTIMEOUT=soon"},
                 "GASNET_EXITTIMEOUT"},
        BadInput{
            "SshWithoutHosts",
            {"-n", "2", "-spawner=ssh", "CLIENT", "collectives"},
            {"GASNET_SSH_SERVERS", "GASNET_SSH_NODEFILE", "GASNET_NODEFILE",
             "PBS_NODEFILE", "PE_HOSTFILE", "LSB_HOSTS"},
            "GASNET_SSH_SERVERS"},
        BadInput{
            "SshUnreachableHost",
            {"-n", "4", "-spawner=ssh", "CLIENT", "collectives"},
            {"GASNET_SSH_CMD=FAKESSH", "GASNET_SSH_SERVERS=alpha unreachable"},
            "host unreachable: could not be started"},
        BadInput{"SshMalformedServerList",
                 {"-n", "2", "-spawner=ssh", "CLIENT", "collectives"},
                 {"GASNET_SSH_SERVERS=good bad;host"},
                 "bad;host"}),
    [](const auto& info) { return info.param.name; });

// A rank that breaks the control protocol ends the job, and the message
// names what it sent: a known type by name, an unknown one by number.
TEST(LauncherTest, ProtocolErrorNamesTheMessageType) {
  JobResult r = Launch({"-n", "2", Client(), "raw-frame", "37"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("unexpected message of unknown type 37"))
      << Describe(r);
  EXPECT_THAT(r.err, Not(HasSubstr("message message"))) << Describe(r);
  JobResult k = Launch({"-n", "2", Client(), "raw-frame", "8"});
  EXPECT_EQ(k.exit_code, 1) << Describe(k);
  EXPECT_THAT(k.err, HasSubstr("unexpected kill message")) << Describe(k);
  EXPECT_THAT(r.survivors, IsEmpty());
  EXPECT_THAT(k.survivors, IsEmpty());
}

// The ssh spawner on this one machine, with a remote shell that runs the
// command locally in an empty environment (as a login would).
class SshOneMachineTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SshOneMachineTest, CollectivesAcrossThreeAgents) {
  const std::string topology = GetParam();
  JobResult r =
      Launch({"-spawner=ssh", "-n", "6", Client(), "collectives"},
             {"GASNET_SSH_CMD=" + FakeSsh(), "GASNET_SSH_SERVERS=h0 h1 h2",
              "GASNET_SSH_NODEFILE", "GASNET_SSH_TOPOLOGY=" + topology,
              "GASNET_SSH_OUT_DEGREE=1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(RanksReporting(r.out, 6, "collectives ok"),
              ElementsAreArray(Iota(6)));
  EXPECT_THAT(r.survivors, IsEmpty());
}

TEST_P(SshOneMachineTest, ExitCodeComesBackFromARemoteRank) {
  JobResult r =
      Launch({"-spawner=ssh", "-n", "6", Client(), "exit", "3", "4"},
             {"GASNET_SSH_CMD=" + FakeSsh(), "GASNET_SSH_SERVERS=h0 h1 h2",
              "GASNET_SSH_NODEFILE", "GASNET_SSH_TOPOLOGY=" + GetParam(),
              "GASNET_SSH_OUT_DEGREE=1"});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty());
}

TEST_P(SshOneMachineTest, EnvironmentTravelsOnlyAsAsked) {
  const std::vector<std::string> env = {"GASNET_SSH_CMD=" + FakeSsh(),
                                        "GASNET_SSH_SERVERS=h0 h1",
                                        "GASNET_SSH_NODEFILE",
                                        "GASNET_SSH_TOPOLOGY=" + GetParam(),
                                        "GASNET_MARKER=g1",
                                        "GEX_TEST_ASKED=a1",
                                        "GEX_TEST_NOT_ASKED=n1"};
  JobResult r = Launch({"-spawner=ssh", "-n", "2", "-E", "GEX_TEST_ASKED",
                        Client(), "env", "GEX_TEST_ASKED"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("rank 1 GEX_TEST_ASKED=a1"));
  JobResult g = Launch(
      {"-spawner=ssh", "-n", "2", Client(), "env", "GASNET_MARKER"}, env);
  EXPECT_THAT(g.out, HasSubstr("rank 1 GASNET_MARKER=g1")) << Describe(g);
  JobResult n = Launch(
      {"-spawner=ssh", "-n", "2", Client(), "env", "GEX_TEST_NOT_ASKED"}, env);
  EXPECT_THAT(n.out, HasSubstr("rank 1 GEX_TEST_NOT_ASKED=(unset)"))
      << Describe(n);
}

// Stdin reaches rank 0 through its host's agent, behind the job token
// (which the agent takes off first).
TEST_P(SshOneMachineTest, StdinReachesRankZero) {
  JobSpec spec;
  spec.argv = {Launcher(), "-spawner=ssh", "-n", "4", Client(), "stdin"};
  spec.env = BaseEnv();
  for (const std::string& e :
       {"GASNET_SSH_CMD=" + FakeSsh(), std::string("GASNET_SSH_SERVERS=h0 h1"),
        std::string("GASNET_SSH_NODEFILE"), "GASNET_SSH_TOPOLOGY=" + GetParam(),
        std::string("GASNET_SSH_OUT_DEGREE=1")}) {
    spec.env.push_back(e);
  }
  spec.stdin_data = "first line\nsecond line\n";
  JobResult r = RunJob(spec);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "first line\nsecond line\n");
  EXPECT_THAT(r.survivors, IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(Topologies, SshOneMachineTest,
                         ::testing::Values("flat", "nary"));

// The job token travels on each remote shell's stdin, never on a command
// line (which any local user reads with ps): every remote shell's first
// stdin line is the same 64-bit token, and no remote shell's arguments
// (which hold the agent's whole command line) contain it, nor does the
// (public) job id.
TEST(SshTokenTest, TokenOnStdinNotOnAnyCommandLine) {
  const std::string dir = MakeTempDir("record");
  JobResult r =
      Launch({"-spawner=ssh", "-n", "3", Client(), "env", "GEX_JOB_ID"},
             {"GASNET_SSH_CMD=" + RecordingSsh(), "GASNET_SSH_SERVERS=h0 h1 h2",
              "GASNET_SSH_NODEFILE", "GASNET_SSH_TOPOLOGY=flat",
              "GEX_TEST_RECORD_DIR=" + dir});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::vector<std::string> tokens, argvs;
  for (const std::string& path : EntriesWithPrefix(dir, "stdin.")) {
    tokens.push_back(ReadFile(path));
  }
  for (const std::string& path : EntriesWithPrefix(dir, "argv.")) {
    argvs.push_back(ReadFile(path));
  }
  ASSERT_EQ(tokens.size(), 3u);
  ASSERT_EQ(argvs.size(), 3u);
  const std::string token = tokens[0].substr(0, tokens[0].find('\n'));
  EXPECT_EQ(token.size(), 16u) << token;
  EXPECT_TRUE(IsHex(token)) << token;
  for (const std::string& t : tokens) EXPECT_EQ(t, token + "\n");
  for (const std::string& a : argvs) {
    EXPECT_THAT(a, Not(HasSubstr(token))) << a;
    EXPECT_THAT(a, HasSubstr("--gex-spawn-agent")) << a;
  }
  // Nothing public is derived from the token: the job id does not end in
  // its low 16 bits (as it once did; a chance match is 1 in 65536) and
  // shows no 8 digits of it.
  std::set<std::string> ids;
  for (const std::string& line : Lines(r.out)) {
    ids.insert(line.substr(line.find('=') + 1));
  }
  ASSERT_EQ(ids.size(), 1u) << r.out;
  const std::string id = *ids.begin();
  EXPECT_NE(id.substr(id.size() - 4), token.substr(12)) << id;
  for (size_t i = 0; i + 8 <= token.size(); ++i) {
    EXPECT_THAT(id, Not(HasSubstr(token.substr(i, 8)))) << id;
  }
}

}  // namespace
}  // namespace gexrt::testing
