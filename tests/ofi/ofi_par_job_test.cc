// PAR mode over the ofi conduit: jobs of ofi_par_client (C11, linked with
// //conduit/ofi:gasnet_ofi_par) in which 5 threads per rank (4 pthreads and
// main) send AM Short/Medium/Long Requests to every other rank at once, each
// answered by a Reply of the same kind, and Put/Get (blocking, NB, NBI) into
// slots of their own in every peer's segment, checking every byte and, at
// the end, exactly how many requests of each kind each rank handled from
// each (source rank, thread) and how many replies came back.
//
// Every provider this machine has, at 2 and 3 ranks with
// GASNET_SUPERNODE_MAXSIZE=1 (every peer over libfabric), and tcp;ofi_rxm at
// 4 ranks in supernodes of 2 (PSHM and libfabric peers mixed); each with
// GASNET_OFI_NUM_TX_CONTEXTS unset (PAR's default, min(4, CPUs)), 1 and 4:
// PAR mode's transmit contexts, each thread sending through one (with 5
// threads and 4 contexts or fewer, threads share them). The job prints the
// same whatever the number, so nothing here reads it (GASNET_OFI_STATS=1
// shows the sends per context). libfabric is pinned to loopback as in
// ofi_job_test.
//
// A provider that refuses a PAR client (it lacks FI_THREAD_SAFE) is reported
// as skipped, with the conduit's message; no provider here does (all four
// report FI_THREAD_SAFE in libfabric 1.17). Any other failure fails.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kThreads = 4;  // pthreads per rank; main works too
constexpr int kWorkers = kThreads + 1;
constexpr int kIterations = 20;  // >= 15: every size class is reached

struct Layout {
  std::string name;  // provider and GASNET_SUPERNODE_MAXSIZE
  int ranks;
  std::vector<std::string> env;
};

// GASNET_OFI_NUM_TX_CONTEXTS: "" leaves it unset.
using Case = std::tuple<Layout, std::string>;

const std::vector<Layout>& Layouts() {
  static const std::vector<Layout> layouts = [] {
    const std::vector<std::pair<const char*, std::vector<std::string>>>
        providers = {
            {"tcp", {"FI_PROVIDER=tcp;ofi_rxm"}},
            {"sockets", {"FI_PROVIDER=sockets"}},
            {"udp", {"FI_PROVIDER=udp;ofi_rxd", "GASNET_OFI_DEVICE=lo"}},
            // Bazel's sandbox forbids shm's cross-process copies (CMA).
            {"shm", {"FI_PROVIDER=shm", "FI_SHM_DISABLE_CMA=1"}},
        };
    std::vector<Layout> l;
    for (const auto& [name, env] : providers) {
      for (int n : {2, 3}) {
        std::vector<std::string> e = env;
        e.push_back("GASNET_SUPERNODE_MAXSIZE=1");
        l.push_back(Layout{absl::StrCat(name, "_sn1"), n, e});
      }
    }
    l.push_back(
        Layout{"tcp_sn2",
               4,
               {"FI_PROVIDER=tcp;ofi_rxm", "GASNET_SUPERNODE_MAXSIZE=2"}});
    return l;
  }();
  return layouts;
}

std::string CaseName(const Case& c) {
  const auto& [layout, tx] = c;
  return absl::StrFormat("%s_n%d_tx_%s", layout.name, layout.ranks,
                         tx.empty() ? "unset" : tx);
}

// Cases that must be skipped for a known, unfixed conduit bug: case name ->
// the bug. (None at present.)
const std::map<std::string, std::string>& KnownBugs() {
  static const std::map<std::string, std::string> bugs;
  return bugs;
}

JobResult RunParJob(const Case& c) {
  const auto& [layout, tx] = c;
  BecomeSubreaper();
  JobSpec spec;
  spec.argv = {Runfile("tools/gasnetrun_ofi"), "-n",
               std::to_string(layout.ranks),
               Runfile("tests/ofi/ofi_par_client")};
  spec.argv.push_back(std::to_string(kThreads));
  spec.argv.push_back(std::to_string(kIterations));
  const std::string tmpdir = MakeTempDir("ofi_par");
  // Pinned as ofi_job_test pins every job; the layout's settings follow.
  spec.env = {"GASNET_SUPERNODE_MAXSIZE=1",
              "FI_PROVIDER=tcp;ofi_rxm",
              "FI_TCP_IFACE=lo",
              "FI_SOCKETS_IFACE=lo",
              "GASNET_OFI_DEVICE",
              "GASNET_OFI_SPAWNER",
              "GASNET_SSH_SERVERS",
              "GASNET_SSH_NODEFILE",
              "FI_SHM_DISABLE_CMA",
              "GASNET_TMPDIR=" + tmpdir,
              "TMPDIR=" + tmpdir};
  spec.env.insert(spec.env.end(), layout.env.begin(), layout.env.end());
  spec.env.push_back(tx.empty() ? "GASNET_OFI_NUM_TX_CONTEXTS"
                                : "GASNET_OFI_NUM_TX_CONTEXTS=" + tx);
  // A job takes a few seconds; the limit only turns a hang into a failure.
  spec.limit = absl::Seconds(120);
  return RunJob(spec);
}

std::string Describe(const JobResult& r) {
  return absl::StrFormat(
      "command: %s\nexit: %d\nsurvivors: %d\nstdout:\n%s\nstderr:\n%s",
      r.command, r.exit_code, r.survivors.size(), r.out.substr(0, 6000),
      r.err.substr(0, 6000));
}

// The number after "key=" in `line`, or -1.
long long Field(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return -1;
  return std::stoll(line.substr(at + key.size() + 2));
}

// The conduit's refusal of every provider for a PAR client, if that is how
// the job ended: "*** FATAL ERROR ... no libfabric provider ... meets the
// ofi conduit's requirements: <provider> (...): lacks FI_THREAD_SAFE
// threading (the client is GASNET_PAR)".
std::string ThreadSafeRefusal(const JobResult& r) {
  for (const std::string& line : Lines(r.err)) {
    if (line.find("meets the ofi conduit's requirements") !=
            std::string::npos &&
        line.find("lacks FI_THREAD_SAFE threading") != std::string::npos) {
      return line;
    }
  }
  return "";
}

class OfiParJobTest : public ::testing::TestWithParam<Case> {};

TEST_P(OfiParJobTest, EveryThreadToEveryPeerExactCounts) {
  const auto& [layout, tx] = GetParam();
  if (const auto bug = KnownBugs().find(CaseName(GetParam()));
      bug != KnownBugs().end()) {
    GTEST_SKIP() << "known conduit bug: " << bug->second;
  }
  const JobResult r = RunParJob(GetParam());
  if (r.exit_code != 0) {
    if (const std::string refusal = ThreadSafeRefusal(r); !refusal.empty()) {
      EXPECT_TRUE(r.survivors.empty()) << Describe(r);
      GTEST_SKIP() << "the provider refuses a PAR client here: " << refusal;
    }
  }
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(r.survivors.empty()) << Describe(r);
  EXPECT_THAT(r.out, Not(HasSubstr("FAIL"))) << Describe(r);
  EXPECT_THAT(r.err, Not(HasSubstr("FAIL"))) << Describe(r);
  // Per rank: 3 kinds (or 3 Puts, 3 Gets) x workers x iterations x peers.
  const long long each =
      3LL * kWorkers * kIterations * static_cast<long long>(layout.ranks - 1);
  const std::vector<std::string> lines = Lines(r.out);
  for (int rank = 0; rank < layout.ranks; ++rank) {
    const std::string prefix =
        absl::StrFormat("ofi_par_client: rank %d ok ", rank);
    int found = 0;
    for (const std::string& line : lines) {
      if (line.rfind(prefix, 0) != 0) continue;
      ++found;
      EXPECT_EQ(Field(line, "workers"), kWorkers) << line;
      EXPECT_EQ(Field(line, "iters"), kIterations) << line;
      EXPECT_EQ(Field(line, "peers"), layout.ranks - 1) << line;
      for (const char* key : {"handled", "replies", "puts", "gets"}) {
        EXPECT_EQ(Field(line, key), each) << key << " in: " << line;
      }
    }
    EXPECT_EQ(found, 1) << "rank " << rank << "'s ok line\n" << Describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Providers, OfiParJobTest,
    ::testing::Combine(::testing::ValuesIn(Layouts()),
                       ::testing::Values(std::string(), std::string("1"),
                                         std::string("4"))),
    [](const ::testing::TestParamInfo<Case>& info) {
      return CaseName(info.param);
    });

}  // namespace
}  // namespace gexrt::testing
