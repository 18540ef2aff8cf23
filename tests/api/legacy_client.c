/* legacy_client: one rank of a job written against the GASNet-1 ("legacy")
 * calls of <gasnet.h>, started by gasnetrun_smp from legacy_job_test. It is
 * also the C compile check of the public headers: it includes <gasnet.h>,
 * <gasnetex.h> and <gasnet_tools.h> and is built with -Wall -Wextra
 * -Wpedantic -Werror (BUILD.bazel), so a warning in any of them fails the
 * build.
 * A failed check ends the job with exit code 1 ("rank R: CHECK FAILED").
 *
 *   am         gasnet_init; gasnet_mynode/gasnet_nodes; the segment limits
 *              (gasnet_getMaxGlobalSegmentSize <= ...Local, both at least
 *              what is attached); gasnet_attach with a gasnet_handlerentry_t
 *              table mixing fixed indices and 0 (assigned and written back);
 *              gasnet_getSegmentInfo for every rank, matched against
 *              gasnet_QueryGexObjects' segment and gex_EP_QueryBoundSegmentNB;
 *              gasnet_AMMax*. Then every rank sends every rank (itself too)
 *              gasnet_AMRequestShort0, gasnet_AMRequestShortM and
 *              gasnet_AMRequestShort4 (4 arguments, INT32_MIN among them),
 *              gasnet_AMRequestMediumM/Medium0 and gasnet_AMRequestLongM/Long0
 *              (Long into the target's gasnet_getSegmentInfo address); each
 *              handler checks gasnet_AMGetMsgSource, its arguments, payload
 *              and Long address, and answers with the matching
 *              gasnet_AMReply*; reply handlers check the same. Counts of
 *              requests and replies per peer are checked after a named
 *              barrier; then "rank R: am ok requests=Q replies=P",
 *              an anonymous barrier and gasnet_exit(0).
 *   exit-code  every rank calls gasnet_exit(3) after a barrier (the job must
 *              exit with 3).
 *   exit-one   rank 0 calls gasnet_exit(5) while the others wait in a
 *              barrier that cannot complete (the job must exit with 5, and
 *              the others must not survive it). */
#include <gasnet.h>
#include <gasnet_tools.h>
#include <gasnetex.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api/client_check.h"

enum { kSegSize = 256 * 1024, kSlot = 1024, kReplyArea = 64 * 1024 };
enum { kMaxRanks = 32, kKindsPerPeer = 7 };
enum {
  kShortReq0,
  kShortRep0,
  kShortReq4,
  kShortRep4,
  kMediumReq2,
  kMediumRep2,
  kMediumReq0,
  kMediumRep0,
  kLongReq3,
  kLongRep3,
  kLongReq0,
  kLongRep0,
  kHandlers
};

static gasnet_node_t g_me;
static gasnet_node_t g_n;
static gasnet_seginfo_t g_seg[kMaxRanks];
static gasnet_handler_t g_index[kHandlers];
static gasnett_atomic_t g_requests = gasnett_atomic_init(0);
static gasnett_atomic_t g_replies = gasnett_atomic_init(0);
static uint32_t g_from[kMaxRanks][kHandlers];

static gasnet_node_t Source(gasnet_token_t t, int handler) {
  gasnet_node_t src = GEX_RANK_INVALID;
  const int rc = gasnet_AMGetMsgSource(t, &src);
  CHECK(rc == GASNET_OK && src < g_n,
        "handler %d: gasnet_AMGetMsgSource "
        "returned %d, source %u",
        handler, rc, src);
  ++g_from[src][handler];
  if (handler % 2 == 0) {
    gasnett_atomic_increment(&g_requests, 0);
  } else {
    gasnett_atomic_increment(&g_replies, 0);
  }
  return src;
}

static size_t Len(gasnet_node_t sender, gasnet_node_t target, int handler) {
  return 1 + (sender * 37u + target * 11u + (unsigned)handler * 101u) % 900u;
}

static uint8_t Byte(gasnet_node_t sender, int handler, size_t i) {
  return (uint8_t)(sender * 59u + (unsigned)handler * 17u + i * 7u);
}

static void Fill(uint8_t *buf, gasnet_node_t sender, gasnet_node_t target,
                 int handler) {
  const size_t len = Len(sender, target, handler);
  size_t i;
  for (i = 0; i < len; ++i) buf[i] = Byte(sender, handler, i);
}

static void Expect(const void *buf, size_t nbytes, gasnet_node_t sender,
                   int handler) {
  const uint8_t *p = (const uint8_t *)buf;
  const size_t len = Len(sender, g_me, handler);
  size_t i;
  CHECK(nbytes == len, "handler %d from %u: %zu bytes, expected %zu", handler,
        sender, nbytes, len);
  for (i = 0; i < len; ++i) {
    CHECK(p[i] == Byte(sender, handler, i), "handler %d from %u: byte %zu",
          handler, sender, i);
  }
}

/* Where a Long sent with `handler` by `sender` lands in its target. */
static size_t LongOffset(gasnet_node_t sender, int handler) {
  const int reply = handler % 2;
  const int which = handler == kLongReq0 || handler == kLongRep0;
  return (size_t)reply * kReplyArea + ((size_t)sender * 2 + which) * kSlot;
}

static void ExpectLong(void *buf, size_t nbytes, gasnet_node_t sender,
                       int handler) {
  char *const at = (char *)g_seg[g_me].addr + LongOffset(sender, handler);
  CHECK(buf == at, "handler %d from %u: buf %p, expected %p", handler, sender,
        buf, (void *)at);
  Expect(buf, nbytes, sender, handler);
}

static uint8_t g_reply_src[kSlot];

static void ShortReq0(gasnet_token_t t) {
  Source(t, kShortReq0);
  CHECK(gasnet_AMReplyShort0(t, g_index[kShortRep0]) == GASNET_OK, "reply");
}
static void ShortRep0(gasnet_token_t t) { Source(t, kShortRep0); }

static void ShortReq4(gasnet_token_t t, gasnet_handlerarg_t a0,
                      gasnet_handlerarg_t a1, gasnet_handlerarg_t a2,
                      gasnet_handlerarg_t a3) {
  const gasnet_node_t src = Source(t, kShortReq4);
  CHECK(a0 == (gasnet_handlerarg_t)src && a1 == (gasnet_handlerarg_t)g_me &&
            a2 == -7 - (gasnet_handlerarg_t)src && a3 == INT32_MIN,
        "ShortReq4 from %u: args %d %d %d %d", src, a0, a1, a2, a3);
  CHECK(gasnet_AMReplyShortM(t, g_index[kShortRep4], ~a0, ~a1, ~a2, ~a3) ==
            GASNET_OK,
        "reply");
}
static void ShortRep4(gasnet_token_t t, gasnet_handlerarg_t a0,
                      gasnet_handlerarg_t a1, gasnet_handlerarg_t a2,
                      gasnet_handlerarg_t a3) {
  const gasnet_node_t src = Source(t, kShortRep4);
  CHECK(a0 == ~(gasnet_handlerarg_t)g_me && a1 == ~(gasnet_handlerarg_t)src &&
            a2 == ~(-7 - (gasnet_handlerarg_t)g_me) && a3 == INT32_MAX,
        "ShortRep4 from %u: args %d %d %d %d", src, a0, a1, a2, a3);
}

static void MediumReq2(gasnet_token_t t, void *buf, size_t nbytes,
                       gasnet_handlerarg_t a0, gasnet_handlerarg_t a1) {
  const gasnet_node_t src = Source(t, kMediumReq2);
  CHECK(a0 == (gasnet_handlerarg_t)src && a1 == (gasnet_handlerarg_t)nbytes,
        "MediumReq2 from %u: args %d %d", src, a0, a1);
  Expect(buf, nbytes, src, kMediumReq2);
  Fill(g_reply_src, g_me, src, kMediumRep2);
  CHECK(gasnet_AMReplyMediumM(
            t, g_index[kMediumRep2], g_reply_src, Len(g_me, src, kMediumRep2),
            (gasnet_handlerarg_t)g_me,
            (gasnet_handlerarg_t)Len(g_me, src, kMediumRep2)) == GASNET_OK,
        "reply");
}
static void MediumRep2(gasnet_token_t t, void *buf, size_t nbytes,
                       gasnet_handlerarg_t a0, gasnet_handlerarg_t a1) {
  const gasnet_node_t src = Source(t, kMediumRep2);
  CHECK(a0 == (gasnet_handlerarg_t)src && a1 == (gasnet_handlerarg_t)nbytes,
        "MediumRep2 from %u: args %d %d", src, a0, a1);
  Expect(buf, nbytes, src, kMediumRep2);
}

static void MediumReq0(gasnet_token_t t, void *buf, size_t nbytes) {
  const gasnet_node_t src = Source(t, kMediumReq0);
  Expect(buf, nbytes, src, kMediumReq0);
  Fill(g_reply_src, g_me, src, kMediumRep0);
  CHECK(gasnet_AMReplyMedium0(t, g_index[kMediumRep0], g_reply_src,
                              Len(g_me, src, kMediumRep0)) == GASNET_OK,
        "reply");
}
static void MediumRep0(gasnet_token_t t, void *buf, size_t nbytes) {
  Expect(buf, nbytes, Source(t, kMediumRep0), kMediumRep0);
}

static void LongReq3(gasnet_token_t t, void *buf, size_t nbytes,
                     gasnet_handlerarg_t a0, gasnet_handlerarg_t a1,
                     gasnet_handlerarg_t a2) {
  const gasnet_node_t src = Source(t, kLongReq3);
  CHECK(a0 == (gasnet_handlerarg_t)src && a1 == (gasnet_handlerarg_t)nbytes &&
            a2 == 3,
        "LongReq3 from %u: args %d %d %d", src, a0, a1, a2);
  ExpectLong(buf, nbytes, src, kLongReq3);
  Fill(g_reply_src, g_me, src, kLongRep3);
  CHECK(gasnet_AMReplyLongM(
            t, g_index[kLongRep3], g_reply_src, Len(g_me, src, kLongRep3),
            (char *)g_seg[src].addr + LongOffset(g_me, kLongRep3),
            (gasnet_handlerarg_t)g_me,
            (gasnet_handlerarg_t)Len(g_me, src, kLongRep3), 3) == GASNET_OK,
        "reply");
}
static void LongRep3(gasnet_token_t t, void *buf, size_t nbytes,
                     gasnet_handlerarg_t a0, gasnet_handlerarg_t a1,
                     gasnet_handlerarg_t a2) {
  const gasnet_node_t src = Source(t, kLongRep3);
  CHECK(a0 == (gasnet_handlerarg_t)src && a1 == (gasnet_handlerarg_t)nbytes &&
            a2 == 3,
        "LongRep3 from %u: args %d %d %d", src, a0, a1, a2);
  ExpectLong(buf, nbytes, src, kLongRep3);
}

static void LongReq0(gasnet_token_t t, void *buf, size_t nbytes) {
  const gasnet_node_t src = Source(t, kLongReq0);
  ExpectLong(buf, nbytes, src, kLongReq0);
  Fill(g_reply_src, g_me, src, kLongRep0);
  CHECK(gasnet_AMReplyLong0(
            t, g_index[kLongRep0], g_reply_src, Len(g_me, src, kLongRep0),
            (char *)g_seg[src].addr + LongOffset(g_me, kLongRep0)) == GASNET_OK,
        "reply");
}
static void LongRep0(gasnet_token_t t, void *buf, size_t nbytes) {
  ExpectLong(buf, nbytes, Source(t, kLongRep0), kLongRep0);
}

/* Checks what gasnet_attach set up against the GASNet-EX view. */
static void CheckSegments(void) {
  gex_Client_t client = GEX_CLIENT_INVALID;
  gex_EP_t ep = GEX_EP_INVALID;
  gex_TM_t tm = GEX_TM_INVALID;
  gex_Segment_t seg = GEX_SEGMENT_INVALID;
  gasnet_node_t r;
  const int rc = gasnet_getSegmentInfo(g_seg, (int)g_n);
  CHECK(rc == GASNET_OK, "gasnet_getSegmentInfo returned %d", rc);
  gasnet_QueryGexObjects(&client, &ep, &tm, &seg);
  CHECK(client != GEX_CLIENT_INVALID && ep != GEX_EP_INVALID &&
            tm != GEX_TM_INVALID && seg != GEX_SEGMENT_INVALID,
        "gasnet_QueryGexObjects left an object invalid");
  CHECK(gex_TM_QueryRank(tm) == g_me && gex_TM_QuerySize(tm) == g_n,
        "the team says rank %u of %u", gex_TM_QueryRank(tm),
        gex_TM_QuerySize(tm));
  CHECK(gex_TM_QueryEP(tm) == ep && gex_EP_QuerySegment(ep) == seg,
        "objects do not belong together");
  CHECK(gex_Segment_QueryAddr(seg) == g_seg[g_me].addr &&
            gex_Segment_QuerySize(seg) == g_seg[g_me].size,
        "my segment: %p+%" PRIuPTR " vs gasnet_getSegmentInfo %p+%" PRIuPTR,
        gex_Segment_QueryAddr(seg), gex_Segment_QuerySize(seg),
        g_seg[g_me].addr, g_seg[g_me].size);
  for (r = 0; r < g_n; ++r) {
    void *owner = NULL;
    uintptr_t size = 0;
    CHECK(g_seg[r].addr != NULL && g_seg[r].size >= kSegSize &&
              g_seg[r].size % GASNET_PAGESIZE == 0,
          "rank %u's segment %p+%" PRIuPTR, r, g_seg[r].addr, g_seg[r].size);
    CHECK(gex_EP_QueryBoundSegmentNB(tm, r, &owner, NULL, &size, 0) ==
                  GEX_EVENT_INVALID &&
              owner == g_seg[r].addr && size == g_seg[r].size,
          "rank %u: gex_EP_QueryBoundSegmentNB %p+%" PRIuPTR
          " vs gasnet_getSegmentInfo %p+%" PRIuPTR,
          r, owner, size, g_seg[r].addr, g_seg[r].size);
  }
}

static void ModeAm(void) {
  static uint8_t src[kSlot];
  const uint32_t expected = g_n * kKindsPerPeer;
  gasnet_node_t k;
  int h;
  int rc;
  CHECK(gasnet_AMMaxArgs() == 16, "gasnet_AMMaxArgs %zu", gasnet_AMMaxArgs());
  CHECK(gasnet_AMMaxMedium() >= 512 && gasnet_AMMaxLongRequest() >= 512 &&
            gasnet_AMMaxLongReply() >= 512,
        "gasnet_AMMax*: %zu %zu %zu", gasnet_AMMaxMedium(),
        gasnet_AMMaxLongRequest(), gasnet_AMMaxLongReply());
  for (k = 0; k < g_n; ++k) {
    const gasnet_node_t to = (g_me + k) % g_n;
    const gasnet_handlerarg_t me = (gasnet_handlerarg_t)g_me;
    CHECK(gasnet_AMRequestShort0(to, g_index[kShortReq0]) == GASNET_OK,
          "gasnet_AMRequestShort0");
    CHECK(gasnet_AMRequestShortM(to, g_index[kShortReq4], me,
                                 (gasnet_handlerarg_t)to, -7 - me,
                                 INT32_MIN) == GASNET_OK,
          "gasnet_AMRequestShortM");
    CHECK(gasnet_AMRequestShort4(to, g_index[kShortReq4], me,
                                 (gasnet_handlerarg_t)to, -7 - me,
                                 INT32_MIN) == GASNET_OK,
          "gasnet_AMRequestShort4");
    Fill(src, g_me, to, kMediumReq2);
    CHECK(gasnet_AMRequestMediumM(
              to, g_index[kMediumReq2], src, Len(g_me, to, kMediumReq2), me,
              (gasnet_handlerarg_t)Len(g_me, to, kMediumReq2)) == GASNET_OK,
          "gasnet_AMRequestMediumM");
    Fill(src, g_me, to, kMediumReq0);
    CHECK(gasnet_AMRequestMedium0(to, g_index[kMediumReq0], src,
                                  Len(g_me, to, kMediumReq0)) == GASNET_OK,
          "gasnet_AMRequestMedium0");
    Fill(src, g_me, to, kLongReq3);
    CHECK(gasnet_AMRequestLongM(
              to, g_index[kLongReq3], src, Len(g_me, to, kLongReq3),
              (char *)g_seg[to].addr + LongOffset(g_me, kLongReq3), me,
              (gasnet_handlerarg_t)Len(g_me, to, kLongReq3), 3) == GASNET_OK,
          "gasnet_AMRequestLongM");
    Fill(src, g_me, to, kLongReq0);
    CHECK(
        gasnet_AMRequestLong0(
            to, g_index[kLongReq0], src, Len(g_me, to, kLongReq0),
            (char *)g_seg[to].addr + LongOffset(g_me, kLongReq0)) == GASNET_OK,
        "gasnet_AMRequestLong0");
  }
  GASNET_BLOCKUNTIL(gasnett_atomic_read(&g_replies, 0) == expected);
  rc = gasnet_barrier(1234, 0);
  CHECK(rc == GASNET_OK, "gasnet_barrier returned %d", rc);
  CHECK(gasnett_atomic_read(&g_requests, 0) == expected,
        "%u requests, expected %u", gasnett_atomic_read(&g_requests, 0),
        expected);
  for (k = 0; k < g_n; ++k) {
    for (h = 0; h < kHandlers; ++h) {
      const uint32_t want = h == kShortReq4 || h == kShortRep4 ? 2 : 1;
      CHECK(g_from[k][h] == want,
            "handler %d ran %u times for rank %u, "
            "expected %u",
            h, g_from[k][h], k, want);
    }
  }
  Say("am ok requests=%u replies=%u", gasnett_atomic_read(&g_requests, 0),
      gasnett_atomic_read(&g_replies, 0));
}

int main(int argc, char **argv) {
  gasnet_handlerentry_t table[kHandlers] = {
      {0, ShortReq0},  {0, ShortRep0},  {201, ShortReq4}, {202, ShortRep4},
      {0, MediumReq2}, {0, MediumRep2}, {0, MediumReq0},  {0, MediumRep0},
      {210, LongReq3}, {0, LongRep3},   {0, LongReq0},    {0, LongRep0},
  };
  unsigned char used[256] = {0};
  const char *mode;
  uintptr_t max_local;
  uintptr_t max_global;
  int rc;
  int h;

  rc = gasnet_init(&argc, &argv);
  CHECK(rc == GASNET_OK, "gasnet_init returned %d", rc);
  g_me = gasnet_mynode();
  g_n = gasnet_nodes();
  check_rank = (int)g_me;
  CHECK(g_me < g_n && g_n <= kMaxRanks, "node %u of %u", g_me, g_n);
  CHECK(argc == 2, "usage: legacy_client am|exit-code|exit-one");
  mode = argv[1];
  max_local = gasnet_getMaxLocalSegmentSize();
  max_global = gasnet_getMaxGlobalSegmentSize();
  CHECK(max_global <= max_local && max_global >= kSegSize,
        "segment limits: local %" PRIuPTR " global %" PRIuPTR, max_local,
        max_global);
  rc = gasnet_attach(table, kHandlers, kSegSize, 0);
  CHECK(rc == GASNET_OK, "gasnet_attach returned %d", rc);
  for (h = 0; h < kHandlers; ++h) {
    CHECK(table[h].index >= 128 && !used[table[h].index],
          "entry %d has index %u", h, table[h].index);
    used[table[h].index] = 1;
    g_index[h] = table[h].index;
  }
  CHECK(g_index[kShortReq4] == 201 && g_index[kShortRep4] == 202 &&
            g_index[kLongReq3] == 210,
        "fixed indices moved");
  CHECK(gasnet_mynode() == g_me && gasnet_nodes() == g_n,
        "rank changed at attach");
  CheckSegments();
  gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
  rc = gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
  CHECK(rc == GASNET_OK, "gasnet_barrier_wait returned %d", rc);

  if (strcmp(mode, "am") == 0) {
    ModeAm();
  } else if (strcmp(mode, "exit-code") == 0) {
    Say("exit-code calling gasnet_exit(3)");
    gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
    gasnet_exit(3);
  } else if (strcmp(mode, "exit-one") == 0) {
    if (g_me == 0) {
      Say("exit-one calling gasnet_exit(5)");
      gasnet_exit(5);
    }
    /* Rank 0 never comes: only gasnet_exit(5) ends this wait. */
    gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
    Say("survived exit-one (the barrier completed without rank 0)");
  } else {
    CHECK(0, "unknown mode '%s'", mode);
  }
  gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
  rc = gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
  CHECK(rc == GASNET_OK, "gasnet_barrier_wait returned %d", rc);
  gasnet_exit(0);
}
