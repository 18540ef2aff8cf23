#include "bootstrap/exit_timeout.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "base/env/settings.h"
#include "base/fatal.h"

namespace gexrt {
namespace {

// GetDecimal accepts any finite number; a negative time makes no sense for
// any of these variables, so it is rejected here in the same words base/env
// uses for a malformed value.
double GetSeconds(std::string_view name, double default_s) {
  const double value = env::GetDecimal(name, default_s);
  if (value < 0) {
    FatalErrorF(
        "environment variable %s has the invalid value \"%s\": a time in "
        "seconds may not be negative",
        name, env::GetRaw(name).value_or(""));
  }
  return value;
}

}  // namespace

absl::Duration ComputeExitTimeout(uint32_t nodes, const ExitTimeoutSettings& s,
                                  std::optional<double> explicit_s) {
  const double seconds =
      explicit_s.has_value()
          ? *explicit_s
          : std::min(s.max_s,
                     s.min_s + static_cast<double>(nodes) * s.factor_s);
  // absl::Seconds saturates to InfiniteDuration for values too large to
  // represent, which is the right meaning for a huge setting.
  return std::max(absl::Seconds(seconds), kMinExitTimeout);
}

absl::Duration ExitTimeoutFromEnv(uint32_t nodes) {
  ExitTimeoutSettings defaults;
  ExitTimeoutSettings s;
  s.max_s = GetSeconds("GASNET_EXITTIMEOUT_MAX", defaults.max_s);
  s.min_s = GetSeconds("GASNET_EXITTIMEOUT_MIN", defaults.min_s);
  s.factor_s = GetSeconds("GASNET_EXITTIMEOUT_FACTOR", defaults.factor_s);
  // GASNET_EXITTIMEOUT's default is the computed value, so that
  // GASNET_VERBOSEENV shows the timeout actually in force either way.
  const double computed_s = absl::ToDoubleSeconds(
      ComputeExitTimeout(nodes, s, /*explicit_s=*/std::nullopt));
  return ComputeExitTimeout(nodes, s,
                            GetSeconds("GASNET_EXITTIMEOUT", computed_s));
}

}  // namespace gexrt
