#include "conduit/ibv/verbs/select.h"

#include <cstdlib>

#include "conduit/ibv/verbs/ibverbs_device.h"
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
