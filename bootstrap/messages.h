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

namespace gex::wire {

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

std::string Encode(const Hello& m);
std::string Encode(const CollectiveUp& m);
std::string Encode(const CollectiveDown& m);
std::string Encode(const CollectiveFailed& m);
std::string Encode(const Fini& m);
std::string Encode(const Abort& m);
std::string Encode(const RankExited& m);
std::string Encode(const Kill& m);
std::string Encode(const AgentError& m);
std::string Encode(const AgentReady& m);

// Each decodes a frame body of its type; an error names the message.
absl::StatusOr<Hello> DecodeHello(std::string_view body);
absl::StatusOr<CollectiveUp> DecodeCollectiveUp(std::string_view body);
absl::StatusOr<CollectiveDown> DecodeCollectiveDown(std::string_view body);
absl::StatusOr<CollectiveFailed> DecodeCollectiveFailed(std::string_view body);
absl::StatusOr<Fini> DecodeFini(std::string_view body);
absl::StatusOr<Abort> DecodeAbort(std::string_view body);
absl::StatusOr<RankExited> DecodeRankExited(std::string_view body);
absl::StatusOr<Kill> DecodeKill(std::string_view body);
absl::StatusOr<AgentError> DecodeAgentError(std::string_view body);
absl::StatusOr<AgentReady> DecodeAgentReady(std::string_view body);

// The type byte of a frame body (kHello for an empty body, which no
// decoder accepts).
MessageType TypeOf(std::string_view body);

}  // namespace gex::wire

#endif  // GEX_BOOTSTRAP_MESSAGES_H_
