#include "conduit/ucx/settings.h"

#include <stdlib.h>
#include <ucp/api/ucp.h>

#include <string>

#include "gtest/gtest.h"

namespace gexrt::ucx {
namespace {

constexpr const char* kTouched[] = {
    "GASNET_UCX_MAX_MEDIUM",
    "GASNET_UCX_AM_ORDERED_TLS",
    "GASNET_UCX_MAX_REQUEST_BUFFS",
    "GASNET_UCX_MAX_REPLY_BUFFS",
    "GASNET_UCX_STATS",
    "GASNET_UCX_OFFLOAD_ATOMICS",
    "GASNET_UCX_TLS",
    "GASNET_UCX_NET_DEVICES",
    "GASNET_UCX_SPAWNER",
};

class UcxSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override { Clear(); }
  void TearDown() override { Clear(); }
  static void Clear() {
    for (const char* name : kTouched) unsetenv(name);
  }
};

TEST_F(UcxSettingsTest, Defaults) {
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->max_medium, 3992u);
  EXPECT_FALSE(s->am_ordered_tls.has_value());
  EXPECT_FALSE(s->print_stats);
  EXPECT_TRUE(s->offload_atomics);
  EXPECT_TRUE(s->tls.empty());
}

TEST_F(UcxSettingsTest, OffloadAtomics) {
  setenv("GASNET_UCX_OFFLOAD_ATOMICS", "0", 1);
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->offload_atomics);
  setenv("GASNET_UCX_OFFLOAD_ATOMICS", "sometimes", 1);
  s = ReadSettings();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("GASNET_UCX_OFFLOAD_ATOMICS"),
            std::string::npos)
      << s.status();
}

TEST_F(UcxSettingsTest, MaxMediumWithSuffixAndFloor) {
  setenv("GASNET_UCX_MAX_MEDIUM", "8K", 1);
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->max_medium, 8192u);
  setenv("GASNET_UCX_MAX_MEDIUM", "512", 1);
  ASSERT_TRUE(ReadSettings().ok());
}

TEST_F(UcxSettingsTest, MaxMediumTooSmallNamesTheVariable) {
  setenv("GASNET_UCX_MAX_MEDIUM", "100", 1);
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("GASNET_UCX_MAX_MEDIUM=100"),
            std::string::npos)
      << s.status();
  EXPECT_NE(s.status().message().find("at least 512"), std::string::npos);
}

TEST_F(UcxSettingsTest, MaxMediumNotANumber) {
  setenv("GASNET_UCX_MAX_MEDIUM", "lots", 1);
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("GASNET_UCX_MAX_MEDIUM"),
            std::string::npos)
      << s.status();
}

TEST_F(UcxSettingsTest, OrderedTls) {
  setenv("GASNET_UCX_AM_ORDERED_TLS", "1", 1);
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->am_ordered_tls, std::optional<bool>(true));
  setenv("GASNET_UCX_AM_ORDERED_TLS", "maybe", 1);
  s = ReadSettings();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("GASNET_UCX_AM_ORDERED_TLS"),
            std::string::npos);
}

TEST_F(UcxSettingsTest, TransportLists) {
  for (const char* ok : {"tcp", "sm,self", "^cma", "posix,sysv,tcp", "\\posix",
                         "ud:aux,rc", "all", "tcp, self"}) {
    EXPECT_TRUE(CheckTransportList("GASNET_UCX_TLS", ok).ok()) << ok;
  }
  absl::Status bad = CheckTransportList("GASNET_UCX_TLS", "tcp,tpc");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("GASNET_UCX_TLS=tcp,tpc"), std::string::npos);
  EXPECT_NE(bad.message().find("'tpc'"), std::string::npos);
  EXPECT_FALSE(CheckTransportList("GASNET_UCX_TLS", "tcp,,self").ok());
  setenv("GASNET_UCX_TLS", "carrier_pigeon", 1);
  EXPECT_FALSE(ReadSettings().ok());
}

TEST_F(UcxSettingsTest, HiddenOwnVariablesAreRestored) {
  setenv("GASNET_UCX_MAX_MEDIUM", "1024", 1);
  setenv("GASNET_UCX_TLS", "tcp", 1);
  {
    HiddenOwnVariables hidden;
    EXPECT_EQ(getenv("GASNET_UCX_MAX_MEDIUM"), nullptr);
    // UCX's own keys under our prefix stay visible to UCX.
    ASSERT_NE(getenv("GASNET_UCX_TLS"), nullptr);
  }
  ASSERT_NE(getenv("GASNET_UCX_MAX_MEDIUM"), nullptr);
  EXPECT_STREQ(getenv("GASNET_UCX_MAX_MEDIUM"), "1024");
}

// Against the real UCX: with ours hidden, ucp_init reads GASNET_UCX_TLS
// and succeeds; UCX's unused-variable report names none of ours.
TEST_F(UcxSettingsTest, UcxReadsItsKeysButNotOurs) {
  setenv("GASNET_UCX_TLS", "self", 1);
  setenv("GASNET_UCX_SPAWNER", "fork", 1);
  setenv("GASNET_UCX_MAX_MEDIUM", "1024", 1);
  testing::internal::CaptureStderr();
  // UCX logs to stdout by default.
  testing::internal::CaptureStdout();
  ucp_context_h context = nullptr;
  ucs_status_t s;
  {
    HiddenOwnVariables hidden;
    ucp_config_t* config = nullptr;
    ASSERT_EQ(ucp_config_read("GASNET", nullptr, &config), UCS_OK);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM;
    s = ucp_init(&params, config, &context);
    ucp_config_release(config);
    // UCX reports unused variables when the first worker is created.
    if (s == UCS_OK) {
      ucp_worker_params_t wp{};
      ucp_worker_h worker = nullptr;
      ASSERT_EQ(ucp_worker_create(context, &wp, &worker), UCS_OK);
      ucp_worker_destroy(worker);
    }
  }
  const std::string err = testing::internal::GetCapturedStderr() +
                          testing::internal::GetCapturedStdout();
  ASSERT_EQ(s, UCS_OK) << err;
  ucp_cleanup(context);
  EXPECT_EQ(err.find("GASNET_UCX_SPAWNER"), std::string::npos) << err;
  EXPECT_EQ(err.find("GASNET_UCX_MAX_MEDIUM"), std::string::npos) << err;
}

}  // namespace
}  // namespace gexrt::ucx
