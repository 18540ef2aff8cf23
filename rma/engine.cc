#include "rma/engine.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "base/fatal.h"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace gexrt::rma {
namespace {

// An AM-path operation's happens-before runs from the initiating thread
// (which wrote the counter and, for a Get, may have written the
// destination) through a request handled in another process and back to
// whichever thread runs the reply handler. ThreadSanitizer cannot see the
// other process's half, so the edge is annotated on the counter: released
// before the first request, acquired by the reply handler. Nothing in other
// builds.
#if defined(__SANITIZE_THREAD__)
inline void HandOff(Counter* c) { __tsan_release(c); }
inline void TakeOver(Counter* c) { __tsan_acquire(c); }
#else
inline void HandOff(Counter*) {}
inline void TakeOver(Counter*) {}
#endif

// A pointer or address as two handler arguments, and back.
inline void Split(const void* p, uint32_t* out) {
  const auto v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
  out[0] = static_cast<uint32_t>(v);
  out[1] = static_cast<uint32_t>(v >> 32);
}
inline uintptr_t Join(int32_t lo, int32_t hi) {
  return static_cast<uintptr_t>(
      static_cast<uint64_t>(static_cast<uint32_t>(lo)) |
      static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32);
}
inline Counter* CounterAt(int32_t lo, int32_t hi) {
  return reinterpret_cast<Counter*>(Join(lo, hi));
}

inline const Engine& EngineOf(void* token) {
  return *static_cast<const Engine*>(
      static_cast<am::Token*>(token)->entry->cdata);
}

}  // namespace

Engine::Engine(const Options& options, am::HandlerTable& handlers)
    : rank_(options.rank),
      size_(options.size),
      segments_(options.segments),
      primordial_(options.segments),
      transport_(options.transport),
      force_am_(options.force_am),
      chunk_(std::clamp<size_t>(options.chunk, 1, kChunk)) {
  am::Entry entries[6];
  const auto set = [&](am::Entry& e, auto* fn, uint32_t flags, unsigned nargs,
                       const char* name) {
    e.fn = reinterpret_cast<am::HandlerFn>(fn);
    e.flags = flags;
    e.nargs = nargs;
    e.cdata = this;
    e.name = name;
  };
  set(entries[0], &PutRequestHandler, am::kFlagLong | am::kFlagRequest, 2,
      "gex rma put");
  set(entries[1], &DoneReplyHandler, am::kFlagShort | am::kFlagReply, 2,
      "gex rma put done");
  set(entries[2], &GetRequestHandler, am::kFlagShort | am::kFlagRequest, 8,
      "gex rma get");
  set(entries[3], &GetLongReplyHandler, am::kFlagLong | am::kFlagReply, 2,
      "gex rma get reply long");
  set(entries[4], &GetMediumReplyHandler, am::kFlagMedium | am::kFlagReply, 4,
      "gex rma get reply medium");
  set(entries[5], &PutMediumRequestHandler, am::kFlagMedium | am::kFlagRequest,
      4, "gex rma put to an endpoint");
  const absl::Status s = handlers.Register(entries, 6, /*internal=*/true);
  if (!s.ok()) FatalErrorF("rma: %s", s.message());
  put_request_ = entries[0].index;
  done_reply_ = entries[1].index;
  get_request_ = entries[2].index;
  get_long_reply_ = entries[3].index;
  get_medium_reply_ = entries[4].index;
  put_medium_request_ = entries[5].index;
}

Engine::Engine(const Engine& primary, const SegmentView* segments,
               uint32_t ep_index)
    : rank_(primary.rank_),
      size_(primary.size_),
      segments_(segments),
      primordial_(primary.primordial_),
      transport_(primary.transport_),
      force_am_(primary.force_am_),
      chunk_(primary.chunk_),
      ep_index_(ep_index),
      put_request_(primary.put_request_),
      put_medium_request_(primary.put_medium_request_),
      done_reply_(primary.done_reply_),
      get_request_(primary.get_request_),
      get_long_reply_(primary.get_long_reply_),
      get_medium_reply_(primary.get_medium_reply_) {
  transport_.rdma_put = nullptr;
  transport_.rdma_get = nullptr;
}

std::unique_ptr<Engine> Engine::ForEndpoint(const SegmentView* segments,
                                            uint32_t ep_index) const {
  return std::unique_ptr<Engine>(new Engine(*this, segments, ep_index));
}

void Engine::BadCall(const char* call, Rank rank, const void* remote,
                     const void* local, size_t n) const {
  if (rank >= size_) {
    FatalErrorF("%s: rank %u is not in the team (size %u)", call, rank, size_);
  }
  if (am::HandlerContext::InHandler()) {
    FatalErrorF(
        "%s: called from an AM handler (handlers may not initiate "
        "communication)",
        call);
  }
  const bool remote_wraps = reinterpret_cast<uintptr_t>(remote) + n <
                            reinterpret_cast<uintptr_t>(remote);
  FatalErrorF(
      "%s: nbytes %zu overflows: the %s range starting at %p wraps around "
      "the address space",
      call, n, remote_wraps ? "remote" : "local",
      remote_wraps ? remote : local);
}

void Engine::CheckSegment(const char* call, Rank rank, const void* remote,
                          size_t n) const {
  if (ep_index_ != 0 &&
      ABSL_PREDICT_FALSE(segments_->segment(rank).size == 0)) {
    FatalErrorF(
        "%s: rank %u's endpoint %u has no segment published to this process "
        "(gex_EP_BindSegment, then gex_EP_PublishBoundSegment), so [%p, +%zu) "
        "is outside it",
        call, rank, ep_index_, remote, n);
  }
  if (ABSL_PREDICT_FALSE(!segments_->attached())) {
    FatalErrorF(
        "%s: no segment is attached yet (gex_Segment_Attach), so rank %u's "
        "[%p, +%zu) is outside it",
        call, rank, remote, n);
  }
  const auto a = reinterpret_cast<uintptr_t>(remote);
  if (ABSL_PREDICT_FALSE(!segments_->Contains(rank, a, n))) {
    const SegmentEntry s = segments_->segment(rank);
    FatalErrorF(
        "%s: remote range [%p, +%zu) is outside rank %u's segment%s [%p, "
        "+%zu)",
        call, remote, n, rank,
        ep_index_ == 0 ? ""
                       : absl::StrFormat(" of endpoint %u", ep_index_).c_str(),
        reinterpret_cast<void*>(s.base), s.size);
  }
}

void Engine::WaitSlow(const char* call, const Counter& c) const {
  if (am::HandlerContext::InHandler()) {
    FatalErrorF("%s: called from an AM handler (it may block)", call);
  }
  while (!c.Done()) Progress();
}

Issue Engine::PutRemote(const char* call, Rank rank, void* dest,
                        const void* src, size_t n, bool immediate, Counter& rc,
                        Counter* lc) {
  CheckSegment(call, rank, dest, n);
  if (transport_.rdma_put != nullptr && !force_am_ && conduit_segments_) {
    rc.Start(1);
    if (lc != nullptr) lc->Start(1);
    if (!transport_.rdma_put(transport_.context, rank, dest, src, n, immediate,
                             rc, lc)) {
      rc.Unstart(1);
      if (lc != nullptr) lc->Unstart(1);
      return Issue::kWouldBlock;
    }
    return Issue::kPending;
  }
  const uint64_t chunks = (n + chunk_ - 1) / chunk_;
  // Counted before the first send: a reply may arrive while a later chunk
  // waits for queue space.
  rc.Start(chunks);
  if (lc != nullptr) lc->Start(chunks);
  HandOff(&rc);
  uint32_t args[2];
  Split(&rc, args);
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(dest);
  uint32_t medium_args[4];
  Split(&rc, &medium_args[2]);
  for (uint64_t i = 0; i < chunks; ++i) {
    const size_t offset = i * chunk_;
    const size_t len = std::min(chunk_, n - offset);
    bool sent;
    if (ep_index_ == 0 && conduit_segments_) {
      sent = transport_.request(transport_.context, rank, am::Category::kLong,
                                put_request_, args, 2, from + offset, len,
                                to + offset, immediate && i == 0);
    } else {
      Split(to + offset, &medium_args[0]);
      sent = transport_.request(
          transport_.context, rank, am::Category::kMedium, put_medium_request_,
          medium_args, 4, from + offset, len, nullptr, immediate && i == 0);
    }
    if (!sent) {
      rc.Unstart(chunks);
      if (lc != nullptr) lc->Unstart(chunks);
      return Issue::kWouldBlock;
    }
    if (lc != nullptr) lc->Complete();
  }
  return Issue::kPending;
}

Issue Engine::GetRemote(const char* call, void* dest, Rank rank,
                        const void* src, size_t n, bool immediate,
                        Counter& rc) {
  CheckSegment(call, rank, src, n);
  if (transport_.rdma_get != nullptr && !force_am_ && conduit_segments_) {
    rc.Start(1);
    if (!transport_.rdma_get(transport_.context, dest, rank, src, n, immediate,
                             rc)) {
      rc.Unstart(1);
      return Issue::kWouldBlock;
    }
    return Issue::kPending;
  }
  const uint64_t chunks = (n + chunk_ - 1) / chunk_;
  rc.Start(chunks);
  HandOff(&rc);
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(dest);
  for (uint64_t i = 0; i < chunks; ++i) {
    const size_t offset = i * chunk_;
    const size_t len = std::min(chunk_, n - offset);
    // A Long reply can land only in this rank's segment; anything else
    // comes back as a Medium that the reply handler copies out.
    const auto d = reinterpret_cast<uintptr_t>(to + offset);
    const bool in_segment =
        conduit_segments_ && primordial_->Contains(rank_, d, len);
    uint32_t args[8];
    Split(from + offset, &args[0]);
    Split(to + offset, &args[2]);
    args[4] = static_cast<uint32_t>(len);
    Split(&rc, &args[5]);
    args[7] = in_segment ? 0 : 1;
    if (!transport_.request(transport_.context, rank, am::Category::kShort,
                            get_request_, args, 8, nullptr, 0, nullptr,
                            immediate && i == 0)) {
      rc.Unstart(chunks);
      return Issue::kWouldBlock;
    }
  }
  return Issue::kPending;
}

// The payload is already in place (the Long put it there): acknowledge.
void Engine::PutRequestHandler(void* token, void*, size_t, int32_t c0,
                               int32_t c1) {
  const Engine& e = EngineOf(token);
  const uint32_t args[2] = {static_cast<uint32_t>(c0),
                            static_cast<uint32_t>(c1)};
  e.transport_.reply(e.transport_.context, static_cast<am::Token*>(token),
                     am::Category::kShort, e.done_reply_, args, 2, nullptr, 0,
                     nullptr);
}

// An endpoint engine's Put chunk: `dest` is in this rank's memory, in a
// segment bound to one of its endpoints (the initiator checked the range
// against it); the target copies the bytes there, then acknowledges.
void Engine::PutMediumRequestHandler(void* token, void* buf, size_t nbytes,
                                     int32_t d0, int32_t d1, int32_t c0,
                                     int32_t c1) {
  const Engine& e = EngineOf(token);
  if (nbytes != 0) {
    std::memcpy(reinterpret_cast<void*>(Join(d0, d1)), buf, nbytes);
  }
  const uint32_t args[2] = {static_cast<uint32_t>(c0),
                            static_cast<uint32_t>(c1)};
  e.transport_.reply(e.transport_.context, static_cast<am::Token*>(token),
                     am::Category::kShort, e.done_reply_, args, 2, nullptr, 0,
                     nullptr);
}

void Engine::DoneReplyHandler(void*, int32_t c0, int32_t c1) {
  Counter* c = CounterAt(c0, c1);
  TakeOver(c);
  c->Complete();
}

// Runs at the Get's target: `src` is in this rank's own segment (the
// initiator checked the range against it).
void Engine::GetRequestHandler(void* token, int32_t s0, int32_t s1, int32_t d0,
                               int32_t d1, int32_t len, int32_t c0, int32_t c1,
                               int32_t medium) {
  const Engine& e = EngineOf(token);
  const void* src = reinterpret_cast<const void*>(Join(s0, s1));
  auto* t = static_cast<am::Token*>(token);
  const auto n = static_cast<size_t>(static_cast<uint32_t>(len));
  if (medium != 0) {
    const uint32_t args[4] = {
        static_cast<uint32_t>(d0), static_cast<uint32_t>(d1),
        static_cast<uint32_t>(c0), static_cast<uint32_t>(c1)};
    e.transport_.reply(e.transport_.context, t, am::Category::kMedium,
                       e.get_medium_reply_, args, 4, src, n, nullptr);
  } else {
    const uint32_t args[2] = {static_cast<uint32_t>(c0),
                              static_cast<uint32_t>(c1)};
    e.transport_.reply(e.transport_.context, t, am::Category::kLong,
                       e.get_long_reply_, args, 2, src, n,
                       reinterpret_cast<void*>(Join(d0, d1)));
  }
}

void Engine::GetLongReplyHandler(void*, void*, size_t, int32_t c0, int32_t c1) {
  CounterAt(c0, c1)->Complete();
}

void Engine::GetMediumReplyHandler(void*, void* buf, size_t nbytes, int32_t d0,
                                   int32_t d1, int32_t c0, int32_t c1) {
  Counter* c = CounterAt(c0, c1);
  TakeOver(c);
  if (nbytes != 0) {
    std::memcpy(reinterpret_cast<void*>(Join(d0, d1)), buf, nbytes);
  }
  c->Complete();
}

}  // namespace gexrt::rma
