#include "tools/gex_rma_bench_options.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gex_bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::optional<std::string> Parse(std::vector<const char*> args,
                                 RmaOptions* out) {
  args.insert(args.begin(), "gex_rma_bench");
  return ParseRmaOptions(static_cast<int>(args.size()), args.data(), out);
}

TEST(RmaOptionsTest, DefaultsAreTestsmallAndTestlargeRanges) {
  RmaOptions o;
  ASSERT_EQ(Parse({}, &o), std::nullopt);
  EXPECT_EQ(o.iterations, 10000u);
  EXPECT_EQ(o.latency_min, 1u);
  EXPECT_EQ(o.latency_max, 2048u);
  EXPECT_EQ(o.bandwidth_min, 1024u);
  EXPECT_EQ(o.bandwidth_max, 4u << 20);
  EXPECT_EQ(o.tests.size(), 4u);
  EXPECT_THAT(o.syncs, ElementsAre(Sync::kBlocking, Sync::kNbi, Sync::kNb));
  EXPECT_THAT(o.locals, ElementsAre(Local::kInSegment, Local::kOutOfSegment));
  EXPECT_EQ(o.pin, Pin::kAuto);
}

TEST(RmaOptionsTest, EveryOptionIsRead) {
  RmaOptions o;
  ASSERT_EQ(
      Parse({"-i", "5", "--warmup=0", "--latency-min", "8", "--latency-max=64",
             "--bandwidth-min", "2K", "--bandwidth-max", "1M", "-t",
             "get-bandwidth,put-latency", "-s", "nb,blocking", "-l",
             "out-of-segment", "--csv", "x.csv", "--no-pin"},
            &o),
      std::nullopt);
  EXPECT_EQ(o.iterations, 5u);
  EXPECT_EQ(o.warmup, 0u);
  EXPECT_EQ(o.latency_min, 8u);
  EXPECT_EQ(o.latency_max, 64u);
  EXPECT_EQ(o.bandwidth_min, 2048u);
  EXPECT_EQ(o.bandwidth_max, 1u << 20);
  EXPECT_THAT(o.tests,
              ElementsAre(RmaTest::kGetBandwidth, RmaTest::kPutLatency));
  EXPECT_THAT(o.syncs, ElementsAre(Sync::kNb, Sync::kBlocking));
  EXPECT_THAT(o.locals, ElementsAre(Local::kOutOfSegment));
  EXPECT_EQ(o.csv_path, "x.csv");
  EXPECT_EQ(o.pin, Pin::kOff);
}

TEST(RmaOptionsTest, BadInputNamesTheOption) {
  struct Case {
    std::vector<const char*> args;
    std::string says;
  };
  const Case cases[] = {
      {{"-i", "0"}, "-i: '0' is not a count of at least 1"},
      {{"-i"}, "-i needs a value"},
      {{"--latency-max", "2Q"}, "--latency-max: '2Q' is not a size"},
      {{"--bandwidth-min=0"}, "--bandwidth-min: '0' is not a size"},
      {{"--latency-min", "4K"}, "--latency-min 4096 is above --latency-max"},
      {{"-t", "put-latency,bogus"}, "-t: unknown name 'bogus' (known: "},
      {{"-s", "sometimes"}, "known: blocking,nbi,nb"},
      {{"-l", ""}, "-l: unknown name ''"},
      {{"--pin=1"}, "--pin takes no value"},
      {{"--frobnicate"}, "unknown option '--frobnicate'"},
  };
  for (const Case& c : cases) {
    RmaOptions o;
    o.iterations = 77;
    const std::optional<std::string> error = Parse(c.args, &o);
    ASSERT_TRUE(error.has_value()) << c.says;
    EXPECT_THAT(*error, HasSubstr(c.says));
    EXPECT_EQ(o.iterations, 77u) << "options changed on error: " << c.says;
  }
}

TEST(RmaOptionsTest, PowerOfTwoSizesCoverTheRange) {
  EXPECT_THAT(PowerOfTwoSizes(1, 16), ElementsAre(1, 2, 4, 8, 16));
  EXPECT_THAT(PowerOfTwoSizes(1000, 5000), ElementsAre(1024, 2048, 4096, 5000));
  EXPECT_THAT(PowerOfTwoSizes(3, 3), ElementsAre(3));
  EXPECT_THAT(PowerOfTwoSizes(1024, 4 << 20).back(), 4u << 20);
  EXPECT_EQ(PowerOfTwoSizes(1024, 4 << 20).size(), 13u);
}

TEST(RmaOptionsTest, LatencyHasNoNbForm) {
  const std::vector<Sync> all{Sync::kNb, Sync::kBlocking, Sync::kNbi};
  EXPECT_THAT(SyncsFor(RmaTest::kPutLatency, all),
              ElementsAre(Sync::kBlocking, Sync::kNbi));
  EXPECT_THAT(SyncsFor(RmaTest::kGetBandwidth, all),
              ElementsAre(Sync::kNb, Sync::kBlocking, Sync::kNbi));
}

TEST(RmaOptionsTest, FaddLatencyOnlyWhenNamed) {
  RmaOptions o;
  ASSERT_EQ(Parse({}, &o), std::nullopt);
  EXPECT_THAT(o.tests,
              ::testing::Not(::testing::Contains(RmaTest::kFaddLatency)));
  ASSERT_EQ(Parse({"-t", "fadd-latency", "-s", "blocking,nbi,nb"}, &o),
            std::nullopt);
  EXPECT_THAT(o.tests, ElementsAre(RmaTest::kFaddLatency));
  EXPECT_TRUE(IsLatency(RmaTest::kFaddLatency));
  EXPECT_TRUE(IsAtomic(RmaTest::kFaddLatency));
  EXPECT_FALSE(IsPut(RmaTest::kFaddLatency));
  EXPECT_FALSE(IsAtomic(RmaTest::kPutLatency));
  EXPECT_THAT(SyncsFor(RmaTest::kFaddLatency, o.syncs),
              ElementsAre(Sync::kBlocking, Sync::kNbi));
  EXPECT_THAT(RmaUsage("gex_rma_bench"), HasSubstr("fadd-latency"));
}

TEST(RmaOptionsTest, NamesRoundTrip) {
  for (RmaTest t : kAllRmaTests) {
    RmaOptions o;
    const std::string name(RmaTestName(t));
    ASSERT_EQ(Parse({"-t", name.c_str()}, &o), std::nullopt);
    EXPECT_THAT(o.tests, ElementsAre(t));
    EXPECT_FALSE(RmaTestDescription(t).empty());
  }
  EXPECT_TRUE(IsPut(RmaTest::kPutBandwidth));
  EXPECT_FALSE(IsPut(RmaTest::kGetLatency));
  EXPECT_EQ(SyncName(Sync::kNbi), "nbi");
  EXPECT_EQ(LocalName(Local::kOutOfSegment), "out-of-segment");
}

}  // namespace
}  // namespace gex_bench
