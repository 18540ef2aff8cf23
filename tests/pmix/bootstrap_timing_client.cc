// One rank of the bootstrap timing job (bootstrap_timing.cc): the time from
// entering CreateBootstrap (PMIx_Init, or the launcher's channel) to leaving
// the first Barrier, gathered to rank 0, which prints
//   bootstrap n=<ranks> max_us=<slowest rank> rank0_us=<rank 0's>
// Ranks start at different moments, so the slowest rank's figure includes
// waiting for the last one to start: it is the job's start-up cost as a
// client sees it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/create_bootstrap.h"

int main() {
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<gexrt::Bootstrap> b = gexrt::CreateBootstrap();
  b->Barrier();
  const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  std::vector<int64_t> all(b->size());
  b->Allgather(&us, sizeof us, all.data());
  if (b->rank() == 0) {
    std::printf(
        "bootstrap n=%u max_us=%lld rank0_us=%lld\n", b->size(),
        static_cast<long long>(*std::max_element(all.begin(), all.end())),
        static_cast<long long>(all[0]));
    std::fflush(stdout);
  }
  b->Barrier();
  b->Fini();
  return 0;
}
