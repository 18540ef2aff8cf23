/* bad_input_client: one rank of a job that misuses the GASNet-EX Active
 * Message API on purpose, started by gasnetrun_smp from
 * bad_input_job_test (C11, SEQ, <gasnetex.h> only). Each mode makes one
 * mistake; bad_input_job_test expects the job to fail with a
 * "*** FATAL ERROR (proc P): <call>: ..." line naming the call, and no
 * process left. After its mistake rank 0 sends the peer a good request and
 * waits for the reply: messages between two ranks arrive in order, so by
 * then the peer has handled the bad message too. A rank that gets past the
 * mistake prints "rank R: survived <mode>" and exits 0, which fails the
 * test.
 *
 * Handlers registered in every mode (client indices):
 *   140 Short Request, 2 args: replies with a Short to 141
 *   141 Short Reply, 2 args: notes the reply to rank 0's follow-up
 *   142 Medium Request, 0 args
 *   143 Long Request, 0 args
 *   144 Short Request, 0 args: replies twice (double-reply)
 *   145 Short Reply, 0 args: replies (reply-from-reply)
 *   146 Short Request, 0 args: replies with a Short to 145
 *   147 Short Request, 0 args: makes a Request (request-in-handler)
 *   148 Short Request, 0 args: replies to the internal index 8
 *   149 Short Request, 0 args: replies to the internal index 4, 8 junk args
 *
 * Modes (the mistake is made by rank 0, towards rank 1 or itself):
 *   unregistered       gex_AM_RequestShort to index 200 (never registered)
 *   nargs-mismatch     gex_AM_RequestShort with 1 argument to index 140
 *   category-mismatch  gex_AM_RequestMedium to the Short handler 140
 *   medium-over-max    gex_AM_RequestMedium of gex_AM_MaxRequestMedium + 1
 *   long-outside       gex_AM_RequestLong to the first byte past rank 1's
 *                      segment
 *   long-straddle      gex_AM_RequestLong of 64 bytes whose last 32 are
 *                      past the end of rank 1's segment
 *   reply-from-reply   a Reply handler (145) calls gex_AM_ReplyShort
 *   double-reply       a Request handler (144) calls gex_AM_ReplyShort
 *                      twice (rank 1 is the one that errs)
 *   request-in-handler a Request handler (147) calls gex_AM_RequestShort
 *   tm-null-short, tm-null-medium, tm-null-long, tm-null-prepare-medium,
 *   tm-null-query-bound-segment
 *                      gex_AM_RequestShort/Medium/Long,
 *                      gex_AM_PrepareRequestMedium, gex_EP_QueryBoundSegmentNB
 *                      with tm NULL
 *   tm-garbage-short, tm-garbage-medium, tm-garbage-long,
 *   tm-garbage-prepare-long
 *                      the same with tm pointing at something that is not a
 *                      team (a buffer of this program's)
 *   internal-request-8 gex_AM_RequestShort0 to index 8 (an internal handler)
 *   internal-request-4 gex_AM_RequestShort8 to index 4 with junk arguments
 *   internal-reply-8   a Request handler (148) replies to index 8 (rank 1
 *                      errs)
 *   internal-reply-4   a Request handler (149) replies to index 4 with 8
 *                      junk arguments (rank 1 errs)
 *   internal-medium-4  gex_AM_RequestMedium0 to index 4
 *   internal-long-4    gex_AM_RequestLong0 to index 4
 *   internal-commit-8  gex_AM_CommitRequestMedium0 to index 8 after a good
 *                      gex_AM_PrepareRequestMedium
 *   null-src-medium    gex_AM_RequestMedium0 with src NULL and nbytes 8
 *   null-src-long      gex_AM_RequestLong0 with src NULL and nbytes 8
 *   null-src-put       gex_RMA_PutBlocking with src NULL and nbytes 8
 *   null-src-put-nbi   gex_RMA_PutNBI, the same
 *   null-dst-get       gex_RMA_GetBlocking with dest NULL and nbytes 8
 *   null-dst-get-nb    gex_RMA_GetNB, the same
 *   Debug build only (GEX_DEBUG; the default build lets them through):
 *   overlap-get        gex_RMA_GetBlocking of 64 bytes within this rank's
 *                      own segment, the destination 8 bytes past the source
 *   overlap-put        gex_RMA_PutBlocking, the same
 *   overlap-long       gex_AM_RequestLong0 to this rank, the payload's
 *                      source overlapping its destination in the segment
 *   wild-src-put       gex_RMA_PutBlocking from address 0x10 (not NULL,
 *                      not mapped)
 *   nargs17            not fatal: gex_EP_RegisterHandlers with an entry of
 *                      gex_nargs 17 returns GASNET_ERR_BAD_ARG and registers
 *                      nothing (the good entry beside it stays free and can
 *                      be registered afterwards and used); prints
 *                      "rank R: nargs17 ok" and the job exits 0. */
#include <gasnetex.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "tests/api/client_check.h"

static gex_TM_t g_tm;
static gex_Rank_t g_me;
static gex_Rank_t g_n;
static volatile int g_followed_up;
static volatile int g_nargs17_ran;

static void ShortRequest(gex_Token_t t, gex_AM_Arg_t a0, gex_AM_Arg_t a1) {
  gex_AM_ReplyShort2(t, 141, 0, a0, a1);
}
static void ShortReply(gex_Token_t t, gex_AM_Arg_t a0, gex_AM_Arg_t a1) {
  (void)t;
  (void)a1;
  if (a0 == 999) g_followed_up = 1;
}
static void MediumRequest(gex_Token_t t, void *buf, size_t nbytes) {
  (void)t;
  (void)buf;
  (void)nbytes;
}
static void LongRequest(gex_Token_t t, void *buf, size_t nbytes) {
  (void)t;
  (void)buf;
  (void)nbytes;
}
static void DoubleReply(gex_Token_t t) {
  gex_AM_ReplyShort2(t, 141, 0, 1, 2);
  gex_AM_ReplyShort2(t, 141, 0, 3, 4);
  Say("survived double-reply (the second reply returned)");
}
static void ReplyFromReply(gex_Token_t t) {
  gex_AM_ReplyShort2(t, 141, 0, 5, 6);
  Say("survived reply-from-reply (the reply returned)");
}
static void AskReply(gex_Token_t t) { gex_AM_ReplyShort0(t, 145, 0); }
static void RequestInHandler(gex_Token_t t) {
  (void)t;
  gex_AM_RequestShort2(g_tm, 0, 140, 0, 7, 8);
  Say("survived request-in-handler (the request returned)");
}
static void ReplyInternal8(gex_Token_t t) {
  gex_AM_ReplyShort0(t, 8, 0);
  Say("survived internal-reply-8 (the reply returned)");
}
static void ReplyInternal4(gex_Token_t t) {
  gex_AM_ReplyShort8(t, 4, 0, 1, 2, 3, 4, 5, 6, 7, 8);
  Say("survived internal-reply-4 (the reply returned)");
}
static void Nargs17Handler(gex_Token_t t) {
  (void)t;
  g_nargs17_ran = 1;
}

/* gex_EP_RegisterHandlers with gex_nargs 17: an error return, not a fatal
 * one, and all-or-nothing. */
static void Nargs17(gex_EP_t ep) {
  gex_AM_Entry_t bad[2] = {
      {150, Nargs17Handler, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, NULL,
       "good"},
      {151, Nargs17Handler, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 17, NULL,
       "nargs17"}};
  gex_AM_Entry_t assigned = {
      0,  Nargs17Handler, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST,
      17, NULL,           "nargs17 assigned"};
  gex_AM_Entry_t good = {
      150, Nargs17Handler, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST,
      0,   NULL,           "good again"};
  int rc = gex_EP_RegisterHandlers(ep, bad, 2);
  CHECK(rc == GASNET_ERR_BAD_ARG,
        "gex_nargs 17 (fixed index): "
        "gex_EP_RegisterHandlers returned %d (%s), expected "
        "GASNET_ERR_BAD_ARG",
        rc, gasnet_ErrorName(rc));
  CHECK(strcmp(gasnet_ErrorName(rc), "GASNET_ERR_BAD_ARG") == 0,
        "gasnet_ErrorName(%d) = %s", rc, gasnet_ErrorName(rc));
  rc = gex_EP_RegisterHandlers(ep, &assigned, 1);
  CHECK(rc == GASNET_ERR_BAD_ARG,
        "gex_nargs 17 (index 0): "
        "gex_EP_RegisterHandlers returned %d (%s), expected "
        "GASNET_ERR_BAD_ARG",
        rc, gasnet_ErrorName(rc));
  /* Nothing of the failed table was registered: 150 is still free. */
  rc = gex_EP_RegisterHandlers(ep, &good, 1);
  CHECK(rc == GASNET_OK,
        "registering index 150 after the failed table "
        "returned %d (%s): the failed call registered part of its table",
        rc, gasnet_ErrorName(rc));
  gex_Coll_BarrierBlocking(g_tm, 0);
  rc = gex_AM_RequestShort0(g_tm, g_me, 150, 0);
  CHECK(rc == 0, "gex_AM_RequestShort0 returned %d", rc);
  GASNET_BLOCKUNTIL(g_nargs17_ran);
  Say("nargs17 ok");
  gex_Coll_BarrierBlocking(g_tm, 0);
  gasnet_exit(0);
}

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_Segment_t seg;
  const char *mode;
  gex_AM_Entry_t entries[] = {
      {140, ShortRequest, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 2, NULL,
       "short request"},
      {141, ShortReply, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 2, NULL,
       "short reply"},
      {142, MediumRequest, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, NULL,
       "medium request"},
      {143, LongRequest, GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQUEST, 0, NULL,
       "long request"},
      {144, DoubleReply, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, NULL,
       "double reply"},
      {145, ReplyFromReply, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, NULL,
       "reply from reply"},
      {146, AskReply, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, NULL,
       "ask reply"},
      {147, RequestInHandler, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, NULL,
       "request in handler"},
      {148, ReplyInternal8, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, NULL,
       "reply to internal 8"},
      {149, ReplyInternal4, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, NULL,
       "reply to internal 4"},
  };
  static uint8_t payload[1 << 17];
  /* Not a team: what a stale or mistyped handle would point at. */
  const gex_TM_t garbage_tm = (gex_TM_t)(void *)payload;
  gex_Rank_t peer;
  gex_AM_SrcDesc_t sd;
  uint8_t *my_seg;
  void *peer_base = NULL;
  uintptr_t peer_size = 0;
  int rc =
      gex_Client_Init(&client, &ep, &g_tm, "bad_input_client", &argc, &argv, 0);
  CHECK(rc == GASNET_OK, "gex_Client_Init returned %d", rc);
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = (int)g_me;
  CHECK(argc == 2, "usage: bad_input_client <mode>");
  mode = argv[1];
  peer = g_n > 1 ? 1 : 0;
  rc = gex_Segment_Attach(&seg, g_tm, 65536);
  CHECK(rc == GASNET_OK, "gex_Segment_Attach returned %d", rc);
  if (strcmp(mode, "nargs17") == 0) Nargs17(ep);
  rc = gex_EP_RegisterHandlers(ep, entries, sizeof entries / sizeof entries[0]);
  CHECK(rc == GASNET_OK, "gex_EP_RegisterHandlers returned %d", rc);
  CHECK(gex_EP_QueryBoundSegmentNB(g_tm, peer, &peer_base, NULL, &peer_size,
                                   0) == GEX_EVENT_INVALID,
        "QueryBoundSegmentNB");
  my_seg = (uint8_t *)gex_Segment_QueryAddr(seg);
  gex_Coll_BarrierBlocking(g_tm, 0);

  if (g_me == 0) {
    if (strcmp(mode, "tm-null-short") == 0) {
      gex_AM_RequestShort2(NULL, peer, 140, 0, 1, 2);
    } else if (strcmp(mode, "tm-null-medium") == 0) {
      gex_AM_RequestMedium0(NULL, peer, 142, payload, 8, GEX_EVENT_NOW, 0);
    } else if (strcmp(mode, "tm-null-long") == 0) {
      gex_AM_RequestLong0(NULL, peer, 143, payload, 8, peer_base, GEX_EVENT_NOW,
                          0);
    } else if (strcmp(mode, "tm-null-prepare-medium") == 0) {
      gex_AM_PrepareRequestMedium(NULL, peer, NULL, 0, 8, NULL, 0, 0);
    } else if (strcmp(mode, "tm-null-query-bound-segment") == 0) {
      gex_EP_QueryBoundSegmentNB(NULL, peer, &peer_base, NULL, &peer_size, 0);
    } else if (strcmp(mode, "tm-garbage-short") == 0) {
      gex_AM_RequestShort2(garbage_tm, peer, 140, 0, 1, 2);
    } else if (strcmp(mode, "tm-garbage-medium") == 0) {
      gex_AM_RequestMedium0(garbage_tm, peer, 142, payload, 8, GEX_EVENT_NOW,
                            0);
    } else if (strcmp(mode, "tm-garbage-long") == 0) {
      gex_AM_RequestLong0(garbage_tm, peer, 143, payload, 8, peer_base,
                          GEX_EVENT_NOW, 0);
    } else if (strcmp(mode, "tm-garbage-prepare-long") == 0) {
      gex_AM_PrepareRequestLong(garbage_tm, peer, NULL, 0, 8, peer_base, NULL,
                                0, 0);
    } else if (strcmp(mode, "internal-request-8") == 0) {
      gex_AM_RequestShort0(g_tm, peer, 8, 0);
    } else if (strcmp(mode, "internal-request-4") == 0) {
      gex_AM_RequestShort8(g_tm, peer, 4, 0, 1, 2, 3, 4, 5, 6, 7, 8);
    } else if (strcmp(mode, "internal-reply-8") == 0) {
      gex_AM_RequestShort0(g_tm, peer, 148, 0);
    } else if (strcmp(mode, "internal-reply-4") == 0) {
      gex_AM_RequestShort0(g_tm, peer, 149, 0);
    } else if (strcmp(mode, "internal-medium-4") == 0) {
      gex_AM_RequestMedium0(g_tm, peer, 4, payload, 8, GEX_EVENT_NOW, 0);
    } else if (strcmp(mode, "internal-long-4") == 0) {
      gex_AM_RequestLong0(g_tm, peer, 4, payload, 8, peer_base, GEX_EVENT_NOW,
                          0);
    } else if (strcmp(mode, "internal-commit-8") == 0) {
      sd = gex_AM_PrepareRequestMedium(g_tm, peer, NULL, 0, 8, NULL, 0, 0);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "gex_AM_PrepareRequestMedium");
      gex_AM_CommitRequestMedium0(sd, 8, 0);
    } else if (strcmp(mode, "null-src-medium") == 0) {
      gex_AM_RequestMedium0(g_tm, peer, 142, NULL, 8, GEX_EVENT_NOW, 0);
    } else if (strcmp(mode, "null-src-long") == 0) {
      gex_AM_RequestLong0(g_tm, peer, 143, NULL, 8, peer_base, GEX_EVENT_NOW,
                          0);
    } else if (strcmp(mode, "null-src-put") == 0) {
      gex_RMA_PutBlocking(g_tm, peer, peer_base, NULL, 8, 0);
    } else if (strcmp(mode, "null-src-put-nbi") == 0) {
      gex_RMA_PutNBI(g_tm, peer, peer_base, NULL, 8, GEX_EVENT_NOW, 0);
      gex_NBI_Wait(GEX_EC_ALL, 0);
    } else if (strcmp(mode, "null-dst-get") == 0) {
      gex_RMA_GetBlocking(g_tm, NULL, peer, peer_base, 8, 0);
    } else if (strcmp(mode, "null-dst-get-nb") == 0) {
      gex_Event_Wait(gex_RMA_GetNB(g_tm, NULL, peer, peer_base, 8, 0));
    } else if (strcmp(mode, "overlap-get") == 0) {
      gex_RMA_GetBlocking(g_tm, my_seg + 8, g_me, my_seg, 64, 0);
    } else if (strcmp(mode, "overlap-put") == 0) {
      gex_RMA_PutBlocking(g_tm, g_me, my_seg + 8, my_seg, 64, 0);
    } else if (strcmp(mode, "overlap-long") == 0) {
      gex_AM_RequestLong0(g_tm, g_me, 143, my_seg, 64, my_seg + 8,
                          GEX_EVENT_NOW, 0);
    } else if (strcmp(mode, "wild-src-put") == 0) {
      gex_RMA_PutBlocking(g_tm, peer, peer_base, (const void *)(uintptr_t)0x10,
                          8, 0);
    } else if (strcmp(mode, "unregistered") == 0) {
      gex_AM_RequestShort0(g_tm, peer, 200, 0);
    } else if (strcmp(mode, "nargs-mismatch") == 0) {
      gex_AM_RequestShort1(g_tm, peer, 140, 0, 1);
    } else if (strcmp(mode, "category-mismatch") == 0) {
      gex_AM_RequestMedium2(g_tm, peer, 140, payload, 8, GEX_EVENT_NOW, 0, 1,
                            2);
    } else if (strcmp(mode, "medium-over-max") == 0) {
      const size_t max =
          gex_AM_MaxRequestMedium(g_tm, peer, GEX_EVENT_NOW, 0, 0);
      CHECK(max + 1 <= sizeof payload, "Max Medium %zu", max);
      gex_AM_RequestMedium0(g_tm, peer, 142, payload, max + 1, GEX_EVENT_NOW,
                            0);
    } else if (strcmp(mode, "long-outside") == 0) {
      gex_AM_RequestLong0(g_tm, peer, 143, payload, 1,
                          (char *)peer_base + peer_size, GEX_EVENT_NOW, 0);
    } else if (strcmp(mode, "long-straddle") == 0) {
      gex_AM_RequestLong0(g_tm, peer, 143, payload, 64,
                          (char *)peer_base + peer_size - 32, GEX_EVENT_NOW, 0);
    } else if (strcmp(mode, "reply-from-reply") == 0) {
      gex_AM_RequestShort0(g_tm, peer, 146, 0);
    } else if (strcmp(mode, "double-reply") == 0) {
      gex_AM_RequestShort0(g_tm, peer, 144, 0);
    } else if (strcmp(mode, "request-in-handler") == 0) {
      gex_AM_RequestShort0(g_tm, peer, 147, 0);
    } else {
      CHECK(0, "unknown mode '%s'", mode);
    }
  }
  if (g_me == 0) {
    /* Messages from one rank to another arrive in order: once this one's
     * reply is back, the peer has handled the bad message (and its reply,
     * if any, has been handled here). */
    rc = gex_AM_RequestShort2(g_tm, peer, 140, 0, 999, 0);
    CHECK(rc == 0, "follow-up request returned %d", rc);
    GASNET_BLOCKUNTIL(g_followed_up);
  }
  gex_Coll_BarrierBlocking(g_tm, 0);
  Say("survived %s", mode);
  gex_Coll_BarrierBlocking(g_tm, 0);
  gasnet_exit(0);
}
