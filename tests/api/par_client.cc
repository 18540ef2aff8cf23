// par_client: one rank of a multi-threaded Active Message job on the smp
// conduit in PAR mode (built against //conduit/smp:gasnet_smp_par), started
// by gasnetrun_smp from par_job_test. It is also the C++ compile check of the
// public headers: it includes <gasnet.h>, <gasnetex.h> and <gasnet_tools.h>
// and is built with -Wall -Wextra -Wpedantic -Werror. par_job_test also runs
// it under `--config=tsan` and judges ThreadSanitizer's reports.
//
//   par ROUNDS  4 sender threads per rank; in each round every sender thread
//               sends every rank (itself too) a Short, a Medium and a Long
//               Request (4 arguments: sender, thread, round, category) and
//               polls until all their replies are back, while 2 more threads
//               and the main thread only poll. Request handlers (on whichever
//               thread polls) check the token (gex_Token_Info srcrank ==
//               the sender argument), that the rounds of each (sender,
//               thread, category) arrive in order, the payload and the Long
//               address, then reply with the same category; reply handlers
//               check the same. A handler-safe lock (gex_HSL_t) guards a
//               plain byte count. After the senders are joined the main
//               thread runs 20 barriers while the pollers go on polling;
//               then every (sender, thread) must have been seen
//               3 * ROUNDS times and every thread must have 3 * n * ROUNDS
//               replies. Prints "rank R: par ok requests=Q replies=P".
//   rma-poll PHASES
//               Progress for the threads that need it while others spin: the
//               main thread of each rank runs PHASES phases of blocking Puts
//               and Gets of its own pattern to the next rank's segment,
//               checking what it reads back, with a barrier after each phase
//               (gasnet_barrier_notify/wait); meanwhile 3 more threads spin
//               in gasnet_AMPoll() with no pause at all, as real clients'
//               progress threads do. On 2 CPUs this is 2 x 4 threads that all
//               want a CPU: it must still finish. Prints
//               "rank R: rma-poll ok phases=P".
#include <gasnet.h>
#include <gasnet_tools.h>
#include <gasnetex.h>
#include <sched.h>

#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "tests/api/client_check.h"

namespace {

constexpr int kSenders = 4;
constexpr int kPollers = 2;
constexpr int kBarriersWhilePolling = 20;
constexpr size_t kArea = 2048;  // a Long landing area; payloads are smaller
enum Category : int { kShort = 0, kMedium = 1, kLong = 2, kCategories = 3 };

constexpr gex_AM_Index_t kShortReq = 130;
constexpr gex_AM_Index_t kShortRep = 131;
constexpr gex_AM_Index_t kMediumReq = 132;
constexpr gex_AM_Index_t kMediumRep = 133;
constexpr gex_AM_Index_t kLongReq = 134;
constexpr gex_AM_Index_t kLongRep = 135;

gex_TM_t g_tm;
gex_EP_t g_ep;
gex_Rank_t g_me;
gex_Rank_t g_n;
char* g_base;
std::vector<char*> g_owner;  // every rank's segment, as it sees it

// [sender][thread][category]: rounds seen so far.
std::unique_ptr<std::atomic<int32_t>[]> g_seen;
std::atomic<uint64_t> g_replies[kSenders];
std::atomic<uint64_t> g_requests{0};
std::atomic<bool> g_done{false};
gex_HSL_t g_lock = GEX_HSL_INITIALIZER;
uint64_t g_bytes = 0;  // guarded by g_lock

std::atomic<int32_t>& Seen(gex_Rank_t sender, int thread, int cat) {
  return g_seen[(static_cast<size_t>(sender) * kSenders + thread) *
                    kCategories +
                cat];
}

// Where a Long from `sender`'s thread lands: requests first, then replies.
size_t LongOffset(bool request, gex_Rank_t sender, int thread) {
  return ((request ? 0 : g_n) + static_cast<size_t>(sender)) * kSenders *
             kArea +
         static_cast<size_t>(thread) * kArea;
}

size_t PayloadLen(gex_Rank_t sender, gex_Rank_t target, int thread,
                  int32_t round, bool request) {
  return 1 + (sender * 13u + target * 5u + thread * 7u +
              static_cast<uint32_t>(round) * 3u + (request ? 0u : 1u)) %
                 1000u;
}

uint8_t PayloadByte(gex_Rank_t sender, int thread, int32_t round, size_t i) {
  return static_cast<uint8_t>(sender * 31u + thread * 17u +
                              static_cast<uint32_t>(round) * 3u + i * 11u);
}

void Fill(uint8_t* buf, size_t len, gex_Rank_t sender, int thread,
          int32_t round) {
  for (size_t i = 0; i < len; ++i)
    buf[i] = PayloadByte(sender, thread, round, i);
}

void Poll() {
  gasnet_AMPoll();
  sched_yield();
}

// Checks a message's token, arguments and payload; returns its sender.
gex_Rank_t Check(gex_Token_t t, int cat, bool request, const void* buf,
                 size_t nbytes, gex_AM_Arg_t a0, gex_AM_Arg_t a1,
                 gex_AM_Arg_t a2, gex_AM_Arg_t a3) {
  gex_Token_Info_t info;
  const gex_TI_t got = gex_Token_Info(t, &info, GEX_TI_ALL);
  CHECK((got & (GEX_TI_SRCRANK | GEX_TI_IS_REQ)) ==
            (GEX_TI_SRCRANK | GEX_TI_IS_REQ),
        "gex_Token_Info returned 0x%x", got);
  const gex_Rank_t src = info.gex_srcrank;
  CHECK(src < g_n && !!info.gex_is_req == request, "srcrank %u is_req %d", src,
        static_cast<int>(info.gex_is_req));
  // A request names its sender; a reply names its responder.
  CHECK(a0 == static_cast<gex_AM_Arg_t>(src), "arg 0 %" PRId32 " from %u", a0,
        src);
  CHECK(a1 >= 0 && a1 < kSenders && a3 == (request ? cat : ~a2),
        "args %" PRId32 " %" PRId32 " %" PRId32 " %" PRId32 " from %u", a0, a1,
        a2, a3, src);
  const int thread = a1;
  const int32_t round = a2;
  if (cat != kShort) {
    const size_t len = PayloadLen(src, g_me, thread, round, request);
    CHECK(nbytes == len, "%zu bytes from %u, expected %zu", nbytes, src, len);
    const uint8_t* p = static_cast<const uint8_t*>(buf);
    for (size_t i = 0; i < len; ++i) {
      CHECK(p[i] == PayloadByte(src, thread, round, i),
            "byte %zu of %zu from %u (thread %d round %d)", i, len, src, thread,
            round);
    }
    if (cat == kLong) {
      const char* at = g_base + LongOffset(request, src, thread);
      CHECK(buf == at, "Long from %u at %p, expected %p", src, buf,
            static_cast<const void*>(at));
    }
    gex_HSL_Lock(&g_lock);
    g_bytes += nbytes;
    gex_HSL_Unlock(&g_lock);
  }
  return src;
}

void OnRequest(gex_Token_t t, int cat, void* buf, size_t nbytes,
               gex_AM_Arg_t a0, gex_AM_Arg_t a1, gex_AM_Arg_t a2,
               gex_AM_Arg_t a3) {
  const gex_Rank_t src = Check(t, cat, true, buf, nbytes, a0, a1, a2, a3);
  const int thread = a1;
  const int32_t round = a2;
  // One message per (sender, thread, category) per round, and the next round
  // only after the reply: they arrive in order.
  const int32_t before = Seen(src, thread, cat).fetch_add(1);
  CHECK(before == round, "round %d from %u thread %d category %d, expected %d",
        round, src, thread, cat, before);
  g_requests.fetch_add(1);
  uint8_t payload[1024];
  const size_t len = PayloadLen(g_me, src, thread, round, false);
  Fill(payload, len, g_me, thread, round);
  const gex_AM_Arg_t me = static_cast<gex_AM_Arg_t>(g_me);
  int rc;
  switch (cat) {
    case kShort:
      rc = gex_AM_ReplyShort4(t, kShortRep, 0, me, a1, a2, ~a2);
      break;
    case kMedium:
      rc = gex_AM_ReplyMedium(t, kMediumRep, payload, len, GEX_EVENT_NOW, 0, me,
                              a1, a2, ~a2);
      break;
    default:
      rc = gex_AM_ReplyLong4(t, kLongRep, payload, len,
                             g_owner[src] + LongOffset(false, g_me, thread),
                             GEX_EVENT_NOW, 0, me, a1, a2, ~a2);
  }
  CHECK(rc == 0, "reply returned %d", rc);
}

void OnReply(gex_Token_t t, int cat, void* buf, size_t nbytes, gex_AM_Arg_t a0,
             gex_AM_Arg_t a1, gex_AM_Arg_t a2, gex_AM_Arg_t a3) {
  Check(t, cat, false, buf, nbytes, a0, a1, a2, a3);
  g_replies[a1].fetch_add(1);
}

void ShortReq(gex_Token_t t, gex_AM_Arg_t a0, gex_AM_Arg_t a1, gex_AM_Arg_t a2,
              gex_AM_Arg_t a3) {
  OnRequest(t, kShort, nullptr, 0, a0, a1, a2, a3);
}
void ShortRep(gex_Token_t t, gex_AM_Arg_t a0, gex_AM_Arg_t a1, gex_AM_Arg_t a2,
              gex_AM_Arg_t a3) {
  OnReply(t, kShort, nullptr, 0, a0, a1, a2, a3);
}
void MediumReq(gex_Token_t t, void* buf, size_t nbytes, gex_AM_Arg_t a0,
               gex_AM_Arg_t a1, gex_AM_Arg_t a2, gex_AM_Arg_t a3) {
  OnRequest(t, kMedium, buf, nbytes, a0, a1, a2, a3);
}
void MediumRep(gex_Token_t t, void* buf, size_t nbytes, gex_AM_Arg_t a0,
               gex_AM_Arg_t a1, gex_AM_Arg_t a2, gex_AM_Arg_t a3) {
  OnReply(t, kMedium, buf, nbytes, a0, a1, a2, a3);
}
void LongReq(gex_Token_t t, void* buf, size_t nbytes, gex_AM_Arg_t a0,
             gex_AM_Arg_t a1, gex_AM_Arg_t a2, gex_AM_Arg_t a3) {
  OnRequest(t, kLong, buf, nbytes, a0, a1, a2, a3);
}
void LongRep(gex_Token_t t, void* buf, size_t nbytes, gex_AM_Arg_t a0,
             gex_AM_Arg_t a1, gex_AM_Arg_t a2, gex_AM_Arg_t a3) {
  OnReply(t, kLong, buf, nbytes, a0, a1, a2, a3);
}

template <typename Fn>
gex_AM_Entry_t Entry(gex_AM_Index_t index, Fn* fn, gex_Flags_t flags,
                     const char* name) {
  return gex_AM_Entry_t{
      index, reinterpret_cast<gex_AM_Fn_t>(fn), flags, 4, nullptr, name};
}

void Sender(int thread, int32_t rounds) {
  uint8_t payload[1024];
  const gex_AM_Arg_t me = static_cast<gex_AM_Arg_t>(g_me);
  for (int32_t round = 0; round < rounds; ++round) {
    for (gex_Rank_t k = 0; k < g_n; ++k) {
      const gex_Rank_t to = (g_me + k + static_cast<gex_Rank_t>(thread)) % g_n;
      int rc = gex_AM_RequestShort(g_tm, to, kShortReq, 0, me, thread, round,
                                   kShort);
      CHECK(rc == 0, "RequestShort returned %d", rc);
      size_t len = PayloadLen(g_me, to, thread, round, true);
      Fill(payload, len, g_me, thread, round);
      rc = gex_AM_RequestMedium4(g_tm, to, kMediumReq, payload, len,
                                 GEX_EVENT_NOW, 0, me, thread, round, kMedium);
      CHECK(rc == 0, "RequestMedium returned %d", rc);
      std::memset(payload, 0xEE, len);  // free once the call returned
      Fill(payload, len, g_me, thread, round);
      gex_Event_t ev = GEX_EVENT_NO_OP;
      rc = gex_AM_RequestLong(g_tm, to, kLongReq, payload, len,
                              g_owner[to] + LongOffset(true, g_me, thread), &ev,
                              0, me, thread, round, kLong);
      CHECK(rc == 0 && ev == GEX_EVENT_INVALID,
            "RequestLong returned %d, lc event %p", rc, static_cast<void*>(ev));
    }
    const uint64_t expected = 3ull * g_n * static_cast<uint64_t>(round + 1);
    while (g_replies[thread].load() < expected) Poll();
  }
}

// rma-poll: see the top of the file.
constexpr int kSpinPollers = 3;
constexpr size_t kRmaWords = 64;  // per transfer
constexpr int kRmaPerPhase = 16;  // Put + Get pairs per phase

uint64_t RmaWord(gex_Rank_t writer, int phase, int op, size_t i) {
  return (static_cast<uint64_t>(writer) << 40) ^
         (static_cast<uint64_t>(phase) << 20) ^
         (static_cast<uint64_t>(op) << 10) ^ i;
}

int RmaPoll(int32_t phases) {
  const gex_Rank_t peer = (g_me + 1) % g_n;
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (int i = 0; i < kSpinPollers; ++i) {
    spinners.emplace_back([&stop] {
      while (!stop.load(std::memory_order_relaxed)) gasnet_AMPoll();
    });
  }
  uint64_t out[kRmaWords];
  uint64_t in[kRmaWords];
  // Each rank writes its own slice of the peer's segment.
  const size_t slice = g_me * kRmaWords * sizeof(uint64_t);
  for (int32_t phase = 0; phase < phases; ++phase) {
    for (int op = 0; op < kRmaPerPhase; ++op) {
      for (size_t i = 0; i < kRmaWords; ++i)
        out[i] = RmaWord(g_me, phase, op, i);
      int rc = gex_RMA_PutBlocking(g_tm, peer, g_owner[peer] + slice, out,
                                   sizeof out, 0);
      CHECK(rc == 0, "gex_RMA_PutBlocking returned %d", rc);
      std::memset(in, 0, sizeof in);
      rc = gex_RMA_GetBlocking(g_tm, in, peer, g_owner[peer] + slice, sizeof in,
                               0);
      CHECK(rc == 0, "gex_RMA_GetBlocking returned %d", rc);
      for (size_t i = 0; i < kRmaWords; ++i) {
        CHECK(in[i] == out[i],
              "phase %d op %d word %zu: read %" PRIx64 ", wrote %" PRIx64,
              phase, op, i, in[i], out[i]);
      }
    }
    gasnet_barrier_notify(phase, 0);
    const int rc = gasnet_barrier_wait(phase, 0);
    CHECK(rc == GASNET_OK, "gasnet_barrier_wait returned %d", rc);
  }
  stop = true;
  for (std::thread& t : spinners) t.join();
  Say("rma-poll ok phases=%d", phases);
  gex_Coll_BarrierBlocking(g_tm, 0);
  gasnet_exit(0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  gex_Client_t client;
  gex_Segment_t seg;
  int rc =
      gex_Client_Init(&client, &g_ep, &g_tm, "par_client", &argc, &argv, 0);
  CHECK(rc == GASNET_OK, "gex_Client_Init returned %d", rc);
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = static_cast<int>(g_me);
  CHECK(argc == 3 && (std::strcmp(argv[1], "par") == 0 ||
                      std::strcmp(argv[1], "rma-poll") == 0),
        "usage: par_client par ROUNDS | rma-poll PHASES");
  const bool rma_poll = std::strcmp(argv[1], "rma-poll") == 0;
  const int32_t rounds = std::atoi(argv[2]);
  CHECK(rounds > 0, "ROUNDS %s", argv[2]);
  CHECK(gex_System_QueryMaxThreads() >= kSenders + kPollers + 1,
        "gex_System_QueryMaxThreads() = %" PRIu64,
        gex_System_QueryMaxThreads());

  gex_AM_Entry_t entries[] = {
      Entry(kShortReq, ShortReq, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST,
            "short request"),
      Entry(kShortRep, ShortRep, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY,
            "short reply"),
      Entry(kMediumReq, MediumReq, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST,
            "medium request"),
      Entry(kMediumRep, MediumRep, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REPLY,
            "medium reply"),
      Entry(kLongReq, LongReq, GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQUEST,
            "long request"),
      Entry(kLongRep, LongRep, GEX_FLAG_AM_LONG | GEX_FLAG_AM_REPLY,
            "long reply"),
  };
  rc = gex_EP_RegisterHandlers(g_ep, entries, sizeof entries / sizeof *entries);
  CHECK(rc == GASNET_OK, "gex_EP_RegisterHandlers returned %d", rc);
  rc = gex_Segment_Attach(&seg, g_tm, 2 * g_n * kSenders * kArea);
  CHECK(rc == GASNET_OK, "gex_Segment_Attach returned %d", rc);
  g_base = static_cast<char*>(gex_Segment_QueryAddr(seg));
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    void* owner = nullptr;
    CHECK(gex_EP_QueryBoundSegmentNB(g_tm, r, &owner, nullptr, nullptr, 0) ==
                  GEX_EVENT_INVALID &&
              owner != nullptr,
          "rank %u's segment", r);
    g_owner.push_back(static_cast<char*>(owner));
  }
  g_seen.reset(new std::atomic<int32_t>[static_cast<size_t>(g_n) * kSenders *
                                        kCategories]());
  gex_Coll_BarrierBlocking(g_tm, 0);
  if (rma_poll) return RmaPoll(rounds);

  std::vector<std::thread> pollers;
  for (int i = 0; i < kPollers; ++i) {
    pollers.emplace_back([] {
      while (!g_done.load()) Poll();
    });
  }
  std::vector<std::thread> senders;
  for (int t = 0; t < kSenders; ++t) senders.emplace_back(Sender, t, rounds);
  for (std::thread& t : senders) t.join();
  // Every request of this rank has its reply; the barrier (which polls)
  // waits for everyone else's. More barriers follow while the pollers go on
  // polling: barrier progress made by other threads' gasnet_AMPoll.
  for (int i = 0; i < kBarriersWhilePolling; ++i) {
    gex_Coll_BarrierBlocking(g_tm, 0);
  }
  g_done = true;
  for (std::thread& t : pollers) t.join();

  uint64_t replies = 0;
  for (int t = 0; t < kSenders; ++t) {
    const uint64_t got = g_replies[t].load();
    CHECK(got == 3ull * g_n * static_cast<uint64_t>(rounds),
          "thread %d has %" PRIu64 " replies", t, got);
    replies += got;
  }
  for (gex_Rank_t s = 0; s < g_n; ++s) {
    for (int t = 0; t < kSenders; ++t) {
      for (int c = 0; c < kCategories; ++c) {
        CHECK(Seen(s, t, c).load() == rounds,
              "rank %u thread %d category %d: %d rounds seen, expected %d", s,
              t, c, Seen(s, t, c).load(), rounds);
      }
    }
  }
  gex_HSL_Lock(&g_lock);
  const uint64_t bytes = g_bytes;
  gex_HSL_Unlock(&g_lock);
  CHECK(bytes > 0, "no payload bytes counted");
  Say("par ok requests=%" PRIu64 " replies=%" PRIu64, g_requests.load(),
      replies);
  gex_Coll_BarrierBlocking(g_tm, 0);
  gasnet_exit(0);
}
