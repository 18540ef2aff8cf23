#include "bootstrap/spawn/control_listener.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"

namespace gexrt::spawn {
namespace {

// Connections accepted per readiness of the listening socket: enough to
// drain a burst quickly, few enough that a flood of connects cannot keep
// the event loop from its other descriptors.
constexpr int kAcceptsPerWakeup = 32;
// Drop reasons reported through Options::log before going quiet (a flood
// would otherwise fill the launcher's stderr under -v).
constexpr uint64_t kLoggedDrops = 8;

uint32_t LengthPrefix(const std::string& buffer) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(buffer[i]);
  }
  return v;
}

}  // namespace

size_t MaxHelloFrameBytes() {
  static const size_t bytes = [] {
    wire::Hello h;
    h.role = wire::PeerRole::kAgent;
    h.hostname.assign(kMaxHelloHostname, 'x');
    return wire::Encode(h).size();
  }();
  return bytes;
}

ControlListener::ControlListener(int listen_fd, Options options)
    : listen_fd_(listen_fd), options_(std::move(options)) {}

ControlListener::~ControlListener() { Close(); }

ControlListener::ControlListener(ControlListener&& other) noexcept {
  *this = std::move(other);
}

ControlListener& ControlListener::operator=(ControlListener&& other) noexcept {
  if (this != &other) {
    Close();
    listen_fd_ = std::exchange(other.listen_fd_, -1);
    options_ = std::move(other.options_);
    pending_ = std::move(other.pending_);
    other.pending_.clear();
    paused_until_ = other.paused_until_;
    dropped_ = other.dropped_;
    logged_ = other.logged_;
  }
  return *this;
}

int ControlListener::ListenFdToPoll(absl::Time now) const {
  if (listen_fd_ < 0 || now < paused_until_) return -1;
  return listen_fd_;
}

size_t ControlListener::pending() const {
  return static_cast<size_t>(
      std::count_if(pending_.begin(), pending_.end(),
                    [](const Pending& p) { return p.fd >= 0; }));
}

void ControlListener::Drop(Pending& p, const std::string& why) {
  if (p.fd < 0) return;
  close(p.fd);
  p.fd = -1;
  p.buffer.clear();
  p.buffer.shrink_to_fit();
  ++dropped_;
  if (options_.log && logged_ < kLoggedDrops) {
    ++logged_;
    options_.log(absl::StrFormat(
        "dropped a connection to the control port: %s%s", why,
        logged_ == kLoggedDrops ? " (further drops not reported)" : ""));
  }
}

bool ControlListener::DropOldest(const std::string& why) {
  for (Pending& p : pending_) {
    if (p.fd >= 0) {
      Drop(p, why);
      return true;
    }
  }
  return false;
}

void ControlListener::OnListenReady(absl::Time now) {
  bool made_room = false;
  for (int i = 0; i < kAcceptsPerWakeup && listen_fd_ >= 0; ++i) {
    const int fd =
        accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      if (pending() >= options_.max_pending) {
        DropOldest(absl::StrFormat(
            "no job token yet and %d newer connections are waiting",
            options_.max_pending));
      }
      pending_.push_back(Pending{fd, now + options_.hello_timeout, {}});
      continue;
    }
    const int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK) return;
    // The connection died before it was accepted: take the next one.
    if (e == EINTR || e == ECONNABORTED || e == EPROTO) continue;
    if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
      // accept(2) takes a descriptor before it looks for a connection, so
      // this says nothing about whether one is waiting: make room once per
      // wakeup; if more are waiting, the listener wakes the loop again.
      if (made_room) return;
      if (DropOldest(absl::StrFormat(
              "no job token yet, and the launcher is out of descriptors (%s)",
              strerror(e)))) {
        made_room = true;
        continue;
      }
    }
    // Nothing to give up, or an error accept cannot get past: the
    // listener stays readable, so leave it out of the poll set for a
    // while instead of spinning on it.
    paused_until_ = now + options_.accept_backoff;
    if (options_.log && logged_ < kLoggedDrops) {
      ++logged_;
      options_.log(absl::StrFormat(
          "cannot accept connections to the control port (%s); trying "
          "again in %s",
          strerror(e), absl::FormatDuration(options_.accept_backoff)));
    }
    return;
  }
}

std::optional<ControlListener::Arrival> ControlListener::OnPendingReady(
    size_t slot) {
  Pending& p = pending_[slot];
  if (p.fd < 0) return std::nullopt;
  const size_t limit = MaxHelloFrameBytes();
  while (true) {
    // Never more than one hello: what follows it stays in the socket (or
    // in `rest`) until the connection is known to be an agent.
    char buf[512];
    const size_t want = std::min(sizeof buf, limit - p.buffer.size());
    if (want == 0) break;
    const ssize_t k = read(p.fd, buf, want);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (k <= 0) {
      Drop(p, k == 0 ? "closed before its hello" : strerror(errno));
      return std::nullopt;
    }
    p.buffer.append(buf, static_cast<size_t>(k));
    if (p.buffer.size() >= 4) {
      const uint32_t len = LengthPrefix(p.buffer);
      if (len == 0 || len > limit - 4) {
        Drop(p, absl::StrFormat("its first frame claims %u bytes; a hello "
                                "has at most %u",
                                len, limit - 4));
        return std::nullopt;
      }
      if (p.buffer.size() >= 4 + size_t{len}) break;
    }
  }
  if (p.buffer.size() < 4) return std::nullopt;
  const uint32_t len = LengthPrefix(p.buffer);
  if (p.buffer.size() < 4 + size_t{len}) return std::nullopt;
  auto hello =
      wire::Decode<wire::Hello>(std::string_view(p.buffer).substr(4, len));
  if (!hello.ok()) {
    Drop(p, std::string(hello.status().message()));
    return std::nullopt;
  }
  if (hello->role != wire::PeerRole::kAgent || hello->token != options_.token) {
    Drop(p, "wrong job token");
    return std::nullopt;
  }
  Arrival arrival;
  arrival.fd = std::exchange(p.fd, -1);
  arrival.hello = *std::move(hello);
  arrival.rest = p.buffer.substr(4 + len);
  p.buffer.clear();
  return arrival;
}

void ControlListener::OnTimers(absl::Time now) {
  for (Pending& p : pending_) {
    if (p.fd >= 0 && now >= p.deadline) {
      Drop(p, absl::StrFormat("no hello within %s",
                              absl::FormatDuration(options_.hello_timeout)));
    }
  }
}

absl::Time ControlListener::NextDeadline(absl::Time now) const {
  absl::Time next = absl::InfiniteFuture();
  for (const Pending& p : pending_) {
    if (p.fd >= 0) next = std::min(next, p.deadline);
  }
  if (listen_fd_ >= 0 && paused_until_ > now) {
    next = std::min(next, paused_until_);
  }
  return next;
}

void ControlListener::Sweep() {
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [](const Pending& p) { return p.fd < 0; }),
                 pending_.end());
}

void ControlListener::Close() {
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
  }
  for (Pending& p : pending_) {
    if (p.fd >= 0) close(p.fd);
  }
  pending_.clear();
}

}  // namespace gexrt::spawn
