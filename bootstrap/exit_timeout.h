// The exit timeout: once one rank of a job has begun to exit, how long the
// others have to exit too before they are killed. The launcher enforces it
// on the processes it started, and the exit layer bounds its exit-time
// collectives (the exit-code reduce, the remote exit requests) by it, so a
// rank that hangs or died cannot keep the rest of the job alive forever.
//
// Settings (decimal seconds: "30", "2.5", ".5", "1e2" or "5/8"), read
// through base/env so GASNET_VERBOSEENV reports them:
//
//   GASNET_EXITTIMEOUT         The timeout itself. When set, it wins over
//                              the three below. Default: computed from them.
//   GASNET_EXITTIMEOUT_MAX     The longest computed timeout. Default 360.
//   GASNET_EXITTIMEOUT_MIN     The fixed part of the computed timeout.
//                              Default 2.
//   GASNET_EXITTIMEOUT_FACTOR  What each rank of the job adds to it, since
//                              a larger job takes longer to agree on its
//                              exit. Default 0.25.
//
// The computed timeout is min(MAX, MIN + ranks * FACTOR): with the
// defaults, 2.25 s for one rank, 27 s for 100 ranks and 360 s from 1432
// ranks on (MAX takes precedence over MIN when MIN is the larger). Whatever
// the settings, the timeout is never below kMinExitTimeout, so a job always
// has a moment to exit cleanly. A malformed or negative value is a fatal
// error naming the variable.
#ifndef GEX_BOOTSTRAP_EXIT_TIMEOUT_H_
#define GEX_BOOTSTRAP_EXIT_TIMEOUT_H_

#include <cstdint>
#include <optional>

#include "absl/time/time.h"

namespace gexrt {

// The floor under every exit timeout.
inline constexpr absl::Duration kMinExitTimeout = absl::Milliseconds(50);

// The computed timeout's parameters, in seconds; the defaults are GASNet's.
struct ExitTimeoutSettings {
  double max_s = 360.0;    // GASNET_EXITTIMEOUT_MAX
  double min_s = 2.0;      // GASNET_EXITTIMEOUT_MIN
  double factor_s = 0.25;  // GASNET_EXITTIMEOUT_FACTOR
};

// The exit timeout of a job of `nodes` ranks (pure). `explicit_s`
// (GASNET_EXITTIMEOUT, in seconds) wins when set; otherwise
// min(s.max_s, s.min_s + nodes * s.factor_s). Never below
// kMinExitTimeout.
absl::Duration ComputeExitTimeout(uint32_t nodes, const ExitTimeoutSettings& s,
                                  std::optional<double> explicit_s);

// The exit timeout of a job of `nodes` ranks, from the GASNET_EXITTIMEOUT*
// variables described above (defaults for those unset or empty).
absl::Duration ExitTimeoutFromEnv(uint32_t nodes);

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_EXIT_TIMEOUT_H_
