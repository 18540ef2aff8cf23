#include "bootstrap/bootstrap_timeout.h"

#include "base/env/settings.h"
#include "base/fatal.h"

namespace gexrt {

absl::Duration BootstrapTimeoutFromEnv() {
  const double seconds = env::GetDecimal("GASNET_BOOTSTRAP_TIMEOUT",
                                         kDefaultBootstrapTimeoutSeconds);
  if (!(seconds > 0) || seconds > 1e9) {
    FatalErrorF(
        "GASNET_BOOTSTRAP_TIMEOUT='%g' is not allowed: it must be a positive "
        "number of seconds (default %g)",
        seconds, kDefaultBootstrapTimeoutSeconds);
  }
  return absl::Seconds(seconds);
}

}  // namespace gexrt
