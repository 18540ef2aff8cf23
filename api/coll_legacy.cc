// gasnet_coll.h over the team collectives (api/coll.h, api/team.h).
//
// Each call becomes up to three steps on the team's collective sequence:
// an entry barrier (IN_ALLSYNC), the data movement, an exit barrier
// (OUT_ALLSYNC). All their sequence numbers are taken when the call is
// made, so calls on a team keep one order on every rank even though a
// later step starts only when the previous one completes (from the
// handle's test). The data movement is a broadcast or a reduction:
//   broadcast   gex broadcast;
//   scatter     broadcast of the root's n pieces, each rank keeping its
//               own (simple; every rank holds n * nbytes meanwhile);
//   gather(_all) a bytewise-OR ReduceToOne (ReduceToAll) of n-piece
//               buffers in which each rank fills its own piece;
//   exchange    the same over an n x n matrix of pieces (rank i fills row
//               i), each rank keeping column `me`.
// Simple and exact for the small teams these calls serve; the padding
// costs memory and bandwidth proportional to n.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/base/optimization.h"
#include "am/token.h"
#include "api/coll.h"
#include "api/runtime.h"
#include "api/team.h"
#include "base/fatal.h"
#include "bootstrap/current_call.h"
#include "gasnet_coll.h"

namespace gexrt::api {
namespace {

constexpr int kIn =
    GASNET_COLL_IN_NOSYNC | GASNET_COLL_IN_MYSYNC | GASNET_COLL_IN_ALLSYNC;
constexpr int kOut =
    GASNET_COLL_OUT_NOSYNC | GASNET_COLL_OUT_MYSYNC | GASNET_COLL_OUT_ALLSYNC;
constexpr int kAddr = GASNET_COLL_SINGLE | GASNET_COLL_LOCAL;
constexpr int kKnown = kIn | kOut | kAddr | GASNET_COLL_DST_IN_SEGMENT |
                       GASNET_COLL_SRC_IN_SEGMENT | GASNET_COLL_AGGREGATE;

bool OneOf(int flags, int mask) {
  const int f = flags & mask;
  return f != 0 && (f & (f - 1)) == 0;
}

void CheckFlags(const char* call, int flags) {
  if (ABSL_PREDICT_FALSE((flags & ~kKnown) != 0)) {
    FatalErrorF("%s: flags %#x has bits that are not GASNET_COLL_* flags", call,
                flags);
  }
  if (ABSL_PREDICT_FALSE(!OneOf(flags, kIn))) {
    FatalErrorF(
        "%s: flags %#x must hold exactly one of GASNET_COLL_IN_NOSYNC, "
        "IN_MYSYNC and IN_ALLSYNC",
        call, flags);
  }
  if (ABSL_PREDICT_FALSE(!OneOf(flags, kOut))) {
    FatalErrorF(
        "%s: flags %#x must hold exactly one of GASNET_COLL_OUT_NOSYNC, "
        "OUT_MYSYNC and OUT_ALLSYNC",
        call, flags);
  }
  if (ABSL_PREDICT_FALSE(!OneOf(flags, kAddr))) {
    FatalErrorF(
        "%s: flags %#x must hold exactly one of GASNET_COLL_SINGLE and "
        "GASNET_COLL_LOCAL",
        call, flags);
  }
}

void CheckImage(const char* call, const char* what, gasnet_image_t image,
                const TeamView& v) {
  if (ABSL_PREDICT_FALSE(image >= v.size)) {
    FatalErrorF("%s: %s %u is not in the team (size %u)", call, what, image,
                v.size);
  }
}

void CheckBuf(const char* call, const char* what, const void* p,
              size_t nbytes) {
  if (ABSL_PREDICT_FALSE(p == nullptr && nbytes != 0)) {
    FatalErrorF("%s: %s is NULL with %zu bytes to move", call, what, nbytes);
  }
}

void OrBytes(const void* in, void* inout, size_t count, const void* cdata) {
  const size_t n = count * *static_cast<const size_t*>(cdata);
  const auto* a = static_cast<const unsigned char*>(in);
  auto* b = static_cast<unsigned char*>(inout);
  for (size_t i = 0; i < n; ++i) b[i] |= a[i];
}

enum class Finish { kNone, kScatter, kExchange };

// The handle of one gasnet_coll_* call.
struct LegacyOp : gex_Event_opaque {
  Runtime* rt = nullptr;
  Collectives* coll = nullptr;
  int stage = 0;  // 0: entry barrier, 1: data, 2: exit barrier, 3: done.
  gex_Event_t current = GEX_EVENT_INVALID;
  bool has_data = false;
  uint32_t seq_data = 0;
  bool out_sync = false;
  uint32_t seq_out = 0;
  Collectives::Call data;
  size_t elem = 0;  // OrBytes' element size.
  std::vector<unsigned char> tmp;
  // A gather's source: copied into its row of tmp when the data step
  // starts, not when the call is made (under IN_ALLSYNC other ranks may
  // still be writing it until every rank has entered).
  const void* gather_src = nullptr;
  size_t gather_row = 0;
  Finish finish = Finish::kNone;
  unsigned char* dst = nullptr;
  size_t nbytes = 0;
  Rank n = 0;
  Rank me = 0;
};

// Drives `op` as far as it goes; true once complete.
bool Advance(LegacyOp& op) {
  for (;;) {
    if (op.current != GEX_EVENT_INVALID) {
      if (!op.current->test(op.current)) return false;
      op.current = GEX_EVENT_INVALID;
    }
    switch (op.stage) {
      case 0:
        op.stage = 1;
        if (op.has_data) {
          if (op.gather_src != nullptr) {
            std::memcpy(op.tmp.data() + size_t{op.me} * op.gather_row,
                        op.gather_src, op.gather_row);
          }
          if (op.data.dst == nullptr) op.data.dst = op.tmp.data();
          op.current = op.coll->Start(op.data, op.seq_data);
        }
        break;
      case 1:
        if (op.finish == Finish::kScatter) {
          std::memcpy(op.dst, op.tmp.data() + size_t{op.me} * op.nbytes,
                      op.nbytes);
        } else if (op.finish == Finish::kExchange) {
          // Row i, column me of the n x n matrix, into piece i.
          for (Rank i = 0; i < op.n; ++i) {
            std::memcpy(op.dst + size_t{i} * op.nbytes,
                        op.tmp.data() + (size_t{i} * op.n + op.me) * op.nbytes,
                        op.nbytes);
          }
        }
        std::vector<unsigned char>().swap(op.tmp);
        op.stage = 2;
        if (op.out_sync) {
          op.current =
              op.coll->Start(BarrierCall(Barrier::Value{}), op.seq_out);
        }
        break;
      default:
        op.stage = 3;
        return true;
    }
  }
}

bool TestOp(gex_Event_opaque* e) {
  LegacyOp* op = static_cast<LegacyOp*>(e);
  if (!Advance(*op)) return false;
  op->magic = rma::kDeadEvent;
  delete op;
  return true;
}

// Makes the handle for a call whose data step is `data` (has_data false:
// nothing to move), taking its sequence numbers now, and starts it.
gex_Event_t Launch(const char* call, const TeamView& v, int flags, LegacyOp* op,
                   bool has_data) {
  if (ABSL_PREDICT_FALSE(am::HandlerContext::InHandler())) {
    FatalErrorF("%s: called from an AM handler", call);
  }
  op->test = &TestOp;
  op->magic = rma::kLiveEvent;
  op->rt = g_runtime;
  op->coll = &TeamColl(v);
  op->n = v.size;
  op->me = v.rank;
  op->has_data = has_data;
  if (flags & GASNET_COLL_IN_ALLSYNC) {
    // The entry barrier now; the data step's number is kept for later.
    op->current = op->coll->Start(BarrierCall(Barrier::Value{}));
    if (has_data) op->seq_data = op->coll->Reserve();
  } else if (has_data) {
    op->seq_data = op->coll->Reserve();
  }
  op->out_sync = (flags & GASNET_COLL_OUT_ALLSYNC) != 0;
  if (op->out_sync) op->seq_out = op->coll->Reserve();
  if (TestOp(op)) return GASNET_COLL_INVALID_HANDLE;
  return op;
}

void Wait(const char* call, gex_Event_t h) {
  const ScopedCurrentCall current(call);
  if (h == GASNET_COLL_INVALID_HANDLE) return;
  Runtime& rt = RuntimeFor(call);
  while (!h->test(h)) WaitProgress(rt);
}

// A padded gather (to `root`, or to all with root < 0) of `nbytes` from
// every rank into `dst` (n * nbytes); `pieces` per rank (1, or n for the
// exchange matrix), from `src`.
void PaddedGather(LegacyOp* op, const TeamView& v, long root, void* dst,
                  const void* src, size_t nbytes, size_t pieces) {
  const size_t row = pieces * nbytes;
  const size_t total = size_t{v.size} * row;
  op->tmp.assign(total, 0);
  // The source goes into the padded buffer when the data step starts
  // (Advance): the reduction reads tmp as its source and writes the
  // destination (or tmp itself).
  op->gather_src = src;
  op->gather_row = row;
  op->elem = total;
  Collectives::Call& c = op->data;
  c.kind = root < 0 ? Collectives::Kind::kReduceToAll
                    : Collectives::Kind::kReduceToOne;
  c.root = root < 0 ? 0 : static_cast<Rank>(root);
  c.src = op->tmp.data();
  c.dst = dst;
  c.nbytes = total;
  c.dt = GEX_DT_USER;
  c.dt_sz = total;
  c.dt_cnt = 1;
  c.op = GEX_OP_USER;
  c.user_op = &OrBytes;
  c.user_cdata = &op->elem;
}

}  // namespace
}  // namespace gexrt::api

using gexrt::api::LegacyOp;
using gexrt::api::TeamView;

extern "C" {

gex_TM_t _gasnet_coll_team_all(void) {
  return &gexrt::api::RuntimeFor("GASNET_TEAM_ALL").tm;
}

gasnet_coll_handle_t gasnet_coll_broadcast_nb(gasnet_team_handle_t team,
                                              void* dst,
                                              gasnet_image_t srcimage,
                                              void* src, size_t nbytes,
                                              int flags) {
  static constexpr char kCall[] = "gasnet_coll_broadcast_nb";
  const TeamView v = gexrt::api::CollTeam(kCall, team);
  gexrt::api::CheckFlags(kCall, flags);
  gexrt::api::CheckImage(kCall, "srcimage", srcimage, v);
  gexrt::api::CheckBuf(kCall, "dst", dst, nbytes);
  if (v.rank == srcimage) gexrt::api::CheckBuf(kCall, "src", src, nbytes);
  auto* op = new LegacyOp;
  op->data.kind = gexrt::api::Collectives::Kind::kBroadcast;
  op->data.root = srcimage;
  op->data.dst = dst;
  op->data.src = src;
  op->data.nbytes = nbytes;
  return gexrt::api::Launch(kCall, v, flags, op, nbytes != 0);
}

gasnet_coll_handle_t gasnet_coll_scatter_nb(gasnet_team_handle_t team,
                                            void* dst, gasnet_image_t srcimage,
                                            void* src, size_t nbytes,
                                            int flags) {
  static constexpr char kCall[] = "gasnet_coll_scatter_nb";
  const TeamView v = gexrt::api::CollTeam(kCall, team);
  gexrt::api::CheckFlags(kCall, flags);
  gexrt::api::CheckImage(kCall, "srcimage", srcimage, v);
  gexrt::api::CheckBuf(kCall, "dst", dst, nbytes);
  if (v.rank == srcimage) gexrt::api::CheckBuf(kCall, "src", src, nbytes);
  auto* op = new LegacyOp;
  const size_t total = size_t{v.size} * nbytes;
  op->tmp.resize(total);
  op->data.kind = gexrt::api::Collectives::Kind::kBroadcast;
  op->data.root = srcimage;
  op->data.dst = op->tmp.data();
  op->data.src = src;
  op->data.nbytes = total;
  op->finish = gexrt::api::Finish::kScatter;
  op->dst = static_cast<unsigned char*>(dst);
  op->nbytes = nbytes;
  return gexrt::api::Launch(kCall, v, flags, op, nbytes != 0);
}

gasnet_coll_handle_t gasnet_coll_gather_nb(gasnet_team_handle_t team,
                                           gasnet_image_t dstimage, void* dst,
                                           void* src, size_t nbytes,
                                           int flags) {
  static constexpr char kCall[] = "gasnet_coll_gather_nb";
  const TeamView v = gexrt::api::CollTeam(kCall, team);
  gexrt::api::CheckFlags(kCall, flags);
  gexrt::api::CheckImage(kCall, "dstimage", dstimage, v);
  gexrt::api::CheckBuf(kCall, "src", src, nbytes);
  if (v.rank == dstimage) gexrt::api::CheckBuf(kCall, "dst", dst, nbytes);
  auto* op = new LegacyOp;
  if (nbytes != 0) {
    gexrt::api::PaddedGather(
        op, v, dstimage, v.rank == dstimage ? dst : nullptr, src, nbytes, 1);
  }
  return gexrt::api::Launch(kCall, v, flags, op, nbytes != 0);
}

gasnet_coll_handle_t gasnet_coll_gather_all_nb(gasnet_team_handle_t team,
                                               void* dst, void* src,
                                               size_t nbytes, int flags) {
  static constexpr char kCall[] = "gasnet_coll_gather_all_nb";
  const TeamView v = gexrt::api::CollTeam(kCall, team);
  gexrt::api::CheckFlags(kCall, flags);
  gexrt::api::CheckBuf(kCall, "src", src, nbytes);
  gexrt::api::CheckBuf(kCall, "dst", dst, nbytes);
  auto* op = new LegacyOp;
  if (nbytes != 0) gexrt::api::PaddedGather(op, v, -1, dst, src, nbytes, 1);
  return gexrt::api::Launch(kCall, v, flags, op, nbytes != 0);
}

gasnet_coll_handle_t gasnet_coll_exchange_nb(gasnet_team_handle_t team,
                                             void* dst, void* src,
                                             size_t nbytes, int flags) {
  static constexpr char kCall[] = "gasnet_coll_exchange_nb";
  const TeamView v = gexrt::api::CollTeam(kCall, team);
  gexrt::api::CheckFlags(kCall, flags);
  gexrt::api::CheckBuf(kCall, "src", src, nbytes);
  gexrt::api::CheckBuf(kCall, "dst", dst, nbytes);
  auto* op = new LegacyOp;
  if (nbytes != 0) {
    // The matrix lands in tmp (dst null: Advance points it there).
    gexrt::api::PaddedGather(op, v, -1, nullptr, src, nbytes, v.size);
    op->data.src = op->tmp.data();
    op->data.dst = op->tmp.data();  // In place.
    op->finish = gexrt::api::Finish::kExchange;
    op->dst = static_cast<unsigned char*>(dst);
    op->nbytes = nbytes;
  }
  return gexrt::api::Launch(kCall, v, flags, op, nbytes != 0);
}

void gasnet_coll_broadcast(gasnet_team_handle_t team, void* dst,
                           gasnet_image_t srcimage, void* src, size_t nbytes,
                           int flags) {
  gexrt::api::Wait(
      "gasnet_coll_broadcast",
      gasnet_coll_broadcast_nb(team, dst, srcimage, src, nbytes, flags));
}
void gasnet_coll_scatter(gasnet_team_handle_t team, void* dst,
                         gasnet_image_t srcimage, void* src, size_t nbytes,
                         int flags) {
  gexrt::api::Wait(
      "gasnet_coll_scatter",
      gasnet_coll_scatter_nb(team, dst, srcimage, src, nbytes, flags));
}
void gasnet_coll_gather(gasnet_team_handle_t team, gasnet_image_t dstimage,
                        void* dst, void* src, size_t nbytes, int flags) {
  gexrt::api::Wait(
      "gasnet_coll_gather",
      gasnet_coll_gather_nb(team, dstimage, dst, src, nbytes, flags));
}
void gasnet_coll_gather_all(gasnet_team_handle_t team, void* dst, void* src,
                            size_t nbytes, int flags) {
  gexrt::api::Wait("gasnet_coll_gather_all",
                   gasnet_coll_gather_all_nb(team, dst, src, nbytes, flags));
}
void gasnet_coll_exchange(gasnet_team_handle_t team, void* dst, void* src,
                          size_t nbytes, int flags) {
  gexrt::api::Wait("gasnet_coll_exchange",
                   gasnet_coll_exchange_nb(team, dst, src, nbytes, flags));
}

int gasnet_coll_try_sync(gasnet_coll_handle_t handle) {
  return gex_Event_Test(handle);
}
void gasnet_coll_wait_sync(gasnet_coll_handle_t handle) {
  gex_Event_Wait(handle);
}
int gasnet_coll_try_sync_some(gasnet_coll_handle_t* handles, size_t count) {
  return gex_Event_TestSome(handles, count, 0);
}
void gasnet_coll_wait_sync_some(gasnet_coll_handle_t* handles, size_t count) {
  gex_Event_WaitSome(handles, count, 0);
}
int gasnet_coll_try_sync_all(gasnet_coll_handle_t* handles, size_t count) {
  return gex_Event_TestAll(handles, count, 0);
}
void gasnet_coll_wait_sync_all(gasnet_coll_handle_t* handles, size_t count) {
  gex_Event_WaitAll(handles, count, 0);
}

// ---------------------------------------------------------------------------
// Barriers on a team.

void gasnet_coll_barrier_notify(gasnet_team_handle_t team, int id, int flags) {
  static constexpr char kCall[] = "gasnet_coll_barrier_notify";
  const TeamView v = gexrt::api::CollTeam(kCall, team);
  if (v.team == nullptr) return gasnet_barrier_notify(id, flags);
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  gexrt::api::Team& t = *v.team;
  if (t.legacy_pending != nullptr) {
    gexrt::FatalErrorF(
        "%s: the team's previous barrier was notified but not waited for "
        "(gasnet_coll_barrier_wait)",
        kCall);
  }
  gexrt::api::Barrier::Value value;
  value.anonymous = (flags & GASNET_BARRIERFLAG_ANONYMOUS) != 0;
  value.mismatch = (flags & GASNET_BARRIERFLAG_MISMATCH) != 0;
  value.id = id;
  t.legacy_pending = gexrt::api::TeamBarrierNotify(t, value);
}

static int FinishTeamBarrier(gexrt::api::Team& t, int id, int flags,
                             const gexrt::api::Barrier::Value& v) {
  t.legacy_pending = nullptr;
  return gexrt::api::Barrier::WaitResult(v, id, flags);
}

static gexrt::api::Team& PendingTeam(const char* call, const TeamView& v) {
  if (v.team->legacy_pending == nullptr) {
    gexrt::FatalErrorF(
        "%s: no barrier was notified on this team "
        "(gasnet_coll_barrier_notify)",
        call);
  }
  return *v.team;
}

int gasnet_coll_barrier_wait(gasnet_team_handle_t team, int id, int flags) {
  static constexpr char kCall[] = "gasnet_coll_barrier_wait";
  const gexrt::ScopedCurrentCall current(kCall);
  const TeamView v = gexrt::api::CollTeam(kCall, team);
  if (v.team == nullptr) return gasnet_barrier_wait(id, flags);
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  gexrt::api::Team& t = PendingTeam(kCall, v);
  gexrt::api::Barrier::Value result;
  while (!gexrt::api::TeamBarrierFinish(t, t.legacy_pending, &result)) {
    gexrt::api::WaitProgress(*gexrt::api::g_runtime);
  }
  return FinishTeamBarrier(t, id, flags, result);
}

int gasnet_coll_barrier_try(gasnet_team_handle_t team, int id, int flags) {
  static constexpr char kCall[] = "gasnet_coll_barrier_try";
  const TeamView v = gexrt::api::CollTeam(kCall, team);
  if (v.team == nullptr) return gasnet_barrier_try(id, flags);
  gexrt::api::Team& t = PendingTeam(kCall, v);
  gexrt::api::Progress(*gexrt::api::g_runtime);
  gexrt::api::Barrier::Value result;
  if (!gexrt::api::TeamBarrierFinish(t, t.legacy_pending, &result)) {
    return GASNET_ERR_NOT_READY;
  }
  return FinishTeamBarrier(t, id, flags, result);
}

int gasnet_coll_barrier(gasnet_team_handle_t team, int id, int flags) {
  gasnet_coll_barrier_notify(team, id, flags);
  return gasnet_coll_barrier_wait(team, id, flags);
}

static void DumpNote(const char* call, const char* filename,
                     gasnet_team_handle_t team, const char* what) {
  const TeamView v = gexrt::api::CollTeam(call, team);
  if (filename == nullptr) return;
  FILE* f = std::fopen(filename, "a");
  if (f == nullptr) {
    gexrt::api::ReportError(call, GASNET_ERR_RESOURCE,
                            std::string("cannot open ") + filename);
    return;
  }
  std::fprintf(f,
               "rank %u of %u: no collective %s: these collectives use fixed "
               "binomial trees over Active Messages\n",
               v.rank, v.size, what);
  std::fclose(f);
}

void gasnet_coll_dumpProfile(char* filename, gasnet_team_handle_t team) {
  DumpNote("gasnet_coll_dumpProfile", filename, team, "profile");
}
void gasnet_coll_dumpTuningState(char* filename, gasnet_team_handle_t team) {
  DumpNote("gasnet_coll_dumpTuningState", filename, team, "tuning state");
}

}  // extern "C"
