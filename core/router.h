// The AM router: the one place Active Messages are sent, for the C API,
// the RMA engine's AM path, the exit protocol, the barrier and the
// collectives.
//
// A Request to a supernode peer goes straight into the PSHM queue, inline
// (one table load decides); any other rank's goes to the conduit, out of
// line. A Reply goes back the way its Request came, which the token says
// (am::Token::route). Callers have checked their arguments (rank in the
// job, nargs, sizes against Runtime::max_medium / max_long, a Long's
// range inside the target's segment).
//
//   core::Request(rt, peer, am::Category::kShort, handler, args, 2,
//                 nullptr, 0, /*long_dest=*/0, nullptr, /*immediate=*/false);
//   // in the handler:
//   core::Reply(rt, *token, am::Category::kShort, handler, args, 1, ...);
#ifndef GEX_CORE_ROUTER_H_
#define GEX_CORE_ROUTER_H_

#include <cstddef>
#include <cstdint>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "am/token.h"
#include "am/vocabulary.h"
#include "core/conduit.h"
#include "core/runtime.h"
#include "pshm/am_network.h"

namespace gexrt::core {

// The conduit's halves, out of line (they are the slow, virtual part).
SendStatus ConduitRequest(Runtime& rt, Rank rank, const Outbound& m,
                          bool immediate);
SendStatus ConduitReply(Runtime& rt, am::Token& token, const Outbound& m,
                        bool immediate);

// Conduit::FlushSends, where this rank has conduit peers (a barrier's
// completion).
void FlushSends(Runtime& rt);

// Sends a Request to `rank`. A Medium's payload, or a Long's source, is
// [payload, +len); a Long's destination is `long_dest` in `rank`'s
// segment as `rank` sees it, and `long_local` is where that is mapped here
// when the caller already knows (null: the router looks it up). With
// `immediate`, kWouldBlock where the send would have to wait.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline SendStatus Request(
    Runtime& rt, Rank rank, am::Category category, uint8_t handler,
    const uint32_t* args, uint8_t nargs, const void* payload, size_t len,
    uint64_t long_dest, void* long_local, bool immediate) {
  const int32_t index = rt.supernode->LocalIndex(rank);
  if (ABSL_PREDICT_TRUE(index >= 0)) {
    if (category == am::Category::kLong && long_local == nullptr && len != 0) {
      long_local = rt.segments.Translate(rank, long_dest, len);
    }
    return rt.net->SendRequest(static_cast<uint32_t>(index), category, handler,
                               args, nargs, payload, len, long_local, long_dest,
                               immediate);
  }
  return ConduitRequest(
      rt, rank,
      Outbound{category, handler, nargs, args, payload, len, long_dest},
      immediate);
}

// Replies to `token`'s Request (from inside its handler) by the route it
// came; marks the token replied when sent.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline SendStatus Reply(
    Runtime& rt, am::Token& token, am::Category category, uint8_t handler,
    const uint32_t* args, uint8_t nargs, const void* payload, size_t len,
    uint64_t long_dest, void* long_local, bool immediate) {
  SendStatus status;
  if (ABSL_PREDICT_TRUE(token.route == am::Route::kShared)) {
    if (category == am::Category::kLong && long_local == nullptr && len != 0) {
      long_local = rt.segments.Translate(token.source, long_dest, len);
    }
    status = rt.net->SendReply(*static_cast<pshm::ReplyTo*>(token.reply),
                               category, handler, args, nargs, payload, len,
                               long_local, long_dest, immediate);
  } else {
    status = ConduitReply(
        rt, token,
        Outbound{category, handler, nargs, args, payload, len, long_dest},
        immediate);
  }
  if (status == SendStatus::kOk) token.replied = true;
  return status;
}

// Negotiated payload: a message between its Reserve and its Commit or
// Cancel, on whichever route its destination takes.
struct PreparedMessage {
  am::Route route = am::Route::kShared;
  am::Token* token = nullptr;  // A Reply's.
  pshm::Reservation shared;
  Reservation conduit;
  // Where the client writes the Medium payload (capacity: the reserved
  // size).
  void* payload() {
    return route == am::Route::kShared ? shared.payload : conduit.buffer;
  }
};

// Reserves a Request to `rank` (or, with `token`, the Reply to it) of
// `category` with `nargs` arguments and room for `max_payload` bytes of
// Medium payload (0 for a Long, whose payload goes to the segment).
SendStatus ReserveRequest(Runtime& rt, Rank rank, am::Category category,
                          uint8_t nargs, size_t max_payload, bool immediate,
                          PreparedMessage* m);
SendStatus ReserveReply(Runtime& rt, am::Token& token, am::Category category,
                        uint8_t nargs, size_t max_payload, bool immediate,
                        PreparedMessage* m);
// Sends it: `len` bytes of Medium payload at m->payload(), or, for a
// Long, `len` bytes at `long_src` to `long_dest` (as the target sees it;
// `long_local` its mapping here on the shared route).
void Commit(Runtime& rt, PreparedMessage& m, uint8_t handler,
            const uint32_t* args, size_t len, const void* long_src,
            uint64_t long_dest, void* long_local);
void Cancel(Runtime& rt, PreparedMessage& m);

}  // namespace gexrt::core

#endif  // GEX_CORE_ROUTER_H_
