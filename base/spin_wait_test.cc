#include "base/spin_wait.h"

#include <atomic>
#include <thread>

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

}  // namespace
}  // namespace gexrt
