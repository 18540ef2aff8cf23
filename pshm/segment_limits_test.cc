#include "pshm/segment_limits.h"

#include <cstdlib>
#include <string>

#include "base/env/parse.h"
#include "base/env/settings.h"
#include "gtest/gtest.h"
#include "pshm/shared_object.h"

namespace gexrt::pshm {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

MaxSegSize Parsed(const std::string& text) {
  absl::StatusOr<MaxSegSize> parsed = ParseMaxSegSize(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status();
  return parsed.ok() ? *parsed : MaxSegSize{};
}

TEST(ParseMaxSegSizeTest, SuffixesChooseHostOrProcess) {
  MaxSegSize m = Parsed("0.85/H");
  EXPECT_TRUE(m.per_host);
  EXPECT_TRUE(m.amount.is_fraction);
  EXPECT_DOUBLE_EQ(m.amount.fraction, 0.85);

  m = Parsed("4G/P");
  EXPECT_FALSE(m.per_host);
  EXPECT_FALSE(m.amount.is_fraction);
  EXPECT_EQ(m.amount.bytes, 4 * kGiB);

  m = Parsed("4G/H");
  EXPECT_TRUE(m.per_host);
  EXPECT_EQ(m.amount.bytes, 4 * kGiB);

  m = Parsed("0.5/P");
  EXPECT_FALSE(m.per_host);
  EXPECT_TRUE(m.amount.is_fraction);
  EXPECT_DOUBLE_EQ(m.amount.fraction, 0.5);

  m = Parsed("1000MB/p");  // Any case.
  EXPECT_FALSE(m.per_host);
  EXPECT_EQ(m.amount.bytes, 1000 * kMiB);

  m = Parsed("2g/h");
  EXPECT_TRUE(m.per_host);
  EXPECT_EQ(m.amount.bytes, 2 * kGiB);

  m = Parsed(" 512M / P ");  // Whitespace around the parts.
  EXPECT_FALSE(m.per_host);
  EXPECT_EQ(m.amount.bytes, 512 * kMiB);
}

TEST(ParseMaxSegSizeTest, WithoutSuffixSizesArePerProcessFractionsPerHost) {
  MaxSegSize m = Parsed("4G");
  EXPECT_FALSE(m.per_host);
  EXPECT_EQ(m.amount.bytes, 4 * kGiB);

  m = Parsed("0.5");
  EXPECT_TRUE(m.per_host);
  EXPECT_DOUBLE_EQ(m.amount.fraction, 0.5);

  // "5/8" is a fraction, not an amount with a suffix "8".
  m = Parsed("5/8");
  EXPECT_TRUE(m.per_host);
  EXPECT_TRUE(m.amount.is_fraction);
  EXPECT_DOUBLE_EQ(m.amount.fraction, 0.625);

  // And with a suffix after it.
  m = Parsed("5/8/P");
  EXPECT_FALSE(m.per_host);
  EXPECT_DOUBLE_EQ(m.amount.fraction, 0.625);

  m = Parsed("1048576");
  EXPECT_FALSE(m.per_host);
  EXPECT_EQ(m.amount.bytes, kMiB);

  m = Parsed("0");  // An absolute zero.
  EXPECT_FALSE(m.amount.is_fraction);
  EXPECT_EQ(m.amount.bytes, 0u);
}

TEST(ParseMaxSegSizeTest, GarbageIsAnErrorThatMentionsTheSuffixes) {
  for (const char* text : {"lots", "", "/H", "4G/X", "4G/", "-1G/H", "0.5/H/P",
                           "9/8", "5/8/Q", "4Q", "1/0"}) {
    SCOPED_TRACE(text);
    absl::StatusOr<MaxSegSize> parsed = ParseMaxSegSize(text);
    ASSERT_FALSE(parsed.ok()) << parsed->ToString();
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(parsed.status().message());
    EXPECT_NE(message.find("/H"), std::string::npos) << message;
    EXPECT_NE(message.find("/P"), std::string::npos) << message;
  }
}

TEST(ParseMaxSegSizeTest, ToStringRoundTrips) {
  EXPECT_EQ(Parsed("0.85/H").ToString(), "0.85/H");
  EXPECT_EQ(Parsed("4G/P").ToString(), "4G/P");
  EXPECT_EQ(Parsed("4G").ToString(), "4G/P");
  EXPECT_EQ(Parsed("0.5").ToString(), "0.5/H");
  EXPECT_EQ(Parsed("5/8").ToString(), "0.625/H");
  EXPECT_EQ(Parsed("1000MB/p").ToString(), "1000M/P");
  for (const char* text :
       {"0.85/H", "4G/P", "4G/H", "0.5/P", "5/8", "1000MB/p", "12345", "0"}) {
    SCOPED_TRACE(text);
    const MaxSegSize m = Parsed(text);
    const MaxSegSize again = Parsed(m.ToString());
    EXPECT_EQ(again.amount, m.amount);
    EXPECT_EQ(again.per_host, m.per_host);
  }
}

SegmentLimitInputs Inputs(const std::string& max_segsize, uint64_t physical,
                          uint64_t shared, uint32_t ranks,
                          uint64_t page = 4096) {
  SegmentLimitInputs in;
  in.max_segsize = Parsed(max_segsize);
  in.physical_memory = physical;
  in.shared_available = shared;
  in.host_ranks = ranks;
  in.page_size = page;
  return in;
}

TEST(MaxLocalSegmentSizeTest, PerHostIsDividedAmongTheRanks) {
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("0.5/H", 16 * kGiB, 1024 * kGiB, 4)),
            2 * kGiB);
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("0.5/H", 16 * kGiB, 1024 * kGiB, 1)),
            8 * kGiB);
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("8G/H", 16 * kGiB, 1024 * kGiB, 8)),
            1 * kGiB);
  // 4 GiB over 3 ranks, rounded down to whole pages.
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("4G/H", 16 * kGiB, 1024 * kGiB, 3)),
            (4 * kGiB / 3) / 4096 * 4096);
}

TEST(MaxLocalSegmentSizeTest, PerProcessIsNotDivided) {
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("4G/P", 16 * kGiB, 1024 * kGiB, 4)),
            4 * kGiB);
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("4G", 16 * kGiB, 1024 * kGiB, 16)),
            4 * kGiB);
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("0.25/P", 16 * kGiB, 1024 * kGiB, 16)),
            4 * kGiB);
}

TEST(MaxLocalSegmentSizeTest, SharedMemoryIsDividedAmongTheRanks) {
  // 8 GiB of shared memory for 4 ranks: 2 GiB each, below the 4G/P limit.
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("4G/P", 16 * kGiB, 8 * kGiB, 4)),
            2 * kGiB);
  // The per-host limit and the shared memory cap together: the smaller.
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("0.85/H", 16 * kGiB, 4 * kGiB, 2)),
            2 * kGiB);
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("0.25/H", 16 * kGiB, 40 * kGiB, 2)),
            2 * kGiB);
  // No shared memory left: nothing.
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("4G/P", 16 * kGiB, 0, 4)), 0u);
  // Less than a page each: nothing.
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("4G/P", 16 * kGiB, 3 * 4095, 3)), 0u);
}

TEST(MaxLocalSegmentSizeTest, RoundsDownToWholePages) {
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("10000/P", 16 * kGiB, kGiB, 1)), 8192u);
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("8192/P", 16 * kGiB, kGiB, 1)), 8192u);
  EXPECT_EQ(
      MaxLocalSegmentSize(Inputs("3G/P", 16 * kGiB, 1024 * kGiB, 1, 2 * kMiB)),
      3 * kGiB);
  EXPECT_EQ(MaxLocalSegmentSize(
                Inputs("1000M/H", 16 * kGiB, 1024 * kGiB, 3, 2 * kMiB)),
            (1000 * kMiB / 3) / (2 * kMiB) * (2 * kMiB));
  // The shared memory share is rounded too.
  EXPECT_EQ(
      MaxLocalSegmentSize(Inputs("4G/P", 16 * kGiB, 10 * kGiB + 12345, 3)),
      ((10 * kGiB + 12345) / 3) / 4096 * 4096);
  for (uint32_t ranks : {1u, 2u, 3u, 5u, 7u, 64u}) {
    for (uint64_t page : {uint64_t{4096}, uint64_t{65536}, 2 * kMiB}) {
      const uint64_t v = MaxLocalSegmentSize(
          Inputs("0.85/H", 123456789 * kKiB, 99999999 * kKiB, ranks, page));
      EXPECT_EQ(v % page, 0u) << ranks << " " << page;
      EXPECT_LE(v, uint64_t{99999999} * kKiB / ranks);
    }
  }
}

TEST(MaxLocalSegmentSizeTest, ZeroRanksCountsAsOne) {
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("0.5/H", 16 * kGiB, 1024 * kGiB, 0)),
            MaxLocalSegmentSize(Inputs("0.5/H", 16 * kGiB, 1024 * kGiB, 1)));
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("4G/P", 16 * kGiB, 2 * kGiB, 0)),
            2 * kGiB);
}

TEST(MaxLocalSegmentSizeTest, ZeroPageSizeDoesNotDivideByZero) {
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("12345/P", 16 * kGiB, kGiB, 1, 0)),
            12345u);
}

TEST(MaxLocalSegmentSizeTest, FractionsOfPhysicalMemory) {
  // 5/8 of 8 GiB for 1 rank, 5 GiB.
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("5/8", 8 * kGiB, 1024 * kGiB, 1)),
            5 * kGiB);
  // 0.75 of 10 GiB for 2 ranks.
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("0.75", 10 * kGiB, 1024 * kGiB, 2)),
            static_cast<uint64_t>(3.75 * kGiB));
  // 1/3 of 3 GiB + 1 byte (rounds down), whole pages.
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("1/3", 3 * kGiB + 1, 1024 * kGiB, 1)),
            kGiB);
  EXPECT_EQ(MaxLocalSegmentSize(Inputs("0/P", 10 * kGiB, 1024 * kGiB, 2)), 0u);
}

TEST(DescribeSegmentLimitTest, NamesTheVariableTheValueAndTheRanks) {
  const std::string text =
      DescribeSegmentLimit(Inputs("0.85/H", 16 * kGiB, 8 * kGiB, 4));
  EXPECT_NE(text.find("GASNET_MAX_SEGSIZE"), std::string::npos) << text;
  EXPECT_NE(text.find("0.85/H"), std::string::npos) << text;
  EXPECT_NE(text.find("4 rank"), std::string::npos) << text;
  EXPECT_NE(text.find("16.0 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("8.0 GiB"), std::string::npos) << text;

  const std::string other =
      DescribeSegmentLimit(Inputs("4G/P", 1536 * kMiB, 100 * kMiB, 1));
  EXPECT_NE(other.find("GASNET_MAX_SEGSIZE"), std::string::npos) << other;
  EXPECT_NE(other.find("4G/P"), std::string::npos) << other;
  EXPECT_NE(other.find("1 rank"), std::string::npos) << other;
  EXPECT_NE(other.find("1.5 GiB"), std::string::npos) << other;
  EXPECT_NE(other.find("100.0 MiB"), std::string::npos) << other;
}

class SegmentLimitsEnvTest : public testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GASNET_MAX_SEGSIZE");
    env::internal::ResetForTest();
  }
  void TearDown() override { SetUp(); }
};

TEST_F(SegmentLimitsEnvTest, DefaultIs85PercentPerHost) {
  const MaxSegSize m = MaxSegSizeFromEnv();
  EXPECT_TRUE(m.per_host);
  EXPECT_TRUE(m.amount.is_fraction);
  EXPECT_DOUBLE_EQ(m.amount.fraction, 0.85);
  EXPECT_EQ(m.ToString(), "0.85/H");
}

TEST_F(SegmentLimitsEnvTest, ReadsTheVariable) {
  setenv("GASNET_MAX_SEGSIZE", "3G/p", 1);
  const MaxSegSize m = MaxSegSizeFromEnv();
  EXPECT_FALSE(m.per_host);
  EXPECT_EQ(m.amount.bytes, 3 * kGiB);
}

TEST_F(SegmentLimitsEnvTest, MalformedValueIsFatalAndNamesTheVariable) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv("GASNET_MAX_SEGSIZE", "plenty/H", 1);
  EXPECT_DEATH(MaxSegSizeFromEnv(), "GASNET_MAX_SEGSIZE.*plenty/H");
}

TEST_F(SegmentLimitsEnvTest, TryFormReturnsTheErrorNamingTheVariable) {
  absl::StatusOr<MaxSegSize> m = TryMaxSegSizeFromEnv();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->ToString(), "0.85/H");

  setenv("GASNET_MAX_SEGSIZE", "5/8/P", 1);
  m = TryMaxSegSizeFromEnv();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->per_host);
  EXPECT_DOUBLE_EQ(m->amount.fraction, 0.625);

  setenv("GASNET_MAX_SEGSIZE", "plenty/H", 1);
  m = TryMaxSegSizeFromEnv();
  ASSERT_FALSE(m.ok());
  const std::string message(m.status().message());
  EXPECT_NE(message.find("GASNET_MAX_SEGSIZE"), std::string::npos) << message;
  EXPECT_NE(message.find("plenty/H"), std::string::npos) << message;
  EXPECT_NE(message.find("/P"), std::string::npos) << message;
}

TEST_F(SegmentLimitsEnvTest, InputsWithAValueAlreadyReadIgnoreTheVariable) {
  setenv("GASNET_MAX_SEGSIZE", "plenty/H", 1);  // Would be fatal if read.
  const SegmentLimitInputs in = CurrentSegmentLimitInputs(3, Parsed("1G/H"));
  EXPECT_EQ(in.host_ranks, 3u);
  EXPECT_TRUE(in.max_segsize.per_host);
  EXPECT_EQ(in.max_segsize.amount.bytes, kGiB);
  EXPECT_GT(in.physical_memory, 0u);
}

TEST_F(SegmentLimitsEnvTest, CurrentInputsDescribeThisHost) {
  setenv("GASNET_MAX_SEGSIZE", "2G/P", 1);
  const SegmentLimitInputs in = CurrentSegmentLimitInputs(4);
  EXPECT_EQ(in.host_ranks, 4u);
  EXPECT_FALSE(in.max_segsize.per_host);
  EXPECT_EQ(in.max_segsize.amount.bytes, 2 * kGiB);
  EXPECT_GT(in.page_size, 0u);
  EXPECT_EQ(in.page_size & (in.page_size - 1), 0u);
  EXPECT_GT(in.physical_memory, 0u);
  EXPECT_GT(in.shared_available, 0u);
  const uint64_t local = MaxLocalSegmentSize(in);
  EXPECT_LE(local, 2 * kGiB);
  EXPECT_LE(local, in.shared_available / 4);
  EXPECT_EQ(local % in.page_size, 0u);
}

}  // namespace
}  // namespace gexrt::pshm
