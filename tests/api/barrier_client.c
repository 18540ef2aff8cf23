/* barrier_client: one rank of a barrier job over any conduit (SEQ),
 * started by its launcher from barrier_job_test. Written in C11 against
 * <gasnet.h> (the legacy barrier) and <gasnetex.h>. A failed check ends the
 * job with exit code 1 ("rank R: CHECK FAILED ..."); a rank that passed
 * prints "rank R: <mode> ok barriers=B".
 *
 * Barriers that must synchronize are checked to, with Active Messages,
 * whatever the job's layout: just before entering barrier number b
 * (counting from 0) every rank sends a Short Request carrying b to every
 * rank (itself too) and waits for all n replies, so that each rank has
 * counted its arrival at b (in the request handler) before it enters. Right
 * after leaving barrier b a rank checks, without polling again, that it has
 * counted all n arrivals at b (each sender saw this rank's reply before it
 * entered, so none is still on its way: fewer means the barrier let this
 * rank through before everyone arrived) and none at b + 2 (nobody got
 * further than the next barrier).
 *
 *   legacy    gasnet_barrier_notify/wait and gasnet_barrier: named with
 *             several ids (0, -1, INT_MAX, INT_MIN, ...), anonymous (ids
 *             differing per rank), mixed: each rank in turn anonymous while
 *             the rest name one id, and each rank in turn named while the
 *             rest are anonymous; all GASNET_OK, and gasnet_barrier_result
 *             gives GASNET_OK with the id for a named barrier and non-OK for
 *             an all-anonymous one. gasnet_barrier_try returns
 *             GASNET_ERR_NOT_READY while rank 0 has not notified (it polls,
 *             without notifying, until every other rank has told it with a
 *             Short Request that it saw that), then GASNET_OK.
 *   mismatch  For each rank j in turn: j names a different id (split-phase
 *             and gasnet_barrier), j passes GASNET_BARRIERFLAG_MISMATCH
 *             (both forms), and with 3+ ranks j and its successor name two
 *             different ids while the rest are anonymous: every rank's wait
 *             returns GASNET_ERR_BARRIER_MISMATCH. After each, a matching
 *             named barrier succeeds again with the right result.
 *   wait-flags  gasnet_barrier_wait and _try given other flags or ids
 *             than their notify: an anonymous (or unnamed) wait after a
 *             named notify, a named wait after anonymous notifies (any id
 *             when no rank named the barrier; the barrier's name when one
 *             did, a mismatch on that rank otherwise), a named wait with
 *             another name, and notify mismatches seen by anonymous waits.
 *   nb        gex_Coll_BarrierNB with gex_Event_Test polling (NOT_READY on
 *             every rank but 0 while rank 0 has not started it), with
 *             gex_Event_Wait, gex_Coll_BarrierBlocking, legacy and gex
 *             barriers in turn.
 *   nb-overlap  gex_Coll_BarrierNB is non-blocking, so several may be in
 *             flight (as with MPI-3 non-blocking collectives; GASNet's own
 *             testbarrierconf does this): 8 at once retired out of order,
 *             4 retired with gex_Event_WaitAll and 4 with gex_Event_TestAll,
 *             then a checked barrier. */
#include <gasnet.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "tests/api/client_check.h"

/* Handler indices. */
enum { kArriveRequest = 200, kArriveReply = 201, kStarted = 202 };
/* Checked barriers per job, at most. */
enum { kMaxBarriers = 1024 };

static gex_TM_t g_tm;
static gex_Rank_t g_me;
static gex_Rank_t g_n;
static uint64_t g_barriers; /* barriers checked so far */
/* Arrivals counted here at barrier b (each rank's request for b). */
static volatile uint32_t g_arrived[kMaxBarriers + 2];
static volatile uint64_t g_replies; /* to this rank's arrival requests */
static volatile uint64_t g_started; /* rank 0: "started" requests received */

/* A rank (this one too) is about to enter barrier a0. */
static void ArriveRequest(gex_Token_t token, gex_AM_Arg_t a0) {
  const uint32_t b = (uint32_t)a0;
  CHECK(b < kMaxBarriers, "an arrival at barrier %u", b);
  g_arrived[b] = g_arrived[b] + 1;
  gex_AM_ReplyShort0(token, kArriveReply, 0);
}

static void ArriveReply(gex_Token_t token) {
  (void)token;
  g_replies = g_replies + 1;
}

static void StartedRequest(gex_Token_t token) {
  (void)token;
  g_started = g_started + 1;
}

/* Call before entering a synchronizing barrier: when it returns, every rank
 * has counted this rank's arrival. */
static void Arrive(void) {
  CHECK(g_barriers < kMaxBarriers, "more than %d checked barriers",
        kMaxBarriers);
  const uint64_t want = g_replies + g_n;
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    CHECK(gex_AM_RequestShort1(g_tm, r, kArriveRequest, 0,
                               (gex_AM_Arg_t)g_barriers) == GASNET_OK,
          "arrival request to rank %u", r);
  }
  GASNET_BLOCKUNTIL(g_replies == want);
}

/* Call right after leaving it (before any other GASNet call). */
static void Left(const char *what) {
  const uint64_t b = g_barriers;
  const uint32_t here = g_arrived[b];
  const uint32_t later = g_arrived[b + 2];
  CHECK(here == g_n,
        "%s (barrier %" PRIu64
        "): %u of %u ranks had arrived when this rank "
        "left it: the barrier let it through early",
        what, b, here, g_n);
  CHECK(later == 0,
        "%s (barrier %" PRIu64
        "): %u ranks had already arrived at barrier "
        "%" PRIu64 ": a rank got past the next barrier",
        what, b, later, b + 2);
  ++g_barriers;
}

/* A legacy barrier with `id` and `flags`, split-phase (notify, then wait)
 * or through gasnet_barrier, checked to return `expected` (GASNET_OK or
 * GASNET_ERR_BARRIER_MISMATCH). */
static void LegacyBarrier(int split, int id, int flags, int expected,
                          const char *what) {
  int rc;
  Arrive();
  if (split) {
    gasnet_barrier_notify(id, flags);
    rc = gasnet_barrier_wait(id, flags);
  } else {
    rc = gasnet_barrier(id, flags);
  }
  CHECK(rc == expected, "%s: %s(%d, %d) returned %d (%s), expected %s", what,
        split ? "gasnet_barrier_wait" : "gasnet_barrier", id, flags, rc,
        gasnet_ErrorName(rc), gasnet_ErrorName(expected));
  Left(what);
}

static void Legacy(int id, int flags, int expected, const char *what) {
  LegacyBarrier(1, id, flags, expected, what);
}

static void LegacyBlocking(int id, int flags, int expected, const char *what) {
  LegacyBarrier(0, id, flags, expected, what);
}

/* gasnet_barrier_result after a successful barrier: named with `id`, or
 * (named == 0) all anonymous. */
static void ExpectResult(int named, int id, const char *what) {
  int got = 0;
  const int rc = gasnet_barrier_result(&got);
  if (named) {
    CHECK(rc == GASNET_OK && got == id,
          "%s: gasnet_barrier_result returned "
          "%d with id %d, expected GASNET_OK with %d",
          what, rc, got, id);
  } else {
    CHECK(rc != GASNET_OK,
          "%s: gasnet_barrier_result returned GASNET_OK "
          "(id %d) after an all-anonymous barrier",
          what, got);
  }
}

/* Rank 0, before it starts the current barrier, polls until every other
 * rank has started it and seen it not complete (SayStarted). */
static void WaitForOthersToStart(uint64_t round) {
  GASNET_BLOCKUNTIL(g_started >= (uint64_t)(g_n - 1) * round);
}

static void SayStarted(void) {
  CHECK(gex_AM_RequestShort0(g_tm, 0, kStarted, 0) == GASNET_OK,
        "started request to rank 0");
}

static void ModeLegacy(void) {
  static const int kIds[] = {0, 1, -1, INT_MAX, INT_MIN, 5551212};
  size_t i;
  gex_Rank_t j;
  int rc;

  for (i = 0; i < sizeof kIds / sizeof kIds[0]; ++i) {
    Legacy(kIds[i], 0, GASNET_OK, "named");
    ExpectResult(1, kIds[i], "named");
    LegacyBlocking(kIds[i], 0, GASNET_OK, "named gasnet_barrier");
    ExpectResult(1, kIds[i], "named gasnet_barrier");
  }
  for (i = 0; i < 3; ++i) {
    /* Anonymous ids are ignored, so they may differ. */
    Legacy((int)(g_me * 5 + i), GASNET_BARRIERFLAG_ANONYMOUS, GASNET_OK,
           "anonymous");
    ExpectResult(0, 0, "anonymous");
    LegacyBlocking((int)(g_me ^ i), GASNET_BARRIERFLAG_ANONYMOUS, GASNET_OK,
                   "anonymous gasnet_barrier");
    ExpectResult(0, 0, "anonymous gasnet_barrier");
  }
  for (j = 0; j < g_n && g_n > 1; ++j) {
    /* One anonymous among named ones. */
    if (g_me == j) {
      Legacy(12345, GASNET_BARRIERFLAG_ANONYMOUS, GASNET_OK, "one anonymous");
    } else {
      Legacy(5551212, 0, GASNET_OK, "one anonymous");
    }
    ExpectResult(1, 5551212, "one anonymous");
    if (g_me == j) {
      LegacyBlocking(12345, GASNET_BARRIERFLAG_ANONYMOUS, GASNET_OK,
                     "one anonymous (gasnet_barrier)");
    } else {
      LegacyBlocking(5551212, 0, GASNET_OK, "one anonymous (gasnet_barrier)");
    }
    ExpectResult(1, 5551212, "one anonymous (gasnet_barrier)");
    /* One named among anonymous ones. */
    if (g_me == j) {
      Legacy((int)0xcafef00d, 0, GASNET_OK, "one named");
    } else {
      Legacy(911, GASNET_BARRIERFLAG_ANONYMOUS, GASNET_OK, "one named");
    }
    ExpectResult(1, (int)0xcafef00d, "one named");
  }

  /* try: not ready while rank 0 has not notified. */
  Arrive();
  if (g_me == 0) {
    WaitForOthersToStart(1);
    gasnet_barrier_notify(77, 0);
  } else {
    gasnet_barrier_notify(77, 0);
    rc = gasnet_barrier_try(77, 0);
    CHECK(rc == GASNET_ERR_NOT_READY,
          "gasnet_barrier_try returned %d (%s) "
          "before rank 0 notified",
          rc, gasnet_ErrorName(rc));
    SayStarted();
  }
  while ((rc = gasnet_barrier_try(77, 0)) == GASNET_ERR_NOT_READY) {
    gasnet_AMPoll();
    sched_yield();
  }
  CHECK(rc == GASNET_OK, "gasnet_barrier_try returned %d (%s)", rc,
        gasnet_ErrorName(rc));
  Left("gasnet_barrier_try");
  ExpectResult(1, 77, "gasnet_barrier_try");
}

static void ModeMismatch(void) {
  gex_Rank_t j;
  for (j = 0; j < g_n; ++j) {
    const int me_j = g_me == j;
    if (g_n > 1) {
      Legacy(me_j, 0, GASNET_ERR_BARRIER_MISMATCH, "rank j names another id");
      LegacyBlocking(me_j, 0, GASNET_ERR_BARRIER_MISMATCH,
                     "rank j names another id (gasnet_barrier)");
    }
    Legacy(0, me_j ? GASNET_BARRIERFLAG_MISMATCH : 0,
           GASNET_ERR_BARRIER_MISMATCH, "rank j passes MISMATCH");
    LegacyBlocking(0, me_j ? GASNET_BARRIERFLAG_MISMATCH : 0,
                   GASNET_ERR_BARRIER_MISMATCH,
                   "rank j passes MISMATCH (gasnet_barrier)");
    if (g_n > 2) {
      const gex_Rank_t k = (j + 1) % g_n;
      if (me_j) {
        Legacy(1592, 0, GASNET_ERR_BARRIER_MISMATCH, "two names and anonymous");
      } else if (g_me == k) {
        Legacy(1776, 0, GASNET_ERR_BARRIER_MISMATCH, "two names and anonymous");
      } else {
        Legacy(12345, GASNET_BARRIERFLAG_ANONYMOUS, GASNET_ERR_BARRIER_MISMATCH,
               "two names and anonymous");
      }
    }
    /* A mismatch leaves the barrier usable. */
    Legacy((int)j, 0, GASNET_OK, "matching after a mismatch");
    ExpectResult(1, (int)j, "matching after a mismatch");
  }
}

/* A split-phase legacy barrier notified with (nid, nflags) and waited
 * (or, `try_`, tried until ready) with (wid, wflags), checked to return
 * `expected` on this rank. */
static void NotifyWait(int nid, int nflags, int wid, int wflags, int try_,
                       int expected, const char *what) {
  int rc;
  Arrive();
  gasnet_barrier_notify(nid, nflags);
  if (try_) {
    while ((rc = gasnet_barrier_try(wid, wflags)) == GASNET_ERR_NOT_READY) {
      gasnet_AMPoll();
    }
  } else {
    rc = gasnet_barrier_wait(wid, wflags);
  }
  CHECK(rc == expected,
        "%s: notify(%d, %d) then %s(%d, %d) returned %d (%s), expected %s",
        what, nid, nflags, try_ ? "gasnet_barrier_try" : "gasnet_barrier_wait",
        wid, wflags, rc, gasnet_ErrorName(rc), gasnet_ErrorName(expected));
  Left(what);
}

/* wait-flags: the rules of gasnet_barrier_wait/try for the id and flags
 * they are given (GASNet-1 spec, gasnet_barrier_notify/wait/try; as
 * GASNet-EX implements them, the wait's name is checked against the
 * barrier's outcome, the name any rank notified, not repeated from this
 * rank's notify):
 *   - an anonymous wait (GASNET_BARRIERFLAG_ANONYMOUS or _UNNAMED) matches
 *     any outcome: after a named or an anonymous notify, GASNET_OK;
 *   - a named wait after a barrier no rank named (all notifies anonymous)
 *     is GASNET_OK whatever its id;
 *   - a named wait after a named barrier is GASNET_OK with the barrier's
 *     name, GASNET_ERR_BARRIER_MISMATCH (on that rank) with another, even
 *     when this rank's own notify was anonymous;
 *   - a mismatch among the notifies (two names, or
 *     GASNET_BARRIERFLAG_MISMATCH) is reported whatever the wait says.
 * Each for wait and try. */
static void ModeWaitFlags(void) {
  gex_Rank_t j;
  int t;
  for (t = 0; t < 2; ++t) {
    /* Anonymous notify everywhere, named wait (ids differing by rank). */
    NotifyWait(0, GASNET_BARRIERFLAG_ANONYMOUS, (int)g_me + 100, 0, t,
               GASNET_OK, "anonymous notify, named wait");
    ExpectResult(0, 0, "anonymous notify, named wait");
    NotifyWait(0, GASNET_BARRIERFLAG_UNNAMED, 7, 0, t, GASNET_OK,
               "unnamed notify, named wait");
    /* Named notify, anonymous wait. */
    NotifyWait(42, 0, 0, GASNET_BARRIERFLAG_ANONYMOUS, t, GASNET_OK,
               "named notify, anonymous wait");
    ExpectResult(1, 42, "named notify, anonymous wait");
    NotifyWait(43, 0, 999, GASNET_BARRIERFLAG_UNNAMED, t, GASNET_OK,
               "named notify, unnamed wait");
    /* Named notify, named wait with the barrier's name. */
    NotifyWait(44, 0, 44, 0, t, GASNET_OK, "named notify and wait");
    /* Rank j: the first and the last rank (the rules are per rank; the
     * first and last differ in every barrier group layout). */
    for (j = 0; j < g_n; j = j == 0 && g_n > 1 ? g_n - 1 : g_n) {
      const int me_j = g_me == j;
      /* Rank j waits with another name than it (and every rank) notified:
       * only rank j sees the mismatch. */
      NotifyWait(45, 0, me_j ? 46 : 45, 0, t,
                 me_j ? GASNET_ERR_BARRIER_MISMATCH : GASNET_OK,
                 "rank j waits with another name");
      if (g_n > 1) {
        /* Rank j notifies anonymously, the others name 47; rank j's named
         * wait must give the barrier's name 47. */
        NotifyWait(me_j ? 0 : 47, me_j ? GASNET_BARRIERFLAG_ANONYMOUS : 0, 47,
                   0, t, GASNET_OK, "rank j anonymous, named wait, same name");
        ExpectResult(1, 47, "rank j anonymous, named wait, same name");
        NotifyWait(me_j ? 0 : 48, me_j ? GASNET_BARRIERFLAG_ANONYMOUS : 0,
                   me_j ? 49 : 48, 0, t,
                   me_j ? GASNET_ERR_BARRIER_MISMATCH : GASNET_OK,
                   "rank j anonymous, named wait, other name");
        /* Two names among the notifies: a mismatch everywhere, even for
         * anonymous waits. */
        NotifyWait(me_j ? 50 : 51, 0, 0, GASNET_BARRIERFLAG_ANONYMOUS, t,
                   GASNET_ERR_BARRIER_MISMATCH, "two names, anonymous wait");
      }
      /* GASNET_BARRIERFLAG_MISMATCH on rank j: everywhere. */
      NotifyWait(
          0, me_j ? GASNET_BARRIERFLAG_MISMATCH : GASNET_BARRIERFLAG_ANONYMOUS,
          0, GASNET_BARRIERFLAG_ANONYMOUS, t, GASNET_ERR_BARRIER_MISMATCH,
          "rank j passes MISMATCH");
    }
    /* And the barrier is usable after all that. */
    NotifyWait(52, 0, 52, 0, t, GASNET_OK, "matching at the end");
    ExpectResult(1, 52, "matching at the end");
  }
}

static void ModeNb(void) {
  gex_Event_t ev;
  int rc;
  int i;

  /* Test: not ready while rank 0 has not started it. */
  Arrive();
  if (g_me == 0) {
    WaitForOthersToStart(1);
    ev = gex_Coll_BarrierNB(g_tm, 0);
  } else {
    ev = gex_Coll_BarrierNB(g_tm, 0);
    rc = gex_Event_Test(ev);
    CHECK(rc == GASNET_ERR_NOT_READY,
          "gex_Event_Test returned %d before rank "
          "0 started the barrier",
          rc);
    SayStarted();
  }
  while ((rc = gex_Event_Test(ev)) == GASNET_ERR_NOT_READY) {
    gasnet_AMPoll();
    sched_yield();
  }
  CHECK(rc == GASNET_OK, "gex_Event_Test returned %d", rc);
  Left("gex_Coll_BarrierNB + gex_Event_Test");

  for (i = 0; i < 4; ++i) {
    Arrive();
    gex_Event_Wait(gex_Coll_BarrierNB(g_tm, 0));
    Left("gex_Coll_BarrierNB + gex_Event_Wait");
    Arrive();
    gex_Coll_BarrierBlocking(g_tm, 0);
    Left("gex_Coll_BarrierBlocking");
    Legacy(i, 0, GASNET_OK, "legacy between gex barriers");
  }
}

static void ModeNbOverlap(void) {
  gex_Event_t ev[8];
  int rc;
  int i;
  /* Several in flight, retired out of order. */
  for (i = 0; i < 8; ++i) ev[i] = gex_Coll_BarrierNB(g_tm, 0);
  for (i = 0; i < 8; ++i) gex_Event_Wait(ev[(g_me + (gex_Rank_t)i) % 8]);
  for (i = 0; i < 4; ++i) ev[i] = gex_Coll_BarrierNB(g_tm, 0);
  gex_Event_WaitAll(ev, 4, 0);
  for (i = 0; i < 4; ++i) ev[i] = gex_Coll_BarrierNB(g_tm, 0);
  while ((rc = gex_Event_TestAll(ev, 4, 0)) == GASNET_ERR_NOT_READY) {
    gasnet_AMPoll();
    sched_yield();
  }
  CHECK(rc == GASNET_OK, "gex_Event_TestAll returned %d", rc);
  for (i = 0; i < 4; ++i) {
    CHECK(ev[i] == GEX_EVENT_INVALID, "gex_Event_TestAll left event %d", i);
  }
  /* And they all synchronized: one more checked barrier. */
  Arrive();
  gex_Coll_BarrierBlocking(g_tm, 0);
  Left("after barriers in flight");
}

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_Segment_t seg;
  const char *mode;
  int rc = gex_Client_Init(&client, &ep, &g_tm, "barrier_client", &argc, &argv,
                           GEX_FLAG_USES_GASNET1);
  CHECK(rc == GASNET_OK, "gex_Client_Init returned %d", rc);
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = (int)g_me;
  CHECK(argc == 2,
        "usage: barrier_client legacy|mismatch|wait-flags|nb|nb-overlap");
  mode = argv[1];
  gex_AM_Entry_t entries[3] = {
      {kArriveRequest, (gex_AM_Fn_t)ArriveRequest,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, NULL, "arrive"},
      {kArriveReply, (gex_AM_Fn_t)ArriveReply,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, NULL, "arrival counted"},
      {kStarted, (gex_AM_Fn_t)StartedRequest,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, NULL, "started"}};
  rc = gex_EP_RegisterHandlers(ep, entries, 3);
  CHECK(rc == GASNET_OK, "gex_EP_RegisterHandlers returned %d", rc);
  rc = gex_Segment_Attach(&seg, g_tm, 4096);
  CHECK(rc == GASNET_OK, "gex_Segment_Attach returned %d", rc);
  gex_Coll_BarrierBlocking(g_tm, 0);

  if (strcmp(mode, "legacy") == 0) {
    ModeLegacy();
  } else if (strcmp(mode, "mismatch") == 0) {
    ModeMismatch();
  } else if (strcmp(mode, "wait-flags") == 0) {
    ModeWaitFlags();
  } else if (strcmp(mode, "nb") == 0) {
    ModeNb();
  } else if (strcmp(mode, "nb-overlap") == 0) {
    ModeNbOverlap();
  } else {
    CHECK(0, "unknown mode '%s'", mode);
  }
  Say("%s ok barriers=%" PRIu64, mode, g_barriers);
  gex_Coll_BarrierBlocking(g_tm, 0);
  gasnet_exit(0);
}
