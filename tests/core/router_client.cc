// router_client: one rank of a job over the socket conduit (SEQ), started
// by gasnetrun_socket from router_job_test with 4 ranks and
// GASNET_SUPERNODE_MAXSIZE=2, so that ranks {0,1} and {2,3} are supernodes:
// each rank's PSHM peer is rank^1 and its conduit peer rank^2. Written
// against <gasnetex.h>, plus the socket conduit's counters
// (SocketConduit::Created()->stats()) to see which transport carried what.
// A failed CHECK prints "rank R: CHECK FAILED ..." and exits 1 at once; a
// rank that passed its mode prints "rank R: <mode> ok <fields>".
//
// Every rank first checks the topology (its neighbourhood is {r&~1, r|1})
// and prints "rank R: job=<GEX_JOB_ID>".
//
//   am        To its PSHM peer and to its conduit peer, Short, Medium (0,
//             1, 1000 bytes and the maximum) and Long (1, 5000 bytes and
//             the maximum) Requests, each answered by a Reply of the same
//             category. Handlers check the token's source against the
//             sender's argument, every argument, every payload byte, and
//             that a Long's buf is the address the sender named in this
//             rank's segment. Then the conduit's counters over that window:
//             requests and replies sent and replies received exactly the
//             conduit peer's share (none for the PSHM peer: replies return
//             by the route their request came).
//   immediate Rank 2 stops polling (after telling rank 0 so); rank 0 sends
//             it IMMEDIATE Short Requests over the conduit until one is
//             refused (at most 100000), checks that IMMEDIATE Medium and
//             Long Requests are refused too, and asks rank 3 (rank 2's PSHM
//             peer) to release rank 2 with the count, which rank 3 writes
//             into rank 2's segment through its shared mapping. Rank 2 then
//             polls until exactly that many arrive, once each, in order.
//   rma <path>  Put and Get (blocking, NB; 100 bytes and 200000 bytes, which
//             is four chunks) to the PSHM peer and the conduit peer; every
//             byte checked by a Get back and by the target. <path> says
//             which rung the conduit peer must take: "rdma" (conduit RDMA:
//             its rdma counters move, no AM), "am" (GEX_TEST_CONDUIT_RDMA=0:
//             one AM request per chunk, no RDMA) or "force-am"
//             (GEX_RMA_FORCE_AM=1: the same, and the PSHM peer's NB Put
//             returns an event instead of completing inline). To the PSHM
//             peer the conduit's counters never move.
//   coll      Barriers, broadcasts from a root in each supernode, a
//             reduce-to-all and a reduce-to-one across both supernodes.
//   flood     Every rank sends 3000 Medium Requests alternately to its
//             PSHM peer and its conduit peer without waiting for replies,
//             each answered by a 4 KiB Medium Reply; every request and
//             reply must arrive. Ranks waiting for room on the conduit and
//             ranks waiting on PSHM wait for each other unless every wait
//             polls both transports (the router and InitArgs::others).
//   par       (router_par_client, GASNET_PAR) Three threads per rank send
//             Medium Requests alternately to both peers while the main
//             thread polls, then each Puts and Gets two chunks to each
//             peer; every request and reply arrives once, every byte is
//             checked.
//   exit <code>      Every rank calls gasnet_exit(code) after a barrier.
//   exit-one <code>  Rank 3 calls gasnet_exit(code) while the others wait
//             in a barrier that never completes: the exit reaches them
//             over PSHM and the conduit.
#include <gasnetex.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/testing/socket_conduit.h"

namespace {

using gexrt::core::testing::SocketConduit;
using gexrt::core::testing::SocketConduitStats;

int g_me = -1;

[[noreturn]] __attribute__((format(printf, 4, 5))) void CheckFailed(
    const char* file, int line, const char* cond, const char* fmt, ...) {
  char message[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "rank %d: CHECK FAILED %s:%d: %s: %s\n", g_me, file, line,
          cond, message);
  fflush(stderr);
  _exit(1);
}

#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) CheckFailed(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)

__attribute__((format(printf, 1, 2))) void Say(const char* fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  printf("rank %d: %s\n", g_me, line);
  fflush(stdout);
}

// ---------------------------------------------------------------------------
// The job.

constexpr gex_Rank_t kRanks = 4;
constexpr uintptr_t kSegSize = 8 << 20;
// Segment layout: Long Requests land in [kReqRegion, +...) at a slot per
// (sender, case), Long Replies in [kRepRegion, +...) at a slot per
// (responder, case), RMA in [kRmaRegion, +...) at a slot per initiator.
constexpr size_t kSlot = 65536 + 4096;
constexpr size_t kCases = 8;
constexpr size_t kReqRegion = 0;
constexpr size_t kRepRegion = kReqRegion + kRanks * kCases * kSlot;
constexpr size_t kRmaRegion = kRepRegion + kRanks * kCases * kSlot;
constexpr size_t kRmaSlot = 512 << 10;
constexpr size_t kControl = kRmaRegion + kRanks * kRmaSlot;
static_assert(kControl + 4096 <= kSegSize);
constexpr int kPollBound = 100000000;

gex_Client_t g_client;
gex_EP_t g_ep;
gex_TM_t g_tm;
gex_Segment_t g_seg;
gex_Rank_t g_n;
unsigned char* g_base;
unsigned char* g_owner[kRanks];  // each rank's segment as its owner sees it
unsigned char* g_local[kRanks];  // mapped here (null: not a PSHM peer)
gex_Rank_t g_pshm_peer;
gex_Rank_t g_conduit_peer;

SocketConduit& Conduit() {
  SocketConduit* c = SocketConduit::Created();
  CHECK(c != nullptr, "the process's conduit is not the socket conduit");
  return *c;
}

template <typename Done>
void PollUntil(Done done, const char* what) {
  for (int i = 0; !done(); ++i) {
    CHECK(i < kPollBound, "still waiting for %s", what);
    gasnet_AMPoll();
  }
}

void Barrier() { gex_Coll_BarrierBlocking(g_tm, 0); }

unsigned char Byte(unsigned from, unsigned what, size_t i) {
  return static_cast<unsigned char>((from * 37 + what * 11 + i * 7 + (i >> 9)) &
                                    0xff);
}

void Fill(unsigned char* p, size_t len, unsigned from, unsigned what) {
  for (size_t i = 0; i < len; ++i) p[i] = Byte(from, what, i);
}

void CheckBytes(const unsigned char* p, size_t len, unsigned from,
                unsigned what, const char* where) {
  for (size_t i = 0; i < len; ++i) {
    CHECK(p[i] == Byte(from, what, i),
          "%s: byte %zu of %zu from rank %u (case %u) is 0x%02x, expected "
          "0x%02x",
          where, i, len, from, what, p[i], Byte(from, what, i));
  }
}

gex_Rank_t Source(gex_Token_t token, bool request) {
  gex_Token_Info_t info;
  const gex_TI_t got = gex_Token_Info(token, &info, GEX_TI_ALL);
  CHECK((got & (GEX_TI_SRCRANK | GEX_TI_IS_REQ)) ==
            (GEX_TI_SRCRANK | GEX_TI_IS_REQ),
        "gex_Token_Info mask %u", got);
  CHECK(info.gex_is_req == (request ? 1 : 0), "is_req %d", info.gex_is_req);
  CHECK(info.gex_srcrank < g_n, "srcrank %u", info.gex_srcrank);
  return info.gex_srcrank;
}

// ---------------------------------------------------------------------------
// am

enum : gex_AM_Index_t {
  kReqShort = GEX_AM_INDEX_BASE,
  kRepShort,
  kReqMedium,
  kRepMedium,
  kReqLong,
  kRepLong,
  kImmShort,
  kImmMedium,
  kImmLong,
  kImmReady,
  kImmRelease,
  kFloodReq,
  kFloodRep,
  kParReq,
  kParRep,
};

// Per peer: requests handled from it, replies received from it.
int g_requests_from[kRanks];
int g_replies_from[kRanks];

// The i-th case's Medium size to `peer`.
size_t MediumSize(gex_Rank_t peer, unsigned c) {
  const size_t sizes[] = {0, 1, 1000};
  if (c < 3) return sizes[c];
  return gex_AM_MaxRequestMedium(g_tm, peer, GEX_EVENT_NOW, 0, 3);
}
size_t LongSize(gex_Rank_t peer, unsigned c) {
  const size_t sizes[] = {1, 5000};
  if (c < 2) return sizes[c];
  return gex_AM_MaxRequestLong(g_tm, peer, GEX_EVENT_NOW, 0, 3);
}

void ReqShortHandler(gex_Token_t t, gex_AM_Arg_t sender, gex_AM_Arg_t seq,
                     gex_AM_Arg_t a2, gex_AM_Arg_t a3) {
  const gex_Rank_t src = Source(t, true);
  CHECK(src == static_cast<gex_Rank_t>(sender), "short from %u says %d", src,
        sender);
  CHECK(a2 == static_cast<gex_AM_Arg_t>(0xdeadbeefu) && a3 == -7,
        "short args %d %d", a2, a3);
  CHECK(seq == static_cast<gex_AM_Arg_t>(g_me), "short seq %d", seq);
  ++g_requests_from[src];
  CHECK(gex_AM_ReplyShort3(t, kRepShort, 0, g_me, ~a2, src * 100) == 0,
        "reply short");
}

void RepShortHandler(gex_Token_t t, gex_AM_Arg_t responder, gex_AM_Arg_t a1,
                     gex_AM_Arg_t a2) {
  const gex_Rank_t src = Source(t, false);
  CHECK(src == static_cast<gex_Rank_t>(responder), "reply from %u says %d", src,
        responder);
  CHECK(a1 == static_cast<gex_AM_Arg_t>(~0xdeadbeefu) && a2 == g_me * 100,
        "reply short args %d %d", a1, a2);
  ++g_replies_from[src];
}

// Medium: args (sender, case, size).
void ReqMediumHandler(gex_Token_t t, void* buf, size_t nbytes,
                      gex_AM_Arg_t sender, gex_AM_Arg_t c, gex_AM_Arg_t size) {
  const gex_Rank_t src = Source(t, true);
  CHECK(src == static_cast<gex_Rank_t>(sender), "medium from %u says %d", src,
        sender);
  CHECK(nbytes == static_cast<size_t>(size), "medium of %zu bytes, sent %d",
        nbytes, size);
  CheckBytes(static_cast<unsigned char*>(buf), nbytes, src, c, "medium");
  ++g_requests_from[src];
  const size_t back = gex_Token_MaxReplyMedium(t, GEX_EVENT_NOW, 0, 3);
  CHECK(back >= 1000, "gex_Token_MaxReplyMedium %zu", back);
  const size_t len = c < 3 ? nbytes : back;
  std::vector<unsigned char> reply(len);
  Fill(reply.data(), len, g_me, c + 50);
  CHECK(gex_AM_ReplyMedium3(t, kRepMedium, reply.data(), len, GEX_EVENT_NOW, 0,
                            g_me, c, static_cast<gex_AM_Arg_t>(len)) == 0,
        "reply medium");
}

void RepMediumHandler(gex_Token_t t, void* buf, size_t nbytes,
                      gex_AM_Arg_t responder, gex_AM_Arg_t c,
                      gex_AM_Arg_t size) {
  const gex_Rank_t src = Source(t, false);
  CHECK(src == static_cast<gex_Rank_t>(responder), "reply from %u says %d", src,
        responder);
  CHECK(nbytes == static_cast<size_t>(size), "medium reply %zu bytes, sent %d",
        nbytes, size);
  CheckBytes(static_cast<unsigned char*>(buf), nbytes, src, c + 50,
             "medium reply");
  ++g_replies_from[src];
}

// Long: args (sender, case, size); it lands in the request region at the
// (sender, case) slot; the reply in the requester's reply region at the
// (responder, case) slot.
void ReqLongHandler(gex_Token_t t, void* buf, size_t nbytes,
                    gex_AM_Arg_t sender, gex_AM_Arg_t c, gex_AM_Arg_t size) {
  const gex_Rank_t src = Source(t, true);
  CHECK(src == static_cast<gex_Rank_t>(sender), "long from %u says %d", src,
        sender);
  CHECK(nbytes == static_cast<size_t>(size), "long of %zu bytes, sent %d",
        nbytes, size);
  unsigned char* want = g_base + kReqRegion + (src * kCases + c) * kSlot;
  CHECK(buf == want, "long from %u landed at %p, sent to %p", src, buf,
        static_cast<void*>(want));
  CheckBytes(want, nbytes, src, c + 100, "long");
  ++g_requests_from[src];
  const size_t len =
      c < 2 ? nbytes : gex_Token_MaxReplyLong(t, GEX_EVENT_NOW, 0, 3);
  std::vector<unsigned char> reply(len);
  Fill(reply.data(), len, g_me, c + 150);
  unsigned char* dest = g_owner[src] + kRepRegion + (g_me * kCases + c) * kSlot;
  CHECK(gex_AM_ReplyLong3(t, kRepLong, reply.data(), len, dest, GEX_EVENT_NOW,
                          0, g_me, c, static_cast<gex_AM_Arg_t>(len)) == 0,
        "reply long");
}

void RepLongHandler(gex_Token_t t, void* buf, size_t nbytes,
                    gex_AM_Arg_t responder, gex_AM_Arg_t c, gex_AM_Arg_t size) {
  const gex_Rank_t src = Source(t, false);
  CHECK(src == static_cast<gex_Rank_t>(responder), "reply from %u says %d", src,
        responder);
  CHECK(nbytes == static_cast<size_t>(size), "long reply %zu bytes, sent %d",
        nbytes, size);
  unsigned char* want = g_base + kRepRegion + (src * kCases + c) * kSlot;
  CHECK(buf == want, "long reply from %u landed at %p, expected %p", src, buf,
        static_cast<void*>(want));
  CheckBytes(want, nbytes, src, c + 150, "long reply");
  ++g_replies_from[src];
}

// Sends every case to `peer`; returns how many requests.
int SendAll(gex_Rank_t peer) {
  int sent = 0;
  CHECK(gex_AM_RequestShort4(g_tm, peer, kReqShort, 0, g_me,
                             static_cast<gex_AM_Arg_t>(peer),
                             static_cast<gex_AM_Arg_t>(0xdeadbeefu), -7) == 0,
        "request short");
  ++sent;
  for (unsigned c = 0; c < 4; ++c) {
    const size_t len = MediumSize(peer, c);
    std::vector<unsigned char> data(len);
    Fill(data.data(), len, g_me, c);
    CHECK(gex_AM_RequestMedium3(g_tm, peer, kReqMedium, data.data(), len,
                                GEX_EVENT_NOW, 0, g_me, c,
                                static_cast<gex_AM_Arg_t>(len)) == 0,
          "request medium");
    ++sent;
  }
  for (unsigned c = 0; c < 3; ++c) {
    const size_t len = LongSize(peer, c);
    CHECK(len <= kSlot, "long max %zu", len);
    std::vector<unsigned char> data(len);
    Fill(data.data(), len, g_me, c + 100);
    unsigned char* dest =
        g_owner[peer] + kReqRegion + (g_me * kCases + c) * kSlot;
    CHECK(gex_AM_RequestLong3(g_tm, peer, kReqLong, data.data(), len, dest,
                              GEX_EVENT_NOW, 0, g_me, c,
                              static_cast<gex_AM_Arg_t>(len)) == 0,
          "request long");
    ++sent;
  }
  return sent;
}

void ModeAm() {
  // Two phases, a barrier apart: in the first every rank talks only to its
  // PSHM peer, in the second only to its conduit peer. The barrier sends
  // Requests only, so the counts of replies sent and received are exact
  // over each phase, and so is the count of requests this rank sends
  // after its own barrier is over; requests received may include a late
  // barrier message from another rank.
  Barrier();
  const SocketConduitStats s0 = Conduit().stats();
  const int to_pshm = SendAll(g_pshm_peer);
  PollUntil(
      [&] {
        return g_replies_from[g_pshm_peer] == to_pshm &&
               g_requests_from[g_pshm_peer] == to_pshm;
      },
      "the PSHM peer's messages");
  const SocketConduitStats s1 = Conduit().stats();
  const uint64_t pshm_requests = s1.requests_sent - s0.requests_sent;
  const uint64_t pshm_replies = s1.replies_sent - s0.replies_sent;
  const uint64_t pshm_replies_received =
      s1.replies_received - s0.replies_received;
  CHECK(pshm_requests == 0 && pshm_replies == 0 && pshm_replies_received == 0,
        "the conduit carried PSHM-peer traffic: requests %" PRIu64
        " replies %" PRIu64 " replies received %" PRIu64,
        pshm_requests, pshm_replies, pshm_replies_received);
  Barrier();
  const SocketConduitStats s2 = Conduit().stats();
  const int to_conduit = SendAll(g_conduit_peer);
  PollUntil(
      [&] {
        return g_replies_from[g_conduit_peer] == to_conduit &&
               g_requests_from[g_conduit_peer] == to_conduit;
      },
      "the conduit peer's messages");
  const SocketConduitStats s3 = Conduit().stats();
  // Sent by this rank after its barrier: exact. Replies to the conduit
  // peer may have been sent (and its requests received) while this rank
  // was still finishing the barrier, so those count from s1.
  const uint64_t requests = s3.requests_sent - s2.requests_sent;
  const uint64_t replies = s3.replies_sent - s1.replies_sent;
  const uint64_t replies_received = s3.replies_received - s1.replies_received;
  const uint64_t requests_received =
      s3.requests_received - s1.requests_received;
  CHECK(requests == static_cast<uint64_t>(to_conduit) &&
            replies == static_cast<uint64_t>(to_conduit) &&
            replies_received == static_cast<uint64_t>(to_conduit) &&
            requests_received >= static_cast<uint64_t>(to_conduit),
        "conduit counters: requests %" PRIu64 " replies %" PRIu64
        " replies received %" PRIu64 " requests received %" PRIu64
        ", expected %d each",
        requests, replies, replies_received, requests_received, to_conduit);
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    if (r == g_pshm_peer || r == g_conduit_peer) continue;
    CHECK(g_requests_from[r] == 0 && g_replies_from[r] == 0,
          "messages from rank %u", r);
  }
  Barrier();
  Say("am ok pshm=%d conduit=%d pshm_conduit_requests=%" PRIu64
      " pshm_conduit_replies=%" PRIu64 " conduit_requests=%" PRIu64
      " conduit_replies=%" PRIu64 " conduit_replies_received=%" PRIu64,
      to_pshm, to_conduit, pshm_requests, pshm_replies, requests, replies,
      replies_received);
}

// ---------------------------------------------------------------------------
// immediate

constexpr int kImmSender = 0;
constexpr int kImmTarget = 2;
constexpr int kImmHelper = 3;
constexpr uint32_t kImmBound = 100000;

struct ImmControl {
  std::atomic<uint32_t> released;
  std::atomic<uint32_t> count;
};

ImmControl* ControlAt(unsigned char* segment) {
  return reinterpret_cast<ImmControl*>(segment + kControl);
}

std::atomic<int> g_imm_ready{0};
int g_imm_release = -1;
uint32_t g_imm_received = 0;

void ImmShortHandler(gex_Token_t t, gex_AM_Arg_t sender, gex_AM_Arg_t seq) {
  const gex_Rank_t src = Source(t, true);
  CHECK(src == kImmSender && sender == static_cast<gex_AM_Arg_t>(src),
        "immediate from %u says %d", src, sender);
  CHECK(static_cast<uint32_t>(seq) == g_imm_received,
        "immediate sequence %d, expected %u (lost or duplicated)", seq,
        g_imm_received);
  ++g_imm_received;
}
void ImmRefusedHandler(gex_Token_t, void*, size_t, gex_AM_Arg_t) {
  CHECK(false, "a refused IMMEDIATE Medium or Long was delivered");
}
void ImmReadyHandler(gex_Token_t t) {
  CHECK(Source(t, true) == kImmTarget, "ready");
  g_imm_ready = 1;
}
void ImmReleaseHandler(gex_Token_t t, gex_AM_Arg_t count) {
  CHECK(Source(t, true) == kImmSender, "release");
  g_imm_release = count;
}

void ModeImmediate() {
  Barrier();
  if (g_me == kImmTarget) {
    // Tell the sender, then stop polling: nothing drains this rank's
    // conduit sockets until rank 3 writes the release into this segment.
    CHECK(gex_AM_RequestShort0(g_tm, kImmSender, kImmReady, 0) == 0, "ready");
    ImmControl* control = ControlAt(g_base);
    for (uint64_t i = 0; control->released.load(std::memory_order_acquire) == 0;
         ++i) {
      CHECK(i < (uint64_t{1} << 40), "never released");
      sched_yield();
    }
    const uint32_t count = control->count.load(std::memory_order_relaxed);
    CHECK(g_imm_received == 0, "%u arrived while not polling", g_imm_received);
    PollUntil([&] { return g_imm_received >= count; },
              "the accepted IMMEDIATE requests");
    Barrier();
    // Anything refused that arrived late would have failed the sequence.
    CHECK(g_imm_received == count, "%u arrived, %u accepted", g_imm_received,
          count);
    Say("immediate ok received=%u", count);
  } else if (g_me == kImmSender) {
    PollUntil([] { return g_imm_ready.load() != 0; }, "the target's ready");
    const SocketConduitStats before = Conduit().stats();
    uint32_t sent = 0;
    int rc = 0;
    for (; sent < kImmBound; ++sent) {
      rc = gex_AM_RequestShort2(g_tm, kImmTarget, kImmShort, GEX_FLAG_IMMEDIATE,
                                g_me, static_cast<gex_AM_Arg_t>(sent));
      if (rc != 0) break;
    }
    CHECK(rc != 0, "%u IMMEDIATE requests to a rank not polling were accepted",
          kImmBound);
    unsigned char payload[16] = {};
    CHECK(gex_AM_RequestMedium1(g_tm, kImmTarget, kImmMedium, payload,
                                sizeof payload, GEX_EVENT_NOW,
                                GEX_FLAG_IMMEDIATE, 0) != 0,
          "IMMEDIATE Medium to a full conduit was accepted");
    CHECK(
        gex_AM_RequestLong1(g_tm, kImmTarget, kImmLong, payload, sizeof payload,
                            g_owner[kImmTarget] + kControl + 64, GEX_EVENT_NOW,
                            GEX_FLAG_IMMEDIATE, 0) != 0,
        "IMMEDIATE Long to a full conduit was accepted");
    const SocketConduitStats after = Conduit().stats();
    CHECK(after.would_block - before.would_block == 3, "would_block %" PRIu64,
          after.would_block - before.would_block);
    CHECK(after.requests_sent - before.requests_sent == sent,
          "requests sent %" PRIu64 ", accepted %u",
          after.requests_sent - before.requests_sent, sent);
    CHECK(gex_AM_RequestShort1(g_tm, kImmHelper, kImmRelease, 0,
                               static_cast<gex_AM_Arg_t>(sent)) == 0,
          "release");
    Barrier();
    Say("immediate ok sent=%u would_block=%" PRIu64, sent,
        after.would_block - before.would_block);
  } else if (g_me == kImmHelper) {
    PollUntil([] { return g_imm_release >= 0; }, "the release");
    ImmControl* control = ControlAt(g_local[kImmTarget]);
    control->count.store(static_cast<uint32_t>(g_imm_release),
                         std::memory_order_relaxed);
    control->released.store(1, std::memory_order_release);
    Barrier();
    Say("immediate ok released=%d", g_imm_release);
  } else {
    Barrier();
    Say("immediate ok idle");
  }
}

// ---------------------------------------------------------------------------
// rma

constexpr size_t kSmall = 100;
constexpr size_t kLarge = 200000;  // four 64 KiB chunks
// Where in an initiator's slot: the small Put, the NB Put, the large Put.
constexpr size_t kNbAt = 1024;
constexpr size_t kLargeAt = 4096;
static_assert(kLargeAt + kLarge <= kRmaSlot);

struct RmaCounts {
  uint64_t requests, rdma_puts, rdma_gets;
};

RmaCounts Delta(const SocketConduitStats& a, const SocketConduitStats& b) {
  return {b.requests_sent - a.requests_sent, b.rdma_puts - a.rdma_puts,
          b.rdma_gets - a.rdma_gets};
}

// Put and Get to `peer`: my slot in its RMA region gets the small pattern
// at 0 and the large at 4096. Returns whether the NB Put completed inline
// (GEX_EVENT_INVALID).
bool RmaTo(gex_Rank_t peer) {
  unsigned char* slot = g_owner[peer] + kRmaRegion + g_me * kRmaSlot;
  std::vector<unsigned char> small(kSmall), large(kLarge);
  Fill(small.data(), kSmall, g_me, 200 + peer);
  Fill(large.data(), kLarge, g_me, 210 + peer);
  CHECK(gex_RMA_PutBlocking(g_tm, peer, slot, small.data(), kSmall, 0) == 0,
        "put small");
  CHECK(gex_RMA_PutBlocking(g_tm, peer, slot + kLargeAt, large.data(), kLarge,
                            0) == 0,
        "put large");
  std::vector<unsigned char> back(kLarge, 0);
  CHECK(gex_RMA_GetBlocking(g_tm, back.data(), peer, slot, kSmall, 0) == 0,
        "get small");
  CheckBytes(back.data(), kSmall, g_me, 200 + peer, "get small");
  CHECK(gex_RMA_GetBlocking(g_tm, back.data(), peer, slot + kLargeAt, kLarge,
                            0) == 0,
        "get large");
  CheckBytes(back.data(), kLarge, g_me, 210 + peer, "get large");
  // NB: another small Put, and a Get of the large one into this rank's
  // segment (over AMs: a Long reply straight into it).
  std::vector<unsigned char> nb(kSmall);
  Fill(nb.data(), kSmall, g_me, 220 + peer);
  gex_Event_t put = gex_RMA_PutNB(g_tm, peer, slot + kNbAt, nb.data(), kSmall,
                                  GEX_EVENT_NOW, 0);
  const bool inline_put = put == GEX_EVENT_INVALID;
  gex_Event_Wait(put);
  // This rank's own slot of its own segment: no other rank writes there.
  unsigned char* into = g_base + kRmaRegion + g_me * kRmaSlot + kLargeAt;
  std::memset(into, 0, kLarge);
  gex_Event_t get = gex_RMA_GetNB(g_tm, into, peer, slot + kLargeAt, kLarge, 0);
  gex_Event_Wait(get);
  CheckBytes(into, kLarge, g_me, 210 + peer, "get nb into the segment");
  return inline_put;
}

void ModeRma(const std::string& path) {
  CHECK(path == "rdma" || path == "am" || path == "force-am", "path %s",
        path.c_str());
  Barrier();
  const SocketConduitStats s0 = Conduit().stats();
  const bool pshm_inline = RmaTo(g_pshm_peer);
  const SocketConduitStats s1 = Conduit().stats();
  const bool conduit_inline = RmaTo(g_conduit_peer);
  const SocketConduitStats s2 = Conduit().stats();
  const RmaCounts pshm = Delta(s0, s1);
  const RmaCounts conduit = Delta(s1, s2);
  CHECK(pshm.requests == 0 && pshm.rdma_puts == 0 && pshm.rdma_gets == 0,
        "RMA to the PSHM peer used the conduit: requests %" PRIu64
        " puts %" PRIu64 " gets %" PRIu64,
        pshm.requests, pshm.rdma_puts, pshm.rdma_gets);
  CHECK(pshm_inline == (path != "force-am"), "the PSHM peer's NB Put %s inline",
        pshm_inline ? "completed" : "did not complete");
  CHECK(!conduit_inline, "the conduit peer's NB Put completed inline");
  // 3 Puts and 3 Gets; over AMs one request per chunk: 1 + 4 + 1 (Puts),
  // 1 + 4 + 4 (Gets).
  if (path == "rdma") {
    CHECK(conduit.requests == 0 && conduit.rdma_puts == 3 &&
              conduit.rdma_gets == 3,
          "RDMA rung: requests %" PRIu64 " puts %" PRIu64 " gets %" PRIu64,
          conduit.requests, conduit.rdma_puts, conduit.rdma_gets);
  } else {
    CHECK(conduit.requests == 15 && conduit.rdma_puts == 0 &&
              conduit.rdma_gets == 0,
          "AM path: requests %" PRIu64 " puts %" PRIu64 " gets %" PRIu64,
          conduit.requests, conduit.rdma_puts, conduit.rdma_gets);
  }
  Barrier();
  // What the two peers put here.
  for (const gex_Rank_t from : {g_pshm_peer, g_conduit_peer}) {
    const unsigned char* slot = g_base + kRmaRegion + from * kRmaSlot;
    CheckBytes(slot, kSmall, from, 200 + g_me, "put small, at the target");
    CheckBytes(slot + kLargeAt, kLarge, from, 210 + g_me,
               "put large, at the target");
    CheckBytes(slot + kNbAt, kSmall, from, 220 + g_me, "put nb, at the target");
  }
  Barrier();
  Say("rma ok path=%s pshm_requests=%" PRIu64 " pshm_rdma=%" PRIu64
      " conduit_requests=%" PRIu64 " conduit_rdma_puts=%" PRIu64
      " conduit_rdma_gets=%" PRIu64 " pshm_nb_inline=%d",
      path.c_str(), pshm.requests, pshm.rdma_puts + pshm.rdma_gets,
      conduit.requests, conduit.rdma_puts, conduit.rdma_gets,
      pshm_inline ? 1 : 0);
}

// ---------------------------------------------------------------------------
// coll

void ModeColl() {
  const SocketConduitStats before = Conduit().stats();
  for (int i = 0; i < 5; ++i) Barrier();
  for (const gex_Rank_t root : {gex_Rank_t{2}, gex_Rank_t{1}}) {
    std::vector<unsigned char> src(70000), dst(70000, 0);
    if (static_cast<gex_Rank_t>(g_me) == root)
      Fill(src.data(), src.size(), root, 230);
    gex_Event_Wait(gex_Coll_BroadcastNB(g_tm, root, dst.data(), src.data(),
                                        dst.size(), 0));
    CheckBytes(dst.data(), dst.size(), root, 230, "broadcast");
  }
  constexpr size_t kCount = 100;
  std::vector<uint64_t> mine(kCount), all(kCount, 0), one(kCount, 0);
  for (size_t i = 0; i < kCount; ++i) mine[i] = (g_me + 1) * (i + 1);
  gex_Event_Wait(gex_Coll_ReduceToAllNB(g_tm, all.data(), mine.data(),
                                        GEX_DT_U64, sizeof(uint64_t), kCount,
                                        GEX_OP_ADD, nullptr, nullptr, 0));
  gex_Event_Wait(gex_Coll_ReduceToOneNB(g_tm, 3, one.data(), mine.data(),
                                        GEX_DT_U64, sizeof(uint64_t), kCount,
                                        GEX_OP_ADD, nullptr, nullptr, 0));
  const uint64_t ranks_sum = uint64_t{g_n} * (g_n + 1) / 2;
  for (size_t i = 0; i < kCount; ++i) {
    CHECK(all[i] == ranks_sum * (i + 1), "reduce-to-all [%zu] = %" PRIu64, i,
          all[i]);
    if (g_me == 3) {
      CHECK(one[i] == ranks_sum * (i + 1), "reduce-to-one [%zu] = %" PRIu64, i,
            one[i]);
    }
  }
  Barrier();
  const SocketConduitStats after = Conduit().stats();
  Say("coll ok conduit_requests=%" PRIu64 " conduit_received=%" PRIu64,
      after.requests_sent - before.requests_sent,
      after.requests_received - before.requests_received);
}

// ---------------------------------------------------------------------------
// flood

constexpr int kFlood = 3000;
constexpr size_t kFloodReply = 4096;
int g_flood_requests = 0;
int g_flood_replies = 0;

void FloodReqHandler(gex_Token_t t, void* buf, size_t nbytes,
                     gex_AM_Arg_t sender, gex_AM_Arg_t i) {
  CHECK(Source(t, true) == static_cast<gex_Rank_t>(sender), "flood source");
  CHECK(nbytes == 512, "flood %zu bytes", nbytes);
  CheckBytes(static_cast<unsigned char*>(buf), 16, sender, i & 0xff, "flood");
  ++g_flood_requests;
  static unsigned char reply[kFloodReply];
  Fill(reply, 16, g_me, (i + 1) & 0xff);
  CHECK(gex_AM_ReplyMedium1(t, kFloodRep, reply, sizeof reply, GEX_EVENT_NOW, 0,
                            i) == 0,
        "flood reply");
}
void FloodRepHandler(gex_Token_t t, void* buf, size_t nbytes, gex_AM_Arg_t i) {
  const gex_Rank_t src = Source(t, false);
  CHECK(nbytes == kFloodReply, "flood reply %zu bytes", nbytes);
  CheckBytes(static_cast<unsigned char*>(buf), 16, src, (i + 1) & 0xff,
             "flood reply");
  ++g_flood_replies;
}

void ModeFlood() {
  Barrier();
  std::vector<unsigned char> data(512);
  for (int i = 0; i < kFlood; ++i) {
    const gex_Rank_t peer = i % 2 == 0 ? g_pshm_peer : g_conduit_peer;
    Fill(data.data(), 16, g_me, i & 0xff);
    CHECK(gex_AM_RequestMedium2(g_tm, peer, kFloodReq, data.data(), data.size(),
                                GEX_EVENT_NOW, 0, g_me, i) == 0,
          "flood request");
  }
  PollUntil(
      [] { return g_flood_replies == kFlood && g_flood_requests == kFlood; },
      "the flood");
  Barrier();
  Say("flood ok requests=%d replies=%d", g_flood_requests, g_flood_replies);
}

// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// par (the PAR build only)

constexpr int kParThreads = 3;
constexpr int kParEach = 400;
constexpr size_t kParRma = 100000;  // two chunks
std::atomic<int> g_par_requests{0};
std::atomic<int> g_par_replies{0};

void ParReqHandler(gex_Token_t t, void* buf, size_t nbytes, gex_AM_Arg_t sender,
                   gex_AM_Arg_t id) {
  CHECK(Source(t, true) == static_cast<gex_Rank_t>(sender), "par source");
  CHECK(nbytes == 256, "par %zu bytes", nbytes);
  CheckBytes(static_cast<unsigned char*>(buf), nbytes, sender, id & 0xff,
             "par request");
  g_par_requests.fetch_add(1);
  CHECK(gex_AM_ReplyShort2(t, kParRep, 0, g_me, id) == 0, "par reply");
}
void ParRepHandler(gex_Token_t t, gex_AM_Arg_t responder, gex_AM_Arg_t) {
  CHECK(Source(t, false) == static_cast<gex_Rank_t>(responder), "par reply");
  g_par_replies.fetch_add(1);
}

#if defined(GASNET_PAR)
// One thread: Medium Requests alternately to both peers, then a Put and a
// Get back to each in its own part of this rank's RMA slots there.
void ParThread(int tid) {
  std::vector<unsigned char> data(256);
  for (int i = 0; i < kParEach; ++i) {
    const gex_Rank_t peer = i % 2 == 0 ? g_pshm_peer : g_conduit_peer;
    const gex_AM_Arg_t id = (tid << 16) | i;
    Fill(data.data(), data.size(), g_me, id & 0xff);
    CHECK(gex_AM_RequestMedium2(g_tm, peer, kParReq, data.data(), data.size(),
                                GEX_EVENT_NOW, 0, g_me, id) == 0,
          "par request");
    if (i % 16 == 0) gasnet_AMPoll();
  }
  for (const gex_Rank_t peer : {g_pshm_peer, g_conduit_peer}) {
    unsigned char* at =
        g_owner[peer] + kRmaRegion + g_me * kRmaSlot + tid * kParRma;
    std::vector<unsigned char> out(kParRma), back(kParRma, 0);
    Fill(out.data(), kParRma, g_me, 240 + tid);
    CHECK(gex_RMA_PutBlocking(g_tm, peer, at, out.data(), kParRma, 0) == 0,
          "par put");
    CHECK(gex_RMA_GetBlocking(g_tm, back.data(), peer, at, kParRma, 0) == 0,
          "par get");
    CheckBytes(back.data(), kParRma, g_me, 240 + tid, "par get");
  }
}

#endif  // GASNET_PAR

void ModePar() {
#if defined(GASNET_PAR)
  static_assert(kParThreads * kParRma <= kRmaSlot);
  Barrier();
  const SocketConduitStats before = Conduit().stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < kParThreads; ++t) threads.emplace_back(ParThread, t);
  // This thread polls too while the others send.
  constexpr int kTotal = kParThreads * kParEach;
  PollUntil(
      [] {
        return g_par_replies.load() == kTotal &&
               g_par_requests.load() == kTotal;
      },
      "the threads' messages");
  for (std::thread& t : threads) t.join();
  const SocketConduitStats after = Conduit().stats();
  Barrier();
  Say("par ok requests=%d replies=%d conduit_rdma_puts=%" PRIu64
      " conduit_rdma_gets=%" PRIu64,
      g_par_requests.load(), g_par_replies.load(),
      after.rdma_puts - before.rdma_puts, after.rdma_gets - before.rdma_gets);
#else
  CHECK(false, "mode par needs the PAR build (router_par_client)");
#endif
}

void RegisterHandlers() {
  const gex_Flags_t req = GEX_FLAG_AM_REQUEST, rep = GEX_FLAG_AM_REPLY;
  gex_AM_Entry_t entries[] = {
      {kReqShort, reinterpret_cast<gex_AM_Fn_t>(&ReqShortHandler),
       GEX_FLAG_AM_SHORT | req, 4, nullptr, "req short"},
      {kRepShort, reinterpret_cast<gex_AM_Fn_t>(&RepShortHandler),
       GEX_FLAG_AM_SHORT | rep, 3, nullptr, "rep short"},
      {kReqMedium, reinterpret_cast<gex_AM_Fn_t>(&ReqMediumHandler),
       GEX_FLAG_AM_MEDIUM | req, 3, nullptr, "req medium"},
      {kRepMedium, reinterpret_cast<gex_AM_Fn_t>(&RepMediumHandler),
       GEX_FLAG_AM_MEDIUM | rep, 3, nullptr, "rep medium"},
      {kReqLong, reinterpret_cast<gex_AM_Fn_t>(&ReqLongHandler),
       GEX_FLAG_AM_LONG | req, 3, nullptr, "req long"},
      {kRepLong, reinterpret_cast<gex_AM_Fn_t>(&RepLongHandler),
       GEX_FLAG_AM_LONG | rep, 3, nullptr, "rep long"},
      {kImmShort, reinterpret_cast<gex_AM_Fn_t>(&ImmShortHandler),
       GEX_FLAG_AM_SHORT | req, 2, nullptr, "imm short"},
      {kImmMedium, reinterpret_cast<gex_AM_Fn_t>(&ImmRefusedHandler),
       GEX_FLAG_AM_MEDIUM | req, 1, nullptr, "imm medium"},
      {kImmLong, reinterpret_cast<gex_AM_Fn_t>(&ImmRefusedHandler),
       GEX_FLAG_AM_LONG | req, 1, nullptr, "imm long"},
      {kImmReady, reinterpret_cast<gex_AM_Fn_t>(&ImmReadyHandler),
       GEX_FLAG_AM_SHORT | req, 0, nullptr, "imm ready"},
      {kImmRelease, reinterpret_cast<gex_AM_Fn_t>(&ImmReleaseHandler),
       GEX_FLAG_AM_SHORT | req, 1, nullptr, "imm release"},
      {kFloodReq, reinterpret_cast<gex_AM_Fn_t>(&FloodReqHandler),
       GEX_FLAG_AM_MEDIUM | req, 2, nullptr, "flood req"},
      {kParReq, reinterpret_cast<gex_AM_Fn_t>(&ParReqHandler),
       GEX_FLAG_AM_MEDIUM | req, 2, nullptr, "par req"},
      {kParRep, reinterpret_cast<gex_AM_Fn_t>(&ParRepHandler),
       GEX_FLAG_AM_SHORT | rep, 2, nullptr, "par rep"},
      {kFloodRep, reinterpret_cast<gex_AM_Fn_t>(&FloodRepHandler),
       GEX_FLAG_AM_MEDIUM | rep, 1, nullptr, "flood rep"},
  };
  CHECK(gex_EP_RegisterHandlers(
            g_ep, entries, sizeof entries / sizeof entries[0]) == GASNET_OK,
        "gex_EP_RegisterHandlers");
}

void CheckTopology() {
  CHECK(g_n == kRanks, "run with %u ranks, not %u", kRanks, g_n);
  gex_RankInfo_t* info = nullptr;
  gex_Rank_t count = 0, index = 0;
  gex_System_QueryNbrhdInfo(&info, &count, &index);
  CHECK(count == 2 && info[0].gex_jobrank == (g_me & ~1u) &&
            info[1].gex_jobrank == (g_me | 1u),
        "neighbourhood of %u ranks (run with GASNET_SUPERNODE_MAXSIZE=2)",
        count);
  g_pshm_peer = g_me ^ 1u;
  g_conduit_peer = g_me ^ 2u;
}

}  // namespace

int main(int argc, char** argv) {
  CHECK(gex_Client_Init(&g_client, &g_ep, &g_tm, "router_client", &argc, &argv,
                        0) == GASNET_OK,
        "gex_Client_Init");
  g_me = static_cast<int>(gex_TM_QueryRank(g_tm));
  g_n = gex_TM_QuerySize(g_tm);
  CHECK(argc >= 2, "usage: router_client <mode> [arg]");
  const std::string mode = argv[1];
  const std::string arg = argc >= 3 ? argv[2] : "";
  CheckTopology();
  CHECK(std::strcmp(Conduit().name(), "socket") == 0, "conduit %s",
        Conduit().name());
  CHECK(gex_Segment_Attach(&g_seg, g_tm, kSegSize) == GASNET_OK,
        "gex_Segment_Attach");
  g_base = static_cast<unsigned char*>(gex_Segment_QueryAddr(g_seg));
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    void* owner = nullptr;
    void* local = nullptr;
    uintptr_t size = 0;
    gex_EP_QueryBoundSegmentNB(g_tm, r, &owner, &local, &size, 0);
    CHECK(owner != nullptr && size >= kSegSize, "rank %u's segment", r);
    g_owner[r] = static_cast<unsigned char*>(owner);
    g_local[r] = static_cast<unsigned char*>(local);
    CHECK((local != nullptr) == (r == static_cast<gex_Rank_t>(g_me) ||
                                 r == (static_cast<gex_Rank_t>(g_me) ^ 1u)),
          "rank %u is %smapped here", r, local != nullptr ? "" : "not ");
  }
  RegisterHandlers();
  const char* job = std::getenv("GEX_JOB_ID");
  Say("job=%s", job != nullptr ? job : "");

  if (mode == "am") {
    ModeAm();
  } else if (mode == "immediate") {
    ModeImmediate();
  } else if (mode == "rma") {
    ModeRma(arg);
  } else if (mode == "coll") {
    ModeColl();
  } else if (mode == "par") {
    ModePar();
  } else if (mode == "flood") {
    ModeFlood();
  } else if (mode == "exit") {
    Barrier();
    gasnet_exit(std::atoi(arg.c_str()));
  } else if (mode == "exit-one") {
    Barrier();
    if (g_me == 3) gasnet_exit(std::atoi(arg.c_str()));
    Barrier();  // Never completes: rank 3 left.
    Say("survived the barrier");
    return 1;
  } else {
    CHECK(false, "unknown mode %s", mode.c_str());
  }
  Barrier();
  gasnet_exit(0);
  return 0;
}
