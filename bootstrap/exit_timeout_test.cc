#include "bootstrap/exit_timeout.h"

#include <stdlib.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "base/env/settings.h"
#include "base/job_rank.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

TEST(ComputeExitTimeoutTest, DefaultsFollowGasnetFormula) {
  const ExitTimeoutSettings s;
  // min(360, 2 + nodes * 0.25)
  EXPECT_EQ(ComputeExitTimeout(1, s, std::nullopt), absl::Seconds(2.25));
  EXPECT_EQ(ComputeExitTimeout(8, s, std::nullopt), absl::Seconds(4));
  EXPECT_EQ(ComputeExitTimeout(100, s, std::nullopt), absl::Seconds(27));
  // The cap is reached at 1432 ranks and holds beyond.
  EXPECT_EQ(ComputeExitTimeout(1431, s, std::nullopt), absl::Seconds(359.75));
  EXPECT_EQ(ComputeExitTimeout(1432, s, std::nullopt), absl::Seconds(360));
  EXPECT_EQ(ComputeExitTimeout(1000000, s, std::nullopt), absl::Seconds(360));
  // Node counts near the top of uint32_t do not wrap.
  EXPECT_EQ(ComputeExitTimeout(UINT32_MAX, s, std::nullopt),
            absl::Seconds(360));
}

TEST(ComputeExitTimeoutTest, UsesTheGivenSettings) {
  ExitTimeoutSettings s;
  s.max_s = 10;
  s.min_s = 1;
  s.factor_s = 0.5;
  EXPECT_EQ(ComputeExitTimeout(4, s, std::nullopt), absl::Seconds(3));
  EXPECT_EQ(ComputeExitTimeout(100, s, std::nullopt), absl::Seconds(10));
  s.factor_s = 0;
  EXPECT_EQ(ComputeExitTimeout(100, s, std::nullopt), absl::Seconds(1));
  // MAX wins over a larger MIN.
  s.min_s = 20;
  EXPECT_EQ(ComputeExitTimeout(1, s, std::nullopt), absl::Seconds(10));
}

TEST(ComputeExitTimeoutTest, ExplicitValueWins) {
  const ExitTimeoutSettings s;
  EXPECT_EQ(ComputeExitTimeout(100, s, 7.5), absl::Seconds(7.5));
  // Even above MAX: the user asked for it.
  EXPECT_EQ(ComputeExitTimeout(1, s, 1000.0), absl::Seconds(1000));
  EXPECT_EQ(ComputeExitTimeout(1, s, 0.5), absl::Milliseconds(500));
}

TEST(ComputeExitTimeoutTest, NeverBelowTheFloor) {
  EXPECT_EQ(kMinExitTimeout, absl::Milliseconds(50));
  ExitTimeoutSettings s;
  s.min_s = 0;
  s.factor_s = 0;
  EXPECT_EQ(ComputeExitTimeout(16, s, std::nullopt), kMinExitTimeout);
  s.max_s = 0.01;
  s.min_s = 5;
  EXPECT_EQ(ComputeExitTimeout(16, s, std::nullopt), kMinExitTimeout);
  const ExitTimeoutSettings defaults;
  EXPECT_EQ(ComputeExitTimeout(16, defaults, 0.0), kMinExitTimeout);
  EXPECT_EQ(ComputeExitTimeout(16, defaults, 0.001), kMinExitTimeout);
  EXPECT_EQ(ComputeExitTimeout(16, defaults, -3.0), kMinExitTimeout);
  // Just above the floor is kept as given.
  EXPECT_EQ(ComputeExitTimeout(16, defaults, 0.06), absl::Milliseconds(60));
}

TEST(ComputeExitTimeoutTest, HugeValueIsInfiniteNotWrapped) {
  EXPECT_EQ(ComputeExitTimeout(1, ExitTimeoutSettings(), 1e300),
            absl::InfiniteDuration());
}

std::vector<std::string>& Captured() {
  static auto* lines = new std::vector<std::string>;
  return *lines;
}
void Capture(std::string_view line) { Captured().emplace_back(line); }

class ExitTimeoutFromEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kTouched) unsetenv(name);
    env::internal::ResetForTest();
    env::internal::SetReportSinkForTest(&Capture);
    Captured().clear();
    SetJobRank(kUnknownRank);
  }
  void TearDown() override {
    for (const char* name : kTouched) unsetenv(name);
    env::internal::SetReportSinkForTest(nullptr);
    env::internal::ResetForTest();
    SetJobRank(kUnknownRank);
  }
  static void Set(const char* name, const char* value) {
    setenv(name, value, /*overwrite=*/1);
  }
  static constexpr const char* kTouched[] = {
      "GASNET_EXITTIMEOUT",     "GASNET_EXITTIMEOUT_MAX",
      "GASNET_EXITTIMEOUT_MIN", "GASNET_EXITTIMEOUT_FACTOR",
      "GASNET_VERBOSEENV",      "GASNET_QUIET",
  };
};

using ExitTimeoutFromEnvDeathTest = ExitTimeoutFromEnvTest;

TEST_F(ExitTimeoutFromEnvTest, UnsetGivesTheDefaults) {
  EXPECT_EQ(ExitTimeoutFromEnv(1), absl::Seconds(2.25));
  EXPECT_EQ(ExitTimeoutFromEnv(100), absl::Seconds(27));
  EXPECT_EQ(ExitTimeoutFromEnv(5000), absl::Seconds(360));
}

TEST_F(ExitTimeoutFromEnvTest, EmptyMeansUnset) {
  Set("GASNET_EXITTIMEOUT", "");
  Set("GASNET_EXITTIMEOUT_MIN", " ");
  EXPECT_EQ(ExitTimeoutFromEnv(100), absl::Seconds(27));
}

TEST_F(ExitTimeoutFromEnvTest, ReadsTheFormulaSettings) {
  Set("GASNET_EXITTIMEOUT_MAX", "30");
  Set("GASNET_EXITTIMEOUT_MIN", "1.5");
  Set("GASNET_EXITTIMEOUT_FACTOR", "1/2");
  EXPECT_EQ(ExitTimeoutFromEnv(10), absl::Seconds(6.5));
  EXPECT_EQ(ExitTimeoutFromEnv(100), absl::Seconds(30));
}

TEST_F(ExitTimeoutFromEnvTest, ExplicitTimeoutWins) {
  Set("GASNET_EXITTIMEOUT", "12.5");
  Set("GASNET_EXITTIMEOUT_MAX", "5");
  Set("GASNET_EXITTIMEOUT_MIN", "1");
  EXPECT_EQ(ExitTimeoutFromEnv(1), absl::Seconds(12.5));
  EXPECT_EQ(ExitTimeoutFromEnv(1000), absl::Seconds(12.5));
}

TEST_F(ExitTimeoutFromEnvTest, ExplicitZeroIsRaisedToTheFloor) {
  Set("GASNET_EXITTIMEOUT", "0");
  EXPECT_EQ(ExitTimeoutFromEnv(4), kMinExitTimeout);
}

TEST_F(ExitTimeoutFromEnvTest, VerboseEnvReportsEveryVariable) {
  Set("GASNET_VERBOSEENV", "1");
  Set("GASNET_EXITTIMEOUT_FACTOR", "0.5");
  SetJobRank(0);
  EXPECT_EQ(ExitTimeoutFromEnv(4), absl::Seconds(4));
  EXPECT_THAT(Captured(), Contains(HasSubstr("GASNET_EXITTIMEOUT_MAX = 360")));
  EXPECT_THAT(Captured(), Contains(HasSubstr("GASNET_EXITTIMEOUT_MIN = 2")));
  EXPECT_THAT(Captured(),
              Contains(HasSubstr("GASNET_EXITTIMEOUT_FACTOR = 0.5")));
  // The timeout itself is reported with the computed value as its default.
  EXPECT_THAT(Captured(),
              Contains(HasSubstr("GASNET_EXITTIMEOUT = 4   (default)")));
}

TEST_F(ExitTimeoutFromEnvDeathTest, MalformedValueIsFatalNamingTheVariable) {
  Set("GASNET_EXITTIMEOUT_FACTOR", "soon");
  EXPECT_DEATH(ExitTimeoutFromEnv(4), "GASNET_EXITTIMEOUT_FACTOR.*soon");
}

TEST_F(ExitTimeoutFromEnvDeathTest, NegativeValueIsFatalNamingTheVariable) {
  Set("GASNET_EXITTIMEOUT", "-1");
  EXPECT_DEATH(ExitTimeoutFromEnv(4), "GASNET_EXITTIMEOUT.*-1.*negative");
}

TEST_F(ExitTimeoutFromEnvDeathTest, NegativeFormulaSettingIsFatal) {
  Set("GASNET_EXITTIMEOUT_MIN", "-0.5");
  EXPECT_DEATH(ExitTimeoutFromEnv(4), "GASNET_EXITTIMEOUT_MIN.*-0.5");
}

}  // namespace
}  // namespace gexrt
