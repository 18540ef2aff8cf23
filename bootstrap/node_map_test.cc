#include "bootstrap/node_map.h"

#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/cpu.h"
#include "base/host_id.h"
#include "bootstrap/bootstrap.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt {
namespace {

using ::testing::ElementsAre;

constexpr uint64_t kA = 0xa0a0;
constexpr uint64_t kB = 0xb0b0;
constexpr uint64_t kC = 0xc0c0;

std::vector<Rank> ToVector(absl::Span<const Rank> span) {
  return std::vector<Rank>(span.begin(), span.end());
}

// Checks that every query agrees with every other, for every rank: each
// rank is found in its host's and its supernode's member lists at the
// position its place() gives, member lists ascend, and the lists partition
// the job.
void ExpectConsistent(const NodeMap& map) {
  std::vector<int> seen_in_host(map.size(), 0);
  std::vector<int> seen_in_supernode(map.size(), 0);
  for (uint32_t h = 0; h < map.host_count(); ++h) {
    absl::Span<const Rank> members = map.host_members(h);
    ASSERT_FALSE(members.empty()) << "host " << h;
    for (size_t i = 0; i < members.size(); ++i) {
      if (i > 0) {
        EXPECT_LT(members[i - 1], members[i]) << "host " << h;
      }
      EXPECT_EQ(map.place(members[i]).host, h);
      ++seen_in_host[members[i]];
    }
  }
  for (uint32_t s = 0; s < map.supernode_count(); ++s) {
    absl::Span<const Rank> members = map.supernode_members(s);
    ASSERT_FALSE(members.empty()) << "supernode " << s;
    for (size_t i = 0; i < members.size(); ++i) {
      if (i > 0) {
        EXPECT_LT(members[i - 1], members[i]) << "supernode " << s;
      }
      EXPECT_EQ(map.place(members[i]).supernode, s);
      // A supernode never spans hosts.
      EXPECT_TRUE(map.SameHost(members[0], members[i]));
      ++seen_in_supernode[members[i]];
    }
  }
  for (Rank r = 0; r < map.size(); ++r) {
    EXPECT_EQ(seen_in_host[r], 1) << "rank " << r;
    EXPECT_EQ(seen_in_supernode[r], 1) << "rank " << r;
    const RankPlace& p = map.place(r);
    EXPECT_EQ(map.host_members(p.host)[p.host_index], r);
    EXPECT_EQ(map.supernode_members(p.supernode)[p.supernode_index], r);
    EXPECT_TRUE(map.SameHost(r, r));
    EXPECT_TRUE(map.SameSupernode(r, r));
  }
  // Numbering by lowest rank: the first members of hosts (supernodes)
  // ascend with the index.
  for (uint32_t h = 1; h < map.host_count(); ++h) {
    EXPECT_LT(map.host_members(h - 1)[0], map.host_members(h)[0]);
  }
  for (uint32_t s = 1; s < map.supernode_count(); ++s) {
    EXPECT_LT(map.supernode_members(s - 1)[0], map.supernode_members(s)[0]);
  }
  const RankPlace& mine = map.my_place();
  EXPECT_EQ(&mine, &map.place(map.my_rank()));
  EXPECT_EQ(ToVector(map.my_host_members()),
            ToVector(map.host_members(mine.host)));
  EXPECT_EQ(ToVector(map.my_supernode_members()),
            ToVector(map.supernode_members(mine.supernode)));
}

// The sizes of the supernodes of `host`, in supernode order.
std::vector<size_t> SupernodeSizesOfHost(const NodeMap& map, uint32_t host) {
  std::vector<size_t> sizes;
  for (uint32_t s = 0; s < map.supernode_count(); ++s) {
    absl::Span<const Rank> members = map.supernode_members(s);
    if (map.place(members[0]).host == host) sizes.push_back(members.size());
  }
  return sizes;
}

TEST(NodeMapTest, SingleRank) {
  const std::vector<uint64_t> ids = {kA};
  const NodeMap map = NodeMap::Build(ids, 0, 0);
  EXPECT_EQ(map.size(), 1u);
  EXPECT_EQ(map.my_rank(), 0u);
  EXPECT_EQ(map.host_count(), 1u);
  EXPECT_EQ(map.supernode_count(), 1u);
  EXPECT_THAT(map.my_host_members(), ElementsAre(0u));
  EXPECT_THAT(map.my_supernode_members(), ElementsAre(0u));
  const RankPlace& p = map.my_place();
  EXPECT_EQ(p.host, 0u);
  EXPECT_EQ(p.supernode, 0u);
  EXPECT_EQ(p.host_index, 0u);
  EXPECT_EQ(p.supernode_index, 0u);
  ExpectConsistent(map);
}

TEST(NodeMapTest, AllOnOneHostFormOneSupernode) {
  const std::vector<uint64_t> ids(5, kB);
  const NodeMap map = NodeMap::Build(ids, 3, 0);
  EXPECT_EQ(map.host_count(), 1u);
  EXPECT_EQ(map.supernode_count(), 1u);
  EXPECT_THAT(map.my_host_members(), ElementsAre(0u, 1u, 2u, 3u, 4u));
  EXPECT_THAT(map.my_supernode_members(), ElementsAre(0u, 1u, 2u, 3u, 4u));
  EXPECT_EQ(map.my_place().host_index, 3u);
  EXPECT_EQ(map.my_place().supernode_index, 3u);
  EXPECT_TRUE(map.SameHost(0, 4));
  EXPECT_TRUE(map.SameSupernode(1, 2));
  ExpectConsistent(map);
}

TEST(NodeMapTest, OneRankPerHost) {
  const std::vector<uint64_t> ids = {kC, kA, kB};
  const NodeMap map = NodeMap::Build(ids, 2, 0);
  EXPECT_EQ(map.host_count(), 3u);
  EXPECT_EQ(map.supernode_count(), 3u);
  for (Rank r = 0; r < 3; ++r) {
    // Ids are not sorted: host r is the one rank r is on.
    EXPECT_EQ(map.place(r).host, r);
    EXPECT_EQ(map.place(r).supernode, r);
    EXPECT_EQ(map.place(r).host_index, 0u);
    EXPECT_THAT(map.host_members(r), ElementsAre(r));
  }
  EXPECT_FALSE(map.SameHost(0, 1));
  EXPECT_FALSE(map.SameSupernode(1, 2));
  EXPECT_THAT(map.my_host_members(), ElementsAre(2u));
  ExpectConsistent(map);
}

TEST(NodeMapTest, InterleavedHostsAreNumberedByLowestRank) {
  // Ranks:     0  1  2  3  4
  // Host ids:  A  B  A  C  B
  const std::vector<uint64_t> ids = {kA, kB, kA, kC, kB};
  const NodeMap map = NodeMap::Build(ids, 4, 0);
  EXPECT_EQ(map.host_count(), 3u);
  EXPECT_EQ(map.supernode_count(), 3u);
  EXPECT_THAT(map.host_members(0), ElementsAre(0u, 2u));  // A
  EXPECT_THAT(map.host_members(1), ElementsAre(1u, 4u));  // B
  EXPECT_THAT(map.host_members(2), ElementsAre(3u));      // C
  EXPECT_THAT(map.supernode_members(0), ElementsAre(0u, 2u));
  EXPECT_THAT(map.supernode_members(1), ElementsAre(1u, 4u));
  EXPECT_THAT(map.supernode_members(2), ElementsAre(3u));
  EXPECT_EQ(map.place(2).host, 0u);
  EXPECT_EQ(map.place(2).host_index, 1u);
  EXPECT_EQ(map.place(3).host, 2u);
  EXPECT_EQ(map.my_place().host, 1u);
  EXPECT_EQ(map.my_place().host_index, 1u);
  EXPECT_THAT(map.my_host_members(), ElementsAre(1u, 4u));
  EXPECT_TRUE(map.SameHost(1, 4));
  EXPECT_FALSE(map.SameHost(2, 3));
  ExpectConsistent(map);
}

TEST(NodeMapTest, MaxSizeOneGivesOneSupernodePerRank) {
  const std::vector<uint64_t> ids(7, kA);
  const NodeMap map = NodeMap::Build(ids, 5, 1);
  EXPECT_EQ(map.host_count(), 1u);
  EXPECT_EQ(map.supernode_count(), 7u);
  for (Rank r = 0; r < 7; ++r) {
    EXPECT_THAT(map.supernode_members(r), ElementsAre(r));
    EXPECT_EQ(map.place(r).supernode_index, 0u);
    EXPECT_EQ(map.place(r).host_index, r);
  }
  EXPECT_TRUE(map.SameHost(0, 6));
  EXPECT_FALSE(map.SameSupernode(0, 1));
  ExpectConsistent(map);
}

TEST(NodeMapTest, MaxSizeTwoSplitsSevenIntoFourBalanced) {
  const std::vector<uint64_t> ids(7, kA);
  const NodeMap map = NodeMap::Build(ids, 0, 2);
  EXPECT_EQ(map.supernode_count(), 4u);
  EXPECT_THAT(SupernodeSizesOfHost(map, 0), ElementsAre(2u, 2u, 2u, 1u));
  EXPECT_THAT(map.supernode_members(0), ElementsAre(0u, 1u));
  EXPECT_THAT(map.supernode_members(3), ElementsAre(6u));
  ExpectConsistent(map);
}

TEST(NodeMapTest, MaxSizeThreeSplitsSevenAsThreeTwoTwo) {
  // Greedy filling would give 3, 3, 1; balanced sizes differ by at most 1.
  const std::vector<uint64_t> ids(7, kA);
  const NodeMap map = NodeMap::Build(ids, 4, 3);
  EXPECT_EQ(map.supernode_count(), 3u);
  EXPECT_THAT(map.supernode_members(0), ElementsAre(0u, 1u, 2u));
  EXPECT_THAT(map.supernode_members(1), ElementsAre(3u, 4u));
  EXPECT_THAT(map.supernode_members(2), ElementsAre(5u, 6u));
  EXPECT_EQ(map.my_place().supernode, 1u);
  EXPECT_EQ(map.my_place().supernode_index, 1u);
  EXPECT_EQ(map.my_place().host_index, 4u);
  EXPECT_THAT(map.my_supernode_members(), ElementsAre(3u, 4u));
  EXPECT_THAT(map.my_host_members(), ElementsAre(0u, 1u, 2u, 3u, 4u, 5u, 6u));
  EXPECT_TRUE(map.SameSupernode(3, 4));
  EXPECT_FALSE(map.SameSupernode(2, 3));
  ExpectConsistent(map);
}

TEST(NodeMapTest, MaxSizeLargerThanHostLeavesItWhole) {
  const std::vector<uint64_t> ids = {kA, kB, kA, kB, kA};
  const NodeMap map = NodeMap::Build(ids, 0, 100);
  EXPECT_EQ(map.host_count(), 2u);
  EXPECT_EQ(map.supernode_count(), 2u);
  EXPECT_THAT(map.supernode_members(0), ElementsAre(0u, 2u, 4u));
  EXPECT_THAT(map.supernode_members(1), ElementsAre(1u, 3u));
  ExpectConsistent(map);
}

TEST(NodeMapTest, HugeMaxSizeDoesNotOverflow) {
  const std::vector<uint64_t> ids(3, kA);
  const NodeMap map = NodeMap::Build(ids, 0, UINT32_MAX);
  EXPECT_EQ(map.supernode_count(), 1u);
  ExpectConsistent(map);
}

TEST(NodeMapTest, SupernodesAreNumberedByLowestRankAcrossHosts) {
  // Host A holds ranks 0 2 4 6, host B ranks 1 3 5. With a limit of 2:
  // A -> {0,2} {4,6}, B -> {1,3} {5}. By lowest rank: {0,2}=0, {1,3}=1,
  // {4,6}=2, {5}=3 (not host by host).
  const std::vector<uint64_t> ids = {kA, kB, kA, kB, kA, kB, kA};
  const NodeMap map = NodeMap::Build(ids, 5, 2);
  EXPECT_EQ(map.host_count(), 2u);
  ASSERT_EQ(map.supernode_count(), 4u);
  EXPECT_THAT(map.supernode_members(0), ElementsAre(0u, 2u));
  EXPECT_THAT(map.supernode_members(1), ElementsAre(1u, 3u));
  EXPECT_THAT(map.supernode_members(2), ElementsAre(4u, 6u));
  EXPECT_THAT(map.supernode_members(3), ElementsAre(5u));
  EXPECT_EQ(map.my_place().supernode, 3u);
  EXPECT_EQ(map.my_place().supernode_index, 0u);
  EXPECT_EQ(map.my_place().host_index, 2u);
  EXPECT_TRUE(map.SameHost(1, 5));
  EXPECT_FALSE(map.SameSupernode(1, 5));
  ExpectConsistent(map);
}

TEST(NodeMapTest, BalancedSizesForManyHostSizesAndLimits) {
  for (uint32_t ranks = 1; ranks <= 20; ++ranks) {
    for (uint32_t max = 0; max <= ranks + 1; ++max) {
      const std::vector<uint64_t> ids(ranks, kA);
      const NodeMap map = NodeMap::Build(ids, ranks - 1, max);
      const uint32_t expected_count = max == 0 ? 1 : (ranks + max - 1) / max;
      EXPECT_EQ(map.supernode_count(), expected_count)
          << ranks << " ranks, max " << max;
      const std::vector<size_t> sizes = SupernodeSizesOfHost(map, 0);
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (max != 0) {
          EXPECT_LE(sizes[i], max);
        }
        // Non-increasing, and the first and last differ by at most 1.
        if (i > 0) {
          EXPECT_LE(sizes[i], sizes[i - 1]);
        }
        EXPECT_LE(sizes[0] - sizes[i], 1u) << ranks << " ranks, max " << max;
      }
      ExpectConsistent(map);
    }
  }
}

using NodeMapDeathTest = ::testing::Test;

TEST_F(NodeMapDeathTest, OutOfRangeQueriesAreFatal) {
  const std::vector<uint64_t> ids = {kA, kB};
  const NodeMap map = NodeMap::Build(ids, 0, 0);
  EXPECT_DEATH(map.place(2), "rank 2 is out of range");
  EXPECT_DEATH(map.host_members(2), "host 2 is out of range");
  EXPECT_DEATH(map.supernode_members(5), "supernode 5 is out of range");
  EXPECT_DEATH(map.SameHost(0, 7), "rank 7 is out of range");
}

TEST_F(NodeMapDeathTest, BadBuildArgumentsAreFatal) {
  const std::vector<uint64_t> ids = {kA, kB};
  EXPECT_DEATH(NodeMap::Build(ids, 2, 0), "my rank 2 is out of range");
  EXPECT_DEATH(NodeMap::Build({}, 0, 0), "at least one rank");
}

// Sets (or, with nullptr, unsets) GASNET_SUPERNODE_MAXSIZE for one test and
// restores the previous value afterwards.
class ScopedMaxSize {
 public:
  explicit ScopedMaxSize(const char* value) {
    if (const char* old = getenv(kName)) {
      had_old_ = true;
      old_ = old;
    }
    if (value == nullptr) {
      unsetenv(kName);
    } else {
      setenv(kName, value, /*overwrite=*/1);
    }
  }
  ~ScopedMaxSize() {
    if (had_old_) {
      setenv(kName, old_.c_str(), 1);
    } else {
      unsetenv(kName);
    }
  }
  static constexpr const char* kName = "GASNET_SUPERNODE_MAXSIZE";

 private:
  bool had_old_ = false;
  std::string old_;
};

TEST(SupernodeMaxSizeFromEnvTest, UnsetMeansNoLimit) {
  ScopedMaxSize env(nullptr);
  EXPECT_EQ(SupernodeMaxSizeFromEnv(), 0u);
}

TEST(SupernodeMaxSizeFromEnvTest, ReadsTheValue) {
  {
    ScopedMaxSize env("0");
    EXPECT_EQ(SupernodeMaxSizeFromEnv(), 0u);
  }
  {
    ScopedMaxSize env("5");
    EXPECT_EQ(SupernodeMaxSizeFromEnv(), 5u);
  }
  {
    ScopedMaxSize env("1");
    EXPECT_EQ(SupernodeMaxSizeFromEnv(), 1u);
  }
}

TEST(SupernodeMaxSizeFromEnvDeathTest, GarbageIsFatalNamingTheVariable) {
  ScopedMaxSize env("lots");
  EXPECT_DEATH(SupernodeMaxSizeFromEnv(), "GASNET_SUPERNODE_MAXSIZE.*lots");
}

TEST(SupernodeMaxSizeFromEnvDeathTest, NegativeIsFatalNamingTheVariable) {
  ScopedMaxSize env("-2");
  EXPECT_DEATH(SupernodeMaxSizeFromEnv(), "GASNET_SUPERNODE_MAXSIZE.*-2");
}

// A job of `ids.size()` ranks seen from `rank`: Allgather records what this
// rank contributed and fills every other slot from `ids`.
class FakeBootstrap : public Bootstrap {
 public:
  FakeBootstrap(Rank rank, std::vector<uint64_t> ids)
      : rank_(rank), ids_(std::move(ids)) {}

  Rank rank() const override { return rank_; }
  Rank size() const override { return static_cast<Rank>(ids_.size()); }
  void Barrier() override {}
  void Allgather(const void* src, size_t len, void* dst) override {
    ++allgathers_;
    EXPECT_EQ(len, sizeof(uint64_t));
    std::memcpy(&contributed_, src, sizeof(uint64_t));
    auto* out = static_cast<unsigned char*>(dst);
    for (Rank r = 0; r < size(); ++r) {
      const uint64_t id = r == rank_ ? contributed_ : ids_[r];
      std::memcpy(out + r * len, &id, sizeof(id));
    }
  }
  void Alltoall(const void*, size_t, void*) override {
    ADD_FAILURE() << "unexpected Alltoall";
  }
  void Broadcast(const void*, size_t, void*, Rank) override {
    ADD_FAILURE() << "unexpected Broadcast";
  }
  [[noreturn]] void Abort(int exit_code, std::string_view reason) override {
    ADD_FAILURE() << "unexpected Abort: " << reason;
    std::abort();
  }
  void Fini() override {}

  int allgathers() const { return allgathers_; }
  uint64_t contributed() const { return contributed_; }

 private:
  Rank rank_;
  std::vector<uint64_t> ids_;
  int allgathers_ = 0;
  uint64_t contributed_ = 0;
};

TEST(DiscoverNodeMapTest, GathersHostIdsAndAppliesTheEnvLimit) {
  ScopedMaxSize env("2");
  const uint64_t here = HostId();
  const uint64_t elsewhere = here ^ 1;
  // Rank 1's slot (ours) is filled from what DiscoverNodeMap contributes.
  FakeBootstrap bootstrap(1, {here, /*ours*/ 0, elsewhere, here});
  const NodeMap map = DiscoverNodeMap(bootstrap);
  EXPECT_EQ(bootstrap.allgathers(), 1);
  EXPECT_EQ(bootstrap.contributed(), here);
  EXPECT_EQ(map.size(), 4u);
  EXPECT_EQ(map.my_rank(), 1u);
  EXPECT_EQ(map.host_count(), 2u);
  EXPECT_THAT(map.my_host_members(), ElementsAre(0u, 1u, 3u));
  // Host 0's three ranks under a limit of 2: {0,1} and {3}; rank 2's host
  // is {2}. Numbered by lowest rank: {0,1}=0, {2}=1, {3}=2.
  ASSERT_EQ(map.supernode_count(), 3u);
  EXPECT_THAT(map.my_supernode_members(), ElementsAre(0u, 1u));
  EXPECT_THAT(map.supernode_members(1), ElementsAre(2u));
  EXPECT_THAT(map.supernode_members(2), ElementsAre(3u));
  EXPECT_EQ(map.my_place().host_index, 1u);
  EXPECT_EQ(map.my_place().supernode_index, 1u);
  ExpectConsistent(map);
}

TEST(DiscoverNodeMapTest, SingletonJob) {
  ScopedMaxSize env(nullptr);
  FakeBootstrap bootstrap(0, {0});
  const NodeMap map = DiscoverNodeMap(bootstrap);
  EXPECT_EQ(bootstrap.contributed(), HostId());
  EXPECT_EQ(map.size(), 1u);
  EXPECT_EQ(map.host_count(), 1u);
  EXPECT_EQ(map.supernode_count(), 1u);
  // One rank never outnumbers the (at least one) CPU it may use.
  EXPECT_FALSE(map.MyHostIsOversubscribed());
}

TEST(NodeMapTest, OversubscribedWhenRanksOnMyHostOutnumberCpus) {
  // More ranks on one host than Linux supports CPUs (NR_CPUS <= 8192).
  const std::vector<uint64_t> many(16384, kA);
  EXPECT_TRUE(NodeMap::Build(many, 0, 0).MyHostIsOversubscribed());
  // Only my host counts: the ranks elsewhere do not compete for my CPUs.
  std::vector<uint64_t> mostly_elsewhere(16385, kB);
  mostly_elsewhere[0] = kA;
  EXPECT_FALSE(NodeMap::Build(mostly_elsewhere, 0, 0).MyHostIsOversubscribed());
}

TEST(FindNodeSplitAcrossHostsTest, NodesThatFollowHostsAreFine) {
  EXPECT_EQ(FindNodeSplitAcrossHosts({kA, kA, kB, kB}, {0, 0, 1, 1}),
            std::nullopt);
  EXPECT_EQ(FindNodeSplitAcrossHosts({}, {}), std::nullopt);
}

TEST(FindNodeSplitAcrossHostsTest, SeveralNodesOnOneHostAreFine) {
  // Two emulated nodes on one machine: one host id, two node ids.
  EXPECT_EQ(FindNodeSplitAcrossHosts({kA, kA, kA, kA}, {0, 0, 1, 1}),
            std::nullopt);
}

TEST(FindNodeSplitAcrossHostsTest, OneNodeOnTwoHostsNamesTwoRanks) {
  // Node 7 = ranks 1, 2, 4; rank 4 is on another host than rank 1.
  EXPECT_EQ(FindNodeSplitAcrossHosts({kA, kB, kB, kC, kC}, {3, 7, 7, 9, 7}),
            std::make_pair(Rank{1}, Rank{4}));
  // The lowest such rank is named, with its node's lowest rank.
  EXPECT_EQ(FindNodeSplitAcrossHosts({kA, kB, kC, kB}, {0, 1, 0, 1}),
            std::make_pair(Rank{0}, Rank{2}));
}

using FindNodeSplitAcrossHostsDeathTest = NodeMapDeathTest;

TEST_F(FindNodeSplitAcrossHostsDeathTest, LengthsMustAgree) {
  EXPECT_DEATH(FindNodeSplitAcrossHosts({kA, kA}, {0}),
               "2 host ids but 1 node ids");
}

// A bootstrap whose launcher names nodes. The record each rank contributes
// is opaque to the test, so every "rank" runs DiscoverNodeMap in turn, in
// one thread, writing its record into a shared table: after a first pass
// over all ranks the table is full, and the second pass sees every record.
class FakeNodeBootstrap : public Bootstrap, public LauncherNodeSource {
 public:
  FakeNodeBootstrap(Rank rank, std::vector<std::string>* table, size_t size,
                    std::optional<uint64_t> node, std::string node_name)
      : rank_(rank),
        table_(table),
        size_(size),
        node_(node),
        node_name_(std::move(node_name)) {}

  Rank rank() const override { return rank_; }
  Rank size() const override { return static_cast<Rank>(size_); }
  void Barrier() override {}
  void Allgather(const void* src, size_t len, void* dst) override {
    (*table_)[rank_].assign(static_cast<const char*>(src), len);
    auto* out = static_cast<char*>(dst);
    for (Rank r = 0; r < size(); ++r) {
      // A slot not contributed yet (the first pass) is left zero.
      if ((*table_)[r].size() == len) {
        std::memcpy(out + r * len, (*table_)[r].data(), len);
      } else {
        std::memset(out + r * len, 0, len);
      }
    }
  }
  void Alltoall(const void*, size_t, void*) override {
    ADD_FAILURE() << "unexpected Alltoall";
  }
  void Broadcast(const void*, size_t, void*, Rank) override {
    ADD_FAILURE() << "unexpected Broadcast";
  }
  [[noreturn]] void Abort(int exit_code, std::string_view reason) override {
    ADD_FAILURE() << "unexpected Abort: " << reason;
    std::abort();
  }
  void Fini() override {}

  std::optional<uint64_t> LauncherNodeId() const override { return node_; }
  std::string LauncherNodeName() const override { return node_name_; }
  std::string LauncherName() const override { return "fakerun"; }

 private:
  Rank rank_;
  std::vector<std::string>* table_;
  size_t size_;
  std::optional<uint64_t> node_;
  std::string node_name_;
};

// Every rank of a job on this machine (one host id), on the launcher's
// `nodes`; the map rank `me` sees once all have contributed.
NodeMap MapOnLauncherNodes(const std::vector<std::optional<uint64_t>>& nodes,
                           Rank me) {
  std::vector<std::string> table(nodes.size());
  for (int pass = 0; pass < 2; ++pass) {
    for (Rank r = 0; r < nodes.size(); ++r) {
      FakeNodeBootstrap b(r, &table, nodes.size(), nodes[r],
                          absl::StrCat("n", nodes[r].value_or(99)));
      if (pass == 1 && r == me) return DiscoverNodeMap(b);
      (void)DiscoverNodeMap(b);
    }
  }
  ADD_FAILURE() << "rank " << me << " out of range";
  std::abort();
}

TEST(DiscoverNodeMapTest, LauncherNodesBecomeHosts) {
  ScopedMaxSize env(nullptr);
  // Two emulated nodes on this machine: two hosts, two supernodes.
  const NodeMap map = MapOnLauncherNodes({0, 0, 1, 1}, 2);
  EXPECT_EQ(map.host_count(), 2u);
  EXPECT_EQ(map.supernode_count(), 2u);
  EXPECT_THAT(map.my_host_members(), ElementsAre(2u, 3u));
  EXPECT_FALSE(map.SameHost(1, 2));
  ExpectConsistent(map);
}

TEST(DiscoverNodeMapTest, OneLauncherNodeIsOneHost) {
  ScopedMaxSize env(nullptr);
  const NodeMap map = MapOnLauncherNodes({5, 5, 5}, 1);
  EXPECT_EQ(map.host_count(), 1u);
  EXPECT_THAT(map.my_host_members(), ElementsAre(0u, 1u, 2u));
}

TEST(DiscoverNodeMapTest, ARankWithoutANodeMeansHostIdsDecide) {
  ScopedMaxSize env(nullptr);
  const NodeMap map = MapOnLauncherNodes({0, std::nullopt, 1}, 0);
  EXPECT_EQ(map.host_count(), 1u);
}

TEST(NodeMapTest, OversubscriptionCountsEveryRankOnMyMachine) {
  // Two ranks more than this machine's CPUs, each on an emulated node of
  // its own: every host of the map holds one rank, yet they all compete
  // for these CPUs.
  const int cpus = OnlineCpuCount();
  std::vector<std::optional<uint64_t>> nodes;
  for (int i = 0; i < cpus + 2; ++i) nodes.push_back(i);
  const NodeMap map = MapOnLauncherNodes(nodes, 0);
  EXPECT_EQ(map.my_host_members().size(), 1u);
  EXPECT_EQ(map.ranks_on_my_machine(), static_cast<uint32_t>(cpus + 2));
  EXPECT_TRUE(map.MyHostIsOversubscribed());
  // Without emulation, one rank per host is not oversubscribed.
  std::vector<uint64_t> hosts;
  for (int i = 0; i < cpus + 2; ++i) hosts.push_back(kA + i);
  EXPECT_EQ(NodeMap::Build(hosts, 0, 0).ranks_on_my_machine(), 1u);
  EXPECT_FALSE(NodeMap::Build(hosts, 0, 0).MyHostIsOversubscribed());
}

}  // namespace
}  // namespace gexrt
