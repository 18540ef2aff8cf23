// gex_Client_Init and the object, segment and system queries of the C API;
// events, handler-safe locks, error names and gasnet_exit.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "am/token.h"
#include "api/client_init.h"
#include "api/coll.h"
#include "api/endpoint.h"
#include "api/event.h"
#include "api/ratomic.h"
#include "api/rma.h"
#include "api/runtime.h"
#include "api/team.h"
#include "api/vis.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "bootstrap/current_call.h"
#include "core/exit.h"
#include "core/runtime.h"
#include "exit/graceful_exit.h"

namespace gexrt::api {

Runtime& RuntimeFor(const char* call) {
  Runtime* rt = g_runtime;
  if (ABSL_PREDICT_FALSE(rt == nullptr)) {
    FatalErrorF("%s: called before gex_Client_Init (or gasnet_init)", call);
  }
  return *rt;
}

// For calls that take only the primordial team: a tm is valid exactly when
// it is that one (one compare). A NULL or stale tm would otherwise be
// dereferenced or silently taken for the job. Calls that also take
// sub-teams and pairs look those up in api/team.h's registry.
[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void BadTm(const char* call, gex_TM_t tm) {
  FatalErrorF("%s: tm %s is not this client's team", call,
              tm == nullptr ? std::string("NULL")
                            : absl::StrFormat("%p", static_cast<void*>(tm)));
}

Runtime& RuntimeForTm(const char* call, gex_TM_t tm) {
  Runtime& rt = RuntimeFor(call);
  if (ABSL_PREDICT_FALSE(tm != &rt.tm)) BadTm(call, tm);
  return rt;
}

int ReportError(const char* call, int code, const std::string& message) {
  if (g_verbose_errors.load(std::memory_order_relaxed)) {
    Warning(
        absl::StrFormat("%s: %s (%s)", call, message, gasnet_ErrorName(code)));
  }
  return code;
}

int ClientInit(InitOptions options, gex_Client_t* client_p, gex_EP_t* ep_p,
               gex_TM_t* tm_p, const char* client_name, int* argc, char*** argv,
               gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_Client_Init";
  const ScopedCurrentCall current(kCall);
  if (g_runtime != nullptr) {
    return ReportError(kCall, GASNET_ERR_RESOURCE,
                       "this process already has a client (one per process)");
  }
  if (client_p == nullptr || ep_p == nullptr || tm_p == nullptr) {
    return ReportError(kCall, GASNET_ERR_BAD_ARG,
                       "client_p, ep_p and tm_p must not be NULL");
  }
  auto rt = std::make_unique<Runtime>();
  core::InitOptions core_options;
  core_options.conduit = std::move(options.conduit);
  core_options.thread_safe = options.thread_safe;
  core_options.argc = argc;
  core_options.argv = argv;
  core::Init(*rt, std::move(core_options), kCall);
  g_runtime = rt.get();
  rt->barrier.Init(rt.get());
  // Registers the RMA engine's internal handlers: before any message can
  // be dispatched (nothing polls before gex_Client_Init returns).
  RmaInit(*rt);
  // VIS's handlers (fixed indices 124-127), for the same reason.
  VisInit(*rt);
  // The remote atomics' (fixed indices 120-121), likewise.
  RatomicInit(*rt);
  CollInit(*rt);
  rt->barrier.AttachShared();  // Collective: the supernode's barrier flags.
  core::ExitInit(*rt);  // Collective: the exit cells; signals and on_exit.

  for (Rank r : rt->map->my_host_members()) rt->host_ranks.push_back(r);
  for (Rank r : rt->map->my_supernode_members()) rt->nbrhd_ranks.push_back(r);
  rt->host_index = rt->map->my_place().host_index;
  rt->nbrhd_index = rt->map->my_place().supernode_index;

  rt->client.name = client_name != nullptr ? client_name : "";
  rt->client.flags = flags;
  rt->segment.client = &rt->client;
  rt->ep.client = &rt->client;
  rt->tm.client = &rt->client;
  rt->tm.ep = &rt->ep;
  *client_p = &rt->client;
  *ep_p = &rt->ep;
  *tm_p = &rt->tm;
  rt.release();  // Lives until the process ends.
  return GASNET_OK;
}

}  // namespace gexrt::api

using gexrt::ScopedCurrentCall;
using gexrt::api::g_runtime;
using gexrt::api::ReportError;
using gexrt::api::Runtime;
using gexrt::api::RuntimeFor;

// ---------------------------------------------------------------------------
// Object queries.

extern "C" {

const char* gex_Client_QueryName(gex_Client_t client) {
  return client->name.c_str();
}
gex_Flags_t gex_Client_QueryFlags(gex_Client_t client) { return client->flags; }
void* gex_Client_QueryCData(gex_Client_t client) {
  return const_cast<void*>(client->cdata);
}
void gex_Client_SetCData(gex_Client_t client, const void* cdata) {
  client->cdata = cdata;
}

int gex_Segment_Attach(gex_Segment_t* segment_p, gex_TM_t tm,
                       uintptr_t length) {
  static constexpr char kCall[] = "gex_Segment_Attach";
  const ScopedCurrentCall current(kCall);
  Runtime& rt = RuntimeFor(kCall);
  if (segment_p == nullptr || tm != &rt.tm) {
    return ReportError(kCall, GASNET_ERR_BAD_ARG,
                       "segment_p is NULL or tm is not this client's team");
  }
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  if (rt.attached) {
    return ReportError(kCall, GASNET_ERR_RESOURCE,
                       "the endpoint already has a segment");
  }
  const absl::Status s = gexrt::core::AttachSegment(rt, length);
  if (!s.ok()) {
    return ReportError(kCall, GASNET_ERR_RESOURCE, std::string(s.message()));
  }
  rt.attached = true;
  const gexrt::rma::SegmentEntry mine = rt.segments.segment(rt.rank);
  rt.segment.addr = mine.size == 0 ? nullptr : mine.local;
  rt.segment.size = mine.size;
  rt.ep.segment = &rt.segment;
  RmaSegmentsAttached(rt);
  *segment_p = &rt.segment;
  return GASNET_OK;
}

gex_Client_t gex_Segment_QueryClient(gex_Segment_t s) { return s->client; }
gex_Flags_t gex_Segment_QueryFlags(gex_Segment_t s) { return s->flags; }
void* gex_Segment_QueryCData(gex_Segment_t s) {
  return const_cast<void*>(s->cdata);
}
void gex_Segment_SetCData(gex_Segment_t s, const void* cdata) {
  s->cdata = cdata;
}
void* gex_Segment_QueryAddr(gex_Segment_t s) { return s->addr; }
uintptr_t gex_Segment_QuerySize(gex_Segment_t s) { return s->size; }

gex_Client_t gex_EP_QueryClient(gex_EP_t ep) { return ep->client; }
gex_Flags_t gex_EP_QueryFlags(gex_EP_t ep) { return ep->flags; }
void* gex_EP_QueryCData(gex_EP_t ep) { return const_cast<void*>(ep->cdata); }
void gex_EP_SetCData(gex_EP_t ep, const void* cdata) { ep->cdata = cdata; }
gex_Segment_t gex_EP_QuerySegment(gex_EP_t ep) { return ep->segment; }
gex_EP_Index_t gex_EP_QueryIndex(gex_EP_t ep) {
  return gexrt::api::EndpointIndex("gex_EP_QueryIndex", ep);
}

gex_Event_t gex_EP_QueryBoundSegmentNB(gex_TM_t tm, gex_Rank_t rank,
                                       void** owneraddr_p, void** localaddr_p,
                                       uintptr_t* size_p, gex_Flags_t) {
  static constexpr char kCall[] = "gex_EP_QueryBoundSegmentNB";
  Runtime& rt = RuntimeFor(kCall);
  if (tm != &rt.tm) {
    // A sub-team's or a gex_TM_Pair's endpoint (api/segment.cc).
    if (!gexrt::api::BoundSegment(kCall, rt, tm, rank, owneraddr_p, localaddr_p,
                                  size_p)) {
      const gex_EP_Location_t loc =
          gexrt::api::LocateEndpoint(kCall, rt, tm, rank);
      gexrt::FatalErrorF(
          "%s: endpoint %u of rank %u has no bound segment published to "
          "this process",
          kCall, static_cast<unsigned>(loc.gex_ep_index), loc.gex_rank);
    }
    return GEX_EVENT_INVALID;
  }
  if (rank >= rt.size) {
    gexrt::FatalErrorF("%s: rank %u is not in the team (size %u)", kCall, rank,
                       rt.size);
  }
  if (!rt.attached) {
    gexrt::FatalErrorF("%s: no segment is attached yet (gex_Segment_Attach)",
                       kCall);
  }
  const gexrt::rma::SegmentEntry s = rt.segments.segment(rank);
  if (owneraddr_p != nullptr) {
    *owneraddr_p = s.size == 0 ? nullptr : reinterpret_cast<void*>(s.base);
  }
  if (localaddr_p != nullptr) {
    // Null for a segment not mapped here (a rank off this supernode).
    *localaddr_p = s.size == 0 ? nullptr : s.local;
  }
  if (size_p != nullptr) *size_p = s.size;
  return GEX_EVENT_INVALID;
}

// The team object behind `tm` (the primordial team or a live sub-team or
// pair; api/team.h), or a fatal error naming `call`.
static gex_TM_opaque& TmObject(const char* call, gex_TM_t tm) {
  Runtime& rt = RuntimeFor(call);
  if (ABSL_PREDICT_TRUE(tm == &rt.tm)) return rt.tm;
  return gexrt::api::LiveTeam(call, tm);
}

gex_Client_t gex_TM_QueryClient(gex_TM_t tm) {
  return TmObject("gex_TM_QueryClient", tm).client;
}
gex_EP_t gex_TM_QueryEP(gex_TM_t tm) {
  return TmObject("gex_TM_QueryEP", tm).ep;
}
gex_Flags_t gex_TM_QueryFlags(gex_TM_t tm) {
  return TmObject("gex_TM_QueryFlags", tm).flags;
}
void* gex_TM_QueryCData(gex_TM_t tm) {
  return const_cast<void*>(TmObject("gex_TM_QueryCData", tm).cdata);
}
void gex_TM_SetCData(gex_TM_t tm, const void* cdata) {
  TmObject("gex_TM_SetCData", tm).cdata = cdata;
}
gex_Rank_t gex_TM_QueryRank(gex_TM_t tm) {
  static constexpr char kCall[] = "gex_TM_QueryRank";
  Runtime& rt = RuntimeFor(kCall);
  if (tm == &rt.tm) return rt.rank;
  return gexrt::api::LiveTeam(kCall, tm).rank;
}
gex_Rank_t gex_TM_QuerySize(gex_TM_t tm) {
  static constexpr char kCall[] = "gex_TM_QuerySize";
  Runtime& rt = RuntimeFor(kCall);
  if (tm == &rt.tm) return rt.size;
  return gexrt::api::LiveTeam(kCall, tm).size;
}
gex_Rank_t gex_TM_TranslateRankToJobrank(gex_TM_t tm, gex_Rank_t rank) {
  static constexpr char kCall[] = "gex_TM_TranslateRankToJobrank";
  Runtime& rt = RuntimeFor(kCall);
  if (tm != &rt.tm) {
    const gexrt::api::Team& t = gexrt::api::LiveTeam(kCall, tm);
    if (!t.pair) {
      if (rank >= t.size) {
        gexrt::FatalErrorF("%s: rank %u is not in the team (size %u)", kCall,
                           rank, t.size);
      }
      return t.members[rank];
    }
  }
  if (rank >= rt.size) {
    gexrt::FatalErrorF("%s: rank %u is not in the team (size %u)", kCall, rank,
                       rt.size);
  }
  return rank;  // The primordial team (and a pair's ranks) are job ranks.
}
gex_Rank_t gex_TM_TranslateJobrankToRank(gex_TM_t tm, gex_Rank_t jobrank) {
  static constexpr char kCall[] = "gex_TM_TranslateJobrankToRank";
  Runtime& rt = RuntimeFor(kCall);
  if (tm != &rt.tm) {
    const gexrt::api::Team& t = gexrt::api::LiveTeam(kCall, tm);
    if (!t.pair) {
      for (gex_Rank_t r = 0; r < t.size; ++r) {
        if (t.members[r] == jobrank) return r;
      }
      return GEX_RANK_INVALID;
    }
  }
  return jobrank < rt.size ? jobrank : GEX_RANK_INVALID;
}

// ---------------------------------------------------------------------------
// The job.

gex_Rank_t gex_System_QueryJobRank(void) {
  return RuntimeFor("gex_System_QueryJobRank").rank;
}
gex_Rank_t gex_System_QueryJobSize(void) {
  return RuntimeFor("gex_System_QueryJobSize").size;
}

static_assert(sizeof(gex_RankInfo_t) == sizeof(gex_Rank_t));

void gex_System_QueryHostInfo(gex_RankInfo_t** info_p, gex_Rank_t* info_count_p,
                              gex_Rank_t* my_info_index_p) {
  Runtime& rt = RuntimeFor("gex_System_QueryHostInfo");
  if (info_p != nullptr) {
    *info_p = reinterpret_cast<gex_RankInfo_t*>(rt.host_ranks.data());
  }
  if (info_count_p != nullptr) *info_count_p = rt.host_ranks.size();
  if (my_info_index_p != nullptr) *my_info_index_p = rt.host_index;
}

void gex_System_QueryNbrhdInfo(gex_RankInfo_t** info_p,
                               gex_Rank_t* info_count_p,
                               gex_Rank_t* my_info_index_p) {
  Runtime& rt = RuntimeFor("gex_System_QueryNbrhdInfo");
  if (info_p != nullptr) {
    *info_p = reinterpret_cast<gex_RankInfo_t*>(rt.nbrhd_ranks.data());
  }
  if (info_count_p != nullptr) *info_count_p = rt.nbrhd_ranks.size();
  if (my_info_index_p != nullptr) *my_info_index_p = rt.nbrhd_index;
}

void gex_System_QueryMyPosition(gex_Rank_t* nbrhd_set_size_p,
                                gex_Rank_t* nbrhd_set_rank_p,
                                gex_Rank_t* host_set_size_p,
                                gex_Rank_t* host_set_rank_p) {
  Runtime& rt = RuntimeFor("gex_System_QueryMyPosition");
  const gexrt::RankPlace& me = rt.map->my_place();
  if (nbrhd_set_size_p != nullptr) {
    *nbrhd_set_size_p = rt.map->supernode_count();
  }
  if (nbrhd_set_rank_p != nullptr) *nbrhd_set_rank_p = me.supernode;
  if (host_set_size_p != nullptr) *host_set_size_p = rt.map->host_count();
  if (host_set_rank_p != nullptr) *host_set_rank_p = me.host;
}

int gex_System_QueryHiddenAMConcurrencyLevel(void) { return 0; }
uint64_t gex_System_QueryMaxThreads(void) {
  Runtime& rt = RuntimeFor("gex_System_QueryMaxThreads");
  return rt.thread_safe ? 65535 : 1;
}

void gex_System_SetVerboseErrors(int enable) {
  // Also before gex_Client_Init, so that its own errors can be silenced.
  gexrt::api::g_verbose_errors.store(enable != 0, std::memory_order_relaxed);
}
int gex_System_GetVerboseErrors(void) {
  return gexrt::api::g_verbose_errors.load(std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------
// Progress and events.

int gasnet_AMPoll(void) {
  gexrt::api::Progress(RuntimeFor("gasnet_AMPoll"));
  return GASNET_OK;
}

void _gex_PollForWait(void) {
  gexrt::api::WaitProgress(RuntimeFor("GASNET_BLOCKUNTIL"));
}

static bool EventDone(const char* call, gex_Event_t e) {
  if (e == GEX_EVENT_INVALID || e == GEX_EVENT_NO_OP) return true;
  gexrt::api::CheckLiveEvent(call, e);
  return e->test(e);
}

int gex_Event_Test(gex_Event_t event) {
  Runtime& rt = RuntimeFor("gex_Event_Test");
  if (EventDone("gex_Event_Test", event)) return GASNET_OK;
  Progress(rt);
  return EventDone("gex_Event_Test", event) ? GASNET_OK : GASNET_ERR_NOT_READY;
}

void gex_Event_Wait(gex_Event_t event) {
  const ScopedCurrentCall current("gex_Event_Wait");
  Runtime& rt = RuntimeFor("gex_Event_Wait");
  if (event != GEX_EVENT_INVALID && event != GEX_EVENT_NO_OP &&
      gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalError(
        "gex_Event_Wait: called from an AM handler (it may block)");
  }
  while (!EventDone("gex_Event_Wait", event)) gexrt::api::WaitProgress(rt);
}

// The array forms; `call` names the C API call for messages.
//
// A root event retires its GEX_EC_LC leaf with it (rma/event.h), and one
// array may hold both (GASNet-EX spec, Events: the lc_opt of a PutNB may
// point into the very array its root goes to; entries completed are set
// to GEX_EVENT_INVALID, GEX_EVENT_INVALID entries are ignored). So a sweep
// settles the leaf entries first, and a root found complete while some
// leaf entry is still pending (its local completion came in between)
// clears the entries of its own leaf before it is retired: no entry is
// left holding a retired handle, whatever the order of the array. No lock,
// no allocation; the extra scan runs only in that race.
// Returns how many entries it completed; *left: how many remain.
static size_t SweepEvents(const char* call, gex_Event_t* events, size_t n,
                          size_t* left) {
  using gexrt::rma::Operation;
  size_t done = 0;
  size_t pending_leaves = 0;
  for (size_t i = 0; i < n; ++i) {
    const gex_Event_t e = events[i];
    if (e == GEX_EVENT_INVALID || e == GEX_EVENT_NO_OP) continue;
    gexrt::api::CheckLiveEvent(call, e);
    if (!Operation::IsLeaf(e)) continue;
    if (e->test(e)) {
      events[i] = GEX_EVENT_INVALID;
      ++done;
    } else {
      ++pending_leaves;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const gex_Event_t e = events[i];
    if (e == GEX_EVENT_INVALID) continue;
    if (e != GEX_EVENT_NO_OP) {
      if (Operation::IsLeaf(e)) continue;  // Pending: its root is too.
      if (pending_leaves != 0 && Operation::Is(e)) {
        auto* op = static_cast<Operation*>(e);
        if (!op->Done()) continue;
        for (size_t j = 0; j < n; ++j) {
          if (events[j] == op->lc_leaf()) {
            events[j] = GEX_EVENT_INVALID;
            ++done;
            --pending_leaves;
          }
        }
      }
    }
    if (EventDone(call, e)) {
      events[i] = GEX_EVENT_INVALID;
      ++done;
    }
  }
  *left = 0;
  for (size_t i = 0; i < n; ++i) *left += events[i] != GEX_EVENT_INVALID;
  return done;
}

static int TestSome(const char* call, gex_Event_t* events, size_t n) {
  Progress(RuntimeFor(call));
  size_t left;
  const size_t done = SweepEvents(call, events, n, &left);
  return done != 0 || left == 0 ? GASNET_OK : GASNET_ERR_NOT_READY;
}

static int TestAll(const char* call, gex_Event_t* events, size_t n) {
  Progress(RuntimeFor(call));
  size_t left;
  SweepEvents(call, events, n, &left);
  return left == 0 ? GASNET_OK : GASNET_ERR_NOT_READY;
}

int gex_Event_TestSome(gex_Event_t* events, size_t n, gex_Flags_t) {
  return TestSome("gex_Event_TestSome", events, n);
}

int gex_Event_TestAll(gex_Event_t* events, size_t n, gex_Flags_t) {
  return TestAll("gex_Event_TestAll", events, n);
}

void gex_Event_WaitSome(gex_Event_t* events, size_t n, gex_Flags_t) {
  static constexpr char kCall[] = "gex_Event_WaitSome";
  const ScopedCurrentCall current(kCall);
  Runtime& rt = RuntimeFor(kCall);
  while (TestSome(kCall, events, n) != GASNET_OK) {
    gexrt::api::WaitProgress(rt);
  }
}

void gex_Event_WaitAll(gex_Event_t* events, size_t n, gex_Flags_t) {
  static constexpr char kCall[] = "gex_Event_WaitAll";
  const ScopedCurrentCall current(kCall);
  Runtime& rt = RuntimeFor(kCall);
  while (TestAll(kCall, events, n) != GASNET_OK) {
    gexrt::api::WaitProgress(rt);
  }
}

// ---------------------------------------------------------------------------
// Barrier over the job team.

gex_Event_t gex_Coll_BarrierNB(gex_TM_t tm, gex_Flags_t) {
  static constexpr char kCall[] = "gex_Coll_BarrierNB";
  Runtime& rt = RuntimeFor(kCall);
  const gexrt::api::TeamView v = gexrt::api::CollTeam(kCall, tm);
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  if (v.team != nullptr) {
    return gexrt::api::TeamBarrierNotify(*v.team, gexrt::api::Barrier::Value{});
  }
  return rt.barrier.Notify(0, /*anonymous=*/true, /*mismatch=*/false);
}

void gex_Coll_BarrierBlocking(gex_TM_t tm, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_Coll_BarrierBlocking";
  const ScopedCurrentCall current(kCall);
  RuntimeFor(kCall);
  const gexrt::api::TeamView v = gexrt::api::CollTeam(kCall, tm);
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  gexrt::api::TeamBarrierBlocking(v);
  (void)flags;
}

// ---------------------------------------------------------------------------
// Handler-safe locks.

void gex_HSL_Init(gex_HSL_t* hsl) {
  if (int e = pthread_mutex_init(&hsl->gex_mutex, nullptr); e != 0) {
    gexrt::FatalErrorF("gex_HSL_Init: %s", std::strerror(e));
  }
}
void gex_HSL_Destroy(gex_HSL_t* hsl) {
  if (int e = pthread_mutex_destroy(&hsl->gex_mutex); e != 0) {
    gexrt::FatalErrorF("gex_HSL_Destroy: %s (is it held?)", std::strerror(e));
  }
}
void gex_HSL_Lock(gex_HSL_t* hsl) {
  if (int e = pthread_mutex_lock(&hsl->gex_mutex); e != 0) {
    gexrt::FatalErrorF("gex_HSL_Lock: %s", std::strerror(e));
  }
}
void gex_HSL_Unlock(gex_HSL_t* hsl) {
  if (int e = pthread_mutex_unlock(&hsl->gex_mutex); e != 0) {
    gexrt::FatalErrorF("gex_HSL_Unlock: %s (not held by this thread?)",
                       std::strerror(e));
  }
}
int gex_HSL_Trylock(gex_HSL_t* hsl) {
  return pthread_mutex_trylock(&hsl->gex_mutex) == 0 ? GASNET_OK
                                                     : GASNET_ERR_NOT_READY;
}

// ---------------------------------------------------------------------------
// Errors and exit.

const char* gasnet_ErrorName(int errval) {
  switch (errval) {
    case GASNET_OK:
      return "GASNET_OK";
    case GASNET_ERR_NOT_INIT:
      return "GASNET_ERR_NOT_INIT";
    case GASNET_ERR_RESOURCE:
      return "GASNET_ERR_RESOURCE";
    case GASNET_ERR_BAD_ARG:
      return "GASNET_ERR_BAD_ARG";
    case GASNET_ERR_NOT_READY:
      return "GASNET_ERR_NOT_READY";
    case GASNET_ERR_BARRIER_MISMATCH:
      return "GASNET_ERR_BARRIER_MISMATCH";
    default:
      return "*unknown*";
  }
}

const char* gasnet_ErrorDesc(int errval) {
  switch (errval) {
    case GASNET_OK:
      return "no error";
    case GASNET_ERR_NOT_INIT:
      return "GASNet has not been initialised";
    case GASNET_ERR_RESOURCE:
      return "a resource (memory, handler indices, a segment) ran out or is "
             "already in use";
    case GASNET_ERR_BAD_ARG:
      return "an argument is invalid";
    case GASNET_ERR_NOT_READY:
      return "not complete yet";
    case GASNET_ERR_BARRIER_MISMATCH:
      return "barrier names did not match across ranks";
    default:
      return "no such GASNet error code";
  }
}

void gasnet_exit(int exitcode) {
  // The whole job ends with `exitcode` (exit/graceful_exit.h): collective
  // when every rank calls it, else the others are asked to follow.
  // (Never returns: the name stays for the launcher's questions.)
  const gexrt::ScopedCurrentCall current("gasnet_exit");
  gexrt::exit::ExitJob(exitcode);
}

}  // extern "C"
