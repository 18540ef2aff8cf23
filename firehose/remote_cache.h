// The remote half of firehose: for each peer, which regions of its memory
// this rank has had pinned there, and their remote keys, so that RDMA to
// or from a peer's memory outside its pre-pinned segment asks the peer to
// pin only on a miss.
//
// Regions are bucket-aligned as in the local cache (local_cache.h), with
// the same reference counts and least-recently-used victims, but per peer
// and with per-peer limits: at most max_bytes_per_peer / max_regions_per_
// peer pinned at each peer on this rank's behalf, at most the victim
// bounds of them unreferenced. Pinning at a peer is a move (move.h): a
// miss creates the region in the pending state and sends a MoveRequest
// through the conduit's MoveSender; the conduit calls CompleteMove when
// the answer comes. Victims evicted to make room ride on the next move to
// that peer as releases.
//
// A hold on a pending region is valid but not yet usable: the caller polls
// until hold.state() leaves kPending. AcquireReady wraps the whole loop:
//
//   absl::StatusOr<RemoteCache::Hold> hold = remote.AcquireReady(
//       peer, raddr, len, [&] { conduit.Poll(); });
//   if (!hold.ok()) return hold.status();
//   PostRdmaRead(..., raddr, hold->remote_key());
//   ...                    // on completion:
//   remote.Release(*hold);
//
// The per-peer limits must fit in what each peer's local cache can pin for
// this rank (the settings give each of N-1 peers 1/(N-1) of the peer's
// GASNET_FIREHOSE_M). A peer with no room answers Unavailable; this rank
// then gives back every victim it has there (on the next move) and asks
// again, so the peer's room comes back as this rank's holds end.
//
// Thread-safe. The hit path (a ready region covers the request) takes the
// lock, looks up and counts, and never allocates.
#ifndef GEX_FIREHOSE_REMOTE_CACHE_H_
#define GEX_FIREHOSE_REMOTE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "firehose/internal/region_table.h"
#include "firehose/move.h"

namespace gexrt::firehose {

struct RemoteLimits {
  // As in LocalLimits; must match the peers' local caches.
  size_t bucket_size = 4096;
  size_t max_region_size = 128 << 10;
  // What this rank may have pinned at any one peer, in use or victim.
  size_t max_bytes_per_peer = 0;
  size_t max_regions_per_peer = 0;
  // The unreferenced part of that, per peer.
  size_t max_victim_bytes_per_peer = 0;
  size_t max_victim_regions_per_peer = 0;
  double table_scale = 1.0;
  bool verbose = false;
};

// InvalidArgument naming the first field that breaks the rules.
absl::Status ValidateRemoteLimits(const RemoteLimits& limits);

class RemoteCache {
 public:
  using State = internal::RegionState;

  class Hold {
   public:
    Hold() = default;
    bool valid() const { return region_ != nullptr; }
    uint32_t peer() const { return peer_; }
    // kPending until the move's answer; then kReady or kFailed for good.
    State state() const {
      return region_->state.load(std::memory_order_acquire);
    }
    bool ready() const { return state() == State::kReady; }
    // When ready: the pinned range at the peer and its remote key.
    const Registration& registration() const { return region_->registration; }
    uint64_t remote_key() const { return region_->registration.remote_key; }
    // When failed: why.
    const absl::Status& failure() const { return region_->failure; }

   private:
    friend class RemoteCache;
    Hold(internal::Region* region, uint32_t peer)
        : region_(region), peer_(peer) {}
    internal::Region* region_ = nullptr;
    uint32_t peer_ = 0;
  };

  struct Stats {
    uint64_t hits = 0;  // Pending regions joined count as hits.
    uint64_t misses = 0;
    uint64_t moves = 0;
    uint64_t failed_moves = 0;
    uint64_t released = 0;     // Pinnings given back to peers.
    uint64_t unavailable = 0;  // Acquire calls told to wait.
    size_t regions = 0;        // Over all peers.
    size_t bytes = 0;
    size_t victim_regions = 0;
  };

  // Peers are numbered [0, peers). `sender` must outlive the cache.
  static absl::StatusOr<std::unique_ptr<RemoteCache>> Create(
      const RemoteLimits& limits, uint32_t peers, MoveSender* sender);
  // Unpins nothing (the peers own their pinnings; a conduit tearing down
  // sends TakeReleases first if the peers outlive it). Every move sent
  // must have been answered.
  ~RemoteCache();
  RemoteCache(const RemoteCache&) = delete;
  RemoteCache& operator=(const RemoteCache&) = delete;

  // A hold on a region of `peer`'s memory covering [addr, addr + length);
  // on a miss, sends a move and returns a pending hold. Errors:
  //  - Unavailable: no room at that peer until holds are released.
  //  - InvalidArgument: bad peer, length 0, or wider than one region.
  //  - ResourceExhausted: larger than the per-peer limits could ever allow.
  absl::StatusOr<Hold> Acquire(uint32_t peer, uintptr_t addr, size_t length);

  // Acquire, then polls until the hold is ready. A move that failed with
  // Unavailable (the peer had no room) is retried; any other failure is
  // returned (and the hold released).
  absl::StatusOr<Hold> AcquireReady(uint32_t peer, uintptr_t addr,
                                    size_t length,
                                    absl::FunctionRef<void()> poll);

  // Ends a hold, ready, pending or failed.
  void Release(Hold hold);

  // The answer to the move `ticket` sent to `peer`: the remote key, or why
  // the peer could not pin. NotFound for a ticket with no move pending.
  absl::Status CompleteMove(uint32_t peer, uint64_t ticket,
                            absl::StatusOr<uint64_t> remote_key);

  // Pinnings at `peer` given up since the last move to it, for a conduit
  // that wants to return them without waiting for the next move (at exit,
  // say): send them as a MoveRequest with no ticket.
  std::vector<uint64_t> TakeReleases(uint32_t peer);

  // As LocalCache::Acquirable.
  size_t Acquirable(uintptr_t addr, size_t length) const;

  Stats stats() const;
  const RemoteLimits& limits() const { return limits_; }

 private:
  struct Peer;
  RemoteCache(const RemoteLimits& limits, uint32_t peers, MoveSender* sender);

  Peer& PeerLocked(uint32_t peer);
  // Forgets a ready region, owing the peer its release.
  void DropLocked(Peer& peer, internal::Region* region);
  // An unreferenced ready region: keep it as a victim, or drop it.
  void RetireLocked(Peer& peer, internal::Region* region);

  const RemoteLimits limits_;
  const uint32_t peers_;
  MoveSender* const sender_;
  mutable std::mutex mu_;  // Guards everything below.
  std::vector<std::unique_ptr<Peer>> peer_;
  uint64_t next_ticket_ = 1;
  Stats stats_;
  std::vector<internal::Region*> overlap_;
};

}  // namespace gexrt::firehose

#endif  // GEX_FIREHOSE_REMOTE_CACHE_H_
