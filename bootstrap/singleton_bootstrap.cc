#include "bootstrap/singleton_bootstrap.h"

#include <unistd.h>

#include <cstring>

#include "base/fatal.h"
#include "base/job_rank.h"

namespace gexrt {

SingletonBootstrap::SingletonBootstrap() { SetJobRank(0); }

void SingletonBootstrap::Allgather(const void* src, size_t len, void* dst) {
  if (len > 0 && src != dst) std::memmove(dst, src, len);
}

void SingletonBootstrap::Alltoall(const void* src, size_t len, void* dst) {
  if (len > 0 && src != dst) std::memmove(dst, src, len);
}

void SingletonBootstrap::Broadcast(const void* src, size_t len, void* dst,
                                   Rank root) {
  if (root != 0) {
    FatalErrorF(
        "bootstrap broadcast: root %d is not a rank of this 1-rank "
        "job",
        root);
  }
  if (len > 0 && src != dst) std::memmove(dst, src, len);
}

void SingletonBootstrap::Abort(int exit_code, std::string_view reason) {
  _exit(exit_code);
}

}  // namespace gexrt
