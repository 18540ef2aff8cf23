#include "conduit/ibv/verbs/select.h"

#include <cstdlib>
#include <string>

#include "conduit/ibv/verbs/ibverbs_device.h"
#include "conduit/ibv/verbs/soft_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::ibv::verbs {
namespace {

TEST(SelectTest, TheSettingChoosesTheImplementation) {
  setenv(kSoftwareDeviceVariable, "1", 1);
  auto s = SelectProvider("select-test");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->provider->kind(), "software");
  EXPECT_NE(s->reason.find("=yes"), std::string::npos) << s->reason;

  setenv(kSoftwareDeviceVariable, "no", 1);
  s = SelectProvider("select-test");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->provider->kind(), "libibverbs");

  setenv(kSoftwareDeviceVariable, "maybe", 1);
  s = SelectProvider("select-test");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.status().message()).find(kSoftwareDeviceVariable),
            std::string::npos)
      << s.status();

  setenv(kSoftwareDeviceVariable, "yes", 1);
  EXPECT_FALSE(SelectProvider("bad key/").ok());

  setenv(kSoftwareDevicesVariable, "2", 1);
  s = SelectProvider("select-test");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->provider->ListDevices()->size(), 2u);
  setenv(kSoftwareDevicesVariable, "9", 1);
  EXPECT_FALSE(SelectProvider("select-test").ok());
  unsetenv(kSoftwareDevicesVariable);
}

TEST(SelectTest, TheSoftwarePkeyTableComesFromItsSetting) {
  setenv(kSoftwareDeviceVariable, "yes", 1);
  setenv(kSoftwarePkeysVariable, "0xffff, 0x8123,291", 1);
  auto s = SelectProvider("select-pkeys");
  ASSERT_TRUE(s.ok()) << s.status();
  auto ctx = s->provider->Open(kSoftDeviceName);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  EXPECT_EQ((*ctx)->QueryPort(1)->pkey_table_len, 3u);
  EXPECT_EQ(*(*ctx)->QueryPkey(1, 1), 0x8123u);
  EXPECT_EQ(*(*ctx)->QueryPkey(1, 2), 0x0123u);
  ctx->reset();

  setenv(kSoftwarePkeysVariable, "0xffff,0x10000", 1);
  s = SelectProvider("select-pkeys");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              ::testing::HasSubstr("GASNET_IBV_SOFTWARE_PKEYS=0xffff,0x10000: "
                                   "'0x10000': "));
  unsetenv(kSoftwarePkeysVariable);
  unsetenv(kSoftwareDeviceVariable);
}

TEST(SelectTest, UnsetPicksHardwareWhenThereIsSome) {
  unsetenv(kSoftwareDeviceVariable);
  auto devices = MakeIbverbsProvider()->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  auto s = SelectProvider("select-test");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->provider->kind(), devices->empty() ? "software" : "libibverbs");
  std::printf("unset: %s\n", s->reason.c_str());
}

}  // namespace
}  // namespace gexrt::ibv::verbs
