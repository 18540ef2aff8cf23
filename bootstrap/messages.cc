#include "bootstrap/messages.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace gex::wire {
namespace {

// Checks the reader's type and completeness and returns `m` if well formed.
template <typename T>
absl::StatusOr<T> Checked(const FrameReader& r, MessageType want, T m) {
  if (r.type() != want) {
    return absl::DataLossError(
        absl::StrFormat("expected a %s message on the control channel, got %s",
                        MessageTypeName(want), MessageTypeName(r.type())));
  }
  if (absl::Status s = r.Done(); !s.ok()) return s;
  return m;
}

void PutEntries(FrameBuilder& b, const std::vector<CollectiveEntry>& es) {
  b.PutU32(static_cast<uint32_t>(es.size()));
  for (const CollectiveEntry& e : es) b.PutU32(e.rank).PutBytes(e.data);
}

std::vector<CollectiveEntry> GetEntries(FrameReader& r) {
  std::vector<CollectiveEntry> es;
  const uint32_t n = r.GetU32();
  // Each entry takes at least 8 bytes: a count larger than the frame could
  // hold is corrupt, and must not drive a huge reserve().
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    CollectiveEntry e;
    e.rank = r.GetU32();
    e.data = std::string(r.GetBytes());
    if (r.ok()) es.push_back(std::move(e));
  }
  return es;
}

}  // namespace

std::string_view CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kBarrier:
      return "barrier";
    case CollectiveOp::kAllgather:
      return "allgather";
    case CollectiveOp::kAlltoall:
      return "alltoall";
    case CollectiveOp::kBroadcast:
      return "broadcast";
  }
  return "unknown collective";
}

MessageType TypeOf(std::string_view body) {
  return body.empty() ? MessageType::kHello : static_cast<MessageType>(body[0]);
}

std::string Encode(const Hello& m) {
  return FrameBuilder(MessageType::kHello)
      .PutU8(static_cast<uint8_t>(m.role))
      .PutU32(m.id)
      .PutU32(m.pid)
      .PutU64(m.token)
      .PutBytes(m.hostname)
      .Finish();
}

std::string Encode(const CollectiveUp& m) {
  FrameBuilder b(MessageType::kCollectiveUp);
  b.PutU32(m.seq)
      .PutU8(static_cast<uint8_t>(m.op))
      .PutU64(m.len)
      .PutU32(m.root);
  PutEntries(b, m.entries);
  return b.Finish();
}

std::string Encode(const CollectiveDown& m) {
  FrameBuilder b(MessageType::kCollectiveDown);
  b.PutU32(m.seq).PutU8(m.uniform ? 1 : 0);
  if (m.uniform) {
    b.PutBytes(m.data);
  } else {
    PutEntries(b, m.entries);
  }
  return b.Finish();
}

std::string Encode(const CollectiveFailed& m) {
  return FrameBuilder(MessageType::kCollectiveFailed)
      .PutU32(m.seq)
      .PutBytes(m.reason)
      .Finish();
}

std::string Encode(const Fini& m) {
  return FrameBuilder(MessageType::kFini).PutU32(m.rank).Finish();
}

std::string Encode(const Abort& m) {
  return FrameBuilder(MessageType::kAbort)
      .PutU32(m.rank)
      .PutI32(m.exit_code)
      .PutBytes(m.reason)
      .Finish();
}

std::string Encode(const RankExited& m) {
  return FrameBuilder(MessageType::kRankExited)
      .PutU32(m.rank)
      .PutI32(m.wait_status)
      .Finish();
}

std::string Encode(const Kill& m) {
  return FrameBuilder(MessageType::kKill).PutI32(m.signal).Finish();
}

std::string Encode(const AgentError& m) {
  return FrameBuilder(MessageType::kAgentError)
      .PutI32(m.exit_code)
      .PutBytes(m.message)
      .Finish();
}

std::string Encode(const AgentReady& m) {
  return FrameBuilder(MessageType::kAgentReady).PutU32(m.host).Finish();
}

absl::StatusOr<Hello> DecodeHello(std::string_view body) {
  FrameReader r(body);
  Hello m;
  m.role = static_cast<PeerRole>(r.GetU8());
  m.id = r.GetU32();
  m.pid = r.GetU32();
  m.token = r.GetU64();
  m.hostname = std::string(r.GetBytes());
  if (r.ok() && m.role != PeerRole::kRank && m.role != PeerRole::kAgent) {
    return absl::DataLossError("hello message names an unknown role");
  }
  return Checked(r, MessageType::kHello, std::move(m));
}

absl::StatusOr<CollectiveUp> DecodeCollectiveUp(std::string_view body) {
  FrameReader r(body);
  CollectiveUp m;
  m.seq = r.GetU32();
  const uint8_t op = r.GetU8();
  m.len = r.GetU64();
  m.root = r.GetU32();
  m.entries = GetEntries(r);
  if (r.ok() && (op < static_cast<uint8_t>(CollectiveOp::kBarrier) ||
                 op > static_cast<uint8_t>(CollectiveOp::kBroadcast))) {
    return absl::DataLossError(
        absl::StrFormat("collective message names unknown operation %d", op));
  }
  m.op = static_cast<CollectiveOp>(op);
  return Checked(r, MessageType::kCollectiveUp, std::move(m));
}

absl::StatusOr<CollectiveDown> DecodeCollectiveDown(std::string_view body) {
  FrameReader r(body);
  CollectiveDown m;
  m.seq = r.GetU32();
  m.uniform = r.GetU8() != 0;
  if (m.uniform) {
    m.data = std::string(r.GetBytes());
  } else {
    m.entries = GetEntries(r);
  }
  return Checked(r, MessageType::kCollectiveDown, std::move(m));
}

absl::StatusOr<CollectiveFailed> DecodeCollectiveFailed(std::string_view body) {
  FrameReader r(body);
  CollectiveFailed m;
  m.seq = r.GetU32();
  m.reason = std::string(r.GetBytes());
  return Checked(r, MessageType::kCollectiveFailed, std::move(m));
}

absl::StatusOr<Fini> DecodeFini(std::string_view body) {
  FrameReader r(body);
  Fini m;
  m.rank = r.GetU32();
  return Checked(r, MessageType::kFini, m);
}

absl::StatusOr<Abort> DecodeAbort(std::string_view body) {
  FrameReader r(body);
  Abort m;
  m.rank = r.GetU32();
  m.exit_code = r.GetI32();
  m.reason = std::string(r.GetBytes());
  return Checked(r, MessageType::kAbort, std::move(m));
}

absl::StatusOr<RankExited> DecodeRankExited(std::string_view body) {
  FrameReader r(body);
  RankExited m;
  m.rank = r.GetU32();
  m.wait_status = r.GetI32();
  return Checked(r, MessageType::kRankExited, m);
}

absl::StatusOr<Kill> DecodeKill(std::string_view body) {
  FrameReader r(body);
  Kill m;
  m.signal = r.GetI32();
  return Checked(r, MessageType::kKill, m);
}

absl::StatusOr<AgentError> DecodeAgentError(std::string_view body) {
  FrameReader r(body);
  AgentError m;
  m.exit_code = r.GetI32();
  m.message = std::string(r.GetBytes());
  return Checked(r, MessageType::kAgentError, std::move(m));
}

absl::StatusOr<AgentReady> DecodeAgentReady(std::string_view body) {
  FrameReader r(body);
  AgentReady m;
  m.host = r.GetU32();
  return Checked(r, MessageType::kAgentReady, m);
}

}  // namespace gex::wire
