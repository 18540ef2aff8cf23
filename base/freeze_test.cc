// GASNET_FREEZE_ON_ERROR: a fatal error in a child process with the setting
// on stops there (the child stays alive after printing how to attach),
// and clearing gasnet_frozen the way a debugger would (here with
// process_vm_writev into the child) lets it go on to its fatal exit.
#include "base/freeze.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/fatal.h"
#include "base/job_rank.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt {
namespace {

using ::testing::HasSubstr;

struct Child {
  pid_t pid = -1;
  int err = -1;  // Read end of its stderr.
};

// A child that hits a fatal error with `freeze` as GASNET_FREEZE_ON_ERROR.
Child StartFailingChild(const char* freeze) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    setenv("GASNET_FREEZE_ON_ERROR", freeze, 1);
    SetJobRank(5);
    FatalError("something broke");
  }
  close(fds[1]);
  return {pid, fds[0]};
}

// Reads the child's stderr until `text` appears or it closes.
std::string ReadUntil(int fd, const std::string& text) {
  std::string got;
  char buf[512];
  while (got.find(text) == std::string::npos) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

TEST(FreezeTest, FrozenUntilADebuggerClearsTheFlag) {
  Child c = StartFailingChild("1");
  const std::string err = ReadUntil(c.err, "'continue'\n");
  EXPECT_THAT(err, HasSubstr("*** FATAL ERROR (proc 5): something broke"));
  EXPECT_THAT(err, HasSubstr("*** FREEZE (proc 5): frozen for a debugger "
                             "(pid " +
                             std::to_string(c.pid) + ")"));
  // Frozen: it set the flag, and its stderr stays open (a child that went
  // on would close it by exiting; a frozen one never does, so this wait
  // can only end by its bound, not fail falsely).
  int flag = 0;
  struct iovec into = {&flag, sizeof flag};
  struct iovec from = {const_cast<int*>(&gasnet_frozen), sizeof flag};
  ASSERT_EQ(process_vm_readv(c.pid, &into, 1, &from, 1, 0),
            static_cast<ssize_t>(sizeof flag))
      << strerror(errno);
  EXPECT_EQ(flag, 1);
  struct pollfd p = {c.err, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 200), 0) << "the child went on without a debugger";
  int status = 0;
  EXPECT_EQ(waitpid(c.pid, &status, WNOHANG), 0);

  // What 'set var gasnet_frozen = 0' does: the child is a fork of this
  // process, so the variable is at the same address there.
  int zero = 0;
  struct iovec local = {&zero, sizeof zero};
  struct iovec remote = {const_cast<int*>(&gasnet_frozen), sizeof zero};
  ASSERT_EQ(process_vm_writev(c.pid, &local, 1, &remote, 1, 0),
            static_cast<ssize_t>(sizeof zero))
      << strerror(errno);
  ASSERT_EQ(waitpid(c.pid, &status, 0), c.pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) << status;
  close(c.err);
}

TEST(FreezeTest, OffByDefaultAndForMalformedValues) {
  for (const char* value : {"0", "no", "maybe"}) {
    Child c = StartFailingChild(value);
    const std::string err = ReadUntil(c.err, "\x01never");
    int status = 0;
    ASSERT_EQ(waitpid(c.pid, &status, 0), c.pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) << value;
    EXPECT_THAT(err, HasSubstr("something broke")) << value;
    EXPECT_THAT(err, ::testing::Not(HasSubstr("FREEZE"))) << value;
    close(c.err);
  }
}

}  // namespace
}  // namespace gexrt
