// The move protocol's vocabulary: how one rank asks a peer to pin memory
// for it, and to unpin what it no longer needs.
//
// Firehose decides when a move is needed and what it carries; the conduit
// carries it (an Active Message and its reply, typically) and hands the
// answer back:
//
//   requester                                 peer
//   RemoteCache::Acquire misses ──SendMove──▶ MoveServer::Serve
//                                             (unpins `releases`, pins
//                                              [base, base + length))
//   RemoteCache::CompleteMove ◀──reply────── the Registration's remote_key
//                                             (or the failure)
//
// Tickets name pinnings. A requester gives each move a ticket unique
// among its moves, and later releases the pinning by that ticket, so moves
// may arrive in any order. A pinning is released only after its move's
// answer came back, so a release never overtakes its pin.
#ifndef GEX_FIREHOSE_MOVE_H_
#define GEX_FIREHOSE_MOVE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gexrt::firehose {

struct MoveRequest {
  // Names the new pinning. 0 for a request that only releases.
  uint64_t ticket = 0;
  // The peer's memory to pin (bucket-aligned); length 0 pins nothing.
  uintptr_t base = 0;
  size_t length = 0;
  // Earlier pinnings, by ticket, that the requester gives up. The peer
  // releases them before pinning the new range.
  std::vector<uint64_t> releases;
};

// Implemented by the conduit.
class MoveSender {
 public:
  virtual ~MoveSender() = default;

  // Sends `request` to `peer`. For a request with a ticket, the conduit
  // must later call RemoteCache::CompleteMove(peer, ticket, ...) exactly
  // once, with the peer's remote key or with why it failed (including a
  // failure to send). Called without any firehose lock held, from the
  // thread that acquired: it may poll the network and run handlers.
  virtual void SendMove(uint32_t peer, MoveRequest request) = 0;
};

}  // namespace gexrt::firehose

#endif  // GEX_FIREHOSE_MOVE_H_
