/* spec_client: clauses of the GASNet-EX specification (docs/GASNet-EX.txt,
 * spec 0.19) that real clients rely on and that the other suites do not
 * reach, one case per clause, each citing its section. Written in C11
 * against <gasnet.h> only (which brings <gasnetex.h> and the tools, as
 * GASNet-EX's does), built as a SEQ client (spec_client) and a PAR one
 * (spec_par_client), run by spec_job_test on every conduit at 1-4 ranks.
 *
 * Every check is a CHECK: a failure prints "rank R: CHECK FAILED ..." and
 * ends the job with exit code 1. A rank that passed every case prints
 * "rank R: spec ok cases=C" before the closing barrier.
 *
 * Cases (all run, in this order):
 *   queries   "Job and neighborhood queries": every output pointer of
 *             gex_System_Query{NbrhdInfo,HostInfo,MyPosition} may be NULL;
 *             the sets nest (job >= neighborhoods >= hosts); the
 *             neighborhood lists this rank. "Hybrid client support":
 *             gasnet_QueryGexObjects with NULL outputs and with all of them.
 *             "Segments": gex_Segment_QueryBound and
 *             gex_EP_QueryBoundSegmentNB with NULL outputs.
 *   teams     "Teams": gex_TM_Query*, rank <-> jobrank translation (a
 *             jobrank outside the team gives GEX_RANK_INVALID),
 *             gex_TM_TranslateRankToEP.
 *   am_zero   "Active Messages": Medium and Long of 0 bytes with a NULL
 *             source (Long to the peer's segment base), Requests and
 *             Replies, numbered and variadic forms; gex_Token_Info reports
 *             what GASNET_SUPPORTS_TI_* promise.
 *   rma_zero  "RMA": Put and Get of 0 bytes, blocking, NB (an event to
 *             wait, or GEX_EVENT_INVALID) and NBI, at the segment's start
 *             and end; nothing around the addresses changes.
 *   values    "Value-based RMA": PutBlockingVal / PutNBVal / PutNBIVal /
 *             GetBlockingVal of 1, 2, 4 and 8 bytes touch exactly nbytes.
 *   events    "Events": Test/Wait of GEX_EVENT_INVALID; WaitAll, TestAll,
 *             WaitSome and TestSome over arrays holding GEX_EVENT_INVALID
 *             entries (ignored; completed entries become
 *             GEX_EVENT_INVALID); an array of root events of PutNB whose
 *             lc_opt leaves point into the same array, waited in one call;
 *             gex_Event_QueryLeaf.
 *   nbi       "Implicit-event operations": gex_NBI_Test/Wait with nothing
 *             outstanding; an access region with no operation in it.
 *   immediate "GEX_FLAG_IMMEDIATE": a Request that returns non-zero sent
 *             nothing; one that returns 0 is delivered exactly once;
 *             PutNB with IMMEDIATE returns an event or GEX_EVENT_NO_OP. */
#include <gasnet.h>

#include "tests/api/client_check.h"

enum { kSegBytes = 1 << 16, kMaxRanks = 64 };

static gex_Client_t g_client;
static gex_EP_t g_ep;
static gex_TM_t g_tm;
static gex_Segment_t g_seg;
static gex_Rank_t g_me, g_n;
static char *g_base;
static uintptr_t g_size;
static void *g_peer_base[kMaxRanks];
static int g_cases;

static void Barrier(void) { gex_Event_Wait(gex_Coll_BarrierNB(g_tm, 0)); }

static gex_Rank_t Next(void) { return (g_me + 1) % g_n; }
static gex_Rank_t Prev(void) { return (g_me + g_n - 1) % g_n; }

static void Done(const char *name) {
  ++g_cases;
  Say("case %s ok", name);
  Barrier();
}

/* ------------------------------------------------------------------------ */
/* Handlers for am_zero and immediate. */

enum {
  kShortReq = GEX_AM_INDEX_BASE,
  kMediumReq,
  kLongReq,
  kMediumRep,
  kLongRep,
  kCountReq
};

static volatile int g_replies;
static volatile int g_counted;

static void CheckToken(gex_Token_t t, int is_req, int is_long,
                       gex_AM_Index_t index) {
  gex_Token_Info_t info;
  const gex_TI_t got = gex_Token_Info(t, &info, GEX_TI_ALL);
#if GASNET_SUPPORTS_TI_SRCRANK
  CHECK((got & GEX_TI_SRCRANK) && info.gex_srcrank < g_n, "TI srcrank");
#endif
#if GASNET_SUPPORTS_TI_EP
  CHECK((got & GEX_TI_EP) && info.gex_ep == g_ep, "TI ep");
#endif
#if GASNET_SUPPORTS_TI_IS_REQ
  CHECK((got & GEX_TI_IS_REQ) && !!info.gex_is_req == is_req, "TI is_req");
#endif
#if GASNET_SUPPORTS_TI_IS_LONG
  CHECK((got & GEX_TI_IS_LONG) && !!info.gex_is_long == is_long, "TI is_long");
#endif
#if GASNET_SUPPORTS_TI_ENTRY
  CHECK((got & GEX_TI_ENTRY) && info.gex_entry->gex_index == index,
        "TI entry index %u, expected %u", info.gex_entry->gex_index, index);
#endif
  (void)got;
  (void)is_req;
  (void)is_long;
  (void)index;
}

static void MediumReq(gex_Token_t t, void *buf, size_t nbytes,
                      gex_AM_Arg_t a0) {
  CheckToken(t, 1, 0, kMediumReq);
  CHECK(nbytes == 0 && a0 == 7, "MediumReq: %zu bytes, arg %d", nbytes, a0);
  (void)buf; /* Unspecified for 0 bytes. */
  gex_AM_ReplyMedium1(t, kMediumRep, NULL, 0, GEX_EVENT_NOW, 0, 8);
}

static void LongReq(gex_Token_t t, void *buf, size_t nbytes, gex_AM_Arg_t a0) {
  gex_Token_Info_t info;
  CheckToken(t, 1, 1, kLongReq);
  CHECK(nbytes == 0 && a0 == 9, "LongReq: %zu bytes, arg %d", nbytes, a0);
  (void)buf;
  gex_Token_Info(t, &info, GEX_TI_SRCRANK);
  /* A zero-byte Long Reply to the requester's segment base (variadic). */
  gex_AM_ReplyLong(t, kLongRep, NULL, 0, g_peer_base[info.gex_srcrank],
                   GEX_EVENT_NOW, 0, 10);
}

static void MediumRep(gex_Token_t t, void *buf, size_t nbytes,
                      gex_AM_Arg_t a0) {
  CheckToken(t, 0, 0, kMediumRep);
  CHECK(nbytes == 0 && a0 == 8, "MediumRep: %zu bytes, arg %d", nbytes, a0);
  (void)buf;
  ++g_replies;
}

static void LongRep(gex_Token_t t, void *buf, size_t nbytes, gex_AM_Arg_t a0) {
  CheckToken(t, 0, 1, kLongRep);
  CHECK(nbytes == 0 && a0 == 10, "LongRep: %zu bytes, arg %d", nbytes, a0);
  (void)buf;
  ++g_replies;
}

static void ShortReq(gex_Token_t t, gex_AM_Arg_t a0) {
  CheckToken(t, 1, 0, kShortReq);
  CHECK(a0 == 5, "ShortReq arg %d", a0);
  ++g_counted;
}

static void CountReq(gex_Token_t t) {
  CheckToken(t, 1, 0, kCountReq);
  ++g_counted;
}

static gex_AM_Entry_t g_handlers[] = {
    {kShortReq, (gex_AM_Fn_t)ShortReq, GEX_FLAG_AM_REQUEST | GEX_FLAG_AM_SHORT,
     1, NULL, "ShortReq"},
    {kMediumReq, (gex_AM_Fn_t)MediumReq,
     GEX_FLAG_AM_REQUEST | GEX_FLAG_AM_MEDIUM, 1, NULL, "MediumReq"},
    {kLongReq, (gex_AM_Fn_t)LongReq, GEX_FLAG_AM_REQUEST | GEX_FLAG_AM_LONG, 1,
     NULL, "LongReq"},
    {kMediumRep, (gex_AM_Fn_t)MediumRep, GEX_FLAG_AM_REPLY | GEX_FLAG_AM_MEDIUM,
     1, NULL, "MediumRep"},
    {kLongRep, (gex_AM_Fn_t)LongRep, GEX_FLAG_AM_REPLY | GEX_FLAG_AM_LONG, 1,
     NULL, "LongRep"},
    {kCountReq, (gex_AM_Fn_t)CountReq, GEX_FLAG_AM_REQUEST | GEX_FLAG_AM_SHORT,
     0, NULL, "CountReq"},
};

/* ------------------------------------------------------------------------ */

static void CaseQueries(void) {
  gex_RankInfo_t *nbrhd = NULL, *host = NULL;
  gex_Rank_t nbrhd_count = 0, nbrhd_index = 0, host_count = 0, host_index = 0;
  gex_Rank_t n_size = 0, n_rank = 0, h_size = 0, h_rank = 0, i;
  gex_Client_t client = NULL;
  gex_EP_t ep = NULL;
  gex_TM_t tm = NULL;
  gex_Segment_t seg = NULL;
  void *owner = NULL, *local = NULL;
  uintptr_t size = 0;
  int found = 0;

  /* "each of which may be NULL if the caller does not need a value" */
  gex_System_QueryNbrhdInfo(NULL, NULL, NULL);
  gex_System_QueryHostInfo(NULL, NULL, NULL);
  gex_System_QueryMyPosition(NULL, NULL, NULL, NULL);
  gex_System_QueryNbrhdInfo(NULL, &nbrhd_count, NULL);
  gex_System_QueryMyPosition(NULL, &n_rank, NULL, NULL);
  gex_System_QueryNbrhdInfo(&nbrhd, &nbrhd_count, &nbrhd_index);
  gex_System_QueryHostInfo(&host, &host_count, &host_index);
  gex_System_QueryMyPosition(&n_size, &n_rank, &h_size, &h_rank);
  CHECK(nbrhd != NULL && nbrhd_count >= 1 && nbrhd_index < nbrhd_count,
        "nbrhd %u of %u", nbrhd_index, nbrhd_count);
  CHECK(nbrhd[nbrhd_index].gex_jobrank == g_me, "nbrhd lists me at %u",
        nbrhd_index);
  CHECK(host != NULL && host_count >= nbrhd_count && host_index < host_count,
        "host %u of %u", host_index, host_count);
  CHECK(n_rank < n_size && h_rank < h_size, "positions %u/%u %u/%u", n_rank,
        n_size, h_rank, h_size);
  CHECK(g_n >= n_size && n_size >= h_size, "job %u nbrhds %u hosts %u", g_n,
        n_size, h_size);
  for (i = 0; i < nbrhd_count; ++i) {
    found += nbrhd[i].gex_jobrank == g_me;
    CHECK(nbrhd[i].gex_jobrank < g_n, "nbrhd member %u", nbrhd[i].gex_jobrank);
  }
  CHECK(found == 1, "found myself %d times", found);

  gasnet_QueryGexObjects(NULL, NULL, NULL, NULL);
  gasnet_QueryGexObjects(&client, &ep, &tm, &seg);
  CHECK(client == g_client && ep == g_ep && tm == g_tm && seg == g_seg,
        "gasnet_QueryGexObjects");
  CHECK(gex_EP_QueryClient(ep) == client && gex_TM_QueryClient(tm) == client &&
            gex_TM_QueryEP(tm) == ep,
        "object relations");

  for (i = 0; i < g_n; ++i) {
    CHECK(gex_Segment_QueryBound(g_tm, i, NULL, NULL, NULL) == GASNET_OK,
          "gex_Segment_QueryBound(%u, NULL, NULL, NULL)", i);
    CHECK(gex_Segment_QueryBound(g_tm, i, &owner, NULL, NULL) == GASNET_OK &&
              owner == g_peer_base[i],
          "QueryBound owner of %u", i);
    CHECK(gex_Segment_QueryBound(g_tm, i, NULL, NULL, &size) == GASNET_OK &&
              size >= kSegBytes,
          "QueryBound size of %u", i);
    gex_Event_Wait(gex_EP_QueryBoundSegmentNB(g_tm, i, NULL, NULL, NULL, 0));
    gex_Event_Wait(gex_EP_QueryBoundSegmentNB(g_tm, i, NULL, NULL, &size, 0));
    CHECK(size >= kSegBytes, "QueryBoundSegmentNB size of %u", i);
  }
  CHECK(gex_Segment_QueryBound(g_tm, g_me, NULL, &local, NULL) == GASNET_OK &&
            local == g_base,
        "my segment's local address");
  Done("queries");
}

static void CaseTeams(void) {
  gex_Rank_t i;
  CHECK(gex_TM_QueryRank(g_tm) == g_me && gex_TM_QuerySize(g_tm) == g_n,
        "gex_TM_QueryRank/Size");
  CHECK(gex_TM_QueryClient(g_tm) == g_client && gex_TM_QueryEP(g_tm) == g_ep,
        "gex_TM_QueryClient/EP");
  (void)gex_TM_QueryFlags(g_tm);
  for (i = 0; i < g_n; ++i) {
    gex_EP_Location_t loc = gex_TM_TranslateRankToEP(g_tm, i, 0);
    CHECK(gex_TM_TranslateRankToJobrank(g_tm, i) == i, "rank->jobrank %u", i);
    CHECK(gex_TM_TranslateJobrankToRank(g_tm, i) == i, "jobrank->rank %u", i);
    CHECK(loc.gex_rank == i && loc.gex_ep_index == 0, "rank->EP %u", i);
  }
  Done("teams");
}

static void CaseAmZero(void) {
  const gex_Rank_t to = Next();
  int rc;
  g_replies = 0;
  Barrier();
  /* As GASNet-EX's own tests write it: NULL source, 0 bytes. */
  rc =
      gex_AM_RequestMedium1(g_tm, to, kMediumReq, NULL, 0, GEX_EVENT_NOW, 0, 7);
  CHECK(rc == GASNET_OK, "RequestMedium1 of 0 bytes: %d", rc);
  rc = gex_AM_RequestLong1(g_tm, to, kLongReq, NULL, 0, g_peer_base[to],
                           GEX_EVENT_NOW, 0, 9);
  CHECK(rc == GASNET_OK, "RequestLong1 of 0 bytes: %d", rc);
  /* The variadic forms. */
  rc = gex_AM_RequestMedium(g_tm, to, kMediumReq, NULL, 0, GEX_EVENT_NOW, 0, 7);
  CHECK(rc == GASNET_OK, "RequestMedium of 0 bytes: %d", rc);
  rc = gex_AM_RequestLong(g_tm, to, kLongReq, NULL, 0, g_peer_base[to],
                          GEX_EVENT_NOW, 0, 9);
  CHECK(rc == GASNET_OK, "RequestLong of 0 bytes: %d", rc);
  GASNET_BLOCKUNTIL(g_replies == 4);
  Done("am_zero");
}

/* Fills [p, p + n) with a byte pattern of `seed`. */
static void Fill(char *p, size_t n, int seed) {
  size_t i;
  for (i = 0; i < n; ++i) p[i] = (char)(seed + 3 * i);
}

static int Same(const char *p, size_t n, int seed) {
  size_t i;
  for (i = 0; i < n; ++i) {
    if (p[i] != (char)(seed + 3 * i)) return 0;
  }
  return 1;
}

static void CaseRmaZero(void) {
  const gex_Rank_t to = Next();
  char *peer = (char *)g_peer_base[to];
  char local[64];
  gex_Event_t ev;
  int rc;
  /* Guards: the first and last 64 bytes of every segment. */
  Fill(g_base, 64, 1);
  Fill(g_base + g_size - 64, 64, 2);
  Fill(local, sizeof local, 3);
  Barrier();
  rc = gex_RMA_PutBlocking(g_tm, to, peer, local, 0, 0);
  CHECK(rc == GASNET_OK, "PutBlocking of 0 bytes: %d", rc);
  rc = gex_RMA_PutBlocking(g_tm, to, peer + g_size, local, 0, 0);
  CHECK(rc == GASNET_OK, "PutBlocking of 0 bytes at the segment's end: %d", rc);
  rc = gex_RMA_GetBlocking(g_tm, local, to, peer + g_size - 64, 0, 0);
  CHECK(rc == GASNET_OK, "GetBlocking of 0 bytes: %d", rc);
  ev = gex_RMA_PutNB(g_tm, to, peer + 64, local, 0, GEX_EVENT_DEFER, 0);
  gex_Event_Wait(ev);
  ev = gex_RMA_GetNB(g_tm, local, to, peer, 0, 0);
  gex_Event_Wait(ev);
  rc = gex_RMA_PutNBI(g_tm, to, peer + g_size, local, 0, GEX_EVENT_NOW, 0);
  CHECK(rc == GASNET_OK, "PutNBI of 0 bytes: %d", rc);
  rc = gex_RMA_GetNBI(g_tm, local + 8, to, peer, 0, 0);
  CHECK(rc == GASNET_OK, "GetNBI of 0 bytes: %d", rc);
  gex_NBI_Wait(GEX_EC_ALL, 0);
  Barrier();
  CHECK(Same(g_base, 64, 1) && Same(g_base + g_size - 64, 64, 2),
        "a zero-byte Put changed the segment");
  CHECK(Same(local, sizeof local, 3), "a zero-byte Get changed memory");
  Done("rma_zero");
}

static void CaseValues(void) {
  static const size_t kSizes[] = {1, 2, 4, 8};
  const gex_Rank_t to = Next();
  char *mine = g_base + 256; /* Others write 16 * size bytes here. */
  size_t s;
  Fill(mine, 128, 4);
  Barrier();
  for (s = 0; s < 4; ++s) {
    const size_t nbytes = kSizes[s];
    char *slot = (char *)g_peer_base[to] + 256 + 16 * s;
    const gex_RMA_Value_t v = (gex_RMA_Value_t)0x1122334455667788ull;
    gex_RMA_Value_t got;
    CHECK(gex_RMA_PutBlockingVal(g_tm, to, slot, v, nbytes, 0) == GASNET_OK,
          "PutBlockingVal %zu", nbytes);
    got = gex_RMA_GetBlockingVal(g_tm, to, slot, nbytes, 0);
    CHECK(
        got == (v & (nbytes == 8 ? ~(gex_RMA_Value_t)0
                                 : (((gex_RMA_Value_t)1 << (8 * nbytes)) - 1))),
        "GetBlockingVal %zu: %" PRIx64, nbytes, (uint64_t)got);
    gex_Event_Wait(gex_RMA_PutNBVal(g_tm, to, slot + 8, v, nbytes, 0));
  }
  Barrier();
  for (s = 0; s < 4; ++s) {
    const size_t nbytes = kSizes[s];
    const char *slot = mine + 16 * s;
    size_t i;
    /* Bytes nbytes..7 of each half-slot are the guard pattern still. */
    for (i = nbytes; i < 8; ++i) {
      CHECK(slot[i] == (char)(4 + 3 * (16 * s + i)) &&
                slot[8 + i] == (char)(4 + 3 * (16 * s + 8 + i)),
            "a %zu-byte value Put wrote byte %zu", nbytes, i);
    }
  }
  Done("values");
}

static void CaseEvents(void) {
  enum { kPuts = 6 };
  const gex_Rank_t to = Next();
  char *peer = (char *)g_peer_base[to] + 1024;
  static char src[kPuts][32];
  gex_Event_t evs[2 * kPuts + 2];
  gex_Event_t none[3] = {GEX_EVENT_INVALID, GEX_EVENT_INVALID,
                         GEX_EVENT_INVALID};
  int i, left;

  /* "GEX_EVENT_INVALID: result for an already-completed operation" */
  CHECK(gex_Event_Test(GEX_EVENT_INVALID) == GASNET_OK, "Test(INVALID)");
  gex_Event_Wait(GEX_EVENT_INVALID);
  gex_Event_WaitAll(none, 3, 0);
  gex_Event_WaitSome(none, 3, 0);
  CHECK(gex_Event_TestAll(none, 3, 0) == GASNET_OK, "TestAll(INVALID x3)");
  gex_Event_WaitAll(none, 0, 0);
  CHECK(gex_Event_TestAll(none, 0, 0) == GASNET_OK, "TestAll of none");

  /* Roots and their lc leaves in one array, INVALID entries between. */
  for (i = 0; i < kPuts; ++i) Fill(src[i], sizeof src[i], 10 + i);
  evs[kPuts] = GEX_EVENT_INVALID;
  evs[2 * kPuts + 1] = GEX_EVENT_INVALID;
  for (i = 0; i < kPuts; ++i) {
    evs[i] = gex_RMA_PutNB(g_tm, to, peer + 32 * i, src[i], sizeof src[i],
                           &evs[kPuts + 1 + i], 0);
  }
  gex_Event_WaitAll(evs, 2 * kPuts + 2, 0);
  for (i = 0; i < 2 * kPuts + 2; ++i) {
    CHECK(evs[i] == GEX_EVENT_INVALID, "WaitAll left entry %d", i);
  }

  /* TestAll until done, then WaitSome/TestSome over a partly INVALID
   * array: each call retires at least one and sets it INVALID. */
  for (i = 0; i < kPuts; ++i) {
    evs[2 * i] = gex_RMA_PutNB(g_tm, to, peer + 32 * i, src[i], sizeof src[i],
                               GEX_EVENT_NOW, 0);
    evs[2 * i + 1] = GEX_EVENT_INVALID;
  }
  while (gex_Event_TestAll(evs, 2 * kPuts, 0) != GASNET_OK) {
    gasnet_AMPoll();
  }
  for (i = 0; i < 2 * kPuts; ++i) {
    CHECK(evs[i] == GEX_EVENT_INVALID, "TestAll left entry %d", i);
  }
  for (i = 0; i < kPuts; ++i) {
    evs[i] = gex_RMA_GetNB(g_tm, src[i], to, peer + 32 * i, sizeof src[i], 0);
  }
  left = kPuts;
  while (left > 0) {
    int before = 0, after = 0, j;
    for (j = 0; j < kPuts; ++j) before += evs[j] != GEX_EVENT_INVALID;
    if (before == 0) break; /* Completed at initiation (direct copies). */
    if (left % 2) {
      gex_Event_WaitSome(evs, kPuts, 0);
    } else if (gex_Event_TestSome(evs, kPuts, 0) != GASNET_OK) {
      gasnet_AMPoll();
      continue;
    }
    for (j = 0; j < kPuts; ++j) after += evs[j] != GEX_EVENT_INVALID;
    CHECK(after < before, "WaitSome/TestSome retired nothing (%d -> %d)",
          before, after);
    left = after;
  }
  for (i = 0; i < kPuts; ++i) {
    CHECK(Same(src[i], sizeof src[i], 10 + i), "Get %d brought back", i);
  }

  /* gex_Event_QueryLeaf: the lc leaf of a root, waited before the root. */
  {
    gex_Event_t lc = GEX_EVENT_INVALID;
    gex_Event_t root =
        gex_RMA_PutNB(g_tm, to, peer, src[0], sizeof src[0], &lc, 0);
    gex_Event_t leaf = gex_Event_QueryLeaf(root, GEX_EC_LC);
    (void)leaf; /* May be the same as lc or GEX_EVENT_INVALID. */
    gex_Event_Wait(lc);
    gex_Event_Wait(root);
  }
  Done("events");
}

static void CaseNbi(void) {
  gex_Event_t ev;
  CHECK(gex_NBI_Test(GEX_EC_ALL, 0) == GASNET_OK, "NBI_Test with nothing");
  gex_NBI_Wait(GEX_EC_ALL, 0);
  gex_NBI_Wait(GEX_EC_PUT | GEX_EC_GET, 0);
  gex_NBI_BeginAccessRegion(0);
  ev = gex_NBI_EndAccessRegion(0);
  gex_Event_Wait(ev);
  Done("nbi");
}

static void CaseImmediate(void) {
  enum { kTries = 200 };
  int sent = 0, i, total_sent, total_counted;
  int all[2];
  g_counted = 0;
  Barrier();
  for (i = 0; i < kTries; ++i) {
    const int rc =
        gex_AM_RequestShort0(g_tm, Next(), kCountReq, GEX_FLAG_IMMEDIATE);
    if (rc == 0) ++sent;
  }
  {
    /* "calls with return type 'gex_Event_t' return GEX_EVENT_NO_OP" */
    static char src[16];
    gex_Event_t ev =
        gex_RMA_PutNB(g_tm, Next(), (char *)g_peer_base[Next()] + 2048, src,
                      sizeof src, GEX_EVENT_DEFER, GEX_FLAG_IMMEDIATE);
    if (ev != GEX_EVENT_NO_OP) gex_Event_Wait(ev);
  }
  /* Every rank learns how many were sent everywhere, then polls until as
   * many arrived: a Request that returned 0 is delivered once, one that
   * did not is not delivered (more arrivals than sends fail below). */
  all[0] = sent;
  gex_Event_Wait(gex_Coll_ReduceToAllNB(g_tm, &total_sent, &all[0], GEX_DT_I32,
                                        sizeof(int), 1, GEX_OP_ADD, NULL, NULL,
                                        0));
  do {
    gasnet_AMPoll();
    all[1] = g_counted;
    gex_Event_Wait(gex_Coll_ReduceToAllNB(g_tm, &total_counted, &all[1],
                                          GEX_DT_I32, sizeof(int), 1,
                                          GEX_OP_ADD, NULL, NULL, 0));
  } while (total_counted < total_sent);
  CHECK(total_counted == total_sent, "sent %d, arrived %d", total_sent,
        total_counted);
  Done("immediate");
}

int main(int argc, char **argv) {
  gex_Rank_t i;
  int rc =
      gex_Client_Init(&g_client, &g_ep, &g_tm, "spec_client", &argc, &argv, 0);
  CHECK(rc == GASNET_OK, "gex_Client_Init: %d", rc);
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = (int)g_me;
  CHECK(g_n <= kMaxRanks, "at most %d ranks", kMaxRanks);
  rc = gex_EP_RegisterHandlers(g_ep, g_handlers,
                               sizeof g_handlers / sizeof g_handlers[0]);
  CHECK(rc == GASNET_OK, "gex_EP_RegisterHandlers: %d", rc);
  rc = gex_Segment_Attach(&g_seg, g_tm, kSegBytes);
  CHECK(rc == GASNET_OK, "gex_Segment_Attach: %d", rc);
  g_base = (char *)gex_Segment_QueryAddr(g_seg);
  g_size = gex_Segment_QuerySize(g_seg);
  for (i = 0; i < g_n; ++i) {
    gex_Event_Wait(
        gex_EP_QueryBoundSegmentNB(g_tm, i, &g_peer_base[i], NULL, NULL, 0));
  }
  (void)Prev;
  Barrier();
  CaseQueries();
  CaseTeams();
  CaseAmZero();
  CaseRmaZero();
  CaseValues();
  CaseEvents();
  CaseNbi();
  CaseImmediate();
  Say("spec ok cases=%d", g_cases);
  Barrier();
  gasnet_exit(0);
  return 0;
}
