#include "base/env/settings.h"

#include <sched.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "base/env/topology.h"
#include "base/job_rank.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::env {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string>& Captured() {
  static auto* lines = new std::vector<std::string>;
  return *lines;
}
void Capture(std::string_view line) { Captured().emplace_back(line); }

class SettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kTouched) unsetenv(name);
    internal::ResetForTest();
    internal::SetReportSinkForTest(&Capture);
    Captured().clear();
    SetJobRank(kUnknownRank);
  }
  void TearDown() override {
    for (const char* name : kTouched) unsetenv(name);
    internal::SetReportSinkForTest(nullptr);
    internal::ResetForTest();
  }
  static void Set(const char* name, const char* value) {
    setenv(name, value, /*overwrite=*/1);
  }
  static constexpr const char* kTouched[] = {
      "GASNET_VERBOSEENV", "GASNET_QUIET",   "GASNET_HCA_ID",
      "GASNET_PORT_NUM",   "GASNET_T_BOOL",  "GASNET_T_INT",
      "GASNET_T_DEC",      "GASNET_T_SIZE",  "GASNET_T_MEM",
      "GASNET_T_NODES",    "GASNET_T_PORTS", "GASNET_T_STR",
      "GASNET_T_CHOICE",   "GASNET_T_FAM",   "GASNET_T_FAM_TYPE",
      "GASNET_T_FAM_0",    "GASNET_T_FAM_1", "GASNET_T_FAM_2",
      "GASNET_T_FAM_3",    "GASNET_T_FAM_4", "GASNET_T_FAM_5",
      "GASNET_T_FAM_6",    "GASNET_T_FAM_7",
  };
};

TEST_F(SettingsTest, UnsetAndEmptyGiveTheDefault) {
  EXPECT_TRUE(GetBool("GASNET_T_BOOL", true));
  Set("GASNET_T_BOOL", "");
  EXPECT_FALSE(GetBool("GASNET_T_BOOL", false));
  Set("GASNET_T_INT", "  ");
  EXPECT_EQ(GetInt("GASNET_T_INT", 8, 1, 100), 8);
  EXPECT_EQ(GetSize("GASNET_T_SIZE", 4096, SizeUnit::kKiB), 4096u);
  EXPECT_TRUE(GetNodeList("GASNET_T_NODES").IsAll());
  EXPECT_THAT(GetPortFilter("GASNET_T_PORTS"), IsEmpty());
  EXPECT_EQ(GetString("GASNET_T_STR", "dflt"), "dflt");
  EXPECT_EQ(GetChoice("GASNET_T_CHOICE", "hostname", {"hostname", "gethostid"}),
            "hostname");
}

TEST_F(SettingsTest, SetValuesAreParsed) {
  Set("GASNET_T_BOOL", "Yes");
  EXPECT_TRUE(GetBool("GASNET_T_BOOL", false));
  Set("GASNET_T_INT", "0x20");
  EXPECT_EQ(GetInt("GASNET_T_INT", 8, 1, 100), 32);
  Set("GASNET_T_DEC", "5/8");
  EXPECT_DOUBLE_EQ(GetDecimal("GASNET_T_DEC", 1.0), 0.625);
  Set("GASNET_T_SIZE", "64");
  EXPECT_EQ(GetSize("GASNET_T_SIZE", 0, SizeUnit::kMiB), uint64_t{64} << 20);
  Set("GASNET_T_MEM", "5/8");
  EXPECT_EQ(GetMemoryAmount("GASNET_T_MEM", MemoryAmount::Fraction(2.0 / 3),
                            SizeUnit::kMiB),
            MemoryAmount::Fraction(0.625));
  Set("GASNET_T_NODES", "0,2-4,6");
  EXPECT_EQ(GetNodeList("GASNET_T_NODES").ToString(), "0,2-4,6");
  Set("GASNET_T_PORTS", "mlx5_0+mlx5_1:2");
  EXPECT_THAT(GetPortFilter("GASNET_T_PORTS"),
              ElementsAre(PortSpec{"mlx5_0", {}}, PortSpec{"mlx5_1", {2}}));
  Set("GASNET_T_STR", "  ssh -x ");
  EXPECT_EQ(GetString("GASNET_T_STR", ""), "ssh -x");
  Set("GASNET_T_CHOICE", "GetHostID");
  EXPECT_EQ(GetChoice("GASNET_T_CHOICE", "hostname", {"hostname", "gethostid"}),
            "gethostid");
}

// One malformed value for a setting, and how to read it.
struct Malformed {
  const char* name;
  const char* value;
  absl::Status (*read)(const char* name);
};

absl::Status ReadBool(const char* n) { return TryGetBool(n, false).status(); }
absl::Status ReadInt(const char* n) { return TryGetInt(n, 8, 1, 255).status(); }
absl::Status ReadDec(const char* n) { return TryGetDecimal(n, 0).status(); }
absl::Status ReadSize(const char* n) {
  return TryGetSize(n, 0, SizeUnit::kMiB).status();
}
absl::Status ReadMem(const char* n) {
  return TryGetMemoryAmount(n, MemoryAmount::Fraction(0.5), SizeUnit::kMiB)
      .status();
}
absl::Status ReadNodes(const char* n) { return TryGetNodeList(n).status(); }
absl::Status ReadPorts(const char* n) { return TryGetPortFilter(n).status(); }
absl::Status ReadChoice(const char* n) {
  return TryGetChoice(n, "ssh", {"ssh", "fork", "pmi"}).status();
}
absl::Status ReadFamily(const char* n) {
  return TryTopologyVariant("GASNET_T_FAM").status();
}

const Malformed kMalformed[] = {
    {"GASNET_T_BOOL", "maybe", ReadBool},
    {"GASNET_T_BOOL", "2", ReadBool},
    {"GASNET_T_BOOL", "yes please", ReadBool},
    {"GASNET_T_BOOL", "-1", ReadBool},
    {"GASNET_T_INT", "eight", ReadInt},
    {"GASNET_T_INT", "0", ReadInt},
    {"GASNET_T_INT", "256", ReadInt},
    {"GASNET_T_INT", "0x", ReadInt},
    {"GASNET_T_INT", "99999999999999999999", ReadInt},
    {"GASNET_T_INT", "300%", ReadInt},
    {"GASNET_T_DEC", "5/0", ReadDec},
    {"GASNET_T_DEC", "two thirds", ReadDec},
    {"GASNET_T_DEC", "nan", ReadDec},
    {"GASNET_T_SIZE", "-4K", ReadSize},
    {"GASNET_T_SIZE", "M", ReadSize},
    {"GASNET_T_SIZE", "16777216T", ReadSize},
    {"GASNET_T_SIZE", "%50", ReadSize},
    {"GASNET_T_MEM", "3/2", ReadMem},
    {"GASNET_T_MEM", "-5/8", ReadMem},
    {"GASNET_T_MEM", "1/2G", ReadMem},
    {"GASNET_T_MEM", "lots", ReadMem},
    {"GASNET_T_NODES", "1,,2", ReadNodes},
    {"GASNET_T_NODES", "4-2", ReadNodes},
    {"GASNET_T_NODES", "-1", ReadNodes},
    {"GASNET_T_NODES", "a-b", ReadNodes},
    {"GASNET_T_NODES", "*,3", ReadNodes},
    {"GASNET_T_PORTS", "mlx5_0+", ReadPorts},
    {"GASNET_T_PORTS", "mlx5_0:", ReadPorts},
    {"GASNET_T_PORTS", "mlx5_0:0", ReadPorts},
    {"GASNET_T_PORTS", "mlx5_0:1:2", ReadPorts},
    {"GASNET_T_PORTS", "mlx 5", ReadPorts},
    {"GASNET_T_CHOICE", "rsh", ReadChoice},
    {"GASNET_T_FAM_TYPE", "Board", ReadFamily},
};

TEST_F(SettingsTest, EveryMalformedValueNamesTheVariableValueAndForms) {
  ASSERT_GE(std::size(kMalformed), 29u);
  for (const Malformed& m : kMalformed) {
    SCOPED_TRACE(std::string(m.name) + "=" + m.value);
    Set(m.name, m.value);
    absl::Status status = m.read(m.name);
    ASSERT_FALSE(status.ok());
    const std::string message(status.message());
    EXPECT_THAT(message,
                HasSubstr(std::string("environment variable ") + m.name +
                          " has the invalid value \"" + m.value + "\""));
    // Range errors say the range; the rest list the accepted forms.
    EXPECT_THAT(message, ::testing::AnyOf(HasSubstr("expected"),
                                          HasSubstr("allowed range")));
    unsetenv(m.name);
  }
}

TEST_F(SettingsTest, MalformedValueIsFatalWithTheRankPrefix) {
  Set("GASNET_T_INT", "eight");
  EXPECT_DEATH(
      {
        SetJobRank(5);
        GetInt("GASNET_T_INT", 8, 1, 255);
      },
      "\\*\\*\\* FATAL ERROR \\(proc 5\\): environment variable GASNET_T_INT "
      "has the invalid value \"eight\": not an integer; expected an integer");
}

TEST_F(SettingsTest, VerboseEnvReportsEachSettingOnceFromRankZero) {
  Set("GASNET_VERBOSEENV", "1");
  Set("GASNET_T_SIZE", "64k");
  SetJobRank(0);
  GetInt("GASNET_T_INT", 8, 1, 100);
  GetInt("GASNET_T_INT", 8, 1, 100);
  GetSize("GASNET_T_SIZE", 0, SizeUnit::kMiB);
  EXPECT_THAT(Captured(),
              ElementsAre("ENV parameter: GASNET_T_INT = 8   (default)",
                          "ENV parameter: GASNET_T_SIZE = 64K   (set as "
                          "\"64k\")"));
}

// gasnett_envstr_display / gasnett_envint_display report a client's own
// settings through Display: the same line, once per name, rank 0 only.
TEST_F(SettingsTest, DisplayReportsAClientSettingLikeTheGetters) {
  Set("GASNET_VERBOSEENV", "1");
  SetJobRank(0);
  Display("MYAPP_MODE", "fast", /*is_default=*/false);
  Display("MYAPP_MODE", "slow", /*is_default=*/false);  // Once per name.
  Display("MYAPP_BUF", ShowBytes(64 * 1024), /*is_default=*/true);
  EXPECT_THAT(Captured(),
              ElementsAre("ENV parameter: MYAPP_MODE = fast",
                          "ENV parameter: MYAPP_BUF = 64K   (default)"));
}

TEST_F(SettingsTest, DisplayIsSilentWithoutVerboseEnv) {
  SetJobRank(0);
  Display("MYAPP_MODE", "fast", /*is_default=*/false);
  EXPECT_THAT(Captured(), IsEmpty());
}

TEST_F(SettingsTest, VerboseEnvHoldsReportsUntilTheRankIsKnown) {
  Set("GASNET_VERBOSEENV", "yes");
  Set("GASNET_T_BOOL", "1");
  GetBool("GASNET_T_BOOL", false);
  EXPECT_THAT(Captured(), IsEmpty());
  SetJobRank(0);
  EXPECT_THAT(Captured(),
              ElementsAre("ENV parameter: GASNET_T_BOOL = yes   (set as "
                          "\"1\")"));
}

TEST_F(SettingsTest, VerboseEnvIsSilentOnOtherRanks) {
  Set("GASNET_VERBOSEENV", "1");
  GetBool("GASNET_T_BOOL", false);  // Held: rank not known yet.
  SetJobRank(3);                    // Dropped: not rank 0.
  GetInt("GASNET_T_INT", 1, 0, 9);  // Not printed: rank 3.
  SetJobRank(0);                    // Nothing left to flush.
  EXPECT_THAT(Captured(), IsEmpty());
}

TEST_F(SettingsTest, NoReportWithoutVerboseEnv) {
  SetJobRank(0);
  GetInt("GASNET_T_INT", 8, 1, 100);
  EXPECT_THAT(Captured(), IsEmpty());
}

TEST_F(SettingsTest, MalformedVerboseEnvIsFatal) {
  Set("GASNET_VERBOSEENV", "loud");
  EXPECT_DEATH(GetInt("GASNET_T_INT", 8, 1, 100),
               "environment variable GASNET_VERBOSEENV has the invalid value "
               "\"loud\"");
}

TEST_F(SettingsTest, UnsupportedVariablesWarnUnlessQuietOrEmpty) {
  Set("GASNET_HCA_ID", "mlx5_0");
  Set("GASNET_PORT_NUM", "");
  ::testing::internal::CaptureStderr();
  WarnUnsupportedVariables();
  WarnUnsupportedVariables();  // Once per variable.
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("*** WARNING (proc ?): environment variable "
                             "GASNET_HCA_ID is set (to \"mlx5_0\") but is no "
                             "longer supported"));
  EXPECT_THAT(err, HasSubstr("GASNET_IBV_PORTS"));
  EXPECT_THAT(err, ::testing::Not(HasSubstr("GASNET_PORT_NUM")));
  EXPECT_EQ(err.find("GASNET_HCA_ID"), err.rfind("GASNET_HCA_ID is set"));

  internal::ResetForTest();
  Set("GASNET_QUIET", "1");
  ::testing::internal::CaptureStderr();
  WarnUnsupportedVariables();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// GASNet-EX reads the leading number of an integer or size setting and
// ignores the rest: so do we, with a warning naming the variable, the value
// and what was used (once per variable and value; GASNET_QUIET silences it).
TEST_F(SettingsTest, TrailingTextAfterANumberIsAWarningNotAnError) {
  Set("GASNET_T_INT", "50%");
  Set("GASNET_T_SIZE", "50%");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(GetInt("GASNET_T_INT", 8, 1, 100), 50);
  EXPECT_EQ(GetInt("GASNET_T_INT", 8, 1, 100), 50);  // Warned once.
  EXPECT_EQ(GetSize("GASNET_T_SIZE", 0, SizeUnit::kMiB), uint64_t{50} << 20);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("*** WARNING (proc ?): environment variable "
                             "GASNET_T_INT has the value \"50%\": using 50, "
                             "its leading number, and ignoring \"%\""));
  EXPECT_THAT(err, HasSubstr("environment variable GASNET_T_SIZE has the "
                             "value \"50%\": using 50M"));
  EXPECT_EQ(err.find("GASNET_T_INT"), err.rfind("GASNET_T_INT"));

  // Exact values say nothing.
  Set("GASNET_T_INT", "0x20");
  Set("GASNET_T_SIZE", "41 GB");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(GetInt("GASNET_T_INT", 8, 1, 100), 32);
  EXPECT_EQ(GetSize("GASNET_T_SIZE", 0, SizeUnit::kMiB), uint64_t{41} << 30);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");

  internal::ResetForTest();
  Set("GASNET_QUIET", "1");
  Set("GASNET_T_INT", "1.5");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(GetInt("GASNET_T_INT", 8, 1, 100), 1);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(SettingsTest, TopologyFamilyPrefersTheBoundObjectsVariable) {
  Set("GASNET_T_FAM", "mlx5_0+mlx5_3");
  Set("GASNET_T_FAM_1", "mlx5_1+mlx5_2");
  EXPECT_EQ(TopologyVariantFor("GASNET_T_FAM", 1), "GASNET_T_FAM_1");
  EXPECT_EQ(TopologyVariantFor("GASNET_T_FAM", 0), "GASNET_T_FAM");
  EXPECT_EQ(TopologyVariantFor("GASNET_T_FAM", std::nullopt), "GASNET_T_FAM");
  Set("GASNET_T_FAM_0", "");  // Empty counts as unset.
  EXPECT_EQ(TopologyVariantFor("GASNET_T_FAM", 0), "GASNET_T_FAM");
}

// End to end on this machine: pin to one CPU, key the family on PU, and the
// variable for that PU's logical index is chosen.
TEST_F(SettingsTest, TopologyFamilyFollowsTheRealBinding) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &saved)) ++cpu;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);

  absl::StatusOr<std::vector<CpuSet>> pus =
      ReadTopologyGroups(TopologyLevel::kPu);
  ASSERT_TRUE(pus.ok()) << pus.status();
  std::optional<int> index = ContainingGroup({cpu}, *pus);
  ASSERT_TRUE(index.has_value());
  ASSERT_LT(*index, 8) << "test sets GASNET_T_FAM_0..7 only";

  Set("GASNET_T_FAM_TYPE", "pu");
  const std::string specific = "GASNET_T_FAM_" + std::to_string(*index);
  Set(specific.c_str(), "chosen");
  const std::string chosen = TopologyVariant("GASNET_T_FAM");
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(chosen, specific);
  EXPECT_EQ(GetString(chosen, ""), "chosen");
}

TEST_F(SettingsTest, TopologyFamilyDefaultsToSocket) {
  Set("GASNET_VERBOSEENV", "1");
  SetJobRank(0);
  TopologyVariant("GASNET_T_FAM");
  EXPECT_THAT(Captured(), ElementsAre("ENV parameter: GASNET_T_FAM_TYPE = "
                                      "Socket   (default)"));
}

}  // namespace
}  // namespace gexrt::env
