// Monotonic high-resolution ticks for hot paths (GASNet's gasnett_tick_t).
//
// A tick is an opaque unit of a monotonic clock: compare and subtract tick
// values freely, convert intervals to nanoseconds with TicksToNs().
//
//   gexrt::Ticks start = gexrt::TicksNow();
//   DoWork();
//   uint64_t elapsed_ns = gexrt::TicksToNs(gexrt::TicksNow() - start);
//
// The source is chosen once per process:
//  - the x86 time-stamp counter, when /proc/cpuinfo says it is invariant
//    (`constant_tsc` and `nonstop_tsc`) and the kernel itself keeps time
//    with it (its clocksource is "tsc": the kernel checked that the counters
//    of all CPUs agree). Its rate is calibrated against CLOCK_MONOTONIC.
//  - clock_gettime(CLOCK_MONOTONIC) otherwise. A tick is then exactly one
//    nanosecond and TicksToNs() is exact.
//
// Tick values are meaningful only within one process (and its threads):
// never send them to another process or host; send nanoseconds. Within a
// process they never go backwards: a TicksNow() that happens after another
// (in program order, or through a synchronizes-with edge between threads)
// returns a value at least as large.
//
// All functions are thread-safe.
#ifndef GEX_BASE_TIMER_H_
#define GEX_BASE_TIMER_H_

#include <time.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <string_view>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"

#if defined(__x86_64__) || defined(__i386__)
#define GEX_TIMER_HAVE_TSC 1
#else
#define GEX_TIMER_HAVE_TSC 0
#endif

namespace gexrt {

// A reading of the process's monotonic tick clock.
using Ticks = uint64_t;

// The current tick count. A few nanoseconds; no system call on the TSC path.
inline Ticks TicksNow();

// Converts a tick count (usually an interval: the difference of two
// TicksNow() values) to nanoseconds. Exact when ticks are nanoseconds; with
// the TSC, a fixed-point multiply by the calibrated period (no division).
// Saturates at UINT64_MAX instead of wrapping.
//
// The first call in a process calibrates the TSC: it compares the TSC with
// CLOCK_MONOTONIC over at least 10 ms since the source was chosen (the first
// TicksNow()), sleeping for whatever part of that has not yet passed. Call
// it once during start-up to take that cost off a timed path.
inline uint64_t TicksToNs(Ticks ticks);

// The smallest and largest values a Ticks can hold (GASNETT_TICK_MIN/MAX).
constexpr Ticks TicksMin() { return std::numeric_limits<Ticks>::min(); }
constexpr Ticks TicksMax() { return std::numeric_limits<Ticks>::max(); }

// The smallest nonzero difference two consecutive TicksNow() calls were
// seen to return, in nanoseconds (gasnett_tick_granularity). Measured on the
// first call (a few milliseconds at most), then cached.
double TickGranularityNs();

// The average cost of one TicksNow() call, in nanoseconds
// (gasnett_tick_overhead). Measured on the first call, then cached.
double TickOverheadNs();

// Which clock TicksNow() reads: "tsc" or "clock_gettime(CLOCK_MONOTONIC)",
// for reports (GASNET_VERBOSEENV, benchmark output).
std::string_view TickSourceName();

// Nanoseconds per tick as a double (1.0 on the clock_gettime path): for
// reports and for converting sub-nanosecond quantities.
double NsPerTick();

// ---------------------------------------------------------------------------
// Implementation details; subject to change.

namespace timer_internal {

enum class Source : uint8_t { kUnknown = 0, kTsc = 1, kClock = 2 };

// Chosen lazily by the first TicksNow(); read with relaxed loads because the
// value carries no other data with it.
extern std::atomic<Source> g_source;

// Fixed-point nanoseconds per tick, scaled by 2^kNsPerTickShift; 0 until
// calibrated. 2^kNsPerTickShift exactly on the clock_gettime path, which
// makes TicksToNs() exact there.
inline constexpr int kNsPerTickShift = 32;
extern std::atomic<uint64_t> g_ns_per_tick_fixed;

// Slow paths: choose the source / calibrate, then return what the fast path
// would have.
Ticks TicksNowSlow();
uint64_t CalibratedNsPerTickFixed();

// The two sources, for tests and benchmarks that need one in particular.
inline Ticks ClockTicksNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Ticks>(ts.tv_sec) * 1'000'000'000u +
         static_cast<Ticks>(ts.tv_nsec);
}

#if GEX_TIMER_HAVE_TSC
inline Ticks TscTicksNow() {
  // RDTSC alone may execute before earlier instructions finish, so a reading
  // could precede a load that it follows in program order, and then be
  // smaller than a tick value another thread published before that load.
  // LFENCE waits for earlier instructions first (Intel SDM, RDTSC): the
  // ordering the kernel's own CLOCK_MONOTONIC read (rdtsc_ordered) uses.
  // (Compiler builtins rather than <x86intrin.h>'s _mm_lfence/__rdtsc, to
  // keep that large header out of every includer.)
  __builtin_ia32_lfence();
  return __builtin_ia32_rdtsc();
}
#endif

// ticks * fixed / 2^kNsPerTickShift, saturating at UINT64_MAX.
inline uint64_t ScaleTicks(Ticks ticks, uint64_t fixed) {
  const unsigned __int128 product =
      static_cast<unsigned __int128>(ticks) * fixed;
  const unsigned __int128 ns = product >> kNsPerTickShift;
  if (ABSL_PREDICT_FALSE(ns > std::numeric_limits<uint64_t>::max())) {
    return std::numeric_limits<uint64_t>::max();
  }
  return static_cast<uint64_t>(ns);
}

// Whether /proc/cpuinfo text `cpuinfo` shows an invariant TSC: the first
// "flags" line lists both constant_tsc and nonstop_tsc.
bool CpuinfoHasInvariantTsc(std::string_view cpuinfo);

}  // namespace timer_internal

ABSL_ATTRIBUTE_ALWAYS_INLINE inline Ticks TicksNow() {
  const timer_internal::Source source =
      timer_internal::g_source.load(std::memory_order_relaxed);
#if GEX_TIMER_HAVE_TSC
  if (ABSL_PREDICT_TRUE(source == timer_internal::Source::kTsc)) {
    return timer_internal::TscTicksNow();
  }
#endif
  if (ABSL_PREDICT_TRUE(source == timer_internal::Source::kClock)) {
    return timer_internal::ClockTicksNow();
  }
  return timer_internal::TicksNowSlow();
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline uint64_t TicksToNs(Ticks ticks) {
  uint64_t fixed =
      timer_internal::g_ns_per_tick_fixed.load(std::memory_order_relaxed);
  if (ABSL_PREDICT_FALSE(fixed == 0)) {
    fixed = timer_internal::CalibratedNsPerTickFixed();
  }
  return timer_internal::ScaleTicks(ticks, fixed);
}

}  // namespace gexrt

#endif  // GEX_BASE_TIMER_H_
