#include "base/cpu.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace gexrt {
namespace {

TEST(CpuTest, OnlineCpuCountIsWithinTheHostsCpus) {
  const int count = OnlineCpuCount();
  EXPECT_GE(count, 1);
  EXPECT_LE(count, sysconf(_SC_NPROCESSORS_ONLN));
}

TEST(CpuTest, OnlineCpuCountFollowsTheAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(OnlineCpuCount(), CPU_COUNT(&set));
}

// Pinned to one CPU (in a child, to leave this process alone), the process
// counts one CPU and two ranks oversubscribe it.
TEST(CpuTest, PinnedToOneCpu) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) _exit(10);
    int first = 0;
    while (!CPU_ISSET(first, &set)) ++first;
    CPU_ZERO(&set);
    CPU_SET(first, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) _exit(11);
    if (OnlineCpuCount() != 1) _exit(12);
    if (HostIsOversubscribed(1)) _exit(13);
    if (!HostIsOversubscribed(2)) _exit(14);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(CpuTest, OversubscribedWhenRanksOutnumberCpus) {
  const int cpus = OnlineCpuCount();
  EXPECT_FALSE(HostIsOversubscribed(1));
  EXPECT_FALSE(HostIsOversubscribed(cpus));
  EXPECT_TRUE(HostIsOversubscribed(cpus + 1));
  static_assert(cpu_internal::Oversubscribed(3, 2));
  static_assert(!cpu_internal::Oversubscribed(2, 2));
  static_assert(!cpu_internal::Oversubscribed(0, 1));
}

}  // namespace
}  // namespace gexrt
