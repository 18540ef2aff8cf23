#include "bootstrap/spawn/cleanup_guard.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
// glibc 2.36 declares pidfd_open without C linkage for C++.
extern "C" {
#include <sys/pidfd.h>
}

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::spawn {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string Dir() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d != nullptr ? d : "/tmp";
}

std::string ReportPath(std::string_view job_id) {
  return absl::StrCat(Dir(), "/cleanup.", std::string(job_id));
}

// The state letter of `pid` in /proc ('Z' for a zombie), or 'X' when it is
// gone.
char ProcessState(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return 'X';
  return text[paren + 2];
}

// The clean-up under test (it runs in the guard process): writes one line
// per rank pid, "<pid> <state when the clean-up ran>", into a file named
// by the job, and says it removed one object per rank.
int RecordCleanup(std::string_view job_id, absl::Span<const pid_t> ranks) {
  std::ofstream out(ReportPath(job_id));
  out << "ran\n";
  for (pid_t pid : ranks) out << pid << " " << ProcessState(pid) << "\n";
  return static_cast<int>(ranks.size());
}

// The report's lines, or nothing when the clean-up never ran.
std::vector<std::string> Report(std::string_view job_id) {
  std::ifstream in(ReportPath(job_id));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Waits (bounded) for process `pid`, which is not our child, to exit.
bool WaitForExit(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, 30'000) == 1;
}

// A child that blocks until `release` is closed, then exits 0.
pid_t BlockedChild(int* release) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[1]);
    char c;
    while (read(fds[0], &c, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
  }
  close(fds[0]);
  *release = fds[1];
  return pid;
}

TEST(CleanupGuardTest, DismissedGuardExitsWithoutCleaningUp) {
  absl::StatusOr<CleanupGuard> guard =
      CleanupGuard::Start(&RecordCleanup, "dismissed", "test");
  ASSERT_TRUE(guard.ok()) << guard.status();
  ASSERT_TRUE(guard->active());
  const int pidfd = pidfd_open(guard->pid(), 0);
  ASSERT_GE(pidfd, 0);
  guard->Watch(getpid());
  guard->Dismiss();
  EXPECT_FALSE(guard->active());
  // Dismiss returns once the guard has exited.
  pollfd p{pidfd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 1);
  close(pidfd);
  EXPECT_THAT(Report("dismissed"), IsEmpty());
}

// The launcher "dies" (the guard's pipe closes without a dismissal) while
// a watched rank still runs: the guard cleans up only after the rank has
// exited, and is given every watched pid.
TEST(CleanupGuardTest, AbandonedGuardWaitsForTheRanksThenCleansUp) {
  int release = -1;
  const pid_t rank = BlockedChild(&release);
  ASSERT_GT(rank, 0);
  int exited_status = 0;
  const pid_t exited = fork();
  if (exited == 0) _exit(0);
  ASSERT_EQ(waitpid(exited, &exited_status, 0), exited);

  int pidfd = -1;
  {
    absl::StatusOr<CleanupGuard> guard =
        CleanupGuard::Start(&RecordCleanup, "abandoned", "test");
    ASSERT_TRUE(guard.ok()) << guard.status();
    pidfd = pidfd_open(guard->pid(), 0);
    ASSERT_GE(pidfd, 0);
    guard->Watch(rank);
    guard->Watch(exited);  // already gone: nothing to wait for
  }                        // Destroyed without Dismiss.
  close(release);  // Now the rank may exit (it stays a zombie: not reaped).
  ASSERT_TRUE(WaitForExit(pidfd));
  close(pidfd);
  // When the clean-up ran, the rank had exited.
  EXPECT_THAT(Report("abandoned"), ElementsAre("ran", absl::StrCat(rank, " Z"),
                                               absl::StrCat(exited, " X")));
  int status = 0;
  EXPECT_EQ(waitpid(rank, &status, 0), rank);
}

// Even from a subreaper, the guard is not the starter's child (a launcher
// waits until it has no children left), and the subreaper setting stays.
TEST(CleanupGuardTest, GuardIsNotAChildEvenOfASubreaper) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  absl::StatusOr<CleanupGuard> guard =
      CleanupGuard::Start(&RecordCleanup, "not-a-child", "test");
  ASSERT_TRUE(guard.ok()) << guard.status();
  int subreaper = 0;
  ASSERT_EQ(prctl(PR_GET_CHILD_SUBREAPER, &subreaper), 0);
  EXPECT_EQ(subreaper, 1);
  siginfo_t info{};
  EXPECT_EQ(waitid(P_PID, guard->pid(), &info, WEXITED | WNOHANG | WNOWAIT),
            -1);
  EXPECT_EQ(errno, ECHILD);
  guard->Dismiss();
  EXPECT_THAT(Report("not-a-child"), IsEmpty());
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

// A terminal's Ctrl-C or a SIGTERM to the launcher's process group reaches
// the guard too; it must still be there to clean up afterwards.
TEST(CleanupGuardTest, SignalsDoNotStopTheGuard) {
  int pidfd = -1;
  {
    absl::StatusOr<CleanupGuard> guard =
        CleanupGuard::Start(&RecordCleanup, "signalled", "test");
    ASSERT_TRUE(guard.ok()) << guard.status();
    pidfd = pidfd_open(guard->pid(), 0);
    ASSERT_GE(pidfd, 0);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) {
      EXPECT_EQ(kill(guard->pid(), sig), 0);
    }
  }
  ASSERT_TRUE(WaitForExit(pidfd));
  close(pidfd);
  EXPECT_THAT(Report("signalled"), ElementsAre("ran"));
}

TEST(CleanupGuardTest, InactiveGuardDoesNothing) {
  CleanupGuard guard;
  EXPECT_FALSE(guard.active());
  EXPECT_EQ(guard.pid(), -1);
  guard.Watch(getpid());
  guard.Dismiss();
}

}  // namespace
}  // namespace gexrt::spawn
