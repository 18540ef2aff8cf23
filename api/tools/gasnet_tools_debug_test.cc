// The mutex misuse checks gasnet_tools.h compiles in with GEX_DEBUG (this
// target's local_defines).
#include <gasnet_tools.h>

#include <thread>

#include "gtest/gtest.h"

#if !defined(GEX_DEBUG) || !GEX_DEBUG
#error "this test must be compiled with GEX_DEBUG=1"
#endif

namespace {

TEST(MutexDebugTest, CorrectUseStillWorks) {
  gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
  gasnett_cond_t c = GASNETT_COND_INITIALIZER;
  gasnett_mutex_assertunlocked(&m);
  EXPECT_EQ(gasnett_mutex_lock(&m), 0);
  gasnett_mutex_assertlocked(&m);
  EXPECT_EQ(gasnett_mutex_unlock(&m), 0);
  EXPECT_EQ(gasnett_mutex_trylock(&m), 0);
  gasnett_mutex_assertlocked(&m);
  EXPECT_EQ(gasnett_mutex_trylock(&m), EBUSY);  // Not a recursive lock.
  gasnett_mutex_unlock(&m);

  // Ownership follows the mutex through a condition wait.
  bool ready = false;
  std::thread signaller([&] {
    gasnett_mutex_lock(&m);
    ready = true;
    gasnett_cond_signal(&c);
    gasnett_mutex_unlock(&m);
  });
  gasnett_mutex_lock(&m);
  while (!ready) gasnett_cond_wait(&c, &m);
  gasnett_mutex_assertlocked(&m);
  gasnett_mutex_unlock(&m);
  signaller.join();
  gasnett_mutex_assertunlocked(&m);
  EXPECT_EQ(gasnett_mutex_destroy(&m), 0);
}

TEST(MutexDebugTest, AnotherThreadsLockIsNotOurs) {
  gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
  gasnett_mutex_lock(&m);
  std::thread([&] { gasnett_mutex_assertunlocked(&m); }).join();
  gasnett_mutex_unlock(&m);
}

TEST(MutexDebugDeathTest, RecursiveLockIsFatal) {
  gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
  EXPECT_DEATH(
      {
        gasnett_mutex_lock(&m);
        gasnett_mutex_lock(&m);
      },
      "FATAL ERROR.*gasnett_mutex_lock: recursive lock");
}

TEST(MutexDebugDeathTest, UnlockingAnUnheldMutexIsFatal) {
  gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
  EXPECT_DEATH(gasnett_mutex_unlock(&m),
               "FATAL ERROR.*gasnett_mutex_unlock: this thread does not hold");
}

TEST(MutexDebugDeathTest, FailedAssertionsAreFatal) {
  gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
  EXPECT_DEATH(gasnett_mutex_assertlocked(&m),
               "FATAL ERROR.*gasnett_mutex_assertlocked");
  EXPECT_DEATH(
      {
        gasnett_mutex_lock(&m);
        gasnett_mutex_assertunlocked(&m);
      },
      "FATAL ERROR.*gasnett_mutex_assertunlocked");
}

TEST(MutexDebugDeathTest, WaitingWithoutTheMutexIsFatal) {
  gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
  gasnett_cond_t c = GASNETT_COND_INITIALIZER;
  EXPECT_DEATH(gasnett_cond_wait(&c, &m),
               "FATAL ERROR.*gasnett_cond_wait: this thread does not hold");
}

TEST(MutexDebugDeathTest, DestroyingAHeldMutexIsFatal) {
  gasnett_mutex_t m = GASNETT_MUTEX_INITIALIZER;
  EXPECT_DEATH(
      {
        gasnett_mutex_lock(&m);
        gasnett_mutex_destroy(&m);
      },
      "FATAL ERROR.*gasnett_mutex_destroy: the mutex is locked");
}

}  // namespace
