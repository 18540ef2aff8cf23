#include "base/atomic.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace gexrt {
namespace {

// Every flag combination the operations accept, including nonsense ones: all
// must work (they only add ordering).
constexpr AtomicFlags kAllFlags =
    kAtomicMbPre | kAtomicMbPost | kAtomicRmbPostIfTrue | kAtomicRmbPostIfFalse;

// The machine here has few cores; polite waits keep the threads of these
// tests from starving each other.
constexpr bool kPolite = true;

template <typename T>
class AtomicCounterTest : public ::testing::Test {};
using CounterTypes = ::testing::Types<Atomic32, Atomic64>;
TYPED_TEST_SUITE(AtomicCounterTest, CounterTypes);

TYPED_TEST(AtomicCounterTest, DefaultsToZeroAndHoldsItsInitialValue) {
  TypeParam zero;
  EXPECT_EQ(zero.Read(), 0u);
  TypeParam seven(7);
  EXPECT_EQ(seven.Read(), 7u);
}

TYPED_TEST(AtomicCounterTest, EveryOperationUnderEveryFlagCombination) {
  using T = typename TypeParam::value_type;
  for (AtomicFlags flags = 0; flags <= kAllFlags; ++flags) {
    SCOPED_TRACE(flags);
    TypeParam a;
    a.Set(10, flags);
    EXPECT_EQ(a.Read(flags), T{10});
    a.Increment(flags);
    EXPECT_EQ(a.Read(flags), T{11});
    a.Decrement(flags);
    EXPECT_EQ(a.Read(flags), T{10});
    EXPECT_EQ(a.Add(5, flags), T{15});
    EXPECT_EQ(a.Subtract(3, flags), T{12});
    EXPECT_EQ(a.Swap(2, flags), T{12});
    EXPECT_FALSE(a.DecrementAndTest(flags));
    EXPECT_TRUE(a.DecrementAndTest(flags));
    EXPECT_EQ(a.Read(flags), T{0});
    EXPECT_FALSE(a.CompareAndSwap(1, 9, flags));
    EXPECT_EQ(a.Read(flags), T{0});
    EXPECT_TRUE(a.CompareAndSwap(0, 9, flags));
    EXPECT_EQ(a.Read(flags), T{9});
  }
}

TYPED_TEST(AtomicCounterTest, WrapsAroundLikeUnsignedIntegers) {
  using T = typename TypeParam::value_type;
  constexpr T kMax = std::numeric_limits<T>::max();
  TypeParam a(kMax);
  a.Increment();
  EXPECT_EQ(a.Read(), T{0});
  EXPECT_EQ(a.Subtract(1), kMax);
  EXPECT_EQ(a.Add(3), T{2});
  // Decrementing through zero is not "zero".
  a.Set(0);
  EXPECT_FALSE(a.DecrementAndTest());
  EXPECT_EQ(a.Read(), kMax);
  EXPECT_EQ(TypeParam::Signed(a.Read()), -1);
  EXPECT_EQ(TypeParam::Signed(a.Subtract(4)), -5);
  EXPECT_EQ(TypeParam::Signed(5), 5);
}

TYPED_TEST(AtomicCounterTest, CompareAndSwapChangesOnlyOnMatch) {
  using T = typename TypeParam::value_type;
  constexpr T kMax = std::numeric_limits<T>::max();
  TypeParam a(42);
  EXPECT_FALSE(a.CompareAndSwap(41, 1));
  EXPECT_FALSE(a.CompareAndSwap(43, 1));
  EXPECT_EQ(a.Read(), T{42});
  EXPECT_TRUE(a.CompareAndSwap(42, kMax));
  EXPECT_EQ(a.Read(), kMax);
  EXPECT_FALSE(a.CompareAndSwap(42, 0));
  EXPECT_TRUE(a.CompareAndSwap(kMax, 0));
  EXPECT_EQ(a.Read(), T{0});
  // Swapping in the value already there succeeds.
  EXPECT_TRUE(a.CompareAndSwap(0, 0));
}

// Swap loses nothing: every value swapped in comes out exactly once, either
// returned to some swapper or left in the counter at the end.
TYPED_TEST(AtomicCounterTest, ConcurrentSwapsConserveValues) {
  using T = typename TypeParam::value_type;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20'000;
  TypeParam slot(0);
  std::vector<std::vector<T>> returned(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&slot, &returned, i] {
      for (int j = 0; j < kPerThread; ++j) {
        const T token = static_cast<T>(i * kPerThread + j + 1);
        returned[i].push_back(slot.Swap(token, kAtomicRel | kAtomicAcq));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<int> seen(kThreads * kPerThread + 1, 0);
  for (const std::vector<T>& values : returned) {
    for (const T value : values) ++seen[value];
  }
  ++seen[slot.Read()];
  for (size_t value = 0; value < seen.size(); ++value) {
    ASSERT_EQ(seen[value], 1) << "value " << value;
  }
}

TYPED_TEST(AtomicCounterTest, ConcurrentIncrementAddAndCasLoopsSum) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100'000;
  TypeParam counter;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&counter, i] {
      for (int j = 0; j < kPerThread; ++j) {
        if (i % 3 == 0) {
          counter.Increment();
        } else if (i % 3 == 1) {
          counter.Add(3);
          counter.Subtract(2);
        } else {
          auto seen = counter.Read();
          while (!counter.CompareAndSwap(seen, seen + 1)) seen = counter.Read();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter.Read(),
            typename TypeParam::value_type{kThreads} * kPerThread);
}

// Exactly one of many decrementers sees the count reach zero, and with
// release-before / acquire-if-true it sees everything the others wrote.
TYPED_TEST(AtomicCounterTest, DecrementAndTestElectsOneLastThread) {
  constexpr int kThreads = 4;
  for (int trial = 0; trial < 50; ++trial) {
    TypeParam remaining(kThreads);
    std::array<int, kThreads> results{};  // plain ints: published by the
                                          // release, read after the acquire
    std::atomic<int> winners{0};
    std::atomic<int> sum_seen_by_winner{-1};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        results[i] = i + 1;
        if (remaining.DecrementAndTest(kAtomicRel | kAtomicAcqIfTrue)) {
          winners.fetch_add(1);
          int sum = 0;
          for (int r : results) sum += r;
          sum_seen_by_winner.store(sum);
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(winners.load(), 1);
    EXPECT_EQ(sum_seen_by_winner.load(), kThreads * (kThreads + 1) / 2);
  }
}

// A flag hand-off: non-atomic data written before a release Set is visible
// after an acquire Read of the flag (ThreadSanitizer checks this too).
TEST(AtomicTest, ReleaseSetThenAcquireReadPublishesData) {
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<int> data;
    Atomic32 ready;
    std::thread producer([&] {
      data.assign(100, trial);
      ready.Set(1, kAtomicRel);
    });
    PoliteSpinWait wait(kPolite);
    wait.Until([&] { return ready.Read(kAtomicAcq) == 1; });
    ASSERT_EQ(data.size(), 100u);
    EXPECT_EQ(data[99], trial);
    producer.join();
  }
}

// Runs `threads` threads that each take `lock`, bump a plain counter and
// release it `per_thread` times; the counter is exact only if the lock's
// flags order the plain accesses.
template <typename Lock, typename Unlock>
int64_t CountUnderLock(int threads, int per_thread, Lock lock, Unlock unlock) {
  int64_t plain_counter = 0;
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {
      PoliteSpinWait wait(kPolite);
      for (int j = 0; j < per_thread; ++j) {
        while (!lock()) wait.Pause();
        ++plain_counter;
        unlock();
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  return plain_counter;
}

// A spin lock built from CAS (acquire on success) and a release Set guards
// a plain counter.
TEST(AtomicTest, CasSpinLockProtectsPlainData) {
  Atomic32 word;
  EXPECT_EQ(CountUnderLock(
                4, 20'000,
                [&] { return word.CompareAndSwap(0, 1, kAtomicAcqIfTrue); },
                [&] { word.Set(0, kAtomicRel); }),
            int64_t{4} * 20'000);
}

// The same with the fence-only spellings and MB flags.
TEST(AtomicTest, FullFenceFlagsSynchroniseToo) {
  Atomic64 word;
  EXPECT_EQ(CountUnderLock(
                3, 10'000, [&] { return word.Swap(1, kAtomicMbPost) == 0; },
                [&] { word.Set(0, kAtomicMbPre); }),
            int64_t{3} * 10'000);
}

TEST(AtomicRefTest, OperatesOnPlainStorage) {
  uint64_t word = 5;
  AtomicRef64 ref(word);
  EXPECT_EQ(ref.Add(5, kAtomicRel), 10u);
  EXPECT_TRUE(ref.CompareAndSwap(10, 20, kAtomicAcqIfTrue));
  EXPECT_EQ(ref.Read(kAtomicAcq), 20u);
  AtomicRef64 copy = ref;  // views copy
  copy.Increment();
  EXPECT_EQ(ref.Read(), 21u);
  EXPECT_EQ(word, 21u);  // no view is in use any more

  // A union member, as the GASNet tools specification allows.
  union {
    uint32_t word;
    struct {
      int16_t a, b;
    } halves;
  } u;
  u.word = 0;
  AtomicRef32(u.word).Set(0xffffffffu);
  AtomicRef32(u.word).Increment();
  EXPECT_EQ(u.word, 0u);
}

TEST(AtomicRefTest, ConcurrentViewsOfOneWord) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50'000;
  alignas(8) uint64_t word = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&word] {
      AtomicRef64 ref(word);
      for (int j = 0; j < kPerThread; ++j) ref.Increment();
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(word, uint64_t{kThreads} * kPerThread);
}

TEST(CacheLineTest, PaddedValuesSitOnTheirOwnLines) {
  static_assert(kCacheLineSize == 64);
  static_assert(alignof(CacheLinePadded<char>) == kCacheLineSize);
  static_assert(sizeof(CacheLinePadded<char>) == kCacheLineSize);
  static_assert(sizeof(CacheLinePadded<std::array<char, 65>>) ==
                2 * kCacheLineSize);
  std::array<CacheLinePadded<Atomic64>, 3> counters;
  for (size_t i = 1; i < counters.size(); ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(&counters[i]) -
                  reinterpret_cast<uintptr_t>(&counters[i - 1]),
              kCacheLineSize);
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&counters[0]) % kCacheLineSize, 0u);
  counters[1]->Increment();
  EXPECT_EQ((*counters[1]).Read(), 1u);
  EXPECT_EQ(counters[0].get().Read(), 0u);

  CacheLinePadded<Atomic32> initialised(std::in_place, 7u);
  EXPECT_EQ(initialised->Read(), 7u);
  const CacheLinePadded<std::pair<int, int>> pair(std::in_place, 1, 2);
  EXPECT_EQ(pair->second, 2);

  // Heap allocation honours the over-alignment.
  auto heap = std::make_unique<CacheLinePadded<int>>();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(heap.get()) % kCacheLineSize, 0u);
  EXPECT_EQ(**heap, 0);
}

TEST(SpinTest, CpuRelaxAndFencesReturn) {
  int word = 1;
  PrefetchForWrite(&word);
  word = 2;
  EXPECT_EQ(word, 2);
  CpuRelax();
  LocalRmb();
  LocalWmb();
  LocalMb();
  CompilerFence();
}

TEST(SpinTest, UntilChecksBeforePausing) {
  for (const bool polite : {false, true}) {
    PoliteSpinWait wait(polite);
    EXPECT_EQ(wait.polite(), polite);
    int calls = 0;
    wait.Until([&] { return ++calls > 0; });
    EXPECT_EQ(calls, 1);
  }
}

TEST(SpinTest, BothModesSeeAnotherThreadsUpdate) {
  for (const bool polite : {false, true}) {
    Atomic32 flag;
    std::thread setter([&flag] { flag.Set(1, kAtomicRel); });
    PoliteSpinWait wait(polite);
    int pauses = 0;
    while (flag.Read(kAtomicAcq) == 0) {
      wait.Pause();
      ++pauses;
    }
    setter.join();
    EXPECT_GE(pauses, 0);
  }
}

}  // namespace
}  // namespace gexrt
