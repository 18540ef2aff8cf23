/* ofi_client: one rank of an ofi-conduit job (C11, SEQ, <gasnetex.h>
 * only), started by gasnetrun_ofi from ofi_job_test. Modes:
 *
 *   hello        init, attach a segment, barrier, exit 0. Prints
 *                "rank R: hello ok".
 *   ring         every rank Puts a pattern into the next rank's segment,
 *                Gets it back from there, and sends the next rank a Medium
 *                AM with its host name; each checks what it got (so every
 *                pair of neighbours crosses the network when ranks are on
 *                different hosts), then a barrier and a sum reduction.
 *                Prints "rank R: ring ok host=H from=F sum=S".
 *   flood N      rank 0 sends N AM Medium Requests of 8 bytes to rank 1
 *                as fast as it may (no reply: the handler only counts);
 *                rank 1 waits until it has counted N, then every rank
 *                reports its peak RSS growth over the flood. Prints
 *                "rank R: flood ok count=C rss_growth_kb=K" (C: handled on
 *                rank 1, sent on rank 0; other ranks 0).
 *
 *   scale [FILE] every rank sends one 8-byte Medium and Puts 8 bytes to
 *                every other rank (the issue 37 footprint pattern, with a
 *                4 MiB segment), waits for its own n-1 Mediums, then
 *                prints "rank R: scale ok peers=P hwm_kb=K rss_kb=K"
 *                (VmHWM, VmRSS). FILE: rank 0 also copies its
 *                /proc/self/smaps there (for finding where memory goes).
 *
 *   die K        every rank sends the next rank Medium AMs and Puts and
 *                Gets 4 KiB from it in a loop; the last rank is killed
 *                (SIGKILL, by itself) after K rounds while the others are
 *                still sending to it. The job must end with its code
 *                (137), not with a survivor's. A rank that finishes 10^8
 *                rounds prints "rank R: survived".
 *
 * A failed check prints "rank R: CHECK FAILED ..." and exits 1.
 */
#define _DEFAULT_SOURCE /* gethostname */
#include <gasnetex.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static gex_Rank_t g_rank;
static volatile uint64_t g_count;
static uint64_t g_expect_payload = 0x0123456789abcdefULL;

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      printf("rank %u: CHECK FAILED %s:%d: %s\n", (unsigned)g_rank, __FILE__, \
             __LINE__, #cond);                                                \
      fflush(stdout);                                                         \
      gasnet_exit(1);                                                         \
    }                                                                         \
  } while (0)

/* A /proc/self/status figure ("VmHWM:", "VmRSS:"), in KiB. */
static long StatusKb(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  const size_t n = strlen(key);
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, key, n) == 0) kb = strtol(line + n, NULL, 10);
  }
  fclose(f);
  return kb;
}

/* The peak resident set so far (VmHWM), in KiB. */
static long PeakRssKb(void) { return StatusKb("VmHWM:"); }

static void CopyFile(const char* from, const char* to) {
  FILE* in = fopen(from, "r");
  FILE* out = fopen(to, "w");
  char buf[4096];
  size_t n;
  CHECK(in != NULL && out != NULL);
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
  fclose(in);
  fclose(out);
}

static void CountHandler(gex_Token_t token, void* buf, size_t nbytes) {
  uint64_t v;
  (void)token;
  CHECK(nbytes == sizeof v);
  memcpy(&v, buf, sizeof v);
  CHECK(v == g_expect_payload);
  g_count = g_count + 1;
}

#define COUNT_HANDLER 200
#define HOST_HANDLER 201

static char g_from_host[256];
static volatile int g_got_host;

static void HostHandler(gex_Token_t token, void* buf, size_t nbytes) {
  (void)token;
  CHECK(nbytes > 0 && nbytes < sizeof g_from_host);
  memcpy(g_from_host, buf, nbytes);
  g_from_host[nbytes] = 0;
  g_got_host = 1;
}

int main(int argc, char** argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  gex_Segment_t segment;
  gex_AM_Entry_t entries[] = {
      {COUNT_HANDLER, (gex_AM_Fn_t)CountHandler,
       GEX_FLAG_AM_REQUEST | GEX_FLAG_AM_MEDIUM, 0, NULL, "count"},
      {HOST_HANDLER, (gex_AM_Fn_t)HostHandler,
       GEX_FLAG_AM_REQUEST | GEX_FLAG_AM_MEDIUM, 0, NULL, "host"}};
  const char* mode = argc > 1 ? argv[1] : "hello";

  CHECK(gex_Client_Init(&client, &ep, &tm, "ofi_client", &argc, &argv, 0) ==
        GASNET_OK);
  g_rank = gex_TM_QueryRank(tm);
  CHECK(gex_Segment_Attach(&segment, tm,
                           strcmp(mode, "scale") == 0 ? 4 << 20 : 1 << 20) ==
        GASNET_OK);
  CHECK(gex_EP_RegisterHandlers(ep, entries, 2) == GASNET_OK);
  gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));

  if (strcmp(mode, "hello") == 0) {
    printf("rank %u: hello ok\n", (unsigned)g_rank);
  } else if (strcmp(mode, "ring") == 0) {
    const gex_Rank_t n = gex_TM_QuerySize(tm);
    const gex_Rank_t next = (g_rank + 1) % n;
    enum { kBytes = 64 * 1024 };
    static unsigned char out[kBytes], back[kBytes];
    void* base = NULL;
    uintptr_t size = 0;
    char host[256] = {0};
    int64_t sum = 0;
    gex_Event_Wait(gex_EP_QueryBoundSegmentNB(tm, next, &base, NULL, &size, 0));
    CHECK(base != NULL && size >= kBytes);
    for (size_t i = 0; i < kBytes; ++i) {
      out[i] = (unsigned char)(i * 7 + g_rank);
    }
    CHECK(gex_RMA_PutBlocking(tm, next, base, out, kBytes, 0) == 0);
    CHECK(gex_RMA_GetBlocking(tm, back, next, base, kBytes, 0) == 0);
    CHECK(memcmp(out, back, kBytes) == 0);
    CHECK(gethostname(host, sizeof host - 1) == 0);
    gex_AM_RequestMedium0(tm, next, HOST_HANDLER, host, strlen(host),
                          GEX_EVENT_NOW, 0);
    GASNET_BLOCKUNTIL(g_got_host);
    gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
    {
      const int64_t mine = (int64_t)g_rank + 1;
      gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, &sum, &mine, GEX_DT_I64,
                                            sizeof sum, 1, GEX_OP_ADD, NULL,
                                            NULL, 0));
    }
    CHECK(sum == (int64_t)n * (n + 1) / 2);
    printf("rank %u: ring ok host=%s from=%s sum=%lld\n", (unsigned)g_rank,
           host, g_from_host, (long long)sum);
  } else if (strcmp(mode, "flood") == 0 && argc > 2) {
    const uint64_t n = strtoull(argv[2], NULL, 10);
    const long before = PeakRssKb();
    uint64_t count = 0;
    CHECK(gex_TM_QuerySize(tm) >= 2);
    if (g_rank == 0) {
      for (uint64_t i = 0; i < n; ++i) {
        gex_AM_RequestMedium0(tm, 1, COUNT_HANDLER, &g_expect_payload,
                              sizeof g_expect_payload, GEX_EVENT_NOW, 0);
      }
      count = n;
    } else if (g_rank == 1) {
      GASNET_BLOCKUNTIL(g_count == n);
      count = g_count;
    }
    gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
    CHECK(g_rank != 1 || g_count == n);
    printf("rank %u: flood ok count=%llu rss_growth_kb=%ld\n", (unsigned)g_rank,
           (unsigned long long)count, PeakRssKb() - before);
  } else if (strcmp(mode, "scale") == 0) {
    const gex_Rank_t n = gex_TM_QuerySize(tm);
    static uint64_t word;
    word = g_rank;
    for (gex_Rank_t d = 1; d < n; ++d) {
      const gex_Rank_t peer = (g_rank + d) % n;
      void* base = NULL;
      gex_AM_RequestMedium0(tm, peer, COUNT_HANDLER, &g_expect_payload,
                            sizeof g_expect_payload, GEX_EVENT_NOW, 0);
      gex_Event_Wait(
          gex_EP_QueryBoundSegmentNB(tm, peer, &base, NULL, NULL, 0));
      CHECK(gex_RMA_PutBlocking(tm, peer, (char*)base + 8 * g_rank, &word,
                                sizeof word, 0) == 0);
    }
    GASNET_BLOCKUNTIL(g_count == n - 1);
    gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
    if (g_rank == 0 && argc > 2) CopyFile("/proc/self/smaps", argv[2]);
    printf("rank %u: scale ok peers=%u hwm_kb=%ld rss_kb=%ld\n",
           (unsigned)g_rank, (unsigned)(n - 1), PeakRssKb(),
           StatusKb("VmRSS:"));
  } else if (strcmp(mode, "die") == 0 && argc > 2) {
    const uint64_t k = strtoull(argv[2], NULL, 10);
    const gex_Rank_t n = gex_TM_QuerySize(tm);
    const gex_Rank_t next = (g_rank + 1) % n;
    enum { kBytes = 4096 };
    static unsigned char out[kBytes], back[kBytes];
    void* base = NULL;
    gex_Event_Wait(gex_EP_QueryBoundSegmentNB(tm, next, &base, NULL, NULL, 0));
    memset(out, (int)g_rank, kBytes);
    for (uint64_t i = 0; i < 100000000ull; ++i) {
      if (g_rank == n - 1 && i == k) {
        printf("rank %u: dying\n", (unsigned)g_rank);
        fflush(stdout);
        raise(SIGKILL);
      }
      gex_AM_RequestMedium0(tm, next, COUNT_HANDLER, &g_expect_payload,
                            sizeof g_expect_payload, GEX_EVENT_NOW, 0);
      CHECK(gex_RMA_PutBlocking(tm, next, base, out, kBytes, 0) == 0);
      CHECK(gex_RMA_GetBlocking(tm, back, next, base, kBytes, 0) == 0);
      gex_AM_Poll();
    }
    printf("rank %u: survived\n", (unsigned)g_rank);
  } else {
    printf("rank %u: CHECK FAILED unknown mode %s\n", (unsigned)g_rank, mode);
    gasnet_exit(2);
  }
  fflush(stdout);
  gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
  gasnet_exit(0);
  return 0;
}
