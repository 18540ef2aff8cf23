// The Active Message calls of gasnetex.h: registration, token queries,
// limits, Request/Reply of every category and the negotiated-payload
// (Prepare/Commit/Cancel) forms, over core's router (PSHM for supernode
// peers, the conduit for the rest).
//
// Hot path: a send is the argument checks (a few compares, always on:
// they cost nothing next to the copy), one translation for a Long, and
// the router's send (inline into the PSHM queue for a supernode peer); no
// locks in SEQ mode, no allocation. Local
// completion is synchronous (the payload is copied before the call
// returns), so an lc_opt event pointer gets GEX_EVENT_INVALID.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "absl/base/optimization.h"
#include "absl/strings/str_format.h"
#include "am/handler_table.h"
#include "am/token.h"
#include "api/rma.h"
#include "api/runtime.h"
#include "api/team.h"
#include "base/fatal.h"
#include "core/router.h"

namespace gexrt::api {
namespace {

static_assert(sizeof(gex_AM_Entry_t) == sizeof(am::Entry));
static_assert(offsetof(gex_AM_Entry_t, gex_index) ==
              offsetof(am::Entry, index));
static_assert(offsetof(gex_AM_Entry_t, gex_fnptr) == offsetof(am::Entry, fn));
static_assert(offsetof(gex_AM_Entry_t, gex_flags) ==
              offsetof(am::Entry, flags));
static_assert(offsetof(gex_AM_Entry_t, gex_nargs) ==
              offsetof(am::Entry, nargs));
static_assert(offsetof(gex_AM_Entry_t, gex_cdata) ==
              offsetof(am::Entry, cdata));
static_assert(offsetof(gex_AM_Entry_t, gex_name) == offsetof(am::Entry, name));
static_assert(GEX_FLAG_AM_SHORT == am::kFlagShort);
static_assert(GEX_FLAG_AM_MEDIUM == am::kFlagMedium);
static_assert(GEX_FLAG_AM_LONG == am::kFlagLong);
static_assert(GEX_FLAG_AM_REQUEST == am::kFlagRequest);
static_assert(GEX_FLAG_AM_REPLY == am::kFlagReply);
static_assert(sizeof(gex_AM_Arg_t) == sizeof(uint32_t));

// The payload limits: what every destination accepts (core::Init takes
// the smaller of PSHM's and the conduit's). A Long is one message, one
// copy into the target's segment.
inline size_t MaxPayload(const Runtime& rt, am::Category category) {
  return category == am::Category::kLong ? rt.max_long : rt.max_medium;
}

inline void CompleteLocally(gex_Event_t* lc_opt) {
  if (reinterpret_cast<uintptr_t>(lc_opt) > 3) *lc_opt = GEX_EVENT_INVALID;
}

[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void BadLcOpt(const char* call,
                                                   gex_Event_t* lc_opt) {
  FatalErrorF(
      "%s: lc_opt %s is not valid here (use GEX_EVENT_NOW%s or an "
      "event pointer)",
      call,
      lc_opt == GEX_EVENT_DEFER ? "GEX_EVENT_DEFER"
      : lc_opt == nullptr       ? "NULL"
                                : "GEX_EVENT_GROUP",
      std::strstr(call, "Request") != nullptr ? ", GEX_EVENT_GROUP" : "");
}

// Indices below kClientIndexBase belong to the runtime's own handlers (the
// RMA engine's, the collectives'...), which trust their arguments: a client
// message there could run one with junk (a Get handler reading a wild
// address). The runtime's senders go through core:: directly, never here.
[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void BadHandlerIndex(
    const char* call, gex_AM_Index_t handler) {
  FatalErrorF(
      "%s: handler index %u is reserved for the runtime's internal "
      "handlers (client handlers use %u-%u)",
      call, handler, am::kClientIndexBase, am::kTableSize - 1);
}

// The checks every send makes, out of line when they fail. `tm` is null
// for a Reply (it has a token instead), `src` is checked only for a
// Medium or Long (`payload`).
[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void BadSend(
    const char* call, const Runtime& rt, gex_TM_t tm, gex_Rank_t rank,
    gex_AM_Index_t handler, bool payload, const void* src, unsigned nargs,
    size_t nbytes, size_t max) {
  const bool request = std::strstr(call, "Request") != nullptr;
  if (request && tm != &rt.tm) {
    FatalErrorF("%s: tm %s is not this client's team", call,
                tm == nullptr ? std::string("NULL")
                              : absl::StrFormat("%p", static_cast<void*>(tm)));
  }
  if (rank >= rt.size) {
    FatalErrorF("%s: rank %u is not in the team (size %u)", call, rank,
                rt.size);
  }
  if (handler < am::kClientIndexBase) {
    BadHandlerIndex(call, handler);
  }
  if (nargs > am::kMaxArgs) {
    FatalErrorF("%s: %u arguments exceed gex_AM_MaxArgs() = %u", call, nargs,
                am::kMaxArgs);
  }
  if (nbytes > max) {
    FatalErrorF(
        "%s: nbytes %zu exceeds the maximum payload %zu "
        "(gex_AM_Max%s)",
        call, nbytes, max, request ? "Request..." : "Reply...");
  }
  if (payload && src == nullptr && nbytes != 0) {
    FatalErrorF("%s: source buffer is NULL with nbytes %zu", call, nbytes);
  }
  if (request && am::HandlerContext::InHandler()) {
    FatalErrorF(
        "%s: a Request from inside an AM handler (handlers may only "
        "reply)",
        call);
  }
  FatalErrorF("%s: rank %u is not reachable from this rank", call, rank);
}

[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void OutsideSegment(const char* call,
                                                         const Runtime& rt,
                                                         gex_Rank_t rank,
                                                         const void* dest,
                                                         size_t nbytes) {
  const rma::SegmentEntry s = rt.segments.segment(rank);
  FatalErrorF(
      "%s: destination [%p, +%zu) is outside rank %u's segment [%p, +%zu)%s",
      call, dest, nbytes, rank, reinterpret_cast<void*>(s.base), s.size,
      rt.attached ? "" : " (no segment attached yet)");
}

// A Long to a rank outside the supernode whose primordial segment the
// conduit has not registered yet (bound and published over teams before
// every rank of the job had published one; docs: README, "Segments and
// endpoints"): the network conduits write and check a Long's destination
// against that registration.
[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void NotRegistered(const char* call,
                                                        gex_Rank_t rank,
                                                        const void* dest,
                                                        size_t nbytes) {
  FatalErrorF(
      "%s: destination [%p, +%zu) is in rank %u's segment, which the "
      "conduit has not registered yet: a segment bound to the primordial "
      "endpoint takes AM Longs from outside its supernode once every rank "
      "of the job has published one (gex_EP_PublishBoundSegment)",
      call, dest, nbytes, rank);
}

// --config=dbg: the payload's source is mapped memory, and a Long's does
// not overlap its destination where that is mapped here (`local`; a
// loopback or supernode Long is one memcpy).
ABSL_ATTRIBUTE_NOINLINE void DebugCheckPayload(const char* call,
                                               const void* src, size_t nbytes,
                                               const void* local) {
  if (nbytes == 0) return;
  DebugCheckMapped(call, "source buffer", src, nbytes);
  if (local != nullptr) DebugCheckOverlap(call, src, local, nbytes);
}

inline Runtime& Rt(const char* call) {
  Runtime* rt = g_runtime;
  if (ABSL_PREDICT_FALSE(rt == nullptr)) RuntimeFor(call);
  return *rt;
}

// Where a Long's payload goes in this process when the target's segment
// is mapped here (a supernode peer), else null; fatal when the range is
// not in the target's segment.
inline void* LongTarget(const char* call, const Runtime& rt, gex_Rank_t rank,
                        void* dest, size_t nbytes) {
  const auto address = reinterpret_cast<uintptr_t>(dest);
  void* local = rt.segments.Translate(rank, address, nbytes);
  if (ABSL_PREDICT_FALSE(local == nullptr)) {
    if (nbytes == 0) return nullptr;  // Nothing to write; any address.
    if (!rt.segments.Contains(rank, address, nbytes)) {
      OutsideSegment(call, rt, rank, dest, nbytes);
    }
    if (!rt.conduit_segments) NotRegistered(call, rank, dest, nbytes);
  }
  return local;
}

// Always inlined into each entry point, so that `category` is a constant
// there and the category-dependent checks fold away (at -O2 GCC otherwise
// kept one out-of-line copy for the three categories, testing the category
// at run time).
ABSL_ATTRIBUTE_ALWAYS_INLINE inline int Request(
    am::Category category, gex_TM_t tm, gex_Rank_t rank, gex_AM_Index_t handler,
    const void* src, size_t nbytes, void* dest, gex_Event_t* lc_opt,
    gex_Flags_t flags, unsigned nargs, const gex_AM_Arg_t* args) {
  const char* call = SendCallName(category, true);
  Runtime& rt = Rt(call);
  const size_t max = MaxPayload(rt, category);
  // One compare each (category is a constant here: a Short's payload test
  // folds away); the diagnosis is out of line.
  const bool payload = category != am::Category::kShort;
  // A sub-team or pair (api/team.h): out of line, to the job rank.
  if (ABSL_PREDICT_FALSE(tm != &rt.tm)) {
    rank = SubteamJobRank(call, tm, rank);
    tm = &rt.tm;
  }
  if (ABSL_PREDICT_FALSE(rank >= rt.size || handler < am::kClientIndexBase ||
                         nargs > am::kMaxArgs || nbytes > max ||
                         (payload && src == nullptr && nbytes != 0) ||
                         am::HandlerContext::InHandler())) {
    BadSend(call, rt, tm, rank, handler, payload, src, nargs, nbytes, max);
  }
  if (payload &&
      ABSL_PREDICT_FALSE(lc_opt == nullptr || lc_opt == GEX_EVENT_DEFER)) {
    BadLcOpt(call, lc_opt);
  }
  void* local = nullptr;
  if (category == am::Category::kLong) {
    local = LongTarget(call, rt, rank, dest, nbytes);
  }
  if constexpr (kDebugChecks) {
    if (payload) DebugCheckPayload(call, src, nbytes, local);
  }
  if (core::Request(rt, rank, category, handler,
                    reinterpret_cast<const uint32_t*>(args),
                    static_cast<uint8_t>(nargs), src, nbytes,
                    reinterpret_cast<uint64_t>(dest), local,
                    (flags & GEX_FLAG_IMMEDIATE) != 0) != am::SendStatus::kOk) {
    return 1;
  }
  if (category != am::Category::kShort) CompleteLocally(lc_opt);
  return 0;
}

// The token of a Request handler that may still reply, or a fatal error.
inline am::Token* ReplyToken(const char* call, gex_Token_t token) {
  auto* t = reinterpret_cast<am::Token*>(token);
  if (ABSL_PREDICT_FALSE(t == nullptr || !t->is_request || t->replied)) {
    if (t == nullptr) FatalErrorF("%s: NULL token", call);
    if (!t->is_request) {
      FatalErrorF(
          "%s: called from a Reply handler (only a Request handler "
          "may reply)",
          call);
    }
    FatalErrorF(
        "%s: this Request handler has already replied (at most one "
        "reply per Request)",
        call);
  }
  return t;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline int Reply(
    am::Category category, gex_Token_t token, gex_AM_Index_t handler,
    const void* src, size_t nbytes, void* dest, gex_Event_t* lc_opt,
    gex_Flags_t flags, unsigned nargs, const gex_AM_Arg_t* args) {
  const char* call = SendCallName(category, false);
  Runtime& rt = Rt(call);
  am::Token* t = ReplyToken(call, token);
  const size_t max = MaxPayload(rt, category);
  const bool payload = category != am::Category::kShort;
  if (ABSL_PREDICT_FALSE(handler < am::kClientIndexBase ||
                         nargs > am::kMaxArgs || nbytes > max ||
                         (payload && src == nullptr && nbytes != 0))) {
    BadSend(call, rt, nullptr, t->source, handler, payload, src, nargs, nbytes,
            max);
  }
  if (payload &&
      ABSL_PREDICT_FALSE(lc_opt == nullptr || lc_opt == GEX_EVENT_DEFER ||
                         lc_opt == GEX_EVENT_GROUP)) {
    BadLcOpt(call, lc_opt);
  }
  void* local = nullptr;
  if (category == am::Category::kLong) {
    local = LongTarget(call, rt, t->source, dest, nbytes);
  }
  if constexpr (kDebugChecks) {
    if (payload) DebugCheckPayload(call, src, nbytes, local);
  }
  if (core::Reply(rt, *t, category, handler,
                  reinterpret_cast<const uint32_t*>(args),
                  static_cast<uint8_t>(nargs), src, nbytes,
                  reinterpret_cast<uint64_t>(dest), local,
                  (flags & GEX_FLAG_IMMEDIATE) != 0) != am::SendStatus::kOk) {
    return 1;
  }
  if (category != am::Category::kShort) CompleteLocally(lc_opt);
  return 0;
}

// ---------------------------------------------------------------------------
// Negotiated payload. A thread has at most one prepared Request and one
// prepared Reply at a time (what the specification allows), so the
// descriptors are thread-local and never allocated.

struct SrcDesc {
  bool in_use = false;
  bool is_request = false;
  am::Category category = am::Category::kMedium;
  unsigned nargs = 0;
  gex_Rank_t rank = 0;
  am::Token* token = nullptr;
  const void* client_buf = nullptr;
  void* addr = nullptr;  // gex_AM_SrcDescAddr.
  size_t size = 0;       // gex_AM_SrcDescSize.
  gex_Event_t* lc_opt = nullptr;
  core::PreparedMessage message;
  std::unique_ptr<unsigned char[]> bounce;  // Long GASNet buffer, lazily.
};

thread_local SrcDesc tl_request_sd;
thread_local SrcDesc tl_reply_sd;

const char* PrepareName(am::Category c, bool request) {
  if (c == am::Category::kLong) {
    return request ? "gex_AM_PrepareRequestLong" : "gex_AM_PrepareReplyLong";
  }
  return request ? "gex_AM_PrepareRequestMedium" : "gex_AM_PrepareReplyMedium";
}

gex_AM_SrcDesc_t Prepare(am::Category category, bool request, gex_TM_t tm,
                         gex_Rank_t rank, am::Token* token,
                         const void* client_buf, size_t least, size_t most,
                         void* dest, gex_Event_t* lc_opt, gex_Flags_t flags,
                         unsigned nargs) {
  const char* call = PrepareName(category, request);
  Runtime& rt = Rt(call);
  const size_t max = MaxPayload(rt, category);
  // The handler is named only at Commit, which checks it; here it passes.
  constexpr gex_AM_Index_t kAnyClientHandler = am::kClientIndexBase;
  if (request) {
    if (tm != &rt.tm) {  // A sub-team or pair (api/team.h).
      rank = SubteamJobRank(call, tm, rank);
      tm = &rt.tm;
    }
    if (rank >= rt.size || nargs > am::kMaxArgs || least > max ||
        am::HandlerContext::InHandler()) {
      BadSend(call, rt, tm, rank, kAnyClientHandler, false, nullptr, nargs,
              least, max);
    }
  } else if (nargs > am::kMaxArgs || least > max) {
    BadSend(call, rt, nullptr, rank, kAnyClientHandler, false, nullptr, nargs,
            least, max);
  }
  if (least > most) {
    FatalErrorF("%s: least_payload %zu exceeds most_payload %zu", call, least,
                most);
  }
  if ((flags & GEX_FLAG_AM_PREPARE_LEAST_CLIENT) &&
      (flags & GEX_FLAG_AM_PREPARE_LEAST_ALLOC)) {
    FatalErrorF(
        "%s: GEX_FLAG_AM_PREPARE_LEAST_CLIENT and _LEAST_ALLOC "
        "exclude each other",
        call);
  }
  if (client_buf == nullptr && lc_opt != nullptr) {
    FatalErrorF(
        "%s: with a GASNet buffer (client_buf NULL) lc_opt must be "
        "NULL",
        call);
  }
  if (client_buf != nullptr &&
      (lc_opt == nullptr || lc_opt == GEX_EVENT_DEFER ||
       (!request && lc_opt == GEX_EVENT_GROUP))) {
    BadLcOpt(call, lc_opt);
  }
  SrcDesc& sd = request ? tl_request_sd : tl_reply_sd;
  if (sd.in_use) {
    FatalErrorF(
        "%s: this thread already has a prepared %s awaiting its "
        "Commit or Cancel",
        call, request ? "Request" : "Reply");
  }
  const size_t size = most < max ? most : max;
  (void)dest;  // A Long's destination counts at Commit.
  const uint8_t net_nargs = static_cast<uint8_t>(nargs);
  const size_t net_payload = category == am::Category::kMedium ? size : 0;
  const bool immediate = (flags & GEX_FLAG_IMMEDIATE) != 0;
  if ((request ? core::ReserveRequest(rt, rank, category, net_nargs,
                                      net_payload, immediate, &sd.message)
               : core::ReserveReply(rt, *token, category, net_nargs,
                                    net_payload, immediate, &sd.message)) !=
      am::SendStatus::kOk) {
    return GEX_AM_SRCDESC_NO_OP;
  }
  sd.in_use = true;
  sd.is_request = request;
  sd.category = category;
  sd.nargs = nargs;
  sd.rank = rank;
  sd.token = token;
  sd.client_buf = client_buf;
  sd.size = size;
  sd.lc_opt = lc_opt;
  if (client_buf != nullptr) {
    sd.addr = const_cast<void*>(client_buf);
  } else if (category == am::Category::kMedium) {
    sd.addr = sd.message.payload();
  } else {
    // A Long's GASNet buffer is a bounce buffer of this thread's, copied to
    // the destination at Commit: what the client writes beyond nbytes, or
    // into a cancelled message, must not reach the target.
    // max_long is fixed once the client is up.
    if (sd.bounce == nullptr) sd.bounce.reset(new unsigned char[max]);
    sd.addr = sd.bounce.get();
  }
  return reinterpret_cast<gex_AM_SrcDesc_t>(&sd);
}

// A descriptor between its Prepare and its Commit or Cancel.
SrcDesc& PreparedSd(const char* call, gex_AM_SrcDesc_t handle) {
  auto* sd = reinterpret_cast<SrcDesc*>(handle);
  if (sd == nullptr || !sd->in_use) {
    FatalErrorF("%s: the source descriptor is %s", call,
                sd == nullptr ? "GEX_AM_SRCDESC_NO_OP"
                              : "not prepared (already committed or "
                                "cancelled?)");
  }
  return *sd;
}

SrcDesc& CheckedSd(const char* call, gex_AM_SrcDesc_t handle, bool request,
                   am::Category category) {
  SrcDesc* sd = &PreparedSd(call, handle);
  if (sd->is_request != request || sd->category != category) {
    FatalErrorF("%s: the descriptor was prepared for a %s %s", call,
                am::CategoryName(sd->category),
                sd->is_request ? "Request" : "Reply");
  }
  return *sd;
}

void Commit(const char* call, gex_AM_SrcDesc_t handle, bool request,
            am::Category category, gex_AM_Index_t handler, size_t nbytes,
            void* dest, unsigned nargs, const gex_AM_Arg_t* args) {
  Runtime& rt = Rt(call);
  SrcDesc& sd = CheckedSd(call, handle, request, category);
  if (ABSL_PREDICT_FALSE(handler < am::kClientIndexBase)) {
    BadHandlerIndex(call, handler);
  }
  if (nbytes > sd.size) {
    FatalErrorF(
        "%s: nbytes %zu exceeds the prepared size %zu "
        "(gex_AM_SrcDescSize)",
        call, nbytes, sd.size);
  }
  if (nargs != sd.nargs) {
    FatalErrorF("%s: %u arguments, but %u were prepared", call, nargs,
                sd.nargs);
  }
  // Still allowed to reply (core::Commit marks the token replied).
  if (!request) ReplyToken(call, reinterpret_cast<gex_Token_t>(sd.token));
  uint64_t long_dest = 0;
  void* local = nullptr;
  if (category == am::Category::kMedium) {
    if (sd.client_buf != nullptr && nbytes != 0) {
      std::memcpy(sd.message.payload(), sd.client_buf, nbytes);
    }
  } else {
    local = LongTarget(call, rt, sd.rank, dest, nbytes);
    long_dest = reinterpret_cast<uint64_t>(dest);
    if constexpr (kDebugChecks) {
      if (sd.client_buf != nullptr) {
        DebugCheckPayload(call, sd.client_buf, nbytes, local);
      }
    }
  }
  core::Commit(rt, sd.message, handler, reinterpret_cast<const uint32_t*>(args),
               nbytes, sd.addr, long_dest, local);
  sd.in_use = false;
  if (sd.client_buf != nullptr) CompleteLocally(sd.lc_opt);
}

int Cancel(const char* call, gex_AM_SrcDesc_t handle, bool request,
           am::Category category) {
  Runtime& rt = Rt(call);
  SrcDesc& sd = CheckedSd(call, handle, request, category);
  core::Cancel(rt, sd.message);
  sd.in_use = false;
  return GASNET_OK;
}

}  // namespace
}  // namespace gexrt::api

using gexrt::am::Category;
using gexrt::api::Commit;
using gexrt::api::Prepare;
using gexrt::api::Reply;
using gexrt::api::Request;

extern "C" {

int gex_EP_RegisterHandlers(gex_EP_t ep, gex_AM_Entry_t* table,
                            size_t numentries) {
  static constexpr char kCall[] = "gex_EP_RegisterHandlers";
  gexrt::api::Runtime& rt = gexrt::api::RuntimeFor(kCall);
  if (ep != &rt.ep || (table == nullptr && numentries != 0)) {
    return gexrt::api::ReportError(kCall, GASNET_ERR_BAD_ARG,
                                   "ep is not this client's endpoint or the "
                                   "table is NULL");
  }
  const absl::Status s = rt.handlers.Register(
      reinterpret_cast<gexrt::am::Entry*>(table), numentries, false);
  if (!s.ok()) {
    return gexrt::api::ReportError(kCall, GASNET_ERR_BAD_ARG,
                                   std::string(s.message()));
  }
  return GASNET_OK;
}

gex_TI_t gex_Token_Info(gex_Token_t token, gex_Token_Info_t* info,
                        gex_TI_t mask) {
  const auto* t = reinterpret_cast<const gexrt::am::Token*>(token);
  if (t == nullptr || info == nullptr) {
    gexrt::FatalError("gex_Token_Info: NULL token or info");
  }
  if (mask & GEX_TI_SRCRANK) info->gex_srcrank = t->source;
  if (mask & GEX_TI_EP) info->gex_ep = &gexrt::api::g_runtime->ep;
  if (mask & GEX_TI_ENTRY) {
    info->gex_entry = reinterpret_cast<const gex_AM_Entry_t*>(t->entry);
  }
  if (mask & GEX_TI_IS_REQ) info->gex_is_req = t->is_request;
  if (mask & GEX_TI_IS_LONG) info->gex_is_long = t->is_long;
  return mask & GEX_TI_ALL;
}

unsigned int gex_AM_MaxArgs(void) { return gexrt::am::kMaxArgs; }
// The least upper bounds hold for every destination: what core::Init took
// from PSHM and the conduit (before gex_Client_Init, PSHM's alone).
static size_t LubMedium() {
  const gexrt::api::Runtime* rt = gexrt::api::g_runtime;
  return rt != nullptr ? rt->max_medium : gexrt::core::kSharedMaxPayload;
}
static size_t LubLong() {
  const gexrt::api::Runtime* rt = gexrt::api::g_runtime;
  return rt != nullptr ? rt->max_long : gexrt::core::kSharedMaxPayload;
}
size_t gex_AM_LUBRequestMedium(void) { return LubMedium(); }
size_t gex_AM_LUBReplyMedium(void) { return LubMedium(); }
size_t gex_AM_LUBRequestLong(void) { return LubLong(); }
size_t gex_AM_LUBReplyLong(void) { return LubLong(); }
size_t gex_AM_MaxRequestMedium(gex_TM_t, gex_Rank_t, const gex_Event_t*,
                               gex_Flags_t, unsigned int) {
  return LubMedium();
}
size_t gex_AM_MaxReplyMedium(gex_TM_t, gex_Rank_t, const gex_Event_t*,
                             gex_Flags_t, unsigned int) {
  return LubMedium();
}
size_t gex_AM_MaxRequestLong(gex_TM_t, gex_Rank_t, const gex_Event_t*,
                             gex_Flags_t, unsigned int) {
  return LubLong();
}
size_t gex_AM_MaxReplyLong(gex_TM_t, gex_Rank_t, const gex_Event_t*,
                           gex_Flags_t, unsigned int) {
  return LubLong();
}
size_t gex_Token_MaxReplyMedium(gex_Token_t, const gex_Event_t*, gex_Flags_t,
                                unsigned int) {
  return LubMedium();
}
size_t gex_Token_MaxReplyLong(gex_Token_t, const gex_Event_t*, gex_Flags_t,
                              unsigned int) {
  return LubLong();
}

int _gex_AM_RequestShortV(gex_TM_t tm, gex_Rank_t rank, gex_AM_Index_t h,
                          gex_Flags_t flags, unsigned int nargs,
                          const gex_AM_Arg_t* args) {
  return Request(Category::kShort, tm, rank, h, nullptr, 0, nullptr, nullptr,
                 flags, nargs, args);
}
int _gex_AM_RequestMediumV(gex_TM_t tm, gex_Rank_t rank, gex_AM_Index_t h,
                           const void* src, size_t nbytes, gex_Event_t* lc_opt,
                           gex_Flags_t flags, unsigned int nargs,
                           const gex_AM_Arg_t* args) {
  return Request(Category::kMedium, tm, rank, h, src, nbytes, nullptr, lc_opt,
                 flags, nargs, args);
}
int _gex_AM_RequestLongV(gex_TM_t tm, gex_Rank_t rank, gex_AM_Index_t h,
                         const void* src, size_t nbytes, void* dest,
                         gex_Event_t* lc_opt, gex_Flags_t flags,
                         unsigned int nargs, const gex_AM_Arg_t* args) {
  return Request(Category::kLong, tm, rank, h, src, nbytes, dest, lc_opt, flags,
                 nargs, args);
}
int _gex_AM_ReplyShortV(gex_Token_t token, gex_AM_Index_t h, gex_Flags_t flags,
                        unsigned int nargs, const gex_AM_Arg_t* args) {
  return Reply(Category::kShort, token, h, nullptr, 0, nullptr, nullptr, flags,
               nargs, args);
}
int _gex_AM_ReplyMediumV(gex_Token_t token, gex_AM_Index_t h, const void* src,
                         size_t nbytes, gex_Event_t* lc_opt, gex_Flags_t flags,
                         unsigned int nargs, const gex_AM_Arg_t* args) {
  return Reply(Category::kMedium, token, h, src, nbytes, nullptr, lc_opt, flags,
               nargs, args);
}
int _gex_AM_ReplyLongV(gex_Token_t token, gex_AM_Index_t h, const void* src,
                       size_t nbytes, void* dest, gex_Event_t* lc_opt,
                       gex_Flags_t flags, unsigned int nargs,
                       const gex_AM_Arg_t* args) {
  return Reply(Category::kLong, token, h, src, nbytes, dest, lc_opt, flags,
               nargs, args);
}

gex_AM_SrcDesc_t gex_AM_PrepareRequestMedium(
    gex_TM_t tm, gex_Rank_t rank, const void* client_buf, size_t least,
    size_t most, gex_Event_t* lc_opt, gex_Flags_t flags, unsigned int nargs) {
  return Prepare(Category::kMedium, true, tm, rank, nullptr, client_buf, least,
                 most, nullptr, lc_opt, flags, nargs);
}
gex_AM_SrcDesc_t gex_AM_PrepareReplyMedium(gex_Token_t token,
                                           const void* client_buf, size_t least,
                                           size_t most, gex_Event_t* lc_opt,
                                           gex_Flags_t flags,
                                           unsigned int nargs) {
  gexrt::am::Token* t =
      gexrt::api::ReplyToken("gex_AM_PrepareReplyMedium", token);
  return Prepare(Category::kMedium, false, nullptr, t->source, t, client_buf,
                 least, most, nullptr, lc_opt, flags, nargs);
}
gex_AM_SrcDesc_t gex_AM_PrepareRequestLong(gex_TM_t tm, gex_Rank_t rank,
                                           const void* client_buf, size_t least,
                                           size_t most, void* dest,
                                           gex_Event_t* lc_opt,
                                           gex_Flags_t flags,
                                           unsigned int nargs) {
  return Prepare(Category::kLong, true, tm, rank, nullptr, client_buf, least,
                 most, dest, lc_opt, flags, nargs);
}
gex_AM_SrcDesc_t gex_AM_PrepareReplyLong(gex_Token_t token,
                                         const void* client_buf, size_t least,
                                         size_t most, void* dest,
                                         gex_Event_t* lc_opt, gex_Flags_t flags,
                                         unsigned int nargs) {
  gexrt::am::Token* t =
      gexrt::api::ReplyToken("gex_AM_PrepareReplyLong", token);
  return Prepare(Category::kLong, false, nullptr, t->source, t, client_buf,
                 least, most, dest, lc_opt, flags, nargs);
}

void* gex_AM_SrcDescAddr(gex_AM_SrcDesc_t sd) {
  return gexrt::api::PreparedSd("gex_AM_SrcDescAddr", sd).addr;
}
size_t gex_AM_SrcDescSize(gex_AM_SrcDesc_t sd) {
  return gexrt::api::PreparedSd("gex_AM_SrcDescSize", sd).size;
}

void _gex_AM_CommitRequestMediumV(gex_AM_SrcDesc_t sd, gex_AM_Index_t h,
                                  size_t nbytes, unsigned int nargs,
                                  const gex_AM_Arg_t* args) {
  Commit("gex_AM_CommitRequestMedium", sd, true, Category::kMedium, h, nbytes,
         nullptr, nargs, args);
}
void _gex_AM_CommitReplyMediumV(gex_AM_SrcDesc_t sd, gex_AM_Index_t h,
                                size_t nbytes, unsigned int nargs,
                                const gex_AM_Arg_t* args) {
  Commit("gex_AM_CommitReplyMedium", sd, false, Category::kMedium, h, nbytes,
         nullptr, nargs, args);
}
void _gex_AM_CommitRequestLongV(gex_AM_SrcDesc_t sd, gex_AM_Index_t h,
                                size_t nbytes, void* dest, unsigned int nargs,
                                const gex_AM_Arg_t* args) {
  Commit("gex_AM_CommitRequestLong", sd, true, Category::kLong, h, nbytes, dest,
         nargs, args);
}
void _gex_AM_CommitReplyLongV(gex_AM_SrcDesc_t sd, gex_AM_Index_t h,
                              size_t nbytes, void* dest, unsigned int nargs,
                              const gex_AM_Arg_t* args) {
  Commit("gex_AM_CommitReplyLong", sd, false, Category::kLong, h, nbytes, dest,
         nargs, args);
}

int gex_AM_CancelRequestMedium(gex_AM_SrcDesc_t sd, gex_Flags_t) {
  return gexrt::api::Cancel("gex_AM_CancelRequestMedium", sd, true,
                            Category::kMedium);
}
int gex_AM_CancelReplyMedium(gex_AM_SrcDesc_t sd, gex_Flags_t) {
  return gexrt::api::Cancel("gex_AM_CancelReplyMedium", sd, false,
                            Category::kMedium);
}
int gex_AM_CancelRequestLong(gex_AM_SrcDesc_t sd, gex_Flags_t) {
  return gexrt::api::Cancel("gex_AM_CancelRequestLong", sd, true,
                            Category::kLong);
}
int gex_AM_CancelReplyLong(gex_AM_SrcDesc_t sd, gex_Flags_t) {
  return gexrt::api::Cancel("gex_AM_CancelReplyLong", sd, false,
                            Category::kLong);
}

}  // extern "C"
