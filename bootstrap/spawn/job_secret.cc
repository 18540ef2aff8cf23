#include "bootstrap/spawn/job_secret.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "base/host_id.h"
#include "base/status.h"
#include "bootstrap/wire.h"

namespace gexrt::spawn {
namespace {

// Fills `out` with `n` random bytes from getrandom(2); false when the
// call is not available or fails for another reason than an interrupt.
bool FromGetrandom(char* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t k = getrandom(out + got, n - got, 0);
    if (k < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    got += static_cast<size_t>(k);
  }
  return true;
}

bool FromUrandom(char* out, size_t n) {
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t got = 0;
  while (got < n) {
    const ssize_t k = read(fd, out + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += static_cast<size_t>(k);
  }
  close(fd);
  return got == n;
}

constexpr size_t kTokenDigits = 16;

}  // namespace

absl::StatusOr<uint64_t> SecureRandom64() {
  uint64_t v = 0;
  char* p = reinterpret_cast<char*>(&v);
  if (FromGetrandom(p, sizeof v) || FromUrandom(p, sizeof v)) return v;
  return absl::UnavailableError(
      "no random source (getrandom and /dev/urandom both failed) for the "
      "job's secret");
}

absl::StatusOr<std::string> NewJobId() {
  absl::StatusOr<uint64_t> random = SecureRandom64();
  if (!random.ok()) return random.status();
  return absl::StrFormat("%08x%d%016x", static_cast<uint32_t>(HostId()),
                         getpid(), *random);
}

std::string TokenLine(uint64_t token) {
  return absl::StrFormat("%016x\n", token);
}

absl::StatusOr<uint64_t> ReadTokenLine(int fd, absl::Time deadline) {
  std::string line;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, wire::PollTimeoutMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoToStatus(errno, "waiting for the job token");
    if (r == 0) {
      return absl::DeadlineExceededError(
          "no job token on stdin in time (gasnetrun writes it there; does "
          "the remote shell forward stdin?)");
    }
    char c;
    const ssize_t k = read(fd, &c, 1);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k < 0) return ErrnoToStatus(errno, "reading the job token from stdin");
    if (k == 0) {
      return absl::InvalidArgumentError(
          "stdin ended before the job token (gasnetrun writes it there; is "
          "the remote shell given -n, or the agent started by hand?)");
    }
    if (c == '\n') break;
    line.push_back(c);
    if (line.size() > kTokenDigits) break;
  }
  uint64_t token = 0;
  if (line.size() != kTokenDigits || !absl::SimpleHexAtoi(line, &token)) {
    return absl::InvalidArgumentError(
        "the first line of stdin is not a job token");
  }
  return token;
}

}  // namespace gexrt::spawn
