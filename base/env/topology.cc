#include "base/env/topology.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status.h"
#include "base/string_view.h"

namespace gexrt::env {
namespace {

// Reads a sysfs file holding one line. NotFound when it does not exist.
absl::StatusOr<std::string> ReadLine(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::string line;
  std::getline(in, line);
  return std::string(StripWhitespace(line));
}

// Reads a cpulist file ("0-3,8") as a CpuSet.
absl::StatusOr<CpuSet> ReadCpuList(const std::string& path) {
  absl::StatusOr<std::string> text = ReadLine(path);
  if (!text.ok()) return text.status();
  if (text->empty()) return CpuSet{};  // A memory-only NUMA node.
  absl::StatusOr<NodeList> list = ParseNodeList(*text);
  if (!list.ok()) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", list.status().message()));
  }
  CpuSet cpus;
  for (int64_t cpu : list->Members(CPU_SETSIZE)) cpus.push_back(int(cpu));
  return cpus;
}

// One group per object, deduplicated and in logical order.
std::vector<CpuSet> Normalise(std::vector<CpuSet> groups) {
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  // Sorting vectors lexicographically orders them by lowest CPU first, except
  // that empty groups (memory-only nodes) sort first; keep those last.
  std::stable_partition(groups.begin(), groups.end(),
                        [](const CpuSet& g) { return !g.empty(); });
  return groups;
}

// The per-CPU file that lists the CPUs sharing `level` with that CPU.
absl::StatusOr<CpuSet> SiblingsOf(const std::string& cpu_dir,
                                  TopologyLevel level) {
  switch (level) {
    case TopologyLevel::kSocket: {
      absl::StatusOr<CpuSet> cpus =
          ReadCpuList(cpu_dir + "/topology/package_cpus_list");
      if (cpus.ok()) return cpus;
      return ReadCpuList(cpu_dir + "/topology/core_siblings_list");
    }
    case TopologyLevel::kCore: {
      absl::StatusOr<CpuSet> cpus =
          ReadCpuList(cpu_dir + "/topology/core_cpus_list");
      if (cpus.ok()) return cpus;
      return ReadCpuList(cpu_dir + "/topology/thread_siblings_list");
    }
    case TopologyLevel::kL1Cache:
    case TopologyLevel::kL2Cache:
    case TopologyLevel::kL3Cache: {
      const int wanted = level == TopologyLevel::kL1Cache   ? 1
                         : level == TopologyLevel::kL2Cache ? 2
                                                            : 3;
      for (int index = 0;; ++index) {
        const std::string dir = absl::StrCat(cpu_dir, "/cache/index", index);
        absl::StatusOr<std::string> cache_level = ReadLine(dir + "/level");
        if (!cache_level.ok()) break;
        absl::StatusOr<std::string> type = ReadLine(dir + "/type");
        if (*cache_level == absl::StrCat(wanted) && type.ok() &&
            *type != "Instruction") {
          return ReadCpuList(dir + "/shared_cpu_list");
        }
      }
      return absl::NotFoundError(
          absl::StrCat("no L", wanted, " cache listed under ", cpu_dir));
    }
    case TopologyLevel::kNumaNode:
    case TopologyLevel::kPu:
      break;
  }
  return absl::InternalError("SiblingsOf: level has no per-CPU file");
}

}  // namespace

absl::StatusOr<std::vector<CpuSet>> ReadTopologyGroups(
    TopologyLevel level, std::string_view sysfs_root) {
  const std::string root(sysfs_root);
  absl::StatusOr<CpuSet> online =
      ReadCpuList(root + "/devices/system/cpu/online");
  if (!online.ok()) return online.status();

  std::vector<CpuSet> groups;
  if (level == TopologyLevel::kPu) {
    for (int cpu : *online) groups.push_back({cpu});
    return groups;
  }
  if (level == TopologyLevel::kNumaNode) {
    absl::StatusOr<CpuSet> nodes =
        ReadCpuList(root + "/devices/system/node/online");
    if (!nodes.ok()) return std::vector<CpuSet>{*online};  // No NUMA info.
    for (int node : *nodes) {
      absl::StatusOr<CpuSet> cpus = ReadCpuList(
          absl::StrCat(root, "/devices/system/node/node", node, "/cpulist"));
      if (!cpus.ok()) return cpus.status();
      groups.push_back(*std::move(cpus));
    }
    return Normalise(std::move(groups));
  }
  for (int cpu : *online) {
    absl::StatusOr<CpuSet> siblings =
        SiblingsOf(absl::StrCat(root, "/devices/system/cpu/cpu", cpu), level);
    if (!siblings.ok()) return siblings.status();
    groups.push_back(*std::move(siblings));
  }
  return Normalise(std::move(groups));
}

std::optional<int> ContainingGroup(const CpuSet& cpus,
                                   const std::vector<CpuSet>& groups) {
  if (cpus.empty()) return std::nullopt;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (std::includes(groups[i].begin(), groups[i].end(), cpus.begin(),
                      cpus.end())) {
      return static_cast<int>(i);
    }
  }
  return std::nullopt;
}

absl::StatusOr<CpuSet> ProcessAffinity() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) {
    return ErrnoToStatus(errno, "sched_getaffinity");
  }
  CpuSet cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
  }
  return cpus;
}

std::optional<int> BoundObjectIndex(TopologyLevel level) {
  absl::StatusOr<CpuSet> affinity = ProcessAffinity();
  if (!affinity.ok()) return std::nullopt;
  absl::StatusOr<std::vector<CpuSet>> groups = ReadTopologyGroups(level);
  if (!groups.ok()) return std::nullopt;
  return ContainingGroup(*affinity, *groups);
}

}  // namespace gexrt::env
