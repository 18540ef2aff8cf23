#include "conduit/ibv/ports.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::ibv {
namespace {

using ::testing::HasSubstr;

PortInfo Port(std::string device, uint8_t port, bool active) {
  PortInfo p;
  p.device = std::move(device);
  p.port = port;
  p.attr.state = active ? verbs::PortState::kActive : verbs::PortState::kDown;
  return p;
}

std::vector<std::string> Names(const std::vector<PortInfo>& ports) {
  std::vector<std::string> out;
  for (const PortInfo& p : ports) {
    out.push_back(p.device + ":" + std::to_string(p.port));
  }
  return out;
}

const std::vector<PortInfo> kListing = {
    Port("mlx5_0", 1, false), Port("mlx5_0", 2, true), Port("mlx5_1", 1, true),
    Port("mlx5_1", 2, true), Port("mlx5_2", 1, false)};

TEST(ChoosePortsTest, NoFilterTakesTheFirstActivePortOfEachDevice) {
  absl::StatusOr<std::vector<PortInfo>> c =
      ChoosePorts(kListing, {}, "GASNET_IBV_PORTS");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(Names(*c), ::testing::ElementsAre("mlx5_0:2", "mlx5_1:1"));
}

TEST(ChoosePortsTest, FilterNamesDevicesAndPorts) {
  absl::StatusOr<std::vector<PortInfo>> c = ChoosePorts(
      kListing, {{"mlx5_1", {2, 1}}, {"mlx5_0", {}}, {"mlx5_1", {2}}},
      "GASNET_IBV_PORTS");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(Names(*c),
              ::testing::ElementsAre("mlx5_1:2", "mlx5_1:1", "mlx5_0:2"));
}

TEST(ChoosePortsTest, MissingDeviceIsAnErrorNamingTheVariable) {
  absl::StatusOr<std::vector<PortInfo>> c =
      ChoosePorts(kListing, {{"mlx4_9", {}}}, "GASNET_IBV_PORTS_1");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("GASNET_IBV_PORTS_1 names device 'mlx4_9'"));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("mlx5_1:2"));
}

TEST(ChoosePortsTest, InactiveOrMissingPortIsAnError) {
  EXPECT_THAT(
      std::string(
          ChoosePorts(kListing, {{"mlx5_0", {1}}}, "V").status().message()),
      HasSubstr("is not active"));
  EXPECT_THAT(
      std::string(
          ChoosePorts(kListing, {{"mlx5_0", {3}}}, "V").status().message()),
      HasSubstr("does not exist"));
  EXPECT_THAT(
      std::string(
          ChoosePorts(kListing, {{"mlx5_2", {}}}, "V").status().message()),
      HasSubstr("has no active port"));
}

TEST(ChoosePortsTest, NoActivePortAnywhere) {
  absl::StatusOr<std::vector<PortInfo>> c =
      ChoosePorts({Port("a", 1, false)}, {}, "V");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(ChoosePorts({}, {}, "V").ok());
}

}  // namespace
}  // namespace gexrt::ibv
