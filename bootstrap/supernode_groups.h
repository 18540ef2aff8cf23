// A supernode's ranks split into groups for a two-level dissemination, as
// the barrier and the exit protocol's reduce both run it: within a group
// through shared memory, then among the groups' leaders (each group's
// first member) in ceil(log2 L) rounds of messages, leader i telling
// leader i + 2^r (mod L) in round r.
//
//   SupernodeGroups g = SupernodeGroups::Find(bootstrap, members, my_index,
//                                             requested);  // collective
//   if (g.leader) for (r = 0; r < g.rounds; ++r) Send(g.RoundPeer(r), ...);
//
// `requested` is the wanted group size (GEX_BARRIER_GROUP,
// GEX_EXIT_GROUP): 0, or more than the supernode's members, is one group
// per supernode; smaller groups let a test on one host reach the
// between-leaders path.
#ifndef GEX_BOOTSTRAP_SUPERNODE_GROUPS_H_
#define GEX_BOOTSTRAP_SUPERNODE_GROUPS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace gexrt {

struct SupernodeGroups {
  uint32_t members = 1;     // In the supernode.
  uint32_t group_size = 1;  // Per group (the last group may have fewer).
  uint32_t groups = 1;      // In the supernode.
  uint32_t group = 0;       // This rank's group.
  uint32_t first = 0;       // Its first member's (its leader's) index.
  uint32_t size = 1;        // Members of this rank's group.
  bool leader = true;       // This rank leads its group.
  // Every group's leader, job-wide, in rank order (SetLeaders).
  std::vector<Rank> leaders;
  int my_leader = -1;   // This rank's index in `leaders`, when a leader.
  uint32_t rounds = 0;  // ceil(log2(leaders.size())).

  // The split of a supernode of `members` ranks for the rank at
  // `my_index`; no leaders yet.
  static SupernodeGroups Split(uint32_t members, uint32_t my_index,
                               uint32_t requested);
  // Split, then every rank's leader flag exchanged over `bootstrap`
  // (collective over the job).
  static SupernodeGroups Find(Bootstrap& bootstrap, uint32_t members,
                              uint32_t my_index, uint32_t requested);

  // Sets `leaders` and what follows from them for rank `me`.
  void SetLeaders(std::vector<Rank> all, Rank me);
  // The leader this leader tells in round `round`.
  Rank RoundPeer(uint32_t round) const {
    return leaders[(static_cast<size_t>(my_leader) + (size_t{1} << round)) %
                   leaders.size()];
  }
};

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_SUPERNODE_GROUPS_H_
