// The shared-memory layout of one rank's PSHM network region: what every
// supernode peer maps and agrees on. Internal to //pshm.
//
// A region belongs to its owner (the receiver of its queues and the sender
// that fills its pools) and holds, after a one-line header:
//
//   for each supernode peer s (the owner included, for loopback):
//     a QueueControl line: how many of s's requests the owner has finished
//     RingSlots(depth) Slots: requests from s to the owner, one cache line
//     each (at most `depth` of them in flight); the owner writes each
//     request's reply back into the request's slot
//   for each channel (request, reply):
//     the owner's payload pool (`pool_bytes`), chunks for message bodies
//     that do not fit in a slot
//
// A request and its reply share one cache line, so a request/reply round
// trip moves that line to the receiver and back, as a raw ping-pong does;
// and a reply never waits for a free slot (its slot is the request's). A
// request sent when all earlier ones are finished goes into the slot the
// last one used (kRequestInLastSlot), so that round trip after round trip
// moves that one line rather than each a fresh line of the ring.
//
// Each region describes itself in its header (depth, pool size), so a
// sender always uses the receiver's own settings.
#ifndef GEX_PSHM_QUEUE_LAYOUT_H_
#define GEX_PSHM_QUEUE_LAYOUT_H_

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "am/vocabulary.h"

namespace gexrt::pshm {

inline constexpr size_t kCacheLine = 64;

// Channels: requests and replies have separate payload pools, so a rank
// waiting for room for a reply needs only replies to drain (reply handlers
// send nothing), which is what makes the network deadlock-free.
enum class Channel : uint8_t { kRequest = 0, kReply = 1 };
inline constexpr int kChannels = 2;

// The AM vocabulary is am/vocabulary.h's: one Category, one argument limit.
using am::Category;
using am::kMaxArgs;
// The largest Medium payload (and the largest Long payload per message is
// the target segment's business, not the queue's).
inline constexpr uint32_t kMaxMedium = 65536;

namespace layout {

inline constexpr uint64_t kMagic = 0x47455850534d4e31ull;  // "GEXPSMN1"
inline constexpr uint32_t kVersion = 4;

struct alignas(kCacheLine) RegionHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t peers;
  uint32_t depth;
  uint32_t owner_rank;
  uint64_t pool_bytes;
};
static_assert(sizeof(RegionHeader) == kCacheLine);

// The owner's count of requests from one peer it has finished: every
// position before it has run its handler, and has its reply in its slot if
// it has one. A requester reads it only when it needs a slot back from a
// request that has no reply (a single-threaded owner writes it after every
// quarter of the ring of handlers and at the end of each pass over the
// queue, instead of touching the slot; a thread-safe one, whose handlers
// end out of order, marks each such slot kDone instead).
//
// With the count, in the same word, the owner says where replies can be:
// one past the latest position it has replied to. No request from there
// to the count has a reply, so the requester frees their slots without
// reading them: a one-way flood's flow control then moves this line only,
// not every slot's line once more between the owner's read and the
// requester's next write to it.
struct alignas(kCacheLine) QueueControl {
  // Low half: count << 1 | 1 (the low bit: "counted"; 0 from a
  // thread-safe owner). High half: the replied-to end.
  std::atomic<uint64_t> finished;
};
static_assert(sizeof(QueueControl) == kCacheLine);

// Slot flags.
inline constexpr uint8_t kInChunk = 1;    // Body is in the sender's pool.
inline constexpr uint8_t kCancelled = 2;  // Nothing to deliver.

inline constexpr size_t kSlotHeaderBytes = 16;
inline constexpr size_t kInlineBytes = kCacheLine - kSlotHeaderBytes;

// What a slot holds, in its `state` word: the kind of message last
// published in it and the queue position of the request it belongs to
// (modulo 2^29), so a stale value from an earlier lap never matches.
enum class SlotKind : uint32_t {
  kRequest = 1,  // A request, for the owner, in its position's slot.
  kReply = 2,    // The owner's reply to it, for the requester.
  kDone = 3,     // Finished with no reply (see QueueControl).
  // A request sent when every earlier one was finished: it takes the
  // previous request's slot again (its position skips ahead a ring, less
  // one, to the position that maps there), so that back-to-back round trips
  // keep to one cache line, as a raw ping-pong does, instead of moving
  // through the ring. The owner, finding nothing at its head, looks for
  // this one in the slot before it.
  kRequestInLastSlot = 4,
};
inline constexpr uint32_t SlotState(SlotKind kind, uint32_t position) {
  return position << 3 | static_cast<uint32_t>(kind);
}

// One message header, one cache line. `state` is stored last (a release
// store after everything else is written), so a reader sees a whole
// message or none.
struct alignas(kCacheLine) Slot {
  std::atomic<uint32_t> state;
  uint8_t handler;
  uint8_t category;
  uint8_t nargs;
  uint8_t flags;
  uint32_t payload_len;
  uint32_t chunk_offset;  // Into the sender's pool, when kInChunk.
  alignas(16) unsigned char body[kInlineBytes];
};
static_assert(sizeof(Slot) == kCacheLine);
static_assert(offsetof(Slot, body) == kSlotHeaderBytes);

// A message body: [8-byte Long destination][args][pad to 8][payload].
inline constexpr size_t ArgsOffset(Category c) {
  return c == Category::kLong ? 8 : 0;
}
inline constexpr size_t PayloadOffset(Category c, uint32_t nargs) {
  return ArgsOffset(c) + ((size_t{4} * nargs + 7) & ~size_t{7});
}
inline constexpr size_t BodyBytes(Category c, uint32_t nargs,
                                  size_t payload_len) {
  return PayloadOffset(c, nargs) + (c == Category::kMedium ? payload_len : 0);
}

// A pool chunk: this header, then the body. Chunks are whole cache lines.
struct alignas(16) ChunkHeader {
  std::atomic<uint32_t> done;  // Set by the receiver when it is finished.
  uint32_t bytes;              // The whole chunk, header included.
  uint64_t unused;
};
static_assert(sizeof(ChunkHeader) == 16);

inline constexpr size_t ChunkBytes(size_t body_bytes) {
  return (sizeof(ChunkHeader) + body_bytes + kCacheLine - 1) &
         ~(kCacheLine - 1);
}
// The largest chunk any message needs; a pool smaller than this could not
// carry a full-size Medium.
inline constexpr size_t kMaxChunkBytes =
    ChunkBytes(BodyBytes(Category::kMedium, kMaxArgs, kMaxMedium) + 8);

// The ring is a power of two of slots, at least `depth`: queue positions
// are 32-bit counters that wrap, and only a power of two divides 2^32, so
// only then does a position keep its slot across the wrap. `depth` (the
// user's GASNET_PSHMNET_QUEUE_DEPTH) bounds how many are in flight.
inline constexpr uint32_t RingSlots(uint32_t depth) {
  return std::bit_ceil(depth);
}

inline constexpr size_t QueueBytes(uint32_t depth) {
  return sizeof(QueueControl) + size_t{RingSlots(depth)} * sizeof(Slot);
}

inline constexpr size_t QueueOffset(uint32_t depth, uint32_t sender) {
  return sizeof(RegionHeader) + size_t{sender} * QueueBytes(depth);
}

inline constexpr size_t PoolOffset(uint32_t peers, uint32_t depth,
                                   uint64_t pool_bytes, Channel channel) {
  return sizeof(RegionHeader) + size_t{peers} * QueueBytes(depth) +
         static_cast<uint8_t>(channel) * pool_bytes;
}

inline constexpr size_t RegionBytes(uint32_t peers, uint32_t depth,
                                    uint64_t pool_bytes) {
  return PoolOffset(peers, depth, pool_bytes, Channel::kRequest) +
         kChannels * pool_bytes;
}

}  // namespace layout
}  // namespace gexrt::pshm

#endif  // GEX_PSHM_QUEUE_LAYOUT_H_
