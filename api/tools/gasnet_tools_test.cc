#include <fcntl.h>
#include <gasnet_tools.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"

#ifdef GASNETT_THREAD_SAFE
#error "gasnet_tools.h must leave GASNETT_THREAD_SAFE to the client"
#endif

namespace {

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    if (old != nullptr) old_ = old;
    had_old_ = old != nullptr;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (had_old_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::string old_;
  bool had_old_ = false;
};

// Everything readable from `fd` without blocking.
std::string Drain(int fd) {
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

// ---- timers
// ------------------------------------------------------------------

TEST(TicksTest, TypeAndLimits) {
  static_assert(std::is_same_v<gasnett_tick_t, uint64_t>);
  EXPECT_EQ(GASNETT_TICK_MIN, 0u);
  EXPECT_EQ(GASNETT_TICK_MAX, UINT64_MAX);
}

TEST(TicksTest, NeverGoBackwards) {
  gasnett_tick_t previous = gasnett_ticks_now();
  for (int i = 0; i < 100000; ++i) {
    const gasnett_tick_t now = gasnett_ticks_now();
    ASSERT_GE(now, previous) << "at reading " << i;
    previous = now;
  }
}

TEST(TicksTest, MicrosecondsAreNanosecondsOverAThousand) {
  const gasnett_tick_t start = gasnett_ticks_now();
  const gasnett_tick_t interval = gasnett_ticks_now() - start + 12345;
  for (gasnett_tick_t t :
       {gasnett_tick_t{0}, gasnett_tick_t{1}, gasnett_tick_t{999},
        gasnett_tick_t{1000000}, interval, gasnett_tick_t{1} << 40}) {
    EXPECT_EQ(gasnett_ticks_to_us(t), gasnett_ticks_to_ns(t) / 1000) << t;
  }
  EXPECT_EQ(gasnett_ticks_to_ns(0), 0u);
}

TEST(TicksTest, ConversionIsMonotoneInTheTickCount) {
  uint64_t previous = 0;
  for (gasnett_tick_t t = 1; t < (gasnett_tick_t{1} << 50); t *= 3) {
    const uint64_t ns = gasnett_ticks_to_ns(t);
    EXPECT_GE(ns, previous) << t;
    previous = ns;
  }
}

TEST(TicksTest, GranularityAndOverheadAreSane) {
  const double granularity = gasnett_tick_granularityus();
  const double overhead = gasnett_tick_overheadus();
  EXPECT_GT(granularity, 0.0);
  EXPECT_GT(overhead, 0.0);
  // Cached: the same answer twice.
  EXPECT_EQ(gasnett_tick_granularityus(), granularity);
  EXPECT_EQ(gasnett_tick_overheadus(), overhead);
}

TEST(TicksTest, NsleepSleepsAtLeastAboutThatLong) {
  gasnett_ticks_to_ns(1);  // Calibrate outside the measured interval.
  const gasnett_tick_t start = gasnett_ticks_now();
  EXPECT_EQ(gasnett_nsleep(5'000'000), 0);
  const uint64_t elapsed_ns = gasnett_ticks_to_ns(gasnett_ticks_now() - start);
  // A sleep never ends early; the margin only absorbs calibration error.
  EXPECT_GE(elapsed_ns, 4'000'000u);
  EXPECT_EQ(gasnett_nsleep(0), 0);  // Returns at once.
}

// ---- barriers
// ----------------------------------------------------------------

TEST(BarrierTest, AllCompileAndRun) {
  int x = 1;
  gasnett_compiler_fence();
  gasnett_local_mb();
  gasnett_local_wmb();
  gasnett_local_rmb();
  gasnett_weak_mb();
  gasnett_weak_wmb();
  gasnett_weak_rmb();
  gasnett_spinloop_hint();
  EXPECT_EQ(x, 1);
}

// ---- atomics
// -----------------------------------------------------------------

TEST(AtomicTest, TypesAndRange) {
  static_assert(std::is_same_v<gasnett_atomic_val_t, uint32_t>);
  static_assert(std::is_same_v<gasnett_atomic_sval_t, int32_t>);
  static_assert(sizeof(gasnett_atomic32_t) == 4);
  static_assert(sizeof(gasnett_atomic64_t) == 8);
  static_assert(alignof(gasnett_atomic64_t) == 8);
  EXPECT_EQ(GASNETT_ATOMIC_MAX, UINT32_MAX);
  EXPECT_EQ(GASNETT_ATOMIC_SIGNED_MIN, INT32_MIN);
  EXPECT_EQ(GASNETT_ATOMIC_SIGNED_MAX, INT32_MAX);
  EXPECT_EQ(GASNETT_HAVE_ATOMIC_CAS, 1);
  EXPECT_EQ(GASNETT_HAVE_ATOMIC_ADD_SUB, 1);
}

TEST(AtomicTest, FlagsAreDistinctBitsWithGasnetsAliases) {
  const int bits[] = {
      GASNETT_ATOMIC_RMB_PRE,          GASNETT_ATOMIC_WMB_PRE,
      GASNETT_ATOMIC_RMB_POST,         GASNETT_ATOMIC_WMB_POST,
      GASNETT_ATOMIC_RMB_POST_IF_TRUE, GASNETT_ATOMIC_RMB_POST_IF_FALSE};
  int seen = 0;
  for (int bit : bits) {
    EXPECT_NE(bit, 0);
    EXPECT_EQ(bit & (bit - 1), 0) << bit << " is not a single bit";
    EXPECT_EQ(seen & bit, 0) << bit << " is used twice";
    seen |= bit;
  }
  EXPECT_EQ(GASNETT_ATOMIC_NONE, 0);
  EXPECT_EQ(GASNETT_ATOMIC_MB_PRE,
            GASNETT_ATOMIC_RMB_PRE | GASNETT_ATOMIC_WMB_PRE);
  EXPECT_EQ(GASNETT_ATOMIC_MB_POST,
            GASNETT_ATOMIC_RMB_POST | GASNETT_ATOMIC_WMB_POST);
  EXPECT_EQ(GASNETT_ATOMIC_REL, GASNETT_ATOMIC_WMB_PRE);
  EXPECT_EQ(GASNETT_ATOMIC_ACQ, GASNETT_ATOMIC_RMB_POST);
  EXPECT_EQ(GASNETT_ATOMIC_ACQ_IF_TRUE, GASNETT_ATOMIC_RMB_POST_IF_TRUE);
  EXPECT_EQ(GASNETT_ATOMIC_ACQ_IF_FALSE, GASNETT_ATOMIC_RMB_POST_IF_FALSE);
  EXPECT_EQ(GASNETT_ATOMIC_MB, GASNETT_ATOMIC_MB_PRE | GASNETT_ATOMIC_MB_POST);
}

TEST(AtomicTest, DefaultFamilyOperations) {
  gasnett_atomic_t a = gasnett_atomic_init(5);
  EXPECT_EQ(gasnett_atomic_read(&a, 0), 5u);
  gasnett_atomic_increment(&a, 0);
  EXPECT_EQ(gasnett_atomic_read(&a, 0), 6u);
  gasnett_atomic_decrement(&a, 0);
  gasnett_atomic_decrement(&a, 0);
  EXPECT_EQ(gasnett_atomic_read(&a, 0), 4u);

  EXPECT_EQ(gasnett_atomic_add(&a, 10, 0), 14u);
  EXPECT_EQ(gasnett_atomic_subtract(&a, 4, 0), 10u);
  EXPECT_EQ(gasnett_atomic_swap(&a, 77, 0), 10u);
  EXPECT_EQ(gasnett_atomic_read(&a, 0), 77u);

  EXPECT_FALSE(gasnett_atomic_compare_and_swap(&a, 76, 1, 0));
  EXPECT_EQ(gasnett_atomic_read(&a, 0), 77u);
  EXPECT_TRUE(gasnett_atomic_compare_and_swap(&a, 77, 1, 0));
  EXPECT_EQ(gasnett_atomic_read(&a, 0), 1u);

  gasnett_atomic_set(&a, 2, 0);
  EXPECT_FALSE(gasnett_atomic_decrement_and_test(&a, 0));
  EXPECT_TRUE(gasnett_atomic_decrement_and_test(&a, 0));
  EXPECT_EQ(gasnett_atomic_read(&a, 0), 0u);
}

TEST(AtomicTest, ValuesWrapAndConvertToSigned) {
  gasnett_atomic_t a = gasnett_atomic_init(-1);
  EXPECT_EQ(gasnett_atomic_read(&a, 0), GASNETT_ATOMIC_MAX);
  EXPECT_EQ(gasnett_atomic_signed(gasnett_atomic_read(&a, 0)), -1);
  gasnett_atomic_increment(&a, 0);
  EXPECT_EQ(gasnett_atomic_read(&a, 0), 0u);
  gasnett_atomic_decrement(&a, 0);
  EXPECT_EQ(gasnett_atomic_read(&a, 0), GASNETT_ATOMIC_MAX);
  gasnett_atomic_set(&a, static_cast<gasnett_atomic_val_t>(-5), 0);
  EXPECT_EQ(gasnett_atomic_signed(gasnett_atomic_read(&a, 0)), -5);
  EXPECT_EQ(gasnett_atomic_add(&a, 10, 0), 5u);
  EXPECT_EQ(gasnett_atomic_subtract(&a, 6, 0), GASNETT_ATOMIC_MAX);
}

TEST(AtomicTest, FixedWidthFamilies) {
  gasnett_atomic32_t a = gasnett_atomic32_init(0xfffffffe);
  gasnett_atomic32_increment(&a, 0);
  EXPECT_EQ(gasnett_atomic32_read(&a, 0), 0xffffffffu);
  EXPECT_EQ(gasnett_atomic32_add(&a, 2, 0), 1u);
  EXPECT_EQ(gasnett_atomic32_swap(&a, 9, 0), 1u);
  EXPECT_TRUE(gasnett_atomic32_compare_and_swap(&a, 9, 3, 0));
  EXPECT_EQ(gasnett_atomic32_subtract(&a, 1, 0), 2u);
  gasnett_atomic32_decrement(&a, 0);
  EXPECT_TRUE(gasnett_atomic32_decrement_and_test(&a, 0));

  const uint64_t big = uint64_t{1} << 40;
  gasnett_atomic64_t b = gasnett_atomic64_init(big);
  EXPECT_EQ(gasnett_atomic64_read(&b, 0), big);
  EXPECT_EQ(gasnett_atomic64_add(&b, big, 0), 2 * big);
  EXPECT_EQ(gasnett_atomic64_subtract(&b, 1, 0), 2 * big - 1);
  EXPECT_EQ(gasnett_atomic64_swap(&b, UINT64_MAX, 0), 2 * big - 1);
  gasnett_atomic64_increment(&b, 0);
  EXPECT_EQ(gasnett_atomic64_read(&b, 0), 0u);
  EXPECT_FALSE(gasnett_atomic64_compare_and_swap(&b, 1, 2, 0));
  EXPECT_TRUE(gasnett_atomic64_compare_and_swap(&b, 0, big + 1, 0));
  gasnett_atomic64_set(&b, 1, 0);
  gasnett_atomic64_decrement(&b, 0);
  EXPECT_EQ(gasnett_atomic64_read(&b, 0), 0u);
  gasnett_atomic64_set(&b, 1, 0);
  EXPECT_TRUE(gasnett_atomic64_decrement_and_test(&b, 0));
}

TEST(AtomicTest, FixedWidthOnPlainIntegerStorage) {
  // GASNet allows casting pointers to same-width integers.
  int32_t word = 41;
  auto* a32 = reinterpret_cast<gasnett_atomic32_t*>(&word);
  gasnett_atomic32_increment(a32, 0);
  EXPECT_EQ(gasnett_atomic32_read(a32, 0), 42u);
  int64_t dword = -1;
  auto* a64 = reinterpret_cast<gasnett_atomic64_t*>(&dword);
  EXPECT_EQ(gasnett_atomic64_add(a64, 2, 0), 1u);
}

TEST(AtomicTest, EveryFlagCombinationGivesTheSameResults) {
  const int flag_sets[] = {
      GASNETT_ATOMIC_NONE,
      GASNETT_ATOMIC_REL,
      GASNETT_ATOMIC_ACQ,
      GASNETT_ATOMIC_MB_PRE,
      GASNETT_ATOMIC_MB_POST,
      GASNETT_ATOMIC_MB,
      GASNETT_ATOMIC_RMB_PRE,
      GASNETT_ATOMIC_WMB_POST,
      GASNETT_ATOMIC_ACQ_IF_TRUE | GASNETT_ATOMIC_ACQ_IF_FALSE};
  for (int flags : flag_sets) {
    SCOPED_TRACE(flags);
    gasnett_atomic_t a = gasnett_atomic_init(0);
    gasnett_atomic_set(&a, 3, flags);
    EXPECT_EQ(gasnett_atomic_read(&a, flags), 3u);
    gasnett_atomic_increment(&a, flags);
    EXPECT_EQ(gasnett_atomic_add(&a, 1, flags), 5u);
    EXPECT_TRUE(gasnett_atomic_compare_and_swap(&a, 5, 1, flags));
    EXPECT_TRUE(gasnett_atomic_decrement_and_test(&a, flags));
    gasnett_atomic64_t b = gasnett_atomic64_init(0);
    gasnett_atomic64_set(&b, 7, flags);
    EXPECT_EQ(gasnett_atomic64_read(&b, flags), 7u);
  }
}

TEST(AtomicTest, StrongAtomicsAreTheSameOperations) {
  gasnett_strongatomic_t a = gasnett_strongatomic_init(1);
  gasnett_strongatomic_increment(&a, 0);
  EXPECT_EQ(gasnett_strongatomic_read(&a, 0), 2u);
  EXPECT_TRUE(gasnett_strongatomic_compare_and_swap(&a, 2, 0, 0));
  gasnett_strongatomic64_t b = gasnett_strongatomic64_init(5);
  EXPECT_EQ(gasnett_strongatomic64_add(&b, 5, 0), 10u);
  gasnett_strongatomic32_t c = gasnett_strongatomic32_init(1);
  EXPECT_TRUE(gasnett_strongatomic32_decrement_and_test(&c, 0));
}

TEST(AtomicTest, ConcurrentUpdatesAreNotLost) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 50000;
  gasnett_atomic_t counter = gasnett_atomic_init(0);
  gasnett_atomic64_t sum = gasnett_atomic64_init(0);
  gasnett_atomic32_t cas_counter = gasnett_atomic32_init(0);
  gasnett_atomic_t refs = gasnett_atomic_init(kThreads * kIterations);
  gasnett_atomic_t zero_seen = gasnett_atomic_init(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIterations; ++i) {
        gasnett_atomic_increment(&counter, 0);
        gasnett_atomic64_add(&sum, 3, 0);
        uint32_t seen;
        do {
          seen = gasnett_atomic32_read(&cas_counter, 0);
        } while (!gasnett_atomic32_compare_and_swap(&cas_counter, seen,
                                                    seen + 1, 0));
        if (gasnett_atomic_decrement_and_test(&refs, 0)) {
          gasnett_atomic_increment(&zero_seen, 0);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(gasnett_atomic_read(&counter, 0), uint32_t{kThreads * kIterations});
  EXPECT_EQ(gasnett_atomic64_read(&sum, 0),
            uint64_t{3 * kThreads * kIterations});
  EXPECT_EQ(gasnett_atomic32_read(&cas_counter, 0),
            uint32_t{kThreads * kIterations});
  EXPECT_EQ(gasnett_atomic_read(&zero_seen, 0), 1u);
}

TEST(AtomicTest, ReleaseAndAcquirePublishData) {
  constexpr int kRounds = 2000;
  int data[kRounds] = {};
  gasnett_atomic_t ready = gasnett_atomic_init(0);
  std::thread writer([&] {
    for (int i = 0; i < kRounds; ++i) {
      data[i] = i + 1;
      gasnett_atomic_set(&ready, static_cast<gasnett_atomic_val_t>(i + 1),
                         GASNETT_ATOMIC_REL);
    }
  });
  int mismatches = 0;
  for (uint32_t seen = 0; seen < kRounds;) {
    seen = gasnett_atomic_read(&ready, GASNETT_ATOMIC_ACQ);
    if (seen > 0 && data[seen - 1] != static_cast<int>(seen)) ++mismatches;
  }
  writer.join();
  EXPECT_EQ(mismatches, 0);
}

// ---- mutexes and condition variables
// -------------------------------------------

TEST(MutexTest, TrylockReportsEbusyWhileHeld) {
  gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
  EXPECT_EQ(gasnett_mutex_trylock(&m), 0);
  gasnett_mutex_assertlocked(&m);
  int other_thread_result = -1;
  std::thread([&] { other_thread_result = gasnett_mutex_trylock(&m); }).join();
  EXPECT_EQ(other_thread_result, EBUSY);
  EXPECT_EQ(gasnett_mutex_unlock(&m), 0);
  gasnett_mutex_assertunlocked(&m);
  std::thread([&] {
    other_thread_result = gasnett_mutex_trylock(&m);
    if (other_thread_result == 0) gasnett_mutex_unlock(&m);
  }).join();
  EXPECT_EQ(other_thread_result, 0);
}

TEST(MutexTest, InitDestroyAndLockUnlock) {
  gasnett_mutex_t m;
  ASSERT_EQ(gasnett_mutex_init(&m), 0);
  EXPECT_EQ(gasnett_mutex_lock(&m), 0);
  EXPECT_EQ(gasnett_mutex_unlock(&m), 0);
  EXPECT_EQ(gasnett_mutex_destroy(&m), 0);
  gasnett_mutex_t m2 = GASNETT_MUTEX_INITIALIZER;
  EXPECT_EQ(gasnett_mutex_destroy_ignoreerr(&m2), 0);
}

TEST(MutexTest, ProtectsAPlainCounter) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 20000;
  gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
  long counter = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIterations; ++i) {
        gasnett_mutex_lock(&m);
        ++counter;
        gasnett_mutex_unlock(&m);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter, long{kThreads} * kIterations);
}

TEST(MutexTest, ReleaseBuildsDoNotCheckAssertions) {
#if !defined(GEX_DEBUG) || !GEX_DEBUG
  gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
  gasnett_mutex_assertlocked(&m);  // Wrong, but a no-op here.
  gasnett_mutex_lock(&m);
  gasnett_mutex_assertunlocked(&m);  // Likewise.
  gasnett_mutex_unlock(&m);
#endif
}

TEST(CondTest, SignalHandsOverAValue) {
  gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
  gasnett_cond_t c = GASNETT_COND_INITIALIZER;
  int value = 0;
  std::thread producer([&] {
    gasnett_mutex_lock(&m);
    value = 42;
    gasnett_cond_signal(&c);
    gasnett_mutex_unlock(&m);
  });
  gasnett_mutex_lock(&m);
  while (value == 0) EXPECT_EQ(gasnett_cond_wait(&c, &m), 0);
  gasnett_mutex_assertlocked(&m);
  EXPECT_EQ(value, 42);
  gasnett_mutex_unlock(&m);
  producer.join();
}

TEST(CondTest, BroadcastWakesEveryWaiter) {
  constexpr int kWaiters = 4;
  gasnett_mutex_t m;
  gasnett_cond_t c;
  ASSERT_EQ(gasnett_mutex_init(&m), 0);
  ASSERT_EQ(gasnett_cond_init(&c), 0);
  bool go = false;
  int waiting = 0;
  int woken = 0;
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&] {
      gasnett_mutex_lock(&m);
      ++waiting;
      while (!go) gasnett_cond_wait(&c, &m);
      ++woken;
      gasnett_mutex_unlock(&m);
    });
  }
  // Wait (politely) until every waiter is inside, then wake them all at once.
  for (;;) {
    gasnett_mutex_lock(&m);
    const bool all_in = waiting == kWaiters;
    if (all_in) {
      go = true;
      EXPECT_EQ(gasnett_cond_broadcast(&c), 0);
    }
    gasnett_mutex_unlock(&m);
    if (all_in) break;
    gasnett_sched_yield();
  }
  for (std::thread& waiter : waiters) waiter.join();
  EXPECT_EQ(woken, kWaiters);
  EXPECT_EQ(gasnett_cond_destroy(&c), 0);
  EXPECT_EQ(gasnett_mutex_destroy(&m), 0);
}

// ---- environment
// -------------------------------------------------------------

TEST(EnvTest, RawGetSetUnset) {
  ScopedEnv scoped("GEX_TOOLS_TEST_RAW", nullptr);
  EXPECT_EQ(gasnett_getenv("GEX_TOOLS_TEST_RAW"), nullptr);
  gasnett_setenv("GEX_TOOLS_TEST_RAW", "some value");
  ASSERT_NE(gasnett_getenv("GEX_TOOLS_TEST_RAW"), nullptr);
  EXPECT_STREQ(gasnett_getenv("GEX_TOOLS_TEST_RAW"), "some value");
  gasnett_setenv("GEX_TOOLS_TEST_RAW", "replaced");
  EXPECT_STREQ(gasnett_getenv("GEX_TOOLS_TEST_RAW"), "replaced");
  gasnett_unsetenv("GEX_TOOLS_TEST_RAW");
  EXPECT_EQ(gasnett_getenv("GEX_TOOLS_TEST_RAW"), nullptr);
}

TEST(EnvTest, SetenvWithAnInvalidNameIsFatal) {
  EXPECT_DEATH(gasnett_setenv("BAD=NAME", "x"),
               "FATAL ERROR.*gasnett_setenv\\(\"BAD=NAME\"");
}

TEST(EnvTest, StringWithDefault) {
  static const char kDefault[] = "the default";
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_STR", nullptr);
    EXPECT_EQ(gasnett_getenv_withdefault("GEX_TOOLS_TEST_STR", kDefault),
              kDefault);
  }
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_STR", "");
    EXPECT_EQ(gasnett_getenv_withdefault("GEX_TOOLS_TEST_STR", kDefault),
              kDefault);
  }
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_STR", "set");
    EXPECT_STREQ(gasnett_getenv_withdefault("GEX_TOOLS_TEST_STR", kDefault),
                 "set");
  }
}

TEST(EnvTest, YesNo) {
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_YN", nullptr);
    EXPECT_EQ(gasnett_getenv_yesno_withdefault("GEX_TOOLS_TEST_YN", 1), 1);
    EXPECT_EQ(gasnett_getenv_yesno_withdefault("GEX_TOOLS_TEST_YN", 0), 0);
  }
  for (const char* yes : {"1", "yes", "Y", "TRUE", "on"}) {
    ScopedEnv scoped("GEX_TOOLS_TEST_YN", yes);
    EXPECT_EQ(gasnett_getenv_yesno_withdefault("GEX_TOOLS_TEST_YN", 0), 1)
        << yes;
  }
  for (const char* no : {"0", "no", "N", "false", "Off"}) {
    ScopedEnv scoped("GEX_TOOLS_TEST_YN", no);
    EXPECT_EQ(gasnett_getenv_yesno_withdefault("GEX_TOOLS_TEST_YN", 1), 0)
        << no;
  }
}

TEST(EnvTest, MalformedYesNoIsFatalAndNamesTheVariable) {
  ScopedEnv scoped("GEX_TOOLS_TEST_YN", "perhaps");
  EXPECT_DEATH(gasnett_getenv_yesno_withdefault("GEX_TOOLS_TEST_YN", 0),
               "FATAL ERROR.*GEX_TOOLS_TEST_YN.*perhaps");
}

TEST(EnvTest, PlainIntegers) {
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_INT", nullptr);
    EXPECT_EQ(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", -7, 0), -7);
  }
  const std::pair<const char*, int64_t> cases[] = {
      {"16", 16}, {"0x10", 16}, {"-5", -5}, {" 42 ", 42}};
  for (const auto& [text, want] : cases) {
    ScopedEnv scoped("GEX_TOOLS_TEST_INT", text);
    EXPECT_EQ(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 0, 0), want)
        << text;
  }
}

TEST(EnvTest, MemorySizesInPowerOf1024Units) {
  constexpr uint64_t kKiB = 1024;
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_INT", nullptr);
    EXPECT_EQ(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 12345, kKiB),
              12345);
    // A negative default is returned as it is.
    EXPECT_EQ(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", -1, kKiB),
              -1);
  }
  const struct {
    const char* text;
    uint64_t multiplier;
    int64_t want;
  } cases[] = {
      {"4", kKiB, 4096},           {"4", 1, 4},
      {"2M", kKiB, 2 << 20},       {"2MB", 1, 2 << 20},
      {"1.5K", 1, 1536},           {"3G", kKiB * kKiB, int64_t{3} << 30},
      {"7", kKiB * kKiB, 7 << 20}, {"100B", kKiB, 100},
  };
  for (const auto& c : cases) {
    ScopedEnv scoped("GEX_TOOLS_TEST_INT", c.text);
    EXPECT_EQ(
        gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 0, c.multiplier),
        c.want)
        << c.text << " x" << c.multiplier;
  }
}

TEST(EnvTest, MemorySizesInOtherUnits) {
  const struct {
    const char* text;
    int64_t want;
  } cases[] = {
      {"3", 3000}, {"0.5", 500}, {"2K", 2048},  // A suffix names the unit.
  };
  for (const auto& c : cases) {
    ScopedEnv scoped("GEX_TOOLS_TEST_INT", c.text);
    EXPECT_EQ(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 0, 1000),
              c.want)
        << c.text;
  }
  ScopedEnv scoped("GEX_TOOLS_TEST_INT", nullptr);
  EXPECT_EQ(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", -3, 1000), -3);
}

// GASNet-EX reads the leading number and ignores what follows it: so do
// we (base/env warns, naming the variable, the value and what was used).
TEST(EnvTest, TrailingTextAfterTheNumberIsIgnoredAsGasnetExDoes) {
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_INT", "12abc");
    EXPECT_EQ(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 0, 0), 12);
  }
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_INT", "50%");
    EXPECT_EQ(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 0, 0), 50);
    EXPECT_EQ(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 0, 1024),
              50 * 1024);
  }
}

TEST(EnvTest, MalformedIntegersAreFatalAndNameTheVariable) {
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_INT", "abc12");
    EXPECT_DEATH(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 0, 0),
                 "FATAL ERROR.*environment variable GEX_TOOLS_TEST_INT has the "
                 "invalid value \"abc12\"");
  }
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_INT", "lots");
    EXPECT_DEATH(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 0, 1024),
                 "FATAL ERROR.*GEX_TOOLS_TEST_INT.*\"lots\"");
    EXPECT_DEATH(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 0, 1000),
                 "FATAL ERROR.*GEX_TOOLS_TEST_INT.*\"lots\"");
  }
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_INT", "-2");
    EXPECT_DEATH(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 0, 1000),
                 "FATAL ERROR.*GEX_TOOLS_TEST_INT.*negative");
  }
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_INT", "10000000000000000000");
    EXPECT_DEATH(gasnett_getenv_int_withdefault("GEX_TOOLS_TEST_INT", 0, 1000),
                 "FATAL ERROR.*GEX_TOOLS_TEST_INT");
  }
}

TEST(EnvTest, Doubles) {
  {
    ScopedEnv scoped("GEX_TOOLS_TEST_DBL", nullptr);
    EXPECT_EQ(gasnett_getenv_dbl_withdefault("GEX_TOOLS_TEST_DBL", 2.5), 2.5);
  }
  const std::pair<const char*, double> cases[] = {
      {"1.5", 1.5}, {"-1e4", -1e4}, {"3/8", 0.375}, {"7", 7.0}};
  for (const auto& [text, want] : cases) {
    ScopedEnv scoped("GEX_TOOLS_TEST_DBL", text);
    EXPECT_EQ(gasnett_getenv_dbl_withdefault("GEX_TOOLS_TEST_DBL", 0), want)
        << text;
  }
  ScopedEnv scoped("GEX_TOOLS_TEST_DBL", "one");
  EXPECT_DEATH(gasnett_getenv_dbl_withdefault("GEX_TOOLS_TEST_DBL", 0),
               "FATAL ERROR.*GEX_TOOLS_TEST_DBL.*\"one\"");
}

TEST(EnvTest, ParseInt) {
  EXPECT_EQ(gasnett_parse_int("0x20", 0), 32);
  EXPECT_EQ(gasnett_parse_int("-9", 0), -9);
  EXPECT_EQ(gasnett_parse_int("8", 1024), 8192);
  EXPECT_EQ(gasnett_parse_int("8K", 1), 8192);
  EXPECT_DEATH(gasnett_parse_int("eight", 0),
               "FATAL ERROR.*gasnett_parse_int: invalid value \"eight\"");
}

TEST(EnvTest, VerboseEnvIsOffUnlessAsked) {
  if (getenv("GASNET_VERBOSEENV") != nullptr) {
    GTEST_SKIP() << "GASNET_VERBOSEENV is set in the test environment";
  }
  EXPECT_EQ(gasnett_verboseenv(), 0);
}

// ---- memory
// ------------------------------------------------------------------

TEST(MemoryTest, MmapGivesZeroedWritablePagesAndMunmapReturnsThem) {
  constexpr uintptr_t kSize = 3 * 4096 + 100;  // Not a whole page.
  auto* p = static_cast<unsigned char*>(gasnett_mmap(kSize));
  ASSERT_NE(p, nullptr);
  for (uintptr_t i = 0; i < kSize; ++i) ASSERT_EQ(p[i], 0) << i;
  std::memset(p, 0xab, kSize);
  EXPECT_EQ(p[kSize - 1], 0xab);
  gasnett_munmap(p, kSize);
}

TEST(MemoryTest, MmapFailureIsFatalAndNamesTheCall) {
  EXPECT_DEATH(gasnett_mmap(0), "FATAL ERROR.*gasnett_mmap\\(0\\): the size");
  EXPECT_DEATH(gasnett_mmap(UINTPTR_MAX - 4095),
               "FATAL ERROR.*gasnett_mmap\\([0-9]+\\): Cannot allocate");
}

// ---- errors, backtraces, process control
// ---------------------------------------

TEST(FatalTest, FormatsTheMessageAndAborts) {
  EXPECT_DEATH(gasnett_fatalerror("boom %d %s", 42, "here"),
               "^\\*\\*\\* FATAL ERROR \\(proc \\?\\): boom 42 here\n");
}

TEST(FatalTest, DropsATrailingNewline) {
  EXPECT_DEATH(gasnett_fatalerror("ends with newline\n"),
               "ends with newline\n$");
}

void WriteAtexitMarker() {
  constexpr char kMarker[] = "ATEXIT HANDLER RAN\n";
  [[maybe_unused]] ssize_t n = write(2, kMarker, sizeof(kMarker) - 1);
}

TEST(ProcessTest, KillmyprocessExitsWithTheCodeAndSkipsAtexit) {
  EXPECT_EXIT(
      {
        atexit(&WriteAtexitMarker);
        gasnett_killmyprocess(7);
      },
      testing::ExitedWithCode(7), "^$");
}

TEST(ProcessTest, FlushStreamsFlushesEveryOutputStream) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
  FILE* stream = fdopen(fds[1], "w");
  ASSERT_NE(stream, nullptr);
  static char buffer[BUFSIZ];
  ASSERT_EQ(setvbuf(stream, buffer, _IOFBF, sizeof(buffer)), 0);
  fputs("buffered text", stream);
  EXPECT_EQ(Drain(fds[0]), "");  // Still in the stream's buffer.
  gasnett_flush_streams();
  EXPECT_EQ(Drain(fds[0]), "buffered text");
  fclose(stream);
  close(fds[0]);
}

TEST(ProcessTest, CloseStreamsFlushesThenClosesTheStandardStreams) {
  // In a child: text left in stderr's buffer must come out, and afterwards
  // descriptors 0, 1 and 2 are closed (exit code 0 says so).
  EXPECT_EXIT(
      {
        static char buffer[BUFSIZ];
        setvbuf(stderr, buffer, _IOFBF, sizeof(buffer));
        fputs("left in the buffer", stderr);
        gasnett_close_streams();
        const bool closed = fcntl(0, F_GETFD) == -1 &&
                            fcntl(1, F_GETFD) == -1 && fcntl(2, F_GETFD) == -1;
        _exit(closed ? 0 : 1);
      },
      testing::ExitedWithCode(0), "^left in the buffer$");
}

TEST(DebuggerTest, FreezeNowWaitsUntilTheFlagIsCleared) {
  volatile int flag = 0;
  std::atomic<bool> returned{false};
  testing::internal::CaptureStderr();
  std::thread frozen([&] {
    gasnett_freezeForDebuggerNow(&flag, "my_flag");
    returned.store(true);
  });
  // The call sets the flag before it waits; until we clear it, it waits.
  while (__atomic_load_n(&flag, __ATOMIC_SEQ_CST) == 0) sched_yield();
  EXPECT_FALSE(returned.load());
  __atomic_store_n(&flag, 0, __ATOMIC_SEQ_CST);
  frozen.join();
  EXPECT_TRUE(returned.load());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("*** FREEZE"), std::string::npos) << err;
  EXPECT_NE(err.find("'set var my_flag = 0'"), std::string::npos) << err;
}

TEST(DebuggerTest, FreezeErrReturnsAtOnceUnlessFreezeOnErrorIsSet) {
  if (getenv("GASNET_FREEZE_ON_ERROR") != nullptr) {
    GTEST_SKIP() << "GASNET_FREEZE_ON_ERROR is set in the test environment";
  }
  testing::internal::CaptureStderr();
  gasnett_freezeForDebuggerErr();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(DebuggerTest, CurrentLocNamesFileLineAndFunction) {
  const int line = __LINE__ + 1;
  char* loc = gasnett_current_loc;
  ASSERT_NE(loc, nullptr);
  const std::string text(loc);
  free(loc);
  EXPECT_NE(text.find("gasnet_tools_test.cc:" + std::to_string(line) + " in "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("TestBody()"), std::string::npos) << text;
}

TEST(BacktraceTest, PrintsFramesToTheDescriptor) {
  gasnett_backtrace_init("gasnet_tools_test");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
  EXPECT_EQ(gasnett_print_backtrace(fds[1]), 0);
  close(fds[1]);
  const std::string text = Drain(fds[0]);
  close(fds[0]);
  // One line per frame, each ending in its address: this test body, gtest's
  // runner, main, libc's start-up at the least.
  int lines = 0;
  for (char ch : text) lines += ch == '\n';
  EXPECT_GE(lines, 4) << text;
  EXPECT_NE(text.find("[0x"), std::string::npos) << text;
}

TEST(BacktraceTest, IfEnabledPrintsOnlyWhenGasnetBacktraceIsSet) {
  // A fresh process for each, so that GASNET_BACKTRACE is read (once per
  // process) after it is set.
  const std::string old_style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        unsetenv("GASNET_BACKTRACE");
        const int rc = gasnett_print_backtrace_ifenabled(2);
        _exit(rc == 1 ? 0 : 1);
      },
      testing::ExitedWithCode(0), "^$");
  EXPECT_EXIT(
      {
        setenv("GASNET_BACKTRACE", "1", 1);
        const int rc = gasnett_print_backtrace_ifenabled(2);
        _exit(rc == 0 ? 0 : 1);
      },
      testing::ExitedWithCode(0), "\\[0x");
  GTEST_FLAG_SET(death_test_style, old_style);
}

// ---- system queries
// ------------------------------------------------------------

TEST(SystemTest, HostnameMatchesGethostname) {
  char expected[256] = {};
  ASSERT_EQ(gethostname(expected, sizeof(expected) - 1), 0);
  const char* name = gasnett_gethostname();
  ASSERT_NE(name, nullptr);
  EXPECT_STREQ(name, expected);
  EXPECT_EQ(gasnett_gethostname(), name);  // The same buffer every time.
}

TEST(SystemTest, CpuCountAndPhysicalMemory) {
  const int cpus = gasnett_cpu_count();
  EXPECT_GE(cpus, 1);
  EXPECT_LE(cpus, sysconf(_SC_NPROCESSORS_ONLN));
  const uint64_t bytes = gasnett_getPhysMemSz(1);
  EXPECT_GT(bytes, 0u);
  EXPECT_EQ(bytes % static_cast<uint64_t>(sysconf(_SC_PAGESIZE)), 0u);
  EXPECT_EQ(gasnett_getPhysMemSz(0), bytes);
}

// The CPUs the calling thread may run on.
std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

TEST(SystemTest, SetAffinityBindsTheCallingThreadModuloTheCpuCount) {
  const std::vector<int> allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  const int target = allowed.back();
  const int configured = static_cast<int>(sysconf(_SC_NPROCESSORS_CONF));
  for (int rank : {target, target + configured, target - configured}) {
    SCOPED_TRACE(rank);
    std::vector<int> bound;
    // On a thread of its own: the binding must not outlive the check.
    std::thread([&] {
      gasnett_set_affinity(rank);
      bound = AllowedCpus();
    }).join();
    EXPECT_EQ(bound, std::vector<int>{target});
  }
  EXPECT_EQ(AllowedCpus(), allowed);  // This thread was not touched.
}

TEST(SystemTest, SchedYieldAndEndianness) {
  EXPECT_EQ(gasnett_sched_yield(), 0);
  const uint32_t one = 1;
  unsigned char first_byte;
  std::memcpy(&first_byte, &one, 1);
  EXPECT_EQ(gasnett_isLittleEndian() != 0, first_byte == 1);
}

// ---- configuration and annotations
// ---------------------------------------------

TEST(ConfigTest, VersionsAndStrings) {
  EXPECT_EQ(GASNETT_RELEASE_VERSION_MAJOR, 2025);
  EXPECT_EQ(GASNETT_RELEASE_VERSION_MINOR, 8);
  EXPECT_EQ(GASNETT_RELEASE_VERSION_PATCH, 0);
  // This file defines no threading model; it includes <pthread.h> (through
  // GoogleTest) only after gasnet_tools.h, so it is single-threaded.
  EXPECT_EQ(std::string(GASNETT_CONFIG_STRING),
            std::string("RELEASE=2025.8.0,SPEC=1.20,EXSPEC=0.19,PTR=") +
                (sizeof(void*) == 8 ? "64bit" : "32bit") + "," +
                GEX_TOOLS_I_XSTR(GASNETT_THREAD_MODEL) + ",gex");
  const std::string tuple = GASNETT_SYSTEM_TUPLE;
  EXPECT_NE(tuple.find("linux"), std::string::npos) << tuple;
#if defined(__clang__)
  const std::string family = "CLANG";
  const int version[] = {__clang_major__, __clang_minor__,
                         __clang_patchlevel__};
#else
  const std::string family = "GNU";
  const int version[] = {__GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__};
#endif
  EXPECT_EQ(std::string(GASNETT_PLATFORM_COMPILER_IDSTR),
            "|COMPILER_FAMILY:" + family + "|COMPILER_VERSION:" +
                std::to_string(version[0]) + "." + std::to_string(version[1]) +
                "." + std::to_string(version[2]) + "|");
  EXPECT_EQ(GASNETT_CACHE_LINE_BYTES, 64);
  EXPECT_EQ(GASNETT_PAGESIZE, 4096);
  EXPECT_EQ(1 << GASNETT_PAGESHIFT, GASNETT_PAGESIZE);
}

GASNETT_INLINE(Twice) int Twice(int x) { return 2 * x; }
GASNETT_NEVER_INLINE(Thrice, int Thrice(int x)) { return 3 * x; }
GASNETT_FORMAT_PRINTF(Describe, 1, 2,
                      std::string Describe(const char* format, ...));
std::string Describe(const char* format, ...) { return format; }
const char* NameOfThisFunction() { return GASNETT_CURRENT_FUNCTION; }
GASNETT_IDENT(kGexToolsTestIdent, "$GexToolsTest: ident works $");

TEST(AnnotationTest, MacrosExpandToWorkingCode) {
  EXPECT_EQ(Twice(4), 8);
  EXPECT_EQ(Thrice(4), 12);
  EXPECT_EQ(Describe("%d", 1), "%d");
  EXPECT_STREQ(NameOfThisFunction(), "NameOfThisFunction");
  EXPECT_EQ(GASNETT_PREDICT_TRUE(5), 1);
  EXPECT_EQ(GASNETT_PREDICT_FALSE(0), 0);
  int taken = 0;
  if_pt(taken == 0) taken = 1;
  if_pf(taken == 0) taken = 2;
  EXPECT_EQ(taken, 1);
  int values[2] = {1, 2};
  int* GASNETT_RESTRICT p = values;
  GASNETT_UNUSED int unused = p[1];
  EXPECT_EQ(p[0], 1);
  EXPECT_STREQ(kGexToolsTestIdent, "$GexToolsTest: ident works $");
}

}  // namespace
