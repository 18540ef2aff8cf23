// Sub-teams and TM pairs (api/team.h): construction, destruction, lookup,
// the team barrier over a team's collectives, and the gex_TM_* entry
// points that are not object queries.
#include "api/team.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/strings/str_format.h"
#include "am/token.h"
#include "api/coll.h"
#include "api/runtime.h"
#include "base/fatal.h"
#include "bootstrap/current_call.h"
#include "core/router.h"

namespace gexrt::api {
namespace {

// Collectives objects of sub-teams, live or idle (a destroyed team's,
// kept for the next team). Never freed, so the progress function can walk
// them without a lock: slots are published once, with release order.
constexpr size_t kMaxTeamColls = 4096;
std::array<std::atomic<Collectives*>, kMaxTeamColls> g_team_colls{};
std::atomic<size_t> g_team_coll_count{0};

struct Registry {
  std::mutex mu;
  std::unordered_map<const gex_TM_opaque*, Team*> live;
  std::unordered_map<uint32_t, Collectives*> by_id;
  std::vector<Collectives*> idle;
  std::map<std::pair<const gex_EP_opaque*, gex_EP_Index_t>, Team*> pairs;
  uint32_t next_id = 1;  // 0 is the job team.
};
Registry& Reg() {
  static Registry* r = new Registry;  // Lives until exit.
  return *r;
}

}  // namespace

void ProgressTeams(void*) {
  const size_t n = g_team_coll_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    Collectives* c = g_team_colls[i].load(std::memory_order_acquire);
    if (c != nullptr) c->Progress();
  }
}

namespace {

[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void NotATeam(const char* call,
                                                   gex_TM_t tm) {
  RuntimeFor(call);
  if (tm == nullptr) {
    FatalErrorF("%s: tm NULL is not this client's team (GEX_TM_INVALID)", call);
  }
  FatalErrorF(
      "%s: tm is not this client's team (%p is not this client's team: "
      "neither the primordial team nor a live sub-team or pair; never "
      "created, or already destroyed with gex_TM_Destroy)",
      call, static_cast<void*>(tm));
}

Team* Lookup(gex_TM_t tm) {
  Registry& reg = Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  auto it = reg.live.find(tm);
  return it == reg.live.end() ? nullptr : it->second;
}

// Blocks, making progress, until `e` (an event of this runtime) is done.
void WaitEvent(Runtime& rt, gex_Event_t e) {
  if (e == GEX_EVENT_INVALID) return;
  while (!e->test(e)) WaitProgress(rt);
}

// The barrier value's merge, as a GEX_OP_USER operator over int32[3]
// (flags, id): see Barrier::Merge.
constexpr int32_t kAnonymousBit = 1;
constexpr int32_t kMismatchBit = 2;
void PackValue(const Barrier::Value& v, int32_t out[3]) {
  out[0] = (v.anonymous ? kAnonymousBit : 0) | (v.mismatch ? kMismatchBit : 0);
  out[1] = v.id;
  out[2] = 0;
}
Barrier::Value UnpackValue(const int32_t in[3]) {
  Barrier::Value v;
  v.anonymous = (in[0] & kAnonymousBit) != 0;
  v.mismatch = (in[0] & kMismatchBit) != 0;
  v.id = in[1];
  return v;
}
void MergeOp(const void* in, void* inout, size_t count, const void*) {
  for (size_t i = 0; i < count; ++i) {
    int32_t a[3], b[3];
    std::memcpy(a, static_cast<const int32_t*>(in) + 3 * i, sizeof a);
    std::memcpy(b, static_cast<int32_t*>(inout) + 3 * i, sizeof b);
    PackValue(Barrier::Merge(UnpackValue(a), UnpackValue(b)), b);
    std::memcpy(static_cast<int32_t*>(inout) + 3 * i, b, sizeof b);
  }
}

// Every rank of the team `v` contributes `k` words; returns all of them,
// rank by rank (a ReduceToAll sum in which each rank fills only its own
// slots).
std::vector<uint64_t> AllGather(Runtime& rt, const TeamView& v,
                                const uint64_t* mine, size_t k) {
  std::vector<uint64_t> all(size_t{v.size} * k, 0);
  std::memcpy(&all[size_t{v.rank} * k], mine, k * sizeof(uint64_t));
  Collectives::Call call;
  call.kind = Collectives::Kind::kReduceToAll;
  call.dst = all.data();
  call.src = all.data();
  call.nbytes = all.size() * sizeof(uint64_t);
  call.dt = GEX_DT_U64;
  call.dt_sz = sizeof(uint64_t);
  call.dt_cnt = all.size();
  call.op = GEX_OP_ADD;
  WaitEvent(rt, TeamColl(v).Start(call));
  return all;
}

// Makes, registers and returns a sub-team (under no lock; takes the
// registry's).
Team* MakeTeam(Runtime& rt, gex_EP_t ep, std::vector<Rank> members, Rank me,
               uint32_t id, void* scratch, size_t scratch_size) {
  Team* t = new Team;
  t->client = &rt.client;
  t->ep = ep;
  t->id = id;
  t->rank = me;
  t->size = static_cast<Rank>(members.size());
  t->members = members;
  t->scratch = scratch;
  t->scratch_size = scratch_size;
  Registry& reg = Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  Collectives* c;
  if (!reg.idle.empty()) {
    c = reg.idle.back();
    reg.idle.pop_back();
  } else {
    const size_t slot = g_team_coll_count.load(std::memory_order_relaxed);
    if (slot == kMaxTeamColls) {
      FatalErrorF("teams: more than %zu sub-teams live at once", kMaxTeamColls);
    }
    c = new Collectives;
    g_team_colls[slot].store(c, std::memory_order_release);
    g_team_coll_count.store(slot + 1, std::memory_order_release);
  }
  c->InitTeam(&rt, id, std::move(members), me);
  t->coll = c;
  reg.by_id[id] = c;
  reg.live[t] = t;
  return t;
}

// This rank's next team id, to contribute to a construction.
uint64_t NextId() {
  Registry& reg = Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  return reg.next_id;
}
void IdTaken(uint32_t id) {
  Registry& reg = Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  if (reg.next_id <= id) reg.next_id = id + 1;
}

// The scratch-size queries (GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED, and the
// deprecated _MIN). The team collectives here keep their own buffers and
// never touch the scratch a client grants (it is handed back by
// gex_TM_Destroy), but the specification has a caller that will join a
// team get a positive size, single-valued over the team: a page, and a
// cache line as the minimum. A caller that will join none gets 0. The
// query makes no team, writes nothing and needs no communication.
constexpr gex_Flags_t kSizeQuery =
    GEX_FLAG_TM_SCRATCH_SIZE_MIN | GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED;
constexpr size_t kScratchRecommended = 4096;
constexpr size_t kScratchMin = 64;

// The answer to a size query in `flags` by a caller that joins a team
// (`joins`); both flags at once are a fatal error naming `call`.
size_t ScratchSize(const char* call, gex_Flags_t flags, bool joins) {
  if ((flags & kSizeQuery) == kSizeQuery) {
    FatalErrorF(
        "%s: GEX_FLAG_TM_SCRATCH_SIZE_MIN and "
        "GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED are mutually exclusive",
        call);
  }
  if (!joins) return 0;
  return (flags & GEX_FLAG_TM_SCRATCH_SIZE_MIN) != 0 ? kScratchMin
                                                     : kScratchRecommended;
}

void CheckNotInHandler(const char* call) {
  if (ABSL_PREDICT_FALSE(am::HandlerContext::InHandler())) {
    FatalErrorF("%s: called from an AM handler", call);
  }
}

// The job rank of `v`'s team rank `r`.
Rank ViewJobRank(const TeamView& v, Rank r) {
  return v.team == nullptr ? r : v.team->members[r];
}

}  // namespace

Collectives* FindTeamColl(uint32_t id) {
  Registry& reg = Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  auto it = reg.by_id.find(id);
  return it == reg.by_id.end() ? nullptr : it->second;
}

Team& LiveTeam(const char* call, gex_TM_t tm) {
  Team* t = Lookup(tm);
  if (ABSL_PREDICT_FALSE(t == nullptr)) NotATeam(call, tm);
  return *t;
}

Rank SubteamJobRank(const char* call, gex_TM_t tm, gex_Rank_t rank) {
  Team& t = LiveTeam(call, tm);
  if (t.pair) {
    if (t.remote_ep_index != 0) {
      FatalErrorF(
          "%s: a gex_TM_Pair to endpoint index %u: only the primordial "
          "endpoint (index 0) takes this call (the endpoints gex_EP_Create "
          "makes have GEX_EP_CAPABILITY_RMA only: Put and Get)",
          call, t.remote_ep_index);
    }
    return rank;  // A job rank; the caller checks it against the job.
  }
  if (ABSL_PREDICT_FALSE(rank >= t.size)) {
    FatalErrorF("%s: rank %u is not in the team (size %u)", call, rank, t.size);
  }
  return t.members[rank];
}

TeamView CollTeam(const char* call, gex_TM_t tm) {
  Runtime& rt = RuntimeFor(call);
  if (ABSL_PREDICT_TRUE(tm == &rt.tm))
    return TeamView{nullptr, rt.rank, rt.size};
  Team& t = LiveTeam(call, tm);
  if (t.pair) {
    FatalErrorF(
        "%s: tm %p is a gex_TM_Pair, which takes no collectives (use a "
        "team from gex_TM_Split or gex_TM_Create)",
        call, static_cast<void*>(tm));
  }
  return TeamView{&t, t.rank, t.size};
}

Collectives& TeamColl(const TeamView& v) {
  return v.team == nullptr ? JobColl() : *v.team->coll;
}

gex_Event_t TeamBarrierNotify(Team& t, const Barrier::Value& v) {
  return t.coll->Start(BarrierCall(v));
}

Collectives::Call BarrierCall(const Barrier::Value& v) {
  Collectives::Call call;
  call.kind = Collectives::Kind::kReduceToAll;
  call.barrier = true;
  PackValue(v, call.barrier_value);
  call.nbytes = sizeof call.barrier_value;
  call.dt = GEX_DT_USER;
  call.dt_sz = sizeof call.barrier_value;
  call.dt_cnt = 1;
  call.op = GEX_OP_USER;
  call.user_op = &MergeOp;
  return call;
}

bool TeamBarrierFinish(Team&, gex_Event_t e, Barrier::Value* out) {
  int32_t raw[3];
  if (!Collectives::FinishBarrier(e, raw)) return false;
  *out = UnpackValue(raw);
  // As Barrier::Finish: this rank's last barrier message leaves before
  // the client may compute without polling.
  core::FlushSends(*g_runtime);
  return true;
}

void TeamBarrierBlocking(const TeamView& v) {
  Runtime& rt = *g_runtime;
  Barrier::Value result;
  if (v.team == nullptr) {
    const gex_Event_t e = rt.barrier.Notify(0, true, false);
    while (!rt.barrier.Finish(e, &result)) WaitProgress(rt);
    return;
  }
  const gex_Event_t e = TeamBarrierNotify(*v.team, Barrier::Value{});
  while (!TeamBarrierFinish(*v.team, e, &result)) WaitProgress(rt);
}

}  // namespace gexrt::api

using gexrt::Rank;
using gexrt::api::Runtime;
using gexrt::api::Team;
using gexrt::api::TeamView;

extern "C" {

size_t gex_TM_Split(gex_TM_t* new_tm_p, gex_TM_t parent_tm, int color, int key,
                    void* scratch_addr, size_t scratch_size,
                    gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_TM_Split";
  const gexrt::ScopedCurrentCall current(kCall);
  const TeamView parent = gexrt::api::CollTeam(kCall, parent_tm);
  // A caller with NULL new_tm_p (or, our extension, a negative colour such
  // as GEX_TM_NO_COLOR) takes part in the collective but joins no team.
  const bool member = new_tm_p != nullptr && color >= 0;
  if (flags & gexrt::api::kSizeQuery) {
    // Collective over parent_tm, but no team made and nothing written.
    return gexrt::api::ScratchSize(kCall, flags, member);
  }
  gexrt::api::CheckNotInHandler(kCall);
  Runtime& rt = *gexrt::api::g_runtime;
  const uint64_t mine[3] = {
      static_cast<uint64_t>(static_cast<int64_t>(member ? color : -1)),
      static_cast<uint64_t>(static_cast<int64_t>(key)), gexrt::api::NextId()};
  const std::vector<uint64_t> all = gexrt::api::AllGather(rt, parent, mine, 3);
  if (new_tm_p != nullptr) *new_tm_p = GEX_TM_INVALID;
  if (member) {
    // The parent ranks of my colour, by key then parent rank.
    std::vector<Rank> order;
    uint64_t id = 0;
    for (Rank r = 0; r < parent.size; ++r) {
      if (all[3 * r] == mine[0]) {
        order.push_back(r);
        id = std::max(id, all[3 * r + 2]);
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](Rank a, Rank b) {
      return static_cast<int64_t>(all[3 * a + 1]) <
             static_cast<int64_t>(all[3 * b + 1]);
    });
    std::vector<Rank> members;
    Rank me = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i] == parent.rank) me = static_cast<Rank>(i);
      members.push_back(gexrt::api::ViewJobRank(parent, order[i]));
    }
    gexrt::api::IdTaken(static_cast<uint32_t>(id));
    *new_tm_p = gexrt::api::MakeTeam(rt, parent_tm->ep, std::move(members), me,
                                     static_cast<uint32_t>(id), scratch_addr,
                                     scratch_size);
  }
  // Every member has registered the new teams before any member uses one.
  gexrt::api::TeamBarrierBlocking(parent);
  return member ? scratch_size : 0;
}

size_t gex_TM_Create(gex_TM_t* new_tms, size_t num_new_tms, gex_TM_t parent_tm,
                     gex_EP_Location_t* args, size_t numargs,
                     gex_Addr_t* scratch_addrs, size_t scratch_size,
                     gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_TM_Create";
  const gexrt::ScopedCurrentCall current(kCall);
  const TeamView parent = gexrt::api::CollTeam(kCall, parent_tm);
  if (flags & gexrt::api::kSizeQuery) {
    // A caller naming members will join a team; one naming none will not.
    return gexrt::api::ScratchSize(kCall, flags, numargs != 0);
  }
  gexrt::api::CheckNotInHandler(kCall);
  Runtime& rt = *gexrt::api::g_runtime;
  if (num_new_tms > 1) {
    gexrt::FatalErrorF("%s: num_new_tms %zu: at most one team per call", kCall,
                       num_new_tms);
  }
  if (numargs != 0 && (num_new_tms != 1 || new_tms == nullptr)) {
    gexrt::FatalErrorF(
        "%s: %zu members given but no place for the team (new_tms NULL or "
        "num_new_tms 0)",
        kCall, numargs);
  }
  if (numargs != 0 && args == nullptr) {
    gexrt::FatalErrorF("%s: args is NULL with numargs %zu", kCall, numargs);
  }
  const bool jobranks = (flags & GEX_FLAG_RANK_IS_JOBRANK) != 0;
  // The members as parent ranks, checked; a digest of the list, which
  // every member must have given identically.
  std::vector<Rank> parent_ranks;
  uint64_t digest = 1469598103934665603ULL;
  bool self = false;
  for (size_t i = 0; i < numargs; ++i) {
    if (args[i].gex_ep_index != 0) {
      gexrt::FatalErrorF(
          "%s: args[%zu] names endpoint index %u: only primordial endpoints "
          "(index 0) can be team members",
          kCall, i, args[i].gex_ep_index);
    }
    Rank pr = args[i].gex_rank;
    if (jobranks && parent.team != nullptr) {
      const auto& m = parent.team->members;
      const auto it = std::find(m.begin(), m.end(), pr);
      if (it == m.end()) {
        gexrt::FatalErrorF("%s: args[%zu]: job rank %u is not in the parent",
                           kCall, i, pr);
      }
      pr = static_cast<Rank>(it - m.begin());
    }
    if (pr >= parent.size) {
      gexrt::FatalErrorF(
          "%s: args[%zu]: rank %u is not in the parent (size %u)", kCall, i, pr,
          parent.size);
    }
    if (std::find(parent_ranks.begin(), parent_ranks.end(), pr) !=
        parent_ranks.end()) {
      gexrt::FatalErrorF("%s: args[%zu]: rank %u appears twice", kCall, i, pr);
    }
    if (pr == parent.rank) self = true;
    parent_ranks.push_back(pr);
    digest = (digest ^ pr) * 1099511628211ULL;
  }
  if (numargs != 0 && !self) {
    gexrt::FatalErrorF(
        "%s: the calling rank (%u in the parent) is not among "
        "the %zu members it names",
        kCall, parent.rank, numargs);
  }
  const uint64_t mine[2] = {numargs == 0 ? 0 : digest, gexrt::api::NextId()};
  const std::vector<uint64_t> all = gexrt::api::AllGather(rt, parent, mine, 2);
  if (numargs != 0) {
    uint64_t id = 0;
    std::vector<Rank> members;
    Rank me = 0;
    for (size_t i = 0; i < parent_ranks.size(); ++i) {
      const Rank pr = parent_ranks[i];
      if (all[2 * pr] != digest) {
        gexrt::FatalErrorF(
            "%s: parent rank %u, a member here, gave a different member list",
            kCall, pr);
      }
      id = std::max(id, all[2 * pr + 1]);
      if (pr == parent.rank) me = static_cast<Rank>(i);
      members.push_back(gexrt::api::ViewJobRank(parent, pr));
    }
    gexrt::api::IdTaken(static_cast<uint32_t>(id));
    void* scratch = scratch_addrs != nullptr ? scratch_addrs[0] : nullptr;
    new_tms[0] =
        gexrt::api::MakeTeam(rt, parent_tm->ep, std::move(members), me,
                             static_cast<uint32_t>(id), scratch, scratch_size);
  } else if (num_new_tms == 1 && new_tms != nullptr) {
    new_tms[0] = GEX_TM_INVALID;
  }
  gexrt::api::TeamBarrierBlocking(parent);
  return numargs != 0 ? scratch_size : 0;
}

int gex_TM_Destroy(gex_TM_t tm, gex_Memvec_t* scratch_p, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_TM_Destroy";
  const gexrt::ScopedCurrentCall current(kCall);
  Runtime& rt = gexrt::api::RuntimeFor(kCall);
  if (tm == &rt.tm) {
    gexrt::FatalErrorF("%s: the primordial team cannot be destroyed", kCall);
  }
  Team& t = gexrt::api::LiveTeam(kCall, tm);
  if (t.pair) {
    gexrt::FatalErrorF("%s: tm %p is a gex_TM_Pair (pairs are not destroyed)",
                       kCall, static_cast<void*>(tm));
  }
  gexrt::api::CheckNotInHandler(kCall);
  // Collective: after this, no member sends on the team (all its
  // collectives are complete everywhere).
  if ((flags & GEX_FLAG_GLOBALLY_QUIESCED) == 0) {
    gexrt::api::TeamBarrierBlocking(TeamView{&t, t.rank, t.size});
  }
  gexrt::api::Registry& reg = gexrt::api::Reg();
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.live.erase(&t);
    reg.by_id.erase(t.id);
    reg.idle.push_back(t.coll);
  }
  t.magic = Team::kDead;
  t.coll = nullptr;
  std::vector<Rank>().swap(t.members);
  // The object stays (never reused), so the handle stays invalid.
  if (scratch_p != nullptr && t.scratch != nullptr) {
    scratch_p->gex_addr = t.scratch;
    scratch_p->gex_len = t.scratch_size;
    return 1;
  }
  return 0;
}

gex_TM_t gex_TM_Pair(gex_EP_t local_ep, gex_EP_Index_t remote_ep_index) {
  static constexpr char kCall[] = "gex_TM_Pair";
  Runtime& rt = gexrt::api::RuntimeFor(kCall);
  if (local_ep == nullptr || local_ep->client != &rt.client) {
    gexrt::FatalErrorF("%s: local_ep %p is not an endpoint of this client",
                       kCall, static_cast<void*>(local_ep));
  }
  gexrt::api::Registry& reg = gexrt::api::Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  Team*& t = reg.pairs[{local_ep, remote_ep_index}];
  if (t == nullptr) {
    t = new Team;
    t->client = &rt.client;
    t->ep = local_ep;
    t->pair = true;
    t->remote_ep_index = remote_ep_index;
    t->rank = rt.rank;
    t->size = rt.size;
    reg.live[t] = t;
  }
  return t;
}

}  // extern "C"
