#include "pshm/am_network.h"

#include <new>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/fatal.h"

namespace gexrt::pshm {
namespace {

using layout::ChunkHeader;
using layout::QueueControl;
using layout::RegionHeader;
using layout::Slot;
using layout::SlotKind;
using layout::SlotState;

unsigned char* Bytes(void* p) { return static_cast<unsigned char*>(p); }

const RegionHeader& HeaderOf(void* region) {
  return *static_cast<const RegionHeader*>(region);
}

uint32_t MaskFor(uint32_t depth) { return layout::RingSlots(depth) - 1; }

// How far past a request found in the ring the receiver asks for the slot
// ahead of reading it (see PollRequests): each request found asks for one,
// so a run of them has every slot asked for this far ahead.
constexpr uint32_t kReadAhead = 2;

// How far the replied-to end may lag the head (see PublishFinished).
constexpr int32_t kRepliedEndLag = 1 << 30;

// Rounds of a wait for a slot in one peer's queue per look for replies in
// its slots (see ReserveRequest).
constexpr uint32_t kLookForRepliesEvery = 8;

// QueueControl::finished as a single-threaded receiver stores it: its
// count of finished requests, shifted left, with the low bit set, and
// above it the end of the positions it has replied to. A thread-safe
// receiver never stores one (it marks slots kDone instead), so the 0 it was
// formatted with means "no count here", at every position.
uint64_t EncodeFinished(uint32_t count, uint32_t replied_end) {
  return uint64_t{replied_end} << 32 | (count << 1 | 1);
}

// Whether `finished` (as encoded) says the request at `pos` is finished:
// compared modulo 2^31, as the count has lost its top bit.
bool FinishedBefore(uint64_t finished, uint32_t pos) {
  const auto count = static_cast<uint32_t>(finished);
  return (count & 1) != 0 &&
         static_cast<int32_t>((pos << 1) - (count & ~1u)) < 0;
}

// Whether `finished` says that the request at `pos`, if finished, had no
// reply: it is at or after the replied-to end. (A position so old that the
// comparison wraps reads as "may have one": its slot is then read, as it
// always could be.)
bool NoReplyAt(uint64_t finished, uint32_t pos) {
  return (finished & 1) != 0 &&
         static_cast<int32_t>(pos - static_cast<uint32_t>(finished >> 32)) >= 0;
}

// One request queue in a region: its control line, then its slots.
struct QueueAt {
  QueueAt(void* region, uint32_t depth, uint32_t sender)
      : control(reinterpret_cast<QueueControl*>(
            Bytes(region) + layout::QueueOffset(depth, sender))),
        slots(reinterpret_cast<Slot*>(control + 1)) {}
  QueueControl* control;
  Slot* slots;
};

// A slot taken out of the queue, on the stack. Words, not a char array:
// the stack protector then leaves the poll loops alone, and 16-byte
// alignment (all a body's arguments and payload need) costs no stack
// realignment.
struct SlotCopy {
  alignas(16) uint64_t words[sizeof(Slot) / sizeof(uint64_t)];
  unsigned char* bytes() { return reinterpret_cast<unsigned char*>(words); }
};

// Copies a slot into `copy` for Deliver, which reads everything after the
// state word. The whole line, state word too: two aligned vector moves
// where the fields alone took a dozen instructions (nobody writes the state
// word meanwhile: the slot is this rank's until it says otherwise).
void CopyFields(const Slot& slot, SlotCopy& copy) {
  std::memcpy(copy.bytes(), reinterpret_cast<const unsigned char*>(&slot),
              sizeof(Slot));
}

// A handler returned holding a reserved reply. Out of line, with its
// string: one in PollRequests' own frame cost every poll a stack
// protector.
[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void ReplyLeftReserved(uint32_t source) {
  FatalError(absl::StrFormat(
      "PSHM network: a request handler from supernode peer %u returned with "
      "its reply reserved but neither committed nor cancelled",
      source));
}

// Pool sizes are whole cache lines.
uint64_t PoolBytes(const QueueConfig& config) {
  return config.memory & ~uint64_t{kCacheLine - 1};
}

}  // namespace

size_t AmNetwork::RegionBytes(const QueueConfig& config, uint32_t peers) {
  return layout::RegionBytes(peers, config.depth, PoolBytes(config));
}

void AmNetwork::FormatRegion(void* region, const QueueConfig& config,
                             uint32_t peers, uint32_t owner_rank) {
  const uint64_t pool_bytes = PoolBytes(config);
  for (uint32_t s = 0; s < peers; ++s) {
    const QueueAt queue(region, config.depth, s);
    new (queue.control) QueueControl{};
    queue.control->finished.store(0, std::memory_order_relaxed);
    Slot* slots = queue.slots;
    // State 0 is no kind of message: nothing published yet.
    for (uint32_t i = 0; i < layout::RingSlots(config.depth); ++i) {
      new (&slots[i]) Slot{};
      slots[i].state.store(0, std::memory_order_relaxed);
    }
  }
  RegionHeader* header = new (region) RegionHeader{};
  header->magic = layout::kMagic;
  header->version = layout::kVersion;
  header->peers = peers;
  header->depth = config.depth;
  header->owner_rank = owner_rank;
  header->pool_bytes = pool_bytes;
  std::atomic_thread_fence(std::memory_order_release);
}

AmNetwork::AmNetwork(Options options)
    : my_index_(options.my_index),
      peers_(static_cast<uint32_t>(options.regions.size())),
      dispatcher_(options.dispatcher),
      context_(options.context),
      other_poll_(options.other_poll),
      thread_safe_(options.thread_safe),
      wait_policy_(options.wait_policy != nullptr ? options.wait_policy
                                                  : &own_wait_policy_) {
  own_wait_policy_.set_always_yield(options.polite);
  if (peers_ == 0 || options.ranks.size() != peers_ || my_index_ >= peers_ ||
      dispatcher_ == nullptr) {
    FatalError(absl::StrFormat(
        "PSHM network: bad options (%u regions, %u ranks, index %u)", peers_,
        options.ranks.size(), my_index_));
  }
  for (uint32_t i = 0; i < peers_; ++i) {
    const RegionHeader& h = HeaderOf(options.regions[i]);
    if (h.magic != layout::kMagic || h.version != layout::kVersion ||
        h.peers != peers_ || h.owner_rank != options.ranks[i]) {
      FatalError(absl::StrFormat(
          "PSHM network: the shared region of rank %u is not a PSHM network "
          "of this job (magic %x, version %u, %u peers, owner %u; expected "
          "%u peers, owner %u)",
          options.ranks[i], h.magic, h.version, h.peers, h.owner_rank, peers_,
          options.ranks[i]));
    }
  }
  producers_ = std::make_unique<Producer[]>(peers_);
  consumers_ = std::make_unique<Consumer[]>(peers_);
  const RegionHeader& mine = HeaderOf(options.regions[my_index_]);
  for (uint32_t peer = 0; peer < peers_; ++peer) {
    // Requests to `peer`: my queue in its region; its replies' bodies in
    // its reply pool.
    const RegionHeader& theirs = HeaderOf(options.regions[peer]);
    Producer& p = producers_[peer];
    const QueueAt out(options.regions[peer], theirs.depth, my_index_);
    p.finished = &out.control->finished;
    p.slots = out.slots;
    p.reply_pool = Bytes(options.regions[peer]) +
                   layout::PoolOffset(peers_, theirs.depth, theirs.pool_bytes,
                                      Channel::kReply);
    p.source_rank = options.ranks[peer];
    p.depth = theirs.depth;
    p.mask = MaskFor(theirs.depth);
    // Requests from `peer`: its queue in my region; their bodies in its
    // request pool.
    Consumer& k = consumers_[peer];
    k.source_rank = options.ranks[peer];
    k.depth = mine.depth;
    k.mask = MaskFor(mine.depth);
    k.publish_every = (mine.depth + 3) / 4;
    const QueueAt in(options.regions[my_index_], mine.depth, peer);
    k.finished = &in.control->finished;
    k.slots = in.slots;
    k.source_pool = Bytes(options.regions[peer]) +
                    layout::PoolOffset(peers_, theirs.depth, theirs.pool_bytes,
                                       Channel::kRequest);
  }
  for (int ci = 0; ci < kChannels; ++ci) {
    const Channel c = static_cast<Channel>(ci);
    Pool& own = pool(c);
    own.base = Bytes(options.regions[my_index_]) +
               layout::PoolOffset(peers_, mine.depth, mine.pool_bytes, c);
    own.bytes = mine.pool_bytes;
  }
}

AmNetwork::~AmNetwork() = default;

void AmNetwork::LockPool(Pool& p) {
  if (!thread_safe_) return;
  // Held for a few stores, but its holder may lose its CPU meanwhile
  // (threads outnumbering CPUs): spin a moment, then yield to it.
  SpinThenYield wait;
  while (p.busy.exchange(true, std::memory_order_acquire)) {
    while (p.busy.load(std::memory_order_relaxed)) wait.Pause();
  }
}

void AmNetwork::UnlockPool(Pool& p) {
  if (thread_safe_) p.busy.store(false, std::memory_order_release);
}

void AmNetwork::Reclaim(Pool& p) {
  while (p.reclaim_pos != p.alloc_pos) {
    auto* h = reinterpret_cast<ChunkHeader*>(p.base + p.reclaim_pos % p.bytes);
    if (h->done.load(std::memory_order_acquire) == 0) break;
    p.reclaim_pos += h->bytes;
  }
  // Empty: start again at the beginning, so the largest chunk always fits.
  if (p.reclaim_pos == p.alloc_pos) p.reclaim_pos = p.alloc_pos = 0;
}

uint32_t AmNetwork::TryAllocChunk(Pool& p, size_t bytes) {
  LockPool(p);
  uint64_t offset = p.alloc_pos % p.bytes;
  uint64_t pad = offset + bytes > p.bytes ? p.bytes - offset : 0;
  if (p.alloc_pos + pad + bytes - p.reclaim_pos > p.bytes) {
    Reclaim(p);
    offset = p.alloc_pos % p.bytes;
    pad = offset + bytes > p.bytes ? p.bytes - offset : 0;
    if (p.alloc_pos + pad + bytes - p.reclaim_pos > p.bytes) {
      UnlockPool(p);
      return 0;
    }
  }
  if (pad != 0) {
    auto* filler = new (p.base + offset) ChunkHeader{};
    filler->bytes = static_cast<uint32_t>(pad);
    filler->done.store(1, std::memory_order_relaxed);
    offset = 0;
  }
  auto* chunk = new (p.base + offset) ChunkHeader{};
  chunk->bytes = static_cast<uint32_t>(bytes);
  chunk->done.store(0, std::memory_order_relaxed);
  p.alloc_pos += pad + bytes;
  UnlockPool(p);
  return static_cast<uint32_t>(offset) + 1;
}

void AmNetwork::TooLarge(size_t body_bytes) const {
  FatalError(absl::StrFormat(
      "PSHM network: a message body of %u bytes does not fit in a payload "
      "pool of %u bytes (the largest Medium payload is %u bytes with %u "
      "arguments)",
      body_bytes, pools_[0].bytes, kMaxMedium, kMaxArgs));
}

void AmNetwork::FreeChunk(Pool& p, uint32_t chunk_offset) {
  reinterpret_cast<ChunkHeader*>(p.base + (chunk_offset - 1))
      ->done.store(1, std::memory_order_release);
}

void AmNetwork::SecondReply(const ReplyTo& to) const {
  FatalError(absl::StrFormat(
      "PSHM network: a second reply to the request at position %u from "
      "supernode peer %u (a request has at most one reply)",
      to.position, to.dest));
}

void AmNetwork::Cancel(Reservation& r) {
  if (r.chunk_offset != 0) {
    FreeChunk(pool(r.reply_to != nullptr ? Channel::kReply : Channel::kRequest),
              r.chunk_offset);
  }
  if (r.reply_to != nullptr) {
    // Nothing was written that the requester looks at; the handler may
    // still reply, or the slot says "no reply" when it returns.
    r.reply_to->state = ReplyTo::State::kNone;
    return;
  }
  // The receiver takes positions in order: this one must still be
  // published, as nothing to deliver.
  Slot* slot = r.slot;
  slot->handler = 0;
  slot->category = static_cast<uint8_t>(r.category);
  slot->nargs = 0;
  slot->flags = layout::kCancelled;
  slot->payload_len = 0;
  slot->chunk_offset = 0;
  slot->state.store(SlotState(r.kind, r.position), std::memory_order_release);
}

void AmNetwork::WaitProgress(Channel channel, const Producer* skip_replies) {
  waits_.fetch_add(1, std::memory_order_relaxed);
  // The round counts this thread as waiting (PAR), with the runtime's
  // other waiting threads.
  WaitPolicy::Round round(*wait_policy_);
  int delivered;
  if (channel == Channel::kRequest) {
    delivered = PollRequests() + PollRepliesSkipping(skip_replies);
    if (other_poll_ != nullptr) delivered += other_poll_(context_);
  } else {
    delivered = PollReplies();
  }
  round.PauseIfIdle(delivered != 0);
}

bool AmNetwork::LockPoll(Channel channel) {
  if (!thread_safe_) return true;
  return !poll_locks_[static_cast<uint8_t>(channel)].busy.exchange(
      true, std::memory_order_acquire);
}

void AmNetwork::UnlockPoll(Channel channel) {
  if (thread_safe_) {
    poll_locks_[static_cast<uint8_t>(channel)].busy.store(
        false, std::memory_order_release);
  }
}

// A slot's fields after its state word, as Deliver reads them from a copy.
struct SlotFields {
  uint8_t handler, category, nargs, flags;
  uint32_t payload_len, chunk_offset;
};

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool AmNetwork::Deliver(
    unsigned char* copy, Channel channel, uint32_t source, uint32_t source_rank,
    unsigned char* source_pool, ReplyTo* reply) {
  SlotFields f;
  std::memcpy(&f, copy + offsetof(Slot, handler), sizeof(f));
  static_assert(offsetof(Slot, handler) + sizeof(SlotFields) ==
                layout::kSlotHeaderBytes);
  if ((f.flags & layout::kCancelled) != 0) return false;
  ChunkHeader* chunk =
      (f.flags & layout::kInChunk) != 0
          ? reinterpret_cast<ChunkHeader*>(source_pool + (f.chunk_offset - 1))
          : nullptr;
  unsigned char* body =
      chunk != nullptr
          ? reinterpret_cast<unsigned char*>(chunk) + sizeof(ChunkHeader)
          : copy + layout::kSlotHeaderBytes;
  const auto category = static_cast<Category>(f.category);
  Message m;
  m.source = source_rank;
  m.source_index = source;
  m.channel = channel;
  m.category = category;
  m.handler = f.handler;
  m.nargs = f.nargs;
  m.args =
      reinterpret_cast<const uint32_t*>(body + layout::ArgsOffset(category));
  m.payload_len = f.payload_len;
  m.reply = reply;
  if (category == Category::kMedium) {
    m.payload = body + layout::PayloadOffset(category, f.nargs);
  } else if (category == Category::kLong) {
    uint64_t dest;
    std::memcpy(&dest, body, sizeof(dest));
    m.payload = reinterpret_cast<void*>(static_cast<uintptr_t>(dest));
  } else {
    m.payload = nullptr;
    m.payload_len = 0;
  }
  dispatcher_(context_, m);
  if (chunk != nullptr) chunk->done.store(1, std::memory_order_release);
  return true;
}

// Every request taken so far is finished (a handler that polled took later
// ones inside this one, and they are done too): say so, after the replies'
// own stores. Not after every request: a sender waiting for slots reads
// this line, so a store after every request had to take the line back
// from the sender every time, a cross-CPU round trip per message that the
// receiver's next locked instruction (in the next handler, or the
// client's own code) waited for. The faster the sender, the more it waited
// and the more messages paid it (a flood of Shorts, whose sender is the
// faster, took back 2.6 slots per look against 5.8 for 8-byte Mediums in
// a run where it cost 1.5x as much). A quarter of the ring at a time, and
// at the end of each pass over the queue: the sender still hears of freed
// slots while most of the ring is left to run here. One-way floods cost
// 3-16% less than with a store per request (same-run measurements); half a
// ring at a time gained less. The store also says where this pass's replies
// are (Consumer::replied_end), so the sender frees the other slots without
// reading them (see RetireFinished and tests/benchmarks/README.md).
void AmNetwork::PublishFinished(Consumer& k) {
  // Positions wrap and are compared as signed distances: keep the replied-to
  // end within kRepliedEndLag of the head, or after 2^31 requests without a
  // reply it would read as ahead of them and every slot be read again.
  // Moving it up says nothing false: no request from it to the head had a
  // reply.
  if (static_cast<int32_t>(k.head - k.replied_end) > kRepliedEndLag) {
    k.replied_end = k.head - kRepliedEndLag;
  }
  k.finished->store(EncodeFinished(k.head, k.replied_end),
                    std::memory_order_release);
  k.published = k.head;
}

int AmNetwork::PollRequests() {
  int delivered = 0;
  for (uint32_t source = 0; source < peers_; ++source) {
    Consumer& k = consumers_[source];
    // At most one queue's worth from each source per poll: fair to the
    // others, and bounded even if the source keeps sending.
    for (uint32_t n = 0; n < k.depth; ++n) {
      // Take one request: copy the slot before running the handler (the
      // reply is written over it) and move on, so that a handler may poll,
      // re-entering this loop.
      if (!LockPoll(Channel::kRequest)) return delivered;
      uint32_t position = k.head;
      Slot* slot = &k.slots[position & k.mask];
      if (slot->state.load(std::memory_order_acquire) ==
          SlotState(SlotKind::kRequest, position)) {
        // A request in the ring (not a round trip's, in the last slot): the
        // sender may be ahead, so start reading the next lines while this
        // one's handler runs, instead of one cache miss after another.
        PrefetchForRead(&k.slots[(position + kReadAhead) & k.mask]);
      } else {
        // Or a request sent with nothing unfinished, in the last slot (see
        // SlotKind::kRequestInLastSlot).
        position += k.mask;
        slot = &k.slots[position & k.mask];
        if (slot->state.load(std::memory_order_acquire) !=
            SlotState(SlotKind::kRequestInLastSlot, position)) {
          UnlockPoll(Channel::kRequest);
          break;
        }
      }
      // The reply goes into this slot: start taking the line over from the
      // requester now, while the handler runs (a store would wait for it,
      // a cross-die round trip on some machines).
      PrefetchForWrite(slot);
      SlotCopy copy;
      CopyFields(*slot, copy);
      k.head = position + 1;
      ++k.running;
      UnlockPoll(Channel::kRequest);

      ReplyTo reply{slot, position, source, ReplyTo::State::kNone};
      if (Deliver(copy.bytes(), Channel::kRequest, source, k.source_rank,
                  k.source_pool, &reply)) {
        ++delivered;
      }
      if (ABSL_PREDICT_FALSE(reply.state == ReplyTo::State::kReserved)) {
        ReplyLeftReserved(source);
      }
      if (thread_safe_) {
        // Handlers end out of order here: say so in the slot.
        if (reply.state == ReplyTo::State::kNone) {
          slot->state.store(SlotState(SlotKind::kDone, position),
                            std::memory_order_release);
        }
      } else if (--k.running == 0 && k.head - k.published >= k.publish_every) {
        PublishFinished(k);
      }
    }
    // The end of this pass over the source's queue (nothing more there, or
    // a queue's worth taken): whatever is finished and not yet said so.
    if (!thread_safe_ && k.running == 0 && k.head != k.published) {
      PublishFinished(k);
    }
  }
  return delivered;
}

bool AmNetwork::TryClaimLastSlot(Producer& p, uint32_t tail,
                                 uint32_t* position) {
  // `retired` moves only under the reply poll lock: holding it, this
  // thread moves the tail a ring on and then `retired` up to the claimed
  // position. Other senders meanwhile see a full queue, briefly.
  if (!LockPoll(Channel::kReply)) return false;
  bool claimed = false;
  uint32_t expected = tail;
  if (p.retired.load(std::memory_order_relaxed) == tail &&
      p.tail.compare_exchange_strong(expected, tail + p.mask + 1,
                                     std::memory_order_relaxed)) {
    p.retired.store(tail + p.mask, std::memory_order_release);
    *position = tail + p.mask;
    claimed = true;
  }
  UnlockPoll(Channel::kReply);
  return claimed;
}

bool AmNetwork::FinishedThere(Producer& p, uint32_t pos) {
  if (FinishedBefore(p.known_finished, pos)) return true;
  p.known_finished = p.finished->load(std::memory_order_acquire);
  return FinishedBefore(p.known_finished, pos);
}

bool AmNetwork::ReplyAfter(const Producer& p, uint32_t from, uint32_t tail) {
  for (uint32_t pos = from; pos != tail; ++pos) {
    const uint32_t state =
        p.slots[pos & p.mask].state.load(std::memory_order_relaxed);
    if (state == SlotState(SlotKind::kReply, pos) ||
        state == SlotState(SlotKind::kDone, pos)) {
      return true;
    }
  }
  return false;
}

bool AmNetwork::RetireFinished(Producer& p) {
  if (!LockPoll(Channel::kReply)) return false;
  const uint32_t tail = p.tail.load(std::memory_order_acquire);
  const uint32_t start = p.retired.load(std::memory_order_relaxed);
  uint32_t pos = start;
  for (; pos != tail; ++pos) {
    const std::atomic<uint32_t>& state = p.slots[pos & p.mask].state;
    if (!thread_safe_) {
      // The count first: a slot is read only once the peer is done with
      // it, and only where the count leaves room for a reply (the one
      // still in its handler is the line the peer works on).
      if (!FinishedThere(p, pos) || (!NoReplyAt(p.known_finished, pos) &&
                                     state.load(std::memory_order_acquire) ==
                                         SlotState(SlotKind::kReply, pos))) {
        break;
      }
      continue;
    }
    if (state.load(std::memory_order_acquire) ==
        SlotState(SlotKind::kDone, pos)) {
      continue;
    }
    // Finished there, and (read after learning that) not a reply, which
    // only TakeReplies may run.
    if (!FinishedThere(p, pos) || state.load(std::memory_order_acquire) ==
                                      SlotState(SlotKind::kReply, pos)) {
      break;
    }
  }
  p.retired.store(pos, std::memory_order_release);
  UnlockPoll(Channel::kReply);
  return pos != start;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline int AmNetwork::TakeReplies(Producer& p,
                                                               uint32_t dest) {
  int delivered = 0;
  // In order, from the oldest unfinished request: a reply is run, a
  // request finished without one is retired, and the first still in its
  // handler stops the pass (so that replies run in the order they were
  // sent).
  for (uint32_t n = 0; n < p.depth; ++n) {
    if (!LockPoll(Channel::kReply)) return delivered;
    const uint32_t pos = p.retired.load(std::memory_order_relaxed);
    const uint32_t tail = p.tail.load(std::memory_order_acquire);
    if (pos == tail) {
      UnlockPoll(Channel::kReply);
      return delivered;
    }
    Slot* slot = &p.slots[pos & p.mask];
    uint32_t state = slot->state.load(std::memory_order_acquire);
    if (state != SlotState(SlotKind::kReply, pos) &&
        state != SlotState(SlotKind::kDone, pos)) {
      // Finished without a reply? Asked only when a reply to a later
      // request waits behind this one; otherwise this request is waited
      // for in its own slot (where its reply would appear), and a sender
      // that needs the slot asks through RetireFinished. (Reading the
      // receiver's count on every poll would move its line on every one
      // of the receiver's stores.)
      if (!ReplyAfter(p, pos + 1, tail) || !FinishedThere(p, pos)) {
        UnlockPoll(Channel::kReply);
        break;
      }
      state = slot->state.load(std::memory_order_acquire);
    }
    if (state != SlotState(SlotKind::kReply, pos)) {
      p.retired.store(pos + 1, std::memory_order_release);
      UnlockPoll(Channel::kReply);
      continue;
    }
    SlotCopy copy;
    CopyFields(*slot, copy);
    p.retired.store(pos + 1, std::memory_order_release);
    UnlockPoll(Channel::kReply);
    Deliver(copy.bytes(), Channel::kReply, dest, p.source_rank, p.reply_pool,
            nullptr);
    ++delivered;
  }
  if (thread_safe_) delivered += TakeLaterReplies(p, dest);
  return delivered;
}

int AmNetwork::TakeLaterReplies(Producer& p, uint32_t dest) {
  // With several threads polling there, a peer may reply to a later
  // request while an earlier one's handler still runs; its reply body may
  // then hold room in the peer's reply pool that the earlier handler is
  // waiting for. Run such replies now, and mark their slots finished for
  // the in-order pass.
  int delivered = 0;
  if (!LockPoll(Channel::kReply)) return 0;
  const uint32_t tail = p.tail.load(std::memory_order_acquire);
  for (uint32_t pos = p.retired.load(std::memory_order_relaxed) + 1;; ++pos) {
    // While the lock was let go for a handler, another thread's in-order
    // pass may have run replies from here on (leaving their slots saying
    // kReply): never look before `retired` again.
    const uint32_t retired = p.retired.load(std::memory_order_relaxed);
    if (static_cast<int32_t>(pos - retired) <= 0) pos = retired + 1;
    if (static_cast<int32_t>(tail - pos) <= 0) break;
    Slot* slot = &p.slots[pos & p.mask];
    if (slot->state.load(std::memory_order_acquire) !=
        SlotState(SlotKind::kReply, pos)) {
      continue;
    }
    SlotCopy copy;
    CopyFields(*slot, copy);
    slot->state.store(SlotState(SlotKind::kDone, pos),
                      std::memory_order_release);
    UnlockPoll(Channel::kReply);
    Deliver(copy.bytes(), Channel::kReply, dest, p.source_rank, p.reply_pool,
            nullptr);
    ++delivered;
    if (!LockPoll(Channel::kReply)) return delivered;
  }
  UnlockPoll(Channel::kReply);
  return delivered;
}

bool AmNetwork::LeavesSlotsAlone(const Producer& p, uint32_t round) const {
  return !thread_safe_ && round % kLookForRepliesEvery != 0 &&
         !FinishedBefore(p.known_finished,
                         p.retired.load(std::memory_order_relaxed));
}

int AmNetwork::PollRepliesSkipping(const Producer* skip) {
  int delivered = 0;
  for (uint32_t dest = 0; dest < peers_; ++dest) {
    Producer& p = producers_[dest];
    if (&p == skip) continue;
    // Nothing unfinished to this peer: nothing to read in its region.
    if (p.retired.load(std::memory_order_relaxed) ==
        p.tail.load(std::memory_order_relaxed)) {
      continue;
    }
    delivered += TakeReplies(p, dest);
  }
  return delivered;
}

int AmNetwork::PollReplies() { return PollRepliesSkipping(nullptr); }

int AmNetwork::Poll() {
  const int requests = PollRequests();
  return requests + PollReplies();
}

}  // namespace gexrt::pshm
