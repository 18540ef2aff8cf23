// The Bootstrap of a job of one rank: a program started directly, without
// a launcher. Collectives are copies.
#ifndef GEX_BOOTSTRAP_SINGLETON_BOOTSTRAP_H_
#define GEX_BOOTSTRAP_SINGLETON_BOOTSTRAP_H_

#include "bootstrap/bootstrap.h"

namespace gexrt {

class SingletonBootstrap final : public Bootstrap {
 public:
  // Sets the job rank to 0 (base/job_rank.h).
  SingletonBootstrap();

  Rank rank() const override { return 0; }
  Rank size() const override { return 1; }
  void Barrier() override {}
  void Allgather(const void* src, size_t len, void* dst) override;
  void Alltoall(const void* src, size_t len, void* dst) override;
  void Broadcast(const void* src, size_t len, void* dst, Rank root) override;
  [[noreturn]] void Abort(int exit_code, std::string_view reason) override;
  void Fini() override {}
};

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_SINGLETON_BOOTSTRAP_H_
