#include "base/wait_policy.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gexrt {
namespace {

int IdleRounds() { return wait_policy_internal::t_idle_rounds; }

TEST(WaitPolicyTest, SingleThreadedCountsNothing) {
  WaitPolicy policy;
  policy.Configure(/*ranks_on_host=*/2, /*cpus=*/2, /*count_threads=*/false);
  EXPECT_FALSE(policy.always_yield());
  WaitPolicy::Round round(policy);
  EXPECT_EQ(policy.waiting(), 0);
  EXPECT_FALSE(policy.Oversubscribed(100));
  round.Pause(false);
  round.Pause(true);
}

TEST(WaitPolicyTest, RanksBeyondCpusAlwaysYield) {
  WaitPolicy policy;
  policy.Configure(/*ranks_on_host=*/3, /*cpus=*/2, /*count_threads=*/true);
  EXPECT_TRUE(policy.always_yield());
  policy.Configure(2, 2, true);
  EXPECT_FALSE(policy.always_yield());
  policy.set_always_yield(true);  // GASNET_WAIT_BLOCK
  EXPECT_TRUE(policy.always_yield());
}

TEST(WaitPolicyTest, RoundCountsItsThreadWhileAlive) {
  WaitPolicy policy;
  policy.Configure(2, 2, true);
  {
    WaitPolicy::Round round(policy);
    EXPECT_EQ(policy.waiting(), 1);
    WaitPolicy::Round nested(policy);  // a handler's send that waits
    EXPECT_EQ(policy.waiting(), 2);
  }
  EXPECT_EQ(policy.waiting(), 0);
}

TEST(WaitPolicyTest, OversubscribedWhenWaitersTimesRanksExceedCpus) {
  WaitPolicy policy;
  policy.Configure(/*ranks_on_host=*/2, /*cpus=*/2, true);
  EXPECT_FALSE(policy.Oversubscribed(1));  // 2 x 1 threads on 2 CPUs
  EXPECT_TRUE(policy.Oversubscribed(2));   // 2 x 2
  policy.Configure(2, 8, true);
  EXPECT_FALSE(policy.Oversubscribed(4));  // 2 x 4 on 8
  EXPECT_TRUE(policy.Oversubscribed(5));
  policy.Configure(1, 1, true);
  EXPECT_FALSE(policy.Oversubscribed(1));
  EXPECT_TRUE(policy.Oversubscribed(2));
  policy.Configure(4, 2, true);  // ranks alone outnumber CPUs
  EXPECT_TRUE(policy.Oversubscribed(2));
}

TEST(WaitPolicyTest, OversubscribedSpinsBoundedThenYields) {
  WaitPolicy policy;
  policy.Configure(1, 1, true);
  WaitPolicy::Round a(policy);
  WaitPolicy::Round b(policy);  // two waiting threads' worth on one CPU
  ASSERT_TRUE(policy.Oversubscribed(policy.waiting()));
  b.Pause(true);
  EXPECT_EQ(IdleRounds(), 0);
  for (int i = 1; i < WaitPolicy::kSpinRounds; ++i) {
    b.Pause(false);
    EXPECT_EQ(IdleRounds(), i);
  }
  b.Pause(false);  // the bound: yields, and spins again after
  EXPECT_EQ(IdleRounds(), 0);
  b.Pause(false);
  EXPECT_EQ(IdleRounds(), 1);
  b.Pause(true);  // progress starts the spin again
  EXPECT_EQ(IdleRounds(), 0);
}

TEST(WaitPolicyTest, NotOversubscribedNeverYields) {
  for (const bool count_threads : {false, true}) {
    WaitPolicy policy;
    policy.Configure(1, 4, count_threads);
    WaitPolicy::Round round(policy);
    for (int i = 0; i < 3 * WaitPolicy::kSpinRounds; ++i) {
      round.Pause(false);
      round.PauseIfIdle(false);
    }
    EXPECT_EQ(IdleRounds(), 0);  // spins as a single thread always did
  }
}

TEST(WaitPolicyTest, AlwaysYieldLeavesTheSpinCountAlone) {
  WaitPolicy policy;
  policy.Configure(3, 2, false);
  WaitPolicy::Round round(policy);
  round.Pause(false);
  round.Pause(true);
  round.PauseIfIdle(false);
  round.PauseIfIdle(true);
  EXPECT_EQ(IdleRounds(), 0);
}

TEST(WaitPolicyTest, ThreadsWaitingAtOnceAreCounted) {
  constexpr int kThreads = 4;
  WaitPolicy policy;
  policy.Configure(1, 1, true);
  std::atomic<int> inside{0};
  std::atomic<bool> release{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      WaitPolicy::Round round(policy);
      inside.fetch_add(1);
      while (!release.load()) round.Pause(false);
    });
  }
  while (inside.load() < kThreads) std::this_thread::yield();
  EXPECT_EQ(policy.waiting(), kThreads);
  release.store(true);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(policy.waiting(), 0);
}

}  // namespace
}  // namespace gexrt
