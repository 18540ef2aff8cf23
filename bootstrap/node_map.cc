#include "bootstrap/node_map.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "base/cpu.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "base/host_id.h"
#include "bootstrap/bootstrap.h"

namespace gexrt {

NodeMap NodeMap::Build(absl::Span<const uint64_t> host_ids, Rank my_rank,
                       uint32_t supernode_max_size) {
  if (host_ids.empty()) {
    FatalError("NodeMap::Build: a job has at least one rank");
  }
  // Positions are stored as uint32_t; a larger job could not be numbered.
  if (host_ids.size() > std::numeric_limits<Rank>::max()) {
    FatalErrorF("NodeMap::Build: %d ranks is more than a job may have",
                host_ids.size());
  }
  const Rank n = static_cast<Rank>(host_ids.size());
  if (my_rank >= n) {
    FatalErrorF("NodeMap::Build: my rank %d is out of range (job size %d)",
                my_rank, n);
  }

  NodeMap map;
  map.my_rank_ = my_rank;
  map.places_.resize(n);
  map.ranks_on_my_machine_ = static_cast<uint32_t>(
      std::count(host_ids.begin(), host_ids.end(), host_ids[my_rank]));

  // Hosts in order of first appearance, which scanning ranks in ascending
  // order makes the order of their lowest rank.
  absl::flat_hash_map<uint64_t, uint32_t> host_of_id;
  host_of_id.reserve(n);
  std::vector<uint32_t> host_size;
  for (Rank r = 0; r < n; ++r) {
    const auto [it, inserted] = host_of_id.try_emplace(
        host_ids[r], static_cast<uint32_t>(host_size.size()));
    if (inserted) host_size.push_back(0);
    map.places_[r].host = it->second;
    map.places_[r].host_index = host_size[it->second]++;
  }

  // Counting sort by host: ranks land in ascending order within each host.
  const uint32_t hosts = static_cast<uint32_t>(host_size.size());
  map.host_begin_.resize(hosts + 1);
  map.host_begin_[0] = 0;
  for (uint32_t h = 0; h < hosts; ++h) {
    map.host_begin_[h + 1] = map.host_begin_[h] + host_size[h];
  }
  map.member_ranks_.resize(n);
  for (Rank r = 0; r < n; ++r) {
    const RankPlace& p = map.places_[r];
    map.member_ranks_[map.host_begin_[p.host] + p.host_index] = r;
  }

  // Split each host into chunks (the supernodes, not yet numbered). Chunk
  // ids follow host order; `chunk_of[r]` is rank r's.
  std::vector<uint32_t> chunk_begin;
  std::vector<uint32_t> chunk_size;
  std::vector<uint32_t> chunk_of(n);
  for (uint32_t h = 0; h < hosts; ++h) {
    const uint64_t size = host_size[h];
    // 64-bit: size + max - 1 can exceed 32 bits for a huge limit.
    const uint64_t chunks =
        supernode_max_size == 0
            ? 1
            : (size + supernode_max_size - 1) / supernode_max_size;
    const uint64_t base = size / chunks;
    const uint64_t larger = size % chunks;  // The first `larger` get +1.
    uint32_t offset = map.host_begin_[h];
    for (uint64_t c = 0; c < chunks; ++c) {
      const uint32_t len = static_cast<uint32_t>(base + (c < larger ? 1 : 0));
      const uint32_t id = static_cast<uint32_t>(chunk_begin.size());
      chunk_begin.push_back(offset);
      chunk_size.push_back(len);
      for (uint32_t i = 0; i < len; ++i) {
        const Rank r = map.member_ranks_[offset + i];
        chunk_of[r] = id;
        map.places_[r].supernode_index = i;
      }
      offset += len;
    }
  }

  // Number the supernodes by their lowest rank: scanning ranks in ascending
  // order meets each chunk's first member (supernode_index 0) before its
  // other members, so one pass suffices, with no sort.
  constexpr uint32_t kUnnumbered = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> number_of_chunk(chunk_begin.size(), kUnnumbered);
  map.supernode_begin_.reserve(chunk_begin.size());
  map.supernode_size_.reserve(chunk_begin.size());
  for (Rank r = 0; r < n; ++r) {
    const uint32_t chunk = chunk_of[r];
    if (number_of_chunk[chunk] == kUnnumbered) {
      number_of_chunk[chunk] =
          static_cast<uint32_t>(map.supernode_begin_.size());
      map.supernode_begin_.push_back(chunk_begin[chunk]);
      map.supernode_size_.push_back(chunk_size[chunk]);
    }
    map.places_[r].supernode = number_of_chunk[chunk];
  }
  return map;
}

const RankPlace& NodeMap::place(Rank r) const {
  if (r >= size()) {
    FatalErrorF("NodeMap::place: rank %d is out of range (job size %d)", r,
                size());
  }
  return places_[r];
}

absl::Span<const Rank> NodeMap::host_members(uint32_t host) const {
  if (host >= host_count()) {
    FatalErrorF("NodeMap::host_members: host %d is out of range (%d hosts)",
                host, host_count());
  }
  return absl::MakeConstSpan(member_ranks_)
      .subspan(host_begin_[host], host_begin_[host + 1] - host_begin_[host]);
}

absl::Span<const Rank> NodeMap::supernode_members(uint32_t supernode) const {
  if (supernode >= supernode_count()) {
    FatalErrorF(
        "NodeMap::supernode_members: supernode %d is out of range (%d "
        "supernodes)",
        supernode, supernode_count());
  }
  return absl::MakeConstSpan(member_ranks_)
      .subspan(supernode_begin_[supernode], supernode_size_[supernode]);
}

bool NodeMap::MyHostIsOversubscribed() const {
  return HostIsOversubscribed(static_cast<int>(ranks_on_my_machine_));
}

uint32_t SupernodeMaxSizeFromEnv() {
  return static_cast<uint32_t>(
      env::GetInt("GASNET_SUPERNODE_MAXSIZE", /*default_value=*/0, /*min=*/0,
                  /*max=*/std::numeric_limits<uint32_t>::max()));
}

std::optional<std::pair<Rank, Rank>> FindNodeSplitAcrossHosts(
    absl::Span<const uint64_t> host_ids, absl::Span<const uint64_t> node_ids) {
  if (host_ids.size() != node_ids.size()) {
    FatalErrorF(
        "FindNodeSplitAcrossHosts: %d host ids but %d node ids (one each per "
        "rank)",
        host_ids.size(), node_ids.size());
  }
  // Each node's lowest rank.
  absl::flat_hash_map<uint64_t, Rank> first_of_node;
  for (Rank r = 0; r < node_ids.size(); ++r) {
    const auto [it, inserted] = first_of_node.try_emplace(node_ids[r], r);
    if (!inserted && host_ids[it->second] != host_ids[r]) {
      return std::make_pair(it->second, r);
    }
  }
  return std::nullopt;
}

namespace {

// What each rank contributes when its bootstrap is a LauncherNodeSource.
// Names are cut to fit (they only serve messages).
struct NodeRecord {
  uint64_t host_id;
  uint64_t node_id;
  uint8_t has_node_id;
  char host_name[47];  // Hostname(), NUL-terminated.
  char node_name[48];  // The launcher's name for the node, NUL-terminated.
};

void CopyName(const std::string& from, char* to, size_t size) {
  std::memset(to, 0, size);
  std::memcpy(to, from.data(), std::min(from.size(), size - 1));
}

}  // namespace

NodeMap DiscoverNodeMap(Bootstrap& bootstrap) {
  // Read before the collective: a malformed value is then reported before
  // this rank joins it, not after.
  const uint32_t max_size = SupernodeMaxSizeFromEnv();
  const uint64_t my_id = HostId();
  const auto* source = dynamic_cast<const LauncherNodeSource*>(&bootstrap);
  if (source == nullptr) {
    std::vector<uint64_t> ids(bootstrap.size());
    bootstrap.Allgather(&my_id, sizeof(my_id), ids.data());
    return NodeMap::Build(ids, bootstrap.rank(), max_size);
  }

  NodeRecord mine{};
  mine.host_id = my_id;
  const std::optional<uint64_t> node = source->LauncherNodeId();
  mine.has_node_id = node.has_value() ? 1 : 0;
  mine.node_id = node.value_or(0);
  CopyName(Hostname(), mine.host_name, sizeof mine.host_name);
  CopyName(source->LauncherNodeName(), mine.node_name, sizeof mine.node_name);
  const Rank n = bootstrap.size();
  std::vector<NodeRecord> all(n);
  bootstrap.Allgather(&mine, sizeof mine, all.data());

  std::vector<uint64_t> host_ids(n), node_ids(n);
  bool every_rank_has_a_node = true;
  for (Rank r = 0; r < n; ++r) {
    host_ids[r] = all[r].host_id;
    node_ids[r] = all[r].node_id;
    if (all[r].has_node_id == 0) every_rank_has_a_node = false;
  }
  if (!every_rank_has_a_node) {
    return NodeMap::Build(host_ids, bootstrap.rank(), max_size);
  }
  if (const auto split = FindNodeSplitAcrossHosts(host_ids, node_ids)) {
    const auto [a, b] = *split;
    const std::string node_name = all[a].node_name;
    FatalErrorF(
        "bootstrap: %s places ranks %d and %d on one node%s, but our host "
        "identity (GASNET_HOST_DETECT) puts them on different hosts ('%s' "
        "and '%s'): ranks of one node must share memory, so they must be "
        "on one host. Check the launcher's node list, or whether the ranks "
        "run in different UTS namespaces (containers) on that node",
        source->LauncherName(), a, b,
        node_name.empty() ? std::string()
                          : absl::StrFormat(" ('%s')", node_name),
        all[a].host_name, all[b].host_name);
  }
  NodeMap map = NodeMap::Build(node_ids, bootstrap.rank(), max_size);
  map.ranks_on_my_machine_ = static_cast<uint32_t>(
      std::count(host_ids.begin(), host_ids.end(), my_id));
  return map;
}

}  // namespace gexrt
