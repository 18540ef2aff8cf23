#include "bootstrap/spawn/pmi_spawner.h"

#include <errno.h>
#include <fcntl.h>
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
#include "base/stderr_line.h"
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
        name == "PMIX_MCA_gds") {
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
  if (cleanup != nullptr) (void)cleanup(*job_id, {});
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace gexrt::spawn
