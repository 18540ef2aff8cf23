// A conduit's grace after a send or RMA to a peer failed.
//
// A failed transfer (a peer that died, or left the job before this rank
// heard of the exit) is how a rank often learns of an ending that has not
// reached it yet, so it is not fatal at once: the launcher or the exit
// protocol ends the job within moments, and only a job still running
// `grace` later ends with an error naming the first failure. Lock-free:
// any thread may report and check.
#ifndef GEX_CORE_PEER_LOST_H_
#define GEX_CORE_PEER_LOST_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/base/optimization.h"
#include "absl/time/time.h"

namespace gexrt::core {

class PeerLostClock {
 public:
  static constexpr absl::Duration kDefaultGrace = absl::Seconds(10);

  explicit PeerLostClock(absl::Duration grace = kDefaultGrace)
      : grace_(grace) {}

  // A transfer failed; `why` (one line) is kept if it is the first.
  void Lost(const std::string& why);

  // Fatal, naming `conduit` and `rank`, once the grace after the first
  // failure has run out; nothing before (one relaxed load when none).
  void Check(const char* conduit, uint32_t rank) {
    if (ABSL_PREDICT_TRUE(deadline_ns_.load(std::memory_order_relaxed) == 0)) {
      return;
    }
    CheckSlow(conduit, rank);
  }

  bool lost() const { return deadline_ns_.load() != 0; }

 private:
  void CheckSlow(const char* conduit, uint32_t rank);

  absl::Duration grace_;
  std::atomic<int64_t> deadline_ns_{0};
  char why_[192] = {};
};

}  // namespace gexrt::core

#endif  // GEX_CORE_PEER_LOST_H_
