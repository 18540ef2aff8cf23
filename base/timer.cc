#include "base/timer.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>

#include "absl/base/call_once.h"
#include "base/string_view.h"

namespace gexrt {
namespace timer_internal {

std::atomic<Source> g_source{Source::kUnknown};
std::atomic<uint64_t> g_ns_per_tick_fixed{0};

namespace {

constexpr uint64_t kOneNsFixed = uint64_t{1} << kNsPerTickShift;

// The TSC is compared with CLOCK_MONOTONIC over at least this long. Each end
// of the interval is known to within a few tens of nanoseconds (see
// TakePairedReading), so 10 ms bounds the rate error near 1e-5.
constexpr int64_t kMinCalibrationNs = 10'000'000;

absl::once_flag source_once;
absl::once_flag calibration_once;

#if GEX_TIMER_HAVE_TSC
// A TSC reading and a CLOCK_MONOTONIC reading taken at (nearly) the same
// instant.
struct PairedReading {
  Ticks tsc;
  uint64_t mono_ns;
};

// The anchor of the calibration interval, taken when the TSC was chosen.
// Written once under source_once, read under calibration_once (which first
// passes through source_once, so the write happens-before the read).
PairedReading tsc_anchor;

// Brackets a clock_gettime() between two TSC readings and keeps the tightest
// of a few tries: an interrupt or preemption inside one try widens only that
// try. The TSC value used is the midpoint of the bracket.
PairedReading TakePairedReading() {
  PairedReading best{0, 0};
  Ticks best_width = std::numeric_limits<Ticks>::max();
  for (int i = 0; i < 16; ++i) {
    const Ticks before = TscTicksNow();
    const uint64_t mono = ClockTicksNow();
    const Ticks after = TscTicksNow();
    if (after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, mono};
    }
  }
  return best;
}

bool ReadFirstFlagsLine(std::string* flags_line) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  // Only the first processor's block matters (the kernel reports these flags
  // only when they hold for every CPU), and the file can be hundreds of
  // kilobytes on large hosts: stop at the first "flags" line.
  while (std::getline(in, line)) {
    if (line.starts_with("flags")) {
      *flags_line = line;
      return true;
    }
  }
  return false;
}

// Whether the kernel keeps time with the TSC. The kernel checks at boot that
// the TSCs of all CPUs are synchronised, and keeps watching them; it stops
// using the TSC when they are not. When the file cannot be read we rely on
// the cpuinfo flags alone.
bool KernelClocksourceAllowsTsc() {
  std::ifstream in(
      "/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  if (!std::getline(in, name)) return true;
  return StripWhitespace(name) == "tsc";
}

bool ShouldUseTsc() {
  std::string flags_line;
  if (!ReadFirstFlagsLine(&flags_line)) return false;
  return CpuinfoHasInvariantTsc(flags_line) && KernelClocksourceAllowsTsc();
}
#endif  // GEX_TIMER_HAVE_TSC

void ChooseSource() {
#if GEX_TIMER_HAVE_TSC
  if (ShouldUseTsc()) {
    tsc_anchor = TakePairedReading();
    g_source.store(Source::kTsc, std::memory_order_relaxed);
    return;
  }
#endif
  // Ticks are nanoseconds: nothing to calibrate.
  g_ns_per_tick_fixed.store(kOneNsFixed, std::memory_order_relaxed);
  g_source.store(Source::kClock, std::memory_order_relaxed);
}

void EnsureSource() { absl::call_once(source_once, ChooseSource); }

// Valid after calibration_once.
double calibrated_ns_per_tick = 1.0;

void Calibrate() {
  EnsureSource();
  if (g_source.load(std::memory_order_relaxed) != Source::kTsc) {
    calibrated_ns_per_tick = 1.0;
    return;
  }
#if GEX_TIMER_HAVE_TSC
  // Most processes have run for a while by the time they first convert
  // ticks, so the interval since the anchor usually suffices and nothing
  // waits here.
  const int64_t elapsed =
      static_cast<int64_t>(ClockTicksNow() - tsc_anchor.mono_ns);
  if (elapsed < kMinCalibrationNs) {
    const int64_t remaining = kMinCalibrationNs - elapsed;
    timespec delay{static_cast<time_t>(remaining / 1'000'000'000),
                   static_cast<long>(remaining % 1'000'000'000)};
    while (nanosleep(&delay, &delay) != 0) {
      // Interrupted by a signal: sleep for what is left.
    }
  }
  const PairedReading end = TakePairedReading();
  const double tsc_delta = static_cast<double>(end.tsc - tsc_anchor.tsc);
  const double mono_delta =
      static_cast<double>(end.mono_ns - tsc_anchor.mono_ns);
  calibrated_ns_per_tick = mono_delta / tsc_delta;
  g_ns_per_tick_fixed.store(
      static_cast<uint64_t>(std::llround(calibrated_ns_per_tick * kOneNsFixed)),
      std::memory_order_relaxed);
#endif
}

void EnsureCalibrated() { absl::call_once(calibration_once, Calibrate); }

}  // namespace

Ticks TicksNowSlow() {
  EnsureSource();
  return TicksNow();
}

uint64_t CalibratedNsPerTickFixed() {
  EnsureCalibrated();
  return g_ns_per_tick_fixed.load(std::memory_order_relaxed);
}

bool CpuinfoHasInvariantTsc(std::string_view cpuinfo) {
  for (std::string_view line : SplitOn(cpuinfo, '\n')) {
    // "flags\t\t: fpu vme ... constant_tsc ... nonstop_tsc ..."
    if (!line.starts_with("flags")) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return false;
    bool constant = false;
    bool nonstop = false;
    for (std::string_view flag : SplitOn(line.substr(colon + 1), ' ')) {
      flag = StripWhitespace(flag);
      constant = constant || flag == "constant_tsc";
      nonstop = nonstop || flag == "nonstop_tsc";
    }
    return constant && nonstop;
  }
  return false;
}

}  // namespace timer_internal

double NsPerTick() {
  timer_internal::EnsureCalibrated();
  return timer_internal::calibrated_ns_per_tick;
}

std::string_view TickSourceName() {
  timer_internal::EnsureSource();
  return timer_internal::g_source.load(std::memory_order_relaxed) ==
                 timer_internal::Source::kTsc
             ? "tsc"
             : "clock_gettime(CLOCK_MONOTONIC)";
}

namespace {

double MeasureGranularityNs() {
  // Bounded both in samples and in time, so that a coarse clock (one that
  // advances every millisecond, say) cannot keep us here long.
  constexpr int kSamples = 1000;
  constexpr Ticks kBudgetNs = 5'000'000;
  const double ns_per_tick = NsPerTick();
  Ticks min_delta = std::numeric_limits<Ticks>::max();
  const Ticks start = TicksNow();
  for (int i = 0; i < kSamples; ++i) {
    const Ticks first = TicksNow();
    Ticks next;
    do {
      next = TicksNow();
    } while (next == first);
    min_delta = std::min(min_delta, next - first);
    if (i >= 10 && TicksToNs(next - start) > kBudgetNs) break;
  }
  return static_cast<double>(min_delta) * ns_per_tick;
}

double MeasureOverheadNs() {
  constexpr int kCalls = 100'000;
  const double ns_per_tick = NsPerTick();
  // Fold every reading into `sink` so that no call can be dropped.
  Ticks sink = 0;
  const Ticks start = TicksNow();
  for (int i = 0; i < kCalls; ++i) sink ^= TicksNow();
  const Ticks end = TicksNow();
  volatile Ticks keep = sink;
  (void)keep;
  return static_cast<double>(end - start) * ns_per_tick / kCalls;
}

}  // namespace

double TickGranularityNs() {
  static const double granularity = MeasureGranularityNs();
  return granularity;
}

double TickOverheadNs() {
  static const double overhead = MeasureOverheadNs();
  return overhead;
}

}  // namespace gexrt
