#include "tools/bench_job.h"

#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace gex_bench {
namespace {

std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

}  // namespace

std::string PinToCpu(Pin mode, uint32_t host_ranks, uint32_t host_index,
                     std::string_view program, uint32_t me, bool* polite) {
  const std::vector<int> cpus = AllowedCpus();
  *polite = false;
  if (cpus.empty()) return "pinning: off (no CPU list)";
  const size_t ncpus = cpus.size();
  *polite = host_ranks > ncpus;
  const bool pin =
      mode == Pin::kOn || (mode == Pin::kAuto && host_ranks <= ncpus);
  std::string cpu_list;
  for (int c : cpus) {
    cpu_list += (cpu_list.empty() ? "" : ",") + std::to_string(c);
  }
  if (!pin) {
    return "pinning: off (" + std::to_string(host_ranks) +
           " ranks on this host, " + std::to_string(ncpus) + " CPUs {" +
           cpu_list + "}" + (*polite ? "; spins yield)" : ")");
  }
  const int cpu = cpus[host_index % ncpus];
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    std::fprintf(stderr, "%.*s: rank %u: cannot pin to CPU %d: %s\n",
                 static_cast<int>(program.size()), program.data(), me, cpu,
                 std::strerror(errno));
  }
  return "pinning: host rank r on allowed CPU r % " + std::to_string(ncpus) +
         " of {" + cpu_list + "}";
}

}  // namespace gex_bench
