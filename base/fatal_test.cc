#include "base/fatal.h"

#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "base/job_rank.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt {
namespace {

using ::testing::HasSubstr;

TEST(FatalTest, TextCarriesTheRankOrAQuestionMark) {
  SetJobRank(kUnknownRank);
  EXPECT_EQ(FatalErrorText("boom"), "*** FATAL ERROR (proc ?): boom");
  EXPECT_EQ(WarningText("hmm"), "*** WARNING (proc ?): hmm");
  SetJobRank(3);
  EXPECT_EQ(FatalErrorText("boom"), "*** FATAL ERROR (proc 3): boom");
  SetJobRank(kUnknownRank);
}

TEST(FatalTest, FatalErrorAbortsWithTheMessage) {
  EXPECT_DEATH(
      {
        SetJobRank(7);
        FatalErrorF("gex_Segment_Attach: size %d is not allowed", 0);
      },
      "^\\*\\*\\* FATAL ERROR \\(proc 7\\): gex_Segment_Attach: size 0 is "
      "not allowed\n");
}

void WriteMarker(int fd) {
  constexpr char kMarker[] = "CUSTOM BACKTRACE HOOK RAN\n";
  [[maybe_unused]] ssize_t n = write(fd, kMarker, sizeof(kMarker) - 1);
}

TEST(FatalTest, BacktraceHookRunsWhenGasnetBacktraceIsSet) {
  EXPECT_DEATH(
      {
        setenv("GASNET_BACKTRACE", "1", 1);
        SetBacktraceHook(&WriteMarker);
        FatalError("with backtrace");
      },
      "with backtrace\n.*CUSTOM BACKTRACE HOOK RAN");
}

TEST(FatalTest, NoBacktraceByDefault) {
  // The death-test child's stderr must not contain the marker.
  EXPECT_DEATH(
      {
        unsetenv("GASNET_BACKTRACE");
        SetBacktraceHook(&WriteMarker);
        FatalError("no backtrace");
      },
      "no backtrace\n$");
}

TEST(FatalTest, DefaultBacktracePrintsFrames) {
  EXPECT_DEATH(
      {
        setenv("GASNET_BACKTRACE", "yes", 1);
        SetBacktraceHook(nullptr);  // Back to the glibc one.
        FatalError("frames");
      },
      "BACKTRACE \\(proc \\?\\): stack of the failing thread:\n.*\\[0x");
}

void ExitSeven() { _exit(7); }

TEST(FatalTest, FatalExitHookEndsTheJob) {
  EXPECT_EXIT(
      {
        SetFatalExitHook(&ExitSeven);
        FatalError("hooked");
      },
      ::testing::ExitedWithCode(7), "FATAL ERROR \\(proc \\?\\): hooked");
}

TEST(FatalTest, WarningDoesNotEndTheProcess) {
  SetJobRank(2);
  ::testing::internal::CaptureStderr();
  WarningF("%d things", 3);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "*** WARNING (proc 2): 3 things\n");
  SetJobRank(kUnknownRank);
}

}  // namespace
}  // namespace gexrt
