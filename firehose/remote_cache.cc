#include "firehose/remote_cache.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"

namespace gexrt::firehose {

struct RemoteCache::Peer {
  Peer(size_t bucket_size, size_t reserve) : table(bucket_size, reserve) {}
  internal::RegionTable table;
  // Regions whose move has not been answered, by ticket.
  absl::flat_hash_map<uint64_t, internal::Region*> pending;
  // Tickets to give back on the next move.
  std::vector<uint64_t> releases;
};

absl::Status ValidateRemoteLimits(const RemoteLimits& limits) {
  return internal::ValidateGeometry(limits.bucket_size, limits.max_region_size,
                                    limits.table_scale);
}

absl::StatusOr<std::unique_ptr<RemoteCache>> RemoteCache::Create(
    const RemoteLimits& limits, uint32_t peers, MoveSender* sender) {
  if (absl::Status s = ValidateRemoteLimits(limits); !s.ok()) return s;
  if (sender == nullptr) {
    return absl::InvalidArgumentError("firehose: no move sender");
  }
  return std::unique_ptr<RemoteCache>(new RemoteCache(limits, peers, sender));
}

RemoteCache::RemoteCache(const RemoteLimits& limits, uint32_t peers,
                         MoveSender* sender)
    : limits_(limits), peers_(peers), sender_(sender), peer_(peers) {
  if (limits_.verbose) {
    internal::VerboseLine(absl::StrFormat(
        "remote cache for %d peers: at most %d bytes in %d regions "
        "pinned at each, %d bytes in %d regions of them as victims",
        peers_, limits_.max_bytes_per_peer, limits_.max_regions_per_peer,
        limits_.max_victim_bytes_per_peer,
        limits_.max_victim_regions_per_peer));
  }
}

RemoteCache::~RemoteCache() {
  if (limits_.verbose) {
    std::lock_guard<std::mutex> lock(mu_);
    internal::VerboseLine(absl::StrFormat(
        "remote cache: %d hits, %d misses, %d moves (%d failed), "
        "%d pinnings released, %d waits",
        stats_.hits, stats_.misses, stats_.moves, stats_.failed_moves,
        stats_.released, stats_.unavailable));
  }
}

RemoteCache::Peer& RemoteCache::PeerLocked(uint32_t peer) {
  std::unique_ptr<Peer>& p = peer_[peer];
  if (p == nullptr) {
    p = std::make_unique<Peer>(
        limits_.bucket_size,
        internal::ReserveBuckets(limits_.max_bytes_per_peer,
                                 limits_.bucket_size, limits_.table_scale,
                                 size_t{1} << 10));
  }
  return *p;
}

absl::StatusOr<RemoteCache::Hold> RemoteCache::Acquire(uint32_t peer,
                                                       uintptr_t addr,
                                                       size_t length) {
  if (peer >= peers_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "firehose: peer %d out of range (%d peers)", peer, peers_));
  }
  uintptr_t lo;
  uintptr_t hi;
  if (absl::Status s = internal::BucketRange(addr, length, limits_.bucket_size,
                                             limits_.max_region_size, &lo, &hi);
      !s.ok()) {
    return s;
  }

  MoveRequest request;
  internal::Region* region;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Peer& p = PeerLocked(peer);
    internal::RegionTable& table = p.table;
    // The hit path: a lookup and a count, no allocation. A pending region
    // is joined: its move is already on the way.
    if (internal::Region* found = table.FindCovering(lo, hi)) {
      if (found->victim) table.RemoveVictim(found);
      ++found->refs;
      ++stats_.hits;
      return Hold(found, peer);
    }

    ++stats_.misses;
    if (hi - lo > limits_.max_bytes_per_peer ||
        limits_.max_regions_per_peer == 0) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "firehose: range [0x%x, +%d) at peer %d needs %d pinned bytes; the "
          "limits allow %d bytes in %d regions per peer (GASNET_FIREHOSE_M "
          "and GASNET_FIREHOSE_R, divided among the peers)",
          addr, length, peer, hi - lo, limits_.max_bytes_per_peer,
          limits_.max_regions_per_peer));
    }

    // Take in the victims the request overlaps, as far as one region can.
    const internal::MissPlan plan = internal::PlanMiss(
        table, lo, hi, limits_.max_bytes_per_peer, limits_.max_regions_per_peer,
        limits_.max_region_size, &overlap_);
    const uintptr_t new_lo = plan.lo;
    const size_t need = plan.hi - plan.lo;

    if (!plan.fits) {
      ++stats_.unavailable;
      return absl::UnavailableError(absl::StrFormat(
          "firehose: no room to pin [0x%x, +%d) at peer %d: %d bytes in %d "
          "regions there are held by operations in flight (limits: %d bytes, "
          "%d regions per peer); poll and retry",
          new_lo, need, peer, plan.held_bytes, plan.held_regions,
          limits_.max_bytes_per_peer, limits_.max_regions_per_peer));
    }
    for (internal::Region* other : overlap_) {
      if (other->victim) DropLocked(p, other);
    }
    while (table.bytes() + need > limits_.max_bytes_per_peer ||
           table.regions() + 1 > limits_.max_regions_per_peer) {
      DropLocked(p, table.OldestVictim());
    }

    region = table.Add(new_lo, need);
    region->state.store(internal::RegionState::kPending,
                        std::memory_order_relaxed);
    region->ticket = next_ticket_++;
    region->refs = 1;
    p.pending.emplace(region->ticket, region);
    ++stats_.moves;
    request.ticket = region->ticket;
    request.base = new_lo;
    request.length = need;
    request.releases = std::move(p.releases);
    p.releases.clear();
  }
  // Outside the lock: the conduit may poll, and its handlers may call
  // CompleteMove (even for this move) before SendMove returns.
  sender_->SendMove(peer, std::move(request));
  return Hold(region, peer);
}

absl::StatusOr<RemoteCache::Hold> RemoteCache::AcquireReady(
    uint32_t peer, uintptr_t addr, size_t length,
    absl::FunctionRef<void()> poll) {
  while (true) {
    absl::StatusOr<Hold> hold = Acquire(peer, addr, length);
    if (!hold.ok()) {
      if (!absl::IsUnavailable(hold.status())) return hold.status();
      poll();
      continue;
    }
    while (hold->state() == State::kPending) poll();
    if (hold->ready()) return hold;
    absl::Status failure = hold->failure();
    Release(*hold);
    if (!absl::IsUnavailable(failure)) return failure;
    poll();
  }
}

void RemoteCache::Release(Hold hold) {
  internal::Region* region = hold.region_;
  std::lock_guard<std::mutex> lock(mu_);
  Peer& p = PeerLocked(hold.peer_);
  if (--region->refs > 0) return;
  switch (region->state.load(std::memory_order_relaxed)) {
    case State::kPending:
      return;  // CompleteMove decides.
    case State::kFailed:
      p.table.Delete(region);
      return;
    case State::kReady:
      RetireLocked(p, region);
      return;
  }
}

absl::Status RemoteCache::CompleteMove(uint32_t peer, uint64_t ticket,
                                       absl::StatusOr<uint64_t> remote_key) {
  if (peer >= peers_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "firehose: peer %d out of range (%d peers)", peer, peers_));
  }
  std::lock_guard<std::mutex> lock(mu_);
  Peer& p = PeerLocked(peer);
  auto it = p.pending.find(ticket);
  if (it == p.pending.end()) {
    return absl::NotFoundError(absl::StrFormat(
        "firehose: no move %d pending to peer %d", ticket, peer));
  }
  internal::Region* region = it->second;
  p.pending.erase(it);
  if (remote_key.ok()) {
    region->registration.base = region->base;
    region->registration.length = region->length;
    region->registration.remote_key = *remote_key;
    region->state.store(State::kReady, std::memory_order_release);
    if (region->refs == 0) RetireLocked(p, region);
  } else {
    ++stats_.failed_moves;
    region->failure = absl::Status(
        remote_key.status().code(),
        absl::StrFormat("firehose: peer %d could not pin [0x%x, +%d): %s", peer,
                        region->base, region->length,
                        remote_key.status().message()));
    region->state.store(State::kFailed, std::memory_order_release);
    // Nothing is pinned there: no release is owed, and no lookup may find
    // it again.
    p.table.Detach(region);
    if (region->refs == 0) p.table.Delete(region);
    if (absl::IsUnavailable(remote_key.status())) {
      // The peer is full. Its regions can be larger than what this rank
      // asked for (a request may hit a bigger region there), so staying
      // within our own limit does not guarantee room: give back every
      // victim there with the next move, or a retry could meet the same
      // answer for ever.
      while (internal::Region* victim = p.table.OldestVictim()) {
        DropLocked(p, victim);
      }
    }
  }
  return absl::OkStatus();
}

std::vector<uint64_t> RemoteCache::TakeReleases(uint32_t peer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (peer >= peers_) return {};
  std::vector<uint64_t> releases = std::move(PeerLocked(peer).releases);
  PeerLocked(peer).releases.clear();
  return releases;
}

size_t RemoteCache::Acquirable(uintptr_t addr, size_t length) const {
  const uintptr_t lo = addr & ~(limits_.bucket_size - 1);
  return std::min<size_t>(length, limits_.max_region_size - (addr - lo));
}

RemoteCache::Stats RemoteCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats stats = stats_;
  for (const std::unique_ptr<Peer>& p : peer_) {
    if (p == nullptr) continue;
    stats.regions += p->table.regions();
    stats.bytes += p->table.bytes();
    stats.victim_regions += p->table.victims();
  }
  return stats;
}

void RemoteCache::DropLocked(Peer& peer, internal::Region* region) {
  peer.releases.push_back(region->ticket);
  ++stats_.released;
  peer.table.Delete(region);
}

void RemoteCache::RetireLocked(Peer& peer, internal::Region* region) {
  internal::RegionTable& table = peer.table;
  if (!table.FullyOwned(region) ||
      region->length > limits_.max_victim_bytes_per_peer ||
      limits_.max_victim_regions_per_peer == 0) {
    DropLocked(peer, region);
    return;
  }
  table.MakeVictim(region);
  while (table.victim_bytes() > limits_.max_victim_bytes_per_peer ||
         table.victims() > limits_.max_victim_regions_per_peer) {
    DropLocked(peer, table.OldestVictim());
  }
}

}  // namespace gexrt::firehose
