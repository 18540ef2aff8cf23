#include "conduit/ofi/settings.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "base/env/settings.h"
#include "gtest/gtest.h"

namespace gexrt::ofi {
namespace {

constexpr const char* kTouched[] = {
    "GASNET_OFI_MAX_MEDIUM",
    "GASNET_OFI_AM_INJECT_LIMIT",
    "GASNET_OFI_INJECT_LIMIT",
    "GASNET_OFI_RMA_INJECT_LIMIT",
    "GASNET_OFI_RECEIVE_BUFF_SIZE",
    "GASNET_OFI_NUM_RECEIVE_BUFFS",
    "GASNET_OFI_MAX_REQUEST_BUFFS",
    "GASNET_OFI_NUM_INITIAL_REQUEST_BUFFS",
    "GASNET_OFI_BBUF_SIZE",
    "GASNET_OFI_NUM_BBUFS",
    "GASNET_OFI_BBUF_THRESHOLD",
    "GASNET_OFI_LIST_DEVICES_NODES",
    "GASNET_OFI_DEVICE",
    "FI_UNIVERSE_SIZE",
    "FI_MR_CACHE_MAX_SIZE",
    "FI_MR_CACHE_MAX_COUNT",
    "FI_PROVIDER",
    "GASNET_OFI_SET_UNIVERSE_SIZE",
    "GASNET_OFI_SET_RXM_BUFFER_SIZE",
    "FI_OFI_RXM_BUFFER_SIZE",
    "FI_OFI_RXM_EAGER_LIMIT",
    "FI_OFI_RXM_ENABLE_DYN_RBUF",
    "GASNET_OFI_MAX_REPLY_BUFFS",
    "GASNET_OFI_NUM_INITIAL_REPLY_BUFFS",
    "GASNET_OFI_TAGGED_AM",
    "GASNET_OFI_DATA_PROGRESS",
    "GASNET_OFI_NUM_TX_CONTEXTS",
};

class OfiSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override { Clear(); }
  void TearDown() override { Clear(); }
  static void Clear() {
    for (const char* name : kTouched) unsetenv(name);
    env::internal::ResetForTest();
  }
  static void Set(const char* name, const char* value) {
    setenv(name, value, 1);
  }
  static std::string Error() {
    absl::StatusOr<Settings> s = ReadSettings();
    EXPECT_FALSE(s.ok());
    return s.ok() ? "" : std::string(s.status().message());
  }
};

TEST_F(OfiSettingsTest, DefaultsAreTheSeeds) {
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->max_medium, 8192u);
  EXPECT_EQ(s->am_inject_limit, Settings::kProviderMax);
  EXPECT_EQ(s->rma_inject_limit, Settings::kProviderMax);
  EXPECT_TRUE(s->multi_recv);
  EXPECT_EQ(s->num_receive_buffs, 8u);
  EXPECT_EQ(s->receive_buff_size, 1u << 20);
  EXPECT_EQ(s->max_request_buffs, 1024u);
  // Not the seed's 256: pools start small and grow (README: "Memory").
  EXPECT_EQ(s->initial_request_buffs, 32u);
  EXPECT_EQ(s->initial_reply_buffs, 32u);
  EXPECT_EQ(s->bbuf_threshold, 4 * s->bbuf_size);
  EXPECT_EQ(s->num_bbufs, 64u);
  EXPECT_EQ(s->rma_poll_freq, 32);
  EXPECT_EQ(s->device, "");
  EXPECT_TRUE(s->set_universe_size);
  EXPECT_TRUE(s->set_rxm_buffer_size);
}

TEST_F(OfiSettingsTest, InitialSendBuffersFollowASmallerMax) {
  Set("GASNET_OFI_MAX_REQUEST_BUFFS", "8");
  Set("GASNET_OFI_MAX_REPLY_BUFFS", "100");
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->initial_request_buffs, 8u);
  EXPECT_EQ(s->initial_reply_buffs, 32u);
}

TEST_F(OfiSettingsTest, RxmBuffersAreSetOverTcpButNeverOverwritten) {
  Settings s;
  Set("FI_PROVIDER", "tcp;ofi_rxm");
  PrepareLibfabricEnvironment(s, 2);
  EXPECT_STREQ(getenv("FI_OFI_RXM_BUFFER_SIZE"),
               std::to_string(Settings::kRxmBufferSize).c_str());
  EXPECT_STREQ(getenv("FI_OFI_RXM_EAGER_LIMIT"),
               std::to_string(Settings::kRxmEagerLimit).c_str());
  // Either set by the user: neither is touched.
  unsetenv("FI_OFI_RXM_EAGER_LIMIT");
  Set("FI_OFI_RXM_BUFFER_SIZE", "16384");
  PrepareLibfabricEnvironment(s, 2);
  EXPECT_STREQ(getenv("FI_OFI_RXM_BUFFER_SIZE"), "16384");
  EXPECT_EQ(getenv("FI_OFI_RXM_EAGER_LIMIT"), nullptr);
  unsetenv("FI_OFI_RXM_BUFFER_SIZE");
  Set("FI_OFI_RXM_EAGER_LIMIT", "4096");
  PrepareLibfabricEnvironment(s, 2);
  EXPECT_EQ(getenv("FI_OFI_RXM_BUFFER_SIZE"), nullptr);
  EXPECT_STREQ(getenv("FI_OFI_RXM_EAGER_LIMIT"), "4096");
  Set("FI_OFI_RXM_EAGER_LIMIT", "");  // libfabric's own default
  PrepareLibfabricEnvironment(s, 2);
  EXPECT_EQ(getenv("FI_OFI_RXM_BUFFER_SIZE"), nullptr);
  EXPECT_EQ(getenv("FI_OFI_RXM_EAGER_LIMIT"), nullptr);
  // Dynamic receive buffers off: an eager message could not exceed the
  // buffer, so nothing is set.
  Set("FI_OFI_RXM_ENABLE_DYN_RBUF", "0");
  PrepareLibfabricEnvironment(s, 2);
  EXPECT_EQ(getenv("FI_OFI_RXM_BUFFER_SIZE"), nullptr);
  unsetenv("FI_OFI_RXM_ENABLE_DYN_RBUF");
  // Not over verbs, nor when told not to.
  for (const char* provider : {"verbs;ofi_rxm", "tcp,verbs;ofi_rxm"}) {
    Set("FI_PROVIDER", provider);
    PrepareLibfabricEnvironment(s, 2);
    EXPECT_EQ(getenv("FI_OFI_RXM_BUFFER_SIZE"), nullptr) << provider;
    EXPECT_EQ(getenv("FI_OFI_RXM_EAGER_LIMIT"), nullptr) << provider;
  }
  // No provider named: set where the host has no RDMA device (libfabric
  // then picks tcp;ofi_rxm), left alone where verbs may be picked.
  unsetenv("FI_PROVIDER");
  PrepareLibfabricEnvironment(s, 2);
  if (HostHasRdmaDevice()) {
    EXPECT_EQ(getenv("FI_OFI_RXM_BUFFER_SIZE"), nullptr);
  } else {
    EXPECT_STREQ(getenv("FI_OFI_RXM_BUFFER_SIZE"),
                 std::to_string(Settings::kRxmBufferSize).c_str());
    unsetenv("FI_OFI_RXM_BUFFER_SIZE");
    unsetenv("FI_OFI_RXM_EAGER_LIMIT");
  }
  Set("FI_PROVIDER", "tcp;ofi_rxm");
  Set("GASNET_OFI_SET_RXM_BUFFER_SIZE", "no");
  absl::StatusOr<Settings> off = ReadSettings();
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->set_rxm_buffer_size);
  PrepareLibfabricEnvironment(*off, 2);
  EXPECT_EQ(getenv("FI_OFI_RXM_BUFFER_SIZE"), nullptr);
}

TEST_F(OfiSettingsTest, RdmaDevicesAreThoseTheDirectoryNames) {
  char dir[] = "/tmp/ofi_rdma_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  EXPECT_FALSE(HostHasRdmaDevice(dir));
  const std::string device = std::string(dir) + "/mlx5_0";
  ASSERT_EQ(mkdir(device.c_str(), 0700), 0);
  EXPECT_TRUE(HostHasRdmaDevice(dir));
  rmdir(device.c_str());
  rmdir(dir);
  EXPECT_FALSE(HostHasRdmaDevice("/nonexistent/infiniband"));
}

TEST_F(OfiSettingsTest, MaxMediumBelow512IsRefusedNamingIt) {
  Set("GASNET_OFI_MAX_MEDIUM", "100");
  const std::string e = Error();
  EXPECT_NE(e.find("GASNET_OFI_MAX_MEDIUM"), std::string::npos) << e;
  EXPECT_NE(e.find("512"), std::string::npos) << e;
}

TEST_F(OfiSettingsTest, InjectLimitAliasIsUsedOnlyWithoutTheMainName) {
  Set("GASNET_OFI_INJECT_LIMIT", "100");
  EXPECT_EQ(ReadSettings()->am_inject_limit, 100u);
  Set("GASNET_OFI_AM_INJECT_LIMIT", "40");
  env::internal::ResetForTest();
  EXPECT_EQ(ReadSettings()->am_inject_limit, 40u);
}

TEST_F(OfiSettingsTest, RecvModeTakesMoreBuffersByDefault) {
  Set("GASNET_OFI_RECEIVE_BUFF_SIZE", "recv");
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->multi_recv);
  EXPECT_GT(s->num_receive_buffs, 8u);
}

TEST_F(OfiSettingsTest, BounceBufferConditionIsChecked) {
  Set("GASNET_OFI_BBUF_SIZE", "4096");
  Set("GASNET_OFI_NUM_BBUFS", "2");
  Set("GASNET_OFI_BBUF_THRESHOLD", "16384");
  const std::string e = Error();
  EXPECT_NE(e.find("GASNET_OFI_NUM_BBUFS=2"), std::string::npos) << e;
  EXPECT_NE(e.find("GASNET_OFI_BBUF_THRESHOLD=16384"), std::string::npos) << e;
  Set("GASNET_OFI_NUM_BBUFS", "4");
  env::internal::ResetForTest();
  EXPECT_TRUE(ReadSettings().ok());
}

TEST_F(OfiSettingsTest, InitialBuffersMayNotExceedTheMaximum) {
  Set("GASNET_OFI_MAX_REQUEST_BUFFS", "10");
  Set("GASNET_OFI_NUM_INITIAL_REQUEST_BUFFS", "11");
  const std::string e = Error();
  EXPECT_NE(e.find("GASNET_OFI_NUM_INITIAL_REQUEST_BUFFS=11"),
            std::string::npos)
      << e;
}

TEST_F(OfiSettingsTest, MalformedValuesNameTheirVariable) {
  Set("GASNET_OFI_NUM_RECEIVE_BUFFS", "lots");
  EXPECT_NE(Error().find("GASNET_OFI_NUM_RECEIVE_BUFFS"), std::string::npos);
  Clear();
  Set("GASNET_OFI_LIST_DEVICES_NODES", "0,x-");
  EXPECT_NE(Error().find("GASNET_OFI_LIST_DEVICES_NODES"), std::string::npos);
}

TEST_F(OfiSettingsTest, UniverseSizeIsSetButNeverOverwritten) {
  Settings s;
  PrepareLibfabricEnvironment(s, 12);
  EXPECT_STREQ(getenv("FI_UNIVERSE_SIZE"), "12");
  PrepareLibfabricEnvironment(s, 99);
  EXPECT_STREQ(getenv("FI_UNIVERSE_SIZE"), "12");
  unsetenv("FI_UNIVERSE_SIZE");
  s.set_universe_size = false;
  PrepareLibfabricEnvironment(s, 12);
  EXPECT_EQ(getenv("FI_UNIVERSE_SIZE"), nullptr);
}

TEST_F(OfiSettingsTest, MrCacheIsUnlimitedOnlyForVerbsAndCxi) {
  Settings s;
  Set("FI_PROVIDER", "tcp;ofi_rxm");
  PrepareLibfabricEnvironment(s, 2);
  EXPECT_EQ(getenv("FI_MR_CACHE_MAX_SIZE"), nullptr);
  Set("FI_PROVIDER", "verbs;ofi_rxm");
  Set("FI_MR_CACHE_MAX_COUNT", "7");
  PrepareLibfabricEnvironment(s, 2);
  EXPECT_STREQ(getenv("FI_MR_CACHE_MAX_SIZE"), "-1");
  EXPECT_STREQ(getenv("FI_MR_CACHE_MAX_COUNT"), "7");  // the user's
  Set("FI_MR_CACHE_MAX_SIZE", "");                     // libfabric's own
  unsetenv("FI_MR_CACHE_MAX_COUNT");
  Set("FI_MR_CACHE_MAX_SIZE", "");
  PrepareLibfabricEnvironment(s, 2);
  EXPECT_EQ(getenv("FI_MR_CACHE_MAX_SIZE"), nullptr);
}

TEST_F(OfiSettingsTest, TaggedAmsUseSingleMessageReceives) {
  Set("GASNET_OFI_TAGGED_AM", "yes");
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->tagged_am);
  EXPECT_FALSE(s->multi_recv);
  EXPECT_EQ(s->num_receive_buffs, 1024u);
  Set("GASNET_OFI_TAGGED_AM", "perhaps");
  EXPECT_NE(Error().find("GASNET_OFI_TAGGED_AM"), std::string::npos);
}

TEST_F(OfiSettingsTest, DataProgressIsManualAutoOrUnset) {
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->data_progress, Settings::Progress::kPreferManual);
  Set("GASNET_OFI_DATA_PROGRESS", "AUTO");
  s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->data_progress, Settings::Progress::kAuto);
  Set("GASNET_OFI_DATA_PROGRESS", "manual");
  s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->data_progress, Settings::Progress::kManual);
  Set("GASNET_OFI_DATA_PROGRESS", "sometimes");
  const std::string e = Error();
  EXPECT_NE(e.find("GASNET_OFI_DATA_PROGRESS=sometimes"), std::string::npos)
      << e;
}

TEST_F(OfiSettingsTest, TransmitContextsAreBounded) {
  absl::StatusOr<Settings> s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_tx_contexts, 0u);  // the default
  Set("GASNET_OFI_NUM_TX_CONTEXTS", "3");
  s = ReadSettings();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_tx_contexts, 3u);
  Set("GASNET_OFI_NUM_TX_CONTEXTS", "0");
  EXPECT_NE(Error().find("GASNET_OFI_NUM_TX_CONTEXTS"), std::string::npos);
  Set("GASNET_OFI_NUM_TX_CONTEXTS", "65");
  EXPECT_NE(Error().find("GASNET_OFI_NUM_TX_CONTEXTS"), std::string::npos);
}

}  // namespace
}  // namespace gexrt::ofi
