#include "bootstrap/spawn/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status.h"

namespace gexrt::spawn {
namespace {

// Only async-signal-safe calls between fork and exec: the launcher may
// have threads (it does not today) and malloc locks would not survive.
void WriteAll(int fd, const char* s, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, s, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      return;
    }
    s += k;
    n -= static_cast<size_t>(k);
  }
}

// "<name>: <what> '<arg>': <error>\n" in one write. `name` (the launcher's
// name) was prepared before fork; snprintf is not on the async-signal-safe
// list, so the line is put together by hand, cut short if it is too long.
[[noreturn]] void ChildFail(const char* name, const char* what, const char* arg,
                            int err) {
  char buf[512];
  size_t n = 0;
  const char* error = strerrordesc_np(err);
  for (const char* part :
       {name, ": ", what, " '", arg, "': ", error ? error : "unknown error"}) {
    for (const char* p = part; *p != '\0' && n < sizeof buf - 1; ++p) {
      buf[n++] = *p;
    }
  }
  buf[n++] = '\n';
  WriteAll(2, buf, n);
  _exit(127);
}

}  // namespace

absl::StatusOr<Child> StartChild(const ChildSpec& spec) {
  if (spec.argv.empty()) {
    return absl::InvalidArgumentError("StartChild: empty argv");
  }
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  if (spec.capture_output) {
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
      const int e = errno;
      for (int fd : {out[0], out[1], err[0], err[1]}) {
        if (fd >= 0) close(fd);
      }
      return ErrnoToStatus(e, "pipe for a child's output");
    }
  }
  // Everything the child needs is built before fork(): the child may only
  // make async-signal-safe calls.
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = strchr(*e, '=');
    const size_t name_len = eq ? static_cast<size_t>(eq - *e) : strlen(*e);
    bool replaced = false;
    for (const std::string& add : spec.env) {
      if (add.size() > name_len && add[name_len] == '=' &&
          add.compare(0, name_len, *e, name_len) == 0) {
        replaced = true;
        break;
      }
    }
    if (!replaced) env_strings.emplace_back(*e);
  }
  for (const std::string& add : spec.env) env_strings.push_back(add);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string resolved = spec.argv[0];
  if (resolved.find('/') == std::string::npos) {
    absl::StatusOr<std::string> r = ResolveProgram(resolved);
    if (r.ok()) resolved = *r;
  }
  const pid_t launcher = getpid();
  const std::string name = spec.name.empty()
                               ? std::string(program_invocation_short_name)
                               : spec.name;

  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) close(fd);
    }
    return ErrnoToStatus(e, "fork");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(127);  // the launcher already died
    setpgid(0, spec.process_group);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
    }
    int in = spec.stdin_fd;
    if (in < 0) in = open("/dev/null", O_RDONLY);
    if (in >= 0 && in != 0) dup2(in, 0);
    if (spec.capture_output) {
      dup2(out[1], 1);
      dup2(err[1], 2);
    }
    if (spec.inherit_fd >= 0) {
      const int flags = fcntl(spec.inherit_fd, F_GETFD);
      if (flags >= 0) fcntl(spec.inherit_fd, F_SETFD, flags & ~FD_CLOEXEC);
    }
    // A system call, safe here. The launcher probed that it is allowed
    // (SameLayoutPersona), so a failure cannot happen but would only leave
    // the layout random.
    if (spec.persona != -1)
      personality(static_cast<unsigned long>(spec.persona));
    execve(resolved.c_str(), argv.data(), envp.data());
    ChildFail(name.c_str(), "cannot execute", spec.argv[0].c_str(), errno);
  }
  // Also from the parent: whichever runs first, the group exists before
  // anyone signals it.
  setpgid(pid, spec.process_group == 0 ? pid : spec.process_group);
  Child child;
  child.pid = pid;
  if (spec.capture_output) {
    close(out[1]);
    close(err[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    child.stdout_fd = out[0];
    child.stderr_fd = err[0];
  }
  return child;
}

absl::StatusOr<std::optional<int>> SameLayoutPersona() {
  static const absl::StatusOr<std::optional<int>> persona =
      []() -> absl::StatusOr<std::optional<int>> {
    auto refused = [](const char* call, int e) {
      return absl::Status(
          ErrnoToStatus(e, "").code(),
          absl::StrFormat(
              "cannot turn address-space randomisation off for the ranks: "
              "%s failed (%s; a container's seccomp filter refuses it, for "
              "one), so each rank may have its code, static data and shared "
              "libraries at different addresses; where the client needs "
              "them equal, start the job under `setarch -R` or with "
              "kernel.randomize_va_space=0 (GEX_SPAWN_SAME_LAYOUT=0 silences "
              "this)",
              call, strerrordesc_np(e)));
    };
    // 0xffffffff: a query, which changes nothing.
    const int current = personality(0xffffffff);
    if (current == -1) return refused("personality(0xffffffff)", errno);
    if ((current & ADDR_NO_RANDOMIZE) != 0) return std::nullopt;
    int level = -1;
    if (FILE* f = std::fopen("/proc/sys/kernel/randomize_va_space", "r")) {
      if (std::fscanf(f, "%d", &level) != 1) level = -1;
      std::fclose(f);
    }
    if (level == 0) return std::nullopt;
    const int wanted = current | ADDR_NO_RANDOMIZE;
    if (personality(static_cast<unsigned long>(wanted)) == -1) {
      return refused("personality(ADDR_NO_RANDOMIZE)", errno);
    }
    // The launcher itself keeps its persona: only the ranks take the new one.
    personality(static_cast<unsigned long>(current));
    return wanted;
  }();
  return persona;
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return absl::StrFormat("exited with code %d", WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* name = sigdescr_np(sig);
    return absl::StrFormat("was killed by signal %d (%s)", sig,
                           name ? name : "unknown");
  }
  return absl::StrFormat("ended with wait status 0x%x", wait_status);
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

absl::StatusOr<std::string> ResolveProgram(const std::string& program) {
  auto check = [](const std::string& path) -> absl::Status {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return ErrnoToStatus(errno, absl::StrFormat("program '%s'", path));
    }
    if (S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("program '%s' is a directory", path));
    }
    if (access(path.c_str(), X_OK) != 0) {
      return ErrnoToStatus(errno, absl::StrFormat("program '%s'", path));
    }
    return absl::OkStatus();
  };
  if (program.empty()) {
    return absl::InvalidArgumentError("the program name is empty");
  }
  if (program.find('/') != std::string::npos) {
    if (absl::Status s = check(program); !s.ok()) return s;
    return program;
  }
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  // An empty entry is the current directory. (StrSplit rather than
  // assigning "." to a substring: GCC 12 -O2 warned -Wrestrict there.)
  for (absl::string_view dir : absl::StrSplit(dirs, ':')) {
    const std::string candidate =
        absl::StrCat(dir.empty() ? absl::string_view(".") : dir, "/", program);
    if (check(candidate).ok()) return candidate;
  }
  return absl::NotFoundError(
      absl::StrFormat("program '%s' was not found in PATH", program));
}

}  // namespace gexrt::spawn
