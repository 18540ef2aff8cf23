#include "tests/testing/job_runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

extern char** environ;

namespace gexrt::testing {
namespace {

// The kernel's PF_EXITING task flag: set when a process starts to exit,
// before it closes its descriptors and long before it is a zombie.
constexpr unsigned long kPfExiting = 0x4;

// State letter of /proc/<pid>/stat, or 0 when the process is gone; 'X'
// (dead) for a process already on its way out (PF_EXITING). A process that
// closed the job's output pipes by exiting is not a survivor, even if the
// test looks before its exit has finished.
char ProcState(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return 0;
  const size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= line.size()) {
    return 0;
  }
  // After the name: state ppid pgrp session tty_nr tpgid flags ...
  std::istringstream rest(line.substr(close_paren + 2));
  char state = 0;
  long skip = 0;
  unsigned long flags = 0;
  rest >> state;
  for (int i = 0; i < 5; ++i) rest >> skip;
  if (rest >> flags && (flags & kPfExiting) != 0) return 'X';
  return state;
}

pid_t ParentOf(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return 0;
  const size_t close_paren = line.rfind(')');
  std::istringstream rest(line.substr(close_paren + 2));
  char state;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

// Children of this process that are alive (not zombies).
std::vector<pid_t> LiveChildren() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  const pid_t me = getpid();
  while (dirent* e = readdir(d)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    if (ParentOf(pid) == me) {
      const char st = ProcState(pid);
      if (st != 0 && st != 'Z' && st != 'X') out.push_back(pid);
    }
  }
  closedir(d);
  return out;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// The first bytes of /proc/<pid>/cmdline, arguments joined by spaces.
std::string CommandOf(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline");
  std::string cmd((std::istreambuf_iterator<char>(f)),
                  std::istreambuf_iterator<char>());
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  if (cmd.size() > 200) cmd = "..." + cmd.substr(cmd.size() - 197);
  return cmd;
}

// What a job that ran past its limit was doing: every thread's stack of
// each of its processes, by gdb where it is installed (a hang in a CI log
// is otherwise a name and nothing else). Bounded: 30 s per process.
std::string Backtraces(pid_t launcher) {
  std::string out = "[job_runner: the job ran past its limit; its stacks:]\n";
  const bool have_gdb = FileExists("/usr/bin/gdb");
  for (pid_t pid : Descendants(launcher)) {
    out += "[job_runner: pid " + std::to_string(pid) + ": " + CommandOf(pid) +
           "]\n";
    if (!have_gdb) continue;
    const std::string cmd = "timeout 30 /usr/bin/gdb -nx -batch -p " +
                            std::to_string(pid) +
                            " -ex 'thread apply all bt 30' 2>&1";
    FILE* gdb = popen(cmd.c_str(), "r");
    if (gdb == nullptr) continue;
    char line[1024];
    while (std::fgets(line, sizeof line, gdb) != nullptr) {
      // The frames and thread headers; gdb's chatter about symbols is not.
      // Template-heavy frames are cut at 240 characters.
      if (line[0] == '#' || std::strncmp(line, "Thread ", 7) == 0) {
        std::string frame = line;
        if (frame.size() > 241) frame = frame.substr(0, 240) + "...\n";
        out += frame;
      }
    }
    pclose(gdb);
  }
  if (!have_gdb) out += "[job_runner: no /usr/bin/gdb for their stacks]\n";
  return out;
}

}  // namespace

std::vector<pid_t> Descendants(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> parent_of;  // (pid, ppid)
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const pid_t pid = std::atoi(e->d_name);
      if (pid > 0) parent_of.emplace_back(pid, ParentOf(pid));
    }
    closedir(d);
  }
  std::vector<pid_t> out;
  std::vector<pid_t> frontier = {root};
  while (!frontier.empty()) {
    const pid_t p = frontier.back();
    frontier.pop_back();
    for (const auto& [pid, ppid] : parent_of) {
      if (ppid != p) continue;
      const char st = ProcState(pid);
      if (st == 0 || st == 'Z' || st == 'X') continue;
      out.push_back(pid);
      frontier.push_back(pid);
    }
  }
  return out;
}

std::vector<std::string> SanitizerEnv() {
#if defined(__SANITIZE_ADDRESS__)
  const char* own = std::getenv("ASAN_OPTIONS");
  return {std::string("ASAN_OPTIONS=") + (own != nullptr ? own : "") +
          ":handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0" +
          ":handle_abort=0"};
#else
  return {};
#endif
}

void BecomeSubreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  if (srcdir == nullptr) return path;
  return std::string(srcdir) + "/gex/" + path;
}

std::string MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string templ = std::string(tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return "";
  return buf.data();
}

std::vector<pid_t> PidsInDir(const std::string& dir) {
  std::vector<pid_t> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.find(".pid") == std::string::npos &&
        name.find(".child") == std::string::npos) {
      continue;
    }
    std::ifstream f(dir + "/" + name);
    pid_t pid = 0;
    if (f >> pid && pid > 0) out.push_back(pid);
  }
  closedir(d);
  return out;
}

std::vector<pid_t> LivePids(const std::vector<pid_t>& pids) {
  std::vector<pid_t> out;
  for (pid_t pid : pids) {
    const char st = ProcState(pid);
    if (st != 0 && st != 'Z' && st != 'X') out.push_back(pid);
  }
  return out;
}

std::vector<pid_t> WaitForPidsGone(const std::vector<pid_t>& pids,
                                   absl::Duration limit) {
  const absl::Time deadline = absl::Now() + limit;
  std::vector<pid_t> live = LivePids(pids);
  while (!live.empty() && absl::Now() < deadline) {
    // Reap any that were re-parented to us, then look again.
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    poll(nullptr, 0, 20);
    live = LivePids(pids);
  }
  return live;
}

std::vector<std::string> EntriesWithPrefix(const std::string& dir,
                                           const std::string& prefix) {
  std::vector<std::string> found;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return found;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) == 0) found.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

JobResult RunJob(const JobSpec& spec) {
  BecomeSubreaper();
  JobResult result;
  result.command = absl::StrJoin(spec.argv, " ");
  int out[2], err[2], in[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
      pipe2(in, O_CLOEXEC) != 0) {
    return result;
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const std::string& s : spec.env) {
      if (s.substr(0, s.find('=')) == name) overridden = true;
    }
    if (!overridden) env_strings.push_back(entry);
  }
  // Later entries for a name override earlier ones.
  std::vector<std::string> added;
  for (const std::string& s : spec.env) {
    const std::string name = s.substr(0, s.find('='));
    added.erase(std::remove_if(added.begin(), added.end(),
                               [&](const std::string& a) {
                                 return a.substr(0, a.find('=')) == name;
                               }),
                added.end());
    if (s.find('=') != std::string::npos) added.push_back(s);
  }
  env_strings.insert(env_strings.end(), added.begin(), added.end());
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  signal(SIGPIPE, SIG_IGN);
  if (!spec.stdin_data.empty()) {
    (void)!write(in[1], spec.stdin_data.data(), spec.stdin_data.size());
  }
  close(in[1]);

  const absl::Time deadline = absl::Now() + spec.limit;
  bool signalled = false;
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    pollfd fds[2] = {{out_open ? out[0] : -1, POLLIN, 0},
                     {err_open ? err[0] : -1, POLLIN, 0}};
    const int r = poll(fds, 2, 20);
    if (r < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents == 0) continue;
      const ssize_t k = read(fds[i].fd, buf, sizeof buf);
      if (k > 0) {
        (i == 0 ? result.out : result.err).append(buf, k);
      } else if (k == 0 || errno != EINTR) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
    if (spec.signal != 0 && !signalled && FileExists(spec.signal_when_file)) {
      kill(pid, spec.signal);
      signalled = true;
    }
    if (absl::Now() > deadline) {
      result.err += "\n" + Backtraces(pid);
      kill(pid, SIGKILL);
      result.err += "\n[job_runner: killed the launcher after the limit]\n";
      break;
    }
  }
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const absl::Time grace_end = absl::Now() + spec.survivor_grace;
  while (!LiveChildren().empty() && absl::Now() < grace_end) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    poll(nullptr, 0, 20);
  }
  result.survivors = LiveChildren();
  // Leave nothing behind for the next test.
  for (pid_t s : result.survivors) kill(s, SIGKILL);
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  return result;
}

}  // namespace gexrt::testing
