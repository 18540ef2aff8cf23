#include "base/wait_policy.h"

#include <algorithm>

namespace gexrt {

void WaitPolicy::Configure(int ranks_on_host, int cpus, bool count_threads) {
  ranks_on_host = std::max(ranks_on_host, 1);
  cpus = std::max(cpus, 1);
  count_threads_ = count_threads;
  threads_per_rank_ = std::max(cpus / ranks_on_host, 1);
  set_always_yield(ranks_on_host > cpus);
}

}  // namespace gexrt
