// The rank records gasnetrun -spawner=pmi reads (pmix_bootstrap_pids.h).
#include "bootstrap/pmix_bootstrap_pids.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/host_id.h"
#include "gtest/gtest.h"

namespace gexrt {
namespace {

std::string TempDir() {
  std::string templ = absl::StrCat(
      std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp",
      "/ranksXXXXXX");
  return mkdtemp(templ.data()) != nullptr ? templ : "";
}

TEST(RankRecordTest, FormatAndParseRoundTrip) {
  const RankRecord r{3, 0xabcdef0123456789ull, 4242, 987654};
  std::optional<RankRecord> back = ParseRankRecord(3, FormatRankRecord(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->rank, 3u);
  EXPECT_EQ(back->host_id, r.host_id);
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->start_time, 987654u);
}

TEST(RankRecordTest, MalformedRecordsAreRejected) {
  for (const char* text : {"", "1 2 3", "1 2\n", "zz 2 3\n", "1 -2 3\n",
                           "1 0 3\n", "1 2 x\n", "1 2 3 4\n"}) {
    EXPECT_FALSE(ParseRankRecord(0, text).has_value()) << text;
  }
}

TEST(RankRecordTest, OwnRecordIsReadBackAndAlive) {
  const std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  ASSERT_TRUE(WriteOwnRankRecord(dir, 5).ok());
  std::vector<RankRecord> records = ReadRankRecords(dir);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].rank, 5u);
  EXPECT_EQ(records[0].pid, getpid());
  EXPECT_EQ(records[0].host_id, HostId());
  EXPECT_TRUE(RankRecordAlive(records[0]));
  // Another host's record, or a reused pid (other start time), is not ours.
  RankRecord other_host = records[0];
  other_host.host_id ^= 1;
  EXPECT_FALSE(RankRecordAlive(other_host));
  RankRecord reused = records[0];
  reused.start_time += 1;
  EXPECT_FALSE(RankRecordAlive(reused));
}

TEST(RankRecordTest, AZombieOrReapedProcessIsNotAlive) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  // The zombie: its stat says Z until it is reaped. waitid with WNOWAIT
  // returns once it has exited, leaving it unreaped.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);
  EXPECT_FALSE(LiveProcessStartTime(child).has_value());
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(LiveProcessStartTime(child).has_value());
  EXPECT_TRUE(LiveProcessStartTime(getpid()).has_value());
}

TEST(RankRecordTest, AnUnwritableDirectoryIsAnError) {
  EXPECT_FALSE(WriteOwnRankRecord("/nonexistent/dir", 0).ok());
  EXPECT_TRUE(ReadRankRecords("/nonexistent/dir").empty());
}

}  // namespace
}  // namespace gexrt
