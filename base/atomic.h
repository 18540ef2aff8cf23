// Atomic counters with GASNet's fence flags, cache-line padding, and spin
// waiting (what gasnet_tools.h offers clients as gasnett_atomic*_t,
// gasnett_local_*mb and friends), over std::atomic / std::atomic_ref.
//
//   gexrt::Atomic64 pending(3);
//   ...
//   if (pending.DecrementAndTest(gexrt::kAtomicAcqIfTrue)) {
//     // Last one out: every other thread's work is visible here.
//   }
//
// Every operation is lock-free and address-free (checked at compile time),
// hence async-signal-safe and usable on memory shared between processes
// (PSHM segments): what GASNet calls "strong" atomics. Values wrap around
// like unsigned integers.
//
// Fence flags
// -----------
// Each operation takes a set of flags (default kAtomicNone: no ordering
// beyond the atomicity of the operation itself, memory_order_relaxed). A
// flag named *_PRE is a fence before the operation, *_POST one after it;
// RMB orders loads, WMB stores, MB (both bits) everything:
//
//   flag                  fence                       the operation's order
//   kAtomicRmbPre         acquire fence before        release
//   kAtomicWmbPre         release fence before        release
//   kAtomicMbPre          seq_cst fence before        release
//   kAtomicRmbPost        acquire fence after         acquire
//   kAtomicWmbPost        release fence after         acquire
//   kAtomicMbPost         seq_cst fence after         acquire
//   kAtomicRmbPostIfTrue  acquire fence after, only   acquire (CAS: on
//   kAtomicRmbPostIfFalse when the result of a          success / on failure)
//                         boolean operation (CAS,
//                         DecrementAndTest) is
//                         true / false
//
// (A load cannot carry release order, nor a store acquire order: for those
// the fence alone does the job.)
//
// and the usual names for critical sections and hand-offs:
//
//   kAtomicRel        = kAtomicWmbPre         (publish: a release)
//   kAtomicAcq        = kAtomicRmbPost        (consume: an acquire)
//   kAtomicAcqIfTrue  = kAtomicRmbPostIfTrue
//   kAtomicAcqIfFalse = kAtomicRmbPostIfFalse
//
// The fences give exactly the ordering the GASNet-EX tools specification
// asks for (a fence on one side of the operation orders the accesses on
// that side against everything on the other). The operation also carries the
// matching acquire/release order, which is how the C++ memory model (and
// ThreadSanitizer) sees the synchronisation; on x86 the acquire and release
// fences cost nothing, and a read-modify-write is already a full fence, so an
// MB flag on one adds no instruction. Orderings may be stronger than asked,
// never weaker.
//
// A failed CompareAndSwap writes nothing, so its release part (PRE flags)
// publishes nothing; the fence before it is still executed.
#ifndef GEX_BASE_ATOMIC_H_
#define GEX_BASE_ATOMIC_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/base/macros.h"

namespace gexrt {

// ---------------------------------------------------------------------------
// Fence flags (GASNETT_ATOMIC_*); OR them together.

using AtomicFlags = unsigned;

inline constexpr AtomicFlags kAtomicNone = 0;
inline constexpr AtomicFlags kAtomicRmbPre = 1u << 0;
inline constexpr AtomicFlags kAtomicWmbPre = 1u << 1;
inline constexpr AtomicFlags kAtomicMbPre = kAtomicRmbPre | kAtomicWmbPre;
inline constexpr AtomicFlags kAtomicRmbPost = 1u << 2;
inline constexpr AtomicFlags kAtomicWmbPost = 1u << 3;
inline constexpr AtomicFlags kAtomicMbPost = kAtomicRmbPost | kAtomicWmbPost;
inline constexpr AtomicFlags kAtomicRmbPostIfTrue = 1u << 4;
inline constexpr AtomicFlags kAtomicRmbPostIfFalse = 1u << 5;

inline constexpr AtomicFlags kAtomicRel = kAtomicWmbPre;
inline constexpr AtomicFlags kAtomicAcq = kAtomicRmbPost;
inline constexpr AtomicFlags kAtomicAcqIfTrue = kAtomicRmbPostIfTrue;
inline constexpr AtomicFlags kAtomicAcqIfFalse = kAtomicRmbPostIfFalse;

namespace atomic_internal {

inline constexpr AtomicFlags kPreBits = kAtomicMbPre;
inline constexpr AtomicFlags kPostBits =
    kAtomicMbPost | kAtomicRmbPostIfTrue | kAtomicRmbPostIfFalse;

#if defined(__x86_64__) || defined(__i386__)
// A LOCK-prefixed (or XCHG) instruction is a full barrier on x86.
inline constexpr bool kRmwIsFullFence = true;
#else
inline constexpr bool kRmwIsFullFence = false;
#endif

// std::atomic_thread_fence, without GCC's -Wtsan note that ThreadSanitizer
// does not model fences: every fence here comes with an operation whose own
// memory order already shows TSan the synchronisation.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void Fence(std::memory_order order) {
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
  std::atomic_thread_fence(order);
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void FenceBefore(AtomicFlags flags,
                                                     bool rmw) {
  if ((flags & kAtomicMbPre) == kAtomicMbPre) {
    if (!(rmw && kRmwIsFullFence)) Fence(std::memory_order_seq_cst);
  } else if (flags & kAtomicRmbPre) {
    Fence(std::memory_order_acquire);
  } else if (flags & kAtomicWmbPre) {
    Fence(std::memory_order_release);
  }
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void FenceAfter(AtomicFlags flags,
                                                    bool rmw) {
  if ((flags & kAtomicMbPost) == kAtomicMbPost) {
    if (!(rmw && kRmwIsFullFence)) Fence(std::memory_order_seq_cst);
  } else if (flags & kAtomicRmbPost) {
    Fence(std::memory_order_acquire);
  } else if (flags & kAtomicWmbPost) {
    Fence(std::memory_order_release);
  }
}

// After a boolean operation that returned `result`.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void FenceAfterTest(AtomicFlags flags,
                                                        bool result) {
  FenceAfter(flags, /*rmw=*/true);
  if ((flags & kAtomicMbPost) != kAtomicMbPost &&
      (flags & (result ? kAtomicRmbPostIfTrue : kAtomicRmbPostIfFalse))) {
    Fence(std::memory_order_acquire);
  }
}

constexpr std::memory_order Combine(bool release, bool acquire) {
  if (release && acquire) return std::memory_order_acq_rel;
  if (release) return std::memory_order_release;
  if (acquire) return std::memory_order_acquire;
  return std::memory_order_relaxed;
}

// The order a read-modify-write carries for `flags`. With an MB flag on x86
// it is seq_cst: the instruction is the full fence then.
constexpr std::memory_order RmwOrder(AtomicFlags flags) {
  if (kRmwIsFullFence && ((flags & kAtomicMbPre) == kAtomicMbPre ||
                          (flags & kAtomicMbPost) == kAtomicMbPost)) {
    return std::memory_order_seq_cst;
  }
  return Combine(flags & kPreBits, flags & kPostBits);
}

// A load cannot release and a store cannot acquire: those halves are carried
// by the fences alone.
constexpr std::memory_order LoadOrder(AtomicFlags flags) {
  return Combine(false, flags & kPostBits);
}
constexpr std::memory_order StoreOrder(AtomicFlags flags) {
  return Combine(flags & kPreBits, false);
}

// CompareAndSwap's order on failure (a load only).
constexpr std::memory_order CasFailureOrder(AtomicFlags flags) {
  if (RmwOrder(flags) == std::memory_order_seq_cst) {
    return std::memory_order_seq_cst;
  }
  return Combine(false, flags & (kAtomicMbPost | kAtomicRmbPostIfFalse));
}
constexpr std::memory_order CasSuccessOrder(AtomicFlags flags) {
  if (RmwOrder(flags) == std::memory_order_seq_cst) {
    return std::memory_order_seq_cst;
  }
  return Combine(flags & kPreBits,
                 flags & (kAtomicMbPost | kAtomicRmbPostIfTrue));
}

// The operations, over std::atomic<T> (kIsRef false: owns its value) or
// std::atomic_ref<T> (kIsRef true: views an existing T).
template <typename T, bool kIsRef>
class AtomicInteger {
  static_assert(std::is_integral_v<T> && std::is_unsigned_v<T>,
                "atomic counters hold unsigned integers");
  using Storage =
      std::conditional_t<kIsRef, std::atomic_ref<T>, std::atomic<T>>;
  static_assert(Storage::is_always_lock_free,
                "GASNet atomics must be lock-free (signal-safe, usable in "
                "shared memory)");

 public:
  using value_type = T;
  using signed_type = std::make_signed_t<T>;

  // An owning counter, initially `value` (gasnett_atomic*_init).
  constexpr explicit AtomicInteger(T value = 0) requires(!kIsRef)
      : storage_(value) {}

  // A view of `object`, which must outlive this and be aligned for atomic
  // access (any T declared as such is; see std::atomic_ref). While views
  // exist, every access to `object` must go through one.
  explicit AtomicInteger(T& object) requires(kIsRef) : storage_(object) {
    ABSL_ASSERT(reinterpret_cast<uintptr_t>(&object) %
                    Storage::required_alignment ==
                0);
  }

  // Owning counters are neither copyable nor movable (std::atomic is not);
  // views copy-construct freely but do not assign (std::atomic_ref).

  // Atomically reads the value.
  ABSL_ATTRIBUTE_ALWAYS_INLINE T Read(AtomicFlags flags = kAtomicNone) const {
    FenceBefore(flags, false);
    const T value = storage_.load(LoadOrder(flags));
    FenceAfter(flags, false);
    return value;
  }

  // Atomically sets the value.
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Set(T value,
                                        AtomicFlags flags = kAtomicNone) {
    FenceBefore(flags, false);
    storage_.store(value, StoreOrder(flags));
    FenceAfter(flags, false);
  }

  ABSL_ATTRIBUTE_ALWAYS_INLINE void Increment(AtomicFlags flags = kAtomicNone) {
    FetchAdd(1, flags);
  }

  ABSL_ATTRIBUTE_ALWAYS_INLINE void Decrement(AtomicFlags flags = kAtomicNone) {
    FetchSub(1, flags);
  }

  // Atomically decrements; true iff the new value is 0.
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool DecrementAndTest(
      AtomicFlags flags = kAtomicNone) {
    FenceBefore(flags, true);
    const bool zero = storage_.fetch_sub(1, RmwOrder(flags)) == 1;
    FenceAfterTest(flags, zero);
    return zero;
  }

  // Atomically adds / subtracts `operand`; returns the new value.
  ABSL_ATTRIBUTE_ALWAYS_INLINE T Add(T operand,
                                     AtomicFlags flags = kAtomicNone) {
    return static_cast<T>(FetchAdd(operand, flags) + operand);
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE T Subtract(T operand,
                                          AtomicFlags flags = kAtomicNone) {
    return static_cast<T>(FetchSub(operand, flags) - operand);
  }

  // Atomically: if the value is `old_value`, replaces it with `new_value`
  // and returns true; otherwise returns false and changes nothing.
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool CompareAndSwap(
      T old_value, T new_value, AtomicFlags flags = kAtomicNone) {
    FenceBefore(flags, true);
    const bool swapped = storage_.compare_exchange_strong(
        old_value, new_value, CasSuccessOrder(flags), CasFailureOrder(flags));
    FenceAfterTest(flags, swapped);
    return swapped;
  }

  // Atomically replaces the value with `value`; returns the old value.
  ABSL_ATTRIBUTE_ALWAYS_INLINE T Swap(T value,
                                      AtomicFlags flags = kAtomicNone) {
    FenceBefore(flags, true);
    const T old = storage_.exchange(value, RmwOrder(flags));
    FenceAfter(flags, true);
    return old;
  }

  // `value` as a signed number (two's complement; gasnett_atomic_signed).
  static constexpr signed_type Signed(T value) {
    return static_cast<signed_type>(value);
  }

 private:
  ABSL_ATTRIBUTE_ALWAYS_INLINE T FetchAdd(T operand, AtomicFlags flags) {
    FenceBefore(flags, true);
    const T old = storage_.fetch_add(operand, RmwOrder(flags));
    FenceAfter(flags, true);
    return old;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE T FetchSub(T operand, AtomicFlags flags) {
    FenceBefore(flags, true);
    const T old = storage_.fetch_sub(operand, RmwOrder(flags));
    FenceAfter(flags, true);
    return old;
  }

  Storage storage_;
};

}  // namespace atomic_internal

// Owning atomic counters (gasnett_atomic32_t, gasnett_atomic64_t). Exactly
// the size and alignment of the integer: pad with CacheLinePadded when
// threads on different cores update neighbouring counters.
template <typename T>
using BasicAtomic = atomic_internal::AtomicInteger<T, /*kIsRef=*/false>;
using Atomic32 = BasicAtomic<uint32_t>;
using Atomic64 = BasicAtomic<uint64_t>;

// The same operations on existing integer storage, such as a word in a
// shared segment or a field of a wire header (GASNet allows its fixed-width
// atomics on any suitably aligned 4- or 8-byte integer).
//
//   uint64_t word = 0;
//   gexrt::AtomicRef64(word).Add(5, gexrt::kAtomicRel);
template <typename T>
using BasicAtomicRef = atomic_internal::AtomicInteger<T, /*kIsRef=*/true>;
using AtomicRef32 = BasicAtomicRef<uint32_t>;
using AtomicRef64 = BasicAtomicRef<uint64_t>;

// ---------------------------------------------------------------------------
// Free-standing fences (gasnett_local_rmb/wmb/mb).

// Orders earlier loads before later loads and stores.
inline void LocalRmb() { atomic_internal::Fence(std::memory_order_acquire); }
// Orders earlier loads and stores before later stores.
inline void LocalWmb() { atomic_internal::Fence(std::memory_order_release); }
// Orders every earlier access before every later one.
inline void LocalMb() { atomic_internal::Fence(std::memory_order_seq_cst); }
// Stops the compiler (only) from moving accesses across this point.
inline void CompilerFence() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

// ---------------------------------------------------------------------------
// Cache lines.

// The size of the unit of coherence between cores: data written by
// different threads should sit at least this far apart. 64 bytes on every
// x86-64 and on the common ARM server cores.
inline constexpr size_t kCacheLineSize = 64;

// A T alone on its cache line(s): aligned to kCacheLineSize, and padded so
// that nothing else shares them.
//
//   std::array<gexrt::CacheLinePadded<gexrt::Atomic64>, kThreads> per_thread;
//   per_thread[i]->Increment();
template <typename T>
class alignas(kCacheLineSize) CacheLinePadded {
 public:
  CacheLinePadded() = default;
  template <typename... Args>
  explicit CacheLinePadded(std::in_place_t, Args&&... args)
      : value_(std::forward<Args>(args)...) {}

  T& get() { return value_; }
  const T& get() const { return value_; }
  T& operator*() { return value_; }
  const T& operator*() const { return value_; }
  T* operator->() { return &value_; }
  const T* operator->() const { return &value_; }

 private:
  T value_{};
};

// ---------------------------------------------------------------------------
// Spinning.

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

// One step of a spin-wait loop, polite or not. When ranks outnumber cores on
// a host (see HostIsOversubscribed in base/cpu.h), a spinning rank may hold
// the very core that the rank it waits for needs: a polite wait gives the
// core up with sched_yield() at every step. Otherwise it spins with
// CpuRelax(), which reacts fastest.
//
//   gexrt::PoliteSpinWait wait(gexrt::HostIsOversubscribed(ranks_here));
//   while (flag.Read(gexrt::kAtomicAcq) == 0) wait.Pause();
//   // or: wait.Until([&] { return flag.Read(gexrt::kAtomicAcq) != 0; });
class PoliteSpinWait {
 public:
  explicit PoliteSpinWait(bool polite) : polite_(polite) {}

  bool polite() const { return polite_; }

  // Waits a moment: yields the CPU when polite, else CpuRelax().
  void Pause() {
    if (polite_) {
      Yield();
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
  static void Yield();  // sched_yield(), out of line: a system call anyway.

  bool polite_;
};

}  // namespace gexrt

#endif  // GEX_BASE_ATOMIC_H_
