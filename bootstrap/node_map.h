// The node map: which ranks of a job share a host, and how each host's
// ranks are grouped into supernodes (GASNet's "neighbourhoods": the ranks
// that map each other's segments and talk through shared memory).
//
// Numbering, fixed so that every rank computes the same map from the same
// gathered host ids:
//   - Hosts are numbered in order of their lowest job rank: rank 0's host
//     is host 0, the host of the lowest rank not on host 0 is host 1, ...
//   - A host's ranks are split into the fewest supernodes of at most
//     GASNET_SUPERNODE_MAXSIZE ranks (0: no limit, one supernode per host).
//     Their sizes are as equal as possible (they differ by at most 1, the
//     larger ones first), and each is a consecutive run of the host's ranks
//     in ascending job-rank order. Seven ranks with a limit of 3 give
//     supernodes of 3, 2 and 2 ranks, not 3, 3 and 1.
//   - Supernodes are numbered in order of their lowest job rank.
//
// These answer gex_System_QueryMyPosition (supernode_count(),
// my_place().supernode, host_count(), my_place().host),
// gex_System_QueryNbrhdInfo (my_supernode_members(),
// my_place().supernode_index) and gex_System_QueryHostInfo
// (my_host_members(), my_place().host_index).
//
//   NodeMap map = DiscoverNodeMap(bootstrap);
//   for (Rank peer : map.my_supernode_members()) CrossMapSegment(peer);
#ifndef GEX_BOOTSTRAP_NODE_MAP_H_
#define GEX_BOOTSTRAP_NODE_MAP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "bootstrap/bootstrap.h"

namespace gexrt {

// Where one rank sits.
struct RankPlace {
  uint32_t host;             // Host index, 0..host_count()-1.
  uint32_t supernode;        // Supernode index, 0..supernode_count()-1.
  uint32_t host_index;       // Position among the ranks of its host
                             // (ascending job rank).
  uint32_t supernode_index;  // Position among the ranks of its supernode.
};

class NodeMap {
 public:
  // Builds the map of a job of host_ids.size() ranks, where host_ids[r] is
  // the host id (base/host_id.h) of rank r, as seen by rank `my_rank`.
  // `supernode_max_size` 0 means no limit. An empty `host_ids` or a
  // `my_rank` out of range is a fatal error. O(ranks) expected time.
  static NodeMap Build(absl::Span<const uint64_t> host_ids, Rank my_rank,
                       uint32_t supernode_max_size);

  // The number of ranks in the job.
  Rank size() const { return static_cast<Rank>(places_.size()); }
  Rank my_rank() const { return my_rank_; }

  uint32_t host_count() const {
    return static_cast<uint32_t>(host_begin_.size() - 1);
  }
  uint32_t supernode_count() const {
    return static_cast<uint32_t>(supernode_begin_.size());
  }

  // Where rank `r` sits. A rank out of range is a fatal error.
  const RankPlace& place(Rank r) const;

  // The ranks on `host`, ascending. A host out of range is a fatal error.
  absl::Span<const Rank> host_members(uint32_t host) const;
  // The ranks in `supernode`, ascending. Out of range is a fatal error.
  absl::Span<const Rank> supernode_members(uint32_t supernode) const;

  const RankPlace& my_place() const { return places_[my_rank_]; }
  absl::Span<const Rank> my_host_members() const {
    return host_members(my_place().host);
  }
  absl::Span<const Rank> my_supernode_members() const {
    return supernode_members(my_place().supernode);
  }

  // Whether ranks `a` and `b` share a host (a supernode). Ranks out of
  // range are a fatal error.
  bool SameHost(Rank a, Rank b) const { return place(a).host == place(b).host; }
  bool SameSupernode(Rank a, Rank b) const {
    return place(a).supernode == place(b).supernode;
  }

  // True when the ranks on my machine outnumber the CPUs this process may
  // use (base/cpu.h HostIsOversubscribed): waits should then yield the
  // CPU. My machine is my host, except where a launcher places ranks of
  // several of its nodes on this one kernel (DiscoverNodeMap): they all
  // compete for its CPUs. Asks the kernel on each call (affinity can
  // change).
  bool MyHostIsOversubscribed() const;
  // The ranks that share this rank's machine (its kernel and CPUs), this
  // one included: my host's, or more where a launcher's nodes share it.
  uint32_t ranks_on_my_machine() const { return ranks_on_my_machine_; }

 private:
  friend NodeMap DiscoverNodeMap(Bootstrap& bootstrap);
  NodeMap() = default;

  Rank my_rank_ = 0;
  // Ranks sharing this rank's host id (HostId()), this one included: the
  // size of my host unless the host keys came from a launcher's nodes.
  uint32_t ranks_on_my_machine_ = 0;
  std::vector<RankPlace> places_;  // Indexed by job rank.
  // Every rank, grouped by host in host order, ascending within a host:
  // host h's ranks are member_ranks_[host_begin_[h] .. host_begin_[h+1]).
  // A supernode is a consecutive run of its host's ranks, so supernodes
  // index into the same array.
  std::vector<Rank> member_ranks_;
  std::vector<uint32_t> host_begin_;       // host_count() + 1 entries.
  std::vector<uint32_t> supernode_begin_;  // Into member_ranks_.
  std::vector<uint32_t> supernode_size_;
};

// GASNET_SUPERNODE_MAXSIZE, read through base/env (reported by
// GASNET_VERBOSEENV): the most ranks one supernode may hold. 0 (the
// default) means no limit, so all ranks of a host form one supernode; 1
// disables shared-memory communication between ranks. A negative or
// malformed value is a fatal error naming the variable.
uint32_t SupernodeMaxSizeFromEnv();

// Implemented, besides Bootstrap, by a bootstrap whose launcher knows the
// job's nodes (PMIx: bootstrap/pmix_bootstrap.h). DiscoverNodeMap then
// makes the launcher's nodes the map's hosts, cross-checked against our
// host identity:
//   - ranks the launcher places on one node must have one host id (they
//     will share memory); if not, every rank stops with a fatal error
//     naming two such ranks, their host names and the node;
//   - ranks of different nodes with one host id (a launcher emulating
//     several nodes on one machine: two slurmd on one host, mpirun's
//     --host a:2,b:2) are legal: they are on different hosts of the map
//     and do not share memory.
// If some rank's launcher does not say which node it is on, the map
// follows the host ids alone.
class LauncherNodeSource {
 public:
  virtual ~LauncherNodeSource() = default;
  // This rank's node: equal on the ranks of one node, different across
  // nodes; nullopt when the launcher does not say.
  virtual std::optional<uint64_t> LauncherNodeId() const = 0;
  // The node's name as the launcher gives it (may be empty), and the
  // launcher's ("srun", "mpirun"), for messages.
  virtual std::string LauncherNodeName() const = 0;
  virtual std::string LauncherName() const = 0;
};

// Two ranks a < b that `node_ids` places on one node while `host_ids`
// puts them on different hosts, or nullopt when there are none: b is the
// lowest rank whose host id differs from that of its node's lowest rank,
// a. Both spans hold one entry per rank (different lengths are a fatal
// error). O(ranks) expected time.
std::optional<std::pair<Rank, Rank>> FindNodeSplitAcrossHosts(
    absl::Span<const uint64_t> host_ids, absl::Span<const uint64_t> node_ids);

// Allgathers this process's HostId() over `bootstrap` (collective: every
// rank calls it) and builds the map with SupernodeMaxSizeFromEnv(). When
// `bootstrap` is also a LauncherNodeSource, the launcher's node ids travel
// with the host ids and decide the hosts (see LauncherNodeSource).
NodeMap DiscoverNodeMap(Bootstrap& bootstrap);

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_NODE_MAP_H_
