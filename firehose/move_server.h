// The peer's side of a move (move.h): pins memory in this rank's local
// cache on behalf of requesters, and keeps those holds until the
// requester releases them by ticket.
//
// The conduit's move handler calls Serve and sends back the
// Registration's remote_key (or the error):
//
//   void OnMoveRequest(uint32_t from, const MoveRequest& req) {
//     absl::StatusOr<Registration> r = server.Serve(from, req);
//     SendMoveReply(from, req.ticket, r.ok() ? r->remote_key : 0, r.status());
//   }
//
// Serve never waits: with no room left in the local cache it answers
// Unavailable, and the requester's RemoteCache::AcquireReady tries again.
// Thread-safe.
#ifndef GEX_FIREHOSE_MOVE_SERVER_H_
#define GEX_FIREHOSE_MOVE_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "firehose/local_cache.h"
#include "firehose/move.h"

namespace gexrt::firehose {

class MoveServer {
 public:
  // `cache` must outlive the server.
  explicit MoveServer(LocalCache* cache) : cache_(cache) {}
  // Releases every hold still kept.
  ~MoveServer();
  MoveServer(const MoveServer&) = delete;
  MoveServer& operator=(const MoveServer&) = delete;

  // Releases the requester's pinnings named in request.releases, then,
  // when request.length > 0, pins [request.base, +request.length) for it
  // under request.ticket. A request with no length only releases (and
  // returns an empty Registration). Errors: the local cache's (Unavailable
  // when it has no room now), or InvalidArgument for a ticket already held.
  absl::StatusOr<Registration> Serve(uint32_t requester,
                                     const MoveRequest& request);

  // The requester is gone: releases everything held for it.
  void ReleaseAll(uint32_t requester);

  // Holds kept for `requester`.
  size_t held(uint32_t requester) const;
  // Releases naming a ticket not held (should stay 0).
  uint64_t unknown_releases() const;

 private:
  LocalCache* const cache_;
  mutable std::mutex mu_;  // Guards everything below.
  absl::flat_hash_map<std::pair<uint32_t, uint64_t>, LocalCache::Hold> holds_;
  uint64_t unknown_releases_ = 0;
};

}  // namespace gexrt::firehose

#endif  // GEX_FIREHOSE_MOVE_SERVER_H_
