#include "base/cpu.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace gexrt {
namespace {

// The number of CPUs in this process's affinity mask, or 0 if it cannot be
// read. The mask is sized dynamically: a fixed cpu_set_t holds only 1024
// CPUs, and the kernel rejects (EINVAL) a mask smaller than its own.
int AffinityCpuCount() {
  long configured = sysconf(_SC_NPROCESSORS_CONF);
  int capacity = static_cast<int>(std::max(configured, 1024L));
  for (int attempt = 0; attempt < 8; ++attempt, capacity *= 2) {
    cpu_set_t* set = CPU_ALLOC(capacity);
    if (set == nullptr) return 0;
    const size_t bytes = CPU_ALLOC_SIZE(capacity);
    CPU_ZERO_S(bytes, set);
    const int rc = sched_getaffinity(0, bytes, set);
    const int saved_errno = errno;
    const int count = rc == 0 ? CPU_COUNT_S(bytes, set) : 0;
    CPU_FREE(set);
    if (rc == 0) return count;
    if (saved_errno != EINVAL) return 0;
  }
  return 0;
}

}  // namespace

int OnlineCpuCount() {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const int affinity = AffinityCpuCount();
  int count = online > 0 ? static_cast<int>(online) : 1;
  if (affinity > 0) count = std::min(count, affinity);
  return std::max(count, 1);
}

bool HostIsOversubscribed(int ranks_on_host) {
  return cpu_internal::Oversubscribed(ranks_on_host, OnlineCpuCount());
}

}  // namespace gexrt
