/* ofi_par_client: one rank of a multi-threaded (GASNET_PAR) ofi-conduit
 * job, started by gasnetrun_ofi from ofi_par_job_test. C11 and pthreads,
 * written against <gasnetex.h> only, linked with //conduit/ofi:gasnet_ofi_par.
 *
 *   ofi_par_client [THREADS [ITERS]]     (defaults 4 and 20)
 *
 * Each rank starts THREADS pthreads and works from its main thread too:
 * W = THREADS + 1 workers, ids 0 (main) .. THREADS. Every worker runs ITERS
 * iterations; in iteration `seq` it visits every other rank, the first one
 * rotating with (worker, seq), and to each it
 *   - sends an AM Request Short (worker, seq); the handler replies with a
 *     Short echoing them;
 *   - sends an AM Request Medium (worker, seq, len) of a size that varies
 *     from 0 to gex_AM_MaxRequestMedium; the handler checks every byte and
 *     replies with a Medium of a varying size up to gex_Token_MaxReplyMedium,
 *     checked the same way at the requester;
 *   - sends an AM Request Long into the target's segment slot for (this
 *     rank, worker), sizes from 1 byte to 32 KiB (both sides of
 *     GASNET_OFI_MAX_MEDIUM, where ofi moves a payload by RMA first); the
 *     handler checks the address and every byte and replies with a Long
 *     into the requester's slot for (target, worker), checked likewise;
 *   - Puts a pattern into its own three RMA slots for (this rank, worker) in
 *     the peer's segment, by gex_RMA_PutBlocking, gex_RMA_PutNB (a local
 *     completion event waited first) and gex_RMA_PutNBI (GEX_EVENT_NOW, the
 *     source overwritten at once; or GEX_EVENT_GROUP with gex_NBI_Wait of
 *     GEX_EC_LC on odd iterations), sizes from 1 byte to 48 KiB (inject,
 *     bounce-buffer and blocking paths), then reads every slot back by
 *     gex_RMA_GetBlocking, gex_RMA_GetNB and gex_RMA_GetNBI and checks every
 *     byte;
 * then polls until the iteration's 3 replies from every peer are back.
 * Handlers run on whichever thread polls. Request handlers count, with
 * atomics, the requests of each kind from each (source rank, worker), which
 * must arrive in iteration order; reply handlers check the echoed iteration
 * against the worker's current one and count per (peer, worker, kind).
 *
 * After the workers are joined: a barrier, then the exact check that every
 * (other rank, worker, kind) was handled ITERS times and answered ITERS
 * times (none from this rank itself), then a barrier and gasnet_exit(0).
 * Prints one line per rank:
 *   ofi_par_client: rank R ok workers=W iters=K peers=P handled=H replies=Q
 *                   puts=U gets=G
 * where H = Q = 3 * W * K * P and U = G = 3 * W * K * P. Any mismatch prints
 *   ofi_par_client: rank R FAIL <what>
 * on stdout and stderr and ends this process with exit code 1 at once,
 * without calling GASNet (so a broken runtime cannot hide it); the launcher
 * then ends the job with that code. Every wait polls (gex_AM_Poll); nothing
 * sleeps. */
#define _DEFAULT_SOURCE /* sched_yield, _exit under -std=c11 */
#include <gasnetex.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* Failing. */

static int g_rank_for_messages = -1;

static void Fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

static void Fail(const char *fmt, ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  fflush(stdout);
  printf("ofi_par_client: rank %d FAIL %s\n", g_rank_for_messages, what);
  fflush(stdout);
  fprintf(stderr, "ofi_par_client: rank %d FAIL %s\n", g_rank_for_messages,
          what);
  fflush(stderr);
  _exit(1);
}

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      char where_[160];                                                        \
      snprintf(where_, sizeof where_, "%s:%d: %s", __FILE__, __LINE__, #cond); \
      FailAt(where_, __VA_ARGS__);                                             \
    }                                                                          \
  } while (0)

static void FailAt(const char *where, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

static void FailAt(const char *where, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  Fail("%s: %s", where, what);
}

/* ---------------------------------------------------------------------- */
/* The job, the segment layout and the patterns. */

enum { kShort = 0, kMedium = 1, kLong = 2, kKinds = 3 };
static const char *const kKindName[kKinds] = {"Short", "Medium", "Long"};

/* Pattern kinds (a different byte stream for each use). */
enum {
  kPatMediumReq = 1,
  kPatMediumRep,
  kPatLongReq,
  kPatLongRep,
  kPatPutBlocking,
  kPatPutNB,
  kPatPutNBI
};

/* In every rank's segment, one area per (other rank, worker): the Long
 * Requests from that rank's worker land in LONG_REQ, the Long Replies to
 * this rank's worker from that rank in LONG_REP, and that rank's worker's
 * Puts in its three RMA slots. */
#define kLongSlot ((size_t)32 * 1024)
#define kRmaSlot ((size_t)48 * 1024)
#define kLongReqOff ((size_t)0)
#define kLongRepOff (kLongReqOff + kLongSlot)
#define kRmaOff (kLongRepOff + kLongSlot)
#define kArea (kRmaOff + 3 * kRmaSlot)

#define kMaxThreads 64

#define kShortReqIndex 140
#define kShortRepIndex 141
#define kMediumReqIndex 142
#define kMediumRepIndex 143
#define kLongReqIndex 144
#define kLongRepIndex 145

static gex_TM_t g_tm;
static gex_Rank_t g_me;
static gex_Rank_t g_n;
static unsigned g_workers;
static unsigned g_iters;
static unsigned char *g_base;   /* this rank's segment */
static unsigned char **g_owner; /* every rank's segment, its owner's address */

/* [src][worker][kind]: requests handled here. */
static _Atomic uint32_t *g_handled;
/* [peer][worker][kind]: replies received here. */
static _Atomic uint32_t *g_answered;
/* [worker]: replies of the worker's current iteration, and the iteration. */
static _Atomic uint32_t g_replies_now[kMaxThreads + 1];
static _Atomic uint32_t g_iter_now[kMaxThreads + 1];
/* Sizes reached, for the coverage check: the largest Medium Request sent,
 * and whether a Long above the Medium limit went out. */
static _Atomic uint64_t g_largest_medium;
static _Atomic uint32_t g_long_by_rma;

static size_t Index3(gex_Rank_t rank, unsigned worker, int kind) {
  return ((size_t)rank * g_workers + worker) * kKinds + (size_t)kind;
}

static size_t AreaOff(gex_Rank_t rank, unsigned worker) {
  return ((size_t)rank * g_workers + worker) * kArea;
}

static unsigned char Pattern(unsigned src, unsigned worker, unsigned seq,
                             unsigned kind, size_t i) {
  return (unsigned char)(src * 29u + worker * 53u + seq * 7u + kind * 101u +
                         (unsigned)i * 13u + (unsigned)(i >> 8) * 5u +
                         (unsigned)(i >> 16) * 3u + 1u);
}

static void Fill(unsigned char *p, size_t len, unsigned src, unsigned worker,
                 unsigned seq, unsigned kind) {
  for (size_t i = 0; i < len; ++i) p[i] = Pattern(src, worker, seq, kind, i);
}

/* Fails naming the first byte of [p, +len) that differs from the pattern. */
static void Verify(const char *what, const unsigned char *p, size_t len,
                   unsigned src, unsigned worker, unsigned seq, unsigned kind,
                   gex_Rank_t peer) {
  for (size_t i = 0; i < len; ++i) {
    const unsigned char want = Pattern(src, worker, seq, kind, i);
    if (p[i] != want) {
      size_t bad = 0;
      for (size_t j = i; j < len; ++j)
        bad += p[j] != Pattern(src, worker, seq, kind, j);
      Fail(
          "%s with peer %u (worker %u iteration %u, %zu bytes): byte %zu is "
          "0x%02x, expected 0x%02x (%zu bytes wrong from there)",
          what, (unsigned)peer, worker, seq, len, i, p[i], want, bad);
    }
  }
}

/* A size in [0, max] from a sweep of classes chosen by `pick`: the small
 * ones, both sides of the inject sizes and of 4 KiB, and the largest. */
static size_t SizeFor(unsigned pick, size_t max, size_t least) {
  static const size_t kSizes[] = {0,    1,    8,    100,  511,  1000,
                                  2047, 4095, 4096, 4097, 6000, 8191};
  const size_t nsizes = sizeof kSizes / sizeof *kSizes;
  const unsigned k = pick % (unsigned)(nsizes + 3);
  size_t len;
  if (k < nsizes) {
    len = kSizes[k];
  } else if (k == nsizes) {
    len = max;
  } else if (k == nsizes + 1) {
    len = max > 0 ? max - 1 : 0;
  } else {
    len = max / 2 + 3;
  }
  if (len > max) len = max;
  if (len < least) len = least;
  return len;
}

/* Sizes for Longs and Puts (1 byte to `max`): both sides of 8 KiB (the
 * default GASNET_OFI_MAX_MEDIUM: a Long's payload by RMA above it) and of
 * the bounce-buffer threshold (16 KiB by default). */
static size_t BigSizeFor(unsigned pick, size_t max) {
  static const size_t kSizes[] = {1,     8,     64,    1000,  4096,
                                  8191,  8192,  8193,  12000, 16384,
                                  16385, 30000, 40000, 49152};
  const size_t len = kSizes[pick % (sizeof kSizes / sizeof *kSizes)];
  return len < max ? len : max;
}

/* A per-thread buffer of `size` bytes for handlers' replies. */
static _Thread_local unsigned char *tl_reply;
static _Thread_local size_t tl_reply_size;

static unsigned char *ReplyBuffer(size_t size) {
  if (tl_reply_size < size) {
    free(tl_reply);
    tl_reply = malloc(size);
    CHECK(tl_reply != NULL, "out of memory (%zu bytes)", size);
    tl_reply_size = size;
  }
  return tl_reply;
}

static void Poll(void) {
  gex_AM_Poll();
  sched_yield(); /* 2 cores, many threads: let the others poll too */
}

/* ---------------------------------------------------------------------- */
/* Handlers. */

/* Checks a message's source and arguments; returns its source. */
static gex_Rank_t Source(gex_Token_t t, int request, const char *what,
                         gex_AM_Arg_t worker, gex_AM_Arg_t seq) {
  gex_Token_Info_t info;
  const gex_TI_t got = gex_Token_Info(t, &info, GEX_TI_SRCRANK | GEX_TI_IS_REQ);
  CHECK((got & (GEX_TI_SRCRANK | GEX_TI_IS_REQ)) ==
            (GEX_TI_SRCRANK | GEX_TI_IS_REQ),
        "%s: gex_Token_Info returned 0x%x", what, (unsigned)got);
  CHECK(info.gex_srcrank < g_n && info.gex_srcrank != g_me,
        "%s from rank %u (this is rank %u of %u)", what,
        (unsigned)info.gex_srcrank, (unsigned)g_me, (unsigned)g_n);
  CHECK(!!info.gex_is_req == !!request, "%s: is_req %d", what, info.gex_is_req);
  CHECK(worker >= 0 && (unsigned)worker < g_workers && seq >= 0 &&
            (unsigned)seq < g_iters,
        "%s from rank %u: worker %" PRId32 " iteration %" PRId32, what,
        (unsigned)info.gex_srcrank, worker, seq);
  return info.gex_srcrank;
}

/* Counts a request from (src, worker) of `kind`: the seq-th of them. */
static void CountRequest(gex_Rank_t src, gex_AM_Arg_t worker, gex_AM_Arg_t seq,
                         int kind) {
  const uint32_t before =
      atomic_fetch_add(&g_handled[Index3(src, (unsigned)worker, kind)], 1);
  CHECK(before == (uint32_t)seq,
        "%s Request from rank %u worker %" PRId32 " iteration %" PRId32
        " arrived as number %" PRIu32,
        kKindName[kind], (unsigned)src, worker, seq, before);
}

/* Counts a reply to this rank's `worker` from `src`: it must answer the
 * worker's current iteration. */
static void CountReply(gex_Rank_t src, gex_AM_Arg_t worker, gex_AM_Arg_t seq,
                       int kind) {
  const uint32_t now = atomic_load(&g_iter_now[worker]);
  CHECK((uint32_t)seq == now,
        "%s Reply from rank %u to worker %" PRId32 " echoes iteration %" PRId32
        ", the worker is in iteration %" PRIu32,
        kKindName[kind], (unsigned)src, worker, seq, now);
  const uint32_t before =
      atomic_fetch_add(&g_answered[Index3(src, (unsigned)worker, kind)], 1);
  CHECK(before == (uint32_t)seq,
        "%s Reply from rank %u to worker %" PRId32 " iteration %" PRId32
        " arrived as number %" PRIu32,
        kKindName[kind], (unsigned)src, worker, seq, before);
  atomic_fetch_add(&g_replies_now[worker], 1);
}

static void ShortReq(gex_Token_t t, gex_AM_Arg_t worker, gex_AM_Arg_t seq) {
  const gex_Rank_t src = Source(t, 1, "Short Request", worker, seq);
  CountRequest(src, worker, seq, kShort);
  const int rc = gex_AM_ReplyShort2(t, kShortRepIndex, 0, worker, seq);
  CHECK(rc == 0, "gex_AM_ReplyShort2 to rank %u returned %d", (unsigned)src,
        rc);
}

static void ShortRep(gex_Token_t t, gex_AM_Arg_t worker, gex_AM_Arg_t seq) {
  const gex_Rank_t src = Source(t, 0, "Short Reply", worker, seq);
  CountReply(src, worker, seq, kShort);
}

static void MediumReq(gex_Token_t t, void *buf, size_t nbytes,
                      gex_AM_Arg_t worker, gex_AM_Arg_t seq, gex_AM_Arg_t len) {
  const gex_Rank_t src = Source(t, 1, "Medium Request", worker, seq);
  CHECK(len >= 0 && nbytes == (size_t)len,
        "Medium Request from rank %u worker %" PRId32 " iteration %" PRId32
        ": %zu bytes, the sender said %" PRId32,
        (unsigned)src, worker, seq, nbytes, len);
  CHECK(nbytes == 0 || ((uintptr_t)buf & 7) == 0,
        "Medium Request payload at %p: not 8-byte aligned", buf);
  Verify("Medium Request payload", (const unsigned char *)buf, nbytes, src,
         (unsigned)worker, (unsigned)seq, kPatMediumReq, src);
  CountRequest(src, worker, seq, kMedium);
  const size_t max = gex_Token_MaxReplyMedium(t, GEX_EVENT_NOW, 0, 3);
  const size_t rlen =
      SizeFor((unsigned)seq * 5u + (unsigned)worker + g_me * 3u + 1u, max, 0);
  unsigned char *out = ReplyBuffer(rlen + 1);
  Fill(out, rlen, g_me, (unsigned)worker, (unsigned)seq, kPatMediumRep);
  const int rc =
      gex_AM_ReplyMedium3(t, kMediumRepIndex, out, rlen, GEX_EVENT_NOW, 0,
                          worker, seq, (gex_AM_Arg_t)rlen);
  CHECK(rc == 0, "gex_AM_ReplyMedium3 to rank %u returned %d", (unsigned)src,
        rc);
  memset(out, 0xEE, rlen); /* local completion is synchronous */
}

static void MediumRep(gex_Token_t t, void *buf, size_t nbytes,
                      gex_AM_Arg_t worker, gex_AM_Arg_t seq, gex_AM_Arg_t len) {
  const gex_Rank_t src = Source(t, 0, "Medium Reply", worker, seq);
  CHECK(len >= 0 && nbytes == (size_t)len,
        "Medium Reply from rank %u: %zu bytes, the sender said %" PRId32,
        (unsigned)src, nbytes, len);
  Verify("Medium Reply payload", (const unsigned char *)buf, nbytes, src,
         (unsigned)worker, (unsigned)seq, kPatMediumRep, src);
  CountReply(src, worker, seq, kMedium);
}

static void LongReq(gex_Token_t t, void *buf, size_t nbytes,
                    gex_AM_Arg_t worker, gex_AM_Arg_t seq, gex_AM_Arg_t len) {
  const gex_Rank_t src = Source(t, 1, "Long Request", worker, seq);
  const unsigned char *at =
      g_base + AreaOff(src, (unsigned)worker) + kLongReqOff;
  CHECK(buf == at,
        "Long Request from rank %u worker %" PRId32 " landed at %p, not %p",
        (unsigned)src, worker, buf, (const void *)at);
  CHECK(len > 0 && nbytes == (size_t)len,
        "Long Request from rank %u: %zu bytes, the sender said %" PRId32,
        (unsigned)src, nbytes, len);
  Verify("Long Request payload", at, nbytes, src, (unsigned)worker,
         (unsigned)seq, kPatLongReq, src);
  CountRequest(src, worker, seq, kLong);
  size_t max = gex_Token_MaxReplyLong(t, GEX_EVENT_NOW, 0, 3);
  if (max > kLongSlot) max = kLongSlot;
  const size_t rlen =
      BigSizeFor((unsigned)seq * 3u + (unsigned)worker * 5u + g_me + 2u, max);
  unsigned char *out = ReplyBuffer(rlen);
  Fill(out, rlen, g_me, (unsigned)worker, (unsigned)seq, kPatLongRep);
  const int rc = gex_AM_ReplyLong3(
      t, kLongRepIndex, out, rlen,
      g_owner[src] + AreaOff(g_me, (unsigned)worker) + kLongRepOff,
      GEX_EVENT_NOW, 0, worker, seq, (gex_AM_Arg_t)rlen);
  CHECK(rc == 0, "gex_AM_ReplyLong3 to rank %u returned %d", (unsigned)src, rc);
  memset(out, 0xEE, rlen);
}

static void LongRep(gex_Token_t t, void *buf, size_t nbytes,
                    gex_AM_Arg_t worker, gex_AM_Arg_t seq, gex_AM_Arg_t len) {
  const gex_Rank_t src = Source(t, 0, "Long Reply", worker, seq);
  const unsigned char *at =
      g_base + AreaOff(src, (unsigned)worker) + kLongRepOff;
  CHECK(buf == at,
        "Long Reply from rank %u to worker %" PRId32 " landed at %p, not %p",
        (unsigned)src, worker, buf, (const void *)at);
  CHECK(len > 0 && nbytes == (size_t)len,
        "Long Reply from rank %u: %zu bytes, the sender said %" PRId32,
        (unsigned)src, nbytes, len);
  Verify("Long Reply payload", at, nbytes, src, (unsigned)worker, (unsigned)seq,
         kPatLongRep, src);
  CountReply(src, worker, seq, kLong);
}

/* ---------------------------------------------------------------------- */
/* The workers. */

typedef struct {
  unsigned id;
  pthread_t thread;
  unsigned char *out[3]; /* sources of the three Puts */
  unsigned char *back[3];
  unsigned char *am; /* AM payloads */
  uint64_t puts, gets;
} Worker;

static void WaitEvent(gex_Event_t ev) {
  while (gex_Event_Test(ev) != GASNET_OK) Poll();
}

/* The three Puts to `peer` and the three Gets reading them back. */
static void Rma(Worker *w, gex_Rank_t peer, unsigned seq) {
  const unsigned me = (unsigned)g_me;
  unsigned char *slot = g_owner[peer] + AreaOff(g_me, w->id) + kRmaOff;
  size_t len[3];
  int rc;
  for (int k = 0; k < 3; ++k) {
    len[k] = BigSizeFor(
        seq * 3u + w->id * 7u + (unsigned)peer * 11u + (unsigned)k * 5u,
        kRmaSlot);
    Fill(w->out[k], len[k], me, w->id, seq, kPatPutBlocking + (unsigned)k);
    memset(w->back[k], 0xEE, len[k]);
  }
  /* Blocking: the source is reusable on return. */
  rc = gex_RMA_PutBlocking(g_tm, peer, slot, w->out[0], len[0], 0);
  CHECK(rc == 0, "gex_RMA_PutBlocking to rank %u returned %d", (unsigned)peer,
        rc);
  memset(w->out[0], 0xEE, len[0]);
  /* NB with a local-completion event, waited before the source changes. */
  gex_Event_t lc = GEX_EVENT_NO_OP;
  const gex_Event_t put_nb =
      gex_RMA_PutNB(g_tm, peer, slot + kRmaSlot, w->out[1], len[1], &lc, 0);
  CHECK(lc != GEX_EVENT_NO_OP, "gex_RMA_PutNB to rank %u set no lc event",
        (unsigned)peer);
  /* NBI: NOW (reusable on return) or GROUP (after gex_NBI_Wait(LC)). */
  const int group = seq & 1;
  rc = gex_RMA_PutNBI(g_tm, peer, slot + 2 * kRmaSlot, w->out[2], len[2],
                      group ? GEX_EVENT_GROUP : GEX_EVENT_NOW, 0);
  CHECK(rc == 0, "gex_RMA_PutNBI to rank %u returned %d", (unsigned)peer, rc);
  if (group) {
    while (gex_NBI_Test(GEX_EC_LC, 0) != GASNET_OK) Poll();
  }
  memset(w->out[2], 0xEE, len[2]);
  WaitEvent(lc);
  memset(w->out[1], 0xEE, len[1]);
  WaitEvent(put_nb);
  while (gex_NBI_Test(GEX_EC_PUT, 0) != GASNET_OK) Poll();
  w->puts += 3;

  rc = gex_RMA_GetBlocking(g_tm, w->back[0], peer, slot, len[0], 0);
  CHECK(rc == 0, "gex_RMA_GetBlocking from rank %u returned %d", (unsigned)peer,
        rc);
  const gex_Event_t get_nb =
      gex_RMA_GetNB(g_tm, w->back[1], peer, slot + kRmaSlot, len[1], 0);
  rc = gex_RMA_GetNBI(g_tm, w->back[2], peer, slot + 2 * kRmaSlot, len[2], 0);
  CHECK(rc == 0, "gex_RMA_GetNBI from rank %u returned %d", (unsigned)peer, rc);
  WaitEvent(get_nb);
  while (gex_NBI_Test(GEX_EC_GET, 0) != GASNET_OK) Poll();
  w->gets += 3;
  Verify("PutBlocking then GetBlocking", w->back[0], len[0], me, w->id, seq,
         kPatPutBlocking, peer);
  Verify("PutNB then GetNB", w->back[1], len[1], me, w->id, seq, kPatPutNB,
         peer);
  Verify(group ? "PutNBI (GEX_EVENT_GROUP) then GetNBI"
               : "PutNBI (GEX_EVENT_NOW) then GetNBI",
         w->back[2], len[2], me, w->id, seq, kPatPutNBI, peer);
}

static void *Work(void *arg) {
  Worker *w = (Worker *)arg;
  const unsigned me = (unsigned)g_me;
  const gex_AM_Arg_t id = (gex_AM_Arg_t)w->id;
  for (unsigned seq = 0; seq < g_iters; ++seq) {
    atomic_store(&g_iter_now[w->id], seq);
    atomic_store(&g_replies_now[w->id], 0);
    for (unsigned k = 0; k + 1 < g_n; ++k) {
      const gex_Rank_t peer =
          (gex_Rank_t)((me + 1 + (k + w->id + seq) % (g_n - 1)) % g_n);
      int rc = gex_AM_RequestShort2(g_tm, peer, kShortReqIndex, 0, id,
                                    (gex_AM_Arg_t)seq);
      CHECK(rc == 0, "gex_AM_RequestShort2 to rank %u returned %d",
            (unsigned)peer, rc);

      const size_t max_medium =
          gex_AM_MaxRequestMedium(g_tm, peer, GEX_EVENT_NOW, 0, 3);
      const size_t mlen =
          SizeFor(seq + w->id * 7u + (unsigned)peer * 3u, max_medium, 0);
      CHECK(mlen <= kLongSlot * 2, "Medium of %zu bytes", mlen);
      Fill(w->am, mlen, me, w->id, seq, kPatMediumReq);
      rc = gex_AM_RequestMedium3(g_tm, peer, kMediumReqIndex, w->am, mlen,
                                 GEX_EVENT_NOW, 0, id, (gex_AM_Arg_t)seq,
                                 (gex_AM_Arg_t)mlen);
      CHECK(rc == 0, "gex_AM_RequestMedium3 to rank %u returned %d",
            (unsigned)peer, rc);
      memset(w->am, 0xEE, mlen); /* local completion is synchronous */
      {
        uint64_t seen = atomic_load(&g_largest_medium);
        while (mlen > seen &&
               !atomic_compare_exchange_weak(&g_largest_medium, &seen, mlen)) {
        }
      }

      size_t max_long = gex_AM_MaxRequestLong(g_tm, peer, GEX_EVENT_NOW, 0, 3);
      if (max_long > kLongSlot) max_long = kLongSlot;
      const size_t llen =
          BigSizeFor(seq + w->id * 3u + (unsigned)peer, max_long);
      if (llen > max_medium) atomic_store(&g_long_by_rma, 1);
      Fill(w->am, llen, me, w->id, seq, kPatLongReq);
      rc = gex_AM_RequestLong3(
          g_tm, peer, kLongReqIndex, w->am, llen,
          g_owner[peer] + AreaOff(g_me, w->id) + kLongReqOff, GEX_EVENT_NOW, 0,
          id, (gex_AM_Arg_t)seq, (gex_AM_Arg_t)llen);
      CHECK(rc == 0, "gex_AM_RequestLong3 to rank %u returned %d",
            (unsigned)peer, rc);
      memset(w->am, 0xEE, llen);

      Rma(w, peer, seq);
    }
    const uint32_t want = (uint32_t)kKinds * (g_n - 1);
    while (atomic_load(&g_replies_now[w->id]) < want) Poll();
    CHECK(atomic_load(&g_replies_now[w->id]) == want,
          "worker %u iteration %u: %" PRIu32 " replies, expected %" PRIu32,
          w->id, seq, atomic_load(&g_replies_now[w->id]), want);
  }
  return NULL;
}

/* ---------------------------------------------------------------------- */

static unsigned Arg(int argc, char **argv, int i, unsigned dflt, unsigned lo,
                    unsigned hi) {
  if (argc <= i) return dflt;
  char *end = NULL;
  const unsigned long v = strtoul(argv[i], &end, 10);
  CHECK(*argv[i] != 0 && *end == 0 && v >= lo && v <= hi,
        "usage: ofi_par_client [THREADS [ITERS]]: argument %d (%s) is not in "
        "%u..%u",
        i, argv[i], lo, hi);
  return (unsigned)v;
}

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_Segment_t segment;
  gex_AM_Entry_t entries[] = {
      {kShortReqIndex, (gex_AM_Fn_t)ShortReq,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 2, NULL, "short request"},
      {kShortRepIndex, (gex_AM_Fn_t)ShortRep,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 2, NULL, "short reply"},
      {kMediumReqIndex, (gex_AM_Fn_t)MediumReq,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 3, NULL, "medium request"},
      {kMediumRepIndex, (gex_AM_Fn_t)MediumRep,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REPLY, 3, NULL, "medium reply"},
      {kLongReqIndex, (gex_AM_Fn_t)LongReq,
       GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQUEST, 3, NULL, "long request"},
      {kLongRepIndex, (gex_AM_Fn_t)LongRep,
       GEX_FLAG_AM_LONG | GEX_FLAG_AM_REPLY, 3, NULL, "long reply"}};

  int rc =
      gex_Client_Init(&client, &ep, &g_tm, "ofi_par_client", &argc, &argv, 0);
  CHECK(rc == GASNET_OK, "gex_Client_Init returned %d", rc);
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  g_rank_for_messages = (int)g_me;
  const unsigned threads = Arg(argc, argv, 1, 4, 0, kMaxThreads);
  g_iters = Arg(argc, argv, 2, 20, 1, 100000);
  g_workers = threads + 1;
  CHECK(g_n >= 2, "needs at least 2 ranks, has %u", (unsigned)g_n);
  CHECK(gex_System_QueryMaxThreads() >= g_workers,
        "gex_System_QueryMaxThreads() = %" PRIu64 ", need %u",
        gex_System_QueryMaxThreads(), g_workers);

  rc = gex_EP_RegisterHandlers(ep, entries, sizeof entries / sizeof *entries);
  CHECK(rc == GASNET_OK, "gex_EP_RegisterHandlers returned %d", rc);
  rc = gex_Segment_Attach(&segment, g_tm, (uintptr_t)g_n * g_workers * kArea);
  CHECK(rc == GASNET_OK, "gex_Segment_Attach returned %d", rc);
  g_base = (unsigned char *)gex_Segment_QueryAddr(segment);
  g_owner = calloc(g_n, sizeof *g_owner);
  CHECK(g_owner != NULL, "out of memory");
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    void *owner = NULL;
    uintptr_t size = 0;
    gex_Event_Wait(gex_EP_QueryBoundSegmentNB(g_tm, r, &owner, NULL, &size, 0));
    CHECK(owner != NULL && size >= (uintptr_t)g_n * g_workers * kArea,
          "rank %u's segment: %p, %" PRIuPTR " bytes", (unsigned)r, owner,
          size);
    g_owner[r] = (unsigned char *)owner;
  }
  const size_t counters = (size_t)g_n * g_workers * kKinds;
  g_handled = malloc(counters * sizeof *g_handled);
  g_answered = malloc(counters * sizeof *g_answered);
  CHECK(g_handled != NULL && g_answered != NULL, "out of memory");
  for (size_t i = 0; i < counters; ++i) {
    atomic_init(&g_handled[i], 0);
    atomic_init(&g_answered[i], 0);
  }
  Worker *workers = calloc(g_workers, sizeof *workers);
  CHECK(workers != NULL, "out of memory");
  for (unsigned i = 0; i < g_workers; ++i) {
    workers[i].id = i;
    for (int k = 0; k < 3; ++k) {
      workers[i].out[k] = malloc(kRmaSlot);
      workers[i].back[k] = malloc(kRmaSlot);
      CHECK(workers[i].out[k] != NULL && workers[i].back[k] != NULL,
            "out of memory");
    }
    workers[i].am = malloc(2 * kLongSlot);
    CHECK(workers[i].am != NULL, "out of memory");
  }
  gex_Coll_BarrierBlocking(g_tm, 0);

  for (unsigned i = 1; i < g_workers; ++i) {
    rc = pthread_create(&workers[i].thread, NULL, Work, &workers[i]);
    CHECK(rc == 0, "pthread_create: %d", rc);
  }
  Work(&workers[0]);
  uint64_t puts = workers[0].puts, gets = workers[0].gets;
  for (unsigned i = 1; i < g_workers; ++i) {
    rc = pthread_join(workers[i].thread, NULL);
    CHECK(rc == 0, "pthread_join: %d", rc);
    puts += workers[i].puts;
    gets += workers[i].gets;
  }

  /* Every worker of every rank has all its replies once everyone is here:
   * every request to this rank has been handled. */
  gex_Coll_BarrierBlocking(g_tm, 0);
  uint64_t handled = 0, replies = 0;
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    const uint32_t want = r == g_me ? 0 : g_iters;
    for (unsigned w = 0; w < g_workers; ++w) {
      for (int k = 0; k < kKinds; ++k) {
        const uint32_t h = atomic_load(&g_handled[Index3(r, w, k)]);
        const uint32_t a = atomic_load(&g_answered[Index3(r, w, k)]);
        CHECK(h == want,
              "handled %" PRIu32
              " %s Requests from rank %u worker %u, "
              "expected %" PRIu32,
              h, kKindName[k], (unsigned)r, w, want);
        CHECK(a == want,
              "received %" PRIu32
              " %s Replies from rank %u to worker %u, "
              "expected %" PRIu32,
              a, kKindName[k], (unsigned)r, w, want);
        handled += h;
        replies += a;
      }
    }
  }
  const uint64_t expect = (uint64_t)kKinds * g_workers * g_iters * (g_n - 1);
  CHECK(handled == expect && replies == expect && puts == expect &&
            gets == expect,
        "totals: handled %" PRIu64 " replies %" PRIu64 " puts %" PRIu64
        " gets %" PRIu64 ", expected %" PRIu64 " each",
        handled, replies, puts, gets, expect);
  /* The sizes swept reach the limits (given enough iterations). */
  if (g_iters >= 15) {
    size_t max_medium = 0;
    for (gex_Rank_t r = 0; r < g_n; ++r) {
      const size_t m = gex_AM_MaxRequestMedium(g_tm, r, GEX_EVENT_NOW, 0, 3);
      if (r != g_me && m > max_medium) max_medium = m;
    }
    CHECK(atomic_load(&g_largest_medium) == max_medium,
          "largest Medium Request sent: %" PRIu64 " bytes, the limit %zu",
          atomic_load(&g_largest_medium), max_medium);
    CHECK(atomic_load(&g_long_by_rma) == 1,
          "no Long Request above the Medium limit was sent");
  }
  printf(
      "ofi_par_client: rank %u ok workers=%u iters=%u peers=%u "
      "handled=%" PRIu64 " replies=%" PRIu64 " puts=%" PRIu64 " gets=%" PRIu64
      "\n",
      (unsigned)g_me, g_workers, g_iters, (unsigned)(g_n - 1), handled, replies,
      puts, gets);
  fflush(stdout);
  gex_Coll_BarrierBlocking(g_tm, 0);
  gasnet_exit(0);
  return 0;
}
