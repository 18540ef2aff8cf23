/* A client of the ucx conduit for tests/ucx (C, SEQ, public API only).
 *
 * Usage: ucx_client <mode> [N]
 *   hello        init, attach, a barrier: "rank R: hello ok". Before init
 *                every rank prints "rank ?: job=<GEX_JOB_ID>" so that a
 *                job that dies in init can still be checked for leftovers.
 *   flood N      rank 0 sends rank 1 N AM Medium Requests of 8 bytes that
 *                are never answered (the handler only counts); rank 1
 *                waits until it has counted N. Every rank prints "rank R:
 *                flood ok count=C rss_growth_kb=K" (C: sent on rank 0,
 *                handled on rank 1, 0 elsewhere).
 *   storm N      every rank sends N AM Medium Requests of 512 bytes to
 *                every other rank, in turn, answering none: "rank R: storm
 *                ok count=C rss_growth_kb=K" (C: handled here, which must
 *                be N x (ranks - 1)).
 *   ring         every rank Puts and Gets 64 KiB to and from the next rank,
 *                then sends it an AM Long of 64 KiB (larger than a Medium:
 *                the payload goes by RMA ahead of the header) whose handler
 *                checks the bytes, and a Medium with its host name; then a
 *                sum reduction: "rank R: ring ok host=H from=F sum=S" (F:
 *                the previous rank's host; tests/multihost checks both).
 * A failed check prints "rank R: CHECK FAILED ..." and exits 1.
 */
#define _DEFAULT_SOURCE /* gethostname */
#include <gasnetex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static gex_Rank_t g_rank;
static gex_Rank_t g_size;
static volatile uint64_t g_count;
static volatile int g_long_ok;
static const uint64_t kPayload = 0x0123456789abcdefULL;

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      printf("rank %u: CHECK FAILED %s:%d: %s\n", (unsigned)g_rank, __FILE__, \
             __LINE__, #cond);                                                \
      fflush(stdout);                                                         \
      gasnet_exit(1);                                                         \
    }                                                                         \
  } while (0)

enum { kRingBytes = 64 * 1024 };
enum { COUNT_HANDLER = 200, STORM_HANDLER, LONG_HANDLER, HOST_HANDLER };

/* The peak resident set so far (VmHWM), in KiB. */
static long PeakRssKb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  }
  fclose(f);
  return kb;
}

static void CountHandler(gex_Token_t token, void *buf, size_t nbytes) {
  uint64_t v;
  (void)token;
  CHECK(nbytes == sizeof v);
  memcpy(&v, buf, sizeof v);
  CHECK(v == kPayload);
  g_count = g_count + 1;
}

static void StormHandler(gex_Token_t token, void *buf, size_t nbytes,
                         gex_AM_Arg_t from) {
  gex_Token_Info_t info;
  (void)buf;
  gex_Token_Info(token, &info, GEX_TI_SRCRANK);
  CHECK(nbytes == 512);
  CHECK((gex_Rank_t)from == info.gex_srcrank);
  CHECK(((unsigned char *)buf)[511] == (unsigned char)from);
  g_count = g_count + 1;
}

static void LongHandler(gex_Token_t token, void *buf, size_t nbytes,
                        gex_AM_Arg_t from) {
  const unsigned char *p = buf;
  size_t i;
  (void)token;
  CHECK(nbytes == kRingBytes);
  for (i = 0; i < nbytes; ++i) {
    CHECK(p[i] == (unsigned char)(from + i * 7));
  }
  g_long_ok = 1;
}

static char g_from_host[256];
static volatile int g_got_host;

static void HostHandler(gex_Token_t token, void *buf, size_t nbytes) {
  (void)token;
  CHECK(nbytes > 0 && nbytes < sizeof g_from_host);
  memcpy(g_from_host, buf, nbytes);
  g_from_host[nbytes] = 0;
  g_got_host = 1;
}

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  gex_Segment_t seg;
  const char *mode = argc > 1 ? argv[1] : "hello";
  const char *job = getenv("GEX_JOB_ID");
  gex_AM_Entry_t handlers[] = {
      {COUNT_HANDLER, (gex_AM_Fn_t)CountHandler,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, NULL, "count"},
      {STORM_HANDLER, (gex_AM_Fn_t)StormHandler,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 1, NULL, "storm"},
      {LONG_HANDLER, (gex_AM_Fn_t)LongHandler,
       GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQUEST, 1, NULL, "long"},
      {HOST_HANDLER, (gex_AM_Fn_t)HostHandler,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, NULL, "host"},
  };
  printf("rank ?: job=%s\n", job != NULL ? job : "");
  fflush(stdout);
  CHECK(gex_Client_Init(&client, &ep, &tm, "ucx_client", &argc, &argv, 0) ==
        GASNET_OK);
  g_rank = gex_TM_QueryRank(tm);
  g_size = gex_TM_QuerySize(tm);
  CHECK(gex_Segment_Attach(&seg, tm, 4 * kRingBytes) == GASNET_OK);
  CHECK(gex_EP_RegisterHandlers(ep, handlers, 4) == GASNET_OK);
  gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));

  if (strcmp(mode, "hello") == 0) {
    printf("rank %u: hello ok\n", (unsigned)g_rank);
  } else if (strcmp(mode, "flood") == 0 && argc > 2) {
    const uint64_t n = strtoull(argv[2], NULL, 10);
    const long before = PeakRssKb();
    uint64_t count = 0;
    uint64_t i;
    CHECK(g_size >= 2);
    if (g_rank == 0) {
      for (i = 0; i < n; ++i) {
        gex_AM_RequestMedium0(tm, 1, COUNT_HANDLER, (void *)&kPayload,
                              sizeof kPayload, GEX_EVENT_NOW, 0);
      }
      count = n;
    } else if (g_rank == 1) {
      GASNET_BLOCKUNTIL(g_count == n);
      count = g_count;
    }
    gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
    printf("rank %u: flood ok count=%llu rss_growth_kb=%ld\n", (unsigned)g_rank,
           (unsigned long long)count, PeakRssKb() - before);
  } else if (strcmp(mode, "storm") == 0 && argc > 2) {
    const uint64_t n = strtoull(argv[2], NULL, 10);
    const uint64_t expect = n * (g_size - 1);
    const long before = PeakRssKb();
    unsigned char payload[512];
    uint64_t i;
    gex_Rank_t k;
    memset(payload, (int)g_rank, sizeof payload);
    for (i = 0; i < n; ++i) {
      for (k = 1; k < g_size; ++k) {
        gex_AM_RequestMedium1(tm, (g_rank + k) % g_size, STORM_HANDLER, payload,
                              sizeof payload, GEX_EVENT_NOW, 0,
                              (gex_AM_Arg_t)g_rank);
      }
    }
    GASNET_BLOCKUNTIL(g_count == expect);
    gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
    CHECK(g_count == expect);
    printf("rank %u: storm ok count=%llu rss_growth_kb=%ld\n", (unsigned)g_rank,
           (unsigned long long)g_count, PeakRssKb() - before);
  } else if (strcmp(mode, "ring") == 0) {
    const gex_Rank_t next = (g_rank + 1) % g_size;
    unsigned char *out = malloc(kRingBytes);
    unsigned char *back = malloc(kRingBytes);
    void *base = NULL;
    size_t i;
    char host[256] = {0};
    int64_t sum = 0;
    const int64_t mine = (int64_t)g_rank + 1;
    CHECK(out != NULL && back != NULL);
    gex_Event_Wait(gex_EP_QueryBoundSegmentNB(tm, next, &base, NULL, NULL, 0));
    for (i = 0; i < kRingBytes; ++i) out[i] = (unsigned char)(g_rank + i * 7);
    /* Heap buffers (outside the segment) on both sides of the RMA. */
    CHECK(gex_RMA_PutBlocking(tm, next, base, out, kRingBytes, 0) == 0);
    CHECK(gex_RMA_GetBlocking(tm, back, next, base, kRingBytes, 0) == 0);
    CHECK(memcmp(out, back, kRingBytes) == 0);
    gex_AM_RequestLong1(tm, next, LONG_HANDLER, out, kRingBytes,
                        (char *)base + 2 * kRingBytes, GEX_EVENT_NOW, 0,
                        (gex_AM_Arg_t)g_rank);
    GASNET_BLOCKUNTIL(g_long_ok);
    CHECK(gethostname(host, sizeof host - 1) == 0);
    gex_AM_RequestMedium0(tm, next, HOST_HANDLER, host, strlen(host),
                          GEX_EVENT_NOW, 0);
    GASNET_BLOCKUNTIL(g_got_host);
    gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
    gex_Event_Wait(gex_Coll_ReduceToAllNB(
        tm, &sum, &mine, GEX_DT_I64, sizeof sum, 1, GEX_OP_ADD, NULL, NULL, 0));
    CHECK(sum == (int64_t)g_size * (g_size + 1) / 2);
    free(out);
    free(back);
    printf("rank %u: ring ok host=%s from=%s sum=%lld\n", (unsigned)g_rank,
           host, g_from_host, (long long)sum);
  } else {
    printf("rank %u: CHECK FAILED unknown mode %s\n", (unsigned)g_rank, mode);
    gasnet_exit(2);
  }
  fflush(stdout);
  gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
  gasnet_exit(0);
  return 0;
}
