#include "bootstrap/spawn/cleanup_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
// glibc 2.36 declares pidfd_open without C linkage for C++.
extern "C" {
#include <sys/pidfd.h>
}

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "base/stderr_line.h"

namespace gexrt::spawn {
namespace {

// The command socket carries, first, the guard's pid to the launcher, then
// one int32 per record the other way: a rank's pid to watch, or kDismiss.
constexpr int32_t kDismiss = 0;
// Where the guard keeps its end of the command socket.
constexpr int kGuardCommandFd = 3;

// How long Dismiss waits for the guard to exit.
constexpr int kDismissWaitMs = 10'000;

// Never raises SIGPIPE (a guard that was killed must not take its
// launcher with it).
bool WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t k = send(fd, p, size, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    size -= static_cast<size_t>(k);
  }
  return true;
}

// Reads exactly `size` bytes; false on end of file or error.
bool ReadAll(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t k = read(fd, p, size);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    size -= static_cast<size_t>(k);
  }
  return true;
}

// Waits until every process in `pidfds` has exited or `limit` has passed;
// closes them.
void WaitForExits(std::vector<int> pidfds, absl::Duration limit) {
  const absl::Time deadline = absl::Now() + limit;
  while (!pidfds.empty()) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    std::vector<pollfd> fds;
    for (int fd : pidfds) fds.push_back({fd, POLLIN, 0});
    const int r = poll(fds.data(), fds.size(),
                       static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (r < 0 && errno != EINTR) break;
    std::vector<int> running;
    for (const pollfd& p : fds) {
      if (p.revents != 0) {
        close(p.fd);
      } else {
        running.push_back(p.fd);
      }
    }
    pidfds = std::move(running);
  }
  for (int fd : pidfds) close(fd);
}

// The guard process. Never returns; leaves with _exit so that nothing the
// launcher (or a client program acting as its own launcher) registered
// with atexit runs twice.
[[noreturn]] void GuardMain(int command_fd, JobCleanup cleanup,
                            const std::string& job_id,
                            const std::string& name) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) {
    signal(sig, SIG_IGN);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Out of the way of the descriptors rearranged below (a launcher started
  // with a closed stdin may have been given the socket as descriptor 0).
  const int command = fcntl(command_fd, F_DUPFD, kGuardCommandFd + 1);
  const pid_t self = getpid();
  if (command < 0 || !WriteAll(command, &self, sizeof self)) _exit(1);
  const int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0 && null_fd != 0) {
    dup2(null_fd, 0);
    close(null_fd);
  }
  // Nothing of the launcher's but stdout, stderr and the command socket: a
  // rank's socket or output pipe held here would keep its peer waiting.
  if (dup2(command, kGuardCommandFd) < 0) _exit(1);
  close_range(kGuardCommandFd + 1, ~0U, 0);

  std::vector<pid_t> ranks;
  std::vector<int> pidfds;
  int32_t record;
  while (ReadAll(kGuardCommandFd, &record, sizeof record)) {
    if (record == kDismiss) _exit(0);
    ranks.push_back(static_cast<pid_t>(record));
    // A rank that has already exited (ESRCH) needs no waiting for.
    const int fd = pidfd_open(static_cast<pid_t>(record), 0);
    if (fd >= 0) pidfds.push_back(fd);
  }
  // The launcher is gone (its end closed) without having cleaned up. Its ranks
  // are dying of their parent-death signal; once they have, nothing can create
  // another object of the job.
  WaitForExits(std::move(pidfds), CleanupGuard::kRankWait);
  const int removed = cleanup(job_id, ranks);
  if (removed > 0) {
    WriteStderrLine(absl::StrFormat(
        "%s: the launcher of job %s ended without cleaning up; removed %d "
        "shared memory object%s its ranks left",
        name, job_id, removed, removed == 1 ? "" : "s"));
  }
  _exit(0);
}

}  // namespace

absl::StatusOr<CleanupGuard> CleanupGuard::Start(JobCleanup cleanup,
                                                 std::string job_id,
                                                 std::string name) {
  int command[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, command) != 0) {
    return ErrnoToStatus(errno, "socketpair for the clean-up guard");
  }
  // The guard must not become this process's child: orphaned through an
  // intermediate, it goes to the nearest subreaper, which must not be us.
  int was_subreaper = 0;
  prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper);
  if (was_subreaper != 0) prctl(PR_SET_CHILD_SUBREAPER, 0);
  const pid_t middle = fork();
  if (middle == 0) {
    close(command[1]);
    if (fork() == 0) GuardMain(command[0], cleanup, job_id, name);
    _exit(0);
  }
  const int fork_errno = errno;
  close(command[0]);
  if (middle > 0) {
    while (waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (was_subreaper != 0) prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t guard_pid = -1;
  // Its pid, or end of file if it never started.
  const bool started =
      middle > 0 && ReadAll(command[1], &guard_pid, sizeof guard_pid);
  if (!started) {
    close(command[1]);
    return middle < 0 ? ErrnoToStatus(fork_errno, "fork of the clean-up guard")
                      : absl::InternalError("the clean-up guard did not start");
  }
  CleanupGuard guard;
  guard.pid_ = guard_pid;
  guard.to_guard_ = command[1];
  guard.pidfd_ = pidfd_open(guard_pid, 0);
  return guard;
}

CleanupGuard::~CleanupGuard() {
  if (to_guard_ >= 0) close(to_guard_);
  if (pidfd_ >= 0) close(pidfd_);
}

CleanupGuard::CleanupGuard(CleanupGuard&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      to_guard_(std::exchange(other.to_guard_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)) {}

CleanupGuard& CleanupGuard::operator=(CleanupGuard&& other) noexcept {
  if (this != &other) {
    if (to_guard_ >= 0) close(to_guard_);
    if (pidfd_ >= 0) close(pidfd_);
    pid_ = std::exchange(other.pid_, -1);
    to_guard_ = std::exchange(other.to_guard_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
  }
  return *this;
}

void CleanupGuard::Watch(pid_t rank) {
  if (to_guard_ < 0) return;
  const int32_t record = static_cast<int32_t>(rank);
  (void)WriteAll(to_guard_, &record, sizeof record);
}

void CleanupGuard::Dismiss() {
  if (to_guard_ < 0) return;
  const int32_t record = kDismiss;
  (void)WriteAll(to_guard_, &record, sizeof record);
  close(to_guard_);
  to_guard_ = -1;
  if (pidfd_ >= 0) {
    pollfd p{pidfd_, POLLIN, 0};
    while (poll(&p, 1, kDismissWaitMs) < 0 && errno == EINTR) {
    }
    close(pidfd_);
    pidfd_ = -1;
  }
}

}  // namespace gexrt::spawn
