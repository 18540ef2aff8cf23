#include "bootstrap/spawn/job_secret.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::spawn {
namespace {

using ::testing::HasSubstr;

TEST(SecureRandomTest, DrawsDiffer) {
  absl::StatusOr<uint64_t> a = SecureRandom64();
  absl::StatusOr<uint64_t> b = SecureRandom64();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  // Two equal 64-bit draws: one chance in 2^64.
  EXPECT_NE(*a, *b);
}

bool IsHex(const std::string& s) {
  return !s.empty() &&
         s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// host id (8 hex), pid (decimal), 64 random bits (16 hex): letters and
// digits only and short enough for the PSHM prefix (47 characters).
TEST(JobIdTest, FormatAndLength) {
  absl::StatusOr<std::string> id = NewJobId();
  ASSERT_TRUE(id.ok()) << id.status();
  const std::string pid = absl::StrFormat("%d", getpid());
  ASSERT_EQ(id->size(), 8 + pid.size() + 16) << *id;
  EXPECT_LE(id->size(), 31u);
  EXPECT_TRUE(IsHex(id->substr(0, 8))) << *id;
  EXPECT_EQ(id->substr(8, pid.size()), pid) << *id;
  EXPECT_TRUE(IsHex(id->substr(8 + pid.size()))) << *id;
}

// The random part is fresh for every job: a local user who knows the
// host and the launcher's pid still cannot name the job's objects.
TEST(JobIdTest, RandomPartDiffers) {
  absl::StatusOr<std::string> a = NewJobId();
  absl::StatusOr<std::string> b = NewJobId();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->substr(a->size() - 16), b->substr(b->size() - 16));
}

struct Pipe {
  Pipe() { EXPECT_EQ(pipe2(fd, O_CLOEXEC), 0); }
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) close(f);
    }
  }
  void Write(const std::string& s) {
    ASSERT_EQ(write(fd[1], s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  void CloseWriter() {
    close(fd[1]);
    fd[1] = -1;
  }
  std::string ReadRest() {
    std::string out;
    char buf[256];
    ssize_t k;
    while ((k = read(fd[0], buf, sizeof buf)) > 0) out.append(buf, k);
    return out;
  }
  int fd[2] = {-1, -1};
};

// The token line is read and nothing more: the rest is rank 0's stdin.
TEST(TokenLineTest, RoundTripLeavesTheRestOfStdin) {
  for (uint64_t token :
       {uint64_t{0}, uint64_t{1}, ~uint64_t{0}, uint64_t{0xdeadbeefcafef00d}}) {
    Pipe p;
    EXPECT_EQ(TokenLine(token).size(), 17u);
    p.Write(TokenLine(token) + "rank 0's input\nmore\n");
    p.CloseWriter();
    absl::StatusOr<uint64_t> got =
        ReadTokenLine(p.fd[0], absl::Now() + absl::Seconds(30));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, token);
    EXPECT_EQ(p.ReadRest(), "rank 0's input\nmore\n");
  }
}

TEST(TokenLineTest, EndOfInputBeforeTheToken) {
  for (const char* input : {"", "0123", "0123456789abcdef"}) {
    Pipe p;
    p.Write(input);
    p.CloseWriter();
    absl::StatusOr<uint64_t> got =
        ReadTokenLine(p.fd[0], absl::Now() + absl::Seconds(30));
    EXPECT_FALSE(got.ok()) << input;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("stdin"));
  }
}

TEST(TokenLineTest, MalformedLines) {
  for (const char* input :
       {"\n", "xyz\n", "0123456789abcde\n", "0123456789abcdef0\n",
        "0123456789abcdeg\n", "0123456789ABCDEF0123456789\n"}) {
    Pipe p;
    p.Write(input);
    p.CloseWriter();
    absl::StatusOr<uint64_t> got =
        ReadTokenLine(p.fd[0], absl::Now() + absl::Seconds(30));
    EXPECT_FALSE(got.ok()) << input;
  }
}

// An open stdin that never delivers: the deadline ends the wait (one
// already past here, so nothing waits).
TEST(TokenLineTest, NothingInTime) {
  Pipe p;
  absl::StatusOr<uint64_t> got = ReadTokenLine(p.fd[0], absl::Now());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace gexrt::spawn
