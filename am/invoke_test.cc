#include "am/invoke.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace gexrt::am {
namespace {

struct Seen {
  void* token = nullptr;
  void* buf = nullptr;
  size_t nbytes = 0;
  std::vector<int32_t> args;
};
Seen seen;

void Short0(void* t) { seen = {t, nullptr, 0, {}}; }
void Short3(void* t, int32_t a, int32_t b, int32_t c) {
  seen = {t, nullptr, 0, {a, b, c}};
}
void Short16(void* t, int32_t a0, int32_t a1, int32_t a2, int32_t a3,
             int32_t a4, int32_t a5, int32_t a6, int32_t a7, int32_t a8,
             int32_t a9, int32_t a10, int32_t a11, int32_t a12, int32_t a13,
             int32_t a14, int32_t a15) {
  seen = {
      t,
      nullptr,
      0,
      {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15}};
}
void Medium2(void* t, void* buf, size_t n, int32_t a, int32_t b) {
  seen = {t, buf, n, {a, b}};
}

TEST(InvokeTest, ShortPassesEveryArgumentInOrder) {
  int token;
  int32_t args[16];
  for (int i = 0; i < 16; ++i) args[i] = -1000 * i - 7;
  Invoke(reinterpret_cast<HandlerFn>(&Short16), Category::kShort, &token,
         nullptr, 0, 16, args);
  EXPECT_EQ(seen.token, &token);
  EXPECT_EQ(seen.args, std::vector<int32_t>(args, args + 16));
  Invoke(reinterpret_cast<HandlerFn>(&Short3), Category::kShort, &token,
         nullptr, 0, 3, args);
  EXPECT_EQ(seen.args, std::vector<int32_t>(args, args + 3));
  Invoke(reinterpret_cast<HandlerFn>(&Short0), Category::kShort, &token,
         nullptr, 0, 0, args);
  EXPECT_TRUE(seen.args.empty());
}

TEST(InvokeTest, PayloadHandlersGetBufferAndLength) {
  int token;
  char buf[5];
  const int32_t args[2] = {INT32_MIN, INT32_MAX};
  Invoke(reinterpret_cast<HandlerFn>(&Medium2), Category::kLong, &token, buf, 5,
         2, args);
  EXPECT_EQ(seen.buf, buf);
  EXPECT_EQ(seen.nbytes, 5u);
  EXPECT_EQ(seen.args, (std::vector<int32_t>{INT32_MIN, INT32_MAX}));
}

}  // namespace
}  // namespace gexrt::am
