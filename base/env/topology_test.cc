#include "base/env/topology.h"

#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::env {
namespace {

using ::testing::ElementsAre;
namespace fs = std::filesystem;

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

// A fake sysfs: 2 sockets x 2 cores x 2 threads = CPUs 0-7, numbered as
// Linux often does (thread siblings n and n+4), one NUMA node per socket
// plus a memory-only node, and one L3 per socket.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = fs::path(tmp != nullptr ? tmp : "/tmp") / "fake_sysfs";
    fs::remove_all(root_);
    const fs::path cpu = root_ / "devices/system/cpu";
    WriteFile(cpu / "online", "0-7");
    for (int n = 0; n < 8; ++n) {
      const fs::path dir = cpu / ("cpu" + std::to_string(n));
      const int socket = (n % 4) / 2;
      const int core = n % 4;
      WriteFile(dir / "topology/package_cpus_list",
                socket == 0 ? "0-1,4-5" : "2-3,6-7");
      WriteFile(dir / "topology/core_cpus_list",
                std::to_string(core) + "," + std::to_string(core + 4));
      WriteFile(dir / "cache/index0/level", "1");
      WriteFile(dir / "cache/index0/type", "Data");
      WriteFile(dir / "cache/index0/shared_cpu_list",
                std::to_string(core) + "," + std::to_string(core + 4));
      WriteFile(dir / "cache/index1/level", "3");
      WriteFile(dir / "cache/index1/type", "Unified");
      WriteFile(dir / "cache/index1/shared_cpu_list",
                socket == 0 ? "0-1,4-5" : "2-3,6-7");
    }
    const fs::path node = root_ / "devices/system/node";
    WriteFile(node / "online", "0-2");
    WriteFile(node / "node0/cpulist", "0-1,4-5");
    WriteFile(node / "node1/cpulist", "2-3,6-7");
    WriteFile(node / "node2/cpulist", "");
  }
  std::vector<CpuSet> Groups(TopologyLevel level) {
    absl::StatusOr<std::vector<CpuSet>> groups =
        ReadTopologyGroups(level, root_.string());
    EXPECT_TRUE(groups.ok()) << groups.status();
    return groups.ok() ? *groups : std::vector<CpuSet>{};
  }
  fs::path root_;
};

TEST_F(FakeSysfs, SocketsInLogicalOrder) {
  EXPECT_THAT(Groups(TopologyLevel::kSocket),
              ElementsAre(CpuSet{0, 1, 4, 5}, CpuSet{2, 3, 6, 7}));
}

TEST_F(FakeSysfs, Cores) {
  EXPECT_THAT(
      Groups(TopologyLevel::kCore),
      ElementsAre(CpuSet{0, 4}, CpuSet{1, 5}, CpuSet{2, 6}, CpuSet{3, 7}));
}

TEST_F(FakeSysfs, NumaNodesKeepMemoryOnlyNodesLast) {
  EXPECT_THAT(Groups(TopologyLevel::kNumaNode),
              ElementsAre(CpuSet{0, 1, 4, 5}, CpuSet{2, 3, 6, 7}, CpuSet{}));
}

TEST_F(FakeSysfs, PusAndCaches) {
  EXPECT_EQ(Groups(TopologyLevel::kPu).size(), 8u);
  EXPECT_THAT(Groups(TopologyLevel::kL3Cache),
              ElementsAre(CpuSet{0, 1, 4, 5}, CpuSet{2, 3, 6, 7}));
  EXPECT_EQ(Groups(TopologyLevel::kL1Cache).size(), 4u);
  // No L2 is listed in this fake.
  EXPECT_FALSE(
      ReadTopologyGroups(TopologyLevel::kL2Cache, root_.string()).ok());
}

TEST_F(FakeSysfs, NoNumaDirectoryMeansOneNode) {
  fs::remove_all(root_ / "devices/system/node");
  EXPECT_THAT(Groups(TopologyLevel::kNumaNode),
              ElementsAre(CpuSet{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST_F(FakeSysfs, MissingCpuListIsAnError) {
  fs::remove(root_ / "devices/system/cpu/online");
  EXPECT_FALSE(ReadTopologyGroups(TopologyLevel::kSocket, root_.string()).ok());
}

TEST(ContainingGroupTest, OnlyWhenBoundWithinOneGroup) {
  const std::vector<CpuSet> sockets = {{0, 1, 4, 5}, {2, 3, 6, 7}};
  EXPECT_EQ(ContainingGroup({6}, sockets), 1);
  EXPECT_EQ(ContainingGroup({0, 5}, sockets), 0);
  EXPECT_EQ(ContainingGroup({2, 3, 6, 7}, sockets), 1);
  EXPECT_EQ(ContainingGroup({1, 2}, sockets), std::nullopt);
  EXPECT_EQ(ContainingGroup({9}, sockets), std::nullopt);
  EXPECT_EQ(ContainingGroup({}, sockets), std::nullopt);
}

TEST(RealTopologyTest, AffinityAndGroupsAgree) {
  absl::StatusOr<CpuSet> affinity = ProcessAffinity();
  ASSERT_TRUE(affinity.ok()) << affinity.status();
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  EXPECT_EQ(static_cast<int>(affinity->size()), CPU_COUNT(&mask));
  // Every CPU we may run on belongs to exactly one PU and one socket.
  for (TopologyLevel level : {TopologyLevel::kPu, TopologyLevel::kSocket}) {
    absl::StatusOr<std::vector<CpuSet>> groups = ReadTopologyGroups(level);
    ASSERT_TRUE(groups.ok()) << groups.status();
    for (int cpu : *affinity) {
      EXPECT_TRUE(ContainingGroup({cpu}, *groups).has_value()) << cpu;
    }
  }
}

}  // namespace
}  // namespace gexrt::env
