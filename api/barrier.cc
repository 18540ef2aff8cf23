#include "api/barrier.h"

#include <algorithm>

#include "am/handler_table.h"
#include "api/runtime.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "bootstrap/supernode_groups.h"
#include "core/router.h"
#include "pshm/supernode.h"

namespace gexrt::api {
namespace {

// Argument 0: the barrier's slot | round << 8; 1: flags; 2: the name.
constexpr int32_t kAnonymousBit = 1;
constexpr int32_t kMismatchBit = 2;

void BarrierHandler(gex_Token_t, gex_AM_Arg_t where, gex_AM_Arg_t flags,
                    gex_AM_Arg_t id) {
  Barrier::Value v;
  v.anonymous = (flags & kAnonymousBit) != 0;
  v.mismatch = (flags & kMismatchBit) != 0;
  v.id = id;
  g_runtime->barrier.Arrived(static_cast<unsigned>(where) & 0xffu,
                             static_cast<unsigned>(where) >> 8, v);
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

int Barrier::WaitResult(const Value& outcome, int id, int flags) {
  if (outcome.mismatch) return GASNET_ERR_BARRIER_MISMATCH;
  const bool named_wait = (flags & GASNET_BARRIERFLAG_ANONYMOUS) == 0;
  if (named_wait && !outcome.anonymous && outcome.id != id) {
    return GASNET_ERR_BARRIER_MISMATCH;
  }
  return GASNET_OK;
}

Barrier::~Barrier() {
  for (Event* e : free_events_) delete e;
}

void Barrier::Init(Runtime* rt) {
  rt_ = rt;
  rounds_ = 0;
  am::Entry entry;
  entry.fn = reinterpret_cast<am::HandlerFn>(&BarrierHandler);
  entry.flags = am::kFlagShort | am::kFlagRequest;
  entry.nargs = 3;
  entry.name = "gex barrier";
  const absl::Status s = rt->handlers.Register(&entry, 1, /*internal=*/true);
  if (!s.ok()) FatalErrorF("barrier: %s", s.message());
  handler_index_ = entry.index;
  rt->progress.Add(
      [](void* barrier) { static_cast<Barrier*>(barrier)->Progress(); }, this);
}

void Barrier::AttachShared() {
  Bootstrap& bootstrap = *rt_->bootstrap;
  const pshm::Supernode& sn = *rt_->supernode;
  const SupernodeGroups g = SupernodeGroups::Find(
      bootstrap, static_cast<uint32_t>(sn.members().size()), sn.my_index(),
      static_cast<uint32_t>(
          env::GetInt("GEX_BARRIER_GROUP", 0, 0, int64_t{1} << 20)));
  members_ = g.members;
  my_index_ = sn.my_index();
  group_ = g.group;
  group_first_ = g.first;
  group_size_ = g.size;
  leader_ = g.leader;
  flags_per_slot_ = members_ + g.groups;
  leaders_ = g.leaders;
  if (leader_) my_leader_ = static_cast<uint32_t>(g.my_leader);
  rounds_ = g.rounds;

  absl::StatusOr<pshm::SharedObject> shared =
      pshm::ShareWithSupernode(bootstrap, sn, pshm::SharedSerial::kBarrier,
                               sizeof(Flag) * kSlots * flags_per_slot_);
  if (!shared.ok()) FatalErrorF("barrier: %s", shared.status().message());
  object_ = *std::move(shared);
  area_ = static_cast<Flag*>(object_.address());
}

void Barrier::Publish(Flag& f, uint32_t number, const Value& v) {
  f.flags.store(
      (v.anonymous ? kAnonymousBit : 0) | (v.mismatch ? kMismatchBit : 0),
      std::memory_order_relaxed);
  f.id.store(v.id, std::memory_order_relaxed);
  f.number.store(number + 1, std::memory_order_release);
}

Barrier::Value Barrier::Read(const Flag& f) {
  const int32_t flags = f.flags.load(std::memory_order_relaxed);
  Value v;
  v.anonymous = (flags & kAnonymousBit) != 0;
  v.mismatch = (flags & kMismatchBit) != 0;
  v.id = f.id.load(std::memory_order_relaxed);
  return v;
}

gex_Event_t Barrier::Notify(int32_t id, bool anonymous, bool mismatch) {
  std::unique_lock<std::mutex> lock(mu_);
  while (next_number_ - oldest_incomplete_ >= kWindow) {
    lock.unlock();
    WaitProgress(*rt_);
    lock.lock();
  }
  Event* event;
  if (free_events_.empty()) {
    event = new Event;
    event->test = &TestEvent;
    event->barrier = this;
  } else {
    event = free_events_.back();
    free_events_.pop_back();
  }
  event->done = false;
  Instance& in = instances_[next_number_ % kSlots];
  in.active = true;
  in.number = next_number_++;
  in.gathered = false;
  in.sent = 0;
  in.mine = Value{anonymous, mismatch, id};
  in.event = event;
  if (!leader_)
    Publish(ArriveFlag(in.number % kSlots, my_index_), in.number, in.mine);
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  lock.unlock();
  Progress();
  return event;
}

size_t Barrier::Advance(Send* sends, size_t max) {
  size_t n = 0;
  for (uint32_t number = oldest_incomplete_; number != next_number_; ++number) {
    Instance& in = instances_[number % kSlots];
    if (!in.active) continue;
    const unsigned slot = number % kSlots;
    if (!leader_) {
      // The leader publishes the outcome on the group's release flag.
      const Flag& release = ReleaseFlag(slot);
      if (release.number.load(std::memory_order_acquire) != number + 1) {
        continue;
      }
      in.mine = Read(release);
    } else {
      if (!in.gathered) {
        bool all = true;
        for (uint32_t m = group_first_ + 1; m < group_first_ + group_size_;
             ++m) {
          if (ArriveFlag(slot, m).number.load(std::memory_order_acquire) !=
              number + 1) {
            all = false;
            break;
          }
        }
        if (!all) continue;
        for (uint32_t m = group_first_ + 1; m < group_first_ + group_size_;
             ++m) {
          in.mine = Merge(in.mine, Read(ArriveFlag(slot, m)));
        }
        in.gathered = true;
      }
      while (in.sent < rounds_ && n < max) {
        if (in.sent > 0) {
          const Arrival& prev = in.arrivals[in.sent - 1];
          if (!prev.arrived) break;
          in.mine = Merge(in.mine, prev.value);
        }
        sends[n++] = Send{in.number, in.sent++, in.mine};
      }
      if (in.sent != rounds_) continue;
      if (rounds_ != 0) {
        Arrival& last = in.arrivals[rounds_ - 1];
        if (!last.arrived) continue;
        in.mine = Merge(in.mine, last.value);
      }
      for (uint32_t r = 0; r < rounds_; ++r) in.arrivals[r].arrived = false;
      if (group_size_ > 1) Publish(ReleaseFlag(slot), number, in.mine);
    }
    in.event->result = in.mine;
    in.event->done = true;
    in.event = nullptr;
    in.active = false;
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
  }
  while (oldest_incomplete_ != next_number_ &&
         !instances_[oldest_incomplete_ % kSlots].active) {
    ++oldest_incomplete_;
  }
  return n;
}

void Barrier::Progress() {
  // The common case in gasnet_AMPoll: nothing in flight, no lock.
  if (in_flight_.load(std::memory_order_relaxed) == 0) return;
  for (;;) {
    Send sends[8];
    size_t n;
    {
      std::lock_guard<std::mutex> lock(mu_);
      n = Advance(sends, 8);
    }
    if (n == 0) return;
    // Sending may wait for queue space and poll, which runs handlers that
    // take mu_: so outside the lock.
    for (size_t i = 0; i < n; ++i) SendRound(sends[i]);
  }
}

void Barrier::SendRound(const Send& s) {
  const Rank peer =
      leaders_[(my_leader_ + (size_t{1} << s.round)) % leaders_.size()];
  const int32_t flags = (s.value.anonymous ? kAnonymousBit : 0) |
                        (s.value.mismatch ? kMismatchBit : 0);
  const uint32_t args[3] = {(s.number % kSlots) | (s.round << 8),
                            static_cast<uint32_t>(flags),
                            static_cast<uint32_t>(s.value.id)};
  // Leaders of other supernodes: the router picks PSHM or the conduit.
  core::Request(*rt_, peer, am::Category::kShort, handler_index_, args, 3,
                nullptr, 0, 0, nullptr, /*immediate=*/false);
}

bool Barrier::Finish(gex_Event_t handle, Value* result) {
  Progress();
  auto* event = static_cast<Event*>(handle);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!event->done) return false;
    *result = event->result;
    free_events_.push_back(event);
  }
  // This rank is done with the barrier, but a peer may still wait for the
  // last message it sent in it: that is handed to the network before the
  // client can go off computing without polling (Conduit::FlushSends;
  // outside mu_, as its polls run barrier handlers).
  core::FlushSends(*rt_);
  return true;
}

void Barrier::Arrived(unsigned slot, unsigned round, const Value& value) {
  std::lock_guard<std::mutex> lock(mu_);
  Arrival& a = instances_[slot % kSlots].arrivals[round % kMaxRounds];
  if (round >= rounds_ || a.arrived) {
    FatalErrorF(
        "barrier: unexpected message for round %u (of %u); ranks disagree "
        "on the barrier sequence",
        round, rounds_);
  }
  a = Arrival{true, value};
}

bool Barrier::TestEvent(gex_Event_opaque* e) {
  Event* event = static_cast<Event*>(e);
  Value ignored;
  return event->barrier->Finish(event, &ignored);
}

}  // namespace gexrt::api
