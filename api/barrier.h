// The job-wide barrier: split phase, with GASNet-1's optional names and
// mismatch detection, as a dissemination barrier over internal Active
// Messages (ceil(log2 N) rounds; in round k a rank tells rank + 2^k and
// hears from rank - 2^k). Each message carries what its sender has
// learned so far (named or not, the name, mismatch seen), and the merge is
// idempotent, so after the last round every rank knows whether any two
// ranks disagreed.
//
// A peer can be at most one barrier ahead (it cannot finish a barrier
// without this rank), so state is kept for two barriers, by parity.
#ifndef GEX_API_BARRIER_H_
#define GEX_API_BARRIER_H_

#include <atomic>
#include <cstdint>
#include <mutex>

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

  // Registers the internal handler. Called once at init.
  void Init(Runtime* rt);

  // gasnet_barrier_notify: starts this rank's part. A second notify
  // before the wait is a fatal error naming `call`.
  void Notify(int32_t id, bool anonymous, bool mismatch, const char* call);
  // Makes progress; true once the barrier completed (then the result is
  // in *result and the barrier is closed, ready for the next notify).
  bool TryFinish(Value* result, const char* call);
  // Sends what can be sent. Cheap when no barrier is in progress.
  void Progress();
  bool active() const { return active_.load(std::memory_order_relaxed); }

  // The event gex_Coll_BarrierNB returns.
  gex_Event_t event() { return &event_; }

  // For the handler: round `round` of barrier parity `parity` arrived
  // carrying `value`.
  void Arrived(unsigned parity, unsigned round, const Value& value);

 private:
  static constexpr unsigned kMaxRounds = 32;
  struct Slot {
    bool arrived = false;
    Value value;
  };
  struct Event : gex_Event_opaque {
    Barrier* barrier = nullptr;
  };
  static bool TestEvent(gex_Event_opaque* e);

  Runtime* rt_ = nullptr;
  std::mutex mu_;  // PAR: handlers on other threads, concurrent progress.
  std::atomic<bool> active_{false};
  uint32_t rounds_ = 0;
  uint32_t phase_ = 0;  // Barriers completed; parity selects the slots.
  uint32_t sent_ = 0;   // Rounds sent in the current barrier.
  Value mine_;          // Merged so far.
  Slot slots_[2][kMaxRounds];
  Event event_;
  uint8_t handler_index_ = 0;
};

}  // namespace gex::api

#endif  // GEX_API_BARRIER_H_
