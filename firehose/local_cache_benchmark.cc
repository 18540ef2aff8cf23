// The cost of firehose's paths: a hit and release in the local and the
// remote cache (the path every out-of-segment RDMA takes once warm), and a
// miss that evicts a victim and pins (with a pinner that does nothing, so
// the figure is firehose's own overhead, not the device's).
//
//   bazel run --config=opt //firehose:local_cache_benchmark
#include <cstdint>
#include <memory>

#include "benchmark/benchmark.h"
#include "firehose/local_cache.h"
#include "firehose/move.h"
#include "firehose/remote_cache.h"

namespace gexrt::firehose {
namespace {

constexpr size_t kBucket = 4096;
constexpr uintptr_t kBase = 0x40000000;

class NullPinner : public Pinner {
 public:
  absl::StatusOr<Registration> Pin(uintptr_t base, size_t length) override {
    return Registration{base, length, ++key_, key_, nullptr};
  }
  void Unpin(const Registration&) override {}

 private:
  uint64_t key_ = 0;
};

LocalLimits Limits(size_t buckets) {
  LocalLimits limits;
  limits.bucket_size = kBucket;
  limits.max_region_size = 32 * kBucket;
  limits.max_pinned_bytes = buckets * kBucket;
  limits.max_pinned_regions = buckets;
  limits.max_victim_bytes = buckets * kBucket;
  limits.max_victim_regions = buckets;
  return limits;
}

void BM_LocalHit(benchmark::State& state) {
  NullPinner pinner;
  std::unique_ptr<LocalCache> cache =
      *LocalCache::Create(Limits(1024), &pinner);
  // 64 warm regions, visited in turn.
  for (int i = 0; i < 64; ++i) {
    cache->Release(*cache->TryAcquire(kBase + i * 8 * kBucket, 8 * kBucket));
  }
  int i = 0;
  for (auto _ : state) {
    absl::StatusOr<LocalCache::Hold> hold =
        cache->TryAcquire(kBase + (i++ & 63) * 8 * kBucket + 100, 4000);
    benchmark::DoNotOptimize(hold->local_key());
    cache->Release(*hold);
  }
}
BENCHMARK(BM_LocalHit);

void BM_LocalMissEvictingAVictim(benchmark::State& state) {
  NullPinner pinner;
  // Room for 16 one-bucket regions; walking 64 buckets misses every time.
  std::unique_ptr<LocalCache> cache = *LocalCache::Create(Limits(16), &pinner);
  int i = 0;
  for (auto _ : state) {
    absl::StatusOr<LocalCache::Hold> hold =
        cache->TryAcquire(kBase + (i++ & 63) * kBucket, 100);
    benchmark::DoNotOptimize(hold->local_key());
    cache->Release(*hold);
  }
}
BENCHMARK(BM_LocalMissEvictingAVictim);

class AnsweringSender : public MoveSender {
 public:
  void SendMove(uint32_t peer, MoveRequest request) override {
    (void)cache->CompleteMove(peer, request.ticket, request.ticket);
  }
  RemoteCache* cache = nullptr;
};

void BM_RemoteHit(benchmark::State& state) {
  AnsweringSender sender;
  RemoteLimits limits;
  limits.bucket_size = kBucket;
  limits.max_region_size = 32 * kBucket;
  limits.max_bytes_per_peer = limits.max_victim_bytes_per_peer = 1024 * kBucket;
  limits.max_regions_per_peer = limits.max_victim_regions_per_peer = 1024;
  std::unique_ptr<RemoteCache> cache =
      *RemoteCache::Create(limits, 16, &sender);
  sender.cache = cache.get();
  for (uint32_t peer = 0; peer < 16; ++peer) {
    for (int i = 0; i < 4; ++i) {
      cache->Release(*cache->Acquire(peer, kBase + i * 8 * kBucket, 1));
    }
  }
  int i = 0;
  for (auto _ : state) {
    const uint32_t peer = i & 15;
    absl::StatusOr<RemoteCache::Hold> hold =
        cache->Acquire(peer, kBase + ((i++ >> 4) & 3) * 8 * kBucket, 4000);
    benchmark::DoNotOptimize(hold->remote_key());
    cache->Release(*hold);
  }
}
BENCHMARK(BM_RemoteHit);

}  // namespace
}  // namespace gexrt::firehose
