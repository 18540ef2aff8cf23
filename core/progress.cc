#include "core/progress.h"

#include "base/spin_wait.h"

namespace gexrt::core {

void WaitProgress(Runtime& rt) {
  const int delivered = Progress(rt);
  // Spacing out the looks at an empty queue leaves the line a peer is
  // writing its message or reply into with that peer, rather than pulling
  // it back and forth while the message is still being written.
  if (rt.polite || delivered == 0) PoliteSpinWait(rt.polite).Pause();
}

}  // namespace gexrt::core
