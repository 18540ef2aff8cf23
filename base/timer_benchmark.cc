// Cost of reading the clock: TicksNow() against the two standard ways to
// read a monotonic clock, in one run so the figures compare directly.
//
//   bazel run --config=opt //base:timer_benchmark
#include <time.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "base/timer.h"
#include "benchmark/benchmark.h"

namespace gexrt {
namespace {

void BM_TicksNow(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(TicksNow());
  state.SetLabel(std::string(TickSourceName()));
}
BENCHMARK(BM_TicksNow);

void BM_ClockGettimeMonotonic(benchmark::State& state) {
  timespec ts;
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    benchmark::DoNotOptimize(ts);
  }
}
BENCHMARK(BM_ClockGettimeMonotonic);

void BM_SteadyClockNow(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::chrono::steady_clock::now());
  }
}
BENCHMARK(BM_SteadyClockNow);

#if GEX_TIMER_HAVE_TSC
// A bare RDTSC, without the LFENCE that TicksNow() puts before it: the cost
// of ordering the reading after earlier instructions.
void BM_RdtscUnordered(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__builtin_ia32_rdtsc());
}
BENCHMARK(BM_RdtscUnordered);
#endif

// An interval measured and converted, as a hot path would.
void BM_TicksNowIntervalToNs(benchmark::State& state) {
  const Ticks start = TicksNow();
  for (auto _ : state) benchmark::DoNotOptimize(TicksToNs(TicksNow() - start));
}
BENCHMARK(BM_TicksNowIntervalToNs);

// The library's own measurement, reported alongside.
void BM_ReportGranularityAndOverhead(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(TickOverheadNs());
  state.counters["granularity_ns"] = TickGranularityNs();
  state.counters["overhead_ns"] = TickOverheadNs();
  state.counters["ns_per_tick"] = NsPerTick();
}
BENCHMARK(BM_ReportGranularityAndOverhead)->Iterations(1);

}  // namespace
}  // namespace gexrt
