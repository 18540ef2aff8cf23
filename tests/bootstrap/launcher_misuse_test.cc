// gasnetrun_smp used carelessly, end to end: a program that cannot be
// executed, an option given twice, and a launcher whose stdout is a pipe
// the reader closes early (`gasnetrun_smp ... | head -2`). The ranks are
// shell scripts: none of this needs the bootstrap.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
// glibc 2.36 declares pidfd_open without C linkage for C++.
extern "C" {
#include <sys/pidfd.h>
}

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::string Launcher() { return Runfile("tools/gasnetrun_smp"); }

std::string Describe(const JobResult& r) {
  return absl::StrFormat("command: %s\nexit: %d\nstdout:\n%s\nstderr:\n%s",
                         r.command, r.exit_code, r.out, r.err);
}

// Writes an executable file `name` holding `text` into `dir`.
std::string WriteScript(const std::string& dir, const std::string& name,
                        const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  EXPECT_EQ(chmod(path.c_str(), 0755), 0) << path;
  return path;
}

JobResult Launch(std::vector<std::string> args) {
  JobSpec spec;
  spec.argv = {Launcher()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = {"GASNET_SMP_SPAWNER"};
  return RunJob(spec);
}

// execve fails in the forked rank (its interpreter does not exist, which
// the launcher's own check of the program cannot see): the rank's message
// carries the launcher's name, as every other message of the launcher does.
TEST(LauncherMisuseTest, ExecFailureNamesTheLauncher) {
  const std::string dir = MakeTempDir("exec");
  const std::string prog =
      WriteScript(dir, "no_interpreter", "#!/nonexistent/interpreter\n");
  const JobResult r = Launch({"-n", "2", prog});
  EXPECT_EQ(r.exit_code, 127) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr(absl::StrFormat(
                         "gasnetrun_smp: cannot execute '%s': No such file "
                         "or directory\n",
                         prog)))
      << Describe(r);
  EXPECT_THAT(r.err, Not(ContainsRegex("(^|\n)gasnetrun: "))) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty());
}

TEST(LauncherMisuseTest, RepeatedOptionIsAUsageError) {
  const JobResult r = Launch({"-n", "2", "-n", "3", "/bin/true"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("gasnetrun_smp: -n is given more than once "
                               "('2', then '3'): give it once"))
      << Describe(r);
  EXPECT_THAT(r.out, IsEmpty()) << Describe(r);
}

// Reads `fd` until `lines` newlines have arrived (or EOF); returns the text.
std::string ReadLines(int fd, int lines) {
  std::string text;
  char c;
  while (lines > 0 && read(fd, &c, 1) == 1) {
    text += c;
    if (c == '\n') --lines;
  }
  return text;
}

// `gasnetrun_smp -n 2 ... | head -2`: once the reader of the launcher's
// stdout is gone, the launcher ends as a pipeline's writer does, by
// SIGPIPE (status 141 to a shell), and its ranks end with it; before, it
// went on running the job to its end, dropping the output.
//
// Rank 0 prints two lines, waits for a line on its stdin (the launcher's),
// prints two more and then waits for its stdin to close, which this test
// never does: only the launcher's end can end it. Rank 1 prints one line
// and blocks until killed. The test reads the three lines, closes its read
// end, and only then lets rank 0 go on, so the launcher's next write finds
// the pipe closed.
TEST(LauncherMisuseTest, ClosedStdoutEndsTheJobLikeAPipeline) {
  const std::string dir = MakeTempDir("pipe");
  const std::string pids = MakeTempDir("pids");
  const std::string rank =
      WriteScript(dir, "rank.sh",
                  "#!/bin/sh\n"
                  "echo $$ > \"$1/$GEX_BOOTSTRAP_RANK.pid\"\n"
                  "if [ \"$GEX_BOOTSTRAP_RANK\" != 0 ]; then\n"
                  "  echo 'rank 1 up'\n"
                  "  exec sleep 1000000\n"
                  "fi\n"
                  "echo 'line 1'\n"
                  "echo 'line 2'\n"
                  "read go\n"
                  "echo 'line 3'\n"
                  "echo 'line 4'\n"
                  "while read more; do :; done\n");
  int in[2], out[2];
  ASSERT_EQ(pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  const std::string err_path = dir + "/stderr";
  const int err_fd =
      open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(err_fd, 0);
  const std::string launcher = Launcher();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err_fd, 2);
    unsetenv("GASNET_SMP_SPAWNER");
    // As a shell starts a pipeline's commands: SIGPIPE at its default.
    signal(SIGPIPE, SIG_DFL);
    execl(launcher.c_str(), launcher.c_str(), "-n", "2", rank.c_str(),
          pids.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err_fd);
  // Both ranks have written their pid files by then.
  std::vector<std::string> first = Lines(ReadLines(out[0], 3));
  std::sort(first.begin(), first.end());
  EXPECT_THAT(first, ElementsAre("line 1", "line 2", "rank 1 up"));
  close(out[0]);  // head -3 exits.
  // A test process with SIGPIPE at its default would die here if the
  // launcher were already gone; it is not, as rank 0 waits for this line.
  ASSERT_EQ(write(in[1], "go\n", 3), 3);

  // A bound on a hang, not a timing assertion: before the change the
  // launcher never ends here (rank 0 waits for a stdin this test holds).
  const int pidfd = pidfd_open(pid, 0);
  ASSERT_GE(pidfd, 0) << strerror(errno);
  pollfd ended = {pidfd, POLLIN, 0};
  int ready;
  while ((ready = poll(&ended, 1, 30 * 1000)) < 0 && errno == EINTR) {
  }
  close(pidfd);
  int status = 0;
  if (ready == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    for (pid_t p : PidsInDir(pids)) kill(p, SIGKILL);
    FAIL() << "the launcher was still running 30 s after its stdout closed";
  }
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  close(in[1]);
  std::ifstream err_file(err_path);
  const std::string err((std::istreambuf_iterator<char>(err_file)),
                        std::istreambuf_iterator<char>());
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE)
      << "wait status 0x" << std::hex << status << "\nstderr:\n"
      << err;
  // Its ranks were started, and the launcher ended them (and reaped them)
  // before it ended itself.
  EXPECT_EQ(PidsInDir(pids).size(), 2u);
  EXPECT_THAT(WaitForPidsGone(PidsInDir(pids), absl::Seconds(30)), IsEmpty());
}

}  // namespace
}  // namespace gexrt::testing
