// ComputeStridedExtent (api/vis_extent.h) against the elements themselves:
// for many shapes (zero counts, counts of one, one-element strides, every
// order of the levels, strides that are not increasing, negative and zero
// strides, contiguous levels that the copy folds into one element) every
// element's first and last byte is enumerated, and the extent must be
// exactly [lowest first byte, highest last byte]. GASNet-EX spec,
// "Strided" in the VIS section: the elements are at
// base + sum(i_k * strides[k]); the region is inside the segment iff every
// element is.
#include "api/vis_extent.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gexrt::api {
namespace {

struct Bounds {
  bool any = false;
  ptrdiff_t lo = 0;   // First byte of the lowest element.
  ptrdiff_t end = 0;  // One past the last byte of the highest.
};

// Every element, enumerated (the reference).
Bounds Enumerate(size_t elemsz, const std::vector<size_t>& count,
                 const std::vector<ptrdiff_t>& strides) {
  Bounds b;
  if (elemsz == 0) return b;
  for (size_t c : count) {
    if (c == 0) return b;
  }
  std::vector<size_t> i(count.size(), 0);
  for (;;) {
    ptrdiff_t at = 0;
    for (size_t k = 0; k < count.size(); ++k) {
      at += static_cast<ptrdiff_t>(i[k]) * strides[k];
    }
    const ptrdiff_t end = at + static_cast<ptrdiff_t>(elemsz);
    if (!b.any) {
      b = Bounds{true, at, end};
    } else {
      b.lo = std::min(b.lo, at);
      b.end = std::max(b.end, end);
    }
    size_t k = 0;
    while (k < count.size() && ++i[k] == count[k]) i[k++] = 0;
    if (k == count.size()) return b;
  }
}

void ExpectExact(size_t elemsz, const std::vector<size_t>& count,
                 const std::vector<ptrdiff_t>& strides) {
  StridedExtent x;
  ASSERT_TRUE(ComputeStridedExtent(elemsz, count.data(), strides.data(),
                                   count.size(), &x));
  const Bounds b = Enumerate(elemsz, count, strides);
  std::string shape = "elemsz " + std::to_string(elemsz) + ":";
  for (size_t k = 0; k < count.size(); ++k) {
    shape += " " + std::to_string(count[k]) + "x" + std::to_string(strides[k]);
  }
  if (!b.any) {
    EXPECT_EQ(x.bytes, 0u) << shape;
    return;
  }
  EXPECT_EQ(x.lo, b.lo) << shape;
  EXPECT_EQ(x.bytes, static_cast<size_t>(b.end - b.lo)) << shape;
}

TEST(StridedExtentTest, NoLevelsIsOneElement) { ExpectExact(24, {}, {}); }

TEST(StridedExtentTest, ContiguousLevelsAreExactlyTheBlock) {
  // 4 elements of 4 bytes, contiguous: 16 bytes, not 4 * 3 + 16. (The
  // copy folds such levels into one 16-byte element; the extent must not
  // add that element's size to the last element's start.)
  ExpectExact(4, {4}, {4});
  ExpectExact(8, {3, 5}, {8, 24});
  ExpectExact(1, {2, 3, 4}, {1, 2, 6});
  // Contiguous first level, gapped second.
  ExpectExact(4, {4, 3}, {4, 100});
}

TEST(StridedExtentTest, ZeroAndOneCounts) {
  ExpectExact(8, {0}, {8});
  ExpectExact(8, {3, 0, 2}, {8, 24, 1000});
  ExpectExact(8, {1}, {-1000000});
  ExpectExact(8, {1, 1, 1}, {5, -7, 1 << 20});
  ExpectExact(0, {3}, {8});
}

TEST(StridedExtentTest, NegativeZeroAndNonIncreasingStrides) {
  ExpectExact(4, {5}, {-4});
  ExpectExact(4, {3, 4}, {48, 12});  // Outer level first.
  ExpectExact(4, {3, 4}, {-48, 12});
  ExpectExact(4, {3, 4}, {0, 4});    // A repeated row.
  ExpectExact(16, {2, 3}, {16, 8});  // Overlapping elements.
  ExpectExact(2, {4, 2, 3}, {-2, 100, -1000});
}

// Dense layouts of 1 to 4 levels in every order of the levels, with
// gaps and sign flips, and every count in {0, 1, 2, 3, 5}: the shapes a
// client passes for sub-arrays, transposes and reflections.
TEST(StridedExtentTest, EveryOrderOfRandomShapes) {
  std::mt19937_64 rng(12345);
  const size_t kCounts[] = {0, 1, 2, 3, 5};
  const size_t kElems[] = {1, 3, 4, 8, 64};
  for (int round = 0; round < 400; ++round) {
    const size_t levels = 1 + rng() % 4;
    const size_t elemsz = kElems[rng() % 5];
    std::vector<size_t> count(levels);
    for (size_t& c : count) c = kCounts[rng() % 5];
    std::vector<size_t> order(levels);
    std::iota(order.begin(), order.end(), 0);
    do {
      std::vector<ptrdiff_t> strides(levels);
      ptrdiff_t step = static_cast<ptrdiff_t>(elemsz);
      for (size_t k : order) {
        const ptrdiff_t gap =
            rng() % 3 == 0 ? static_cast<ptrdiff_t>(rng() % 9) : 0;
        strides[k] = (rng() % 4 == 0 ? -1 : 1) * (step + gap);
        step = (step + gap) *
               static_cast<ptrdiff_t>(std::max<size_t>(count[k], 1));
      }
      ExpectExact(elemsz, count, strides);
    } while (std::next_permutation(order.begin(), order.end()));
  }
}

TEST(StridedExtentTest, OverflowIsReported) {
  StridedExtent x;
  const size_t count[] = {3};
  const ptrdiff_t huge[] = {PTRDIFF_MAX / 2 + 1};
  EXPECT_FALSE(ComputeStridedExtent(1, count, huge, 1, &x));
  const size_t big[] = {SIZE_MAX};
  const ptrdiff_t one[] = {1};
  EXPECT_FALSE(ComputeStridedExtent(1, big, one, 1, &x));
}

}  // namespace
}  // namespace gexrt::api
