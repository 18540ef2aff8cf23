// Spin waiting: the CPU's spin-loop hint, a write prefetch for a line a
// waiter is about to answer in, and the one wait step every polling loop
// takes (yield when the host is oversubscribed, else the hint).
//
// (gasnet_tools.h's atomics and fences, gasnett_atomic*_t and
// gasnett_local_*mb, are implemented in the header clients include; the
// runtime itself uses std::atomic.)
#ifndef GEX_BASE_SPIN_WAIT_H_
#define GEX_BASE_SPIN_WAIT_H_

#include <atomic>

#include "absl/base/attributes.h"

namespace gexrt {

// Tells the CPU that this is a spin-wait loop (x86 PAUSE, ARM YIELD): saves
// power, yields pipeline resources to a sibling hyperthread, and avoids the
// memory-order mis-speculation penalty when the awaited value changes.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// Asks for the cache line at `p` in a writable state now, ahead of a store
// to it (x86 PREFETCHW where the target has it, a plain prefetch
// elsewhere): a receiver that has just read a message from a line it will
// write its answer into gets the line's ownership moving while it works on
// the message, instead of stalling on it at the store. Only a hint; never
// faults.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void PrefetchForWrite(const void* p) {
#if defined(__PRFCHW__)
  // As an asm statement with the line as an operand, so that the compiler
  // keeps it ahead of the loads that follow it in the source (GCC moved the
  // builtin after them).
  __asm__ __volatile__("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, /*rw=*/1, /*locality=*/3);
#endif
}

// Asks for the cache line at `p` to be read into this CPU's cache now,
// ahead of a load that will need it. Only a hint; never faults.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void PrefetchForRead(const void* p) {
  __builtin_prefetch(p, /*rw=*/0, /*locality=*/3);
}

// Gives the CPU up (sched_yield()). Out of line: a system call anyway.
void YieldCpu();

// The wait for a lock that is held only for a moment: CpuRelax() for the
// first kSpins looks, then a yield at each. The lock's holder is then
// running and lets go within the spin, unless it lost its CPU while
// holding it, which is the one case a longer wait has: a waiter that kept
// spinning would hold its CPU until its time slice ended while the holder
// waited in the run queue (with more threads than CPUs, a wait of
// milliseconds for a critical section of nanoseconds).
//
//   SpinThenYield wait;
//   while (busy.exchange(true, std::memory_order_acquire)) {
//     while (busy.load(std::memory_order_relaxed)) wait.Pause();
//   }
class SpinThenYield {
 public:
  static constexpr int kSpins = 64;

  void Pause() {
    if (spins_ < kSpins) {
      ++spins_;
      CpuRelax();
    } else {
      YieldCpu();
    }
  }
  int spins() const { return spins_; }

 private:
  int spins_ = 0;
};

// One step of a spin-wait loop, polite or not. When ranks outnumber cores on
// a host (see HostIsOversubscribed in base/cpu.h), a spinning rank may hold
// the very core that the rank it waits for needs: a polite wait gives the
// core up with sched_yield() at every step. Otherwise it spins with
// CpuRelax(), which reacts fastest.
//
//   gexrt::PoliteSpinWait wait(gexrt::HostIsOversubscribed(ranks_here));
//   while (flag.load(std::memory_order_acquire) == 0) wait.Pause();
//   // or: wait.Until([&] { return flag.load(std::memory_order_acquire); });
class PoliteSpinWait {
 public:
  explicit PoliteSpinWait(bool polite) : polite_(polite) {}

  bool polite() const { return polite_; }

  // Waits a moment: yields the CPU when polite, else CpuRelax().
  void Pause() {
    if (polite_) {
      YieldCpu();
    } else {
      CpuRelax();
    }
  }

  // Pauses until `done()` returns true (checked first, before any pause).
  template <typename Predicate>
  void Until(Predicate&& done) {
    while (!done()) Pause();
  }

 private:
  bool polite_;
};

}  // namespace gexrt

#endif  // GEX_BASE_SPIN_WAIT_H_
