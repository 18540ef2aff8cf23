// The PSHM layer end to end: jobs of pshm_client started by gasnetrun_smp
// (fork spawner), built once per mechanism (pshm_mechanism_test), checked
// from the outside: what each rank reports, exit codes, surviving
// processes, and which of the job's shared memory objects exist during
// and after the job.
//
// Leaks are judged here, not by the code under test: for posix, entries
// /dev/shm/GASNT<job id>.*; for file, any GASNT* entry in the fresh
// directory the job is given as GASNET_TMPDIR (or TMPDIR); for sysv,
// segments in /proc/sysvipc/shm created by one of the job's rank pids.
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pshm/queue_config.h"
#include "pshm/queue_layout.h"
#include "pshm/shared_object.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

std::string Launcher() { return Runfile("tools/gasnetrun_smp"); }
std::string Client() { return Runfile("tests/pshm/pshm_client"); }
std::string Mechanism() { return std::string(pshm::MechanismName()); }

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void TouchFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f != nullptr) std::fclose(f);
}

std::string ReadFirstLine(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

pid_t RankPid(const std::string& pid_dir, int rank) {
  return static_cast<pid_t>(std::atoi(
      ReadFirstLine(absl::StrFormat("%s/%d.pid", pid_dir, rank)).c_str()));
}

struct SysvSegment {
  long id;
  unsigned long size;
  pid_t creator;
  unsigned long attached;
};

std::vector<SysvSegment> SysvSegments() {
  std::vector<SysvSegment> out;
  std::ifstream in("/proc/sysvipc/shm");
  std::string line;
  std::getline(in, line);  // Header.
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    long key, id, perms;
    unsigned long size, attached;
    pid_t cpid, lpid;
    if (fields >> key >> id >> perms >> size >> cpid >> lpid >> attached) {
      out.push_back({id, size, cpid, attached});
    }
  }
  return out;
}

// The job's shared memory objects that exist now (see the file comment).
std::vector<std::string> JobObjects(const std::string& job_id,
                                    const std::string& tmpdir,
                                    const std::vector<pid_t>& rank_pids) {
  const std::string mechanism = Mechanism();
  if (mechanism == "posix") {
    return EntriesWithPrefix("/dev/shm", "GASNT" + job_id + ".");
  }
  if (mechanism == "file") return EntriesWithPrefix(tmpdir, "GASNT");
  std::vector<std::string> found;
  for (const SysvSegment& s : SysvSegments()) {
    if (std::find(rank_pids.begin(), rank_pids.end(), s.creator) !=
        rank_pids.end()) {
      found.push_back(
          absl::StrFormat("shmid %d (%u bytes, creator %d, %u "
                          "attached)",
                          s.id, s.size, s.creator, s.attached));
    }
  }
  return found;
}

// Runs `action` on a thread of its own as soon as `file` exists (a bounded
// poll for a condition), unless the job ends first.
class WhenFileExists {
 public:
  WhenFileExists(std::string file, std::function<void()> action)
      : thread_([this, file = std::move(file), action = std::move(action)] {
          const absl::Time deadline = absl::Now() + absl::Seconds(120);
          while (!stop_.load() && absl::Now() < deadline) {
            if (FileExists(file)) {
              action();
              ran_ = true;
              return;
            }
            poll(nullptr, 0, 5);
          }
        }) {}
  ~WhenFileExists() { Finish(); }

  // Stops waiting; returns whether the action ran.
  bool Finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return ran_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<bool> ran_{false};
  std::thread thread_;  // Last: starts after the flags exist.
};

// One job and what it left.
struct Job {
  JobResult r;
  std::string pid_dir;
  std::string tmpdir;
  std::string job_id;
  std::vector<pid_t> pids;  // Its ranks.
};

std::string Describe(const Job& j) {
  std::string out = j.r.out, err = j.r.err;
  for (std::string* text : {&out, &err}) {
    if (text->size() > 6000) {
      *text =
          text->substr(0, 3000) + "\n...\n" + text->substr(text->size() - 3000);
    }
  }
  return absl::StrFormat(
      "mechanism: %s\ncommand: %s\nexit: %d\njob id: %s\nstdout:\n%s\n"
      "stderr:\n%s",
      Mechanism(), j.r.command, j.r.exit_code, j.job_id, out, err);
}

struct JobOptions {
  std::vector<std::string> env;
  int signal = 0;           // Sent to the launcher once ...
  std::string signal_when;  // ... this file (in the pid dir) exists.
  std::string watch;        // File in the pid dir for `on_watch`.
  std::function<void(Job&)> on_watch;
};

JobOptions WithEnv(std::vector<std::string> env) {
  JobOptions options;
  options.env = std::move(env);
  return options;
}

// Starts `n` ranks of pshm_client with `args` (after --pids DIR), in a
// fresh GASNET_TMPDIR and TMPDIR, with none of the PSHM variables set
// unless `options.env` sets them.
Job RunClient(int n, const std::vector<std::string>& args,
              JobOptions options = {}) {
  Job job;
  job.pid_dir = MakeTempDir("pids");
  job.tmpdir = MakeTempDir("shm");
  JobSpec spec;
  spec.argv = {Launcher(), "-n",     std::to_string(n),
               Client(),   "--pids", job.pid_dir};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = {"GASNET_EXITTIMEOUT=1",        "GASNET_SMP_SPAWNER",
              "GASNET_PSHMNET_QUEUE_DEPTH",  "GASNET_PSHMNET_QUEUE_MEMORY",
              "GASNET_MAX_SEGSIZE",          "GASNET_SUPERNODE_MAXSIZE",
              "GASNET_TMPDIR=" + job.tmpdir, "TMPDIR=" + job.tmpdir};
  spec.env.insert(spec.env.end(), options.env.begin(), options.env.end());
  spec.limit = absl::Seconds(150);
  if (options.signal != 0) {
    spec.signal = options.signal;
    spec.signal_when_file = job.pid_dir + "/" + options.signal_when;
  }
  std::unique_ptr<WhenFileExists> watcher;
  if (options.on_watch) {
    watcher = std::make_unique<WhenFileExists>(
        job.pid_dir + "/" + options.watch, [&job, &options] {
          job.job_id = ReadFirstLine(job.pid_dir + "/job_id");
          job.pids = PidsInDir(job.pid_dir);
          options.on_watch(job);
        });
  }
  job.r = RunJob(spec);
  if (watcher) watcher->Finish();
  job.job_id = ReadFirstLine(job.pid_dir + "/job_id");
  job.pids = PidsInDir(job.pid_dir);
  return job;
}

// Every process of the job is gone and none of its objects exists. A job
// that wrote no pid files could not be checked: that fails too. (Also
// after a launcher was SIGKILLed: its clean-up guard keeps the launcher's
// output open until the ranks have exited and it has cleaned up, so the
// test sees the job's end only after that.)
void ExpectNothingLeft(const Job& job, int n) {
  ASSERT_THAT(job.pids, SizeIs(n)) << Describe(job);
  ASSERT_FALSE(job.job_id.empty()) << Describe(job);
  EXPECT_THAT(job.r.survivors, IsEmpty()) << Describe(job);
  EXPECT_THAT(WaitForPidsGone(job.pids, absl::Seconds(30)), IsEmpty())
      << Describe(job);
  EXPECT_THAT(JobObjects(job.job_id, job.tmpdir, job.pids), IsEmpty())
      << Describe(job);
}

// Lines "rank R: <what>..." of `out`, by rank; a rank reporting twice fails.
std::map<int, std::string> Reports(const Job& job, const std::string& what) {
  std::map<int, std::string> by_rank;
  for (const std::string& line : Lines(job.r.out)) {
    int rank;
    char rest[16];
    if (sscanf(line.c_str(), "rank %d: %15s", &rank, rest) != 2) continue;
    const std::string head = absl::StrFormat("rank %d: %s", rank, what);
    if (line.rfind(head, 0) != 0) continue;
    EXPECT_EQ(by_rank.count(rank), 0u) << "rank " << rank << " twice: " << line;
    by_rank[rank] = line;
  }
  return by_rank;
}

// The value of "key=value" in `line` ("" when absent).
std::string Field(const std::string& line, const std::string& key) {
  const std::regex re("(^| )" + key + "=([^ ]*)");
  std::smatch m;
  if (!std::regex_search(line, m, re)) return "";
  return m[2];
}

// Each of ranks 0..n-1 reported `what` once, naming this job's prefix and
// this build's mechanism; returns the lines by rank.
std::map<int, std::string> ExpectEveryRank(const Job& job, int n,
                                           const std::string& what) {
  std::map<int, std::string> lines = Reports(job, what);
  EXPECT_EQ(lines.size(), static_cast<size_t>(n))
      << "ranks reporting \"" << what << "\"\n"
      << Describe(job);
  for (const auto& [rank, line] : lines) {
    EXPECT_GE(rank, 0);
    EXPECT_LT(rank, n);
    EXPECT_EQ(Field(line, "prefix"), job.job_id) << line;
    EXPECT_EQ(Field(line, "mechanism"), Mechanism()) << line;
  }
  return lines;
}

uint64_t Number(const std::string& line, const std::string& key) {
  return std::stoull(Field(line, key).empty() ? "0" : Field(line, key));
}

// The objects a running job of n ranks, each with a network and a segment,
// shows: none by name (names are removed once every peer has mapped them),
// and for sysv its 2n attached segments.
size_t ObjectsWhileRunning(int n) { return Mechanism() == "sysv" ? 2 * n : 0; }

// ---------------------------------------------------------------------------

class PshmJobTest : public ::testing::TestWithParam<int> {};

TEST_P(PshmJobTest, EveryRankSeesEveryPeersSegment) {
  const int n = GetParam();
  Job job = RunClient(n, {"segments", "4M"});
  ASSERT_EQ(job.r.exit_code, 0) << Describe(job);
  for (const auto& [rank, line] : ExpectEveryRank(job, n, "segments ok")) {
    EXPECT_EQ(Number(line, "peers"), static_cast<uint64_t>(n)) << line;
    EXPECT_EQ(Number(line, "outsiders"), 0u) << line;
    EXPECT_GE(Number(line, "size"), (4u << 20) + 1000u * rank) << line;
  }
  EXPECT_THAT(job.r.out, HasSubstr(absl::StrFormat("rank 0: objects=%d\n",
                                                   ObjectsWhileRunning(n))))
      << Describe(job);
  ExpectNothingLeft(job, n);
}

// Counts per rank pair that keep an 8-rank job (oversubscribed on 2 cores)
// short: a few thousand messages per phase in all.
int SmallCount(int n) { return n == 2 ? 4000 : n == 4 ? 1500 : 400; }
int FullCount(int n) { return n == 2 ? 400 : n == 4 ? 150 : 40; }

void ExpectFlood(const Job& job, int n, int count, const std::string& what) {
  ASSERT_EQ(job.r.exit_code, 0) << Describe(job);
  for (const char* phase : {"medium", "long", "short"}) {
    const std::map<int, std::string> lines =
        Reports(job, absl::StrFormat("flood %s ok", phase));
    EXPECT_EQ(lines.size(), static_cast<size_t>(n)) << phase << Describe(job);
    for (const auto& [rank, line] : lines) {
      EXPECT_EQ(Number(line, "sent"), static_cast<uint64_t>(count) * n) << line;
      EXPECT_EQ(Number(line, "received"), static_cast<uint64_t>(count) * n)
          << line;
      EXPECT_GT(Number(line, "replies"), 0u) << line;
    }
  }
  ExpectEveryRank(job, n, what + " ok");
}

TEST_P(PshmJobTest, FloodOfSmallMessagesArrivesOnceInOrder) {
  const int n = GetParam();
  const int count = SmallCount(n);
  Job job = RunClient(n, {"flood", std::to_string(count), "8"});
  ExpectFlood(job, n, count, "flood");
  ExpectNothingLeft(job, n);
}

TEST_P(PshmJobTest, FloodOfFullSizeMessagesArrivesOnceInOrder) {
  const int n = GetParam();
  const int count = FullCount(n);
  Job job = RunClient(
      n, {"flood", std::to_string(count), std::to_string(pshm::kMaxMedium)});
  ExpectFlood(job, n, count, "flood");
  ExpectNothingLeft(job, n);
}

TEST_P(PshmJobTest, ImmediateSendsRefuseWhenTheReceiverIsNotPolling) {
  const int n = GetParam();
  Job job = RunClient(n, {"immediate"});
  ASSERT_EQ(job.r.exit_code, 0) << Describe(job);
  ExpectEveryRank(job, n, "immediate ok");
  // A queue of 8 slots takes 8 messages from a sender whose receiver is not
  // polling: the cancelled reservation and 7 Shorts.
  for (int from = 0; from < n; ++from) {
    for (int to = 0; to < n; ++to) {
      EXPECT_THAT(job.r.out, HasSubstr(absl::StrFormat(
                                 "rank %d: immediate shorts to rank %d: %d\n",
                                 from, to, pshm::kDefaultQueueDepth - 1)))
          << Describe(job);
    }
  }
  const std::map<int, std::string> mediums = Reports(job, "immediate mediums:");
  EXPECT_EQ(mediums.size(), static_cast<size_t>(n)) << Describe(job);
  for (const auto& [rank, line] : mediums) {
    EXPECT_THAT(line, HasSubstr("then kWouldBlock")) << line;
    int sent = 0;
    ASSERT_EQ(sscanf(line.c_str(), "rank %*d: immediate mediums: %d", &sent), 1)
        << line;
    // At least one fits; never more than the 1 MiB pool holds.
    EXPECT_GE(sent, 1) << line;
    EXPECT_LE(sent,
              static_cast<int>(pshm::kDefaultQueueMemory / pshm::kMaxMedium))
        << line;
  }
  ExpectNothingLeft(job, n);
}

INSTANTIATE_TEST_SUITE_P(Ranks, PshmJobTest, ::testing::Values(2, 4, 8),
                         [](const auto& info) {
                           return absl::StrFormat("n%d", info.param);
                         });

// --- flow control ----------------------------------------------------------

class BackpressureTest : public ::testing::TestWithParam<int> {};

TEST_P(BackpressureTest, DepthOneAndMinimumMemoryStillDeliverEverything) {
  const int n = GetParam();
  const int count = n == 2 ? 150 : 50;
  const uint64_t memory = pshm::MinQueueMemory();
  Job job = RunClient(
      n,
      {"backpressure", std::to_string(count), std::to_string(pshm::kMaxMedium)},
      WithEnv({"GASNET_PSHMNET_QUEUE_DEPTH=1",
               absl::StrFormat("GASNET_PSHMNET_QUEUE_MEMORY=%d", memory)}));
  ExpectFlood(job, n, count, "backpressure");
  uint64_t waits = 0;
  for (const auto& [rank, line] : Reports(job, "backpressure ok")) {
    EXPECT_EQ(Field(line, "depth"), "1") << line;
    EXPECT_EQ(Number(line, "memory"), memory) << line;
    waits += Number(line, "waits");
  }
  // Senders had to wait for slots and pool space.
  EXPECT_GT(waits, 0u) << Describe(job);
  ExpectNothingLeft(job, n);
}

INSTANTIATE_TEST_SUITE_P(Ranks, BackpressureTest, ::testing::Values(2, 4),
                         [](const auto& info) {
                           return absl::StrFormat("n%d", info.param);
                         });

TEST(QueueShapeTest, DepthThatIsNotAPowerOfTwo) {
  Job job = RunClient(4, {"flood", "300", "200"},
                      WithEnv({"GASNET_PSHMNET_QUEUE_DEPTH=3"}));
  ExpectFlood(job, 4, 300, "flood");
  for (const auto& [rank, line] : Reports(job, "flood ok")) {
    EXPECT_EQ(Field(line, "depth"), "3") << line;
  }
  ExpectNothingLeft(job, 4);

  Job immediate =
      RunClient(3, {"immediate"}, WithEnv({"GASNET_PSHMNET_QUEUE_DEPTH=3"}));
  ASSERT_EQ(immediate.r.exit_code, 0) << Describe(immediate);
  ExpectEveryRank(immediate, 3, "immediate ok");
  EXPECT_THAT(immediate.r.out, HasSubstr("rank 2: immediate shorts to rank 0: "
                                         "2\n"))
      << Describe(immediate);
  ExpectNothingLeft(immediate, 3);
}

TEST(QueueShapeTest, LargestDepthAndMemory) {
  Job job = RunClient(2, {"flood", "200", "65536"},
                      WithEnv({"GASNET_PSHMNET_QUEUE_DEPTH=65535",
                               "GASNET_PSHMNET_QUEUE_MEMORY=64M"}));
  ExpectFlood(job, 2, 200, "flood");
  for (const auto& [rank, line] : Reports(job, "flood ok")) {
    EXPECT_EQ(Field(line, "depth"), "65535") << line;
    EXPECT_EQ(Number(line, "memory"), 64u << 20) << line;
  }
  ExpectNothingLeft(job, 2);
}

// --- supernodes and segment limits -----------------------------------------

TEST(SupernodeTest, SupernodeMaxSizeSplitsTheJob) {
  Job job =
      RunClient(4, {"segments", "1M"}, WithEnv({"GASNET_SUPERNODE_MAXSIZE=2"}));
  ASSERT_EQ(job.r.exit_code, 0) << Describe(job);
  for (const auto& [rank, line] : ExpectEveryRank(job, 4, "segments ok")) {
    EXPECT_EQ(Number(line, "peers"), 2u) << line;
    EXPECT_EQ(Number(line, "outsiders"), 2u) << line;
  }
  ExpectNothingLeft(job, 4);

  Job flood = RunClient(4, {"flood", "300", "1000"},
                        WithEnv({"GASNET_SUPERNODE_MAXSIZE=2"}));
  ASSERT_EQ(flood.r.exit_code, 0) << Describe(flood);
  for (const auto& [rank, line] : Reports(flood, "flood medium ok")) {
    EXPECT_EQ(Number(line, "received"), 600u) << line;  // 2 peers
  }
  ExpectEveryRank(flood, 4, "flood ok");
  ExpectNothingLeft(flood, 4);
}

TEST(SegmentLimitTest, PerHostLimitIsSharedByTheRanks) {
  Job job =
      RunClient(4, {"segments", "max"}, WithEnv({"GASNET_MAX_SEGSIZE=8M/H"}));
  ASSERT_EQ(job.r.exit_code, 0) << Describe(job);
  for (const auto& [rank, line] : ExpectEveryRank(job, 4, "segments ok")) {
    EXPECT_EQ(Number(line, "max_local"), 2u << 20) << line;
    EXPECT_EQ(Number(line, "size"), 2u << 20) << line;
  }
  ExpectNothingLeft(job, 4);
}

TEST(SegmentLimitTest, PerProcessLimitIsEachRanks) {
  Job job =
      RunClient(3, {"segments", "max"}, WithEnv({"GASNET_MAX_SEGSIZE=3M/P"}));
  ASSERT_EQ(job.r.exit_code, 0) << Describe(job);
  for (const auto& [rank, line] : ExpectEveryRank(job, 3, "segments ok")) {
    EXPECT_EQ(Number(line, "max_local"), 3u << 20) << line;
    EXPECT_EQ(Number(line, "size"), 3u << 20) << line;
  }
  ExpectNothingLeft(job, 3);
}

// --- leaks -----------------------------------------------------------------

TEST(LeakTest, NormalExitLeavesNothing) {
  Job job = RunClient(4, {"segments", "2M"});
  ASSERT_EQ(job.r.exit_code, 0) << Describe(job);
  ExpectEveryRank(job, 4, "segments ok");
  ExpectNothingLeft(job, 4);
}

TEST(LeakTest, SigkilledRankLeavesNothing) {
  const int n = 4;
  std::vector<std::string> while_running;
  bool killed = false;
  JobOptions options;
  options.watch = "ready";
  options.on_watch = [&](Job& j) {
    while_running = JobObjects(j.job_id, j.tmpdir, j.pids);
    killed = kill(RankPid(j.pid_dir, n - 1), SIGKILL) == 0;
  };
  Job job = RunClient(n, {"spin"}, options);
  ASSERT_TRUE(killed) << Describe(job);
  EXPECT_EQ(job.r.exit_code, 128 + SIGKILL) << Describe(job);
  EXPECT_THAT(job.r.err, HasSubstr(absl::StrFormat(
                             "rank %d was killed by signal 9", n - 1)))
      << Describe(job);
  ExpectEveryRank(job, n, "spinning");
  EXPECT_THAT(while_running, SizeIs(ObjectsWhileRunning(n)))
      << absl::StrJoin(while_running, "\n") << Describe(job);
  ExpectNothingLeft(job, n);
}

TEST(LeakTest, SigkilledLauncherLeavesNothing) {
  const int n = 4;
  std::vector<std::string> while_running;
  JobOptions options;
  options.signal = SIGKILL;
  options.signal_when = "go";
  options.watch = "ready";
  options.on_watch = [&](Job& j) {
    while_running = JobObjects(j.job_id, j.tmpdir, j.pids);
    TouchFile(j.pid_dir + "/go");
  };
  Job job = RunClient(n, {"spin"}, options);
  EXPECT_EQ(job.r.exit_code, 128 + SIGKILL) << Describe(job);
  ExpectEveryRank(job, n, "spinning");
  EXPECT_THAT(while_running, SizeIs(ObjectsWhileRunning(n)))
      << absl::StrJoin(while_running, "\n") << Describe(job);
  // After start-up no object has a name: what is gone went by itself (the
  // guard had nothing to remove, so it says nothing).
  EXPECT_THAT(job.r.err, Not(HasSubstr("ended without cleaning up")))
      << Describe(job);
  ExpectNothingLeft(job, n);
}

// Rank 1's object, named by the job, existed while it ran (`objects`: what
// the job had while rank 1 was waiting).
void ExpectRank1Object(const Job& job,
                       const std::vector<std::string>& objects) {
  if (Mechanism() == "sysv") {
    const pid_t rank1 = RankPid(job.pid_dir, 1);
    EXPECT_THAT(objects,
                Contains(HasSubstr(absl::StrFormat("creator %d,", rank1))))
        << absl::StrJoin(objects, "\n") << Describe(job);
  } else {
    const std::string dir = Mechanism() == "posix" ? "/dev/shm" : job.tmpdir;
    EXPECT_THAT(objects,
                Contains(absl::StrFormat("%s/GASNT%s.1.0", dir, job.job_id)))
        << absl::StrJoin(objects, "\n") << Describe(job);
  }
}

// Rank 1 creates its network object and is killed before removing its name
// (the other ranks are waiting for it in the bootstrap): only the
// launcher's clean-up can remove the object.
void DieAtStartup(const std::vector<std::string>& env) {
  const int n = 3;
  std::vector<std::string> while_running;
  JobOptions options = WithEnv(env);
  options.watch = "created";
  options.on_watch = [&](Job& j) {
    while_running = JobObjects(j.job_id, j.tmpdir, j.pids);
    TouchFile(j.pid_dir + "/go");
  };
  Job job = RunClient(n, {"die-at-startup"}, options);
  EXPECT_NE(job.r.exit_code, 0) << Describe(job);
  EXPECT_THAT(job.r.out, HasSubstr("rank 1: created")) << Describe(job);
  EXPECT_THAT(job.r.err, HasSubstr("rank 1 was killed by signal 9"))
      << Describe(job);
  ASSERT_THAT(job.pids, SizeIs(n)) << Describe(job);
  ExpectRank1Object(job, while_running);
  ExpectNothingLeft(job, n);
}

TEST(LeakTest, RankDyingDuringStartUpLeavesNothing) { DieAtStartup({}); }

// The file mechanism's directory falls back to TMPDIR, for the ranks and
// for the launcher's clean-up alike.
TEST(LeakTest, RankDyingDuringStartUpWithTmpdirOnly) {
  DieAtStartup({"GASNET_TMPDIR"});
}

// The launcher itself is SIGKILLed while rank 1 holds a named object and
// the other ranks wait for it in the bootstrap. The ranks die with the
// launcher (their parent-death signal) and nothing of the launcher runs:
// its clean-up guard, left waiting for exactly this, removes the object.
TEST(LeakTest, SigkilledLauncherDuringStartUpLeavesNothing) {
  const int n = 3;
  std::vector<std::string> while_running;
  JobOptions options;
  options.watch = "created";
  options.on_watch = [&](Job& j) {
    while_running = JobObjects(j.job_id, j.tmpdir, j.pids);
    TouchFile(j.pid_dir + "/kill");
  };
  options.signal = SIGKILL;
  options.signal_when = "kill";
  Job job = RunClient(n, {"die-at-startup"}, options);
  EXPECT_EQ(job.r.exit_code, 128 + SIGKILL) << Describe(job);
  ASSERT_THAT(job.pids, SizeIs(n)) << Describe(job);
  ExpectRank1Object(job, while_running);
  // A SysV segment loses its name as soon as its creator attaches it:
  // only the named mechanisms leave the guard something to remove.
  if (Mechanism() != "sysv") {
    EXPECT_THAT(job.r.err,
                HasSubstr(absl::StrFormat(
                    "gasnetrun_smp: the launcher of job %s ended without "
                    "cleaning up; removed 1 shared memory object",
                    job.job_id)))
        << Describe(job);
  }
  ExpectNothingLeft(job, n);
}

// --- bad settings ----------------------------------------------------------

// A job that must fail at start-up: nonzero exit, every message in
// `messages` on stderr, nothing left behind.
void ExpectStartUpError(int n, const std::vector<std::string>& args,
                        const std::vector<std::string>& env,
                        const std::vector<std::string>& messages) {
  Job job = RunClient(n, args, WithEnv(env));
  EXPECT_NE(job.r.exit_code, 0) << Describe(job);
  for (const std::string& m : messages) {
    EXPECT_THAT(job.r.err, HasSubstr(m)) << Describe(job);
  }
  EXPECT_THAT(job.r.out, Not(HasSubstr(" ok "))) << Describe(job);
  ExpectNothingLeft(job, n);
}

TEST(BadSettingsTest, QueueDepthZero) {
  ExpectStartUpError(
      2, {"flood", "10", "8"}, {"GASNET_PSHMNET_QUEUE_DEPTH=0"},
      {"Supernode::Create failed", "GASNET_PSHMNET_QUEUE_DEPTH"});
}

TEST(BadSettingsTest, QueueDepthTooLarge) {
  ExpectStartUpError(
      2, {"flood", "10", "8"}, {"GASNET_PSHMNET_QUEUE_DEPTH=100000"},
      {"Supernode::Create failed", "GASNET_PSHMNET_QUEUE_DEPTH", "100000"});
}

TEST(BadSettingsTest, QueueDepthNotANumber) {
  ExpectStartUpError(
      2, {"flood", "10", "8"}, {"GASNET_PSHMNET_QUEUE_DEPTH=abc"},
      {"Supernode::Create failed", "GASNET_PSHMNET_QUEUE_DEPTH", "abc"});
}

TEST(BadSettingsTest, QueueMemoryBelowOneMessage) {
  ExpectStartUpError(
      2, {"flood", "10", "8"}, {"GASNET_PSHMNET_QUEUE_MEMORY=1000"},
      {"Supernode::Create failed", "GASNET_PSHMNET_QUEUE_MEMORY", "1000"});
  ExpectStartUpError(2, {"flood", "10", "8"},
                     {absl::StrFormat("GASNET_PSHMNET_QUEUE_MEMORY=%d",
                                      pshm::MinQueueMemory() - 1)},
                     {"GASNET_PSHMNET_QUEUE_MEMORY"});
}

TEST(BadSettingsTest, SegmentLargerThanTheHostAllows) {
  ExpectStartUpError(2, {"segments", "1T"}, {},
                     {"AttachSegment(1099511627776) failed", "1099511627776",
                      "GASNET_MAX_SEGSIZE"});
}

TEST(BadSettingsTest, SegmentLargerThanMaxSegsize) {
  ExpectStartUpError(2, {"segments", "64M"}, {"GASNET_MAX_SEGSIZE=1M"},
                     {"AttachSegment(67108864) failed", "GASNET_MAX_SEGSIZE"});
}

TEST(BadSettingsTest, OneRankAskingTooMuchFailsEveryRank) {
  Job job = RunClient(3, {"segments", "1M", "1"});
  EXPECT_NE(job.r.exit_code, 0) << Describe(job);
  // Rank 1 says why; the others name rank 1.
  EXPECT_THAT(job.r.err, HasSubstr("rank 1: AttachSegment(1099511627776) "
                                   "failed"))
      << Describe(job);
  EXPECT_THAT(job.r.err, HasSubstr("GASNET_MAX_SEGSIZE")) << Describe(job);
  for (int r : {0, 2}) {
    EXPECT_THAT(job.r.err,
                HasSubstr(absl::StrFormat("rank %d: AttachSegment(", r)))
        << Describe(job);
  }
  EXPECT_THAT(job.r.err, HasSubstr("rank(s) 1 ")) << Describe(job);
  ExpectNothingLeft(job, 3);
}

TEST(BadSettingsTest, MaxSegsizeGarbage) {
  ExpectStartUpError(2, {"segments", "1M"}, {"GASNET_MAX_SEGSIZE=garbage"},
                     {"GASNET_MAX_SEGSIZE", "garbage"});
}

}  // namespace
}  // namespace gexrt::testing
