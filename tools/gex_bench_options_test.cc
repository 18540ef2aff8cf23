#include "tools/gex_bench_options.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gex_bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Parses `args` (without the program name) into `options`; returns the
// error, or "" when it parsed.
std::string Parse(std::vector<const char*> args, Options* options) {
  args.insert(args.begin(), "gex_bench");
  std::optional<std::string> error =
      ParseOptions(static_cast<int>(args.size()), args.data(), options);
  return error ? *error : "";
}

TEST(ParseOptionsTest, DefaultsRunEverything) {
  Options o;
  ASSERT_EQ(Parse({}, &o), "");
  EXPECT_EQ(o.iterations, 10000u);
  EXPECT_EQ(o.warmup, 1000u);
  EXPECT_EQ(o.max_size, 2u << 20);
  EXPECT_EQ(o.tests.size(), 6u);
  EXPECT_EQ(o.tests.back(), gex_bench::Test::kFloodShortOneWay);
  EXPECT_EQ(o.categories.size(), 3u);
  EXPECT_EQ(o.csv_path, "");
  EXPECT_EQ(o.pin, Pin::kAuto);
  EXPECT_FALSE(o.help);
}

TEST(ParseOptionsTest, ShortAndLongForms) {
  Options o;
  ASSERT_EQ(Parse({"-i", "5", "-w", "0", "--max-size=64K", "--csv", "out.csv",
                   "--no-pin"},
                  &o),
            "");
  EXPECT_EQ(o.iterations, 5u);
  EXPECT_EQ(o.warmup, 0u);
  EXPECT_EQ(o.max_size, 65536u);
  EXPECT_EQ(o.csv_path, "out.csv");
  EXPECT_EQ(o.pin, Pin::kOff);

  ASSERT_EQ(Parse({"--iterations=7", "--warmup", "3", "-m", "2M", "--pin"}, &o),
            "");
  EXPECT_EQ(o.iterations, 7u);
  EXPECT_EQ(o.warmup, 3u);
  EXPECT_EQ(o.max_size, 2u << 20);
  EXPECT_EQ(o.pin, Pin::kOn);
}

TEST(ParseOptionsTest, ListsKeepTheGivenOrderWithoutRepeats) {
  Options o;
  ASSERT_EQ(Parse({"--tests", "twoway,pingpong-reqrep,twoway",
                   "--categories=long,short"},
                  &o),
            "");
  EXPECT_THAT(o.tests, ElementsAre(gex_bench::Test::kTwoWay,
                                   gex_bench::Test::kPingPongReqRep));
  EXPECT_THAT(o.categories, ElementsAre(Category::kLong, Category::kShort));

  ASSERT_EQ(Parse({"-t", "flood-short-oneway,flood-oneway"}, &o), "");
  EXPECT_THAT(o.tests, ElementsAre(gex_bench::Test::kFloodShortOneWay,
                                   gex_bench::Test::kFloodOneWay));
  EXPECT_EQ(TestName(gex_bench::Test::kFloodShortOneWay), "flood-short-oneway");
  EXPECT_FALSE(IsPingPong(gex_bench::Test::kFloodShortOneWay));
}

TEST(ParseOptionsTest, BadInputNamesTheProblemAndLeavesOptionsAlone) {
  Options o;
  o.iterations = 42;
  EXPECT_THAT(Parse({"-x"}, &o), HasSubstr("unknown option '-x'"));
  EXPECT_THAT(Parse({"-i"}, &o), HasSubstr("-i needs a value"));
  EXPECT_THAT(Parse({"-i", "0"}, &o), HasSubstr("at least 1"));
  EXPECT_THAT(Parse({"-i", "12x"}, &o), HasSubstr("'12x'"));
  EXPECT_THAT(Parse({"-w", "-1"}, &o), HasSubstr("not a count"));
  EXPECT_THAT(Parse({"--max-size=K"}, &o), HasSubstr("not a size"));
  EXPECT_THAT(Parse({"--max-size=99999999999999999999"}, &o),
              HasSubstr("not a size"));
  EXPECT_THAT(Parse({"--max-size=17179869184G"}, &o), HasSubstr("not a size"));
  EXPECT_THAT(Parse({"--tests", "pingpong,twoway"}, &o),
              HasSubstr("unknown name 'pingpong'"));
  EXPECT_THAT(Parse({"--tests="}, &o), HasSubstr("unknown name ''"));
  EXPECT_THAT(Parse({"--categories", "tiny"}, &o),
              HasSubstr("known: short,medium,long"));
  EXPECT_THAT(Parse({"--csv="}, &o), HasSubstr("needs a file name"));
  EXPECT_THAT(Parse({"--pin=yes"}, &o), HasSubstr("takes no value"));
  EXPECT_EQ(o.iterations, 42u);
}

TEST(ParseOptionsTest, Help) {
  Options o;
  ASSERT_EQ(Parse({"-h"}, &o), "");
  EXPECT_TRUE(o.help);
  const std::string usage = Usage("gex_bench_smp");
  EXPECT_THAT(usage, HasSubstr("gex_bench_smp [options]"));
  for (gex_bench::Test t : kAllTests)
    EXPECT_THAT(usage, HasSubstr(TestName(t)));
}

TEST(SizesTest, ZeroThenPowersOfTwoThenTheLimit) {
  EXPECT_THAT(Sizes(Category::kShort, 4096), ElementsAre(0u));
  EXPECT_THAT(Sizes(Category::kMedium, 0), ElementsAre(0u));
  EXPECT_THAT(Sizes(Category::kMedium, 1), ElementsAre(0u, 1u));
  EXPECT_THAT(Sizes(Category::kMedium, 8), ElementsAre(0u, 1u, 2u, 4u, 8u));
  EXPECT_THAT(Sizes(Category::kLong, 12), ElementsAre(0u, 1u, 2u, 4u, 8u, 12u));
  const std::vector<uint64_t> big = Sizes(Category::kLong, UINT64_MAX);
  EXPECT_EQ(big.size(), 66u);  // 0, 2^0 .. 2^63, the limit
  EXPECT_EQ(big.back(), UINT64_MAX);
}

TEST(ScaledIterationsTest, FullUpTo16KThenProportional) {
  EXPECT_EQ(ScaledIterations(1000, 0), 1000u);
  EXPECT_EQ(ScaledIterations(1000, 16384), 1000u);
  EXPECT_EQ(ScaledIterations(1000, 32768), 500u);
  EXPECT_EQ(ScaledIterations(1000, 20000), 500u);          // rounds the size up
  EXPECT_EQ(ScaledIterations(10, uint64_t{1} << 30), 1u);  // at least 1
  EXPECT_EQ(ScaledIterations(0, uint64_t{1} << 30), 0u);   // no warm-up
}

}  // namespace
}  // namespace gex_bench
