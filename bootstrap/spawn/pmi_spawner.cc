#include "bootstrap/spawn/pmi_spawner.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/host_id.h"
#include "base/stderr_line.h"
#include "bootstrap/pmix_bootstrap_pids.h"
#include "bootstrap/spawn/job_secret.h"
#include "bootstrap/spawn/pmi_command.h"
#include "bootstrap/spawn/shell_words.h"

extern char** environ;

namespace gexrt::spawn {
namespace {

constexpr int kUsageError = 2;
constexpr int kStartError = 1;

volatile sig_atomic_t g_launcher_pid = 0;

// The user's ^C (or a batch system's SIGTERM) is for the job: the external
// launcher gets it and ends its ranks in its own way.
void Forward(int sig) {
  const pid_t pid = g_launcher_pid;
  if (pid > 0) kill(pid, sig);
}

void Print(const std::string& tool, const std::string& message) {
  WriteStderrLine(absl::StrFormat("%s: %s", tool, message));
}

// -E's names, then every GASNET_* variable set here, then GEX_JOB_ID: an
// external launcher carries only what it is told to other hosts (mpirun's
// -x), so the job's settings are named explicitly.
std::vector<std::string> PropagatedNames(const LaunchOptions& options) {
  std::vector<std::string> names = options.env_vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (absl::StartsWith(name, "GASNET_") || name == "GEX_JOB_ID" ||
        name == kPmiRankDirVar || name == "PMIX_MCA_gds") {
      names.push_back(name);
    }
  }
  std::vector<std::string> unique;
  for (const std::string& n : names) {
    if (std::find(unique.begin(), unique.end(), n) == unique.end()) {
      unique.push_back(n);
    }
  }
  return unique;
}

// How long ranks may outlive the launcher before gasnetrun ends them, and
// how long a killed rank may take to go.
constexpr absl::Duration kStragglerGrace = absl::Seconds(1);
constexpr absl::Duration kKillLimit = absl::Seconds(10);
constexpr absl::Duration kPoll = absl::Milliseconds(10);

std::vector<RankRecord> LiveRanks(const std::vector<RankRecord>& records) {
  std::vector<RankRecord> live;
  for (const RankRecord& r : records) {
    if (RankRecordAlive(r)) live.push_back(r);
  }
  return live;
}

// Waits until `records` are gone or `limit` passes (a bounded poll: the
// ranks are not our children, so there is nothing to wait on); returns
// those still running.
std::vector<RankRecord> WaitForRanks(const std::vector<RankRecord>& records,
                                     absl::Duration limit) {
  const absl::Time deadline = absl::Now() + limit;
  std::vector<RankRecord> live = LiveRanks(records);
  while (!live.empty() && absl::Now() < deadline) {
    absl::SleepFor(kPoll);
    live = LiveRanks(live);
  }
  return live;
}

// The launcher has returned: the job is over, but the ranks of this host
// may not be (Open MPI 4.1's mpirun SIGKILLs its ranks and exits without
// waiting for them to die; a rank may ignore the launcher's SIGTERM). So
// gasnetrun returns only once none is left: a short grace, then SIGKILL
// (a rank's pid and start time, from its record, make sure no other
// process is hit).
void EndStragglers(const std::string& tool, const std::string& dir,
                   std::vector<pid_t>* pids) {
  // Only this host's (a directory on a shared file system may hold other
  // hosts' records too).
  std::vector<RankRecord> records = ReadRankRecords(dir);
  std::erase_if(records,
                [](const RankRecord& r) { return r.host_id != HostId(); });
  for (const RankRecord& r : records) pids->push_back(r.pid);
  std::vector<RankRecord> live = WaitForRanks(records, kStragglerGrace);
  if (live.empty()) return;
  std::string named;
  for (const RankRecord& r : live) {
    absl::StrAppend(&named, named.empty() ? "" : ", ", r.rank, " (pid ", r.pid,
                    ")");
    // Checked again just before the signal: the pid is still that rank.
    if (RankRecordAlive(r)) kill(r.pid, SIGKILL);
  }
  live = WaitForRanks(live, kKillLimit);
  Print(tool,
        absl::StrFormat("-spawner=pmi: the launcher returned while "
                        "rank(s) %s still ran; killed them%s",
                        named, live.empty() ? "" : " (some did not end)"));
}

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) {
  remove(path);
  return 0;
}

// Removes a directory and its files when the job's scope ends, on every
// path out of RunPmiJob.
struct RemovedAtReturn {
  const std::string& dir;
  ~RemovedAtReturn() {
    nftw(dir.c_str(), &RemoveEntry, 4, FTW_DEPTH | FTW_PHYS);
  }
};

}  // namespace

int RunPmiJob(const std::string& tool, const LaunchOptions& options,
              const std::vector<std::string>& program, JobCleanup cleanup) {
  std::string tmpl;
  const char* setting = std::getenv(kPmiLauncherVar);
  if (setting != nullptr && *setting != '\0') {
    tmpl = setting;
  } else {
    absl::StatusOr<std::string> def =
        DefaultPmiTemplate(DetectPmiEnvironment());
    if (!def.ok()) {
      Print(tool, std::string(def.status().message()));
      return kStartError;
    }
    tmpl = *def;
  }
  absl::StatusOr<std::string> job_id = NewJobId();
  if (!job_id.ok()) {
    Print(tool, std::string(job_id.status().message()));
    return kStartError;
  }
  setenv("GEX_JOB_ID", job_id->c_str(), 1);
  // Where the ranks of this host leave their records (EndStragglers).
  const char* tmp = std::getenv("TMPDIR");
  std::string rank_dir = absl::StrCat(
      tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/gex-ranks.XXXXXX");
  if (mkdtemp(rank_dir.data()) == nullptr) {
    Print(tool, absl::StrCat("-spawner=pmi: cannot create a directory for "
                             "the ranks' records (",
                             rank_dir, "): ", std::strerror(errno)));
    return kStartError;
  }
  setenv(kPmiRankDirVar, rank_dir.c_str(), 1);
  const RemovedAtReturn remove_rank_dir{rank_dir};
  // Open MPI's default PMIx data store prints a harmless error here.
  setenv("PMIX_MCA_gds", "hash", 0);

  PmiJob job;
  job.ranks = options.ranks;
  job.nodes = options.nodes;
  job.env_names = PropagatedNames(options);
  job.program = program;
  absl::StatusOr<std::vector<std::string>> argv = ExpandPmiTemplate(tmpl, job);
  if (!argv.ok()) {
    Print(tool, absl::StrCat("-spawner=pmi: ", argv.status().message(),
                             " (template: ", tmpl, ")"));
    return kUsageError;
  }
  if (options.test_only) {
    std::printf("%s\n", ShellJoin(*argv).c_str());
    return 0;
  }
  if (options.verbose) {
    Print(tool, absl::StrFormat("pmi spawner: job %s: %s", *job_id,
                                ShellJoin(*argv)));
  }

  std::vector<char*> args;
  for (std::string& a : *argv) args.push_back(a.data());
  args.push_back(nullptr);
  struct sigaction forward {};
  forward.sa_handler = &Forward;
  sigemptyset(&forward.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &forward, nullptr);
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) {
    Print(tool, absl::StrCat("pipe: ", std::strerror(errno)));
    return kStartError;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    Print(tool, absl::StrCat("fork: ", std::strerror(errno)));
    return kStartError;
  }
  if (pid == 0) {
    close(ready[0]);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_DFL);
    execvp(args[0], args.data());
    // Tell the parent why, through the close-on-exec pipe.
    const int err = errno;
    (void)!write(ready[1], &err, sizeof err);
    _exit(127);
  }
  g_launcher_pid = pid;
  close(ready[1]);
  int exec_errno = 0;
  ssize_t got;
  do {
    got = read(ready[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  close(ready[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_launcher_pid = 0;
  if (got == sizeof exec_errno) {
    Print(tool, absl::StrFormat("-spawner=pmi: cannot run the launcher '%s': "
                                "%s (set %s to its command template)",
                                (*argv)[0], std::strerror(exec_errno),
                                kPmiLauncherVar));
    return kStartError;
  }
  std::vector<pid_t> rank_pids;
  EndStragglers(tool, rank_dir, &rank_pids);
  if (cleanup != nullptr) (void)cleanup(*job_id, rank_pids);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace gexrt::spawn
