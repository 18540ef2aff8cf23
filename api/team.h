// Teams other than the primordial one: gex_TM_Split and gex_TM_Create make
// sub-teams (a member list in team order, this rank's place, its own
// collectives state), gex_TM_Pair makes endpoint pairs, gex_TM_Destroy ends
// a sub-team.
//
// Validity: the primordial team stays `&rt.tm` (one compare on the AM and
// RMA fast paths). Any other gex_TM_t is looked up in a registry of live
// teams (out of line, on the slow path only), so a garbage or destroyed
// handle is a fatal error naming the call instead of a wild read. A
// destroyed team's object is kept (its lists freed) and never reused, so
// its address never names a live team again.
//
// Team identity across ranks: every sub-team has a 32-bit id that its
// members agree on, carried by each collective message (0: the primordial
// team). A rank keeps a counter of ids handed out; a new team takes the
// largest counter among its members (exchanged by the construction's
// all-gather over the parent), and every member then moves its counter
// past it. So ids grow along each rank's history, and no two live teams of
// one rank share one. Construction ends with a barrier over the parent, so
// a member's first message on the new team arrives after every member has
// registered it.
#ifndef GEX_API_TEAM_H_
#define GEX_API_TEAM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "api/barrier.h"
#include "api/coll.h"
#include "api/runtime.h"
#include "gasnetex.h"

namespace gexrt::api {

struct Team : gex_TM_opaque {
  static constexpr uint64_t kLive = 0x6765782d7465616dULL;  // "gex-team"
  static constexpr uint64_t kDead = 0x646561642d746d21ULL;
  uint64_t magic = kLive;
  bool pair = false;  // gex_TM_Pair: ranks are job ranks, no collectives.
  gex_EP_Index_t remote_ep_index = 0;
  uint32_t id = 0;
  Rank rank = 0;  // Mine, in the team.
  Rank size = 0;
  std::vector<Rank> members;  // Job ranks, in team order.
  Collectives* coll = nullptr;
  // The scratch space the client gave (unused; returned by Destroy).
  void* scratch = nullptr;
  size_t scratch_size = 0;
  // gasnet_coll_barrier_notify/_wait on this team.
  gex_Event_t legacy_pending = nullptr;
};

// The live sub-team or pair `tm` (not the primordial team), or a fatal
// error naming `call`.
Team& LiveTeam(const char* call, gex_TM_t tm);
// For a point-to-point call on `tm`, which is not the primordial team: the
// job rank of team rank `rank` (a pair's ranks are job ranks already), or a
// fatal error naming `call` (not a live team, or rank not in it).
Rank SubteamJobRank(const char* call, gex_TM_t tm, gex_Rank_t rank);

// Collectives on teams: the team's size and my rank (primordial or not),
// checked (fatal naming `call` for a pair or a dead team).
struct TeamView {
  Team* team;  // Null for the primordial team.
  Rank rank;
  Rank size;
};
TeamView CollTeam(const char* call, gex_TM_t tm);
// The collectives object of a team (the job's for the primordial team).
Collectives& TeamColl(const TeamView& v);

// A barrier on a sub-team (a reduction of Barrier::Value over its
// collectives); TeamBarrierFinish is true, with the outcome, once done
// (the event is then released).
gex_Event_t TeamBarrierNotify(Team& t, const Barrier::Value& v);
// That barrier as a collective call, for any team's Collectives.
Collectives::Call BarrierCall(const Barrier::Value& v);
bool TeamBarrierFinish(Team& t, gex_Event_t e, Barrier::Value* out);
// Progress for every sub-team's collectives (registered at init by
// CollInit; one atomic load while no sub-team was ever made).
void ProgressTeams(void*);
// Blocking barrier over any team (primordial or sub-team).
void TeamBarrierBlocking(const TeamView& v);

}  // namespace gexrt::api

#endif  // GEX_API_TEAM_H_
