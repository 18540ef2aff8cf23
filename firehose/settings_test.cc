#include "firehose/settings.h"

#include <cstdlib>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/env/settings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::firehose {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kPage = 4096;

class SettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Clear();
    // Keep the enlarging warnings out of the log.
    Set("GASNET_QUIET", "1");
    resources_.pool_bytes = 400 * kMiB;
    resources_.device_max_regions = 8000;
    resources_.ranks_on_host = 2;
    resources_.page_size = kPage;
  }
  void TearDown() override { Clear(); }
  static void Clear() {
    for (const char* name : kTouched) unsetenv(name);
    env::internal::ResetForTest();
  }
  static void Set(const char* name, const char* value) {
    setenv(name, value, /*overwrite=*/1);
    env::internal::ResetForTest();
  }
  Settings Read() {
    absl::StatusOr<Settings> s = SettingsFromEnv(resources_);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : Settings{};
  }
  absl::Status Error() { return SettingsFromEnv(resources_).status(); }

  static constexpr const char* kTouched[] = {"GASNET_USE_FIREHOSE",
                                             "GASNET_FIREHOSE_M",
                                             "GASNET_FIREHOSE_MAXVICTIM_M",
                                             "GASNET_FIREHOSE_R",
                                             "GASNET_FIREHOSE_MAXVICTIM_R",
                                             "GASNET_FIREHOSE_MAXREGION_SIZE",
                                             "GASNET_FIREHOSE_TABLE_SCALE",
                                             "GASNET_FIREHOSE_VERBOSE",
                                             "GASNET_PINNED_REGIONS_MAX",
                                             "GASNET_QUIET",
                                             "GASNET_VERBOSEENV"};
  Resources resources_;
};

TEST_F(SettingsTest, Defaults) {
  const Settings s = Read();
  EXPECT_TRUE(s.enabled);
  EXPECT_FALSE(s.verbose);
  EXPECT_EQ(s.table_scale, 1.0);
  EXPECT_EQ(s.bucket_size, kPage);
  EXPECT_EQ(s.max_region_size, 128u << 10);
  // 75% / 25% of the pool.
  EXPECT_EQ(s.m_bytes, 300 * kMiB);
  EXPECT_EQ(s.maxvictim_m_bytes, 100 * kMiB);
  // The device's 8000 regions shared by 2 ranks, split 3000:1000, then cut
  // to what 128K regions need to address each pool.
  EXPECT_EQ(s.pinned_regions, 4000u);
  EXPECT_EQ(s.r_regions, 2400u);
  EXPECT_EQ(s.maxvictim_r_regions, 800u);
}

TEST_F(SettingsTest, OnePoolSetLeavesTheOtherTheRest) {
  Set("GASNET_FIREHOSE_M", "100");  // Megabytes without a suffix.
  Settings s = Read();
  EXPECT_EQ(s.m_bytes, 100 * kMiB);
  EXPECT_EQ(s.maxvictim_m_bytes, 300 * kMiB);
  Clear();
  Set("GASNET_QUIET", "1");
  Set("GASNET_FIREHOSE_MAXVICTIM_M", "64K");
  s = Read();
  EXPECT_EQ(s.maxvictim_m_bytes, 64u << 10);
  EXPECT_EQ(s.m_bytes, 400 * kMiB - (64 << 10));
}

TEST_F(SettingsTest, BothPoolsSetMayEnlargeTheTotal) {
  Set("GASNET_FIREHOSE_M", "1G");
  Set("GASNET_FIREHOSE_MAXVICTIM_M", "1G");
  const Settings s = Read();
  EXPECT_EQ(s.m_bytes, 1024 * kMiB);
  EXPECT_EQ(s.maxvictim_m_bytes, 1024 * kMiB);
}

TEST_F(SettingsTest, RegionCountsFollowThePoolsAndAreCutToWhatTheyAddress) {
  Set("GASNET_FIREHOSE_R", "100");
  Settings s = Read();
  EXPECT_EQ(s.r_regions, 100u);
  EXPECT_EQ(s.maxvictim_r_regions, 3900u - 3100u);  // 100M / 128K = 800.
  // A pool of 1M in 128K regions needs at most 8.
  Set("GASNET_FIREHOSE_MAXVICTIM_M", "1M");
  Set("GASNET_FIREHOSE_M", "1M");
  Set("GASNET_FIREHOSE_R", "1000");
  Set("GASNET_FIREHOSE_MAXVICTIM_R", "1000");
  s = Read();
  EXPECT_EQ(s.r_regions, 8u);
  EXPECT_EQ(s.maxvictim_r_regions, 8u);
}

TEST_F(SettingsTest, PinnedRegionsMaxIsACountOrAFractionPerHost) {
  Set("GASNET_PINNED_REGIONS_MAX", "600");
  EXPECT_EQ(Read().pinned_regions, 300u);
  Set("GASNET_PINNED_REGIONS_MAX", "1/4");
  EXPECT_EQ(Read().pinned_regions, 1000u);
  Set("GASNET_PINNED_REGIONS_MAX", "2.5");
  EXPECT_THAT(Error().message(), HasSubstr("GASNET_PINNED_REGIONS_MAX"));
  Set("GASNET_PINNED_REGIONS_MAX", "0");
  EXPECT_TRUE(absl::IsInvalidArgument(Error()));
  resources_.device_max_regions = 0;
  Set("GASNET_PINNED_REGIONS_MAX", "0.5");
  EXPECT_THAT(Error().message(), HasSubstr("does not report"));
}

TEST_F(SettingsTest, RegionSizeMustBeWholePagesOrZeroForAutomatic) {
  Set("GASNET_FIREHOSE_MAXREGION_SIZE", "1M");
  EXPECT_EQ(Read().max_region_size, kMiB);
  Set("GASNET_FIREHOSE_MAXREGION_SIZE", "5000B");
  const absl::Status error = Error();
  EXPECT_TRUE(absl::IsInvalidArgument(error));
  EXPECT_THAT(error.message(), HasSubstr("GASNET_FIREHOSE_MAXREGION_SIZE"));
  EXPECT_THAT(error.message(), HasSubstr("multiple of the page size"));
  // Automatic: 400M over 4000 regions needs 128K regions (a power of two).
  Set("GASNET_FIREHOSE_MAXREGION_SIZE", "0");
  EXPECT_EQ(Read().max_region_size, 128u << 10);
  Set("GASNET_PINNED_REGIONS_MAX", "200");  // 100 per rank: 4M each.
  EXPECT_EQ(Read().max_region_size, 4 * kMiB);
}

TEST_F(SettingsTest, MalformedValuesNameTheirVariable) {
  for (const char* name :
       {"GASNET_FIREHOSE_M", "GASNET_FIREHOSE_MAXVICTIM_M", "GASNET_FIREHOSE_R",
        "GASNET_FIREHOSE_MAXVICTIM_R", "GASNET_FIREHOSE_MAXREGION_SIZE",
        "GASNET_FIREHOSE_TABLE_SCALE", "GASNET_FIREHOSE_VERBOSE",
        "GASNET_USE_FIREHOSE", "GASNET_PINNED_REGIONS_MAX"}) {
    Set(name, "lots");
    const absl::Status error = Error();
    EXPECT_TRUE(absl::IsInvalidArgument(error)) << name << ": " << error;
    EXPECT_THAT(error.message(), HasSubstr(name));
    unsetenv(name);
  }
  Set("GASNET_FIREHOSE_TABLE_SCALE", "0");
  EXPECT_THAT(Error().message(), HasSubstr("GASNET_FIREHOSE_TABLE_SCALE"));
  Set("GASNET_FIREHOSE_TABLE_SCALE", "0.5");
  EXPECT_EQ(Read().table_scale, 0.5);
}

TEST_F(SettingsTest, FirehoseMayBeTurnedOffOnlyWhereItIsOptional) {
  Set("GASNET_USE_FIREHOSE", "no");
  EXPECT_FALSE(Read().enabled);
  resources_.required = true;
  const absl::Status error = Error();
  EXPECT_TRUE(absl::IsInvalidArgument(error));
  EXPECT_THAT(error.message(), HasSubstr("GASNET_USE_FIREHOSE"));
  EXPECT_THAT(error.message(), HasSubstr("cannot be disabled"));
}

TEST_F(SettingsTest, LimitsForTheCaches) {
  Set("GASNET_FIREHOSE_VERBOSE", "1");
  const Settings s = Read();
  const LocalLimits local = LocalLimitsFor(s);
  EXPECT_EQ(local.bucket_size, kPage);
  EXPECT_EQ(local.max_pinned_bytes, 400 * kMiB);
  EXPECT_EQ(local.max_pinned_regions, 3200u);
  EXPECT_EQ(local.max_victim_bytes, 100 * kMiB);
  EXPECT_EQ(local.max_victim_regions, 800u);
  EXPECT_TRUE(local.verbose);
  EXPECT_TRUE(ValidateLocalLimits(local).ok());

  absl::StatusOr<RemoteLimits> remote = RemoteLimitsFor(s, 3);
  ASSERT_TRUE(remote.ok()) << remote.status();
  EXPECT_EQ(remote->max_bytes_per_peer, 100 * kMiB);
  EXPECT_EQ(remote->max_regions_per_peer, 800u);
  EXPECT_EQ(remote->max_victim_regions_per_peer, 800u);
  EXPECT_TRUE(ValidateRemoteLimits(*remote).ok());
  // Too many peers for the main pool.
  const absl::Status crowded = RemoteLimitsFor(s, 5000).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(crowded));
  EXPECT_THAT(crowded.message(), HasSubstr("GASNET_FIREHOSE_R"));
}

}  // namespace
}  // namespace gexrt::firehose
