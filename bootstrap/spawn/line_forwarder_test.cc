#include "bootstrap/spawn/line_forwarder.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::spawn {
namespace {

using ::testing::ElementsAre;

// A pipe whose read end the test drains; closes what is still open.
class Pipe {
 public:
  Pipe() {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    read_fd_ = fds[0];
    write_fd_ = fds[1];
  }
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  int read_fd() const { return read_fd_; }
  int write_fd() const { return write_fd_; }
  void CloseRead() {
    if (read_fd_ >= 0) close(read_fd_);
    read_fd_ = -1;
  }
  void CloseWrite() {
    if (write_fd_ >= 0) close(write_fd_);
    write_fd_ = -1;
  }

  // Everything written so far (the writer is this thread, so whatever it
  // wrote is already in the pipe).
  std::string Drain() {
    std::string out;
    char buffer[4096];
    for (;;) {
      pollfd p = {read_fd_, POLLIN, 0};
      if (poll(&p, 1, 0) <= 0) break;
      const ssize_t n = read(read_fd_, buffer, sizeof buffer);
      if (n <= 0) break;
      out.append(buffer, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
};

// Reads `fd` to EOF on its own thread, `delay` between reads.
class Reader {
 public:
  explicit Reader(int fd, std::chrono::microseconds delay = {})
      : thread_([this, fd, delay] {
          // Signals aimed at the writer must not land here instead.
          sigset_t set;
          sigemptyset(&set);
          sigaddset(&set, SIGALRM);
          pthread_sigmask(SIG_BLOCK, &set, nullptr);
          char buffer[1024];
          for (;;) {
            if (delay.count() > 0) std::this_thread::sleep_for(delay);
            const ssize_t n = read(fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            data_.append(buffer, static_cast<size_t>(n));
          }
        }) {}

  // Waits for EOF; the writer must have closed its end.
  std::string Join() {
    thread_.join();
    return data_;
  }

 private:
  std::string data_;
  std::thread thread_;
};

TEST(LineForwarderTest, InterleavedPartialAppendsGiveWholeLines) {
  Pipe pipe;
  LineForwarder out(pipe.write_fd());
  out.Append(0, "zero-a");
  out.Append(1, "one-a part");
  out.Append(2, "two-a\ntwo-b");
  EXPECT_EQ(pipe.Drain(), "two-a\n");
  out.Append(1, "ial\none-b\none-");
  EXPECT_EQ(pipe.Drain(), "one-a partial\none-b\n");
  out.Append(0, " end\n");
  out.Append(2, " end\n");
  EXPECT_EQ(pipe.Drain(), "zero-a end\ntwo-b end\n");
  EXPECT_EQ(out.pending_bytes(0), 0u);
  EXPECT_EQ(out.pending_bytes(1), 4u);
  EXPECT_EQ(out.pending_bytes(2), 0u);
  EXPECT_EQ(out.pending_bytes(99), 0u);
  // Byte by byte works too.
  for (char c : std::string("c\nd")) out.Append(1, std::string_view(&c, 1));
  EXPECT_EQ(pipe.Drain(), "one-c\n");
  EXPECT_EQ(out.pending_bytes(1), 1u);
  EXPECT_FALSE(out.failed());
}

// The messages of a SOCK_SEQPACKET socket, one per write(2) made to it.
std::vector<std::string> Messages(int fd) {
  std::vector<std::string> messages;
  char buffer[1 << 16];
  for (;;) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) break;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    messages.emplace_back(buffer, static_cast<size_t>(n));
  }
  return messages;
}

TEST(LineForwarderTest, LinesOfOneAppendGoOutInOneWrite) {
  // A seqpacket socket keeps write boundaries, so each message read is one
  // write(2) of the forwarder.
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds), 0);
  LineForwarder out(fds[1]);
  out.Append(5, "a");
  out.Append(6, "x\ny");
  out.Append(5, "1\na2\na3\nb");
  out.Append(6, "\n");
  EXPECT_THAT(Messages(fds[0]), ElementsAre("x\n", "a1\na2\na3\n", "y\n"));
  // A long tail's pieces share the write of the lines before them.
  LineForwarder small(fds[1], 4);
  small.Append(1, "ab\ncd\n0123456789");
  EXPECT_THAT(Messages(fds[0]), ElementsAre("ab\ncd\n01234567"));
  small.Finish(1);
  EXPECT_THAT(Messages(fds[0]), ElementsAre("89\n"));
  close(fds[0]);
  close(fds[1]);
}

TEST(LineForwarderTest, LongLinesGoOutInMaxLinePieces) {
  Pipe pipe;
  LineForwarder out(pipe.write_fd(), 8);
  // 20 bytes without a newline: two 8-byte pieces go, 4 bytes wait.
  out.Append(0, "abcdefghijklmnopqrst");
  EXPECT_EQ(pipe.Drain(), "abcdefghijklmnop");
  EXPECT_EQ(out.pending_bytes(0), 4u);
  // Another source's line can come between the pieces...
  out.Append(1, "x\n");
  EXPECT_EQ(pipe.Drain(), "x\n");
  // ... but the long line's bytes are all there, unchanged.
  out.Append(0, "uv\n");
  EXPECT_EQ(pipe.Drain(), "qrstuv\n");

  // Exactly max_line bytes wait for the next byte: a newline keeps the line
  // whole, anything else sends a piece.
  out.Append(2, "12345678");
  EXPECT_EQ(pipe.Drain(), "");
  EXPECT_EQ(out.pending_bytes(2), 8u);
  out.Append(2, "\n");
  EXPECT_EQ(pipe.Drain(), "12345678\n");
  out.Append(2, "123456789");
  EXPECT_EQ(pipe.Drain(), "12345678");
  EXPECT_EQ(out.pending_bytes(2), 1u);

  // Growing a buffered tail piece by piece.
  out.Append(3, "abcde");
  out.Append(3, "fghij");
  EXPECT_EQ(pipe.Drain(), "abcdefgh");
  EXPECT_EQ(out.pending_bytes(3), 2u);

  // A long line complete within one Append is written whole.
  out.Append(4, "0123456789abcdefghij\nxy");
  EXPECT_EQ(pipe.Drain(), "0123456789abcdefghij\n");
  EXPECT_EQ(out.pending_bytes(4), 2u);
  // Complete lines and the pieces of a long tail share the write.
  out.Append(4, "z\n0123456789abcdefghij");
  EXPECT_EQ(pipe.Drain(), "xyz\n0123456789abcdef");
  EXPECT_EQ(out.pending_bytes(4), 4u);
}

TEST(LineForwarderTest, FinishAddsTheMissingNewline) {
  Pipe pipe;
  LineForwarder out(pipe.write_fd());
  out.Append(0, "done\nno newline");
  EXPECT_EQ(pipe.Drain(), "done\n");
  out.Finish(0);
  EXPECT_EQ(pipe.Drain(), "no newline\n");
  EXPECT_EQ(out.pending_bytes(0), 0u);
  // Nothing pending, or a source never seen: nothing written.
  out.Append(1, "whole\n");
  EXPECT_EQ(pipe.Drain(), "whole\n");
  out.Finish(1);
  out.Finish(7);
  out.Finish(0);
  EXPECT_EQ(pipe.Drain(), "");
  // A finished source may start again (a number reused).
  out.Append(0, "again");
  out.Finish(0);
  EXPECT_EQ(pipe.Drain(), "again\n");
}

TEST(LineForwarderTest, FinishAllGoesInSourceOrder) {
  Pipe pipe;
  LineForwarder out(pipe.write_fd());
  out.Append(30, "c");
  out.Append(10, "a");
  out.Append(20, "full\n");
  out.Append(-5, "neg");
  out.FinishAll();
  EXPECT_EQ(pipe.Drain(), "full\nneg\na\nc\n");
  EXPECT_EQ(out.pending_bytes(10), 0u);
  out.FinishAll();
  EXPECT_EQ(pipe.Drain(), "");
}

TEST(LineForwarderTest, ClosedPipeWithDropSetsFailedAndDropsOutput) {
  signal(SIGPIPE, SIG_IGN);
  Pipe pipe;
  LineForwarder out(pipe.write_fd(), 64 * 1024, BrokenPipe::kDrop);
  out.Append(0, "buffered");
  pipe.CloseRead();
  EXPECT_FALSE(out.failed());
  out.Append(1, "line\n");
  EXPECT_TRUE(out.failed());
  EXPECT_EQ(out.error(), EPIPE);
  // Nothing is kept once output is gone, and nothing crashes.
  EXPECT_EQ(out.pending_bytes(0), 0u);
  out.Append(0, "more\nand more");
  EXPECT_EQ(out.pending_bytes(0), 0u);
  out.Finish(0);
  out.FinishAll();
  EXPECT_TRUE(out.failed());
}

// The default, a launcher's: a closed pipe ends the process by SIGPIPE, as
// it would any writer in a shell pipeline, even with SIGPIPE ignored and
// blocked (as the launcher has it) beforehand.
TEST(LineForwarderDeathTest, ClosedPipeEndsTheProcessBySigpipe) {
  EXPECT_EXIT(
      {
        signal(SIGPIPE, SIG_IGN);
        sigset_t pipe_only;
        sigemptyset(&pipe_only);
        sigaddset(&pipe_only, SIGPIPE);
        sigprocmask(SIG_BLOCK, &pipe_only, nullptr);
        Pipe pipe;
        LineForwarder out(pipe.write_fd());
        out.Append(0, "first\n");
        pipe.CloseRead();
        out.Append(0, "second\n");
        std::_Exit(0);  // Not reached.
      },
      ::testing::KilledBySignal(SIGPIPE), "");
}

// Other failures never end the process.
TEST(LineForwarderTest, BadFdSetsFailed) {
  LineForwarder out(-1);
  out.Append(0, "partial");
  EXPECT_FALSE(out.failed());  // Nothing written yet.
  out.Finish(0);
  EXPECT_TRUE(out.failed());
  EXPECT_EQ(out.error(), EBADF);
}

// Lines "s<source> n<index> <padding>" with padding lengths that make some
// lines far longer than a pipe buffer's atomic-write limit.
std::map<int, std::vector<std::string>> MakeLines(int sources,
                                                  int lines_per_source,
                                                  size_t max_padding,
                                                  std::mt19937& rng) {
  std::map<int, std::vector<std::string>> lines;
  std::uniform_int_distribution<size_t> padding(0, max_padding);
  for (int s = 0; s < sources; ++s) {
    for (int i = 0; i < lines_per_source; ++i) {
      std::string line = "s" + std::to_string(s) + " n" + std::to_string(i) +
                         " " + std::string(padding(rng), 'a' + s % 26);
      lines[s].push_back(std::move(line));
    }
  }
  return lines;
}

// Feeds every source's lines to `out` in random-sized chunks, switching
// sources at random, then finishes them all.
void FeedRandomly(const std::map<int, std::vector<std::string>>& lines,
                  LineForwarder& out, std::mt19937& rng) {
  std::map<int, std::string> streams;
  std::map<int, size_t> offsets;
  std::vector<int> live;
  for (const auto& [s, ls] : lines) {
    for (const std::string& l : ls) streams[s] += l + "\n";
    live.push_back(s);
  }
  std::uniform_int_distribution<size_t> chunk(1, 5000);
  while (!live.empty()) {
    const size_t pick =
        std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng);
    const int s = live[pick];
    const std::string& stream = streams[s];
    size_t& offset = offsets[s];
    const size_t n = std::min(chunk(rng), stream.size() - offset);
    out.Append(s, std::string_view(stream).substr(offset, n));
    offset += n;
    if (offset == stream.size()) live.erase(live.begin() + pick);
  }
  out.FinishAll();
}

// Checks that `output` is exactly the lines of `lines`, each whole, each
// source's in order.
void ExpectSameLines(const std::string& output,
                     const std::map<int, std::vector<std::string>>& lines) {
  std::map<int, size_t> next;  // Per source, the index expected next.
  size_t total = 0;
  size_t start = 0;
  while (start < output.size()) {
    const size_t end = output.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "output ends without a newline";
    const std::string line = output.substr(start, end - start);
    start = end + 1;
    int s = -1;
    ASSERT_EQ(sscanf(line.c_str(), "s%d", &s), 1) << line.substr(0, 40);
    auto it = lines.find(s);
    ASSERT_NE(it, lines.end()) << line.substr(0, 40);
    size_t& i = next[s];
    ASSERT_LT(i, it->second.size()) << line.substr(0, 40);
    ASSERT_EQ(line, it->second[i]) << "source " << s << " line " << i
                                   << " not whole: " << line.substr(0, 40)
                                   << "... (" << line.size() << " bytes)";
    ++i;
    ++total;
  }
  size_t expected_total = 0;
  for (const auto& [s, ls] : lines) expected_total += ls.size();
  EXPECT_EQ(total, expected_total);
}

TEST(LineForwarderTest, ConcurrentReaderSeesOnlyWholeLines) {
  std::mt19937 rng(12345);
  const auto lines = MakeLines(/*sources=*/6, /*lines_per_source=*/300,
                               /*max_padding=*/10000, rng);
  Pipe pipe;
  Reader reader(pipe.read_fd());
  {
    LineForwarder out(pipe.write_fd());
    FeedRandomly(lines, out, rng);
    EXPECT_FALSE(out.failed());
  }
  pipe.CloseWrite();
  ExpectSameLines(reader.Join(), lines);
}

TEST(LineForwarderTest, NonBlockingFullPipeWaitsInsteadOfDropping) {
  std::mt19937 rng(777);
  const auto lines = MakeLines(4, 100, 20000, rng);
  Pipe pipe;
  // A small, non-blocking pipe that the slow reader keeps full: writes
  // return EAGAIN and partial counts.
  fcntl(pipe.write_fd(), F_SETPIPE_SZ, 4096);
  ASSERT_EQ(fcntl(pipe.write_fd(), F_SETFL,
                  fcntl(pipe.write_fd(), F_GETFL) | O_NONBLOCK),
            0);
  Reader reader(pipe.read_fd(), std::chrono::microseconds(20));
  {
    LineForwarder out(pipe.write_fd());
    FeedRandomly(lines, out, rng);
    EXPECT_FALSE(out.failed()) << out.error();
  }
  pipe.CloseWrite();
  ExpectSameLines(reader.Join(), lines);
}

void IgnoreSignal(int) {}

TEST(LineForwarderTest, InterruptedWritesAreResumed) {
  // A timer signal without SA_RESTART interrupts blocking writes into a
  // full pipe: write(2) returns EINTR or a partial count.
  struct sigaction action = {};
  action.sa_handler = IgnoreSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  struct sigaction old_action;
  ASSERT_EQ(sigaction(SIGALRM, &action, &old_action), 0);
  itimerval timer = {{0, 200}, {0, 200}};
  ASSERT_EQ(setitimer(ITIMER_REAL, &timer, nullptr), 0);

  std::mt19937 rng(4242);
  const auto lines = MakeLines(3, 100, 30000, rng);
  Pipe pipe;
  fcntl(pipe.write_fd(), F_SETPIPE_SZ, 4096);
  Reader reader(pipe.read_fd(), std::chrono::microseconds(10));
  {
    LineForwarder out(pipe.write_fd());
    FeedRandomly(lines, out, rng);
    EXPECT_FALSE(out.failed()) << out.error();
  }
  itimerval off = {};
  setitimer(ITIMER_REAL, &off, nullptr);
  sigaction(SIGALRM, &old_action, nullptr);
  pipe.CloseWrite();
  ExpectSameLines(reader.Join(), lines);
}

}  // namespace
}  // namespace gexrt::spawn
