#include "core/testing/thread_bootstrap.h"

#include <cstring>
#include <string>
#include <utility>

#include "base/fatal.h"

namespace gexrt::core::testing {

ThreadJob::ThreadJob(Rank size, std::chrono::seconds limit)
    : size_(size), limit_(limit), deposits_(size) {
  if (size == 0) FatalError("ThreadJob: a job of no ranks");
}

std::vector<std::vector<uint8_t>> ThreadJob::Exchange(
    Rank rank, std::vector<uint8_t> bytes, const char* what) {
  if (rank >= size_) {
    FatalErrorF("ThreadBootstrap: %s from rank %u of a job of %u", what, rank,
                size_);
  }
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t generation = generation_;
  deposits_[rank] = std::move(bytes);
  if (++arrived_ == size_) {
    // The last to arrive publishes. result_ stays until the next exchange
    // completes, which needs every rank, so each copies it out first.
    result_ = std::move(deposits_);
    deposits_.assign(size_, {});
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
  } else if (!cv_.wait_for(lock, limit_,
                           [&] { return generation_ != generation; })) {
    FatalErrorF("ThreadBootstrap: rank %u: %s: only %u of %u ranks came", rank,
                what, arrived_, size_);
  }
  return result_;
}

ThreadBootstrap::ThreadBootstrap(ThreadJob* job, Rank rank)
    : job_(job), rank_(rank) {}

std::vector<std::vector<uint8_t>> ThreadBootstrap::Exchange(const void* src,
                                                            size_t len,
                                                            const char* what) {
  std::vector<uint8_t> mine(len);
  if (len != 0) std::memcpy(mine.data(), src, len);
  std::vector<std::vector<uint8_t>> all =
      job_->Exchange(rank_, std::move(mine), what);
  for (Rank r = 0; r < all.size(); ++r) {
    if (all[r].size() != len) {
      FatalErrorF("ThreadBootstrap: %s: rank %u gave %zu bytes, rank %u %zu",
                  what, r, all[r].size(), rank_, len);
    }
  }
  return all;
}

void ThreadBootstrap::Barrier() { Exchange(nullptr, 0, "Barrier"); }

void ThreadBootstrap::Allgather(const void* src, size_t len, void* dst) {
  // `src` may lie inside `dst`: Exchange copied it first.
  const auto all = Exchange(src, len, "Allgather");
  for (Rank r = 0; r < all.size(); ++r) {
    if (len != 0)
      std::memcpy(static_cast<uint8_t*>(dst) + r * len, all[r].data(), len);
  }
}

void ThreadBootstrap::Alltoall(const void* src, size_t len, void* dst) {
  const auto all = Exchange(src, len * size(), "Alltoall");
  for (Rank r = 0; r < all.size(); ++r) {
    if (len != 0) {
      std::memcpy(static_cast<uint8_t*>(dst) + r * len,
                  all[r].data() + rank_ * len, len);
    }
  }
}

void ThreadBootstrap::Broadcast(const void* src, size_t len, void* dst,
                                Rank root) {
  if (root >= size()) {
    FatalErrorF("ThreadBootstrap: Broadcast from root %u of %u", root, size());
  }
  // Every rank sends `len` bytes (zeros but the root's) so sizes are
  // checked the same way as the other collectives.
  std::vector<uint8_t> mine(len);
  if (rank_ == root && len != 0) std::memcpy(mine.data(), src, len);
  const auto all = Exchange(mine.data(), len, "Broadcast");
  if (len != 0) std::memcpy(dst, all[root].data(), len);
}

void ThreadBootstrap::Abort(int exit_code, std::string_view reason) {
  FatalErrorF("ThreadBootstrap: rank %u aborts the job (code %d): %s", rank_,
              exit_code, std::string(reason));
}

}  // namespace gexrt::core::testing
