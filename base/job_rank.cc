#include "base/job_rank.h"

#include <array>
#include <atomic>
#include <cstdlib>

namespace gexrt {
namespace {

std::atomic<int> g_rank{kUnknownRank};

// A fixed table, not a vector: listeners register during static init and
// start-up, and a fixed table needs no allocation or ordering guarantees.
constexpr int kMaxListeners = 8;
std::array<JobRankListener, kMaxListeners> g_listeners{};
int g_listener_count = 0;

}  // namespace

void SetJobRank(int rank) {
  g_rank.store(rank, std::memory_order_release);
  for (int i = 0; i < g_listener_count; ++i) g_listeners[i](rank);
}

int JobRank() { return g_rank.load(std::memory_order_acquire); }

void AddJobRankListener(JobRankListener listener) {
  if (g_listener_count == kMaxListeners) std::abort();  // A design error.
  g_listeners[g_listener_count++] = listener;
}

}  // namespace gexrt
