// Which hardware object (socket, NUMA node, core, ...) this process is bound
// to: the key of the topology-aware setting families (NAME_TYPE selecting
// NAME_<n>, see settings.h).
//
// Objects are numbered by logical index: the objects of one level sorted by
// their lowest CPU number, counted from 0 (what hwloc calls the logical
// index, read here from Linux sysfs without hwloc).
#ifndef GEX_BASE_ENV_TOPOLOGY_H_
#define GEX_BASE_ENV_TOPOLOGY_H_

#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/env/parse.h"

namespace gexrt::env {

// CPU numbers, sorted ascending, no duplicates.
using CpuSet = std::vector<int>;

// The CPUs of each object of `level`, in logical-index order, read from the
// sysfs tree at `sysfs_root` ("/sys" on a real system; tests pass a fake).
// A machine without NUMA information has one NUMA node holding every CPU.
absl::StatusOr<std::vector<CpuSet>> ReadTopologyGroups(
    TopologyLevel level, std::string_view sysfs_root = "/sys");

// The index of the group that contains every CPU of `cpus`, or nullopt when
// they span several groups, lie in none, or `cpus` is empty.
std::optional<int> ContainingGroup(const CpuSet& cpus,
                                   const std::vector<CpuSet>& groups);

// The CPUs this process may run on (sched_getaffinity).
absl::StatusOr<CpuSet> ProcessAffinity();

// The logical index of the object of `level` that this process is bound
// within, or nullopt when it is not bound within a single one or the
// topology cannot be read.
std::optional<int> BoundObjectIndex(TopologyLevel level);

}  // namespace gexrt::env

#endif  // GEX_BASE_ENV_TOPOLOGY_H_
