// The end-signal deferral (exit/signals.h): a SIGTERM that lands while the
// probe says "inside" is recorded, not acted on, and RaiseDeferredEndSignal
// raises it again once outside. (The exit it then starts is the exit
// layer's own business: tests/exit covers it; here the process only has
// to end by it.)
#include <signal.h>

#include <cstdio>

#include "exit/signals.h"
#include "gtest/gtest.h"

namespace gexrt::exit {
namespace {

bool g_inside = false;
bool Inside() { return g_inside; }

TEST(SignalDeferralDeathTest, SigtermInsideWaitsUntilOutside) {
  EXPECT_EXIT(
      {
        InstallSignalHandlers();
        SetEndSignalDeferral(&Inside);
        g_inside = true;
        raise(SIGTERM);
        // Still here: recorded, not acted on.
        if (internal::g_deferred_end_signal.load() != SIGTERM) _exit(10);
        // Raised again while still inside: recorded again.
        RaiseDeferredEndSignal();
        if (internal::g_deferred_end_signal.load() != SIGTERM) _exit(11);
        // (Only reached if the signal waited: the death test's pattern.)
        fprintf(stderr, "still alive after two deferrals\n");
        g_inside = false;
        RaiseDeferredEndSignal();  // now the exit runs and ends the process
        _exit(12);
      },
      [](int status) {
        // Ended by the signal's exit, not by reaching any _exit above.
        return !(WIFEXITED(status) && WEXITSTATUS(status) >= 10 &&
                 WEXITSTATUS(status) <= 12);
      },
      "still alive after two deferrals");
}

TEST(SignalDeferralTest, NothingDeferredIsNothingRaised) {
  RaiseDeferredEndSignal();  // no signal pending: returns
  SUCCEED();
}

}  // namespace
}  // namespace gexrt::exit
