// The rule of exit/signals.h: an end signal that lands while the thread is
// inside the conduit (ConduitCall, LibraryCall) is recorded, not acted on;
// the exit runs as the thread leaves its outermost scope, or at a wait
// point of the outermost call. (No exit::Install here: the exit ends this
// process alone with 128 + signal, which is what these tests look for;
// tests/exit covers the job's exit.)
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "exit/signals.h"
#include "gtest/gtest.h"

namespace gexrt::exit {
namespace {

// Exit codes of the child's own, which only a deferral that failed (or a
// signal that was never acted on) reaches.
constexpr int kNotDeferred = 10;
constexpr int kNeverActed = 11;

bool ExitedWith(int status, int code) {
  return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

// The child raises `sig` inside a conduit call, says it survived it, and
// leaves: the exit must run then, with 128 + sig.
void RaiseInsideThenLeave(int sig) {
  InstallSignalHandlers();
  {
    const ConduitCall call;
    {
      const LibraryCall library;
      raise(sig);
    }
    // Leaving the library call inside the conduit call acts on nothing.
    raise(sig);
    std::fprintf(stderr, "survived inside\n");
  }
  _exit(kNeverActed);
}

TEST(SignalDeferralDeathTest, SigtermWaitsForTheOutermostReturn) {
  EXPECT_EXIT(
      RaiseInsideThenLeave(SIGTERM),
      [](int status) { return ExitedWith(status, 128 + SIGTERM); },
      "survived inside");
}

TEST(SignalDeferralDeathTest, SigintWaitsForTheOutermostReturn) {
  EXPECT_EXIT(
      RaiseInsideThenLeave(SIGINT),
      [](int status) { return ExitedWith(status, 128 + SIGINT); },
      "survived inside");
}

TEST(SignalDeferralDeathTest, SighupWaitsForTheOutermostReturn) {
  EXPECT_EXIT(
      RaiseInsideThenLeave(SIGHUP),
      [](int status) { return ExitedWith(status, 128 + SIGHUP); },
      "survived inside");
}

TEST(SignalDeferralDeathTest, SigquitWaitsForTheOutermostReturn) {
  EXPECT_EXIT(
      RaiseInsideThenLeave(SIGQUIT),
      [](int status) { return ExitedWith(status, 128 + SIGQUIT); },
      "survived inside");
}

TEST(SignalDeferralDeathTest, LibraryCallAloneDefersToo) {
  EXPECT_EXIT(
      {
        InstallSignalHandlers();
        {
          const LibraryCall library;
          raise(SIGTERM);
          std::fprintf(stderr, "survived inside\n");
        }
        _exit(kNeverActed);
      },
      [](int status) { return ExitedWith(status, 128 + SIGTERM); },
      "survived inside");
}

TEST(SignalDeferralDeathTest, OutsideActsAtOnce) {
  EXPECT_EXIT(
      {
        InstallSignalHandlers();
        raise(SIGTERM);
        _exit(kNotDeferred);
      },
      [](int status) { return ExitedWith(status, 128 + SIGTERM); }, "");
}

// A wait of the outermost call acts; one nested in the conduit (a Reply
// from a handler inside Poll) or inside a library call does not.
TEST(SignalDeferralDeathTest, WaitPointOfTheOutermostCallActs) {
  EXPECT_EXIT(
      {
        InstallSignalHandlers();
        const ConduitCall call;
        raise(SIGTERM);
        {
          const ConduitCall nested;
          AtWaitPoint();
        }
        {
          const LibraryCall library;
          AtWaitPoint();
        }
        std::fprintf(stderr, "survived the nested waits\n");
        AtWaitPoint();
        _exit(kNeverActed);
      },
      [](int status) { return ExitedWith(status, 128 + SIGTERM); },
      "survived the nested waits");
}

TEST(SignalDeferralTest, NothingDeferredIsNothingDone) {
  {
    const ConduitCall call;
    AtWaitPoint();
  }
  ActOnDeferredExit();
  EXPECT_FALSE(InsideConduit());
  EXPECT_FALSE(InsideLibraryCall());
}

TEST(SignalDeferralTest, ScopesCountPerThread) {
  {
    const ConduitCall call;
    EXPECT_TRUE(InsideConduit());
    EXPECT_FALSE(InsideLibraryCall());
    {
      const LibraryCall library;
      EXPECT_TRUE(InsideLibraryCall());
    }
    EXPECT_TRUE(InsideConduit());
  }
  EXPECT_FALSE(InsideConduit());
}

}  // namespace
}  // namespace gexrt::exit
