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

  // True when the ranks on my host outnumber the CPUs this process may use
  // (base/cpu.h HostIsOversubscribed): waits should then yield the CPU.
  // Asks the kernel on each call (affinity can change).
  bool MyHostIsOversubscribed() const;

 private:
  NodeMap() = default;

  Rank my_rank_ = 0;
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

// Allgathers this process's HostId() over `bootstrap` (collective: every
// rank calls it) and builds the map with SupernodeMaxSizeFromEnv().
NodeMap DiscoverNodeMap(Bootstrap& bootstrap);

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_NODE_MAP_H_
