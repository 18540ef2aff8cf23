/* ratomic_client: one rank of a remote-atomics job over the GASNet-EX C API
 * on any conduit (SEQ mode), started by its launcher from ratomic_job_test.
 * Written in C11 against <gasnetex.h> and <gasnet_ratomic.h> only. Every
 * check is a CHECK (a failure prints "rank R: CHECK FAILED ..." and ends
 * the job with exit code 1); a rank that passes every check of its mode
 * prints "rank R: <mode> ok ..." before the closing barrier and
 * gasnet_exit(0).
 *
 * A target whose segment is mapped here (this rank, a supernode peer) is
 * operated on directly: its NB call returns GEX_EVENT_INVALID. Any other
 * target, or every target with GEX_RMA_FORCE_AM=1 (the client reads it
 * too), goes over Active Messages and its NB call returns a real event;
 * the client checks each NB call for the event its path implies. On the
 * ucx conduit, with some rank off the supernode and
 * GASNET_UCX_OFFLOAD_ATOMICS not 0, a domain of an integer type whose
 * opcodes UCP performs (all but MULT, MIN, MAX) sends every operation
 * through UCP, this rank's too: no target is direct for it.
 *
 *   ops    For each type (I32, U32, I64, U64, FLT, DBL), each opcode valid
 *          for it, fetching and not, each form (NB + gex_Event_Wait, NBI +
 *          gex_NBI_Wait of the opcode's category, Blocking), on a cell of
 *          this rank's in the next rank's segment and in its own (for the
 *          integer types twice: a domain of every opcode, and one without
 *          MULT, MIN and MAX, the set a network may offload): the cell
 *          is set to x = (T)-7 (GEX_OP_SET), the opcode applied with
 *          operands 3 and 11 (CAS: compare with x or with 3, write 11),
 *          then read back (GEX_OP_GET) and checked against the C
 *          expression; a fetching opcode's result must be x. Also the
 *          domain queries, CData, and NBI inside an access region.
 *          Then GEX_FLAG_IMMEDIATE in every form (FADD on a U64 cell,
 *          100 rounds): a refusal (only off the direct path) is retried
 *          without it, and the cell ends exact.
 *          Prints "rank R: ops ok ops=K direct=D refused=F" (D: NB calls
 *          that returned GEX_EVENT_INVALID; F: IMMEDIATE refusals).
 *   sum    Every rank adds to counters on every rank at once: K rounds of
 *          FADD 1 (U64, Blocking, the fetched values strictly increasing
 *          per rank), ADD 2 (I32, NBI), INC (I64, NB), ADD 0.5 (DBL,
 *          Blocking) and FADD 1 (FLT, NB); after a barrier each owner
 *          checks its counters hold exactly n*K times the increment.
 *          Prints "rank R: sum ok".
 *   cas    Contention: every rank increments one I64 counter on rank 0 K
 *          times by GET then FCAS(old, old+1), retrying on failure, and
 *          takes a U32 "lock" on rank n-1 (FCAS 0 -> me+1, spin; SET 0 to
 *          release) K times around a plain increment of a U64 cell it
 *          reaches with GET/SET under the lock. Rank 0 checks the counter
 *          is n*K, and the lock's cell n*K. Prints "rank R: cas ok".
 *   mp     Message passing through one domain (release/acquire): rank
 *          n-1 (the writer) raises X, then sets Y with GEX_FLAG_AD_REL, K
 *          times (X to i by SET or by ADD 1, Y to i by SET, SWAP or ADD 1;
 *          each X operation synchronized, in the NB, NBI or Blocking form
 *          by turns, before Y's starts). X and Y are cells of rank 0's
 *          (the owner), which meanwhile polls Y with GEX_FLAG_AD_ACQ |
 *          GEX_FLAG_AD_MY_RANK (Blocking GET) and, each time it sees Y
 *          move, reads X (GET, MY_RANK): X >= Y must hold every time (a
 *          Y newer than X breaks release/acquire). Until it has seen
 *          Y == K. Prints "rank R: mp ok reads=M" (M: Y values seen).
 *   mp3    The same with the reader a third rank (rank 1, n >= 3) reading
 *          the owner's X and Y remotely with GEX_FLAG_AD_ACQ; the owner
 *          waits in a barrier meanwhile.
 *   mpput, mp3put   mp and mp3 with X plain data: the writer Puts it
 *          (Blocking), the reader Gets it, or loads it where the owner's
 *          segment is mapped here. Prints "rank R: mpput ok reads=M".
 *   subteam  A domain over a parity sub-team whose order runs backwards:
 *          every member adds 1 to every member's counter by team rank and
 *          2 by job rank (GEX_FLAG_RANK_IS_JOBRANK), K times; each checks
 *          its own counter is 3*size*K. Prints "rank R: subteam ok ops=K
 *          size=S".
 *
 * Misuse modes (2 ranks, rank 0 errs; the job must die with a fatal error
 * naming the call; a rank that gets past the mistake prints
 * "rank R: survived <mode>"):
 *   not-in-mask      FADD on a domain created for ADD only (OpNB_U64)
 *   type-mismatch    gex_AD_OpBlocking_I64 on a GEX_DT_U64 domain
 *   null-ad          gex_AD_OpNBI_U32 with GEX_AD_INVALID
 *   garbage-ad       gex_AD_OpNB_DBL with a pointer to zeroed memory
 *   destroyed-ad     gex_AD_OpBlocking_U64 on a destroyed domain
 *   two-ops          gex_AD_OpBlocking_U64 with GEX_OP_ADD|GEX_OP_SUB
 *   null-result      gex_AD_OpBlocking_U64 FADD with result_p NULL
 *   outside          gex_AD_OpNBI_U64 on the first byte past the segment
 *   misaligned       gex_AD_OpBlocking_U64 on an address 4 bytes in
 *   bad-rank         gex_AD_OpNB_I32 to rank n
 *   my-rank-false    gex_AD_OpBlocking_U64 with GEX_FLAG_AD_MY_RANK to rank 1
 *   bitwise-float    gex_AD_Create(GEX_DT_FLT, GEX_OP_AND)
 *   bad-tm           gex_AD_Create with a NULL team */
#include <gasnet_ratomic.h>
#include <gasnetex.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api/client_check.h"

enum { kSegSize = 64 * 1024, kSlot = 64, kCellsPerRank = 8 };

static gex_Client_t g_client;
static gex_EP_t g_ep;
static gex_TM_t g_tm;
static gex_Segment_t g_seg;
static gex_Rank_t g_me;
static gex_Rank_t g_n;
static int g_forced;
static unsigned char **g_owner; /* each rank's segment, as it sees it */
static unsigned char **g_local; /* mapped here, or NULL */
static int g_offloading; /* the conduit offloads some domains (see above) */
static long g_ops;
static long g_direct;

static void Barrier(void) { gex_Coll_BarrierBlocking(g_tm, 0); }

/* The opcodes no network here performs. */
static const gex_OP_t kNotOffloaded = GEX_OP_MULT | GEX_OP_MIN | GEX_OP_MAX |
                                      GEX_OP_FMULT | GEX_OP_FMIN | GEX_OP_FMAX;

/* Whether `ad`'s operations all go through the conduit's network. */
static int Offloaded(gex_AD_t ad) {
  const gex_DT_t dt = gex_AD_QueryDT(ad);
  return g_offloading && dt != GEX_DT_FLT && dt != GEX_DT_DBL &&
         (gex_AD_QueryOps(ad) & kNotOffloaded) == 0;
}

static int DirectTo(gex_AD_t ad, gex_Rank_t r) {
  return !g_forced && g_local[r] != NULL && !Offloaded(ad);
}

/* Cell `i` (8 bytes) of the area rank `owner_of_area` uses in rank t's
 * segment, as t sees it. Area 0 .. n-1: one per initiating rank; area n:
 * the shared counters. */
static void *Cell(gex_Rank_t t, unsigned area, unsigned i) {
  return g_owner[t] + (size_t)area * kSlot * kCellsPerRank + (size_t)i * kSlot;
}

static void Start(int *argc, char ***argv) {
  CHECK(gex_Client_Init(&g_client, &g_ep, &g_tm, "RATOMIC_TEST", argc, argv,
                        0) == GASNET_OK,
        "gex_Client_Init failed");
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = (int)g_me;
  const char *forced = getenv("GEX_RMA_FORCE_AM");
  g_forced = forced != NULL && strcmp(forced, "1") == 0;
  CHECK(gex_Segment_Attach(&g_seg, g_tm, kSegSize) == GASNET_OK,
        "gex_Segment_Attach failed");
  CHECK((size_t)(g_n + 1) * kSlot * kCellsPerRank <= kSegSize, "segment");
  g_owner = (unsigned char **)calloc(g_n, sizeof *g_owner);
  g_local = (unsigned char **)calloc(g_n, sizeof *g_local);
  CHECK(g_owner != NULL && g_local != NULL, "calloc");
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    void *owner;
    void *local;
    uintptr_t size;
    gex_Event_Wait(
        gex_EP_QueryBoundSegmentNB(g_tm, r, &owner, &local, &size, 0));
    CHECK(owner != NULL && size >= kSegSize, "rank %u's segment", r);
    g_owner[r] = (unsigned char *)owner;
    g_local[r] = (unsigned char *)local;
  }
  memset(gex_Segment_QueryAddr(g_seg), 0, kSegSize);
#if defined(GASNET_CONDUIT_UCX)
  const char *offload = getenv("GASNET_UCX_OFFLOAD_ATOMICS");
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    if (g_local[r] == NULL) g_offloading = 1; /* the conduit has peers */
  }
  if (g_forced || (offload != NULL && strcmp(offload, "0") == 0)) {
    g_offloading = 0;
  }
#endif
  Barrier();
}

static void Finish(const char *line) {
  Barrier();
  Say("%s", line);
  Barrier();
  gasnet_exit(0);
}

/* ------------------------------------------------------------------------
 * ops: every opcode on every type. */

static const gex_OP_t kNonFetching[] = {
    GEX_OP_ADD, GEX_OP_SUB, GEX_OP_MULT, GEX_OP_MIN, GEX_OP_MAX, GEX_OP_INC,
    GEX_OP_DEC, GEX_OP_AND, GEX_OP_OR,   GEX_OP_XOR, GEX_OP_SET, GEX_OP_CAS};
enum { kNumNonFetching = sizeof kNonFetching / sizeof kNonFetching[0] };

static int IsBitwise(gex_OP_t op) {
  return op == GEX_OP_AND || op == GEX_OP_OR || op == GEX_OP_XOR;
}

static gex_EC_t Category(gex_OP_t op) {
  return op == GEX_OP_SET   ? GEX_EC_PUT
         : op == GEX_OP_GET ? GEX_EC_GET
                            : GEX_EC_RMW;
}

/* Forms: 0 NB, 1 NBI, 2 Blocking. */
enum { kForms = 3 };

/* One type's whole set. The expected value of the cell after base opcode
 * `b` on x with operands y, z, by the C expression of the type. Bit-wise
 * expressions are only reached for integer types (INTEGER true). */
#define DEFINE_OPS(DT, T, INTEGER, BITEXPR)                                    \
  static T Expect_##DT(gex_OP_t b, T x, T y, T z, int cas_equal) {             \
    switch (b) {                                                               \
      case GEX_OP_ADD:                                                         \
        return (T)(x + y);                                                     \
      case GEX_OP_SUB:                                                         \
        return (T)(x - y);                                                     \
      case GEX_OP_MULT:                                                        \
        return (T)(x * y);                                                     \
      case GEX_OP_MIN:                                                         \
        return x < y ? x : y;                                                  \
      case GEX_OP_MAX:                                                         \
        return x > y ? x : y;                                                  \
      case GEX_OP_INC:                                                         \
        return (T)(x + 1);                                                     \
      case GEX_OP_DEC:                                                         \
        return (T)(x - 1);                                                     \
      case GEX_OP_SET:                                                         \
        return y;                                                              \
      case GEX_OP_CAS:                                                         \
        return cas_equal ? z : x;                                              \
      default:                                                                 \
        BITEXPR;                                                               \
    }                                                                          \
    CHECK(0, "no expectation for opcode 0x%x", (unsigned)b);                   \
    return x;                                                                  \
  }                                                                            \
  /* Issues `op` in `form` and syncs it. */                                    \
  static void Issue_##DT(gex_AD_t ad, int form, gex_Rank_t t, T *cell, T *res, \
                         gex_OP_t op, T a, T b) {                              \
    switch (form) {                                                            \
      case 0: {                                                                \
        gex_Event_t e = gex_AD_OpNB_##DT(ad, res, t, cell, op, a, b, 0);       \
        CHECK(e != GEX_EVENT_NO_OP, "NB without IMMEDIATE gave NO_OP");        \
        if (DirectTo(ad, t)) {                                                 \
          CHECK(e == GEX_EVENT_INVALID, "direct NB to %u gave an event", t);   \
          ++g_direct;                                                          \
        } else {                                                               \
          CHECK(e != GEX_EVENT_INVALID, "AM-path NB to %u gave no event", t);  \
        }                                                                      \
        gex_Event_Wait(e);                                                     \
        break;                                                                 \
      }                                                                        \
      case 1:                                                                  \
        CHECK(gex_AD_OpNBI_##DT(ad, res, t, cell, op, a, b, 0) == 0, "NBI");   \
        gex_NBI_Wait(Category(op), 0);                                         \
        break;                                                                 \
      default:                                                                 \
        CHECK(gex_AD_OpBlocking_##DT(ad, res, t, cell, op, a, b,               \
                                     GEX_FLAG_AD_ACQ | GEX_FLAG_AD_REL) == 0,  \
              "Blocking");                                                     \
        break;                                                                 \
    }                                                                          \
    ++g_ops;                                                                   \
  }                                                                            \
  static T Get_##DT(gex_AD_t ad, gex_Rank_t t, T *cell) {                      \
    T v = (T)0;                                                                \
    CHECK(gex_AD_OpBlocking_##DT(ad, &v, t, cell, GEX_OP_GET, (T)0, (T)0,      \
                                 0) == 0,                                      \
          "GET");                                                              \
    return v;                                                                  \
  }                                                                            \
  /* Every opcode valid for the type but those in `without`. */                \
  static void Ops_##DT(gex_Rank_t t, T *cell, gex_OP_t without) {              \
    gex_OP_t all = GEX_OP_GET;                                                 \
    for (int i = 0; i < kNumNonFetching; ++i) {                                \
      if (!(INTEGER) && IsBitwise(kNonFetching[i])) continue;                  \
      all |= kNonFetching[i] | GEX_OP_TO_FETCHING(kNonFetching[i]);            \
    }                                                                          \
    all &= ~without;                                                           \
    gex_AD_t ad;                                                               \
    gex_AD_Create(&ad, g_tm, GEX_DT_##DT, all, GEX_FLAG_AD_FAVOR_REMOTE);      \
    CHECK(gex_AD_QueryDT(ad) == GEX_DT_##DT && gex_AD_QueryOps(ad) == all &&   \
              gex_AD_QueryTM(ad) == g_tm &&                                    \
              gex_AD_QueryFlags(ad) == GEX_FLAG_AD_FAVOR_REMOTE &&             \
              gex_AD_QueryCData(ad) == NULL,                                   \
          "queries");                                                          \
    gex_AD_SetCData(ad, cell);                                                 \
    CHECK(gex_AD_QueryCData(ad) == (void *)cell, "CData");                     \
    const T x = (T)-7, y = (T)3, z = (T)11;                                    \
    for (int i = 0; i < kNumNonFetching; ++i) {                                \
      const gex_OP_t b = kNonFetching[i];                                      \
      if (!(INTEGER) && IsBitwise(b)) continue;                                \
      if ((b & without) != 0) continue;                                        \
      for (int fetch = 0; fetch < 2; ++fetch) {                                \
        const gex_OP_t op = fetch ? GEX_OP_TO_FETCHING(b) : b;                 \
        for (int cas_equal = 0; cas_equal < (b == GEX_OP_CAS ? 2 : 1);         \
             ++cas_equal) {                                                    \
          for (int form = 0; form < kForms; ++form) {                          \
            Issue_##DT(ad, 2, t, cell, NULL, GEX_OP_SET, x, (T)0);             \
            T res = (T)99;                                                     \
            const T a = b == GEX_OP_CAS ? (cas_equal ? x : y) : y;             \
            Issue_##DT(ad, form, t, cell, &res, op, a, z);                     \
            const T now = Get_##DT(ad, t, cell);                               \
            const T want =                                                     \
                Expect_##DT(b, x, b == GEX_OP_CAS ? a : y, z, cas_equal);      \
            CHECK(now == want,                                                 \
                  #DT " op 0x%x form %d on rank %u: cell %g, expected %g",     \
                  (unsigned)op, form, t, (double)now, (double)want);           \
            CHECK(!fetch || res == x,                                          \
                  #DT " op 0x%x form %d on rank %u: fetched %g, expected %g",  \
                  (unsigned)op, form, t, (double)res, (double)x);              \
            CHECK(fetch || res == (T)99,                                       \
                  #DT " op 0x%x: a non-fetching op wrote result_p",            \
                  (unsigned)op);                                               \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
    /* GET itself, each form. */                                               \
    Issue_##DT(ad, 2, t, cell, NULL, GEX_OP_SET, z, (T)0);                     \
    for (int form = 0; form < kForms; ++form) {                                \
      T res = (T)0;                                                            \
      Issue_##DT(ad, form, t, cell, &res, GEX_OP_GET, (T)0, (T)0);             \
      CHECK(res == z, #DT " GET form %d: %g", form, (double)res);              \
    }                                                                          \
    /* NBI in an access region: the region's event covers it. */               \
    gex_NBI_BeginAccessRegion(0);                                              \
    T res = (T)0;                                                              \
    CHECK(gex_AD_OpNBI_##DT(ad, &res, t, cell, GEX_OP_FADD, y, (T)0, 0) == 0,  \
          "NBI in region");                                                    \
    gex_Event_Wait(gex_NBI_EndAccessRegion(0));                                \
    CHECK(res == z && Get_##DT(ad, t, cell) == (T)(z + y), #DT " region");     \
    ++g_ops;                                                                   \
    Barrier(); /* every rank done with the domain */                           \
    gex_AD_Destroy(ad);                                                        \
  }

DEFINE_OPS(
    I32, int32_t, 1, switch (b) {
      case GEX_OP_AND:
        return x & y;
      case GEX_OP_OR:
        return x | y;
      case GEX_OP_XOR:
        return x ^ y;
    })
DEFINE_OPS(
    U32, uint32_t, 1, switch (b) {
      case GEX_OP_AND:
        return x & y;
      case GEX_OP_OR:
        return x | y;
      case GEX_OP_XOR:
        return x ^ y;
    })
DEFINE_OPS(
    I64, int64_t, 1, switch (b) {
      case GEX_OP_AND:
        return x & y;
      case GEX_OP_OR:
        return x | y;
      case GEX_OP_XOR:
        return x ^ y;
    })
DEFINE_OPS(
    U64, uint64_t, 1, switch (b) {
      case GEX_OP_AND:
        return x & y;
      case GEX_OP_OR:
        return x | y;
      case GEX_OP_XOR:
        return x ^ y;
    })
DEFINE_OPS(FLT, float, 0, (void)0)
DEFINE_OPS(DBL, double, 0, (void)0)

/* GEX_FLAG_IMMEDIATE: each form may refuse (NB: GEX_EVENT_NO_OP, NBI and
 * Blocking: non-zero) having done nothing, only where the operation is not
 * direct; a refused operation is retried without the flag. The cell ends
 * at exactly 3 x kImmediateRounds. Returns the refusals. */
enum { kImmediateRounds = 100 };

static long Immediate(gex_Rank_t t, uint64_t *cell) {
  gex_AD_t ad;
  gex_AD_Create(&ad, g_tm, GEX_DT_U64, GEX_OP_FADD | GEX_OP_SET | GEX_OP_GET,
                0);
  long refused = 0;
  uint64_t r = 0;
  CHECK(gex_AD_OpBlocking_U64(ad, NULL, t, cell, GEX_OP_SET, 0, 0, 0) == 0,
        "SET");
  for (int k = 0; k < kImmediateRounds; ++k) {
    gex_Event_t e =
        gex_AD_OpNB_U64(ad, &r, t, cell, GEX_OP_FADD, 1, 0, GEX_FLAG_IMMEDIATE);
    if (e == GEX_EVENT_NO_OP) {
      CHECK(!DirectTo(ad, t), "a direct NB refused with IMMEDIATE");
      ++refused;
      e = gex_AD_OpNB_U64(ad, &r, t, cell, GEX_OP_FADD, 1, 0, 0);
    }
    gex_Event_Wait(e);
    if (gex_AD_OpNBI_U64(ad, &r, t, cell, GEX_OP_FADD, 1, 0,
                         GEX_FLAG_IMMEDIATE) != 0) {
      CHECK(!DirectTo(ad, t), "a direct NBI refused with IMMEDIATE");
      ++refused;
      CHECK(gex_AD_OpNBI_U64(ad, &r, t, cell, GEX_OP_FADD, 1, 0, 0) == 0,
            "NBI");
    }
    gex_NBI_Wait(GEX_EC_RMW, 0);
    if (gex_AD_OpBlocking_U64(ad, &r, t, cell, GEX_OP_FADD, 1, 0,
                              GEX_FLAG_IMMEDIATE) != 0) {
      CHECK(!DirectTo(ad, t), "a direct Blocking refused with IMMEDIATE");
      ++refused;
      CHECK(gex_AD_OpBlocking_U64(ad, &r, t, cell, GEX_OP_FADD, 1, 0, 0) == 0,
            "Blocking");
    }
    CHECK(r == (uint64_t)3 * k + 2, "FADD %d fetched %llu", k,
          (unsigned long long)r);
  }
  CHECK(gex_AD_OpBlocking_U64(ad, &r, t, cell, GEX_OP_GET, 0, 0, 0) == 0 &&
            r == (uint64_t)3 * kImmediateRounds,
        "IMMEDIATE FADDs: cell %llu, expected %d", (unsigned long long)r,
        3 * kImmediateRounds);
  Barrier();
  gex_AD_Destroy(ad);
  return refused;
}

static void Ops(void) {
  const gex_Rank_t next = (g_me + 1) % g_n;
  const gex_Rank_t targets[2] = {next, g_me};
  const int ntargets = next == g_me ? 1 : 2;
  for (int k = 0; k < ntargets; ++k) {
    const gex_Rank_t t = targets[k];
    for (int offloadable = 0; offloadable < 2; ++offloadable) {
      const gex_OP_t without = offloadable ? kNotOffloaded : 0;
      Ops_I32(t, (int32_t *)Cell(t, g_me, 0), without);
      Ops_U32(t, (uint32_t *)Cell(t, g_me, 1), without);
      Ops_I64(t, (int64_t *)Cell(t, g_me, 2), without);
      Ops_U64(t, (uint64_t *)Cell(t, g_me, 3), without);
    }
    Ops_FLT(t, (float *)Cell(t, g_me, 4), 0);
    Ops_DBL(t, (double *)Cell(t, g_me, 5), 0);
  }
  long refused = 0;
  for (int k = 0; k < ntargets; ++k) {
    refused += Immediate(targets[k], (uint64_t *)Cell(targets[k], g_me, 6));
  }
  char line[128];
  snprintf(line, sizeof line, "ops ok ops=%ld direct=%ld refused=%ld", g_ops,
           g_direct, refused);
  Finish(line);
}

/* ------------------------------------------------------------------------
 * sum: concurrent updates from every rank. */

enum { kSumRounds = 300 };

static void Sum(void) {
  gex_AD_t u64, i32, i64, dbl, flt;
  gex_AD_Create(&u64, g_tm, GEX_DT_U64, GEX_OP_FADD | GEX_OP_GET, 0);
  gex_AD_Create(&i32, g_tm, GEX_DT_I32, GEX_OP_ADD | GEX_OP_GET, 0);
  gex_AD_Create(&i64, g_tm, GEX_DT_I64, GEX_OP_INC | GEX_OP_GET, 0);
  gex_AD_Create(&dbl, g_tm, GEX_DT_DBL, GEX_OP_ADD | GEX_OP_GET, 0);
  gex_AD_Create(&flt, g_tm, GEX_DT_FLT, GEX_OP_FADD | GEX_OP_GET, 0);
  uint64_t *last = (uint64_t *)calloc(g_n, sizeof *last);
  float *fres = (float *)calloc(g_n, sizeof *fres);
  CHECK(last != NULL && fres != NULL, "calloc");
  for (int k = 0; k < kSumRounds; ++k) {
    for (gex_Rank_t j = 0; j < g_n; ++j) {
      const gex_Rank_t t = (g_me + j) % g_n; /* spread the start */
      uint64_t old = 0;
      CHECK(gex_AD_OpBlocking_U64(u64, &old, t, Cell(t, g_n, 0), GEX_OP_FADD, 1,
                                  0, 0) == 0,
            "FADD");
      CHECK(k == 0 || old > last[t], "rank %u's counter went from %llu to %llu",
            t, (unsigned long long)last[t], (unsigned long long)old);
      last[t] = old;
      CHECK(gex_AD_OpNBI_I32(i32, NULL, t, Cell(t, g_n, 1), GEX_OP_ADD, 2, 0,
                             0) == 0,
            "NBI ADD");
      gex_Event_t e =
          gex_AD_OpNB_I64(i64, NULL, t, Cell(t, g_n, 2), GEX_OP_INC, 0, 0, 0);
      CHECK(gex_AD_OpBlocking_DBL(dbl, NULL, t, Cell(t, g_n, 3), GEX_OP_ADD,
                                  0.5, 0, 0) == 0,
            "DBL ADD");
      gex_Event_t f = gex_AD_OpNB_FLT(flt, &fres[t], t, Cell(t, g_n, 4),
                                      GEX_OP_FADD, 1.0f, 0, 0);
      gex_Event_Wait(e);
      gex_Event_Wait(f);
    }
    if (k % 16 == 0) gex_NBI_Wait(GEX_EC_RMW, 0);
  }
  gex_NBI_Wait(GEX_EC_ALL, 0);
  Barrier();
  const double total = (double)g_n * kSumRounds;
  uint64_t u = 0;
  int32_t i = 0;
  int64_t l = 0;
  double d = 0;
  float fl = 0;
  gex_AD_OpBlocking_U64(u64, &u, g_me, Cell(g_me, g_n, 0), GEX_OP_GET, 0, 0, 0);
  gex_AD_OpBlocking_I32(i32, &i, g_me, Cell(g_me, g_n, 1), GEX_OP_GET, 0, 0, 0);
  gex_AD_OpBlocking_I64(i64, &l, g_me, Cell(g_me, g_n, 2), GEX_OP_GET, 0, 0, 0);
  gex_AD_OpBlocking_DBL(dbl, &d, g_me, Cell(g_me, g_n, 3), GEX_OP_GET, 0, 0, 0);
  gex_AD_OpBlocking_FLT(flt, &fl, g_me, Cell(g_me, g_n, 4), GEX_OP_GET, 0, 0,
                        0);
  CHECK(u == (uint64_t)total, "U64 FADD sum %llu, expected %.0f",
        (unsigned long long)u, total);
  CHECK(i == (int32_t)(2 * total), "I32 ADD sum %d, expected %.0f", (int)i,
        2 * total);
  CHECK(l == (int64_t)total, "I64 INC sum %lld, expected %.0f", (long long)l,
        total);
  CHECK(d == 0.5 * total, "DBL ADD sum %g, expected %g", d, 0.5 * total);
  CHECK(fl == (float)total, "FLT FADD sum %g, expected %g", (double)fl, total);
  Barrier();
  gex_AD_Destroy(u64);
  gex_AD_Destroy(i32);
  gex_AD_Destroy(i64);
  gex_AD_Destroy(dbl);
  gex_AD_Destroy(flt);
  Finish("sum ok");
}

/* ------------------------------------------------------------------------
 * cas: contention. */

enum { kCasRounds = 200 };

static void Cas(void) {
  gex_AD_t i64, u32, u64;
  gex_AD_Create(&i64, g_tm, GEX_DT_I64, GEX_OP_GET | GEX_OP_FCAS, 0);
  gex_AD_Create(&u32, g_tm, GEX_DT_U32, GEX_OP_FCAS | GEX_OP_SET, 0);
  gex_AD_Create(&u64, g_tm, GEX_DT_U64, GEX_OP_GET | GEX_OP_SET, 0);
  int64_t *counter = (int64_t *)Cell(0, g_n, 0);
  const gex_Rank_t lock_rank = g_n - 1;
  uint32_t *lock = (uint32_t *)Cell(lock_rank, g_n, 1);
  uint64_t *guarded = (uint64_t *)Cell(lock_rank, g_n, 2);
  long failures = 0;
  for (int k = 0; k < kCasRounds; ++k) {
    int64_t old = 0;
    gex_AD_OpBlocking_I64(i64, &old, 0, counter, GEX_OP_GET, 0, 0, 0);
    for (;;) {
      int64_t seen = 0;
      gex_AD_OpBlocking_I64(i64, &seen, 0, counter, GEX_OP_FCAS, old, old + 1,
                            0);
      if (seen == old) break;
      ++failures;
      old = seen;
      gasnet_AMPoll();
    }
    /* The lock: FCAS 0 -> me+1 until it was 0. */
    for (;;) {
      uint32_t seen = 1;
      gex_AD_OpBlocking_U32(u32, &seen, lock_rank, lock, GEX_OP_FCAS, 0,
                            g_me + 1, GEX_FLAG_AD_ACQ);
      if (seen == 0) break;
      /* Attentiveness: the holder's GET and SET may be Active Messages
       * this rank must serve (a direct FCAS makes no progress), and the
       * holder may share this CPU. */
      gasnet_AMPoll();
      sched_yield();
    }
    uint64_t v = 0;
    gex_AD_OpBlocking_U64(u64, &v, lock_rank, guarded, GEX_OP_GET, 0, 0, 0);
    gex_AD_OpBlocking_U64(u64, NULL, lock_rank, guarded, GEX_OP_SET, v + 1, 0,
                          0);
    gex_AD_OpBlocking_U32(u32, NULL, lock_rank, lock, GEX_OP_SET, 0, 0,
                          GEX_FLAG_AD_REL);
  }
  Barrier();
  if (g_me == 0) {
    int64_t c = 0;
    gex_AD_OpBlocking_I64(i64, &c, 0, counter, GEX_OP_GET, 0, 0, 0);
    CHECK(c == (int64_t)g_n * kCasRounds, "CAS counter %lld, expected %lld",
          (long long)c, (long long)g_n * kCasRounds);
    uint64_t v = 0;
    gex_AD_OpBlocking_U64(u64, &v, lock_rank, guarded, GEX_OP_GET, 0, 0, 0);
    CHECK(v == (uint64_t)g_n * kCasRounds, "locked cell %llu, expected %llu",
          (unsigned long long)v, (unsigned long long)g_n * kCasRounds);
  }
  Barrier();
  gex_AD_Destroy(i64);
  gex_AD_Destroy(u32);
  gex_AD_Destroy(u64);
  char line[96];
  snprintf(line, sizeof line, "cas ok failures=%ld", failures);
  Finish(line);
}

/* ------------------------------------------------------------------------
 * subteam: a domain over a sub-team. The parity teams run backwards (key:
 * minus the job rank), so team rank r is job rank members[r], and an
 * operation that went to job rank r instead would land on the wrong cell.
 * Every member adds to every member's counter by team rank, and once more
 * by job rank (GEX_FLAG_RANK_IS_JOBRANK); each rank then reads its own. */

enum { kSubteamRounds = 50 };

static void Subteam(void) {
  gex_TM_t team = GEX_TM_INVALID;
  gex_TM_Split(&team, g_tm, (int)(g_me % 2), -(int)g_me, NULL, 0,
               GEX_FLAG_TM_NO_SCRATCH);
  CHECK(team != GEX_TM_INVALID, "gex_TM_Split");
  gex_Rank_t members[64], size = 0;
  for (gex_Rank_t j = g_n; j-- > 0;) {
    if (j % 2 == g_me % 2) members[size++] = j;
  }
  CHECK(gex_TM_QuerySize(team) == size, "team size %u, expected %u",
        gex_TM_QuerySize(team), size);
  gex_AD_t ad;
  gex_AD_Create(&ad, team, GEX_DT_U64, GEX_OP_FADD | GEX_OP_ADD | GEX_OP_GET,
                0);
  CHECK(gex_AD_QueryTM(ad) == team, "gex_AD_QueryTM");
  /* Cell 7 of the shared area: every rank's, zero so far. */
  for (int k = 0; k < kSubteamRounds; ++k) {
    for (gex_Rank_t r = 0; r < size; ++r) {
      const gex_Rank_t job = members[r];
      uint64_t old = 0;
      CHECK(gex_AD_OpBlocking_U64(ad, &old, r, Cell(job, g_n, 7), GEX_OP_FADD,
                                  1, 0, 0) == 0,
            "FADD to team rank %u", r);
      CHECK(gex_AD_OpNBI_U64(ad, NULL, job, Cell(job, g_n, 7), GEX_OP_ADD, 2, 0,
                             GEX_FLAG_RANK_IS_JOBRANK) == 0,
            "ADD to job rank %u", job);
      ++g_ops;
    }
  }
  gex_NBI_Wait(GEX_EC_ALL, 0);
  gex_Coll_BarrierBlocking(team, 0);
  /* Team rank of this rank: where it sits in members. */
  gex_Rank_t mine = size;
  for (gex_Rank_t r = 0; r < size; ++r) {
    if (members[r] == g_me) mine = r;
  }
  CHECK(mine == gex_TM_QueryRank(team), "team rank %u, expected %u",
        gex_TM_QueryRank(team), mine);
  uint64_t v = 0;
  gex_AD_OpBlocking_U64(ad, &v, mine, Cell(g_me, g_n, 7), GEX_OP_GET, 0, 0, 0);
  CHECK(v == 3ull * size * kSubteamRounds, "own counter %llu, expected %llu",
        (unsigned long long)v, 3ull * size * kSubteamRounds);
  gex_Coll_BarrierBlocking(team, 0);
  gex_AD_Destroy(ad);
  gex_TM_Destroy(team, NULL, 0);
  char line[96];
  snprintf(line, sizeof line, "subteam ok ops=%ld size=%u", g_ops, size);
  Finish(line);
}

/* ------------------------------------------------------------------------
 * mp, mp3: release/acquire across ranks through one domain. */

enum { kMpRounds = 1500 };

/* mpput, mp3put: X is plain data (a Put, read by a Get or, where the
 * owner's segment is mapped here, a load), Y the atomic flag. */
static int g_put;

/* The writer's step on X for round i: X becomes i, the operation
 * synchronized before Y's starts. */
static void WriteX(gex_AD_t ad, gex_Rank_t owner, uint64_t *x, uint64_t i) {
  if (g_put) {
    uint64_t v = i;
    gex_RMA_PutBlocking(g_tm, owner, x, &v, sizeof v, 0);
    return;
  }
  const gex_OP_t op = i % 2 ? GEX_OP_SET : GEX_OP_ADD;
  const uint64_t value = i % 2 ? i : 1;
  switch (i % 3) {
    case 0:
      gex_AD_OpBlocking_U64(ad, NULL, owner, x, op, value, 0, 0);
      break;
    case 1:
      gex_Event_Wait(gex_AD_OpNB_U64(ad, NULL, owner, x, op, value, 0, 0));
      break;
    default:
      gex_AD_OpNBI_U64(ad, NULL, owner, x, op, value, 0, 0);
      gex_NBI_Wait(GEX_EC_ALL, 0);
      break;
  }
}

static uint64_t ReadX(gex_AD_t ad, gex_Rank_t owner, uint64_t *x,
                      gex_Flags_t mine) {
  uint64_t v = 0;
  if (!g_put) {
    gex_AD_OpBlocking_U64(ad, &v, owner, x, GEX_OP_GET, 0, 0, mine);
  } else if (g_local[owner] != NULL) {
    const size_t at = (size_t)((unsigned char *)x - g_owner[owner]);
    v = __atomic_load_n((uint64_t *)(g_local[owner] + at), __ATOMIC_RELAXED);
  } else {
    gex_RMA_GetBlocking(g_tm, &v, owner, x, sizeof v, 0);
  }
  return v;
}

static void Mp(int third) {
  CHECK(g_n >= (third ? 3 : 2), "mp%s needs %d ranks", third ? "3" : "",
        third ? 3 : 2);
  gex_AD_t ad;
  gex_AD_Create(&ad, g_tm, GEX_DT_U64,
                GEX_OP_SET | GEX_OP_GET | GEX_OP_ADD | GEX_OP_SWAP, 0);
  const gex_Rank_t owner = 0, writer = g_n - 1, reader = third ? 1 : 0;
  uint64_t *x = (uint64_t *)Cell(owner, g_n, 5);
  uint64_t *y = (uint64_t *)Cell(owner, g_n, 6);
  Barrier();
  long reads = 0;
  if (g_me == writer) {
    for (uint64_t i = 1; i <= kMpRounds; ++i) {
      WriteX(ad, owner, x, i);
      uint64_t old = 0;
      switch (i % 4) {
        case 0:
          gex_AD_OpBlocking_U64(ad, NULL, owner, y, GEX_OP_SET, i, 0,
                                GEX_FLAG_AD_REL);
          break;
        case 1:
          gex_Event_Wait(gex_AD_OpNB_U64(ad, &old, owner, y, GEX_OP_SWAP, i, 0,
                                         GEX_FLAG_AD_REL));
          CHECK(old == i - 1, "SWAP on Y fetched %llu, expected %llu",
                (unsigned long long)old, (unsigned long long)(i - 1));
          break;
        case 2:
          gex_AD_OpNBI_U64(ad, NULL, owner, y, GEX_OP_ADD, 1, 0,
                           GEX_FLAG_AD_REL);
          gex_NBI_Wait(GEX_EC_ALL, 0);
          break;
        default:
          gex_Event_Wait(gex_AD_OpNB_U64(ad, NULL, owner, y, GEX_OP_SET, i, 0,
                                         GEX_FLAG_AD_REL));
          break;
      }
    }
  } else if (g_me == reader) {
    const gex_Flags_t mine = reader == owner ? GEX_FLAG_AD_MY_RANK : 0;
    uint64_t seen = 0;
    while (seen < kMpRounds) {
      uint64_t yv = 0, xv = 0;
      gex_AD_OpBlocking_U64(ad, &yv, owner, y, GEX_OP_GET, 0, 0,
                            GEX_FLAG_AD_ACQ | mine);
      if (yv == seen) {
        gasnet_AMPoll();
        continue;
      }
      CHECK(yv > seen, "Y went back from %llu to %llu",
            (unsigned long long)seen, (unsigned long long)yv);
      xv = ReadX(ad, owner, x, mine);
      CHECK(xv >= yv,
            "read Y=%llu (GEX_FLAG_AD_ACQ) and then X=%llu: the writer "
            "raised X to %llu before it set Y with GEX_FLAG_AD_REL",
            (unsigned long long)yv, (unsigned long long)xv,
            (unsigned long long)yv);
      seen = yv;
      ++reads;
    }
  }
  Barrier();
  gex_AD_Destroy(ad);
  char line[96];
  snprintf(line, sizeof line, "mp%s%s ok reads=%ld", third ? "3" : "",
           g_put ? "put" : "", reads);
  Finish(line);
}

/* ------------------------------------------------------------------------
 * Misuse. */

static void Survived(const char *mode) {
  Say("survived %s", mode);
  gasnet_exit(0);
}

static void Misuse(const char *mode) {
  CHECK(g_n == 2, "misuse modes run with 2 ranks");
  gex_AD_t ad;
  gex_AD_Create(&ad, g_tm, GEX_DT_U64, GEX_OP_ADD | GEX_OP_GET, 0);
  Barrier();
  uint64_t *cell = (uint64_t *)Cell(1, 0, 0);
  uint64_t r64 = 0;
  if (g_me != 0) {
    /* Wait here for the fatal error (the launcher ends the job). */
    Barrier();
    Survived(mode);
  }
  if (strcmp(mode, "not-in-mask") == 0) {
    gex_Event_Wait(gex_AD_OpNB_U64(ad, &r64, 1, cell, GEX_OP_FADD, 1, 0, 0));
  } else if (strcmp(mode, "type-mismatch") == 0) {
    int64_t r = 0;
    gex_AD_OpBlocking_I64(ad, &r, 1, cell, GEX_OP_GET, 0, 0, 0);
  } else if (strcmp(mode, "null-ad") == 0) {
    uint32_t r = 0;
    gex_AD_OpNBI_U32(GEX_AD_INVALID, &r, 1, cell, GEX_OP_GET, 0, 0, 0);
  } else if (strcmp(mode, "garbage-ad") == 0) {
    static uint64_t zeros[8];
    double r = 0;
    gex_Event_Wait(gex_AD_OpNB_DBL((gex_AD_t)(void *)zeros, &r, 1, cell,
                                   GEX_OP_GET, 0, 0, 0));
  } else if (strcmp(mode, "destroyed-ad") == 0) {
    gex_AD_t other;
    /* Not collective on rank 1: a domain only rank 0 uses. */
    gex_AD_Create(&other, g_tm, GEX_DT_U64, GEX_OP_GET, 0);
    gex_AD_Destroy(other);
    gex_AD_OpBlocking_U64(other, &r64, 1, cell, GEX_OP_GET, 0, 0, 0);
  } else if (strcmp(mode, "two-ops") == 0) {
    gex_AD_OpBlocking_U64(ad, &r64, 1, cell, GEX_OP_ADD | GEX_OP_GET, 1, 0, 0);
  } else if (strcmp(mode, "null-result") == 0) {
    gex_AD_OpBlocking_U64(ad, NULL, 1, cell, GEX_OP_GET, 0, 0, 0);
  } else if (strcmp(mode, "outside") == 0) {
    gex_AD_OpNBI_U64(ad, NULL, 1, g_owner[1] + kSegSize, GEX_OP_ADD, 1, 0, 0);
    gex_NBI_Wait(GEX_EC_ALL, 0);
  } else if (strcmp(mode, "misaligned") == 0) {
    gex_AD_OpBlocking_U64(ad, &r64, 1, (unsigned char *)cell + 4, GEX_OP_GET, 0,
                          0, 0);
  } else if (strcmp(mode, "bad-rank") == 0) {
    gex_AD_t i32;
    gex_AD_Create(&i32, g_tm, GEX_DT_I32, GEX_OP_ADD, 0);
    gex_Event_Wait(gex_AD_OpNB_I32(i32, NULL, g_n, cell, GEX_OP_ADD, 1, 0, 0));
  } else if (strcmp(mode, "my-rank-false") == 0) {
    gex_AD_OpBlocking_U64(ad, &r64, 1, cell, GEX_OP_GET, 0, 0,
                          GEX_FLAG_AD_MY_RANK);
  } else if (strcmp(mode, "bitwise-float") == 0) {
    gex_AD_t f;
    gex_AD_Create(&f, g_tm, GEX_DT_FLT, GEX_OP_AND, 0);
  } else if (strcmp(mode, "bad-tm") == 0) {
    gex_AD_t f;
    gex_AD_Create(&f, GEX_TM_INVALID, GEX_DT_U64, GEX_OP_ADD, 0);
  } else {
    CHECK(0, "unknown mode %s", mode);
  }
  Survived(mode);
}

int main(int argc, char **argv) {
  Start(&argc, &argv);
  CHECK(argc == 2, "usage: ratomic_client MODE");
  const char *mode = argv[1];
  if (strcmp(mode, "ops") == 0) Ops();
  if (strcmp(mode, "sum") == 0) Sum();
  if (strcmp(mode, "cas") == 0) Cas();
  if (strcmp(mode, "subteam") == 0) Subteam();
  if (strcmp(mode, "mp") == 0) Mp(0);
  if (strcmp(mode, "mp3") == 0) Mp(1);
  g_put = 1;
  if (strcmp(mode, "mpput") == 0) Mp(0);
  if (strcmp(mode, "mp3put") == 0) Mp(1);
  Misuse(mode);
  return 0;
}
