#include "bootstrap/messages.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace gexrt::wire {
namespace {

// Writes each field of a message in order.
struct FieldWriter {
  FrameBuilder& b;
  void operator()(uint8_t v) { b.PutU8(v); }
  void operator()(bool v) { b.PutU8(v ? 1 : 0); }
  void operator()(uint32_t v) { b.PutU32(v); }
  void operator()(int32_t v) { b.PutI32(v); }
  void operator()(uint64_t v) { b.PutU64(v); }
  void operator()(PeerRole v) { b.PutU8(static_cast<uint8_t>(v)); }
  void operator()(CollectiveOp v) { b.PutU8(static_cast<uint8_t>(v)); }
  void operator()(const std::string& v) { b.PutBytes(v); }
  void operator()(const std::vector<CollectiveEntry>& es) {
    b.PutU32(static_cast<uint32_t>(es.size()));
    for (const CollectiveEntry& e : es) {
      b.PutU32(e.rank).PutBytes(e.data).PutBytes(e.call);
    }
  }
};

// Reads them back; FrameReader turns any shortfall into !ok().
struct FieldReader {
  FrameReader& r;
  void operator()(uint8_t& v) { v = r.GetU8(); }
  void operator()(bool& v) { v = r.GetU8() != 0; }
  void operator()(uint32_t& v) { v = r.GetU32(); }
  void operator()(int32_t& v) { v = r.GetI32(); }
  void operator()(uint64_t& v) { v = r.GetU64(); }
  void operator()(PeerRole& v) { v = static_cast<PeerRole>(r.GetU8()); }
  void operator()(CollectiveOp& v) { v = static_cast<CollectiveOp>(r.GetU8()); }
  void operator()(std::string& v) { v = std::string(r.GetBytes()); }
  void operator()(std::vector<CollectiveEntry>& es) {
    const uint32_t n = r.GetU32();
    // Entries are read one by one, never reserved from the count: a count
    // larger than the frame could hold is corrupt, not an allocation.
    for (uint32_t i = 0; i < n && r.ok(); ++i) {
      CollectiveEntry e;
      e.rank = r.GetU32();
      e.data = std::string(r.GetBytes());
      e.call = std::string(r.GetBytes());
      if (r.ok()) es.push_back(std::move(e));
    }
  }
};

// Every message's fields, listed once for both directions.
template <typename F>
void Fields(Hello& m, F&& f) {
  f(m.role), f(m.id), f(m.pid), f(m.token), f(m.hostname);
}
template <typename F>
void Fields(CollectiveUp& m, F&& f) {
  f(m.seq), f(m.op), f(m.len), f(m.root), f(m.entries);
}
template <typename F>
void Fields(CollectiveDown& m, F&& f) {
  f(m.seq), f(m.uniform), f(m.data), f(m.entries);
}
template <typename F>
void Fields(CollectiveFailed& m, F&& f) {
  f(m.seq), f(m.reason);
}
template <typename F>
void Fields(Fini& m, F&& f) {
  f(m.rank);
}
template <typename F>
void Fields(ExitReady& m, F&& f) {
  f(m.rank);
}
template <typename F>
void Fields(ExitRequest& m, F&& f) {
  f(m.rank), f(m.exit_code);
}
template <typename F>
void Fields(ExitJob& m, F&& f) {
  f(m.initiator), f(m.exit_code), f(m.peer_lost);
}
template <typename F>
void Fields(CallQuery& m, F&& f) {
  f(m.seq);
}
template <typename F>
void Fields(CallReport& m, F&& f) {
  f(m.rank), f(m.call);
}
template <typename F>
void Fields(Abort& m, F&& f) {
  f(m.rank), f(m.exit_code), f(m.reason);
}
template <typename F>
void Fields(RankExited& m, F&& f) {
  f(m.rank), f(m.wait_status);
}
template <typename F>
void Fields(Kill& m, F&& f) {
  f(m.signal);
}
template <typename F>
void Fields(AgentError& m, F&& f) {
  f(m.exit_code), f(m.message);
}
template <typename F>
void Fields(AgentReady& m, F&& f) {
  f(m.host);
}

// Values no sender of ours produces.
template <typename T>
absl::Status Validate(const T&) {
  return absl::OkStatus();
}
template <>
absl::Status Validate(const Hello& m) {
  if (m.role != PeerRole::kRank && m.role != PeerRole::kAgent) {
    return absl::DataLossError("hello message names an unknown role");
  }
  return absl::OkStatus();
}
template <>
absl::Status Validate(const CollectiveUp& m) {
  const auto op = static_cast<uint8_t>(m.op);
  if (op < static_cast<uint8_t>(CollectiveOp::kBarrier) ||
      op > static_cast<uint8_t>(CollectiveOp::kBroadcast)) {
    return absl::DataLossError(
        absl::StrFormat("collective message names unknown operation %d", op));
  }
  return absl::OkStatus();
}

}  // namespace

template <typename T>
std::string Encode(const T& m) {
  FrameBuilder b(kMessageType<T>);
  // The fields are only read: one field list serves both directions.
  Fields(const_cast<T&>(m), FieldWriter{b});
  return b.Finish();
}

template <typename T>
absl::StatusOr<T> Decode(std::string_view body) {
  FrameReader r(body);
  T m;
  Fields(m, FieldReader{r});
  if (r.type() != kMessageType<T>) {
    return absl::DataLossError(absl::StrFormat(
        "expected a %s message on the control channel, got %s",
        MessageTypeName(kMessageType<T>), MessageTypeName(r.type())));
  }
  if (absl::Status s = r.Done(); !s.ok()) return s;
  if (absl::Status s = Validate(m); !s.ok()) return s;
  return m;
}

#define GEX_WIRE_MESSAGE(T)                 \
  template std::string Encode<T>(const T&); \
  template absl::StatusOr<T> Decode<T>(std::string_view);
GEX_WIRE_MESSAGE(Hello)
GEX_WIRE_MESSAGE(CollectiveUp)
GEX_WIRE_MESSAGE(CollectiveDown)
GEX_WIRE_MESSAGE(CollectiveFailed)
GEX_WIRE_MESSAGE(Fini)
GEX_WIRE_MESSAGE(ExitReady)
GEX_WIRE_MESSAGE(ExitRequest)
GEX_WIRE_MESSAGE(ExitJob)
GEX_WIRE_MESSAGE(CallQuery)
GEX_WIRE_MESSAGE(CallReport)
GEX_WIRE_MESSAGE(Abort)
GEX_WIRE_MESSAGE(RankExited)
GEX_WIRE_MESSAGE(Kill)
GEX_WIRE_MESSAGE(AgentError)
GEX_WIRE_MESSAGE(AgentReady)
#undef GEX_WIRE_MESSAGE

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

}  // namespace gexrt::wire
