// The graceful exit (issue 7) end to end: jobs of exit_client, started by
// gasnetrun_<conduit> -spawner=fork, one per exit path and rank count, each
// judged from the outside. It exists so that every way a job can end (a
// collective gasnet_exit, one rank's gasnet_exit while the others are in a
// barrier, polling or in RMA, return from main, exit(), gasnet_exit in a
// Request or Reply handler, a fatal signal, a signalled launcher, a killed
// rank, a dead rank 0, SIGQUIT to a client's own handler) is proven to end
// the whole job: before its limit, with the right exit code, with no
// surviving process, no leaked shared memory object, and every line the
// ranks left in their stdio buffers delivered. A second suite counts the exit
// protocol's Active Messages through GEX_EXIT_REPORT=1.
//
// The instance comes from the test's environment (set by exit_tests.bzl):
// the launcher from EXIT_TEST_LAUNCHER (its runfiles path), the client
// tests/exit/exit_client_<EXIT_TEST_CONDUIT>, and the instance's variables
// for every job from EXIT_TEST_ENV ("NAME=value", one per line). Leaks are
// judged for the posix PSHM mechanism (the default build): /dev/shm/GASNT<job
// id>.*, where the job id is the GEX_JOB_ID every rank prints; a GASNT* entry
// in the job's fresh GASNET_TMPDIR counts too.
#include <dirent.h>
#include <fnmatch.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

extern char** environ;

namespace gexrt::testing {
namespace {

// The expected exit code of a job that must fail with any nonzero code.
constexpr int kAnyNonzero = -1;
// The liveness allowance on top of the exit timeout: start-up of up to 8
// ranks on a loaded 2-core machine.
constexpr absl::Duration kStartupAllowance = absl::Seconds(60);
// Default GASNET_EXITTIMEOUT of the path tests (seconds).
constexpr int kExitTimeoutS = 3;
// What job_runner appends to stderr when it killed the launcher.
constexpr char kKilledByRunner[] =
    "[job_runner: killed the launcher after the limit]";

std::string FromEnv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string Conduit() { return FromEnv("EXIT_TEST_CONDUIT"); }

// The instance's "NAME=value" variables for every job.
std::vector<std::string> InstanceEnv() {
  return absl::StrSplit(FromEnv("EXIT_TEST_ENV"), '\n', absl::SkipEmpty());
}

// The instance's GASNET_SUPERNODE_MAXSIZE; 0 when it sets none (every rank
// of a job on this host in one supernode, as on smp).
int SupernodeMaxSize() {
  int size = 0;
  for (const std::string& entry : InstanceEnv()) {
    constexpr absl::string_view kName = "GASNET_SUPERNODE_MAXSIZE=";
    if (absl::StartsWith(entry, kName) &&
        !absl::SimpleAtoi(entry.substr(kName.size()), &size)) {
      size = 0;
    }
  }
  return size > 0 ? size : 0;
}

// The supernodes of a job of `n` ranks: runs of SupernodeMaxSize()
// consecutive ranks (one host), or the whole job.
int Supernodes(int n) {
  const int size = SupernodeMaxSize();
  return size == 0 ? 1 : (n + size - 1) / size;
}

// Why the current test cannot pass on this instance because of a known
// bug outside tests/ (EXIT_TEST_KNOWN_BUGS: "<glob>=<why>" lines, globs
// over "Suite.Test" names, set by exit_tests.bzl's known_bugs); "" if none.
std::string KnownBug() {
  const ::testing::TestInfo* test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name =
      absl::StrCat(test->test_suite_name(), ".", test->name());
  for (absl::string_view entry : absl::StrSplit(FromEnv("EXIT_TEST_KNOWN_BUGS"),
                                                '\n', absl::SkipEmpty())) {
    const size_t eq = entry.find('=');
    const std::string glob(entry.substr(0, eq));
    if (fnmatch(glob.c_str(), name.c_str(), 0) == 0) {
      return std::string(entry.substr(eq + 1));
    }
  }
  return "";
}

// In a test body or SetUp: skips the test when it hits a known bug.
#define SKIP_IF_KNOWN_BUG()                                                \
  do {                                                                     \
    if (const std::string bug = KnownBug(); !bug.empty()) {                \
      GTEST_SKIP() << "known bug on conduit " << Conduit() << ": " << bug; \
    }                                                                      \
  } while (0)

// ---------------------------------------------------------------------------
// Running a job.

struct JobOptions {
  int exit_timeout_s = kExitTimeoutS;
  std::vector<std::string> env;  // "NAME=value", after the clean defaults
  int launcher_signal = 0;       // sent once rank 0 wrote the ready file
  bool par = false;              // the PAR build of the client
  // The runner's limit; by default the exit timeout + kStartupAllowance.
  std::optional<absl::Duration> limit;
  // Host labels: the ssh spawner over tests/bootstrap/fake_ssh.sh, one
  // launcher agent per label, all on this machine. Empty: the fork spawner.
  std::string ssh_hosts;
};

struct ExitJob {
  std::string mode;
  int code = 0;
  int n = 0;
  JobResult r;
  absl::Duration limit;
  absl::Duration elapsed;
  std::string tmpdir;
  std::string job_id;  // from the ranks' "rank R: job=" lines; "" if none
};

// Every GASNET_* and GEX_* variable of the test's own environment, to be
// unset in the job's ("NAME" alone unsets it in JobSpec.env).
std::vector<std::string> InheritedRuntimeVariables() {
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("GASNET_", 0) == 0 || name.rfind("GEX_", 0) == 0) {
      names.push_back(name);
    }
  }
  return names;
}

// Lines "rank R: job=<id> pid=<pid>" of stdout, by rank.
std::multimap<int, std::string> JobIdLines(const std::string& out) {
  static const std::regex re("^rank ([0-9]+): job=(\\S*) pid=[0-9]+$");
  std::multimap<int, std::string> ids;
  for (const std::string& line : Lines(out)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) {
      ids.emplace(std::atoi(m[1].str().c_str()), m[2].str());
    }
  }
  return ids;
}

ExitJob RunExitJob(const std::string& mode, int code, int n,
                   const JobOptions& options = {}) {
  ExitJob job;
  job.mode = mode;
  job.code = code;
  job.n = n;
  job.tmpdir = MakeTempDir("exit");
  const std::string conduit = Conduit();
  JobSpec spec;
  spec.argv = {Runfile(FromEnv("EXIT_TEST_LAUNCHER")), "-n", std::to_string(n),
               options.ssh_hosts.empty() ? "-spawner=fork" : "-spawner=ssh"};
  spec.env = InheritedRuntimeVariables();
  // The instance's variables; the driver's own below and the case's win.
  for (std::string& entry : InstanceEnv()) spec.env.push_back(std::move(entry));
  const std::vector<std::string> sanitizer_env = SanitizerEnv();
  spec.env.insert(spec.env.end(), sanitizer_env.begin(), sanitizer_env.end());
  if (!options.ssh_hosts.empty()) {
    spec.env.push_back("GASNET_SSH_CMD=" +
                       Runfile("tests/bootstrap/fake_ssh.sh"));
    spec.env.push_back("GASNET_SSH_SERVERS=" + options.ssh_hosts);
    spec.env.push_back("GASNET_SSH_NODEFILE");
    spec.env.push_back("GASNET_NODEFILE");
    // fake_ssh starts agents with an empty environment, as a login does:
    // what is not GASNET_* travels by -E.
    std::vector<std::string> names = {"TMPDIR"};
    if (!sanitizer_env.empty()) names.push_back("ASAN_OPTIONS");
    for (const std::string& entry : InstanceEnv()) {
      const std::string name = entry.substr(0, entry.find('='));
      if (!absl::StartsWith(name, "GASNET_")) names.push_back(name);
    }
    for (const std::string& entry : options.env) {
      const std::string name = entry.substr(0, entry.find('='));
      if (!absl::StartsWith(name, "GASNET_")) names.push_back(name);
    }
    spec.argv.push_back("-E");
    spec.argv.push_back(absl::StrJoin(names, ","));
  }
  spec.argv.push_back(Runfile(std::string("tests/exit/exit_client_") +
                              (options.par ? "par_" : "") + conduit));
  spec.argv.push_back(mode);
  spec.argv.push_back(std::to_string(code));
  spec.env.push_back("GASNET_TMPDIR=" + job.tmpdir);
  spec.env.push_back("TMPDIR=" + job.tmpdir);
  spec.env.push_back(
      absl::StrFormat("GASNET_EXITTIMEOUT=%d", options.exit_timeout_s));
  const std::string ready_file = job.tmpdir + "/ready";
  spec.env.push_back("EXIT_TEST_READY_FILE=" + ready_file);
  spec.env.insert(spec.env.end(), options.env.begin(), options.env.end());
  if (options.launcher_signal != 0) {
    spec.signal = options.launcher_signal;
    spec.signal_when_file = ready_file;
  }
  job.limit = options.limit.value_or(absl::Seconds(options.exit_timeout_s) +
                                     kStartupAllowance);
  spec.limit = job.limit;
  const absl::Time start = absl::Now();
  job.r = RunJob(spec);
  job.elapsed = absl::Now() - start;
  const auto ids = JobIdLines(job.r.out);
  if (!ids.empty()) job.job_id = ids.begin()->second;
  return job;
}

// ---------------------------------------------------------------------------
// Judging a job.

std::string Shorten(const std::string& text) {
  constexpr size_t kKeep = 6000;
  if (text.size() <= 2 * kKeep) return text;
  return absl::StrCat(text.substr(0, kKeep), "\n...\n",
                      text.substr(text.size() - kKeep));
}

std::string Describe(const ExitJob& job) {
  return absl::StrFormat(
      "conduit: %s\nmode: %s, code %d, %d rank(s)\ncommand: %s\nexit code: "
      "%d\nelapsed: %s (limit %s)\nsurvivors: %d\njob id: %s\nstdout:\n%s\n"
      "stderr:\n%s",
      Conduit(), job.mode, job.code, job.n, job.r.command, job.r.exit_code,
      absl::FormatDuration(job.elapsed), absl::FormatDuration(job.limit),
      job.r.survivors.size(), job.job_id.empty() ? "(unknown)" : job.job_id,
      Shorten(job.r.out), Shorten(job.r.err));
}

// What a job did wrong, reported once with the whole job (one failure per
// job, listing every problem, instead of one dump per EXPECT).
class Problems {
 public:
  template <typename... Args>
  void Add(const absl::FormatSpec<Args...>& format, const Args&... args) {
    problems_.push_back(absl::StrFormat(format, args...));
  }

  void ReportFor(const ExitJob& job) const {
    if (problems_.empty()) return;
    ADD_FAILURE() << "the job failed " << problems_.size() << " check(s):\n  - "
                  << absl::StrJoin(problems_, "\n  - ") << "\n"
                  << Describe(job);
  }

 private:
  std::vector<std::string> problems_;
};

size_t CountLines(const std::string& text, const std::string& line) {
  const std::vector<std::string> lines = Lines(text);
  return std::count(lines.begin(), lines.end(), line);
}

enum class SigquitLines {
  kNone,        // no rank prints "rank R: SIGQUIT"
  kOthersOnce,  // every rank but the exiter prints it once, the exiter never
};

struct Expected {
  int exit_code = 0;  // or kAnyNonzero
  int exiter = 0;
  SigquitLines sigquit = SigquitLines::kNone;
};

// The checks every job must pass (see the file comment).
void CheckJob(const ExitJob& job, const Expected& expected,
              Problems& problems) {
  const JobResult& r = job.r;
  // Liveness: the job ended by itself, before the runner's limit.
  if (r.err.find(kKilledByRunner) != std::string::npos) {
    problems.Add(
        "the job did not end within its limit of %s; the test killed the "
        "launcher",
        absl::FormatDuration(job.limit));
  }
  // Exit code.
  if (expected.exit_code == kAnyNonzero) {
    if (r.exit_code == 0) problems.Add("exit code 0, expected a nonzero one");
  } else if (r.exit_code != expected.exit_code) {
    problems.Add("exit code %d, expected %d", r.exit_code, expected.exit_code);
  }
  // Survivors.
  if (!r.survivors.empty()) {
    problems.Add("%d process(es) of the job outlived the launcher: pids %s",
                 r.survivors.size(), absl::StrJoin(r.survivors, " "));
  }
  // Every rank's identity line, all naming one job.
  const auto ids = JobIdLines(r.out);
  for (int rank = 0; rank < job.n; ++rank) {
    if (ids.count(rank) != 1) {
      problems.Add(
          "rank %d printed its \"rank %d: job=\" line %d times, "
          "expected once",
          rank, rank, ids.count(rank));
    }
  }
  for (const auto& [rank, id] : ids) {
    if (rank >= job.n) problems.Add("a line from rank %d of %d", rank, job.n);
    if (id != job.job_id) {
      problems.Add("rank %d names job '%s', rank %d job '%s'", rank, id,
                   ids.begin()->first, job.job_id);
    }
  }
  // Leaks.
  if (job.job_id.empty()) {
    problems.Add(
        "no job id (no rank printed a non-empty \"job=\"): leaks cannot be "
        "checked");
  } else {
    const std::vector<std::string> leaked =
        EntriesWithPrefix("/dev/shm", "GASNT" + job.job_id + ".");
    if (!leaked.empty()) {
      problems.Add("leaked shared memory objects: %s",
                   absl::StrJoin(leaked, " "));
    }
  }
  const std::vector<std::string> leaked_files =
      EntriesWithPrefix(job.tmpdir, "GASNT");
  if (!leaked_files.empty()) {
    problems.Add("leaked shared memory files: %s",
                 absl::StrJoin(leaked_files, " "));
  }
  // The lines every rank left in its stdio buffer.
  for (int rank = 0; rank < job.n; ++rank) {
    std::vector<size_t> counts;
    for (int k = 0; k < 3; ++k) {
      counts.push_back(
          CountLines(r.out, absl::StrFormat("rank %d line %d", rank, k)));
    }
    if (std::any_of(counts.begin(), counts.end(),
                    [](size_t count) { return count != 1; })) {
      problems.Add(
          "\"rank %d line 0\", \"... line 1\", \"... line 2\" (left in its "
          "stdio buffer) appeared %s times on stdout, expected once each",
          rank, absl::StrJoin(counts, ", "));
    }
  }
  // SIGQUIT reports of the client's own handler.
  for (int rank = 0; rank < job.n; ++rank) {
    const std::string line = absl::StrFormat("rank %d: SIGQUIT", rank);
    const size_t count = CountLines(r.out, line);
    const size_t want =
        expected.sigquit == SigquitLines::kOthersOnce && rank != expected.exiter
            ? 1
            : 0;
    if (count != want) {
      problems.Add("\"%s\" appeared %d times on stdout, expected %d", line,
                   count, want);
    }
  }
}

// ---------------------------------------------------------------------------
// One job per exit path and rank count.

struct ExitCase {
  const char* mode;
  int code;      // the client's <code>
  int expected;  // the job's exit code, or kAnyNonzero
  int launcher_signal = 0;
  bool one_rank = true;  // also run at N = 1
};

const ExitCase kCases[] = {
    {"collective", 7, 7},
    {"collective", 0, 0},
    {"barrier", 42, 42},
    {"spin", 9, 9},
    {"rma", 11, 11},
    {"return-all", 0, 0},
    {"return-all", 13, 13},
    {"return-one", 17, 17},
    {"exit-all", 19, 19},
    {"exit-one", 23, 23},
    {"request-handler", 29, 29},
    {"reply-handler", 31, 31},
    {"sigsegv", 5, 128 + SIGSEGV},
    {"sigabrt", 5, 128 + SIGABRT},
    {"launcher-signal", 5, 128 + SIGTERM, SIGTERM},
    {"launcher-signal", 5, 128 + SIGINT, SIGINT},
    {"sigkill", 5, 128 + SIGKILL},
    // Nonzero only: it may end by the exit alarm. At N = 1 it is sigkill.
    {"rank0-dead", 5, kAnyNonzero, 0, false},
    {"sigquit-handler", 37, 37},
    {"sigquit-default", 41, 41},
};

struct ExitParam {
  ExitCase c;
  int n;
};

std::ostream& operator<<(std::ostream& os, const ExitParam& p) {
  return os << p.c.mode << " code " << p.c.code << " at " << p.n << " rank(s)";
}

std::vector<ExitParam> ExitParams() {
  std::vector<ExitParam> params;
  for (const ExitCase& c : kCases) {
    for (int n : {1, 2, 4, 8}) {
      if (n == 1 && !c.one_rank) continue;
      params.push_back({c, n});
    }
  }
  return params;
}

// "collective_code7_4ranks", "sigsegv_2ranks",
// "launcher_signal_SIGTERM_8ranks".
std::string ExitParamName(const ::testing::TestParamInfo<ExitParam>& info) {
  const ExitCase& c = info.param.c;
  std::string name = c.mode;
  std::replace(name.begin(), name.end(), '-', '_');
  if (c.launcher_signal != 0) {
    absl::StrAppend(&name, "_",
                    c.launcher_signal == SIGTERM ? "SIGTERM"
                    : c.launcher_signal == SIGINT
                        ? "SIGINT"
                        : std::to_string(c.launcher_signal));
  } else if (c.expected == c.code) {
    absl::StrAppend(&name, "_code", c.code);
  }
  return absl::StrCat(name, "_", info.param.n, "ranks");
}

class ExitPathTest : public ::testing::TestWithParam<ExitParam> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Conduit().empty())
        << "EXIT_TEST_CONDUIT is not set (exit_tests.bzl sets it)";
    ASSERT_FALSE(FromEnv("EXIT_TEST_LAUNCHER").empty())
        << "EXIT_TEST_LAUNCHER is not set (exit_tests.bzl sets it)";
    SKIP_IF_KNOWN_BUG();
  }
};

TEST_P(ExitPathTest, WholeJobEndsCleanly) {
  const ExitCase& c = GetParam().c;
  const int n = GetParam().n;
  const std::string mode = c.mode;
  JobOptions options;
  options.launcher_signal = c.launcher_signal;
  const ExitJob job = RunExitJob(mode, c.code, n, options);
  Expected expected;
  expected.exit_code = c.expected;
  expected.exiter = mode == "rank0-dead" ? 0 : n - 1;
  expected.sigquit = mode == "sigquit-handler" ? SigquitLines::kOthersOnce
                                               : SigquitLines::kNone;
  Problems problems;
  CheckJob(job, expected, problems);
  problems.ReportFor(job);
}

INSTANTIATE_TEST_SUITE_P(Paths, ExitPathTest, ::testing::ValuesIn(ExitParams()),
                         ExitParamName);

// ---------------------------------------------------------------------------
// Exits that end sooner than the exit timeout (issue 24, item 8): a rank's
// non-collective exit while the others compute, poll or wait in a barrier,
// and a rank that dies, end the whole job within about a second whatever
// GASNET_EXITTIMEOUT is. Here it is 300 s and the runner's limit is the
// start-up allowance alone: a job that waited for any share of the
// timeout (the reduce window was half of it, a dead rank kept the job
// alive for 0.9 of it) is killed by the runner and fails. Over the fork
// spawner (one launcher) and the ssh spawner with two agents on this
// machine (the exit must cross launchers).

constexpr int kLongExitTimeoutS = 300;

struct SoonCase {
  const char* mode;
  int code;
  int expected;       // or kAnyNonzero
  const char* hosts;  // "": the fork spawner
};

const SoonCase kSoonCases[] = {
    {"compute", 3, 3, ""},
    {"spin", 4, 4, ""},
    {"barrier", 5, 5, ""},
    {"exit-one", 6, 6, ""},
    {"sigkill", 7, 128 + SIGKILL, ""},
    {"rank0-dead", 8, 128 + SIGKILL, ""},
    {"compute", 3, 3, "h0 h1"},
    {"barrier", 5, 5, "h0 h1"},
    {"sigkill", 7, 128 + SIGKILL, "h0 h1"},
    {"rank0-dead", 8, 128 + SIGKILL, "h0 h1"},
};

struct SoonParam {
  SoonCase c;
  int n;
};

std::ostream& operator<<(std::ostream& os, const SoonParam& p) {
  return os << p.c.mode << " at " << p.n << " rank(s) on hosts '" << p.c.hosts
            << "'";
}

std::vector<SoonParam> SoonParams() {
  std::vector<SoonParam> params;
  for (const SoonCase& c : kSoonCases) {
    for (int n : {2, 4}) params.push_back({c, n});
  }
  return params;
}

// "compute_fork_4ranks", "sigkill_ssh2_2ranks".
std::string SoonParamName(const ::testing::TestParamInfo<SoonParam>& info) {
  std::string name = info.param.c.mode;
  std::replace(name.begin(), name.end(), '-', '_');
  const bool ssh = info.param.c.hosts[0] != '\0';
  return absl::StrCat(name, ssh ? "_ssh2_" : "_fork_", info.param.n, "ranks");
}

class ExitSoonTest : public ::testing::TestWithParam<SoonParam> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Conduit().empty())
        << "EXIT_TEST_CONDUIT is not set (exit_tests.bzl sets it)";
    SKIP_IF_KNOWN_BUG();
  }
};

TEST_P(ExitSoonTest, EndsLongBeforeTheExitTimeout) {
  const SoonCase& c = GetParam().c;
  const int n = GetParam().n;
  JobOptions options;
  options.exit_timeout_s = kLongExitTimeoutS;
  options.limit = kStartupAllowance;
  options.ssh_hosts = c.hosts;
  const ExitJob job = RunExitJob(c.mode, c.code, n, options);
  Expected expected;
  expected.exit_code = c.expected;
  expected.exiter = std::string(c.mode) == "rank0-dead" ? 0 : n - 1;
  Problems problems;
  CheckJob(job, expected, problems);
  problems.ReportFor(job);
}

INSTANTIATE_TEST_SUITE_P(Soon, ExitSoonTest, ::testing::ValuesIn(SoonParams()),
                         SoonParamName);

// ---------------------------------------------------------------------------
// End signals while every rank is busy in conduit traffic (issue 38, items
// 1-2): the ranks flood each other with Medium Requests and poll, so the
// signal lands inside the conduit's sends and polls, often inside the
// network library (ucx: the exit then re-entered ucp_worker_progress and
// UCX aborted the rank with "Assertion `worker->inprogress++ == 0'"; ofi:
// the conduit went dead for the exit, which waited out its deadlines,
// 0.9 x GASNET_EXITTIMEOUT). SIGTERM or SIGINT to the launcher (which
// forwards it to every rank), or a signal from rank 0 to the last rank
// alone (whose exit then reaches the others as the launcher's decision),
// TrafficCase::repeats jobs each; SIGHUP and SIGQUIT too, and PAR clients
// whose three threads per rank are all inside the conduit. Every job must end
// by the signal's exit (128 + signal), with every rank's buffered lines
// delivered, no rank aborting, and within the start-up allowance although
// GASNET_EXITTIMEOUT is 300 s (a bound on a wedged exit, not a timing assert).

struct TrafficCase {
  const char* target;  // "launcher" or "rank"
  int signal;
  bool par = false;  // the PAR client: three threads of each rank flood
  int repeats = 5;
};

const char* EndSignalName(int sig) {
  switch (sig) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
  }
  return "unknown";
}

class EndSignalTrafficTest
    : public ::testing::TestWithParam<std::tuple<TrafficCase, int>> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Conduit().empty())
        << "EXIT_TEST_CONDUIT is not set (exit_tests.bzl sets it)";
    SKIP_IF_KNOWN_BUG();
  }
};

TEST_P(EndSignalTrafficTest, NoRankAbortsAndTheJobEndsByTheSignal) {
  const auto& [c, n] = GetParam();
  const bool launcher = std::string(c.target) == "launcher";
  for (int run = 0; run < c.repeats; ++run) {
    JobOptions options;
    options.exit_timeout_s = kLongExitTimeoutS;
    options.limit = kStartupAllowance;
    options.launcher_signal = launcher ? c.signal : 0;
    options.par = c.par;
    // (traffic-rank's <code> is the signal rank 0 sends.)
    const ExitJob job =
        RunExitJob(launcher ? "traffic-launcher" : "traffic-rank",
                   launcher ? 5 : c.signal, n, options);
    Expected expected;
    expected.exit_code = 128 + c.signal;
    expected.exiter = n - 1;
    Problems problems;
    CheckJob(job, expected, problems);
    for (const char* text :
         {"Assertion", "Caught a fatal signal", "SIGABRT", "FATAL ERROR"}) {
      if (job.r.err.find(text) != std::string::npos) {
        problems.Add("run %d of %d: \"%s\" on stderr (a rank aborted)", run + 1,
                     c.repeats, text);
      }
    }
    problems.ReportFor(job);
    if (::testing::Test::HasFailure()) break;
  }
}

// SIGTERM and SIGINT five jobs each, to the launcher and to one rank;
// SIGHUP and SIGQUIT, and the PAR client, two each.
INSTANTIATE_TEST_SUITE_P(
    EndSignals, EndSignalTrafficTest,
    ::testing::Combine(
        ::testing::Values(TrafficCase{"launcher", SIGTERM},
                          TrafficCase{"launcher", SIGINT},
                          TrafficCase{"rank", SIGTERM},
                          TrafficCase{"launcher", SIGHUP, false, 2},
                          TrafficCase{"rank", SIGQUIT, false, 2},
                          TrafficCase{"launcher", SIGTERM, true, 2},
                          TrafficCase{"rank", SIGINT, true, 2}),
        ::testing::Values(2, 4)),
    [](const auto& info) {
      const TrafficCase& c = std::get<0>(info.param);
      return absl::StrCat(c.par ? "par_" : "", c.target, "_",
                          EndSignalName(c.signal), "_", std::get<1>(info.param),
                          "ranks");
    });

// A bootstrap collective that times out because the ranks are in different
// GASNet calls (issue 24, item 9): the message every rank's fatal error
// carries names the collective, the rank that did not join, and the calls
// on both sides (the late rank is asked by its launcher, here through an
// agent too).
TEST(BootstrapTimeoutTest, NamesTheCallsOfBothSides) {
  ASSERT_FALSE(Conduit().empty());
  SKIP_IF_KNOWN_BUG();
  for (const std::string hosts : {"", "h0 h1"}) {
    const int n = 4;
    JobOptions options;
    options.env = {"GASNET_BOOTSTRAP_TIMEOUT=2"};
    options.ssh_hosts = hosts;
    const ExitJob job = RunExitJob("mismatch", 0, n, options);
    Problems problems;
    if (job.r.exit_code == 0) problems.Add("exit code 0, expected nonzero");
    if (!job.r.survivors.empty()) {
      problems.Add("%d process(es) outlived the launcher",
                   job.r.survivors.size());
    }
    for (const char* want : {
             "timed out after 2s (GASNET_BOOTSTRAP_TIMEOUT): rank(s) 3 did "
             "not join",
             // All of 0-2 on one launcher; with agents, the late rank's
             // launcher times out first and names its own host's ranks.
             hosts.empty() ? "rank(s) 0-2 joined it from gex_Segment_Attach"
                           : "joined it from gex_Segment_Attach",
             "rank(s) 3 are in gex_Coll_BarrierBlocking",
             // The ranks' own fatal error starts with their call.
             "gex_Segment_Attach: bootstrap",
         }) {
      if (!absl::StrContains(job.r.err, want)) {
        problems.Add("stderr lacks \"%s\" (hosts '%s')", want, hosts);
      }
    }
    problems.ReportFor(job);
  }
}

// PAR: threads of every rank send Requests and poll while two threads of
// one rank call gasnet_exit at once (one runs the exit, the other waits
// for the process to end); the job ends as any non-collective exit does.
TEST(ParExitTest, ThreadsSendingWhileTwoThreadsExit) {
  ASSERT_FALSE(Conduit().empty());
  SKIP_IF_KNOWN_BUG();
  for (const int n : {2, 4}) {
    JobOptions options;
    options.par = true;
    const ExitJob job = RunExitJob("threads", 43, n, options);
    Expected expected;
    expected.exit_code = 43;
    expected.exiter = n - 1;
    Problems problems;
    CheckJob(job, expected, problems);
    problems.ReportFor(job);
  }
}

// GASNET_BACKTRACE: a fatal signal names itself and, with the setting on,
// is followed by the failing thread's stack (frames of the client among
// them); off, no stack. Either way the job still ends cleanly.
TEST(FatalSignalTest, BacktraceFollowsTheSignalOnlyWhenAskedFor) {
  ASSERT_FALSE(Conduit().empty());
  SKIP_IF_KNOWN_BUG();
  for (const bool backtrace : {true, false}) {
    JobOptions options;
    options.env.push_back(backtrace ? "GASNET_BACKTRACE=1"
                                    : "GASNET_BACKTRACE=0");
    const ExitJob job = RunExitJob("sigsegv", 5, 2, options);
    Expected expected;
    expected.exit_code = 128 + SIGSEGV;
    expected.exiter = 1;
    Problems problems;
    CheckJob(job, expected, problems);
    problems.ReportFor(job);
    const std::string caught =
        "*** Caught a fatal signal (proc 1): SIGSEGV(11)\n";
    const size_t at = job.r.err.find(caught);
    ASSERT_NE(at, std::string::npos) << job.r.err;
    const std::string after = job.r.err.substr(at + caught.size());
    const std::string frame = "exit_client_" + Conduit() + "(";
    if (backtrace) {
      EXPECT_NE(after.find(frame), std::string::npos) << job.r.err;
    } else {
      EXPECT_EQ(job.r.err.find(frame), std::string::npos) << job.r.err;
    }
  }
}

// ---------------------------------------------------------------------------
// The exit protocol's Active Messages, from GEX_EXIT_REPORT=1:
//   *** EXIT (proc R): code=C outcome=O sent: reduce=A elect=B
//       elect_reply=C exit_request=D exit_reply=E
// (one line on stderr per rank, at the end of its exit).

struct ExitReport {
  int code = 0;
  std::string outcome;  // reduced, leader, member or failed
  int reduce = 0;
  int elect = 0;
  int elect_reply = 0;
  int exit_request = 0;
  int exit_reply = 0;
  std::string line;

  int ElectionAndRequests() const {
    return elect + elect_reply + exit_request + exit_reply;
  }
};

// Every rank's report line; a malformed, duplicated, foreign or missing
// line is a problem.
std::map<int, ExitReport> ExitReports(const ExitJob& job, Problems& problems) {
  static const std::regex re(
      "^\\*\\*\\* EXIT \\(proc ([0-9]+)\\): code=(-?[0-9]+) "
      "outcome=(reduced|leader|member|failed) sent: reduce=([0-9]+) "
      "elect=([0-9]+) elect_reply=([0-9]+) exit_request=([0-9]+) "
      "exit_reply=([0-9]+)( .*)?$");
  std::map<int, ExitReport> reports;
  for (const std::string& line : Lines(job.r.err)) {
    if (line.rfind("*** EXIT (proc ", 0) != 0) continue;
    std::smatch m;
    if (!std::regex_match(line, m, re)) {
      problems.Add("malformed exit report: %s", line);
      continue;
    }
    const int rank = std::atoi(m[1].str().c_str());
    if (rank >= job.n) {
      problems.Add("an exit report from rank %d of %d: %s", rank, job.n, line);
      continue;
    }
    if (reports.count(rank) != 0) {
      problems.Add("rank %d reported its exit twice:\n      %s\n      %s", rank,
                   reports[rank].line, line);
      continue;
    }
    ExitReport& report = reports[rank];
    report.code = std::atoi(m[2].str().c_str());
    report.outcome = m[3].str();
    report.reduce = std::atoi(m[4].str().c_str());
    report.elect = std::atoi(m[5].str().c_str());
    report.elect_reply = std::atoi(m[6].str().c_str());
    report.exit_request = std::atoi(m[7].str().c_str());
    report.exit_reply = std::atoi(m[8].str().c_str());
    report.line = line;
  }
  for (int rank = 0; rank < job.n; ++rank) {
    if (reports.count(rank) == 0) {
      problems.Add("rank %d printed no \"*** EXIT (proc %d): ...\" line", rank,
                   rank);
    }
  }
  return reports;
}

int CeilLog2(int n) {
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  return rounds;
}

enum class Grouping {
  kEveryRank,  // GEX_EXIT_GROUP=1: every exit message is an AM
  kDefault,    // one group per supernode (on smp: the whole job)
};

struct TrafficParam {
  const char* mode;  // collective or spin
  Grouping grouping;
  int n;
};

std::ostream& operator<<(std::ostream& os, const TrafficParam& p) {
  return os << p.mode
            << (p.grouping == Grouping::kEveryRank ? " GEX_EXIT_GROUP=1"
                                                   : " default grouping")
            << " at " << p.n << " rank(s)";
}

std::vector<TrafficParam> TrafficParams() {
  std::vector<TrafficParam> params;
  for (int n : {1, 2, 4, 8}) {
    params.push_back({"collective", Grouping::kEveryRank, n});
  }
  for (int n : {2, 4, 8}) params.push_back({"spin", Grouping::kEveryRank, n});
  for (int n : {2, 4, 8}) {
    params.push_back({"collective", Grouping::kDefault, n});
  }
  return params;
}

// "collective_group1_4ranks", "collective_default_group_8ranks".
std::string TrafficParamName(
    const ::testing::TestParamInfo<TrafficParam>& info) {
  return absl::StrCat(info.param.mode,
                      info.param.grouping == Grouping::kEveryRank
                          ? "_group1_"
                          : "_default_group_",
                      info.param.n, "ranks");
}

class ExitTrafficTest : public ::testing::TestWithParam<TrafficParam> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Conduit().empty())
        << "EXIT_TEST_CONDUIT is not set (exit_tests.bzl sets it)";
    SKIP_IF_KNOWN_BUG();
  }
};

// A reduce that completed: every rank `reduced`, `reduce(rank)` AMs each
// and no election or exit request.
template <typename ReduceOf>
void CheckReduced(const std::map<int, ExitReport>& reports, int code,
                  ReduceOf reduce_of, Problems& problems) {
  for (const auto& [rank, report] : reports) {
    const int reduce = reduce_of(rank);
    if (report.outcome != "reduced" || report.code != code ||
        report.reduce != reduce || report.ElectionAndRequests() != 0) {
      problems.Add(
          "rank %d: expected code=%d outcome=reduced reduce=%d and no "
          "election/exit messages; got: %s",
          rank, code, reduce, report.line);
    }
  }
}

// A non-collective exit by rank n-1 while the others poll: the seed's best
// case, 2N election and exit request/reply AMs in all.
void CheckLeaderAndMembers(const std::map<int, ExitReport>& reports, int n,
                           int code, Problems& problems) {
  const int leader = n - 1;
  int total = 0;
  for (const auto& [rank, report] : reports) {
    total += report.ElectionAndRequests();
    if (report.code != code) {
      problems.Add("rank %d: code=%d, expected %d: %s", rank, report.code, code,
                   report.line);
    }
    if (rank == leader) {
      if (report.outcome != "leader" || report.exit_request != n - 1) {
        problems.Add(
            "rank %d (the exiter): expected outcome=leader exit_request=%d; "
            "got: %s",
            rank, n - 1, report.line);
      }
    } else if (report.outcome != "member" || report.exit_reply != 1) {
      problems.Add("rank %d: expected outcome=member exit_reply=1; got: %s",
                   rank, report.line);
    }
  }
  if (static_cast<int>(reports.size()) == n) {
    if (total != 2 * n) {
      problems.Add(
          "elect + elect_reply + exit_request + exit_reply over all ranks is "
          "%d, expected 2N = %d (the best case)",
          total, 2 * n);
    }
    if (total > 4 * n - 2) {
      problems.Add(
          "%d election and exit request/reply AMs: more than the "
          "worst case 4N-2 = %d",
          total, 4 * n - 2);
    }
  }
}

TEST_P(ExitTrafficTest, ExitProtocolSendsTheExpectedActiveMessages) {
  const TrafficParam& p = GetParam();
  const std::string mode = p.mode;
  const int code = mode == "spin"                     ? 6
                   : p.grouping == Grouping::kDefault ? 0
                                                      : 3;
  JobOptions options;
  options.exit_timeout_s = 10;
  // Windows 5x (reduce 2.5 s, election 0.5 s, replies 1 s): the counts
  // below are those of each step answered in time, and a loaded CI host
  // once pushed an 8-rank election past 0.1 s onto the launcher's path.
  options.env = {"GEX_EXIT_REPORT=1", "GEX_EXIT_STEP_SCALE=5"};
  if (p.grouping == Grouping::kEveryRank) {
    options.env.push_back("GEX_EXIT_GROUP=1");
  }
  const ExitJob job = RunExitJob(mode, code, p.n, options);
  Problems problems;
  Expected expected;
  expected.exit_code = code;
  expected.exiter = p.n - 1;
  CheckJob(job, expected, problems);
  const std::map<int, ExitReport> reports = ExitReports(job, problems);
  if (mode == "collective") {
    // GEX_EXIT_GROUP=1: every rank reduces over AMs. By default the ranks
    // of a supernode agree through shared memory (no AM; on smp the whole
    // job) and only each supernode's first rank, its leader, reduces over
    // AMs with the other leaders.
    const int supernode = std::max(SupernodeMaxSize(), 1);
    CheckReduced(
        reports, code,
        [&](int rank) {
          if (p.grouping == Grouping::kEveryRank) return CeilLog2(p.n);
          return rank % supernode == 0 ? CeilLog2(Supernodes(p.n)) : 0;
        },
        problems);
  } else {
    CheckLeaderAndMembers(reports, p.n, code, problems);
  }
  problems.ReportFor(job);
}

INSTANTIATE_TEST_SUITE_P(Traffic, ExitTrafficTest,
                         ::testing::ValuesIn(TrafficParams()),
                         TrafficParamName);

}  // namespace
}  // namespace gexrt::testing
