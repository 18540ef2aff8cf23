#include "conduit/ibv/ports.h"

#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::ibv {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

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

// A device the filter does not name is listed in the message but was never
// opened: its ports read "not queried", not DOWN (the software device read
// "(DOWN)" when GASNET_IBV_PORTS named another device).
TEST(ChoosePortsTest, UnqueriedPortsAreNotReportedDown) {
  PortInfo soft = Port("gex_soft0", 1, false);
  soft.queried = false;
  const absl::StatusOr<std::vector<PortInfo>> c =
      ChoosePorts({soft}, {{"mlx4_9", {}}}, "GASNET_IBV_PORTS");
  ASSERT_FALSE(c.ok());
  const std::string message(c.status().message());
  EXPECT_THAT(message, HasSubstr("gex_soft0:1 (not queried)"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("DOWN")));
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

std::vector<std::string> Probe(const std::vector<env::PortSpec>& filter,
                               uint32_t verbose) {
  absl::StatusOr<std::vector<PortInfo>> chosen =
      ChoosePorts(kListing, filter, "GASNET_IBV_PORTS");
  EXPECT_TRUE(chosen.ok()) << chosen.status();
  return DescribeProbe(kListing, *chosen, filter, "GASNET_IBV_PORTS", verbose);
}

TEST(DescribeProbeTest, ByDefaultOnlyPortsLeftOutForNotBeingActive) {
  // No filter: both inactive ports are reported; mlx5_1:2, active but
  // second on its device, is not a problem.
  EXPECT_THAT(Probe({}, 1),
              ::testing::ElementsAre("mlx5_0:1 is DOWN: not used",
                                     "mlx5_2:1 is DOWN: not used"));
  // A filter naming mlx5_1 alone: the others are its choice, not a problem.
  EXPECT_THAT(Probe({{"mlx5_1", {}}}, 1), IsEmpty());
  // Naming mlx5_0: its inactive first port was passed over.
  EXPECT_THAT(Probe({{"mlx5_0", {}}}, 1),
              ::testing::ElementsAre("mlx5_0:1 is DOWN: not used"));
  EXPECT_THAT(Probe({}, 0), IsEmpty());
}

TEST(DescribeProbeTest, AtTwoEveryPortAndWhy) {
  EXPECT_THAT(Probe({{"mlx5_1", {2}}}, 2),
              ::testing::ElementsAre(
                  "mlx5_0:1: not named by GASNET_IBV_PORTS",
                  "mlx5_0:2: not named by GASNET_IBV_PORTS",
                  "mlx5_1:1: not named by GASNET_IBV_PORTS", "mlx5_1:2: used",
                  "mlx5_2:1: not named by GASNET_IBV_PORTS"));
  EXPECT_THAT(
      Probe({}, 2),
      ::testing::ElementsAre(
          "mlx5_0:1 is DOWN: not used", "mlx5_0:2: used", "mlx5_1:1: used",
          "mlx5_1:2: not used (only the first active port of a "
          "device is)",
          "mlx5_2:1 is DOWN: not used"));
}

// A P_Key table as FindPkeyIndex reads it; counts the reads.
struct Table {
  std::vector<uint16_t> keys;
  int reads = 0;
  absl::StatusOr<uint16_t> operator()(uint16_t index) {
    ++reads;
    return keys.at(index);
  }
  uint16_t size() const { return static_cast<uint16_t>(keys.size()); }
};

absl::StatusOr<uint16_t> Find(uint16_t key, Table& t) {
  return FindPkeyIndex(key, t.size(), std::ref(t), "mlx5_0:1");
}

TEST(FindPkeyIndexTest, FindsTheKeyPreferringAFullMember) {
  Table t{{0xffff, 0x0123, 0x8456, 0x8123, 0}};
  EXPECT_EQ(*Find(0x123, t), 3u);  // full member at 3 over limited at 1
  EXPECT_EQ(*Find(0x456, t), 2u);
  EXPECT_EQ(*Find(0x7fff, t), 0u);
  Table limited{{0xffff, 0x0123}};
  EXPECT_EQ(*Find(0x123, limited), 1u);
}

TEST(FindPkeyIndexTest, AMissingKeyNamesTheSettingThePortAndTheTable) {
  Table t{{0xffff, 0x8123, 0x0000, 0x8000}};
  absl::StatusOr<uint16_t> i = Find(0x124, t);
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(i.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(i.status().message()),
            "GASNET_IBV_PKEY=0x0124: port mlx5_0:1 has no such partition (its "
            "P_Key table holds 0xffff, 0x8123)");
  EXPECT_EQ(t.reads, 4);
  Table empty;
  EXPECT_THAT(std::string(Find(0x124, empty).status().message()),
              HasSubstr("holds no keys"));
}

TEST(FindPkeyIndexTest, AFailedReadIsReturned) {
  auto failing = [](uint16_t) -> absl::StatusOr<uint16_t> {
    return absl::UnavailableError("ibv_query_pkey: EIO");
  };
  EXPECT_EQ(FindPkeyIndex(0x123, 2, failing, "x:1").status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gexrt::ibv
