/* hello_am: a first GASNet-EX program, written against <gasnetex.h> only.
 *
 * Every rank greets its right neighbour with an AM Medium request; the
 * neighbour's handler keeps the text and answers with an AM Short reply.
 * Then every rank writes a block of bytes straight into its neighbour's
 * segment with an AM Long request (also answered), and after a barrier
 * each rank checks what its left neighbour wrote. One line per rank.
 *
 *   bazel build //examples:hello_am //tools:gasnetrun_smp
 *   bazel-bin/tools/gasnetrun_smp -n 4 bazel-bin/examples/hello_am
 */
#include <gasnetex.h>
#include <stdio.h>
#include <string.h>

/* Client handler indices start at GEX_AM_INDEX_BASE; below are GASNet's. */
#define HIDX_GREET (GEX_AM_INDEX_BASE + 0) /* Medium request: a greeting */
#define HIDX_BLOCK (GEX_AM_INDEX_BASE + 1) /* Long request: a data block */
#define HIDX_ACK (GEX_AM_INDEX_BASE + 2)   /* Short reply: "got it" */

#define SEGMENT_BYTES (64 * 1024)
#define BLOCK_BYTES 4096
#define GREETING_MAX 128

static gex_Rank_t my_rank;

/* Written by handlers, read by main. In this SEQ program handlers run on
 * the main thread, inside the calls that poll (GASNET_BLOCKUNTIL); volatile
 * keeps the polling loop reading them afresh. */
static char greeting[GREETING_MAX];
static volatile gex_Rank_t greeting_from = GEX_RANK_INVALID;
static volatile gex_Rank_t block_from = GEX_RANK_INVALID;
static volatile size_t block_bytes = 0;
static volatile int acks = 0;
static volatile gex_Rank_t acked_by = GEX_RANK_INVALID;

static void check(int rc, const char *what) {
  if (rc != GASNET_OK) {
    fprintf(stderr, "hello_am: rank %u: %s failed: %s\n", (unsigned)my_rank,
            what, gasnet_ErrorName(rc));
    gasnet_exit(1);
  }
}

static gex_Rank_t source_of(gex_Token_t token) {
  gex_Token_Info_t info;
  gex_Token_Info(token, &info, GEX_TI_SRCRANK);
  return info.gex_srcrank;
}

/* The byte a block from `rank` holds at `offset`, so the receiver can tell
 * whose block it got and that every byte arrived. */
static unsigned char block_byte(gex_Rank_t rank, size_t offset) {
  return (unsigned char)(rank * 31u + offset * 7u);
}

/* Medium request: keep the text, say who we are in the reply. */
static void greet_handler(gex_Token_t token, void *buf, size_t nbytes) {
  size_t n = nbytes < GREETING_MAX - 1 ? nbytes : GREETING_MAX - 1;
  memcpy(greeting, buf, n);
  greeting[n] = '\0';
  greeting_from = source_of(token);
  /* A handler may send at most one reply, and only a reply. */
  check(gex_AM_ReplyShort1(token, HIDX_ACK, 0, (gex_AM_Arg_t)my_rank),
        "gex_AM_ReplyShort1");
}

/* Long request: the payload is already in our segment when this runs. */
static void block_handler(gex_Token_t token, void *buf, size_t nbytes) {
  (void)buf;
  block_bytes = nbytes;
  block_from = source_of(token);
  check(gex_AM_ReplyShort1(token, HIDX_ACK, 0, (gex_AM_Arg_t)my_rank),
        "gex_AM_ReplyShort1");
}

/* Short reply: count it. */
static void ack_handler(gex_Token_t token, gex_AM_Arg_t who) {
  (void)token;
  acked_by = (gex_Rank_t)who;
  acks = acks + 1;
}

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  gex_Segment_t segment;

  check(gex_Client_Init(&client, &ep, &tm, "hello_am", &argc, &argv, 0),
        "gex_Client_Init");
  my_rank = gex_TM_QueryRank(tm);
  const gex_Rank_t ranks = gex_TM_QuerySize(tm);
  const gex_Rank_t right = (my_rank + 1) % ranks;
  const gex_Rank_t left = (my_rank + ranks - 1) % ranks;

  gex_AM_Entry_t handlers[] = {
      {HIDX_GREET, (gex_AM_Fn_t)greet_handler,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, NULL, "greet"},
      {HIDX_BLOCK, (gex_AM_Fn_t)block_handler,
       GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQUEST, 0, NULL, "block"},
      {HIDX_ACK, (gex_AM_Fn_t)ack_handler,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 1, NULL, "ack"},
  };
  check(gex_EP_RegisterHandlers(ep, handlers,
                                sizeof handlers / sizeof handlers[0]),
        "gex_EP_RegisterHandlers");
  /* Collective: once it returns every rank has registered its handlers
   * too, so messages may flow. */
  check(gex_Segment_Attach(&segment, tm, SEGMENT_BYTES), "gex_Segment_Attach");

  /* 1. Greet the right neighbour and wait for its reply. */
  char text[GREETING_MAX];
  snprintf(text, sizeof text, "hello from rank %u of %u", (unsigned)my_rank,
           (unsigned)ranks);
  check(gex_AM_RequestMedium0(tm, right, HIDX_GREET, text, strlen(text) + 1,
                              GEX_EVENT_NOW, 0),
        "gex_AM_RequestMedium0");
  GASNET_BLOCKUNTIL(acks == 1);

  /* 2. Put a block at the start of the right neighbour's segment. A Long's
   * destination is an address in the target's segment as the target sees
   * it: ask the endpoint where that is. */
  void *right_segment = NULL;
  gex_Event_Wait(
      gex_EP_QueryBoundSegmentNB(tm, right, &right_segment, NULL, NULL, 0));
  static unsigned char block[BLOCK_BYTES];
  for (size_t i = 0; i < BLOCK_BYTES; ++i) block[i] = block_byte(my_rank, i);
  check(gex_AM_RequestLong0(tm, right, HIDX_BLOCK, block, BLOCK_BYTES,
                            right_segment, GEX_EVENT_NOW, 0),
        "gex_AM_RequestLong0");
  GASNET_BLOCKUNTIL(acks == 2);

  /* 3. Every rank's block has been acknowledged once all pass the barrier,
   * so every segment now holds its left neighbour's block. */
  gex_Coll_BarrierBlocking(tm, 0);
  const unsigned char *mine = gex_Segment_QueryAddr(segment);
  size_t bad = 0;
  for (size_t i = 0; i < BLOCK_BYTES; ++i) {
    if (mine[i] != block_byte(left, i)) ++bad;
  }
  const int ok = bad == 0 && block_from == left && block_bytes == BLOCK_BYTES &&
                 greeting_from == left;

  printf(
      "rank %u of %u: got \"%s\" from rank %u, greeted rank %u (it "
      "replied), Long of %zu bytes from rank %u %s\n",
      (unsigned)my_rank, (unsigned)ranks, greeting, (unsigned)greeting_from,
      (unsigned)acked_by, (size_t)block_bytes, (unsigned)block_from,
      ok ? "checked OK" : "WRONG");
  fflush(stdout);
  if (!ok) {
    fprintf(stderr, "hello_am: rank %u: %zu of %d bytes differ\n",
            (unsigned)my_rank, bad, BLOCK_BYTES);
  }
  /* Ends the whole job; its exit code is the job's. */
  gasnet_exit(ok ? 0 : 1);
  return 0;
}
