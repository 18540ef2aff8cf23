// The control channel's wire format: length-prefixed frames carrying one
// message each, between a rank and its launcher (over a socketpair) and
// between launcher processes on different hosts (over TCP).
//
// A frame is a 4-byte body length, then the body: a 1-byte message type and
// the message's fields. Integers are little-endian, byte strings are a
// 4-byte length then the bytes. Both ends of a connection are our own code
// running on the same job, but the bytes may come from anything that
// connects to a launcher's port, so decoding checks every length and never
// reads past the frame.
#ifndef GEX_BOOTSTRAP_WIRE_H_
#define GEX_BOOTSTRAP_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gexrt::wire {

// Largest frame body accepted: an alltoall of a large job passes through
// the launcher as one frame, so this is generous; a bigger length is a
// corrupt or hostile stream.
inline constexpr uint32_t kMaxFrameBytes = 1u << 30;

enum class MessageType : uint8_t {
  // child -> parent, first message on a connection: who is speaking.
  kHello = 1,
  // rank -> launcher (relayed up): this rank's part of collective `seq`.
  kCollectiveUp = 2,
  // launcher -> rank (relayed down): the result of collective `seq`.
  kCollectiveDown = 3,
  // launcher -> rank: collective `seq` cannot complete; the text says why.
  kCollectiveFailed = 4,
  // rank -> launcher: leaving the job on purpose (Bootstrap::Fini).
  kFini = 5,
  // rank -> launcher: end the whole job with a code (Bootstrap::Abort).
  kAbort = 6,
  // agent -> parent: a rank of this host has exited (wait status).
  kRankExited = 7,
  // parent -> agent: kill every rank below you with this signal.
  kKill = 8,
  // agent -> parent: a message to print and the job to fail, e.g. a
  // rank that could not be started.
  kAgentError = 9,
  // agent -> parent: this agent's ranks have all started (pids known).
  kAgentReady = 10,
  // rank -> launcher: this rank's graceful exit is in place (exit/): when
  // another rank dies, SIGTERM asks it to exit cleanly.
  kExitReady = 11,
  // rank -> launcher (relayed up to the root): this rank's exit is not
  // collective (the reduce ran out of time); end the job with its code.
  kExitRequest = 12,
  // root -> agents (relayed down): ask every exit-ready rank to exit with
  // this code (a non-collective exit, or a rank that died).
  kExitJob = 13,
  // parent -> agent (relayed down): collective `seq` timed out; ask the
  // ranks below you that did not join it which call they are in.
  kCallQuery = 14,
  // rank -> launcher (relayed up): the call this rank is in (the answer).
  kCallReport = 15,
};

std::string_view MessageTypeName(MessageType type);

// Builds a frame: Begin writes the type, the Put* calls append fields, and
// Finish returns the frame with its length prefix filled in.
class FrameBuilder {
 public:
  explicit FrameBuilder(MessageType type);
  FrameBuilder& PutU8(uint8_t v);
  FrameBuilder& PutU32(uint32_t v);
  FrameBuilder& PutU64(uint64_t v);
  FrameBuilder& PutI32(int32_t v) { return PutU32(static_cast<uint32_t>(v)); }
  FrameBuilder& PutBytes(std::string_view bytes);
  // The finished frame (length prefix + body). The builder is spent.
  std::string Finish();

 private:
  std::string frame_;
};

// Reads the fields of one frame body in order. Every Get* checks that the
// field fits; after the first failure all further reads fail too, and ok()
// says whether everything read so far was present.
class FrameReader {
 public:
  // `body` is a frame body (type byte first) and must outlive the reader.
  explicit FrameReader(std::string_view body);
  MessageType type() const { return type_; }
  uint8_t GetU8();
  uint32_t GetU32();
  uint64_t GetU64();
  int32_t GetI32() { return static_cast<int32_t>(GetU32()); }
  // A view into the body; valid while the body is.
  std::string_view GetBytes();
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == body_.size(); }
  // ok() and every byte consumed: a well-formed message of the expected
  // shape. Otherwise an error naming the message type.
  absl::Status Done() const;

 private:
  bool Take(size_t n, const char** out);

  std::string_view body_;
  size_t pos_ = 0;
  bool ok_ = true;
  MessageType type_{};
};

// Accumulates bytes read from a stream and hands out complete frame
// bodies. For the launcher's non-blocking event loop.
class FrameAssembler {
 public:
  void Append(std::string_view bytes) { buffer_.append(bytes); }
  // The next complete frame body, or nullopt when more bytes are needed;
  // an error when the stream is corrupt (length over kMaxFrameBytes or 0).
  absl::StatusOr<std::optional<std::string>> Next();
  size_t buffered() const { return buffer_.size() - consumed_; }
  // Hands over the bytes not yet returned as frames (the stream moves to
  // another reader) and leaves this assembler empty.
  std::string TakeRest();

 private:
  std::string buffer_;
  size_t consumed_ = 0;
};

// Writes a CallReport frame {rank, call} into `buf` without allocating
// (async-signal-safe: a rank answers the launcher's query from a signal
// handler); the same bytes as Encode(CallReport{rank, call}). A call name
// longer than fits is cut. Returns the frame's size.
size_t EncodeCallReportInto(char* buf, size_t capacity, uint32_t rank,
                            std::string_view call);

// Milliseconds from `now` until `deadline` as poll(2) takes them: -1 for
// an infinite deadline, else rounded up and clamped to [0, 2^30].
int PollTimeoutMs(absl::Time deadline, absl::Time now = absl::Now());

// Writes all of `frame` to a blocking or non-blocking socket `fd`, retrying
// partial writes and EINTR (waiting in poll() on EAGAIN, until `deadline`).
// Control frames are small and the peer is waiting for them, so a write
// that blocks for a moment is the simple and correct choice; the deadline
// keeps a peer that stopped reading from stalling a launcher forever.
absl::Status WriteFrame(int fd, std::string_view frame,
                        absl::Time deadline = absl::InfiniteFuture());

// Reads one frame body from `fd`, waiting at most until `deadline`.
// DeadlineExceeded when the time runs out, Unavailable when the peer closed
// the connection (end of file or reset).
absl::StatusOr<std::string> ReadFrame(int fd, absl::Time deadline);

}  // namespace gexrt::wire

#endif  // GEX_BOOTSTRAP_WIRE_H_
