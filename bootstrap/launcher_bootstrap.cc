#include "bootstrap/launcher_bootstrap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/fatal.h"
#include "base/job_rank.h"
#include "bootstrap/bootstrap_timeout.h"
#include "bootstrap/current_call.h"
#include "bootstrap/wire.h"

namespace gexrt {
namespace {

// The launcher's own GASNET_BOOTSTRAP_TIMEOUT fires first and names the late
// ranks; a rank waits this much longer before concluding the launcher
// itself is gone.
constexpr absl::Duration kLauncherGrace = absl::Seconds(30);

// The live instance, for the fatal-error hook (one per process).
std::atomic<LauncherBootstrap*> g_instance{nullptr};

// A fatal error in any rank ends the whole job: tell the launcher first,
// then abort as base/fatal would (a core dump or debugger still sees the
// original state).
void AbortJobOnFatal() {
  if (LauncherBootstrap* b = g_instance.exchange(nullptr)) {
    b->NotifyFatal();
  }
  std::abort();
}

absl::StatusOr<uint32_t> ReadVar(const char* name, uint32_t lo, uint32_t hi) {
  const char* value = std::getenv(name);
  uint32_t v = 0;
  if (value == nullptr || !absl::SimpleAtoi(value, &v) || v < lo || v > hi) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s='%s' is not valid (it is set by gasnetrun_<conduit> to a number "
        "from %d to %d; start the program with the launcher)",
        name, value == nullptr ? "" : value, lo, hi));
  }
  return v;
}

}  // namespace

bool LauncherBootstrap::Present() {
  return std::getenv(kBootstrapFdVar) != nullptr;
}

absl::StatusOr<std::unique_ptr<LauncherBootstrap>>
LauncherBootstrap::FromEnvironment() {
  absl::StatusOr<uint32_t> fd = ReadVar(kBootstrapFdVar, 0, 1 << 20);
  if (!fd.ok()) return fd.status();
  absl::StatusOr<uint32_t> size = ReadVar(kBootstrapSizeVar, 1, UINT32_MAX);
  if (!size.ok()) return size.status();
  absl::StatusOr<uint32_t> rank = ReadVar(kBootstrapRankVar, 0, *size - 1);
  if (!rank.ok()) return rank.status();
  if (fcntl(static_cast<int>(*fd), F_GETFD) < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=%d does not name an open file descriptor (was the program "
        "started by gasnetrun_<conduit>?)",
        kBootstrapFdVar, *fd));
  }
  // Children this rank starts (helper programs) must not inherit the job's
  // identity or the channel.
  fcntl(static_cast<int>(*fd), F_SETFD, FD_CLOEXEC);
  unsetenv(kBootstrapFdVar);
  auto b = std::make_unique<LauncherBootstrap>(
      static_cast<int>(*fd), *rank, *size,
      BootstrapTimeoutFromEnv() + kLauncherGrace);
  return b;
}

LauncherBootstrap::LauncherBootstrap(int fd, Rank rank, Rank size,
                                     absl::Duration timeout)
    : fd_(fd), rank_(rank), size_(size), timeout_(timeout) {
  SetJobRank(static_cast<int>(rank));
  g_instance.store(this);
  SetFatalExitHook(&AbortJobOnFatal);
}

LauncherBootstrap::~LauncherBootstrap() {
  LauncherBootstrap* self = this;
  g_instance.compare_exchange_strong(self, nullptr);
  if (fd_ >= 0) close(fd_);
}

void LauncherBootstrap::NotifyFatal() {
  if (fd_ < 0) return;
  // Best effort: the process is going down either way.
  (void)wire::WriteFrame(fd_,
                         wire::Encode(wire::Abort{rank_, 1, "fatal error"}));
}

void LauncherBootstrap::CheckOpen(std::string_view call) const {
  if (fd_ < 0) {
    FatalErrorF("bootstrap %s called after Bootstrap::Fini", call);
  }
}

std::string LauncherBootstrap::Exchange(wire::CollectiveOp op, uint64_t len,
                                        Rank root, std::string data) {
  const std::string_view name = wire::CollectiveOpName(op);
  CheckOpen(name);
  CheckLength(op, len);
  const uint32_t seq = next_seq_++;
  wire::CollectiveUp up;
  up.seq = seq;
  up.op = op;
  up.len = len;
  up.root = root;
  const char* call = CurrentCall();
  up.entries.push_back({rank_, std::move(data), call != nullptr ? call : ""});
  if (absl::Status s = wire::WriteFrame(fd_, wire::Encode(up)); !s.ok()) {
    FatalErrorF("bootstrap %s #%d: cannot reach the launcher: %s", name, seq,
                s.message());
  }
  const absl::Time deadline = absl::Now() + timeout_;
  if (has_wait_hook()) WaitReadable(deadline);
  absl::StatusOr<std::string> body = wire::ReadFrame(fd_, deadline);
  if (!body.ok()) {
    if (absl::IsDeadlineExceeded(body.status())) {
      FatalErrorF(
          "bootstrap %s #%d: no answer from the launcher (gasnetrun, parent "
          "pid %d) within %s",
          name, seq, getppid(), absl::FormatDuration(timeout_));
    }
    FatalErrorF("bootstrap %s #%d: lost the launcher: %s", name, seq,
                body.status().message());
  }
  switch (wire::TypeOf(*body)) {
    case wire::MessageType::kCollectiveFailed: {
      absl::StatusOr<wire::CollectiveFailed> f =
          wire::Decode<wire::CollectiveFailed>(*body);
      FatalErrorF("%sbootstrap %s #%d failed: %s",
                  call != nullptr ? absl::StrCat(call, ": ") : "", name, seq,
                  f.ok() ? f->reason : std::string(f.status().message()));
    }
    case wire::MessageType::kCollectiveDown: {
      absl::StatusOr<wire::CollectiveDown> d =
          wire::Decode<wire::CollectiveDown>(*body);
      if (!d.ok()) {
        FatalErrorF("bootstrap %s #%d: %s", name, seq, d.status().message());
      }
      if (d->seq != seq) {
        FatalErrorF("bootstrap %s #%d: the launcher answered collective #%d",
                    name, seq, d->seq);
      }
      if (d->uniform) return std::move(d->data);
      if (d->entries.size() != 1 || d->entries[0].rank != rank_) {
        FatalErrorF(
            "bootstrap %s #%d: the launcher's answer is not for "
            "rank %d",
            name, seq, rank_);
      }
      return std::move(d->entries[0].data);
    }
    default:
      FatalErrorF("bootstrap %s #%d: unexpected %s message from the launcher",
                  name, seq, wire::MessageTypeName(wire::TypeOf(*body)));
  }
}

void LauncherBootstrap::WaitReadable(absl::Time deadline) const {
  // Slices of a millisecond: the hook drives the conduit's sends between
  // them (Bootstrap::SetWaitHook). The frame is read by ReadFrame after.
  pollfd p{fd_, POLLIN, 0};
  for (;;) {
    RunWaitHook();
    const int rc = poll(&p, 1, 1);
    if (rc > 0 || (rc < 0 && errno != EINTR) || absl::Now() >= deadline) {
      return;
    }
  }
}

void LauncherBootstrap::CheckLength(wire::CollectiveOp op, uint64_t len) const {
  // Results travel as one control frame.
  const uint64_t limit = (op == wire::CollectiveOp::kBroadcast)
                             ? wire::kMaxFrameBytes
                             : wire::kMaxFrameBytes / size_;
  if (len > limit) {
    FatalErrorF(
        "bootstrap %s: %d bytes per rank is too large (at most %d "
        "for a %d-rank job)",
        wire::CollectiveOpName(op), len, limit, size_);
  }
}

void LauncherBootstrap::Barrier() {
  Exchange(wire::CollectiveOp::kBarrier, 0, 0, std::string());
}

void LauncherBootstrap::Allgather(const void* src, size_t len, void* dst) {
  std::string result =
      Exchange(wire::CollectiveOp::kAllgather, len, 0,
               std::string(static_cast<const char*>(src), len));
  if (result.size() != len * size_) {
    FatalErrorF("bootstrap allgather: %d bytes came back, expected %d",
                result.size(), len * size_);
  }
  if (!result.empty()) std::memcpy(dst, result.data(), result.size());
}

void LauncherBootstrap::Alltoall(const void* src, size_t len, void* dst) {
  CheckLength(wire::CollectiveOp::kAlltoall, len);
  std::string result =
      Exchange(wire::CollectiveOp::kAlltoall, len, 0,
               std::string(static_cast<const char*>(src), len * size_));
  if (result.size() != len * size_) {
    FatalErrorF("bootstrap alltoall: %d bytes came back, expected %d",
                result.size(), len * size_);
  }
  if (!result.empty()) std::memcpy(dst, result.data(), result.size());
}

void LauncherBootstrap::Broadcast(const void* src, size_t len, void* dst,
                                  Rank root) {
  if (root >= size_) {
    FatalErrorF(
        "bootstrap broadcast: root %d is not a rank of this %d-rank "
        "job",
        root, size_);
  }
  std::string mine;
  if (rank_ == root) mine.assign(static_cast<const char*>(src), len);
  std::string result =
      Exchange(wire::CollectiveOp::kBroadcast, len, root, std::move(mine));
  if (result.size() != len) {
    FatalErrorF("bootstrap broadcast: %d bytes came back, expected %d",
                result.size(), len);
  }
  if (!result.empty()) std::memcpy(dst, result.data(), result.size());
}

void LauncherBootstrap::Abort(int exit_code, std::string_view reason) {
  g_instance.store(nullptr);
  if (fd_ >= 0) {
    (void)wire::WriteFrame(
        fd_, wire::Encode(wire::Abort{rank_, exit_code, std::string(reason)}));
  }
  // The launcher kills every other rank; this one ends with the code.
  _exit(exit_code);
}

void LauncherBootstrap::ExitReady() {
  if (fd_ < 0) return;
  (void)wire::WriteFrame(fd_, wire::Encode(wire::ExitReady{rank_}));
}

void LauncherBootstrap::ReportCurrentCall() {
  const int fd = fd_;
  if (fd < 0) return;
  const char* call = CurrentCall();
  char frame[256];
  const size_t n = wire::EncodeCallReportInto(frame, sizeof frame, rank_,
                                              call != nullptr ? call : "");
  // One write of a small frame: a socketpair takes it whole. Another
  // thread writing at this moment would be in a collective, and a rank in
  // a collective is not asked.
  size_t done = 0;
  while (done < n) {
    const ssize_t w = write(fd, frame + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += static_cast<size_t>(w);
  }
}

bool LauncherBootstrap::RequestJobExit(int code) {
  if (fd_ < 0) return false;
  return wire::WriteFrame(fd_, wire::Encode(wire::ExitRequest{rank_, code}))
      .ok();
}

void LauncherBootstrap::Fini() {
  if (fd_ < 0) return;
  (void)wire::WriteFrame(fd_, wire::Encode(wire::Fini{rank_}));
  close(fd_);
  fd_ = -1;
  LauncherBootstrap* self = this;
  g_instance.compare_exchange_strong(self, nullptr);
}

}  // namespace gexrt
