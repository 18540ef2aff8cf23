#include "base/spin_wait.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gexrt {
namespace {

TEST(SpinTest, CpuRelaxAndPrefetchReturn) {
  int word = 1;
  PrefetchForWrite(&word);
  word = 2;
  EXPECT_EQ(word, 2);
  CpuRelax();
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
    std::atomic<int> flag{0};
    std::thread setter([&flag] { flag.store(1, std::memory_order_release); });
    PoliteSpinWait wait(polite);
    wait.Until([&] { return flag.load(std::memory_order_acquire) != 0; });
    setter.join();
    EXPECT_EQ(flag.load(), 1);
  }
}

TEST(SpinTest, SpinThenYieldSpinsBoundedThenYields) {
  SpinThenYield wait;
  for (int i = 1; i <= SpinThenYield::kSpins; ++i) {
    wait.Pause();
    EXPECT_EQ(wait.spins(), i);
  }
  wait.Pause();  // yields from here on
  wait.Pause();
  EXPECT_EQ(wait.spins(), SpinThenYield::kSpins);
}

TEST(SpinTest, SpinThenYieldLockPassesBetweenThreads) {
  // More threads than this machine may have CPUs, each taking a lock that
  // it holds for a moment: every increment lands.
  constexpr int kThreads = 8;
  constexpr int kEach = 2000;
  std::atomic<bool> busy{false};
  int count = 0;  // guarded by busy
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        SpinThenYield wait;
        while (busy.exchange(true, std::memory_order_acquire)) {
          while (busy.load(std::memory_order_relaxed)) wait.Pause();
        }
        ++count;
        busy.store(false, std::memory_order_release);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(count, kThreads * kEach);
}

}  // namespace
}  // namespace gexrt
