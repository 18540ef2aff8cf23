// Events: the objects behind gex_Event_t, and the completion counters of
// operations that finish after their initiating call returns.
//
// An event handle is a pointer to a gex_Event_opaque (the C API's opaque
// struct, defined here because events belong to this layer: the barrier in
// api/ derives its events from it too). The constants GEX_EVENT_INVALID
// (0) and GEX_EVENT_NO_OP (1) are not objects.
//
// An RMA root event is an Operation: two counters (the whole operation,
// and local completion of a Put's source) and a leaf event for the latter
// inside the same object, so gex_Event_QueryLeaf allocates nothing and the
// leaf dies with its root, as the specification says. Operations come from
// a free list (a per-thread cache over a shared list), so steady-state
// issue and retirement allocate nothing and take no lock.
//
// Counters: the initiating thread counts what it starts (`started`, a
// plain integer only it writes); completions arrive from AM handlers on any
// thread (PAR) and add to `completed` with release order, so a waiter that
// sees the counts equal also sees the data a Get delivered.
#ifndef GEX_RMA_EVENT_H_
#define GEX_RMA_EVENT_H_

#include <atomic>
#include <cstdint>

namespace gexrt::rma {

// gex_Event_opaque::magic of a handle that may be tested, and of one whose
// operation has been retired (kept in the free list).
inline constexpr uint32_t kLiveEvent = 0x45764e74u;
inline constexpr uint32_t kDeadEvent = 0x44656164u;

}  // namespace gexrt::rma

struct gex_Event_opaque {
  // Returns whether the event has completed. A root event is then retired:
  // its handle (and any leaf of it) is dead.
  bool (*test)(gex_Event_opaque* self) = nullptr;
  // kLiveEvent while the handle may be tested. The test and wait calls
  // check it before calling `test`, so a pointer that is not an event (or
  // a retired one) is reported instead of being called through.
  uint32_t magic = gexrt::rma::kLiveEvent;
};

namespace gexrt::rma {

class Counter {
 public:
  // The initiating thread, before the operations can complete.
  void Start(uint64_t n) { started_ += n; }
  // Undoes Start for operations that were never issued.
  void Unstart(uint64_t n) { started_ -= n; }
  // Any thread, once per started operation.
  void Complete() { completed_.fetch_add(1, std::memory_order_release); }
  bool Done() const {
    return completed_.load(std::memory_order_acquire) == started_;
  }
  void Reset() {
    started_ = 0;
    completed_.store(0, std::memory_order_relaxed);
  }

 private:
  uint64_t started_ = 0;
  std::atomic<uint64_t> completed_{0};
};

// The root event of an NB operation or an NBI access region.
class Operation final : public gex_Event_opaque {
 public:
  // A live operation with both counters at zero.
  static Operation* Allocate();
  // Back to the free list; the handle and its leaf die.
  void Release();

  // Whether `e` (a live event) is an Operation.
  static bool Is(const gex_Event_opaque* e) { return e->test == &TestRoot; }
  // Whether `e` (a live event) is an Operation's GEX_EC_LC leaf. A leaf is
  // retired with its root: the array syncs (gex_Event_{Test,Wait}{All,
  // Some}) settle leaf entries before their roots' for that reason.
  static bool IsLeaf(const gex_Event_opaque* e) { return e->test == &TestLeaf; }

  // Remote completion of the whole operation (data delivered by a Put or
  // arrived for a Get).
  Counter rc;
  // Local completion: a Put's source may be reused.
  Counter lc;

  bool Done() const { return rc.Done() && lc.Done(); }
  // The GEX_EC_LC leaf (lives as long as the root).
  gex_Event_opaque* lc_leaf() { return &leaf_; }

 private:
  struct Leaf : gex_Event_opaque {
    Operation* root = nullptr;
  };
  friend class Pool;

  Operation();
  static bool TestRoot(gex_Event_opaque* self);
  static bool TestLeaf(gex_Event_opaque* self);

  Leaf leaf_;
  Operation* next_free_ = nullptr;
};

}  // namespace gexrt::rma

#endif  // GEX_RMA_EVENT_H_
