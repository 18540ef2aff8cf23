// The Active Message wire format of the conduits that send a whole message
// as one network message with our own header in front (ucx, ibv): the
// header, where the arguments and payload sit, the checks of an outgoing
// message, and the decoding of an incoming one into core's Inbound.
//
//   [WireHeader, 24 bytes][nargs x uint32][pad to 8][Medium / packed Long]
//
// A Long whose payload travelled first by RDMA (kFlagLongByRdma) carries
// none. The header's `credits` field is am::Credits' count riding back; a
// message with kFlagCreditsOnly carries nothing else (the SYS_ack).
#ifndef GEX_CORE_AM_WIRE_H_
#define GEX_CORE_AM_WIRE_H_

#include <cstddef>
#include <cstdint>

#include "am/vocabulary.h"
#include "core/conduit.h"

namespace gexrt::core::wire {

// flags: the category in the low two bits, then:
inline constexpr uint8_t kFlagRequest = 0x04;
inline constexpr uint8_t kFlagCreditsOnly = 0x08;  // credits, no handler
inline constexpr uint8_t kFlagLongByRdma = 0x10;   // payload written first
// Bits from here up are the conduit's own (ucx: its wire-up hello).
inline constexpr uint8_t kFirstConduitFlag = 0x20;

struct Header {
  uint8_t flags;
  uint8_t handler;
  uint8_t nargs;
  uint8_t unused;
  uint32_t credits;
  uint32_t source;
  uint32_t len;  // payload bytes (a Long's, wherever they travel)
  uint64_t long_dest;
};
static_assert(sizeof(Header) == 24, "the header is packed by hand");

constexpr size_t ArgsEnd(unsigned nargs) {
  return sizeof(Header) + 4 * size_t{nargs};
}
// The payload starts 8-byte aligned.
constexpr size_t PayloadOffset(unsigned nargs) {
  return (ArgsEnd(nargs) + 7) & ~size_t{7};
}
// The most a message adds to its payload.
inline constexpr size_t kMaxOverhead = PayloadOffset(am::kMaxArgs);

// Fatal, naming `conduit`, when `m` breaks the limits: more than
// am::kMaxArgs arguments, a Medium above `max_medium`, a Long above
// `max_long`.
void CheckOutbound(const char* conduit, bool request, const Outbound& m,
                   size_t max_medium, size_t max_long);

// Writes `m`'s header fields (all but `credits`, which the conduit sets
// when it sends), its arguments and, with `inline_payload`, its payload
// (Medium, or a Long sent in its header's message) into `msg`; returns the
// message's length. `long_by_rdma`: the Long's payload went first.
size_t Encode(const Outbound& m, Rank source, bool request, bool credits_only,
              bool long_by_rdma, bool inline_payload, unsigned char* msg);

// This rank's view for decoding: its number, the job's size, its segment.
struct Receiver {
  const char* conduit = "";
  Rank rank = 0;
  Rank size = 0;
  uintptr_t segment_base = 0;
  size_t segment_size = 0;
};

// Decodes the message of `len` bytes at `msg` into `in` (its args point
// into `args`), after checking it: a malformed message, or a Long outside
// this rank's segment, is fatal. A packed Long's payload is copied to its
// destination here. Returns the header (credits and flags for the
// conduit); with kFlagCreditsOnly `in` is not filled.
Header Decode(const Receiver& me, const unsigned char* msg, size_t len,
              Inbound& in, uint32_t (&args)[am::kMaxArgs]);

}  // namespace gexrt::core::wire

#endif  // GEX_CORE_AM_WIRE_H_
