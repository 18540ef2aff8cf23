#include "base/thread_scratch.h"

#include <atomic>
#include <cstdlib>

#include "base/fatal.h"

namespace gexrt {
namespace {

std::atomic<long> g_live_blocks{0};

// This thread's registered scratches. Trivially destructible, so it
// outlives the guard below (the guard empties it).
struct Registry {
  ThreadScratch* scratch[ThreadScratch::kMaxPerThread];
  int count;
  bool released;  // the guard has run: this thread is ending
};
constinit thread_local Registry tl_registry = {};

}  // namespace

// Frees this thread's registered scratches when the thread ends (for the
// main thread: in exit(), before the atexit handlers).
class ThreadScratchRelease {
 public:
  ~ThreadScratchRelease() {
    for (int i = 0; i < tl_registry.count; ++i) {
      tl_registry.scratch[i]->Release();
    }
    tl_registry.count = 0;
    tl_registry.released = true;
  }
  // Makes sure this thread's guard exists (and its destructor is due).
  void Arm() {}
};

namespace {
thread_local ThreadScratchRelease tl_release;
}  // namespace

void ThreadScratch::Grow(size_t size) {
  if (size == 0) size = 1;
  if (data_ != nullptr) {
    std::free(data_);
    g_live_blocks.fetch_sub(1, std::memory_order_relaxed);
  }
  data_ = static_cast<unsigned char*>(std::malloc(size));
  if (data_ == nullptr) {
    FatalErrorF("out of memory for %zu bytes of per-thread scratch", size);
  }
  g_live_blocks.fetch_add(1, std::memory_order_relaxed);
  size_ = size;
  // After the guard has run (an exit handler), the block is left to the
  // process's end.
  if (!registered_ && !tl_registry.released &&
      tl_registry.count < kMaxPerThread) {
    tl_release.Arm();
    tl_registry.scratch[tl_registry.count++] = this;
    registered_ = true;
  }
}

void ThreadScratch::Release() {
  std::free(data_);
  g_live_blocks.fetch_sub(1, std::memory_order_relaxed);
  data_ = nullptr;
  size_ = 0;
  registered_ = false;
}

long ThreadScratch::LiveBlocksForTesting() {
  return g_live_blocks.load(std::memory_order_relaxed);
}

}  // namespace gexrt
