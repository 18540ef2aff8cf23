/* vis_client: one rank of a VIS job (gasnet_vis.h) over the GASNet-EX C API
 * on any conduit (SEQ mode), started by its launcher from vis_job_test.
 * Written in C11 against <gasnetex.h> and <gasnet_vis.h> only. Every check
 * is a CHECK (a failure prints "rank R: CHECK FAILED ..." and ends the job
 * with exit code 1); a rank that passes every check of its mode prints
 * "rank R: <mode> ok ..." before the closing barrier and gasnet_exit(0).
 *
 * Segment layout (every rank): an area of kArea bytes per initiating rank
 * (where that rank's Puts land), then a pattern area of kArea bytes the
 * owner fills with Pattern(owner, offset) (what Gets read).
 *
 *   shapes  For each target (this rank, and the next one when n > 1), each
 *           case below, Put and Get, in each form (Blocking; NB +
 *           gex_Event_Wait; NB with GEX_FLAG_ENABLE_LEAF_LC for Puts, its
 *           GEX_EC_LC leaf waited first; NBI + gex_NBI_Wait; NBI inside an
 *           access region): a Put zeroes this rank's area at the target
 *           (gex_RMA_PutBlocking), puts, and reads the area back
 *           (gex_RMA_GetBlocking); a Get fills a local buffer with 0xEE
 *           and gets from the target's pattern area. Either way the result
 *           must equal a reference computed here byte by byte from the
 *           same description (the source bytes, taken in order, written to
 *           the destination bytes in order). Cases: Vector and Indexed with
 *           one piece, with hundreds of small pieces split differently on
 *           the two sides (zero-length pieces among them, overlapping
 *           source pieces for Puts), with pieces larger than one AM, with
 *           zero counts (NULL lists) and with only zero-length pieces;
 *           Strided in 1 to 4 levels: contiguous strides (folded), stride
 *           0 on the source, negative strides (reflection), a transpose,
 *           stridelevels 0, elemsz 0 and a zero count, a shape larger
 *           than one AM, and unaligned elements of whole 64-byte blocks
 *           (copied block by block on the direct path). Prints
 *           "rank R: shapes ok ops=K direct=D" (D: NB calls that moved
 *           data and returned GEX_EVENT_INVALID, which only the direct
 *           path does).
 *   peer    Peer completion: each rank arms a handler (a 0-argument Medium
 *           Reply handler carrying a payload) before each of a series of
 *           Puts (every shape and form) to the next rank, each writing its
 *           own region with one byte value; the handler, run at the
 *           target, checks the token's source, that the region already
 *           holds the value (the data is visible) and counts. Gets with a
 *           handler, and a Put that moves no bytes, notify too. The target
 *           polls until its count is complete; after a barrier the count
 *           must be exactly one per operation. Disarming (handler 0) is
 *           checked to send nothing. Prints "rank R: peer ok notes=K".
 *   immediate  GEX_FLAG_IMMEDIATE: K rounds of a Vector Put (NB, NBI,
 *           Blocking in turn) and an Indexed Get to the next rank with the
 *           flag; a call that reports "no op" (GEX_EVENT_NO_OP, non-zero)
 *           must have started nothing and is retried without the flag;
 *           every round's data is checked. Prints "rank R: immediate ok
 *           noops=K".
 *   subteam VIS over a parity sub-team whose order runs backwards, by team
 *           rank: a Vector Put, a Strided Get and an Indexed Get to every
 *           member, each checked; then what each member put here. Prints
 *           "rank R: subteam ok ops=K size=S".
 *   edge    Strided Puts and Gets (Blocking) whose remote elements end
 *           exactly at the target's segment end or start exactly at its
 *           base, over many shapes (zero and one counts, contiguous
 *           levels, every level order, non-increasing and negative
 *           strides), each checked byte by byte against a reference.
 *           Prints "rank R: edge ok ops=K".
 *
 * Misuse modes (2 ranks, rank 0 errs; the job must die with a fatal error
 * naming the call; a rank that gets past the mistake prints
 * "rank R: survived <mode>"):
 *   null-list        gex_VIS_VectorPutBlocking with dstlist NULL, count 2
 *   outside          gex_VIS_IndexedGetNBI with a piece past the segment
 *   outside-strided  gex_VIS_StridedPutNB whose last element is past it
 *   mismatch         gex_VIS_VectorGetBlocking with totals that differ
 *   immediate-armed  gex_VIS_StridedGetNBI with GEX_FLAG_IMMEDIATE after
 *                    gex_VIS_SetPeerCompletionHandler */
#include <gasnet_vis.h>
#include <gasnetex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api/client_check.h"

enum {
  kArea = 192 * 1024,
  kMaxPieces = 1024,
  kMaxLevels = 4,
  kPcHandler = 200,
};

static gex_Client_t g_client;
static gex_EP_t g_ep;
static gex_TM_t g_tm;
static gex_Segment_t g_seg;
static gex_Rank_t g_me;
static gex_Rank_t g_n;
static unsigned char **g_owner; /* each rank's segment, as it sees it */
static uintptr_t *g_size;       /* and its size */
static unsigned char *g_mine;   /* this rank's segment */
static long g_ops;
static long g_direct;

static void Barrier(void) { gex_Coll_BarrierBlocking(g_tm, 0); }

static size_t SegSize(void) { return (size_t)(g_n + 1) * kArea; }
static unsigned char *Area(gex_Rank_t t, gex_Rank_t initiator) {
  return g_owner[t] + (size_t)initiator * kArea;
}
static unsigned char *PatternArea(gex_Rank_t t) {
  return g_owner[t] + (size_t)g_n * kArea;
}
static unsigned char Pattern(gex_Rank_t owner, size_t off) {
  return (unsigned char)(off * 7 + off / 251 + owner * 13 + 1);
}

static void PcHandler(gex_Token_t token, void *buf, size_t nbytes);

static void Start(int *argc, char ***argv) {
  CHECK(gex_Client_Init(&g_client, &g_ep, &g_tm, "VIS_TEST", argc, argv, 0) ==
            GASNET_OK,
        "gex_Client_Init failed");
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = (int)g_me;
  gex_AM_Entry_t entry = {kPcHandler,
                          (gex_AM_Fn_t)PcHandler,
                          GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REPLY,
                          0,
                          NULL,
                          "vis peer completion"};
  CHECK(gex_EP_RegisterHandlers(g_ep, &entry, 1) == GASNET_OK, "register");
  CHECK(gex_Segment_Attach(&g_seg, g_tm, SegSize()) == GASNET_OK,
        "gex_Segment_Attach failed");
  g_owner = (unsigned char **)calloc(g_n, sizeof *g_owner);
  g_size = (uintptr_t *)calloc(g_n, sizeof *g_size);
  CHECK(g_owner != NULL && g_size != NULL, "calloc");
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    void *owner;
    void *local;
    uintptr_t size;
    gex_Event_Wait(
        gex_EP_QueryBoundSegmentNB(g_tm, r, &owner, &local, &size, 0));
    CHECK(owner != NULL && size >= SegSize(), "rank %u's segment", r);
    g_owner[r] = (unsigned char *)owner;
    g_size[r] = size;
  }
  g_mine = (unsigned char *)gex_Segment_QueryAddr(g_seg);
  memset(g_mine, 0, SegSize());
  for (size_t i = 0; i < kArea; ++i) {
    g_mine[(size_t)g_n * kArea + i] = Pattern(g_me, i);
  }
  Barrier();
}

static void Finish(const char *line) {
  Barrier();
  Say("%s", line);
  Barrier();
  gasnet_exit(0);
}

/* A deterministic generator, the same on every rank. */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static size_t Rand(size_t bound) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return bound == 0 ? 0 : (size_t)(g_rng % bound);
}

/* ------------------------------------------------------------------------
 * Cases: offsets into this rank's local buffer and the remote area. */

enum Kind { kVector, kIndexed, kStrided };

typedef struct {
  size_t off;
  size_t len;
} Piece;

typedef struct {
  enum Kind kind;
  const char *name;
  /* Vector: pieces per side. Indexed: offsets (len = ilen). */
  size_t lcount, rcount;
  Piece lp[kMaxPieces], rp[kMaxPieces];
  size_t llen, rlen;
  int null_lists; /* zero counts passed with NULL lists */
  /* Strided. */
  size_t lbase, rbase, elemsz, levels;
  size_t count[kMaxLevels];
  ptrdiff_t lstr[kMaxLevels], rstr[kMaxLevels];
} Case;

static Case g_cases[40];
static int g_ncases;

static Case *NewCase(enum Kind kind, const char *name) {
  CHECK(g_ncases < (int)(sizeof g_cases / sizeof g_cases[0]), "cases");
  Case *c = &g_cases[g_ncases++];
  memset(c, 0, sizeof *c);
  c->kind = kind;
  c->name = name;
  return c;
}

/* Splits `total` bytes into `count` pieces of random lengths (zeros among
 * them), laid out from `base` with random gaps; overlap: the pieces reuse
 * earlier bytes (sources only). */
static void Split(Piece *p, size_t count, size_t total, size_t base,
                  int overlap) {
  size_t left = total;
  size_t at = base;
  for (size_t i = 0; i < count; ++i) {
    size_t len = i + 1 == count ? left
                 : Rand(3) == 0 ? 0
                                : Rand(2 * total / count + 1);
    if (len > left) len = left;
    left -= len;
    if (overlap && i > 0 && Rand(2) == 0) {
      p[i].off = base + Rand(at - base + 1);
    } else {
      p[i].off = at;
      at += len + Rand(5);
    }
    p[i].len = len;
  }
}

static void StridedCase(const char *name, size_t elemsz, size_t levels,
                        const size_t *count, size_t lbase, const ptrdiff_t *l,
                        size_t rbase, const ptrdiff_t *r) {
  Case *c = NewCase(kStrided, name);
  c->elemsz = elemsz;
  c->levels = levels;
  c->lbase = lbase;
  c->rbase = rbase;
  for (size_t k = 0; k < levels; ++k) {
    c->count[k] = count[k];
    c->lstr[k] = l[k];
    c->rstr[k] = r[k];
  }
}

/* `put`: the local side is the source (its pieces may overlap). */
static void MakeCases(int put) {
  g_ncases = 0;
  g_rng = 0x9e3779b97f4a7c15ull;
  Case *c;
  /* Vector. */
  c = NewCase(kVector, "vector-one");
  c->lcount = c->rcount = 1;
  c->lp[0] = (Piece){100, 777};
  c->rp[0] = (Piece){3, 777};
  c = NewCase(kVector, "vector-small");
  c->lcount = 300;
  c->rcount = 517;
  Split(c->lp, c->lcount, 4000, 0, put);
  Split(c->rp, c->rcount, 4000, 64, 0);
  c = NewCase(kVector, "vector-large");
  c->lcount = 3;
  c->rcount = 2;
  c->lp[0] = (Piece){0, 50000};
  c->lp[1] = (Piece){60000, 0};
  c->lp[2] = (Piece){60000, 110000};
  c->rp[0] = (Piece){10, 150000};
  c->rp[1] = (Piece){160000, 10000};
  c = NewCase(kVector, "vector-zero-count");
  c->null_lists = 1;
  c = NewCase(kVector, "vector-zero-length");
  c->lcount = 2;
  c->rcount = 3;
  c->lp[0] = (Piece){5, 0};
  c->lp[1] = (Piece){9, 0};
  c->rp[0] = (Piece){0, 0};
  c->rp[1] = (Piece){100, 0};
  c->rp[2] = (Piece){kArea, 0};
  /* Indexed. */
  c = NewCase(kIndexed, "indexed-one");
  c->lcount = c->rcount = 1;
  c->llen = c->rlen = 333;
  c->lp[0].off = 17;
  c->rp[0].off = 1000;
  c = NewCase(kIndexed, "indexed-small");
  c->lcount = 32;
  c->llen = 48;
  c->rcount = 64;
  c->rlen = 24;
  for (size_t i = 0; i < c->lcount; ++i) {
    c->lp[i].off = put ? Rand(2000) : i * 50; /* sources may overlap */
  }
  for (size_t i = 0; i < c->rcount; ++i) c->rp[i].off = (63 - i) * 30 + 7;
  c = NewCase(kIndexed, "indexed-large");
  c->lcount = 1;
  c->llen = 140000;
  c->rcount = 2;
  c->rlen = 70000;
  c->lp[0].off = 1;
  c->rp[0].off = 70100;
  c->rp[1].off = 0;
  c = NewCase(kIndexed, "indexed-zero-count");
  c->null_lists = 1;
  c->llen = c->rlen = 8;
  c = NewCase(kIndexed, "indexed-zero-length");
  c->lcount = 4;
  c->rcount = 2;
  c->lp[0].off = 1;
  c->lp[1].off = 2;
  c->lp[2].off = 3;
  c->lp[3].off = 4;
  c->rp[0].off = 5;
  c->rp[1].off = 6;
  /* Strided. */
  {
    const size_t n2[] = {5, 7};
    const ptrdiff_t lc[] = {8, 40};
    const ptrdiff_t r2[] = {16, 200};
    StridedCase("strided-2d", 8, 2, n2, 0, lc, 8, r2);
    StridedCase("strided-contiguous", 8, 2, n2, 8, lc, 16, lc);
  }
  {
    const size_t n3[] = {4, 3, 2};
    const ptrdiff_t l3[] = {3, 12, 36};
    const ptrdiff_t r3[] = {5, 25, 100};
    StridedCase("strided-3d", 3, 3, n3, 11, l3, 1, r3);
  }
  {
    const size_t n4[] = {3, 2, 2, 2};
    const ptrdiff_t l4[] = {2, 6, 12, 24};
    const ptrdiff_t r4[] = {7, 30, 70, 200};
    StridedCase("strided-4d", 2, 4, n4, 0, l4, 3, r4);
  }
  {
    const size_t n[] = {4, 3};
    const ptrdiff_t zero[] = {0, 0};
    const ptrdiff_t dense[] = {16, 64};
    if (put) {
      StridedCase("strided-stride0", 16, 2, n, 32, zero, 0, dense);
    } else {
      StridedCase("strided-stride0", 16, 2, n, 0, dense, 32, zero);
    }
  }
  {
    const size_t n[] = {10, 3};
    const ptrdiff_t fwd[] = {4, 40};
    const ptrdiff_t rev[] = {-4, -40};
    StridedCase("strided-reflect", 4, 2, n, 0, fwd, 116, rev);
  }
  {
    const size_t n[] = {6, 4};
    const ptrdiff_t rows[] = {8, 48};
    const ptrdiff_t cols[] = {32, 8};
    StridedCase("strided-transpose", 8, 2, n, 0, rows, 8, cols);
  }
  StridedCase("strided-levels0", 1000, 0, NULL, 5, NULL, 9, NULL);
  {
    const size_t n[] = {3, 0};
    const ptrdiff_t s[] = {8, 24};
    StridedCase("strided-count0", 8, 2, n, 0, s, 0, s);
    const size_t one[] = {4};
    StridedCase("strided-elemsz0", 0, 1, one, 0, s, 0, s);
  }
  {
    const size_t n[] = {150};
    const ptrdiff_t l[] = {1000};
    const ptrdiff_t r[] = {1100};
    StridedCase("strided-large", 1000, 1, n, 0, l, 50, r);
  }
  {
    const size_t n[] = {40};
    const ptrdiff_t l[] = {384};
    const ptrdiff_t r[] = {704};
    StridedCase("strided-blocks", 320, 1, n, 3, l, 7, r);
  }
}

/* The pieces of one side (local: 1) as (offset, length), in order. */
static size_t Expand(const Case *c, int local, Piece *out, size_t max) {
  size_t n = 0;
  if (c->kind == kVector || c->kind == kIndexed) {
    const size_t count = local ? c->lcount : c->rcount;
    const Piece *p = local ? c->lp : c->rp;
    for (size_t i = 0; i < count; ++i) {
      CHECK(n < max, "expand");
      out[n].off = p[i].off;
      out[n].len = c->kind == kVector ? p[i].len : local ? c->llen : c->rlen;
      ++n;
    }
    return n;
  }
  if (c->elemsz == 0) return 0;
  size_t total = 1;
  for (size_t k = 0; k < c->levels; ++k) total *= c->count[k];
  for (size_t e = 0; e < total; ++e) {
    size_t rest = e;
    ptrdiff_t off = (ptrdiff_t)(local ? c->lbase : c->rbase);
    for (size_t k = 0; k < c->levels; ++k) {
      const size_t i = rest % c->count[k];
      rest /= c->count[k];
      off += (ptrdiff_t)i * (local ? c->lstr[k] : c->rstr[k]);
    }
    CHECK(n < max, "expand");
    out[n].off = (size_t)off;
    out[n].len = c->elemsz;
    ++n;
  }
  return n;
}

static Piece g_lx[4096], g_rx[4096];
static unsigned char g_stream[kArea];

/* The reference: `dst` gets the bytes of `src` (pieces of each) in order. */
static size_t Reference(unsigned char *dst, const Piece *dp, size_t dn,
                        const unsigned char *src, const Piece *sp, size_t sn) {
  size_t total = 0;
  for (size_t i = 0; i < sn; ++i) {
    for (size_t b = 0; b < sp[i].len; ++b) {
      g_stream[total++] = src[sp[i].off + b];
    }
  }
  size_t at = 0;
  for (size_t i = 0; i < dn; ++i) {
    for (size_t b = 0; b < dp[i].len; ++b) dst[dp[i].off + b] = g_stream[at++];
  }
  CHECK(at == total, "reference totals %zu and %zu", at, total);
  return total;
}

enum Form { kBlocking, kNB, kNBLeaf, kNBI, kNBIRegion, kNumForms };
static const char *const kFormNames[] = {"Blocking", "NB", "NB+leaf", "NBI",
                                         "NBI+region"};

static gex_Memvec_t g_lv[kMaxPieces], g_rv[kMaxPieces];
static void *g_li[kMaxPieces], *g_ri[kMaxPieces];

/* Issues case `c` (Put or Get with target `t`) in form `f` and completes
 * it. `local` and `remote` are the bases the offsets are relative to. */
static void Issue(const Case *c, int put, gex_Rank_t t, enum Form f,
                  unsigned char *local, unsigned char *remote, int moves) {
  gex_Flags_t flags = 0;
  if (f == kNBLeaf && put) flags |= GEX_FLAG_ENABLE_LEAF_LC;
  int nb = f == kNB || f == kNBLeaf;
  int nbi = f == kNBI || f == kNBIRegion;
  if (f == kNBIRegion) gex_NBI_BeginAccessRegion(0);
  gex_Event_t ev = GEX_EVENT_INVALID;
  int rc = 0;
  if (c->kind == kVector) {
    for (size_t i = 0; i < c->lcount; ++i) {
      g_lv[i].gex_addr = local + c->lp[i].off;
      g_lv[i].gex_len = c->lp[i].len;
    }
    for (size_t i = 0; i < c->rcount; ++i) {
      g_rv[i].gex_addr = remote + c->rp[i].off;
      g_rv[i].gex_len = c->rp[i].len;
    }
    const gex_Memvec_t *lv = c->null_lists ? NULL : g_lv;
    const gex_Memvec_t *rv = c->null_lists ? NULL : g_rv;
    if (put) {
      if (nb) {
        ev = gex_VIS_VectorPutNB(g_tm, t, c->rcount, rv, c->lcount, lv, flags);
      } else if (nbi) {
        rc = gex_VIS_VectorPutNBI(g_tm, t, c->rcount, rv, c->lcount, lv, flags);
      } else {
        rc = gex_VIS_VectorPutBlocking(g_tm, t, c->rcount, rv, c->lcount, lv,
                                       flags);
      }
    } else {
      if (nb) {
        ev = gex_VIS_VectorGetNB(g_tm, c->lcount, lv, t, c->rcount, rv, flags);
      } else if (nbi) {
        rc = gex_VIS_VectorGetNBI(g_tm, c->lcount, lv, t, c->rcount, rv, flags);
      } else {
        rc = gex_VIS_VectorGetBlocking(g_tm, c->lcount, lv, t, c->rcount, rv,
                                       flags);
      }
    }
  } else if (c->kind == kIndexed) {
    for (size_t i = 0; i < c->lcount; ++i) g_li[i] = local + c->lp[i].off;
    for (size_t i = 0; i < c->rcount; ++i) g_ri[i] = remote + c->rp[i].off;
    void *const *li = c->null_lists ? NULL : g_li;
    void *const *ri = c->null_lists ? NULL : g_ri;
    if (put) {
      if (nb) {
        ev = gex_VIS_IndexedPutNB(g_tm, t, c->rcount, ri, c->rlen, c->lcount,
                                  li, c->llen, flags);
      } else if (nbi) {
        rc = gex_VIS_IndexedPutNBI(g_tm, t, c->rcount, ri, c->rlen, c->lcount,
                                   li, c->llen, flags);
      } else {
        rc = gex_VIS_IndexedPutBlocking(g_tm, t, c->rcount, ri, c->rlen,
                                        c->lcount, li, c->llen, flags);
      }
    } else {
      if (nb) {
        ev = gex_VIS_IndexedGetNB(g_tm, c->lcount, li, c->llen, t, c->rcount,
                                  ri, c->rlen, flags);
      } else if (nbi) {
        rc = gex_VIS_IndexedGetNBI(g_tm, c->lcount, li, c->llen, t, c->rcount,
                                   ri, c->rlen, flags);
      } else {
        rc = gex_VIS_IndexedGetBlocking(g_tm, c->lcount, li, c->llen, t,
                                        c->rcount, ri, c->rlen, flags);
      }
    }
  } else {
    /* The strides and counts are read before the call returns: pass
     * copies and spoil them afterwards. */
    size_t count[kMaxLevels];
    ptrdiff_t ls[kMaxLevels], rs[kMaxLevels];
    memcpy(count, c->count, sizeof count);
    memcpy(ls, c->lstr, sizeof ls);
    memcpy(rs, c->rstr, sizeof rs);
    void *l = local + c->lbase;
    void *r = remote + c->rbase;
    if (put) {
      if (nb) {
        ev = gex_VIS_StridedPutNB(g_tm, t, r, rs, l, ls, c->elemsz, count,
                                  c->levels, flags);
      } else if (nbi) {
        rc = gex_VIS_StridedPutNBI(g_tm, t, r, rs, l, ls, c->elemsz, count,
                                   c->levels, flags);
      } else {
        rc = gex_VIS_StridedPutBlocking(g_tm, t, r, rs, l, ls, c->elemsz, count,
                                        c->levels, flags);
      }
    } else {
      if (nb) {
        ev = gex_VIS_StridedGetNB(g_tm, l, ls, t, r, rs, c->elemsz, count,
                                  c->levels, flags);
      } else if (nbi) {
        rc = gex_VIS_StridedGetNBI(g_tm, l, ls, t, r, rs, c->elemsz, count,
                                   c->levels, flags);
      } else {
        rc = gex_VIS_StridedGetBlocking(g_tm, l, ls, t, r, rs, c->elemsz, count,
                                        c->levels, flags);
      }
    }
    memset(count, 0xff, sizeof count);
    memset(ls, 0x55, sizeof ls);
    memset(rs, 0x55, sizeof rs);
  }
  ++g_ops;
  CHECK(rc == 0, "%s %s: rc %d", c->name, kFormNames[f], rc);
  if (nb) {
    CHECK(ev != GEX_EVENT_NO_OP, "%s: GEX_EVENT_NO_OP without IMMEDIATE",
          c->name);
    if (ev == GEX_EVENT_INVALID) {
      if (moves) ++g_direct;
    } else if (f == kNBLeaf && put) {
      gex_Event_t lc = gex_Event_QueryLeaf(ev, GEX_EC_LC);
      gex_Event_Wait(lc);
    }
    gex_Event_Wait(ev);
  } else if (f == kNBIRegion) {
    gex_Event_Wait(gex_NBI_EndAccessRegion(0));
  } else if (nbi) {
    gex_NBI_Wait(put ? GEX_EC_PUT : GEX_EC_GET, 0);
  }
}

static unsigned char g_src[kArea];
static unsigned char g_got[kArea];
static unsigned char g_want[kArea];
static unsigned char g_pattern[kArea];

static void ShapesTo(gex_Rank_t t) {
  for (size_t i = 0; i < kArea; ++i) g_pattern[i] = Pattern(t, i);
  for (int put = 1; put >= 0; --put) {
    MakeCases(put);
    for (int ci = 0; ci < g_ncases; ++ci) {
      const Case *c = &g_cases[ci];
      const size_t ln = Expand(c, 1, g_lx, 4096);
      const size_t rn = Expand(c, 0, g_rx, 4096);
      for (int f = 0; f < kNumForms; ++f) {
        if (put) {
          for (size_t i = 0; i < kArea; ++i) {
            g_src[i] = (unsigned char)(i * 31 + g_me * 5 + f + 3);
          }
          memset(g_want, 0, kArea);
          const size_t moved = Reference(g_want, g_rx, rn, g_src, g_lx, ln);
          memset(g_got, 0, kArea);
          CHECK(
              gex_RMA_PutBlocking(g_tm, t, Area(t, g_me), g_got, kArea, 0) == 0,
              "clear");
          Issue(c, 1, t, (enum Form)f, g_src, Area(t, g_me), moved != 0);
          memset(g_got, 0xAB, kArea);
          CHECK(
              gex_RMA_GetBlocking(g_tm, g_got, t, Area(t, g_me), kArea, 0) == 0,
              "read back");
        } else {
          memset(g_want, 0xEE, kArea);
          const size_t moved = Reference(g_want, g_lx, ln, g_pattern, g_rx, rn);
          memset(g_got, 0xEE, kArea);
          Issue(c, 0, t, (enum Form)f, g_got, PatternArea(t), moved != 0);
        }
        for (size_t i = 0; i < kArea; ++i) {
          if (g_got[i] != g_want[i]) {
            CHECK(0, "%s %s %s to rank %u: byte %zu is 0x%02x, want 0x%02x",
                  put ? "Put" : "Get", c->name, kFormNames[f], t, i, g_got[i],
                  g_want[i]);
          }
        }
      }
    }
  }
}

static void Shapes(void) {
  ShapesTo(g_me);
  if (g_n > 1) ShapesTo((g_me + 1) % g_n);
  char line[128];
  snprintf(line, sizeof line, "shapes ok ops=%ld direct=%ld", g_ops, g_direct);
  Finish(line);
}

/* ------------------------------------------------------------------------
 * peer: peer completion. */

typedef struct {
  uint32_t initiator;
  uint32_t offset; /* in the initiator's area of this rank's segment */
  uint32_t len;
  uint32_t value; /* every byte of the region; 0: nothing to check */
} Note;

static volatile long g_notes;

static void PcHandler(gex_Token_t token, void *buf, size_t nbytes) {
  gex_Token_Info_t info;
  gex_Token_Info(token, &info, GEX_TI_SRCRANK | GEX_TI_IS_REQ);
  CHECK(nbytes == sizeof(Note), "note of %zu bytes", nbytes);
  Note note;
  memcpy(&note, buf, sizeof note);
  CHECK(info.gex_srcrank == note.initiator, "note from %u says %u",
        info.gex_srcrank, note.initiator);
  CHECK(!info.gex_is_req, "a peer completion handler runs as a reply");
  const unsigned char *region =
      g_mine + (size_t)note.initiator * kArea + note.offset;
  for (uint32_t i = 0; i < note.len && note.value != 0; ++i) {
    CHECK(region[i] == note.value,
          "peer completion ran before the data: byte %u is 0x%02x, want "
          "0x%02x",
          i, region[i], note.value);
  }
  ++g_notes;
}

static void Peer(void) {
  const gex_Rank_t t = (g_me + 1) % g_n;
  const gex_Rank_t from = (g_me + g_n - 1) % g_n;
  enum { kRegion = 3000 };
  static unsigned char src[kRegion];
  long sent = 0;
  uint32_t offset = 0;
  for (int shape = 0; shape < 3; ++shape) {
    for (int f = 0; f < 3; ++f) {
      const unsigned char value = (unsigned char)(1 + shape * 3 + f);
      memset(src, value, sizeof src);
      Note note = {g_me, offset, kRegion, value};
      gex_VIS_SetPeerCompletionHandler(kPcHandler, &note, sizeof note, 0);
      unsigned char *dst = Area(t, g_me) + offset;
      gex_Event_t ev = GEX_EVENT_INVALID;
      int rc = 0;
      if (shape == 0) {
        gex_Memvec_t d[3] = {{dst, 1000}, {dst + 1000, 0}, {dst + 1000, 2000}};
        gex_Memvec_t s[2] = {{src, 1500}, {src + 1500, 1500}};
        ev = f == 0   ? gex_VIS_VectorPutNB(g_tm, t, 3, d, 2, s, 0)
             : f == 1 ? (rc = gex_VIS_VectorPutNBI(g_tm, t, 3, d, 2, s, 0),
                         GEX_EVENT_INVALID)
                      : (rc = gex_VIS_VectorPutBlocking(g_tm, t, 3, d, 2, s, 0),
                         GEX_EVENT_INVALID);
      } else if (shape == 1) {
        void *d[3] = {dst, dst + 1000, dst + 2000};
        void *s[1] = {src};
        ev = f == 0   ? gex_VIS_IndexedPutNB(g_tm, t, 3, d, 1000, 1, s, 3000, 0)
             : f == 1 ? (rc = gex_VIS_IndexedPutNBI(g_tm, t, 3, d, 1000, 1, s,
                                                    3000, 0),
                         GEX_EVENT_INVALID)
                      : (rc = gex_VIS_IndexedPutBlocking(g_tm, t, 3, d, 1000, 1,
                                                         s, 3000, 0),
                         GEX_EVENT_INVALID);
      } else {
        const size_t count[2] = {30, 10};
        const ptrdiff_t ds[2] = {10, 300};
        const ptrdiff_t ss[2] = {10, 300};
        ev = f == 0 ? gex_VIS_StridedPutNB(g_tm, t, dst, ds, src, ss, 10, count,
                                           2, 0)
             : f == 1 ? (rc = gex_VIS_StridedPutNBI(g_tm, t, dst, ds, src, ss,
                                                    10, count, 2, 0),
                         GEX_EVENT_INVALID)
                      : (rc = gex_VIS_StridedPutBlocking(g_tm, t, dst, ds, src,
                                                         ss, 10, count, 2, 0),
                         GEX_EVENT_INVALID);
      }
      CHECK(rc == 0 && ev != GEX_EVENT_NO_OP, "put with peer completion");
      gex_Event_Wait(ev);
      gex_NBI_Wait(GEX_EC_ALL, 0);
      ++sent;
      offset += kRegion;
    }
  }
  /* Gets and an empty Put notify too (nothing to check there). */
  {
    Note note = {g_me, 0, 0, 0};
    unsigned char got[64];
    gex_VIS_SetPeerCompletionHandler(kPcHandler, &note, sizeof note, 0);
    const size_t count[1] = {8};
    const ptrdiff_t st[1] = {8};
    CHECK(gex_VIS_StridedGetBlocking(g_tm, got, st, t, PatternArea(t), st, 8,
                                     count, 1, 0) == 0,
          "get");
    for (size_t i = 0; i < 64; ++i) CHECK(got[i] == Pattern(t, i), "get data");
    ++sent;
    gex_VIS_SetPeerCompletionHandler(kPcHandler, &note, sizeof note, 0);
    void *one[1] = {PatternArea(t)};
    void *mine[1] = {got};
    gex_Event_Wait(gex_VIS_IndexedGetNB(g_tm, 1, mine, 16, t, 1, one, 16, 0));
    ++sent;
    gex_VIS_SetPeerCompletionHandler(kPcHandler, &note, sizeof note, 0);
    CHECK(gex_VIS_VectorPutBlocking(g_tm, t, 0, NULL, 0, NULL, 0) == 0,
          "empty put");
    ++sent;
    /* Armed, then disarmed: this Put notifies no one. */
    gex_VIS_SetPeerCompletionHandler(kPcHandler, &note, sizeof note, 0);
    gex_VIS_SetPeerCompletionHandler(0, NULL, 0, 0);
    gex_Memvec_t d[1] = {{Area(t, g_me) + offset, 8}};
    gex_Memvec_t s[1] = {{got, 8}};
    CHECK(gex_VIS_VectorPutBlocking(g_tm, t, 1, d, 1, s, 0) == 0, "put");
  }
  /* Every rank sends `sent` notes to the next one. */
  while (g_notes < sent) gasnet_AMPoll();
  Barrier();
  gex_NBI_Wait(GEX_EC_ALL, 0);
  Barrier();
  CHECK(g_notes == sent, "%ld notes from rank %u, want %ld", (long)g_notes,
        from, sent);
  char line[128];
  snprintf(line, sizeof line, "peer ok notes=%ld", (long)g_notes);
  Finish(line);
}

/* ------------------------------------------------------------------------
 * immediate: GEX_FLAG_IMMEDIATE may decline, and then starts nothing. */

static void Immediate(void) {
  const gex_Rank_t t = (g_me + 1) % g_n;
  enum { kRounds = 60, kLen = 2000 };
  static unsigned char src[kLen], got[kLen];
  long noops = 0;
  for (int round = 0; round < kRounds; ++round) {
    const unsigned char value = (unsigned char)(round + 1);
    memset(src, value, kLen);
    unsigned char *dst = Area(t, g_me);
    gex_Memvec_t d[2] = {{dst, kLen / 2}, {dst + kLen / 2, kLen / 2}};
    gex_Memvec_t s[1] = {{src, kLen}};
    const int form = round % 3;
    for (gex_Flags_t flags = GEX_FLAG_IMMEDIATE;; flags = 0) {
      int declined;
      if (form == 0) {
        gex_Event_t ev = gex_VIS_VectorPutNB(g_tm, t, 2, d, 1, s, flags);
        declined = ev == GEX_EVENT_NO_OP;
        if (!declined) gex_Event_Wait(ev);
      } else if (form == 1) {
        declined = gex_VIS_VectorPutNBI(g_tm, t, 2, d, 1, s, flags) != 0;
        gex_NBI_Wait(GEX_EC_PUT, 0);
      } else {
        declined = gex_VIS_VectorPutBlocking(g_tm, t, 2, d, 1, s, flags) != 0;
      }
      CHECK(!declined || flags != 0, "declined without GEX_FLAG_IMMEDIATE");
      if (!declined) break;
      ++noops;
    }
    void *remote[4] = {dst + 1500, dst + 1000, dst + 500, dst};
    void *local[1] = {got};
    memset(got, 0, kLen);
    for (gex_Flags_t flags = GEX_FLAG_IMMEDIATE;; flags = 0) {
      if (gex_VIS_IndexedGetBlocking(g_tm, 1, local, kLen, t, 4, remote, 500,
                                     flags) == 0) {
        break;
      }
      CHECK(flags != 0, "declined without GEX_FLAG_IMMEDIATE");
      ++noops;
    }
    for (size_t i = 0; i < kLen; ++i) {
      CHECK(got[i] == value, "round %d: byte %zu is %u, want %u", round, i,
            got[i], value);
    }
  }
  char line[128];
  snprintf(line, sizeof line, "immediate ok noops=%ld", noops);
  Finish(line);
}

/* ------------------------------------------------------------------------
 * subteam: VIS over a sub-team whose order runs backwards (parity teams,
 * key minus the job rank), so team rank r is job rank members[r]. Every
 * member Vector-Puts its value into its area at every member (by team
 * rank), Strided-Gets that member's pattern back and Indexed-Gets its own
 * area there; after a team barrier each checks what landed in its own
 * segment came from each member. */

static void Subteam(void) {
  gex_TM_t team = GEX_TM_INVALID;
  gex_TM_Split(&team, g_tm, (int)(g_me % 2), -(int)g_me, NULL, 0,
               GEX_FLAG_TM_NO_SCRATCH);
  CHECK(team != GEX_TM_INVALID, "gex_TM_Split");
  gex_Rank_t members[64], size = 0;
  for (gex_Rank_t j = g_n; j-- > 0;) {
    if (j % 2 == g_me % 2) members[size++] = j;
  }
  enum { kLen = 4096, kRows = 8, kRow = 64 };
  static unsigned char src[kLen], got[kLen];
  memset(src, (int)(g_me + 1), kLen);
  long ops = 0;
  for (gex_Rank_t r = 0; r < size; ++r) {
    const gex_Rank_t job = members[r];
    unsigned char *dst = Area(job, g_me);
    gex_Memvec_t d[2] = {{dst, kLen / 2}, {dst + kLen, kLen / 2}};
    gex_Memvec_t sv[1] = {{src, kLen}};
    CHECK(gex_VIS_VectorPutBlocking(team, r, 2, d, 1, sv, 0) == 0,
          "VectorPut to team rank %u", r);
    /* kRows rows of kRow bytes, every other row of the pattern area. */
    const size_t count[2] = {kRow, kRows};
    const ptrdiff_t remote_strides[2] = {1, 2 * kRow};
    const ptrdiff_t local_strides[2] = {1, kRow};
    memset(got, 0, kLen);
    gex_Event_Wait(gex_VIS_StridedGetNB(team, got, local_strides, r,
                                        PatternArea(job), remote_strides, 1,
                                        count, 2, 0));
    for (size_t row = 0; row < kRows; ++row) {
      for (size_t i = 0; i < kRow; ++i) {
        CHECK(got[row * kRow + i] == Pattern(job, 2 * kRow * row + i),
              "StridedGet from team rank %u (job rank %u): row %zu byte %zu", r,
              job, row, i);
      }
    }
    void *remote[2] = {dst + kLen, dst};
    void *local[1] = {got};
    memset(got, 0, kLen);
    CHECK(gex_VIS_IndexedGetNBI(team, 1, local, kLen, r, 2, remote, kLen / 2,
                                0) == 0,
          "IndexedGet");
    gex_NBI_Wait(GEX_EC_GET, 0);
    for (size_t i = 0; i < kLen; ++i) {
      CHECK(got[i] == (unsigned char)(g_me + 1),
            "IndexedGet from team rank %u (job rank %u): byte %zu is %u", r,
            job, i, got[i]);
    }
    ops += 3;
  }
  gex_Coll_BarrierBlocking(team, 0);
  for (gex_Rank_t r = 0; r < size; ++r) {
    const unsigned char *a = g_mine + (size_t)members[r] * kArea;
    for (size_t i = 0; i < kLen / 2; ++i) {
      CHECK(a[i] == (unsigned char)(members[r] + 1) &&
                a[kLen + i] == (unsigned char)(members[r] + 1),
            "what job rank %u put here: byte %zu", members[r], i);
    }
  }
  gex_Coll_BarrierBlocking(team, 0);
  gex_TM_Destroy(team, NULL, 0);
  char line[96];
  snprintf(line, sizeof line, "subteam ok ops=%ld size=%u", ops, size);
  Finish(line);
}

/* ------------------------------------------------------------------------
 * edge: strided regions that end exactly at the target's segment end, or
 * start exactly at its base. GASNet-EX spec, VIS section ("Strided"): the
 * elements are at base + sum(i_k * strides[k]), and a transfer is legal
 * when every element lies in the bound segment; the extent the
 * implementation checks must be exactly that of the elements, whatever
 * the shape: zero counts, counts of one, one-element (contiguous) strides
 * that the copy folds, every order of the levels, strides that are not
 * increasing, negative strides. The remote side is a dense layout of the
 * levels in a random order (with gaps and reflections, so no two elements
 * overlap), the local side plain row-major; each case is put (the tail
 * zeroed first, then read back whole: the elements hold the source and
 * every other byte is still zero) and got (from a tail holding a known
 * pattern) against a reference built from the element addresses. */

enum { kTail = 16 * 1024, kEdgeCases = 160 };

typedef struct {
  size_t elemsz, levels;
  size_t count[3];
  ptrdiff_t rstr[3], lstr[3];
  ptrdiff_t lo, end; /* remote elements' extent, from the base */
} Edge;

/* Offsets of element number e (row-major over the levels, level 0
 * fastest) from the remote and local bases. */
static void EdgeElement(const Edge *c, size_t e, ptrdiff_t *r, ptrdiff_t *l) {
  *r = 0;
  *l = 0;
  for (size_t k = 0; k < c->levels; ++k) {
    const size_t i = e % c->count[k];
    e /= c->count[k];
    *r += (ptrdiff_t)i * c->rstr[k];
    *l += (ptrdiff_t)i * c->lstr[k];
  }
}

static size_t EdgeElements(const Edge *c) {
  size_t n = 1;
  for (size_t k = 0; k < c->levels; ++k) n *= c->count[k];
  return c->elemsz == 0 ? 0 : n;
}

static void MakeEdge(Edge *c, int i) {
  static const size_t kElems[] = {1, 4, 8, 24};
  static const size_t kCounts[] = {0, 1, 2, 3, 4};
  memset(c, 0, sizeof *c);
  c->elemsz = kElems[Rand(4)];
  c->levels = 1 + Rand(3);
  for (size_t k = 0; k < c->levels; ++k) {
    /* Zero counts in a few cases only: they move nothing. */
    c->count[k] = i % 16 == 15 ? kCounts[Rand(5)] : 1 + Rand(4);
  }
  /* The remote layout: levels in a random order, each stride the extent
   * of the levels laid out before it plus a gap (none in most cases:
   * contiguous levels), reflected now and then. The first cases are
   * plainly contiguous in level order. */
  size_t order[3] = {0, 1, 2};
  for (size_t k = c->levels; k > 1 && i >= 8; --k) {
    const size_t j = Rand(k);
    const size_t t = order[k - 1];
    order[k - 1] = order[j];
    order[j] = t;
  }
  ptrdiff_t step = (ptrdiff_t)c->elemsz;
  for (size_t k = 0; k < c->levels; ++k) {
    const size_t d = order[k];
    const ptrdiff_t gap = (i >= 8 && Rand(3) == 0) ? (ptrdiff_t)Rand(9) : 0;
    const ptrdiff_t stride = step + gap;
    c->rstr[d] = (i >= 8 && Rand(4) == 0) ? -stride : stride;
    step = stride * (ptrdiff_t)(c->count[d] == 0 ? 1 : c->count[d]);
  }
  /* The local side: row-major and contiguous. */
  ptrdiff_t lstep = (ptrdiff_t)c->elemsz;
  for (size_t k = 0; k < c->levels; ++k) {
    c->lstr[k] = lstep;
    lstep *= (ptrdiff_t)(c->count[k] == 0 ? 1 : c->count[k]);
  }
  /* The elements' extent, enumerated. */
  const size_t n = EdgeElements(c);
  for (size_t e = 0; e < n; ++e) {
    ptrdiff_t r, l;
    EdgeElement(c, e, &r, &l);
    if (e == 0 || r < c->lo) c->lo = r;
    if (e == 0 || r + (ptrdiff_t)c->elemsz > c->end) {
      c->end = r + (ptrdiff_t)c->elemsz;
    }
  }
  CHECK(c->end - c->lo <= kTail, "edge case %d: extent %td", i, c->end - c->lo);
}

static unsigned char g_tail[kTail], g_tail_want[kTail];
static unsigned char g_esrc[kTail], g_egot[kTail], g_ewant[kTail];

/* One case at one end of target t's segment: Put, then Get. */
static void EdgeCase(const Edge *c, gex_Rank_t t, int at_end, int i) {
  unsigned char *tail = at_end ? g_owner[t] + g_size[t] - kTail : g_owner[t];
  /* The remote base: the elements end at the segment's end, or start at
   * its base. */
  unsigned char *rbase =
      at_end ? g_owner[t] + g_size[t] - c->end : g_owner[t] - c->lo;
  const size_t n = EdgeElements(c);
  const size_t lbytes = n * c->elemsz;
  const char *where =
      at_end ? "ending at the segment's end" : "starting at the segment's base";
  /* Put: zero the tail, put, read it back. */
  memset(g_tail, 0, kTail);
  gex_RMA_PutBlocking(g_tm, t, tail, g_tail, kTail, 0);
  for (size_t b = 0; b < lbytes; ++b) {
    g_esrc[b] = (unsigned char)(b * 5 + (size_t)i + 1);
  }
  memset(g_tail_want, 0, kTail);
  for (size_t e = 0; e < n; ++e) {
    ptrdiff_t r, l;
    EdgeElement(c, e, &r, &l);
    memcpy(g_tail_want + (rbase + r - tail), g_esrc + l, c->elemsz);
  }
  gex_VIS_StridedPutBlocking(g_tm, t, rbase, c->rstr, g_esrc, c->lstr,
                             c->elemsz, c->count, c->levels, 0);
  gex_RMA_GetBlocking(g_tm, g_tail, t, tail, kTail, 0);
  for (size_t b = 0; b < kTail; ++b) {
    CHECK(g_tail[b] == g_tail_want[b],
          "edge case %d (%s, elemsz %zu, %zu levels) Put to rank %u: tail "
          "byte %zu is %u, expected %u",
          i, where, c->elemsz, c->levels, t, b, g_tail[b], g_tail_want[b]);
  }
  /* Get: a pattern in the tail, got into a local buffer. */
  for (size_t b = 0; b < kTail; ++b) {
    g_tail[b] = (unsigned char)(b * 3 + (size_t)i * 11 + 7);
  }
  gex_RMA_PutBlocking(g_tm, t, tail, g_tail, kTail, 0);
  memset(g_egot, 0xEE, lbytes + 1);
  memset(g_ewant, 0xEE, lbytes + 1);
  for (size_t e = 0; e < n; ++e) {
    ptrdiff_t r, l;
    EdgeElement(c, e, &r, &l);
    memcpy(g_ewant + l, g_tail + (rbase + r - tail), c->elemsz);
  }
  gex_VIS_StridedGetBlocking(g_tm, g_egot, c->lstr, t, rbase, c->rstr,
                             c->elemsz, c->count, c->levels, 0);
  CHECK(memcmp(g_egot, g_ewant, lbytes + 1) == 0,
        "edge case %d (%s, elemsz %zu, %zu levels) Get from rank %u: wrong "
        "data",
        i, where, c->elemsz, c->levels, t);
  g_ops += 2;
}

static void EdgeMode(void) {
  /* One initiator per target: each rank the next one's (itself alone). */
  const gex_Rank_t t = (g_me + 1) % g_n;
  for (int i = 0; i < kEdgeCases; ++i) {
    Edge c;
    MakeEdge(&c, i);
    EdgeCase(&c, t, 1, i);
    EdgeCase(&c, t, 0, i);
  }
  char line[64];
  snprintf(line, sizeof line, "edge ok ops=%ld", g_ops);
  Finish(line);
}

/* ------------------------------------------------------------------------
 * Misuse. */

static void Misuse(const char *mode) {
  CHECK(g_n >= 2, "misuse modes need 2 ranks");
  if (g_me == 0) {
    unsigned char buf[64];
    memset(buf, 0, sizeof buf);
    gex_Memvec_t src[2] = {{buf, 8}, {buf + 8, 8}};
    if (strcmp(mode, "null-list") == 0) {
      gex_VIS_VectorPutBlocking(g_tm, 1, 2, NULL, 2, src, 0);
    } else if (strcmp(mode, "outside") == 0) {
      void *remote[2] = {Area(1, 0), g_owner[1] + g_size[1]};
      void *local[1] = {buf};
      gex_VIS_IndexedGetNBI(g_tm, 1, local, 16, 1, 2, remote, 8, 0);
      gex_NBI_Wait(GEX_EC_ALL, 0);
    } else if (strcmp(mode, "outside-strided") == 0) {
      const size_t count[2] = {2, 2};
      const ptrdiff_t st[2] = {8, (ptrdiff_t)g_size[1]};
      const ptrdiff_t lst[2] = {8, 16};
      gex_Event_Wait(gex_VIS_StridedPutNB(g_tm, 1, Area(1, 0), st, buf, lst, 8,
                                          count, 2, 0));
    } else if (strcmp(mode, "mismatch") == 0) {
      gex_Memvec_t remote[1] = {{Area(1, 0), 24}};
      gex_VIS_VectorGetBlocking(g_tm, 2, src, 1, 1, remote, 0);
    } else if (strcmp(mode, "immediate-armed") == 0) {
      const size_t count[1] = {2};
      const ptrdiff_t st[1] = {8};
      gex_VIS_SetPeerCompletionHandler(kPcHandler, buf, 4, 0);
      gex_VIS_StridedGetNBI(g_tm, buf, st, 1, Area(1, 0), st, 8, count, 1,
                            GEX_FLAG_IMMEDIATE);
      gex_NBI_Wait(GEX_EC_ALL, 0);
    } else {
      CHECK(0, "unknown mode %s", mode);
    }
    Say("survived %s", mode);
  }
  Barrier();
  gasnet_exit(0);
}

int main(int argc, char **argv) {
  Start(&argc, &argv);
  CHECK(argc == 2, "usage: vis_client MODE");
  const char *mode = argv[1];
  if (strcmp(mode, "shapes") == 0) Shapes();
  if (strcmp(mode, "peer") == 0) Peer();
  if (strcmp(mode, "immediate") == 0) Immediate();
  if (strcmp(mode, "subteam") == 0) Subteam();
  if (strcmp(mode, "edge") == 0) EdgeMode();
  Misuse(mode);
  return 0;
}
