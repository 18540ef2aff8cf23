// The RMA calls of gasnetex.h: Put and Get (blocking, NB, NBI and value
// forms), NBI sync and access regions, and gex_Event_QueryLeaf, over the
// rma/ engine; and the Transport that carries the engine's AM path over
// the PSHM network.
//
// Hot path (a peer mapped here, the normal case on smp): the checks (a
// handful of compares and one thread-local load), one translation and the
// memcpy; no lock, no allocation, no event object (NB calls return
// GEX_EVENT_INVALID). The AM path takes an Operation from the free list
// for an NB call and counts NBI calls in the thread's counters or region.
#include "api/rma.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/strings/str_format.h"
#include "am/token.h"
#include "api/endpoint.h"
#include "api/event.h"
#include "api/runtime.h"
#include "api/team.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "core/endpoint_segments.h"
#include "core/router.h"
#include "rma/engine.h"
#include "rma/event.h"
#include "rma/nbi.h"

namespace gexrt::api {
namespace {

static_assert(GEX_EC_GET == rma::kEcGet && GEX_EC_PUT == rma::kEcPut &&
              GEX_EC_AM == rma::kEcAm && GEX_EC_LC == rma::kEcLc &&
              GEX_EC_RMW == rma::kEcRmw && GEX_EC_ALL == rma::kEcAll);
static_assert(sizeof(gex_RMA_Value_t) == SIZEOF_GEX_RMA_VALUE_T);
static_assert(rma::Engine::kChunk <= core::kSharedMaxPayload,
              "an AM-path chunk must fit one Long or Medium");

rma::Engine* g_engine = nullptr;

// What _gex_direct.peers points to, by job rank (lives until exit).
std::vector<_gex_DirectPeer_t>* g_direct_peers = nullptr;

// ---------------------------------------------------------------------------
// The engine's Transport over core's router and the conduit.

bool SendRequest(void* context, Rank rank, am::Category category,
                 uint8_t handler, const uint32_t* args, unsigned nargs,
                 const void* payload, size_t len, void* long_dest,
                 bool immediate) {
  // The engine checked a Long's range against the peer's segment.
  return core::Request(*static_cast<Runtime*>(context), rank, category, handler,
                       args, static_cast<uint8_t>(nargs), payload, len,
                       reinterpret_cast<uint64_t>(long_dest), nullptr,
                       immediate) == am::SendStatus::kOk;
}

void SendReply(void* context, am::Token* token, am::Category category,
               uint8_t handler, const uint32_t* args, unsigned nargs,
               const void* payload, size_t len, void* long_dest) {
  core::Reply(*static_cast<Runtime*>(context), *token, category, handler, args,
              static_cast<uint8_t>(nargs), payload, len,
              reinterpret_cast<uint64_t>(long_dest), nullptr,
              /*immediate=*/false);
}

bool ConduitPut(void* context, Rank rank, void* dest, const void* src,
                size_t len, bool immediate, rma::Counter& rc,
                rma::Counter* lc) {
  return static_cast<Runtime*>(context)->conduit->Put(rank, dest, src, len,
                                                      immediate, rc, lc);
}

bool ConduitGet(void* context, void* dest, Rank rank, const void* src,
                size_t len, bool immediate, rma::Counter& rc) {
  return static_cast<Runtime*>(context)->conduit->Get(dest, rank, src, len,
                                                      immediate, rc);
}

void WaitRound(void* context) { WaitProgress(*static_cast<Runtime*>(context)); }

// ---------------------------------------------------------------------------
// Checks.

[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void BadTm(const char* call, gex_TM_t tm) {
  RuntimeFor(call);  // Fatal before gex_Client_Init.
  FatalErrorF("%s: tm %s is not this client's team", call,
              tm == nullptr ? std::string("NULL")
                            : absl::StrFormat("%p", static_cast<void*>(tm)));
}

// The engines of endpoint indices 1 and up (gex_TM_Pair to an endpoint
// gex_EP_Create made), built at first use; they live until exit.
std::mutex g_endpoint_engines_mu;
std::array<std::atomic<rma::Engine*>, core::kMaxEndpoints> g_endpoint_engines;

// A sub-team's or pair's call, out of line: `rank` becomes the job rank,
// and a pair to another endpoint index gets that index's engine (its
// segments are the ones bound to that endpoint).
ABSL_ATTRIBUTE_NOINLINE rma::Engine& TeamEngine(const char* call, gex_TM_t tm,
                                                gex_Rank_t& rank) {
  const gex_EP_Location_t to = LocateEndpoint(call, *g_runtime, tm, rank);
  rank = to.gex_rank;
  const uint32_t ep = to.gex_ep_index;
  if (ep == 0) return *g_engine;
  if (ep >= core::kMaxEndpoints) {
    FatalErrorF(
        "%s: tm is a gex_TM_Pair to endpoint index %u, but no process has "
        "more than %u endpoints",
        call, ep, core::kMaxEndpoints);
  }
  rma::Engine* e = g_endpoint_engines[ep].load(std::memory_order_acquire);
  if (ABSL_PREDICT_TRUE(e != nullptr)) return *e;
  std::lock_guard<std::mutex> lock(g_endpoint_engines_mu);
  e = g_endpoint_engines[ep].load(std::memory_order_relaxed);
  if (e == nullptr) {
    e = g_engine->ForEndpoint(&g_runtime->endpoint_segments.view(ep), ep)
            .release();
    g_endpoint_engines[ep].store(e, std::memory_order_release);
  }
  return *e;
}

// The primordial team is one compare; anything else goes out of line.
inline rma::Engine& EngineFor(const char* call, gex_TM_t tm, gex_Rank_t& rank) {
  rma::Engine* e = g_engine;
  if (ABSL_PREDICT_FALSE(e == nullptr)) BadTm(call, tm);
  if (ABSL_PREDICT_FALSE(tm != &g_runtime->tm)) {
    return TeamEngine(call, tm, rank);
  }
  return *e;
}

[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void NullBuffer(const char* call,
                                                     const char* what,
                                                     size_t nbytes) {
  FatalErrorF("%s: %s is NULL with nbytes %zu", call, what, nbytes);
}

// The local buffer of a Put (src) or Get (dest): NULL only with nothing to
// copy (otherwise the copy below would fault with no call named). The
// remote address needs no such test: it is checked against the peer's
// segment in every build.
inline void CheckLocalBuffer(const char* call, const char* what,
                             const void* buffer, size_t nbytes) {
  if (ABSL_PREDICT_FALSE(buffer == nullptr && nbytes != 0)) {
    NullBuffer(call, what, nbytes);
  }
}

// --config=dbg: the local buffer is mapped, and it does not overlap the
// remote range where that is mapped here (this rank's own segment or a
// supernode peer's: the copy is one memcpy).
ABSL_ATTRIBUTE_NOINLINE void DebugCheckRma(const char* call, bool put,
                                           gex_Rank_t rank, const void* remote,
                                           const void* local, size_t nbytes) {
  // A range that wraps is the engine's every-build check (its message
  // says so).
  const auto l = reinterpret_cast<uintptr_t>(local);
  const auto r = reinterpret_cast<uintptr_t>(remote);
  if (nbytes == 0 || l + nbytes < l || r + nbytes < r) return;
  DebugCheckMapped(call,
                   put ? "source buffer (src)" : "destination buffer (dest)",
                   local, nbytes);
  const void* mapped = g_runtime->segments.Translate(
      rank, reinterpret_cast<uintptr_t>(remote), nbytes);
  if (mapped == nullptr) return;
  if (put) {
    DebugCheckOverlap(call, local, mapped, nbytes);
  } else {
    DebugCheckOverlap(call, mapped, local, nbytes);
  }
}

// The checks of a Put's or Get's local buffer, made before the copy.
inline void CheckPut(const char* call, gex_Rank_t rank, const void* dest,
                     const void* src, size_t nbytes) {
  CheckLocalBuffer(call, "source buffer (src)", src, nbytes);
  if constexpr (kDebugChecks)
    DebugCheckRma(call, true, rank, dest, src, nbytes);
}
inline void CheckGet(const char* call, void* dest, gex_Rank_t rank,
                     const void* src, size_t nbytes) {
  CheckLocalBuffer(call, "destination buffer (dest)", dest, nbytes);
  if constexpr (kDebugChecks) {
    DebugCheckRma(call, false, rank, src, dest, nbytes);
  }
}

inline bool IsEventPointer(gex_Event_t* lc_opt) {
  return reinterpret_cast<uintptr_t>(lc_opt) >
         reinterpret_cast<uintptr_t>(GEX_EVENT_GROUP);
}

[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void BadLcOpt(const char* call,
                                                   gex_Event_t* lc_opt,
                                                   bool nbi) {
  FatalErrorF(
      "%s: lc_opt %s is not valid here (use GEX_EVENT_NOW, GEX_EVENT_DEFER "
      "or %s)",
      call,
      lc_opt == nullptr           ? "NULL"
      : lc_opt == GEX_EVENT_GROUP ? "GEX_EVENT_GROUP"
                                  : "(an event pointer)",
      nbi ? "GEX_EVENT_GROUP" : "an event pointer");
}

// NB: NOW, DEFER or a pointer.
inline void CheckNbLcOpt(const char* call, gex_Event_t* lc_opt) {
  if (ABSL_PREDICT_FALSE(lc_opt == nullptr || lc_opt == GEX_EVENT_GROUP)) {
    BadLcOpt(call, lc_opt, false);
  }
}
// NBI: NOW, DEFER or GROUP.
inline void CheckNbiLcOpt(const char* call, gex_Event_t* lc_opt) {
  if (ABSL_PREDICT_FALSE(lc_opt == nullptr || IsEventPointer(lc_opt))) {
    BadLcOpt(call, lc_opt, true);
  }
}

inline void CheckValueSize(const char* call, size_t nbytes) {
  if (ABSL_PREDICT_FALSE(nbytes == 0 || nbytes > sizeof(gex_RMA_Value_t))) {
    FatalErrorF("%s: nbytes %zu is not between 1 and %zu", call, nbytes,
                sizeof(gex_RMA_Value_t));
  }
}

// The `nbytes` bytes of a value that are an unsigned integer of that width
// in memory.
inline unsigned char* ValueBytes(gex_RMA_Value_t* v, size_t nbytes) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return reinterpret_cast<unsigned char*>(v) + sizeof *v - nbytes;
#else
  (void)nbytes;
  return reinterpret_cast<unsigned char*>(v);
#endif
}

inline bool Immediate(gex_Flags_t flags) {
  return (flags & GEX_FLAG_IMMEDIATE) != 0;
}

// ---------------------------------------------------------------------------
// The AM-path halves, out of line.

ABSL_ATTRIBUTE_NOINLINE int PutBlockingRemote(rma::Engine& e, const char* call,
                                              gex_Rank_t rank, void* dest,
                                              const void* src, size_t nbytes,
                                              gex_Flags_t flags) {
  rma::Counter done;
  if (e.PutRemote(call, rank, dest, src, nbytes, Immediate(flags), done,
                  nullptr) == rma::Issue::kWouldBlock) {
    return 1;
  }
  e.Wait(call, done);
  return GASNET_OK;
}

ABSL_ATTRIBUTE_NOINLINE int GetBlockingRemote(rma::Engine& e, const char* call,
                                              void* dest, gex_Rank_t rank,
                                              const void* src, size_t nbytes,
                                              gex_Flags_t flags) {
  rma::Counter done;
  if (e.GetRemote(call, dest, rank, src, nbytes, Immediate(flags), done) ==
      rma::Issue::kWouldBlock) {
    return 1;
  }
  e.Wait(call, done);
  return GASNET_OK;
}

ABSL_ATTRIBUTE_NOINLINE gex_Event_t PutNbRemote(
    rma::Engine& e, const char* call, gex_Rank_t rank, void* dest,
    const void* src, size_t nbytes, gex_Event_t* lc_opt, gex_Flags_t flags) {
  rma::Operation* op = rma::Operation::Allocate();
  if (e.PutRemote(call, rank, dest, src, nbytes, Immediate(flags), op->rc,
                  &op->lc) == rma::Issue::kWouldBlock) {
    op->Release();
    return GEX_EVENT_NO_OP;
  }
  if (lc_opt == GEX_EVENT_NOW) {
    e.Wait(call, op->lc);
  } else if (IsEventPointer(lc_opt)) {
    *lc_opt = op->lc_leaf();
  }
  return op;
}

ABSL_ATTRIBUTE_NOINLINE gex_Event_t GetNbRemote(rma::Engine& e,
                                                const char* call, void* dest,
                                                gex_Rank_t rank,
                                                const void* src, size_t nbytes,
                                                gex_Flags_t flags) {
  rma::Operation* op = rma::Operation::Allocate();
  if (e.GetRemote(call, dest, rank, src, nbytes, Immediate(flags), op->rc) ==
      rma::Issue::kWouldBlock) {
    op->Release();
    return GEX_EVENT_NO_OP;
  }
  return op;
}

ABSL_ATTRIBUTE_NOINLINE int PutNbiRemote(rma::Engine& e, const char* call,
                                         gex_Rank_t rank, void* dest,
                                         const void* src, size_t nbytes,
                                         gex_Event_t* lc_opt,
                                         gex_Flags_t flags) {
  rma::Nbi& nbi = rma::Nbi::Mine();
  rma::Counter* lc = lc_opt == GEX_EVENT_GROUP ? &nbi.lc() : nullptr;
  if (e.PutRemote(call, rank, dest, src, nbytes, Immediate(flags), nbi.put(),
                  lc) == rma::Issue::kWouldBlock) {
    return 1;
  }
  return GASNET_OK;
}

ABSL_ATTRIBUTE_NOINLINE int GetNbiRemote(rma::Engine& e, const char* call,
                                         void* dest, gex_Rank_t rank,
                                         const void* src, size_t nbytes,
                                         gex_Flags_t flags) {
  if (e.GetRemote(call, dest, rank, src, nbytes, Immediate(flags),
                  rma::Nbi::Mine().get()) == rma::Issue::kWouldBlock) {
    return 1;
  }
  return GASNET_OK;
}

// The calls, shared by the plain and value forms.

inline int PutBlocking(const char* call, gex_TM_t tm, gex_Rank_t rank,
                       void* dest, const void* src, size_t nbytes,
                       gex_Flags_t flags) {
  rma::Engine& e = EngineFor(call, tm, rank);
  CheckPut(call, rank, dest, src, nbytes);
  if (ABSL_PREDICT_TRUE(e.PutDirect(call, rank, dest, src, nbytes))) {
    return GASNET_OK;
  }
  return PutBlockingRemote(e, call, rank, dest, src, nbytes, flags);
}

inline gex_Event_t PutNB(const char* call, gex_TM_t tm, gex_Rank_t rank,
                         void* dest, const void* src, size_t nbytes,
                         gex_Event_t* lc_opt, gex_Flags_t flags) {
  rma::Engine& e = EngineFor(call, tm, rank);
  CheckNbLcOpt(call, lc_opt);
  CheckPut(call, rank, dest, src, nbytes);
  if (ABSL_PREDICT_TRUE(e.PutDirect(call, rank, dest, src, nbytes))) {
    if (IsEventPointer(lc_opt)) *lc_opt = GEX_EVENT_INVALID;
    return GEX_EVENT_INVALID;
  }
  return PutNbRemote(e, call, rank, dest, src, nbytes, lc_opt, flags);
}

inline int PutNBI(const char* call, gex_TM_t tm, gex_Rank_t rank, void* dest,
                  const void* src, size_t nbytes, gex_Event_t* lc_opt,
                  gex_Flags_t flags) {
  rma::Engine& e = EngineFor(call, tm, rank);
  CheckNbiLcOpt(call, lc_opt);
  CheckPut(call, rank, dest, src, nbytes);
  if (ABSL_PREDICT_TRUE(e.PutDirect(call, rank, dest, src, nbytes))) {
    return GASNET_OK;
  }
  return PutNbiRemote(e, call, rank, dest, src, nbytes, lc_opt, flags);
}

}  // namespace

void BadEvent(const char* call, gex_Event_t e) {
  FatalErrorF(
      "%s: %p is not a live event (not an event, or one already synced "
      "and released)",
      call, static_cast<void*>(e));
}

void DebugCheckMapped(const char* call, const char* what, const void* p,
                      size_t n) {
  // mincore fails with ENOMEM for a page that is not mapped: a wild
  // pointer is named here instead of faulting in the copy. Only the first
  // and last pages: a hole in between is rare, and a vector for every page
  // of a large buffer would be an allocation per call.
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<uintptr_t>(p);
  unsigned char resident;
  for (const uintptr_t a : {first, first + n - 1}) {
    if (mincore(reinterpret_cast<void*>(a & ~(page - 1)), page, &resident) !=
            0 &&
        errno == ENOMEM) {
      FatalErrorF("%s: %s [%p, +%zu) is not mapped memory (at %p)", call, what,
                  p, n, reinterpret_cast<void*>(a));
    }
  }
}

void DebugCheckOverlap(const char* call, const void* src, const void* dst,
                       size_t n) {
  const auto s = reinterpret_cast<uintptr_t>(src);
  const auto d = reinterpret_cast<uintptr_t>(dst);
  if (s < d + n && d < s + n) {
    FatalErrorF(
        "%s: the source [%p, +%zu) and the destination [%p, +%zu) overlap "
        "(addresses in this process; the copy's result is undefined)",
        call, src, n, dst, n);
  }
}

void RmaInit(Runtime& rt) {
  rma::Engine::Options options;
  options.rank = rt.rank;
  options.size = rt.size;
  options.segments = &rt.segments.view();
  options.transport.context = &rt;
  options.transport.request = &SendRequest;
  options.transport.reply = &SendReply;
  options.transport.wait = &WaitRound;
  // The conduit's RDMA rung, where it has one and serves some rank.
  if (rt.conduit_has_peers && rt.capabilities.rdma_put) {
    options.transport.rdma_put = &ConduitPut;
  }
  if (rt.conduit_has_peers && rt.capabilities.rdma_get) {
    options.transport.rdma_get = &ConduitGet;
  }
  options.force_am = env::GetBool("GEX_RMA_FORCE_AM", false);
  options.chunk = std::min({rma::Engine::kChunk, rt.max_medium, rt.max_long});
  g_engine = new rma::Engine(options, rt.handlers);  // Lives until exit.
}

void RmaSegmentsAttached(Runtime& rt) {
  if (g_engine == nullptr) return;
  g_engine->set_conduit_segments(rt.conduit_segments);
  if (g_engine->force_am()) return;
  auto* peers = new std::vector<_gex_DirectPeer_t>(rt.size);
  for (Rank r = 0; r < rt.size; ++r) {
    const rma::SegmentEntry s = rt.segments.segment(r);
    void* local = s.size == 0 ? nullptr : s.local;
    if (local == nullptr) continue;  // Not mapped here: size stays 0.
    (*peers)[r] = _gex_DirectPeer_t{
        s.base, s.size, reinterpret_cast<uintptr_t>(local) - s.base};
  }
  delete g_direct_peers;
  g_direct_peers = peers;
  _gex_direct.peers = peers->data();
  _gex_direct.tm = &rt.tm;
  _gex_direct.size = rt.size;
}

}  // namespace gexrt::api

using gexrt::api::EngineFor;

extern "C" {

_gex_Direct_t _gex_direct = {GEX_TM_INVALID, 0, nullptr};

int _gex_RMA_PutBlocking(gex_TM_t tm, gex_Rank_t rank, void* dest,
                         const void* src, size_t nbytes, gex_Flags_t flags) {
  return gexrt::api::PutBlocking("gex_RMA_PutBlocking", tm, rank, dest, src,
                                 nbytes, flags);
}

gex_Event_t _gex_RMA_PutNB(gex_TM_t tm, gex_Rank_t rank, void* dest,
                           const void* src, size_t nbytes, gex_Event_t* lc_opt,
                           gex_Flags_t flags) {
  return gexrt::api::PutNB("gex_RMA_PutNB", tm, rank, dest, src, nbytes, lc_opt,
                           flags);
}

int _gex_RMA_PutNBI(gex_TM_t tm, gex_Rank_t rank, void* dest, const void* src,
                    size_t nbytes, gex_Event_t* lc_opt, gex_Flags_t flags) {
  return gexrt::api::PutNBI("gex_RMA_PutNBI", tm, rank, dest, src, nbytes,
                            lc_opt, flags);
}

int _gex_RMA_GetBlocking(gex_TM_t tm, void* dest, gex_Rank_t rank, void* src,
                         size_t nbytes, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_RMA_GetBlocking";
  gexrt::rma::Engine& e = EngineFor(kCall, tm, rank);
  gexrt::api::CheckGet(kCall, dest, rank, src, nbytes);
  if (ABSL_PREDICT_TRUE(e.GetDirect(kCall, dest, rank, src, nbytes))) {
    return GASNET_OK;
  }
  return gexrt::api::GetBlockingRemote(e, kCall, dest, rank, src, nbytes,
                                       flags);
}

gex_Event_t _gex_RMA_GetNB(gex_TM_t tm, void* dest, gex_Rank_t rank, void* src,
                           size_t nbytes, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_RMA_GetNB";
  gexrt::rma::Engine& e = EngineFor(kCall, tm, rank);
  gexrt::api::CheckGet(kCall, dest, rank, src, nbytes);
  if (ABSL_PREDICT_TRUE(e.GetDirect(kCall, dest, rank, src, nbytes))) {
    return GEX_EVENT_INVALID;
  }
  return gexrt::api::GetNbRemote(e, kCall, dest, rank, src, nbytes, flags);
}

int _gex_RMA_GetNBI(gex_TM_t tm, void* dest, gex_Rank_t rank, void* src,
                    size_t nbytes, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_RMA_GetNBI";
  gexrt::rma::Engine& e = EngineFor(kCall, tm, rank);
  gexrt::api::CheckGet(kCall, dest, rank, src, nbytes);
  if (ABSL_PREDICT_TRUE(e.GetDirect(kCall, dest, rank, src, nbytes))) {
    return GASNET_OK;
  }
  return gexrt::api::GetNbiRemote(e, kCall, dest, rank, src, nbytes, flags);
}

gex_RMA_Value_t gex_RMA_GetBlockingVal(gex_TM_t tm, gex_Rank_t rank, void* src,
                                       size_t nbytes, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_RMA_GetBlockingVal";
  gexrt::rma::Engine& e = EngineFor(kCall, tm, rank);
  gexrt::api::CheckValueSize(kCall, nbytes);
  gex_RMA_Value_t value = 0;
  unsigned char* dest = gexrt::api::ValueBytes(&value, nbytes);
  if (!e.GetDirect(kCall, dest, rank, src, nbytes)) {
    // No "no op" result to give: IMMEDIATE does not apply.
    gexrt::api::GetBlockingRemote(e, kCall, dest, rank, src, nbytes,
                                  flags & ~GEX_FLAG_IMMEDIATE);
  }
  return value;
}

int gex_RMA_PutBlockingVal(gex_TM_t tm, gex_Rank_t rank, void* dest,
                           gex_RMA_Value_t value, size_t nbytes,
                           gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_RMA_PutBlockingVal";
  gexrt::api::CheckValueSize(kCall, nbytes);
  return gexrt::api::PutBlocking(kCall, tm, rank, dest,
                                 gexrt::api::ValueBytes(&value, nbytes), nbytes,
                                 flags);
}

// The value is copied before these return (every path copies the source
// at injection), so the stack copy may go.
int gex_RMA_PutNBIVal(gex_TM_t tm, gex_Rank_t rank, void* dest,
                      gex_RMA_Value_t value, size_t nbytes, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_RMA_PutNBIVal";
  gexrt::api::CheckValueSize(kCall, nbytes);
  return gexrt::api::PutNBI(kCall, tm, rank, dest,
                            gexrt::api::ValueBytes(&value, nbytes), nbytes,
                            GEX_EVENT_NOW, flags);
}

gex_Event_t gex_RMA_PutNBVal(gex_TM_t tm, gex_Rank_t rank, void* dest,
                             gex_RMA_Value_t value, size_t nbytes,
                             gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_RMA_PutNBVal";
  gexrt::api::CheckValueSize(kCall, nbytes);
  return gexrt::api::PutNB(kCall, tm, rank, dest,
                           gexrt::api::ValueBytes(&value, nbytes), nbytes,
                           GEX_EVENT_NOW, flags);
}

int gex_NBI_Test(gex_EC_t event_mask, gex_Flags_t) {
  static constexpr char kCall[] = "gex_NBI_Test";
  gexrt::api::Runtime& rt = gexrt::api::RuntimeFor(kCall);
  if (ABSL_PREDICT_FALSE((event_mask & ~GEX_EC_ALL) != 0)) {
    gexrt::FatalErrorF("%s: event_mask 0x%x has bits that are not GEX_EC_*",
                       kCall, event_mask);
  }
  gexrt::rma::Nbi& nbi = gexrt::rma::Nbi::Mine();
  if (nbi.Done(event_mask)) return GASNET_OK;
  gexrt::api::Progress(rt);
  return nbi.Done(event_mask) ? GASNET_OK : GASNET_ERR_NOT_READY;
}

void gex_NBI_Wait(gex_EC_t event_mask, gex_Flags_t) {
  static constexpr char kCall[] = "gex_NBI_Wait";
  gexrt::api::Runtime& rt = gexrt::api::RuntimeFor(kCall);
  if (ABSL_PREDICT_FALSE((event_mask & ~GEX_EC_ALL) != 0)) {
    gexrt::FatalErrorF("%s: event_mask 0x%x has bits that are not GEX_EC_*",
                       kCall, event_mask);
  }
  gexrt::rma::Nbi& nbi = gexrt::rma::Nbi::Mine();
  if (nbi.Done(event_mask)) return;
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler (it may block)", kCall);
  }
  while (!nbi.Done(event_mask)) gexrt::api::WaitProgress(rt);
}

void gex_NBI_BeginAccessRegion(gex_Flags_t) {
  static constexpr char kCall[] = "gex_NBI_BeginAccessRegion";
  gexrt::api::RuntimeFor(kCall);
  gexrt::rma::Nbi::Mine().Begin(kCall);
}

gex_Event_t gex_NBI_EndAccessRegion(gex_Flags_t) {
  static constexpr char kCall[] = "gex_NBI_EndAccessRegion";
  gexrt::api::RuntimeFor(kCall);
  gexrt::rma::Operation* op = gexrt::rma::Nbi::Mine().End(kCall);
  return op != nullptr ? op : GEX_EVENT_INVALID;
}

gex_Event_t gex_Event_QueryLeaf(gex_Event_t root, gex_EC_t event_category) {
  static constexpr char kCall[] = "gex_Event_QueryLeaf";
  if (root == GEX_EVENT_INVALID) return GEX_EVENT_INVALID;
  if (root == GEX_EVENT_NO_OP) gexrt::api::BadEvent(kCall, root);
  gexrt::api::CheckLiveEvent(kCall, root);
  if (!gexrt::rma::Operation::Is(root)) {
    gexrt::FatalErrorF(
        "%s: root %p is not the event of an RMA call or an access region "
        "(only those have leaves)",
        kCall, static_cast<void*>(root));
  }
  if (event_category != GEX_EC_LC) {
    gexrt::FatalErrorF(
        "%s: event_category 0x%x: only GEX_EC_LC (0x%x) leaves exist", kCall,
        event_category, GEX_EC_LC);
  }
  return static_cast<gexrt::rma::Operation*>(root)->lc_leaf();
}

}  // extern "C"
