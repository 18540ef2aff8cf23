#include "firehose/remote_cache.h"

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "firehose/fake_pinner.h"
#include "firehose/local_cache.h"
#include "firehose/move.h"
#include "firehose/move_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::firehose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using State = RemoteCache::State;

constexpr size_t kBucket = 4096;
constexpr uintptr_t kBase = 0x20000000;

uintptr_t Bucket(size_t i) { return kBase + i * kBucket; }

RemoteLimits Limits(size_t max_buckets, size_t max_regions,
                    size_t victim_buckets, size_t victim_regions,
                    size_t region_buckets = 4) {
  RemoteLimits limits;
  limits.bucket_size = kBucket;
  limits.max_region_size = region_buckets * kBucket;
  limits.max_bytes_per_peer = max_buckets * kBucket;
  limits.max_regions_per_peer = max_regions;
  limits.max_victim_bytes_per_peer = victim_buckets * kBucket;
  limits.max_victim_regions_per_peer = victim_regions;
  return limits;
}

// Keeps every move; the test answers them.
class RecordingSender : public MoveSender {
 public:
  void SendMove(uint32_t peer, MoveRequest request) override {
    sent.emplace_back(peer, std::move(request));
  }
  std::vector<std::pair<uint32_t, MoveRequest>> sent;
};

class RemoteCacheTest : public ::testing::Test {
 protected:
  void Make(const RemoteLimits& limits, uint32_t peers = 2) {
    absl::StatusOr<std::unique_ptr<RemoteCache>> cache =
        RemoteCache::Create(limits, peers, &sender_);
    ASSERT_TRUE(cache.ok()) << cache.status();
    cache_ = *std::move(cache);
  }
  RemoteCache::Hold Get(uint32_t peer, uintptr_t addr, size_t length) {
    absl::StatusOr<RemoteCache::Hold> hold =
        cache_->Acquire(peer, addr, length);
    EXPECT_TRUE(hold.ok()) << hold.status();
    return hold.ok() ? *hold : RemoteCache::Hold();
  }
  // Answers the last move with `key`.
  void Answer(uint64_t key) {
    ASSERT_FALSE(sender_.sent.empty());
    const auto& [peer, request] = sender_.sent.back();
    ASSERT_TRUE(cache_->CompleteMove(peer, request.ticket, key).ok());
  }
  // A ready hold: acquire, answer the move with `key`.
  RemoteCache::Hold GetReady(uint32_t peer, uintptr_t addr, size_t length,
                             uint64_t key) {
    RemoteCache::Hold hold = Get(peer, addr, length);
    if (hold.state() == State::kPending) Answer(key);
    EXPECT_TRUE(hold.ready());
    return hold;
  }

  RecordingSender sender_;
  std::unique_ptr<RemoteCache> cache_;
};

TEST_F(RemoteCacheTest, AMissSendsOneMoveAndLaterRequestsHit) {
  Make(Limits(16, 16, 16, 16));
  RemoteCache::Hold a = Get(1, Bucket(3) + 10, 100);
  EXPECT_EQ(a.state(), State::kPending);
  ASSERT_EQ(sender_.sent.size(), 1u);
  EXPECT_EQ(sender_.sent[0].first, 1u);
  const MoveRequest& move = sender_.sent[0].second;
  EXPECT_NE(move.ticket, 0u);
  EXPECT_EQ(move.base, Bucket(3));
  EXPECT_EQ(move.length, kBucket);
  EXPECT_THAT(move.releases, IsEmpty());
  // A second request for the same bucket joins the pending move.
  RemoteCache::Hold b = Get(1, Bucket(3) + 2000, 50);
  EXPECT_EQ(sender_.sent.size(), 1u);
  ASSERT_TRUE(cache_->CompleteMove(1, move.ticket, 77).ok());
  EXPECT_TRUE(a.ready());
  EXPECT_TRUE(b.ready());
  EXPECT_EQ(a.remote_key(), 77u);
  EXPECT_EQ(a.registration().base, Bucket(3));
  cache_->Release(a);
  cache_->Release(b);
  // A victim, found again without a move.
  RemoteCache::Hold c = Get(1, Bucket(3), kBucket);
  EXPECT_TRUE(c.ready());
  EXPECT_EQ(c.remote_key(), 77u);
  EXPECT_EQ(sender_.sent.size(), 1u);
  cache_->Release(c);
  const RemoteCache::Stats stats = cache_->stats();
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.moves, 1u);
}

TEST_F(RemoteCacheTest, EachPeerHasItsOwnBucketsAndLimits) {
  Make(Limits(2, 2, 2, 2, 1), 3);
  RemoteCache::Hold p0a = GetReady(0, Bucket(0), 1, 100);
  RemoteCache::Hold p0b = GetReady(0, Bucket(1), 1, 101);
  // The same address at another peer is another pinning.
  RemoteCache::Hold p1a = GetReady(1, Bucket(0), 1, 200);
  EXPECT_EQ(p1a.remote_key(), 200u);
  EXPECT_EQ(p0a.remote_key(), 100u);
  // Peer 0 is full of held regions; peer 2 is not.
  absl::StatusOr<RemoteCache::Hold> full = cache_->Acquire(0, Bucket(5), 1);
  EXPECT_TRUE(absl::IsUnavailable(full.status())) << full.status();
  EXPECT_THAT(full.status().message(), HasSubstr("peer 0"));
  RemoteCache::Hold p2 = GetReady(2, Bucket(5), 1, 300);
  for (const RemoteCache::Hold& h : {p0a, p0b, p1a, p2}) cache_->Release(h);
  absl::StatusOr<RemoteCache::Hold> bad = cache_->Acquire(3, Bucket(0), 1);
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
}

TEST_F(RemoteCacheTest, EvictedVictimsRideOnTheNextMoveOldestFirst) {
  Make(Limits(2, 2, 2, 2, 1));
  RemoteCache::Hold a = GetReady(1, Bucket(0), 1, 10);
  RemoteCache::Hold b = GetReady(1, Bucket(1), 1, 11);
  const uint64_t a_ticket = sender_.sent[0].second.ticket;
  const uint64_t b_ticket = sender_.sent[1].second.ticket;
  cache_->Release(a);
  cache_->Release(b);
  RemoteCache::Hold c = GetReady(1, Bucket(2), 1, 12);
  EXPECT_THAT(sender_.sent.back().second.releases, ElementsAre(a_ticket));
  cache_->Release(c);
  // a again: a new move (a was given up), which gives up b.
  RemoteCache::Hold a2 = GetReady(1, Bucket(0), 1, 13);
  EXPECT_EQ(sender_.sent.size(), 4u);
  EXPECT_THAT(sender_.sent.back().second.releases, ElementsAre(b_ticket));
  EXPECT_EQ(a2.remote_key(), 13u);
  cache_->Release(a2);
  EXPECT_THAT(cache_->TakeReleases(1), IsEmpty());
}

TEST_F(RemoteCacheTest, VictimBoundsDropTheOldestAndOweTheirRelease) {
  Make(Limits(8, 8, 8, 1, 1));
  RemoteCache::Hold a = GetReady(0, Bucket(0), 1, 1);
  RemoteCache::Hold b = GetReady(0, Bucket(1), 1, 2);
  const uint64_t a_ticket = sender_.sent[0].second.ticket;
  cache_->Release(a);
  cache_->Release(b);
  EXPECT_EQ(cache_->stats().victim_regions, 1u);
  EXPECT_THAT(cache_->TakeReleases(0), ElementsAre(a_ticket));
  EXPECT_THAT(cache_->TakeReleases(0), IsEmpty());
}

TEST_F(RemoteCacheTest, AFailedMoveReachesEveryHolderAndIsForgotten) {
  Make(Limits(8, 8, 8, 8));
  RemoteCache::Hold a = Get(1, Bucket(0), 1);
  RemoteCache::Hold b = Get(1, Bucket(0), 1);
  const uint64_t ticket = sender_.sent[0].second.ticket;
  ASSERT_TRUE(
      cache_->CompleteMove(1, ticket, absl::ResourceExhaustedError("no MRs"))
          .ok());
  EXPECT_EQ(a.state(), State::kFailed);
  EXPECT_EQ(b.failure().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(b.failure().message(), HasSubstr("peer 1 could not pin"));
  EXPECT_THAT(b.failure().message(), HasSubstr("no MRs"));
  // A new request does not find the failed region: it moves again.
  RemoteCache::Hold c = Get(1, Bucket(0), 1);
  EXPECT_EQ(sender_.sent.size(), 2u);
  // Nothing was pinned, so nothing is released.
  EXPECT_THAT(sender_.sent.back().second.releases, IsEmpty());
  cache_->Release(a);
  cache_->Release(b);
  Answer(5);
  cache_->Release(c);
  EXPECT_EQ(cache_->stats().failed_moves, 1u);
  EXPECT_EQ(cache_->stats().regions, 1u);
  // A second answer, or one for a move never sent, is refused.
  EXPECT_TRUE(absl::IsNotFound(cache_->CompleteMove(1, ticket, 9)));
}

TEST_F(RemoteCacheTest, APeerWithNoRoomGetsEveryVictimBack) {
  Make(Limits(8, 8, 8, 8));
  cache_->Release(GetReady(0, Bucket(0), 1, 1));
  cache_->Release(GetReady(0, Bucket(1), 1, 2));
  cache_->Release(GetReady(1, Bucket(0), 1, 3));
  const uint64_t t0 = sender_.sent[0].second.ticket;
  const uint64_t t1 = sender_.sent[1].second.ticket;
  RemoteCache::Hold c = Get(0, Bucket(5), 1);
  ASSERT_TRUE(cache_
                  ->CompleteMove(0, sender_.sent.back().second.ticket,
                                 absl::UnavailableError("full"))
                  .ok());
  cache_->Release(c);
  EXPECT_THAT(cache_->TakeReleases(0), ElementsAre(t0, t1));
  // Other peers' victims stay.
  EXPECT_THAT(cache_->TakeReleases(1), IsEmpty());
  EXPECT_EQ(cache_->stats().victim_regions, 1u);
}

TEST_F(RemoteCacheTest, AMoveAnsweredAfterItsHoldersLeftBecomesAVictim) {
  Make(Limits(8, 8, 8, 8));
  cache_->Release(Get(0, Bucket(0), 1));
  EXPECT_EQ(cache_->stats().regions, 1u);
  Answer(3);
  EXPECT_EQ(cache_->stats().victim_regions, 1u);
  RemoteCache::Hold again = Get(0, Bucket(0), 1);
  EXPECT_TRUE(again.ready());
  EXPECT_EQ(again.remote_key(), 3u);
  cache_->Release(again);
}

TEST_F(RemoteCacheTest, APendingRegionIsNeverEvictedOrMerged) {
  Make(Limits(2, 2, 2, 2, 2));
  // Pending with no holder: not a victim, so it still takes room.
  cache_->Release(Get(0, Bucket(0), 1));
  RemoteCache::Hold b = Get(0, Bucket(1), 1);
  absl::StatusOr<RemoteCache::Hold> c = cache_->Acquire(0, Bucket(2), 1);
  EXPECT_TRUE(absl::IsUnavailable(c.status())) << c.status();
  for (const auto& [peer, request] : sender_.sent) {
    ASSERT_TRUE(cache_->CompleteMove(peer, request.ticket, 1).ok());
  }
  cache_->Release(b);
}

TEST_F(RemoteCacheTest, OverlyLargeRequestsFailAtOnce) {
  Make(Limits(2, 2, 2, 2, 4));
  EXPECT_TRUE(absl::IsResourceExhausted(
      cache_->Acquire(0, Bucket(0), 3 * kBucket).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(cache_->Acquire(0, Bucket(0), 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      cache_->Acquire(0, Bucket(0) + 1, 4 * kBucket).status()));
  EXPECT_EQ(cache_->Acquirable(Bucket(0) + 1, 8 * kBucket), 4 * kBucket - 1);
  EXPECT_THAT(sender_.sent, IsEmpty());
}

// ---------------------------------------------------------------------------
// End to end: a requester's RemoteCache against peers' MoveServers and
// local caches, over a loopback "network" that delivers moves and answers
// when the requester polls.

class Loopback : public MoveSender {
 public:
  Loopback(uint32_t peers, const LocalLimits& local) {
    for (uint32_t i = 0; i < peers; ++i) {
      auto node = std::make_unique<Node>();
      node->cache = *LocalCache::Create(local, &node->pinner);
      node->server = std::make_unique<MoveServer>(node->cache.get());
      nodes.push_back(std::move(node));
    }
  }
  ~Loopback() override {
    for (auto& node : nodes) {
      node->server.reset();
      node->cache.reset();
    }
  }

  void SendMove(uint32_t peer, MoveRequest request) override {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(peer, std::move(request));
  }

  // Delivers every queued move and its answer (what a conduit's poll does).
  void Poll() {
    std::deque<std::pair<uint32_t, MoveRequest>> work;
    {
      std::lock_guard<std::mutex> lock(mu_);
      work.swap(queue_);
    }
    for (auto& [peer, request] : work) {
      Node& node = *nodes[peer];
      absl::StatusOr<Registration> r = node.server->Serve(0, request);
      // After the releases, the requester's holdings at this peer are
      // within its per-peer limit.
      if (node.server->held(0) > max_held) max_held = node.server->held(0);
      if (request.ticket == 0) continue;
      absl::Status done = requester->CompleteMove(
          peer, request.ticket,
          r.ok() ? absl::StatusOr<uint64_t>(r->remote_key)
                 : absl::StatusOr<uint64_t>(r.status()));
      if (!done.ok()) ++errors;
    }
    std::this_thread::yield();
  }

  struct Node {
    FakePinner pinner;
    std::unique_ptr<LocalCache> cache;
    std::unique_ptr<MoveServer> server;
  };
  std::vector<std::unique_ptr<Node>> nodes;
  RemoteCache* requester = nullptr;
  std::atomic<size_t> max_held{0};
  std::atomic<int> errors{0};

 private:
  std::mutex mu_;
  std::deque<std::pair<uint32_t, MoveRequest>> queue_;
};

LocalLimits PeerLimits(size_t buckets, size_t regions) {
  LocalLimits limits;
  limits.bucket_size = kBucket;
  limits.max_region_size = 4 * kBucket;
  limits.max_pinned_bytes = buckets * kBucket;
  limits.max_pinned_regions = regions;
  limits.max_victim_bytes = buckets * kBucket;
  limits.max_victim_regions = regions;
  return limits;
}

TEST(RemoteEndToEndTest, RemoteKeysAreLiveRegistrationsAtThePeer) {
  Loopback net(2, PeerLimits(64, 64));
  const RemoteLimits limits = Limits(8, 4, 8, 4, 4);
  std::unique_ptr<RemoteCache> cache = *RemoteCache::Create(limits, 2, &net);
  net.requester = cache.get();
  auto poll = [&] { net.Poll(); };
  // Walk far more memory at peer 1 than the per-peer limit allows.
  std::vector<uint64_t> old_keys;
  for (size_t i = 0; i < 64; ++i) {
    const uintptr_t addr = Bucket(3 * i) + 100;
    absl::StatusOr<RemoteCache::Hold> hold =
        cache->AcquireReady(1, addr, 2 * kBucket, poll);
    ASSERT_TRUE(hold.ok()) << hold.status();
    // The device would accept an access with this key...
    ASSERT_TRUE(net.nodes[1]->pinner.CoversRemote(hold->remote_key(), addr,
                                                  2 * kBucket));
    old_keys.push_back(hold->remote_key());
    cache->Release(*hold);
  }
  // ...but not with a key whose pinning was given up and carried back by
  // a later move (it would catch a stale key).
  net.Poll();
  EXPECT_FALSE(net.nodes[1]->pinner.CoversRemote(old_keys[0], Bucket(0) + 100,
                                                 2 * kBucket));
  EXPECT_LE(net.max_held.load(), limits.max_regions_per_peer);
  EXPECT_LE(net.nodes[1]->cache->stats().pinned_regions -
                net.nodes[1]->cache->stats().victim_regions,
            limits.max_regions_per_peer);
  EXPECT_EQ(net.nodes[0]->pinner.pins(), 0u);
  EXPECT_EQ(net.errors.load(), 0);
  EXPECT_EQ(net.nodes[1]->server->unknown_releases(), 0u);
  cache.reset();
}

TEST(RemoteEndToEndTest, APeerWithNoRoomIsAskedAgain) {
  Loopback net(1, PeerLimits(1, 1));
  // Within the peer's limits, as the settings make it (remote_cache.h).
  std::unique_ptr<RemoteCache> cache =
      *RemoteCache::Create(Limits(1, 1, 1, 1, 1), 1, &net);
  net.requester = cache.get();
  // The peer's own operation holds its only pinnable bucket.
  LocalCache& peer_cache = *net.nodes[0]->cache;
  absl::StatusOr<LocalCache::Hold> local = peer_cache.TryAcquire(Bucket(40), 1);
  ASSERT_TRUE(local.ok());
  int polls = 0;
  absl::StatusOr<RemoteCache::Hold> hold =
      cache->AcquireReady(0, Bucket(0), 1, [&] {
        net.Poll();
        if (++polls == 4) peer_cache.Release(*local);
      });
  ASSERT_TRUE(hold.ok()) << hold.status();
  EXPECT_GE(polls, 4);
  EXPECT_GE(cache->stats().failed_moves, 1u);
  EXPECT_TRUE(
      net.nodes[0]->pinner.CoversRemote(hold->remote_key(), Bucket(0), 1));
  cache->Release(*hold);
  // Other failures are returned.
  net.nodes[0]->pinner.FailNextPins(1, absl::PermissionDeniedError("mlock"));
  absl::StatusOr<RemoteCache::Hold> denied =
      cache->AcquireReady(0, Bucket(9), 1, [&] { net.Poll(); });
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(denied.status().message(), HasSubstr("mlock"));
}

// Threads acquiring remote regions at several peers at once, each also
// polling the shared loopback network.
TEST(RemoteEndToEndTest, ThreadsShareTheRemoteCache) {
  constexpr uint32_t kPeers = 3;
  const LocalLimits peer_limits = PeerLimits(16, 8);
  Loopback net(kPeers, peer_limits);
  const RemoteLimits limits = Limits(12, 6, 8, 4, 4);
  std::unique_ptr<RemoteCache> cache =
      *RemoteCache::Create(limits, kPeers, &net);
  net.requester = cache.get();
  constexpr int kThreads = 4;
  constexpr int kIterations = 1500;
  std::atomic<int> bad{0};
  std::mutex poll_mu;  // One poller at a time, as a conduit would.
  auto poll = [&] {
    std::lock_guard<std::mutex> lock(poll_mu);
    net.Poll();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(200 + t);
      for (int i = 0; i < kIterations; ++i) {
        const uint32_t peer = rng() % kPeers;
        const uintptr_t addr = Bucket(rng() % 20) + rng() % kBucket;
        const size_t length =
            cache->Acquirable(addr, 1 + rng() % (2 * kBucket));
        absl::StatusOr<RemoteCache::Hold> hold =
            cache->AcquireReady(peer, addr, length, poll);
        if (!hold.ok() || !net.nodes[peer]->pinner.CoversRemote(
                              hold->remote_key(), addr, length)) {
          ++bad;
          continue;
        }
        cache->Release(*hold);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(net.errors.load(), 0);
  for (const auto& node : net.nodes) {
    EXPECT_LE(node->pinner.peak_bytes(), peer_limits.max_pinned_bytes);
    EXPECT_LE(node->pinner.peak_registrations(),
              peer_limits.max_pinned_regions);
    EXPECT_EQ(node->pinner.errors(), 0) << node->pinner.first_error();
    EXPECT_EQ(node->server->unknown_releases(), 0u);
  }
  EXPECT_LE(cache->stats().bytes, kPeers * limits.max_bytes_per_peer);
  cache.reset();
}

}  // namespace
}  // namespace gexrt::firehose
