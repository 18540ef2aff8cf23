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
 *   rma        The legacy RMA family to every rank (itself too), into a
 *              slot of the target's segment per sender: gasnet_put/get and
 *              the _bulk forms; _nb and _nb_bulk with gasnet_wait_syncnb,
 *              gasnet_try_syncnb, gasnet_wait_syncnb_all/_some and
 *              gasnet_try_syncnb_all/_some over arrays holding
 *              GASNET_INVALID_HANDLE (completed entries become it); _nbi and
 *              _nbi_bulk with gasnet_wait_syncnbi_puts/_gets and
 *              gasnet_try_syncnbi_all, and inside an access region
 *              (gasnet_begin/end_nbi_accessregion); gasnet_put_val,
 *              _nb_val, _nbi_val and gasnet_get_val of 1, 2, 4 and 8 bytes;
 *              four gasnet_get_nb_val in flight synced in reverse order with
 *              gasnet_wait_syncnb_valget; gasnet_memset, _nb (returns
 *              GASNET_INVALID_HANDLE) and _nbi, 0 bytes included, checked
 *              with Gets; every Get compared with what was put. Last, each
 *              sender puts a final pattern and every target checks its own
 *              segment after a barrier. Run directly and with
 *              GEX_RMA_FORCE_AM=1. Prints "rank R: rma ok peers=N".
 *   am16       gasnet_AMRequest{Short,Medium,Long,LongAsync}N and
 *              gasnet_AMReply{Short,Medium,Long}N for every N in 0..16 to
 *              every rank: every argument (INT32_MIN among them), payload
 *              and Long address checked by the handler, each answered with
 *              a reply of the same category and count. Prints
 *              "rank R: am16 ok requests=Q replies=P".
 *   hsl        gasnet_hsl_t: GASNET_HSL_INITIALIZER and gasnet_hsl_init'ed
 *              locks, lock/unlock, gasnet_hsl_trylock (GASNET_OK when free,
 *              GASNET_ERR_NOT_READY when held), handlers of Short requests
 *              from every rank counting under a lock, destroy. Prints
 *              "rank R: hsl ok count=C".
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

#include "tests/api/arg_lists.h"
#include "tests/api/client_check.h"

enum { kSegSize = 1024 * 1024, kSlot = 1024, kReplyArea = 64 * 1024 };
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

/* ---------------------------------------------------------------------- */
/* rma: the legacy put/get/memset/handle family. */

enum { kRmaBase = 128 * 1024, kRmaSlot = 2048 };

static gex_TM_t LegacyTm(void) {
  gex_TM_t tm = GEX_TM_INVALID;
  gasnet_QueryGexObjects(NULL, NULL, &tm, NULL);
  return tm;
}

/* Rank `sender`'s slot in rank `target`'s segment. */
static char *RmaSlot(gasnet_node_t target, gasnet_node_t sender) {
  return (char *)g_seg[target].addr + kRmaBase + (size_t)sender * kRmaSlot;
}

static void Pattern(uint8_t *buf, size_t n, unsigned seed) {
  size_t i;
  for (i = 0; i < n; ++i) buf[i] = (uint8_t)(seed * 31u + i * 7u + 1u);
}

static void ExpectPattern(const uint8_t *buf, size_t n, unsigned seed,
                          const char *what, gasnet_node_t to) {
  size_t i;
  for (i = 0; i < n; ++i) {
    CHECK(buf[i] == (uint8_t)(seed * 31u + i * 7u + 1u),
          "%s to %u: byte %zu is %u", what, to, i, buf[i]);
  }
}

static void ExpectBytes(const uint8_t *buf, size_t n, uint8_t byte,
                        const char *what, gasnet_node_t to) {
  size_t i;
  for (i = 0; i < n; ++i) {
    CHECK(buf[i] == byte, "%s to %u: byte %zu is %u, expected %u", what, to, i,
          buf[i], byte);
  }
}

static unsigned FinalSeed(gasnet_node_t sender, gasnet_node_t target) {
  return 1000u + sender * 17u + target;
}

static void RmaTo(gasnet_node_t to) {
  static uint8_t src[kRmaSlot];
  static uint8_t got[kRmaSlot];
  char *const slot = RmaSlot(to, g_me);
  gasnet_handle_t h[4];
  gasnet_valget_handle_t vh[4];
  const size_t widths[4] = {1, 2, 4, 8};
  const gasnet_register_value_t value = 0x8877665544332211ull;
  int i;

  /* Blocking. */
  Pattern(src, 300, 1);
  gasnet_put(to, slot, src, 300);
  memset(got, 0, sizeof got);
  gasnet_get(got, to, slot, 300);
  ExpectPattern(got, 300, 1, "gasnet_put/gasnet_get", to);
  Pattern(src, kRmaSlot, 2);
  gasnet_put_bulk(to, slot, src, kRmaSlot);
  memset(got, 0, sizeof got);
  gasnet_get_bulk(got, to, slot, kRmaSlot);
  ExpectPattern(got, kRmaSlot, 2, "gasnet_put_bulk/gasnet_get_bulk", to);

  /* Explicit handles. */
  Pattern(src, 500, 3);
  h[0] = gasnet_put_nb(to, slot, src, 500);
  memset(src, 0, 500); /* non-bulk: the source is free on return */
  gasnet_wait_syncnb(h[0]);
  memset(got, 0, sizeof got);
  h[0] = gasnet_get_nb(got, to, slot, 500);
  while (gasnet_try_syncnb(h[0]) != GASNET_OK) {
  }
  ExpectPattern(got, 500, 3, "gasnet_put_nb/gasnet_get_nb", to);
  Pattern(src, 400, 4);
  h[0] = gasnet_put_nb_bulk(to, slot, src, 200);
  h[1] = GASNET_INVALID_HANDLE;
  h[2] = gasnet_put_nb_bulk(to, slot + 200, src + 200, 200);
  gasnet_wait_syncnb_all(h, 3);
  CHECK(h[0] == GASNET_INVALID_HANDLE && h[1] == GASNET_INVALID_HANDLE &&
            h[2] == GASNET_INVALID_HANDLE,
        "gasnet_wait_syncnb_all left a handle set");
  memset(got, 0, sizeof got);
  h[0] = gasnet_get_nb_bulk(got, to, slot, 200);
  h[1] = gasnet_get_nb_bulk(got + 200, to, slot + 200, 200);
  while (gasnet_try_syncnb_all(h, 2) != GASNET_OK) {
  }
  CHECK(h[0] == GASNET_INVALID_HANDLE && h[1] == GASNET_INVALID_HANDLE,
        "gasnet_try_syncnb_all left a handle set");
  ExpectPattern(got, 400, 4, "gasnet_put_nb_bulk/gasnet_get_nb_bulk", to);
  h[0] = GASNET_INVALID_HANDLE;
  h[1] = gasnet_get_nb(got, to, slot, 100);
  gasnet_wait_syncnb_some(h, 2);
  while (gasnet_try_syncnb_some(h, 2) != GASNET_OK) {
  }
  CHECK(h[1] == GASNET_INVALID_HANDLE, "gasnet_try_syncnb_some left it set");
  ExpectPattern(got, 100, 4, "gasnet_get_nb + gasnet_wait_syncnb_some", to);

  /* Implicit handles. */
  Pattern(src, 600, 5);
  gasnet_put_nbi(to, slot, src, 300);
  gasnet_put_nbi_bulk(to, slot + 300, src + 300, 300);
  gasnet_wait_syncnbi_puts();
  memset(got, 0, sizeof got);
  gasnet_get_nbi(got, to, slot, 300);
  gasnet_get_nbi_bulk(got + 300, to, slot + 300, 300);
  gasnet_wait_syncnbi_gets();
  CHECK(gasnet_try_syncnbi_all() == GASNET_OK, "gasnet_try_syncnbi_all");
  ExpectPattern(got, 600, 5, "gasnet_put_nbi/gasnet_get_nbi", to);
  Pattern(src, 200, 6);
  gasnet_begin_nbi_accessregion();
  gasnet_put_nbi(to, slot + 1000, src, 200);
  gasnet_get_nbi(got, to, slot, 100); /* the region's other piece */
  h[0] = gasnet_end_nbi_accessregion();
  gasnet_wait_syncnb(h[0]);
  ExpectPattern(got, 100, 5, "gasnet_get_nbi in an access region", to);
  memset(got, 0, sizeof got);
  gasnet_get(got, to, slot + 1000, 200);
  ExpectPattern(got, 200, 6, "gasnet_put_nbi in an access region", to);

  /* Values. */
  for (i = 0; i < 4; ++i) {
    const size_t w = widths[i];
    const gasnet_register_value_t mask =
        w == 8 ? ~(gasnet_register_value_t)0
               : (((gasnet_register_value_t)1 << (8 * w)) - 1);
    char *const at = slot + 64 * i;
    gasnet_register_value_t v;
    gasnet_put_val(to, at, value, w);
    v = gasnet_get_val(to, at, w);
    CHECK(v == (value & mask), "gasnet_put_val/get_val %zu bytes: %" PRIx64, w,
          (uint64_t)v);
    gasnet_wait_syncnb(gasnet_put_nb_val(to, at, value >> 8, w));
    v = gasnet_get_val(to, at, w);
    CHECK(v == ((value >> 8) & mask), "gasnet_put_nb_val %zu bytes: %" PRIx64,
          w, (uint64_t)v);
    gasnet_put_nbi_val(to, at, value >> 16, w);
    gasnet_wait_syncnbi_puts();
    vh[i] = gasnet_get_nb_val(to, at, w);
  }
  for (i = 3; i >= 0; --i) {
    const size_t w = widths[i];
    const gasnet_register_value_t mask =
        w == 8 ? ~(gasnet_register_value_t)0
               : (((gasnet_register_value_t)1 << (8 * w)) - 1);
    const gasnet_register_value_t v = gasnet_wait_syncnb_valget(vh[i]);
    CHECK(v == ((value >> 16) & mask),
          "gasnet_put_nbi_val/get_nb_val %zu bytes: %" PRIx64, w, (uint64_t)v);
  }

  /* memset. */
  Pattern(src, kRmaSlot, 7);
  gasnet_put(to, slot, src, kRmaSlot);
  gasnet_memset(to, slot + 10, 0x5a, 300);
  gasnet_wait_syncnb(gasnet_memset_nb(to, slot + 400, 0xa5, 100));
  CHECK(gasnet_memset_nb(to, slot, 0, 0) == GASNET_INVALID_HANDLE,
        "gasnet_memset_nb handle");
  gasnet_memset_nbi(to, slot + 600, 0x100 + 7, 50); /* (unsigned char)val */
  gasnet_wait_syncnbi_puts();
  gasnet_memset(to, slot, 0x11, 0);
  memset(got, 0, sizeof got);
  gasnet_get(got, to, slot, kRmaSlot);
  ExpectPattern(got, 10, 7, "before gasnet_memset", to);
  ExpectBytes(got + 10, 300, 0x5a, "gasnet_memset", to);
  ExpectBytes(got + 400, 100, 0xa5, "gasnet_memset_nb", to);
  ExpectBytes(got + 600, 50, 7, "gasnet_memset_nbi", to);
  CHECK(got[310] == src[310] && got[399] == src[399] && got[500] == src[500] &&
            got[650] == src[650],
        "gasnet_memset* wrote past its range");

  /* The final pattern the target checks. */
  Pattern(src, kRmaSlot, FinalSeed(g_me, to));
  gasnet_put_nbi_bulk(to, slot, src, kRmaSlot);
  gasnet_wait_syncnbi_all();
}

static void ModeRma(void) {
  gasnet_node_t k;
  CHECK(LegacyTm() == _gasnet_tm(), "the legacy team");
  CHECK(GASNET_INVALID_HANDLE == GEX_EVENT_INVALID &&
            SIZEOF_GASNET_REGISTER_VALUE_T == sizeof(gasnet_register_value_t) &&
            GASNET_VERSION == 1,
        "legacy constants");
  {
    gex_Memvec_t gv;
    gasnet_memvec_t lv;
    CHECK(sizeof gv == sizeof lv &&
              offsetof(gasnet_memvec_t, addr) ==
                  offsetof(gex_Memvec_t, gex_addr) &&
              offsetof(gasnet_memvec_t, len) == offsetof(gex_Memvec_t, gex_len),
          "gasnet_memvec_t and gex_Memvec_t differ");
    lv.addr = &gv;
    lv.len = sizeof gv;
    CHECK(lv.addr == (void *)&gv && lv.len == sizeof gv, "gasnet_memvec_t");
  }
  for (k = 0; k < g_n; ++k) RmaTo((g_me + k) % g_n);
  CHECK(gasnet_barrier(77, 0) == GASNET_OK, "barrier");
  for (k = 0; k < g_n; ++k) {
    ExpectPattern((const uint8_t *)RmaSlot(g_me, k), kRmaSlot,
                  FinalSeed(k, g_me), "final pattern from", k);
  }
  Say("rma ok peers=%u", g_n);
}

/* ---------------------------------------------------------------------- */
/* am16: the numbered legacy AM forms, 0..16 arguments. */

enum {
  kA16ShortReq,
  kA16ShortRep,
  kA16MedReq,
  kA16MedRep,
  kA16LongReq,
  kA16LongRep,
  kA16Kinds
};
/* Payload kinds: which Long slot (and pattern) a payload uses. */
enum { kPkMedReq, kPkMedRep, kPkLongReq, kPkAsyncReq, kPkLongRep, kPkAsyncRep };
enum { kA16Base = 256 * 1024, kA16Slot = 256 };

static gasnet_handler_t g_a16[kA16Kinds][17];
static uint32_t g_a16_seen[kMaxRanks][kA16Kinds][17];
static uint32_t g_a16_async[kMaxRanks][17];

static gasnet_handlerarg_t A16Arg(gasnet_node_t sender, int kind, int n,
                                  int i) {
  const uint32_t v = sender * 1000003u + (uint32_t)kind * 7919u +
                     (uint32_t)n * 131u + (uint32_t)i * 17u;
  return (gasnet_handlerarg_t)(i % 3 == 0 ? (v | 0x80000000u) : v);
}

static void A16Args(gasnet_node_t sender, int kind, int n,
                    gasnet_handlerarg_t *v) {
  int i;
  for (i = 0; i < n; ++i) v[i] = A16Arg(sender, kind, n, i);
}

static size_t A16Len(gasnet_node_t sender, int pk, int n) {
  return 1 + (sender * 31u + (unsigned)n * 17u + (unsigned)pk * 7u) % 250u;
}

static void A16Fill(uint8_t *buf, gasnet_node_t sender, int pk, int n) {
  const size_t len = A16Len(sender, pk, n);
  size_t i;
  for (i = 0; i < len; ++i)
    buf[i] = (uint8_t)(sender * 13u + (unsigned)pk * 5u + (unsigned)n * 3u + i);
}

static int A16Matches(const void *buf, size_t nbytes, gasnet_node_t sender,
                      int pk, int n) {
  const uint8_t *p = (const uint8_t *)buf;
  size_t i;
  if (nbytes != A16Len(sender, pk, n)) return 0;
  for (i = 0; i < nbytes; ++i) {
    if (p[i] !=
        (uint8_t)(sender * 13u + (unsigned)pk * 5u + (unsigned)n * 3u + i)) {
      return 0;
    }
  }
  return 1;
}

/* Where a Long of payload kind pk (2..5) from `sender` lands in `target`. */
static char *A16Slot(gasnet_node_t target, gasnet_node_t sender, int pk,
                     int n) {
  return (char *)g_seg[target].addr + kA16Base +
         (((size_t)sender * 4 + (size_t)(pk - kPkLongReq)) * 17 + (size_t)n) *
             kA16Slot;
}

/* Records a handler run and checks its arguments. */
static gasnet_node_t A16Seen(gasnet_token_t t, int kind, int n,
                             const gasnet_handlerarg_t *got) {
  gasnet_node_t src = GEX_RANK_INVALID;
  int i;
  CHECK(gasnet_AMGetMsgSource(t, &src) == GASNET_OK && src < g_n,
        "am16 kind %d/%d: source %u", kind, n, src);
  for (i = 0; i < n; ++i) {
    CHECK(got[i] == A16Arg(src, kind, n, i),
          "am16 kind %d, %d args, from %u: arg %d is %d, expected %d", kind, n,
          src, i, got[i], A16Arg(src, kind, n, i));
  }
  ++g_a16_seen[src][kind][n];
  if (kind % 2 == 0) {
    gasnett_atomic_increment(&g_requests, 0);
  } else {
    gasnett_atomic_increment(&g_replies, 0);
  }
  return src;
}

static uint8_t g_a16_buf[kA16Slot];

#define A16_HANDLERS(N)                                                        \
  static void A16ShortReq##N(gasnet_token_t t AT_PARAMS_##N) {                 \
    const gasnet_handlerarg_t got[17] = {0 AT_LIST_##N};                       \
    gasnet_handlerarg_t v[17];                                                 \
    A16Seen(t, kA16ShortReq, N, got + 1);                                      \
    A16Args(g_me, kA16ShortRep, N, v);                                         \
    CHECK(AT_CALL(gasnet_AMReplyShort##N, t,                                   \
                  g_a16[kA16ShortRep][N] AT_VALS_##N) == GASNET_OK,            \
          "gasnet_AMReplyShort" #N);                                           \
  }                                                                            \
  static void A16ShortRep##N(gasnet_token_t t AT_PARAMS_##N) {                 \
    const gasnet_handlerarg_t got[17] = {0 AT_LIST_##N};                       \
    A16Seen(t, kA16ShortRep, N, got + 1);                                      \
  }                                                                            \
  static void A16MedReq##N(gasnet_token_t t, void *buf,                        \
                           size_t nbytes AT_PARAMS_##N) {                      \
    const gasnet_handlerarg_t got[17] = {0 AT_LIST_##N};                       \
    gasnet_handlerarg_t v[17];                                                 \
    const gasnet_node_t src = A16Seen(t, kA16MedReq, N, got + 1);              \
    CHECK(A16Matches(buf, nbytes, src, kPkMedReq, N),                          \
          "Medium request payload, %d args", N);                               \
    A16Args(g_me, kA16MedRep, N, v);                                           \
    A16Fill(g_a16_buf, g_me, kPkMedRep, N);                                    \
    CHECK(AT_CALL(gasnet_AMReplyMedium##N, t, g_a16[kA16MedRep][N], g_a16_buf, \
                  A16Len(g_me, kPkMedRep, N) AT_VALS_##N) == GASNET_OK,        \
          "gasnet_AMReplyMedium" #N);                                          \
  }                                                                            \
  static void A16MedRep##N(gasnet_token_t t, void *buf,                        \
                           size_t nbytes AT_PARAMS_##N) {                      \
    const gasnet_handlerarg_t got[17] = {0 AT_LIST_##N};                       \
    const gasnet_node_t src = A16Seen(t, kA16MedRep, N, got + 1);              \
    CHECK(A16Matches(buf, nbytes, src, kPkMedRep, N),                          \
          "Medium reply payload, %d args", N);                                 \
  }                                                                            \
  static void A16LongReq##N(gasnet_token_t t, void *buf,                       \
                            size_t nbytes AT_PARAMS_##N) {                     \
    const gasnet_handlerarg_t got[17] = {0 AT_LIST_##N};                       \
    gasnet_handlerarg_t v[17];                                                 \
    const gasnet_node_t src = A16Seen(t, kA16LongReq, N, got + 1);             \
    const int async = buf == A16Slot(g_me, src, kPkAsyncReq, N);               \
    const int pk = async ? kPkAsyncRep : kPkLongRep;                           \
    CHECK(async || buf == A16Slot(g_me, src, kPkLongReq, N),                   \
          "Long request from %u at %p, %d args", src, buf, N);                 \
    CHECK(A16Matches(buf, nbytes, src, async ? kPkAsyncReq : kPkLongReq, N),   \
          "Long request payload, %d args, async %d", N, async);                \
    g_a16_async[src][N] += (uint32_t)async;                                    \
    A16Args(g_me, kA16LongRep, N, v);                                          \
    A16Fill(g_a16_buf, g_me, pk, N);                                           \
    CHECK(AT_CALL(gasnet_AMReplyLong##N, t, g_a16[kA16LongRep][N], g_a16_buf,  \
                  A16Len(g_me, pk, N),                                         \
                  A16Slot(src, g_me, pk, N) AT_VALS_##N) == GASNET_OK,         \
          "gasnet_AMReplyLong" #N);                                            \
  }                                                                            \
  static void A16LongRep##N(gasnet_token_t t, void *buf,                       \
                            size_t nbytes AT_PARAMS_##N) {                     \
    const gasnet_handlerarg_t got[17] = {0 AT_LIST_##N};                       \
    const gasnet_node_t src = A16Seen(t, kA16LongRep, N, got + 1);             \
    const int pk =                                                             \
        buf == A16Slot(g_me, src, kPkAsyncRep, N) ? kPkAsyncRep : kPkLongRep;  \
    CHECK(buf == A16Slot(g_me, src, pk, N), "Long reply at %p, %d args", buf,  \
          N);                                                                  \
    CHECK(A16Matches(buf, nbytes, src, pk, N), "Long reply payload, %d args",  \
          N);                                                                  \
  }

AT_FOR_EACH_NARGS(A16_HANDLERS)

#define A16_ENTRIES(N)                                              \
  {0, (void (*)())A16ShortReq##N}, {0, (void (*)())A16ShortRep##N}, \
      {0, (void (*)())A16MedReq##N}, {0, (void (*)())A16MedRep##N}, \
      {0, (void (*)())A16LongReq##N}, {0, (void (*)())A16LongRep##N},

static gasnet_handlerentry_t g_a16_table[] = {AT_FOR_EACH_NARGS(A16_ENTRIES)};

#define A16_SENDS(N)                                                           \
  {                                                                            \
    gasnet_handlerarg_t v[17];                                                 \
    A16Args(g_me, kA16ShortReq, N, v);                                         \
    CHECK(AT_CALL(gasnet_AMRequestShort##N, to,                                \
                  g_a16[kA16ShortReq][N] AT_VALS_##N) == GASNET_OK,            \
          "gasnet_AMRequestShort" #N);                                         \
    A16Args(g_me, kA16MedReq, N, v);                                           \
    A16Fill(src, g_me, kPkMedReq, N);                                          \
    CHECK(AT_CALL(gasnet_AMRequestMedium##N, to, g_a16[kA16MedReq][N], src,    \
                  A16Len(g_me, kPkMedReq, N) AT_VALS_##N) == GASNET_OK,        \
          "gasnet_AMRequestMedium" #N);                                        \
    A16Args(g_me, kA16LongReq, N, v);                                          \
    A16Fill(src, g_me, kPkLongReq, N);                                         \
    CHECK(AT_CALL(gasnet_AMRequestLong##N, to, g_a16[kA16LongReq][N], src,     \
                  A16Len(g_me, kPkLongReq, N),                                 \
                  A16Slot(to, g_me, kPkLongReq, N) AT_VALS_##N) == GASNET_OK,  \
          "gasnet_AMRequestLong" #N);                                          \
    A16Fill(src, g_me, kPkAsyncReq, N);                                        \
    CHECK(AT_CALL(gasnet_AMRequestLongAsync##N, to, g_a16[kA16LongReq][N],     \
                  src, A16Len(g_me, kPkAsyncReq, N),                           \
                  A16Slot(to, g_me, kPkAsyncReq, N) AT_VALS_##N) == GASNET_OK, \
          "gasnet_AMRequestLongAsync" #N);                                     \
  }

static void ModeAm16(void) {
  static uint8_t src[kA16Slot];
  /* Per peer and count: 4 requests (Short, Medium, Long, LongAsync). */
  const uint32_t expected = g_n * 17u * 4u;
  gasnet_node_t k;
  int kind;
  int n;
  for (k = 0; k < g_n; ++k) {
    const gasnet_node_t to = (g_me + k) % g_n;
    AT_FOR_EACH_NARGS(A16_SENDS)
  }
  GASNET_BLOCKUNTIL(gasnett_atomic_read(&g_replies, 0) == expected);
  CHECK(gasnet_barrier(16, 0) == GASNET_OK, "barrier");
  CHECK(gasnett_atomic_read(&g_requests, 0) == expected, "%u requests",
        gasnett_atomic_read(&g_requests, 0));
  for (k = 0; k < g_n; ++k) {
    for (n = 0; n <= 16; ++n) {
      for (kind = 0; kind < kA16Kinds; ++kind) {
        const uint32_t want = kind >= kA16LongReq ? 2 : 1;
        CHECK(g_a16_seen[k][kind][n] == want,
              "am16 kind %d with %d args ran %u times for rank %u", kind, n,
              g_a16_seen[k][kind][n], k);
      }
      CHECK(g_a16_async[k][n] == 1, "LongAsync%d from %u seen %u times", n, k,
            g_a16_async[k][n]);
    }
  }
  Say("am16 ok requests=%u replies=%u", gasnett_atomic_read(&g_requests, 0),
      gasnett_atomic_read(&g_replies, 0));
}

/* ---------------------------------------------------------------------- */
/* hsl: handler-safe locks. */

static gasnet_hsl_t g_static_hsl = GASNET_HSL_INITIALIZER;
static gasnet_hsl_t g_dynamic_hsl;
static int g_hsl_count;

static void HslCount(gasnet_token_t t, gasnet_handlerarg_t add) {
  (void)t;
  gasnet_hsl_lock(&g_static_hsl);
  gasnet_hsl_lock(&g_dynamic_hsl);
  g_hsl_count += add;
  gasnet_hsl_unlock(&g_dynamic_hsl);
  gasnet_hsl_unlock(&g_static_hsl);
}

static gasnet_handlerentry_t g_hsl_table[] = {{0, (void (*)())HslCount}};

static void ModeHsl(void) {
  const int expected = (int)(g_n * (g_n + 1) / 2);
  gasnet_node_t k;
  int count;
  gasnet_hsl_init(&g_dynamic_hsl);
  CHECK(gasnet_hsl_trylock(&g_static_hsl) == GASNET_OK, "trylock when free");
  CHECK(gasnet_hsl_trylock(&g_static_hsl) == GASNET_ERR_NOT_READY,
        "trylock when held");
  gasnet_hsl_unlock(&g_static_hsl);
  CHECK(gasnet_hsl_trylock(&g_dynamic_hsl) == GASNET_OK, "trylock when free");
  gasnet_hsl_unlock(&g_dynamic_hsl);
  CHECK(gasnet_barrier(3, 0) == GASNET_OK, "barrier");
  for (k = 0; k < g_n; ++k) {
    CHECK(gasnet_AMRequestShort1((g_me + k) % g_n, g_hsl_table[0].index,
                                 (gasnet_handlerarg_t)(k + 1)) == GASNET_OK,
          "gasnet_AMRequestShort1");
  }
  /* Every rank adds 1..n to my count: n * (n + 1) / 2 each. */
  do {
    gasnet_AMPoll();
    gasnet_hsl_lock(&g_static_hsl);
    count = g_hsl_count;
    gasnet_hsl_unlock(&g_static_hsl);
  } while (count < expected);
  CHECK(gasnet_barrier(4, 0) == GASNET_OK, "barrier");
  gasnet_hsl_lock(&g_static_hsl);
  count = g_hsl_count;
  gasnet_hsl_unlock(&g_static_hsl);
  CHECK(count == expected, "count %d, expected %d", count, expected);
  gasnet_hsl_destroy(&g_dynamic_hsl);
  Say("hsl ok count=%d", count);
}

int main(int argc, char **argv) {
  gasnet_handlerentry_t table[kHandlers] = {
      {0, ShortReq0},  {0, ShortRep0},  {201, ShortReq4}, {202, ShortRep4},
      {0, MediumReq2}, {0, MediumRep2}, {0, MediumReq0},  {0, MediumRep0},
      {210, LongReq3}, {0, LongRep3},   {0, LongReq0},    {0, LongRep0},
  };
  enum {
    kA16Entries = sizeof g_a16_table / sizeof g_a16_table[0],
    kAll = kHandlers + kA16Entries + 1
  };
  gasnet_handlerentry_t all[kAll];
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
  CHECK(argc == 2, "usage: legacy_client am|rma|am16|hsl|exit-code|exit-one");
  mode = argv[1];
  max_local = gasnet_getMaxLocalSegmentSize();
  max_global = gasnet_getMaxGlobalSegmentSize();
  CHECK(max_global <= max_local && max_global >= kSegSize,
        "segment limits: local %" PRIuPTR " global %" PRIuPTR, max_local,
        max_global);
  memcpy(all, table, sizeof table);
  memcpy(all + kHandlers, g_a16_table, sizeof g_a16_table);
  all[kAll - 1] = g_hsl_table[0];
  rc = gasnet_attach(all, kAll, kSegSize, 0);
  CHECK(rc == GASNET_OK, "gasnet_attach returned %d", rc);
  memcpy(table, all, sizeof table);
  memcpy(g_a16_table, all + kHandlers, sizeof g_a16_table);
  g_hsl_table[0] = all[kAll - 1];
  for (h = 0; h < kAll; ++h) {
    CHECK(all[h].index >= 128 && !used[all[h].index], "entry %d has index %u",
          h, all[h].index);
    used[all[h].index] = 1;
    if (h < kHandlers) g_index[h] = all[h].index;
  }
  for (h = 0; h < kA16Entries; ++h) {
    g_a16[h % kA16Kinds][h / kA16Kinds] = g_a16_table[h].index;
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
  } else if (strcmp(mode, "rma") == 0) {
    ModeRma();
  } else if (strcmp(mode, "am16") == 0) {
    ModeAm16();
  } else if (strcmp(mode, "hsl") == 0) {
    ModeHsl();
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
