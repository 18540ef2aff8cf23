#include "bootstrap/supernode_groups.h"

#include <algorithm>
#include <utility>

namespace gexrt {

SupernodeGroups SupernodeGroups::Split(uint32_t members, uint32_t my_index,
                                       uint32_t requested) {
  SupernodeGroups g;
  g.members = members;
  g.group_size = requested == 0 || requested > members ? members : requested;
  g.groups = (members + g.group_size - 1) / g.group_size;
  g.group = my_index / g.group_size;
  g.first = g.group * g.group_size;
  g.size = std::min(g.group_size, members - g.first);
  g.leader = my_index == g.first;
  return g;
}

SupernodeGroups SupernodeGroups::Find(Bootstrap& bootstrap, uint32_t members,
                                      uint32_t my_index, uint32_t requested) {
  SupernodeGroups g = Split(members, my_index, requested);
  g.SetLeaders(RanksWithFlag(bootstrap, g.leader), bootstrap.rank());
  return g;
}

void SupernodeGroups::SetLeaders(std::vector<Rank> all, Rank me) {
  leaders = std::move(all);
  my_leader = -1;
  for (size_t i = 0; i < leaders.size(); ++i) {
    if (leaders[i] == me) my_leader = static_cast<int>(i);
  }
  rounds = 0;
  while ((size_t{1} << rounds) < leaders.size()) ++rounds;
}

}  // namespace gexrt
