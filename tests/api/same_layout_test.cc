// Ranks started by our spawners on one host have the same address-space
// layout, as GASNet-EX's smp conduit (which forks its ranks) gives them:
// the same program's code and static data, and its shared libraries, at the
// same addresses in every rank, so that clients may exchange pointers to
// them (member-pointer and function-pointer translation tables do). Checked
// for gasnetrun_smp's fork spawner and for a program started directly with
// GASNET_PSHM_NODES, at 2 and 4 ranks, with layout_client: it prints where
// a function of its own, a static variable, printf (libc) and a heap block
// are. Heap addresses are reported, not compared (they depend on what each
// rank allocated before).
//
// Where the kernel refuses to turn randomisation off (personality(2) under
// a container's seccomp filter), the launcher says so once and the job runs
// (SameLayoutRefusedTest, under such a filter); the layout tests then skip
// with that line.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kRefused[] = "cannot turn address-space randomisation off";

struct Layout {
  unsigned long long function = 0, statics = 0, library = 0, heap = 0;
};

Layout ParseLayout(const std::string& line) {
  Layout l;
  const size_t at = line.find("layout ");
  EXPECT_NE(at, std::string::npos) << line;
  if (at == std::string::npos) return l;
  EXPECT_EQ(std::sscanf(line.c_str() + at,
                        "layout function=%llx static=%llx library=%llx "
                        "heap=%llx",
                        &l.function, &l.statics, &l.library, &l.heap),
            4)
      << line;
  return l;
}

// The job's environment: none of a launcher's variables (the spawner under
// test sets them), a private TMPDIR.
std::vector<std::string> CleanEnv() {
  const std::string tmpdir = MakeTempDir("same_layout");
  return {"GEX_BOOTSTRAP_FD",
          "GEX_BOOTSTRAP_RANK",
          "GEX_BOOTSTRAP_SIZE",
          "GEX_JOB_ID",
          "PMIX_RANK",
          "GASNET_PSHM_NODES",
          "GASNET_SUPERNODE_MAXSIZE",
          "GEX_SPAWN_SAME_LAYOUT",
          "GASNET_TMPDIR=" + tmpdir,
          "TMPDIR=" + tmpdir};
}

enum class Start { kGasnetrun, kPshmNodes };

struct Case {
  Start start;
  int ranks;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << (c.start == Start::kGasnetrun ? "gasnetrun_smp" : "GASNET_PSHM_NODES")
      << " with " << c.ranks << " ranks";
}

JobResult RunLayoutJob(const Case& c,
                       const std::vector<std::string>& extra_env = {}) {
  BecomeSubreaper();
  JobSpec spec;
  spec.env = CleanEnv();
  const std::string client = Runfile("tests/api/layout_client");
  if (c.start == Start::kGasnetrun) {
    spec.argv = {Runfile("tools/gasnetrun_smp"), "-n", std::to_string(c.ranks),
                 client, "layout"};
  } else {
    spec.argv = {client, "layout"};
    spec.env.push_back("GASNET_PSHM_NODES=" + std::to_string(c.ranks));
  }
  for (const std::string& e : extra_env) spec.env.push_back(e);
  spec.limit = absl::Seconds(120);
  return RunJob(spec);
}

std::map<int, Layout> Layouts(const JobResult& r, int n) {
  std::map<int, Layout> by_rank;
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "layout")) {
    by_rank[rank] = ParseLayout(line);
  }
  return by_rank;
}

class SameLayoutTest : public ::testing::TestWithParam<Case> {};

TEST_P(SameLayoutTest, CodeStaticDataAndLibrariesAtTheSameAddresses) {
  const Case c = GetParam();
  const JobResult r = RunLayoutJob(c);
  if (r.err.find(kRefused) != std::string::npos) {
    GTEST_SKIP() << "the launcher could not turn randomisation off here: "
                 << r.err;
  }
  const std::map<int, Layout> layouts = Layouts(r, c.ranks);
  ASSERT_EQ(layouts.size(), static_cast<size_t>(c.ranks)) << Describe(r);
  const Layout& first = layouts.begin()->second;
  EXPECT_NE(first.function, 0u);
  EXPECT_NE(first.statics, 0u);
  EXPECT_NE(first.library, 0u);
  for (const auto& [rank, l] : layouts) {
    EXPECT_EQ(l.function, first.function) << "rank " << rank << "\n"
                                          << Describe(r);
    EXPECT_EQ(l.statics, first.statics) << "rank " << rank << "\n"
                                        << Describe(r);
    EXPECT_EQ(l.library, first.library) << "rank " << rank << "\n"
                                        << Describe(r);
  }
  EXPECT_THAT(r.err, Not(HasSubstr("WARNING"))) << Describe(r);
}

INSTANTIATE_TEST_SUITE_P(
    Starts, SameLayoutTest,
    ::testing::Values(Case{Start::kGasnetrun, 2}, Case{Start::kGasnetrun, 4},
                      Case{Start::kPshmNodes, 2}, Case{Start::kPshmNodes, 4}),
    [](const auto& info) {
      return absl::StrFormat("%s_n%d",
                             info.param.start == Start::kGasnetrun
                                 ? "gasnetrun_smp"
                                 : "pshm_nodes",
                             info.param.ranks);
    });

// Whether this process's children would load at random addresses: the
// kernel randomises and this test was not started with it turned off.
bool RandomisationIsOn() {
  std::FILE* f = std::fopen("/proc/sys/kernel/randomize_va_space", "r");
  int level = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%d", &level) != 1) level = 0;
    std::fclose(f);
  }
  return level != 0 && (personality(0xffffffff) & ADDR_NO_RANDOMIZE) == 0;
}

// GEX_SPAWN_SAME_LAYOUT=0 leaves randomisation as it is: with the kernel's
// randomisation on (and not turned off for this test already), the ranks'
// programs load at different addresses (the chance that 4 ranks' random
// bases are all equal is negligible, 2^-84 for x86-64's 28 random bits).
TEST(SameLayoutOptOutTest, ZeroLeavesRandomisationAlone) {
  if (!RandomisationIsOn()) {
    GTEST_SKIP() << "address-space randomisation is off here already";
  }
  const JobResult r =
      RunLayoutJob(Case{Start::kGasnetrun, 4}, {"GEX_SPAWN_SAME_LAYOUT=0"});
  const std::map<int, Layout> layouts = Layouts(r, 4);
  ASSERT_EQ(layouts.size(), 4u) << Describe(r);
  std::set<unsigned long long> functions;
  for (const auto& [rank, l] : layouts) functions.insert(l.function);
  EXPECT_GT(functions.size(), 1u) << Describe(r);
  EXPECT_THAT(r.err, Not(HasSubstr(kRefused))) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
}

// Refuses personality(2) changes the way Docker's default seccomp profile
// does (the query, 0xffffffff, stays allowed) for this process and every
// process it starts: a container where the launcher cannot turn
// randomisation off.
bool RefusePersonalityChanges() {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_personality, 0, 3),
      // The low half of the first argument (x86-64 is little-endian).
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
               offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {
      static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// Where personality(2) is refused, the launcher says so once, clearly, and
// the job still runs; the message names the call and the way out.
TEST(SameLayoutRefusedTest, TheLauncherSaysSoOnceAndTheJobRuns) {
  if (!RandomisationIsOn()) {
    GTEST_SKIP() << "address-space randomisation is off here already";
  }
  // In a child of its own (the filter cannot be taken off again), which
  // reports what it found by its exit code and stderr.
  EXPECT_EXIT(
      {
        if (!RefusePersonalityChanges()) {
          std::fprintf(stderr, "cannot install the seccomp filter\n");
          std::_Exit(3);
        }
        const JobResult r = RunLayoutJob(Case{Start::kGasnetrun, 2});
        const std::string warning = std::string("gasnetrun_smp: WARNING: ") +
                                    kRefused +
                                    " for the ranks: "
                                    "personality(ADDR_NO_RANDOMIZE) failed";
        const size_t at = r.err.find(warning);
        const bool once =
            at != std::string::npos &&
            r.err.find(kRefused, at + warning.size()) == std::string::npos;
        const bool ran = r.exit_code == 0 && RankLines(r, "layout").size() == 2;
        const bool advice =
            r.err.find("setarch -R") != std::string::npos &&
            r.err.find("GEX_SPAWN_SAME_LAYOUT=0") != std::string::npos;
        std::fprintf(stderr, "once=%d ran=%d advice=%d\n%s\n", once, ran,
                     advice, Describe(r).c_str());
        std::_Exit(once && ran && advice ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "once=1 ran=1 advice=1");
}

}  // namespace
}  // namespace gexrt::testing
