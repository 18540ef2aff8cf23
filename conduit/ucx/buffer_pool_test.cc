#include "conduit/ucx/buffer_pool.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace gexrt::ucx {
namespace {

TEST(BufferPoolTest, GrowsToItsMaximumThenRefuses) {
  BufferPool pool(100, 2, 4, /*thread_safe=*/false);
  EXPECT_EQ(pool.allocated(), 2u);
  std::vector<unsigned char*> held;
  for (int i = 0; i < 4; ++i) {
    unsigned char* b = pool.Get();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 16, 0u);
    held.push_back(b);
  }
  EXPECT_EQ(pool.Get(), nullptr);
  EXPECT_EQ(pool.allocated(), 4u);
  pool.Put(held.back());
  EXPECT_EQ(pool.Get(), held.back());
  EXPECT_EQ(pool.allocated(), 4u);
  EXPECT_GE(pool.buffer_size(), 100u);
}

TEST(BufferPoolTest, ThreadSafePoolReuses) {
  BufferPool pool(64, 0, 1, /*thread_safe=*/true);
  unsigned char* a = pool.Get();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(pool.Get(), nullptr);
  pool.Put(a);
  EXPECT_EQ(pool.Get(), a);
}

}  // namespace
}  // namespace gexrt::ucx
