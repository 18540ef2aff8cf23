#include "core/peer_lost.h"

#include <algorithm>
#include <cstring>

#include "absl/time/clock.h"
#include "base/fatal.h"

namespace gexrt::core {

void PeerLostClock::Lost(const std::string& why) {
  const int64_t now = absl::ToUnixNanos(absl::Now());
  int64_t none = 0;
  // The text is written by the one thread that set the deadline, before
  // anyone can find the grace over (Check reads it only after `grace_`).
  if (deadline_ns_.compare_exchange_strong(
          none, now + absl::ToInt64Nanoseconds(grace_))) {
    const size_t n = std::min(why.size(), sizeof why_ - 1);
    std::memcpy(why_, why.data(), n);
    why_[n] = '\0';
  }
}

void PeerLostClock::CheckSlow(const char* conduit, uint32_t rank) {
  const int64_t deadline = deadline_ns_.load(std::memory_order_acquire);
  if (absl::ToUnixNanos(absl::Now()) < deadline) return;
  FatalErrorF(
      "%s conduit: rank %u: %s, and the job was not ended within %s (as it "
      "is when a peer has died or left)",
      conduit, rank, why_, absl::FormatDuration(grace_));
}

}  // namespace gexrt::core
