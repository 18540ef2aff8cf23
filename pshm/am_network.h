// The PSHM Active Message network: messages between the ranks of one
// supernode through queues in shared memory.
//
// Every ordered pair of supernode peers (a rank and itself included) has a
// single-reader ring of `depth` one-line slots for requests in the
// receiver's region; the receiver writes a request's reply (or that there
// is none) back into the request's own slot, where the requester finds
// it. Every rank has, per channel, a payload pool in its own region for
// message bodies too big for a slot (more than 48 bytes of Long address,
// arguments and Medium payload). A Short, or a Medium of a few bytes with
// a few arguments, and its reply are one cache line that goes to the
// receiver and comes back, as in a raw ping-pong; nothing else crosses
// between their caches. A request sent when every earlier one to that peer
// is finished takes the last one's slot again, so that a
// series of round trips keeps passing that one line, rather than a fresh
// line of the ring each time. Long payloads are copied straight into the
// target's segment before the message is published. No locks in SEQ mode,
// no system calls, no allocation on send or receive.
//
// Flow control: a request's slot is taken until its reply has been run (or
// the receiver said there is none), so at most `depth` requests from one
// rank to another are unfinished. A sender that finds none free, or its
// own pool out of space, waits, and while it waits it polls its own queues
// (a request waits polling requests and replies; a reply, which never
// waits for a slot, waits for pool space polling replies only, whose
// handlers never send), so ranks flooding each other cannot deadlock.
// With `immediate` the sender gets kWouldBlock instead (after taking back
// the slots of finished requests without replies, running no handler).
//
// Ordering: requests from one sender to one receiver are delivered in the
// order they were sent (the order their slots were reserved) when one
// thread polls; so are the replies to them. With several polling threads
// (thread_safe) a reply may overtake one whose request handler is still
// running.
//
// Threads (thread_safe = true, GASNet's PAR mode): any thread may send and
// poll. Slots are claimed with a compare-and-swap; pool allocation and
// taking a message from a queue take a process-local spin lock (never held
// across a handler or a wait).
//
//   AmNetwork net(options);  // over regions mapped by every peer
//   net.SendRequest(peer, Category::kShort, handler, args, 2, nullptr, 0,
//                   nullptr, 0, /*immediate=*/false);
//   net.Poll();  // runs options.dispatcher for each message that arrived
//   // ... and in the dispatcher, for a request m:
//   net.SendReply(*m.reply, Category::kShort, handler, args, 1, nullptr, 0,
//                 nullptr, 0, /*immediate=*/false);
#ifndef GEX_PSHM_AM_NETWORK_H_
#define GEX_PSHM_AM_NETWORK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/types/span.h"
#include "base/spin_wait.h"
#include "base/wait_policy.h"
#include "pshm/queue_config.h"
#include "pshm/queue_layout.h"

namespace gexrt::pshm {

// Where a request's reply goes: the request's own slot. The dispatcher
// gets one with each request (Message::reply), valid until it returns.
struct ReplyTo {
  enum class State : uint8_t { kNone, kReserved, kSent };
  layout::Slot* slot;
  uint32_t position;  // The request's queue position.
  uint32_t dest;      // The requester's supernode index.
  State state;
};

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
  ReplyTo* reply;  // A request's; nullptr for a reply.
};

using Dispatcher = void (*)(void* context, const Message& message);

// The rest of the rank's progress (its conduit), polled by a send that
// waits for room in a request queue or the request pool: the rank this one
// waits for may itself be waiting on this rank through the other
// transport. Returns the messages it delivered.
using OtherPoll = int (*)(void* context);

using am::SendStatus;

// A claimed slot (and pool chunk) between Reserve and Commit or Cancel.
struct Reservation {
  Category category;
  uint8_t nargs;
  uint32_t dest;  // Supernode index.
  uint32_t position;
  layout::SlotKind kind;  // What Commit publishes.
  layout::Slot* slot;
  ReplyTo* reply_to;      // A reply's request; nullptr for a request.
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
    // Used when wait_policy is null.
    bool polite = false;
    // How waits spin or yield (the runtime's, shared with its other waits
    // so that PAR threads waiting anywhere are counted together); null:
    // the network's own, yielding at every round when `polite`.
    WaitPolicy* wait_policy = nullptr;
    // Polled with `context` besides this network by a request's wait
    // (never by a reply's, whose wait must run reply handlers only).
    OtherPoll other_poll = nullptr;
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
  // the slot, a chunk of this rank's request pool big enough for `nargs`
  // arguments and `max_payload` bytes of Medium payload. Waits (polling)
  // unless `immediate`. The caller then writes up to max_payload bytes at
  // r->payload (Medium) and calls Commit or Cancel exactly once.
  SendStatus ReserveRequest(uint32_t dest, Category category, uint8_t nargs,
                            size_t max_payload, bool immediate, Reservation* r);
  // The same for the reply to `to`'s request, from inside its handler (at
  // most one; a second is a fatal error). Only a body that does not fit in
  // the slot can wait (for room in this rank's reply pool).
  SendStatus ReserveReply(ReplyTo& to, Category category, uint8_t nargs,
                          size_t max_payload, bool immediate, Reservation* r);
  // Publishes the message. For a Long, `long_dest` is the destination
  // address as the receiver sees it (its handler's payload pointer), and
  // the caller has already written the payload there.
  void Commit(Reservation& r, uint8_t handler, const uint32_t* args,
              size_t payload_len, uint64_t long_dest);
  // Publishes nothing: the request's slot is skipped, or the reply is not
  // sent (the handler may still send one); the chunk is freed.
  void Cancel(Reservation& r);

  // Reserve + copy + Commit. For a Medium `payload` is copied into the
  // message; for a Long it is copied to `long_local` (the destination
  // mapped here) and the receiver is told `long_dest`.
  SendStatus SendRequest(uint32_t dest, Category category, uint8_t handler,
                         const uint32_t* args, uint8_t nargs,
                         const void* payload, size_t payload_len,
                         void* long_local, uint64_t long_dest, bool immediate);
  SendStatus SendReply(ReplyTo& to, Category category, uint8_t handler,
                       const uint32_t* args, uint8_t nargs, const void* payload,
                       size_t payload_len, void* long_local, uint64_t long_dest,
                       bool immediate);

  // Delivers what has arrived (requests first, then replies); returns the
  // number of messages delivered. Requests first: a reply is the last thing
  // a rank waiting for it needs to run before it goes on, so nothing more
  // runs after it; and a request's handler may reply to this rank itself
  // (loopback), whose reply the same call then runs.
  int Poll();
  // Delivers arrived requests only.
  int PollRequests();
  // Delivers arrived replies only.
  int PollReplies();

  // Statistics for tests.
  uint64_t waits() const { return waits_.load(std::memory_order_relaxed); }

 private:
  // This rank's requests to one peer: positions [retired, tail) are taken,
  // and the peer's region holds their slots.
  struct alignas(kCacheLine) Producer {
    std::atomic<uint32_t> tail{0};
    // Every position before this one is finished (its reply run, or none
    // coming): its slot is free.
    std::atomic<uint32_t> retired{0};
    // The peer's count of finished requests (QueueControl), and what this
    // rank last read of it (under the reply poll lock).
    const std::atomic<uint64_t>* finished = nullptr;
    uint64_t known_finished = 0;
    layout::Slot* slots = nullptr;
    unsigned char* reply_pool = nullptr;  // The peer's, for reply bodies.
    uint32_t source_rank = 0;             // The peer's job rank.
    uint32_t depth = 0;
    uint32_t mask = 0;  // RingSlots(depth) - 1.
  };
  // One peer's requests to this rank, in this rank's region.
  struct alignas(kCacheLine) Consumer {
    uint32_t head = 0;
    uint32_t running = 0;  // Handlers running (SEQ; a handler may poll).
    // SEQ: the head last stored into `finished`, and how many finished
    // requests wait for the next store at most (a quarter of the ring): see
    // PublishFinished.
    uint32_t published = 0;
    uint32_t publish_every = 1;
    // SEQ: one past the latest position replied to (see QueueControl).
    uint32_t replied_end = 0;
    std::atomic<uint64_t>* finished = nullptr;  // QueueControl.
    uint32_t source_rank = 0;
    uint32_t depth = 0;
    uint32_t mask = 0;
    layout::Slot* slots = nullptr;
    unsigned char* source_pool = nullptr;  // The peer's request pool.
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

  // Claims the next position in `p`'s queue when one is free: with
  // `*kind` kRequestInLastSlot when none is unfinished (the position then
  // maps to the last one's slot), else kRequest.
  bool TryClaimSlot(Producer& p, uint32_t* position, layout::SlotKind* kind);
  // Thread-safe mode: claims the last slot again (as TryClaimSlot does
  // single-threaded) when nothing to `p` is unfinished at `tail`; false
  // when another thread is retiring or has claimed since.
  bool TryClaimLastSlot(Producer& p, uint32_t tail, uint32_t* position);
  // Allocates a chunk for a body that does not fit in a slot (waiting,
  // unless `immediate`); returns its offset + 1, or 0 when the body fits
  // or (immediate) there is no room, with *refused set.
  uint32_t ChunkFor(Channel channel, size_t body, bool immediate,
                    bool* refused);
  void FillReservation(Category category, uint8_t nargs, uint32_t dest,
                       uint32_t position, layout::SlotKind kind,
                       layout::Slot* slot, ReplyTo* reply_to, Channel channel,
                       uint32_t chunk, Reservation* r);
  // The rest of a Send once `r` is `reserved` (else returns that): the
  // payload into the message (Medium) or to `long_local` (Long), then
  // Commit.
  SendStatus CopyAndCommit(SendStatus reserved, Reservation& r, uint8_t handler,
                           const uint32_t* args, const void* payload,
                           size_t payload_len, void* long_local,
                           uint64_t long_dest);
  // The payload bytes a Send reserves: a Medium's; a Long's go elsewhere.
  static size_t MediumBytes(Category category, size_t payload_len) {
    return category == Category::kMedium ? payload_len : 0;
  }
  // A body no pool could hold (a caller skipped the AM layer's size
  // checks): a fatal error naming the size.
  [[noreturn]] void TooLarge(size_t body_bytes) const;
  [[noreturn]] void SecondReply(const ReplyTo& to) const;
  // Returns the chunk offset + 1, or 0 when the pool is full.
  uint32_t TryAllocChunk(Pool& pool, size_t bytes);
  void Reclaim(Pool& pool);
  void FreeChunk(Pool& pool, uint32_t chunk_offset);
  // One round of waiting for space on `channel`: polls (a request's wait
  // everything, a reply's wait replies only), but not for replies from
  // `skip_replies` (see ReserveRequest).
  void WaitProgress(Channel channel, const Producer* skip_replies = nullptr);
  // PollReplies but for `skip`'s (null: none skipped).
  int PollRepliesSkipping(const Producer* skip);
  // Whether round `round` (from 1) of a wait for a slot in `p`'s queue
  // leaves its slots alone (see ReserveRequest).
  bool LeavesSlotsAlone(const Producer& p, uint32_t round) const;
  // Stores `k`'s finished count (single-threaded mode).
  void PublishFinished(Consumer& k);
  // Runs the replies that have arrived from `dest`; retires finished slots.
  int TakeReplies(Producer& p, uint32_t dest);
  // Retires the finished requests to one peer that have no reply to run;
  // returns whether it retired any.
  bool RetireFinished(Producer& p);
  // Whether a request in [from, tail) has its reply, or is marked
  // finished, in its slot.
  static bool ReplyAfter(const Producer& p, uint32_t from, uint32_t tail);
  // Whether the peer has finished the request at `pos` (reading its
  // QueueControl only when this rank's last reading does not say so).
  bool FinishedThere(Producer& p, uint32_t pos);
  // Thread-safe mode: runs replies to later requests while an earlier
  // request's handler still runs.
  int TakeLaterReplies(Producer& p, uint32_t dest);
  // Runs one message copied out of its slot (`copy`, a whole Slot);
  // false, running nothing, for a cancelled one.
  bool Deliver(unsigned char* copy, Channel channel, uint32_t source,
               uint32_t source_rank, unsigned char* source_pool,
               ReplyTo* reply);
  bool LockPoll(Channel channel);
  void UnlockPoll(Channel channel);
  void LockPool(Pool& pool);
  void UnlockPool(Pool& pool);

  Pool& pool(Channel c) { return pools_[static_cast<uint8_t>(c)]; }

  uint32_t my_index_;
  uint32_t peers_;
  Dispatcher dispatcher_;
  void* context_;
  OtherPoll other_poll_;
  bool thread_safe_;
  WaitPolicy own_wait_policy_;             // When Options::wait_policy is null.
  WaitPolicy* wait_policy_;                // Between polls that found nothing.
  std::unique_ptr<Producer[]> producers_;  // By destination.
  std::unique_ptr<Consumer[]> consumers_;  // By source.
  Pool pools_[kChannels];
  PollLock poll_locks_[kChannels];
  std::atomic<uint64_t> waits_{0};
};

// ---------------------------------------------------------------------------
// The hot paths, inline.

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool AmNetwork::TryClaimSlot(
    Producer& p, uint32_t* position, layout::SlotKind* kind) {
  uint32_t tail = p.tail.load(std::memory_order_relaxed);
  *kind = layout::SlotKind::kRequest;
  const auto depth = static_cast<int32_t>(p.depth);
  for (;;) {
    // Acquire: the slot's last reader, the thread that retired it, is done
    // with it.
    const uint32_t retired = p.retired.load(std::memory_order_acquire);
    // Distances are signed: another thread may have moved `retired` past
    // this thread's snapshot of the tail, which is not "full".
    if (static_cast<int32_t>(tail - retired) >= depth) {
      // Full, unless another thread took slots meanwhile (then retry with
      // the newer tail).
      const uint32_t now = p.tail.load(std::memory_order_relaxed);
      if (now == tail) return false;
      tail = now;
      continue;
    }
    if (tail == retired && p.mask != 0) {
      // Nothing unfinished: skip ahead to the position one ring on from
      // the last, whose slot is the last one's (already in this rank's
      // cache, with the reply just read from it). The positions skipped
      // count as finished; the receiver, whose head is `tail`, skips them
      // too when it finds this request there.
      if (!thread_safe_) {
        const uint32_t reused = tail + p.mask;
        p.retired.store(reused, std::memory_order_relaxed);
        p.tail.store(reused + 1, std::memory_order_relaxed);
        *position = reused;
        *kind = layout::SlotKind::kRequestInLastSlot;
        return true;
      }
      if (TryClaimLastSlot(p, tail, position)) {
        *kind = layout::SlotKind::kRequestInLastSlot;
        return true;
      }
      // Another thread is retiring or claiming: the next slot, as usual.
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

ABSL_ATTRIBUTE_ALWAYS_INLINE inline uint32_t AmNetwork::ChunkFor(
    Channel channel, size_t body, bool immediate, bool* refused) {
  *refused = false;
  if (ABSL_PREDICT_TRUE(body <= layout::kInlineBytes)) return 0;
  Pool& own = pool(channel);
  const size_t bytes = layout::ChunkBytes(body);
  if (ABSL_PREDICT_FALSE(bytes > own.bytes)) TooLarge(body);
  uint32_t chunk;
  while ((chunk = TryAllocChunk(own, bytes)) == 0) {
    if (immediate) {
      *refused = true;
      return 0;
    }
    WaitProgress(channel);
  }
  return chunk;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void AmNetwork::FillReservation(
    Category category, uint8_t nargs, uint32_t dest, uint32_t position,
    layout::SlotKind kind, layout::Slot* slot, ReplyTo* reply_to,
    Channel channel, uint32_t chunk, Reservation* r) {
  r->category = category;
  r->nargs = nargs;
  r->dest = dest;
  r->position = position;
  r->kind = kind;
  r->slot = slot;
  r->reply_to = reply_to;
  r->chunk_offset = chunk;
  r->body = chunk == 0 ? slot->body
                       : pool(channel).base + (chunk - 1) +
                             sizeof(layout::ChunkHeader);
  r->payload = r->body + layout::PayloadOffset(category, nargs);
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline SendStatus AmNetwork::ReserveRequest(
    uint32_t dest, Category category, uint8_t nargs, size_t max_payload,
    bool immediate, Reservation* r) {
  bool refused;
  const uint32_t chunk = ChunkFor(
      Channel::kRequest, layout::BodyBytes(category, nargs, max_payload),
      immediate, &refused);
  if (ABSL_PREDICT_FALSE(refused)) return SendStatus::kWouldBlock;
  Producer& p = producers_[dest];
  uint32_t position;
  layout::SlotKind kind;
  for (uint32_t round = 1;
       ABSL_PREDICT_FALSE(!TryClaimSlot(p, &position, &kind)); ++round) {
    // A request finished without a reply frees its slot once this rank
    // sees it finished: look (running no handler) before waiting.
    if (RetireFinished(p) && TryClaimSlot(p, &position, &kind)) break;
    if (immediate) {
      if (chunk != 0) FreeChunk(pool(Channel::kRequest), chunk);
      return SendStatus::kWouldBlock;
    }
    // Replies free slots too, but looking for them reads the peer's slots,
    // the very lines it is working through (and, far apart, a cross-die
    // round trip each): a flood's sender that looked at every round made
    // its receiver wait for lines. SEQ: the count says when a finished
    // request at the head has a reply (RetireFinished stopped there); else
    // the slots are looked at every kLookForRepliesEvery-th round only, so
    // that a reply the count does not show yet is still found (its peer may
    // be waiting in a handler for room in its reply pool that this rank's
    // unrun replies hold, and publishes no count meanwhile).
    WaitProgress(Channel::kRequest, LeavesSlotsAlone(p, round) ? &p : nullptr);
  }
  FillReservation(category, nargs, dest, position, kind,
                  &p.slots[position & p.mask], nullptr, Channel::kRequest,
                  chunk, r);
  return SendStatus::kOk;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline SendStatus AmNetwork::ReserveReply(
    ReplyTo& to, Category category, uint8_t nargs, size_t max_payload,
    bool immediate, Reservation* r) {
  if (ABSL_PREDICT_FALSE(to.state != ReplyTo::State::kNone)) SecondReply(to);
  bool refused;
  const uint32_t chunk =
      ChunkFor(Channel::kReply, layout::BodyBytes(category, nargs, max_payload),
               immediate, &refused);
  if (ABSL_PREDICT_FALSE(refused)) return SendStatus::kWouldBlock;
  to.state = ReplyTo::State::kReserved;
  FillReservation(category, nargs, to.dest, to.position,
                  layout::SlotKind::kReply, to.slot, &to, Channel::kReply,
                  chunk, r);
  return SendStatus::kOk;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void AmNetwork::Commit(Reservation& r,
                                                           uint8_t handler,
                                                           const uint32_t* args,
                                                           size_t payload_len,
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
  if (r.reply_to != nullptr) {
    r.reply_to->state = ReplyTo::State::kSent;
    // SEQ: the count says where replies are (a handler that polled may
    // reply after later ones have: the latest position wins).
    uint32_t& replied_end = consumers_[r.reply_to->dest].replied_end;
    if (!thread_safe_ &&
        static_cast<int32_t>(r.position + 1 - replied_end) > 0) {
      replied_end = r.position + 1;
    }
  }
  slot->state.store(layout::SlotState(r.kind, r.position),
                    std::memory_order_release);
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline SendStatus AmNetwork::SendRequest(
    uint32_t dest, Category category, uint8_t handler, const uint32_t* args,
    uint8_t nargs, const void* payload, size_t payload_len, void* long_local,
    uint64_t long_dest, bool immediate) {
  Reservation r;
  return CopyAndCommit(
      ReserveRequest(dest, category, nargs, MediumBytes(category, payload_len),
                     immediate, &r),
      r, handler, args, payload, payload_len, long_local, long_dest);
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline SendStatus AmNetwork::SendReply(
    ReplyTo& to, Category category, uint8_t handler, const uint32_t* args,
    uint8_t nargs, const void* payload, size_t payload_len, void* long_local,
    uint64_t long_dest, bool immediate) {
  Reservation r;
  return CopyAndCommit(
      ReserveReply(to, category, nargs, MediumBytes(category, payload_len),
                   immediate, &r),
      r, handler, args, payload, payload_len, long_local, long_dest);
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline SendStatus AmNetwork::CopyAndCommit(
    SendStatus reserved, Reservation& r, uint8_t handler, const uint32_t* args,
    const void* payload, size_t payload_len, void* long_local,
    uint64_t long_dest) {
  if (reserved != SendStatus::kOk) return reserved;
  if (payload_len != 0) {
    if (r.category == Category::kMedium) {
      std::memcpy(r.payload, payload, payload_len);
    } else if (r.category == Category::kLong) {
      std::memcpy(long_local, payload, payload_len);
    }
  }
  Commit(r, handler, args, payload_len, long_dest);
  return SendStatus::kOk;
}

}  // namespace gexrt::pshm

#endif  // GEX_PSHM_AM_NETWORK_H_
