// The job-wide barrier: split phase, with GASNet-1's optional names and
// mismatch detection, as a dissemination barrier over internal Active
// Messages (ceil(log2 N) rounds; in round k a rank tells rank + 2^k and
// hears from rank - 2^k). Each message carries what its sender has
// learned so far (named or not, the name, mismatch seen), and the merge is
// commutative, associative and idempotent, so after the last round every
// rank knows whether any two ranks disagreed.
//
// Several barriers may be in flight at once (gex_Coll_BarrierNB may be
// called again before the first completes, and they may be retired in any
// order). Barriers are numbered in notify order; a rank has at most
// kWindow of its own incomplete, and messages carry the number modulo
// 2 * kWindow. That is enough: a peer can start barrier q only after
// completing q - kWindow, which needed this rank's notify of q - kWindow,
// at which point this rank had completed q - 2 * kWindow, the last user of
// q's slot.
#ifndef GEX_API_BARRIER_H_
#define GEX_API_BARRIER_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "api/event.h"
#include "gasnetex.h"

namespace gex::api {

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

  static constexpr uint32_t kWindow = 16;

  Barrier() = default;
  Barrier(const Barrier&) = delete;
  Barrier& operator=(const Barrier&) = delete;
  ~Barrier();

  // Registers the internal handler. Called once at init.
  void Init(Runtime* rt);

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
    uint32_t sent = 0;  // Rounds sent.
    Value mine;         // Merged so far.
    Event* event = nullptr;
    Arrival arrivals[kMaxRounds];
  };
  struct Send {
    uint32_t number;
    uint32_t round;
    Value value;
  };

  static bool TestEvent(gex_Event_opaque* e);
  // Under mu_: the sends that have become possible (at most `max`), and
  // completes instances whose last round arrived.
  size_t Advance(Send* sends, size_t max);
  void SendRound(const Send& s);

  Runtime* rt_ = nullptr;
  uint8_t handler_index_ = 0;
  uint32_t rounds_ = 0;
  std::mutex mu_;  // PAR: handlers on other threads, concurrent progress.
  std::atomic<uint32_t> in_flight_{0};
  uint32_t next_number_ = 0;
  uint32_t oldest_incomplete_ = 0;
  Instance instances_[kSlots];
  std::vector<Event*> free_events_;
};

}  // namespace gex::api

#endif  // GEX_API_BARRIER_H_
