#include "bootstrap/exit_signal.h"

#include <signal.h>

namespace gexrt {
namespace {

constexpr uint64_t kTag = 0x6745;  // "gE"
constexpr int kTagShift = 48;
constexpr int kInitiatorShift = 16;
constexpr uint64_t kPeerLostBit = uint64_t{1} << 8;
constexpr uint64_t kCallQueryBit = uint64_t{1} << 9;

}  // namespace

uint64_t EncodeExitSignal(const ExitSignalValue& v) {
  return kTag << kTagShift | uint64_t{v.initiator} << kInitiatorShift |
         (v.peer_lost ? kPeerLostBit : 0) | (v.call_query ? kCallQueryBit : 0) |
         static_cast<uint64_t>(v.code & 0xff);
}

std::optional<ExitSignalValue> DecodeExitSignal(uint64_t bits) {
  if (bits >> kTagShift != kTag) return std::nullopt;
  // Bits 10-15 are unused: a value with any of them set is not ours.
  if ((bits & 0xfc00) != 0) return std::nullopt;
  ExitSignalValue v;
  v.initiator = static_cast<Rank>((bits >> kInitiatorShift) & 0xffffffffu);
  v.code = static_cast<int>(bits & 0xff);
  v.peer_lost = (bits & kPeerLostBit) != 0;
  v.call_query = (bits & kCallQueryBit) != 0;
  return v;
}

bool SendExitSignal(pid_t pid, const ExitSignalValue& v) {
  union sigval value;
  value.sival_ptr =
      reinterpret_cast<void*>(static_cast<uintptr_t>(EncodeExitSignal(v)));
  return sigqueue(pid, kExitSignal, value) == 0;
}

}  // namespace gexrt
