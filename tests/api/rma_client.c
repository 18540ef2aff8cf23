/* rma_client: one rank of an RMA job over the GASNet-EX C API on any
 * conduit (SEQ mode), started by its launcher from rma_job_test. Written in
 * C11 against <gasnetex.h> only. Every check is a CHECK (a failure prints
 * "rank R: CHECK FAILED ..." and ends the job with exit code 1); a rank that
 * passes every check of its mode prints "rank R: <mode> ok ..." before the
 * closing barrier and gasnet_exit(0).
 *
 * A peer's segment is mapped here when the peer is in this rank's supernode
 * (gex_EP_QueryBoundSegmentNB gives its local address; NULL for the others,
 * which a network conduit reaches). An operation on a mapped peer is a
 * direct copy: its NB call returns GEX_EVENT_INVALID, the copy done on
 * return. Run with GEX_RMA_FORCE_AM=1 every operation goes over Active
 * Messages; the client reads the variable too. With it, or to a peer not
 * mapped here (the conduit's RDMA or Active Messages), every NB call of
 * nbytes > 0 returns a real event; the client checks each call for the
 * event its peer and path imply.
 *
 * Each rank's segment has three areas of 4 MiB + 4 pages: IN (written only
 * by the previous rank's Puts), SRC (filled with a pattern of its owner's
 * before the first barrier, read by Gets) and LOCAL (this rank's in-segment
 * local buffers); a heap buffer of the same size is the out-of-segment local
 * buffer. Puts go to the next rank, Gets come from the previous one (rank 0
 * alone: itself). A Put's destination is set to 0xEE between two guard
 * bytes before the Put and checked after it is synced, guards included:
 * through the peer's segment as mapped here when it is, else through the
 * API (a blocking Put of the guards and fill before, a blocking Get of the
 * range and its guards after; Gets are checked on their own against SRC's
 * known pattern).
 *
 *   forms    Every Put form (Blocking; NB with lc_opt NOW, DEFER, an event
 *            pointer; NBI with NOW, DEFER, GROUP) and Get form (Blocking, NB,
 *            NBI) x in-segment and heap local buffer x sizes 0, 1, 8, 13,
 *            255, 4095, 8195 (crosses pages), 65535, 65536, 65537 (AM chunk
 *            boundaries), 200003 and 4 MiB, at odd offsets. Where local
 *            completion is promised (NOW on return; the leaf event; GEX_EC_LC
 *            for GROUP) the source is overwritten before the operation is
 *            synced, and the destination must still hold the original bytes.
 *            Also IMMEDIATE forms (never refused on the direct path; may be
 *            refused otherwise, then retried without).
 *            Prints "rank R: forms ok puts=P gets=G".
 *   events   Rounds of 12 NB operations (Puts and Gets, both buffer kinds)
 *            synced in different orders: WaitAll, WaitSome until done,
 *            TestAll and TestSome polling loops, Wait in reverse, Test in a
 *            stride order, and local-completion leaves (via the lc_opt
 *            pointer and gex_Event_QueryLeaf) waited first in reverse, the
 *            sources overwritten, then the roots. Prints
 *            "rank R: events ok ops=K real=E" (E: events that were objects:
 *            every operation's on the AM path, else those to peers not
 *            mapped here).
 *   leaf-array  Rounds of 12 NB Puts (and some Gets) whose lc_opt points
 *            into the same array as the roots (roots then leaves, leaves
 *            then roots, interleaved, with GEX_EVENT_INVALID gaps), synced
 *            by one WaitAll, a WaitSome loop, a TestAll or a TestSome loop
 *            over the whole array; every entry must end GEX_EVENT_INVALID
 *            and every byte arrive. Prints "rank R: leaf-array ok ops=K".
 *   nbi      NBI Puts and Gets outside regions synced with
 *            gex_NBI_Wait(GEX_EC_PUT) then (GEX_EC_GET), (GEX_EC_ALL), a
 *            gex_NBI_Test loop, and GEX_EC_LC before overwriting GROUP
 *            sources; access regions mixing Puts and Gets whose End event
 *            (and its GEX_EC_LC leaf) covers them, which gex_NBI_Test does
 *            not see; two regions waited in reverse; an empty region; a
 *            region around operations while NBI operations outside it are
 *            pending. Prints "rank R: nbi ok ops=K".
 *   values   gex_RMA_PutBlockingVal, PutNBVal and PutNBIVal and
 *            GetBlockingVal for nbytes 1..8. Prints "rank R: values ok".
 *
 * Misuse modes (2 ranks; rank 0 errs unless noted; the job must die with a
 * fatal error naming the call, and a rank that gets past the mistake prints
 * "rank R: survived <mode>"):
 *   put-outside      gex_RMA_PutBlocking to the first byte past the peer's
 *                    segment
 *   put-straddle     gex_RMA_PutNB of 64 bytes, the last 32 past the end
 *   get-outside      gex_RMA_GetBlocking from before the peer's segment
 *   getnbi-outside   gex_RMA_GetNBI from past the end
 *   put-overflow     gex_RMA_PutBlocking whose remote range wraps
 *   get-overflow     gex_RMA_GetNB whose local range wraps
 *   bad-rank         gex_RMA_PutNBI to rank n
 *   nb-group         gex_RMA_PutNB with GEX_EVENT_GROUP
 *   nbi-pointer      gex_RMA_PutNBI with an event pointer
 *   val-size         gex_RMA_PutBlockingVal of 9 bytes
 *   wait-non-event   gex_Event_Wait on a pointer to zeroed memory
 *   testall-non-event gex_Event_TestAll over an array holding one
 *   wait-twice       gex_Event_Wait on an NB Get's event already waited
 *                    (run with GEX_RMA_FORCE_AM=1: a real event)
 *   leaf-category    gex_Event_QueryLeaf(root, GEX_EC_PUT) (FORCE_AM)
 *   end-no-begin     gex_NBI_EndAccessRegion without Begin
 *   nested-begin     gex_NBI_BeginAccessRegion twice
 *   rma-in-handler   an AM Request handler calls gex_RMA_GetBlocking (rank 1)
 */
#include <gasnetex.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api/client_check.h"

enum { kPage = 4096 };
#define kMaxSize ((size_t)4 << 20)
#define kArea (kMaxSize + 4 * kPage)
#define kInOff ((size_t)0)
#define kSrcOff (kArea)
#define kLocalOff (2 * kArea)
#define kSegSize (3 * kArea)

static gex_Client_t g_client;
static gex_EP_t g_ep;
static gex_TM_t g_tm;
static gex_Segment_t g_seg;
static gex_Rank_t g_me;
static gex_Rank_t g_n;
static gex_Rank_t g_next; /* Puts go here */
static gex_Rank_t g_prev; /* Gets come from here */
static int g_forced;      /* GEX_RMA_FORCE_AM=1 */
static unsigned char *g_base;
static unsigned char **g_owner;  /* each rank's segment, as it sees it */
static unsigned char **g_local;  /* each rank's segment, mapped here, or
                                    NULL (not in this rank's supernode) */
static unsigned char *g_heap;    /* out-of-segment local buffer, kArea */
static unsigned char *g_scratch; /* kArea + 2: a peer's bytes, staged */

static unsigned char Pattern(uint32_t seed, size_t i) {
  return (unsigned char)(seed * 151u + i * 7u + (i >> 9) * 13u + 1u);
}

static void Fill(unsigned char *p, size_t n, uint32_t seed, size_t start) {
  for (size_t i = 0; i < n; ++i) p[i] = Pattern(seed, start + i);
}

static void Verify(const unsigned char *p, size_t n, uint32_t seed,
                   size_t start, const char *what) {
  for (size_t i = 0; i < n; ++i) {
    CHECK(p[i] == Pattern(seed, start + i),
          "%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n, p[i],
          Pattern(seed, start + i));
  }
}

/* Guard bytes on both sides of [p, +n) (n + 1 bytes must be writable). */
static void SetGuards(unsigned char *p, size_t n) {
  p[-1] = 0xA5;
  p[n] = 0x5A;
}
static void CheckGuards(const unsigned char *p, size_t n, const char *what) {
  CHECK(p[-1] == 0xA5 && p[n] == 0x5A,
        "%s: a guard byte changed (before 0x%02x, after 0x%02x, n=%zu)", what,
        p[-1], p[n], n);
}

static void Barrier(void) { gex_Coll_BarrierBlocking(g_tm, 0); }

/* Whether rank r's segment is mapped here. */
static int Mapped(gex_Rank_t r) { return g_local[r] != NULL; }

/* Whether operations on rank r are direct copies (done on return). */
static int DirectTo(gex_Rank_t r) { return !g_forced && Mapped(r); }

/* Sets [roff, +n) of the next rank's IN area to 0xEE between guard bytes
 * (SetGuards): through its mapping here, or with a blocking Put of the
 * n + 2 bytes. */
static void PrepareIn(size_t roff, size_t n) {
  if (Mapped(g_next)) {
    unsigned char *view = g_local[g_next] + kInOff + roff;
    SetGuards(view, n);
    memset(view, 0xEE, n);
    return;
  }
  g_scratch[0] = 0xA5;
  memset(g_scratch + 1, 0xEE, n);
  g_scratch[n + 1] = 0x5A;
  CHECK(gex_RMA_PutBlocking(g_tm, g_next, g_owner[g_next] + kInOff + roff - 1,
                            g_scratch, n + 2, 0) == 0,
        "preparing rank %u's [%zu, +%zu)", g_next, roff, n);
}

/* [roff, +n) of the next rank's IN area as it is now, with a guard byte on
 * each side (CheckGuards): its mapping here, or a copy fetched with a
 * blocking Get (valid until the next PrepareIn or ReadIn). */
static const unsigned char *ReadIn(size_t roff, size_t n) {
  if (Mapped(g_next)) return g_local[g_next] + kInOff + roff;
  memset(g_scratch, 0xCC, n + 2);
  CHECK(gex_RMA_GetBlocking(g_tm, g_scratch, g_next,
                            g_owner[g_next] + kInOff + roff - 1, n + 2, 0) == 0,
        "reading back rank %u's [%zu, +%zu)", g_next, roff, n);
  return g_scratch + 1;
}

/* An NB call's event for `n` bytes with `peer`: INVALID for a direct copy
 * or 0 bytes, else (the AM path, or the conduit for a peer not mapped
 * here) a real event. */
static void CheckNbEvent(gex_Event_t ev, size_t n, gex_Rank_t peer,
                         const char *what) {
  CHECK(ev != GEX_EVENT_NO_OP, "%s: GEX_EVENT_NO_OP without IMMEDIATE", what);
  if (DirectTo(peer) || n == 0) {
    CHECK(ev == GEX_EVENT_INVALID, "%s: a direct copy returned an event", what);
  } else {
    CHECK(ev != GEX_EVENT_INVALID,
          "%s: an operation that was not a direct copy (%s) returned "
          "GEX_EVENT_INVALID",
          what, g_forced ? "GEX_RMA_FORCE_AM=1" : "peer not mapped here");
  }
}

/* Syncs one event, by Wait or by a Test loop. */
static void Sync(gex_Event_t ev, unsigned how) {
  if (how % 2 == 0) {
    gex_Event_Wait(ev);
  } else {
    while (gex_Event_Test(ev) != GASNET_OK) sched_yield();
  }
}

static void Start(int *argc, char ***argv) {
  CHECK(gex_Client_Init(&g_client, &g_ep, &g_tm, "RMA_TEST", argc, argv, 0) ==
            GASNET_OK,
        "gex_Client_Init failed");
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = (int)g_me;
  g_next = (g_me + 1) % g_n;
  g_prev = (g_me + g_n - 1) % g_n;
  const char *forced = getenv("GEX_RMA_FORCE_AM");
  g_forced = forced != NULL && strcmp(forced, "1") == 0;
  CHECK(gex_Segment_Attach(&g_seg, g_tm, kSegSize) == GASNET_OK,
        "gex_Segment_Attach failed");
  g_base = (unsigned char *)gex_Segment_QueryAddr(g_seg);
  g_owner = (unsigned char **)calloc(g_n, sizeof *g_owner);
  g_local = (unsigned char **)calloc(g_n, sizeof *g_local);
  CHECK(g_owner != NULL && g_local != NULL, "calloc");
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    void *owner;
    void *local;
    uintptr_t size;
    gex_Event_t ev =
        gex_EP_QueryBoundSegmentNB(g_tm, r, &owner, &local, &size, 0);
    gex_Event_Wait(ev);
    CHECK(owner != NULL && size >= kSegSize,
          "rank %u's segment: owner=%p size=%zu", r, owner, (size_t)size);
    CHECK(r != g_me || (owner == g_base && local == g_base),
          "my own segment: owner=%p local=%p, attached at %p", owner, local,
          (void *)g_base);
    g_owner[r] = (unsigned char *)owner;
    g_local[r] = (unsigned char *)local;
  }
  g_heap = (unsigned char *)malloc(kArea);
  g_scratch = (unsigned char *)malloc(kArea + 2);
  CHECK(g_heap != NULL && g_scratch != NULL, "malloc");
  Fill(g_base + kSrcOff, kArea, 1000 + g_me, 0);
  Barrier();
}

static void Finish(const char *line) {
  Barrier();
  Say("%s", line);
  Barrier();
  gasnet_exit(0);
}

/* ------------------------------------------------------------------------ */
/* forms */

static const size_t kSizes[] = {0,    1,     8,     13,    255,    4095,
                                8195, 65535, 65536, 65537, 200003, kMaxSize};
enum { kNumSizes = sizeof kSizes / sizeof kSizes[0] };

enum PutForm {
  kPutBlocking,
  kPutNbNow,
  kPutNbDefer,
  kPutNbLeaf,
  kPutNbiNow,
  kPutNbiDefer,
  kPutNbiGroup,
  kPutImmediate,
  kPutForms
};
static const char *const kPutFormName[kPutForms] = {
    "PutBlocking", "PutNB/NOW",    "PutNB/DEFER",  "PutNB/leaf",
    "PutNBI/NOW",  "PutNBI/DEFER", "PutNBI/GROUP", "PutNB/IMMEDIATE"};

/* Offsets that are odd and put most ranges across page boundaries. */
static size_t RemoteOffset(unsigned seq) {
  return 1 + (seq * 1031u) % (3 * kPage);
}
static size_t LocalOffset(unsigned seq) {
  return 3 + (seq * 733u) % (3 * kPage);
}

static void PutCase(int form, int in_segment, size_t n, unsigned seq) {
  char what[128];
  snprintf(what, sizeof what, "%s %s n=%zu to rank %u", kPutFormName[form],
           in_segment ? "segment" : "heap", n, g_next);
  const size_t roff = RemoteOffset(seq);
  unsigned char *src =
      (in_segment ? g_base + kLocalOff : g_heap) + LocalOffset(seq);
  const uint32_t seed = seq * 31u + (uint32_t)form;
  Fill(src, n, seed, 0);
  void *dest = g_owner[g_next] + kInOff + roff;
  PrepareIn(roff, n);
  gex_Event_t ev = GEX_EVENT_INVALID;
  gex_Event_t lc = GEX_EVENT_NO_OP;
  switch (form) {
    case kPutBlocking:
      CHECK(gex_RMA_PutBlocking(g_tm, g_next, dest, src, n, 0) == 0, "%s",
            what);
      break;
    case kPutNbNow:
      ev = gex_RMA_PutNB(g_tm, g_next, dest, src, n, GEX_EVENT_NOW, 0);
      CheckNbEvent(ev, n, g_next, what);
      memset(src, 0x11, n); /* locally complete on return */
      Sync(ev, seq);
      break;
    case kPutNbDefer:
      ev = gex_RMA_PutNB(g_tm, g_next, dest, src, n, GEX_EVENT_DEFER, 0);
      CheckNbEvent(ev, n, g_next, what);
      Sync(ev, seq);
      break;
    case kPutNbLeaf:
      ev = gex_RMA_PutNB(g_tm, g_next, dest, src, n, &lc, 0);
      CheckNbEvent(ev, n, g_next, what);
      CHECK(lc != GEX_EVENT_NO_OP, "%s: lc_opt not written", what);
      if (ev == GEX_EVENT_INVALID) {
        CHECK(lc == GEX_EVENT_INVALID, "%s: a leaf of a completed put", what);
        CHECK(gex_Event_QueryLeaf(ev, GEX_EC_LC) == GEX_EVENT_INVALID, "%s",
              what);
      } else {
        CHECK(lc != GEX_EVENT_INVALID, "%s: no leaf event", what);
        CHECK(gex_Event_QueryLeaf(ev, GEX_EC_LC) == lc,
              "%s: QueryLeaf gave another event", what);
        gex_Event_Wait(lc);
        CHECK(gex_Event_Test(lc) == GASNET_OK, "%s: leaf tested again", what);
      }
      memset(src, 0x22, n); /* locally complete */
      Sync(ev, seq);
      break;
    case kPutNbiNow:
      CHECK(gex_RMA_PutNBI(g_tm, g_next, dest, src, n, GEX_EVENT_NOW, 0) == 0,
            "%s", what);
      memset(src, 0x33, n);
      gex_NBI_Wait(GEX_EC_PUT, 0);
      break;
    case kPutNbiDefer:
      CHECK(gex_RMA_PutNBI(g_tm, g_next, dest, src, n, GEX_EVENT_DEFER, 0) == 0,
            "%s", what);
      gex_NBI_Wait(GEX_EC_PUT, 0);
      break;
    case kPutNbiGroup:
      CHECK(gex_RMA_PutNBI(g_tm, g_next, dest, src, n, GEX_EVENT_GROUP, 0) == 0,
            "%s", what);
      gex_NBI_Wait(GEX_EC_LC, 0);
      memset(src, 0x44, n);
      gex_NBI_Wait(GEX_EC_PUT, 0);
      break;
    case kPutImmediate:
      ev = gex_RMA_PutNB(g_tm, g_next, dest, src, n, GEX_EVENT_DEFER,
                         GEX_FLAG_IMMEDIATE);
      if (ev == GEX_EVENT_NO_OP) {
        CHECK(!DirectTo(g_next), "%s: the direct path refused IMMEDIATE", what);
        ev = gex_RMA_PutNB(g_tm, g_next, dest, src, n, GEX_EVENT_DEFER, 0);
      }
      CheckNbEvent(ev, n, g_next, what);
      Sync(ev, seq);
      break;
  }
  const unsigned char *got = ReadIn(roff, n);
  Verify(got, n, seed, 0, what);
  CheckGuards(got, n, what);
}

enum GetForm { kGetBlocking, kGetNb, kGetNbi, kGetImmediate, kGetForms };
static const char *const kGetFormName[kGetForms] = {
    "GetBlocking", "GetNB", "GetNBI", "GetBlocking/IMMEDIATE"};

static void GetCase(int form, int in_segment, size_t n, unsigned seq) {
  char what[128];
  snprintf(what, sizeof what, "%s %s n=%zu from rank %u", kGetFormName[form],
           in_segment ? "segment" : "heap", n, g_prev);
  const size_t roff = RemoteOffset(seq);
  unsigned char *dst =
      (in_segment ? g_base + kLocalOff : g_heap) + LocalOffset(seq);
  void *src = g_owner[g_prev] + kSrcOff + roff;
  SetGuards(dst, n);
  memset(dst, 0xCC, n);
  gex_Event_t ev;
  switch (form) {
    case kGetBlocking:
      CHECK(gex_RMA_GetBlocking(g_tm, dst, g_prev, src, n, 0) == 0, "%s", what);
      break;
    case kGetNb:
      ev = gex_RMA_GetNB(g_tm, dst, g_prev, src, n, 0);
      CheckNbEvent(ev, n, g_prev, what);
      Sync(ev, seq);
      break;
    case kGetNbi:
      CHECK(gex_RMA_GetNBI(g_tm, dst, g_prev, src, n, 0) == 0, "%s", what);
      if (seq % 2 == 0) {
        gex_NBI_Wait(GEX_EC_GET, 0);
      } else {
        while (gex_NBI_Test(GEX_EC_GET, 0) != GASNET_OK) sched_yield();
      }
      break;
    case kGetImmediate:
      if (gex_RMA_GetBlocking(g_tm, dst, g_prev, src, n, GEX_FLAG_IMMEDIATE) !=
          0) {
        CHECK(!DirectTo(g_prev), "%s: the direct path refused IMMEDIATE", what);
        CHECK(gex_RMA_GetBlocking(g_tm, dst, g_prev, src, n, 0) == 0, "%s",
              what);
      }
      break;
  }
  Verify(dst, n, 1000 + g_prev, roff, what);
  CheckGuards(dst, n, what);
}

static void Forms(void) {
  unsigned seq = 0;
  int puts = 0;
  int gets = 0;
  for (int s = 0; s < kNumSizes; ++s) {
    for (int in_segment = 0; in_segment < 2; ++in_segment) {
      for (int form = 0; form < kPutForms; ++form) {
        PutCase(form, in_segment, kSizes[s], seq++);
        ++puts;
      }
      for (int form = 0; form < kGetForms; ++form) {
        GetCase(form, in_segment, kSizes[s], seq++);
        ++gets;
      }
    }
  }
  /* Nothing left pending in any category. */
  CHECK(gex_NBI_Test(GEX_EC_ALL, 0) == GASNET_OK, "NBI operations pending");
  char line[128];
  snprintf(line, sizeof line, "forms ok puts=%d gets=%d", puts, gets);
  Finish(line);
}

/* ------------------------------------------------------------------------ */
/* events */

enum { kOps = 12, kSlot = 256 * 1024, kOrders = 7 };

typedef struct {
  int is_put;
  size_t n;
  unsigned char *local; /* put source / get destination */
  size_t roff;
  uint32_t seed;
} Op;

static int g_real_events = 0;

static void IssueOps(Op *ops, gex_Event_t *evs, gex_Event_t *leaves,
                     unsigned round) {
  static const size_t kOpSizes[] = {1, 77, 4096, 65536, 65537, 200003};
  for (int i = 0; i < kOps; ++i) {
    Op *op = &ops[i];
    op->is_put = (i + (int)round) % 2 == 0;
    op->n = kOpSizes[(i + round) % 6];
    /* Slot i of the local buffer (segment for even i, heap for odd). */
    op->local =
        (i % 2 == 0 ? g_base + kLocalOff : g_heap) + (size_t)i * kSlot + 5;
    op->roff = (size_t)i * kSlot + 9;
    op->seed = round * 97u + (uint32_t)i;
    leaves[i] = GEX_EVENT_INVALID;
    if (op->is_put) {
      Fill(op->local, op->n, op->seed, 0);
      PrepareIn(op->roff, op->n);
      evs[i] = gex_RMA_PutNB(g_tm, g_next, g_owner[g_next] + kInOff + op->roff,
                             op->local, op->n,
                             i % 3 == 0 ? &leaves[i] : GEX_EVENT_DEFER, 0);
    } else {
      SetGuards(op->local, op->n);
      memset(op->local, 0xCC, op->n);
      evs[i] = gex_RMA_GetNB(g_tm, op->local, g_prev,
                             g_owner[g_prev] + kSrcOff + op->roff, op->n, 0);
    }
    CheckNbEvent(evs[i], op->n, op->is_put ? g_next : g_prev,
                 op->is_put ? "events PutNB" : "events GetNB");
    if (evs[i] != GEX_EVENT_INVALID) ++g_real_events;
  }
}

static void CheckOps(const Op *ops) {
  for (int i = 0; i < kOps; ++i) {
    const Op *op = &ops[i];
    if (op->is_put) {
      const unsigned char *got = ReadIn(op->roff, op->n);
      Verify(got, op->n, op->seed, 0, "events put");
      CheckGuards(got, op->n, "events put");
    } else {
      Verify(op->local, op->n, 1000 + g_prev, op->roff, "events get");
      CheckGuards(op->local, op->n, "events get");
    }
  }
}

static int AllInvalid(const gex_Event_t *evs) {
  for (int i = 0; i < kOps; ++i) {
    if (evs[i] != GEX_EVENT_INVALID) return 0;
  }
  return 1;
}

static void Events(void) {
  Op ops[kOps];
  gex_Event_t evs[kOps];
  gex_Event_t leaves[kOps];
  int total = 0;
  for (unsigned round = 0; round < 3 * kOrders; ++round) {
    IssueOps(ops, evs, leaves, round);
    total += kOps;
    switch (round % kOrders) {
      case 0:
        gex_Event_WaitAll(evs, kOps, 0);
        CHECK(AllInvalid(evs), "WaitAll left events");
        break;
      case 1:
        while (!AllInvalid(evs)) {
          gex_Event_t before[kOps];
          memcpy(before, evs, sizeof evs);
          gex_Event_WaitSome(evs, kOps, 0);
          int changed = 0;
          for (int i = 0; i < kOps; ++i) changed += before[i] != evs[i];
          CHECK(changed > 0, "WaitSome completed nothing");
        }
        /* An array of only GEX_EVENT_INVALID succeeds. */
        CHECK(gex_Event_TestSome(evs, kOps, 0) == GASNET_OK, "TestSome");
        break;
      case 2:
        while (gex_Event_TestAll(evs, kOps, 0) != GASNET_OK) sched_yield();
        CHECK(AllInvalid(evs), "TestAll left events");
        break;
      case 3:
        while (!AllInvalid(evs)) {
          if (gex_Event_TestSome(evs, kOps, 0) != GASNET_OK) sched_yield();
        }
        break;
      case 4:
        for (int i = kOps - 1; i >= 0; --i) gex_Event_Wait(evs[i]);
        break;
      case 5:
        for (int k = 0; k < kOps; ++k) {
          const int i = (k * 5) % kOps; /* 5 is coprime with 12 */
          while (gex_Event_Test(evs[i]) != GASNET_OK) sched_yield();
        }
        break;
      case 6:
        /* Local completion first: every Put's leaf (from lc_opt or
         * QueryLeaf), in reverse; then the sources may change. */
        for (int i = kOps - 1; i >= 0; --i) {
          if (!ops[i].is_put) continue;
          gex_Event_t leaf = gex_Event_QueryLeaf(evs[i], GEX_EC_LC);
          if (leaves[i] != GEX_EVENT_INVALID) {
            CHECK(leaf == leaves[i], "QueryLeaf differs from lc_opt's leaf");
          }
          gex_Event_Wait(leaf);
        }
        for (int i = 0; i < kOps; ++i) {
          if (ops[i].is_put) memset(ops[i].local, 0x5C, ops[i].n);
        }
        gex_Event_WaitAll(evs, kOps, 0);
        break;
    }
    CheckOps(ops);
  }
  char line[128];
  snprintf(line, sizeof line, "events ok ops=%d real=%d", total, g_real_events);
  Finish(line);
}

/* ------------------------------------------------------------------------ */
/* leaf-array: roots and their leaves in one array. GASNet-EX spec, Events:
 * syncing a root recycles its leaves too, leaves may be synced before
 * their root, and gex_Event_{Test,Wait}{All,Some} ignore GEX_EVENT_INVALID
 * entries and set the entries they complete to GEX_EVENT_INVALID; so one
 * array may hold PutNB roots and (through lc_opt pointers into the same
 * array) their GEX_EC_LC leaves, in any order, and one call syncs them all
 * (the idiom `gex_Event_t ev[2*n]; ev[i] = gex_RMA_PutNB(..., &ev[n+i],
 * ...)`). Orders: roots then leaves, leaves then roots, interleaved, each
 * waited with WaitAll, a WaitSome loop, a TestAll loop and a TestSome loop;
 * and Gets (no leaf) and GEX_EVENT_INVALID entries mixed in. */

enum { kLeafOrders = 4, kLeafSyncs = 4 };

static void LeafArray(void) {
  static const size_t kLeafSizes[] = {1, 77, 4096, 65537};
  Op ops[kOps];
  gex_Event_t ev[3 * kOps];
  int total = 0;
  for (unsigned round = 0; round < kLeafOrders * kLeafSyncs; ++round) {
    const unsigned order = round % kLeafOrders;
    const unsigned sync = (round / kLeafOrders) % kLeafSyncs;
    const size_t slots = order == 3 ? 3 * kOps : 2 * kOps;
    for (size_t k = 0; k < slots; ++k) ev[k] = GEX_EVENT_INVALID;
    for (int i = 0; i < kOps; ++i) {
      Op *op = &ops[i];
      /* Where the root and the leaf go. */
      size_t root, leaf;
      switch (order) {
        case 0: /* roots, then their leaves */
          root = (size_t)i;
          leaf = (size_t)(kOps + i);
          break;
        case 1: /* leaves, then their roots */
          root = (size_t)(kOps + i);
          leaf = (size_t)i;
          break;
        case 2: /* each root next to its leaf, leaf first */
          root = 2 * (size_t)i + 1;
          leaf = 2 * (size_t)i;
          break;
        default: /* a third of the slots stay GEX_EVENT_INVALID, Gets */
          root = 3 * (size_t)i + 2;
          leaf = 3 * (size_t)(kOps - 1 - i);
          break;
      }
      op->is_put = order != 3 || i % 4 != 3;
      op->n = kLeafSizes[(i + round) % 4];
      op->local =
          (i % 2 == 0 ? g_base + kLocalOff : g_heap) + (size_t)i * kSlot + 3;
      op->roff = (size_t)i * kSlot + 11;
      op->seed = 5000u + round * 97u + (uint32_t)i;
      if (op->is_put) {
        Fill(op->local, op->n, op->seed, 0);
        PrepareIn(op->roff, op->n);
        ev[root] =
            gex_RMA_PutNB(g_tm, g_next, g_owner[g_next] + kInOff + op->roff,
                          op->local, op->n, &ev[leaf], 0);
      } else {
        SetGuards(op->local, op->n);
        memset(op->local, 0xCC, op->n);
        ev[root] =
            gex_RMA_GetNB(g_tm, op->local, g_prev,
                          g_owner[g_prev] + kSrcOff + op->roff, op->n, 0);
      }
      CheckNbEvent(ev[root], op->n, op->is_put ? g_next : g_prev,
                   "leaf-array NB");
    }
    total += kOps;
    switch (sync) {
      case 0:
        gex_Event_WaitAll(ev, slots, 0);
        break;
      case 1:
        for (;;) {
          int left = 0;
          for (size_t k = 0; k < slots; ++k) left += ev[k] != GEX_EVENT_INVALID;
          if (left == 0) break;
          gex_Event_WaitSome(ev, slots, 0);
          int now = 0;
          for (size_t k = 0; k < slots; ++k) now += ev[k] != GEX_EVENT_INVALID;
          CHECK(now < left, "WaitSome completed nothing (%d left)", left);
        }
        break;
      case 2:
        while (gex_Event_TestAll(ev, slots, 0) != GASNET_OK) sched_yield();
        break;
      default:
        for (;;) {
          int left = 0;
          for (size_t k = 0; k < slots; ++k) left += ev[k] != GEX_EVENT_INVALID;
          if (left == 0) break;
          if (gex_Event_TestSome(ev, slots, 0) != GASNET_OK) sched_yield();
        }
        break;
    }
    for (size_t k = 0; k < slots; ++k) {
      CHECK(ev[k] == GEX_EVENT_INVALID,
            "order %u sync %u: entry %zu not GEX_EVENT_INVALID after the sync",
            order, sync, k);
    }
    CheckOps(ops);
  }
  char line[64];
  snprintf(line, sizeof line, "leaf-array ok ops=%d", total);
  Finish(line);
}

/* ------------------------------------------------------------------------ */
/* nbi */

enum { kNbiSlot = 128 * 1024 };

/* Starts kOps NBI operations like IssueOps (Puts with lc_opt `lc`), with
 * local buffers in set `set` (0 or 1) of the local slots. */
static void IssueNbi(Op *ops, unsigned round, gex_Event_t *lc, int only_gets,
                     int set) {
  static const size_t kOpSizes[] = {3, 4096, 65536, 65537, 100001, 9};
  for (int i = 0; i < kOps; ++i) {
    Op *op = &ops[i];
    op->is_put = !only_gets && (i + (int)round) % 2 == 0;
    op->n = kOpSizes[(i + round) % 6];
    op->local = (i % 2 == 0 ? g_base + kLocalOff : g_heap) +
                (size_t)(set * kOps + i) * kNbiSlot + 7;
    op->roff = (size_t)i * kNbiSlot + 11;
    op->seed = round * 89u + (uint32_t)i + 5000;
    if (op->is_put) {
      Fill(op->local, op->n, op->seed, 0);
      PrepareIn(op->roff, op->n);
      CHECK(gex_RMA_PutNBI(g_tm, g_next, g_owner[g_next] + kInOff + op->roff,
                           op->local, op->n, lc, 0) == 0,
            "PutNBI");
    } else {
      SetGuards(op->local, op->n);
      memset(op->local, 0xCC, op->n);
      CHECK(gex_RMA_GetNBI(g_tm, op->local, g_prev,
                           g_owner[g_prev] + kSrcOff + op->roff, op->n, 0) == 0,
            "GetNBI");
    }
  }
}

static void ClobberPutSources(const Op *ops) {
  for (int i = 0; i < kOps; ++i) {
    if (ops[i].is_put) memset(ops[i].local, 0x77, ops[i].n);
  }
}

/* A region's event: INVALID when every operation in it was a direct copy;
 * a real event when they went over Active Messages to peers mapped here
 * (whose replies wait for this rank to poll, which nothing in the region
 * does); either for operations the conduit carries to peers not mapped
 * here, which may all have completed by the time the region ends. */
static void CheckRegionEvent(gex_Event_t ev, int puts) {
  const int mapped = Mapped(g_prev) && (!puts || Mapped(g_next));
  CHECK(ev != GEX_EVENT_NO_OP, "a region gave GEX_EVENT_NO_OP");
  if (!g_forced && mapped) {
    CHECK(ev == GEX_EVENT_INVALID, "a region of direct copies gave an event");
  } else if (mapped) {
    CHECK(ev != GEX_EVENT_INVALID, "an AM-path region gave no event");
  }
}

static void Nbi(void) {
  Op ops[kOps];
  Op more[kOps];
  int total = 0;
  for (unsigned round = 0; round < 6; ++round) {
    /* Outside regions. */
    switch (round % 4) {
      case 0:
        IssueNbi(ops, round, GEX_EVENT_DEFER, 0, 0);
        gex_NBI_Wait(GEX_EC_PUT, 0);
        for (int i = 0; i < kOps; ++i) {
          if (ops[i].is_put) {
            Verify(ReadIn(ops[i].roff, ops[i].n), ops[i].n, ops[i].seed, 0,
                   "nbi put");
          }
        }
        gex_NBI_Wait(GEX_EC_GET, 0);
        break;
      case 1:
        IssueNbi(ops, round, GEX_EVENT_NOW, 0, 0);
        ClobberPutSources(ops);
        gex_NBI_Wait(GEX_EC_ALL, 0);
        break;
      case 2:
        IssueNbi(ops, round, GEX_EVENT_DEFER, 0, 0);
        while (gex_NBI_Test(GEX_EC_GET | GEX_EC_PUT, 0) != GASNET_OK) {
          sched_yield();
        }
        break;
      case 3:
        IssueNbi(ops, round, GEX_EVENT_GROUP, 0, 0);
        gex_NBI_Wait(GEX_EC_LC, 0);
        ClobberPutSources(ops);
        gex_NBI_Wait(GEX_EC_PUT | GEX_EC_GET, 0);
        break;
    }
    CHECK(gex_NBI_Test(GEX_EC_ALL, 0) == GASNET_OK, "NBI left pending");
    CheckOps(ops);
    total += kOps;

    /* A region mixing Puts (GROUP) and Gets; its leaf covers the Puts'
     * local completion; gex_NBI_Test does not see its operations. */
    gex_NBI_BeginAccessRegion(0);
    IssueNbi(ops, round + 100, GEX_EVENT_GROUP, 0, 0);
    CHECK(gex_NBI_Test(GEX_EC_ALL, 0) == GASNET_OK,
          "gex_NBI_Test saw operations of an access region");
    gex_Event_t ev = gex_NBI_EndAccessRegion(0);
    CheckRegionEvent(ev, 1);
    gex_Event_t leaf = gex_Event_QueryLeaf(ev, GEX_EC_LC);
    CHECK(leaf == gex_Event_QueryLeaf(ev, GEX_EC_LC), "QueryLeaf differs");
    gex_Event_Wait(leaf);
    ClobberPutSources(ops);
    if (round % 2 == 0) {
      gex_Event_Wait(ev);
    } else {
      while (gex_Event_Test(ev) != GASNET_OK) sched_yield();
    }
    CheckOps(ops);
    total += kOps;

    /* Two regions (the second Gets only, to other buffers), waited in
     * reverse; NBI Puts outside them pending meanwhile. */
    IssueNbi(more, round + 200, GEX_EVENT_DEFER, 1, 1);
    gex_NBI_BeginAccessRegion(0);
    IssueNbi(ops, round + 300, GEX_EVENT_DEFER, 0, 0);
    gex_Event_t first = gex_NBI_EndAccessRegion(0);
    CheckRegionEvent(first, 1);
    /* The second region's buffers: past both sets of slots. */
    Op later[kOps];
    gex_NBI_BeginAccessRegion(0);
    for (int i = 0; i < kOps; ++i) {
      later[i].is_put = 0;
      later[i].n = 1000 + (size_t)i * 3;
      later[i].local = g_base + kLocalOff + (size_t)2 * kOps * kNbiSlot +
                       (size_t)i * 4096 + 1;
      later[i].roff = (size_t)i * 5000 + 3;
      SetGuards(later[i].local, later[i].n);
      CHECK(gex_RMA_GetNBI(g_tm, later[i].local, g_prev,
                           g_owner[g_prev] + kSrcOff + later[i].roff,
                           later[i].n, 0) == 0,
            "GetNBI");
    }
    gex_Event_t second = gex_NBI_EndAccessRegion(0);
    CheckRegionEvent(second, 0);
    gex_Event_Wait(second);
    gex_Event_t both[2] = {first, GEX_EVENT_INVALID};
    gex_Event_WaitAll(both, 2, 0);
    for (int i = 0; i < kOps; ++i) {
      Verify(later[i].local, later[i].n, 1000 + g_prev, later[i].roff,
             "region get");
      CheckGuards(later[i].local, later[i].n, "region get");
    }
    CheckOps(ops);
    gex_NBI_Wait(GEX_EC_ALL, 0);
    CheckOps(more);
    total += 3 * kOps;

    /* An empty region. */
    gex_NBI_BeginAccessRegion(0);
    CHECK(gex_NBI_EndAccessRegion(0) == GEX_EVENT_INVALID,
          "an empty region gave an event");
  }
  char line[128];
  snprintf(line, sizeof line, "nbi ok ops=%d", total);
  Finish(line);
}

/* ------------------------------------------------------------------------ */
/* values */

static void Values(void) {
  for (size_t n = 1; n <= sizeof(gex_RMA_Value_t); ++n) {
    for (int form = 0; form < 3; ++form) {
      const gex_RMA_Value_t value = (gex_RMA_Value_t)0x8877665544332211ull ^
                                    (gex_RMA_Value_t)(n * 0x0101 + form);
      const size_t roff =
          1 + n * 16 + (size_t)form * 200 + (n % 2) * (kPage - 24);
      void *dest = g_owner[g_next] + kInOff + roff;
      PrepareIn(roff, n);
      if (form == 0) {
        CHECK(gex_RMA_PutBlockingVal(g_tm, g_next, dest, value, n, 0) == 0,
              "PutBlockingVal");
      } else if (form == 1) {
        gex_Event_t ev = gex_RMA_PutNBVal(g_tm, g_next, dest, value, n, 0);
        CheckNbEvent(ev, n, g_next, "PutNBVal");
        gex_Event_Wait(ev);
      } else {
        CHECK(gex_RMA_PutNBIVal(g_tm, g_next, dest, value, n, 0) == 0,
              "PutNBIVal");
        gex_NBI_Wait(GEX_EC_PUT, 0);
      }
      /* An n-byte unsigned integer in memory, little-endian here. */
      const unsigned char *view = ReadIn(roff, n);
      for (size_t i = 0; i < n; ++i) {
        CHECK(view[i] == (unsigned char)(value >> (8 * i)),
              "Val form %d n=%zu byte %zu is 0x%02x", form, n, i, view[i]);
      }
      CheckGuards(view, n, "PutVal");
    }
    const size_t soff = 17 + n * 4099;
    gex_RMA_Value_t expected = 0;
    for (size_t i = 0; i < n; ++i) {
      expected |= (gex_RMA_Value_t)Pattern(1000 + g_prev, soff + i) << (8 * i);
    }
    const gex_RMA_Value_t got = gex_RMA_GetBlockingVal(
        g_tm, g_prev, g_owner[g_prev] + kSrcOff + soff, n, 0);
    CHECK(got == expected, "GetBlockingVal n=%zu: 0x%llx, expected 0x%llx", n,
          (unsigned long long)got, (unsigned long long)expected);
  }
  Finish("values ok");
}

/* ------------------------------------------------------------------------ */
/* Misuse. */

static uint64_t g_not_an_event[8]; /* zeroed: no live event */

static volatile int g_handler_survived;

/* Index 200 (a Request): the mistake; were it survived, it replies to 201. */
static void InHandler(gex_Token_t token) {
  gex_RMA_GetBlocking(g_tm, g_heap, g_me, g_owner[g_me] + kSrcOff, 8, 0);
  gex_AM_ReplyShort0(token, 201, 0);
}
static void SurvivedReply(gex_Token_t token) {
  (void)token;
  g_handler_survived = 1;
}

static void Misuse(const char *mode) {
  gex_AM_Entry_t entries[2] = {
      {200, (gex_AM_Fn_t)InHandler, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0,
       NULL, "rma in handler"},
      {201, (gex_AM_Fn_t)SurvivedReply, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY,
       0, NULL, "rma in handler survived"}};
  CHECK(gex_EP_RegisterHandlers(g_ep, entries, 2) == GASNET_OK, "register");
  Barrier();
  const gex_Rank_t peer = g_n > 1 ? 1 : 0;
  unsigned char *end = g_owner[peer] + gex_Segment_QuerySize(g_seg);
  int erred = 0;
  if (g_me == 0) {
    erred = 1;
    if (strcmp(mode, "put-outside") == 0) {
      gex_RMA_PutBlocking(g_tm, peer, end, g_heap, 1, 0);
    } else if (strcmp(mode, "put-straddle") == 0) {
      gex_Event_Wait(
          gex_RMA_PutNB(g_tm, peer, end - 32, g_heap, 64, GEX_EVENT_DEFER, 0));
    } else if (strcmp(mode, "get-outside") == 0) {
      gex_RMA_GetBlocking(g_tm, g_heap, peer, g_owner[peer] - 8, 8, 0);
    } else if (strcmp(mode, "getnbi-outside") == 0) {
      gex_RMA_GetNBI(g_tm, g_heap, peer, end, 100, 0);
      gex_NBI_Wait(GEX_EC_GET, 0);
    } else if (strcmp(mode, "put-overflow") == 0) {
      gex_RMA_PutBlocking(g_tm, peer, (void *)(UINTPTR_MAX - 10), g_heap, 100,
                          0);
    } else if (strcmp(mode, "get-overflow") == 0) {
      gex_Event_Wait(gex_RMA_GetNB(g_tm, (void *)(UINTPTR_MAX - 10), peer,
                                   g_owner[peer] + kSrcOff, 100, 0));
    } else if (strcmp(mode, "bad-rank") == 0) {
      gex_RMA_PutNBI(g_tm, g_n, g_owner[peer], g_heap, 8, GEX_EVENT_DEFER, 0);
    } else if (strcmp(mode, "nb-group") == 0) {
      gex_Event_Wait(gex_RMA_PutNB(g_tm, peer, g_owner[peer], g_heap, 8,
                                   GEX_EVENT_GROUP, 0));
    } else if (strcmp(mode, "nbi-pointer") == 0) {
      gex_Event_t lc;
      gex_RMA_PutNBI(g_tm, peer, g_owner[peer], g_heap, 8, &lc, 0);
    } else if (strcmp(mode, "val-size") == 0) {
      gex_RMA_PutBlockingVal(g_tm, peer, g_owner[peer], 1, 9, 0);
    } else if (strcmp(mode, "wait-non-event") == 0) {
      gex_Event_Wait((gex_Event_t)(void *)g_not_an_event);
    } else if (strcmp(mode, "testall-non-event") == 0) {
      gex_Event_t evs[3] = {GEX_EVENT_INVALID,
                            (gex_Event_t)(void *)g_not_an_event,
                            GEX_EVENT_INVALID};
      gex_Event_TestAll(evs, 3, 0);
    } else if (strcmp(mode, "wait-twice") == 0) {
      gex_Event_t ev =
          gex_RMA_GetNB(g_tm, g_heap, peer, g_owner[peer] + kSrcOff, 64, 0);
      CHECK(ev != GEX_EVENT_INVALID, "run wait-twice with GEX_RMA_FORCE_AM=1");
      gex_Event_Wait(ev);
      gex_Event_Wait(ev);
    } else if (strcmp(mode, "leaf-category") == 0) {
      gex_Event_t ev = gex_RMA_PutNB(g_tm, peer, g_owner[peer] + kInOff, g_heap,
                                     64, GEX_EVENT_DEFER, 0);
      CHECK(ev != GEX_EVENT_INVALID,
            "run leaf-category with GEX_RMA_FORCE_AM=1");
      gex_Event_QueryLeaf(ev, GEX_EC_PUT);
    } else if (strcmp(mode, "end-no-begin") == 0) {
      gex_Event_Wait(gex_NBI_EndAccessRegion(0));
    } else if (strcmp(mode, "nested-begin") == 0) {
      gex_NBI_BeginAccessRegion(0);
      gex_NBI_BeginAccessRegion(0);
    } else if (strcmp(mode, "rma-in-handler") == 0) {
      /* Rank 1 errs, in the handler; its reply would mean it survived. */
      gex_AM_RequestShort0(g_tm, peer, 200, 0);
      GASNET_BLOCKUNTIL(g_handler_survived);
      Say("survived %s (in rank %u's handler)", mode, peer);
    } else {
      CHECK(0, "unknown mode %s", mode);
    }
  }
  if (erred) Say("survived %s", mode);
  Barrier();
  gasnet_exit(0);
}

int main(int argc, char **argv) {
  Start(&argc, &argv);
  CHECK(argc == 2, "usage: rma_client MODE");
  const char *mode = argv[1];
  if (strcmp(mode, "forms") == 0) Forms();
  if (strcmp(mode, "events") == 0) Events();
  if (strcmp(mode, "leaf-array") == 0) LeafArray();
  if (strcmp(mode, "nbi") == 0) Nbi();
  if (strcmp(mode, "values") == 0) Values();
  Misuse(mode);
  return 0;
}
