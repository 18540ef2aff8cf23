// Running a whole job (a launcher and its ranks) from a test and checking
// it from the outside: exit code, stdout, stderr, and that no process of
// the job survives it.
//
// The test process makes itself a child subreaper (PR_SET_CHILD_SUBREAPER)
// so that any process of the job that outlives its parent is re-parented to
// the test, where it can be seen and counted, instead of disappearing into
// init.
#ifndef GEX_TESTS_TESTING_JOB_RUNNER_H_
#define GEX_TESTS_TESTING_JOB_RUNNER_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace gexrt::testing {

struct JobResult {
  int exit_code = -1;  // the launcher's exit code, or 128+signal
  std::string out;
  std::string err;
  // Processes re-parented to the test that were still alive (not zombies)
  // when the launcher had exited: orphans of the job. Reaped before return.
  std::vector<pid_t> survivors;
  // The command, for failure messages.
  std::string command;
};

struct JobSpec {
  std::vector<std::string> argv;
  // "NAME=value" added to the test's environment; "NAME" alone unsets it.
  std::vector<std::string> env;
  std::string stdin_data;
  // Killed with SIGKILL if it runs longer (a hung launcher fails the test
  // instead of hanging it); first the stacks of all its processes' threads
  // (gdb, where installed) are appended to `err`, so a hang in a CI log
  // says where each rank was.
  absl::Duration limit = absl::Seconds(120);
  // Sent to the launcher once `signal_when_file` exists (polled).
  int signal = 0;
  std::string signal_when_file;
  // How long processes re-parented to the test may take to end after the
  // launcher has, before they count as survivors (polled). Zero: none. A
  // launcher killed with SIGKILL cannot wait for its remote agents; they
  // end when they see it gone, a moment later (tests/faults).
  absl::Duration survivor_grace = absl::ZeroDuration();
};

// Makes the calling process a child subreaper (idempotent).
void BecomeSubreaper();

JobResult RunJob(const JobSpec& spec);

// A runfiles path: "tools/gasnetrun_smp" -> $TEST_SRCDIR/gex/tools/....
std::string Runfile(const std::string& path);

// A fresh empty directory under $TEST_TMPDIR (or /tmp).
std::string MakeTempDir(const std::string& prefix);

// The pids written into the "<rank>.pid" / "<rank>.child" files of `dir`.
std::vector<pid_t> PidsInDir(const std::string& dir);

// Pids among `pids` that are alive (exist and are not zombies).
std::vector<pid_t> LivePids(const std::vector<pid_t>& pids);

// Waits until every pid in `pids` is dead, at most `limit`; returns those
// still alive. (A bounded poll for a condition, not a sleep.)
std::vector<pid_t> WaitForPidsGone(const std::vector<pid_t>& pids,
                                   absl::Duration limit);

// Paths of the entries of `dir` whose names start with `prefix` (leak
// checks: "/dev/shm", "GASNT<job id>."), sorted; none when `dir` cannot be
// read.
std::vector<std::string> EntriesWithPrefix(const std::string& dir,
                                           const std::string& prefix);

// Lines of `text`.
std::vector<std::string> Lines(const std::string& text);

// Every live process below `root` (its children, theirs, ...), parents
// first.
std::vector<pid_t> Descendants(pid_t root);

// Environment entries for a job's processes under AddressSanitizer (CI
// builds ASan and UBSan together; none otherwise): ASan's own handlers for
// the fatal signals would stay in place of the runtime's (exit/signals.h
// installs its handlers only over default dispositions), and tests send
// those signals on purpose to see the runtime's; memory errors are still
// reported.
std::vector<std::string> SanitizerEnv();

}  // namespace gexrt::testing

#endif  // GEX_TESTS_TESTING_JOB_RUNNER_H_
