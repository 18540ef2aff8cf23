#include "firehose/local_cache.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "firehose/fake_pinner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::firehose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Event = FakePinner::Event;

constexpr size_t kBucket = 4096;
// Addresses are never touched: the fake pinner pins nothing.
constexpr uintptr_t kBase = 0x10000000;

uintptr_t Bucket(size_t i) { return kBase + i * kBucket; }

LocalLimits Limits(size_t max_buckets, size_t max_regions,
                   size_t victim_buckets, size_t victim_regions,
                   size_t region_buckets = 4) {
  LocalLimits limits;
  limits.bucket_size = kBucket;
  limits.max_region_size = region_buckets * kBucket;
  limits.max_pinned_bytes = max_buckets * kBucket;
  limits.max_pinned_regions = max_regions;
  limits.max_victim_bytes = victim_buckets * kBucket;
  limits.max_victim_regions = victim_regions;
  return limits;
}

class LocalCacheTest : public ::testing::Test {
 protected:
  void Make(const LocalLimits& limits) {
    absl::StatusOr<std::unique_ptr<LocalCache>> cache =
        LocalCache::Create(limits, &pinner_);
    ASSERT_TRUE(cache.ok()) << cache.status();
    cache_ = *std::move(cache);
  }
  LocalCache::Hold Get(uintptr_t addr, size_t length) {
    absl::StatusOr<LocalCache::Hold> hold = cache_->TryAcquire(addr, length);
    EXPECT_TRUE(hold.ok()) << hold.status();
    if (!hold.ok()) return LocalCache::Hold();
    EXPECT_TRUE(pinner_.Covers(hold->local_key(), addr, length));
    return *hold;
  }
  void TearDown() override {
    cache_.reset();
    EXPECT_EQ(pinner_.live_registrations(), 0u);
    EXPECT_EQ(pinner_.errors(), 0) << pinner_.first_error();
  }

  FakePinner pinner_;
  std::unique_ptr<LocalCache> cache_;
};

TEST_F(LocalCacheTest, MissPinsTheBucketsThenHits) {
  Make(Limits(16, 16, 16, 16));
  LocalCache::Hold a = Get(Bucket(0) + 100, 200);
  EXPECT_THAT(pinner_.events(),
              ElementsAre(Event{Event::kPin, Bucket(0), kBucket, 1}));
  LocalCache::Hold b = Get(Bucket(0) + 1000, 3000);
  EXPECT_EQ(b.local_key(), a.local_key());
  EXPECT_EQ(a.registration().base, Bucket(0));
  EXPECT_EQ(a.registration().length, kBucket);
  EXPECT_NE(a.remote_key(), a.local_key());
  LocalCache::Stats stats = cache_->stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.pins, 1u);
  cache_->Release(a);
  cache_->Release(b);
  EXPECT_EQ(cache_->stats().victim_regions, 1u);
  // A victim is found again without pinning.
  LocalCache::Hold c = Get(Bucket(0), kBucket);
  EXPECT_EQ(c.local_key(), a.local_key());
  EXPECT_EQ(pinner_.pins(), 1u);
  EXPECT_EQ(cache_->stats().victim_regions, 0u);
  cache_->Release(c);
}

TEST_F(LocalCacheTest, AdjacentRequestsInOneBucketShareAPin) {
  Make(Limits(16, 16, 16, 16));
  std::vector<LocalCache::Hold> holds;
  for (int i = 0; i < 8; ++i) holds.push_back(Get(Bucket(2) + 512 * i, 512));
  EXPECT_EQ(pinner_.pins(), 1u);
  for (const LocalCache::Hold& h : holds) cache_->Release(h);
}

TEST_F(LocalCacheTest, AnUnalignedRequestPinsEveryBucketItTouches) {
  Make(Limits(16, 16, 16, 16));
  LocalCache::Hold a = Get(Bucket(1) - 10, 20);
  EXPECT_THAT(pinner_.events(),
              ElementsAre(Event{Event::kPin, Bucket(0), 2 * kBucket, 1}));
  cache_->Release(a);
}

TEST_F(LocalCacheTest, OverlappingVictimsCoalesceIntoOneRegion) {
  Make(Limits(16, 16, 16, 16));
  cache_->Release(Get(Bucket(0), kBucket));
  cache_->Release(Get(Bucket(2), kBucket));
  pinner_.ClearEvents();
  // Touches buckets 0..2: both victims are replaced by one region over all
  // three.
  LocalCache::Hold a = Get(Bucket(0) + 10, 2 * kBucket);
  EXPECT_EQ(a.registration().base, Bucket(0));
  EXPECT_EQ(a.registration().length, 3 * kBucket);
  EXPECT_THAT(pinner_.events(),
              ElementsAre(Event{Event::kUnpin, Bucket(0), kBucket, 1},
                          Event{Event::kUnpin, Bucket(2), kBucket, 2},
                          Event{Event::kPin, Bucket(0), 3 * kBucket, 3}));
  // Either end now hits.
  LocalCache::Hold b = Get(Bucket(2) + 100, 100);
  EXPECT_EQ(b.local_key(), a.local_key());
  cache_->Release(a);
  cache_->Release(b);
  EXPECT_EQ(pinner_.live_registrations(), 1u);
}

TEST_F(LocalCacheTest, VictimsAreNotMergedBeyondTheRoomLeft) {
  Make(Limits(3, 3, 3, 3, 4));
  cache_->Release(Get(Bucket(0), 3 * kBucket));
  LocalCache::Hold held = Get(Bucket(5), 1);
  // Taking in the whole victim would need 3 buckets beside the held one;
  // the request alone needs 1, after the victim is unpinned.
  LocalCache::Hold a = Get(Bucket(2), 1);
  EXPECT_EQ(a.registration().base, Bucket(2));
  EXPECT_EQ(a.registration().length, kBucket);
  EXPECT_LE(pinner_.peak_bytes(), 3 * kBucket);
  cache_->Release(a);
  cache_->Release(held);
}

TEST_F(LocalCacheTest, ARegionInUseIsShadowedNotUnpinned) {
  Make(Limits(16, 16, 16, 16));
  LocalCache::Hold small = Get(Bucket(0), kBucket);
  LocalCache::Hold big = Get(Bucket(0), 2 * kBucket);
  EXPECT_NE(big.local_key(), small.local_key());
  EXPECT_EQ(pinner_.live_registrations(), 2u);
  // The small region is still usable by its holder...
  EXPECT_TRUE(pinner_.Covers(small.local_key(), Bucket(0), kBucket));
  // ...but lookups now find the big one...
  LocalCache::Hold again = Get(Bucket(0), 10);
  EXPECT_EQ(again.local_key(), big.local_key());
  // ...and the small one is unpinned at its last release, not kept.
  pinner_.ClearEvents();
  cache_->Release(small);
  EXPECT_THAT(pinner_.events(),
              ElementsAre(Event{Event::kUnpin, Bucket(0), kBucket, 1}));
  EXPECT_EQ(cache_->stats().victim_regions, 0u);
  cache_->Release(big);
  cache_->Release(again);
  EXPECT_EQ(cache_->stats().victim_regions, 1u);
}

TEST_F(LocalCacheTest, HeldRegionsAreNeverEvicted) {
  Make(Limits(2, 2, 2, 2, 1));
  LocalCache::Hold a = Get(Bucket(0), 1);
  LocalCache::Hold b = Get(Bucket(1), 1);
  absl::StatusOr<LocalCache::Hold> c = cache_->TryAcquire(Bucket(2), 1);
  ASSERT_TRUE(absl::IsUnavailable(c.status())) << c.status();
  EXPECT_THAT(c.status().message(), HasSubstr("poll and retry"));
  EXPECT_EQ(pinner_.unpins(), 0u);
  EXPECT_EQ(cache_->stats().unavailable, 1u);
  cache_->Release(a);
  // Now a is a victim and makes room.
  LocalCache::Hold c2 = Get(Bucket(2), 1);
  EXPECT_EQ(pinner_.unpins(), 1u);
  EXPECT_TRUE(pinner_.Covers(b.local_key(), Bucket(1), 1));
  EXPECT_LE(pinner_.peak_bytes(), 2 * kBucket);
  cache_->Release(b);
  cache_->Release(c2);
}

TEST_F(LocalCacheTest, VictimsAreEvictedLeastRecentlyUsedFirst) {
  Make(Limits(3, 3, 3, 3, 1));
  LocalCache::Hold a = Get(Bucket(0), 1);
  LocalCache::Hold b = Get(Bucket(1), 1);
  LocalCache::Hold c = Get(Bucket(2), 1);
  const uint64_t a_key = a.local_key();
  cache_->Release(a);
  cache_->Release(b);
  cache_->Release(c);
  // Touch a: it becomes the most recently used; b is now the oldest.
  cache_->Release(Get(Bucket(0), 1));
  pinner_.ClearEvents();
  LocalCache::Hold d = Get(Bucket(3), 1);
  EXPECT_THAT(pinner_.events(),
              ElementsAre(Event{Event::kUnpin, Bucket(1), kBucket, 2},
                          Event{Event::kPin, Bucket(3), kBucket, 4}));
  cache_->Release(d);
  // b comes back with a new pin, pushing out c (oldest now).
  pinner_.ClearEvents();
  LocalCache::Hold b2 = Get(Bucket(1), 1);
  EXPECT_THAT(pinner_.events(),
              ElementsAre(Event{Event::kUnpin, Bucket(2), kBucket, 3},
                          Event{Event::kPin, Bucket(1), kBucket, 5}));
  // a stayed pinned all along.
  LocalCache::Hold a2 = Get(Bucket(0), 1);
  EXPECT_EQ(a2.local_key(), a_key);
  EXPECT_EQ(cache_->stats().evictions, 2u);
  cache_->Release(b2);
  cache_->Release(a2);
}

TEST_F(LocalCacheTest, TheVictimPoolHasItsOwnBounds) {
  // Room for 8 pinned, but only 1 region / 2 buckets of victims.
  Make(Limits(8, 8, 2, 1));
  LocalCache::Hold a = Get(Bucket(0), 1);
  LocalCache::Hold b = Get(Bucket(4), 1);
  cache_->Release(a);
  EXPECT_EQ(pinner_.unpins(), 0u);
  cache_->Release(b);  // Two victims: the older (a) goes.
  EXPECT_THAT(pinner_.events().back(),
              (Event{Event::kUnpin, Bucket(0), kBucket, 1}));
  EXPECT_EQ(cache_->stats().victim_regions, 1u);
  // A victim larger than the victim byte bound is not kept at all.
  cache_->Release(Get(Bucket(8), 3 * kBucket));
  EXPECT_EQ(cache_->stats().victim_bytes, kBucket);
  EXPECT_EQ(pinner_.live_registrations(), 1u);
}

TEST_F(LocalCacheTest, NoVictimsMeansUnpinAtEveryRelease) {
  Make(Limits(8, 8, 0, 0));
  cache_->Release(Get(Bucket(0), 1));
  cache_->Release(Get(Bucket(0), 1));
  EXPECT_EQ(pinner_.pins(), 2u);
  EXPECT_EQ(pinner_.live_registrations(), 0u);
}

TEST_F(LocalCacheTest, PinFailurePropagatesAndChangesNothing) {
  Make(Limits(8, 8, 8, 8));
  pinner_.FailNextPins(1, absl::ResourceExhaustedError("out of MRs"));
  absl::StatusOr<LocalCache::Hold> hold = cache_->TryAcquire(Bucket(0), 1);
  ASSERT_FALSE(hold.ok());
  EXPECT_EQ(hold.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(hold.status().message(),
              HasSubstr("pinning [0x10000000, +4096)"));
  EXPECT_THAT(hold.status().message(), HasSubstr("out of MRs"));
  EXPECT_EQ(cache_->stats().pinned_regions, 0u);
  cache_->Release(Get(Bucket(0), 1));
}

TEST_F(LocalCacheTest, RequestsTheLimitsCanNeverMeetFail) {
  Make(Limits(2, 8, 2, 8, 4));
  absl::StatusOr<LocalCache::Hold> empty = cache_->TryAcquire(Bucket(0), 0);
  EXPECT_TRUE(absl::IsInvalidArgument(empty.status())) << empty.status();
  absl::StatusOr<LocalCache::Hold> wide =
      cache_->TryAcquire(Bucket(0) + 1, 4 * kBucket);
  EXPECT_TRUE(absl::IsInvalidArgument(wide.status())) << wide.status();
  EXPECT_THAT(wide.status().message(),
              HasSubstr("GASNET_FIREHOSE_MAXREGION_SIZE"));
  absl::StatusOr<LocalCache::Hold> big =
      cache_->TryAcquire(Bucket(0), 3 * kBucket);
  EXPECT_TRUE(absl::IsResourceExhausted(big.status())) << big.status();
  EXPECT_THAT(big.status().message(), HasSubstr("GASNET_FIREHOSE_M"));
  EXPECT_EQ(pinner_.pins(), 0u);
}

TEST_F(LocalCacheTest, AcquirableSplitsAtRegionSize) {
  Make(Limits(16, 16, 16, 16, 4));
  EXPECT_EQ(cache_->Acquirable(Bucket(0), 100), 100u);
  EXPECT_EQ(cache_->Acquirable(Bucket(0), 10 * kBucket), 4 * kBucket);
  EXPECT_EQ(cache_->Acquirable(Bucket(0) + 96, 10 * kBucket), 4 * kBucket - 96);
  // A chunk of that size is always acceptable.
  const size_t n = cache_->Acquirable(Bucket(0) + 96, 10 * kBucket);
  cache_->Release(Get(Bucket(0) + 96, n));
}

TEST_F(LocalCacheTest, AcquirePollsUntilAHoldIsReleased) {
  Make(Limits(1, 1, 1, 1, 1));
  LocalCache::Hold a = Get(Bucket(0), 1);
  int polls = 0;
  absl::StatusOr<LocalCache::Hold> b = cache_->Acquire(Bucket(5), 1, [&] {
    // The "network" completes the operation holding a.
    if (++polls == 3) cache_->Release(a);
  });
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(polls, 3);
  EXPECT_TRUE(pinner_.Covers(b->local_key(), Bucket(5), 1));
  cache_->Release(*b);
  // A permanent error is returned without polling.
  absl::StatusOr<LocalCache::Hold> c =
      cache_->Acquire(Bucket(5), 2 * kBucket, [&] { ++polls; });
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(polls, 3);
}

TEST_F(LocalCacheTest, InvalidateDropsStaleRegions) {
  Make(Limits(16, 16, 16, 16));
  LocalCache::Hold held = Get(Bucket(0), 1);
  cache_->Release(Get(Bucket(4), 1));
  cache_->Invalidate(Bucket(0), 8 * kBucket);
  // The victim is gone at once; the held region stays pinned for its holder.
  EXPECT_EQ(pinner_.live_registrations(), 1u);
  EXPECT_TRUE(pinner_.Covers(held.local_key(), Bucket(0), 1));
  // A new request pins afresh.
  LocalCache::Hold fresh = Get(Bucket(0), 1);
  EXPECT_NE(fresh.local_key(), held.local_key());
  cache_->Release(held);
  EXPECT_EQ(pinner_.live_registrations(), 1u);
  cache_->Release(fresh);
  cache_->Flush();
  EXPECT_EQ(pinner_.live_registrations(), 0u);
}

TEST_F(LocalCacheTest, BadLimitsAreRejected) {
  LocalLimits limits = Limits(4, 4, 4, 4);
  limits.bucket_size = 3000;
  EXPECT_TRUE(
      absl::IsInvalidArgument(LocalCache::Create(limits, &pinner_).status()));
  limits = Limits(4, 4, 4, 4);
  limits.max_region_size = kBucket + 1;
  EXPECT_TRUE(
      absl::IsInvalidArgument(LocalCache::Create(limits, &pinner_).status()));
  limits = Limits(4, 4, 4, 4);
  limits.table_scale = 0;
  EXPECT_TRUE(
      absl::IsInvalidArgument(LocalCache::Create(limits, &pinner_).status()));
}

// A pinner whose Pin of one address waits until the test lets it go.
class GatedPinner : public Pinner {
 public:
  explicit GatedPinner(FakePinner* inner, uintptr_t gated)
      : inner_(inner), gated_(gated) {}
  absl::StatusOr<Registration> Pin(uintptr_t base, size_t length) override {
    if (base == gated_) {
      std::unique_lock<std::mutex> lock(mu_);
      waiting_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
    }
    return inner_->Pin(base, length);
  }
  void Unpin(const Registration& r) override { inner_->Unpin(r); }
  void WaitUntilPinning() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return waiting_; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  FakePinner* const inner_;
  const uintptr_t gated_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool waiting_ = false;
  bool open_ = false;
};

TEST(LocalCachePinTest, HitsDoNotWaitForAnotherThreadsPin) {
  FakePinner fake;
  GatedPinner pinner(&fake, Bucket(8));
  std::unique_ptr<LocalCache> cache =
      *LocalCache::Create(Limits(16, 16, 16, 16), &pinner);
  LocalCache::Hold early = *cache->TryAcquire(Bucket(0), 1);
  absl::StatusOr<LocalCache::Hold> slow;
  std::thread pinning([&] { slow = cache->TryAcquire(Bucket(8), 1); });
  pinner.WaitUntilPinning();
  // While that pin is stuck in the device: a hit, a release and another
  // miss all go through...
  LocalCache::Hold hit = *cache->TryAcquire(Bucket(0) + 10, 1);
  EXPECT_EQ(hit.local_key(), early.local_key());
  cache->Release(hit);
  LocalCache::Hold other = *cache->TryAcquire(Bucket(2), 1);
  // ...and the region being pinned is not handed out half-made.
  absl::StatusOr<LocalCache::Hold> racing = cache->TryAcquire(Bucket(8), 1);
  EXPECT_TRUE(absl::IsUnavailable(racing.status())) << racing.status();
  EXPECT_THAT(racing.status().message(), HasSubstr("being pinned"));
  pinner.Open();
  pinning.join();
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_TRUE(fake.Covers(slow->local_key(), Bucket(8), 1));
  LocalCache::Hold joined = *cache->TryAcquire(Bucket(8), 1);
  EXPECT_EQ(joined.local_key(), slow->local_key());
  for (const LocalCache::Hold& h : {early, other, *slow, joined}) {
    cache->Release(h);
  }
  cache.reset();
  EXPECT_EQ(fake.live_registrations(), 0u);
  EXPECT_EQ(fake.errors(), 0);
}

TEST(LocalCachePinTest, AFailedPinGivesBackItsReservation) {
  FakePinner pinner;
  std::unique_ptr<LocalCache> cache =
      *LocalCache::Create(Limits(1, 1, 1, 1, 1), &pinner);
  pinner.FailNextPins(1, absl::InternalError("device on fire"));
  EXPECT_FALSE(cache->TryAcquire(Bucket(0), 1).ok());
  const LocalCache::Stats stats = cache->stats();
  EXPECT_EQ(stats.pinned_bytes, 0u);
  EXPECT_EQ(stats.pinned_regions, 0u);
  // The room is free again.
  absl::StatusOr<LocalCache::Hold> hold = cache->TryAcquire(Bucket(0), 1);
  ASSERT_TRUE(hold.ok()) << hold.status();
  cache->Release(*hold);
}

TEST(LocalCacheVerboseTest, ReportsLimitsAndCounters) {
  FakePinner pinner;
  LocalLimits limits = Limits(4, 4, 4, 4);
  limits.verbose = true;
  ::testing::internal::CaptureStderr();
  {
    std::unique_ptr<LocalCache> cache = *LocalCache::Create(limits, &pinner);
    cache->Release(*cache->TryAcquire(Bucket(0), 1));
    cache->Release(*cache->TryAcquire(Bucket(0), 1));
  }
  const std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(out, HasSubstr("firehose (proc ?): local cache: at most 16384 "
                             "bytes in 4 regions pinned"));
  EXPECT_THAT(out, HasSubstr("1 hits, 1 misses, 1 pins, 1 unpins"));
}

// A random single-threaded workload: the limits hold at every step.
TEST_F(LocalCacheTest, LimitsHoldExactlyUnderARandomWorkload) {
  const LocalLimits limits = Limits(12, 5, 6, 3, 4);
  Make(limits);
  std::mt19937 rng(7);
  std::vector<std::pair<LocalCache::Hold, std::pair<uintptr_t, size_t>>> held;
  for (int step = 0; step < 20000; ++step) {
    if (!held.empty() && (held.size() >= 3 || rng() % 2 == 0)) {
      const size_t i = rng() % held.size();
      cache_->Release(held[i].first);
      held.erase(held.begin() + i);
    } else {
      const uintptr_t addr = Bucket(rng() % 40) + rng() % kBucket;
      const size_t length = cache_->Acquirable(addr, 1 + rng() % (4 * kBucket));
      absl::StatusOr<LocalCache::Hold> hold = cache_->TryAcquire(addr, length);
      if (hold.ok()) {
        ASSERT_TRUE(pinner_.Covers(hold->local_key(), addr, length));
        held.push_back({*hold, {addr, length}});
      } else {
        ASSERT_TRUE(absl::IsUnavailable(hold.status())) << hold.status();
      }
    }
    ASSERT_LE(pinner_.live_bytes(), limits.max_pinned_bytes);
    ASSERT_LE(pinner_.live_registrations(), limits.max_pinned_regions);
    const LocalCache::Stats stats = cache_->stats();
    ASSERT_LE(stats.victim_bytes, limits.max_victim_bytes);
    ASSERT_LE(stats.victim_regions, limits.max_victim_regions);
    ASSERT_EQ(stats.pinned_bytes, pinner_.live_bytes());
    // Every hold still covers its range.
    for (const auto& [hold, range] : held) {
      ASSERT_TRUE(pinner_.Covers(hold.local_key(), range.first, range.second));
    }
  }
  for (const auto& h : held) cache_->Release(h.first);
  EXPECT_GT(cache_->stats().hits, 0u);
  EXPECT_GT(cache_->stats().evictions, 0u);
}

// Threads acquiring and releasing at once (PAR mode). Each holds at most
// two regions; the limits are checked by the pinner at every pin.
TEST_F(LocalCacheTest, ThreadsShareTheCache) {
  const LocalLimits limits = Limits(16, 8, 8, 4, 4);
  Make(limits);
  constexpr int kThreads = 4;
  constexpr int kIterations = 3000;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      for (int i = 0; i < kIterations; ++i) {
        const uintptr_t addr = Bucket(rng() % 24) + rng() % kBucket;
        const size_t length =
            cache_->Acquirable(addr, 1 + rng() % (2 * kBucket));
        absl::StatusOr<LocalCache::Hold> hold =
            cache_->Acquire(addr, length, [] { std::this_thread::yield(); });
        if (!hold.ok() || !pinner_.Covers(hold->local_key(), addr, length)) {
          ++bad;
          continue;
        }
        cache_->Release(*hold);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_LE(pinner_.peak_bytes(), limits.max_pinned_bytes);
  EXPECT_LE(pinner_.peak_registrations(), limits.max_pinned_regions);
  const LocalCache::Stats stats = cache_->stats();
  EXPECT_EQ(stats.hits + stats.misses,
            static_cast<uint64_t>(kThreads) * kIterations + stats.unavailable);
  EXPECT_LE(stats.victim_regions, limits.max_victim_regions);
  EXPECT_EQ(stats.pinned_regions, stats.victim_regions);
}

}  // namespace
}  // namespace gexrt::firehose
