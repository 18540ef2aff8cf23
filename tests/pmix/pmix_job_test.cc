// The C API clients (tests/api) and the exit client (tests/exit), on the
// smp conduit, started by a real PMIx launcher: PMIX_TEST_LAUNCHER=mpirun
// (Open MPI's mpirun) or srun (a one-node Slurm cluster this test starts
// and stops). Each job is judged from the outside: exit code, every rank's
// success line, no process of the job left, no shared memory left.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/pmix/pmix_checks.h"
#include "tests/pmix/pmix_testing.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::HasSubstr;

std::string LauncherKind() {
  const char* k = std::getenv("PMIX_TEST_LAUNCHER");
  return k != nullptr ? k : "mpirun";
}

// The Slurm cluster, once per test binary (about a second to start).
SlurmCluster* g_cluster = nullptr;
std::string g_skip_reason;

class ClusterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (LauncherKind() == "srun") {
      g_cluster = new SlurmCluster();
      if (absl::Status s = g_cluster->Start(); !s.ok()) {
        g_skip_reason = absl::StrCat("no Slurm cluster: ", s.message());
        delete g_cluster;
        g_cluster = nullptr;
      }
    } else if (FindProgram("mpirun").empty()) {
      g_skip_reason = "mpirun is not installed (scripts/install_deps.sh)";
    }
  }
  void TearDown() override {
    delete g_cluster;  // Stops the daemons.
    g_cluster = nullptr;
  }
};

const ::testing::Environment* const kEnv =
    ::testing::AddGlobalTestEnvironment(new ClusterEnvironment());

std::string Client(const std::string& name) {
  return Runfile(absl::StrCat("tests/pmix/", name, "_pmix"));
}

PmixJobResult RunClient(const std::string& client, int n,
                        const std::vector<std::string>& args,
                        std::vector<std::string> env = {},
                        const std::string& suffix = "_pmix") {
  PmixJobSpec spec;
  spec.program = Runfile(absl::StrCat("tests/pmix/", client, suffix));
  spec.args = args;
  spec.env = MpirunEnv();
  if (g_cluster != nullptr) {
    spec.launcher = g_cluster->Srun(n);
    spec.env.push_back(g_cluster->ConfEnv());
  } else {
    spec.launcher = MpirunLauncher(n);
  }
  // No variable of the test's own launcher or layout leaks into the job.
  spec.env.push_back("GASNET_SUPERNODE_MAXSIZE");
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  return RunPmixJob(spec);
}

#define SKIP_WITHOUT_LAUNCHER() \
  if (!g_skip_reason.empty()) GTEST_SKIP() << g_skip_reason

struct ClientCase {
  std::string client;
  std::string mode;
};

// The job exited 0, every rank printed "rank R: <mode> ok", and nothing
// of it is left (processes, shared memory).
void ExpectCleanSuccess(const PmixJobResult& r, int n, const std::string& mode,
                        const std::string& job_id) {
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrFormat("rank %d: %s ok", rank, mode)))
        << Describe(r);
  }
  EXPECT_THAT(r.alive_at_return, ::testing::IsEmpty()) << Describe(r);
  EXPECT_THAT(r.survivors, ::testing::IsEmpty()) << Describe(r);
  EXPECT_THAT(ShmLeft(job_id), ::testing::IsEmpty()) << Describe(r);
}

class PmixClientJobTest
    : public ::testing::TestWithParam<std::tuple<ClientCase, int>> {};

TEST_P(PmixClientJobTest, EveryRankPasses) {
  SKIP_WITHOUT_LAUNCHER();
  const auto& [c, n] = GetParam();
  const std::string job_id = NewTestJobId();
  ExpectCleanSuccess(RunClient(c.client, n, {c.mode}, {job_id}), n, c.mode,
                     job_id);
}

INSTANTIATE_TEST_SUITE_P(
    Clients, PmixClientJobTest,
    ::testing::Combine(::testing::Values(ClientCase{"am_client", "args"},
                                         ClientCase{"rma_client", "forms"},
                                         ClientCase{"barrier_client", "nb"},
                                         ClientCase{"coll_client", "bcast"},
                                         ClientCase{"coll_client", "reduce"}),
                       ::testing::Values(1, 2, 4)),
    [](const auto& info) {
      const ClientCase& c = std::get<0>(info.param);
      std::string name =
          absl::StrCat(c.client, "_", c.mode, "_n", std::get<1>(info.param));
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

// A network conduit: the same clients over ofi at 4 ranks with
// GASNET_SUPERNODE_MAXSIZE=1 (every peer over libfabric), on a provider
// with automatic progress (tcp;ofi_rxm) and one with manual progress
// (sockets: sends queued just before a bootstrap fence leave while it
// waits because the fence runs the wait hook).
struct OfiCase {
  std::string client, mode, provider;
};

class PmixOfiJobTest : public ::testing::TestWithParam<OfiCase> {};

TEST_P(PmixOfiJobTest, EveryRankPasses) {
  SKIP_WITHOUT_LAUNCHER();
  const OfiCase& c = GetParam();
  const std::string job_id = NewTestJobId();
  PmixJobResult r = RunClient(
      c.client, 4, {c.mode},
      {job_id, "GASNET_SUPERNODE_MAXSIZE=1", "FI_PROVIDER=" + c.provider,
       "FI_TCP_IFACE=lo", "FI_SOCKETS_IFACE=lo"},
      "_pmix_ofi");
  ExpectCleanSuccess(r, 4, c.mode, job_id);
}

INSTANTIATE_TEST_SUITE_P(
    Ofi, PmixOfiJobTest,
    ::testing::Values(OfiCase{"am_client", "args", "tcp;ofi_rxm"},
                      OfiCase{"rma_client", "forms", "tcp;ofi_rxm"},
                      OfiCase{"am_client", "args", "sockets"},
                      OfiCase{"rma_client", "forms", "sockets"}),
    [](const auto& info) {
      std::string name =
          absl::StrCat(info.param.client, "_", info.param.provider);
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

// The Bootstrap interface itself (tests/bootstrap's client): barrier,
// allgather, alltoall and broadcast from every root at several sizes,
// contents checked, over PMIx.
PmixJobResult RunBootstrapClient(int n, const std::vector<std::string>& args,
                                 std::vector<std::string> env = {}) {
  PmixJobSpec spec;
  spec.program = Runfile("tests/bootstrap/bootstrap_client");
  spec.args = args;
  spec.env = MpirunEnv();
  spec.env.push_back("GASNET_SUPERNODE_MAXSIZE");
  if (g_cluster != nullptr) {
    spec.launcher = g_cluster->Srun(n);
    spec.env.push_back(g_cluster->ConfEnv());
  } else {
    spec.launcher = MpirunLauncher(n);
  }
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  return RunPmixJob(spec);
}

class PmixBootstrapCollectivesTest : public ::testing::TestWithParam<int> {};

TEST_P(PmixBootstrapCollectivesTest, ContentsChecked) {
  SKIP_WITHOUT_LAUNCHER();
  const int n = GetParam();
  PmixJobResult r = RunBootstrapClient(n, {"collectives"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_THAT(
        r.out, HasSubstr(absl::StrFormat("rank %d/%d collectives ok", rank, n)))
        << Describe(r);
  }
  EXPECT_THAT(r.survivors, ::testing::IsEmpty()) << Describe(r);
}

INSTANTIATE_TEST_SUITE_P(Ranks, PmixBootstrapCollectivesTest,
                         ::testing::Values(1, 2, 4, 8));

// One host: every rank in host 0 of 1, one supernode (PMIx's one node,
// which our host identity agrees with). Two nodes: two_node_job_test.cc.
TEST(PmixBootstrapTest, NodeMapOneHost) {
  SKIP_WITHOUT_LAUNCHER();
  PmixJobResult r = RunBootstrapClient(4, {"nodemap"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrFormat(
                           "rank %d/4 host 0/1 supernode 0/1", rank)))
        << Describe(r);
  }
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("WARNING"))) << Describe(r);
}

// The same through the C API (gex_System_QueryMyPosition, QueryHostInfo,
// QueryNbrhdInfo) on smp.
TEST(PmixBootstrapTest, TheCApiSeesOneHost) {
  SKIP_WITHOUT_LAUNCHER();
  const std::string job_id = NewTestJobId();
  PmixJobResult r = RunClient("hosts_client", 4, {}, {job_id});
  ExpectCleanSuccess(r, 4, "hosts", job_id);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_THAT(r.out,
                HasSubstr(absl::StrFormat(
                    "rank %d: hosts 1 host 0 members 0,1,2,3 nbrhd 4\n", rank)))
        << Describe(r);
  }
}

// Bootstrap::Abort(7) on rank 1 while the others wait in a barrier: the
// whole job ends, nonzero, nothing left. Under srun by PMIx_Abort; under
// mpirun by the rank's own nonzero exit, which mpirun turns into the end
// of the job (after a PMIx_Abort, Open MPI 4.1's mpirun left one of its
// forked processes behind in 4 of 20 runs: pmix_bootstrap.cc).
TEST(PmixBootstrapTest, AbortEndsTheJob) {
  SKIP_WITHOUT_LAUNCHER();
  PmixJobResult r = RunBootstrapClient(3, {"abort", "7", "1"});
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.survivors, ::testing::IsEmpty()) << Describe(r);
}

// Exit paths at 4 ranks (the exiter is rank 3): the job ends with the
// right code, and nothing of it is left.
class PmixExitJobTest : public ::testing::TestWithParam<ExitCase> {};

// The survivors of a killed rank did not wait for it: the launcher's
// SIGTERM (from their parent) was its decision with "a rank was lost", so
// each exited at once as a member of the exit, sending nothing, with 128 +
// SIGTERM (GEX_EXIT_REPORT's line); none led an exit or asked for an
// election (before, one led and waited for the dead rank's reply until
// mpirun's SIGKILL). srun waits for every rank, so each survivor's line
// arrives; mpirun SIGKILLs the ranks left as soon as one has exited and
// stops forwarding output, so there only one line is sure to.
void ExpectSurvivorsTookTheLaunchersDecision(const PmixJobResult& r) {
  int reports = 0;
  for (absl::string_view line : absl::StrSplit(r.err, '\n')) {
    if (!absl::StartsWith(line, "*** EXIT (proc ")) continue;
    ++reports;
    EXPECT_THAT(std::string(line),
                HasSubstr("code=143 outcome=member sent: reduce=0 elect=0 "))
        << Describe(r);
  }
  if (g_cluster != nullptr) {
    EXPECT_EQ(reports, kExitRanks - 1) << Describe(r);
  } else {
    EXPECT_GE(reports, 1) << Describe(r);
  }
}

TEST_P(PmixExitJobTest, EndsAsItShouldAndLeavesNothing) {
  SKIP_WITHOUT_LAUNCHER();
  const ExitCase& c = GetParam();
  const std::string job_id = NewTestJobId();
  std::vector<std::string> env = {job_id};
  if (c.mode == "sigkill") env.push_back("GEX_EXIT_REPORT=1");
  PmixJobResult r =
      RunClient("exit_client", kExitRanks, {c.mode, absl::StrCat(c.code)}, env);
  ExpectExitOutcome(r, c, job_id);
  if (c.mode == "sigkill") ExpectSurvivorsTookTheLaunchersDecision(r);
}

INSTANTIATE_TEST_SUITE_P(Paths, PmixExitJobTest,
                         ::testing::ValuesIn(ExitCases()),
                         [](const auto& info) {
                           return ExitCaseName(info.param);
                         });

// gasnetrun_smp -spawner=pmi hands the job to this binary's launcher: the
// default template picks srun when SLURM_CONF names the cluster's
// configuration, else mpirun.
PmixJobSpec SpawnerJob(int n, const std::string& client,
                       const std::vector<std::string>& args) {
  PmixJobSpec spec;
  spec.launcher = {Runfile("tools/gasnetrun_smp"), "-spawner=pmi", "-n",
                   absl::StrCat(n)};
  spec.program = Client(client);
  spec.args = args;
  spec.env = {"GASNET_SUPERNODE_MAXSIZE", "GASNET_SMP_SPAWNER",
              "GASNET_PMI_LAUNCHER", "TMPDIR=/tmp"};
  if (g_cluster != nullptr) {
    spec.env.push_back(g_cluster->ConfEnv());
  } else {
    spec.env.push_back("SLURM_CONF");
  }
  return spec;
}

TEST(PmixSpawnerTest, GasnetrunRunsTheJob) {
  SKIP_WITHOUT_LAUNCHER();
  PmixJobSpec spec = SpawnerJob(4, "am_client", {"args"});
  spec.env.push_back("GASNET_VERBOSEENV");
  PmixJobResult r = RunPmixJob(spec);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrFormat("rank %d: args ok", rank)))
        << Describe(r);
  }
  EXPECT_THAT(r.survivors, ::testing::IsEmpty()) << Describe(r);
}

TEST(PmixSpawnerTest, TheDefaultTemplatePicksThisLauncher) {
  SKIP_WITHOUT_LAUNCHER();
  PmixJobSpec spec = SpawnerJob(4, "am_client", {"args"});
  spec.launcher.push_back("-t");
  PmixJobResult r = RunPmixJob(spec);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out,
              HasSubstr(g_cluster != nullptr ? "srun --mpi=pmix" : "mpirun "))
      << Describe(r);
}

TEST(PmixSpawnerTest, ExitCodeThroughGasnetrun) {
  SKIP_WITHOUT_LAUNCHER();
  PmixJobSpec spec = SpawnerJob(4, "exit_client", {"spin", "3"});
  // The variable form of -spawner.
  spec.launcher = {Runfile("tools/gasnetrun_smp"), "-n", "4"};
  spec.env.push_back("GASNET_SMP_SPAWNER=pmi");
  PmixJobResult r = RunPmixJob(spec);
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_THAT(r.survivors, ::testing::IsEmpty()) << Describe(r);
}

// A rank that never joins a bootstrap collective (it waits in a barrier
// over AMs while the others attach their segments): the others' fence runs
// out after GASNET_BOOTSTRAP_TIMEOUT with a message naming the call, the
// fence and the setting, and the job ends. Run through gasnetrun: a rank
// that dies while its shared objects still have names leaves them behind,
// and removing them by the job's id is the launcher's part (gasnetrun's
// clean-up; a job started by srun or mpirun directly has none).
TEST(PmixSpawnerTest, BootstrapTimeoutNamesTheFence) {
  SKIP_WITHOUT_LAUNCHER();
  PmixJobSpec spec = SpawnerJob(3, "exit_client", {"mismatch", "1"});
  spec.launcher.push_back("-v");
  spec.env.push_back("GASNET_BOOTSTRAP_TIMEOUT=3");
  PmixJobResult r = RunPmixJob(spec);
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("within 3s")) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("GASNET_BOOTSTRAP_TIMEOUT")) << Describe(r);
  EXPECT_THAT(r.survivors, ::testing::IsEmpty()) << Describe(r);
  const size_t at = r.err.find("pmi spawner: job ");
  ASSERT_NE(at, std::string::npos) << Describe(r);
  const std::string id =
      r.err.substr(at + 17, r.err.find(':', at + 17) - (at + 17));
  EXPECT_THAT(ShmLeft("GEX_JOB_ID=" + id), ::testing::IsEmpty()) << Describe(r);
}

// The job id gasnetrun gave the job, from exit_client's "job=" line.
std::string JobIdOf(const PmixJobResult& r) {
  const size_t at = r.out.find(": job=");
  if (at == std::string::npos) return "";
  const size_t from = at + 6;
  const std::string id = r.out.substr(from, r.out.find(' ', from) - from);
  return id.empty() ? "" : absl::StrCat("GEX_JOB_ID=", id);
}

// A rank SIGKILLed under gasnetrun -spawner=pmi: the others learn it from
// the launcher and end, gasnetrun returns 137 (the killed rank's 128 + 9,
// as mpirun and srun report it), and when it does no rank runs; nothing
// of the job is left.
TEST(PmixSpawnerTest, ARankKilledEndsTheJobBeforeGasnetrunReturns) {
  SKIP_WITHOUT_LAUNCHER();
  PmixJobSpec spec = SpawnerJob(kExitRanks, "exit_client", {"sigkill", "9"});
  spec.env.push_back("GEX_EXIT_REPORT=1");
  PmixJobResult r = RunPmixJob(spec);
  const std::string job_id = JobIdOf(r);
  ASSERT_FALSE(job_id.empty()) << Describe(r);
  ExpectExitOutcome(r, ExitCase{"sigkill", 9, false, 128 + 9}, job_id);
  ExpectSurvivorsTookTheLaunchersDecision(r);
}

// The launcher itself killed (SIGKILL) while its ranks run on: under
// mpirun they die with it (PR_SET_PDEATHSIG); under srun slurmstepd keeps
// them, and gasnetrun ends them by the pids they recorded. Either way
// gasnetrun returns the launcher's 137 only once none of them runs. A
// wrapper script stands in for the launcher: it starts the real one, and
// once rank 0 says every rank spins (EXIT_TEST_READY_FILE) it writes down
// the pids of the processes running the program and kills the launcher
// (whose death may lose output still in transit, so the ranks' own lines
// are not relied on).
TEST(PmixSpawnerTest, ALauncherKilledLeavesNoRankRunning) {
  SKIP_WITHOUT_LAUNCHER();
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  const std::string ready = absl::StrCat(dir, "/ready.", getpid());
  const std::string pids_file = ready + ".pids";
  const std::string wrapper = absl::StrCat(dir, "/kill_launcher.sh");
  {
    // Bounded: 30 s for the job to start, else the launcher goes anyway.
    std::ofstream f(wrapper);
    f << "#!/bin/sh\nready=$1; prog=$(readlink -f \"$2\"); shift 2\n"
         "\"$@\" & launcher=$!\n"
         "n=0; while [ ! -e \"$ready\" ] && [ $n -lt 600 ]; do\n"
         "  sleep 0.05; n=$((n+1)); done\n"
         "for p in /proc/[0-9]*; do\n"
         "  [ \"$(readlink $p/exe 2>/dev/null)\" = \"$prog\" ] && "
         "echo ${p#/proc/}\n"
         "done > \"$ready.pids\"\n"
         "kill -9 $launcher; wait $launcher; exit $?\n";
  }
  ASSERT_EQ(chmod(wrapper.c_str(), 0755), 0);
  const std::string launcher =
      g_cluster != nullptr
          ? absl::StrCat(FindProgram("srun"), " --mpi=pmix -K1 -O -n %n %P")
          : absl::StrCat(FindProgram("mpirun"),
                         " --allow-run-as-root --oversubscribe -n %n %P");
  PmixJobSpec spec =
      SpawnerJob(kExitRanks, "exit_client", {"launcher-signal", "3"});
  spec.launcher.push_back("-v");
  spec.env.push_back(absl::StrCat("GASNET_PMI_LAUNCHER=", wrapper, " ", ready,
                                  " ", spec.program, " ", launcher));
  spec.env.push_back("EXIT_TEST_READY_FILE=" + ready);
  spec.env.push_back("PMIX_MCA_gds=hash");
  PmixJobResult r = RunPmixJob(spec);
  std::vector<pid_t> pids;
  {
    std::ifstream f(pids_file);
    for (pid_t pid; f >> pid;) pids.push_back(pid);
  }
  // Checked at once: RunPmixJob has just waited for gasnetrun.
  const std::vector<std::string> running = RanksRunning(pids, spec.program);
  std::remove(ready.c_str());
  std::remove(pids_file.c_str());
  EXPECT_EQ(r.exit_code, 128 + 9) << Describe(r);
  EXPECT_EQ(pids.size(), static_cast<size_t>(kExitRanks)) << Describe(r);
  EXPECT_THAT(running, ::testing::IsEmpty()) << Describe(r);
  EXPECT_THAT(r.survivors, ::testing::IsEmpty()) << Describe(r);
  const size_t at = r.err.find("pmi spawner: job ");
  ASSERT_NE(at, std::string::npos) << Describe(r);
  const std::string id =
      r.err.substr(at + 17, r.err.find(':', at + 17) - (at + 17));
  ASSERT_FALSE(id.empty()) << Describe(r);
  EXPECT_THAT(ShmLeft("GEX_JOB_ID=" + id), ::testing::IsEmpty()) << Describe(r);
}

TEST(PmixSpawnerTest, MalformedTemplateIsAClearError) {
  PmixJobSpec spec = SpawnerJob(2, "am_client", {"args"});
  spec.env.push_back("GASNET_PMI_LAUNCHER=mpirun -n %n [ -N %N");
  PmixJobResult r = RunPmixJob(spec);
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("GASNET_PMI_LAUNCHER")) << Describe(r);
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("args ok"))) << Describe(r);
}

TEST(PmixSpawnerTest, NoLauncherInstalledIsAClearError) {
  PmixJobSpec spec = SpawnerJob(2, "am_client", {"args"});
  spec.env.push_back("PATH=/nonexistent");
  PmixJobResult r = RunPmixJob(spec);
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("no PMIx launcher found")) << Describe(r);
}

// A program that PMIX_* variables say was launched, with no server: a
// clear message and a nonzero exit, not a hang or a silent singleton.
TEST(PmixBadInputTest, NoServerIsAClearError) {
  PmixJobSpec spec;
  spec.program = Client("am_client");
  spec.args = {"args"};
  spec.launcher = {"/usr/bin/env"};
  spec.env = {"PMIX_RANK=0",       "PMIX_NAMESPACE=nosuchjob",
              "PMIX_SERVER_URI41", "PMIX_SERVER_URI4",
              "PMIX_SERVER_URI3",  "PMIX_SERVER_URI2",
              "PMIX_SERVER_URI21", "GEX_BOOTSTRAP_FD"};
  spec.limit = absl::Seconds(30);
  PmixJobResult r = RunPmixJob(spec);
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("no PMIx server answered PMIx_Init"))
      << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("srun --mpi=pmix")) << Describe(r);
}

}  // namespace
}  // namespace gexrt::testing
