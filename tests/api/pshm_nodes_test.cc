// GASNET_PSHM_NODES: a client started directly, with no launcher, runs as
// a job of that many ranks on this host (the process becomes its own
// gasnetrun_smp). Proves the job really has N ranks that talk to each
// other (every AM and barrier of legacy_client's "am" mode), that its exit
// code comes through, that nothing outlives it, and that a malformed value
// is an error naming the variable.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

JobResult RunDirect(const std::vector<std::string>& args,
                    const std::string& nodes) {
  BecomeSubreaper();
  JobSpec spec;
  spec.argv = {Runfile("tests/api/legacy_client")};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  const std::string tmpdir = MakeTempDir("pshm_nodes");
  // No launcher variables: the client must start its own ranks.
  spec.env = {"GEX_BOOTSTRAP_FD",
              "GEX_BOOTSTRAP_RANK",
              "GEX_BOOTSTRAP_SIZE",
              "GEX_JOB_ID",
              "PMIX_RANK",
              "GASNET_PSHMNET_QUEUE_DEPTH",
              "GASNET_SUPERNODE_MAXSIZE",
              "GASNET_PSHM_NODES=" + nodes,
              "GASNET_TMPDIR=" + tmpdir,
              "TMPDIR=" + tmpdir};
  spec.limit = absl::Seconds(120);
  return RunJob(spec);
}

TEST(PshmNodesTest, StartsThatManyRanksWithoutALauncher) {
  const JobResult r = RunDirect({"am"}, "3");
  for (const auto& [rank, line] : ExpectEveryRankOk(r, 3, "am ok")) {
    EXPECT_EQ(Field(line, "requests"), 7LL * 3) << line;
    EXPECT_EQ(Field(line, "replies"), 7LL * 3) << line;
  }
}

TEST(PshmNodesTest, OneMeansASingleRank) {
  const JobResult r = RunDirect({"am"}, "1");
  ExpectEveryRankOk(r, 1, "am ok");
}

TEST(PshmNodesTest, TheJobsExitCodeComesThrough) {
  const JobResult r = RunDirect({"exit-one"}, "3");
  EXPECT_EQ(r.exit_code, 5) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
}

TEST(PshmNodesTest, AMalformedValueNamesTheVariable) {
  const JobResult r = RunDirect({"am"}, "three");
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("GASNET_PSHM_NODES")) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
}

}  // namespace
}  // namespace gexrt::testing
