// Merges the output of many sources (the ranks of a job, or the remote
// hosts of an ssh spawn) onto one file descriptor, whole lines at a time,
// so that lines of different ranks never interleave mid-line.
//
//   LineForwarder out(STDOUT_FILENO);
//   out.Append(rank, bytes_read);   // as the event loop reads them
//   ...
//   out.Finish(rank);               // on that rank's EOF
//
// Not thread-safe: one event loop owns it.
#ifndef GEX_BOOTSTRAP_SPAWN_LINE_FORWARDER_H_
#define GEX_BOOTSTRAP_SPAWN_LINE_FORWARDER_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"

namespace gexrt::spawn {

// What a forwarder does when its output is a pipe whose reader has gone
// (a write fails with EPIPE: `gasnetrun ... | head -2` once head exits).
enum class BrokenPipe {
  // End this process as any writer in a shell pipeline ends: by SIGPIPE
  // (restored to its default action and raised; exit status 141 to the
  // shell). For a launcher that ends the job: the kernel kills its ranks
  // (their parent-death signal) and its clean-up guard removes what they
  // left (bootstrap/spawn/README.md, "Output").
  kEndProcess,
  // Drop all further output silently and keep running.
  kDrop,
};

// Ends this process by SIGPIPE (its default action restored and raised),
// as a shell pipeline's writer ends when its reader has gone.
[[noreturn]] void EndBySigpipe();

class LineForwarder {
 public:
  // Writes to `out_fd`, which is not owned and may be blocking or not.
  // Lines longer than `max_line` bytes (taken as 1 if 0) cannot be kept
  // whole; they are written in max_line-byte pieces. Any other failed
  // write (EBADF: a launcher started with its stdout closed; EIO) drops
  // the output whatever `on_broken_pipe` says.
  explicit LineForwarder(int out_fd, size_t max_line = 64 * 1024,
                         BrokenPipe on_broken_pipe = BrokenPipe::kEndProcess);

  LineForwarder(const LineForwarder&) = delete;
  LineForwarder& operator=(const LineForwarder&) = delete;

  // Bytes read from `source`. Every line of that source that these bytes
  // complete is written, all of them in a single write(2) (retried on
  // EINTR and partial writes, and waited for with poll(2) when the fd is
  // non-blocking and full) so no other source's output can come between
  // them. The incomplete tail stays buffered for the source. When the
  // buffered tail grows beyond max_line bytes, its leading max_line-byte
  // pieces go out in the same write, leaving at most max_line bytes
  // pending: such a line may have another source's lines between its
  // pieces, but its bytes are never changed.
  void Append(int source, std::string_view bytes);

  // `source` reached EOF: its incomplete last line, if any, is written with
  // a '\n' added, and the source is forgotten.
  void Finish(int source);

  // Finish for every source with pending bytes, in increasing source order.
  void FinishAll();

  // Whether a write has failed (EBADF, EIO, or EPIPE with kDrop). From
  // then on all output is dropped silently and nothing is buffered.
  bool failed() const { return failed_; }

  // The errno of the failed write; 0 while !failed().
  int error() const { return error_; }

  // Bytes buffered for `source` (its incomplete last line); 0 for a source
  // never seen.
  size_t pending_bytes(int source) const;

 private:
  // Writes all of [data, data + size) unless a write fails.
  void WriteAll(const char* data, size_t size);

  // How many leading bytes of `data` (a source's buffered tail followed by
  // new bytes) to write now: through the last '\n', plus whole max_line
  // pieces of the rest while more than max_line bytes would remain.
  size_t BytesToWrite(std::string_view data, size_t newline_end) const;

  const int out_fd_;
  const size_t max_line_;
  const BrokenPipe on_broken_pipe_;
  bool failed_ = false;
  int error_ = 0;
  absl::flat_hash_map<int, std::string> pending_;
};

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_LINE_FORWARDER_H_
