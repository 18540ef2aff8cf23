#include "bootstrap/wire.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "base/status.h"

namespace gexrt::wire {
namespace {

void AppendLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
}

uint64_t LoadLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  }
  return v;
}

// Reads exactly `n` bytes (no more: the next frame stays in the socket).
absl::Status ReadExactly(int fd, char* out, size_t n, absl::Time deadline) {
  size_t got = 0;
  while (got < n) {
    pollfd p{fd, POLLIN, 0};
    const int timeout = PollTimeoutMs(deadline);
    const int r = poll(&p, 1, timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "poll on the control channel");
    }
    if (r == 0) {
      return absl::DeadlineExceededError("no message on the control channel");
    }
    const ssize_t k = read(fd, out + got, n - got);
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) {
        return absl::UnavailableError("the control channel was reset");
      }
      return ErrnoToStatus(errno, "read from the control channel");
    }
    if (k == 0) {
      return absl::UnavailableError("the control channel was closed");
    }
    got += static_cast<size_t>(k);
  }
  return absl::OkStatus();
}

}  // namespace

size_t EncodeCallReportInto(char* buf, size_t capacity, uint32_t rank,
                            std::string_view call) {
  // Length prefix, type, rank, then the name as bytes (length + bytes).
  constexpr size_t kFixed = 4 + 1 + 4 + 4;
  if (capacity < kFixed) return 0;
  if (call.size() > capacity - kFixed) call = call.substr(0, capacity - kFixed);
  auto put32 = [](char* at, uint32_t v) {
    for (int i = 0; i < 4; ++i)
      at[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  const auto body = static_cast<uint32_t>(kFixed - 4 + call.size());
  put32(buf, body);
  buf[4] = static_cast<char>(MessageType::kCallReport);
  put32(buf + 5, rank);
  put32(buf + 9, static_cast<uint32_t>(call.size()));
  for (size_t i = 0; i < call.size(); ++i) buf[kFixed + i] = call[i];
  return kFixed + call.size();
}

int PollTimeoutMs(absl::Time deadline, absl::Time now) {
  if (deadline == absl::InfiniteFuture()) return -1;
  const int64_t ms = absl::ToInt64Milliseconds(
      absl::Ceil(deadline - now, absl::Milliseconds(1)));
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

std::string_view MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kHello:
      return "hello";
    case MessageType::kCollectiveUp:
      return "collective contribution";
    case MessageType::kCollectiveDown:
      return "collective result";
    case MessageType::kCollectiveFailed:
      return "collective failure";
    case MessageType::kFini:
      return "fini";
    case MessageType::kAbort:
      return "abort";
    case MessageType::kRankExited:
      return "rank exited";
    case MessageType::kKill:
      return "kill";
    case MessageType::kAgentError:
      return "agent error";
    case MessageType::kAgentReady:
      return "agent ready";
    case MessageType::kExitReady:
      return "exit ready";
    case MessageType::kExitRequest:
      return "exit request";
    case MessageType::kExitJob:
      return "exit job";
    case MessageType::kCallQuery:
      return "call query";
    case MessageType::kCallReport:
      return "call report";
  }
  return "unknown message";
}

FrameBuilder::FrameBuilder(MessageType type) {
  frame_.assign(4, '\0');
  frame_.push_back(static_cast<char>(type));
}

FrameBuilder& FrameBuilder::PutU8(uint8_t v) {
  frame_.push_back(static_cast<char>(v));
  return *this;
}
FrameBuilder& FrameBuilder::PutU32(uint32_t v) {
  AppendLe(frame_, v, 4);
  return *this;
}
FrameBuilder& FrameBuilder::PutU64(uint64_t v) {
  AppendLe(frame_, v, 8);
  return *this;
}
FrameBuilder& FrameBuilder::PutBytes(std::string_view bytes) {
  PutU32(static_cast<uint32_t>(bytes.size()));
  frame_.append(bytes.data(), bytes.size());
  return *this;
}

std::string FrameBuilder::Finish() {
  const uint64_t body = frame_.size() - 4;
  for (int i = 0; i < 4; ++i) {
    frame_[i] = static_cast<char>((body >> (8 * i)) & 0xff);
  }
  return std::move(frame_);
}

FrameReader::FrameReader(std::string_view body) : body_(body) {
  const char* p;
  if (Take(1, &p)) type_ = static_cast<MessageType>(*p);
}

bool FrameReader::Take(size_t n, const char** out) {
  if (!ok_ || body_.size() - pos_ < n) {
    ok_ = false;
    return false;
  }
  *out = body_.data() + pos_;
  pos_ += n;
  return true;
}

uint8_t FrameReader::GetU8() {
  const char* p;
  return Take(1, &p) ? static_cast<uint8_t>(*p) : 0;
}
uint32_t FrameReader::GetU32() {
  const char* p;
  return Take(4, &p) ? static_cast<uint32_t>(LoadLe(p, 4)) : 0;
}
uint64_t FrameReader::GetU64() {
  const char* p;
  return Take(8, &p) ? LoadLe(p, 8) : 0;
}
std::string_view FrameReader::GetBytes() {
  const uint32_t n = GetU32();
  const char* p;
  if (!Take(n, &p)) return {};
  return std::string_view(p, n);
}

absl::Status FrameReader::Done() const {
  if (ok_ && at_end()) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrFormat("malformed %s message on the control channel (%d bytes)",
                      MessageTypeName(type_), body_.size()));
}

absl::StatusOr<std::optional<std::string>> FrameAssembler::Next() {
  const size_t avail = buffer_.size() - consumed_;
  if (avail < 4) return std::optional<std::string>();
  const uint64_t len = LoadLe(buffer_.data() + consumed_, 4);
  if (len == 0 || len > kMaxFrameBytes) {
    return absl::DataLossError(absl::StrFormat(
        "corrupt control stream: frame length %d is out of range", len));
  }
  if (avail - 4 < len) return std::optional<std::string>();
  std::string body = buffer_.substr(consumed_ + 4, len);
  consumed_ += 4 + len;
  // Compact once the consumed prefix dominates, keeping appends amortised.
  if (consumed_ > 4096 && consumed_ * 2 > buffer_.size()) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return std::optional<std::string>(std::move(body));
}

std::string FrameAssembler::TakeRest() {
  std::string rest = buffer_.substr(consumed_);
  buffer_.clear();
  consumed_ = 0;
  return rest;
}

absl::Status WriteFrame(int fd, std::string_view frame, absl::Time deadline) {
  size_t done = 0;
  while (done < frame.size()) {
    // send() with MSG_NOSIGNAL: a closed peer is an error to report, not a
    // SIGPIPE that kills the process.
    const ssize_t k =
        send(fd, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        const int r = poll(&p, 1, PollTimeoutMs(deadline));
        if (r == 0) {
          return absl::DeadlineExceededError(
              "the peer stopped reading the control channel");
        }
        continue;
      }
      if (errno == EPIPE || errno == ECONNRESET) {
        return absl::UnavailableError("the control channel was closed");
      }
      return ErrnoToStatus(errno, "write to the control channel");
    }
    done += static_cast<size_t>(k);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFrame(int fd, absl::Time deadline) {
  char header[4];
  if (absl::Status s = ReadExactly(fd, header, 4, deadline); !s.ok()) {
    return s;
  }
  const uint64_t len = LoadLe(header, 4);
  if (len == 0 || len > kMaxFrameBytes) {
    return absl::DataLossError(absl::StrFormat(
        "corrupt control stream: frame length %d is out of range", len));
  }
  std::string body(len, '\0');
  if (absl::Status s = ReadExactly(fd, body.data(), len, deadline); !s.ok()) {
    return s;
  }
  return body;
}

}  // namespace gexrt::wire
