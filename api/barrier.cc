#include "api/barrier.h"

#include <algorithm>

#include "am/handler_table.h"
#include "api/runtime.h"
#include "base/fatal.h"

namespace gex::api {
namespace {

// Argument 0: parity | round << 1; 1: flags; 2: the name.
constexpr int32_t kAnonymousBit = 1;
constexpr int32_t kMismatchBit = 2;

void BarrierHandler(gex_Token_t, gex_AM_Arg_t where, gex_AM_Arg_t flags,
                    gex_AM_Arg_t id) {
  Barrier::Value v;
  v.anonymous = (flags & kAnonymousBit) != 0;
  v.mismatch = (flags & kMismatchBit) != 0;
  v.id = id;
  g_runtime->barrier.Arrived(static_cast<unsigned>(where) & 1u,
                             static_cast<unsigned>(where) >> 1, v);
}

}  // namespace

Barrier::Value Barrier::Merge(const Value& a, const Value& b) {
  Value r;
  r.mismatch = a.mismatch || b.mismatch ||
               (!a.anonymous && !b.anonymous && a.id != b.id);
  // The smaller name when both are named: any fixed choice works for the
  // outcome (a mismatch is sticky), and this one keeps the merge
  // commutative and associative, so every rank ends with the same value.
  r.anonymous = a.anonymous && b.anonymous;
  r.id = a.anonymous ? b.id : b.anonymous ? a.id : std::min(a.id, b.id);
  return r;
}

void Barrier::Init(Runtime* rt) {
  rt_ = rt;
  rounds_ = 0;
  while ((Rank{1} << rounds_) < rt->size) ++rounds_;
  event_.test = &TestEvent;
  event_.barrier = this;
  am::Entry entry;
  entry.fn = reinterpret_cast<am::HandlerFn>(&BarrierHandler);
  entry.flags = am::kFlagShort | am::kFlagRequest;
  entry.nargs = 3;
  entry.name = "gex barrier";
  const absl::Status s = rt->handlers.Register(&entry, 1, /*internal=*/true);
  if (!s.ok()) FatalErrorF("barrier: %s", s.message());
  handler_index_ = entry.index;
}

void Barrier::Notify(int32_t id, bool anonymous, bool mismatch,
                     const char* call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (active_) {
      FatalErrorF(
          "%s: a barrier is already in progress (notify called twice "
          "without a wait)",
          call);
    }
    active_.store(true, std::memory_order_relaxed);
    sent_ = 0;
    mine_ = Value{anonymous, mismatch, id};
  }
  Progress();
}

void Barrier::Progress() {
  if (!active()) return;  // The common case in gasnet_AMPoll: no lock.
  for (;;) {
    uint32_t round;
    Value value;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!active_ || sent_ == rounds_) return;
      const unsigned parity = phase_ & 1u;
      if (sent_ > 0) {
        const Slot& prev = slots_[parity][sent_ - 1];
        if (!prev.arrived) return;
        mine_ = Merge(mine_, prev.value);
      }
      round = sent_++;
      value = mine_;
    }
    const Rank peer = (rt_->rank + (Rank{1} << round)) % rt_->size;
    const int32_t flags = (value.anonymous ? kAnonymousBit : 0) |
                          (value.mismatch ? kMismatchBit : 0);
    const uint32_t args[3] = {(phase_ & 1u) | (round << 1),
                              static_cast<uint32_t>(flags),
                              static_cast<uint32_t>(value.id)};
    rt_->net->Send(pshm::Channel::kRequest, rt_->supernode->LocalIndex(peer),
                   pshm::Category::kShort, handler_index_, args, 3, nullptr, 0,
                   nullptr, 0, /*immediate=*/false);
  }
}

bool Barrier::TryFinish(Value* result, const char* call) {
  Progress();
  std::lock_guard<std::mutex> lock(mu_);
  if (!active_) {
    FatalErrorF("%s: no barrier in progress (wait without a notify)", call);
  }
  const unsigned parity = phase_ & 1u;
  if (sent_ != rounds_) return false;
  if (rounds_ != 0) {
    Slot& last = slots_[parity][rounds_ - 1];
    if (!last.arrived) return false;
    mine_ = Merge(mine_, last.value);
  }
  for (uint32_t r = 0; r < rounds_; ++r) slots_[parity][r].arrived = false;
  *result = mine_;
  ++phase_;
  active_.store(false, std::memory_order_relaxed);
  return true;
}

void Barrier::Arrived(unsigned parity, unsigned round, const Value& value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (round >= rounds_ || slots_[parity][round].arrived) {
    FatalErrorF(
        "barrier: unexpected message for round %u (of %u); ranks disagree "
        "on the barrier sequence",
        round, rounds_);
  }
  slots_[parity][round] = Slot{true, value};
}

bool Barrier::TestEvent(gex_Event_opaque* e) {
  Barrier* self = static_cast<Event*>(e)->barrier;
  Value ignored;
  return self->TryFinish(&ignored, "gex_Event_Test (barrier)");
}

}  // namespace gex::api
