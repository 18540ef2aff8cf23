// The job runner's own checks: a job past its limit is killed, with what
// its processes were doing in the result; an ordinary one is left alone.
#include "tests/testing/job_runner.h"

#include <unistd.h>

#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace gexrt::testing {
namespace {

TEST(JobRunnerTest, AJobWithinItsLimitKeepsItsOutputAndExitCode) {
  BecomeSubreaper();
  JobSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"};
  const JobResult r = RunJob(spec);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_TRUE(r.survivors.empty());
}

TEST(JobRunnerTest, AJobPastItsLimitIsKilledWithItsProcessesNamed) {
  BecomeSubreaper();
  JobSpec spec;
  // A launcher (sh) with a child that never ends, as a hung rank.
  spec.argv = {"/bin/sh", "-c", "sleep 1000 & wait"};
  spec.limit = absl::Milliseconds(300);
  const JobResult r = RunJob(spec);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_NE(r.err.find("[job_runner: the job ran past its limit"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("sleep 1000"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[job_runner: killed the launcher after the limit]"),
            std::string::npos);
  if (access("/usr/bin/gdb", X_OK) == 0) {
    // The hung child's stack: its innermost frame at least.
    EXPECT_NE(r.err.find("#0 "), std::string::npos) << r.err;
  }
  // The orphaned child was found and killed, not left running.
  EXPECT_EQ(r.survivors.size(), 1u);
}

}  // namespace
}  // namespace gexrt::testing
