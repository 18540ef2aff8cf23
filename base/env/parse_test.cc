#include "base/env/parse.h"

#include <stdlib.h>

#include <cstdint>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::env {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

TEST(FlagEnabledTest, TrueOnlyForATrueBoolean) {
  constexpr char kName[] = "GEX_TEST_FLAG_ENABLED";
  unsetenv(kName);
  EXPECT_FALSE(FlagEnabled(kName));
  for (const char* yes : {"1", "yes", "ON", " true "}) {
    setenv(kName, yes, 1);
    EXPECT_TRUE(FlagEnabled(kName)) << yes;
  }
  for (const char* no : {"0", "no", "", "maybe"}) {
    setenv(kName, no, 1);
    EXPECT_FALSE(FlagEnabled(kName)) << no;
  }
  unsetenv(kName);
}

TEST(ParseBoolTest, AcceptsEveryDocumentedSpellingInAnyCase) {
  for (const char* yes : {"1", "yes", "YES", "Yes", "y", "Y", "true", "TRUE",
                          "True", "on", "ON", " yes ", "\ttrue\n"}) {
    absl::StatusOr<bool> v = ParseBool(yes);
    ASSERT_TRUE(v.ok()) << yes << ": " << v.status();
    EXPECT_TRUE(*v) << yes;
  }
  for (const char* no : {"0", "no", "NO", "No", "n", "N", "false", "FALSE",
                         "False", "off", "OFF", " 0 "}) {
    absl::StatusOr<bool> v = ParseBool(no);
    ASSERT_TRUE(v.ok()) << no << ": " << v.status();
    EXPECT_FALSE(*v) << no;
  }
}

TEST(ParseBoolTest, RejectsOtherWordsAndListsTheForms) {
  for (const char* bad :
       {"", "2", "-1", "yess", "nope", "t", "f", "1 0", "enable", "0x1"}) {
    absl::StatusOr<bool> v = ParseBool(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(v.status()), HasSubstr("yes/no")) << bad;
  }
}

TEST(ParseIntTest, DecimalHexAndSigns) {
  EXPECT_EQ(*ParseInt("42", kMin, kMax), 42);
  EXPECT_EQ(*ParseInt("  -17 ", kMin, kMax), -17);
  EXPECT_EQ(*ParseInt("+8", kMin, kMax), 8);
  EXPECT_EQ(*ParseInt("0x7fff", kMin, kMax), 0x7fff);
  EXPECT_EQ(*ParseInt("0XFF", kMin, kMax), 255);
  EXPECT_EQ(*ParseInt("-0x10", kMin, kMax), -16);
  EXPECT_EQ(*ParseInt("9223372036854775807", kMin, kMax), kMax);
  EXPECT_EQ(*ParseInt("-9223372036854775808", kMin, kMax), kMin);
}

TEST(ParseIntTest, RangeIsChecked) {
  EXPECT_EQ(*ParseInt("2", 2, 0x7fff), 2);
  EXPECT_EQ(*ParseInt("0x7fff", 2, 0x7fff), 0x7fff);
  absl::StatusOr<int64_t> low = ParseInt("1", 2, 0x7fff);
  ASSERT_FALSE(low.ok());
  EXPECT_EQ(low.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(Message(low.status()), HasSubstr("[2, 32767]"));
  EXPECT_FALSE(ParseInt("32768", 2, 0x7fff).ok());
  EXPECT_FALSE(ParseInt("-1", 0, 10).ok());
}

TEST(ParseIntTest, RejectsMalformed) {
  for (const char* bad : {"", "abc", "12abc", "1.5", "0x", "0xg", "--1", "+-1",
                          "1 2", "9223372036854775808", "-9223372036854775809",
                          "99999999999999999999"}) {
    absl::StatusOr<int64_t> v = ParseInt(bad, kMin, kMax);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_THAT(Message(v.status()), HasSubstr("integer")) << bad;
  }
  EXPECT_THAT(Message(ParseInt("99999999999999999999", kMin, kMax).status()),
              HasSubstr("too large"));
}

TEST(ParseDecimalTest, DecimalsAndFractions) {
  EXPECT_DOUBLE_EQ(*ParseDecimal("0.66"), 0.66);
  EXPECT_DOUBLE_EQ(*ParseDecimal(".5"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseDecimal("5/8"), 0.625);
  EXPECT_DOUBLE_EQ(*ParseDecimal(" 2 / 3 "), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(*ParseDecimal("3"), 3.0);
  EXPECT_DOUBLE_EQ(*ParseDecimal("1e3"), 1000.0);
  EXPECT_DOUBLE_EQ(*ParseDecimal("-0.25"), -0.25);
}

TEST(ParseDecimalTest, RejectsMalformed) {
  for (const char* bad : {"", "abc", "5/0", "5/", "/8", "1/2/3", "-1/2", "nan",
                          "inf", "0.5x", "1..2"}) {
    EXPECT_FALSE(ParseDecimal(bad).ok()) << bad;
  }
  EXPECT_THAT(Message(ParseDecimal("5/0").status()), HasSubstr("zero"));
}

TEST(ParseSizeTest, SuffixesArePowersOf1024InAnyCase) {
  EXPECT_EQ(*ParseSize("0", SizeUnit::kBytes), 0u);
  EXPECT_EQ(*ParseSize("100", SizeUnit::kBytes), 100u);
  EXPECT_EQ(*ParseSize("4K", SizeUnit::kBytes), 4096u);
  EXPECT_EQ(*ParseSize("4k", SizeUnit::kBytes), 4096u);
  EXPECT_EQ(*ParseSize("4KB", SizeUnit::kBytes), 4096u);
  EXPECT_EQ(*ParseSize("4KiB", SizeUnit::kBytes), 4096u);
  EXPECT_EQ(*ParseSize("3M", SizeUnit::kBytes), 3u << 20);
  EXPECT_EQ(*ParseSize("2g", SizeUnit::kBytes), uint64_t{2} << 30);
  EXPECT_EQ(*ParseSize("1T", SizeUnit::kBytes), uint64_t{1} << 40);
  EXPECT_EQ(*ParseSize("1.5G", SizeUnit::kBytes), uint64_t{3} << 29);
  EXPECT_EQ(*ParseSize(" 64 M ", SizeUnit::kBytes), uint64_t{64} << 20);
  EXPECT_EQ(*ParseSize("512B", SizeUnit::kMiB), 512u);
}

TEST(ParseSizeTest, DefaultUnitAppliesWithoutSuffix) {
  // The firehose sizes default to MiB, the stripe sizes to KiB.
  EXPECT_EQ(*ParseSize("128", SizeUnit::kMiB), uint64_t{128} << 20);
  EXPECT_EQ(*ParseSize("128", SizeUnit::kKiB), uint64_t{128} << 10);
  EXPECT_EQ(*ParseSize("128K", SizeUnit::kMiB), uint64_t{128} << 10);
  EXPECT_EQ(*ParseSize("0x10", SizeUnit::kKiB), uint64_t{16} << 10);
  EXPECT_EQ(*ParseSize("0.5", SizeUnit::kMiB), uint64_t{1} << 19);
}

TEST(ParseSizeTest, RejectsMalformed) {
  for (const char* bad : {"", "-1", "-4K", "K", "4X", "4KK", "4 K B", "1.2.3M",
                          ".", "4e3", "abc", "4Kib2", "16384P", "0x", "1,5M"}) {
    absl::StatusOr<uint64_t> v = ParseSize(bad, SizeUnit::kBytes);
    ASSERT_FALSE(v.ok()) << bad << " parsed as " << *v;
    EXPECT_THAT(Message(v.status()), HasSubstr("a size")) << bad;
  }
  EXPECT_THAT(Message(ParseSize("-1", SizeUnit::kBytes).status()),
              HasSubstr("negative"));
  EXPECT_THAT(Message(ParseSize("4X", SizeUnit::kBytes).status()),
              HasSubstr("unknown unit suffix 'x'"));
  EXPECT_THAT(Message(ParseSize("lots", SizeUnit::kBytes).status()),
              HasSubstr("'lots' does not start with a number"));
}

TEST(ParseSizeTest, OverflowIsAnError) {
  EXPECT_EQ(*ParseSize("18446744073709551615", SizeUnit::kBytes),
            std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(ParseSize("18446744073709551616", SizeUnit::kBytes).ok());
  EXPECT_EQ(*ParseSize("16777215T", SizeUnit::kBytes),
            uint64_t{16777215} << 40);
  absl::StatusOr<uint64_t> big = ParseSize("16777216T", SizeUnit::kBytes);
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(Message(big.status()), HasSubstr("too large"));
  EXPECT_FALSE(ParseSize("16777216.5T", SizeUnit::kBytes).ok());
}

// GASNet-EX's reading: the leading number, whatever follows it tolerated
// and handed back for a warning.
TEST(ParseLeadingIntTest, ReadsTheLeadingIntegerAndReturnsTheRest) {
  const struct {
    const char* text;
    int64_t value;
    const char* ignored;
  } cases[] = {
      {"50%", 50, "%"},          {"12abc", 12, "abc"}, {" 7 ", 7, ""},
      {"-5 ranks", -5, "ranks"}, {"+3", 3, ""},        {"1.5", 1, ".5"},
      {"0x1Fz", 31, "z"},        {"0x", 0, "x"},       {"0xg", 0, "xg"},
      {"42 42", 42, "42"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<Leading<int64_t>> got = ParseLeadingInt(c.text, -100, 100);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status();
    EXPECT_EQ(got->value, c.value) << c.text;
    EXPECT_EQ(got->ignored, c.ignored) << c.text;
  }
}

TEST(ParseLeadingIntTest, NoLeadingNumberOrOutOfRangeIsStillAnError) {
  for (const char* text : {"", "  ", "eight", "-", "+x", "%50", ".5"}) {
    EXPECT_FALSE(ParseLeadingInt(text, -100, 100).ok()) << text;
  }
  EXPECT_EQ(ParseLeadingInt("101%", -100, 100).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_FALSE(
      ParseLeadingInt("99999999999999999999x", INT64_MIN, INT64_MAX).ok());
}

TEST(ParseLeadingSizeTest, UnitsFractionsSignAndTheDefaultUnit) {
  constexpr uint64_t kK = 1024, kM = kK << 10, kG = kM << 10, kT = kG << 10;
  const struct {
    const char* text;
    uint64_t bytes;
    const char* ignored;
  } cases[] = {
      // The client's value: a number, then text that is no unit.
      {"50%", 50 * kM, "%"},
      // Units, in any case, with or without B/iB and a space before them.
      {"2k", 2 * kK, ""},
      {"2K", 2 * kK, ""},
      {"3m", 3 * kM, ""},
      {"41 GB", 41 * kG, ""},
      {"1TiB", kT, ""},
      {"100B", 100, ""},
      {"100b", 100, ""},
      // Fractions of a unit (rounded down to bytes), and of the default.
      {"1.5K", 1536, ""},
      {"0.5", kM / 2, ""},
      {".5k", 512, ""},
      {"1.5.3", kM + kM / 2, ".3"},
      {"1.", kM, ""},
      {"2.K", 2 * kK, ""},
      // Signs and hex.
      {"+4", 4 * kM, ""},
      {"0x10", 16 * kM, ""},
      // Trailing text after a unit, or instead of one.
      {"2Mbytes", 2 * kM, ""},
      {"2 MiBytes", 2 * kM, ""},
      {"7 bytes", 7, ""},
      {"2MBx", 2 * kM, "x"},
      {"1000MB/P", 1000 * kM, "/P"},
      {"4X", 4 * kM, "X"},
      {"8 pages", 8 * kM, "pages"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<Leading<uint64_t>> got =
        ParseLeadingSize(c.text, SizeUnit::kMiB);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status();
    EXPECT_EQ(got->value, c.bytes) << c.text;
    EXPECT_EQ(got->ignored, c.ignored) << c.text;
  }
}

TEST(ParseLeadingSizeTest, NoLeadingNumberNegativeOrOverflowIsStillAnError) {
  for (const char* text : {"", "M", "lots", "%50", "-4K", "-1", "16777216T",
                           "99999999999999999999999 bytes"}) {
    EXPECT_FALSE(ParseLeadingSize(text, SizeUnit::kMiB).ok()) << text;
  }
}

TEST(ParseMemoryAmountTest, FractionsBelowOneAreRelative) {
  EXPECT_EQ(*ParseMemoryAmount("5/8", SizeUnit::kMiB),
            MemoryAmount::Fraction(0.625));
  EXPECT_EQ(*ParseMemoryAmount("0.66", SizeUnit::kMiB),
            MemoryAmount::Fraction(0.66));
  EXPECT_EQ(*ParseMemoryAmount("2/3", SizeUnit::kMiB),
            MemoryAmount::Fraction(2.0 / 3.0));
  EXPECT_EQ(ParseMemoryAmount("5/8", SizeUnit::kMiB)->Resolve(8000), 5000u);
  EXPECT_EQ(ParseMemoryAmount("0.0", SizeUnit::kMiB)->Resolve(8000), 0u);
}

TEST(ParseMemoryAmountTest, EverythingElseIsAbsolute) {
  EXPECT_EQ(*ParseMemoryAmount("0", SizeUnit::kMiB), MemoryAmount::Absolute(0));
  EXPECT_EQ(*ParseMemoryAmount("4G", SizeUnit::kMiB),
            MemoryAmount::Absolute(uint64_t{4} << 30));
  EXPECT_EQ(*ParseMemoryAmount("512", SizeUnit::kMiB),
            MemoryAmount::Absolute(uint64_t{512} << 20));
  // A decimal of 1 or more is a size in the default unit.
  EXPECT_EQ(*ParseMemoryAmount("1.5", SizeUnit::kMiB),
            MemoryAmount::Absolute(uint64_t{3} << 19));
  EXPECT_EQ(ParseMemoryAmount("4G", SizeUnit::kMiB)->Resolve(1),
            uint64_t{4} << 30);
}

TEST(ParseMemoryAmountTest, RejectsMalformed) {
  for (const char* bad : {"", "-5/8", "3/2", "5/0", "1/2G", "0.5.1", "two",
                          "5/8/2", "-0.5", "4Q"}) {
    absl::StatusOr<MemoryAmount> v = ParseMemoryAmount(bad, SizeUnit::kMiB);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_THAT(Message(v.status()), HasSubstr("memory amount")) << bad;
  }
  EXPECT_THAT(Message(ParseMemoryAmount("3/2", SizeUnit::kMiB).status()),
              HasSubstr("below 1"));
}

TEST(MemoryAmountTest, ToStringUsesTheLargestExactUnit) {
  EXPECT_EQ(MemoryAmount::Absolute(uint64_t{3} << 30).ToString(), "3G");
  EXPECT_EQ(MemoryAmount::Absolute(1536 << 10).ToString(), "1536K");
  EXPECT_EQ(MemoryAmount::Absolute(1000).ToString(), "1000B");
  EXPECT_EQ(MemoryAmount::Absolute(0).ToString(), "0B");
  EXPECT_EQ(MemoryAmount::Fraction(0.625).ToString(), "0.625");
}

TEST(ParseNodeListTest, StarAndEmptyMeanAll) {
  for (const char* all : {"", "*", "  *  ", " "}) {
    absl::StatusOr<NodeList> list = ParseNodeList(all);
    ASSERT_TRUE(list.ok()) << all;
    EXPECT_TRUE(list->IsAll());
    EXPECT_TRUE(list->Contains(0));
    EXPECT_TRUE(list->Contains(123456));
    EXPECT_FALSE(list->Contains(-1));
    EXPECT_EQ(list->ToString(), "*");
  }
}

TEST(ParseNodeListTest, IntegersAndRanges) {
  absl::StatusOr<NodeList> list = ParseNodeList("0,2-4,6");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_FALSE(list->IsAll());
  EXPECT_THAT(list->Members(100), ElementsAre(0, 2, 3, 4, 6));
  for (int64_t n : {0, 2, 3, 4, 6}) EXPECT_TRUE(list->Contains(n)) << n;
  for (int64_t n : {-1, 1, 5, 7, 100}) EXPECT_FALSE(list->Contains(n)) << n;
  EXPECT_EQ(list->ToString(), "0,2-4,6");
}

TEST(ParseNodeListTest, NormalisesOrderOverlapAndAdjacency) {
  absl::StatusOr<NodeList> list = ParseNodeList(" 6, 3-4 ,2,0,4-5 ,0");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->ToString(), "0,2-6");
  EXPECT_EQ(ParseNodeList("5-5")->ToString(), "5");
  EXPECT_EQ(ParseNodeList("0-9223372036854775807,3")->ToString(),
            "0-9223372036854775807");
  EXPECT_THAT(ParseNodeList("0-4000000000")->Members(3), ElementsAre(0, 1, 2));
}

TEST(ParseNodeListTest, RejectsMalformed) {
  for (const char* bad :
       {",", "1,", ",1", "1,,2", "a", "1-", "-1", "4-2", "1-2-3", "1.5", "*,1",
        "0x3", "1 2", "9223372036854775808"}) {
    absl::StatusOr<NodeList> v = ParseNodeList(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_THAT(Message(v.status()), HasSubstr("node list")) << bad;
  }
  EXPECT_THAT(Message(ParseNodeList("4-2").status()), HasSubstr("reversed"));
}

TEST(ParsePortFilterTest, HcasWithAndWithoutPorts) {
  absl::StatusOr<std::vector<PortSpec>> f = ParsePortFilter("mlx5_0+mlx5_1:2");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(*f, ElementsAre(PortSpec{"mlx5_0", {}}, PortSpec{"mlx5_1", {2}}));

  f = ParsePortFilter("mlx4_0:1,2+qib0+hfi1.0-x:255");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(*f, ElementsAre(PortSpec{"mlx4_0", {1, 2}}, PortSpec{"qib0", {}},
                              PortSpec{"hfi1.0-x", {255}}));
}

TEST(ParsePortFilterTest, CanonicalTextReadsBackTheSameFilter) {
  const std::vector<PortSpec> filter = {{"mlx4_0", {1, 2}}, {"qib0", {}}};
  EXPECT_EQ(PortFilterToString(filter), "mlx4_0:1,2+qib0");
  EXPECT_EQ(*ParsePortFilter(PortFilterToString(filter)), filter);
  EXPECT_EQ(PortFilterToString({}), "");
}

TEST(ParsePortFilterTest, EmptyMeansNoFilter) {
  EXPECT_TRUE(ParsePortFilter("")->empty());
  EXPECT_TRUE(ParsePortFilter("   ")->empty());
}

TEST(ParsePortFilterTest, RejectsMalformed) {
  for (const char* bad :
       {"+", "mlx5_0+", "+mlx5_0", "mlx5_0++mlx5_1", "mlx5_0:", ":1",
        "mlx5_0:0", "mlx5_0:256", "mlx5_0:1,", "mlx5_0:1,,2", "mlx5_0:a",
        "mlx5_0:1:2", "mlx 5", "mlx5_0,mlx5_1", "mlx5_0:-1"}) {
    absl::StatusOr<std::vector<PortSpec>> v = ParsePortFilter(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_THAT(Message(v.status()), HasSubstr("HCA/port filter")) << bad;
  }
  EXPECT_THAT(Message(ParsePortFilter("mlx5_0:").status()),
              HasSubstr("no ports"));
}

TEST(ParseTopologyLevelTest, NamesInAnyCase) {
  EXPECT_EQ(*ParseTopologyLevel("Socket"), TopologyLevel::kSocket);
  EXPECT_EQ(*ParseTopologyLevel("socket"), TopologyLevel::kSocket);
  EXPECT_EQ(*ParseTopologyLevel("Package"), TopologyLevel::kSocket);
  EXPECT_EQ(*ParseTopologyLevel("Node"), TopologyLevel::kNumaNode);
  EXPECT_EQ(*ParseTopologyLevel("NUMANode"), TopologyLevel::kNumaNode);
  EXPECT_EQ(*ParseTopologyLevel("numa"), TopologyLevel::kNumaNode);
  EXPECT_EQ(*ParseTopologyLevel("CORE"), TopologyLevel::kCore);
  EXPECT_EQ(*ParseTopologyLevel("pu"), TopologyLevel::kPu);
  EXPECT_EQ(*ParseTopologyLevel("L3Cache"), TopologyLevel::kL3Cache);
  EXPECT_EQ(TopologyLevelName(TopologyLevel::kNumaNode), "Node");
}

TEST(ParseTopologyLevelTest, RejectsUnknown) {
  for (const char* bad : {"", "sock", "NUMA Node", "L4Cache", "board"}) {
    absl::StatusOr<TopologyLevel> v = ParseTopologyLevel(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_THAT(Message(v.status()), HasSubstr("Socket")) << bad;
  }
}

}  // namespace
}  // namespace gexrt::env
