#include "rma/event.h"

#include <cstddef>
#include <mutex>

namespace gexrt::rma {

// The free list: each thread keeps a short list of its own (no lock on the
// common path, where the thread that retires operations also issues them);
// beyond kLocalMax, and when a thread exits, operations go to a shared list
// under a mutex, which threads draw on before allocating.
class Pool {
 public:
  static Operation* Take() {
    Local& local = tl_local;
    if (local.head == nullptr) local.Refill();
    Operation* op = local.head;
    if (op != nullptr) {
      local.head = op->next_free_;
      --local.count;
      return op;
    }
    return new Operation;
  }

  static void Give(Operation* op) {
    Local& local = tl_local;
    if (local.count >= kLocalMax) local.Spill(kLocalMax / 2);
    op->next_free_ = local.head;
    local.head = op;
    ++local.count;
  }

 private:
  static constexpr size_t kLocalMax = 256;

  struct Shared {
    std::mutex mu;
    Operation* head = nullptr;
  };
  // Never destroyed: threads may hand operations back during exit.
  static Shared& shared() {
    static Shared* s = new Shared;
    return *s;
  }

  struct Local {
    Operation* head = nullptr;
    size_t count = 0;

    ~Local() { Spill(count); }

    // Moves `n` of this thread's operations to the shared list.
    void Spill(size_t n) {
      if (n == 0) return;
      Shared& s = shared();
      std::lock_guard<std::mutex> lock(s.mu);
      while (n-- != 0 && head != nullptr) {
        Operation* op = head;
        head = op->next_free_;
        --count;
        op->next_free_ = s.head;
        s.head = op;
      }
    }

    // Takes up to kLocalMax / 2 operations from the shared list.
    void Refill() {
      Shared& s = shared();
      std::lock_guard<std::mutex> lock(s.mu);
      for (size_t i = 0; i < kLocalMax / 2 && s.head != nullptr; ++i) {
        Operation* op = s.head;
        s.head = op->next_free_;
        op->next_free_ = head;
        head = op;
        ++count;
      }
    }
  };

  static thread_local Local tl_local;
};

thread_local Pool::Local Pool::tl_local;

Operation::Operation() {
  test = &TestRoot;
  leaf_.test = &TestLeaf;
  leaf_.root = this;
}

Operation* Operation::Allocate() {
  Operation* op = Pool::Take();
  op->rc.Reset();
  op->lc.Reset();
  op->magic = kLiveEvent;
  op->leaf_.magic = kLiveEvent;
  return op;
}

void Operation::Release() {
  magic = kDeadEvent;
  leaf_.magic = kDeadEvent;
  Pool::Give(this);
}

bool Operation::TestRoot(gex_Event_opaque* self) {
  auto* op = static_cast<Operation*>(self);
  if (!op->Done()) return false;
  op->Release();
  return true;
}

bool Operation::TestLeaf(gex_Event_opaque* self) {
  return static_cast<Leaf*>(self)->root->lc.Done();
}

}  // namespace gexrt::rma
