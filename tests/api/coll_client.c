/* coll_client: one rank of a collectives job over any conduit (SEQ),
 * started by its launcher from coll_job_test. Written in C11 against
 * <gasnetex.h> only. A failed check ends the job with exit code 1
 * ("rank R: CHECK FAILED ..."); a rank that passed prints
 * "rank R: <mode> ok colls=C" (C: collectives this rank checked).
 *
 * Every result is computed here, independently, from what each rank must
 * have contributed, and checked on every rank; guard bytes after each
 * destination, the source after the operation, and a non-root's dst (which
 * a ReduceToOne must not touch) are checked too.
 *
 *   bcast     gex_Coll_BroadcastNB from every root, 0, 1, 8, 1000,
 *             65536+7 and 1 MiB bytes; non-roots pass src NULL.
 *   reduce    every built-in type x every op it takes (ADD, MULT, MIN,
 *             MAX; AND, OR, XOR for integers) with negative values and
 *             exactly representable floats, ReduceToOne to every root and
 *             ReduceToAll, 1, 37 and 20000 elements; each group of n + 1
 *             started at once and retired with gex_Event_WaitAll.
 *   user      GEX_OP_USER: a 12-byte GEX_DT_USER (sum, max, xor) whose
 *             operator checks user_cdata; modular addition on GEX_DT_I64
 *             (the modulus from user_cdata); a 70000-byte element (larger
 *             than a Medium) added bytewise.
 *   nc        GEX_OP_USER_NC: 2x2 matrix product ([[a,1],[1,0]] matrices
 *             do not commute), string concatenation ("ABC..."), and the
 *             left and right projections on GEX_DT_I32 (rank 0's and rank
 *             n-1's value): only rank order gives these results.
 *   inplace   src == dst: Broadcast on the root, ReduceToOne on the root,
 *             ReduceToAll on every rank, up to 20000 elements.
 *   overlap   rounds of 7 operations in flight at once (two broadcasts,
 *             three reductions, two gex_Coll_BarrierNB) retired in reverse
 *             order, by Wait, Test loops and WaitSome, with blocking
 *             barriers between rounds.
 *   early     ranks other than 0 start six collectives and tell rank 0
 *             (with a Short Request) before waiting; rank 0 polls until
 *             all have, so their data reaches it before its calls, then
 *             makes the same calls.
 *   zero      nbytes 0 and dt_cnt 0 return GEX_EVENT_INVALID and touch
 *             nothing, then a real reduction still agrees.
 *
 * Misuse (rank 0 errs unless noted; each must be fatal naming the call):
 *   bad-bcast-root, bad-reduce-root, bad-dt, bad-op, atomic-op,
 *   float-bitwise, user-dt-builtin-op, dt-size, zero-dt-size, overflow,
 *   negative-size, null-user-op, null-dst, bad-tm, wait-twice,
 *   coll-in-handler (rank 1, in a handler). */
#include <gasnetex.h>
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api/client_check.h"

static gex_Client_t g_client;
static gex_EP_t g_ep;
static gex_TM_t g_tm;
static gex_Rank_t g_me;
static gex_Rank_t g_n;
static long g_colls; /* collectives checked */

enum { kGuard = 64 };
static const unsigned char kGuardByte = 0xA5;

static void Barrier(void) { gex_Coll_BarrierBlocking(g_tm, 0); }

static void *Alloc(size_t n) {
  void *p = malloc(n == 0 ? 1 : n);
  CHECK(p != NULL, "malloc(%zu)", n);
  return p;
}

/* A buffer of n bytes followed by guard bytes (all guard-filled). */
static unsigned char *Guarded(size_t n) {
  unsigned char *p = (unsigned char *)Alloc(n + kGuard);
  memset(p, kGuardByte, n + kGuard);
  return p;
}

static void CheckGuard(const unsigned char *p, size_t n, const char *what) {
  for (size_t i = 0; i < kGuard; ++i) {
    CHECK(p[n + i] == kGuardByte, "%s: guard byte %zu after %zu overwritten",
          what, i, n);
  }
}

static void CheckUntouched(const unsigned char *p, size_t n, const char *what) {
  for (size_t i = 0; i < n + kGuard; ++i) {
    CHECK(p[i] == kGuardByte, "%s: byte %zu of a buffer it must not touch",
          what, i);
  }
}

static void Finish(const char *mode) {
  Barrier();
  Say("%s ok colls=%ld", mode, g_colls);
  Barrier();
  gasnet_exit(0);
}

/* ------------------------------------------------------------------------ */
/* bcast */

static unsigned char BcastByte(gex_Rank_t root, size_t size, size_t i) {
  return (unsigned char)(i * 131u + root * 17u + size * 7u + 1u);
}

static void CheckBcast(const unsigned char *dst, gex_Rank_t root, size_t size,
                       const char *what) {
  for (size_t i = 0; i < size; ++i) {
    CHECK(dst[i] == BcastByte(root, size, i),
          "%s root %u size %zu: byte %zu is %u, expected %u", what, root, size,
          i, dst[i], BcastByte(root, size, i));
  }
  CheckGuard(dst, size, what);
}

static void Bcast(void) {
  static const size_t kSizes[] = {0, 1, 8, 1000, 65536 + 7, 1 << 20};
  for (size_t s = 0; s < sizeof kSizes / sizeof kSizes[0]; ++s) {
    const size_t size = kSizes[s];
    for (gex_Rank_t root = 0; root < g_n; ++root) {
      unsigned char *dst = Guarded(size);
      unsigned char *src = NULL;
      if (g_me == root) {
        src = Guarded(size);
        for (size_t i = 0; i < size; ++i) src[i] = BcastByte(root, size, i);
      }
      gex_Event_t ev = gex_Coll_BroadcastNB(g_tm, root, dst, src, size, 0);
      if (size == 0) {
        CHECK(ev == GEX_EVENT_INVALID, "0 bytes: not GEX_EVENT_INVALID");
      }
      gex_Event_Wait(ev);
      CheckBcast(dst, root, size, "BroadcastNB");
      if (src != NULL) {
        CheckBcast(src, root, size, "BroadcastNB src afterwards");
      }
      free(dst);
      free(src);
      ++g_colls;
    }
  }
  Finish("bcast");
}

/* ------------------------------------------------------------------------ */
/* Built-in reductions: values, the operators, expected results. */

typedef union {
  int32_t i32;
  uint32_t u32;
  int64_t i64;
  uint64_t u64;
  float flt;
  double dbl;
} Val;

static size_t DtSize(gex_DT_t dt) {
  switch (dt) {
    case GEX_DT_I32:
    case GEX_DT_U32:
    case GEX_DT_FLT:
      return 4;
    default:
      return 8;
  }
}

static int IsInt(gex_DT_t dt) { return dt != GEX_DT_FLT && dt != GEX_DT_DBL; }

static const char *DtName(gex_DT_t dt) {
  switch (dt) {
    case GEX_DT_I32:
      return "I32";
    case GEX_DT_U32:
      return "U32";
    case GEX_DT_I64:
      return "I64";
    case GEX_DT_U64:
      return "U64";
    case GEX_DT_FLT:
      return "FLT";
    default:
      return "DBL";
  }
}

static const char *OpName(gex_OP_t op) {
  switch (op) {
    case GEX_OP_ADD:
      return "ADD";
    case GEX_OP_MULT:
      return "MULT";
    case GEX_OP_MIN:
      return "MIN";
    case GEX_OP_MAX:
      return "MAX";
    case GEX_OP_AND:
      return "AND";
    case GEX_OP_OR:
      return "OR";
    default:
      return "XOR";
  }
}

/* A signed number (as int64) or a double, by op, for rank r element i. */
static int64_t SignedGen(gex_OP_t op, gex_Rank_t r, size_t i) {
  static const int64_t kFactors[] = {-3, -2, -1, 1, 2, 3};
  switch (op) {
    case GEX_OP_ADD:
      return (int64_t)((r * 37u + i * 11u) % 2001u) - 1000;
    case GEX_OP_MULT:
      return kFactors[(r + i) % 6];
    default: /* MIN, MAX */
      return (int64_t)((r * 7919u + i * 104729u) % 20001u) - 10000;
  }
}

static uint64_t BitsGen(gex_OP_t op, gex_Rank_t r, size_t i, unsigned bits) {
  const unsigned k = (unsigned)((r * 3u + i) % bits);
  switch (op) {
    case GEX_OP_AND:
      return ~((uint64_t)1 << k);
    case GEX_OP_OR:
      return (uint64_t)1 << k;
    case GEX_OP_XOR:
      return (r + 1) * UINT64_C(0x9E3779B97F4A7C15) ^
             (i + 7) * UINT64_C(0xC2B2AE3D27D4EB4F);
    case GEX_OP_MULT:
      return (uint64_t)((r + i) % 5 + 1) * UINT64_C(0x10000001);
    case GEX_OP_ADD:
      return (r + 1) * UINT64_C(0x8000000080000001) + i;
    default: /* MIN, MAX: big unsigned values */
      return (r * UINT64_C(2654435761) + i * UINT64_C(40503)) *
             UINT64_C(0x100000001);
  }
}

static double FloatGen(gex_OP_t op, gex_Rank_t r, size_t i) {
  static const double kFactors[] = {-2.0, -1.0, 0.5, 1.0, 2.0, 0.25};
  switch (op) {
    case GEX_OP_ADD:
      return (double)SignedGen(op, r, i) / 4.0;
    case GEX_OP_MULT:
      return kFactors[(r + i) % 6];
    default:
      return (double)SignedGen(op, r, i) * 0.5;
  }
}

static Val Gen(gex_DT_t dt, gex_OP_t op, gex_Rank_t r, size_t i) {
  Val v;
  memset(&v, 0, sizeof v);
  const int bitwise = op == GEX_OP_AND || op == GEX_OP_OR || op == GEX_OP_XOR;
  switch (dt) {
    case GEX_DT_I32:
      v.i32 = bitwise ? (int32_t)(uint32_t)BitsGen(op, r, i, 32)
                      : (int32_t)SignedGen(op, r, i);
      break;
    case GEX_DT_I64:
      v.i64 = bitwise ? (int64_t)BitsGen(op, r, i, 64) : SignedGen(op, r, i);
      break;
    case GEX_DT_U32:
      v.u32 = (uint32_t)BitsGen(op, r, i, 32);
      break;
    case GEX_DT_U64:
      v.u64 = BitsGen(op, r, i, 64);
      break;
    case GEX_DT_FLT:
      v.flt = (float)FloatGen(op, r, i);
      break;
    default:
      v.dbl = FloatGen(op, r, i);
      break;
  }
  return v;
}

#define APPLY(field, a, b)                             \
  switch (op) {                                        \
    case GEX_OP_ADD:                                   \
      r.field = a.field + b.field;                     \
      break;                                           \
    case GEX_OP_MULT:                                  \
      r.field = a.field * b.field;                     \
      break;                                           \
    case GEX_OP_MIN:                                   \
      r.field = b.field < a.field ? b.field : a.field; \
      break;                                           \
    default:                                           \
      r.field = b.field > a.field ? b.field : a.field; \
      break;                                           \
  }
#define APPLY_BITS(field, a, b)    \
  switch (op) {                    \
    case GEX_OP_AND:               \
      r.field = a.field & b.field; \
      break;                       \
    case GEX_OP_OR:                \
      r.field = a.field | b.field; \
      break;                       \
    case GEX_OP_XOR:               \
      r.field = a.field ^ b.field; \
      break;                       \
    default:                       \
      APPLY(field, a, b);          \
  }

static Val Apply(gex_DT_t dt, gex_OP_t op, Val a, Val b) {
  Val r;
  memset(&r, 0, sizeof r);
  switch (dt) {
    case GEX_DT_I32:
      APPLY_BITS(i32, a, b);
      break;
    case GEX_DT_U32:
      APPLY_BITS(u32, a, b);
      break;
    case GEX_DT_I64:
      APPLY_BITS(i64, a, b);
      break;
    case GEX_DT_U64:
      APPLY_BITS(u64, a, b);
      break;
    case GEX_DT_FLT:
      APPLY(flt, a, b);
      break;
    default:
      APPLY(dbl, a, b);
      break;
  }
  return r;
}

static Val Expected(gex_DT_t dt, gex_OP_t op, size_t i) {
  Val acc = Gen(dt, op, 0, i);
  for (gex_Rank_t r = 1; r < g_n; ++r)
    acc = Apply(dt, op, acc, Gen(dt, op, r, i));
  return acc;
}

/* Fills `buf` with this rank's `cnt` operands. */
static void FillSrc(unsigned char *buf, gex_DT_t dt, gex_OP_t op, size_t cnt) {
  const size_t sz = DtSize(dt);
  for (size_t i = 0; i < cnt; ++i) {
    const Val v = Gen(dt, op, g_me, i);
    memcpy(buf + i * sz, &v, sz);
  }
}

static void CheckSrc(const unsigned char *buf, gex_DT_t dt, gex_OP_t op,
                     size_t cnt, const char *what) {
  const size_t sz = DtSize(dt);
  for (size_t i = 0; i < cnt; ++i) {
    const Val v = Gen(dt, op, g_me, i);
    CHECK(memcmp(buf + i * sz, &v, sz) == 0,
          "%s %s %s: src element %zu changed", what, DtName(dt), OpName(op), i);
  }
}

static void CheckResult(const unsigned char *buf, gex_DT_t dt, gex_OP_t op,
                        size_t cnt, const char *what) {
  const size_t sz = DtSize(dt);
  for (size_t i = 0; i < cnt; ++i) {
    const Val want = Expected(dt, op, i);
    Val got;
    memset(&got, 0, sizeof got);
    memcpy(&got, buf + i * sz, sz);
    CHECK(memcmp(&got, &want, sz) == 0,
          "%s %s %s cnt %zu: element %zu is 0x%" PRIx64
          " (%g), expected 0x%" PRIx64 " (%g)",
          what, DtName(dt), OpName(op), cnt, i, got.u64,
          dt == GEX_DT_FLT ? (double)got.flt : got.dbl, want.u64,
          dt == GEX_DT_FLT ? (double)want.flt : want.dbl);
  }
  CheckGuard(buf, cnt * sz, what);
}

/* ReduceToOne to every root and ReduceToAll, all in flight at once (and,
 * with `big`, only ReduceToAll and ReduceToOne to root n-1). */
static void ReduceGroup(gex_DT_t dt, gex_OP_t op, size_t cnt, int big) {
  const size_t sz = DtSize(dt);
  const size_t nbytes = cnt * sz;
  const gex_Rank_t first_root = big ? g_n - 1 : 0;
  const size_t nev = g_n - first_root + 1;
  gex_Event_t *evs = (gex_Event_t *)Alloc(nev * sizeof *evs);
  unsigned char **srcs = (unsigned char **)Alloc(nev * sizeof *srcs);
  unsigned char **dsts = (unsigned char **)Alloc(nev * sizeof *dsts);
  for (size_t e = 0; e < nev; ++e) {
    srcs[e] = Guarded(nbytes);
    FillSrc(srcs[e], dt, op, cnt);
    dsts[e] = Guarded(nbytes);
  }
  for (size_t e = 0; e + 1 < nev; ++e) {
    const gex_Rank_t root = first_root + (gex_Rank_t)e;
    /* Odd non-roots pass dst NULL (ignored). */
    void *dst = g_me != root && g_me % 2 == 1 ? NULL : dsts[e];
    evs[e] = gex_Coll_ReduceToOneNB(g_tm, root, dst, srcs[e], dt, sz, cnt, op,
                                    NULL, NULL, 0);
  }
  evs[nev - 1] = gex_Coll_ReduceToAllNB(g_tm, dsts[nev - 1], srcs[nev - 1], dt,
                                        sz, cnt, op, NULL, NULL, 0);
  gex_Event_WaitAll(evs, nev, 0);
  for (size_t e = 0; e < nev; ++e) {
    const int all = e + 1 == nev;
    const gex_Rank_t root = first_root + (gex_Rank_t)e;
    const char *what = all ? "ReduceToAllNB" : "ReduceToOneNB";
    if (all || g_me == root) {
      CheckResult(dsts[e], dt, op, cnt, what);
    } else {
      CheckUntouched(dsts[e], nbytes, "ReduceToOneNB non-root dst");
    }
    CheckSrc(srcs[e], dt, op, cnt, what);
    CheckGuard(srcs[e], nbytes, what);
    free(srcs[e]);
    free(dsts[e]);
    ++g_colls;
  }
  free(evs);
  free(srcs);
  free(dsts);
}

static const gex_DT_t kTypes[] = {GEX_DT_I32, GEX_DT_U32, GEX_DT_I64,
                                  GEX_DT_U64, GEX_DT_FLT, GEX_DT_DBL};
static const gex_OP_t kOps[] = {GEX_OP_ADD, GEX_OP_MULT, GEX_OP_MIN, GEX_OP_MAX,
                                GEX_OP_AND, GEX_OP_OR,   GEX_OP_XOR};

static void Reduce(void) {
  for (size_t t = 0; t < sizeof kTypes / sizeof kTypes[0]; ++t) {
    for (size_t o = 0; o < sizeof kOps / sizeof kOps[0]; ++o) {
      const gex_DT_t dt = kTypes[t];
      const gex_OP_t op = kOps[o];
      if (!IsInt(dt) &&
          (op == GEX_OP_AND || op == GEX_OP_OR || op == GEX_OP_XOR)) {
        continue;
      }
      ReduceGroup(dt, op, 1, 0);
      ReduceGroup(dt, op, 37, 0);
      ReduceGroup(dt, op, 20000, 1);
    }
  }
  Finish("reduce");
}

/* ------------------------------------------------------------------------ */
/* user */

typedef struct {
  int32_t sum;
  int32_t max;
  uint32_t bits;
} Triple;

typedef struct {
  uint32_t magic;
  int64_t modulus;
  long calls;
} UserData;

static UserData g_user_data = {0x75736572u, 1000003, 0};

static void TripleOp(const void *arg1, void *arg2_and_out, size_t count,
                     const void *cdata) {
  CHECK(cdata == &g_user_data, "TripleOp: cdata %p, expected %p", cdata,
        (const void *)&g_user_data);
  const Triple *x = (const Triple *)arg1;
  Triple *y = (Triple *)arg2_and_out;
  CHECK(count > 0, "TripleOp: count 0");
  for (size_t i = 0; i < count; ++i) {
    y[i].sum = x[i].sum + y[i].sum;
    y[i].max = x[i].max > y[i].max ? x[i].max : y[i].max;
    y[i].bits = x[i].bits ^ y[i].bits;
  }
  ++g_user_data.calls;
}

static Triple TripleGen(gex_Rank_t r, size_t i) {
  Triple t;
  t.sum = (int32_t)(r * 5 + i) - 20;
  t.max = (int32_t)((r * 7919u + i * 31u) % 1000u) - 500;
  t.bits = (uint32_t)((r + 1) * 0x9E3779B1u) ^ (uint32_t)i;
  return t;
}

static void ModAdd(const void *arg1, void *arg2_and_out, size_t count,
                   const void *cdata) {
  const UserData *d = (const UserData *)cdata;
  CHECK(d == &g_user_data && d->magic == 0x75736572u, "ModAdd: cdata");
  const int64_t *x = (const int64_t *)arg1;
  int64_t *y = (int64_t *)arg2_and_out;
  for (size_t i = 0; i < count; ++i) y[i] = (x[i] + y[i]) % d->modulus;
}

enum { kBigElement = 70000 };

static void ByteAdd(const void *arg1, void *arg2_and_out, size_t count,
                    const void *cdata) {
  CHECK(cdata == NULL, "ByteAdd: cdata %p, expected NULL", cdata);
  const unsigned char *x = (const unsigned char *)arg1;
  unsigned char *y = (unsigned char *)arg2_and_out;
  for (size_t i = 0; i < count * kBigElement; ++i) {
    y[i] = (unsigned char)(x[i] + y[i]);
  }
}

/* One user reduction to every root and to all: `gen` fills element i of
 * rank r, `want` element i of the result. */
typedef void (*GenFn)(gex_Rank_t r, size_t i, void *out);

static void UserGroup(gex_DT_t dt, size_t sz, size_t cnt, gex_OP_t op,
                      gex_Coll_ReduceFn_t fn, void *cdata, GenFn gen,
                      GenFn want, const char *what) {
  const size_t nbytes = sz * cnt;
  unsigned char *expect = (unsigned char *)Alloc(nbytes);
  for (size_t i = 0; i < cnt; ++i) want(0, i, expect + i * sz);
  for (gex_Rank_t e = 0; e <= g_n; ++e) {
    const int all = e == g_n;
    unsigned char *src = Guarded(nbytes);
    unsigned char *dst = Guarded(nbytes);
    for (size_t i = 0; i < cnt; ++i) gen(g_me, i, src + i * sz);
    gex_Event_t ev = all ? gex_Coll_ReduceToAllNB(g_tm, dst, src, dt, sz, cnt,
                                                  op, fn, cdata, 0)
                         : gex_Coll_ReduceToOneNB(g_tm, e, dst, src, dt, sz,
                                                  cnt, op, fn, cdata, 0);
    if (e % 2 == 0) {
      gex_Event_Wait(ev);
    } else {
      while (gex_Event_Test(ev) != GASNET_OK) sched_yield();
    }
    if (all || g_me == e) {
      for (size_t i = 0; i < cnt; ++i) {
        CHECK(memcmp(dst + i * sz, expect + i * sz, sz) == 0,
              "%s %s root %u: element %zu differs", what,
              all ? "ReduceToAllNB" : "ReduceToOneNB", e, i);
      }
      CheckGuard(dst, nbytes, what);
    } else {
      CheckUntouched(dst, nbytes, what);
    }
    for (size_t i = 0; i < cnt; ++i) {
      unsigned char mine[kBigElement];
      gen(g_me, i, mine);
      CHECK(memcmp(src + i * sz, mine, sz) == 0, "%s: src changed", what);
    }
    free(src);
    free(dst);
    ++g_colls;
  }
  free(expect);
}

static void TripleSrc(gex_Rank_t r, size_t i, void *out) {
  const Triple t = TripleGen(r, i);
  memcpy(out, &t, sizeof t);
}
static void TripleWant(gex_Rank_t r, size_t i, void *out) {
  (void)r;
  Triple acc = TripleGen(0, i);
  for (gex_Rank_t k = 1; k < g_n; ++k) {
    const Triple t = TripleGen(k, i);
    acc.sum += t.sum;
    acc.max = t.max > acc.max ? t.max : acc.max;
    acc.bits ^= t.bits;
  }
  memcpy(out, &acc, sizeof acc);
}

static void ModSrc(gex_Rank_t r, size_t i, void *out) {
  const int64_t v = (int64_t)((r + 1) * 999983u + i * 7u) % 1000003;
  memcpy(out, &v, sizeof v);
}
static void ModWant(gex_Rank_t r, size_t i, void *out) {
  int64_t acc = 0;
  for (gex_Rank_t k = 0; k < g_n; ++k) {
    int64_t v;
    ModSrc(k, i, &v);
    acc = (acc + v) % 1000003;
  }
  (void)r;
  memcpy(out, &acc, sizeof acc);
}

static void BigSrc(gex_Rank_t r, size_t i, void *out) {
  unsigned char *p = (unsigned char *)out;
  for (size_t b = 0; b < kBigElement; ++b) {
    p[b] = (unsigned char)(r * 29u + b * 3u + i);
  }
}
static void BigWant(gex_Rank_t r, size_t i, void *out) {
  unsigned char *p = (unsigned char *)out;
  (void)r;
  for (size_t b = 0; b < kBigElement; ++b) {
    unsigned s = 0;
    for (gex_Rank_t k = 0; k < g_n; ++k) s += k * 29u + b * 3u + i;
    p[b] = (unsigned char)s;
  }
}

static void User(void) {
  UserGroup(GEX_DT_USER, sizeof(Triple), 1, GEX_OP_USER, TripleOp, &g_user_data,
            TripleSrc, TripleWant, "triple 1");
  UserGroup(GEX_DT_USER, sizeof(Triple), 1000, GEX_OP_USER, TripleOp,
            &g_user_data, TripleSrc, TripleWant, "triple 1000");
  UserGroup(GEX_DT_I64, 8, 5000, GEX_OP_USER, ModAdd, &g_user_data, ModSrc,
            ModWant, "modular I64");
  UserGroup(GEX_DT_USER, kBigElement, 2, GEX_OP_USER, ByteAdd, NULL, BigSrc,
            BigWant, "70000-byte elements");
  /* Any rank with a child calls the operator: in a job of 2+ ranks some
   * rank did; gather that by a reduction. */
  int64_t called = g_user_data.calls > 0, any = 0;
  gex_Event_Wait(gex_Coll_ReduceToAllNB(g_tm, &any, &called, GEX_DT_I64, 8, 1,
                                        GEX_OP_MAX, NULL, NULL, 0));
  CHECK(g_n == 1 || any == 1, "no rank called the user operator");
  Finish("user");
}

/* ------------------------------------------------------------------------ */
/* nc */

typedef struct {
  uint32_t m[4]; /* row-major 2x2 */
} Mat;

static Mat MatMul(Mat a, Mat b) {
  Mat r;
  r.m[0] = a.m[0] * b.m[0] + a.m[1] * b.m[2];
  r.m[1] = a.m[0] * b.m[1] + a.m[1] * b.m[3];
  r.m[2] = a.m[2] * b.m[0] + a.m[3] * b.m[2];
  r.m[3] = a.m[2] * b.m[1] + a.m[3] * b.m[3];
  return r;
}

static Mat MatGen(gex_Rank_t r, size_t i) {
  Mat a;
  a.m[0] = (uint32_t)(r * 3 + i + 1);
  a.m[1] = 1;
  a.m[2] = 1;
  a.m[3] = 0;
  return a;
}

static void MatOp(const void *arg1, void *arg2_and_out, size_t count,
                  const void *cdata) {
  CHECK(cdata == &g_user_data, "MatOp: cdata");
  const Mat *x = (const Mat *)arg1;
  Mat *y = (Mat *)arg2_and_out;
  for (size_t i = 0; i < count; ++i) y[i] = MatMul(x[i], y[i]);
}

static void MatSrc(gex_Rank_t r, size_t i, void *out) {
  const Mat a = MatGen(r, i);
  memcpy(out, &a, sizeof a);
}
static void MatWant(gex_Rank_t r, size_t i, void *out) {
  Mat acc = MatGen(0, i);
  Mat rev = MatGen(g_n - 1, i);
  for (gex_Rank_t k = 1; k < g_n; ++k) {
    acc = MatMul(acc, MatGen(k, i));
    rev = MatMul(rev, MatGen(g_n - 1 - k, i));
  }
  CHECK(g_n == 1 || memcmp(&acc, &rev, sizeof acc) != 0,
        "the test's matrices commute");
  (void)r;
  memcpy(out, &acc, sizeof acc);
}

enum { kStr = 24 };

static void Concat(const void *arg1, void *arg2_and_out, size_t count,
                   const void *cdata) {
  CHECK(cdata == NULL, "Concat: cdata");
  const char *x = (const char *)arg1;
  char *y = (char *)arg2_and_out;
  for (size_t i = 0; i < count; ++i) {
    char joined[2 * kStr];
    memset(joined, 0, sizeof joined);
    snprintf(joined, sizeof joined, "%s%s", x + i * kStr, y + i * kStr);
    memcpy(y + i * kStr, joined, kStr - 1);
    y[i * kStr + kStr - 1] = '\0';
  }
}

static void StrSrc(gex_Rank_t r, size_t i, void *out) {
  char *s = (char *)out;
  memset(s, 0, kStr);
  s[0] = (char)((i % 2 == 0 ? 'A' : 'a') + r);
}
static void StrWant(gex_Rank_t r, size_t i, void *out) {
  char *s = (char *)out;
  (void)r;
  memset(s, 0, kStr);
  for (gex_Rank_t k = 0; k < g_n; ++k) {
    s[k] = (char)((i % 2 == 0 ? 'A' : 'a') + k);
  }
}

static void Left(const void *arg1, void *arg2_and_out, size_t count,
                 const void *cdata) {
  (void)cdata;
  memcpy(arg2_and_out, arg1, count * sizeof(int32_t));
}
static void Right(const void *arg1, void *arg2_and_out, size_t count,
                  const void *cdata) {
  (void)arg1;
  (void)arg2_and_out;
  (void)count;
  (void)cdata;
}
static void RankSrc(gex_Rank_t r, size_t i, void *out) {
  const int32_t v = (int32_t)(r * 1000 + i) - 3000;
  memcpy(out, &v, sizeof v);
}
static void FirstWant(gex_Rank_t r, size_t i, void *out) {
  (void)r;
  RankSrc(0, i, out);
}
static void LastWant(gex_Rank_t r, size_t i, void *out) {
  (void)r;
  RankSrc(g_n - 1, i, out);
}

static void Nc(void) {
  UserGroup(GEX_DT_USER, sizeof(Mat), 3, GEX_OP_USER_NC, MatOp, &g_user_data,
            MatSrc, MatWant, "matrix product");
  UserGroup(GEX_DT_USER, sizeof(Mat), 3000, GEX_OP_USER_NC, MatOp, &g_user_data,
            MatSrc, MatWant, "matrix product 3000");
  UserGroup(GEX_DT_USER, kStr, 2, GEX_OP_USER_NC, Concat, NULL, StrSrc, StrWant,
            "concatenation");
  UserGroup(GEX_DT_I32, 4, 9, GEX_OP_USER_NC, Left, NULL, RankSrc, FirstWant,
            "left projection");
  UserGroup(GEX_DT_I32, 4, 9, GEX_OP_USER_NC, Right, NULL, RankSrc, LastWant,
            "right projection");
  Finish("nc");
}

/* ------------------------------------------------------------------------ */
/* inplace */

static void Inplace(void) {
  static const size_t kSizes[] = {1000, 65536 + 7};
  for (size_t s = 0; s < 2; ++s) {
    const size_t size = kSizes[s];
    for (gex_Rank_t root = 0; root < g_n; ++root) {
      unsigned char *buf = Guarded(size);
      if (g_me == root) {
        for (size_t i = 0; i < size; ++i) buf[i] = BcastByte(root, size, i);
      }
      gex_Event_Wait(gex_Coll_BroadcastNB(g_tm, root, buf,
                                          g_me == root ? buf : NULL, size, 0));
      CheckBcast(buf, root, size, "in-place BroadcastNB");
      free(buf);
      ++g_colls;
    }
  }
  static const size_t kCounts[] = {1, 20000};
  for (size_t c = 0; c < 2; ++c) {
    const size_t cnt = kCounts[c];
    for (size_t t = 0; t < sizeof kTypes / sizeof kTypes[0]; ++t) {
      const gex_DT_t dt = kTypes[t];
      const gex_OP_t op = IsInt(dt) ? GEX_OP_XOR : GEX_OP_ADD;
      const size_t sz = DtSize(dt);
      unsigned char *buf = Guarded(cnt * sz);
      FillSrc(buf, dt, op, cnt);
      gex_Event_Wait(gex_Coll_ReduceToAllNB(g_tm, buf, buf, dt, sz, cnt, op,
                                            NULL, NULL, 0));
      CheckResult(buf, dt, op, cnt, "in-place ReduceToAllNB");
      free(buf);
      ++g_colls;
      for (gex_Rank_t root = 0; root < g_n; ++root) {
        unsigned char *b = Guarded(cnt * sz);
        FillSrc(b, dt, GEX_OP_MAX, cnt);
        gex_Event_Wait(
            gex_Coll_ReduceToOneNB(g_tm, root, g_me == root ? b : NULL, b, dt,
                                   sz, cnt, GEX_OP_MAX, NULL, NULL, 0));
        if (g_me == root) {
          CheckResult(b, dt, GEX_OP_MAX, cnt, "in-place ReduceToOneNB");
        } else {
          CheckSrc(b, dt, GEX_OP_MAX, cnt, "ReduceToOneNB non-root");
        }
        free(b);
        ++g_colls;
      }
    }
  }
  /* Non-commutative, in place everywhere. */
  char *s = (char *)Guarded(2 * kStr);
  StrSrc(g_me, 0, s);
  StrSrc(g_me, 1, s + kStr);
  gex_Event_Wait(gex_Coll_ReduceToAllNB(g_tm, s, s, GEX_DT_USER, kStr, 2,
                                        GEX_OP_USER_NC, Concat, NULL, 0));
  for (size_t i = 0; i < 2; ++i) {
    char want[kStr];
    StrWant(0, i, want);
    CHECK(memcmp(s + i * kStr, want, kStr) == 0,
          "in-place concatenation: \"%s\", expected \"%s\"", s + i * kStr,
          want);
  }
  free(s);
  ++g_colls;
  Finish("inplace");
}

/* ------------------------------------------------------------------------ */
/* overlap */

static void Overlap(void) {
  enum { kInFlight = 7, kRounds = 6 };
  const size_t big = (1 << 20) + 3, small = 999;
  const size_t cnt = 1000;
  for (int round = 0; round < kRounds; ++round) {
    const gex_Rank_t root_a = (gex_Rank_t)round % g_n;
    const gex_Rank_t root_b = g_n - 1 - (gex_Rank_t)round % g_n;
    const gex_Rank_t root_c = (gex_Rank_t)(round + 1) % g_n;
    unsigned char *ba = Guarded(big), *bb = Guarded(small);
    unsigned char *srca = NULL, *srcb = NULL;
    if (g_me == root_a) {
      srca = Guarded(big);
      for (size_t i = 0; i < big; ++i) srca[i] = BcastByte(root_a, big, i);
    }
    if (g_me == root_b) {
      srcb = Guarded(small);
      for (size_t i = 0; i < small; ++i) srcb[i] = BcastByte(root_b, small, i);
    }
    unsigned char *sum_src = Guarded(cnt * 8), *sum_dst = Guarded(cnt * 8);
    FillSrc(sum_src, GEX_DT_I64, GEX_OP_ADD, cnt);
    unsigned char *max_src = Guarded(7 * 4), *max_dst = Guarded(7 * 4);
    FillSrc(max_src, GEX_DT_U32, GEX_OP_MAX, 7);
    char *str_src = (char *)Guarded(kStr), *str_dst = (char *)Guarded(kStr);
    StrSrc(g_me, 0, str_src);

    gex_Event_t evs[kInFlight];
    evs[0] = gex_Coll_BroadcastNB(g_tm, root_a, ba, srca, big, 0);
    evs[1] = gex_Coll_BarrierNB(g_tm, 0);
    evs[2] = gex_Coll_ReduceToAllNB(g_tm, sum_dst, sum_src, GEX_DT_I64, 8, cnt,
                                    GEX_OP_ADD, NULL, NULL, 0);
    evs[3] = gex_Coll_ReduceToOneNB(g_tm, root_c, max_dst, max_src, GEX_DT_U32,
                                    4, 7, GEX_OP_MAX, NULL, NULL, 0);
    evs[4] = gex_Coll_ReduceToAllNB(g_tm, str_dst, str_src, GEX_DT_USER, kStr,
                                    1, GEX_OP_USER_NC, Concat, NULL, 0);
    evs[5] = gex_Coll_BroadcastNB(g_tm, root_b, bb, srcb, small, 0);
    evs[6] = gex_Coll_BarrierNB(g_tm, 0);
    if (round % 3 == 0) {
      for (int e = kInFlight - 1; e >= 0; --e) gex_Event_Wait(evs[e]);
    } else if (round % 3 == 1) {
      for (int e = kInFlight - 1; e >= 0; --e) {
        while (gex_Event_Test(evs[e]) != GASNET_OK) sched_yield();
      }
    } else {
      for (int left = kInFlight; left > 0; --left) {
        gex_Event_WaitSome(evs, kInFlight, 0);
        int invalid = 0;
        for (int e = 0; e < kInFlight; ++e) {
          invalid += evs[e] == GEX_EVENT_INVALID;
        }
        CHECK(invalid >= kInFlight - left + 1, "WaitSome retired nothing");
        if (invalid == kInFlight) break;
      }
    }
    CheckBcast(ba, root_a, big, "overlapped BroadcastNB (big)");
    CheckBcast(bb, root_b, small, "overlapped BroadcastNB (small)");
    CheckResult(sum_dst, GEX_DT_I64, GEX_OP_ADD, cnt, "overlapped ReduceToAll");
    if (g_me == root_c) {
      CheckResult(max_dst, GEX_DT_U32, GEX_OP_MAX, 7, "overlapped ReduceToOne");
    }
    char want[kStr];
    StrWant(0, 0, want);
    CHECK(memcmp(str_dst, want, kStr) == 0,
          "overlapped concatenation: \"%s\", expected \"%s\"", str_dst, want);
    free(ba);
    free(bb);
    free(srca);
    free(srcb);
    free(sum_src);
    free(sum_dst);
    free(max_src);
    free(max_dst);
    free(str_src);
    free(str_dst);
    g_colls += 5;
    Barrier();
  }
  Finish("overlap");
}

/* ------------------------------------------------------------------------ */
/* early */

/* Index 202 (a Short Request to rank 0): its sender has started its
 * collectives. */
static volatile uint64_t g_early_started;
static void EarlyStarted(gex_Token_t token) {
  (void)token;
  g_early_started = g_early_started + 1;
}

static void Early(void) {
  gex_AM_Entry_t entry = {202,
                          (gex_AM_Fn_t)EarlyStarted,
                          GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST,
                          0,
                          NULL,
                          "early started"};
  CHECK(gex_EP_RegisterHandlers(g_ep, &entry, 1) == GASNET_OK, "register");
  Barrier();

  const gex_Rank_t root = 1 % g_n;
  const size_t small = 1000, big = 200000, cnt = 3000;
  unsigned char *b1 = Guarded(small), *b2 = Guarded(big);
  unsigned char *s1 = NULL, *s2 = NULL;
  if (g_me == root) {
    s1 = Guarded(small);
    s2 = Guarded(big);
    for (size_t i = 0; i < small; ++i) s1[i] = BcastByte(root, small, i);
    for (size_t i = 0; i < big; ++i) s2[i] = BcastByte(root, big, i);
  }
  unsigned char *sum_src = Guarded(cnt * 4), *sum_dst = Guarded(cnt * 4);
  FillSrc(sum_src, GEX_DT_I32, GEX_OP_ADD, cnt);
  unsigned char *min_src = Guarded(cnt * 8), *min_dst = Guarded(cnt * 8);
  FillSrc(min_src, GEX_DT_DBL, GEX_OP_MIN, cnt);
  char *str_src = (char *)Guarded(kStr), *str_dst = (char *)Guarded(kStr);
  StrSrc(g_me, 0, str_src);
  unsigned char *xor_src = Guarded(cnt * 8), *xor_dst = Guarded(cnt * 8);
  FillSrc(xor_src, GEX_DT_U64, GEX_OP_XOR, cnt);

  if (g_me == 0) {
    /* Everyone else has started (and so sent what it could). */
    GASNET_BLOCKUNTIL(g_early_started == (uint64_t)(g_n - 1));
  }
  gex_Event_t evs[6];
  evs[0] = gex_Coll_BroadcastNB(g_tm, root, b1, s1, small, 0);
  evs[1] = gex_Coll_ReduceToAllNB(g_tm, sum_dst, sum_src, GEX_DT_I32, 4, cnt,
                                  GEX_OP_ADD, NULL, NULL, 0);
  evs[2] = gex_Coll_ReduceToOneNB(g_tm, 0, min_dst, min_src, GEX_DT_DBL, 8, cnt,
                                  GEX_OP_MIN, NULL, NULL, 0);
  evs[3] = gex_Coll_BroadcastNB(g_tm, root, b2, s2, big, 0);
  evs[4] = gex_Coll_ReduceToAllNB(g_tm, str_dst, str_src, GEX_DT_USER, kStr, 1,
                                  GEX_OP_USER_NC, Concat, NULL, 0);
  evs[5] = gex_Coll_ReduceToOneNB(g_tm, root, xor_dst, xor_src, GEX_DT_U64, 8,
                                  cnt, GEX_OP_XOR, NULL, NULL, 0);
  if (g_me != 0) {
    CHECK(gex_AM_RequestShort0(g_tm, 0, 202, 0) == GASNET_OK,
          "started request to rank 0");
  }
  for (int e = 5; e >= 0; --e) gex_Event_Wait(evs[e]);

  CheckBcast(b1, root, small, "early BroadcastNB");
  CheckBcast(b2, root, big, "early BroadcastNB (big)");
  CheckResult(sum_dst, GEX_DT_I32, GEX_OP_ADD, cnt, "early ReduceToAll");
  if (g_me == 0) {
    CheckResult(min_dst, GEX_DT_DBL, GEX_OP_MIN, cnt, "early ReduceToOne");
  }
  if (g_me == root) {
    CheckResult(xor_dst, GEX_DT_U64, GEX_OP_XOR, cnt, "early ReduceToOne");
  }
  char want[kStr];
  StrWant(0, 0, want);
  CHECK(memcmp(str_dst, want, kStr) == 0, "early concatenation: \"%s\"",
        str_dst);
  g_colls += 6;
  Finish("early");
}

/* ------------------------------------------------------------------------ */
/* zero */

static void Zero(void) {
  unsigned char *dst = Guarded(0);
  unsigned char src[8] = {0};
  for (gex_Rank_t root = 0; root < g_n; ++root) {
    CHECK(gex_Coll_BroadcastNB(g_tm, root, dst, src, 0, 0) == GEX_EVENT_INVALID,
          "BroadcastNB of 0 bytes");
    for (size_t t = 0; t < sizeof kTypes / sizeof kTypes[0]; ++t) {
      const gex_DT_t dt = kTypes[t];
      CHECK(gex_Coll_ReduceToOneNB(g_tm, root, dst, src, dt, DtSize(dt), 0,
                                   GEX_OP_ADD, NULL, NULL,
                                   0) == GEX_EVENT_INVALID,
            "ReduceToOneNB of 0 elements");
      CHECK(
          gex_Coll_ReduceToAllNB(g_tm, dst, src, dt, DtSize(dt), 0, GEX_OP_MIN,
                                 NULL, NULL, 0) == GEX_EVENT_INVALID,
          "ReduceToAllNB of 0 elements");
      g_colls += 2;
    }
    CHECK(gex_Coll_ReduceToAllNB(g_tm, NULL, NULL, GEX_DT_USER, 3, 0,
                                 GEX_OP_USER_NC, Concat, NULL,
                                 0) == GEX_EVENT_INVALID,
          "ReduceToAllNB of 0 user elements");
    ++g_colls;
  }
  CheckUntouched(dst, 0, "0-byte collectives");
  free(dst);
  /* The ranks still agree on what comes next. */
  int64_t mine = (int64_t)g_me - 5, sum = 0;
  gex_Event_Wait(gex_Coll_ReduceToAllNB(g_tm, &sum, &mine, GEX_DT_I64, 8, 1,
                                        GEX_OP_ADD, NULL, NULL, 0));
  const int64_t n = (int64_t)g_n;
  CHECK(sum == n * (n - 1) / 2 - 5 * n, "sum %" PRId64, sum);
  ++g_colls;
  Finish("zero");
}

/* ------------------------------------------------------------------------ */
/* Misuse. */

static volatile int g_handler_survived;

/* Index 200 (a Request): the mistake; were it survived, it replies to 201. */
static void InHandler(gex_Token_t token) {
  int32_t x = 1, y = 0;
  gex_Coll_ReduceToAllNB(g_tm, &y, &x, GEX_DT_I32, 4, 1, GEX_OP_ADD, NULL, NULL,
                         0);
  gex_AM_ReplyShort0(token, 201, 0);
}
static void SurvivedReply(gex_Token_t token) {
  (void)token;
  g_handler_survived = 1;
}

static void Misuse(const char *mode) {
  gex_AM_Entry_t entries[2] = {
      {200, (gex_AM_Fn_t)InHandler, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0,
       NULL, "coll in handler"},
      {201, (gex_AM_Fn_t)SurvivedReply, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY,
       0, NULL, "coll in handler survived"}};
  CHECK(gex_EP_RegisterHandlers(g_ep, entries, 2) == GASNET_OK, "register");
  Barrier();
  const gex_Rank_t peer = g_n > 1 ? 1 : 0;
  int64_t a[4] = {1, 2, 3, 4}, b[4] = {0};
  if (g_me == 0) {
    if (strcmp(mode, "bad-bcast-root") == 0) {
      gex_Coll_BroadcastNB(g_tm, g_n, b, a, 8, 0);
    } else if (strcmp(mode, "bad-reduce-root") == 0) {
      gex_Coll_ReduceToOneNB(g_tm, g_n + 5, b, a, GEX_DT_I64, 8, 1, GEX_OP_ADD,
                             NULL, NULL, 0);
    } else if (strcmp(mode, "bad-dt") == 0) {
      gex_Coll_ReduceToAllNB(g_tm, b, a, GEX_DT_I32 | GEX_DT_U32, 4, 1,
                             GEX_OP_ADD, NULL, NULL, 0);
    } else if (strcmp(mode, "bad-op") == 0) {
      gex_Coll_ReduceToAllNB(g_tm, b, a, GEX_DT_I64, 8, 1, (gex_OP_t)0, NULL,
                             NULL, 0);
    } else if (strcmp(mode, "atomic-op") == 0) {
      gex_Coll_ReduceToOneNB(g_tm, 0, b, a, GEX_DT_I64, 8, 1, GEX_OP_FADD, NULL,
                             NULL, 0);
    } else if (strcmp(mode, "float-bitwise") == 0) {
      gex_Coll_ReduceToAllNB(g_tm, b, a, GEX_DT_DBL, 8, 1, GEX_OP_XOR, NULL,
                             NULL, 0);
    } else if (strcmp(mode, "user-dt-builtin-op") == 0) {
      gex_Coll_ReduceToAllNB(g_tm, b, a, GEX_DT_USER, 8, 1, GEX_OP_ADD, NULL,
                             NULL, 0);
    } else if (strcmp(mode, "dt-size") == 0) {
      gex_Coll_ReduceToOneNB(g_tm, 0, b, a, GEX_DT_I64, 4, 2, GEX_OP_ADD, NULL,
                             NULL, 0);
    } else if (strcmp(mode, "zero-dt-size") == 0) {
      gex_Coll_ReduceToAllNB(g_tm, b, a, GEX_DT_USER, 0, 1, GEX_OP_USER,
                             TripleOp, NULL, 0);
    } else if (strcmp(mode, "overflow") == 0) {
      gex_Coll_ReduceToAllNB(g_tm, b, a, GEX_DT_I64, 8, SIZE_MAX / 4,
                             GEX_OP_ADD, NULL, NULL, 0);
    } else if (strcmp(mode, "negative-size") == 0) {
      gex_Coll_BroadcastNB(g_tm, 0, b, a, (size_t)-8, 0);
    } else if (strcmp(mode, "null-user-op") == 0) {
      gex_Coll_ReduceToAllNB(g_tm, b, a, GEX_DT_USER, 8, 1, GEX_OP_USER_NC,
                             NULL, NULL, 0);
    } else if (strcmp(mode, "null-dst") == 0) {
      gex_Coll_ReduceToOneNB(g_tm, 0, NULL, a, GEX_DT_I64, 8, 1, GEX_OP_ADD,
                             NULL, NULL, 0);
    } else if (strcmp(mode, "bad-tm") == 0) {
      gex_Coll_ReduceToAllNB((gex_TM_t)(void *)a, b, a, GEX_DT_I64, 8, 1,
                             GEX_OP_ADD, NULL, NULL, 0);
    } else if (strcmp(mode, "wait-twice") == 0) {
      /* The root of a broadcast completes without the others. */
      gex_Event_t ev = gex_Coll_BroadcastNB(g_tm, 0, b, a, sizeof a, 0);
      CHECK(ev != GEX_EVENT_INVALID, "BroadcastNB gave no event");
      gex_Event_Wait(ev);
      gex_Event_Wait(ev);
    } else if (strcmp(mode, "coll-in-handler") == 0) {
      /* Rank `peer` errs, in the handler; its reply would mean it survived. */
      gex_AM_RequestShort0(g_tm, peer, 200, 0);
      GASNET_BLOCKUNTIL(g_handler_survived);
      Say("survived %s (in rank %u's handler)", mode, peer);
    } else {
      CHECK(0, "unknown mode %s", mode);
    }
    Say("survived %s", mode);
  }
  /* The others wait for the fatal error to end the job. */
  for (;;) {
    gasnet_AMPoll();
    sched_yield();
  }
}

int main(int argc, char **argv) {
  CHECK(gex_Client_Init(&g_client, &g_ep, &g_tm, "COLL_TEST", &argc, &argv,
                        0) == GASNET_OK,
        "gex_Client_Init failed");
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = (int)g_me;
  CHECK(argc == 2, "usage: coll_client MODE");
  const char *mode = argv[1];
  if (strcmp(mode, "bcast") == 0) Bcast();
  if (strcmp(mode, "reduce") == 0) Reduce();
  if (strcmp(mode, "user") == 0) User();
  if (strcmp(mode, "nc") == 0) Nc();
  if (strcmp(mode, "inplace") == 0) Inplace();
  if (strcmp(mode, "overlap") == 0) Overlap();
  if (strcmp(mode, "early") == 0) Early();
  if (strcmp(mode, "zero") == 0) Zero();
  Misuse(mode);
  return 0;
}
