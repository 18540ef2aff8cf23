// The GASNet-1 calls of gasnet.h over the same runtime: init/attach with a
// handler table, node and segment queries, the named split-phase barrier,
// wait modes, and the bridge to the GASNet-EX objects.
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "am/token.h"
#include "api/client_init.h"
#include "api/runtime.h"
#include "base/fatal.h"
#include "bootstrap/current_call.h"
#include "gasnet.h"

namespace gexrt::api {
namespace {

gex_Client_t g_client = nullptr;
gex_EP_t g_ep = nullptr;
gex_TM_t g_tm = nullptr;
gex_Segment_t g_segment = nullptr;

// The pending gasnet_barrier_notify's event, for its wait, and the last
// completed barrier's outcome (gasnet_barrier_result).
struct LegacyBarrier {
  gex_Event_t pending = nullptr;  // Between notify and wait.
  Barrier::Value last;
};
LegacyBarrier g_barrier;

gex_Event_t PendingBarrier(const char* call) {
  if (g_barrier.pending == nullptr) {
    FatalErrorF("%s: no barrier was notified (gasnet_barrier_notify)", call);
  }
  return g_barrier.pending;
}

int FinishBarrier(Runtime& rt, int id, int flags, const Barrier::Value& v) {
  g_barrier.pending = nullptr;
  g_barrier.last = v;
  (void)rt;
  return Barrier::WaitResult(v, id, flags);
}

}  // namespace

int LegacyInit(InitOptions options, int* argc, char*** argv) {
  const ScopedCurrentCall current("gasnet_init");
  if (g_runtime != nullptr) {
    return ReportError("gasnet_init", GASNET_ERR_RESOURCE,
                       "already initialised");
  }
  return ClientInit(std::move(options), &g_client, &g_ep, &g_tm,
                    "GASNet-1 client", argc, argv, GEX_FLAG_USES_GASNET1);
}

}  // namespace gexrt::api

using gexrt::api::g_barrier;
using gexrt::api::Runtime;
using gexrt::api::RuntimeFor;

extern "C" {

int gasnet_attach(gasnet_handlerentry_t* table, int numentries,
                  uintptr_t segsize, uintptr_t minheapoffset) {
  static constexpr char kCall[] = "gasnet_attach";
  const gexrt::ScopedCurrentCall current(kCall);
  Runtime& rt = RuntimeFor(kCall);
  (void)minheapoffset;
  if (numentries < 0 || (table == nullptr && numentries > 0)) {
    return gexrt::api::ReportError(kCall, GASNET_ERR_BAD_ARG,
                                   "bad handler table");
  }
  if (segsize % GASNET_PAGESIZE != 0) {
    return gexrt::api::ReportError(
        kCall, GASNET_ERR_BAD_ARG,
        absl::StrFormat("segsize %u is not a multiple of GASNET_PAGESIZE (%d)",
                        segsize, GASNET_PAGESIZE));
  }
  std::vector<gexrt::am::Entry> entries(numentries);
  for (int i = 0; i < numentries; ++i) {
    entries[i].index = table[i].index;
    entries[i].fn = table[i].fnptr;
    entries[i].flags = gexrt::am::kCategoryFlags | gexrt::am::kKindFlags;
    entries[i].nargs = gexrt::am::kAnyArgs;
  }
  const absl::Status s =
      rt.handlers.Register(entries.data(), entries.size(), false);
  if (!s.ok()) {
    return gexrt::api::ReportError(kCall, GASNET_ERR_BAD_ARG,
                                   std::string(s.message()));
  }
  for (int i = 0; i < numentries; ++i) table[i].index = entries[i].index;
  return gex_Segment_Attach(&gexrt::api::g_segment, &rt.tm, segsize);
}

gasnet_node_t gasnet_mynode(void) { return RuntimeFor("gasnet_mynode").rank; }
gasnet_node_t gasnet_nodes(void) { return RuntimeFor("gasnet_nodes").size; }

int gasnet_getSegmentInfo(gasnet_seginfo_t* seginfo_table, int numentries) {
  static constexpr char kCall[] = "gasnet_getSegmentInfo";
  Runtime& rt = RuntimeFor(kCall);
  if (!rt.attached) {
    return gexrt::api::ReportError(kCall, GASNET_ERR_NOT_INIT,
                                   "no segment attached (gasnet_attach)");
  }
  if (numentries < 0 || (seginfo_table == nullptr && numentries > 0)) {
    return gexrt::api::ReportError(kCall, GASNET_ERR_BAD_ARG, "bad table");
  }
  for (int r = 0; r < numentries && static_cast<gexrt::Rank>(r) < rt.size;
       ++r) {
    const auto s = rt.segments.segment(r);
    seginfo_table[r].addr =
        s.size == 0 ? nullptr : reinterpret_cast<void*>(s.base);
    seginfo_table[r].size = s.size;
  }
  return GASNET_OK;
}

uintptr_t gasnet_getMaxLocalSegmentSize(void) {
  return RuntimeFor("gasnet_getMaxLocalSegmentSize")
      .supernode->max_local_segment_size();
}
uintptr_t gasnet_getMaxGlobalSegmentSize(void) {
  return RuntimeFor("gasnet_getMaxGlobalSegmentSize")
      .supernode->max_global_segment_size();
}

void gasnet_QueryGexObjects(gex_Client_t* client_p, gex_EP_t* ep_p,
                            gex_TM_t* tm_p, gex_Segment_t* segment_p) {
  Runtime& rt = RuntimeFor("gasnet_QueryGexObjects");
  if (client_p != nullptr) *client_p = &rt.client;
  if (ep_p != nullptr) *ep_p = &rt.ep;
  if (tm_p != nullptr) *tm_p = &rt.tm;
  if (segment_p != nullptr) *segment_p = rt.attached ? &rt.segment : nullptr;
}

char* gasnet_getenv(const char* name) { return std::getenv(name); }

int gasnet_getNodeInfo(gasnet_nodeinfo_t* nodeinfo_table, int numentries) {
  static constexpr char kCall[] = "gasnet_getNodeInfo";
  Runtime& rt = RuntimeFor(kCall);
  if (numentries < 0 || (nodeinfo_table == nullptr && numentries > 0)) {
    return gexrt::api::ReportError(kCall, GASNET_ERR_BAD_ARG, "bad table");
  }
  const gexrt::NodeMap& map = *rt.map;
  for (int r = 0; r < numentries && static_cast<gexrt::Rank>(r) < rt.size;
       ++r) {
    const gexrt::RankPlace& place = map.place(static_cast<gexrt::Rank>(r));
    nodeinfo_table[r].host = place.host;
    nodeinfo_table[r].supernode = place.supernode;
    const auto s = rt.segments.segment(static_cast<gexrt::Rank>(r));
    nodeinfo_table[r].offset =
        s.local == nullptr ? 0
                           : static_cast<intptr_t>(
                                 reinterpret_cast<uintptr_t>(s.local) - s.base);
  }
  return GASNET_OK;
}

gex_TM_t _gasnet_legacy_tm(void) { return &RuntimeFor("gasnet AM call").tm; }

int gasnet_AMGetMsgSource(gasnet_token_t token, gasnet_node_t* srcindex) {
  gex_Token_Info_t info;
  gex_Token_Info(token, &info, GEX_TI_SRCRANK);
  if (srcindex != nullptr) *srcindex = info.gex_srcrank;
  return GASNET_OK;
}

void gasnet_barrier_notify(int id, int flags) {
  static constexpr char kCall[] = "gasnet_barrier_notify";
  Runtime& rt = RuntimeFor(kCall);
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  if (g_barrier.pending != nullptr) {
    gexrt::FatalErrorF(
        "%s: the previous barrier was notified but not waited "
        "for (gasnet_barrier_wait)",
        kCall);
  }
  g_barrier.pending =
      rt.barrier.Notify(id, (flags & GASNET_BARRIERFLAG_ANONYMOUS) != 0,
                        (flags & GASNET_BARRIERFLAG_MISMATCH) != 0);
}

int gasnet_barrier_wait(int id, int flags) {
  static constexpr char kCall[] = "gasnet_barrier_wait";
  const gexrt::ScopedCurrentCall current(kCall);
  Runtime& rt = RuntimeFor(kCall);
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  gexrt::api::Barrier::Value v;
  const gex_Event_t pending = gexrt::api::PendingBarrier(kCall);
  while (!rt.barrier.Finish(pending, &v)) gexrt::api::WaitProgress(rt);
  return gexrt::api::FinishBarrier(rt, id, flags, v);
}

int gasnet_barrier_try(int id, int flags) {
  static constexpr char kCall[] = "gasnet_barrier_try";
  Runtime& rt = RuntimeFor(kCall);
  gexrt::api::Progress(rt);
  gexrt::api::Barrier::Value v;
  if (!rt.barrier.Finish(gexrt::api::PendingBarrier(kCall), &v)) {
    return GASNET_ERR_NOT_READY;
  }
  return gexrt::api::FinishBarrier(rt, id, flags, v);
}

int gasnet_barrier(int id, int flags) {
  gasnet_barrier_notify(id, flags);
  return gasnet_barrier_wait(id, flags);
}

int gasnet_barrier_result(int* id) {
  if (id != nullptr) *id = g_barrier.last.id;
  if (g_barrier.last.mismatch) return GASNET_ERR_BARRIER_MISMATCH;
  return g_barrier.last.anonymous ? GASNET_BARRIERFLAG_ANONYMOUS : GASNET_OK;
}

int gasnet_set_waitmode(int wait_mode) {
  Runtime& rt = RuntimeFor("gasnet_set_waitmode");
  switch (wait_mode) {
    case GASNET_WAIT_SPIN:
      rt.polite = rt.map->MyHostIsOversubscribed();
      rt.waits.set_always_yield(rt.polite);
      return GASNET_OK;
    case GASNET_WAIT_BLOCK:
    case GASNET_WAIT_SPINBLOCK:
      rt.polite = true;
      rt.waits.set_always_yield(true);
      return GASNET_OK;
    default:
      return gexrt::api::ReportError(
          "gasnet_set_waitmode", GASNET_ERR_BAD_ARG,
          absl::StrFormat("unknown wait mode %d", wait_mode));
  }
}

}  // extern "C"
