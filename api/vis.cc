// Vector, Indexed and Strided RMA: the calls of gasnet_vis.h.
//
// Every call is reduced to pairs (local bytes, remote bytes, length): the
// two sides' pieces walked in step. Two ways to the peer, chosen per call:
//   direct  the peer's segment is mapped here (this rank's own, a
//           supernode peer's through PSHM): every pair is one memcpy
//           through the mapping; done when the call returns. Strided
//           calls copy with nested loops over the shape, after folding
//           levels that are contiguous on both sides into the element
//           (no allocation, one bounds check of the whole shape).
//   AM      any other peer, or every peer with GEX_RMA_FORCE_AM=1: the
//           pairs are packed into Medium payloads of at most the largest
//           Medium every destination accepts (and 64 KiB), each piece as
//           a 12-byte header (remote address, length) and, for a Put, its
//           bytes. A Put's Request (kPutRequestIndex) carries the data; the
//           peer copies each piece into its segment and answers with an
//           empty Reply (kReplyIndex) that completes one count. A Get's
//           Request (kGetRequestIndex) lists the remote pieces; the peer
//           packs their bytes into its Reply, whose handler here scatters
//           them into the local pieces (from the pair and offset named in
//           the message's arguments) before completing the count.
//           Requests go through core::Request, so a supernode peer's ride
//           PSHM and anyone else's the conduit.
//
// Peer completion (gex_VIS_SetPeerCompletionHandler): the armed call
// first finishes its data movement (on the AM path it waits for every
// Reply, whatever its form, and then reports itself complete), then sends
// a Medium Request (kPeerIndex) with the client's payload; the peer's
// internal handler runs the client's 0-argument Medium Reply handler with
// a token of its own (a reply handler's: it cannot reply). The data is in
// the peer's segment before that Request is sent, so the handler sees it.
//
// Internal handler indices 124-127 are reserved for VIS (124 Put request,
// 125 Get request, 126 reply, 127 peer completion); like remote atomics'
// 120-123 (api/ratomic.cc) they are fixed, below the RMA engine's and the
// other layers' indices assigned in order at start-up. They are
// registered by VisInit, from gex_Client_Init, on every rank: a rank may
// receive VIS traffic without ever making a VIS call.
#include "api/vis.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/strings/str_format.h"
#include "am/handler_table.h"
#include "am/invoke.h"
#include "am/token.h"
#include "api/runtime.h"
#include "api/team.h"
#include "api/vis_extent.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "base/thread_scratch.h"
#include "core/router.h"
#include "gasnet_vis.h"
#include "rma/event.h"
#include "rma/nbi.h"

namespace gexrt::api {
namespace {

constexpr uint8_t kPutRequestIndex = 124;
constexpr uint8_t kGetRequestIndex = 125;
constexpr uint8_t kReplyIndex = 126;
constexpr uint8_t kPeerIndex = 127;
constexpr unsigned kReplyArgs = 8;

// A packed piece's header: the remote address (8 bytes) and length (4).
constexpr size_t kHeader = 12;
constexpr size_t kPackMax = 65536;

constexpr gex_Flags_t kHintFlags =
    GEX_FLAG_SELF_SEG_UNKNOWN | GEX_FLAG_SELF_SEG_SOME |
    GEX_FLAG_SELF_SEG_BOUND | GEX_FLAG_PEER_SEG_UNKNOWN |
    GEX_FLAG_PEER_SEG_SOME | GEX_FLAG_PEER_SEG_BOUND |
    GEX_FLAG_PEER_NEVER_SELF | GEX_FLAG_PEER_NEVER_NBRHD;

bool g_force_am = false;
size_t g_pack = 0;  // The AM path's payload limit.

enum class Form { kBlocking, kNB, kNBI };

// One pair: `len` bytes here at `local`, and at `remote` in the peer's
// segment (an address as the peer sees it).
struct Pair {
  unsigned char* local;
  uintptr_t remote;
  size_t len;
};

// A Get on the AM path: its pairs, alive until the sender and every Reply
// are done with them.
struct GetPlan {
  std::vector<Pair> pairs;
  std::atomic<uint64_t> refs{1};  // The sender's, plus one per Request.
};

void Release(GetPlan* plan) {
  if (plan->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete plan;
}

struct PeerCompletion {
  gex_AM_Index_t handler = 0;
  const void* buf = nullptr;
  size_t nbytes = 0;
};
thread_local PeerCompletion tl_peer;

// Takes (and disarms) the calling thread's armed notification.
PeerCompletion TakePeer() {
  PeerCompletion pc = tl_peer;
  tl_peer = PeerCompletion{};
  return pc;
}

inline void Split(uint64_t v, uint32_t* out) {
  out[0] = static_cast<uint32_t>(v);
  out[1] = static_cast<uint32_t>(v >> 32);
}
inline uint64_t Join(int32_t lo, int32_t hi) {
  return static_cast<uint64_t>(static_cast<uint32_t>(lo)) |
         static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32;
}

void WriteHeader(unsigned char* p, uint64_t address, uint32_t len) {
  std::memcpy(p, &address, 8);
  std::memcpy(p + 8, &len, 4);
}
void ReadHeader(const unsigned char* p, uint64_t* address, uint32_t* len) {
  std::memcpy(address, p, 8);
  std::memcpy(len, p + 8, 4);
}

// Two buffers a thread, one for each side: a send may poll while it waits
// for room, and a Get request handler run then must not write into the
// payload being sent. Each holds g_pack bytes. ThreadScratch, not a
// thread_local std::vector: a Get request handler may run in the main
// thread's exit handler, after its thread_local destructors
// (base/thread_scratch.h).
constinit thread_local ThreadScratch tl_pack;
constinit thread_local ThreadScratch tl_reply;
// Where the initiator packs a Request.
unsigned char* PackBuffer() { return tl_pack.Get(g_pack); }
// Where a Get request handler packs its Reply.
unsigned char* ReplyBuffer() { return tl_reply.Get(g_pack); }

// ---------------------------------------------------------------------------
// Handlers.

// Where [address, +len) of this rank's segment is, or a fatal error (the
// initiator checked it: a message that fails is corrupt).
unsigned char* Mine(const Runtime& rt, const am::Token& t, uint64_t address,
                    size_t len) {
  void* p =
      rt.segments.Translate(rt.rank, static_cast<uintptr_t>(address), len);
  if (ABSL_PREDICT_FALSE(p == nullptr)) {
    FatalErrorF(
        "VIS message from rank %u: [0x%llx, +%zu) is not in this rank's "
        "segment",
        t.source, static_cast<unsigned long long>(address), len);
  }
  return static_cast<unsigned char*>(p);
}

void PutRequestHandler(void* token, void* buf, size_t nbytes, int32_t c0,
                       int32_t c1) {
  Runtime& rt = *g_runtime;
  auto* t = static_cast<am::Token*>(token);
  const auto* p = static_cast<const unsigned char*>(buf);
  const unsigned char* end = p + nbytes;
  while (p < end) {
    uint64_t address;
    uint32_t len;
    ReadHeader(p, &address, &len);
    p += kHeader;
    std::memcpy(Mine(rt, *t, address, len), p, len);
    p += len;
  }
  uint32_t args[kReplyArgs] = {};
  args[0] = static_cast<uint32_t>(c0);
  args[1] = static_cast<uint32_t>(c1);
  core::Reply(rt, *t, am::Category::kMedium, kReplyIndex, args, kReplyArgs,
              nullptr, 0, 0, nullptr, /*immediate=*/false);
}

void GetRequestHandler(void* token, void* buf, size_t nbytes, int32_t c0,
                       int32_t c1, int32_t p0, int32_t p1, int32_t i0,
                       int32_t i1, int32_t o0, int32_t o1) {
  Runtime& rt = *g_runtime;
  auto* t = static_cast<am::Token*>(token);
  unsigned char* const out = ReplyBuffer();
  size_t used = 0;
  const auto* p = static_cast<const unsigned char*>(buf);
  for (const unsigned char* end = p + nbytes; p < end; p += kHeader) {
    uint64_t address;
    uint32_t len;
    ReadHeader(p, &address, &len);
    if (ABSL_PREDICT_FALSE(len > g_pack - used)) {
      FatalErrorF("VIS Get request from rank %u: more than %zu bytes",
                  t->source, g_pack);
    }
    std::memcpy(out + used, Mine(rt, *t, address, len), len);
    used += len;
  }
  const uint32_t args[kReplyArgs] = {
      static_cast<uint32_t>(c0), static_cast<uint32_t>(c1),
      static_cast<uint32_t>(p0), static_cast<uint32_t>(p1),
      static_cast<uint32_t>(i0), static_cast<uint32_t>(i1),
      static_cast<uint32_t>(o0), static_cast<uint32_t>(o1)};
  core::Reply(rt, *t, am::Category::kMedium, kReplyIndex, args, kReplyArgs, out,
              used, 0, nullptr, /*immediate=*/false);
}

// At the initiator: a Put's acknowledgement (no plan) or a Get's data, to
// scatter from pair i0|i1, offset o0|o1 on.
void ReplyHandler(void*, void* buf, size_t nbytes, int32_t c0, int32_t c1,
                  int32_t p0, int32_t p1, int32_t i0, int32_t i1, int32_t o0,
                  int32_t o1) {
  auto* plan = reinterpret_cast<GetPlan*>(static_cast<uintptr_t>(Join(p0, p1)));
  if (plan != nullptr) {
    size_t i = static_cast<size_t>(Join(i0, i1));
    size_t offset = static_cast<size_t>(Join(o0, o1));
    const auto* p = static_cast<const unsigned char*>(buf);
    while (nbytes > 0) {
      const Pair& pair = plan->pairs[i];
      const size_t n = std::min(nbytes, pair.len - offset);
      std::memcpy(pair.local + offset, p, n);
      p += n;
      nbytes -= n;
      ++i;
      offset = 0;
    }
    Release(plan);
  }
  reinterpret_cast<rma::Counter*>(static_cast<uintptr_t>(Join(c0, c1)))
      ->Complete();
}

// At the peer: runs the client's peer completion handler.
void PeerHandler(void* token, void* buf, size_t nbytes, int32_t index) {
  Runtime& rt = *g_runtime;
  const auto* t = static_cast<const am::Token*>(token);
  if (rt.handlers.client_handlers_disabled()) return;  // The job is exiting.
  const auto h = static_cast<uint8_t>(index);
  const am::Entry* e = rt.handlers.Find(h);
  constexpr uint32_t kNeed = am::kFlagMedium | am::kFlagReply;
  if (ABSL_PREDICT_FALSE(e == nullptr || (e->flags & kNeed) != kNeed ||
                         (e->nargs != 0 && e->nargs != am::kAnyArgs))) {
    FatalErrorF(
        "gex_VIS_SetPeerCompletionHandler (from rank %u): handler %u is not "
        "a 0-argument Medium Reply handler on rank %u",
        t->source, h, rt.rank);
  }
  am::Token client;
  client.source = t->source;
  client.entry = e;
  client.is_request = false;
  client.is_long = false;
  client.route = t->route;
  am::HandlerContext::Scope scope(&client);
  am::Invoke(e->fn, am::Category::kMedium, &client, buf, nbytes, 0, nullptr);
}

// ---------------------------------------------------------------------------
// Checks.

// A sub-team's or pair's `rank` becomes a job rank here (out of line; a
// tm that is no team is fatal there, naming the call).
Runtime& CheckCall(const char* call, gex_TM_t tm, gex_Rank_t& rank,
                   gex_Flags_t flags, bool put) {
  Runtime& rt = RuntimeFor(call);
  if (ABSL_PREDICT_FALSE(tm != &rt.tm)) rank = SubteamJobRank(call, tm, rank);
  if (ABSL_PREDICT_FALSE(am::HandlerContext::InHandler())) {
    FatalErrorF(
        "%s: called from an AM handler (handlers may not initiate "
        "communication)",
        call);
  }
  if (ABSL_PREDICT_FALSE(rank >= rt.size)) {
    FatalErrorF("%s: rank %u is not in the team (size %u)", call, rank,
                rt.size);
  }
  const gex_Flags_t taken =
      kHintFlags | GEX_FLAG_IMMEDIATE | (put ? GEX_FLAG_ENABLE_LEAF_LC : 0);
  if (ABSL_PREDICT_FALSE((flags & ~taken) != 0)) {
    FatalErrorF("%s: flags 0x%x has bits this call does not take (0x%x)", call,
                static_cast<unsigned>(flags),
                static_cast<unsigned>(flags & ~taken));
  }
  if (ABSL_PREDICT_FALSE((flags & GEX_FLAG_IMMEDIATE) != 0 &&
                         tl_peer.handler != 0)) {
    FatalErrorF(
        "%s: GEX_FLAG_IMMEDIATE on the call a peer completion handler is "
        "armed for (gex_VIS_SetPeerCompletionHandler)",
        call);
  }
  return rt;
}

[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void OutsideSegment(
    const char* call, const Runtime& rt, gex_Rank_t rank, const char* what,
    uintptr_t address, size_t len) {
  if (!rt.segments.attached()) {
    FatalErrorF(
        "%s: %s [%p, +%zu) at rank %u: no segment is attached yet "
        "(gex_Segment_Attach)",
        call, what, reinterpret_cast<void*>(address), len, rank);
  }
  const rma::SegmentEntry s = rt.segments.segment(rank);
  FatalErrorF("%s: %s [%p, +%zu) is outside rank %u's segment [%p, +%zu)", call,
              what, reinterpret_cast<void*>(address), len, rank,
              reinterpret_cast<void*>(s.base), s.size);
}

inline void CheckRemote(const char* call, const Runtime& rt, gex_Rank_t rank,
                        const char* what, uintptr_t address, size_t len) {
  if (ABSL_PREDICT_FALSE(len != 0 &&
                         !rt.segments.Contains(rank, address, len))) {
    OutsideSegment(call, rt, rank, what, address, len);
  }
}

inline void CheckLocal(const char* call, const char* what, uintptr_t address,
                       size_t len) {
  if (ABSL_PREDICT_FALSE(len != 0 &&
                         (address == 0 || address + len < address))) {
    FatalErrorF("%s: %s [%p, +%zu) is %s", call, what,
                reinterpret_cast<void*>(address), len,
                address == 0 ? "NULL" : "a range that wraps the address space");
  }
}

// ---------------------------------------------------------------------------
// Vector and Indexed lists.

struct List {
  const gex_Memvec_t* vec = nullptr;
  void* const* addrs = nullptr;
  size_t count = 0;
  size_t len = 0;  // Indexed: every piece's length.

  uintptr_t addr(size_t i) const {
    return reinterpret_cast<uintptr_t>(vec != nullptr ? vec[i].gex_addr
                                                      : addrs[i]);
  }
  size_t length(size_t i) const {
    return vec != nullptr ? vec[i].gex_len : len;
  }
};

List VectorList(const gex_Memvec_t* list, size_t count) {
  List l;
  l.vec = list;
  l.count = count;
  return l;
}
List IndexedList(void* const* list, size_t count, size_t len) {
  List l;
  l.addrs = list;
  l.count = count;
  l.len = len;
  return l;
}

// Checks `l` (named `name`, e.g. "dstlist", counted by `count_name`) and
// returns its total length. Remote pieces (remote: true) must lie in
// `rank`'s segment; local ones must not be NULL.
size_t CheckList(const char* call, const Runtime& rt, gex_Rank_t rank,
                 const List& l, bool remote, const char* name,
                 const char* count_name) {
  if (l.count == 0) return 0;
  if (ABSL_PREDICT_FALSE(l.vec == nullptr && l.addrs == nullptr)) {
    FatalErrorF("%s: %s is NULL with %s %zu", call, name, count_name, l.count);
  }
  size_t total = 0;
  for (size_t i = 0; i < l.count; ++i) {
    const uintptr_t a = l.addr(i);
    const size_t n = l.length(i);
    if (n == 0) continue;
    if (ABSL_PREDICT_FALSE(a + n < a || total + n < total)) {
      FatalErrorF("%s: %s[%zu] [%p, +%zu) wraps the address space", call, name,
                  i, reinterpret_cast<void*>(a), n);
    }
    if (remote) {
      if (ABSL_PREDICT_FALSE(!rt.segments.Contains(rank, a, n))) {
        OutsideSegment(call, rt, rank,
                       absl::StrFormat("%s[%zu]", name, i).c_str(), a, n);
      }
    } else if (ABSL_PREDICT_FALSE(a == 0)) {
      FatalErrorF("%s: %s[%zu] is NULL with length %zu", call, name, i, n);
    }
    total += n;
  }
  return total;
}

// Calls f(local, remote, n) for the pairs of `local` and `remote` (equal
// totals), in order.
template <typename F>
void Walk(const List& local, const List& remote, F&& f) {
  size_t i = 0, j = 0, oi = 0, oj = 0;
  for (;;) {
    while (i < local.count && oi == local.length(i)) {
      ++i;
      oi = 0;
    }
    while (j < remote.count && oj == remote.length(j)) {
      ++j;
      oj = 0;
    }
    if (i == local.count || j == remote.count) return;
    const size_t n = std::min(local.length(i) - oi, remote.length(j) - oj);
    f(reinterpret_cast<unsigned char*>(local.addr(i)) + oi, remote.addr(j) + oj,
      n);
    oi += n;
    oj += n;
  }
}

// ---------------------------------------------------------------------------
// Strided shapes.

struct Level {
  size_t count;
  ptrdiff_t local;   // Stride on this rank's side.
  ptrdiff_t remote;  // Stride on the peer's side.
};

// A strided call's shape, with levels of one element dropped and levels
// contiguous on both sides folded into the element (or into the level
// below). Empty: nothing to move.
class Shape {
 public:
  Shape(const char* call, size_t elemsz, const size_t* count,
        const ptrdiff_t* local_strides, const ptrdiff_t* remote_strides,
        const char* local_name, const char* remote_name, size_t levels) {
    if (elemsz == 0) return;  // Everything else is ignored.
    if (levels > 0) {
      if (ABSL_PREDICT_FALSE(count == nullptr)) {
        FatalErrorF("%s: count is NULL with stridelevels %zu", call, levels);
      }
      if (ABSL_PREDICT_FALSE(local_strides == nullptr ||
                             remote_strides == nullptr)) {
        FatalErrorF("%s: %s is NULL with stridelevels %zu", call,
                    local_strides == nullptr ? local_name : remote_name,
                    levels);
      }
      for (size_t k = 0; k < levels; ++k) {
        if (count[k] == 0) return;
      }
    }
    if (levels > kInline) {
      heap_.reset(new Level[levels]);
      levels_ = heap_.get();
    }
    size_t total = elemsz;
    for (size_t k = 0; k < levels; ++k) {
      if (ABSL_PREDICT_FALSE(__builtin_mul_overflow(total, count[k], &total))) {
        FatalErrorF("%s: elemsz times the counts overflows size_t", call);
      }
      const ptrdiff_t l = local_strides[k];
      const ptrdiff_t r = remote_strides[k];
      if (count[k] == 1) continue;
      if (n_ > 0) {
        Level& below = levels_[n_ - 1];
        const auto bc = static_cast<ptrdiff_t>(below.count);
        if (l == below.local * bc && r == below.remote * bc) {
          below.count *= count[k];
          continue;
        }
      }
      levels_[n_++] = Level{count[k], l, r};
    }
    total_ = total;
    elemsz_ = elemsz;
    // Levels contiguous on both sides become part of the element.
    size_t first = 0;
    while (first < n_ &&
           levels_[first].local == static_cast<ptrdiff_t>(elemsz_) &&
           levels_[first].remote == static_cast<ptrdiff_t>(elemsz_)) {
      elemsz_ *= levels_[first].count;
      ++first;
    }
    if (first > 0) {
      std::copy(levels_ + first, levels_ + n_, levels_);
      n_ -= first;
    }
  }
  Shape(const Shape&) = delete;
  Shape& operator=(const Shape&) = delete;

  bool empty() const { return total_ == 0; }
  size_t total() const { return total_; }
  size_t elemsz() const { return elemsz_; }
  size_t levels() const { return n_; }
  const Level* level() const { return levels_; }

 private:
  static constexpr size_t kInline = 16;
  Level inline_[kInline];
  std::unique_ptr<Level[]> heap_;
  Level* levels_ = inline_;
  size_t n_ = 0;
  size_t elemsz_ = 0;
  size_t total_ = 0;
};

// Copies `n` bytes, a multiple of 64, as 64-byte blocks the compiler
// moves inline. An element of a strided shape is short for memcpy: a
// call per element of 1-4 KiB costs about a tenth of its copy (a
// contiguous range copied 1 KiB per memcpy runs at 0.89 of one memcpy on
// the machines here), and this loop gets 3-4% of it back
// (tests/benchmarks/README.md).
inline void CopyBlocks(unsigned char* dst, const unsigned char* src, size_t n) {
  for (size_t o = 0; o < n; o += 64) __builtin_memcpy(dst + o, src + o, 64);
}

// Runs `copy(dst, src)` on each element of one level, from `local` to
// `remote` for a Put and back for a Get.
template <bool kPut, typename Copy>
void ForEachElement(const Level& l, unsigned char* local, unsigned char* remote,
                    Copy copy) {
  for (size_t i = 0; i < l.count; ++i) {
    if (kPut) {
      copy(remote, local);
    } else {
      copy(local, remote);
    }
    local += l.local;
    remote += l.remote;
  }
}

// One level of elements: `count` copies of `elemsz` bytes (N when not 0: a
// constant the compiler turns into a few vector moves instead of a call;
// otherwise whole 64-byte blocks where the size allows).
template <bool kPut, size_t N>
void CopyRow(const Level& l, size_t elemsz, unsigned char* local,
             unsigned char* remote) {
  const size_t n = N != 0 ? N : elemsz;
  if (N == 0 && n % 64 == 0) {
    ForEachElement<kPut>(l, local, remote,
                         [n](unsigned char* dst, const unsigned char* src) {
                           CopyBlocks(dst, src, n);
                         });
  } else {
    ForEachElement<kPut>(l, local, remote,
                         [n](unsigned char* dst, const unsigned char* src) {
                           std::memcpy(dst, src, n);
                         });
  }
}

// Copies the elements of levels [0, k) between `local` and `remote` (a Put
// to remote, a Get from it), with each level's strides.
template <bool kPut>
void CopyLevels(const Level* lv, size_t k, size_t elemsz, unsigned char* local,
                unsigned char* remote) {
  if (k == 0) {
    if (kPut) {
      std::memcpy(remote, local, elemsz);
    } else {
      std::memcpy(local, remote, elemsz);
    }
    return;
  }
  const Level& l = lv[k - 1];
  if (k == 1) {
    switch (elemsz) {
      case 4:
        return CopyRow<kPut, 4>(l, elemsz, local, remote);
      case 8:
        return CopyRow<kPut, 8>(l, elemsz, local, remote);
      case 16:
        return CopyRow<kPut, 16>(l, elemsz, local, remote);
      case 32:
        return CopyRow<kPut, 32>(l, elemsz, local, remote);
      case 64:
        return CopyRow<kPut, 64>(l, elemsz, local, remote);
      case 128:
        return CopyRow<kPut, 128>(l, elemsz, local, remote);
      case 256:
        return CopyRow<kPut, 256>(l, elemsz, local, remote);
      default:
        return CopyRow<kPut, 0>(l, elemsz, local, remote);
    }
  }
  for (size_t i = 0; i < l.count; ++i) {
    CopyLevels<kPut>(lv, k - 1, elemsz, local, remote);
    local += l.local;
    remote += l.remote;
  }
}

// Every element of `s` as a pair, in order.
std::vector<Pair> StridedPairs(const Shape& s, unsigned char* local,
                               uintptr_t remote) {
  std::vector<Pair> pairs;
  size_t elements = s.total() / s.elemsz();
  pairs.reserve(elements);
  std::vector<size_t> index(s.levels(), 0);
  const Level* lv = s.level();
  for (size_t e = 0; e < elements; ++e) {
    pairs.push_back(Pair{local, remote, s.elemsz()});
    for (size_t k = 0; k < s.levels(); ++k) {
      if (++index[k] < lv[k].count) {
        local += lv[k].local;
        remote += static_cast<uintptr_t>(lv[k].remote);
        break;
      }
      index[k] = 0;
      local -= lv[k].local * static_cast<ptrdiff_t>(lv[k].count - 1);
      remote -= static_cast<uintptr_t>(lv[k].remote *
                                       static_cast<ptrdiff_t>(lv[k].count - 1));
    }
  }
  return pairs;
}

// ---------------------------------------------------------------------------
// The AM path.

// Starts a Put of `pairs` to `rank`, counted in `rc`: false (nothing
// started) when `immediate` and the first Request would have to wait.
bool PutAm(Runtime& rt, gex_Rank_t rank, const std::vector<Pair>& pairs,
           bool immediate, rma::Counter& rc) {
  unsigned char* const buf = PackBuffer();
  uint32_t args[2];
  Split(reinterpret_cast<uintptr_t>(&rc), args);
  size_t used = 0;
  bool first = true;
  auto flush = [&]() {
    rc.Start(1);
    const am::SendStatus s =
        core::Request(rt, rank, am::Category::kMedium, kPutRequestIndex, args,
                      2, buf, used, 0, nullptr, immediate && first);
    if (s != am::SendStatus::kOk) {
      rc.Unstart(1);
      return false;
    }
    first = false;
    used = 0;
    return true;
  };
  for (const Pair& p : pairs) {
    size_t done = 0;
    while (done < p.len) {
      if (g_pack - used <= kHeader) {
        if (!flush()) return false;
      }
      const size_t n = std::min(p.len - done, g_pack - used - kHeader);
      WriteHeader(buf + used, p.remote + done, static_cast<uint32_t>(n));
      std::memcpy(buf + used + kHeader, p.local + done, n);
      used += kHeader + n;
      done += n;
    }
  }
  if (used > 0 && !flush()) return false;
  return true;
}

// Starts a Get of `pairs` from `rank`, counted in `rc`; as PutAm.
bool GetAm(Runtime& rt, gex_Rank_t rank, std::vector<Pair>&& pairs,
           bool immediate, rma::Counter& rc) {
  if (pairs.empty()) return true;
  auto* plan = new GetPlan;
  plan->pairs = std::move(pairs);
  unsigned char* const buf = PackBuffer();
  uint32_t args[kReplyArgs];
  Split(reinterpret_cast<uintptr_t>(&rc), &args[0]);
  Split(reinterpret_cast<uintptr_t>(plan), &args[2]);
  size_t used = 0;  // Request bytes.
  size_t data = 0;  // Reply bytes.
  bool first = true;
  size_t start_pair = 0, start_offset = 0;
  auto flush = [&]() {
    Split(start_pair, &args[4]);
    Split(start_offset, &args[6]);
    plan->refs.fetch_add(1, std::memory_order_relaxed);
    rc.Start(1);
    const am::SendStatus s =
        core::Request(rt, rank, am::Category::kMedium, kGetRequestIndex, args,
                      kReplyArgs, buf, used, 0, nullptr, immediate && first);
    if (s != am::SendStatus::kOk) {
      rc.Unstart(1);
      plan->refs.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    first = false;
    used = 0;
    data = 0;
    return true;
  };
  const std::vector<Pair>& ps = plan->pairs;
  for (size_t i = 0; i < ps.size(); ++i) {
    size_t done = 0;
    while (done < ps[i].len) {
      if (g_pack - used < kHeader || data == g_pack) {
        if (!flush()) {
          Release(plan);
          return false;
        }
      }
      if (used == 0) {
        start_pair = i;
        start_offset = done;
      }
      const size_t n = std::min(ps[i].len - done, g_pack - data);
      WriteHeader(buf + used, ps[i].remote + done, static_cast<uint32_t>(n));
      used += kHeader;
      data += n;
      done += n;
    }
  }
  if (used > 0 && !flush()) {
    Release(plan);
    return false;
  }
  Release(plan);
  return true;
}

// ---------------------------------------------------------------------------
// The forms.

struct Outcome {
  int rc = GASNET_OK;
  gex_Event_t event = GEX_EVENT_INVALID;
};

Outcome NoOp() {
  Outcome o;
  o.rc = 1;
  o.event = GEX_EVENT_NO_OP;
  return o;
}

void Wait(Runtime& rt, const rma::Counter& c) {
  while (!c.Done()) WaitProgress(rt);
}

void SendPeer(Runtime& rt, gex_Rank_t rank, const PeerCompletion& pc) {
  const uint32_t arg = pc.handler;
  if (core::Request(rt, rank, am::Category::kMedium, kPeerIndex, &arg, 1,
                    pc.buf, pc.nbytes, 0, nullptr,
                    /*immediate=*/false) != am::SendStatus::kOk) {
    FatalErrorF("VIS peer completion to rank %u could not be sent", rank);
  }
}

bool Issue(Runtime& rt, bool put, gex_Rank_t rank, std::vector<Pair>&& pairs,
           bool immediate, rma::Counter& rc) {
  return put ? PutAm(rt, rank, pairs, immediate, rc)
             : GetAm(rt, rank, std::move(pairs), immediate, rc);
}

// The AM path of any call, once its pairs are known.
Outcome RunAm(Runtime& rt, Form form, bool put, gex_Rank_t rank,
              std::vector<Pair>&& pairs, gex_Flags_t flags,
              const PeerCompletion& pc) {
  const bool immediate = (flags & GEX_FLAG_IMMEDIATE) != 0;
  if (pc.handler != 0) {
    rma::Counter c;
    Issue(rt, put, rank, std::move(pairs), false, c);
    Wait(rt, c);
    SendPeer(rt, rank, pc);
    return Outcome{};
  }
  switch (form) {
    case Form::kBlocking: {
      rma::Counter c;
      if (!Issue(rt, put, rank, std::move(pairs), immediate, c)) return NoOp();
      Wait(rt, c);
      return Outcome{};
    }
    case Form::kNB: {
      rma::Operation* op = rma::Operation::Allocate();
      if (!Issue(rt, put, rank, std::move(pairs), immediate, op->rc)) {
        op->Release();
        return NoOp();
      }
      if (op->Done()) {
        op->Release();
        return Outcome{};
      }
      Outcome o;
      o.event = op;
      return o;
    }
    case Form::kNBI: {
      rma::Nbi& nbi = rma::Nbi::Mine();
      if (!Issue(rt, put, rank, std::move(pairs), immediate,
                 put ? nbi.put() : nbi.get())) {
        return NoOp();
      }
      return Outcome{};
    }
  }
  return Outcome{};
}

// Where `rank`'s segment is mapped here for the direct path (null: the AM
// path).
inline const rma::SegmentEntry* Mapped(const Runtime& rt, gex_Rank_t rank,
                                       rma::SegmentEntry* entry) {
  if (g_force_am) return nullptr;
  *entry = rt.segments.segment(rank);
  return entry->local != nullptr && entry->size != 0 ? entry : nullptr;
}

// Vector and Indexed calls: `local` and `remote` are the lists of this
// rank's side and the peer's.
Outcome RunLists(const char* call, Form form, bool put, gex_TM_t tm,
                 gex_Rank_t rank, const List& local, const char* local_name,
                 const char* local_count, const List& remote,
                 const char* remote_name, const char* remote_count,
                 gex_Flags_t flags) {
  Runtime& rt = CheckCall(call, tm, rank, flags, put);
  const size_t lt =
      CheckList(call, rt, rank, local, false, local_name, local_count);
  const size_t rtotal =
      CheckList(call, rt, rank, remote, true, remote_name, remote_count);
  if (ABSL_PREDICT_FALSE(lt != rtotal)) {
    FatalErrorF("%s: %s holds %zu bytes but %s holds %zu", call, local_name, lt,
                remote_name, rtotal);
  }
  const PeerCompletion pc = TakePeer();
  rma::SegmentEntry entry;
  if (Mapped(rt, rank, &entry) != nullptr || lt == 0) {
    const ptrdiff_t shift = reinterpret_cast<ptrdiff_t>(entry.local) -
                            static_cast<ptrdiff_t>(entry.base);
    if (lt != 0) {
      Walk(local, remote, [&](unsigned char* l, uintptr_t r, size_t n) {
        unsigned char* mapped =
            reinterpret_cast<unsigned char*>(static_cast<ptrdiff_t>(r) + shift);
        if (put) {
          std::memcpy(mapped, l, n);
        } else {
          std::memcpy(l, mapped, n);
        }
      });
    }
    if (pc.handler != 0) SendPeer(rt, rank, pc);
    return Outcome{};
  }
  std::vector<Pair> pairs;
  Walk(local, remote, [&](unsigned char* l, uintptr_t r, size_t n) {
    pairs.push_back(Pair{l, r, n});
  });
  return RunAm(rt, form, put, rank, std::move(pairs), flags, pc);
}

Outcome RunVector(const char* call, Form form, bool put, gex_TM_t tm,
                  gex_Rank_t rank, size_t dstcount, const gex_Memvec_t* dstlist,
                  size_t srccount, const gex_Memvec_t* srclist,
                  gex_Flags_t flags) {
  const List dst = VectorList(dstlist, dstcount);
  const List src = VectorList(srclist, srccount);
  return put ? RunLists(call, form, put, tm, rank, src, "srclist", "srccount",
                        dst, "dstlist", "dstcount", flags)
             : RunLists(call, form, put, tm, rank, dst, "dstlist", "dstcount",
                        src, "srclist", "srccount", flags);
}

Outcome RunIndexed(const char* call, Form form, bool put, gex_TM_t tm,
                   gex_Rank_t rank, size_t dstcount, void* const* dstlist,
                   size_t dstlen, size_t srccount, void* const* srclist,
                   size_t srclen, gex_Flags_t flags) {
  size_t dt = 0, st = 0;
  if (ABSL_PREDICT_FALSE(__builtin_mul_overflow(dstcount, dstlen, &dt) ||
                         __builtin_mul_overflow(srccount, srclen, &st))) {
    FatalErrorF("%s: a count times its length overflows size_t", call);
  }
  if (ABSL_PREDICT_FALSE(dt != st)) {
    FatalErrorF(
        "%s: dstcount * dstlen (%zu * %zu = %zu) differs from srccount * "
        "srclen (%zu * %zu = %zu)",
        call, dstcount, dstlen, dt, srccount, srclen, st);
  }
  const List dst = IndexedList(dstlist, dstcount, dstlen);
  const List src = IndexedList(srclist, srccount, srclen);
  return put ? RunLists(call, form, put, tm, rank, src, "srclist", "srccount",
                        dst, "dstlist", "dstcount", flags)
             : RunLists(call, form, put, tm, rank, dst, "dstlist", "dstcount",
                        src, "srclist", "srccount", flags);
}

Outcome RunStrided(const char* call, Form form, bool put, gex_TM_t tm,
                   gex_Rank_t rank, void* dstaddr, const ptrdiff_t* dststrides,
                   void* srcaddr, const ptrdiff_t* srcstrides, size_t elemsz,
                   const size_t* count, size_t stridelevels,
                   gex_Flags_t flags) {
  Runtime& rt = CheckCall(call, tm, rank, flags, put);
  void* local_base = put ? srcaddr : dstaddr;
  void* remote_base = put ? dstaddr : srcaddr;
  const Shape shape(call, elemsz, count, put ? srcstrides : dststrides,
                    put ? dststrides : srcstrides,
                    put ? "srcstrides" : "dststrides",
                    put ? "dststrides" : "srcstrides", stridelevels);
  const PeerCompletion pc = TakePeer();
  if (shape.empty()) {
    if (pc.handler != 0) SendPeer(rt, rank, pc);
    return Outcome{};
  }
  const auto lb = reinterpret_cast<uintptr_t>(local_base);
  const auto rb = reinterpret_cast<uintptr_t>(remote_base);
  const size_t e = shape.elemsz();
  // The bytes each side's elements cover, from the caller's element size
  // and every level (api/vis_extent.h), not from the folded shape.
  StridedExtent lx, rx;
  if (ABSL_PREDICT_FALSE(!ComputeStridedExtent(
          elemsz, count, put ? srcstrides : dststrides, stridelevels, &lx))) {
    FatalErrorF("%s: %s times count overflows the address space", call,
                put ? "srcstrides" : "dststrides");
  }
  if (ABSL_PREDICT_FALSE(!ComputeStridedExtent(
          elemsz, count, put ? dststrides : srcstrides, stridelevels, &rx))) {
    FatalErrorF("%s: %s times count overflows the address space", call,
                put ? "dststrides" : "srcstrides");
  }
  CheckLocal(call, put ? "srcaddr's elements" : "dstaddr's elements",
             lb == 0 ? 0 : lb + static_cast<uintptr_t>(lx.lo), lx.bytes);
  const uintptr_t rlo = rb + static_cast<uintptr_t>(rx.lo);
  const size_t rspan = rx.bytes;
  if (ABSL_PREDICT_FALSE(rlo + rspan < rlo)) {
    FatalErrorF("%s: %s's elements wrap the address space", call,
                put ? "dstaddr" : "srcaddr");
  }
  CheckRemote(call, rt, rank, put ? "dstaddr's elements" : "srcaddr's elements",
              rlo, rspan);
  rma::SegmentEntry entry;
  if (Mapped(rt, rank, &entry) != nullptr) {
    auto* remote =
        static_cast<unsigned char*>(rt.segments.Translate(rank, rlo, rspan)) -
        rx.lo;
    auto* local = static_cast<unsigned char*>(local_base);
    if (put) {
      CopyLevels<true>(shape.level(), shape.levels(), e, local, remote);
    } else {
      CopyLevels<false>(shape.level(), shape.levels(), e, local, remote);
    }
    if (pc.handler != 0) SendPeer(rt, rank, pc);
    return Outcome{};
  }
  return RunAm(rt, form, put, rank,
               StridedPairs(shape, static_cast<unsigned char*>(local_base), rb),
               flags, pc);
}

inline gex_Event_t Event(const Outcome& o) { return o.event; }
inline int Code(const Outcome& o) { return o.rc; }

}  // namespace

void VisInit(Runtime& rt) {
  g_force_am = env::GetBool("GEX_RMA_FORCE_AM", false);
  g_pack = std::min({kPackMax, rt.max_medium});
  if (g_pack <= kHeader) {
    FatalErrorF(
        "gex_Client_Init: the largest Medium (%zu bytes) is too small "
        "for VIS",
        rt.max_medium);
  }
  am::Entry entries[4];
  entries[0].index = kPutRequestIndex;
  entries[0].fn = reinterpret_cast<am::HandlerFn>(&PutRequestHandler);
  entries[0].flags = am::kFlagMedium | am::kFlagRequest;
  entries[0].nargs = 2;
  entries[0].name = "gex VIS put";
  entries[1].index = kGetRequestIndex;
  entries[1].fn = reinterpret_cast<am::HandlerFn>(&GetRequestHandler);
  entries[1].flags = am::kFlagMedium | am::kFlagRequest;
  entries[1].nargs = kReplyArgs;
  entries[1].name = "gex VIS get";
  entries[2].index = kReplyIndex;
  entries[2].fn = reinterpret_cast<am::HandlerFn>(&ReplyHandler);
  entries[2].flags = am::kFlagMedium | am::kFlagReply;
  entries[2].nargs = kReplyArgs;
  entries[2].name = "gex VIS reply";
  entries[3].index = kPeerIndex;
  entries[3].fn = reinterpret_cast<am::HandlerFn>(&PeerHandler);
  entries[3].flags = am::kFlagMedium | am::kFlagRequest;
  entries[3].nargs = 1;
  entries[3].name = "gex VIS peer completion";
  const absl::Status s = rt.handlers.Register(entries, 4, /*internal=*/true);
  if (!s.ok()) FatalErrorF("gex_Client_Init: VIS handlers: %s", s.message());
}

}  // namespace gexrt::api

using gexrt::api::Form;

extern "C" {

// ---- Vector ----------------------------------------------------------------

gex_Event_t gex_VIS_VectorPutNB(gex_TM_t tm, gex_Rank_t dstrank,
                                size_t dstcount, gex_Memvec_t const dstlist[],
                                size_t srccount, gex_Memvec_t const srclist[],
                                gex_Flags_t flags) {
  return gexrt::api::Event(
      gexrt::api::RunVector("gex_VIS_VectorPutNB", Form::kNB, true, tm, dstrank,
                            dstcount, dstlist, srccount, srclist, flags));
}
int gex_VIS_VectorPutNBI(gex_TM_t tm, gex_Rank_t dstrank, size_t dstcount,
                         gex_Memvec_t const dstlist[], size_t srccount,
                         gex_Memvec_t const srclist[], gex_Flags_t flags) {
  return gexrt::api::Code(gexrt::api::RunVector(
      "gex_VIS_VectorPutNBI", Form::kNBI, true, tm, dstrank, dstcount, dstlist,
      srccount, srclist, flags));
}
int gex_VIS_VectorPutBlocking(gex_TM_t tm, gex_Rank_t dstrank, size_t dstcount,
                              gex_Memvec_t const dstlist[], size_t srccount,
                              gex_Memvec_t const srclist[], gex_Flags_t flags) {
  return gexrt::api::Code(gexrt::api::RunVector(
      "gex_VIS_VectorPutBlocking", Form::kBlocking, true, tm, dstrank, dstcount,
      dstlist, srccount, srclist, flags));
}
gex_Event_t gex_VIS_VectorGetNB(gex_TM_t tm, size_t dstcount,
                                gex_Memvec_t const dstlist[],
                                gex_Rank_t srcrank, size_t srccount,
                                gex_Memvec_t const srclist[],
                                gex_Flags_t flags) {
  return gexrt::api::Event(gexrt::api::RunVector(
      "gex_VIS_VectorGetNB", Form::kNB, false, tm, srcrank, dstcount, dstlist,
      srccount, srclist, flags));
}
int gex_VIS_VectorGetNBI(gex_TM_t tm, size_t dstcount,
                         gex_Memvec_t const dstlist[], gex_Rank_t srcrank,
                         size_t srccount, gex_Memvec_t const srclist[],
                         gex_Flags_t flags) {
  return gexrt::api::Code(gexrt::api::RunVector(
      "gex_VIS_VectorGetNBI", Form::kNBI, false, tm, srcrank, dstcount, dstlist,
      srccount, srclist, flags));
}
int gex_VIS_VectorGetBlocking(gex_TM_t tm, size_t dstcount,
                              gex_Memvec_t const dstlist[], gex_Rank_t srcrank,
                              size_t srccount, gex_Memvec_t const srclist[],
                              gex_Flags_t flags) {
  return gexrt::api::Code(gexrt::api::RunVector(
      "gex_VIS_VectorGetBlocking", Form::kBlocking, false, tm, srcrank,
      dstcount, dstlist, srccount, srclist, flags));
}

// ---- Indexed ---------------------------------------------------------------

gex_Event_t gex_VIS_IndexedPutNB(gex_TM_t tm, gex_Rank_t dstrank,
                                 size_t dstcount, void* const dstlist[],
                                 size_t dstlen, size_t srccount,
                                 void* const srclist[], size_t srclen,
                                 gex_Flags_t flags) {
  return gexrt::api::Event(gexrt::api::RunIndexed(
      "gex_VIS_IndexedPutNB", Form::kNB, true, tm, dstrank, dstcount, dstlist,
      dstlen, srccount, srclist, srclen, flags));
}
int gex_VIS_IndexedPutNBI(gex_TM_t tm, gex_Rank_t dstrank, size_t dstcount,
                          void* const dstlist[], size_t dstlen, size_t srccount,
                          void* const srclist[], size_t srclen,
                          gex_Flags_t flags) {
  return gexrt::api::Code(gexrt::api::RunIndexed(
      "gex_VIS_IndexedPutNBI", Form::kNBI, true, tm, dstrank, dstcount, dstlist,
      dstlen, srccount, srclist, srclen, flags));
}
int gex_VIS_IndexedPutBlocking(gex_TM_t tm, gex_Rank_t dstrank, size_t dstcount,
                               void* const dstlist[], size_t dstlen,
                               size_t srccount, void* const srclist[],
                               size_t srclen, gex_Flags_t flags) {
  return gexrt::api::Code(gexrt::api::RunIndexed(
      "gex_VIS_IndexedPutBlocking", Form::kBlocking, true, tm, dstrank,
      dstcount, dstlist, dstlen, srccount, srclist, srclen, flags));
}
gex_Event_t gex_VIS_IndexedGetNB(gex_TM_t tm, size_t dstcount,
                                 void* const dstlist[], size_t dstlen,
                                 gex_Rank_t srcrank, size_t srccount,
                                 void* const srclist[], size_t srclen,
                                 gex_Flags_t flags) {
  return gexrt::api::Event(gexrt::api::RunIndexed(
      "gex_VIS_IndexedGetNB", Form::kNB, false, tm, srcrank, dstcount, dstlist,
      dstlen, srccount, srclist, srclen, flags));
}
int gex_VIS_IndexedGetNBI(gex_TM_t tm, size_t dstcount, void* const dstlist[],
                          size_t dstlen, gex_Rank_t srcrank, size_t srccount,
                          void* const srclist[], size_t srclen,
                          gex_Flags_t flags) {
  return gexrt::api::Code(gexrt::api::RunIndexed(
      "gex_VIS_IndexedGetNBI", Form::kNBI, false, tm, srcrank, dstcount,
      dstlist, dstlen, srccount, srclist, srclen, flags));
}
int gex_VIS_IndexedGetBlocking(gex_TM_t tm, size_t dstcount,
                               void* const dstlist[], size_t dstlen,
                               gex_Rank_t srcrank, size_t srccount,
                               void* const srclist[], size_t srclen,
                               gex_Flags_t flags) {
  return gexrt::api::Code(gexrt::api::RunIndexed(
      "gex_VIS_IndexedGetBlocking", Form::kBlocking, false, tm, srcrank,
      dstcount, dstlist, dstlen, srccount, srclist, srclen, flags));
}

// ---- Strided ---------------------------------------------------------------

gex_Event_t gex_VIS_StridedPutNB(gex_TM_t tm, gex_Rank_t dstrank, void* dstaddr,
                                 const ptrdiff_t dststrides[], void* srcaddr,
                                 const ptrdiff_t srcstrides[], size_t elemsz,
                                 const size_t count[], size_t stridelevels,
                                 gex_Flags_t flags) {
  return gexrt::api::Event(gexrt::api::RunStrided(
      "gex_VIS_StridedPutNB", Form::kNB, true, tm, dstrank, dstaddr, dststrides,
      srcaddr, srcstrides, elemsz, count, stridelevels, flags));
}
int gex_VIS_StridedPutNBI(gex_TM_t tm, gex_Rank_t dstrank, void* dstaddr,
                          const ptrdiff_t dststrides[], void* srcaddr,
                          const ptrdiff_t srcstrides[], size_t elemsz,
                          const size_t count[], size_t stridelevels,
                          gex_Flags_t flags) {
  return gexrt::api::Code(gexrt::api::RunStrided(
      "gex_VIS_StridedPutNBI", Form::kNBI, true, tm, dstrank, dstaddr,
      dststrides, srcaddr, srcstrides, elemsz, count, stridelevels, flags));
}
int gex_VIS_StridedPutBlocking(gex_TM_t tm, gex_Rank_t dstrank, void* dstaddr,
                               const ptrdiff_t dststrides[], void* srcaddr,
                               const ptrdiff_t srcstrides[], size_t elemsz,
                               const size_t count[], size_t stridelevels,
                               gex_Flags_t flags) {
  return gexrt::api::Code(gexrt::api::RunStrided(
      "gex_VIS_StridedPutBlocking", Form::kBlocking, true, tm, dstrank, dstaddr,
      dststrides, srcaddr, srcstrides, elemsz, count, stridelevels, flags));
}
gex_Event_t gex_VIS_StridedGetNB(gex_TM_t tm, void* dstaddr,
                                 const ptrdiff_t dststrides[],
                                 gex_Rank_t srcrank, void* srcaddr,
                                 const ptrdiff_t srcstrides[], size_t elemsz,
                                 const size_t count[], size_t stridelevels,
                                 gex_Flags_t flags) {
  return gexrt::api::Event(gexrt::api::RunStrided(
      "gex_VIS_StridedGetNB", Form::kNB, false, tm, srcrank, dstaddr,
      dststrides, srcaddr, srcstrides, elemsz, count, stridelevels, flags));
}
int gex_VIS_StridedGetNBI(gex_TM_t tm, void* dstaddr,
                          const ptrdiff_t dststrides[], gex_Rank_t srcrank,
                          void* srcaddr, const ptrdiff_t srcstrides[],
                          size_t elemsz, const size_t count[],
                          size_t stridelevels, gex_Flags_t flags) {
  return gexrt::api::Code(gexrt::api::RunStrided(
      "gex_VIS_StridedGetNBI", Form::kNBI, false, tm, srcrank, dstaddr,
      dststrides, srcaddr, srcstrides, elemsz, count, stridelevels, flags));
}
int gex_VIS_StridedGetBlocking(gex_TM_t tm, void* dstaddr,
                               const ptrdiff_t dststrides[], gex_Rank_t srcrank,
                               void* srcaddr, const ptrdiff_t srcstrides[],
                               size_t elemsz, const size_t count[],
                               size_t stridelevels, gex_Flags_t flags) {
  return gexrt::api::Code(
      gexrt::api::RunStrided("gex_VIS_StridedGetBlocking", Form::kBlocking,
                             false, tm, srcrank, dstaddr, dststrides, srcaddr,
                             srcstrides, elemsz, count, stridelevels, flags));
}

// ---- Peer completion -------------------------------------------------------

void gex_VIS_SetPeerCompletionHandler(gex_AM_Index_t handler,
                                      const void* source_addr, size_t nbytes,
                                      gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_VIS_SetPeerCompletionHandler";
  gexrt::api::Runtime& rt = gexrt::api::RuntimeFor(kCall);
  if (flags != 0) {
    gexrt::FatalErrorF("%s: flags 0x%x: none are taken (pass 0)", kCall,
                       static_cast<unsigned>(flags));
  }
  if (handler == 0) {
    gexrt::api::tl_peer = gexrt::api::PeerCompletion{};
    return;
  }
  if (nbytes > GEX_VIS_MAX_PEERCOMPLETION) {
    gexrt::FatalErrorF(
        "%s: nbytes %zu is above GEX_VIS_MAX_PEERCOMPLETION (%zu)", kCall,
        nbytes, GEX_VIS_MAX_PEERCOMPLETION);
  }
  if (nbytes != 0 && source_addr == nullptr) {
    gexrt::FatalErrorF("%s: source_addr is NULL with nbytes %zu", kCall,
                       nbytes);
  }
  // Handlers are registered alike on every rank: this rank's table says
  // what the peer's will run.
  const gexrt::am::Entry* e = rt.handlers.Find(handler);
  constexpr uint32_t kNeed = gexrt::am::kFlagMedium | gexrt::am::kFlagReply;
  if (handler < gexrt::am::kClientIndexBase || e == nullptr ||
      (e->flags & kNeed) != kNeed ||
      (e->nargs != 0 && e->nargs != gexrt::am::kAnyArgs)) {
    gexrt::FatalErrorF(
        "%s: handler %u is not a registered client handler of "
        "GEX_FLAG_AM_MEDIUM"
        " | GEX_FLAG_AM_REPLY with 0 arguments",
        kCall, static_cast<unsigned>(handler));
  }
  gexrt::api::tl_peer = gexrt::api::PeerCompletion{
      handler, nbytes != 0 ? source_addr : nullptr, nbytes};
}

}  // extern "C"
