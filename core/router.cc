#include "core/router.h"

#include <cstring>

#include "base/fatal.h"

namespace gexrt::core {

namespace {

// A rank outside the supernode must be in the job and served by a conduit
// that has peers (never on smp).
void CheckConduitPeer(const Runtime& rt, Rank rank) {
  if (ABSL_PREDICT_FALSE(rank >= rt.size || !rt.conduit_has_peers)) {
    FatalErrorF("core: rank %u cannot be reached from rank %u (job of %u)",
                rank, rt.rank, rt.size);
  }
}

}  // namespace

void FlushSends(Runtime& rt) {
  if (rt.conduit_has_peers) rt.conduit->FlushSends();
}

SendStatus ConduitRequest(Runtime& rt, Rank rank, const Outbound& m,
                          bool immediate) {
  CheckConduitPeer(rt, rank);
  return rt.conduit->Request(rank, m, immediate);
}

SendStatus ConduitReply(Runtime& rt, am::Token& token, const Outbound& m,
                        bool immediate) {
  return rt.conduit->Reply(token.reply, m, immediate);
}

SendStatus ReserveRequest(Runtime& rt, Rank rank, am::Category category,
                          uint8_t nargs, size_t max_payload, bool immediate,
                          PreparedMessage* m) {
  m->token = nullptr;
  const int32_t index = rt.supernode->LocalIndex(rank);
  if (index >= 0) {
    m->route = am::Route::kShared;
    return rt.net->ReserveRequest(static_cast<uint32_t>(index), category, nargs,
                                  max_payload, immediate, &m->shared);
  }
  CheckConduitPeer(rt, rank);
  m->route = am::Route::kConduit;
  m->conduit = Reservation{};
  m->conduit.is_request = true;
  m->conduit.dest = rank;
  m->conduit.category = category;
  m->conduit.nargs = nargs;
  return rt.conduit->Reserve(m->conduit, max_payload, immediate);
}

SendStatus ReserveReply(Runtime& rt, am::Token& token, am::Category category,
                        uint8_t nargs, size_t max_payload, bool immediate,
                        PreparedMessage* m) {
  m->token = &token;
  m->route = token.route;
  if (token.route == am::Route::kShared) {
    return rt.net->ReserveReply(*static_cast<pshm::ReplyTo*>(token.reply),
                                category, nargs, max_payload, immediate,
                                &m->shared);
  }
  m->conduit = Reservation{};
  m->conduit.is_request = false;
  m->conduit.dest = token.source;
  m->conduit.reply = token.reply;
  m->conduit.category = category;
  m->conduit.nargs = nargs;
  return rt.conduit->Reserve(m->conduit, max_payload, immediate);
}

void Commit(Runtime& rt, PreparedMessage& m, uint8_t handler,
            const uint32_t* args, size_t len, const void* long_src,
            uint64_t long_dest, void* long_local) {
  if (m.route == am::Route::kShared) {
    if (m.shared.category == am::Category::kLong && len != 0 &&
        long_local != long_src) {
      std::memmove(long_local, long_src, len);
    }
    rt.net->Commit(m.shared, handler, args, len, long_dest);
  } else {
    const bool is_long = m.conduit.category == am::Category::kLong;
    rt.conduit->Commit(
        m.conduit,
        Outbound{m.conduit.category, handler, m.conduit.nargs, args,
                 is_long ? long_src : m.conduit.buffer, len, long_dest});
  }
  if (m.token != nullptr) m.token->replied = true;
}

void Cancel(Runtime& rt, PreparedMessage& m) {
  if (m.route == am::Route::kShared) {
    rt.net->Cancel(m.shared);
  } else {
    rt.conduit->Cancel(m.conduit);
  }
}

}  // namespace gexrt::core
