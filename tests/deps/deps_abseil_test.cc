// Abseil links and works across the components gex uses most: strings,
// StatusOr, Swiss tables, Mutex with real threads, int128, random.

#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/numeric/int128.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace {

// Parses "0,2,4" style lists; the kind of parsing base/ does.
absl::StatusOr<std::vector<int>> ParseList(absl::string_view text) {
  std::vector<int> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int value = 0;
    if (!absl::SimpleAtoi(part, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("not a number: '", part, "'"));
    }
    out.push_back(value);
  }
  return out;
}

TEST(AbseilTest, StrSplitStrCatAndStatusOr) {
  absl::StatusOr<std::vector<int>> good = ParseList("0,2,4");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(*good, (std::vector<int>{0, 2, 4}));

  absl::StatusOr<std::vector<int>> bad = ParseList("1,x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "not a number: 'x'");
  EXPECT_EQ(absl::StrFormat("%s=%d", "n", 3), "n=3");
}

TEST(AbseilTest, FlatHashMap) {
  absl::flat_hash_map<std::string, int> counts;
  for (absl::string_view word : absl::StrSplit("a b a c a b", ' ')) {
    ++counts[word];
  }
  EXPECT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts["a"], 3);
  EXPECT_EQ(counts["b"], 2);
  EXPECT_FALSE(counts.contains("d"));
}

TEST(AbseilTest, MutexSerializesThreads) {
#if defined(__SANITIZE_THREAD__)
  // Debian's libabsl_synchronization.so is not built with TSan, so TSan
  // cannot see absl::Mutex order anything and reports every access it
  // protects as a race. (std::mutex is fine: TSan intercepts pthreads.)
  GTEST_SKIP() << "absl::Mutex from an uninstrumented library under TSan";
#endif
  absl::Mutex mu;
  long total = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        absl::MutexLock lock(&mu);
        ++total;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  absl::MutexLock lock(&mu);
  EXPECT_EQ(total, 40000);
}

TEST(AbseilTest, Int128AndRandom) {
  absl::uint128 x = absl::Uint128Max();
  EXPECT_EQ(absl::Uint128High64(x), ~uint64_t{0});
  EXPECT_EQ(x + 1, 0);

  absl::BitGen gen;
  for (int i = 0; i < 100; ++i) {
    int v = absl::Uniform(gen, 0, 8);
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 8);
  }
}

}  // namespace
