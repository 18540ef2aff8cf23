// Progress: what every polling call (gasnet_AMPoll, the Test and Wait
// calls, a blocked send) does once per round.
//
//   PollNetworks  the PSHM network, then the conduit when it has peers;
//   PollRound     PollNetworks, then the registered progress functions
//                 (the barrier's and collectives' sends), except inside a
//                 handler, where sending a Request is not allowed;
//   Progress      PollRound for a poll outside a wait (gasnet_AMPoll, the
//                 Test calls), then a yield while another thread of the
//                 process is blocked in a wait (PAR): pollers never starve
//                 the threads that need progress;
//   WaitProgress  PollRound, then a pause as the runtime's WaitPolicy says:
//                 yield (polite), bounded spin then yield (PAR threads
//                 outnumbering CPUs), or a spin-wait pause when nothing
//                 arrived.
#ifndef GEX_CORE_PROGRESS_H_
#define GEX_CORE_PROGRESS_H_

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "am/token.h"
#include "base/spin_wait.h"
#include "core/runtime.h"

namespace gexrt::core {

// Returns the number of messages delivered.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline int PollNetworks(Runtime& rt) {
  int delivered = rt.net->Poll();
  if (rt.conduit_has_peers) delivered += rt.conduit->Poll();
  return delivered;
}

// One round of polling, as a wait takes it (WaitProgress pauses after it as
// its WaitPolicy::Round says).
inline int PollRound(Runtime& rt) {
  const int delivered = PollNetworks(rt);
  if (!am::HandlerContext::InHandler()) rt.progress.Run();
  return delivered;
}

// A poll made outside any wait: the client's gasnet_AMPoll and Test calls.
// It yields the CPU after polling while another thread of this process is
// blocked in a wait (PAR; WaitPolicy::ShouldPollerYield), so that threads
// spinning on it cannot starve the threads that need progress.
inline int Progress(Runtime& rt) {
  const int delivered = PollRound(rt);
  if (ABSL_PREDICT_FALSE(rt.waits.ShouldPollerYield())) YieldCpu();
  return delivered;
}

void WaitProgress(Runtime& rt);

}  // namespace gexrt::core

#endif  // GEX_CORE_PROGRESS_H_
