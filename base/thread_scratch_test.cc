#include "base/thread_scratch.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "gtest/gtest.h"

namespace gexrt {
namespace {

constinit thread_local ThreadScratch tl_first;
constinit thread_local ThreadScratch tl_second;

TEST(ThreadScratchTest, GrowsOnlyWhenAskedForMore) {
  unsigned char* small = tl_first.Get(16);
  ASSERT_NE(small, nullptr);
  EXPECT_GE(tl_first.size(), 16u);
  std::memset(small, 0xab, 16);
  EXPECT_EQ(tl_first.Get(8), small);
  EXPECT_EQ(small[15], 0xab);  // kept: the size did not grow
  unsigned char* large = tl_first.Get(1 << 20);
  ASSERT_NE(large, nullptr);
  EXPECT_GE(tl_first.size(), size_t{1} << 20);
  std::memset(large, 0, size_t{1} << 20);
  EXPECT_NE(tl_first.Get(0), nullptr);
}

TEST(ThreadScratchTest, EachThreadHasItsOwn) {
  unsigned char* mine = tl_first.Get(64);
  unsigned char* theirs = nullptr;
  std::thread([&] { theirs = tl_first.Get(64); }).join();
  EXPECT_NE(theirs, nullptr);
  EXPECT_NE(theirs, mine);
}

TEST(ThreadScratchTest, AThreadsBlocksAreFreedWhenItEnds) {
  const long before = ThreadScratch::LiveBlocksForTesting();
  long during = 0;
  std::thread([&] {
    tl_first.Get(100);
    tl_second.Get(200);
    tl_second.Get(300);  // a grown block replaces the old one
    during = ThreadScratch::LiveBlocksForTesting();
  }).join();
  EXPECT_EQ(during, before + 2);
  EXPECT_EQ(ThreadScratch::LiveBlocksForTesting(), before);
}

// glibc runs the main thread's thread_local destructors before the atexit
// handlers, where the runtime's exit protocol polls and sends. There the
// scratch has been released (size 0) and a Get hands out fresh memory;
// a thread_local std::unique_ptr would hand out a freed (or null) block.
void UseScratchAtExit() {
  if (tl_first.size() != 0) _exit(3);  // not released: nothing was checked
  unsigned char* p = tl_first.Get(4096);
  if (p == nullptr) _exit(4);
  std::memset(p, 0x5a, 4096);
  if (p[4095] != 0x5a) _exit(5);
  _exit(42);
}

TEST(ThreadScratchDeathTest, UsableInExitHandlersAfterThreadDestructors) {
  EXPECT_EXIT(
      {
        std::memset(tl_first.Get(64), 1, 64);
        std::atexit(UseScratchAtExit);
        std::exit(0);
      },
      ::testing::ExitedWithCode(42), "");
}

}  // namespace
}  // namespace gexrt
