#include "rma/atomic.h"

#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gexrt::rma {
namespace {

// Applies `op` to a cell holding `start` and returns {old, new}.
template <typename T>
std::pair<T, T> Do(uint32_t dt, uint32_t op, T start, T a, T b = T()) {
  alignas(8) T cell = start;
  const uint64_t old = AtomicApply(&cell, dt, op, ToBits(a), ToBits(b));
  return {FromBits<T>(old), cell};
}

template <typename T>
void CheckArithmetic(uint32_t dt) {
  const T x = T(7);
  const T y = T(3);
  struct Case {
    uint32_t op;
    T expect;
  };
  const Case cases[] = {
      {kOpAdd, T(x + y)},    {kOpSub, T(x - y)}, {kOpMult, T(x * y)},
      {kOpMin, y},           {kOpMax, x},        {kOpInc, T(x + T(1))},
      {kOpDec, T(x - T(1))}, {kOpSet, y},
  };
  for (const Case& c : cases) {
    auto [old, now] = Do<T>(dt, c.op, x, y);
    EXPECT_EQ(now, c.expect) << "op 0x" << std::hex << c.op;
    // The fetching form: the same update, and the old value.
    const uint32_t fop = c.op << kFetchShift;
    auto [fold, fnow] = Do<T>(dt, fop, x, y);
    EXPECT_EQ(fnow, c.expect) << "op 0x" << std::hex << fop;
    EXPECT_EQ(fold, x) << "op 0x" << std::hex << fop;
  }
  auto [gold, gnow] = Do<T>(dt, kOpGet, x, y);
  EXPECT_EQ(gold, x);
  EXPECT_EQ(gnow, x);
  // CAS: equal swaps, unequal leaves; FCAS returns the old value.
  EXPECT_EQ(Do<T>(dt, kOpCas, x, x, y).second, y);
  EXPECT_EQ(Do<T>(dt, kOpCas, x, y, y).second, x);
  EXPECT_EQ(Do<T>(dt, kOpFcas, x, x, y), std::make_pair(x, y));
  EXPECT_EQ(Do<T>(dt, kOpFcas, x, y, T(1)), std::make_pair(x, x));
}

TEST(AtomicApply, ArithmeticAndAccessorsOnEveryType) {
  CheckArithmetic<int32_t>(kDtI32);
  CheckArithmetic<uint32_t>(kDtU32);
  CheckArithmetic<int64_t>(kDtI64);
  CheckArithmetic<uint64_t>(kDtU64);
  CheckArithmetic<float>(kDtFlt);
  CheckArithmetic<double>(kDtDbl);
}

TEST(AtomicApply, SignedMinMaxAndWrapping) {
  EXPECT_EQ(Do<int32_t>(kDtI32, kOpMin, -5, 3).second, -5);
  EXPECT_EQ(Do<int64_t>(kDtI64, kOpMax, -5, -9).second, -5);
  EXPECT_EQ(Do<uint32_t>(kDtU32, kOpMin, 0xffffffffu, 3).second, 3u);
  EXPECT_EQ(Do<int32_t>(kDtI32, kOpInc, INT32_MAX, 0).second, INT32_MIN);
  EXPECT_EQ(Do<uint64_t>(kDtU64, kOpDec, 0, 0).second, UINT64_MAX);
  EXPECT_EQ(Do<float>(kDtFlt, kOpMin, -1.5f, 2.0f).second, -1.5f);
}

TEST(AtomicApply, Bitwise) {
  EXPECT_EQ(Do<uint32_t>(kDtU32, kOpAnd, 0xf0f0u, 0xff00u).second, 0xf000u);
  EXPECT_EQ(Do<int64_t>(kDtI64, kOpOr, 0x0f, 0xf0).second, 0xff);
  EXPECT_EQ(Do<uint64_t>(kDtU64, kOpXor << kFetchShift, 0xffull, 0x0full),
            std::make_pair(uint64_t{0xff}, uint64_t{0xf0}));
}

TEST(AtomicApply, ConcurrentAddsSumExactly) {
  alignas(8) uint64_t u = 0;
  alignas(8) double d = 0;
  constexpr int kThreads = 4;
  constexpr int kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        AtomicApply(&u, kDtU64, kOpFadd, 1, 0);
        AtomicApply(&d, kDtDbl, kOpAdd, ToBits(1.0), 0);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(u, uint64_t{kThreads} * kEach);
  EXPECT_EQ(d, double{kThreads} * kEach);
}

TEST(AtomicVocabulary, Sizes) {
  EXPECT_EQ(DtSize(kDtI32), 4u);
  EXPECT_EQ(DtSize(kDtFlt), 4u);
  EXPECT_EQ(DtSize(kDtU64), 8u);
  EXPECT_EQ(DtSize(kDtDbl), 8u);
  EXPECT_EQ(DtSize(kDtI32 | kDtU32), 0u);
  EXPECT_EQ(DtSize(1u << 6), 0u);
  EXPECT_TRUE(IsFetching(kOpGet));
  EXPECT_TRUE(IsFetching(kOpSwap));
  EXPECT_FALSE(IsFetching(kOpSet));
}

}  // namespace
}  // namespace gexrt::rma
