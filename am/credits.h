// Per-peer Active Message flow control by credits, for any conduit whose
// network would otherwise buffer without bound (ofi, ucx, ibv).
//
// The scheme (the ibv conduit's, transport-neutral here):
//  - Every Request takes one credit for its destination; a rank with no
//    credit for a peer does not send it a Request (it polls until one comes
//    back, or an IMMEDIATE send reports would-block). So at most
//    `per_peer` Requests from one rank are ever unanswered at a peer, and a
//    receiver needs at most per_peer buffers per sender.
//  - Every Reply returns the credit of the Request it answers.
//  - A Request whose handler sends no Reply owes its credit back. The
//    receiver banks it; banked credits ride back on the next message to
//    that peer (a Request or a Reply carries TakeBanked()). When the bank
//    for a peer exceeds `slack`, the receiver sends an explicit credit
//    message (a hidden system Reply) right away, so a one-way flood keeps
//    flowing.
//
// The conduit owns the wire: where the credit count travels in its header,
// and the explicit credit message. This class only counts. Every method is
// thread-safe and lock-free (one atomic word per peer and direction), so
// PAR threads may send and poll at once.
#ifndef GEX_AM_CREDITS_H_
#define GEX_AM_CREDITS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"

namespace gexrt::am {

struct CreditConfig {
  // Credits each rank holds for each peer at start: at most this many
  // Requests to one peer unanswered (GASNET_AM_CREDITS_PP).
  uint32_t per_peer = 0;
  // Credits a rank may hold over all its peers at start
  // (GASNET_AM_CREDITS_TOTAL); per_peer is reduced to total / peers when
  // the product would exceed it, never below 1.
  uint32_t total = 0;
  // Credits banked per peer before an explicit credit message is sent
  // (GASNET_AM_CREDITS_SLACK); always below per_peer.
  uint32_t slack = 0;
};

// Reads GASNET_AM_CREDITS_PP, _TOTAL and _SLACK for a rank that talks to
// `peers` other ranks through the conduit, applies the defaults and the
// reductions above. `default_per_peer` is the conduit's default for
// GASNET_AM_CREDITS_PP (32 for ofi and ucx, 12 for ibv); it must be at
// least 1. An invalid value (not a number, zero credits) is an error naming
// the variable.
absl::StatusOr<CreditConfig> CreditConfigFromEnv(
    uint32_t peers, uint32_t default_per_peer = 32);

class Credits {
 public:
  // Counters for ranks [0, ranks); each starts with config.per_peer. A
  // config breaking its own rules (per_peer 0, slack not below per_peer) is
  // a fatal error, and so is a peer index outside [0, ranks) below.
  Credits(uint32_t ranks, const CreditConfig& config);

  const CreditConfig& config() const { return config_; }

  // Sending a Request to `peer`: takes one credit. false: none left (the
  // caller polls, which brings credits back through Grant, and retries).
  bool TryAcquire(uint32_t peer);

  // Sending a Request to `peer` from a conduit: takes a credit, or counts
  // the wait in `waits` and then, unless `immediate`, calls `wait_round`
  // (one round of the conduit's progress, which brings credits back) until
  // one is free. false: `immediate` and none was free; nothing taken.
  template <typename WaitRound>
  bool AcquireOrWait(uint32_t peer, bool immediate,
                     std::atomic<uint64_t>& waits, WaitRound&& wait_round) {
    if (TryAcquire(peer)) return true;
    waits.fetch_add(1, std::memory_order_relaxed);
    if (immediate) return false;
    do {
      wait_round();
    } while (!TryAcquire(peer));
    return true;
  }

  // `n` credits came back from `peer` (the count on a message from it).
  // More than were taken is a fatal error: a credit was counted twice.
  void Grant(uint32_t peer, uint32_t n);

  // A Request from `peer` was handled and no Reply went back: banks its
  // credit. true when the bank now exceeds the slack: the caller must send
  // an explicit credit message carrying TakeBanked(peer) now. (Another
  // thread may have taken the bank meanwhile; a zero count need not be
  // sent.) More than per_peer banked is a fatal error.
  bool Bank(uint32_t peer);

  // The banked credits for `peer`, to carry on a message to it now; the
  // bank is emptied.
  uint32_t TakeBanked(uint32_t peer);

  // For tests and statistics: credits held for `peer`, and banked for it.
  uint32_t Available(uint32_t peer) const;
  uint32_t Banked(uint32_t peer) const;
  // Bytes this object holds (one cache line per rank), for a conduit's
  // account of its per-peer memory in its statistics line.
  size_t MemoryBytes() const { return sizeof(*this) + sizeof(Peer) * ranks_; }

 private:
  struct alignas(64) Peer {
    std::atomic<uint32_t> available{0};
    std::atomic<uint32_t> banked{0};
  };
  CreditConfig config_;
  uint32_t ranks_;
  std::unique_ptr<Peer[]> peers_;
};

}  // namespace gexrt::am

#endif  // GEX_AM_CREDITS_H_
