/* team_client: one rank of a teams job over any conduit (SEQ), started by
 * its launcher from team_job_test. Written in C11 against <gasnetex.h> and
 * <gasnet_coll.h>. A failed check ends the job with exit code 1; a rank
 * that passed prints "rank R: <mode> ok checks=C" (C: checks it made that
 * depend on the job's size, for the driver to compare).
 *
 *   split    gex_TM_Split by parity with keys reversing the order, into
 *            uneven thirds, with excluded ranks (GEX_TM_NO_COLOR and a
 *            negative colour), a nested split of a sub-team; every
 *            query (rank, size, client, EP, cdata) and both translations
 *            checked against the expected member lists; the scratch-size
 *            queries; destroy, then split again and use the new team.
 *   split-null  the scratch-size queries (positive with a new_tm_p, 0
 *            with NULL, single-valued, nothing written) of gex_TM_Split
 *            and gex_TM_Create; a split in which ranks 3k+1 pass NULL
 *            new_tm_p (no team for them, though their colour is taken).
 *   coll     on the two parity teams at once: barriers (blocking and NB),
 *            broadcasts and reductions from every root, in flight together
 *            with a job-team reduction, retired in reverse order; then a
 *            sub-team of the sub-teams.
 *   am       Short and Medium requests on a sub-team addressing team
 *            ranks (a ring over the team); the handler checks the sender
 *            (job rank in the token) and the receiver's job rank.
 *   pair     gex_TM_Pair(ep, 0): RMA Put and Get and an AM between job
 *            rank neighbours through the pair; its queries. Then a Long
 *            and a Put on a sub-team, to team ranks.
 *   create   gex_TM_Create with explicit members in reverse order (the
 *            even ranks), by parent rank and by job rank, then
 *            collectives on the result.
 *   legacy   gasnet_coll.h: broadcast, scatter, gather, gather_all and
 *            exchange, blocking and _nb, with every IN x OUT sync flag
 *            pair and SINGLE / LOCAL, on GASNET_TEAM_ALL and on a
 *            sub-team; named team barriers, matching and mismatched.
 *   legacy-sizes  every gasnet_coll.h operation at 1 and 70001 bytes (past
 *            one AM), gather_all also in place, every IN x OUT x SINGLE /
 *            LOCAL combination with and without the IN_SEGMENT hints, on
 *            GASNET_TEAM_ALL and a sub-team.
 *   legacy-allsync  IN_ALLSYNC: the last rank enters gather_all, gather,
 *            exchange, broadcast, scatter first; rank 0 then writes its
 *            source (AM, answered) and enters; every result must hold the
 *            new source.
 *
 * Misuse (each fatal, naming the call; rank 0 errs):
 *   destroyed-team   gex_Coll_BarrierNB on a destroyed team;
 *   garbage-team     gex_TM_QueryRank on a pointer that is not a team;
 *   am-bad-rank      gex_AM_RequestShort0 to a team rank past the size;
 *   null-parent      gex_TM_Split with GEX_TM_INVALID as the parent;
 *   pair-coll        gex_Coll_BroadcastNB on a gex_TM_Pair;
 *   coll-flags       gasnet_coll_broadcast_nb with two IN_ sync flags;
 *   destroy-primordial  gex_TM_Destroy of the primordial team;
 *   size-flags       gex_TM_Split with both GEX_FLAG_TM_SCRATCH_SIZE_MIN
 *                    and _RECOMMENDED (mutually exclusive). */
#include <gasnet_coll.h>
#include <gasnetex.h>
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
static long g_checks;

static void Barrier(void) { gex_Coll_BarrierBlocking(g_tm, 0); }

static void Finish(const char *mode) {
  Barrier();
  Say("%s ok checks=%ld", mode, g_checks);
  Barrier();
  gasnet_exit(0);
}

/* Checks tm's queries against the expected job ranks of its members (in
 * team order) and my place. */
static void CheckTeam(gex_TM_t tm, const gex_Rank_t *members, gex_Rank_t size,
                      const char *what) {
  CHECK(tm != GEX_TM_INVALID, "%s: no team", what);
  CHECK(gex_TM_QuerySize(tm) == size, "%s: size %u, expected %u", what,
        gex_TM_QuerySize(tm), size);
  gex_Rank_t mine = GEX_RANK_INVALID;
  for (gex_Rank_t r = 0; r < size; ++r) {
    CHECK(gex_TM_TranslateRankToJobrank(tm, r) == members[r],
          "%s: team rank %u is job rank %u, expected %u", what, r,
          gex_TM_TranslateRankToJobrank(tm, r), members[r]);
    CHECK(gex_TM_TranslateJobrankToRank(tm, members[r]) == r,
          "%s: job rank %u -> %u, expected %u", what, members[r],
          gex_TM_TranslateJobrankToRank(tm, members[r]), r);
    if (members[r] == g_me) mine = r;
  }
  CHECK(mine != GEX_RANK_INVALID, "%s: I am not a member", what);
  CHECK(gex_TM_QueryRank(tm) == mine, "%s: rank %u, expected %u", what,
        gex_TM_QueryRank(tm), mine);
  for (gex_Rank_t j = 0; j < g_n; ++j) {
    int in = 0;
    for (gex_Rank_t r = 0; r < size; ++r) in |= members[r] == j;
    if (!in) {
      CHECK(gex_TM_TranslateJobrankToRank(tm, j) == GEX_RANK_INVALID,
            "%s: job rank %u is not a member but translates", what, j);
    }
  }
  CHECK(gex_TM_QueryClient(tm) == g_client, "%s: client", what);
  CHECK(gex_TM_QueryEP(tm) == g_ep, "%s: EP", what);
  CHECK(gex_TM_QueryCData(tm) == NULL, "%s: cdata not NULL", what);
  gex_TM_SetCData(tm, &g_checks);
  CHECK(gex_TM_QueryCData(tm) == &g_checks, "%s: cdata", what);
  ++g_checks;
}

/* A sum over a team, through it, checked against `expect`. */
static void CheckSum(gex_TM_t tm, int64_t mine, int64_t expect,
                     const char *what) {
  int64_t out = -1;
  gex_Event_Wait(gex_Coll_ReduceToAllNB(
      tm, &out, &mine, GEX_DT_I64, sizeof mine, 1, GEX_OP_ADD, NULL, NULL, 0));
  CHECK(out == expect, "%s: sum %lld, expected %lld", what, (long long)out,
        (long long)expect);
}

/* ------------------------------------------------------------------------ */

static gex_TM_t SplitParity(gex_Rank_t *members, gex_Rank_t *size) {
  /* Colour: parity; key: minus the job rank, so the team runs backwards. */
  gex_TM_t t = GEX_TM_INVALID;
  gex_TM_Split(&t, g_tm, (int)(g_me % 2), -(int)g_me, NULL, 0,
               GEX_FLAG_TM_NO_SCRATCH);
  *size = 0;
  for (gex_Rank_t j = g_n; j-- > 0;) {
    if (j % 2 == g_me % 2) members[(*size)++] = j;
  }
  return t;
}

static void Split(void) {
  gex_Rank_t members[64], size;
  CHECK(g_n <= 64, "at most 64 ranks");
  CHECK(gex_TM_Split(NULL, g_tm, 0, 0, NULL, 0,
                     GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED) == 0 &&
            gex_TM_Split(NULL, g_tm, 0, 0, NULL, 0,
                         GEX_FLAG_TM_SCRATCH_SIZE_MIN) == 0,
        "scratch size queries");

  gex_TM_t parity = SplitParity(members, &size);
  CheckTeam(parity, members, size, "parity");
  int64_t sum = 0;
  for (gex_Rank_t r = 0; r < size; ++r) sum += members[r];
  CheckSum(parity, g_me, sum, "parity");

  /* Thirds by job rank (uneven when 3 does not divide n), natural order;
   * with scratch memory given (accepted, returned by destroy). */
  static char scratch[256];
  gex_TM_t third = GEX_TM_INVALID;
  gex_TM_Split(&third, g_tm, (int)(g_me / 3), 0, scratch, sizeof scratch,
               GEX_FLAG_TM_LOCAL_SCRATCH);
  gex_Rank_t tm_members[3], tsize = 0;
  for (gex_Rank_t j = g_me / 3 * 3; j < g_n && j < g_me / 3 * 3 + 3; ++j) {
    tm_members[tsize++] = j;
  }
  CheckTeam(third, tm_members, tsize, "third");

  /* Excluded: every third rank (GEX_TM_NO_COLOR), and rank 1 with a
   * negative colour; the others all in one team, by job rank. */
  const int excluded = g_me % 3 == 2 || g_me == 1;
  gex_TM_t rest = (gex_TM_t)&members; /* must be overwritten */
  gex_TM_Split(&rest, g_tm,
               g_me % 3 == 2 ? GEX_TM_NO_COLOR
               : g_me == 1   ? -5
                             : 7,
               0, NULL, 0, 0);
  if (excluded) {
    CHECK(rest == GEX_TM_INVALID, "excluded rank got a team");
  } else {
    gex_Rank_t rm[64], rsize = 0;
    for (gex_Rank_t j = 0; j < g_n; ++j) {
      if (!(j % 3 == 2 || j == 1)) rm[rsize++] = j;
    }
    CheckTeam(rest, rm, rsize, "rest");
    CheckSum(rest, 1, rsize, "rest");
  }

  /* Nested: split the parity team by (team rank / 2), keys equal (so
   * parent order). */
  gex_TM_t nested = GEX_TM_INVALID;
  const gex_Rank_t prank = gex_TM_QueryRank(parity);
  gex_TM_Split(&nested, parity, (int)(prank / 2), 0, NULL, 0, 0);
  gex_Rank_t nm[2], nsize = 0;
  for (gex_Rank_t r = prank / 2 * 2; r < size && r < prank / 2 * 2 + 2; ++r) {
    nm[nsize++] = members[r];
  }
  CheckTeam(nested, nm, nsize, "nested");
  CheckSum(nested, g_me, nm[0] + (nsize > 1 ? nm[1] : 0), "nested");

  /* Destroy (nested first), then split again and use the new team. */
  gex_Memvec_t sv = {NULL, 0};
  CHECK(gex_TM_Destroy(nested, NULL, 0) == 0, "destroy nested");
  CHECK(gex_TM_Destroy(third, &sv, 0) != 0, "destroy third: no scratch");
  CHECK(sv.gex_addr == scratch && sv.gex_len == sizeof scratch,
        "destroy third: scratch %p %zu", sv.gex_addr, sv.gex_len);
  if (!excluded) gex_TM_Destroy(rest, NULL, 0);
  gex_TM_Destroy(parity, NULL, 0);
  for (int round = 0; round < 3; ++round) {
    gex_TM_t again = SplitParity(members, &size);
    CheckTeam(again, members, size, "parity again");
    sum = 0;
    for (gex_Rank_t r = 0; r < size; ++r) sum += members[r];
    CheckSum(again, g_me, sum, "parity again");
    gex_Coll_BarrierBlocking(again, 0);
    gex_TM_Destroy(again, NULL, 0);
  }
  Finish("split");
}

/* ------------------------------------------------------------------------
 * split-null: GASNet-EX spec, gex_TM_Split ("Operations on gex_TM_t") and
 * gex_TM_Create: with GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED the call is a
 * collective query that creates nothing and writes nothing to new_tm_p,
 * returning the recommended scratch size, 0 for a caller passing NULL
 * new_tm_p (it will join no team) and otherwise single-valued over each new
 * team; _MIN likewise (deprecated; at most the recommended size). A caller
 * passing NULL new_tm_p to the split itself takes part in the collective
 * but joins no team, even with a colour others pass. The pattern UPC++'s
 * team::split uses: query, allocate, split. */

static void SplitNull(void) {
  CHECK(g_n <= 64, "at most 64 ranks");
  /* Every rank 3k + 1 opts out with NULL; the others split by parity,
   * their colour shared with some opted-out ranks, keys reversing the
   * order. */
  const int joins = g_me % 3 != 1;
  const int color = (int)(g_me % 2);
  const int key = -(int)g_me;
  gex_TM_t sentinel = (gex_TM_t)&g_checks;
  gex_TM_t t = sentinel;
  gex_TM_t *p = joins ? &t : NULL;
  const size_t rec = gex_TM_Split(p, g_tm, color, key, NULL, 0,
                                  GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED);
  const size_t min =
      gex_TM_Split(p, g_tm, color, key, NULL, 0, GEX_FLAG_TM_SCRATCH_SIZE_MIN);
  CHECK(t == sentinel, "a scratch-size query wrote *new_tm_p");
  if (joins) {
    CHECK(rec > 0, "GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED returned 0");
    CHECK(min > 0 && min <= rec,
          "GEX_FLAG_TM_SCRATCH_SIZE_MIN returned %zu (recommended %zu)", min,
          rec);
  } else {
    CHECK(rec == 0 && min == 0,
          "size queries with NULL new_tm_p returned %zu and %zu, expected 0",
          rec, min);
  }
  /* Single-valued over the job (every member's query asks the same). */
  int64_t mine[2] = {joins ? (int64_t)rec : INT64_MIN,
                     joins ? -(int64_t)rec : INT64_MIN};
  int64_t most[2] = {0, 0};
  gex_Event_Wait(gex_Coll_ReduceToAllNB(g_tm, most, mine, GEX_DT_I64,
                                        sizeof(int64_t), 2, GEX_OP_MAX, NULL,
                                        NULL, 0));
  CHECK(!joins || (most[0] == (int64_t)rec && -most[1] == (int64_t)rec),
        "recommended sizes differ: %lld to %lld", (long long)-most[1],
        (long long)most[0]);
  /* gex_TM_Create's query: positive for a member list, 0 for none. */
  gex_EP_Location_t self = {g_me, 0};
  gex_TM_t ct = sentinel;
  CHECK(gex_TM_Create(&ct, 1, g_tm, &self, 1, NULL, 0,
                      GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED) > 0 &&
            gex_TM_Create(&ct, 1, g_tm, NULL, 0, NULL, 0,
                          GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED) == 0 &&
            ct == sentinel,
        "gex_TM_Create scratch-size queries");
  ++g_checks;

  void *scratch = joins ? malloc(rec) : NULL;
  CHECK(!joins || scratch != NULL, "malloc");
  gex_TM_Split(p, g_tm, color, key, scratch, rec, 0);
  if (joins) {
    gex_Rank_t members[64], size = 0;
    for (gex_Rank_t j = g_n; j-- > 0;) {
      if (j % 3 != 1 && j % 2 == g_me % 2) members[size++] = j;
    }
    CheckTeam(t, members, size, "split with opted-out ranks");
    int64_t sum = 0;
    for (gex_Rank_t r = 0; r < size; ++r) sum += members[r];
    CheckSum(t, g_me, sum, "split with opted-out ranks");
    gex_Memvec_t sv = {NULL, 0};
    CHECK(gex_TM_Destroy(t, &sv, 0) != 0 && sv.gex_addr == scratch &&
              sv.gex_len == rec,
          "destroy: scratch not handed back");
    free(scratch);
  }
  /* Everyone still agrees on the job team's collectives. */
  CheckSum(g_tm, 1, g_n, "job team after the split");
  ++g_checks;
  Finish("split-null");
}

/* ------------------------------------------------------------------------ */

static unsigned char Byte(gex_Rank_t root, size_t i, unsigned salt) {
  return (unsigned char)(i * 29u + root * 13u + salt * 7u + 3u);
}

static void Coll(void) {
  gex_Rank_t members[64], size;
  gex_TM_t team = SplitParity(members, &size);
  const gex_Rank_t me = gex_TM_QueryRank(team);
  enum { kBytes = 70000 };
  /* As many rounds on every rank (each has a job-team reduction in it),
   * every root of the larger team, the smaller team's roots repeating. */
  for (gex_Rank_t it = 0; it < (g_n + 1) / 2; ++it) {
    const gex_Rank_t root = it % size;
    unsigned char *src = malloc(kBytes), *dst = malloc(kBytes);
    for (size_t i = 0; i < kBytes; ++i) src[i] = Byte(root, i, g_me % 2);
    memset(dst, 0, kBytes);
    int64_t rsrc[3] = {(int64_t)g_me, -(int64_t)g_me, 1};
    int64_t rone[3] = {0, 0, 0}, rall[3] = {0, 0, 0};
    int64_t job_in = (int64_t)g_me * 3, job_out = -1;
    gex_Event_t ev[6];
    ev[0] = gex_Coll_BarrierNB(team, 0);
    ev[1] = gex_Coll_BroadcastNB(team, root, dst, me == root ? src : NULL,
                                 kBytes, 0);
    ev[2] = gex_Coll_ReduceToAllNB(g_tm, &job_out, &job_in, GEX_DT_I64, 8, 1,
                                   GEX_OP_ADD, NULL, NULL, 0);
    ev[3] = gex_Coll_ReduceToOneNB(team, root, rone, rsrc, GEX_DT_I64, 8, 3,
                                   GEX_OP_MAX, NULL, NULL, 0);
    ev[4] = gex_Coll_ReduceToAllNB(team, rall, rsrc, GEX_DT_I64, 8, 3,
                                   GEX_OP_ADD, NULL, NULL, 0);
    ev[5] = gex_Coll_BarrierNB(team, 0);
    for (int i = 5; i >= 0; --i) gex_Event_Wait(ev[i]);
    for (size_t i = 0; i < kBytes; ++i) {
      CHECK(dst[i] == Byte(root, i, g_me % 2), "bcast root %u byte %zu", root,
            i);
    }
    int64_t sum = 0, max = 0;
    for (gex_Rank_t r = 0; r < size; ++r) {
      sum += members[r];
      if ((int64_t)members[r] > max) max = members[r];
    }
    CHECK(rall[0] == sum && rall[1] == -sum && rall[2] == (int64_t)size,
          "reduce to all: %lld %lld %lld", (long long)rall[0],
          (long long)rall[1], (long long)rall[2]);
    if (me == root) {
      CHECK(rone[0] == max && rone[2] == 1, "reduce to one: %lld",
            (long long)rone[0]);
    }
    CHECK(job_out == 3 * (int64_t)g_n * (g_n - 1) / 2, "job sum %lld",
          (long long)job_out);
    gex_Coll_BarrierBlocking(team, 0);
    free(src);
    free(dst);
    ++g_checks;
  }
  /* A team of the team, both used in turn. */
  gex_TM_t sub = GEX_TM_INVALID;
  gex_TM_Split(&sub, team, (int)(me % 2), 0, NULL, 0, 0);
  int64_t expect = 0;
  for (gex_Rank_t r = me % 2; r < size; r += 2) expect += members[r];
  CheckSum(sub, g_me, expect, "sub of sub");
  gex_Coll_BarrierBlocking(sub, 0);
  gex_Coll_BarrierBlocking(team, 0);
  gex_TM_Destroy(sub, NULL, 0);
  gex_TM_Destroy(team, NULL, 0);
  Finish("coll");
}

/* ------------------------------------------------------------------------ */

static volatile int g_arrived;
static gex_TM_t g_am_team;

static void RingShort(gex_Token_t token, gex_AM_Arg_t team_rank,
                      gex_AM_Arg_t job_rank) {
  gex_Token_Info_t info;
  gex_Token_Info(token, &info, GEX_TI_SRCRANK);
  CHECK(info.gex_srcrank == (gex_Rank_t)job_rank, "sender %u, said %d",
        info.gex_srcrank, job_rank);
  const gex_Rank_t size = gex_TM_QuerySize(g_am_team);
  const gex_Rank_t me = gex_TM_QueryRank(g_am_team);
  CHECK((gex_Rank_t)team_rank == (me + size - 1) % size,
        "from team rank %d, expected %u", team_rank, (me + size - 1) % size);
  CHECK(gex_TM_TranslateRankToJobrank(g_am_team, (gex_Rank_t)team_rank) ==
            (gex_Rank_t)job_rank,
        "team rank %d is not job rank %d", team_rank, job_rank);
  g_arrived = g_arrived + 1;
}

static void RingMedium(gex_Token_t token, void *buf, size_t nbytes,
                       gex_AM_Arg_t job_rank) {
  (void)token;
  CHECK(nbytes == sizeof(gex_Rank_t), "medium %zu bytes", nbytes);
  gex_Rank_t r;
  memcpy(&r, buf, sizeof r);
  CHECK(r == (gex_Rank_t)job_rank, "medium payload %u", r);
  g_arrived = g_arrived + 1;
}

static void Am(void) {
  gex_AM_Entry_t entries[2] = {
      {0, (gex_AM_Fn_t)RingShort, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 2,
       NULL, "ring short"},
      {0, (gex_AM_Fn_t)RingMedium, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 1,
       NULL, "ring medium"}};
  CHECK(gex_EP_RegisterHandlers(g_ep, entries, 2) == GASNET_OK, "register");
  gex_Rank_t members[64], size;
  g_am_team = SplitParity(members, &size);
  /* The handler reads g_am_team: every member has stored it before any
   * message (the team itself is usable as soon as Split returns). */
  gex_Coll_BarrierBlocking(g_am_team, 0);
  const gex_Rank_t me = gex_TM_QueryRank(g_am_team);
  enum { kRounds = 20 };
  for (int i = 0; i < kRounds; ++i) {
    gex_AM_RequestShort2(g_am_team, (me + 1) % size, entries[0].gex_index, 0,
                         (gex_AM_Arg_t)me, (gex_AM_Arg_t)g_me);
    gex_AM_RequestMedium1(g_am_team, (me + 1) % size, entries[1].gex_index,
                          &g_me, sizeof g_me, GEX_EVENT_NOW, 0,
                          (gex_AM_Arg_t)g_me);
  }
  GASNET_BLOCKUNTIL(g_arrived == 2 * kRounds);
  gex_Coll_BarrierBlocking(g_am_team, 0);
  CHECK(g_arrived == 2 * kRounds, "arrived %d", g_arrived);
  g_checks += g_arrived;
  gex_TM_Destroy(g_am_team, NULL, 0);
  Finish("am");
}

/* ------------------------------------------------------------------------ */

static volatile int g_pair_hits;
static void PairHit(gex_Token_t token) {
  (void)token;
  g_pair_hits = g_pair_hits + 1;
}

static volatile int g_long_hits;
static void LongHit(gex_Token_t token, void *buf, size_t nbytes) {
  (void)token;
  (void)buf;
  (void)nbytes;
  g_long_hits = g_long_hits + 1;
}

static void Pair(void) {
  gex_AM_Entry_t entries[2] = {
      {0, (gex_AM_Fn_t)PairHit, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0,
       NULL, "pair hit"},
      {0, (gex_AM_Fn_t)LongHit, GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQUEST, 0, NULL,
       "long hit"}};
  CHECK(gex_EP_RegisterHandlers(g_ep, entries, 2) == GASNET_OK, "register");
  gex_AM_Entry_t entry = entries[0];
  gex_Segment_t seg;
  CHECK(gex_Segment_Attach(&seg, g_tm, 1 << 16) == GASNET_OK, "attach");
  gex_TM_t pair = gex_TM_Pair(g_ep, 0);
  CHECK(pair != GEX_TM_INVALID, "no pair");
  CHECK(gex_TM_Pair(g_ep, 0) == pair, "a second pair handle");
  CHECK(gex_TM_QueryEP(pair) == g_ep && gex_TM_QueryClient(pair) == g_client,
        "pair queries");
  const gex_Rank_t peer = (g_me + 1) % g_n;
  void *remote;
  gex_Event_Wait(
      gex_EP_QueryBoundSegmentNB(g_tm, peer, &remote, NULL, NULL, 0));
  uint64_t *mine = (uint64_t *)gex_Segment_QueryAddr(seg);
  mine[0] = 0;
  Barrier();
  const uint64_t v = 0xabc000u + g_me;
  gex_RMA_PutBlocking(pair, peer, remote, (void *)&v, sizeof v, 0);
  gex_AM_RequestShort0(pair, peer, entry.gex_index, 0);
  GASNET_BLOCKUNTIL(g_pair_hits == 1);
  Barrier();
  const gex_Rank_t from = (g_me + g_n - 1) % g_n;
  CHECK(mine[0] == 0xabc000u + from, "put through pair: %llx",
        (unsigned long long)mine[0]);
  uint64_t got = 0;
  gex_RMA_GetBlocking(pair, &got, peer, remote, sizeof got, 0);
  CHECK(got == v, "get through pair: %llx", (unsigned long long)got);
  g_checks += 3;

  /* A Long and a Put on a sub-team (the parity team, running backwards):
   * team rank (me + 1) % size, whose segment is that of its job rank. */
  gex_Rank_t members[64], size;
  gex_TM_t team = SplitParity(members, &size);
  const gex_Rank_t tme = gex_TM_QueryRank(team);
  const gex_Rank_t tpeer = (tme + 1) % size;
  const gex_Rank_t jpeer = gex_TM_TranslateRankToJobrank(team, tpeer);
  void *tremote;
  gex_Event_Wait(
      gex_EP_QueryBoundSegmentNB(g_tm, jpeer, &tremote, NULL, NULL, 0));
  mine[1] = mine[2] = 0;
  gex_Coll_BarrierBlocking(team, 0);
  const uint64_t lv = 0x5eed00u + g_me;
  gex_AM_RequestLong0(team, tpeer, entries[1].gex_index, (void *)&lv, sizeof lv,
                      (uint64_t *)tremote + 1, GEX_EVENT_NOW, 0);
  gex_RMA_PutBlocking(team, tpeer, (uint64_t *)tremote + 2, (void *)&lv,
                      sizeof lv, 0);
  GASNET_BLOCKUNTIL(g_long_hits == 1);
  gex_Coll_BarrierBlocking(team, 0);
  const gex_Rank_t jfrom =
      gex_TM_TranslateRankToJobrank(team, (tme + size - 1) % size);
  CHECK(mine[1] == 0x5eed00u + jfrom && mine[2] == 0x5eed00u + jfrom,
        "long / put on the team: %llx %llx, expected from job rank %u",
        (unsigned long long)mine[1], (unsigned long long)mine[2], jfrom);
  gex_TM_Destroy(team, NULL, 0);
  g_checks += 1;
  Finish("pair");
}

/* ------------------------------------------------------------------------ */

static void Create(void) {
  /* The even ranks, highest first; odd ranks join nothing. */
  gex_EP_Location_t args[64];
  gex_Rank_t members[64];
  size_t count = 0;
  for (gex_Rank_t j = g_n; j-- > 0;) {
    if (j % 2 == 0) {
      args[count].gex_rank = j;
      args[count].gex_ep_index = 0;
      members[count++] = j;
    }
  }
  for (int by_jobrank = 0; by_jobrank < 2; ++by_jobrank) {
    gex_TM_t t = GEX_TM_INVALID;
    const int member = g_me % 2 == 0;
    gex_TM_Create(&t, 1, g_tm, member ? args : NULL, member ? count : 0, NULL,
                  0, by_jobrank ? GEX_FLAG_RANK_IS_JOBRANK : 0);
    if (member) {
      CheckTeam(t, members, (gex_Rank_t)count, "create");
      int64_t sum = 0;
      for (size_t i = 0; i < count; ++i) sum += members[i];
      CheckSum(t, g_me, sum, "create");
      gex_TM_Destroy(t, NULL, 0);
    } else {
      CHECK(t == GEX_TM_INVALID, "non-member got a team");
    }
  }
  Finish("create");
}

/* ------------------------------------------------------------------------ */

static const int kIns[3] = {GASNET_COLL_IN_NOSYNC, GASNET_COLL_IN_MYSYNC,
                            GASNET_COLL_IN_ALLSYNC};
static const int kOuts[3] = {GASNET_COLL_OUT_NOSYNC, GASNET_COLL_OUT_MYSYNC,
                             GASNET_COLL_OUT_ALLSYNC};
static const int kAddrs[2] = {GASNET_COLL_SINGLE, GASNET_COLL_LOCAL};

static unsigned char Piece(gex_Rank_t from, gex_Rank_t to, size_t i) {
  return (unsigned char)(from * 31u + to * 7u + i * 3u + 1u);
}

static void CheckBytes(const unsigned char *got, gex_Rank_t from, gex_Rank_t to,
                       size_t n, const char *what, int flags) {
  for (size_t i = 0; i < n; ++i) {
    CHECK(got[i] == Piece(from, to, i),
          "%s flags %#x: from %u to %u byte %zu is %u, expected %u", what,
          flags, from, to, i, got[i], Piece(from, to, i));
  }
}

/* Every op, every flag combination, on `team`. */
static void LegacyOn(gasnet_team_handle_t team) {
  const gex_Rank_t n = gex_TM_QuerySize(team);
  const gex_Rank_t me = gex_TM_QueryRank(team);
  const size_t kN = 37;
  unsigned char *src = malloc(n * kN), *dst = malloc(n * kN);
  for (int a = 0; a < 2; ++a) {
    for (int i = 0; i < 3; ++i) {
      for (int o = 0; o < 3; ++o) {
        for (int nb = 0; nb < 2; ++nb) {
          const int flags = kIns[i] | kOuts[o] | kAddrs[a];
          const gex_Rank_t root = (gex_Rank_t)(i + o + nb) % n;
          gasnet_coll_handle_t h[5];
          /* broadcast (root's piece to "everyone": to = n) */
          for (size_t k = 0; k < kN; ++k) src[k] = Piece(me, n, k);
          memset(dst, 0, n * kN);
          if (nb) {
            /* GASNET_COLL_AGGREGATE (a hint, GASNet-1 collectives) must be
             * accepted and change nothing observable. */
            h[0] = gasnet_coll_broadcast_nb(team, dst, root, src, kN,
                                            flags | GASNET_COLL_AGGREGATE);
            gasnet_coll_wait_sync(h[0]);
          } else {
            gasnet_coll_broadcast(team, dst, root, src, kN, flags);
          }
          CheckBytes(dst, root, n, kN, "broadcast", flags);
          gex_Coll_BarrierBlocking(team, 0);
          /* scatter: root's piece j to rank j */
          for (gex_Rank_t j = 0; j < n; ++j) {
            for (size_t k = 0; k < kN; ++k) src[j * kN + k] = Piece(me, j, k);
          }
          memset(dst, 0, n * kN);
          if (nb) {
            h[1] = gasnet_coll_scatter_nb(team, dst, root, src, kN, flags);
            gasnet_coll_wait_sync(h[1]);
          } else {
            gasnet_coll_scatter(team, dst, root, src, kN, flags);
          }
          CheckBytes(dst, root, me, kN, "scatter", flags);
          gex_Coll_BarrierBlocking(team, 0);
          /* gather and gather_all: my piece (to = root / n) */
          for (size_t k = 0; k < kN; ++k) src[k] = Piece(me, root, k);
          memset(dst, 0, n * kN);
          if (nb) {
            h[2] = gasnet_coll_gather_nb(team, root, dst, src, kN, flags);
            gasnet_coll_wait_sync(h[2]);
          } else {
            gasnet_coll_gather(team, root, dst, src, kN, flags);
          }
          if (me == root) {
            for (gex_Rank_t j = 0; j < n; ++j) {
              CheckBytes(dst + j * kN, j, root, kN, "gather", flags);
            }
          }
          gex_Coll_BarrierBlocking(team, 0);
          memset(dst, 0, n * kN);
          if (nb) {
            h[3] = gasnet_coll_gather_all_nb(team, dst, src, kN, flags);
            gasnet_coll_wait_sync(h[3]);
          } else {
            gasnet_coll_gather_all(team, dst, src, kN, flags);
          }
          for (gex_Rank_t j = 0; j < n; ++j) {
            CheckBytes(dst + j * kN, j, root, kN, "gather_all", flags);
          }
          gex_Coll_BarrierBlocking(team, 0);
          /* exchange: my piece j to rank j */
          for (gex_Rank_t j = 0; j < n; ++j) {
            for (size_t k = 0; k < kN; ++k) src[j * kN + k] = Piece(me, j, k);
          }
          memset(dst, 0, n * kN);
          if (nb) {
            h[4] = gasnet_coll_exchange_nb(team, dst, src, kN, flags);
            gasnet_coll_wait_sync(h[4]);
          } else {
            gasnet_coll_exchange(team, dst, src, kN, flags);
          }
          for (gex_Rank_t j = 0; j < n; ++j) {
            CheckBytes(dst + j * kN, j, me, kN, "exchange", flags);
          }
          gex_Coll_BarrierBlocking(team, 0);
          g_checks += 5;
        }
      }
    }
  }
  /* Several _nb calls in flight, retired together (OUT_ALLSYNC's exit
   * barrier starts only after the data: the sequence stays agreed). */
  gasnet_coll_handle_t hs[4];
  unsigned char *d2 = malloc(n * kN), *d3 = malloc(n * kN);
  for (size_t k = 0; k < kN; ++k) src[k] = Piece(me, n, k);
  const int f =
      GASNET_COLL_IN_ALLSYNC | GASNET_COLL_OUT_ALLSYNC | GASNET_COLL_LOCAL;
  hs[0] = gasnet_coll_broadcast_nb(team, dst, 0, src, kN, f);
  hs[1] = gasnet_coll_gather_all_nb(team, d2, src, kN, f);
  hs[2] = gasnet_coll_broadcast_nb(
      team, d3, n - 1, src, kN,
      GASNET_COLL_IN_NOSYNC | GASNET_COLL_OUT_NOSYNC | GASNET_COLL_SINGLE);
  hs[3] = GASNET_COLL_INVALID_HANDLE;
  gasnet_coll_wait_sync_all(hs, 4);
  CheckBytes(dst, 0, n, kN, "in flight broadcast", f);
  CheckBytes(d3, n - 1, n, kN, "in flight broadcast 2", 0);
  for (gex_Rank_t j = 0; j < n; ++j) {
    CheckBytes(d2 + j * kN, j, n, kN, "in flight gather_all", f);
  }
  g_checks += 3;
  free(d2);
  free(d3);
  free(src);
  free(dst);

  /* Named team barriers: matching, anonymous, then mismatched. */
  CHECK(gasnet_coll_barrier(team, 42, 0) == GASNET_OK, "named barrier");
  CHECK(gasnet_coll_barrier(team, 0, GASNET_BARRIERFLAG_ANONYMOUS) == GASNET_OK,
        "anonymous barrier");
  gasnet_coll_barrier_notify(team, 7, 0);
  int rc;
  while ((rc = gasnet_coll_barrier_try(team, 7, 0)) == GASNET_ERR_NOT_READY) {
  }
  CHECK(rc == GASNET_OK, "try barrier: %d", rc);
  if (n > 1) {
    rc = gasnet_coll_barrier(team, me == 0 ? 1 : 2, 0);
    CHECK(rc == GASNET_ERR_BARRIER_MISMATCH, "mismatch not seen: %d", rc);
  }
  /* The wait's own id and flags (GASNet-1 spec, gasnet_barrier_wait, as
   * GASNet-EX implements it: checked against the barrier's outcome): an
   * anonymous notify and a named wait, a named notify and an anonymous
   * wait, succeed; a named wait with another name than the barrier's is a
   * mismatch on that rank only. */
  gasnet_coll_barrier_notify(team, 0, GASNET_BARRIERFLAG_ANONYMOUS);
  rc = gasnet_coll_barrier_wait(team, (int)me + 3, 0);
  CHECK(rc == GASNET_OK, "anonymous notify, named wait: %d", rc);
  gasnet_coll_barrier_notify(team, 9, 0);
  while ((rc = gasnet_coll_barrier_try(
              team, 0, GASNET_BARRIERFLAG_ANONYMOUS)) == GASNET_ERR_NOT_READY) {
  }
  CHECK(rc == GASNET_OK, "named notify, anonymous try: %d", rc);
  gasnet_coll_barrier_notify(team, me == 0 ? 0 : 11,
                             me == 0 ? GASNET_BARRIERFLAG_ANONYMOUS : 0);
  rc = gasnet_coll_barrier_wait(team, me == n - 1 ? 12 : 11, 0);
  CHECK(rc == (me == n - 1 && n > 1 ? GASNET_ERR_BARRIER_MISMATCH : GASNET_OK),
        "named wait against the barrier's name: %d", rc);
  g_checks += 1;
}

/* legacy-sizes: gasnet_coll.h's gather_all (and gather, exchange,
 * broadcast, scatter) at sizes beyond one Active Message and with the
 * source inside the destination (its own piece, in place), every flag
 * combination (GASNet-1 collectives: IN_/OUT_ NOSYNC, MYSYNC, ALLSYNC x
 * SINGLE, LOCAL x the IN_SEGMENT hints), on `team`. */
static void LegacySizesOn(gasnet_team_handle_t team) {
  static const size_t kSizes[] = {1, 70001};
  const gex_Rank_t n = gex_TM_QuerySize(team);
  const gex_Rank_t me = gex_TM_QueryRank(team);
  const size_t most = 70001;
  unsigned char *src = malloc(n * most), *dst = malloc(n * most);
  CHECK(src != NULL && dst != NULL, "malloc");
  for (size_t z = 0; z < sizeof kSizes / sizeof kSizes[0]; ++z) {
    const size_t kN = kSizes[z];
    for (int a = 0; a < 2; ++a) {
      for (int i = 0; i < 3; ++i) {
        for (int o = 0; o < 3; ++o) {
          const int seg = (i + o + a) % 2 == 0 ? 0
                                               : GASNET_COLL_SRC_IN_SEGMENT |
                                                     GASNET_COLL_DST_IN_SEGMENT;
          const int flags = kIns[i] | kOuts[o] | kAddrs[a] | seg;
          const gex_Rank_t root = (gex_Rank_t)(i + o + z) % n;
          /* gather_all from a separate source */
          for (size_t k = 0; k < kN; ++k) src[k] = Piece(me, root, k);
          memset(dst, 0, n * kN);
          gasnet_coll_gather_all(team, dst, src, kN, flags);
          for (gex_Rank_t j = 0; j < n; ++j) {
            CheckBytes(dst + j * kN, j, root, kN, "gather_all", flags);
          }
          /* gather_all in place: the source is this rank's own piece of
           * the destination */
          memset(dst, 0, n * kN);
          for (size_t k = 0; k < kN; ++k) dst[me * kN + k] = Piece(me, root, k);
          gasnet_coll_gather_all(team, dst, dst + me * kN, kN, flags);
          for (gex_Rank_t j = 0; j < n; ++j) {
            CheckBytes(dst + j * kN, j, root, kN, "gather_all in place", flags);
          }
          /* gather to root */
          memset(dst, 0, n * kN);
          gasnet_coll_gather(team, root, dst, src, kN, flags);
          if (me == root) {
            for (gex_Rank_t j = 0; j < n; ++j) {
              CheckBytes(dst + j * kN, j, root, kN, "gather", flags);
            }
          }
          /* exchange */
          for (gex_Rank_t j = 0; j < n; ++j) {
            for (size_t k = 0; k < kN; ++k) src[j * kN + k] = Piece(me, j, k);
          }
          memset(dst, 0, n * kN);
          gasnet_coll_exchange(team, dst, src, kN, flags);
          for (gex_Rank_t j = 0; j < n; ++j) {
            CheckBytes(dst + j * kN, j, me, kN, "exchange", flags);
          }
          /* broadcast and scatter */
          for (size_t k = 0; k < kN; ++k) src[k] = Piece(me, n, k);
          memset(dst, 0, n * kN);
          gasnet_coll_broadcast(team, dst, root, src, kN, flags);
          CheckBytes(dst, root, n, kN, "broadcast", flags);
          for (gex_Rank_t j = 0; j < n; ++j) {
            for (size_t k = 0; k < kN; ++k) src[j * kN + k] = Piece(me, j, k);
          }
          memset(dst, 0, n * kN);
          gasnet_coll_scatter(team, dst, root, src, kN, flags);
          CheckBytes(dst, root, me, kN, "scatter", flags);
          gex_Coll_BarrierBlocking(team, 0);
        }
      }
    }
    ++g_checks;
  }
  free(src);
  free(dst);
}

static void LegacySizes(void) {
  LegacySizesOn(GASNET_TEAM_ALL);
  gex_Rank_t members[64], size;
  gex_TM_t team = SplitParity(members, &size);
  LegacySizesOn(team);
  gex_TM_Destroy(team, NULL, 0);
  Finish("legacy-sizes");
}

/* legacy-allsync: GASNET_COLL_IN_ALLSYNC (GASNet-1 collectives: no data
 * moves until every rank has entered; the mode for input that other ranks
 * may still be writing, e.g. with a Put, before they enter). The last rank
 * v enters gather_all / gather / exchange (and broadcast, scatter) first,
 * non-blocking, and tells rank 0; only then does rank 0 write new input
 * into v's source (an AM Request whose handler writes it, answered before
 * rank 0 goes on: as a completed Put) and enter. Every result must hold
 * the new input: a rank that read its source when it entered, before
 * everyone had, delivers the old. SINGLE and LOCAL, every OUT_ mode. */
enum { kAllsyncN = 4099, kAllsyncChunk = 512 };
static unsigned char g_allsync_src[64 * kAllsyncN];
static volatile int g_allsync_entered;
static volatile int g_allsync_written;

static void AllsyncEntered(gex_Token_t token) {
  (void)token;
  g_allsync_entered = g_allsync_entered + 1;
}
static void AllsyncWritten(gex_Token_t token) {
  (void)token;
  g_allsync_written = g_allsync_written + 1;
}
static gex_AM_Index_t g_allsync_written_index;
static void AllsyncWrite(gex_Token_t token, void *buf, size_t nbytes,
                         gex_AM_Arg_t offset) {
  memcpy(g_allsync_src + (size_t)offset, buf, nbytes);
  gex_AM_ReplyShort0(token, g_allsync_written_index, 0);
}

static void LegacyAllsync(void) {
  gex_AM_Entry_t entries[3] = {
      {0, (gex_AM_Fn_t)AllsyncEntered, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST,
       0, NULL, "allsync entered"},
      {0, (gex_AM_Fn_t)AllsyncWritten, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0,
       NULL, "allsync written"},
      {0, (gex_AM_Fn_t)AllsyncWrite, GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST,
       1, NULL, "allsync write"}};
  CHECK(gex_EP_RegisterHandlers(g_ep, entries, 3) == GASNET_OK, "register");
  g_allsync_written_index = entries[1].gex_index;
  CHECK(g_n <= 64, "at most 64 ranks");
  Barrier();
  const gex_Rank_t n = g_n, me = g_me, v = g_n - 1;
  const size_t kN = kAllsyncN;
  unsigned char *dst = malloc(n * kN), *fresh = malloc(n * kN);
  CHECK(dst != NULL && fresh != NULL, "malloc");
  int round = 0;
  for (int a = 0; a < 2; ++a) {
    for (int o = 0; o < 3; ++o) {
      for (int op = 0; op < 5; ++op, ++round) {
        const int flags = GASNET_COLL_IN_ALLSYNC | kOuts[o] | kAddrs[a];
        const gex_Rank_t root = (gex_Rank_t)round % n;
        /* Old input everywhere (0x00), the new input for v's source. */
        const size_t srclen = (op == 2 || op == 4) ? n * kN : kN;
        memset(g_allsync_src, 0, srclen);
        for (size_t k = 0; k < srclen; ++k) {
          fresh[k] = op == 2 || op == 4
                         ? Piece(me == v ? v : me, (gex_Rank_t)(k / kN), k % kN)
                         : Piece(me == v ? v : me, root, k);
        }
        if (me != v || n == 1) memcpy(g_allsync_src, fresh, srclen);
        for (size_t k = 0; k < srclen && n > 1; ++k) {
          fresh[k] = op == 2 || op == 4 ? Piece(v, (gex_Rank_t)(k / kN), k % kN)
                                        : Piece(v, root, k);
        }
        memset(dst, 0, n * kN);
        Barrier();
        gasnet_coll_handle_t h = GASNET_COLL_INVALID_HANDLE;
        if (n > 1 && me == 0) {
          /* Wait until v has entered, then give it its input. */
          GASNET_BLOCKUNTIL(g_allsync_entered == round + 1);
          for (size_t off = 0; off < srclen; off += kAllsyncChunk) {
            const int written = g_allsync_written;
            const size_t len =
                srclen - off < kAllsyncChunk ? srclen - off : kAllsyncChunk;
            CHECK(gex_AM_RequestMedium1(g_tm, v, entries[2].gex_index,
                                        fresh + off, len, GEX_EVENT_NOW, 0,
                                        (gex_AM_Arg_t)off) == GASNET_OK,
                  "write request");
            GASNET_BLOCKUNTIL(g_allsync_written == written + 1);
          }
        }
        switch (op) {
          case 0:
            h = gasnet_coll_gather_all_nb(GASNET_TEAM_ALL, dst, g_allsync_src,
                                          kN, flags);
            break;
          case 1:
            h = gasnet_coll_gather_nb(GASNET_TEAM_ALL, root, dst, g_allsync_src,
                                      kN, flags);
            break;
          case 2:
            h = gasnet_coll_exchange_nb(GASNET_TEAM_ALL, dst, g_allsync_src, kN,
                                        flags);
            break;
          case 3:
            h = gasnet_coll_broadcast_nb(GASNET_TEAM_ALL, dst, v, g_allsync_src,
                                         kN, flags);
            break;
          default:
            h = gasnet_coll_scatter_nb(GASNET_TEAM_ALL, dst, v, g_allsync_src,
                                       kN, flags);
            break;
        }
        if (n > 1 && me == v) {
          CHECK(gex_AM_RequestShort0(g_tm, 0, entries[0].gex_index, 0) ==
                    GASNET_OK,
                "entered request");
        }
        gasnet_coll_wait_sync(h);
        switch (op) {
          case 0:
            for (gex_Rank_t j = 0; j < n; ++j) {
              CheckBytes(dst + j * kN, j, root, kN, "IN_ALLSYNC gather_all",
                         flags);
            }
            break;
          case 1:
            if (me == root) {
              for (gex_Rank_t j = 0; j < n; ++j) {
                CheckBytes(dst + j * kN, j, root, kN, "IN_ALLSYNC gather",
                           flags);
              }
            }
            break;
          case 2:
            for (gex_Rank_t j = 0; j < n; ++j) {
              CheckBytes(dst + j * kN, j, me, kN, "IN_ALLSYNC exchange", flags);
            }
            break;
          case 3:
            CheckBytes(dst, v, root, kN, "IN_ALLSYNC broadcast", flags);
            break;
          default:
            CheckBytes(dst, v, me, kN, "IN_ALLSYNC scatter", flags);
            break;
        }
        Barrier();
      }
    }
  }
  ++g_checks;
  free(dst);
  free(fresh);
  Finish("legacy-allsync");
}

static void Legacy(void) {
  gasnet_coll_dumpProfile(NULL, GASNET_TEAM_ALL);
  gasnet_coll_dumpTuningState(NULL, GASNET_TEAM_ALL);
  CHECK(GASNET_TEAM_ALL == g_tm, "GASNET_TEAM_ALL is not the primordial team");
  LegacyOn(GASNET_TEAM_ALL);
  gex_Rank_t members[64], size;
  gex_TM_t team = SplitParity(members, &size);
  LegacyOn(team);
  gex_TM_Destroy(team, NULL, 0);
  Finish("legacy");
}

/* ------------------------------------------------------------------------ */

static void Misuse(const char *mode) {
  gex_Rank_t members[64], size;
  gex_TM_t team = SplitParity(members, &size);
  gex_TM_t dead = team;
  gex_TM_Destroy(team, NULL, 0);
  gex_TM_t live = SplitParity(members, &size);
  Barrier();
  if (g_me == 0) {
    long garbage[8] = {0};
    unsigned char b[8] = {0};
    if (strcmp(mode, "destroyed-team") == 0) {
      gex_Coll_BarrierNB(dead, 0);
    } else if (strcmp(mode, "garbage-team") == 0) {
      gex_TM_QueryRank((gex_TM_t)(void *)garbage);
    } else if (strcmp(mode, "am-bad-rank") == 0) {
      gex_AM_RequestShort0(live, size, GEX_AM_INDEX_BASE, 0);
    } else if (strcmp(mode, "null-parent") == 0) {
      gex_TM_t t2 = GEX_TM_INVALID;
      gex_TM_Split(&t2, GEX_TM_INVALID, 0, 0, NULL, 0, 0);
    } else if (strcmp(mode, "pair-coll") == 0) {
      gex_Coll_BroadcastNB(gex_TM_Pair(g_ep, 0), 0, b, b, sizeof b, 0);
    } else if (strcmp(mode, "coll-flags") == 0) {
      gasnet_coll_broadcast_nb(GASNET_TEAM_ALL, b, 0, b, sizeof b,
                               GASNET_COLL_IN_NOSYNC | GASNET_COLL_IN_MYSYNC |
                                   GASNET_COLL_OUT_NOSYNC | GASNET_COLL_LOCAL);
    } else if (strcmp(mode, "destroy-primordial") == 0) {
      gex_TM_Destroy(g_tm, NULL, 0);
    } else if (strcmp(mode, "size-flags") == 0) {
      gex_TM_t t2 = GEX_TM_INVALID;
      gex_TM_Split(
          &t2, g_tm, 0, 0, NULL, 0,
          GEX_FLAG_TM_SCRATCH_SIZE_MIN | GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED);
    } else {
      CHECK(0, "unknown mode %s", mode);
    }
    Say("survived %s", mode);
  }
  for (;;) {
    gasnet_AMPoll();
    sched_yield();
  }
}

int main(int argc, char **argv) {
  CHECK(gex_Client_Init(&g_client, &g_ep, &g_tm, "TEAM_TEST", &argc, &argv,
                        0) == GASNET_OK,
        "gex_Client_Init failed");
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = (int)g_me;
  CHECK(argc == 2, "usage: team_client MODE");
  const char *mode = argv[1];
  if (strcmp(mode, "split") == 0) Split();
  if (strcmp(mode, "split-null") == 0) SplitNull();
  if (strcmp(mode, "coll") == 0) Coll();
  if (strcmp(mode, "am") == 0) Am();
  if (strcmp(mode, "pair") == 0) Pair();
  if (strcmp(mode, "create") == 0) Create();
  if (strcmp(mode, "legacy") == 0) Legacy();
  if (strcmp(mode, "legacy-sizes") == 0) LegacySizes();
  if (strcmp(mode, "legacy-allsync") == 0) LegacyAllsync();
  Misuse(mode);
  return 0;
}
