// Jobs across two nodes on this one machine, started by a real PMIx
// launcher: PMIX_TEST_LAUNCHER=srun (a two-node Slurm cluster this test
// starts and stops: two slurmd, -N gexn1 and -N gexn2) or mpirun (two
// "hosts", 'a' and 'b', through a remote-shell agent that drops the host
// name). Ranks 0..n/2-1 are on the first node, the rest on the second.
//
// The node map follows PMIx's nodes, so the job has two hosts though one
// kernel runs it: ranks of one node share memory, ranks of different nodes
// talk over the network conduit (ofi, tcp;ofi_rxm on lo; ucx, tcp on lo).
// smp, which has no network, refuses such a job. PMIx placing two ranks on
// one node that our host identity puts on different hosts (a rank in a UTS
// namespace of its own) is a fatal error naming them.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/pmix/pmix_checks.h"
#include "tests/pmix/pmix_testing.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

bool UnderSrun() {
  const char* k = std::getenv("PMIX_TEST_LAUNCHER");
  return k != nullptr && std::string(k) == "srun";
}

SlurmCluster* g_cluster = nullptr;
std::string g_skip_reason;
// mpirun's remote-shell agent and its hosts' TMPDIRs live here.
std::string g_agent_dir;

class TwoNodeEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (UnderSrun()) {
      g_cluster = new SlurmCluster();
      if (absl::Status s = g_cluster->Start(/*nodes=*/2); !s.ok()) {
        g_skip_reason =
            absl::StrCat("no two-node Slurm cluster: ", s.message());
        delete g_cluster;
        g_cluster = nullptr;
      }
    } else if (FindProgram("mpirun").empty()) {
      g_skip_reason = "mpirun is not installed (scripts/install_deps.sh)";
    } else {
      // Short: the daemons' PMIx sockets live under it.
      char templ[] = "/tmp/gexmpi.XXXXXX";
      if (mkdtemp(templ) == nullptr) {
        g_skip_reason = "cannot create a directory under /tmp";
      } else {
        g_agent_dir = templ;
      }
    }
  }
  void TearDown() override {
    delete g_cluster;  // Stops the daemons.
    g_cluster = nullptr;
    RemoveTree(g_agent_dir);
  }
};

const ::testing::Environment* const kEnv =
    ::testing::AddGlobalTestEnvironment(new TwoNodeEnvironment());

#define SKIP_WITHOUT_LAUNCHER() \
  if (!g_skip_reason.empty()) GTEST_SKIP() << g_skip_reason

// The launcher's words for `n` ranks over both nodes.
std::vector<std::string> AcrossNodes(int n) {
  return g_cluster != nullptr ? g_cluster->SrunAcrossNodes(n)
                              : MpirunTwoHostsLauncher(n, g_agent_dir);
}

// ofi between the nodes: tcp;ofi_rxm on the loopback interface.
const std::vector<std::string> kOfiEnv = {"FI_PROVIDER=tcp;ofi_rxm",
                                          "FI_TCP_IFACE=lo"};

PmixJobSpec Job(const std::vector<std::string>& launcher,
                const std::string& program,
                const std::vector<std::string>& args,
                const std::vector<std::string>& env = {}) {
  PmixJobSpec spec;
  spec.launcher = launcher;
  spec.program = Runfile(program);
  spec.args = args;
  spec.env = MpirunEnv();
  // Nothing of the test's own launcher or layout leaks into the job.
  spec.env.insert(spec.env.end(),
                  {"GASNET_SUPERNODE_MAXSIZE", "GEX_BOOTSTRAP_FD"});
  if (g_cluster != nullptr) spec.env.push_back(g_cluster->ConfEnv());
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  return spec;
}

// The node as the bootstrap sees it: ranks 0..n/2-1 on host 0, the rest on
// host 1, each node one supernode.
TEST(TwoNodeTest, BootstrapNodeMapHasTwoHosts) {
  SKIP_WITHOUT_LAUNCHER();
  PmixJobResult r = RunPmixJob(
      Job(AcrossNodes(4), "tests/bootstrap/bootstrap_client", {"nodemap"}));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_THAT(r.out,
                HasSubstr(absl::StrFormat("rank %d/4 host %d/2 supernode %d/2",
                                          rank, rank / 2, rank / 2)))
        << Describe(r);
  }
  EXPECT_THAT(r.err, Not(HasSubstr("WARNING"))) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
}

// The same through the C API (gex_System_QueryMyPosition and
// QueryHostInfo), over ofi, at 2 and 4 ranks.
class TwoNodeHostsTest : public ::testing::TestWithParam<int> {};

TEST_P(TwoNodeHostsTest, TheCApiSeesTwoHosts) {
  SKIP_WITHOUT_LAUNCHER();
  const int n = GetParam();
  const std::string job_id = NewTestJobId();
  std::vector<std::string> env = kOfiEnv;
  env.push_back(job_id);
  PmixJobResult r = RunPmixJob(
      Job(AcrossNodes(n), "tests/pmix/hosts_client_pmix_ofi", {}, env));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const int half = n / 2;
  for (int rank = 0; rank < n; ++rank) {
    const int host = rank < half ? 0 : 1;
    const std::string members =
        host == 0 ? (half == 1 ? "0" : "0,1") : (half == 1 ? "1" : "2,3");
    EXPECT_THAT(r.out, HasSubstr(absl::StrFormat(
                           "rank %d: hosts 2 host %d members %s nbrhd %d\n",
                           rank, host, members, half)))
        << Describe(r);
    EXPECT_THAT(r.out, HasSubstr(absl::StrFormat("rank %d: hosts ok", rank)))
        << Describe(r);
  }
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
  EXPECT_THAT(ShmLeft(job_id), IsEmpty()) << Describe(r);
}

INSTANTIATE_TEST_SUITE_P(Ranks, TwoNodeHostsTest, ::testing::Values(2, 4));

// The C API job tests across the nodes over ofi: every rank prints
// "rank R: <mode> ok", the job exits 0, nothing is left.
struct ClientCase {
  std::string client, mode;
};

class TwoNodeClientTest
    : public ::testing::TestWithParam<std::tuple<ClientCase, int>> {};

TEST_P(TwoNodeClientTest, EveryRankPasses) {
  SKIP_WITHOUT_LAUNCHER();
  const auto& [c, n] = GetParam();
  const std::string job_id = NewTestJobId();
  std::vector<std::string> env = kOfiEnv;
  env.push_back(job_id);
  PmixJobResult r = RunPmixJob(
      Job(AcrossNodes(n), absl::StrCat("tests/pmix/", c.client, "_pmix_ofi"),
          {c.mode}, env));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_THAT(r.out,
                HasSubstr(absl::StrFormat("rank %d: %s ok", rank, c.mode)))
        << Describe(r);
  }
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
  EXPECT_THAT(ShmLeft(job_id), IsEmpty()) << Describe(r);
}

INSTANTIATE_TEST_SUITE_P(
    Ofi, TwoNodeClientTest,
    ::testing::Combine(::testing::Values(ClientCase{"am_client", "args"},
                                         ClientCase{"rma_client", "forms"},
                                         ClientCase{"barrier_client", "nb"},
                                         ClientCase{"coll_client", "bcast"},
                                         ClientCase{"coll_client", "reduce"}),
                       ::testing::Values(2, 4)),
    [](const auto& info) {
      const ClientCase& c = std::get<0>(info.param);
      std::string name =
          absl::StrCat(c.client, "_", c.mode, "_n", std::get<1>(info.param));
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

// The same over ucx (tcp on lo between the nodes) at 4 ranks, with the
// node map the C API sees.
class TwoNodeUcxTest : public ::testing::TestWithParam<ClientCase> {};

TEST_P(TwoNodeUcxTest, EveryRankPasses) {
  SKIP_WITHOUT_LAUNCHER();
  const ClientCase& c = GetParam();
  const std::string job_id = NewTestJobId();
  PmixJobResult r = RunPmixJob(
      Job(AcrossNodes(4), absl::StrCat("tests/pmix/", c.client, "_pmix_ucx"),
          c.mode.empty() ? std::vector<std::string>{}
                         : std::vector<std::string>{c.mode},
          {job_id, "GASNET_UCX_TLS=tcp", "GASNET_UCX_NET_DEVICES=lo",
           "UCX_NET_DEVICES=lo"}));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrFormat(
                           "rank %d: %s ok", rank,
                           c.mode.empty() ? std::string("hosts") : c.mode)))
        << Describe(r);
    if (c.mode.empty()) {
      EXPECT_THAT(r.out, HasSubstr(absl::StrFormat(
                             "rank %d: hosts 2 host %d members %s nbrhd 2\n",
                             rank, rank / 2, rank < 2 ? "0,1" : "2,3")))
          << Describe(r);
    }
  }
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
  EXPECT_THAT(ShmLeft(job_id), IsEmpty()) << Describe(r);
}

INSTANTIATE_TEST_SUITE_P(Ucx, TwoNodeUcxTest,
                         ::testing::Values(ClientCase{"hosts_client", ""},
                                           ClientCase{"am_client", "args"},
                                           ClientCase{"rma_client", "forms"}),
                         [](const auto& info) { return info.param.client; });

// Exit paths across the nodes over ofi, at 4 ranks (the exiter is rank 3,
// on the second node): gasnet_exit's exit protocol reaches the other node
// over ofi; the launcher ends a job whose rank fails.
class TwoNodeExitTest : public ::testing::TestWithParam<ExitCase> {};

TEST_P(TwoNodeExitTest, EndsAsItShouldAndLeavesNothing) {
  SKIP_WITHOUT_LAUNCHER();
  const ExitCase& c = GetParam();
  const std::string job_id = NewTestJobId();
  std::vector<std::string> env = kOfiEnv;
  env.push_back(job_id);
  PmixJobResult r =
      RunPmixJob(Job(AcrossNodes(kExitRanks), "tests/pmix/exit_client_pmix_ofi",
                     {c.mode, absl::StrCat(c.code)}, env));
  ExpectExitOutcome(r, c, job_id);
}

INSTANTIATE_TEST_SUITE_P(Paths, TwoNodeExitTest,
                         ::testing::ValuesIn(ExitCases()),
                         [](const auto& info) {
                           return ExitCaseName(info.param);
                         });

// gasnetrun_ofi -spawner=pmi -N 2 -n 4 hands the job to the launcher with
// the node count: srun's default template (-N %N), or under mpirun a
// template naming both hosts and the ranks per node (%R).
TEST(TwoNodeTest, GasnetrunSpawnerPmiAcrossNodes) {
  SKIP_WITHOUT_LAUNCHER();
  const std::string job_id = NewTestJobId();
  std::vector<std::string> env = kOfiEnv;
  env.insert(env.end(), {job_id, "GASNET_OFI_SPAWNER", "GASNET_PMI_LAUNCHER"});
  if (g_cluster == nullptr) {
    // The two-host words without "-n <n>", then -n %n and -N's mapping.
    std::vector<std::string> words = MpirunTwoHostsLauncher(4, g_agent_dir);
    ASSERT_GE(words.size(), 5u);
    words.erase(words.begin() + 3, words.begin() + 5);
    env.push_back("SLURM_CONF");  // No Slurm: the template names mpirun.
    env.push_back(
        absl::StrCat("GASNET_PMI_LAUNCHER=", absl::StrJoin(words, " "),
                     " -n %n [ --map-by ppr:%R:node ] %P"));
  }
  PmixJobSpec spec = Job(
      {Runfile("tools/gasnetrun_ofi"), "-spawner=pmi", "-N", "2", "-n", "4"},
      "tests/pmix/hosts_client_pmix_ofi", {}, env);
  PmixJobResult r = RunPmixJob(spec);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrFormat(
                           "rank %d: hosts 2 host %d members %s nbrhd 2\n",
                           rank, rank / 2, rank < 2 ? "0,1" : "2,3")))
        << Describe(r);
  }
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
  EXPECT_THAT(ShmLeft(job_id), IsEmpty()) << Describe(r);
}

// smp reaches other ranks only through shared memory: across two nodes it
// refuses the job, on every rank, with the reason.
TEST(TwoNodeTest, SmpRefusesTwoHosts) {
  SKIP_WITHOUT_LAUNCHER();
  const std::string job_id = NewTestJobId();
  PmixJobResult r = RunPmixJob(
      Job(AcrossNodes(2), "tests/pmix/am_client_pmix", {"args"}, {job_id}));
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("the smp conduit reaches other ranks only "
                               "through shared memory"))
      << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("this job has 2 host(s)")) << Describe(r);
  EXPECT_THAT(r.out, Not(HasSubstr("args ok"))) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
  EXPECT_THAT(ShmLeft(job_id), IsEmpty()) << Describe(r);
}

// Two ranks PMIx places on one node, rank 1 in a UTS namespace of its own
// with another host name: our host identity says two hosts, PMIx one node.
// Every rank stops with a message naming both ranks and both names.
TEST(TwoNodeTest, OneNodeSplitAcrossHostsIsAClearError) {
  SKIP_WITHOUT_LAUNCHER();
  const std::string unshare = FindProgram("unshare");
  if (unshare.empty() ||
      std::system(absl::StrCat(unshare, " -u true 2>/dev/null").c_str()) != 0) {
    GTEST_SKIP() << "cannot create a UTS namespace here (unshare -u)";
  }
  // Both ranks on the first node.
  std::vector<std::string> launcher;
  if (g_cluster != nullptr) {
    launcher = g_cluster->Srun(2);
    launcher.insert(launcher.end() - 2, {"-N", "1"});
  } else {
    launcher = MpirunLauncher(2);
  }
  // Rank 1 renames its host in a new namespace. Every process of the job
  // carries the script's path in its command line (exec -a), so the
  // survivor check finds them all.
  const std::string script = MakeTempDir("split") + "/split_host.sh";
  {
    std::FILE* f = std::fopen(script.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(absl::StrCat(
                   "#!/bin/bash\n",
                   "client=", Runfile("tests/bootstrap/bootstrap_client"), "\n",
                   "if [ \"$PMIX_RANK\" = 1 ]; then\n", "  exec ", unshare,
                   " -u bash -c 'hostname gexother && exec -a \"$0\" \"$1\" "
                   "nodemap' \"$0.rank\" \"$client\"\n",
                   "fi\n", "exec -a \"$0.rank\" \"$client\" nodemap\n")
                   .c_str(),
               f);
    std::fclose(f);
    ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  }
  PmixJobSpec spec = Job(launcher, "tests/bootstrap/bootstrap_client", {});
  spec.program = script;
  PmixJobResult r = RunPmixJob(spec);
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err,
              HasSubstr(absl::StrCat(g_cluster != nullptr ? "srun" : "mpirun",
                                     " places ranks 0 and 1 on one node")))
      << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("different hosts ('")) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("and 'gexother')")) << Describe(r);
  EXPECT_THAT(r.out, Not(HasSubstr("host 0/"))) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
}

}  // namespace
}  // namespace gexrt::testing
