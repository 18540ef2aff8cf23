// GASNET_BOOTSTRAP_TIMEOUT: how long a bootstrap collective may wait for
// the last rank to join before the job is ended with an error naming the
// ranks that did not (decimal seconds, default 300).
//
// Bootstrap collectives run at start-up and exit, where every rank is
// expected within moments of the others; the bound exists so that a rank
// that hangs (stopped, deadlocked, stuck in a system call) ends the job with
// a message instead of a silent hang. A rank that dies is noticed at once,
// without waiting for this bound. Raise it for clients that compute for a
// long time between gex_Client_Init and gex_Segment_Attach.
#ifndef GEX_BOOTSTRAP_BOOTSTRAP_TIMEOUT_H_
#define GEX_BOOTSTRAP_BOOTSTRAP_TIMEOUT_H_

#include "absl/time/time.h"

namespace gexrt {

inline constexpr double kDefaultBootstrapTimeoutSeconds = 300.0;

// Reads GASNET_BOOTSTRAP_TIMEOUT (through base/env: reported by
// GASNET_VERBOSEENV; malformed or not positive is a fatal error naming it).
absl::Duration BootstrapTimeoutFromEnv();

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_BOOTSTRAP_TIMEOUT_H_
