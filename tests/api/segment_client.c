/* segment_client: one rank of a job over the GASNet-EX C API on any
 * conduit (SEQ mode), started by its launcher from segment_job_test, for
 * the segment and endpoint calls beyond gex_Segment_Attach. Written in C11
 * against <gasnetex.h> only. Every check is a CHECK (a failure prints
 * "rank R: CHECK FAILED ..." and ends the job with exit code 1); a rank
 * that passes every check of its mode prints "rank R: <mode> ok ..."
 * before the closing barrier and gasnet_exit(0).
 *
 *   primordial  No gex_Segment_Attach: gex_Segment_Create (GASNet-allocated
 *               host memory), gex_EP_BindSegment to the primordial
 *               endpoint, gex_EP_PublishBoundSegment over the primordial
 *               team. gex_Segment_QueryBound on itself before publication
 *               and on every rank after (owner address, size, a local
 *               address exactly for the ranks of its neighbourhood), the
 *               same answers from gex_EP_QueryBoundSegmentNB; then Puts
 *               (Blocking, NB, NBI) from every rank into a slot of its own
 *               in every rank's segment, checked by the owner after a
 *               barrier, and Gets (Blocking, NB, NBI) of every rank's
 *               slots, checked against the pattern. Prints
 *               "rank R: primordial ok ranks=N bytes=B".
 *   endpoints   gex_EP_Create with refused capabilities (AM, VIS, COLL,
 *               AD, ALL, 0, unknown bits) and flags (GASNET_ERR_BAD_ARG),
 *               then two RMA endpoints (indices 1 and 2, no segment); a
 *               client-memory segment and a GASNet-allocated one bound to
 *               them; gex_Segment_Create's refusals (NULL segment_p, a
 *               kind other than GEX_MK_HOST, flags, length 0); a
 *               publication with bad flags (every rank refused), with an
 *               endpoint named twice, and a good one (both endpoints and
 *               the primordial one, which gex_Segment_Attach bound);
 *               gex_TM_TranslateRankToEP and gex_Segment_QueryBound
 *               for every rank through the primordial team, gex_TM_Pair
 *               to each endpoint index (the allocated segment mapped, and
 *               its owner's bytes read, exactly in the neighbourhood; the
 *               client-memory one by address only; index 3 nowhere) and
 *               a sub-team from gex_TM_Split; a publication over the
 *               sub-team (endpoint 3, known to its members only) and one
 *               over a pair (refused);
 *               gex_System_QueryProgressThreads (none); Destroy of an
 *               unpublished segment and, after a barrier, of a published
 *               one with GEX_FLAG_GLOBALLY_QUIESCED. RMA through the
 *               pairs into both endpoints' segments on every rank (Put,
 *               checked by the owner, then Get, each form in turn).
 *               Prints "rank R: endpoints ok eps=3 refused=K mapped=M
 *               rma=P" (M: ranks in the neighbourhood; P: 4 per rank).
 *
 *   subteam     testsegment's order (issue 34): a created segment, a
 *               publication over the primordial team before it is bound
 *               (accepted, no effect), bound to the primordial endpoint,
 *               published over a permuted team of the same members in
 *               two calls (odd ranks num_eps 1 then 0, even ranks 0 then
 *               1); QueryBound over that team and the primordial one,
 *               Put/Get over the permuted team, an AM Long into the next
 *               rank's segment, publications again over both teams.
 *               Prints "rank R: subteam ok ranks=N bytes=B long=L".
 *   subset      the same segment published first over half the ranks
 *               (split by parity: QueryBound and Put/Get over that team,
 *               nothing published from the other half), then over the
 *               primordial team (QueryBound, Put/Get, AM Long for all).
 *               Prints "rank R: subset ok ranks=N half=H bytes=B long=L".
 *
 * Misuse, fatal and naming the call (rank 0 errs; the job must not
 * survive): bind-twice, bind-bound-segment, bind-null, bind-attached,
 * bind-client-primordial (needs a supernode peer), long-unregistered (an
 * AM Long to a rank outside the supernode before the conduit registered
 * the primordial segments; needs such a rank), destroy-published,
 * destroy-attached, query-index-bad. */
#include <gasnetex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client_check.h"

static gex_Client_t g_client;
static gex_EP_t g_ep;
static gex_TM_t g_tm;
static gex_Rank_t g_me, g_n;

/* Each rank's slot in every segment. */
enum { kSlot = 8192 + 13 };

static void Barrier(void) { gex_Event_Wait(gex_Coll_BarrierNB(g_tm, 0)); }

static void Finish(const char *line) {
  Say("%s", line);
  Barrier();
  gasnet_exit(0);
}

static unsigned char Pattern(gex_Rank_t writer, gex_Rank_t owner, size_t i) {
  return (unsigned char)(writer * 31u + owner * 7u + i * 13u + 1u);
}

/* What rank `from` puts into rank `to`'s endpoint-`idx` segment. */
static unsigned char EpByte(gex_Rank_t from, gex_Rank_t to, int idx, size_t i) {
  return (unsigned char)(from * 31 + to * 7 + (unsigned)idx * 3 + i + 1);
}

static int InMyNbrhd(gex_Rank_t r) {
  gex_RankInfo_t *info;
  gex_Rank_t count, mine;
  gex_System_QueryNbrhdInfo(&info, &count, &mine);
  for (gex_Rank_t i = 0; i < count; ++i) {
    if (info[i].gex_jobrank == r) return 1;
  }
  return 0;
}

static void Primordial(void) {
  const uintptr_t size = (uintptr_t)kSlot * g_n + 4096;
  gex_Segment_t seg = GEX_SEGMENT_INVALID;
  CHECK(gex_Segment_Create(&seg, g_client, NULL, size, GEX_MK_HOST, 0) ==
            GASNET_OK,
        "gex_Segment_Create");
  CHECK(seg != GEX_SEGMENT_INVALID, "no segment");
  unsigned char *base = (unsigned char *)gex_Segment_QueryAddr(seg);
  CHECK(base != NULL, "QueryAddr");
  CHECK(gex_Segment_QuerySize(seg) == size, "QuerySize %zu",
        (size_t)gex_Segment_QuerySize(seg));
  CHECK(gex_Segment_QueryClient(seg) == g_client, "QueryClient");
  CHECK(gex_Segment_QueryKind(seg) == GEX_MK_HOST, "QueryKind");
  CHECK(gex_Segment_QueryFlags(seg) == 0, "QueryFlags");
  memset(base, 0, size);

  CHECK(gex_EP_QuerySegment(g_ep) == GEX_SEGMENT_INVALID, "bound already");
  CHECK(gex_Segment_QueryBound(g_tm, g_me, NULL, NULL, NULL) != 0,
        "QueryBound before bind");
  CHECK(gex_EP_BindSegment(g_ep, seg, 0) == GASNET_OK, "bind");
  CHECK(gex_EP_QuerySegment(g_ep) == seg, "QuerySegment after bind");
  {
    void *owner = NULL, *local = NULL;
    uintptr_t sz = 0;
    CHECK(gex_Segment_QueryBound(g_tm, g_me, &owner, &local, &sz) == 0,
          "QueryBound self after bind");
    CHECK(owner == base && local == base && sz == size, "self: %p %p %zu",
          owner, local, (size_t)sz);
  }
  CHECK(gex_EP_PublishBoundSegment(g_tm, &g_ep, 1, 0) == GASNET_OK,
        "gex_EP_PublishBoundSegment");

  unsigned char **owners = calloc(g_n, sizeof *owners);
  CHECK(owners != NULL, "calloc");
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    void *owner = NULL, *local = NULL;
    uintptr_t sz = 0;
    CHECK(gex_Segment_QueryBound(g_tm, r, &owner, &local, &sz) == 0,
          "QueryBound rank %u", r);
    CHECK(owner != NULL && sz == size, "rank %u: owner %p size %zu", r, owner,
          (size_t)sz);
    CHECK((local != NULL) == InMyNbrhd(r), "rank %u: local %p", r, local);
    if (r == g_me) CHECK(owner == base && local == base, "self %p", owner);
    void *owner2 = NULL, *local2 = NULL;
    uintptr_t sz2 = 0;
    gex_Event_Wait(
        gex_EP_QueryBoundSegmentNB(g_tm, r, &owner2, &local2, &sz2, 0));
    CHECK(owner2 == owner && local2 == local && sz2 == sz,
          "QueryBoundSegmentNB disagrees for rank %u", r);
    owners[r] = owner;
  }

  /* Puts: my slot in every rank's segment, three forms by rank. */
  unsigned char *buf = malloc(kSlot);
  CHECK(buf != NULL, "malloc");
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    for (size_t i = 0; i < kSlot; ++i) buf[i] = Pattern(g_me, r, i);
    unsigned char *dest = owners[r] + (size_t)g_me * kSlot;
    switch (r % 3) {
      case 0:
        CHECK(gex_RMA_PutBlocking(g_tm, r, dest, buf, kSlot, 0) == 0, "put");
        break;
      case 1:
        gex_Event_Wait(
            gex_RMA_PutNB(g_tm, r, dest, buf, kSlot, GEX_EVENT_NOW, 0));
        break;
      default:
        CHECK(gex_RMA_PutNBI(g_tm, r, dest, buf, kSlot, GEX_EVENT_NOW, 0) == 0,
              "putnbi");
        gex_NBI_Wait(GEX_EC_PUT, 0);
        break;
    }
  }
  Barrier();
  for (gex_Rank_t w = 0; w < g_n; ++w) {
    const unsigned char *slot = base + (size_t)w * kSlot;
    for (size_t i = 0; i < kSlot; ++i) {
      CHECK(slot[i] == Pattern(w, g_me, i), "slot of rank %u byte %zu: %u", w,
            i, slot[i]);
    }
  }
  /* Gets: every rank's slot of every writer... the one written by rank
   * (me + 1) % n, three forms. */
  size_t bytes = 0;
  const gex_Rank_t w = (g_me + 1) % g_n;
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    memset(buf, 0, kSlot);
    unsigned char *src = owners[r] + (size_t)w * kSlot;
    switch (r % 3) {
      case 0:
        CHECK(gex_RMA_GetBlocking(g_tm, buf, r, src, kSlot, 0) == 0, "get");
        break;
      case 1:
        gex_Event_Wait(gex_RMA_GetNB(g_tm, buf, r, src, kSlot, 0));
        break;
      default:
        CHECK(gex_RMA_GetNBI(g_tm, buf, r, src, kSlot, 0) == 0, "getnbi");
        gex_NBI_Wait(GEX_EC_GET, 0);
        break;
    }
    for (size_t i = 0; i < kSlot; ++i) {
      CHECK(buf[i] == Pattern(w, r, i), "get from rank %u byte %zu: %u", r, i,
            buf[i]);
    }
    bytes += kSlot;
  }
  free(buf);
  free(owners);
  char line[128];
  snprintf(line, sizeof line, "primordial ok ranks=%u bytes=%zu", g_n, bytes);
  Finish(line);
}

/* The AM Long of the sub-team modes: the bytes landed before the handler
 * runs (checked by the receiver after it). */
enum { kLongIdx = 200, kLongMax = 20000 };
/* The Long's size: kLongMax, or the largest Long every rank takes when
 * that is smaller (large enough for the conduits' Long-by-RDMA). */
static size_t LongBytes(void) {
  const size_t lub = gex_AM_LUBRequestLong();
  return lub < kLongMax ? lub : kLongMax;
}
static volatile int g_long_got = -1;
static void LongHandler(gex_Token_t token, void *buf, size_t nbytes) {
  (void)token;
  (void)buf;
  g_long_got = (int)nbytes;
}

/* What rank `from` sends by AM Long into rank `to`'s segment. */
static unsigned char LongByte(gex_Rank_t from, gex_Rank_t to, size_t i) {
  return (unsigned char)(from * 5u + to * 11u + i * 3u + 7u);
}

/* gex_Segment_QueryBound of every rank of `tm` agrees with the primordial
 * team's answer for its job rank (a local address exactly in the
 * neighbourhood); `owners` gets each job rank's owner address. */
static void QueryAll(gex_TM_t tm, uintptr_t size, unsigned char **owners) {
  const gex_Rank_t n = gex_TM_QuerySize(tm);
  for (gex_Rank_t tr = 0; tr < n; ++tr) {
    const gex_Rank_t jr = gex_TM_TranslateRankToJobrank(tm, tr);
    void *owner = NULL, *local = NULL;
    uintptr_t sz = 0;
    CHECK(gex_Segment_QueryBound(tm, tr, &owner, &local, &sz) == 0,
          "QueryBound team rank %u (job rank %u)", tr, jr);
    CHECK(owner != NULL && sz == size, "job rank %u: owner %p size %zu", jr,
          owner, (size_t)sz);
    CHECK((local != NULL) == InMyNbrhd(jr), "job rank %u: local %p", jr, local);
    void *owner2 = NULL, *local2 = NULL;
    uintptr_t sz2 = 0;
    gex_Event_Wait(
        gex_EP_QueryBoundSegmentNB(tm, tr, &owner2, &local2, &sz2, 0));
    CHECK(owner2 == owner && local2 == local && sz2 == sz,
          "QueryBoundSegmentNB disagrees for team rank %u", tr);
    owners[jr] = owner;
  }
}

/* Every member of `tm` Puts its slot into every member's segment (three
 * forms), a barrier over `tm`, each owner checks the slots of the
 * members, then Gets of every member's slot written by `w`. Returns the
 * bytes moved by Get. */
static size_t PutGetOver(gex_TM_t tm, unsigned char **owners,
                         unsigned char *base) {
  const gex_Rank_t n = gex_TM_QuerySize(tm);
  unsigned char *buf = malloc(kSlot);
  CHECK(buf != NULL, "malloc");
  for (gex_Rank_t tr = 0; tr < n; ++tr) {
    const gex_Rank_t jr = gex_TM_TranslateRankToJobrank(tm, tr);
    for (size_t i = 0; i < kSlot; ++i) buf[i] = Pattern(g_me, jr, i);
    unsigned char *dest = owners[jr] + (size_t)g_me * kSlot;
    switch (tr % 3) {
      case 0:
        CHECK(gex_RMA_PutBlocking(tm, tr, dest, buf, kSlot, 0) == 0, "put");
        break;
      case 1:
        gex_Event_Wait(
            gex_RMA_PutNB(tm, tr, dest, buf, kSlot, GEX_EVENT_NOW, 0));
        break;
      default:
        CHECK(gex_RMA_PutNBI(tm, tr, dest, buf, kSlot, GEX_EVENT_NOW, 0) == 0,
              "putnbi");
        gex_NBI_Wait(GEX_EC_PUT, 0);
        break;
    }
  }
  gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
  for (gex_Rank_t tr = 0; tr < n; ++tr) {
    const gex_Rank_t w = gex_TM_TranslateRankToJobrank(tm, tr);
    const unsigned char *slot = base + (size_t)w * kSlot;
    for (size_t i = 0; i < kSlot; ++i) {
      CHECK(slot[i] == Pattern(w, g_me, i), "slot of rank %u byte %zu: %u", w,
            i, slot[i]);
    }
  }
  /* Gets: the slot written by the next member, from every member. */
  const gex_Rank_t w =
      gex_TM_TranslateRankToJobrank(tm, (gex_TM_QueryRank(tm) + 1) % n);
  size_t bytes = 0;
  for (gex_Rank_t tr = 0; tr < n; ++tr) {
    const gex_Rank_t jr = gex_TM_TranslateRankToJobrank(tm, tr);
    memset(buf, 0, kSlot);
    unsigned char *src = owners[jr] + (size_t)w * kSlot;
    switch (tr % 3) {
      case 0:
        CHECK(gex_RMA_GetBlocking(tm, buf, tr, src, kSlot, 0) == 0, "get");
        break;
      case 1:
        gex_Event_Wait(gex_RMA_GetNB(tm, buf, tr, src, kSlot, 0));
        break;
      default:
        CHECK(gex_RMA_GetNBI(tm, buf, tr, src, kSlot, 0) == 0, "getnbi");
        gex_NBI_Wait(GEX_EC_GET, 0);
        break;
    }
    for (size_t i = 0; i < kSlot; ++i) {
      CHECK(buf[i] == Pattern(w, jr, i), "get from rank %u byte %zu: %u", jr, i,
            buf[i]);
    }
    bytes += kSlot;
  }
  gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
  free(buf);
  return bytes;
}

/* An AM RequestLong of LongBytes() from every rank into the next rank's
 * segment (past the slots), checked byte by byte by its receiver. */
static void LongToNext(unsigned char **owners, unsigned char *base) {
  const gex_Rank_t next = (g_me + 1) % g_n;
  const gex_Rank_t prev = (g_me + g_n - 1) % g_n;
  const size_t n = LongBytes();
  static unsigned char buf[kLongMax];
  for (size_t i = 0; i < n; ++i) buf[i] = LongByte(g_me, next, i);
  unsigned char *mine = base + (size_t)kSlot * g_n;
  memset(mine, 0, n);
  g_long_got = -1;
  Barrier();
  CHECK(gex_AM_RequestLong0(g_tm, next, kLongIdx, buf, n,
                            owners[next] + (size_t)kSlot * g_n, GEX_EVENT_NOW,
                            0) == GASNET_OK,
        "RequestLong");
  GASNET_BLOCKUNTIL(g_long_got >= 0);
  CHECK(g_long_got == (int)n, "Long of %d bytes, not %zu", g_long_got, n);
  for (size_t i = 0; i < n; ++i) {
    CHECK(mine[i] == LongByte(prev, g_me, i), "Long byte %zu: %u", i, mine[i]);
  }
  Barrier();
}

/* Spec, gex_EP_PublishBoundSegment ("collective over tm"; it publishes the
 * segments bound to eps to the members of tm; num_eps may differ between
 * callers, 0 included): the primordial endpoint's segment, created and
 * bound instead of gex_Segment_Attach, published over any team. */
static unsigned char *BoundPrimordial(uintptr_t *size_p) {
  gex_AM_Entry_t entry = {kLongIdx,
                          (gex_AM_Fn_t)LongHandler,
                          GEX_FLAG_AM_REQUEST | GEX_FLAG_AM_LONG,
                          0,
                          NULL,
                          NULL};
  CHECK(gex_EP_RegisterHandlers(g_ep, &entry, 1) == GASNET_OK, "handlers");
  const uintptr_t size = (uintptr_t)kSlot * g_n + kLongMax;
  gex_Segment_t seg = GEX_SEGMENT_INVALID;
  CHECK(gex_Segment_Create(&seg, g_client, NULL, size, GEX_MK_HOST, 0) ==
            GASNET_OK,
        "gex_Segment_Create");
  unsigned char *base = (unsigned char *)gex_Segment_QueryAddr(seg);
  memset(base, 0, size);
  /* Published before anything is bound: accepted, and it changes nothing
   * (no segment to register yet). */
  CHECK(gex_EP_PublishBoundSegment(g_tm, &g_ep, 1, 0) == GASNET_OK,
        "pre-bind publish");
  CHECK(gex_Segment_QueryBound(g_tm, g_me, NULL, NULL, NULL) != 0,
        "QueryBound before bind");
  CHECK(gex_EP_BindSegment(g_ep, seg, 0) == GASNET_OK, "bind");
  *size_p = size;
  return base;
}

/* subteam: testsegment's order (issue 34). A team with the primordial
 * team's members, permuted (odd ranks, descending, then even ones), made
 * with GEX_FLAG_TM_NO_SCRATCH; the segment is published over it in two
 * calls, odd ranks naming their endpoint in the first (num_eps 1, the
 * even ones 0) and even ranks in the second. Then QueryBound and Put/Get
 * over that team, an AM Long into every rank's segment, and publications
 * again over it and over the primordial team (nothing new, GASNET_OK). */
static void SubTeam(void) {
  uintptr_t size = 0;
  unsigned char *base = BoundPrimordial(&size);
  gex_TM_t perm = GEX_TM_INVALID;
  const int key = (int)((g_me & 1 ? 0 : g_n) + (g_n - g_me));
  gex_TM_Split(&perm, g_tm, 0, key, NULL, 0, GEX_FLAG_TM_NO_SCRATCH);
  CHECK(perm != GEX_TM_INVALID && gex_TM_QuerySize(perm) == g_n, "split");
  gex_Rank_t before = 0; /* ranks whose key is smaller: my team rank */
  for (gex_Rank_t j = 0; j < g_n; ++j) {
    if ((int)((j & 1 ? 0 : g_n) + (g_n - j)) < key) ++before;
  }
  CHECK(gex_TM_QueryRank(perm) == before, "permuted rank %u, expected %u",
        gex_TM_QueryRank(perm), before);
  const size_t first = g_me & 1;
  CHECK(gex_EP_PublishBoundSegment(perm, &g_ep, first, 0) == GASNET_OK,
        "publish over the permuted team (num_eps %zu)", first);
  CHECK(gex_EP_PublishBoundSegment(perm, &g_ep, 1 - first, 0) == GASNET_OK,
        "publish over the permuted team (num_eps %zu)", 1 - first);
  unsigned char **owners = calloc(g_n, sizeof *owners);
  CHECK(owners != NULL, "calloc");
  QueryAll(perm, size, owners);
  QueryAll(g_tm, size, owners);
  const size_t bytes = PutGetOver(perm, owners, base);
  LongToNext(owners, base);
  CHECK(gex_EP_PublishBoundSegment(perm, &g_ep, 1, 0) == GASNET_OK,
        "publish again over the permuted team");
  CHECK(gex_EP_PublishBoundSegment(g_tm, &g_ep, 1, 0) == GASNET_OK,
        "publish again over the primordial team");
  QueryAll(perm, size, owners);
  gex_TM_Destroy(perm, NULL, 0);
  free(owners);
  char line[128];
  snprintf(line, sizeof line, "subteam ok ranks=%u bytes=%zu long=%d", g_n,
           bytes, (int)LongBytes());
  Finish(line);
}

/* subset: published first over a team of half the ranks (split by
 * parity), so only they know it and the conduit has not registered it
 * (not every rank of the job has published one): QueryBound over that
 * team, none for the other half through the primordial team, Put/Get over
 * the half team; then published over the primordial team, after which
 * every rank reaches every rank's (Put/Get and an AM Long). */
static void SubSet(void) {
  uintptr_t size = 0;
  unsigned char *base = BoundPrimordial(&size);
  gex_TM_t half = GEX_TM_INVALID;
  gex_TM_Split(&half, g_tm, (int)(g_me & 1), (int)g_me, NULL, 0, 0);
  CHECK(half != GEX_TM_INVALID, "split");
  const gex_Rank_t h = gex_TM_QuerySize(half);
  CHECK(h == (g_n + 1 - (g_me & 1)) / 2, "half of %u: %u", g_n, h);
  CHECK(gex_EP_PublishBoundSegment(half, &g_ep, 1, 0) == GASNET_OK,
        "publish over half the ranks");
  unsigned char **owners = calloc(g_n, sizeof *owners);
  CHECK(owners != NULL, "calloc");
  QueryAll(half, size, owners);
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    if ((r & 1) != (g_me & 1)) {
      CHECK(gex_Segment_QueryBound(g_tm, r, NULL, NULL, NULL) != 0,
            "rank %u's segment was not published to rank %u", r, g_me);
    }
  }
  size_t bytes = PutGetOver(half, owners, base);
  Barrier();
  CHECK(gex_EP_PublishBoundSegment(g_tm, &g_ep, 1, 0) == GASNET_OK,
        "publish over the primordial team");
  QueryAll(g_tm, size, owners);
  bytes += PutGetOver(g_tm, owners, base);
  LongToNext(owners, base);
  gex_TM_Destroy(half, NULL, 0);
  free(owners);
  char line[128];
  snprintf(line, sizeof line, "subset ok ranks=%u half=%u bytes=%zu long=%d",
           g_n, h, bytes, (int)LongBytes());
  Finish(line);
}

static void Endpoints(void) {
  gex_Segment_t attached;
  CHECK(gex_Segment_Attach(&attached, g_tm, 65536) == GASNET_OK, "attach");
  gex_System_SetVerboseErrors(0);
  int refused = 0;
  const gex_EP_Capabilities_t bad[] = {
      GEX_EP_CAPABILITY_AM,
      GEX_EP_CAPABILITY_VIS,
      GEX_EP_CAPABILITY_COLL,
      GEX_EP_CAPABILITY_AD,
      GEX_EP_CAPABILITY_ALL,
      GEX_EP_CAPABILITY_RMA | GEX_EP_CAPABILITY_AM,
      0,
      (gex_EP_Capabilities_t)1u << 20};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    gex_EP_t ep = GEX_EP_INVALID;
    CHECK(gex_EP_Create(&ep, g_client, bad[i], 0) == GASNET_ERR_BAD_ARG,
          "capabilities %#x accepted", bad[i]);
    ++refused;
  }
  gex_EP_t ep1 = GEX_EP_INVALID, ep2 = GEX_EP_INVALID;
  CHECK(gex_EP_Create(&ep1, g_client, GEX_EP_CAPABILITY_RMA, 1) ==
            GASNET_ERR_BAD_ARG,
        "flags accepted");
  CHECK(gex_EP_Create(NULL, g_client, GEX_EP_CAPABILITY_RMA, 0) ==
            GASNET_ERR_BAD_ARG,
        "NULL ep_p accepted");
  CHECK(gex_EP_Create(&ep1, GEX_CLIENT_INVALID, GEX_EP_CAPABILITY_RMA, 0) ==
            GASNET_ERR_BAD_ARG,
        "bad client accepted");
  refused += 3;
  CHECK(gex_EP_Create(&ep1, g_client, GEX_EP_CAPABILITY_RMA, 0) == GASNET_OK,
        "ep1");
  CHECK(gex_EP_Create(&ep2, g_client, GEX_EP_CAPABILITY_RMA, 0) == GASNET_OK,
        "ep2");
  CHECK(ep1 != GEX_EP_INVALID && ep2 != GEX_EP_INVALID && ep1 != ep2 &&
            ep1 != g_ep,
        "endpoints");
  CHECK(gex_EP_QueryIndex(g_ep) == 0, "primordial index");
  CHECK(gex_EP_QueryIndex(ep1) == 1, "ep1 index %u", gex_EP_QueryIndex(ep1));
  CHECK(gex_EP_QueryIndex(ep2) == 2, "ep2 index %u", gex_EP_QueryIndex(ep2));
  CHECK(gex_EP_QueryClient(ep1) == g_client, "ep1 client");
  CHECK(gex_EP_QueryFlags(ep1) == 0, "ep1 flags");
  CHECK(gex_EP_QuerySegment(ep1) == GEX_SEGMENT_INVALID, "ep1 segment");
  gex_EP_SetCData(ep1, &g_me);
  CHECK(gex_EP_QueryCData(ep1) == &g_me, "ep1 cdata");
  CHECK(gex_EP_QuerySegment(g_ep) == attached, "primordial segment");

  /* Segment_Create's refusals. */
  static unsigned char mine[3 * 4096] __attribute__((aligned(4096)));
  gex_Segment_t s = GEX_SEGMENT_INVALID;
  CHECK(gex_Segment_Create(NULL, g_client, mine, sizeof mine, GEX_MK_HOST, 0) ==
            GASNET_ERR_BAD_ARG,
        "NULL segment_p");
  CHECK(gex_Segment_Create(&s, g_client, mine, sizeof mine, GEX_MK_INVALID,
                           0) == GASNET_ERR_BAD_ARG,
        "GEX_MK_INVALID");
  CHECK(gex_Segment_Create(&s, g_client, mine, sizeof mine, GEX_MK_HOST, 2) ==
            GASNET_ERR_BAD_ARG,
        "flags");
  CHECK(gex_Segment_Create(&s, g_client, mine, 0, GEX_MK_HOST, 0) ==
            GASNET_ERR_BAD_ARG,
        "length 0");
  CHECK(gex_Segment_Create(&s, GEX_CLIENT_INVALID, mine, sizeof mine,
                           GEX_MK_HOST, 0) == GASNET_ERR_BAD_ARG,
        "bad client");
  refused += 5;

  /* A client-memory segment on ep1, a GASNet-allocated one on ep2. */
  gex_Segment_t s1 = GEX_SEGMENT_INVALID, s2 = GEX_SEGMENT_INVALID;
  CHECK(gex_Segment_Create(&s1, g_client, mine, sizeof mine, GEX_MK_HOST, 0) ==
            GASNET_OK,
        "client-memory segment");
  CHECK(gex_Segment_QueryAddr(s1) == (void *)mine, "s1 addr");
  CHECK(gex_Segment_QuerySize(s1) == sizeof mine, "s1 size");
  CHECK(gex_Segment_Create(&s2, g_client, NULL, 5000, GEX_MK_HOST, 0) ==
            GASNET_OK,
        "allocated segment");
  CHECK(gex_Segment_QueryAddr(s2) != NULL, "s2 addr");
  CHECK(gex_Segment_QuerySize(s2) == 5000, "s2 size");
  /* Writable, all of it; peers that map it check the pattern. */
  for (size_t i = 0; i < 5000; ++i) {
    ((unsigned char *)gex_Segment_QueryAddr(s2))[i] = Pattern(g_me, 2, i);
  }
  CHECK(gex_EP_BindSegment(ep1, s1, 0) == GASNET_OK, "bind ep1");
  /* As clients write it (spec: returns GASNET_OK on success). */
  if (gex_EP_BindSegment(ep2, s2, 0) != GASNET_OK) CHECK(0, "bind ep2");
  CHECK(gex_EP_QuerySegment(ep1) == s1 && gex_EP_QuerySegment(ep2) == s2,
        "bound");

  /* A segment never bound nor published: destroyed at once. */
  gex_Segment_t s3 = GEX_SEGMENT_INVALID;
  CHECK(gex_Segment_Create(&s3, g_client, NULL, 4096, GEX_MK_HOST, 0) ==
            GASNET_OK,
        "s3");
  gex_Segment_Destroy(s3, 0);

  /* Publication: bad flags (refused everywhere), a duplicate (refused on
   * every rank, since one rank's bad arguments fail the collective), then
   * the good one. An endpoint without a segment may be named. */
  gex_EP_t eps[3] = {ep1, ep2, g_ep};
  CHECK(gex_EP_PublishBoundSegment(g_tm, eps, 3, 4) == GASNET_ERR_BAD_ARG,
        "publish flags");
  gex_EP_t dup[2] = {ep1, ep1};
  CHECK(gex_EP_PublishBoundSegment(g_tm, g_me == 0 ? dup : eps,
                                   g_me == 0 ? 2 : 0, 0) == GASNET_ERR_BAD_ARG,
        "publish duplicate");
  CHECK(gex_EP_PublishBoundSegment(g_tm, NULL, 0, 0) == GASNET_OK,
        "publish nothing");
  CHECK(gex_EP_PublishBoundSegment(g_tm, eps, 3, 0) == GASNET_OK, "publish");
  refused += 2;

  for (gex_Rank_t r = 0; r < g_n; ++r) {
    const gex_EP_Location_t loc = gex_TM_TranslateRankToEP(g_tm, r, 0);
    CHECK(loc.gex_rank == r && loc.gex_ep_index == 0, "rank %u: (%u, %u)", r,
          loc.gex_rank, (unsigned)loc.gex_ep_index);
    CHECK(gex_Segment_QueryBound(g_tm, r, NULL, NULL, NULL) == 0,
          "QueryBound %u", r);
  }

  /* The additional endpoints of every rank, through gex_TM_Pair: the
   * client-memory segment (index 1) is known by address only, except
   * here; the allocated one (index 2) is mapped for the neighbourhood,
   * holding its owner's pattern. Index 3 exists nowhere. */
  const gex_TM_t pair1 = gex_TM_Pair(g_ep, 1);
  const gex_TM_t pair2 = gex_TM_Pair(g_ep, 2);
  const gex_TM_t pair3 = gex_TM_Pair(g_ep, 3);
  int mapped = 0;
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    gex_EP_Location_t loc = gex_TM_TranslateRankToEP(pair1, r, 0);
    CHECK(loc.gex_rank == r && loc.gex_ep_index == 1, "pair1 %u: (%u, %u)", r,
          loc.gex_rank, (unsigned)loc.gex_ep_index);
    loc = gex_TM_TranslateRankToEP(pair2, r, 0);
    CHECK(loc.gex_rank == r && loc.gex_ep_index == 2, "pair2 %u", r);
    void *owner = NULL, *local = NULL;
    uintptr_t sz = 0;
    CHECK(gex_Segment_QueryBound(pair1, r, &owner, &local, &sz) == 0,
          "QueryBound (%u, 1)", r);
    CHECK(owner != NULL && sz == sizeof mine, "(%u, 1): %p %zu", r, owner,
          (size_t)sz);
    if (r == g_me) {
      CHECK(owner == (void *)mine && local == (void *)mine, "(me, 1): %p %p",
            owner, local);
    } else {
      CHECK(local == NULL, "(%u, 1): client memory mapped at %p", r, local);
    }
    owner = local = NULL;
    sz = 0;
    CHECK(gex_Segment_QueryBound(pair2, r, &owner, &local, &sz) == 0,
          "QueryBound (%u, 2)", r);
    CHECK(owner != NULL && sz == 5000, "(%u, 2): %p %zu", r, owner, (size_t)sz);
    CHECK((local != NULL) == InMyNbrhd(r), "(%u, 2): local %p", r, local);
    if (local != NULL) {
      ++mapped;
      for (size_t i = 0; i < 5000; ++i) {
        CHECK(((unsigned char *)local)[i] == Pattern(r, 2, i),
              "(%u, 2) byte %zu as mapped here", r, i);
      }
    }
    void *owner2 = NULL, *local2 = NULL;
    uintptr_t sz2 = 0;
    gex_Event_Wait(
        gex_EP_QueryBoundSegmentNB(pair2, r, &owner2, &local2, &sz2, 0));
    CHECK(owner2 == owner && local2 == local && sz2 == sz,
          "QueryBoundSegmentNB (%u, 2) disagrees", r);
    CHECK(gex_Segment_QueryBound(pair3, r, &owner, &local, &sz) != 0,
          "QueryBound (%u, 3): no such endpoint", r);
  }

  /* RMA into the additional endpoints' segments, through the pairs: every
   * rank Puts a slot of its own into every rank's endpoint-1 segment
   * (client memory: over Active Messages to every rank but itself) and
   * endpoint-2 segment (allocated: a copy in the neighbourhood), Blocking,
   * NB and NBI in turn; the owners check every slot; then every rank Gets
   * its slots back. The barrier first: every rank has read the patterns
   * above. */
  Barrier();
  enum { kEpSlot = 64, kEpBase = 1024 };
  unsigned char *const allocated = (unsigned char *)gex_Segment_QueryAddr(s2);
  long rma = 0;
  for (int get = 0; get <= 1; ++get) {
    for (gex_Rank_t r = 0; r < g_n; ++r) {
      for (int idx = 1; idx <= 2; ++idx) {
        const gex_TM_t pair = idx == 1 ? pair1 : pair2;
        void *owner = NULL;
        CHECK(gex_Segment_QueryBound(pair, r, &owner, NULL, NULL) == 0,
              "QueryBound (%u, %d)", r, idx);
        unsigned char *remote =
            (unsigned char *)owner + kEpBase + (size_t)g_me * kEpSlot;
        unsigned char buf[kEpSlot];
        const int form = (int)((r + (gex_Rank_t)idx + (gex_Rank_t)get) % 3);
        if (!get) {
          for (size_t i = 0; i < kEpSlot; ++i) buf[i] = EpByte(g_me, r, idx, i);
          if (form == 0) {
            CHECK(gex_RMA_PutBlocking(pair, r, remote, buf, kEpSlot, 0) == 0,
                  "PutBlocking (%u, %d)", r, idx);
          } else if (form == 1) {
            gex_Event_Wait(
                gex_RMA_PutNB(pair, r, remote, buf, kEpSlot, GEX_EVENT_NOW, 0));
          } else {
            CHECK(gex_RMA_PutNBI(pair, r, remote, buf, kEpSlot, GEX_EVENT_NOW,
                                 0) == 0,
                  "PutNBI (%u, %d)", r, idx);
            gex_NBI_Wait(GEX_EC_PUT, 0);
          }
        } else {
          memset(buf, 0, sizeof buf);
          if (form == 0) {
            CHECK(gex_RMA_GetBlocking(pair, buf, r, remote, kEpSlot, 0) == 0,
                  "GetBlocking (%u, %d)", r, idx);
          } else if (form == 1) {
            gex_Event_Wait(gex_RMA_GetNB(pair, buf, r, remote, kEpSlot, 0));
          } else {
            CHECK(gex_RMA_GetNBI(pair, buf, r, remote, kEpSlot, 0) == 0,
                  "GetNBI (%u, %d)", r, idx);
            gex_NBI_Wait(GEX_EC_GET, 0);
          }
          for (size_t i = 0; i < kEpSlot; ++i) {
            CHECK(buf[i] == EpByte(g_me, r, idx, i),
                  "Get from (%u, %d): byte %zu is %u", r, idx, i, buf[i]);
          }
        }
        ++rma;
      }
    }
    if (get) break;
    Barrier();
    for (gex_Rank_t from = 0; from < g_n; ++from) {
      for (size_t i = 0; i < kEpSlot; ++i) {
        const size_t at = kEpBase + (size_t)from * kEpSlot + i;
        CHECK(mine[at] == EpByte(from, g_me, 1, i),
              "endpoint 1 here: byte %zu of rank %u's slot", i, from);
        CHECK(allocated[at] == EpByte(from, g_me, 2, i),
              "endpoint 2 here: byte %zu of rank %u's slot", i, from);
      }
    }
  }
  Barrier();

  /* A sub-team's members are primordial endpoints: (job rank, 0). */
  gex_TM_t sub = GEX_TM_INVALID;
  gex_TM_Split(&sub, g_tm, (int)(g_me % 2), -(int)g_me, NULL, 0,
               GEX_FLAG_TM_NO_SCRATCH);
  CHECK(sub != GEX_TM_INVALID, "split");
  for (gex_Rank_t i = 0; i < gex_TM_QuerySize(sub); ++i) {
    const gex_EP_Location_t loc = gex_TM_TranslateRankToEP(sub, i, 0);
    CHECK(loc.gex_rank == gex_TM_TranslateRankToJobrank(sub, i) &&
              loc.gex_rank % 2 == g_me % 2 && loc.gex_ep_index == 0,
          "sub-team rank %u: (%u, %u)", i, loc.gex_rank,
          (unsigned)loc.gex_ep_index);
    CHECK(gex_Segment_QueryBound(sub, i, NULL, NULL, NULL) == 0,
          "QueryBound sub-team rank %u", i);
  }
  /* A publication over the sub-team: endpoint 3 (created now on every
   * rank) is known to its members only. A pair takes no collectives. */
  gex_EP_t ep3 = GEX_EP_INVALID;
  CHECK(gex_EP_Create(&ep3, g_client, GEX_EP_CAPABILITY_RMA, 0) == GASNET_OK,
        "ep3");
  CHECK(gex_EP_QueryIndex(ep3) == 3, "ep3 index %u", gex_EP_QueryIndex(ep3));
  gex_Segment_t s4 = GEX_SEGMENT_INVALID;
  CHECK(gex_Segment_Create(&s4, g_client, NULL, 3000, GEX_MK_HOST, 0) ==
            GASNET_OK,
        "s4");
  for (size_t i = 0; i < 3000; ++i) {
    ((unsigned char *)gex_Segment_QueryAddr(s4))[i] = Pattern(g_me, 3, i);
  }
  gex_EP_BindSegment(ep3, s4, 0);
  CHECK(gex_EP_PublishBoundSegment(pair1, &ep3, 1, 0) == GASNET_ERR_BAD_ARG,
        "publish over a pair");
  ++refused;
  CHECK(gex_EP_PublishBoundSegment(sub, &ep3, 1, 0) == GASNET_OK,
        "publish over the sub-team");
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    void *owner = NULL, *local = NULL;
    uintptr_t sz = 0;
    const int known =
        gex_Segment_QueryBound(pair3, r, &owner, &local, &sz) == 0;
    CHECK(known == (r % 2 == g_me % 2), "(%u, 3) known %d", r, known);
    if (!known) continue;
    CHECK(owner != NULL && sz == 3000, "(%u, 3): %p %zu", r, owner, (size_t)sz);
    CHECK((local != NULL) == InMyNbrhd(r), "(%u, 3): local %p", r, local);
    for (size_t i = 0; local != NULL && i < 3000; ++i) {
      CHECK(((unsigned char *)local)[i] == Pattern(r, 3, i),
            "(%u, 3) byte %zu as mapped here", r, i);
    }
  }
  gex_Coll_BarrierBlocking(sub, 0);
  gex_Segment_Destroy(s4, GEX_FLAG_GLOBALLY_QUIESCED);
  gex_TM_Destroy(sub, NULL, 0);

  unsigned int count = 99;
  const gex_ProgressThreadInfo_t *info = NULL;
  CHECK(
      gex_System_QueryProgressThreads(g_client, &count, &info, 0) == GASNET_OK,
      "QueryProgressThreads");
  CHECK(count == 0 && info != NULL, "progress threads: %u", count);
  CHECK(gex_System_QueryProgressThreads(g_client, NULL, &info, 0) ==
            GASNET_ERR_BAD_ARG,
        "NULL count_p");
  ++refused;

  /* Everyone is done with them: destroy the published ones. */
  Barrier();
  gex_Segment_Destroy(s1, GEX_FLAG_GLOBALLY_QUIESCED);
  gex_Segment_Destroy(s2, GEX_FLAG_GLOBALLY_QUIESCED);
  CHECK(gex_EP_QuerySegment(ep1) == GEX_SEGMENT_INVALID, "ep1 unbound");
  CHECK(gex_EP_QuerySegment(ep2) == GEX_SEGMENT_INVALID, "ep2 unbound");
  gex_System_SetVerboseErrors(1);
  char line[128];
  snprintf(line, sizeof line, "endpoints ok eps=3 refused=%d mapped=%d rma=%ld",
           refused, mapped, rma);
  Finish(line);
}

static void Misuse(const char *mode) {
  gex_EP_t ep1 = GEX_EP_INVALID;
  CHECK(gex_EP_Create(&ep1, g_client, GEX_EP_CAPABILITY_RMA, 0) == GASNET_OK,
        "ep1");
  static unsigned char a[4096] __attribute__((aligned(4096)));
  static unsigned char b[4096] __attribute__((aligned(4096)));
  gex_Segment_t sa, sb;
  CHECK(gex_Segment_Create(&sa, g_client, a, sizeof a, GEX_MK_HOST, 0) ==
            GASNET_OK,
        "sa");
  CHECK(gex_Segment_Create(&sb, g_client, b, sizeof b, GEX_MK_HOST, 0) ==
            GASNET_OK,
        "sb");
  Barrier();
  int erred = 0;
  if (strcmp(mode, "long-unregistered") == 0) {
    gex_Segment_t mine = GEX_SEGMENT_INVALID;
    CHECK(gex_Segment_Create(&mine, g_client, NULL, 4096, GEX_MK_HOST, 0) ==
              GASNET_OK,
          "create");
    CHECK(gex_EP_BindSegment(g_ep, mine, 0) == GASNET_OK, "bind");
    CHECK(gex_EP_PublishBoundSegment(g_tm, &g_ep, g_me == 0 ? 0 : 1, 0) ==
              GASNET_OK,
          "publish");
  }
  if (strcmp(mode, "destroy-published") == 0) {
    gex_EP_BindSegment(ep1, sa, 0);
    CHECK(gex_EP_PublishBoundSegment(g_tm, &ep1, 1, 0) == GASNET_OK, "publish");
  }
  if (g_me == 0) {
    erred = 1;
    if (strcmp(mode, "bind-twice") == 0) {
      gex_EP_BindSegment(ep1, sa, 0);
      gex_EP_BindSegment(ep1, sb, 0);
    } else if (strcmp(mode, "bind-bound-segment") == 0) {
      gex_EP_t ep2 = GEX_EP_INVALID;
      CHECK(
          gex_EP_Create(&ep2, g_client, GEX_EP_CAPABILITY_RMA, 0) == GASNET_OK,
          "ep2");
      gex_EP_BindSegment(ep1, sa, 0);
      gex_EP_BindSegment(ep2, sa, 0);
    } else if (strcmp(mode, "bind-null") == 0) {
      gex_EP_BindSegment(ep1, GEX_SEGMENT_INVALID, 0);
    } else if (strcmp(mode, "bind-attached") == 0) {
      gex_Segment_t attached;
      CHECK(gex_Segment_Attach(&attached, g_tm, 4096) == GASNET_OK, "attach");
      gex_EP_BindSegment(g_ep, sa, 0);
    } else if (strcmp(mode, "long-unregistered") == 0) {
      /* Rank 1 published its primordial segment, rank 0 none: the conduit
       * has not registered them, and rank 1 is outside rank 0's
       * supernode. */
      void *owner = NULL;
      CHECK(gex_Segment_QueryBound(g_tm, 1, &owner, NULL, NULL) == 0,
            "QueryBound rank 1");
      static unsigned char payload[64];
      gex_AM_RequestLong0(g_tm, 1, GEX_AM_INDEX_BASE, payload, sizeof payload,
                          owner, GEX_EVENT_NOW, 0);
    } else if (strcmp(mode, "bind-client-primordial") == 0) {
      gex_EP_BindSegment(g_ep, sa, 0);
    } else if (strcmp(mode, "destroy-published") == 0) {
      gex_Segment_Destroy(sa, 0);
    } else if (strcmp(mode, "destroy-attached") == 0) {
      gex_Segment_t attached;
      CHECK(gex_Segment_Attach(&attached, g_tm, 4096) == GASNET_OK, "attach");
      gex_Segment_Destroy(attached, 0);
    } else if (strcmp(mode, "query-index-bad") == 0) {
      static uint64_t not_an_ep[8];
      gex_EP_QueryIndex((gex_EP_t)(void *)not_an_ep);
    } else {
      CHECK(0, "unknown mode %s", mode);
    }
  } else if (strcmp(mode, "bind-attached") == 0 ||
             strcmp(mode, "destroy-attached") == 0) {
    gex_Segment_t attached;
    CHECK(gex_Segment_Attach(&attached, g_tm, 4096) == GASNET_OK, "attach");
  }
  if (erred) Say("survived %s", mode);
  Barrier();
  gasnet_exit(0);
}

int main(int argc, char **argv) {
  CHECK(gex_Client_Init(&g_client, &g_ep, &g_tm, "segment_client", &argc, &argv,
                        0) == GASNET_OK,
        "gex_Client_Init");
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = (int)g_me;
  CHECK(argc == 2, "usage: segment_client MODE");
  const char *mode = argv[1];
  if (strcmp(mode, "primordial") == 0) Primordial();
  if (strcmp(mode, "endpoints") == 0) Endpoints();
  if (strcmp(mode, "subteam") == 0) SubTeam();
  if (strcmp(mode, "subset") == 0) SubSet();
  Misuse(mode);
  return 0;
}
