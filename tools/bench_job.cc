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

std::optional<int> CommandLineVerdict(
    std::string_view program, int argc, char** argv, bool leader,
    uint32_t ranks, const std::optional<std::string>& parse_error, bool help,
    std::string (*usage)(std::string_view), std::string_view conduit) {
  const std::string name(program);
  if (parse_error) {
    if (leader) {
      std::fprintf(stderr, "%s: %s\n(%s -h lists the options)\n", name.c_str(),
                   parse_error->c_str(), name.c_str());
    }
    return 2;
  }
  if (help) {
    if (leader) {
      const char* slash = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
      const std::string invoked = slash != nullptr ? slash + 1
                                  : argc > 0       ? argv[0]
                                                   : name;
      std::fputs(usage(invoked).c_str(), stdout);
    }
    std::fflush(stdout);
    return 0;
  }
  if (ranks < 2) {
    if (leader) {
      std::fprintf(stderr,
                   "%s: needs at least 2 ranks (rank r measures with rank "
                   "r^1), e.g. gasnetrun_%.*s -n 2 %s\n",
                   name.c_str(), static_cast<int>(conduit.size()),
                   conduit.data(), name.c_str());
    }
    return 2;
  }
  return std::nullopt;
}

std::FILE* OpenCsv(std::string_view program, const std::string& path,
                   bool* failed) {
  *failed = false;
  if (path.empty()) return nullptr;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "%.*s: --csv %s: %s\n",
                 static_cast<int>(program.size()), program.data(), path.c_str(),
                 std::strerror(errno));
    *failed = true;
  }
  return f;
}

}  // namespace gex_bench
