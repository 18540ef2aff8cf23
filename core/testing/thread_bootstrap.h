// A Bootstrap whose ranks are threads of one process, for unit tests of
// code that is collective over a job (a conduit's Init and AttachSegment):
//
//   ThreadJob job(3);
//   // on thread r, for r in 0..2:
//   ThreadBootstrap bootstrap(&job, r);
//   conduit[r].Init({.bootstrap = &bootstrap, ...});
//
// Every collective is an exchange through the shared ThreadJob under a
// mutex: each rank deposits its contribution and waits on a condition
// variable until all have (bounded: a rank that never comes is a fatal
// error after `limit`, naming the collective). Abort is a fatal error.
#ifndef GEX_CORE_TESTING_THREAD_BOOTSTRAP_H_
#define GEX_CORE_TESTING_THREAD_BOOTSTRAP_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace gexrt::core::testing {

// The state the ranks of one job share.
class ThreadJob {
 public:
  explicit ThreadJob(Rank size,
                     std::chrono::seconds limit = std::chrono::seconds(60));
  Rank size() const { return size_; }

  // Rank `rank` contributes `bytes`; returns every rank's contribution
  // once all have made theirs. `what` names the collective for errors.
  std::vector<std::vector<uint8_t>> Exchange(Rank rank,
                                             std::vector<uint8_t> bytes,
                                             const char* what);

 private:
  const Rank size_;
  const std::chrono::seconds limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
  Rank arrived_ = 0;
  std::vector<std::vector<uint8_t>> deposits_;
  std::vector<std::vector<uint8_t>> result_;
};

class ThreadBootstrap final : public Bootstrap {
 public:
  ThreadBootstrap(ThreadJob* job, Rank rank);

  Rank rank() const override { return rank_; }
  Rank size() const override { return job_->size(); }
  void Barrier() override;
  void Allgather(const void* src, size_t len, void* dst) override;
  void Alltoall(const void* src, size_t len, void* dst) override;
  void Broadcast(const void* src, size_t len, void* dst, Rank root) override;
  [[noreturn]] void Abort(int exit_code, std::string_view reason) override;
  void Fini() override {}

 private:
  // Every rank's contribution, each checked to be `len` bytes.
  std::vector<std::vector<uint8_t>> Exchange(const void* src, size_t len,
                                             const char* what);

  ThreadJob* job_;
  Rank rank_;
};

}  // namespace gexrt::core::testing

#endif  // GEX_CORE_TESTING_THREAD_BOOTSTRAP_H_
