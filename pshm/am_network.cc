#include "pshm/am_network.h"

#include <new>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/fatal.h"

namespace gex::pshm {
namespace {

using layout::ChunkHeader;
using layout::QueueControl;
using layout::RegionHeader;
using layout::Slot;

unsigned char* Bytes(void* p) { return static_cast<unsigned char*>(p); }

const RegionHeader& HeaderOf(void* region) {
  return *static_cast<const RegionHeader*>(region);
}

uint32_t MaskFor(uint32_t depth) { return layout::RingSlots(depth) - 1; }

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
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
  for (int c = 0; c < kChannels; ++c) {
    for (uint32_t s = 0; s < peers; ++s) {
      unsigned char* q =
          Bytes(region) +
          layout::QueueOffset(peers, config.depth, static_cast<Channel>(c), s);
      new (q) QueueControl{};
      reinterpret_cast<QueueControl*>(q)->consumed.store(
          0, std::memory_order_relaxed);
      Slot* slots = reinterpret_cast<Slot*>(q + sizeof(QueueControl));
      for (uint32_t i = 0; i < layout::RingSlots(config.depth); ++i) {
        new (&slots[i]) Slot{};
        slots[i].seq.store(0, std::memory_order_relaxed);
      }
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
      thread_safe_(options.thread_safe),
      polite_(options.polite) {
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
  producers_ = std::make_unique<Producer[]>(size_t{kChannels} * peers_);
  consumers_ = std::make_unique<Consumer[]>(size_t{kChannels} * peers_);
  const RegionHeader& mine = HeaderOf(options.regions[my_index_]);
  for (int ci = 0; ci < kChannels; ++ci) {
    const Channel c = static_cast<Channel>(ci);
    for (uint32_t peer = 0; peer < peers_; ++peer) {
      // Sending to `peer`: my queue in its region.
      const RegionHeader& theirs = HeaderOf(options.regions[peer]);
      unsigned char* q =
          Bytes(options.regions[peer]) +
          layout::QueueOffset(peers_, theirs.depth, c, my_index_);
      Producer& p = producer(c, peer);
      p.consumed = &reinterpret_cast<QueueControl*>(q)->consumed;
      p.slots = reinterpret_cast<Slot*>(q + sizeof(QueueControl));
      p.depth = theirs.depth;
      p.mask = MaskFor(theirs.depth);
      // Receiving from `peer`: its queue in my region; its pool in its.
      unsigned char* mq = Bytes(options.regions[my_index_]) +
                          layout::QueueOffset(peers_, mine.depth, c, peer);
      Consumer& k = consumer(c, peer);
      k.source_rank = options.ranks[peer];
      k.depth = mine.depth;
      k.mask = MaskFor(mine.depth);
      k.consumed = &reinterpret_cast<QueueControl*>(mq)->consumed;
      k.slots = reinterpret_cast<Slot*>(mq + sizeof(QueueControl));
      k.head = k.consumed->load(std::memory_order_acquire);
      k.source_pool =
          Bytes(options.regions[peer]) +
          layout::PoolOffset(peers_, theirs.depth, theirs.pool_bytes, c);
    }
    Pool& own = pool(c);
    own.base = Bytes(options.regions[my_index_]) +
               layout::PoolOffset(peers_, mine.depth, mine.pool_bytes, c);
    own.bytes = mine.pool_bytes;
  }
}

AmNetwork::~AmNetwork() = default;

void AmNetwork::LockPool(Pool& p) {
  if (!thread_safe_) return;
  while (p.busy.exchange(true, std::memory_order_acquire)) {
    while (p.busy.load(std::memory_order_relaxed)) CpuRelax();
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

void AmNetwork::Cancel(Reservation& r) {
  Slot* slot = r.slot;
  slot->handler = 0;
  slot->category = static_cast<uint8_t>(r.category);
  slot->nargs = 0;
  slot->flags = layout::kCancelled;
  slot->payload_len = 0;
  slot->chunk_offset = 0;
  if (r.chunk_offset != 0) FreeChunk(pool(r.channel), r.chunk_offset);
  slot->seq.store(r.position + 1, std::memory_order_release);
}

void AmNetwork::WaitProgress(Channel channel) {
  waits_.fetch_add(1, std::memory_order_relaxed);
  const int delivered = channel == Channel::kRequest ? Poll() : PollReplies();
  if (delivered == 0) {
    if (polite_) {
      sched_yield();
    } else {
      CpuRelax();
    }
  }
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

int AmNetwork::PollChannel(Channel channel) {
  int delivered = 0;
  for (uint32_t source = 0; source < peers_; ++source) {
    Consumer& k = consumer(channel, source);
    // At most one queue's worth from each source per poll: fair to the
    // others, and bounded even if the source keeps sending.
    for (uint32_t n = 0; n < k.depth; ++n) {
      // Take one message: copy the slot and hand it back to the sender
      // before running the handler, so the queue keeps moving while the
      // handler runs (and a handler may poll, re-entering this loop).
      if (!LockPoll(channel)) return delivered;
      const uint32_t head = k.head;
      Slot* slot = &k.slots[head & k.mask];
      if (slot->seq.load(std::memory_order_acquire) != head + 1) {
        UnlockPoll(channel);
        break;
      }
      alignas(kCacheLine) unsigned char copy[sizeof(Slot)];
      std::memcpy(copy + sizeof(std::atomic<uint32_t>),
                  reinterpret_cast<unsigned char*>(slot) +
                      sizeof(std::atomic<uint32_t>),
                  sizeof(Slot) - sizeof(std::atomic<uint32_t>));
      k.head = head + 1;
      k.consumed->store(head + 1, std::memory_order_release);
      UnlockPoll(channel);

      const uint8_t handler = copy[4];
      const auto category = static_cast<Category>(copy[5]);
      const uint8_t nargs = copy[6];
      const uint8_t flags = copy[7];
      uint32_t payload_len, chunk_offset;
      std::memcpy(&payload_len, copy + 8, sizeof(payload_len));
      std::memcpy(&chunk_offset, copy + 12, sizeof(chunk_offset));
      ChunkHeader* chunk = (flags & layout::kInChunk) != 0
                               ? reinterpret_cast<ChunkHeader*>(
                                     k.source_pool + (chunk_offset - 1))
                               : nullptr;
      if ((flags & layout::kCancelled) == 0) {
        unsigned char* body =
            chunk != nullptr
                ? reinterpret_cast<unsigned char*>(chunk) + sizeof(ChunkHeader)
                : copy + layout::kSlotHeaderBytes;
        Message m;
        m.source = k.source_rank;
        m.source_index = source;
        m.channel = channel;
        m.category = category;
        m.handler = handler;
        m.nargs = nargs;
        m.args = reinterpret_cast<const uint32_t*>(
            body + layout::ArgsOffset(category));
        m.payload_len = payload_len;
        if (category == Category::kMedium) {
          m.payload = body + layout::PayloadOffset(category, nargs);
        } else if (category == Category::kLong) {
          uint64_t dest;
          std::memcpy(&dest, body, sizeof(dest));
          m.payload = reinterpret_cast<void*>(static_cast<uintptr_t>(dest));
        } else {
          m.payload = nullptr;
          m.payload_len = 0;
        }
        dispatcher_(context_, m);
        ++delivered;
      }
      if (chunk != nullptr) {
        chunk->done.store(1, std::memory_order_release);
      }
    }
  }
  return delivered;
}

int AmNetwork::Poll() {
  return PollChannel(Channel::kReply) + PollChannel(Channel::kRequest);
}

int AmNetwork::PollReplies() { return PollChannel(Channel::kReply); }

}  // namespace gex::pshm
