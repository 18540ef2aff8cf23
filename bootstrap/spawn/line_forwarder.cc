#include "bootstrap/spawn/line_forwarder.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

namespace gexrt::spawn {

// What a pipeline's writer does on a closed pipe, done on purpose: the
// launcher ignores SIGPIPE (a write to a control socket must fail, not
// kill it), so the write only returned EPIPE.
void EndBySigpipe() {
  signal(SIGPIPE, SIG_DFL);
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigprocmask(SIG_UNBLOCK, &pipe_only, nullptr);
  raise(SIGPIPE);
  _exit(128 + SIGPIPE);  // Not reached: the signal's action is to end.
}

LineForwarder::LineForwarder(int out_fd, size_t max_line,
                             BrokenPipe on_broken_pipe)
    : out_fd_(out_fd),
      max_line_(std::max<size_t>(max_line, 1)),
      on_broken_pipe_(on_broken_pipe) {}

size_t LineForwarder::pending_bytes(int source) const {
  auto it = pending_.find(source);
  return it == pending_.end() ? 0 : it->second.size();
}

size_t LineForwarder::BytesToWrite(std::string_view data,
                                   size_t newline_end) const {
  const size_t tail = data.size() - newline_end;
  if (tail <= max_line_) return newline_end;
  // Keep between 1 and max_line bytes of the tail: a full max_line piece is
  // held back until the next byte shows whether it ends the line.
  const size_t pieces = (tail - 1) / max_line_;
  return newline_end + pieces * max_line_;
}

void LineForwarder::Append(int source, std::string_view bytes) {
  if (failed_ || bytes.empty()) return;
  std::string& buffer = pending_[source];
  if (buffer.empty()) {
    // The common case, a source whose last read ended a line: write
    // straight from the caller's bytes and copy only the new tail.
    const size_t newline = bytes.rfind('\n');
    const size_t newline_end =
        newline == std::string_view::npos ? 0 : newline + 1;
    const size_t n = BytesToWrite(bytes, newline_end);
    if (n > 0) WriteAll(bytes.data(), n);
    if (failed_) return;
    buffer.assign(bytes.substr(n));
    return;
  }
  // The tail of an earlier read precedes these bytes; the lines they
  // complete must go out with it in one write, so gather them in the
  // buffer (which keeps its capacity, so this allocates only as it grows).
  const size_t old_size = buffer.size();
  buffer.append(bytes);
  const size_t newline = bytes.rfind('\n');
  const size_t newline_end =
      newline == std::string_view::npos ? 0 : old_size + newline + 1;
  const size_t n = BytesToWrite(buffer, newline_end);
  if (n > 0) WriteAll(buffer.data(), n);
  if (failed_) return;
  buffer.erase(0, n);
}

void LineForwarder::Finish(int source) {
  auto it = pending_.find(source);
  if (it == pending_.end()) return;
  std::string& buffer = it->second;
  if (!failed_ && !buffer.empty()) {
    buffer += '\n';
    WriteAll(buffer.data(), buffer.size());
  }
  // WriteAll may have cleared pending_ on failure; look the source up again.
  pending_.erase(source);
}

void LineForwarder::FinishAll() {
  std::vector<int> sources;
  sources.reserve(pending_.size());
  for (const auto& [source, buffer] : pending_) sources.push_back(source);
  std::sort(sources.begin(), sources.end());
  for (int source : sources) Finish(source);
}

void LineForwarder::WriteAll(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(out_fd_, data, size);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // A non-blocking fd (a terminal or pipe shared with a process that
      // set O_NONBLOCK) is full: wait for room rather than drop a line.
      pollfd p = {out_fd_, POLLOUT, 0};
      if (::poll(&p, 1, -1) >= 0 || errno == EINTR) continue;
    }
    // write(2) returning 0 for a non-empty buffer makes no progress and
    // would spin; treat it as an I/O error.
    error_ = n < 0 ? errno : EIO;
    if (error_ == EPIPE && on_broken_pipe_ == BrokenPipe::kEndProcess) {
      EndBySigpipe();
    }
    failed_ = true;
    pending_.clear();
    return;
  }
}

}  // namespace gexrt::spawn
