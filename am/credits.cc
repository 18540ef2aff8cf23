#include "am/credits.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "base/env/settings.h"
#include "base/fatal.h"

namespace gexrt::am {
namespace {

constexpr char kPerPeerVar[] = "GASNET_AM_CREDITS_PP";
constexpr char kTotalVar[] = "GASNET_AM_CREDITS_TOTAL";
constexpr char kSlackVar[] = "GASNET_AM_CREDITS_SLACK";

constexpr int64_t kDefaultTotalCap = 256;
constexpr int64_t kDefaultSlack = 1;

// Counters are 32 bits; keeping every setting below 2^31 leaves room for
// `available + n` in Grant's check, and for any header field a conduit
// packs a count into, without overflow.
constexpr int64_t kMaxCredits = std::numeric_limits<int32_t>::max();

// Out of line so the hot paths stay small: the range check is one
// predictable branch.
[[noreturn, gnu::cold, gnu::noinline]] void PeerOutOfRange(uint32_t peer,
                                                           uint32_t ranks) {
  FatalErrorF("AM credits: peer %u is out of range [0, %u)", peer, ranks);
}

}  // namespace

absl::StatusOr<CreditConfig> CreditConfigFromEnv(uint32_t peers,
                                                 uint32_t default_per_peer) {
  if (default_per_peer < 1 || default_per_peer > kMaxCredits) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "AM credits: a default of %u credits per peer is outside [1, %d]",
        default_per_peer, kMaxCredits));
  }
  absl::StatusOr<int64_t> per_peer =
      env::TryGetInt(kPerPeerVar, default_per_peer, 1, kMaxCredits);
  if (!per_peer.ok()) return per_peer.status();

  // The default follows GASNet's MIN(256, peers * PP), but at least one
  // credit per peer: a peer with none could never be sent a Request.
  const int64_t default_total = std::max<int64_t>(
      peers, std::min<int64_t>(kDefaultTotalCap, int64_t{peers} * *per_peer));
  absl::StatusOr<int64_t> total =
      env::TryGetInt(kTotalVar, default_total, 1, kMaxCredits);
  if (!total.ok()) return total.status();

  absl::StatusOr<int64_t> slack =
      env::TryGetInt(kSlackVar, kDefaultSlack, 0, kMaxCredits);
  if (!slack.ok()) return slack.status();

  CreditConfig config;
  config.total = static_cast<uint32_t>(*total);
  if (config.total < peers) {
    // A set value too small to give every peer one credit. Raising it keeps
    // per_peer * peers <= total, which a conduit sizing its receive buffers
    // from `total` relies on.
    if (!env::Quiet()) {
      WarningF("%s=%u is below the %u peers; using %u (one credit per peer)",
               kTotalVar, config.total, peers, peers);
    }
    config.total = peers;
  }
  config.per_peer = static_cast<uint32_t>(*per_peer);
  if (uint64_t{config.per_peer} * peers > config.total) {
    config.per_peer = std::max<uint32_t>(1, config.total / peers);
  }
  // Slack must stay below per_peer: a receiver sitting on all of a
  // sender's credits, waiting for a message to carry them, would wait for
  // ever on a sender that has nothing left to send with.
  config.slack = static_cast<uint32_t>(
      std::min<int64_t>(*slack, int64_t{config.per_peer} - 1));
  return config;
}

Credits::Credits(uint32_t ranks, const CreditConfig& config)
    : config_(config), ranks_(ranks), peers_(new Peer[ranks]) {
  if (config.per_peer == 0 || config.slack >= config.per_peer) {
    FatalErrorF(
        "AM credits: per_peer %u with slack %u (per_peer must be at least 1 "
        "and slack below it)",
        config.per_peer, config.slack);
  }
  for (uint32_t i = 0; i < ranks; ++i) {
    peers_[i].available.store(config.per_peer, std::memory_order_relaxed);
  }
}

// Memory order: a successful TryAcquire is an acquire and Grant a release,
// so a thread that takes a credit sees everything the thread that returned
// it did before (for a conduit: finishing with the Reply that carried it).
// The bank's counts order nothing themselves; acq_rel there costs nothing
// over relaxed on x86 and keeps the two words alike.

bool Credits::TryAcquire(uint32_t peer) {
  if (peer >= ranks_) [[unlikely]] {
    PeerOutOfRange(peer, ranks_);
  }
  std::atomic<uint32_t>& available = peers_[peer].available;
  // A compare-exchange loop rather than fetch_sub and undo on failure: the
  // undo would leave the word briefly below zero, and a Grant or another
  // TryAcquire in that window would see a count that is not real (and a
  // thread could fail to take a credit that was there).
  uint32_t current = available.load(std::memory_order_relaxed);
  do {
    if (current == 0) return false;
  } while (!available.compare_exchange_weak(current, current - 1,
                                            std::memory_order_acquire,
                                            std::memory_order_relaxed));
  return true;
}

void Credits::Grant(uint32_t peer, uint32_t n) {
  if (peer >= ranks_) [[unlikely]] {
    PeerOutOfRange(peer, ranks_);
  }
  const uint32_t before =
      peers_[peer].available.fetch_add(n, std::memory_order_release);
  // Credits only come back after they were taken, so more than per_peer
  // means one was counted twice (by this rank or on the wire). Caught here
  // it is a message; left alone it would break the buffering bound.
  if (uint64_t{before} + n > config_.per_peer) [[unlikely]] {
    FatalErrorF(
        "AM credits: %u credits came back from peer %u, which held %u of %u", n,
        peer, before, config_.per_peer);
  }
}

bool Credits::Bank(uint32_t peer) {
  if (peer >= ranks_) [[unlikely]] {
    PeerOutOfRange(peer, ranks_);
  }
  const uint32_t now =
      peers_[peer].banked.fetch_add(1, std::memory_order_acq_rel) + 1;
  // The peer cannot have more Requests unanswered here than it has credits.
  if (now > config_.per_peer) [[unlikely]] {
    FatalErrorF("AM credits: %u credits banked for peer %u, above per_peer %u",
                now, peer, config_.per_peer);
  }
  return now > config_.slack;
}

uint32_t Credits::TakeBanked(uint32_t peer) {
  if (peer >= ranks_) [[unlikely]] {
    PeerOutOfRange(peer, ranks_);
  }
  return peers_[peer].banked.exchange(0, std::memory_order_acq_rel);
}

uint32_t Credits::Available(uint32_t peer) const {
  if (peer >= ranks_) [[unlikely]] {
    PeerOutOfRange(peer, ranks_);
  }
  return peers_[peer].available.load(std::memory_order_relaxed);
}

uint32_t Credits::Banked(uint32_t peer) const {
  if (peer >= ranks_) [[unlikely]] {
    PeerOutOfRange(peer, ranks_);
  }
  return peers_[peer].banked.load(std::memory_order_relaxed);
}

}  // namespace gexrt::am
