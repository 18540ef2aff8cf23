// Progress: what every polling call (gasnet_AMPoll, the Test and Wait
// calls, a blocked send) does once per round.
//
//   PollNetworks  the PSHM network, then the conduit when it has peers;
//   Progress      PollNetworks, then the registered progress functions
//                 (the barrier's and collectives' sends), except inside a
//                 handler, where sending a Request is not allowed;
//   WaitProgress  Progress, then a pause as the runtime's WaitPolicy says:
//                 yield (polite), bounded spin then yield (PAR threads
//                 outnumbering CPUs), or a spin-wait pause when nothing
//                 arrived.
#ifndef GEX_CORE_PROGRESS_H_
#define GEX_CORE_PROGRESS_H_

#include "absl/base/attributes.h"
#include "am/token.h"
#include "core/runtime.h"

namespace gexrt::core {

// Returns the number of messages delivered.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline int PollNetworks(Runtime& rt) {
  int delivered = rt.net->Poll();
  if (rt.conduit_has_peers) delivered += rt.conduit->Poll();
  return delivered;
}

inline int Progress(Runtime& rt) {
  const int delivered = PollNetworks(rt);
  if (!am::HandlerContext::InHandler()) rt.progress.Run();
  return delivered;
}

void WaitProgress(Runtime& rt);

}  // namespace gexrt::core

#endif  // GEX_CORE_PROGRESS_H_
