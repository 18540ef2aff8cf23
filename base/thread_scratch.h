// Per-thread scratch memory that stays usable for as long as its thread
// runs code, the main thread's exit handlers included.
//
// glibc's exit() runs the main thread's thread_local destructors before
// the atexit handlers, and the runtime's exit protocol polls the networks
// and sends Active Messages from an atexit handler. A thread_local
// std::unique_ptr or std::vector used by a receive or send path is freed
// by then: the exit's polls wrote into freed memory (AddressSanitizer saw
// it in the socket test conduit's receive buffer at a `return` from
// main). A ThreadScratch is trivially destructible, so its storage lives
// as long as the thread's; the blocks it hands out are freed by one
// per-thread guard when the thread ends. A Get after the guard has run
// (an exit handler) allocates afresh, and the process's end reclaims it.
//
//   constinit thread_local ThreadScratch tl_bounce;
//   unsigned char* p = tl_bounce.Get(len);  // >= len bytes, this thread's
//
// Only for thread_local objects: a thread registers at most
// kMaxPerThread of them for release (more are still usable, and are
// reclaimed with the process instead).
#ifndef GEX_BASE_THREAD_SCRATCH_H_
#define GEX_BASE_THREAD_SCRATCH_H_

#include <cstddef>

#include "absl/base/optimization.h"

namespace gexrt {

class ThreadScratch {
 public:
  static constexpr int kMaxPerThread = 8;

  constexpr ThreadScratch() = default;

  // At least `size` bytes (and at least 1), this thread's, valid until
  // the next Get with a larger size on this object. Its contents are kept
  // only while the size does not grow.
  unsigned char* Get(size_t size) {
    if (ABSL_PREDICT_FALSE(size > size_ || data_ == nullptr)) Grow(size);
    return data_;
  }

  size_t size() const { return size_; }

  // Blocks handed out and not yet freed, over all threads (for tests).
  static long LiveBlocksForTesting();

 private:
  friend class ThreadScratchRelease;

  void Grow(size_t size);
  void Release();

  unsigned char* data_ = nullptr;
  size_t size_ = 0;
  bool registered_ = false;
};

}  // namespace gexrt

#endif  // GEX_BASE_THREAD_SCRATCH_H_
