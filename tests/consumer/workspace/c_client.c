/* A C client of the GASNet-EX API as a consumer workspace builds it:
 * <gasnetex.h> from @gex//conduit/smp:gasnet_smp_seq and nothing else, run
 * as a job of 2 (or more) ranks by @gex//tools:gasnetrun_smp.
 *
 * Every rank sends to the next rank ROUNDS Short requests carrying two
 * arguments and ROUNDS Medium requests carrying a payload of its own
 * pattern. The Short handler replies with a function of both arguments; the
 * Medium handler checks the whole payload and replies with its sum. The
 * sender checks every reply, each side counts what it received, and a rank
 * that sees everything right prints
 *   c_client: rank R of N: S short and M medium round trips ok
 * and the job exits 0. Any wrong value prints "c_client: rank R: FAILED ..."
 * and ends the job with exit code 1. */
#include <gasnetex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 500
#define PAYLOAD 1000

#define HIDX_SHORT (GEX_AM_INDEX_BASE + 0)
#define HIDX_MEDIUM (GEX_AM_INDEX_BASE + 1)
#define HIDX_REPLY (GEX_AM_INDEX_BASE + 2)

static gex_Rank_t me, ranks, prev;

/* SEQ: handlers run inside the calls that poll, on this thread. */
static volatile unsigned short_requests = 0;  /* received, from prev */
static volatile unsigned medium_requests = 0; /* received, from prev */
static volatile unsigned replies = 0;         /* received, both kinds */
static volatile unsigned bad = 0;             /* wrong values seen */

static void fail(const char *what, unsigned long got, unsigned long want) {
  printf("c_client: rank %u: FAILED %s: got %lu, expected %lu\n", (unsigned)me,
         what, got, want);
  fflush(stdout);
  bad = bad + 1;
}

static unsigned char pattern(gex_Rank_t sender, unsigned round, size_t i) {
  return (unsigned char)(sender * 31u + round * 7u + i * 13u + 1u);
}

/* What a handler answers for round `round`: the sender checks it. */
static gex_AM_Arg_t expected_short(gex_AM_Arg_t round, gex_AM_Arg_t value) {
  return (gex_AM_Arg_t)(round * 3 + value);
}
static gex_AM_Arg_t payload_sum(gex_Rank_t sender, unsigned round) {
  uint32_t sum = 0;
  for (size_t i = 0; i < PAYLOAD; ++i) sum += pattern(sender, round, i);
  return (gex_AM_Arg_t)sum;
}

static void short_handler(gex_Token_t token, gex_AM_Arg_t round,
                          gex_AM_Arg_t value) {
  gex_Token_Info_t info;
  gex_Token_Info(token, &info, GEX_TI_SRCRANK);
  if (info.gex_srcrank != prev) fail("Short source", info.gex_srcrank, prev);
  if ((uint32_t)value != (uint32_t)round * 1000u + info.gex_srcrank) {
    fail("Short argument", (uint32_t)value,
         (uint32_t)round * 1000u + info.gex_srcrank);
  }
  short_requests = short_requests + 1;
  gex_AM_ReplyShort2(token, HIDX_REPLY, 0, round, expected_short(round, value));
}

static void medium_handler(gex_Token_t token, void *buf, size_t nbytes,
                           gex_AM_Arg_t round) {
  const unsigned char *p = (const unsigned char *)buf;
  uint32_t sum = 0;
  if (nbytes != PAYLOAD) fail("Medium size", nbytes, PAYLOAD);
  for (size_t i = 0; i < nbytes; ++i) {
    if (p[i] != pattern(prev, (unsigned)round, i)) {
      fail("Medium payload byte", p[i], pattern(prev, (unsigned)round, i));
      break;
    }
    sum += p[i];
  }
  medium_requests = medium_requests + 1;
  /* Medium replies answer with the payload's sum, flagged by bit 31. */
  gex_AM_ReplyShort2(token, HIDX_REPLY, 0, round | 0x80000000u,
                     (gex_AM_Arg_t)sum);
}

static void reply_handler(gex_Token_t token, gex_AM_Arg_t tag,
                          gex_AM_Arg_t answer) {
  (void)token;
  if (tag & 0x80000000u) {
    const unsigned round = tag & 0x7fffffffu;
    if (answer != payload_sum(me, round)) {
      fail("Medium reply", answer, payload_sum(me, round));
    }
  } else {
    const gex_AM_Arg_t want = expected_short(tag, tag * 1000u + me);
    if (answer != want) fail("Short reply", answer, want);
  }
  replies = replies + 1;
}

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  gex_Segment_t segment;
  if (gex_Client_Init(&client, &ep, &tm, "c_client", &argc, &argv, 0) !=
      GASNET_OK) {
    return 1;
  }
  me = gex_TM_QueryRank(tm);
  ranks = gex_TM_QuerySize(tm);
  prev = (me + ranks - 1) % ranks;
  const gex_Rank_t next = (me + 1) % ranks;
  gex_AM_Entry_t handlers[] = {
      {HIDX_SHORT, (gex_AM_Fn_t)short_handler,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 2, NULL, "short"},
      {HIDX_MEDIUM, (gex_AM_Fn_t)medium_handler,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 1, NULL, "medium"},
      {HIDX_REPLY, (gex_AM_Fn_t)reply_handler,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 2, NULL, "reply"},
  };
  if (gex_EP_RegisterHandlers(ep, handlers, 3) != GASNET_OK) gasnet_exit(1);
  /* Collective: every rank has registered its handlers once it returns. */
  if (gex_Segment_Attach(&segment, tm, 4096) != GASNET_OK) gasnet_exit(1);

  static unsigned char payload[PAYLOAD];
  for (unsigned round = 0; round < ROUNDS; ++round) {
    if (gex_AM_RequestShort2(tm, next, HIDX_SHORT, 0, round,
                             round * 1000u + me) != GASNET_OK) {
      fail("gex_AM_RequestShort2's result", 1, GASNET_OK);
    }
    for (size_t i = 0; i < PAYLOAD; ++i) payload[i] = pattern(me, round, i);
    /* GEX_EVENT_NOW: the buffer may be rewritten when the call returns. */
    if (gex_AM_RequestMedium1(tm, next, HIDX_MEDIUM, payload, PAYLOAD,
                              GEX_EVENT_NOW, 0, round) != GASNET_OK) {
      fail("gex_AM_RequestMedium1's result", 1, GASNET_OK);
    }
  }
  GASNET_BLOCKUNTIL(replies == 2 * ROUNDS && short_requests == ROUNDS &&
                    medium_requests == ROUNDS);
  gex_Coll_BarrierBlocking(tm, 0);
  if (bad == 0) {
    printf("c_client: rank %u of %u: %u short and %u medium round trips ok\n",
           (unsigned)me, (unsigned)ranks, (unsigned)ROUNDS, (unsigned)ROUNDS);
    fflush(stdout);
  }
  gex_Coll_BarrierBlocking(tm, 0);
  gasnet_exit(bad == 0 ? 0 : 1);
  return 0;
}
