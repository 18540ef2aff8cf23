#include "conduit/ibv/memory_limits.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/env/parse.h"
#include "conduit/ibv/settings.h"
#include "conduit/ibv/verbs/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::ibv {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

// Pins up to `capacity`, and remembers what it was asked.
class FakeProber : public Prober {
 public:
  explicit FakeProber(uint64_t capacity) : capacity_(capacity) {}
  uint64_t PinnableBytes(uint64_t limit) override {
    asked.push_back(limit);
    return std::min(limit, capacity_);
  }
  std::vector<uint64_t> asked;

 private:
  uint64_t capacity_;
};

Settings MemorySettings(bool max_set, env::MemoryAmount max, bool probe) {
  Settings s;
  s.physmem_max_set = max_set;
  s.physmem_max = max;
  s.physmem_probe = probe;
  s.physmem_warn = true;
  return s;
}

// ---- PlanPhysmem ---------------------------------------------------------

TEST(PlanPhysmemTest, FractionOfPhysicalMemory) {
  FakeProber prober(~uint64_t{0});
  absl::StatusOr<PhysmemPlan> plan =
      PlanPhysmem(MemorySettings(true, env::MemoryAmount::Fraction(0.5), false),
                  1, 16 * kGiB, &prober);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bytes, 8 * kGiB);
  EXPECT_FALSE(plan->probed);
  EXPECT_THAT(plan->note, IsEmpty());
  EXPECT_THAT(prober.asked, IsEmpty());
}

TEST(PlanPhysmemTest, AbsoluteSize) {
  absl::StatusOr<PhysmemPlan> plan = PlanPhysmem(
      MemorySettings(true, env::MemoryAmount::Absolute(3 * kGiB), false), 1,
      16 * kGiB, nullptr);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bytes, 3 * kGiB);
}

TEST(PlanPhysmemTest, DefaultIsTwoThirdsWhateverTheStructHolds) {
  // Unset: the stored amount is ignored (ReadSettings stores 2/3 anyway).
  absl::StatusOr<PhysmemPlan> plan =
      PlanPhysmem(MemorySettings(false, env::MemoryAmount::Absolute(1), false),
                  1, 24 * kGiB, nullptr);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bytes, 16 * kGiB);
}

TEST(PlanPhysmemTest, DividedAmongTheHostsRanks) {
  absl::StatusOr<PhysmemPlan> plan = PlanPhysmem(
      MemorySettings(true, env::MemoryAmount::Absolute(12 * kGiB), false), 4,
      16 * kGiB, nullptr);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bytes, 3 * kGiB);

  // Default 2/3 of 24 GiB over 3 ranks; the probe is asked for the share.
  FakeProber prober(~uint64_t{0});
  plan = PlanPhysmem(MemorySettings(false, {}, true), 3, 24 * kGiB, &prober);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bytes, 16 * kGiB / 3);
  EXPECT_TRUE(plan->probed);
  EXPECT_THAT(plan->note, IsEmpty());  // found all it asked
  EXPECT_THAT(prober.asked, ElementsAre(16 * kGiB / 3));
}

TEST(PlanPhysmemTest, ProbeFindingLessWarnsNamingTheVariables) {
  FakeProber prober(64 * kMiB);
  absl::StatusOr<PhysmemPlan> plan =
      PlanPhysmem(MemorySettings(false, {}, true), 2, 24 * kGiB, &prober);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bytes, 64 * kMiB);
  EXPECT_TRUE(plan->probed);
  EXPECT_THAT(prober.asked, ElementsAre(8 * kGiB));
  EXPECT_THAT(plan->note, HasSubstr("GASNET_PHYSMEM_MAX"));
  EXPECT_THAT(plan->note, HasSubstr("GASNET_PHYSMEM_PROBE"));
  EXPECT_THAT(plan->note, HasSubstr("GASNET_PHYSMEM_WARN=0"));
  EXPECT_THAT(plan->note, HasSubstr("RLIMIT_MEMLOCK"));
  EXPECT_THAT(plan->note, HasSubstr("64.0 MiB"));
  EXPECT_THAT(plan->note, HasSubstr("8.0 GiB"));

  // The same with GASNET_PHYSMEM_WARN=0: the amount, no note.
  Settings quiet = MemorySettings(false, {}, true);
  quiet.physmem_warn = false;
  plan = PlanPhysmem(quiet, 2, 24 * kGiB, &prober);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bytes, 64 * kMiB);
  EXPECT_THAT(plan->note, IsEmpty());
}

TEST(PlanPhysmemTest, ProbeOffTrustsTheSetValue) {
  // ReadSettings turns the probe off by default when PHYSMEM_MAX is set;
  // then a prober that would find little is never asked.
  FakeProber prober(1 * kMiB);
  absl::StatusOr<PhysmemPlan> plan = PlanPhysmem(
      MemorySettings(true, env::MemoryAmount::Absolute(4 * kGiB), false), 1,
      16 * kGiB, &prober);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bytes, 4 * kGiB);
  EXPECT_FALSE(plan->probed);
  EXPECT_THAT(prober.asked, IsEmpty());

  // Asked for explicitly, it probes a set value too.
  plan = PlanPhysmem(
      MemorySettings(true, env::MemoryAmount::Absolute(4 * kGiB), true), 1,
      16 * kGiB, &prober);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bytes, 1 * kMiB);
  EXPECT_THAT(plan->note, HasSubstr("GASNET_PHYSMEM_MAX=4G"));
}

TEST(PlanPhysmemTest, MoreThanPhysicalMemoryIsAnError) {
  absl::StatusOr<PhysmemPlan> plan = PlanPhysmem(
      MemorySettings(true, env::MemoryAmount::Absolute(17 * kGiB), false), 1,
      16 * kGiB, nullptr);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("GASNET_PHYSMEM_MAX"));

  // Exactly physical memory is allowed.
  plan = PlanPhysmem(
      MemorySettings(true, env::MemoryAmount::Absolute(16 * kGiB), false), 1,
      16 * kGiB, nullptr);
  EXPECT_TRUE(plan.ok()) << plan.status();
}

TEST(PlanPhysmemTest, ZeroRanksOrMissingProberIsAnError) {
  EXPECT_FALSE(
      PlanPhysmem(MemorySettings(false, {}, false), 0, 16 * kGiB, nullptr)
          .ok());
  EXPECT_FALSE(
      PlanPhysmem(MemorySettings(false, {}, true), 1, 16 * kGiB, nullptr).ok());
}

TEST(PlanPhysmemTest, ReadsPhysicalMemoryWhenNotGiven) {
  const uint64_t physical = PhysicalMemoryBytes();
  ASSERT_GT(physical, 0u);
  absl::StatusOr<PhysmemPlan> plan =
      PlanPhysmem(MemorySettings(false, {}, false), 1, 0, nullptr);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bytes, physical / 3 * 2 + physical % 3 * 2 / 3);
}

// ---- MlockProber (real, small amounts) ---------------------------------

// VmLck of /proc/self/status, in kB; -1 when absent.
int64_t LockedKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmLck:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// Runs `body` in a forked child, so limits it changes stay there; returns
// the child's exit code.
int InChild(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

constexpr int kSkip = 77;

TEST(MlockProberTest, FindsAtMostTheLimitAndReleasesEverything) {
  MlockProber prober(
      {.min_step = 64 << 10, .max_attempts = 64, .deadline = absl::Seconds(5)});
  const uint64_t limit = 4 * kMiB + 123;  // not a page multiple
  const uint64_t found = prober.PinnableBytes(limit);
  EXPECT_LE(found, limit);
  EXPECT_EQ(LockedKib(), 0);
}

TEST(MlockProberTest, StopsAtTheMemlockLimit) {
  const int code = InChild([] {
    const rlim_t kLimit = 1 << 20;
    rlimit limit{kLimit, kLimit};
    if (setrlimit(RLIMIT_MEMLOCK, &limit) != 0) return kSkip;
    // With CAP_IPC_LOCK the limit does not apply: nothing to check.
    void* probe = mmap(nullptr, 2 * kLimit, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED) return 2;
    const bool privileged = mlock(probe, 2 * kLimit) == 0;
    munmap(probe, 2 * kLimit);
    if (privileged) return kSkip;
    MlockProber prober({.min_step = 64 << 10,
                        .max_attempts = 64,
                        .deadline = absl::Seconds(5)});
    const uint64_t found = prober.PinnableBytes(16 * kMiB);
    if (found > kLimit) return 3;
    if (found < kLimit / 2) return 4;  // 64 KiB steps get within the limit
    if (LockedKib() != 0) return 5;
    return 0;
  });
  if (code == kSkip) GTEST_SKIP() << "mlock is not limited by RLIMIT_MEMLOCK";
  EXPECT_EQ(code, 0);
}

// ---- MaximizeMemlock -----------------------------------------------------

// In a child: lowers the soft limit, calls MaximizeMemlock(enabled), and
// reports 0 when soft == hard afterwards, 1 when not, kSkip when the hard
// limit leaves nothing to lower.
int MemlockAfter(bool enabled) {
  return InChild([enabled] {
    rlimit limit;
    if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return 2;
    if (limit.rlim_max == 0) return kSkip;
    limit.rlim_cur = 0;
    if (setrlimit(RLIMIT_MEMLOCK, &limit) != 0) return 3;
    if (!MaximizeMemlock(enabled).ok()) return 4;
    rlimit after;
    if (getrlimit(RLIMIT_MEMLOCK, &after) != 0) return 2;
    if (after.rlim_max != limit.rlim_max) return 5;
    return after.rlim_cur == after.rlim_max ? 0 : 1;
  });
}

TEST(MaximizeMemlockTest, RaisesTheSoftLimitToTheHardLimit) {
  const int code = MemlockAfter(true);
  if (code == kSkip) GTEST_SKIP() << "RLIMIT_MEMLOCK hard limit is 0";
  EXPECT_EQ(code, 0);
}

TEST(MaximizeMemlockTest, DisabledLeavesTheLimitAlone) {
  const int code = MemlockAfter(false);
  if (code == kSkip) GTEST_SKIP() << "RLIMIT_MEMLOCK hard limit is 0";
  EXPECT_EQ(code, 1);
}

// ---- ChooseOdp -----------------------------------------------------------

Settings OdpSettings(bool use, int verbose) {
  Settings s;
  s.use_odp = use;
  s.odp_verbose = verbose;
  return s;
}

verbs::DeviceAttr Device(bool odp) {
  verbs::DeviceAttr attr;
  attr.odp_supported = odp;
  return attr;
}

TEST(ChooseOdpTest, UsedWhereAskedAndSupported) {
  OdpChoice c = ChooseOdp(OdpSettings(true, 1), Device(true), 0);
  EXPECT_TRUE(c.use);
  EXPECT_EQ(c.access_flags, verbs::kAccessOnDemand);
  EXPECT_THAT(c.note, IsEmpty());
}

TEST(ChooseOdpTest, OffWhenNotAsked) {
  for (bool supported : {false, true}) {
    OdpChoice c = ChooseOdp(OdpSettings(false, 2), Device(supported), 0);
    EXPECT_FALSE(c.use);
    EXPECT_EQ(c.access_flags, 0u);
    EXPECT_THAT(c.note, IsEmpty());
  }
}

TEST(ChooseOdpTest, UnsupportedNoteFollowsVerbosity) {
  // Verbosity 1: rank 0 only.
  OdpChoice c = ChooseOdp(OdpSettings(true, 1), Device(false), 0);
  EXPECT_FALSE(c.use);
  EXPECT_EQ(c.access_flags, 0u);
  EXPECT_THAT(c.note, HasSubstr("GASNET_USE_ODP"));
  EXPECT_THAT(c.note, HasSubstr("GASNET_ODP_VERBOSE=0"));
  EXPECT_EQ(c.note.find('\n'), std::string::npos);
  EXPECT_THAT(ChooseOdp(OdpSettings(true, 1), Device(false), 3).note,
              IsEmpty());
  // Verbosity 2: every rank, naming itself.
  EXPECT_THAT(ChooseOdp(OdpSettings(true, 2), Device(false), 3).note,
              HasSubstr("rank 3"));
  // Verbosity 0: nobody.
  EXPECT_THAT(ChooseOdp(OdpSettings(true, 0), Device(false), 0).note,
              IsEmpty());
}

}  // namespace
}  // namespace gexrt::ibv
