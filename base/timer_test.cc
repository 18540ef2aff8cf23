#include "base/timer.h"

#include <time.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gexrt {
namespace {

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<uint64_t>(ts.tv_nsec);
}

// Runs first (tests run in declaration order), so that several threads race
// to choose the source and to calibrate: all must see the same conversion.
TEST(TimerTest, ConcurrentFirstUseAgrees) {
  constexpr int kThreads = 4;
  std::vector<uint64_t> one_second(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&one_second, i] {
      const Ticks t = TicksNow();
      (void)t;
      one_second[i] = TicksToNs(static_cast<Ticks>(1'000'000'000));
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 1; i < kThreads; ++i) EXPECT_EQ(one_second[i], one_second[0]);
}

TEST(TimerTest, MonotonicOverManyCalls) {
  Ticks previous = TicksNow();
  for (int i = 0; i < 1'000'000; ++i) {
    const Ticks now = TicksNow();
    ASSERT_GE(now, previous) << "call " << i;
    previous = now;
  }
}

TEST(TimerTest, MonotonicWithinEachOfSeveralThreads) {
  constexpr int kThreads = 4;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&failures] {
      Ticks previous = TicksNow();
      for (int j = 0; j < 200'000; ++j) {
        const Ticks now = TicksNow();
        if (now < previous) failures.fetch_add(1);
        previous = now;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

// Two threads pass a tick value back and forth: each reading, taken after
// receiving the other thread's, must not be smaller than it.
TEST(TimerTest, MonotonicAcrossThreadHandOffs) {
  constexpr int kRounds = 20'000;
  std::atomic<Ticks> baton{0};
  std::atomic<int> turn{0};  // whose move: round * 2 + side
  std::atomic<int> failures{0};
  auto player = [&](int side) {
    for (int round = 0; round < kRounds; ++round) {
      const int mine = round * 2 + side;
      while (turn.load(std::memory_order_acquire) != mine) {
        std::this_thread::yield();
      }
      const Ticks received = baton.load(std::memory_order_relaxed);
      const Ticks now = TicksNow();
      if (now < received) failures.fetch_add(1);
      baton.store(TicksNow(), std::memory_order_relaxed);
      turn.store(mine + 1, std::memory_order_release);
    }
  };
  std::thread a(player, 0);
  std::thread b(player, 1);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
}

// A check of the conversion, not of timing: over a ~20 ms sleep, ticks
// converted to nanoseconds and CLOCK_MONOTONIC must agree within a factor
// of two however loaded the machine is (both measure the same interval).
TEST(TimerTest, TicksToNsAgreesWithClockMonotonic) {
  const Ticks ticks_start = TicksNow();
  const uint64_t mono_start = MonotonicNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint64_t mono_end = MonotonicNs();
  const Ticks ticks_end = TicksNow();
  const double ratio = static_cast<double>(TicksToNs(ticks_end - ticks_start)) /
                       static_cast<double>(mono_end - mono_start);
  EXPECT_GT(ratio, 0.5) << TickSourceName();
  EXPECT_LT(ratio, 2.0) << TickSourceName();
}

TEST(TimerTest, ConversionIsLinear) {
  const Ticks a = TicksNow();
  const Ticks b = a + 123'456'789;
  const uint64_t difference = TicksToNs(b) - TicksToNs(a);
  const uint64_t direct = TicksToNs(b - a);
  EXPECT_LE(difference > direct ? difference - direct : direct - difference,
            1u);
  EXPECT_EQ(TicksToNs(0), 0u);
}

TEST(TimerTest, NsPerTickIsPlausible) {
  // Between a 20 GHz and a 100 MHz counter; exactly 1 for clock_gettime.
  const double ns_per_tick = NsPerTick();
  EXPECT_GT(ns_per_tick, 0.05);
  EXPECT_LT(ns_per_tick, 10.0);
  if (TickSourceName() != "tsc") {
    EXPECT_EQ(ns_per_tick, 1.0);
  }
}

TEST(TimerTest, GranularityAndOverheadArePositiveAndFinite) {
  const double granularity = TickGranularityNs();
  const double overhead = TickOverheadNs();
  EXPECT_GT(granularity, 0.0);
  EXPECT_TRUE(std::isfinite(granularity));
  EXPECT_GT(overhead, 0.0);
  EXPECT_TRUE(std::isfinite(overhead));
  // Cached: the same values again.
  EXPECT_EQ(TickGranularityNs(), granularity);
  EXPECT_EQ(TickOverheadNs(), overhead);
}

TEST(TimerTest, Limits) {
  EXPECT_EQ(TicksMin(), Ticks{0});
  EXPECT_EQ(TicksMax(), std::numeric_limits<uint64_t>::max());
  static_assert(TicksMax() > TicksMin());
}

TEST(TimerTest, SourceNameIsOneOfTheTwo) {
  const std::string_view name = TickSourceName();
  EXPECT_TRUE(name == "tsc" || name == "clock_gettime(CLOCK_MONOTONIC)")
      << name;
}

TEST(TimerInternalTest, ScaleTicksIsExactForNanosecondTicks) {
  constexpr uint64_t kOne = uint64_t{1} << timer_internal::kNsPerTickShift;
  for (const Ticks t : {Ticks{0}, Ticks{1}, Ticks{999'999'999}, Ticks{1} << 40,
                        TicksMax() - 1, TicksMax()}) {
    EXPECT_EQ(timer_internal::ScaleTicks(t, kOne), t);
  }
}

TEST(TimerInternalTest, ScaleTicksAppliesTheFraction) {
  constexpr uint64_t kOne = uint64_t{1} << timer_internal::kNsPerTickShift;
  // 0.25 ns per tick (a 4 GHz counter).
  EXPECT_EQ(timer_internal::ScaleTicks(4'000'000'000u, kOne / 4),
            1'000'000'000u);
  // 2.5 ns per tick.
  EXPECT_EQ(timer_internal::ScaleTicks(400, kOne * 5 / 2), 1000u);
}

TEST(TimerInternalTest, ScaleTicksSaturates) {
  constexpr uint64_t kOne = uint64_t{1} << timer_internal::kNsPerTickShift;
  EXPECT_EQ(timer_internal::ScaleTicks(TicksMax(), 2 * kOne),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(timer_internal::ScaleTicks(TicksMax() / 2 + 1, 2 * kOne),
            std::numeric_limits<uint64_t>::max());
}

TEST(TimerInternalTest, ClockTicksNowIsMonotonicNanoseconds) {
  const uint64_t before = MonotonicNs();
  const Ticks ticks = timer_internal::ClockTicksNow();
  const uint64_t after = MonotonicNs();
  EXPECT_LE(before, ticks);
  EXPECT_LE(ticks, after);
}

TEST(TimerInternalTest, CpuinfoFlagsParsing) {
  using timer_internal::CpuinfoHasInvariantTsc;
  EXPECT_TRUE(CpuinfoHasInvariantTsc(
      "processor\t: 0\nvendor_id\t: GenuineIntel\n"
      "flags\t\t: fpu tsc rdtscp constant_tsc nonstop_tsc tsc_known_freq\n"
      "bugs\t\t: spectre_v1\n"));
  // Flags lists end without a newline too.
  EXPECT_TRUE(CpuinfoHasInvariantTsc("flags\t: nonstop_tsc constant_tsc"));
  EXPECT_FALSE(CpuinfoHasInvariantTsc("flags\t\t: fpu tsc constant_tsc\n"));
  EXPECT_FALSE(CpuinfoHasInvariantTsc("flags\t\t: fpu tsc nonstop_tsc\n"));
  // Whole words only.
  EXPECT_FALSE(
      CpuinfoHasInvariantTsc("flags\t\t: constant_tsc_x nonstop_tsc_y\n"));
  EXPECT_FALSE(CpuinfoHasInvariantTsc("processor\t: 0\n"));
  EXPECT_FALSE(CpuinfoHasInvariantTsc(""));
  // Only the first flags line counts.
  EXPECT_FALSE(CpuinfoHasInvariantTsc(
      "flags\t: fpu\nflags\t: constant_tsc nonstop_tsc\n"));
}

#if GEX_TIMER_HAVE_TSC
TEST(TimerInternalTest, TscIsMonotonicWhenUsed) {
  if (TickSourceName() != "tsc") GTEST_SKIP() << "TSC not in use here";
  Ticks previous = timer_internal::TscTicksNow();
  for (int i = 0; i < 100'000; ++i) {
    const Ticks now = timer_internal::TscTicksNow();
    ASSERT_GE(now, previous);
    previous = now;
  }
}
#endif

}  // namespace
}  // namespace gexrt
