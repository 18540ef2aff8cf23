// How many CPUs this process may use, and whether the ranks sharing a host
// outnumber them.
#ifndef GEX_BASE_CPU_H_
#define GEX_BASE_CPU_H_

namespace gexrt {

// The number of CPUs this process may run on: the CPUs in its affinity mask
// (sched_getaffinity: taskset, cgroup cpusets and batch-system binding all
// narrow it), never more than the CPUs online (sysconf). At least 1. Asks
// the kernel on every call: affinity can change while a process runs.
int OnlineCpuCount();

// Whether `ranks_on_host` processes sharing this host outnumber the CPUs
// they may run on (OnlineCpuCount(), assuming the ranks of one host share
// one CPU set, as launchers arrange). Waits should then be polite (see
// PoliteSpinWait in base/spin_wait.h): a spinning rank may hold the core the
// rank it waits for needs.
bool HostIsOversubscribed(int ranks_on_host);

namespace cpu_internal {
// The pure decision, for tests: more ranks than CPUs.
constexpr bool Oversubscribed(int ranks_on_host, int cpus) {
  return ranks_on_host > cpus;
}
}  // namespace cpu_internal

}  // namespace gexrt

#endif  // GEX_BASE_CPU_H_
