#include "core/progress.h"

#include "base/wait_policy.h"

namespace gexrt::core {

void WaitProgress(Runtime& rt) {
  // The round counts this thread as waiting while it polls and pauses (PAR
  // only), which is how the policy sees threads outnumbering CPUs.
  WaitPolicy::Round round(rt.waits);
  // Spacing out the looks at an empty queue leaves the line a peer is
  // writing its message or reply into with that peer, rather than pulling
  // it back and forth while the message is still being written.
  round.Pause(PollRound(rt) != 0);
}

}  // namespace gexrt::core
