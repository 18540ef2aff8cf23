// The job-wide barrier: split phase, with GASNet-1's optional names and
// mismatch detection, hierarchical. The ranks of a supernode are split into
// groups (the whole supernode by default; GEX_BARRIER_GROUP=k makes groups
// of k, 1 being a plain dissemination over all ranks, for tests). A rank
// arrives on its own flag in its supernode's shared barrier area; the
// group's first rank (its leader) gathers the group's flags, runs a
// dissemination barrier with the other leaders over internal Active
// Messages (ceil(log2 L) rounds for L leaders; in round k a leader tells
// leader + 2^k and hears from leader - 2^k), then publishes the outcome on
// the group's release flag. On smp (one supernode) the barrier is shared
// memory only. Each message and flag carries what its sender has learned so
// far (named or not, the name, mismatch seen), and the merge is
// commutative, associative and idempotent, so after the last round every
// rank knows whether any two ranks disagreed.
//
// Several barriers may be in flight at once (gex_Coll_BarrierNB may be
// called again before the first completes, and they may be retired in any
// order). Barriers are numbered in notify order; a rank has at most
// kWindow of its own incomplete; messages carry the number modulo
// 2 * kWindow, and flags live in the slot of that number (and hold the
// number itself). That is enough: a peer can start barrier q only after
// completing q - kWindow, which needed this rank's notify of q - kWindow,
// at which point this rank had completed q - 2 * kWindow, the last user of
// q's slot (a flag of q - 2 * kWindow is read before that barrier
// completes anywhere, so it is never overwritten unread).
#ifndef GEX_API_BARRIER_H_
#define GEX_API_BARRIER_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "api/event.h"
#include "bootstrap/bootstrap.h"
#include "gasnetex.h"
#include "pshm/shared_object.h"

namespace gexrt::api {

class Runtime;

class Barrier {
 public:
  // What a rank contributes and what the ranks agreed on.
  struct Value {
    bool anonymous = true;
    bool mismatch = false;
    int32_t id = 0;
  };
  static Value Merge(const Value& a, const Value& b);
  // What gasnet_barrier_wait / _try (and gasnet_coll_barrier_wait / _try)
  // return for the barrier whose merged notifies were `outcome`, waited
  // with `id` and `flags` (GASNet-1 spec, gasnet_barrier_wait; as GASNet-EX
  // implements it, the wait's name is checked against the barrier's, not
  // against this rank's notify): GASNET_ERR_BARRIER_MISMATCH when the
  // notifies disagreed (two names, or GASNET_BARRIERFLAG_MISMATCH), or when
  // the wait is named (no GASNET_BARRIERFLAG_ANONYMOUS) and some rank named
  // the barrier with another id; GASNET_OK otherwise. So an anonymous wait
  // matches any barrier, and a named wait any barrier no rank named.
  static int WaitResult(const Value& outcome, int id, int flags);

  static constexpr uint32_t kWindow = 16;

  Barrier() = default;
  Barrier(const Barrier&) = delete;
  Barrier& operator=(const Barrier&) = delete;
  ~Barrier();

  // Registers the internal handler. Called once at init.
  void Init(Runtime* rt);
  // Once the supernode is up (collective over the job; gex_Client_Init
  // calls it before returning, so before any Notify): creates or maps the
  // supernode's shared barrier area, forms the groups and finds the
  // leaders (reads GEX_BARRIER_GROUP). A failure is fatal.
  void AttachShared();

  // Starts this rank's part of the next barrier and returns its event,
  // which completes when every rank has notified it (gex_Event_Test/Wait,
  // or Finish). Waits, making progress, while kWindow of this rank's
  // barriers are incomplete.
  gex_Event_t Notify(int32_t id, bool anonymous, bool mismatch);
  // If `event` (from Notify) has completed: its outcome in *result, the
  // event released, true.
  bool Finish(gex_Event_t event, Value* result);
  // Sends what can be sent and completes what can be completed. Cheap
  // (one atomic load) when no barrier is in flight.
  void Progress();

  // For the handler: round `round` of the barrier in slot `slot` arrived
  // carrying `value`.
  void Arrived(unsigned slot, unsigned round, const Value& value);

 private:
  static constexpr unsigned kSlots = 2 * kWindow;
  static constexpr unsigned kMaxRounds = 32;

  struct Event : gex_Event_opaque {
    Barrier* barrier = nullptr;
    bool done = false;
    Value result;
  };
  struct Arrival {
    bool arrived = false;
    Value value;
  };
  struct Instance {
    bool active = false;
    uint32_t number = 0;
    bool gathered = false;  // Leader: the group's flags merged into mine.
    uint32_t sent = 0;      // Rounds sent.
    Value mine;             // Merged so far.
    Event* event = nullptr;
    Arrival arrivals[kMaxRounds];
  };
  struct Send {
    uint32_t number;
    uint32_t round;
    Value value;
  };

  // One rank's flag in the shared area: the barrier number + 1 (0: none
  // yet), written last with release order, and the value.
  struct alignas(64) Flag {
    std::atomic<uint32_t> number;
    std::atomic<int32_t> flags;
    std::atomic<int32_t> id;
  };
  static void Publish(Flag& f, uint32_t number, const Value& v);
  static Value Read(const Flag& f);
  // The flags of slot `slot`: arrivals by supernode index, releases by
  // group.
  Flag& ArriveFlag(unsigned slot, uint32_t index) const {
    return area_[slot * flags_per_slot_ + index];
  }
  Flag& ReleaseFlag(unsigned slot) const {
    return area_[slot * flags_per_slot_ + members_ + group_];
  }

  static bool TestEvent(gex_Event_opaque* e);
  // Under mu_: the sends that have become possible (at most `max`), and
  // completes instances whose last round arrived.
  size_t Advance(Send* sends, size_t max);
  void SendRound(const Send& s);

  Runtime* rt_ = nullptr;
  uint8_t handler_index_ = 0;
  uint32_t rounds_ = 0;  // Among the leaders.
  // The shared area (kSlots x flags_per_slot_ flags) and this rank's place.
  pshm::SharedObject object_ = pshm::SharedObject::Empty();
  Flag* area_ = nullptr;
  uint32_t members_ = 1;  // In the supernode.
  uint32_t flags_per_slot_ = 2;
  uint32_t my_index_ = 0;     // In the supernode.
  uint32_t group_ = 0;        // Which group of the supernode.
  uint32_t group_first_ = 0;  // Its leader's supernode index.
  uint32_t group_size_ = 1;
  bool leader_ = true;
  std::vector<Rank> leaders_;  // Every group's leader, in rank order.
  uint32_t my_leader_ = 0;     // This leader's place in leaders_.
  std::mutex mu_;  // PAR: handlers on other threads, concurrent progress.
  std::atomic<uint32_t> in_flight_{0};
  uint32_t next_number_ = 0;
  uint32_t oldest_incomplete_ = 0;
  Instance instances_[kSlots];
  std::vector<Event*> free_events_;
};

}  // namespace gexrt::api

#endif  // GEX_API_BARRIER_H_
