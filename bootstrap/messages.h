// The messages of the control channel (see wire.h for the framing), as
// structs with one Encode/Decode pair each. Collectives travel as one
// "up" message per rank, merged by the launchers on the way to the root,
// and one "down" message per rank with the result.
#ifndef GEX_BOOTSTRAP_MESSAGES_H_
#define GEX_BOOTSTRAP_MESSAGES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "bootstrap/wire.h"

namespace gexrt::wire {

enum class CollectiveOp : uint8_t {
  kBarrier = 1,
  kAllgather = 2,
  kAlltoall = 3,
  kBroadcast = 4,
};
std::string_view CollectiveOpName(CollectiveOp op);

enum class PeerRole : uint8_t { kRank = 1, kAgent = 2 };

struct Hello {
  PeerRole role = PeerRole::kRank;
  uint32_t id = 0;  // job rank, or host index of an agent
  uint32_t pid = 0;
  uint64_t token = 0;  // the job's secret: rejects stray connections
  std::string hostname;
};

struct CollectiveEntry {
  uint32_t rank = 0;
  std::string data;
  // In a contribution: the GASNet call the rank made it from
  // (bootstrap/current_call.h), "" when none was annotated. Empty in
  // results.
  std::string call = {};
};

// One or more ranks' contributions to collective number `seq` (every rank
// numbers its collectives 0, 1, 2, ...). `len` and `root` are what each
// rank passed, so the launcher can check that all ranks agree.
struct CollectiveUp {
  uint32_t seq = 0;
  CollectiveOp op = CollectiveOp::kBarrier;
  uint64_t len = 0;
  uint32_t root = 0;
  std::vector<CollectiveEntry> entries;
};

// The result of collective `seq`: the same bytes for every rank
// (`uniform`), or one entry per rank (alltoall).
struct CollectiveDown {
  uint32_t seq = 0;
  bool uniform = true;
  std::string data;                      // when uniform
  std::vector<CollectiveEntry> entries;  // when not
};

struct CollectiveFailed {
  uint32_t seq = 0;
  std::string reason;
};

struct Fini {
  uint32_t rank = 0;
};

struct ExitReady {
  uint32_t rank = 0;
};

// A rank whose exit was not collective asks for the job to end with its
// code; the root decides once, whoever asks first.
struct ExitRequest {
  uint32_t rank = 0;
  int32_t exit_code = 0;
};

// The root's decision, for every launcher to pass on to its ranks: exit
// with `exit_code`. `peer_lost`: a rank died or failed without leaving the
// job, so nobody should wait for it.
struct ExitJob {
  uint32_t initiator = 0;
  int32_t exit_code = 0;
  bool peer_lost = false;
};

// Collective `seq` timed out: which call are the ranks that did not join
// it in? (Down to agents; a launcher asks its own ranks with a signal.)
struct CallQuery {
  uint32_t seq = 0;
};

// A rank's answer: the call it is in, "" when none.
struct CallReport {
  uint32_t rank = 0;
  std::string call = {};
};

struct Abort {
  uint32_t rank = 0;
  int32_t exit_code = 1;
  std::string reason;
};

struct RankExited {
  uint32_t rank = 0;
  int32_t wait_status = 0;  // as waitpid(2) reports it
};

struct Kill {
  int32_t signal = 9;
};

struct AgentError {
  int32_t exit_code = 1;
  std::string message;
};

struct AgentReady {
  uint32_t host = 0;
};

// Each message's type byte.
template <typename T>
inline constexpr MessageType kMessageType = MessageType::kHello;
template <>
inline constexpr MessageType kMessageType<CollectiveUp> =
    MessageType::kCollectiveUp;
template <>
inline constexpr MessageType kMessageType<CollectiveDown> =
    MessageType::kCollectiveDown;
template <>
inline constexpr MessageType kMessageType<CollectiveFailed> =
    MessageType::kCollectiveFailed;
template <>
inline constexpr MessageType kMessageType<Fini> = MessageType::kFini;
template <>
inline constexpr MessageType kMessageType<ExitReady> = MessageType::kExitReady;
template <>
inline constexpr MessageType kMessageType<ExitRequest> =
    MessageType::kExitRequest;
template <>
inline constexpr MessageType kMessageType<ExitJob> = MessageType::kExitJob;
template <>
inline constexpr MessageType kMessageType<CallQuery> = MessageType::kCallQuery;
template <>
inline constexpr MessageType kMessageType<CallReport> =
    MessageType::kCallReport;
template <>
inline constexpr MessageType kMessageType<Abort> = MessageType::kAbort;
template <>
inline constexpr MessageType kMessageType<RankExited> =
    MessageType::kRankExited;
template <>
inline constexpr MessageType kMessageType<Kill> = MessageType::kKill;
template <>
inline constexpr MessageType kMessageType<AgentError> =
    MessageType::kAgentError;
template <>
inline constexpr MessageType kMessageType<AgentReady> =
    MessageType::kAgentReady;

// A message as a frame (defined for the structs above).
template <typename T>
std::string Encode(const T& m);

// A frame body as message T; an error names the message when the body is
// of another type, truncated, too long, or holds an impossible value.
template <typename T>
absl::StatusOr<T> Decode(std::string_view body);

// The type byte of a frame body (kHello for an empty body, which no
// decoder accepts).
MessageType TypeOf(std::string_view body);

}  // namespace gexrt::wire

#endif  // GEX_BOOTSTRAP_MESSAGES_H_
