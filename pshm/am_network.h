// The PSHM Active Message network: messages between the ranks of one
// supernode through queues in shared memory.
//
// Every ordered pair of supernode peers (a rank and itself included) has,
// per channel (requests, replies), a single-reader ring of `depth` one-line
// slots in the receiver's region; every rank has, per channel, a payload
// pool in its own region for message bodies too big for a slot (more than
// 48 bytes of Long address, arguments and Medium payload). A Short, or a
// Medium of a few bytes with a few arguments, is one cache line written by
// the sender and read by the receiver; nothing else crosses between their
// caches. Long payloads are copied straight into the target's segment
// before the message is published. No locks in SEQ mode, no system calls,
// no allocation on send or receive.
//
// Flow control: a sender that finds the receiver's queue full, or its own
// pool out of space, waits, and while it waits it polls its own queues (a
// request waits polling requests and replies; a reply polls replies only,
// whose handlers never send), so ranks flooding each other cannot
// deadlock. With `immediate` the sender gets kWouldBlock instead.
//
// Ordering: messages from one sender to one receiver on one channel are
// delivered in the order they were sent (the order their slots were
// reserved) when one thread polls.
//
// Threads (thread_safe = true, GASNet's PAR mode): any thread may send and
// poll. Slots are claimed with a compare-and-swap; pool allocation and
// taking a message from a queue take a process-local spin lock (never held
// across a handler or a wait).
//
//   AmNetwork net(options);  // over regions mapped by every peer
//   net.Send(Channel::kRequest, peer, Category::kShort, handler, args, 2,
//            nullptr, 0, {}, /*immediate=*/false);
//   net.Poll();  // runs options.dispatcher for each message that arrived
#ifndef GEX_PSHM_AM_NETWORK_H_
#define GEX_PSHM_AM_NETWORK_H_

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/types/span.h"
#include "pshm/queue_config.h"
#include "pshm/queue_layout.h"

namespace gex::pshm {

// A message as its handler sees it. `payload` is valid until the
// dispatcher returns: a Medium's bytes (in the sender's pool or a copy of
// the slot), or, for a Long, the destination in the receiver's segment.
struct Message {
  uint32_t source;        // The sender's job rank.
  uint32_t source_index;  // The sender's supernode index.
  Channel channel;
  Category category;
  uint8_t handler;
  uint8_t nargs;
  const uint32_t* args;
  void* payload;
  size_t payload_len;
};

using Dispatcher = void (*)(void* context, const Message& message);

enum class SendStatus { kOk, kWouldBlock };

// A claimed slot (and pool chunk) between Reserve and Commit or Cancel.
struct Reservation {
  Channel channel;
  Category category;
  uint8_t nargs;
  uint32_t dest;  // Supernode index.
  uint32_t position;
  layout::Slot* slot;
  unsigned char* body;    // The slot's inline body, or the chunk's.
  uint32_t chunk_offset;  // + 1; 0 when the body is inline.
  // Where a Medium payload goes (capacity: the max_payload reserved).
  void* payload;
};

class AmNetwork {
 public:
  struct Options {
    uint32_t my_index = 0;  // This rank's index in the supernode.
    // Per supernode index: the peer's job rank and its mapped region
    // (this rank's own included), formatted by FormatRegion.
    std::vector<uint32_t> ranks;
    std::vector<void*> regions;
    Dispatcher dispatcher = nullptr;
    void* context = nullptr;
    bool thread_safe = false;
    // Yield the CPU while waiting (more ranks than cores on this host).
    bool polite = false;
  };

  // Bytes of the region a rank of a supernode of `peers` ranks needs.
  static size_t RegionBytes(const QueueConfig& config, uint32_t peers);
  // Writes the header and empty queues into this rank's fresh region.
  static void FormatRegion(void* region, const QueueConfig& config,
                           uint32_t peers, uint32_t owner_rank);

  // Checks every region's header (a fatal error names a mismatch).
  explicit AmNetwork(Options options);
  AmNetwork(const AmNetwork&) = delete;
  AmNetwork& operator=(const AmNetwork&) = delete;
  ~AmNetwork();

  uint32_t my_index() const { return my_index_; }
  uint32_t peers() const { return peers_; }

  // Claims a slot in `dest`'s queue and, when the body does not fit in
  // the slot, a chunk of this rank's pool big enough for `nargs` arguments
  // and `max_payload` bytes of Medium payload. Waits (polling) unless
  // `immediate`. The caller then writes up to max_payload bytes at
  // r->payload (Medium) and calls Commit or Cancel exactly once.
  SendStatus Reserve(Channel channel, uint32_t dest, Category category,
                     uint8_t nargs, size_t max_payload, bool immediate,
                     Reservation* r);
  // Publishes the message. For a Long, `long_dest` is the destination
  // address as the receiver sees it (its handler's payload pointer), and
  // the caller has already written the payload there.
  void Commit(Reservation& r, uint8_t handler, const uint32_t* args,
              size_t payload_len, uint64_t long_dest);
  // Publishes nothing: the slot is skipped and the chunk freed.
  void Cancel(Reservation& r);

  // Reserve + copy + Commit. For a Medium `payload` is copied into the
  // message; for a Long it is copied to `long_local` (the destination
  // mapped here) and the receiver is told `long_dest`.
  SendStatus Send(Channel channel, uint32_t dest, Category category,
                  uint8_t handler, const uint32_t* args, uint8_t nargs,
                  const void* payload, size_t payload_len, void* long_local,
                  uint64_t long_dest, bool immediate);

  // Delivers what has arrived on both channels (replies first); returns
  // the number of messages delivered.
  int Poll();
  // Delivers arrived replies only.
  int PollReplies();

  // Statistics for tests.
  uint64_t waits() const { return waits_.load(std::memory_order_relaxed); }

 private:
  struct alignas(kCacheLine) Producer {
    std::atomic<uint32_t> tail{0};
    std::atomic<uint32_t> known_consumed{0};
    layout::Slot* slots = nullptr;
    const std::atomic<uint32_t>* consumed = nullptr;
    uint32_t depth = 0;
    uint32_t mask = 0;  // RingSlots(depth) - 1.
  };
  struct alignas(kCacheLine) Consumer {
    uint32_t head = 0;
    uint32_t source_rank = 0;
    uint32_t depth = 0;
    uint32_t mask = 0;
    layout::Slot* slots = nullptr;
    std::atomic<uint32_t>* consumed = nullptr;
    unsigned char* source_pool = nullptr;
  };
  struct alignas(kCacheLine) Pool {
    std::atomic<bool> busy{false};  // The lock, in thread-safe mode.
    uint64_t alloc_pos = 0;
    uint64_t reclaim_pos = 0;
    unsigned char* base = nullptr;
    uint64_t bytes = 0;
  };
  struct alignas(kCacheLine) PollLock {
    std::atomic<bool> busy{false};
  };

  bool TryClaimSlot(Producer& p, uint32_t* position);
  // A body no pool could hold (a caller skipped the AM layer's size
  // checks): a fatal error naming the size.
  [[noreturn]] void TooLarge(size_t body_bytes) const;
  // Returns the chunk offset + 1, or 0 when the pool is full.
  uint32_t TryAllocChunk(Pool& pool, size_t bytes);
  void Reclaim(Pool& pool);
  void FreeChunk(Pool& pool, uint32_t chunk_offset);
  // One round of waiting for space on `channel`.
  void WaitProgress(Channel channel);
  int PollChannel(Channel channel);
  bool LockPoll(Channel channel);
  void UnlockPoll(Channel channel);
  void LockPool(Pool& pool);
  void UnlockPool(Pool& pool);

  Producer& producer(Channel c, uint32_t dest) {
    return producers_[static_cast<uint8_t>(c) * peers_ + dest];
  }
  Consumer& consumer(Channel c, uint32_t source) {
    return consumers_[static_cast<uint8_t>(c) * peers_ + source];
  }
  Pool& pool(Channel c) { return pools_[static_cast<uint8_t>(c)]; }

  uint32_t my_index_;
  uint32_t peers_;
  Dispatcher dispatcher_;
  void* context_;
  bool thread_safe_;
  bool polite_;
  std::unique_ptr<Producer[]> producers_;
  std::unique_ptr<Consumer[]> consumers_;
  Pool pools_[kChannels];
  PollLock poll_locks_[kChannels];
  std::atomic<uint64_t> waits_{0};
};

// ---------------------------------------------------------------------------
// The hot paths, inline.

inline bool AmNetwork::TryClaimSlot(Producer& p, uint32_t* position) {
  uint32_t tail = p.tail.load(std::memory_order_relaxed);
  const auto depth = static_cast<int32_t>(p.depth);
  for (;;) {
    // Distances are signed: another thread may have moved known_consumed
    // past this thread's snapshot of the tail, which is not "full".
    // (Acquire/release on known_consumed: another thread's view of the
    // receiver's progress must carry the receiver's release with it.)
    if (static_cast<int32_t>(
            tail - p.known_consumed.load(std::memory_order_acquire)) >= depth) {
      // Looks full: ask the receiver how far it got.
      const uint32_t consumed = p.consumed->load(std::memory_order_acquire);
      p.known_consumed.store(consumed, std::memory_order_release);
      if (static_cast<int32_t>(tail - consumed) >= depth) {
        // Full, unless another thread took slots meanwhile (then retry
        // with the newer tail).
        const uint32_t now = p.tail.load(std::memory_order_relaxed);
        if (now == tail) return false;
        tail = now;
        continue;
      }
    }
    if (!thread_safe_) {
      p.tail.store(tail + 1, std::memory_order_relaxed);
      *position = tail;
      return true;
    }
    if (p.tail.compare_exchange_weak(tail, tail + 1,
                                     std::memory_order_relaxed)) {
      *position = tail;
      return true;
    }
  }
}

inline SendStatus AmNetwork::Reserve(Channel channel, uint32_t dest,
                                     Category category, uint8_t nargs,
                                     size_t max_payload, bool immediate,
                                     Reservation* r) {
  const size_t body = layout::BodyBytes(category, nargs, max_payload);
  uint32_t chunk = 0;
  if (ABSL_PREDICT_FALSE(body > layout::kInlineBytes)) {
    Pool& own = pool(channel);
    const size_t bytes = layout::ChunkBytes(body);
    if (ABSL_PREDICT_FALSE(bytes > own.bytes)) TooLarge(body);
    while ((chunk = TryAllocChunk(own, bytes)) == 0) {
      if (immediate) return SendStatus::kWouldBlock;
      WaitProgress(channel);
    }
  }
  Producer& p = producer(channel, dest);
  uint32_t position;
  while (!TryClaimSlot(p, &position)) {
    if (immediate) {
      if (chunk != 0) FreeChunk(pool(channel), chunk);
      return SendStatus::kWouldBlock;
    }
    WaitProgress(channel);
  }
  layout::Slot* slot = &p.slots[position & p.mask];
  r->channel = channel;
  r->category = category;
  r->nargs = nargs;
  r->dest = dest;
  r->position = position;
  r->slot = slot;
  r->chunk_offset = chunk;
  r->body = chunk == 0 ? slot->body
                       : pool(channel).base + (chunk - 1) +
                             sizeof(layout::ChunkHeader);
  r->payload = r->body + layout::PayloadOffset(category, nargs);
  return SendStatus::kOk;
}

inline void AmNetwork::Commit(Reservation& r, uint8_t handler,
                              const uint32_t* args, size_t payload_len,
                              uint64_t long_dest) {
  layout::Slot* slot = r.slot;
  if (r.category == Category::kLong) {
    std::memcpy(r.body, &long_dest, sizeof(long_dest));
  }
  if (r.nargs != 0) {
    std::memcpy(r.body + layout::ArgsOffset(r.category), args,
                size_t{4} * r.nargs);
  }
  slot->handler = handler;
  slot->category = static_cast<uint8_t>(r.category);
  slot->nargs = r.nargs;
  slot->flags = r.chunk_offset != 0 ? layout::kInChunk : 0;
  slot->payload_len = static_cast<uint32_t>(payload_len);
  slot->chunk_offset = r.chunk_offset;
  slot->seq.store(r.position + 1, std::memory_order_release);
}

inline SendStatus AmNetwork::Send(Channel channel, uint32_t dest,
                                  Category category, uint8_t handler,
                                  const uint32_t* args, uint8_t nargs,
                                  const void* payload, size_t payload_len,
                                  void* long_local, uint64_t long_dest,
                                  bool immediate) {
  Reservation r;
  const size_t medium_len = category == Category::kMedium ? payload_len : 0;
  if (Reserve(channel, dest, category, nargs, medium_len, immediate, &r) !=
      SendStatus::kOk) {
    return SendStatus::kWouldBlock;
  }
  if (payload_len != 0) {
    if (category == Category::kMedium) {
      std::memcpy(r.payload, payload, payload_len);
    } else if (category == Category::kLong) {
      std::memcpy(long_local, payload, payload_len);
    }
  }
  Commit(r, handler, args, payload_len, long_dest);
  return SendStatus::kOk;
}

}  // namespace gex::pshm

#endif  // GEX_PSHM_AM_NETWORK_H_
