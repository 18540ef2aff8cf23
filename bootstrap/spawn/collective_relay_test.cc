#include "bootstrap/spawn/collective_relay.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "bootstrap/messages.h"
#include "bootstrap/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::spawn {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using wire::CollectiveDown;
using wire::CollectiveEntry;
using wire::CollectiveFailed;
using wire::CollectiveOp;
using wire::CollectiveUp;
using wire::MessageType;

const absl::Time kT0 = absl::FromUnixSeconds(1000000);

// ---------------------------------------------------------------------------
// A fake Outlet: every frame sent, decoded, per child and to the parent.

struct Frame {
  MessageType type = MessageType::kHello;
  CollectiveUp up;
  CollectiveDown down;
  CollectiveFailed failed;
  wire::CallReport report;
};

Frame DecodeFrame(const std::string& frame) {
  wire::FrameAssembler assembler;
  assembler.Append(frame);
  absl::StatusOr<std::optional<std::string>> next = assembler.Next();
  Frame out;
  if (!next.ok() || !next->has_value() || assembler.buffered() != 0) {
    ADD_FAILURE() << "the relay sent a malformed frame";
    return out;
  }
  const std::string& body = **next;
  out.type = wire::TypeOf(body);
  switch (out.type) {
    case MessageType::kCollectiveUp: {
      absl::StatusOr<CollectiveUp> m = wire::Decode<wire::CollectiveUp>(body);
      EXPECT_TRUE(m.ok()) << m.status();
      if (m.ok()) out.up = *m;
      break;
    }
    case MessageType::kCollectiveDown: {
      absl::StatusOr<CollectiveDown> m =
          wire::Decode<wire::CollectiveDown>(body);
      EXPECT_TRUE(m.ok()) << m.status();
      if (m.ok()) out.down = *m;
      break;
    }
    case MessageType::kCollectiveFailed: {
      absl::StatusOr<CollectiveFailed> m =
          wire::Decode<wire::CollectiveFailed>(body);
      EXPECT_TRUE(m.ok()) << m.status();
      if (m.ok()) out.failed = *m;
      break;
    }
    case MessageType::kCallReport: {
      absl::StatusOr<wire::CallReport> m = wire::Decode<wire::CallReport>(body);
      EXPECT_TRUE(m.ok()) << m.status();
      if (m.ok()) out.report = *m;
      break;
    }
    default:
      ADD_FAILURE() << "unexpected message type "
                    << wire::MessageTypeName(out.type);
  }
  return out;
}

struct Recorder {
  explicit Recorder(size_t children) : to_child(children) {}

  // With `ask`, the outlet has ask_calls and records each (child, seq).
  CollectiveRelay::Outlet Outlet(bool ask = false) {
    CollectiveRelay::Outlet outlet{
        [this](size_t child, const std::string& frame) {
          ASSERT_LT(child, to_child.size());
          to_child[child].push_back(DecodeFrame(frame));
        },
        [this](const std::string& frame) {
          to_parent.push_back(DecodeFrame(frame));
        },
        nullptr,
    };
    if (ask) {
      outlet.ask_calls = [this](size_t child, uint32_t seq) {
        asked.emplace_back(child, seq);
      };
    }
    return outlet;
  }
  size_t ChildFrames() const {
    size_t n = 0;
    for (const auto& frames : to_child) n += frames.size();
    return n;
  }
  void Clear() {
    for (auto& frames : to_child) frames.clear();
    to_parent.clear();
  }

  std::vector<std::vector<Frame>> to_child;
  std::vector<Frame> to_parent;
  std::vector<std::pair<size_t, uint32_t>> asked;
};

using EntryList = std::vector<std::pair<uint32_t, std::string>>;
EntryList Flatten(const std::vector<CollectiveEntry>& entries) {
  EntryList out;
  for (const CollectiveEntry& e : entries) out.emplace_back(e.rank, e.data);
  return out;
}

CollectiveUp Up(uint32_t seq, CollectiveOp op, uint64_t len, uint32_t root,
                std::vector<CollectiveEntry> entries) {
  CollectiveUp up;
  up.seq = seq;
  up.op = op;
  up.len = len;
  up.root = root;
  up.entries = std::move(entries);
  return up;
}

// A relay and its recorder.
struct Node {
  Node(Rank job_size, std::vector<std::vector<Rank>> children, bool is_root,
       absl::Duration timeout = absl::Seconds(300), bool ask_calls = false)
      : recorder(children.size()) {
    CollectiveRelay::Options options;
    options.job_size = job_size;
    options.children = std::move(children);
    options.is_root = is_root;
    options.timeout = timeout;
    relay = std::make_unique<CollectiveRelay>(std::move(options),
                                              recorder.Outlet(ask_calls));
  }
  Recorder recorder;
  std::unique_ptr<CollectiveRelay> relay;
};

// The root of a job of `n` ranks, each rank its own child.
std::unique_ptr<Node> FlatRoot(Rank n,
                               absl::Duration timeout = absl::Seconds(300)) {
  std::vector<std::vector<Rank>> children;
  for (Rank r = 0; r < n; ++r) children.push_back({r});
  return std::make_unique<Node>(n, std::move(children), true, timeout);
}

// The contributions of a 4-rank job to one collective of each kind, and
// the results each rank should get.
struct Scenario {
  std::string name;
  std::vector<CollectiveUp> ups;  // by rank
  std::vector<std::string> want;  // by rank
  bool uniform = true;
};

constexpr Rank kJob = 4;

// Rank i's block for rank j in the alltoall scenario.
std::string Block(Rank i, Rank j) {
  return {static_cast<char>('a' + i), static_cast<char>('0' + j), '\0'};
}

std::vector<Scenario> Scenarios(uint32_t seq = 0) {
  std::vector<Scenario> out;
  {
    Scenario s{"barrier", {}, {}, true};
    for (Rank r = 0; r < kJob; ++r) {
      s.ups.push_back(Up(seq, CollectiveOp::kBarrier, 0, 0, {{r, ""}}));
      s.want.push_back("");
    }
    out.push_back(s);
  }
  {
    Scenario s{"allgather", {}, {}, true};
    std::string all;
    for (Rank r = 0; r < kJob; ++r) {
      const std::string mine = {static_cast<char>('A' + r), '\0',
                                static_cast<char>(r * 50)};
      s.ups.push_back(Up(seq, CollectiveOp::kAllgather, 3, 0, {{r, mine}}));
      all += mine;
    }
    s.want.assign(kJob, all);
    out.push_back(s);
  }
  {
    Scenario s{"alltoall", {}, {}, false};
    for (Rank i = 0; i < kJob; ++i) {
      std::string mine;
      for (Rank j = 0; j < kJob; ++j) mine += Block(i, j);
      s.ups.push_back(Up(seq, CollectiveOp::kAlltoall, 3, 0, {{i, mine}}));
    }
    for (Rank j = 0; j < kJob; ++j) {
      std::string result;
      for (Rank i = 0; i < kJob; ++i) result += Block(i, j);
      s.want.push_back(result);
    }
    out.push_back(s);
  }
  {
    Scenario s{"broadcast", {}, {}, true};
    for (Rank r = 0; r < kJob; ++r) {
      s.ups.push_back(Up(seq, CollectiveOp::kBroadcast, 5, 2,
                         {{r, r == 2 ? std::string("he\0lo", 5) : ""}}));
    }
    s.want.assign(kJob, std::string("he\0lo", 5));
    out.push_back(s);
  }
  return out;
}

// Checks that every child of a flat root got exactly one result for `seq`
// and that it is right: uniform results the same for all, per-rank results
// only the child's own entry.
void ExpectResults(const Recorder& rec, const Scenario& s, uint32_t seq,
                   size_t frame_index = 0) {
  for (Rank c = 0; c < kJob; ++c) {
    SCOPED_TRACE(s.name + ", child " + std::to_string(c));
    ASSERT_GT(rec.to_child[c].size(), frame_index);
    const Frame& f = rec.to_child[c][frame_index];
    ASSERT_EQ(f.type, MessageType::kCollectiveDown);
    EXPECT_EQ(f.down.seq, seq);
    EXPECT_EQ(f.down.uniform, s.uniform);
    if (s.uniform) {
      EXPECT_EQ(f.down.data, s.want[c]);
    } else {
      EXPECT_EQ(Flatten(f.down.entries), (EntryList{{c, s.want[c]}}));
    }
  }
}

// ---------------------------------------------------------------------------
// The root, four single-rank children.

TEST(RootRelay, EveryCollectiveGivesTheRightResult) {
  for (const Scenario& s : Scenarios()) {
    SCOPED_TRACE(s.name);
    auto root = FlatRoot(kJob);
    for (Rank r = 0; r < kJob; ++r) {
      EXPECT_EQ(root->recorder.ChildFrames(), 0u) << "before rank " << r;
      ASSERT_TRUE(root->relay->OnUp(r, s.ups[r], kT0).ok());
      EXPECT_EQ(root->relay->pending(), r + 1 < kJob ? 1u : 0u);
    }
    ExpectResults(root->recorder, s, 0);
    for (Rank c = 0; c < kJob; ++c) {
      EXPECT_THAT(root->recorder.to_child[c], SizeIs(1));
    }
    EXPECT_THAT(root->recorder.to_parent, IsEmpty());
    EXPECT_EQ(root->relay->NextDeadline(), absl::InfiniteFuture());
  }
}

TEST(RootRelay, ContributionsInEveryOrder) {
  for (const Scenario& s : Scenarios()) {
    std::vector<Rank> order = {0, 1, 2, 3};
    int permutations = 0;
    do {
      SCOPED_TRACE(s.name + " in order " + std::to_string(order[0]) +
                   std::to_string(order[1]) + std::to_string(order[2]) +
                   std::to_string(order[3]));
      auto root = FlatRoot(kJob);
      for (size_t k = 0; k < order.size(); ++k) {
        EXPECT_EQ(root->recorder.ChildFrames(), 0u);
        ASSERT_TRUE(root->relay->OnUp(order[k], s.ups[order[k]], kT0).ok());
      }
      ExpectResults(root->recorder, s, 0);
      EXPECT_EQ(root->recorder.ChildFrames(), kJob);
      EXPECT_EQ(root->relay->pending(), 0u);
      ++permutations;
    } while (std::next_permutation(order.begin(), order.end()));
    EXPECT_EQ(permutations, 24);
  }
}

TEST(RootRelay, InterleavedCollectives) {
  // Seq 0 is an alltoall, seq 1 an allgather; ranks 0 and 1 are fast and
  // contribute to seq 1 before the slow ranks join seq 0.
  const Scenario s0 = Scenarios(0)[2];
  const Scenario s1 = Scenarios(1)[1];
  auto root = FlatRoot(kJob);
  Recorder& rec = root->recorder;
  ASSERT_TRUE(root->relay->OnUp(0, s0.ups[0], kT0).ok());
  ASSERT_TRUE(root->relay->OnUp(1, s0.ups[1], kT0).ok());
  ASSERT_TRUE(root->relay->OnUp(2, s0.ups[2], kT0).ok());
  ASSERT_TRUE(root->relay->OnUp(0, s1.ups[0], kT0).ok());  // fast rank 0
  EXPECT_EQ(root->relay->pending(), 2u);
  EXPECT_EQ(rec.ChildFrames(), 0u);
  ASSERT_TRUE(root->relay->OnUp(3, s0.ups[3], kT0).ok());  // slow rank 3
  EXPECT_EQ(root->relay->pending(), 1u);
  ExpectResults(rec, s0, 0);
  EXPECT_EQ(rec.ChildFrames(), kJob);
  ASSERT_TRUE(root->relay->OnUp(3, s1.ups[3], kT0).ok());
  ASSERT_TRUE(root->relay->OnUp(1, s1.ups[1], kT0).ok());
  EXPECT_EQ(rec.ChildFrames(), kJob);
  ASSERT_TRUE(root->relay->OnUp(2, s1.ups[2], kT0).ok());
  EXPECT_EQ(root->relay->pending(), 0u);
  ExpectResults(rec, s1, 1, /*frame_index=*/1);
  EXPECT_EQ(rec.ChildFrames(), 2 * kJob);
}

TEST(RootRelay, ManyCollectivesInARow) {
  auto root = FlatRoot(kJob);
  for (uint32_t seq = 0; seq < 20; ++seq) {
    const Scenario s = Scenarios(seq)[seq % 4];
    for (Rank r = kJob; r-- > 0;) {
      ASSERT_TRUE(root->relay->OnUp(r, s.ups[r], kT0).ok());
    }
    ExpectResults(root->recorder, s, seq, seq);
  }
  EXPECT_EQ(root->relay->pending(), 0u);
}

TEST(RootRelay, EmptyContributionIsIgnored) {
  auto root = FlatRoot(kJob);
  ASSERT_TRUE(
      root->relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {}), kT0).ok());
  EXPECT_EQ(root->relay->pending(), 0u);
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);
}

// ---------------------------------------------------------------------------
// A two-level tree: ranks 0-4; the root's children are rank 0 itself, agent
// A (ranks 1, 2) and agent B (ranks 3, 4); each agent has one child per rank.

struct Tree {
  Tree()
      : root(5, {{0}, {1, 2}, {3, 4}}, true),
        a(5, {{1}, {2}}, false),
        b(5, {{3}, {4}}, false) {}
  Node root;
  Node a;
  Node b;
};

TEST(TreeRelay, NonRootMergesAndSendsOneUpWhenComplete) {
  Tree t;
  const std::string two("\x22\x23", 2);
  ASSERT_TRUE(
      t.a.relay->OnUp(1, Up(7, CollectiveOp::kAllgather, 2, 0, {{2, two}}), kT0)
          .ok());
  EXPECT_THAT(t.a.recorder.to_parent, IsEmpty());
  EXPECT_EQ(t.a.relay->pending(), 1u);
  ASSERT_TRUE(t.a.relay
                  ->OnUp(0,
                         Up(7, CollectiveOp::kAllgather, 2, 0,
                            {{1, std::string("\x11\x12", 2)}}),
                         kT0)
                  .ok());
  ASSERT_THAT(t.a.recorder.to_parent, SizeIs(1));
  EXPECT_EQ(t.a.recorder.ChildFrames(), 0u);
  EXPECT_EQ(t.a.relay->pending(), 0u);
  const Frame& f = t.a.recorder.to_parent[0];
  ASSERT_EQ(f.type, MessageType::kCollectiveUp);
  EXPECT_EQ(f.up.seq, 7u);
  EXPECT_EQ(f.up.op, CollectiveOp::kAllgather);
  EXPECT_EQ(f.up.len, 2u);
  EXPECT_EQ(f.up.root, 0u);
  EXPECT_EQ(Flatten(f.up.entries),
            (EntryList{{1, std::string("\x11\x12", 2)}, {2, two}}));
}

TEST(TreeRelay, AlltoallEndToEnd) {
  Tree t;
  constexpr Rank n = 5;
  constexpr uint64_t len = 2;
  auto block = [](Rank i, Rank j) {
    return std::string{static_cast<char>('a' + i), static_cast<char>('0' + j)};
  };
  auto up = [&](Rank i) {
    std::string data;
    for (Rank j = 0; j < n; ++j) data += block(i, j);
    return Up(0, CollectiveOp::kAlltoall, len, 0, {{i, data}});
  };
  // Leaves to agents.
  ASSERT_TRUE(t.b.relay->OnUp(1, up(4), kT0).ok());
  ASSERT_TRUE(t.a.relay->OnUp(0, up(1), kT0).ok());
  ASSERT_TRUE(t.root.relay->OnUp(0, up(0), kT0).ok());
  ASSERT_TRUE(t.a.relay->OnUp(1, up(2), kT0).ok());
  ASSERT_TRUE(t.b.relay->OnUp(0, up(3), kT0).ok());
  // Agents to the root.
  ASSERT_THAT(t.a.recorder.to_parent, SizeIs(1));
  ASSERT_THAT(t.b.recorder.to_parent, SizeIs(1));
  ASSERT_TRUE(t.root.relay->OnUp(2, t.b.recorder.to_parent[0].up, kT0).ok());
  EXPECT_EQ(t.root.recorder.ChildFrames(), 0u);
  ASSERT_TRUE(t.root.relay->OnUp(1, t.a.recorder.to_parent[0].up, kT0).ok());
  EXPECT_EQ(t.root.relay->pending(), 0u);

  auto want = [&](Rank j) {
    std::string out;
    for (Rank i = 0; i < n; ++i) out += block(i, j);
    return out;
  };
  // The root sends each child only its ranks' entries.
  const auto& rc = t.root.recorder.to_child;
  ASSERT_THAT(rc[0], SizeIs(1));
  ASSERT_THAT(rc[1], SizeIs(1));
  ASSERT_THAT(rc[2], SizeIs(1));
  EXPECT_FALSE(rc[0][0].down.uniform);
  EXPECT_EQ(Flatten(rc[0][0].down.entries), (EntryList{{0, want(0)}}));
  EXPECT_EQ(Flatten(rc[1][0].down.entries),
            (EntryList{{1, want(1)}, {2, want(2)}}));
  EXPECT_EQ(Flatten(rc[2][0].down.entries),
            (EntryList{{3, want(3)}, {4, want(4)}}));

  // Each agent splits its part between its children.
  t.a.relay->OnDown(rc[1][0].down);
  t.b.relay->OnDown(rc[2][0].down);
  const auto& ac = t.a.recorder.to_child;
  const auto& bc = t.b.recorder.to_child;
  ASSERT_THAT(ac[0], SizeIs(1));
  ASSERT_THAT(ac[1], SizeIs(1));
  ASSERT_THAT(bc[0], SizeIs(1));
  ASSERT_THAT(bc[1], SizeIs(1));
  for (const Frame* f : {&ac[0][0], &ac[1][0], &bc[0][0], &bc[1][0]}) {
    EXPECT_EQ(f->type, MessageType::kCollectiveDown);
    EXPECT_EQ(f->down.seq, 0u);
    EXPECT_FALSE(f->down.uniform);
  }
  EXPECT_EQ(Flatten(ac[0][0].down.entries), (EntryList{{1, want(1)}}));
  EXPECT_EQ(Flatten(ac[1][0].down.entries), (EntryList{{2, want(2)}}));
  EXPECT_EQ(Flatten(bc[0][0].down.entries), (EntryList{{3, want(3)}}));
  EXPECT_EQ(Flatten(bc[1][0].down.entries), (EntryList{{4, want(4)}}));
}

TEST(TreeRelay, OnDownFiltersEntriesAndForwardsUniformResults) {
  Node a(6, {{1}, {2, 4}}, false);
  CollectiveDown per_rank;
  per_rank.seq = 3;
  per_rank.uniform = false;
  // Entries for ranks not below this node (0, 5) are dropped.
  per_rank.entries = {{0, "r0"}, {1, "r1"}, {2, "r2"}, {4, "r4"}, {5, "r5"}};
  a.relay->OnDown(per_rank);
  ASSERT_THAT(a.recorder.to_child[0], SizeIs(1));
  ASSERT_THAT(a.recorder.to_child[1], SizeIs(1));
  EXPECT_EQ(a.recorder.to_child[0][0].down.seq, 3u);
  EXPECT_EQ(Flatten(a.recorder.to_child[0][0].down.entries),
            (EntryList{{1, "r1"}}));
  EXPECT_EQ(Flatten(a.recorder.to_child[1][0].down.entries),
            (EntryList{{2, "r2"}, {4, "r4"}}));

  CollectiveDown uniform;
  uniform.seq = 4;
  uniform.data = std::string("x\0y", 3);
  a.relay->OnDown(uniform);
  for (size_t c = 0; c < 2; ++c) {
    ASSERT_THAT(a.recorder.to_child[c], SizeIs(2));
    const Frame& f = a.recorder.to_child[c][1];
    EXPECT_EQ(f.type, MessageType::kCollectiveDown);
    EXPECT_EQ(f.down.seq, 4u);
    EXPECT_TRUE(f.down.uniform);
    EXPECT_EQ(f.down.data, std::string("x\0y", 3));
  }
  EXPECT_THAT(a.recorder.to_parent, IsEmpty());
}

TEST(TreeRelay, OnDownClearsThePendingState) {
  Tree t;
  ASSERT_TRUE(
      t.a.relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}}), kT0)
          .ok());
  EXPECT_EQ(t.a.relay->pending(), 1u);
  CollectiveDown down;
  down.seq = 0;
  t.a.relay->OnDown(down);
  EXPECT_EQ(t.a.relay->pending(), 0u);
  EXPECT_EQ(t.a.relay->NextDeadline(), absl::InfiniteFuture());
}

// ---------------------------------------------------------------------------
// Disagreements and protocol errors.

// Every child of `node` got exactly one CollectiveFailed for `seq`; returns
// its reason (the same for all).
std::string ExpectFailedToEveryChild(const Recorder& rec, uint32_t seq) {
  std::string reason;
  for (size_t c = 0; c < rec.to_child.size(); ++c) {
    SCOPED_TRACE("child " + std::to_string(c));
    EXPECT_THAT(rec.to_child[c], SizeIs(1));
    if (rec.to_child[c].empty()) continue;
    const Frame& f = rec.to_child[c].back();
    EXPECT_EQ(f.type, MessageType::kCollectiveFailed);
    EXPECT_EQ(f.failed.seq, seq);
    if (c == 0) reason = f.failed.reason;
    EXPECT_EQ(f.failed.reason, reason);
  }
  return reason;
}

TEST(RelayErrors, MismatchedOperation) {
  auto root = FlatRoot(kJob);
  ASSERT_TRUE(
      root->relay->OnUp(1, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}}), kT0)
          .ok());
  ASSERT_TRUE(
      root->relay
          ->OnUp(3, Up(0, CollectiveOp::kAllgather, 4, 0, {{3, "abcd"}}), kT0)
          .ok());
  const std::string reason = ExpectFailedToEveryChild(root->recorder, 0);
  EXPECT_THAT(reason, AllOf(HasSubstr("rank 1"), HasSubstr("rank 3"),
                            HasSubstr("barrier"), HasSubstr("allgather")));
  EXPECT_EQ(root->relay->pending(), 0u);
  EXPECT_EQ(root->relay->NextDeadline(), absl::InfiniteFuture());
}

TEST(RelayErrors, MismatchedLength) {
  auto root = FlatRoot(kJob);
  ASSERT_TRUE(
      root->relay
          ->OnUp(2, Up(5, CollectiveOp::kAllgather, 4, 0, {{2, "abcd"}}), kT0)
          .ok());
  ASSERT_TRUE(
      root->relay
          ->OnUp(0, Up(5, CollectiveOp::kAllgather, 8, 0, {{0, "abcdefgh"}}),
                 kT0)
          .ok());
  const std::string reason = ExpectFailedToEveryChild(root->recorder, 5);
  EXPECT_THAT(reason, AllOf(HasSubstr("rank 2"), HasSubstr("rank 0"),
                            HasSubstr("4 bytes"), HasSubstr("8 bytes")));
  EXPECT_EQ(root->relay->pending(), 0u);
}

TEST(RelayErrors, MismatchedBroadcastRoot) {
  auto root = FlatRoot(kJob);
  // Rank 1 says the root is rank 0, rank 3 says it is rank 2.
  ASSERT_TRUE(
      root->relay
          ->OnUp(1, Up(0, CollectiveOp::kBroadcast, 4, 0, {{1, ""}}), kT0)
          .ok());
  ASSERT_TRUE(
      root->relay
          ->OnUp(3, Up(0, CollectiveOp::kBroadcast, 4, 2, {{3, ""}}), kT0)
          .ok());
  const std::string reason = ExpectFailedToEveryChild(root->recorder, 0);
  EXPECT_THAT(reason, AllOf(HasSubstr("rank 1"), HasSubstr("rank 3"),
                            HasSubstr("broadcast")));
  EXPECT_EQ(root->relay->pending(), 0u);
}

TEST(RelayErrors, RootIsIgnoredExceptForBroadcast) {
  auto root = FlatRoot(kJob);
  for (Rank r = 0; r < kJob; ++r) {
    ASSERT_TRUE(
        root->relay
            ->OnUp(r, Up(0, CollectiveOp::kBarrier, 0, r, {{r, ""}}), kT0)
            .ok());
  }
  ASSERT_THAT(root->recorder.to_child[0], SizeIs(1));
  EXPECT_EQ(root->recorder.to_child[0][0].type, MessageType::kCollectiveDown);
}

TEST(RelayErrors, MismatchAtANonRootGoesUp) {
  Tree t;
  ASSERT_TRUE(
      t.a.relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}}), kT0)
          .ok());
  ASSERT_TRUE(
      t.a.relay->OnUp(1, Up(0, CollectiveOp::kAllgather, 1, 0, {{2, "x"}}), kT0)
          .ok());
  ASSERT_THAT(t.a.recorder.to_parent, SizeIs(1));
  const Frame& f = t.a.recorder.to_parent[0];
  EXPECT_EQ(f.type, MessageType::kCollectiveFailed);
  EXPECT_EQ(f.failed.seq, 0u);
  EXPECT_THAT(f.failed.reason, AllOf(HasSubstr("rank 1"), HasSubstr("rank 2")));
  EXPECT_EQ(t.a.recorder.ChildFrames(), 0u);
  EXPECT_EQ(t.a.relay->pending(), 0u);

  // The root hears, and tells everyone.
  t.root.relay->OnFailedFromChild(f.failed);
  EXPECT_EQ(ExpectFailedToEveryChild(t.root.recorder, 0), f.failed.reason);
}

TEST(RelayErrors, WrongDataSize) {
  struct Case {
    std::string name;
    CollectiveUp first;
    CollectiveUp bad;
  };
  const std::vector<Case> cases = {
      {"allgather short", Up(0, CollectiveOp::kAllgather, 4, 0, {{0, "abcd"}}),
       Up(0, CollectiveOp::kAllgather, 4, 0, {{1, "abc"}})},
      {"allgather long", Up(0, CollectiveOp::kAllgather, 4, 0, {{0, "abcd"}}),
       Up(0, CollectiveOp::kAllgather, 4, 0, {{1, "abcde"}})},
      {"alltoall len instead of len*n",
       Up(0, CollectiveOp::kAlltoall, 2, 0, {{0, std::string(8, 'x')}}),
       Up(0, CollectiveOp::kAlltoall, 2, 0, {{1, "xy"}})},
      {"barrier with data", Up(0, CollectiveOp::kBarrier, 0, 0, {{0, ""}}),
       Up(0, CollectiveOp::kBarrier, 0, 0, {{1, "x"}})},
      {"broadcast non-root with data",
       Up(0, CollectiveOp::kBroadcast, 3, 0, {{0, "abc"}}),
       Up(0, CollectiveOp::kBroadcast, 3, 0, {{1, "abc"}})},
      {"broadcast root short", Up(0, CollectiveOp::kBroadcast, 3, 1, {{0, ""}}),
       Up(0, CollectiveOp::kBroadcast, 3, 1, {{1, "ab"}})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto root = FlatRoot(kJob);
    ASSERT_TRUE(root->relay->OnUp(0, c.first, kT0).ok());
    EXPECT_EQ(root->recorder.ChildFrames(), 0u);
    ASSERT_TRUE(root->relay->OnUp(1, c.bad, kT0).ok());
    const std::string reason = ExpectFailedToEveryChild(root->recorder, 0);
    EXPECT_THAT(reason, HasSubstr("rank 1"));
    EXPECT_EQ(root->relay->pending(), 0u);
  }
  // The first contribution can be the wrong size too.
  auto root = FlatRoot(kJob);
  ASSERT_TRUE(
      root->relay
          ->OnUp(2, Up(0, CollectiveOp::kAllgather, 4, 0, {{2, "ab"}}), kT0)
          .ok());
  EXPECT_THAT(ExpectFailedToEveryChild(root->recorder, 0), HasSubstr("rank 2"));
}

TEST(RelayErrors, RankNotBelowTheChild) {
  auto root = FlatRoot(kJob);
  absl::Status s =
      root->relay->OnUp(1, Up(0, CollectiveOp::kBarrier, 0, 0, {{2, ""}}), kT0);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank 2"));
  // A rank outside the job.
  s = root->relay->OnUp(1, Up(0, CollectiveOp::kBarrier, 0, 0, {{4, ""}}), kT0);
  EXPECT_FALSE(s.ok());
  s = root->relay->OnUp(
      1, Up(0, CollectiveOp::kBarrier, 0, 0, {{0xffffffffu, ""}}), kT0);
  EXPECT_FALSE(s.ok());
  // One good entry and one bad: nothing is taken.
  s = root->relay->OnUp(
      1, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}, {3, ""}}), kT0);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(root->relay->pending(), 0u);
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);
}

TEST(RelayErrors, RankNotBelowNamesTheChildAsDescribed) {
  CollectiveRelay::Options options;
  options.job_size = 4;
  options.children = {{0, 1}, {2, 3}};
  options.describe_child = [](size_t c) {
    return "host n" + std::to_string(c + 1);
  };
  Recorder rec(2);
  CollectiveRelay relay(std::move(options), rec.Outlet());
  const absl::Status s =
      relay.OnUp(1, Up(0, CollectiveOp::kBarrier, 0, 0, {{0, ""}}), kT0);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("rank 0"), HasSubstr("host n2")));
}

TEST(RelayErrors, DuplicateContribution) {
  auto root = FlatRoot(kJob);
  ASSERT_TRUE(
      root->relay->OnUp(1, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}}), kT0)
          .ok());
  const absl::Status s =
      root->relay->OnUp(1, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}}), kT0);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank 1"));
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);

  // Within one merged contribution.
  Node a(4, {{0, 1}, {2, 3}}, false);
  const absl::Status s2 = a.relay->OnUp(
      0, Up(0, CollectiveOp::kBarrier, 0, 0, {{0, ""}, {0, ""}}), kT0);
  EXPECT_FALSE(s2.ok());
  EXPECT_THAT(a.recorder.to_parent, IsEmpty());
}

TEST(RelayErrors, BroadcastRootOutsideTheJob) {
  for (Rank bad_root : {kJob, kJob + 1, Rank{0xffffffff}}) {
    auto root = FlatRoot(kJob);
    ASSERT_TRUE(
        root->relay
            ->OnUp(1, Up(0, CollectiveOp::kBroadcast, 2, bad_root, {{1, ""}}),
                   kT0)
            .ok());
    const std::string reason = ExpectFailedToEveryChild(root->recorder, 0);
    EXPECT_THAT(reason, AllOf(HasSubstr("rank 1"),
                              HasSubstr(std::to_string(bad_root))));
    EXPECT_EQ(root->relay->pending(), 0u);
  }
}

TEST(RelayErrors, AlltoallLengthTimesJobSizeOverflow) {
  // len * job_size must not wrap around to a size the empty contributions
  // match.
  auto root = FlatRoot(2);
  const uint64_t len = uint64_t{1} << 63;
  ASSERT_TRUE(
      root->relay
          ->OnUp(0, Up(0, CollectiveOp::kAlltoall, len, 0, {{0, ""}}), kT0)
          .ok());
  ASSERT_TRUE(
      root->relay
          ->OnUp(1, Up(0, CollectiveOp::kAlltoall, len, 0, {{1, ""}}), kT0)
          .ok());
  ASSERT_THAT(root->recorder.to_child[0], SizeIs(1));
  EXPECT_EQ(root->recorder.to_child[0][0].type, MessageType::kCollectiveFailed);
}

TEST(RelayErrors, LateContributionsToAFailedCollectiveAreIgnored) {
  auto root = FlatRoot(kJob);
  ASSERT_TRUE(
      root->relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{0, ""}}), kT0)
          .ok());
  ASSERT_TRUE(
      root->relay
          ->OnUp(1, Up(0, CollectiveOp::kAllgather, 1, 0, {{1, "x"}}), kT0)
          .ok());
  EXPECT_EQ(root->recorder.ChildFrames(), kJob);
  for (Rank r = 0; r < kJob; ++r) {
    EXPECT_TRUE(
        root->relay
            ->OnUp(r, Up(0, CollectiveOp::kBarrier, 0, 0, {{r, ""}}), kT0)
            .ok());
  }
  EXPECT_EQ(root->recorder.ChildFrames(), kJob);
  EXPECT_EQ(root->relay->pending(), 0u);
  // The next collective is unaffected.
  for (Rank r = 0; r < kJob; ++r) {
    ASSERT_TRUE(
        root->relay
            ->OnUp(r, Up(1, CollectiveOp::kBarrier, 0, 0, {{r, ""}}), kT0)
            .ok());
  }
  for (Rank c = 0; c < kJob; ++c) {
    ASSERT_THAT(root->recorder.to_child[c], SizeIs(2));
    EXPECT_EQ(root->recorder.to_child[c][1].type, MessageType::kCollectiveDown);
    EXPECT_EQ(root->recorder.to_child[c][1].down.seq, 1u);
  }
}

// ---------------------------------------------------------------------------
// Departed ranks.

TEST(RankGone, FailsThePendingCollectiveAtTheRoot) {
  auto root = FlatRoot(kJob);
  ASSERT_TRUE(
      root->relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{0, ""}}), kT0)
          .ok());
  ASSERT_TRUE(
      root->relay->OnUp(1, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}}), kT0)
          .ok());
  root->relay->OnRankGone(2, "exited with status 3");
  const std::string reason = ExpectFailedToEveryChild(root->recorder, 0);
  EXPECT_THAT(reason,
              AllOf(HasSubstr("rank 2"), HasSubstr("exited with status 3")));
  EXPECT_EQ(root->relay->pending(), 0u);
  EXPECT_EQ(root->relay->NextDeadline(), absl::InfiniteFuture());

  // A later collective fails on its first contribution.
  root->recorder.Clear();
  ASSERT_TRUE(
      root->relay->OnUp(3, Up(1, CollectiveOp::kBarrier, 0, 0, {{3, ""}}), kT0)
          .ok());
  EXPECT_THAT(ExpectFailedToEveryChild(root->recorder, 1),
              AllOf(HasSubstr("rank 2"), HasSubstr("exited with status 3")));
  EXPECT_EQ(root->relay->pending(), 0u);
}

TEST(RankGone, AfterContributingDoesNotFailThatCollective) {
  auto root = FlatRoot(kJob);
  for (Rank r = 0; r < 3; ++r) {
    ASSERT_TRUE(
        root->relay
            ->OnUp(r, Up(0, CollectiveOp::kBarrier, 0, 0, {{r, ""}}), kT0)
            .ok());
  }
  root->relay->OnRankGone(0, "called gasnet_exit");
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);
  EXPECT_EQ(root->relay->pending(), 1u);
  ASSERT_TRUE(
      root->relay->OnUp(3, Up(0, CollectiveOp::kBarrier, 0, 0, {{3, ""}}), kT0)
          .ok());
  ASSERT_THAT(root->recorder.to_child[3], SizeIs(1));
  EXPECT_EQ(root->recorder.to_child[3][0].type, MessageType::kCollectiveDown);
}

TEST(RankGone, IdleRelaySendsNothingUntilTheNextCollective) {
  auto root = FlatRoot(kJob);
  root->relay->OnRankGone(1, "exited");
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);
  // Twice is the same as once.
  root->relay->OnRankGone(1, "exited");
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);
  ASSERT_TRUE(
      root->relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{0, ""}}), kT0)
          .ok());
  EXPECT_THAT(ExpectFailedToEveryChild(root->recorder, 0), HasSubstr("rank 1"));
}

TEST(RankGone, AtANonRootTheFailureGoesUp) {
  Tree t;
  ASSERT_TRUE(
      t.a.relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}}), kT0)
          .ok());
  t.a.relay->OnRankGone(2, "was killed by signal 9");
  ASSERT_THAT(t.a.recorder.to_parent, SizeIs(1));
  const Frame& f = t.a.recorder.to_parent[0];
  EXPECT_EQ(f.type, MessageType::kCollectiveFailed);
  EXPECT_EQ(f.failed.seq, 0u);
  EXPECT_THAT(f.failed.reason,
              AllOf(HasSubstr("rank 2"), HasSubstr("was killed by signal 9")));
  EXPECT_EQ(t.a.recorder.ChildFrames(), 0u);
  EXPECT_EQ(t.a.relay->pending(), 0u);

  // A later collective fails at once, upwards.
  ASSERT_TRUE(
      t.a.relay->OnUp(0, Up(1, CollectiveOp::kBarrier, 0, 0, {{1, ""}}), kT0)
          .ok());
  ASSERT_THAT(t.a.recorder.to_parent, SizeIs(2));
  EXPECT_EQ(t.a.recorder.to_parent[1].type, MessageType::kCollectiveFailed);
  EXPECT_EQ(t.a.recorder.to_parent[1].failed.seq, 1u);
  EXPECT_THAT(t.a.recorder.to_parent[1].failed.reason, HasSubstr("rank 2"));
  EXPECT_EQ(t.a.relay->pending(), 0u);
  EXPECT_EQ(t.a.recorder.ChildFrames(), 0u);
}

TEST(RankGone, RankNotBelowThisNodeIsIgnored) {
  Tree t;
  ASSERT_TRUE(
      t.a.relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}}), kT0)
          .ok());
  t.a.relay->OnRankGone(3, "exited");
  t.a.relay->OnRankGone(99, "exited");
  EXPECT_THAT(t.a.recorder.to_parent, IsEmpty());
  EXPECT_EQ(t.a.relay->pending(), 1u);
}

// ---------------------------------------------------------------------------
// Timeouts.

TEST(Timeouts, TickBeforeTheDeadlineDoesNothingAfterItFails) {
  auto root = FlatRoot(6, absl::Seconds(10));
  ASSERT_TRUE(
      root->relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{0, ""}}), kT0)
          .ok());
  ASSERT_TRUE(root->relay
                  ->OnUp(2, Up(0, CollectiveOp::kBarrier, 0, 0, {{2, ""}}),
                         kT0 + absl::Seconds(3))
                  .ok());
  // The deadline counts from the first contribution.
  EXPECT_EQ(root->relay->NextDeadline(), kT0 + absl::Seconds(10));
  root->relay->OnTick(kT0);
  root->relay->OnTick(kT0 + absl::Seconds(9));
  root->relay->OnTick(kT0 + absl::Seconds(10) - absl::Nanoseconds(1));
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);
  EXPECT_EQ(root->relay->pending(), 1u);

  root->relay->OnTick(kT0 + absl::Seconds(10));
  EXPECT_EQ(root->recorder.to_child.size(), 6u);
  const std::string reason = ExpectFailedToEveryChild(root->recorder, 0);
  EXPECT_THAT(reason, AllOf(HasSubstr("rank(s) 1, 3-5"),
                            HasSubstr("GASNET_BOOTSTRAP_TIMEOUT"),
                            HasSubstr("barrier")));
  EXPECT_EQ(root->relay->pending(), 0u);
  EXPECT_EQ(root->relay->NextDeadline(), absl::InfiniteFuture());

  // Nothing more on later ticks; late contributions are dropped.
  root->relay->OnTick(kT0 + absl::Seconds(100));
  ASSERT_TRUE(root->relay
                  ->OnUp(1, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}}),
                         kT0 + absl::Seconds(101))
                  .ok());
  EXPECT_EQ(root->recorder.ChildFrames(), 6u);
  EXPECT_EQ(root->relay->pending(), 0u);
}

TEST(Timeouts, MissingRanksAsRanges) {
  struct Case {
    std::vector<Rank> present;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{1, 2, 3, 4, 5, 6, 7}, "rank(s) 0 did"},
      {{0, 1, 2, 3, 4, 5, 6}, "rank(s) 7 did"},
      {{0}, "rank(s) 1-7 did"},
      {{7}, "rank(s) 0-6 did"},
      {{0, 2, 4, 6}, "rank(s) 1, 3, 5, 7 did"},
      {{3, 4}, "rank(s) 0-2, 5-7 did"},
  };
  for (const Case& c : cases) {
    auto root = FlatRoot(8, absl::Seconds(1));
    for (Rank r : c.present) {
      ASSERT_TRUE(
          root->relay
              ->OnUp(r, Up(0, CollectiveOp::kBarrier, 0, 0, {{r, ""}}), kT0)
              .ok());
    }
    root->relay->OnTick(kT0 + absl::Seconds(1));
    EXPECT_THAT(ExpectFailedToEveryChild(root->recorder, 0), HasSubstr(c.want));
  }
}

TEST(Timeouts, AtANonRootOnlyThisSubtreesRanksAreNamedAndTheFailureGoesUp) {
  Node a(8, {{2}, {3}, {5}}, false, absl::Seconds(30));
  ASSERT_TRUE(
      a.relay->OnUp(1, Up(4, CollectiveOp::kBarrier, 0, 0, {{3, ""}}), kT0)
          .ok());
  a.relay->OnTick(kT0 + absl::Seconds(30));
  ASSERT_THAT(a.recorder.to_parent, SizeIs(1));
  EXPECT_EQ(a.recorder.to_parent[0].failed.seq, 4u);
  EXPECT_THAT(a.recorder.to_parent[0].failed.reason,
              AllOf(HasSubstr("rank(s) 2, 5 did"),
                    HasSubstr("GASNET_BOOTSTRAP_TIMEOUT")));
  EXPECT_EQ(a.recorder.ChildFrames(), 0u);
  EXPECT_EQ(a.relay->pending(), 0u);
}

TEST(Timeouts, NextDeadline) {
  auto root = FlatRoot(kJob, absl::Seconds(10));
  EXPECT_EQ(root->relay->NextDeadline(), absl::InfiniteFuture());
  ASSERT_TRUE(root->relay
                  ->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{0, ""}}),
                         kT0 + absl::Seconds(5))
                  .ok());
  EXPECT_EQ(root->relay->NextDeadline(), kT0 + absl::Seconds(15));
  ASSERT_TRUE(root->relay
                  ->OnUp(0, Up(1, CollectiveOp::kBarrier, 0, 0, {{0, ""}}),
                         kT0 + absl::Seconds(7))
                  .ok());
  EXPECT_EQ(root->relay->NextDeadline(), kT0 + absl::Seconds(15));
  // Later contributions do not move a deadline.
  ASSERT_TRUE(root->relay
                  ->OnUp(1, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}}),
                         kT0 + absl::Seconds(8))
                  .ok());
  EXPECT_EQ(root->relay->NextDeadline(), kT0 + absl::Seconds(15));
  // Seq 0 completes: seq 1's deadline is next.
  for (Rank r : {2, 3}) {
    ASSERT_TRUE(root->relay
                    ->OnUp(r, Up(0, CollectiveOp::kBarrier, 0, 0, {{r, ""}}),
                           kT0 + absl::Seconds(9))
                    .ok());
  }
  EXPECT_EQ(root->relay->pending(), 1u);
  EXPECT_EQ(root->relay->NextDeadline(), kT0 + absl::Seconds(17));
  // Ticking at seq 0's old deadline does nothing.
  root->recorder.Clear();
  root->relay->OnTick(kT0 + absl::Seconds(16));
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);
  root->relay->OnTick(kT0 + absl::Seconds(17));
  EXPECT_EQ(ExpectFailedToEveryChild(root->recorder, 1).empty(), false);
  EXPECT_EQ(root->relay->NextDeadline(), absl::InfiniteFuture());
}

TEST(Timeouts, SeveralExpireAtOneTick) {
  auto root = FlatRoot(2, absl::Seconds(1));
  ASSERT_TRUE(
      root->relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{0, ""}}), kT0)
          .ok());
  ASSERT_TRUE(
      root->relay->OnUp(0, Up(1, CollectiveOp::kBarrier, 0, 0, {{0, ""}}), kT0)
          .ok());
  root->relay->OnTick(kT0 + absl::Seconds(2));
  EXPECT_EQ(root->relay->pending(), 0u);
  for (size_t c = 0; c < 2; ++c) {
    ASSERT_THAT(root->recorder.to_child[c], SizeIs(2));
    EXPECT_EQ(root->recorder.to_child[c][0].failed.seq, 0u);
    EXPECT_EQ(root->recorder.to_child[c][1].failed.seq, 1u);
  }
}

// ---------------------------------------------------------------------------
// Failures passed along the tree.

TEST(FailurePropagation, FromParentGoesToEveryChildAndDropsThePendingState) {
  Tree t;
  ASSERT_TRUE(
      t.a.relay->OnUp(0, Up(2, CollectiveOp::kBarrier, 0, 0, {{1, ""}}), kT0)
          .ok());
  t.a.relay->OnFailedFromParent(CollectiveFailed{2, "rank 4 timed out"});
  EXPECT_EQ(ExpectFailedToEveryChild(t.a.recorder, 2), "rank 4 timed out");
  EXPECT_EQ(t.a.relay->pending(), 0u);
  EXPECT_EQ(t.a.relay->NextDeadline(), absl::InfiniteFuture());
  EXPECT_THAT(t.a.recorder.to_parent, IsEmpty());
  // A late contribution to seq 2 goes nowhere.
  ASSERT_TRUE(
      t.a.relay->OnUp(1, Up(2, CollectiveOp::kBarrier, 0, 0, {{2, ""}}), kT0)
          .ok());
  EXPECT_THAT(t.a.recorder.to_parent, IsEmpty());
  EXPECT_EQ(t.a.relay->pending(), 0u);
  EXPECT_EQ(t.a.recorder.ChildFrames(), 2u);
}

TEST(FailurePropagation, FromParentWithNothingPending) {
  Tree t;
  t.b.relay->OnFailedFromParent(CollectiveFailed{0, "why"});
  EXPECT_EQ(ExpectFailedToEveryChild(t.b.recorder, 0), "why");
}

TEST(FailurePropagation, FromChildAtTheRootBroadcastsOnce) {
  Tree t;
  ASSERT_TRUE(
      t.root.relay->OnUp(0, Up(3, CollectiveOp::kBarrier, 0, 0, {{0, ""}}), kT0)
          .ok());
  t.root.relay->OnFailedFromChild(CollectiveFailed{3, "rank 2 exited"});
  EXPECT_EQ(ExpectFailedToEveryChild(t.root.recorder, 3), "rank 2 exited");
  EXPECT_EQ(t.root.relay->pending(), 0u);
  EXPECT_THAT(t.root.recorder.to_parent, IsEmpty());
  // The same failure from another child is not sent again.
  t.root.relay->OnFailedFromChild(CollectiveFailed{3, "rank 4 exited"});
  EXPECT_EQ(t.root.recorder.ChildFrames(), 3u);
  // Nor do late contributions revive it.
  ASSERT_TRUE(
      t.root.relay
          ->OnUp(2, Up(3, CollectiveOp::kBarrier, 0, 0, {{3, ""}, {4, ""}}),
                 kT0)
          .ok());
  EXPECT_EQ(t.root.relay->pending(), 0u);
  EXPECT_EQ(t.root.recorder.ChildFrames(), 3u);
}

TEST(FailurePropagation, FromChildAtANonRootGoesUp) {
  Tree t;
  ASSERT_TRUE(
      t.a.relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{1, ""}}), kT0)
          .ok());
  t.a.relay->OnFailedFromChild(CollectiveFailed{0, "deeper trouble"});
  ASSERT_THAT(t.a.recorder.to_parent, SizeIs(1));
  EXPECT_EQ(t.a.recorder.to_parent[0].type, MessageType::kCollectiveFailed);
  EXPECT_EQ(t.a.recorder.to_parent[0].failed.seq, 0u);
  EXPECT_EQ(t.a.recorder.to_parent[0].failed.reason, "deeper trouble");
  EXPECT_EQ(t.a.recorder.ChildFrames(), 0u);
  EXPECT_EQ(t.a.relay->pending(), 0u);
}

TEST(FailurePropagation, RankGoneEndToEnd) {
  // Rank 4 exits while ranks 0-3 wait in a barrier: agent B fails it
  // upwards, the root tells everyone, and the agents pass it down.
  Tree t;
  ASSERT_TRUE(
      t.root.relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{0, ""}}), kT0)
          .ok());
  for (Rank r : {1, 2}) {
    ASSERT_TRUE(
        t.a.relay
            ->OnUp(r - 1, Up(0, CollectiveOp::kBarrier, 0, 0, {{r, ""}}), kT0)
            .ok());
  }
  ASSERT_THAT(t.a.recorder.to_parent, SizeIs(1));
  ASSERT_TRUE(t.root.relay->OnUp(1, t.a.recorder.to_parent[0].up, kT0).ok());
  ASSERT_TRUE(
      t.b.relay->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{3, ""}}), kT0)
          .ok());
  t.b.relay->OnRankGone(4, "exited with status 1");
  t.root.relay->OnRankGone(4, "exited with status 1");
  // The root failed it directly; B's report is a duplicate.
  const std::string reason = ExpectFailedToEveryChild(t.root.recorder, 0);
  EXPECT_THAT(reason, HasSubstr("rank 4"));
  ASSERT_THAT(t.b.recorder.to_parent, SizeIs(1));
  t.root.relay->OnFailedFromChild(t.b.recorder.to_parent[0].failed);
  EXPECT_EQ(t.root.recorder.ChildFrames(), 3u);
  t.a.relay->OnFailedFromParent(t.root.recorder.to_child[1][0].failed);
  t.b.relay->OnFailedFromParent(t.root.recorder.to_child[2][0].failed);
  EXPECT_EQ(ExpectFailedToEveryChild(t.a.recorder, 0), reason);
  EXPECT_EQ(ExpectFailedToEveryChild(t.b.recorder, 0), reason);
  EXPECT_EQ(t.b.relay->pending(), 0u);
}

// ---------------------------------------------------------------------------
// Calls: a timeout names the GASNet call of every rank (issue 24, item 9).

// Ranks 0 and 2 join a barrier from gex_Segment_Attach; 1 and 3 do not.
std::unique_ptr<Node> TimedOutBarrier() {
  std::vector<std::vector<Rank>> children = {{0}, {1}, {2}, {3}};
  auto root = std::make_unique<Node>(4, std::move(children), true,
                                     absl::Seconds(10), /*ask_calls=*/true);
  for (Rank r : {0u, 2u}) {
    EXPECT_TRUE(root->relay
                    ->OnUp(r,
                           Up(3, CollectiveOp::kAllgather, 1, 0,
                              {{r, "x", "gex_Segment_Attach"}}),
                           kT0)
                    .ok());
  }
  return root;
}

TEST(Calls, ATimeoutAsksTheLateRanksFirst) {
  auto root = TimedOutBarrier();
  root->relay->OnTick(kT0 + absl::Seconds(10));
  EXPECT_THAT(root->recorder.asked, ElementsAre(std::make_pair(size_t{1}, 3u),
                                                std::make_pair(size_t{3}, 3u)));
  // Not failed yet: the answers have a grace period.
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);
  EXPECT_EQ(root->relay->pending(), 1u);
  EXPECT_EQ(root->relay->NextDeadline(), kT0 + absl::Seconds(11));
}

TEST(Calls, TheFailureNamesBothSidesCallsOnceAllAnswered) {
  auto root = TimedOutBarrier();
  root->relay->OnTick(kT0 + absl::Seconds(10));
  root->relay->OnCallReport({1, "gasnet_barrier_wait"});
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);
  root->relay->OnCallReport({3, ""});
  const std::string reason = ExpectFailedToEveryChild(root->recorder, 3);
  EXPECT_THAT(reason,
              AllOf(HasSubstr("bootstrap allgather #3 timed out"),
                    HasSubstr("rank(s) 1, 3 did not join"),
                    HasSubstr("rank(s) 0, 2 joined it from gex_Segment_Attach"),
                    HasSubstr("rank(s) 1 are in gasnet_barrier_wait"),
                    HasSubstr("rank(s) 3 are in no GASNet call")));
}

TEST(Calls, RanksThatDoNotAnswerAreNamedAtTheGraceDeadline) {
  auto root = TimedOutBarrier();
  root->relay->OnTick(kT0 + absl::Seconds(10));
  root->relay->OnCallReport({1, "gex_Coll_BarrierBlocking"});
  root->relay->OnTick(kT0 + absl::Seconds(11) - absl::Nanoseconds(1));
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);
  root->relay->OnTick(kT0 + absl::Seconds(11));
  const std::string reason = ExpectFailedToEveryChild(root->recorder, 3);
  EXPECT_THAT(reason,
              AllOf(HasSubstr("rank(s) 1 are in gex_Coll_BarrierBlocking"),
                    HasSubstr("rank(s) 3 did not say which call")));
}

TEST(Calls, AnAnswerFromBeforeTheQueryDoesNotCount) {
  auto root = TimedOutBarrier();
  root->relay->OnCallReport({1, "stale"});
  root->relay->OnTick(kT0 + absl::Seconds(10));
  root->relay->OnCallReport({3, "gasnet_barrier"});
  EXPECT_EQ(root->recorder.ChildFrames(), 0u);  // rank 1 not answered yet
}

TEST(Calls, WithoutAskCallsATimeoutFailsAtOnce) {
  auto root = FlatRoot(2, absl::Seconds(5));
  ASSERT_TRUE(root->relay
                  ->OnUp(0,
                         Up(0, CollectiveOp::kBarrier, 0, 0,
                            {{0, "", "gex_Client_Init"}}),
                         kT0)
                  .ok());
  root->relay->OnTick(kT0 + absl::Seconds(5));
  EXPECT_THAT(ExpectFailedToEveryChild(root->recorder, 0),
              AllOf(HasSubstr("rank(s) 1 did not join"),
                    HasSubstr("rank(s) 0 joined it from gex_Client_Init"),
                    HasSubstr("rank(s) 1 did not say")));
}

TEST(Calls, AnAgentPassesReportsUpAndAsksForTheRanksItHolds) {
  // An agent with ranks 4 and 5 (children 0 and 1); rank 4 joined seq 2.
  Node agent(8, {{4}, {5}}, false, absl::Seconds(300), /*ask_calls=*/true);
  ASSERT_TRUE(agent.relay
                  ->OnUp(0,
                         Up(2, CollectiveOp::kBarrier, 0, 0,
                            {{4, "", "gasnet_attach"}}),
                         kT0)
                  .ok());
  agent.relay->OnCallQuery(2);
  EXPECT_THAT(agent.recorder.asked, ElementsAre(std::make_pair(size_t{1}, 2u)));
  // A collective the agent has seen nothing of: every rank is asked.
  agent.recorder.asked.clear();
  agent.relay->OnCallQuery(7);
  EXPECT_THAT(agent.recorder.asked, ElementsAre(std::make_pair(size_t{0}, 7u),
                                                std::make_pair(size_t{1}, 7u)));
  agent.relay->OnCallReport({5, "gasnet_barrier_wait"});
  ASSERT_THAT(agent.recorder.to_parent, SizeIs(1));
  EXPECT_EQ(agent.recorder.to_parent[0].type, MessageType::kCallReport);
  EXPECT_EQ(agent.recorder.to_parent[0].report.rank, 5u);
  EXPECT_EQ(agent.recorder.to_parent[0].report.call, "gasnet_barrier_wait");
  // A report for a rank not below the agent is dropped.
  agent.relay->OnCallReport({1, "x"});
  EXPECT_THAT(agent.recorder.to_parent, SizeIs(1));
}

TEST(Calls, AnAgentsMergedContributionKeepsEachRanksCall) {
  Node agent(8, {{4}, {5}}, false);
  ASSERT_TRUE(
      agent.relay
          ->OnUp(0, Up(0, CollectiveOp::kBarrier, 0, 0, {{4, "", "a"}}), kT0)
          .ok());
  ASSERT_TRUE(
      agent.relay
          ->OnUp(1, Up(0, CollectiveOp::kBarrier, 0, 0, {{5, "", "b"}}), kT0)
          .ok());
  ASSERT_THAT(agent.recorder.to_parent, SizeIs(1));
  const auto& entries = agent.recorder.to_parent[0].up.entries;
  ASSERT_THAT(entries, SizeIs(2));
  EXPECT_EQ(entries[0].call, "a");
  EXPECT_EQ(entries[1].call, "b");
}

TEST(Calls, AMismatchNamesBothCalls) {
  auto root = FlatRoot(2);
  ASSERT_TRUE(root->relay
                  ->OnUp(0,
                         Up(0, CollectiveOp::kAllgather, 8, 0,
                            {{0, std::string(8, 'x'), "gex_Segment_Attach"}}),
                         kT0)
                  .ok());
  ASSERT_TRUE(root->relay
                  ->OnUp(1,
                         Up(0, CollectiveOp::kBarrier, 0, 0,
                            {{1, "", "gasnet_barrier"}}),
                         kT0)
                  .ok());
  EXPECT_THAT(ExpectFailedToEveryChild(root->recorder, 0),
              AllOf(HasSubstr("(from gex_Segment_Attach)"),
                    HasSubstr("(from gasnet_barrier)")));
}

}  // namespace
}  // namespace gexrt::spawn
