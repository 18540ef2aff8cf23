#include "api/coll.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "am/handler_table.h"
#include "am/token.h"
#include "api/runtime.h"
#include "api/team.h"
#include "base/fatal.h"
#include "core/router.h"

namespace gexrt::api {
namespace {

Collectives* g_coll = nullptr;  // Lives until exit.

// Sends one Advance may hand out: one record's worst case is a child
// result up plus one send per broadcast child.
constexpr size_t kMaxSends = 2 * Collectives::kMaxChildren + 2;

uint64_t Join(gex_AM_Arg_t lo, gex_AM_Arg_t hi) {
  return uint64_t{static_cast<uint32_t>(lo)} |
         uint64_t{static_cast<uint32_t>(hi)} << 32;
}

// Arguments: the collective's number, the tag, the offset (2), the total
// (2), the team's id.
void CollHandler(gex_Token_t, void* buf, size_t nbytes, gex_AM_Arg_t seq,
                 gex_AM_Arg_t tag, gex_AM_Arg_t off_lo, gex_AM_Arg_t off_hi,
                 gex_AM_Arg_t total_lo, gex_AM_Arg_t total_hi,
                 gex_AM_Arg_t team) {
  Collectives* c = g_coll;
  if (team != 0) {
    c = FindTeamColl(static_cast<uint32_t>(team));
    if (c == nullptr) {
      FatalErrorF(
          "collectives: a message for team #%u, which this rank is not a "
          "member of (ranks disagree on team construction or destruction)",
          static_cast<uint32_t>(team));
    }
  }
  c->Arrived(static_cast<uint32_t>(seq), static_cast<uint32_t>(tag),
             Join(off_lo, off_hi), Join(total_lo, total_hi), buf, nbytes);
}

// Binomial trees over ranks relative to the tree's root. Child k of v is
// v + 2^k, for 2^k below v's lowest set bit (any, for v = 0) and inside
// the team; its subtree is [v + 2^k, v + 2^(k+1)).
uint64_t LowBit(uint64_t v) { return v & (~v + 1); }
Rank Relative(Rank r, Rank root, Rank n) { return (r + n - root) % n; }
Rank Absolute(Rank v, Rank root, Rank n) {
  return static_cast<Rank>((uint64_t{v} + root) % n);
}
uint32_t ChildBits(Rank v, Rank n) {
  const uint64_t limit = v == 0 ? uint64_t{n} : LowBit(v);
  uint32_t bits = 0;
  for (unsigned k = 0; k < Collectives::kMaxChildren; ++k) {
    const uint64_t step = uint64_t{1} << k;
    if (step >= limit || uint64_t{v} + step >= n) break;
    bits |= 1u << k;
  }
  return bits;
}

// acc[i] = acc[i] (op) in[i] over `n` elements of T, through memcpy (the
// client's buffers need not be aligned), wrapping for signed integers.
template <typename T, typename F>
void Each(const unsigned char* in, unsigned char* acc, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, acc + i * sizeof(T), sizeof(T));
    std::memcpy(&b, in + i * sizeof(T), sizeof(T));
    a = f(a, b);
    std::memcpy(acc + i * sizeof(T), &a, sizeof(T));
  }
}

template <typename T>
void Builtin(gex_OP_t op, const unsigned char* in, unsigned char* acc,
             size_t n) {
  using W =
      typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>,
                                  std::type_identity<T>>::type;
  switch (op) {
    case GEX_OP_ADD:
      Each<T>(in, acc, n, [](T a, T b) { return static_cast<T>(W(a) + W(b)); });
      return;
    case GEX_OP_MULT:
      Each<T>(in, acc, n, [](T a, T b) { return static_cast<T>(W(a) * W(b)); });
      return;
    case GEX_OP_MIN:
      Each<T>(in, acc, n, [](T a, T b) { return b < a ? b : a; });
      return;
    case GEX_OP_MAX:
      Each<T>(in, acc, n, [](T a, T b) { return b > a ? b : a; });
      return;
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case GEX_OP_AND:
        Each<T>(in, acc, n, [](T a, T b) { return static_cast<T>(a & b); });
        return;
      case GEX_OP_OR:
        Each<T>(in, acc, n, [](T a, T b) { return static_cast<T>(a | b); });
        return;
      case GEX_OP_XOR:
        Each<T>(in, acc, n, [](T a, T b) { return static_cast<T>(a ^ b); });
        return;
      default:
        break;
    }
  }
  FatalErrorF("collectives: op %#x reached the combiner unchecked", op);
}

[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void Disagree(uint32_t seq,
                                                   const char* what,
                                                   uint64_t here,
                                                   uint64_t there) {
  FatalErrorF(
      "collectives: ranks disagree on the sequence of collective calls "
      "(collective #%u: %s %u here, %u from a peer)",
      seq, what, here, there);
}

}  // namespace

Collectives::~Collectives() {
  for (Record* r : active_) delete r;
  for (Record* r : free_records_) delete r;
  for (Event* e : free_events_) delete e;
}

void Collectives::Init(Runtime* rt) {
  rt_ = rt;
  me_ = rt->rank;
  size_ = rt->size;
  am::Entry entry;
  entry.fn = reinterpret_cast<am::HandlerFn>(&CollHandler);
  entry.flags = am::kFlagMedium | am::kFlagRequest;
  entry.nargs = 7;
  entry.name = "gex collective";
  const absl::Status s = rt->handlers.Register(&entry, 1, /*internal=*/true);
  if (!s.ok()) FatalErrorF("collectives: %s", s.message());
  handler_index_ = entry.index;
}

void Collectives::InitTeam(Runtime* rt, uint32_t id, std::vector<Rank> members,
                           Rank me) {
  std::lock_guard<std::mutex> lock(mu_);
  rt_ = rt;
  handler_index_ = g_coll->handler_index_;
  team_id_ = id;
  size_ = static_cast<Rank>(members.size());
  me_ = me;
  members_ = std::move(members);
  next_seq_ = 0;
}

Collectives& JobColl() { return *g_coll; }

bool Collectives::FinishBarrier(gex_Event_t e, int32_t out[3]) {
  Event* event = static_cast<Event*>(e);
  Collectives* self = event->owner;
  self->Progress();
  std::lock_guard<std::mutex> lock(self->mu_);
  if (!event->done) return false;
  std::memcpy(out, event->barrier_value, sizeof event->barrier_value);
  event->magic = rma::kDeadEvent;
  self->free_events_.push_back(event);
  return true;
}

Collectives::Record* Collectives::Find(uint32_t seq) {
  for (Record* r : active_) {
    if (r->seq == seq) return r;
  }
  return nullptr;
}

Collectives::Record* Collectives::NewRecord(uint32_t seq) {
  Record* r;
  if (free_records_.empty()) {
    r = new Record;
  } else {
    r = free_records_.back();
    free_records_.pop_back();
  }
  r->seq = seq;
  r->started = false;
  r->call = Call{};
  r->tree_root = 0;
  r->acc = nullptr;
  for (uint64_t& got : r->child_got) got = 0;
  r->children = 0;
  r->data_got = 0;
  r->reduce_pending = r->data_pending = r->forward_pending = false;
  r->sends = 0;
  r->event = nullptr;
  active_.push_back(r);
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  return r;
}

uint32_t Collectives::Reserve() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_seq_++;
}

gex_Event_t Collectives::Start(const Call& call_in, int64_t reserved) {
  const Rank n = size_;
  const Rank me = me_;
  Call call = call_in;
  std::unique_lock<std::mutex> lock(mu_);
  Event* event;
  if (free_events_.empty()) {
    event = new Event;
    event->test = &TestEvent;
    event->owner = this;
  } else {
    event = free_events_.back();
    free_events_.pop_back();
  }
  event->done = false;
  event->magic = rma::kLiveEvent;

  const uint32_t seq =
      reserved >= 0 ? static_cast<uint32_t>(reserved) : next_seq_++;
  Record* r = Find(seq);
  if (r == nullptr) r = NewRecord(seq);
  r->started = true;
  if (call.barrier) {
    std::memcpy(r->barrier_src, call.barrier_value, sizeof r->barrier_src);
    call.src = r->barrier_src;
    call.dst = r->barrier_dst;
  }
  r->call = call;
  r->event = event;
  // What arrived before the call must fit it.
  if (r->data_got != 0 && r->early.size() != call.nbytes) {
    Disagree(seq, "bytes", call.nbytes, r->early.size());
  }
  for (unsigned k = 0; k < kMaxChildren; ++k) {
    if (r->child_got[k] != 0 && r->child[k].size() != call.nbytes) {
      Disagree(seq, "bytes", call.nbytes, r->child[k].size());
    }
  }

  bool receives = false;  // Whether dst gets kTagData.
  if (call.kind == Kind::kBroadcast) {
    const Rank v = Relative(me, call.root, n);
    if (v == 0) {
      if (call.dst != call.src) std::memcpy(call.dst, call.src, call.nbytes);
    } else {
      receives = true;
    }
    r->forward_pending = ChildBits(v, n) != 0;
  } else {
    // USER_NC needs the tree rooted at rank 0 (rank order); so does
    // ReduceToAll (it broadcasts from there).
    r->tree_root = call.kind == Kind::kReduceToAll || call.op == GEX_OP_USER_NC
                       ? 0
                       : call.root;
    const Rank v = Relative(me, r->tree_root, n);
    r->children = ChildBits(v, n);
    const bool has_dst = call.kind == Kind::kReduceToAll || me == call.root;
    if (has_dst) {
      if (call.dst != call.src) std::memcpy(call.dst, call.src, call.nbytes);
      r->acc = call.dst;
    } else if (r->children == 0) {
      r->acc = const_cast<void*>(call.src);  // Only read.
    } else {
      r->scratch.resize(call.nbytes);
      std::memcpy(r->scratch.data(), call.src, call.nbytes);
      r->acc = r->scratch.data();
    }
    r->reduce_pending = true;
    if (call.kind == Kind::kReduceToAll) {
      receives = v != 0;
      r->forward_pending = r->children != 0;
    } else if (call.root != r->tree_root) {
      receives = me == call.root;
      r->forward_pending = v == 0;  // The result, on to the root.
    }
  }
  if (receives) {
    if (r->data_got != 0) std::memcpy(call.dst, r->early.data(), call.nbytes);
    r->data_pending = true;
  }
  lock.unlock();
  Progress();
  return event;
}

void Collectives::Arrived(uint32_t seq, uint32_t tag, uint64_t offset,
                          uint64_t total, const void* data, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  Record* r = Find(seq);
  if (r == nullptr) r = NewRecord(seq);
  if (r->started && total != r->call.nbytes) {
    Disagree(seq, "bytes", r->call.nbytes, total);
  }
  if (offset > total || n > total - offset) {
    Disagree(seq, "bytes", total, offset + n);
  }
  if (tag == kTagData) {
    void* to;
    if (r->started) {
      to = r->call.dst;
    } else {
      if (r->data_got == 0) r->early.resize(total);
      to = r->early.data();
    }
    if (n != 0) std::memcpy(static_cast<unsigned char*>(to) + offset, data, n);
    r->data_got += n;
    if (r->data_got > total) Disagree(seq, "bytes", total, r->data_got);
    return;
  }
  const uint32_t k = tag - kTagChild;
  if (k >= kMaxChildren) {
    FatalErrorF("collectives: a message with the unknown tag %u", tag);
  }
  if (r->child_got[k] == 0) r->child[k].resize(total);
  if (n != 0) std::memcpy(r->child[k].data() + offset, data, n);
  r->child_got[k] += n;
  if (r->child_got[k] > total) Disagree(seq, "bytes", total, r->child_got[k]);
}

void Collectives::Combine(Record& r, unsigned k) {
  const Call& c = r.call;
  auto* acc = static_cast<unsigned char*>(r.acc);
  unsigned char* in = r.child[k].data();
  switch (c.op) {
    case GEX_OP_USER_NC:
      // acc holds the lower ranks: it is the left operand.
      c.user_op(acc, in, c.dt_cnt, c.user_cdata);
      std::memcpy(acc, in, c.nbytes);
      return;
    case GEX_OP_USER:
      c.user_op(in, acc, c.dt_cnt, c.user_cdata);
      return;
    default:
      break;
  }
  switch (c.dt) {
    case GEX_DT_I32:
      return Builtin<int32_t>(c.op, in, acc, c.dt_cnt);
    case GEX_DT_U32:
      return Builtin<uint32_t>(c.op, in, acc, c.dt_cnt);
    case GEX_DT_I64:
      return Builtin<int64_t>(c.op, in, acc, c.dt_cnt);
    case GEX_DT_U64:
      return Builtin<uint64_t>(c.op, in, acc, c.dt_cnt);
    case GEX_DT_FLT:
      return Builtin<float>(c.op, in, acc, c.dt_cnt);
    case GEX_DT_DBL:
      return Builtin<double>(c.op, in, acc, c.dt_cnt);
    default:
      FatalErrorF("collectives: dt %#x reached the combiner unchecked", c.dt);
  }
}

size_t Collectives::AdvanceOne(Record& r, Send* sends, size_t max) {
  const Rank n = size_;
  const Rank me = me_;
  const Call& c = r.call;
  size_t count = 0;
  if (r.reduce_pending) {
    // Children in order: with USER_NC the lower ranks come first.
    while (r.children != 0) {
      const unsigned k = static_cast<unsigned>(__builtin_ctz(r.children));
      if (r.child_got[k] != c.nbytes) break;
      Combine(r, k);
      r.children &= ~(1u << k);
      r.child_got[k] = 0;
    }
    if (r.children == 0) {
      const Rank v = Relative(me, r.tree_root, n);
      if (v != 0) {
        const Rank parent =
            Absolute(v - static_cast<Rank>(LowBit(v)), r.tree_root, n);
        sends[count++] =
            Send{&r, parent,
                 kTagChild + static_cast<uint32_t>(__builtin_ctz(v)), r.acc};
      }
      r.reduce_pending = false;
    }
  }
  if (r.data_pending && r.data_got == c.nbytes) r.data_pending = false;
  if (r.forward_pending && !r.reduce_pending && !r.data_pending) {
    if (c.kind == Kind::kReduceToOne) {
      sends[count++] = Send{&r, c.root, kTagData, r.acc};
    } else {
      const Rank root = c.kind == Kind::kBroadcast ? c.root : r.tree_root;
      const Rank v = Relative(me, root, n);
      const void* data = c.kind == Kind::kBroadcast && v == 0 ? c.src : c.dst;
      uint32_t bits = ChildBits(v, n);
      // The largest subtree first.
      while (bits != 0 && count < max) {
        const unsigned k = 31u - static_cast<unsigned>(__builtin_clz(bits));
        bits &= ~(1u << k);
        sends[count++] =
            Send{&r, Absolute(v + (Rank{1} << k), root, n), kTagData, data};
      }
    }
    r.forward_pending = false;
  }
  r.sends += static_cast<unsigned>(count);
  return count;
}

void Collectives::Retire(Record& r) {
  // Buffers keep their memory for the next collective, up to a limit, so
  // that one huge call does not pin its size for the rest of the job.
  const auto trim = [](std::vector<unsigned char>& v) {
    if (v.capacity() > kKeepBytes) std::vector<unsigned char>().swap(v);
  };
  trim(r.scratch);
  trim(r.early);
  for (std::vector<unsigned char>& v : r.child) trim(v);
}

size_t Collectives::Advance(Send* sends, size_t max) {
  size_t count = 0;
  for (size_t i = 0; i < active_.size();) {
    Record* r = active_[i];
    if (r->started && max - count >= kMaxChildren + 1) {
      count += AdvanceOne(*r, sends + count, max - count);
    }
    if (r->started && !r->reduce_pending && !r->data_pending &&
        !r->forward_pending && r->sends == 0) {
      if (r->call.barrier) {
        std::memcpy(r->event->barrier_value, r->barrier_dst,
                    sizeof r->barrier_dst);
      }
      r->event->done = true;
      r->event = nullptr;
      active_[i] = active_.back();
      active_.pop_back();
      Retire(*r);
      free_records_.push_back(r);
      in_flight_.fetch_sub(1, std::memory_order_relaxed);
      continue;
    }
    ++i;
  }
  return count;
}

void Collectives::Progress() {
  // The common case in gasnet_AMPoll: nothing in flight, no lock.
  if (in_flight_.load(std::memory_order_relaxed) == 0) return;
  for (;;) {
    Send sends[kMaxSends];
    size_t count;
    {
      std::lock_guard<std::mutex> lock(mu_);
      count = Advance(sends, kMaxSends);
    }
    if (count == 0) return;
    // A send may wait for queue space and poll, which runs handlers that
    // take mu_: so outside the lock. The record stays (its sends count).
    for (size_t i = 0; i < count; ++i) SendAll(sends[i]);
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < count; ++i) --sends[i].record->sends;
  }
}

void Collectives::SendAll(const Send& s) {
  // The record's number and call do not change while it has sends.
  const uint64_t total = s.record->call.nbytes;
  const auto* data = static_cast<const unsigned char*>(s.data);
  // Pieces of the largest Medium every destination takes.
  const size_t piece = rt_->max_medium;
  for (uint64_t offset = 0; offset < total; offset += piece) {
    const size_t len =
        static_cast<size_t>(total - offset < piece ? total - offset : piece);
    const uint32_t args[7] = {s.record->seq,
                              s.tag,
                              static_cast<uint32_t>(offset),
                              static_cast<uint32_t>(offset >> 32),
                              static_cast<uint32_t>(total),
                              static_cast<uint32_t>(total >> 32),
                              team_id_};
    core::Request(*rt_, JobRank(s.peer), am::Category::kMedium, handler_index_,
                  args, 7, data + offset, len, 0, nullptr, /*immediate=*/false);
  }
}

bool Collectives::TestEvent(gex_Event_opaque* e) {
  Event* event = static_cast<Event*>(e);
  Collectives* self = event->owner;
  self->Progress();
  std::lock_guard<std::mutex> lock(self->mu_);
  if (!event->done) return false;
  event->magic = rma::kDeadEvent;
  self->free_events_.push_back(event);
  return true;
}

void CollInit(Runtime& rt) {
  g_coll = new Collectives;
  g_coll->Init(&rt);
  rt.progress.Add(
      [](void* coll) { static_cast<Collectives*>(coll)->Progress(); }, g_coll);
  // Sub-teams' collectives (api/team.h): registered now, while the process
  // is single-threaded, for teams made later.
  rt.progress.Add(&ProgressTeams, nullptr);
}

// ---------------------------------------------------------------------------
// Checks for the C API calls.

namespace {

const char* OpName(gex_OP_t op) {
  switch (op) {
    case GEX_OP_ADD:
      return "GEX_OP_ADD";
    case GEX_OP_MULT:
      return "GEX_OP_MULT";
    case GEX_OP_MIN:
      return "GEX_OP_MIN";
    case GEX_OP_MAX:
      return "GEX_OP_MAX";
    case GEX_OP_SUB:
      return "GEX_OP_SUB";
    case GEX_OP_INC:
      return "GEX_OP_INC";
    case GEX_OP_DEC:
      return "GEX_OP_DEC";
    case GEX_OP_AND:
      return "GEX_OP_AND";
    case GEX_OP_OR:
      return "GEX_OP_OR";
    case GEX_OP_XOR:
      return "GEX_OP_XOR";
    case GEX_OP_SET:
      return "GEX_OP_SET";
    case GEX_OP_CAS:
      return "GEX_OP_CAS";
    case GEX_OP_FADD:
      return "GEX_OP_FADD";
    case GEX_OP_FMULT:
      return "GEX_OP_FMULT";
    case GEX_OP_FMIN:
      return "GEX_OP_FMIN";
    case GEX_OP_FMAX:
      return "GEX_OP_FMAX";
    case GEX_OP_FSUB:
      return "GEX_OP_FSUB";
    case GEX_OP_FINC:
      return "GEX_OP_FINC";
    case GEX_OP_FDEC:
      return "GEX_OP_FDEC";
    case GEX_OP_FAND:
      return "GEX_OP_FAND";
    case GEX_OP_FOR:
      return "GEX_OP_FOR";
    case GEX_OP_FXOR:
      return "GEX_OP_FXOR";
    case GEX_OP_SWAP:
      return "GEX_OP_SWAP";
    case GEX_OP_FCAS:
      return "GEX_OP_FCAS";
    case GEX_OP_GET:
      return "GEX_OP_GET";
    case GEX_OP_USER:
      return "GEX_OP_USER";
    case GEX_OP_USER_NC:
      return "GEX_OP_USER_NC";
    default:
      return nullptr;
  }
}

// The C type's size for a built-in type, 0 for GEX_DT_USER, -1 for a value
// that is not a data type; *name its name.
int DtSize(gex_DT_t dt, const char** name) {
  switch (dt) {
    case GEX_DT_I32:
      *name = "GEX_DT_I32";
      return 4;
    case GEX_DT_U32:
      *name = "GEX_DT_U32";
      return 4;
    case GEX_DT_I64:
      *name = "GEX_DT_I64";
      return 8;
    case GEX_DT_U64:
      *name = "GEX_DT_U64";
      return 8;
    case GEX_DT_FLT:
      *name = "GEX_DT_FLT";
      return 4;
    case GEX_DT_DBL:
      *name = "GEX_DT_DBL";
      return 8;
    case GEX_DT_USER:
      *name = "GEX_DT_USER";
      return 0;
    default:
      *name = nullptr;
      return -1;
  }
}

// The team, after the checks every collective makes: a live team of this
// client (not a pair), and not from a handler.
TeamView CollRuntime(const char* call, gex_TM_t tm) {
  const TeamView v = CollTeam(call, tm);
  if (ABSL_PREDICT_FALSE(am::HandlerContext::InHandler())) {
    FatalErrorF("%s: called from an AM handler", call);
  }
  return v;
}

void CheckRoot(const char* call, Rank root, const TeamView& v) {
  if (ABSL_PREDICT_FALSE(root >= v.size)) {
    FatalErrorF("%s: root %u is not in the team (size %u)", call, root, v.size);
  }
}

// A buffer of `nbytes` (not 0) at `p`, named `what`.
void CheckBuffer(const char* call, const char* what, const void* p,
                 size_t nbytes) {
  if (ABSL_PREDICT_FALSE(p == nullptr)) {
    FatalErrorF("%s: %s is NULL (with %zu bytes to move)", call, what, nbytes);
  }
  if (ABSL_PREDICT_FALSE(nbytes - 1 >
                         UINTPTR_MAX - reinterpret_cast<uintptr_t>(p))) {
    FatalErrorF("%s: %s %p + %zu bytes wraps the address space", call, what, p,
                nbytes);
  }
}

void CheckSize(const char* call, const char* what, size_t nbytes) {
  if (ABSL_PREDICT_FALSE(nbytes > static_cast<size_t>(PTRDIFF_MAX))) {
    FatalErrorF("%s: %s %zu is too large (a negative size?)", call, what,
                nbytes);
  }
}

// The reduction's arguments; returns dt_sz * dt_cnt.
size_t CheckReduction(const char* call, gex_DT_t dt, size_t dt_sz,
                      size_t dt_cnt, gex_OP_t op, gex_Coll_ReduceFn_t user_op) {
  const char* dt_name;
  const int size = DtSize(dt, &dt_name);
  if (ABSL_PREDICT_FALSE(size < 0)) {
    FatalErrorF(
        "%s: dt %#x is not a data type (GEX_DT_I32, U32, I64, U64, FLT, "
        "DBL or USER)",
        call, dt);
  }
  const char* op_name = OpName(op);
  if (ABSL_PREDICT_FALSE(op_name == nullptr)) {
    FatalErrorF("%s: op %#x is not an operation code (GEX_OP_*)", call, op);
  }
  constexpr gex_OP_t kReductionOps = GEX_OP_ADD | GEX_OP_MULT | GEX_OP_MIN |
                                     GEX_OP_MAX | GEX_OP_AND | GEX_OP_OR |
                                     GEX_OP_XOR | GEX_OP_USER | GEX_OP_USER_NC;
  if (ABSL_PREDICT_FALSE((op & kReductionOps) == 0)) {
    FatalErrorF(
        "%s: %s is not a reduction operation (ADD, MULT, MIN, MAX, AND, OR, "
        "XOR, USER, USER_NC)",
        call, op_name);
  }
  const bool user = op == GEX_OP_USER || op == GEX_OP_USER_NC;
  if (ABSL_PREDICT_FALSE(dt == GEX_DT_USER && !user)) {
    FatalErrorF(
        "%s: GEX_DT_USER takes only GEX_OP_USER or GEX_OP_USER_NC, "
        "not %s",
        call, op_name);
  }
  if (ABSL_PREDICT_FALSE(
          (dt == GEX_DT_FLT || dt == GEX_DT_DBL) &&
          (op == GEX_OP_AND || op == GEX_OP_OR || op == GEX_OP_XOR))) {
    FatalErrorF(
        "%s: %s is not defined for %s (bitwise operations take "
        "integer types)",
        call, op_name, dt_name);
  }
  if (ABSL_PREDICT_FALSE(user && user_op == nullptr)) {
    FatalErrorF("%s: user_op is NULL with %s", call, op_name);
  }
  if (ABSL_PREDICT_FALSE(dt_sz == 0)) {
    FatalErrorF("%s: dt_sz is 0", call);
  }
  if (ABSL_PREDICT_FALSE(size > 0 && dt_sz != static_cast<size_t>(size))) {
    FatalErrorF("%s: dt_sz %zu does not match %s (%d bytes)", call, dt_sz,
                dt_name, size);
  }
  if (ABSL_PREDICT_FALSE(dt_cnt != 0 &&
                         dt_sz > static_cast<size_t>(PTRDIFF_MAX) / dt_cnt)) {
    FatalErrorF("%s: dt_sz %zu * dt_cnt %zu overflows", call, dt_sz, dt_cnt);
  }
  return dt_sz * dt_cnt;
}

// Starts a checked reduction (both ReduceTo calls).
gex_Event_t StartReduction(Collectives& coll, Collectives::Kind kind, Rank root,
                           void* dst, const void* src, size_t nbytes,
                           gex_DT_t dt, size_t dt_sz, size_t dt_cnt,
                           gex_OP_t op, gex_Coll_ReduceFn_t user_op,
                           void* user_cdata) {
  Collectives::Call call;
  call.kind = kind;
  call.root = root;
  call.dst = dst;
  call.src = src;
  call.nbytes = nbytes;
  call.dt = dt;
  call.dt_sz = dt_sz;
  call.dt_cnt = dt_cnt;
  call.op = op;
  call.user_op = user_op;
  call.user_cdata = user_cdata;
  return coll.Start(call);
}

}  // namespace
}  // namespace gexrt::api

using gexrt::api::Collectives;
using gexrt::api::CollRuntime;

extern "C" {

gex_Event_t gex_Coll_BroadcastNB(gex_TM_t tm, gex_Rank_t root, void* dst,
                                 const void* src, size_t nbytes, gex_Flags_t) {
  static constexpr char kCall[] = "gex_Coll_BroadcastNB";
  const gexrt::api::TeamView v = CollRuntime(kCall, tm);
  gexrt::api::CheckRoot(kCall, root, v);
  gexrt::api::CheckSize(kCall, "nbytes", nbytes);
  if (nbytes == 0) return GEX_EVENT_INVALID;
  gexrt::api::CheckBuffer(kCall, "dst", dst, nbytes);
  if (v.rank == root) gexrt::api::CheckBuffer(kCall, "src", src, nbytes);
  Collectives::Call call;
  call.kind = Collectives::Kind::kBroadcast;
  call.root = root;
  call.dst = dst;
  call.src = src;
  call.nbytes = nbytes;
  return gexrt::api::TeamColl(v).Start(call);
}

gex_Event_t gex_Coll_ReduceToOneNB(gex_TM_t tm, gex_Rank_t root, void* dst,
                                   const void* src, gex_DT_t dt, size_t dt_sz,
                                   size_t dt_cnt, gex_OP_t op,
                                   gex_Coll_ReduceFn_t user_op,
                                   void* user_cdata, gex_Flags_t) {
  static constexpr char kCall[] = "gex_Coll_ReduceToOneNB";
  const gexrt::api::TeamView v = CollRuntime(kCall, tm);
  gexrt::api::CheckRoot(kCall, root, v);
  const size_t nbytes =
      gexrt::api::CheckReduction(kCall, dt, dt_sz, dt_cnt, op, user_op);
  if (nbytes == 0) return GEX_EVENT_INVALID;
  gexrt::api::CheckBuffer(kCall, "src", src, nbytes);
  if (v.rank == root) gexrt::api::CheckBuffer(kCall, "dst", dst, nbytes);
  return gexrt::api::StartReduction(
      gexrt::api::TeamColl(v), Collectives::Kind::kReduceToOne, root, dst, src,
      nbytes, dt, dt_sz, dt_cnt, op, user_op, user_cdata);
}

gex_Event_t gex_Coll_ReduceToAllNB(gex_TM_t tm, void* dst, const void* src,
                                   gex_DT_t dt, size_t dt_sz, size_t dt_cnt,
                                   gex_OP_t op, gex_Coll_ReduceFn_t user_op,
                                   void* user_cdata, gex_Flags_t) {
  static constexpr char kCall[] = "gex_Coll_ReduceToAllNB";
  const gexrt::api::TeamView v = CollRuntime(kCall, tm);
  const size_t nbytes =
      gexrt::api::CheckReduction(kCall, dt, dt_sz, dt_cnt, op, user_op);
  if (nbytes == 0) return GEX_EVENT_INVALID;
  gexrt::api::CheckBuffer(kCall, "src", src, nbytes);
  gexrt::api::CheckBuffer(kCall, "dst", dst, nbytes);
  return gexrt::api::StartReduction(
      gexrt::api::TeamColl(v), Collectives::Kind::kReduceToAll, 0, dst, src,
      nbytes, dt, dt_sz, dt_cnt, op, user_op, user_cdata);
}

}  // extern "C"
