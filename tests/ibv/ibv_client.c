/* A client of the ibv conduit for tests/ibv (C, public API only; built
 * twice: ibv_client over gasnet_ibv_seq, ibv_client_par over
 * gasnet_ibv_par).
 *
 * Usage: ibv_client <mode> [N]
 *   hello        init, attach, a barrier, one Medium to the next rank:
 *                "rank R: hello ok". Before init every rank prints
 *                "rank ?: job=<GEX_JOB_ID>" so that a job that dies in
 *                init can still be checked for leftovers.
 *   flood N      every rank sends the next rank N AM Medium Requests of 8
 *                bytes whose handler only counts (never replies), then
 *                waits until it has handled N from the previous rank:
 *                "rank R: flood ok sent=N handled=C".
 *   pingpong N   ranks in pairs (0-1, 2-3, ...): N rounds, in each of
 *                which both ranks of a pair send the other a Short Request
 *                (the handler only counts) and wait for the other's:
 *                Requests both ways, no Replies. "rank R: pingpong ok
 *                handled=C".
 *   medium N     every rank sends the next rank N AM Medium Requests of
 *                sizes 0..the largest Medium, each byte a function of the
 *                sender, the message and its offset, checked exactly by the
 *                handler: "rank R: medium ok handled=C bytes=B".
 *   firehose     every rank Puts 8 MiB from a malloc'd buffer into the
 *                next rank's segment and Gets it back into another, twice
 *                over fresh buffers each time (different data), then 64
 *                Puts of 16 KiB from separate malloc'd buffers, checked by
 *                Gets: "rank R: firehose ok".
 *   rma          every rank Puts and Gets 1 MiB + 123 bytes to and from the
 *                next rank, from the heap and from its own segment:
 *                "rank R: rma ok".
 *   thread N     (PAR, with GASNET_RCV_THREAD=1) rank 0 sends rank 1 N
 *                Short Requests whose handler counts and Replies; rank 1
 *                meanwhile computes: it spins on the count (an atomic)
 *                without calling GASNet at all, for at most 30 s. "rank R:
 *                thread ok handled=C acks=A".
 *   immediate    (8 ranks, GASNET_CONNECT_STATIC=0) every rank sends the
 *                rank 3 ahead, a pair nothing before has connected (the
 *                barriers' dissemination pairs ranks 1, 2 and 4 apart), one
 *                Short Request with GEX_FLAG_IMMEDIATE, retried while it
 *                returns nonzero: "rank R: immediate ok would_block=W".
 *   scale        one 8-byte Medium and one 8-byte Put to every other rank
 *                (checked by the handler and in the segment): "rank R:
 *                scale ok peak_kb=K anon_kb=A shmem_kb=S pss_kb=P":
 *                this process's VmHWM, RssAnon, RssShmem (which counts
 *                every page of a peer's software-device arena this process
 *                has mapped) and Pss (shared pages divided among their
 *                mappers).
 *   ring         the same to the next rank only: "rank R: ring ok ...".
 *   exit N       rank 1 calls gasnet_exit(N) alone after a barrier while
 *                the others wait in the next barrier: the job exits N.
 * Every mode ends in a barrier. A failed check prints "rank R: CHECK
 * FAILED ..." and exits 1.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <gasnetex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static gex_Rank_t g_rank;
static gex_Rank_t g_size;
static atomic_uint_fast64_t g_count;
static atomic_uint_fast64_t g_acks;
static atomic_uint_fast64_t g_bytes;
static atomic_int g_bad; /* a handler's check failed */

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      printf("rank %u: CHECK FAILED %s:%d: %s\n", (unsigned)g_rank, __FILE__, \
             __LINE__, #cond);                                                \
      fflush(stdout);                                                         \
      gasnet_exit(1);                                                         \
    }                                                                         \
  } while (0)

enum {
  FLOOD_HANDLER = 200,
  PING_HANDLER,
  MEDIUM_HANDLER,
  THREAD_HANDLER,
  ACK_HANDLER,
  FAR_HANDLER,
  ALL_HANDLER
};
enum { kFloodPayload = 8, kBigBytes = 8 << 20, kSmallPuts = 64 };
enum { kSmallBytes = 16 << 10, kRmaBytes = (1 << 20) + 123 };

static uint64_t FloodWord(gex_Rank_t from) {
  return 0x0123456789abcdefULL ^ from;
}

/* The byte at `offset` of Medium `i` from `from`. */
static unsigned char MediumByte(gex_Rank_t from, uint32_t i, size_t offset) {
  return (unsigned char)(from * 31 + i * 7 + offset * 13 + (offset >> 8));
}

/* Medium `i`'s size: 0, 1, the largest, and a spread between. */
static size_t MediumSize(uint32_t i, size_t max) {
  switch (i % 5) {
    case 0:
      return max;
    case 1:
      return 0;
    case 2:
      return 1;
    default:
      return (i * 2654435761u) % (max + 1);
  }
}

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static gex_Rank_t SourceOf(gex_Token_t token) {
  gex_Token_Info_t info;
  gex_Token_Info(token, &info, GEX_TI_SRCRANK);
  return info.gex_srcrank;
}

static void FloodHandler(gex_Token_t token, void *buf, size_t nbytes,
                         gex_AM_Arg_t seq) {
  uint64_t v;
  const gex_Rank_t from = SourceOf(token);
  (void)seq;
  if (nbytes != kFloodPayload) {
    atomic_store(&g_bad, 1);
    return;
  }
  memcpy(&v, buf, sizeof v);
  if (v != FloodWord(from) || from != (g_rank + g_size - 1) % g_size) {
    atomic_store(&g_bad, 1);
  }
  atomic_fetch_add(&g_count, 1);
}

static void FarHandler(gex_Token_t token, gex_AM_Arg_t unused) {
  /* "immediate": from the rank 3 behind. */
  (void)unused;
  if (SourceOf(token) != (g_rank + g_size - 3) % g_size) {
    atomic_store(&g_bad, 1);
  }
  atomic_fetch_add(&g_count, 1);
}

static void AllHandler(gex_Token_t token, void *buf, size_t nbytes,
                       gex_AM_Arg_t unused) {
  /* "scale" and "ring": a word from any rank, naming it. */
  uint64_t v;
  (void)unused;
  if (nbytes != kFloodPayload) {
    atomic_store(&g_bad, 1);
    return;
  }
  memcpy(&v, buf, sizeof v);
  if (v != FloodWord(SourceOf(token))) atomic_store(&g_bad, 1);
  atomic_fetch_add(&g_count, 1);
}

/* A "Name:" line of /proc/self/<file> (status: VmHWM, RssAnon, RssShmem;
 * smaps_rollup: Pss), in KiB; 0 if unknown. */
static unsigned long ProcKb(const char *file, const char *name) {
  char line[256];
  unsigned long kb = 0;
  const size_t len = strlen(name);
  FILE *f;
  snprintf(line, sizeof line, "/proc/self/%s", file);
  f = fopen(line, "r");
  if (f == NULL) return 0;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, name, len) == 0 && line[len] == ':') {
      kb = strtoul(line + len + 1, NULL, 10);
    }
  }
  fclose(f);
  return kb;
}

static void PingHandler(gex_Token_t token, gex_AM_Arg_t round) {
  /* Round r's Request arrives once the sender has handled ours of r - 1. */
  if (SourceOf(token) != (g_rank ^ 1) ||
      (uint64_t)round != atomic_load(&g_count)) {
    atomic_store(&g_bad, 1);
  }
  atomic_fetch_add(&g_count, 1);
}

static void MediumHandler(gex_Token_t token, void *buf, size_t nbytes,
                          gex_AM_Arg_t i, gex_AM_Arg_t size) {
  const gex_Rank_t from = SourceOf(token);
  const unsigned char *p = buf;
  size_t k;
  if (nbytes != (size_t)size) atomic_store(&g_bad, 1);
  for (k = 0; k < nbytes; ++k) {
    if (p[k] != MediumByte(from, (uint32_t)i, k)) {
      atomic_store(&g_bad, 1);
      break;
    }
  }
  atomic_fetch_add(&g_bytes, nbytes);
  atomic_fetch_add(&g_count, 1);
}

/* AMs carry no ordering promise: each Request must be handled exactly
 * once, in any order. */
static unsigned char g_seen[1 << 16];

static void ThreadHandler(gex_Token_t token, gex_AM_Arg_t seq) {
  if ((uint32_t)seq >= sizeof g_seen || g_seen[seq]++ != 0) {
    printf("rank %u: CHECK FAILED thread: Request %u handled twice\n",
           (unsigned)g_rank, (unsigned)seq);
    fflush(stdout);
    atomic_store(&g_bad, 1);
  }
  atomic_fetch_add(&g_count, 1);
  gex_AM_ReplyShort1(token, ACK_HANDLER, 0, seq);
}

static void AckHandler(gex_Token_t token, gex_AM_Arg_t seq) {
  (void)token;
  (void)seq;
  atomic_fetch_add(&g_acks, 1);
}

static void Barrier(gex_TM_t tm) { gex_Event_Wait(gex_Coll_BarrierNB(tm, 0)); }

static unsigned char *Filled(size_t n, unsigned seed) {
  unsigned char *p = malloc(n);
  size_t i;
  CHECK(p != NULL);
  for (i = 0; i < n; ++i) p[i] = (unsigned char)(seed * 101 + i * 7 + (i >> 9));
  return p;
}

/* Put `n` bytes from `src` to `remote` on `peer`, Get them back into a
 * fresh malloc'd buffer and compare. */
static void PutGetCheck(gex_TM_t tm, gex_Rank_t peer, void *remote,
                        unsigned char *src, size_t n) {
  unsigned char *back = malloc(n);
  CHECK(back != NULL);
  memset(back, 0xee, n);
  CHECK(gex_RMA_PutBlocking(tm, peer, remote, src, n, 0) == 0);
  CHECK(gex_RMA_GetBlocking(tm, back, peer, remote, n, 0) == 0);
  CHECK(memcmp(src, back, n) == 0);
  free(back);
}

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  gex_Segment_t seg;
  const char *mode = argc > 1 ? argv[1] : "hello";
  const uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
  const char *job = getenv("GEX_JOB_ID");
  const size_t seg_bytes =
      strcmp(mode, "firehose") == 0 ? kBigBytes + (1 << 20) : 6 << 20;
  gex_AM_Entry_t handlers[] = {
      {FLOOD_HANDLER, (gex_AM_Fn_t)FloodHandler,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 1, NULL, "flood"},
      {PING_HANDLER, (gex_AM_Fn_t)PingHandler,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, NULL, "ping"},
      {MEDIUM_HANDLER, (gex_AM_Fn_t)MediumHandler,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 2, NULL, "medium"},
      {THREAD_HANDLER, (gex_AM_Fn_t)ThreadHandler,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, NULL, "thread"},
      {ACK_HANDLER, (gex_AM_Fn_t)AckHandler,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 1, NULL, "ack"},
      {FAR_HANDLER, (gex_AM_Fn_t)FarHandler,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, NULL, "far"},
      {ALL_HANDLER, (gex_AM_Fn_t)AllHandler,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 1, NULL, "all"},
  };
  void *next_base = NULL;
  gex_Rank_t next;
  printf("rank ?: job=%s\n", job != NULL ? job : "");
  fflush(stdout);
  CHECK(gex_Client_Init(&client, &ep, &tm, "ibv_client", &argc, &argv, 0) ==
        GASNET_OK);
  g_rank = gex_TM_QueryRank(tm);
  g_size = gex_TM_QuerySize(tm);
  next = (g_rank + 1) % g_size;
  CHECK(gex_Segment_Attach(&seg, tm, seg_bytes) == GASNET_OK);
  CHECK(gex_EP_RegisterHandlers(
            ep, handlers, sizeof handlers / sizeof handlers[0]) == GASNET_OK);
  gex_Event_Wait(
      gex_EP_QueryBoundSegmentNB(tm, next, &next_base, NULL, NULL, 0));
  Barrier(tm);

  if (strcmp(mode, "hello") == 0) {
    /* The ring's first hop, so that every rank uses its next rank. */
    const uint64_t word = FloodWord(g_rank);
    gex_AM_RequestMedium1(tm, next, FLOOD_HANDLER, (void *)&word, sizeof word,
                          GEX_EVENT_NOW, 0, 0);
    GASNET_BLOCKUNTIL(atomic_load(&g_count) == 1);
    CHECK(!atomic_load(&g_bad));
    printf("rank %u: hello ok\n", (unsigned)g_rank);
  } else if (strcmp(mode, "flood") == 0 && n > 0) {
    const uint64_t word = FloodWord(g_rank);
    uint64_t i;
    CHECK(g_size >= 2);
    for (i = 0; i < n; ++i) {
      gex_AM_RequestMedium1(tm, next, FLOOD_HANDLER, (void *)&word, sizeof word,
                            GEX_EVENT_NOW, 0, (gex_AM_Arg_t)i);
    }
    GASNET_BLOCKUNTIL(atomic_load(&g_count) >= n);
    Barrier(tm);
    CHECK(!atomic_load(&g_bad));
    CHECK(atomic_load(&g_count) == n);
    printf("rank %u: flood ok sent=%llu handled=%llu\n", (unsigned)g_rank,
           (unsigned long long)n, (unsigned long long)atomic_load(&g_count));
  } else if (strcmp(mode, "pingpong") == 0 && n > 0) {
    const gex_Rank_t peer = g_rank ^ 1;
    uint64_t i;
    CHECK(g_size % 2 == 0);
    for (i = 0; i < n; ++i) {
      gex_AM_RequestShort1(tm, peer, PING_HANDLER, 0, (gex_AM_Arg_t)i);
      GASNET_BLOCKUNTIL(atomic_load(&g_count) >= i + 1);
    }
    Barrier(tm);
    CHECK(!atomic_load(&g_bad));
    CHECK(atomic_load(&g_count) == n);
    printf("rank %u: pingpong ok handled=%llu\n", (unsigned)g_rank,
           (unsigned long long)atomic_load(&g_count));
  } else if ((strcmp(mode, "medium") == 0 || strcmp(mode, "medium-seg") == 0) &&
             n > 0) {
    /* medium-seg: the payload lies in the segment (registered memory), so
     * GASNET_AM_GATHER_MIN can send it without a copy. */
    const int from_segment = strcmp(mode, "medium-seg") == 0;
    const size_t max = gex_AM_LUBRequestMedium();
    unsigned char *heap = from_segment ? NULL : malloc(max);
    unsigned char *payload =
        from_segment ? (unsigned char *)gex_Segment_QueryAddr(seg) : heap;
    uint64_t expect_bytes = 0;
    uint32_t i;
    size_t k;
    CHECK(payload != NULL);
    for (i = 0; i < n; ++i) {
      const size_t len = MediumSize(i, max);
      for (k = 0; k < len; ++k) payload[k] = MediumByte(g_rank, i, k);
      gex_AM_RequestMedium2(tm, next, MEDIUM_HANDLER, payload, len,
                            GEX_EVENT_NOW, 0, (gex_AM_Arg_t)i,
                            (gex_AM_Arg_t)len);
      expect_bytes += len;
    }
    GASNET_BLOCKUNTIL(atomic_load(&g_count) >= n);
    Barrier(tm);
    CHECK(!atomic_load(&g_bad));
    CHECK(atomic_load(&g_count) == n);
    /* Every rank sends the same sizes. */
    CHECK(atomic_load(&g_bytes) == expect_bytes);
    free(heap);
    printf("rank %u: medium ok handled=%llu bytes=%llu\n", (unsigned)g_rank,
           (unsigned long long)atomic_load(&g_count),
           (unsigned long long)atomic_load(&g_bytes));
  } else if (strcmp(mode, "firehose") == 0) {
    unsigned round;
    unsigned char *small[kSmallPuts];
    unsigned char *back;
    int i;
    for (round = 0; round < 2; ++round) {
      unsigned char *src = Filled(kBigBytes, g_rank * 2 + round + 1);
      PutGetCheck(tm, next, next_base, src, kBigBytes);
      free(src);
    }
    /* Small Puts from separate heap buffers (bounced unless
     * GASNET_NONBULKPUT_BOUNCE_LIMIT says otherwise), then one Get of
     * them all. */
    for (i = 0; i < kSmallPuts; ++i) {
      small[i] = Filled(kSmallBytes, g_rank + 7 * i);
      CHECK(gex_RMA_PutBlocking(tm, next,
                                (char *)next_base + (size_t)i * kSmallBytes,
                                small[i], kSmallBytes, 0) == 0);
    }
    back = malloc((size_t)kSmallPuts * kSmallBytes);
    CHECK(back != NULL);
    CHECK(gex_RMA_GetBlocking(tm, back, next, next_base,
                              (size_t)kSmallPuts * kSmallBytes, 0) == 0);
    for (i = 0; i < kSmallPuts; ++i) {
      CHECK(memcmp(back + (size_t)i * kSmallBytes, small[i], kSmallBytes) == 0);
      free(small[i]);
    }
    free(back);
    Barrier(tm);
    printf("rank %u: firehose ok\n", (unsigned)g_rank);
  } else if (strcmp(mode, "rma") == 0) {
    unsigned char *heap = Filled(kRmaBytes, g_rank + 3);
    /* Our source in the segment: above both regions the previous rank
     * writes into. */
    unsigned char *mine =
        (unsigned char *)gex_Segment_QueryAddr(seg) + (4 << 20);
    /* From the heap, then from our own segment. */
    PutGetCheck(tm, next, next_base, heap, kRmaBytes);
    memcpy(mine, heap, kRmaBytes);
    memset(mine, (int)g_rank, 4096);
    CHECK(gex_RMA_PutBlocking(tm, next, (char *)next_base + (2 << 20), mine,
                              kRmaBytes, 0) == 0);
    memset(heap, 0, kRmaBytes);
    CHECK(gex_RMA_GetBlocking(tm, heap, next, (char *)next_base + (2 << 20),
                              kRmaBytes, 0) == 0);
    CHECK(memcmp(heap, mine, kRmaBytes) == 0);
    free(heap);
    Barrier(tm);
    printf("rank %u: rma ok\n", (unsigned)g_rank);
  } else if (strcmp(mode, "thread") == 0 && n > 0) {
    uint64_t i;
    CHECK(g_size >= 2 && n <= sizeof g_seen);
    if (g_rank == 0) {
      for (i = 0; i < n; ++i) {
        gex_AM_RequestShort1(tm, 1, THREAD_HANDLER, 0, (gex_AM_Arg_t)i);
      }
      GASNET_BLOCKUNTIL(atomic_load(&g_acks) == n);
    } else if (g_rank == 1) {
      /* Computing: no GASNet call until every Request has been handled,
       * which only the receive thread can do. Bounded in time. */
      const double start = Now();
      while (atomic_load(&g_count) < n) {
        if (Now() - start > 30.0) {
          printf("rank 1: CHECK FAILED thread: %llu of %llu handled in 30 s\n",
                 (unsigned long long)atomic_load(&g_count),
                 (unsigned long long)n);
          fflush(stdout);
          gasnet_exit(1);
        }
      }
    }
    Barrier(tm);
    CHECK(!atomic_load(&g_bad));
    printf("rank %u: thread ok handled=%llu acks=%llu\n", (unsigned)g_rank,
           (unsigned long long)atomic_load(&g_count),
           (unsigned long long)atomic_load(&g_acks));
  } else if (strcmp(mode, "immediate") == 0) {
    const gex_Rank_t far = (g_rank + 3) % g_size;
    unsigned long would_block = 0;
    CHECK(g_size == 8);
    while (gex_AM_RequestShort1(tm, far, FAR_HANDLER, GEX_FLAG_IMMEDIATE, 0) !=
           0) {
      ++would_block;
      gasnet_AMPoll();
    }
    GASNET_BLOCKUNTIL(atomic_load(&g_count) == 1);
    Barrier(tm);
    CHECK(!atomic_load(&g_bad));
    CHECK(atomic_load(&g_count) == 1);
    printf("rank %u: immediate ok would_block=%lu\n", (unsigned)g_rank,
           would_block);
  } else if (strcmp(mode, "scale") == 0 || strcmp(mode, "ring") == 0) {
    /* scale: one Medium and one 8-byte Put to every other rank; ring: to
     * the next rank only. Each Put lands at 8 * (sender) in the target's
     * segment, checked after the barrier. */
    const int all = strcmp(mode, "scale") == 0;
    const uint64_t word = FloodWord(g_rank);
    const gex_Rank_t targets = all ? g_size - 1 : (g_size > 1 ? 1 : 0);
    uint64_t *mine = NULL;
    gex_Rank_t i;
    gex_Event_Wait(
        gex_EP_QueryBoundSegmentNB(tm, g_rank, (void **)&mine, NULL, NULL, 0));
    for (i = 1; i <= targets; ++i) {
      const gex_Rank_t to = (g_rank + i) % g_size;
      void *base = NULL;
      gex_AM_RequestMedium1(tm, to, ALL_HANDLER, (void *)&word, sizeof word,
                            GEX_EVENT_NOW, 0, 0);
      gex_Event_Wait(gex_EP_QueryBoundSegmentNB(tm, to, &base, NULL, NULL, 0));
      CHECK(gex_RMA_PutBlocking(tm, to, (uint64_t *)base + g_rank, &word,
                                sizeof word, 0) == 0);
    }
    GASNET_BLOCKUNTIL(atomic_load(&g_count) == targets);
    Barrier(tm);
    CHECK(!atomic_load(&g_bad));
    for (i = 1; i <= targets; ++i) {
      const gex_Rank_t from = (g_rank + g_size - i) % g_size;
      CHECK(mine[from] == FloodWord(from));
    }
    printf("rank %u: %s ok peak_kb=%lu anon_kb=%lu shmem_kb=%lu pss_kb=%lu\n",
           (unsigned)g_rank, mode, ProcKb("status", "VmHWM"),
           ProcKb("status", "RssAnon"), ProcKb("status", "RssShmem"),
           ProcKb("smaps_rollup", "Pss"));
  } else if (strcmp(mode, "exit") == 0 && n > 0) {
    if (g_rank == 1) {
      printf("rank 1: exiting with %d\n", (int)n);
      fflush(stdout);
      gasnet_exit((int)n);
    }
    Barrier(tm);
    printf("rank %u: CHECK FAILED exit: the barrier completed\n",
           (unsigned)g_rank);
  } else {
    printf("rank %u: CHECK FAILED unknown mode %s\n", (unsigned)g_rank, mode);
    fflush(stdout);
    gasnet_exit(2);
  }
  fflush(stdout);
  Barrier(tm);
  gasnet_exit(0);
  return 0;
}
