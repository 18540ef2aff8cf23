// The remote atomics of gasnet_ratomic.h: atomic domains and the typed
// gex_AD_Op{NB,NBI,Blocking}_<T> calls, over rma/atomic.h's CPU
// implementation.
//
// gasnet_ratomic.h's calls are inline and do the direct path themselves for
// integer types and the opcodes the CPU has (no locality flag, not a debug
// build); the rest comes here (_gex_AD_Op*): every check, and the same two
// ways. Two ways to a target, chosen per operation:
//   direct  the target's segment is mapped here (this rank's own, or a
//           supernode peer's through PSHM): rma::AtomicApply on the mapped
//           address, done when the call returns (NB: GEX_EVENT_INVALID);
//   AM      any other target, or every target with GEX_RMA_FORCE_AM=1: a
//           Short Request (kRequestIndex) carrying the opcode, type,
//           target address, operands, and where the result and the
//           completion counter live here; the target's handler applies the
//           operation with the same CPU atomics (so both ways are atomic
//           against each other) and a Short Reply (kReplyIndex) brings the
//           old value back, written to result_p before the counter
//           completes. It goes through core::Request, so a supernode peer's
//           request rides PSHM and anyone else's the conduit.
//
// A third way, chosen per domain at gex_AD_Create: a conduit whose network
// performs atomics (core::Conduit::AtomicOps) takes every operation of a
// domain whose type and opcodes it covers, supernode peers' and this
// rank's included (a NIC atomic is not atomic against a CPU one, so a
// domain never mixes the two), through Conduit::Atomic. It is chosen only
// where the conduit has peers and the segment is attached, and never with
// GEX_RMA_FORCE_AM=1; the conduit may have a setting of its own that keeps
// every domain generic (ucx: GASNET_UCX_OFFLOAD_ATOMICS=0).
//
// Internal handler indices 120-123 are reserved for remote atomics (120
// request, 121 reply, 122-123 spare), registered by RatomicInit from
// gex_Client_Init on every rank (as VIS's are), so that gex_AD_Create
// needs no synchronisation: a domain over any team may be used at once.
#include "api/ratomic.h"

#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "am/handler_table.h"
#include "am/token.h"
#include "api/event.h"
#include "api/runtime.h"
#include "api/team.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "core/router.h"
#include "gasnet_ratomic.h"
#include "rma/atomic.h"
#include "rma/event.h"
#include "rma/nbi.h"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

static_assert(_GEX_AD_KEY > (GEX_DT_I32 | GEX_DT_U32 | GEX_DT_I64 | GEX_DT_U64 |
                             GEX_DT_FLT | GEX_DT_DBL));
static_assert(GEX_DT_I32 == gexrt::rma::kDtI32 &&
              GEX_DT_U32 == gexrt::rma::kDtU32 &&
              GEX_DT_I64 == gexrt::rma::kDtI64 &&
              GEX_DT_U64 == gexrt::rma::kDtU64 &&
              GEX_DT_FLT == gexrt::rma::kDtFlt &&
              GEX_DT_DBL == gexrt::rma::kDtDbl);
static_assert(
    GEX_OP_ADD == gexrt::rma::kOpAdd && GEX_OP_MULT == gexrt::rma::kOpMult &&
    GEX_OP_MIN == gexrt::rma::kOpMin && GEX_OP_MAX == gexrt::rma::kOpMax &&
    GEX_OP_SUB == gexrt::rma::kOpSub && GEX_OP_INC == gexrt::rma::kOpInc &&
    GEX_OP_DEC == gexrt::rma::kOpDec && GEX_OP_AND == gexrt::rma::kOpAnd &&
    GEX_OP_OR == gexrt::rma::kOpOr && GEX_OP_XOR == gexrt::rma::kOpXor &&
    GEX_OP_SET == gexrt::rma::kOpSet && GEX_OP_CAS == gexrt::rma::kOpCas &&
    GEX_OP_GET == gexrt::rma::kOpGet && GEX_OP_SWAP == gexrt::rma::kOpSwap &&
    GEX_OP_FCAS == gexrt::rma::kOpFcas && GEX_OP_FADD == gexrt::rma::kOpFadd &&
    GEX_OP_FXOR == (gexrt::rma::kOpXor << gexrt::rma::kFetchShift));

struct gex_AD_opaque {
  // Read by gasnet_ratomic.h's inline path: must come first.
  _gex_AD_Head_t head = {0, 0};
  uint32_t magic = 0;
  gex_TM_t tm = nullptr;
  gex_DT_t dt = 0;
  gex_OP_t ops = 0;
  gex_Flags_t flags = 0;
  const void* cdata = nullptr;
  // GEX_RMA_FORCE_AM=1: every operation over Active Messages.
  bool force_am = false;
  // Over a sub-team (gex_TM_Split/Create): tgt_rank is translated to a job
  // rank out of line, so the header's inline path is off (head.key 0).
  bool subteam = false;
  // Every operation goes to the conduit's network atomics (head.key 0).
  bool offload = false;
};

namespace gexrt::api {
namespace {

constexpr uint32_t kLiveAd = 0x41446c76u;  // "ADlv"
constexpr uint32_t kDeadAd = 0x41446464u;  // "ADdd"

// Reserved internal handler indices (see the header comment).
constexpr uint8_t kRequestIndex = 120;
constexpr uint8_t kReplyIndex = 121;

constexpr gex_Flags_t kCreateFlags = GEX_FLAG_AD_FAVOR_MY_RANK |
                                     GEX_FLAG_AD_FAVOR_MY_NBRHD |
                                     GEX_FLAG_AD_FAVOR_REMOTE;
constexpr gex_Flags_t kOpFlags = GEX_FLAG_IMMEDIATE | GEX_FLAG_RANK_IS_JOBRANK |
                                 GEX_FLAG_AD_ACQ | GEX_FLAG_AD_REL |
                                 GEX_FLAG_AD_MY_RANK | GEX_FLAG_AD_MY_NBRHD;
// The flags that need no check beyond being flags.
constexpr gex_Flags_t kPlainOpFlags = GEX_FLAG_IMMEDIATE |
                                      GEX_FLAG_RANK_IS_JOBRANK |
                                      GEX_FLAG_AD_ACQ | GEX_FLAG_AD_REL;

std::mutex g_register_mu;
bool g_registered = false;

// ---------------------------------------------------------------------------
// Names for messages.

const char* DtName(uint32_t dt) {
  switch (dt) {
    case GEX_DT_I32:
      return "GEX_DT_I32";
    case GEX_DT_U32:
      return "GEX_DT_U32";
    case GEX_DT_I64:
      return "GEX_DT_I64";
    case GEX_DT_U64:
      return "GEX_DT_U64";
    case GEX_DT_FLT:
      return "GEX_DT_FLT";
    case GEX_DT_DBL:
      return "GEX_DT_DBL";
    default:
      return "not an atomic type";
  }
}

const char* OpName(uint32_t op) {
  switch (op) {
#define GEX_AD_OP_NAME(name) \
  case GEX_OP_##name:        \
    return "GEX_OP_" #name;
    GEX_AD_OP_NAME(ADD)
    GEX_AD_OP_NAME(MULT)
    GEX_AD_OP_NAME(MIN)
    GEX_AD_OP_NAME(MAX)
    GEX_AD_OP_NAME(SUB)
    GEX_AD_OP_NAME(INC)
    GEX_AD_OP_NAME(DEC)
    GEX_AD_OP_NAME(AND)
    GEX_AD_OP_NAME(OR)
    GEX_AD_OP_NAME(XOR)
    GEX_AD_OP_NAME(SET)
    GEX_AD_OP_NAME(CAS)
    GEX_AD_OP_NAME(FADD)
    GEX_AD_OP_NAME(FMULT)
    GEX_AD_OP_NAME(FMIN)
    GEX_AD_OP_NAME(FMAX)
    GEX_AD_OP_NAME(FSUB)
    GEX_AD_OP_NAME(FINC)
    GEX_AD_OP_NAME(FDEC)
    GEX_AD_OP_NAME(FAND)
    GEX_AD_OP_NAME(FOR)
    GEX_AD_OP_NAME(FXOR)
    GEX_AD_OP_NAME(SWAP)
    GEX_AD_OP_NAME(FCAS)
    GEX_AD_OP_NAME(GET)
#undef GEX_AD_OP_NAME
    default:
      return nullptr;
  }
}

std::string OpText(uint32_t op) {
  const char* name = OpName(op);
  return name != nullptr ? std::string(name) : absl::StrFormat("0x%x", op);
}

// ---------------------------------------------------------------------------
// Handlers.

// An AM-path operation's happens-before runs from the initiating thread
// (which set up result_p and the counter) through the target process and
// back to whichever thread of this process runs the reply handler.
// ThreadSanitizer cannot see the other process's half, so the edge is
// annotated on the counter, as the RMA engine does: released before the
// request, acquired by the reply handler. Nothing in other builds.
#if defined(__SANITIZE_THREAD__)
inline void HandOff(rma::Counter* c) { __tsan_release(c); }
inline void TakeOver(rma::Counter* c) { __tsan_acquire(c); }
#else
inline void HandOff(rma::Counter*) {}
inline void TakeOver(rma::Counter*) {}
#endif

inline void Split(uint64_t v, uint32_t* out) {
  out[0] = static_cast<uint32_t>(v);
  out[1] = static_cast<uint32_t>(v >> 32);
}
inline uint64_t Join(int32_t lo, int32_t hi) {
  return static_cast<uint64_t>(static_cast<uint32_t>(lo)) |
         static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32;
}

// At the target: op, dt, address, operand1, operand2 (each 64-bit value as
// two arguments), then the initiator's result pointer and counter, which
// go back in the reply with the old value.
void RequestHandler(void* token, int32_t op, int32_t dt, int32_t a0, int32_t a1,
                    int32_t x0, int32_t x1, int32_t y0, int32_t y1, int32_t r0,
                    int32_t r1, int32_t c0, int32_t c1) {
  Runtime& rt = *g_runtime;
  auto* t = static_cast<am::Token*>(token);
  const auto udt = static_cast<uint32_t>(dt);
  const auto uop = static_cast<uint32_t>(op);
  const size_t size = rma::DtSize(udt);
  const uint64_t address = Join(a0, a1);
  void* target = size == 0
                     ? nullptr
                     : rt.segments.Translate(
                           rt.rank, static_cast<uintptr_t>(address), size);
  if (ABSL_PREDICT_FALSE(target == nullptr || address % size != 0 ||
                         (uop & rma::kOpAllAtomic) == 0)) {
    // The initiator checked all of this; a message that fails is corrupt.
    FatalErrorF("remote atomic request from rank %u: %s %s at 0x%" PRIx64
                " is not an aligned object in this rank's segment",
                t->source, OpText(uop), DtName(udt), address);
  }
  const uint64_t old =
      rma::AtomicApply(target, udt, uop, Join(x0, x1), Join(y0, y1));
  uint32_t args[8];
  args[0] = static_cast<uint32_t>(r0);
  args[1] = static_cast<uint32_t>(r1);
  args[2] = static_cast<uint32_t>(c0);
  args[3] = static_cast<uint32_t>(c1);
  Split(old, &args[4]);
  args[6] = static_cast<uint32_t>(size);
  // Who the request came from: the reply handler checks it is itself
  // before it writes through the pointers (they are that rank's).
  args[7] = t->source;
  core::Reply(rt, *t, am::Category::kShort, kReplyIndex, args, 8, nullptr, 0, 0,
              nullptr, /*immediate=*/false);
}

// At the initiator: the result (fetching ops) and then the completion.
void ReplyHandler(void*, int32_t r0, int32_t r1, int32_t c0, int32_t c1,
                  int32_t v0, int32_t v1, int32_t size, int32_t initiator) {
  if (ABSL_PREDICT_FALSE(static_cast<Rank>(initiator) != g_runtime->rank)) {
    // A reply that is not ours: writing through its pointers would corrupt
    // this process (they are the initiator's addresses).
    FatalErrorF(
        "remote atomic reply for rank %u arrived at rank %u (the transport "
        "delivered a reply to the wrong rank)",
        static_cast<Rank>(initiator), g_runtime->rank);
  }
  auto* counter =
      reinterpret_cast<rma::Counter*>(static_cast<uintptr_t>(Join(c0, c1)));
  TakeOver(counter);
  auto* result = reinterpret_cast<void*>(static_cast<uintptr_t>(Join(r0, r1)));
  if (result != nullptr) {
    const uint64_t v = Join(v0, v1);
    if (size == 4) {
      const auto w = static_cast<uint32_t>(v);
      std::memcpy(result, &w, 4);
    } else {
      std::memcpy(result, &v, 8);
    }
  }
  counter->Complete();
}

// Registers the two handlers at the reserved indices, once per process.
void RegisterHandlers(Runtime& rt) {
  std::lock_guard<std::mutex> lock(g_register_mu);
  if (g_registered) return;
  am::Entry entries[2];
  entries[0].index = kRequestIndex;
  entries[0].fn = reinterpret_cast<am::HandlerFn>(&RequestHandler);
  entries[0].flags = am::kFlagShort | am::kFlagRequest;
  entries[0].nargs = 12;
  entries[0].name = "gex remote atomic";
  entries[1].index = kReplyIndex;
  entries[1].fn = reinterpret_cast<am::HandlerFn>(&ReplyHandler);
  entries[1].flags = am::kFlagShort | am::kFlagReply;
  entries[1].nargs = 8;
  entries[1].name = "gex remote atomic reply";
  const absl::Status s = rt.handlers.Register(entries, 2, /*internal=*/true);
  if (!s.ok()) FatalErrorF("gex_AD_Create: %s", s.message());
  g_registered = true;
}

// ---------------------------------------------------------------------------
// Checks.

[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void BadAd(const char* call, gex_AD_t ad) {
  RuntimeFor(call);  // Fatal before gex_Client_Init.
  if (ad == nullptr) {
    FatalErrorF("%s: ad is NULL (GEX_AD_INVALID), not an atomic domain", call);
  }
  if (reinterpret_cast<uintptr_t>(ad) % alignof(gex_AD_opaque) == 0 &&
      ad->magic == kDeadAd) {
    FatalErrorF("%s: ad %p was destroyed (gex_AD_Destroy)", call,
                static_cast<void*>(ad));
  }
  FatalErrorF("%s: ad %p is not an atomic domain (gex_AD_Create)", call,
              static_cast<void*>(ad));
}

inline void CheckAd(const char* call, gex_AD_t ad) {
  if (ABSL_PREDICT_FALSE(
          ad == nullptr ||
          reinterpret_cast<uintptr_t>(ad) % alignof(gex_AD_opaque) != 0 ||
          ad->magic != kLiveAd)) {
    BadAd(call, ad);
  }
}

// Every misuse an operation can make, found out of line once one of the
// quick tests below failed.
[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void BadOp(
    const char* call, gex_AD_t ad, uint32_t dt, const void* result_p,
    gex_Rank_t rank, const void* tgt_addr, gex_OP_t opcode, gex_Flags_t flags) {
  const Runtime& rt = *g_runtime;
  if (ad->dt != dt) {
    FatalErrorF("%s: the atomic domain's data type is %s, not %s", call,
                DtName(ad->dt), DtName(dt));
  }
  if (!rma::IsSingleOp(opcode) || OpName(opcode) == nullptr) {
    FatalErrorF("%s: opcode 0x%x is not one GEX_OP_* of an atomic operation",
                call, opcode);
  }
  if ((opcode & ad->ops) == 0) {
    FatalErrorF(
        "%s: opcode %s is not in the atomic domain's operations (ops 0x%x "
        "given to gex_AD_Create)",
        call, OpName(opcode), ad->ops);
  }
  if ((flags & ~kOpFlags) != 0) {
    FatalErrorF("%s: flags 0x%x has bits a remote atomic does not take (0x%x)",
                call, flags, flags & ~kOpFlags);
  }
  if ((flags & GEX_FLAG_AD_MY_RANK) != 0 &&
      (flags & GEX_FLAG_AD_MY_NBRHD) != 0) {
    FatalErrorF(
        "%s: GEX_FLAG_AD_MY_RANK and GEX_FLAG_AD_MY_NBRHD are mutually "
        "exclusive",
        call);
  }
  if (rank >= rt.size) {
    FatalErrorF("%s: tgt_rank %u is not in the team (size %u)", call, rank,
                rt.size);
  }
  if ((flags & GEX_FLAG_AD_MY_RANK) != 0 && rank != rt.rank) {
    FatalErrorF(
        "%s: GEX_FLAG_AD_MY_RANK asserts that tgt_rank is the caller's rank "
        "%u, but it is %u",
        call, rt.rank, rank);
  }
  if ((flags & GEX_FLAG_AD_MY_NBRHD) != 0 &&
      rt.supernode->LocalIndex(rank) < 0) {
    FatalErrorF(
        "%s: GEX_FLAG_AD_MY_NBRHD asserts that tgt_rank %u is in the caller's "
        "neighborhood, but it is not",
        call, rank);
  }
  if (rma::IsFetching(opcode) && result_p == nullptr) {
    FatalErrorF("%s: result_p is NULL for the fetching opcode %s", call,
                OpName(opcode));
  }
  const size_t size = rma::DtSize(dt);
  const auto a = reinterpret_cast<uintptr_t>(tgt_addr);
  if (a % size != 0) {
    FatalErrorF("%s: tgt_addr %p is not aligned to its type %s (%zu bytes)",
                call, tgt_addr, DtName(dt), size);
  }
  if (!rt.segments.attached()) {
    FatalErrorF(
        "%s: no segment is attached yet (gex_Segment_Attach), so rank %u's "
        "%p is outside it",
        call, rank, tgt_addr);
  }
  const rma::SegmentEntry s = rt.segments.segment(rank);
  FatalErrorF("%s: tgt_addr [%p, +%zu) is outside rank %u's segment [%p, +%zu)",
              call, tgt_addr, size, rank, reinterpret_cast<void*>(s.base),
              s.size);
}

[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void InHandler(const char* call) {
  FatalErrorF(
      "%s: called from an AM handler (handlers may not initiate "
      "communication)",
      call);
}

// Whether an operation's flags are all taken and its locality assertions
// (GEX_FLAG_AD_MY_RANK, _MY_NBRHD) hold for `rank` (< rt.size).
ABSL_ATTRIBUTE_NOINLINE bool FlagsHold(const Runtime& rt, gex_Flags_t flags,
                                       gex_Rank_t rank) {
  const bool my_rank = (flags & GEX_FLAG_AD_MY_RANK) != 0;
  const bool my_nbrhd = (flags & GEX_FLAG_AD_MY_NBRHD) != 0;
  if ((flags & ~kOpFlags) != 0 || (my_rank && my_nbrhd) || rank >= rt.size) {
    return false;
  }
  if (my_rank) return rank == rt.rank;
  if (my_nbrhd) return rt.supernode->LocalIndex(rank) >= 0;
  return true;
}

// How one operation goes: directly on `target` (mapped here), or, target
// null, over the AM path or (`offload`) the conduit's atomics.
struct Route {
  Runtime* rt;
  void* target;
  bool offload;
};

// The checks every operation makes, and where it goes. The quick tests are
// single compares; any failure goes to BadOp for the message.
// A sub-team domain's `rank` becomes a job rank here (out of line).
inline Route Check(const char* call, gex_AD_t ad, uint32_t dt,
                   const void* result_p, gex_Rank_t& rank, void* tgt_addr,
                   gex_OP_t opcode, gex_Flags_t flags) {
  CheckAd(call, ad);
  Runtime* rt = g_runtime;
  if (ABSL_PREDICT_FALSE(ad->subteam) &&
      (flags & GEX_FLAG_RANK_IS_JOBRANK) == 0) {
    rank = SubteamJobRank(call, ad->tm, rank);
  }
  const size_t size = rma::DtSize(dt);
  const auto a = reinterpret_cast<uintptr_t>(tgt_addr);
  if (ABSL_PREDICT_FALSE(
          ad->dt != dt || (opcode & ad->ops) == 0 || !rma::IsSingleOp(opcode) ||
          rank >= rt->size || a % size != 0 ||
          (result_p == nullptr && rma::IsFetching(opcode)) ||
          ((flags & ~kPlainOpFlags) != 0 && !FlagsHold(*rt, flags, rank)))) {
    BadOp(call, ad, dt, result_p, rank, tgt_addr, opcode, flags);
  }
  if (ABSL_PREDICT_TRUE(!ad->force_am && !ad->offload)) {
    void* target = rt->segments.Translate(rank, a, size);
    if (ABSL_PREDICT_TRUE(target != nullptr)) return Route{rt, target, false};
  }
  if (ABSL_PREDICT_FALSE(!rt->segments.Contains(rank, a, size))) {
    BadOp(call, ad, dt, result_p, rank, tgt_addr, opcode, flags);
  }
  if (ABSL_PREDICT_FALSE(am::HandlerContext::InHandler())) InHandler(call);
  return Route{rt, nullptr, ad->offload};
}

// The direct path: the operation, and the result where it fetches.
template <typename T>
inline void Direct(void* target, T* result_p, gex_OP_t opcode, T operand1,
                   T operand2) {
  const uint64_t old = rma::AtomicApplyAs<T>(
      target, opcode, rma::ToBits(operand1), rma::ToBits(operand2));
  if (rma::IsFetching(opcode)) *result_p = rma::FromBits<T>(old);
}

// The AM path, or the conduit's atomics (`r.offload`): starts one
// operation on `counter`; false (nothing started, the counter as it was)
// when `flags` holds GEX_FLAG_IMMEDIATE and the send would have to wait.
bool SendRemote(const Route& r, gex_Rank_t rank, void* tgt_addr, uint32_t dt,
                gex_OP_t opcode, uint64_t operand1, uint64_t operand2,
                void* result_p, gex_Flags_t flags, rma::Counter& counter) {
  Runtime& rt = *r.rt;
  const bool immediate = (flags & GEX_FLAG_IMMEDIATE) != 0;
  if (r.offload) {
    // GEX_FLAG_AD_REL: the operations this thread started before it are
    // performed first, whatever path of the network each took.
    if (flags & GEX_FLAG_AD_REL) rt.conduit->FenceAtomics();
    counter.Start(1);
    const core::AtomicOp op{dt, opcode, operand1, operand2};
    if (!rt.conduit->Atomic(rank, tgt_addr, op,
                            rma::IsFetching(opcode) ? result_p : nullptr,
                            immediate, counter)) {
      counter.Unstart(1);
      return false;
    }
    return true;
  }
  uint32_t args[12];
  args[0] = opcode;
  args[1] = dt;
  Split(reinterpret_cast<uintptr_t>(tgt_addr), &args[2]);
  Split(operand1, &args[4]);
  Split(operand2, &args[6]);
  Split(rma::IsFetching(opcode) ? reinterpret_cast<uintptr_t>(result_p) : 0,
        &args[8]);
  Split(reinterpret_cast<uintptr_t>(&counter), &args[10]);
  counter.Start(1);
  HandOff(&counter);
  if (core::Request(rt, rank, am::Category::kShort, kRequestIndex, args, 12,
                    nullptr, 0, 0, nullptr, immediate) != am::SendStatus::kOk) {
    counter.Unstart(1);
    return false;
  }
  return true;
}

// The three forms.

template <typename T>
gex_Event_t OpNB(const char* call, uint32_t dt, gex_AD_t ad, T* result_p,
                 gex_Rank_t rank, void* tgt_addr, gex_OP_t opcode, T operand1,
                 T operand2, gex_Flags_t flags) {
  const Route r = Check(call, ad, dt, result_p, rank, tgt_addr, opcode, flags);
  if (ABSL_PREDICT_TRUE(r.target != nullptr)) {
    Direct(r.target, result_p, opcode, operand1, operand2);
    return GEX_EVENT_INVALID;
  }
  rma::Operation* op = rma::Operation::Allocate();
  if (!SendRemote(r, rank, tgt_addr, dt, opcode, rma::ToBits(operand1),
                  rma::ToBits(operand2), result_p, flags, op->rc)) {
    op->Release();
    return GEX_EVENT_NO_OP;
  }
  return op;
}

template <typename T>
int OpNBI(const char* call, uint32_t dt, gex_AD_t ad, T* result_p,
          gex_Rank_t rank, void* tgt_addr, gex_OP_t opcode, T operand1,
          T operand2, gex_Flags_t flags) {
  const Route r = Check(call, ad, dt, result_p, rank, tgt_addr, opcode, flags);
  if (ABSL_PREDICT_TRUE(r.target != nullptr)) {
    Direct(r.target, result_p, opcode, operand1, operand2);
    return GASNET_OK;
  }
  rma::Nbi& nbi = rma::Nbi::Mine();
  rma::Counter& counter = opcode == GEX_OP_SET   ? nbi.put()
                          : opcode == GEX_OP_GET ? nbi.get()
                                                 : nbi.rmw();
  return SendRemote(r, rank, tgt_addr, dt, opcode, rma::ToBits(operand1),
                    rma::ToBits(operand2), result_p, flags, counter)
             ? GASNET_OK
             : 1;
}

template <typename T>
int OpBlocking(const char* call, uint32_t dt, gex_AD_t ad, T* result_p,
               gex_Rank_t rank, void* tgt_addr, gex_OP_t opcode, T operand1,
               T operand2, gex_Flags_t flags) {
  const Route r = Check(call, ad, dt, result_p, rank, tgt_addr, opcode, flags);
  if (ABSL_PREDICT_TRUE(r.target != nullptr)) {
    Direct(r.target, result_p, opcode, operand1, operand2);
    return GASNET_OK;
  }
  rma::Counter counter;
  if (!SendRemote(r, rank, tgt_addr, dt, opcode, rma::ToBits(operand1),
                  rma::ToBits(operand2), result_p, flags, counter)) {
    return 1;
  }
  while (!counter.Done()) WaitProgress(*r.rt);
  return GASNET_OK;
}

}  // namespace

// Whether a domain of type `dt` and opcodes `ops` goes to the conduit's
// network atomics (see the header comment); readies them if so.
bool Offloads(Runtime& rt, gex_DT_t dt, gex_OP_t ops) {
  // Not before the conduit has registered every rank's primordial
  // segment (one bound and published over teams may not be yet).
  if (!rt.conduit_has_peers || !rt.segments.attached() ||
      !rt.conduit_segments) {
    return false;
  }
  const uint32_t offloaded = rt.conduit->AtomicOps(dt);
  if (offloaded == 0 || (ops & ~offloaded) != 0) return false;
  const absl::Status s = rt.conduit->PrepareAtomics();
  if (!s.ok()) FatalErrorF("gex_AD_Create: %s", s.message());
  return true;
}

}  // namespace gexrt::api

namespace gexrt::api {
void RatomicInit(Runtime& rt) { RegisterHandlers(rt); }
}  // namespace gexrt::api

using gexrt::FatalErrorF;
using gexrt::api::CheckAd;
using gexrt::api::g_runtime;
using gexrt::api::Runtime;
using gexrt::api::RuntimeFor;

extern "C" {

void gex_AD_Create(gex_AD_t* ad_p, gex_TM_t tm, gex_DT_t dt, gex_OP_t ops,
                   gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_AD_Create";
  Runtime& rt = RuntimeFor(kCall);
  if (ad_p == nullptr) FatalErrorF("%s: ad_p is NULL", kCall);
  const bool subteam = tm != &rt.tm;
  if (subteam) {
    // A live sub-team (fatal otherwise, naming the call); a pair takes no
    // collectives, so it cannot create a domain.
    (void)gexrt::api::CollTeam(kCall, tm);
  }
  if (gexrt::rma::DtSize(dt) == 0) {
    FatalErrorF("%s: dt 0x%x is not one of GEX_DT_I32, U32, I64, U64, FLT, DBL",
                kCall, dt);
  }
  if (ops == 0 || (ops & ~gexrt::rma::kOpAllAtomic) != 0) {
    FatalErrorF(
        "%s: ops 0x%x is not a non-empty OR of atomic GEX_OP_* opcodes "
        "(bits 0x%x are not)",
        kCall, ops, ops & ~gexrt::rma::kOpAllAtomic);
  }
  if ((dt & gexrt::rma::kDtIntegers) == 0 &&
      (ops & gexrt::rma::kOpBitwise) != 0) {
    FatalErrorF(
        "%s: ops 0x%x holds bit-wise opcodes (AND, OR, XOR and their "
        "fetching forms), valid only for integer types, not %s",
        kCall, ops, gexrt::api::DtName(dt));
  }
  const gex_Flags_t favor = flags & gexrt::api::kCreateFlags;
  if ((flags & ~gexrt::api::kCreateFlags) != 0 || (favor & (favor - 1)) != 0) {
    FatalErrorF(
        "%s: flags 0x%x: only one of GEX_FLAG_AD_FAVOR_MY_RANK, "
        "_MY_NBRHD, _REMOTE is taken",
        kCall, flags);
  }
  if (gexrt::am::HandlerContext::InHandler()) {
    FatalErrorF("%s: called from an AM handler (it is collective)", kCall);
  }
  auto* ad = new gex_AD_opaque;
  ad->tm = tm;
  ad->dt = dt;
  ad->ops = ops;
  ad->flags = flags;
  ad->force_am = gexrt::env::GetBool("GEX_RMA_FORCE_AM", false);
  ad->magic = gexrt::api::kLiveAd;
  ad->head.ops = ops;
  ad->subteam = subteam;
  ad->offload = !ad->force_am && gexrt::api::Offloads(rt, dt, ops);
  ad->head.key = ad->force_am || subteam || ad->offload ? 0 : _GEX_AD_KEY | dt;
  // No synchronisation: every rank registered the AM path's handlers at
  // init (RatomicInit).
  *ad_p = ad;
}

void gex_AD_Destroy(gex_AD_t ad) {
  static constexpr char kCall[] = "gex_AD_Destroy";
  CheckAd(kCall, ad);
  // Kept (dead) rather than freed, so a later use of the handle is
  // reported as such; a domain is a few dozen bytes.
  ad->magic = gexrt::api::kDeadAd;
  ad->head.key = 0;
}

gex_Flags_t gex_AD_QueryFlags(gex_AD_t ad) {
  CheckAd("gex_AD_QueryFlags", ad);
  return ad->flags;
}
gex_TM_t gex_AD_QueryTM(gex_AD_t ad) {
  CheckAd("gex_AD_QueryTM", ad);
  return ad->tm;
}
gex_DT_t gex_AD_QueryDT(gex_AD_t ad) {
  CheckAd("gex_AD_QueryDT", ad);
  return ad->dt;
}
gex_OP_t gex_AD_QueryOps(gex_AD_t ad) {
  CheckAd("gex_AD_QueryOps", ad);
  return ad->ops;
}
void gex_AD_SetCData(gex_AD_t ad, const void* val) {
  CheckAd("gex_AD_SetCData", ad);
  ad->cdata = val;
}
void* gex_AD_QueryCData(gex_AD_t ad) {
  CheckAd("gex_AD_QueryCData", ad);
  return const_cast<void*>(ad->cdata);
}

#define GEX_AD_DEFINE(DT, T)                                                   \
  gex_Event_t _gex_AD_OpNB_##DT(gex_AD_t ad, T* result_p, gex_Rank_t tgt_rank, \
                                void* tgt_addr, gex_OP_t opcode, T operand1,   \
                                T operand2, gex_Flags_t flags) {               \
    return gexrt::api::OpNB<T>("gex_AD_OpNB_" #DT, GEX_DT_##DT, ad, result_p,  \
                               tgt_rank, tgt_addr, opcode, operand1, operand2, \
                               flags);                                         \
  }                                                                            \
  int _gex_AD_OpNBI_##DT(gex_AD_t ad, T* result_p, gex_Rank_t tgt_rank,        \
                         void* tgt_addr, gex_OP_t opcode, T operand1,          \
                         T operand2, gex_Flags_t flags) {                      \
    return gexrt::api::OpNBI<T>("gex_AD_OpNBI_" #DT, GEX_DT_##DT, ad,          \
                                result_p, tgt_rank, tgt_addr, opcode,          \
                                operand1, operand2, flags);                    \
  }                                                                            \
  int _gex_AD_OpBlocking_##DT(gex_AD_t ad, T* result_p, gex_Rank_t tgt_rank,   \
                              void* tgt_addr, gex_OP_t opcode, T operand1,     \
                              T operand2, gex_Flags_t flags) {                 \
    return gexrt::api::OpBlocking<T>("gex_AD_OpBlocking_" #DT, GEX_DT_##DT,    \
                                     ad, result_p, tgt_rank, tgt_addr, opcode, \
                                     operand1, operand2, flags);               \
  }

GEX_AD_DEFINE(I32, int32_t)
GEX_AD_DEFINE(U32, uint32_t)
GEX_AD_DEFINE(I64, int64_t)
GEX_AD_DEFINE(U64, uint64_t)
GEX_AD_DEFINE(FLT, float)
GEX_AD_DEFINE(DBL, double)
#undef GEX_AD_DEFINE

}  // extern "C"
