#include "base/wait_policy.h"

#include <algorithm>

namespace gexrt {
namespace {

// The calling thread's empty rounds since it last yielded or progressed.
// Per thread, not per wait: a client's wait loop (GASNET_BLOCKUNTIL) is
// one round per call, and nothing says when it ends. A wait that ends
// early leaves its count to the thread's next one, which then yields up
// to kSpinRounds rounds sooner: harmless.
thread_local int t_idle_rounds = 0;

}  // namespace

void WaitPolicy::Configure(int ranks_on_host, int cpus, bool count_threads) {
  ranks_on_host = std::max(ranks_on_host, 1);
  cpus = std::max(cpus, 1);
  count_threads_ = count_threads;
  threads_per_rank_ = std::max(cpus / ranks_on_host, 1);
  set_always_yield(ranks_on_host > cpus);
}

void WaitPolicy::Round::SpinThenYield(bool progressed) {
  if (progressed) {
    t_idle_rounds = 0;
    return;
  }
  if (++t_idle_rounds < kSpinRounds) {
    CpuRelax();
    return;
  }
  t_idle_rounds = 0;
  YieldCpu();
}

namespace wait_policy_internal {
int IdleRounds() { return t_idle_rounds; }
}  // namespace wait_policy_internal

}  // namespace gexrt
