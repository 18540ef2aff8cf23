/* am_client: one rank of an Active Message job over the GASNet-EX C API on
 * any conduit (SEQ mode), started by its launcher from am_job_test.
 * Written in C11 against <gasnetex.h> only. Every check is a CHECK: a
 * failure prints "rank R: CHECK FAILED ..." and ends the job with exit
 * code 1. A rank that passed every check of its mode prints
 * "rank R: <mode> ok ..." before the closing barrier and gasnet_exit(0).
 *
 * Every handler, in every mode, first checks its token with gex_Token_Info
 * (GEX_TI_ALL): the mask returned, gex_srcrank in range, gex_ep, gex_is_req
 * and gex_is_long for the handler's kind and category, and gex_entry: the
 * index it was registered at, its function, flags, nargs, gex_cdata (a
 * per-entry pointer) and gex_name.
 *
 *   args       102 handlers: Short/Medium/Long x Request/Reply x 0..16
 *              arguments (the Shorts at fixed indices, the rest assigned by
 *              gex_EP_RegisterHandlers). Every rank sends every category
 *              with every argument count to every rank (itself too),
 *              alternating the numbered and variadic call forms and
 *              GEX_EVENT_NOW / an event pointer (checked to read
 *              GEX_EVENT_INVALID after the call). The argument values
 *              depend on the sender, category, count and position and
 *              include INT32_MIN, INT32_MAX and negative values; the request
 *              handler checks each one, checks the payload (Medium/Long) and,
 *              for Long, that buf is the address the sender named in this
 *              rank's segment and that the bytes are already there; it then
 *              replies with the same category and count, every argument
 *              transformed and a payload of its own. The reply handler checks
 *              the same way. Each (peer, category, count) must be seen once
 *              as a request and once as a reply.
 *              Prints "rank R: args ok requests=Q replies=P".
 *   sizes      The limit queries (gex_AM_MaxArgs, the LUBs, the per-peer
 *              maxima for 0..16 arguments: at least the LUB and 512, never
 *              increasing with the count, GEX_RANK_INVALID the least over the
 *              peers, the same before and after the segment is attached);
 *              then, to every rank in turn, Medium and Long requests with 2
 *              and 16 arguments of 0 bytes, 1 byte, the LUB and the peer's
 *              maximum, each answered with a reply of the same category of
 *              0, 1, LUB and gex_Token_MaxReply* bytes (checked equal to
 *              gex_AM_MaxReply* for the requester). Receivers compute the
 *              size they expect from their own queries (the maxima are
 *              symmetric), check every byte, and for Long the address.
 *              Prints "rank R: sizes ok max_medium=M max_long=L".
 *   npam*      Negotiated payload to every rank, one group of cases per
 *              mode. Messages carry a per-sender sequence number and the
 *              committed length: receivers check that only committed
 *              messages arrive, once each, in order, with exactly the
 *              committed length and bytes; Longs at the named address with
 *              nothing past the committed length changed (the landing slots
 *              start filled with a guard byte); slots that only cancelled
 *              Longs were prepared for must stay untouched.
 *     npam     Request Medium from a client buffer (SrcDescAddr is that
 *              buffer, filled after Prepare: read at Commit; lc event
 *              GEX_EVENT_INVALID after Commit) and from a GASNet buffer of
 *              exactly the GEX_FLAG_AM_PREPARE_LEAST_ALLOC maximum; Request
 *              Long from a client buffer; each committing fewer bytes than
 *              prepared, numbered and variadic Commit forms; prepared and
 *              cancelled Mediums (both buffer kinds) and client-buffer
 *              Longs. Request handlers reply the same ways, or prepare and
 *              cancel a Medium and a Long reply and then reply with a Short.
 *     npam-long-alloc  Request and Reply Long in a GASNet buffer with
 *              dest_addr given at Prepare, the whole buffer filled, fewer
 *              bytes committed.
 *     npam-long-alloc-cancel  a GASNet-buffer Long prepared and cancelled,
 *              as Request and as Reply (then a Short reply).
 *     npam-long-dest-at-commit  GASNet-buffer Longs with dest_addr NULL at
 *              Prepare (the spec's "conservative behavior"), given at Commit.
 *     npam-long-segment-end  GASNet-buffer Longs whose dest_addr is 100
 *              bytes before the end of the target's segment, most_payload
 *              larger than that, 99 bytes committed (to the next rank only,
 *              so that each segment end has one writer).
 *              Each prints "rank R: <mode> ok requests=Q replies=P".
 *   immediate  (at least 2 ranks; run with a small
 *              GASNET_PSHMNET_QUEUE_DEPTH) A full PSHM queue, so between
 *              ranks of one supernode (neighbourhood) only: each rank in
 *              turn is the target: it announces in its own segment that it
 *              is spinning and then spins on its segment WITHOUT polling,
 *              while every other rank of its neighbourhood sends it
 *              IMMEDIATE 2-argument Short requests until one returns
 *              non-zero (within a bound), checks that IMMEDIATE Medium and
 *              Long requests and an IMMEDIATE Prepare are refused too,
 *              writes how many it sent into the target's segment (through
 *              its cross-mapped address from gex_EP_QueryBoundSegmentNB)
 *              and counts itself done; ranks outside the neighbourhood send
 *              nothing. The target then polls until every message has
 *              arrived, each once and in order, and nothing from outside.
 *              Prints "rank S: immediate to rank T: sent=K" for every pair
 *              of one neighbourhood, then
 *              "rank R: immediate ok received=Q senders=P" (P: the other
 *              ranks of its neighbourhood). */
#include <gasnetex.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api/arg_lists.h"
#include "tests/api/client_check.h"

enum { kShort = 0, kMedium = 1, kLong = 2, kCategories = 3 };
enum { kReply = 0, kRequest = 1, kKinds = 2 };
enum { kMaxArgs = 16, kCounts = kMaxArgs + 1 };

static const char *const kCategoryName[kCategories] = {"short", "medium",
                                                       "long"};
static const char *const kKindName[kKinds] = {"rep", "req"};

/* ------------------------------------------------------------------------ */
/* The job. */

static gex_Client_t g_client;
static gex_EP_t g_ep;
static gex_TM_t g_tm;
static gex_Segment_t g_seg;
static gex_Rank_t g_me;
static gex_Rank_t g_n;
static char *g_base;     /* my segment */
static uintptr_t g_size; /* its size */
static char **g_owner;   /* each rank's segment, as that rank sees it */
static char **g_local;   /* each rank's segment, mapped here */

#define POLL_UNTIL(cond) \
  do {                   \
    while (!(cond)) {    \
      gasnet_AMPoll();   \
      sched_yield();     \
    }                    \
  } while (0)

static void Barrier(void) { gex_Coll_BarrierBlocking(g_tm, 0); }

static void *Allocate(size_t bytes) {
  void *p = calloc(1, bytes > 0 ? bytes : 1);
  CHECK(p != NULL, "calloc(%zu)", bytes);
  return p;
}

static void Init(int *argc, char ***argv) {
  const int rc =
      gex_Client_Init(&g_client, &g_ep, &g_tm, "am_client", argc, argv, 0);
  CHECK(rc == GASNET_OK, "gex_Client_Init returned %d", rc);
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = (int)g_me;
  CHECK(g_me < g_n, "rank %u of %u", g_me, g_n);
  CHECK(gex_System_QueryJobRank() == g_me && gex_System_QueryJobSize() == g_n,
        "job rank %u size %u", gex_System_QueryJobRank(),
        gex_System_QueryJobSize());
  CHECK(gex_TM_QueryEP(g_tm) == g_ep, "gex_TM_QueryEP");
  CHECK(strcmp(gex_Client_QueryName(g_client), "am_client") == 0,
        "client name '%s'", gex_Client_QueryName(g_client));
}

/* Attaches `bytes` of segment and learns every rank's. */
static void Attach(uintptr_t bytes) {
  gex_Rank_t r;
  const int rc = gex_Segment_Attach(&g_seg, g_tm, bytes);
  CHECK(rc == GASNET_OK, "gex_Segment_Attach(%" PRIuPTR ") returned %d", bytes,
        rc);
  g_base = (char *)gex_Segment_QueryAddr(g_seg);
  g_size = gex_Segment_QuerySize(g_seg);
  CHECK(g_base != NULL && g_size >= bytes, "segment %p size %" PRIuPTR,
        (void *)g_base, g_size);
  CHECK(gex_EP_QuerySegment(g_ep) == g_seg, "gex_EP_QuerySegment");
  g_owner = (char **)Allocate(g_n * sizeof(char *));
  g_local = (char **)Allocate(g_n * sizeof(char *));
  /* The neighbourhood (this rank's supernode) is mapped here; the rest of
   * the job (over a network conduit) is not. */
  gex_RankInfo_t *nbrhd = NULL;
  gex_Rank_t nbrhd_count = 0;
  gex_System_QueryNbrhdInfo(&nbrhd, &nbrhd_count, NULL);
  CHECK(nbrhd != NULL && nbrhd_count >= 1 && nbrhd_count <= g_n,
        "gex_System_QueryNbrhdInfo: %u ranks", nbrhd_count);
  for (r = 0; r < g_n; ++r) {
    void *owner = NULL;
    void *local = NULL;
    uintptr_t size = 0;
    int mapped = 0;
    for (gex_Rank_t i = 0; i < nbrhd_count; ++i) {
      mapped |= nbrhd[i].gex_jobrank == r;
    }
    const gex_Event_t ev =
        gex_EP_QueryBoundSegmentNB(g_tm, r, &owner, &local, &size, 0);
    CHECK(ev == GEX_EVENT_INVALID, "QueryBoundSegmentNB(%u) gave an event", r);
    CHECK(owner != NULL && (local != NULL) == mapped && size >= bytes,
          "rank %u (%s neighbourhood) segment owner=%p local=%p size=%" PRIuPTR,
          r, mapped ? "in my" : "outside my", owner, local, size);
    if (r == g_me) {
      CHECK(owner == g_base && local == g_base && size == g_size,
            "my own segment: owner=%p local=%p size=%" PRIuPTR, owner, local,
            size);
    }
    g_owner[r] = (char *)owner;
    g_local[r] = (char *)local;
  }
}

/* Ends a mode that passed: everyone reaches the barrier, then leaves. */
static void Finish(void) {
  Barrier();
  gasnet_exit(0);
}

/* ------------------------------------------------------------------------ */
/* Payload patterns: byte i of the message with `seed`. */

static uint8_t PatternByte(uint32_t seed, size_t i) {
  return (uint8_t)(seed * 0x9E3779B1u + i * 131u + (i >> 8) * 7u +
                   (seed >> 11));
}

static void FillPattern(void *buf, size_t len, uint32_t seed) {
  uint8_t *p = (uint8_t *)buf;
  size_t i;
  for (i = 0; i < len; ++i) p[i] = PatternByte(seed, i);
}

/* The first byte that differs from the pattern, or `len`. */
static size_t PatternMismatch(const void *buf, size_t len, uint32_t seed) {
  const uint8_t *p = (const uint8_t *)buf;
  size_t i;
  for (i = 0; i < len; ++i) {
    if (p[i] != PatternByte(seed, i)) return i;
  }
  return len;
}

#define CHECK_PATTERN(buf, len, seed, what)                               \
  do {                                                                    \
    const size_t at_ = PatternMismatch((buf), (len), (seed));             \
    CHECK(at_ == (len), "%s: byte %zu of %zu is 0x%02x, expected 0x%02x", \
          (what), at_, (size_t)(len), ((const uint8_t *)(buf))[at_],      \
          PatternByte((seed), at_));                                      \
  } while (0)

/* ------------------------------------------------------------------------ */
/* Handlers: one function per category, kind and argument count, all passing
 * what they got to the mode's OnMessage. */

typedef void (*OnMessageFn)(gex_Token_t t, int cat, int kind, void *buf,
                            size_t nbytes, unsigned nargs,
                            const gex_AM_Arg_t *a);
static OnMessageFn g_on_message;

#define AT_DEFINE_HANDLERS(n)                                  \
  static void ShortReq##n(gex_Token_t t AT_PARAMS_##n) {       \
    const gex_AM_Arg_t a[] = {0 AT_LIST_##n};                  \
    g_on_message(t, kShort, kRequest, NULL, 0, n, a + 1);      \
  }                                                            \
  static void ShortRep##n(gex_Token_t t AT_PARAMS_##n) {       \
    const gex_AM_Arg_t a[] = {0 AT_LIST_##n};                  \
    g_on_message(t, kShort, kReply, NULL, 0, n, a + 1);        \
  }                                                            \
  static void MediumReq##n(gex_Token_t t, void *buf,           \
                           size_t nbytes AT_PARAMS_##n) {      \
    const gex_AM_Arg_t a[] = {0 AT_LIST_##n};                  \
    g_on_message(t, kMedium, kRequest, buf, nbytes, n, a + 1); \
  }                                                            \
  static void MediumRep##n(gex_Token_t t, void *buf,           \
                           size_t nbytes AT_PARAMS_##n) {      \
    const gex_AM_Arg_t a[] = {0 AT_LIST_##n};                  \
    g_on_message(t, kMedium, kReply, buf, nbytes, n, a + 1);   \
  }                                                            \
  static void LongReq##n(gex_Token_t t, void *buf,             \
                         size_t nbytes AT_PARAMS_##n) {        \
    const gex_AM_Arg_t a[] = {0 AT_LIST_##n};                  \
    g_on_message(t, kLong, kRequest, buf, nbytes, n, a + 1);   \
  }                                                            \
  static void LongRep##n(gex_Token_t t, void *buf,             \
                         size_t nbytes AT_PARAMS_##n) {        \
    const gex_AM_Arg_t a[] = {0 AT_LIST_##n};                  \
    g_on_message(t, kLong, kReply, buf, nbytes, n, a + 1);     \
  }
AT_FOR_EACH_NARGS(AT_DEFINE_HANDLERS)

/* [nargs][category][kind]. C converts each to gex_AM_Fn_t (an unprototyped
 * function type) without a cast. */
#define AT_HANDLER_ROW(n)        \
  {{ShortRep##n, ShortReq##n},   \
   {MediumRep##n, MediumReq##n}, \
   {LongRep##n, LongReq##n}},
static const gex_AM_Fn_t kHandlers[kCounts][kCategories][kKinds] = {
    AT_FOR_EACH_NARGS(AT_HANDLER_ROW)};

/* What each registered entry is, for the token checks; gex_cdata points at
 * the entry's own slot here. */
typedef struct {
  int registered;
  gex_AM_Index_t index;
  char name[32];
} HandlerSlot;
static HandlerSlot g_slots[kCounts][kCategories][kKinds];

static gex_AM_Index_t Index(unsigned nargs, int cat, int kind) {
  const HandlerSlot *s = &g_slots[nargs][cat][kind];
  CHECK(s->registered, "no %s %s handler with %u args", kCategoryName[cat],
        kKindName[kind], nargs);
  return s->index;
}

/* Fills `e` for the handler (nargs, cat, kind) at `index` (0: assigned). */
static void MakeEntry(gex_AM_Entry_t *e, unsigned nargs, int cat, int kind,
                      gex_AM_Index_t index) {
  HandlerSlot *s = &g_slots[nargs][cat][kind];
  snprintf(s->name, sizeof s->name, "%s_%s_%u", kCategoryName[cat],
           kKindName[kind], nargs);
  e->gex_index = index;
  e->gex_fnptr = kHandlers[nargs][cat][kind];
  e->gex_flags = (cat == kShort    ? GEX_FLAG_AM_SHORT
                  : cat == kMedium ? GEX_FLAG_AM_MEDIUM
                                   : GEX_FLAG_AM_LONG) |
                 (kind == kRequest ? GEX_FLAG_AM_REQUEST : GEX_FLAG_AM_REPLY);
  e->gex_nargs = nargs;
  e->gex_cdata = s;
  e->gex_name = s->name;
}

/* Registers `count` entries made by MakeEntry and records their indices:
 * assigned ones in the client range, fixed ones unchanged, all distinct. */
static void Register(gex_AM_Entry_t *entries, size_t count) {
  gex_AM_Index_t fixed[256];
  unsigned char used[256] = {0};
  size_t i;
  int rc;
  for (i = 0; i < count; ++i) fixed[i] = entries[i].gex_index;
  rc = gex_EP_RegisterHandlers(g_ep, entries, count);
  CHECK(rc == GASNET_OK, "gex_EP_RegisterHandlers(%zu entries) returned %d",
        count, rc);
  for (i = 0; i < count; ++i) {
    const gex_AM_Entry_t *e = &entries[i];
    HandlerSlot *s = (HandlerSlot *)e->gex_cdata;
    CHECK(e->gex_index >= GEX_AM_INDEX_BASE, "%s got index %u", e->gex_name,
          e->gex_index);
    CHECK(fixed[i] == 0 || e->gex_index == fixed[i], "%s asked for %u, has %u",
          e->gex_name, fixed[i], e->gex_index);
    CHECK(!used[e->gex_index], "index %u given twice", e->gex_index);
    used[e->gex_index] = 1;
    s->registered = 1;
    s->index = e->gex_index;
  }
}

/* Checks a handler's token (see the file comment); returns the sender. */
static gex_Rank_t CheckToken(gex_Token_t t, int cat, int kind, unsigned nargs) {
  const HandlerSlot *s = &g_slots[nargs][cat][kind];
  const gex_AM_Entry_t *e;
  gex_Token_Info_t info;
  const gex_TI_t got = gex_Token_Info(t, &info, GEX_TI_ALL);
  CHECK((got & GEX_TI_ALL) == GEX_TI_ALL, "gex_Token_Info returned 0x%x", got);
  CHECK(s->registered,
        "%s %s handler with %u args ran but was never "
        "registered",
        kCategoryName[cat], kKindName[kind], nargs);
  CHECK(info.gex_srcrank < g_n, "srcrank %u", info.gex_srcrank);
  CHECK(info.gex_ep == g_ep, "gex_ep %p, mine %p", (void *)info.gex_ep,
        (void *)g_ep);
  CHECK(!!info.gex_is_req == (kind == kRequest), "%s: gex_is_req %d", s->name,
        (int)info.gex_is_req);
  CHECK(!!info.gex_is_long == (cat == kLong), "%s: gex_is_long %d", s->name,
        (int)info.gex_is_long);
  e = info.gex_entry;
  CHECK(e != NULL, "%s: gex_entry NULL", s->name);
  CHECK(e->gex_index == s->index, "%s: entry index %u, registered at %u",
        s->name, e->gex_index, s->index);
  CHECK(e->gex_fnptr == kHandlers[nargs][cat][kind], "%s: entry fnptr",
        s->name);
  CHECK(e->gex_nargs == nargs, "%s: entry nargs %u", s->name, e->gex_nargs);
  CHECK(e->gex_cdata == (const void *)s, "%s: entry cdata %p, expected %p",
        s->name, e->gex_cdata, (const void *)s);
  CHECK(e->gex_name != NULL && strcmp(e->gex_name, s->name) == 0,
        "%s: entry name '%s'", s->name,
        e->gex_name != NULL ? e->gex_name : "(null)");
  CHECK((e->gex_flags &
         (kind == kRequest ? GEX_FLAG_AM_REQUEST : GEX_FLAG_AM_REPLY)) != 0,
        "%s: entry flags 0x%x", s->name, e->gex_flags);
  return info.gex_srcrank;
}

/* ------------------------------------------------------------------------ */
/* Sending any category with any count, numbered or variadic form. */

typedef struct {
  int cat;
  gex_AM_Index_t idx;
  const void *src; /* Medium/Long payload */
  size_t len;
  void *dest; /* Long */
  gex_Event_t *lc;
  gex_Flags_t flags;
  unsigned nargs;
  const gex_AM_Arg_t *v; /* the arguments */
  int numbered;          /* gex_AM_RequestShort3(...) vs gex_AM_RequestShort */
} Message;

#define AT_REQUEST_CASE(n)                                                     \
  case n:                                                                      \
    switch (m->cat) {                                                          \
      case kShort:                                                             \
        return m->numbered ? gex_AM_RequestShort##n(g_tm, to, m->idx,          \
                                                    m->flags AT_VALS_##n)      \
                           : AT_CALL(gex_AM_RequestShort, g_tm, to, m->idx,    \
                                     m->flags AT_VALS_##n);                    \
      case kMedium:                                                            \
        return m->numbered                                                     \
                   ? gex_AM_RequestMedium##n(g_tm, to, m->idx, m->src, m->len, \
                                             m->lc, m->flags AT_VALS_##n)      \
                   : AT_CALL(gex_AM_RequestMedium, g_tm, to, m->idx, m->src,   \
                             m->len, m->lc, m->flags AT_VALS_##n);             \
      default:                                                                 \
        return m->numbered                                                     \
                   ? gex_AM_RequestLong##n(g_tm, to, m->idx, m->src, m->len,   \
                                           m->dest, m->lc,                     \
                                           m->flags AT_VALS_##n)               \
                   : AT_CALL(gex_AM_RequestLong, g_tm, to, m->idx, m->src,     \
                             m->len, m->dest, m->lc, m->flags AT_VALS_##n);    \
    }

#define AT_REPLY_CASE(n)                                                     \
  case n:                                                                    \
    switch (m->cat) {                                                        \
      case kShort:                                                           \
        return m->numbered                                                   \
                   ? gex_AM_ReplyShort##n(t, m->idx, m->flags AT_VALS_##n)   \
                   : AT_CALL(gex_AM_ReplyShort, t, m->idx,                   \
                             m->flags AT_VALS_##n);                          \
      case kMedium:                                                          \
        return m->numbered                                                   \
                   ? gex_AM_ReplyMedium##n(t, m->idx, m->src, m->len, m->lc, \
                                           m->flags AT_VALS_##n)             \
                   : AT_CALL(gex_AM_ReplyMedium, t, m->idx, m->src, m->len,  \
                             m->lc, m->flags AT_VALS_##n);                   \
      default:                                                               \
        return m->numbered                                                   \
                   ? gex_AM_ReplyLong##n(t, m->idx, m->src, m->len, m->dest, \
                                         m->lc, m->flags AT_VALS_##n)        \
                   : AT_CALL(gex_AM_ReplyLong, t, m->idx, m->src, m->len,    \
                             m->dest, m->lc, m->flags AT_VALS_##n);          \
    }

static int Request(gex_Rank_t to, const Message *m) {
  const gex_AM_Arg_t *v = m->v;
  (void)v; /* unused by the 0-argument case */
  switch (m->nargs) { AT_FOR_EACH_NARGS(AT_REQUEST_CASE) }
  CHECK(0, "bad nargs %u", m->nargs);
}

static int Reply(gex_Token_t t, const Message *m) {
  const gex_AM_Arg_t *v = m->v;
  (void)v;
  switch (m->nargs) { AT_FOR_EACH_NARGS(AT_REPLY_CASE) }
  CHECK(0, "bad nargs %u", m->nargs);
}

/* Sends `m` (a request to `to`, or a reply on `t`), checks it returned 0
 * and that an event pointer now reads GEX_EVENT_INVALID. */
static void Send(gex_Rank_t to, gex_Token_t t, Message *m, const char *what) {
  gex_Event_t ev = GEX_EVENT_NO_OP;
  int rc;
  if (m->lc != GEX_EVENT_NOW) m->lc = &ev;
  rc = t == NULL ? Request(to, m) : Reply(t, m);
  CHECK(rc == 0, "%s (%s, %u args, %zu bytes) returned %d", what,
        kCategoryName[m->cat], m->nargs, m->len, rc);
  if (m->cat != kShort && m->lc == &ev) {
    CHECK(ev == GEX_EVENT_INVALID, "%s: lc event %p after the call", what,
          (void *)ev);
  }
}

/* ------------------------------------------------------------------------ */
/* args */

/* The value of argument `pos` of a request from `sender`: at most one
 * INT32_MIN and one INT32_MAX per message, the rest distinct per (sender,
 * category, count, position), alternately negative. */
static gex_AM_Arg_t ArgValue(gex_Rank_t sender, int cat, unsigned nargs,
                             unsigned pos) {
  const uint32_t key =
      ((sender * 3u + (uint32_t)cat) * 17u + nargs) * 16u + pos;
  const int low_first = (sender + (unsigned)cat) % 2 == 0;
  if (pos + 1 == nargs) return low_first ? INT32_MIN : INT32_MAX;
  if (pos == 0 && nargs >= 2) return low_first ? INT32_MAX : INT32_MIN;
  if (pos % 2 == 0) return -(gex_AM_Arg_t)(key + 1);
  return (gex_AM_Arg_t)(key * 2654435761u);
}

/* The reply's argument `pos`, from the request's value and the responder. */
static gex_AM_Arg_t ReplyValue(gex_AM_Arg_t request_value, gex_Rank_t responder,
                               unsigned pos) {
  return (gex_AM_Arg_t)(~(uint32_t)request_value ^
                        ((responder + 1u) << 24 | pos << 8));
}

static size_t ArgsPayloadLen(gex_Rank_t sender, int cat, unsigned nargs,
                             int kind) {
  return 1 + (sender * 7u + nargs * 23u + (unsigned)cat * 5u +
              (unsigned)kind * 11u) %
                 300u;
}

static uint32_t ArgsSeed(gex_Rank_t sender, int cat, unsigned nargs, int kind) {
  return ((sender * 3u + (uint32_t)cat) * 17u + nargs) * 2u + (uint32_t)kind;
}

enum { kArgsSlot = 512, kArgsAreaBase = 4096 };

/* Where a Long of `kind` from `sender` with `nargs` lands in its target. */
static uintptr_t ArgsLongOffset(int kind, gex_Rank_t sender, unsigned nargs) {
  return kArgsAreaBase +
         ((uintptr_t)kind * g_n * kCounts + sender * kCounts + nargs) *
             kArgsSlot;
}

static uint64_t *g_args_seen; /* [kind][peer][cat][nargs] */
static uint64_t g_args_requests;
static uint64_t g_args_replies;
static uint8_t *g_args_src;

static uint64_t *ArgsSeen(int kind, gex_Rank_t peer, int cat, unsigned nargs) {
  return &g_args_seen[(((size_t)kind * g_n + peer) * kCategories + cat) *
                          kCounts +
                      nargs];
}

static void OnArgs(gex_Token_t t, int cat, int kind, void *buf, size_t nbytes,
                   unsigned nargs, const gex_AM_Arg_t *a) {
  const gex_Rank_t src = CheckToken(t, cat, kind, nargs);
  /* A request was made by src; a reply answers one I made. */
  const gex_Rank_t maker = kind == kRequest ? src : g_me;
  unsigned i;
  for (i = 0; i < nargs; ++i) {
    const gex_AM_Arg_t sent = ArgValue(maker, cat, nargs, i);
    const gex_AM_Arg_t expected =
        kind == kRequest ? sent : ReplyValue(sent, src, i);
    CHECK(a[i] == expected,
          "%s from %u: arg %u of %u is %" PRId32 ", expected %" PRId32,
          g_slots[nargs][cat][kind].name, src, i, nargs, a[i], expected);
  }
  if (cat != kShort) {
    const size_t len = ArgsPayloadLen(src, cat, nargs, kind);
    CHECK(nbytes == len, "%s from %u: nbytes %zu, expected %zu",
          g_slots[nargs][cat][kind].name, src, nbytes, len);
    if (cat == kLong) {
      char *const expected = g_base + ArgsLongOffset(kind, src, nargs);
      CHECK(buf == expected, "%s from %u: buf %p, the sender named %p",
            g_slots[nargs][cat][kind].name, src, buf, (void *)expected);
    }
    CHECK_PATTERN(buf, nbytes, ArgsSeed(src, cat, nargs, kind),
                  g_slots[nargs][cat][kind].name);
  }
  ++*ArgsSeen(kind, src, cat, nargs);
  if (kind == kReply) {
    ++g_args_replies;
    return;
  }
  ++g_args_requests;
  {
    /* Reply with the same category and count, arguments transformed. */
    static uint8_t payload[kArgsSlot];
    gex_AM_Arg_t v[kMaxArgs];
    Message m;
    for (i = 0; i < nargs; ++i) v[i] = ReplyValue(a[i], g_me, i);
    m.cat = cat;
    m.idx = Index(nargs, cat, kReply);
    m.len = cat == kShort ? 0 : ArgsPayloadLen(g_me, cat, nargs, kReply);
    FillPattern(payload, m.len, ArgsSeed(g_me, cat, nargs, kReply));
    m.src = payload;
    m.dest = g_owner[src] + ArgsLongOffset(kReply, g_me, nargs);
    m.lc = nargs % 3 == 1 ? NULL : GEX_EVENT_NOW; /* NULL: use an event */
    m.flags = 0;
    m.nargs = nargs;
    m.v = v;
    m.numbered = nargs % 2 == 0;
    Send(0, t, &m, "reply");
    memset(payload, 0xEE, m.len); /* the source is free once it returned */
  }
}

static void ModeArgs(void) {
  gex_AM_Entry_t entries[kCounts * kCategories * kKinds];
  size_t count = 0;
  unsigned nargs;
  int cat;
  int kind;
  gex_Rank_t k;
  const uint64_t expected = (uint64_t)g_n * kCategories * kCounts;

  Attach(kArgsAreaBase + 2 * (uintptr_t)g_n * kCounts * kArgsSlot);
  g_args_seen =
      (uint64_t *)Allocate(2 * g_n * kCategories * kCounts * sizeof(uint64_t));
  g_args_src = (uint8_t *)Allocate(kArgsSlot);
  g_on_message = OnArgs;
  for (nargs = 0; nargs <= kMaxArgs; ++nargs) {
    for (cat = 0; cat < kCategories; ++cat) {
      for (kind = 0; kind < kKinds; ++kind) {
        /* Shorts at fixed indices 220..253; the rest assigned. */
        const gex_AM_Index_t fixed =
            cat == kShort ? (gex_AM_Index_t)(220 + kind * kCounts + nargs) : 0;
        MakeEntry(&entries[count++], nargs, cat, kind, fixed);
      }
    }
  }
  Register(entries, count);
  Barrier();

  for (k = 0; k < g_n; ++k) {
    const gex_Rank_t to = (g_me + k) % g_n;
    for (nargs = 0; nargs <= kMaxArgs; ++nargs) {
      for (cat = 0; cat < kCategories; ++cat) {
        gex_AM_Arg_t v[kMaxArgs];
        unsigned i;
        Message m;
        for (i = 0; i < nargs; ++i) v[i] = ArgValue(g_me, cat, nargs, i);
        m.cat = cat;
        m.idx = Index(nargs, cat, kRequest);
        m.len = cat == kShort ? 0 : ArgsPayloadLen(g_me, cat, nargs, kRequest);
        FillPattern(g_args_src, m.len, ArgsSeed(g_me, cat, nargs, kRequest));
        m.src = g_args_src;
        m.dest = g_owner[to] + ArgsLongOffset(kRequest, g_me, nargs);
        m.lc = nargs % 3 == 0 ? NULL : GEX_EVENT_NOW;
        m.flags = 0;
        m.nargs = nargs;
        m.v = v;
        m.numbered = nargs % 2 == 1;
        Send(to, NULL, &m, "request");
        memset(g_args_src, 0xEE, m.len);
      }
    }
  }
  POLL_UNTIL(g_args_replies >= expected);
  /* Every rank has all its replies, so every request has been handled. */
  Barrier();
  for (kind = 0; kind < kKinds; ++kind) {
    for (k = 0; k < g_n; ++k) {
      for (cat = 0; cat < kCategories; ++cat) {
        for (nargs = 0; nargs <= kMaxArgs; ++nargs) {
          const uint64_t seen = *ArgsSeen(kind, k, cat, nargs);
          CHECK(seen == 1,
                "%s %s with %u args from rank %u seen %" PRIu64 " times",
                kCategoryName[cat], kKindName[kind], nargs, k, seen);
        }
      }
    }
  }
  CHECK(g_args_requests == expected && g_args_replies == expected,
        "requests %" PRIu64 " replies %" PRIu64 ", expected %" PRIu64 " each",
        g_args_requests, g_args_replies, expected);
  Say("args ok requests=%" PRIu64 " replies=%" PRIu64, g_args_requests,
      g_args_replies);
}

/* ------------------------------------------------------------------------ */
/* sizes */

enum { kSizeZero, kSizeOne, kSizeLub, kSizeMax, kSizeKinds };
static const char *const kSizeName[kSizeKinds] = {"0", "1", "LUB", "Max"};
static const unsigned kSizesNargs[2] = {2, 16};

static size_t MaxFor(int cat, int kind, gex_Rank_t peer, unsigned nargs) {
  if (cat == kMedium) {
    return kind == kRequest
               ? gex_AM_MaxRequestMedium(g_tm, peer, GEX_EVENT_NOW, 0, nargs)
               : gex_AM_MaxReplyMedium(g_tm, peer, GEX_EVENT_NOW, 0, nargs);
  }
  return kind == kRequest
             ? gex_AM_MaxRequestLong(g_tm, peer, GEX_EVENT_NOW, 0, nargs)
             : gex_AM_MaxReplyLong(g_tm, peer, GEX_EVENT_NOW, 0, nargs);
}

static size_t LubFor(int cat, int kind) {
  if (cat == kMedium) {
    return kind == kRequest ? gex_AM_LUBRequestMedium()
                            : gex_AM_LUBReplyMedium();
  }
  return kind == kRequest ? gex_AM_LUBRequestLong() : gex_AM_LUBReplyLong();
}

/* The size of a message of size kind `sk` between me and `peer`. */
static size_t SizeFor(int sk, int cat, int kind, gex_Rank_t peer,
                      unsigned nargs) {
  switch (sk) {
    case kSizeZero:
      return 0;
    case kSizeOne:
      return 1;
    case kSizeLub:
      return LubFor(cat, kind);
    default:
      return MaxFor(cat, kind, peer, nargs);
  }
}

/* Checks the limit queries; gives the largest Medium and Long either way
 * over all peers (buffers and Long landing slots are that large). */
static void CheckLimits(size_t *largest_medium, size_t *largest_long) {
  int cat;
  int kind;
  size_t *const largest[kCategories] = {NULL, largest_medium, largest_long};
  *largest_medium = 0;
  *largest_long = 0;
  CHECK(gex_AM_MaxArgs() == kMaxArgs, "gex_AM_MaxArgs() = %u",
        gex_AM_MaxArgs());
  for (cat = kMedium; cat <= kLong; ++cat) {
    for (kind = 0; kind < kKinds; ++kind) {
      const size_t lub = LubFor(cat, kind);
      unsigned nargs;
      CHECK(lub >= 512, "LUB %s %s = %zu", kKindName[kind], kCategoryName[cat],
            lub);
      for (nargs = 0; nargs <= kMaxArgs; ++nargs) {
        size_t least = SIZE_MAX;
        gex_Rank_t r;
        for (r = 0; r < g_n; ++r) {
          const size_t max = MaxFor(cat, kind, r, nargs);
          CHECK(max >= lub && max >= 512,
                "Max %s %s to %u with %u args = %zu < LUB %zu", kKindName[kind],
                kCategoryName[cat], r, nargs, max, lub);
          if (nargs > 0) {
            const size_t fewer = MaxFor(cat, kind, r, nargs - 1);
            CHECK(max <= fewer,
                  "Max %s %s to %u grows with nargs: %zu at %u, %zu at %u",
                  kKindName[kind], kCategoryName[cat], r, fewer, nargs - 1, max,
                  nargs);
          }
          if (max < least) least = max;
          if (max > *largest[cat]) *largest[cat] = max;
        }
        CHECK(MaxFor(cat, kind, GEX_RANK_INVALID, nargs) == least,
              "Max %s %s to GEX_RANK_INVALID with %u args = %zu, least over "
              "the peers %zu",
              kKindName[kind], kCategoryName[cat], nargs,
              MaxFor(cat, kind, GEX_RANK_INVALID, nargs), least);
      }
    }
  }
}

static uintptr_t g_sizes_slot;
static uint8_t *g_sizes_src;
/* The Replies' source: a Request's blocking send may run this rank's
 * handlers while its payload is still being read from g_sizes_src. */
static uint8_t *g_sizes_reply_src;
static uint64_t g_sizes_replies;
static uint64_t g_sizes_requests;
/* Sequence numbers: of my requests to each rank (replies echo them), and
 * the next expected in requests from / replies from each rank. */
static gex_AM_Arg_t *g_sizes_sent;
static gex_AM_Arg_t *g_sizes_next[kKinds];

/* Long landing slots: requests from each sender, then replies. */
static uintptr_t SizesLongOffset(int kind, gex_Rank_t sender) {
  return ((uintptr_t)(kind == kRequest ? 0 : g_n) + sender) * g_sizes_slot;
}

static uint32_t SizesSeed(gex_Rank_t sender, int kind, gex_AM_Arg_t seq) {
  return (uint32_t)seq * 977u + sender * 31u + (uint32_t)kind;
}

static gex_AM_Arg_t SizesArg(gex_AM_Arg_t seq, unsigned pos) {
  return (gex_AM_Arg_t)(seq * 31 + (gex_AM_Arg_t)pos) ^ INT32_MIN;
}

static void OnSizes(gex_Token_t t, int cat, int kind, void *buf, size_t nbytes,
                    unsigned nargs, const gex_AM_Arg_t *a) {
  const gex_Rank_t src = CheckToken(t, cat, kind, nargs);
  const int sk = a[0];
  const gex_AM_Arg_t seq = a[1];
  const char *const name = g_slots[nargs][cat][kind].name;
  unsigned i;
  size_t expected;
  CHECK(sk >= 0 && sk < kSizeKinds, "%s: size kind %d", name, sk);
  /* Messages from src of one kind come one at a time, in order. */
  CHECK(seq == g_sizes_next[kind][src],
        "%s from %u: sequence %" PRId32 ", expected %" PRId32, name, src, seq,
        g_sizes_next[kind][src]);
  ++g_sizes_next[kind][src];
  for (i = 2; i < nargs; ++i) {
    CHECK(a[i] == SizesArg(seq, i), "%s: arg %u is %" PRId32, name, i, a[i]);
  }
  expected = SizeFor(sk, cat, kind, src, nargs);
  CHECK(nbytes == expected, "%s from %u (%s): nbytes %zu, expected %zu", name,
        src, kSizeName[sk], nbytes, expected);
  if (cat == kLong) {
    char *const at = g_base + SizesLongOffset(kind, src);
    CHECK(buf == at, "%s from %u (%s, %zu bytes): buf %p, the sender named %p",
          name, src, kSizeName[sk], nbytes, buf, (void *)at);
  }
  CHECK_PATTERN(buf, nbytes, SizesSeed(src, kind, seq), name);
  if (kind == kReply) {
    ++g_sizes_replies;
    return;
  }
  ++g_sizes_requests;
  {
    gex_AM_Arg_t v[kMaxArgs];
    Message m;
    const size_t token_max =
        cat == kMedium ? gex_Token_MaxReplyMedium(t, GEX_EVENT_NOW, 0, nargs)
                       : gex_Token_MaxReplyLong(t, GEX_EVENT_NOW, 0, nargs);
    CHECK(token_max == MaxFor(cat, kReply, src, nargs),
          "gex_Token_MaxReply%s = %zu, gex_AM_MaxReply%s(%u) = %zu",
          kCategoryName[cat], token_max, kCategoryName[cat], src,
          MaxFor(cat, kReply, src, nargs));
    v[0] = sk;
    v[1] = seq;
    for (i = 2; i < nargs; ++i) v[i] = SizesArg(seq, i);
    m.cat = cat;
    m.idx = Index(nargs, cat, kReply);
    m.len = sk == kSizeMax ? token_max : SizeFor(sk, cat, kReply, src, nargs);
    FillPattern(g_sizes_reply_src, m.len, SizesSeed(g_me, kReply, seq));
    m.src = g_sizes_reply_src;
    m.dest = g_owner[src] + SizesLongOffset(kReply, g_me);
    m.lc = GEX_EVENT_NOW;
    m.flags = 0;
    m.nargs = nargs;
    m.v = v;
    m.numbered = nargs == 2;
    Send(0, t, &m, "reply");
  }
}

static void ModeSizes(void) {
  size_t largest_medium;
  size_t largest_long;
  size_t largest;
  gex_Rank_t k;
  gex_AM_Entry_t entries[8];
  size_t count = 0;
  int cat;
  int kind;
  int i;

  CheckLimits(&largest_medium, &largest_long);
  g_sizes_slot = (largest_long + 4095) & ~(uintptr_t)4095;
  Attach(2 * (uintptr_t)g_n * g_sizes_slot);
  {
    /* The limits are stable: the same once the segment exists. */
    size_t medium_after;
    size_t long_after;
    CheckLimits(&medium_after, &long_after);
    CHECK(medium_after == largest_medium && long_after == largest_long,
          "largest Medium %zu -> %zu, Long %zu -> %zu across attach",
          largest_medium, medium_after, largest_long, long_after);
  }
  largest = largest_long > largest_medium ? largest_long : largest_medium;
  g_sizes_src = (uint8_t *)Allocate(largest);
  g_sizes_reply_src = (uint8_t *)Allocate(largest);
  g_sizes_sent = (gex_AM_Arg_t *)Allocate(g_n * sizeof(gex_AM_Arg_t));
  for (kind = 0; kind < kKinds; ++kind) {
    g_sizes_next[kind] = (gex_AM_Arg_t *)Allocate(g_n * sizeof(gex_AM_Arg_t));
  }
  g_on_message = OnSizes;
  for (i = 0; i < 2; ++i) {
    for (cat = kMedium; cat <= kLong; ++cat) {
      for (kind = 0; kind < kKinds; ++kind) {
        MakeEntry(&entries[count++], kSizesNargs[i], cat, kind, 0);
      }
    }
  }
  Register(entries, count);
  Barrier();

  for (k = 0; k < g_n; ++k) {
    const gex_Rank_t to = (g_me + k) % g_n;
    for (cat = kMedium; cat <= kLong; ++cat) {
      for (i = 0; i < 2; ++i) {
        const unsigned nargs = kSizesNargs[i];
        int sk;
        for (sk = 0; sk < kSizeKinds; ++sk) {
          const gex_AM_Arg_t seq = g_sizes_sent[to]++;
          const uint64_t before = g_sizes_replies;
          gex_AM_Arg_t v[kMaxArgs];
          unsigned j;
          Message m;
          v[0] = sk;
          v[1] = seq;
          for (j = 2; j < nargs; ++j) v[j] = SizesArg(seq, j);
          m.cat = cat;
          m.idx = Index(nargs, cat, kRequest);
          m.len = SizeFor(sk, cat, kRequest, to, nargs);
          FillPattern(g_sizes_src, m.len, SizesSeed(g_me, kRequest, seq));
          m.src = g_sizes_src;
          m.dest = g_owner[to] + SizesLongOffset(kRequest, g_me);
          m.lc = GEX_EVENT_NOW;
          m.flags = 0;
          m.nargs = nargs;
          m.v = v;
          m.numbered = sk % 2 == 0;
          Send(to, NULL, &m, "request");
          /* One at a time: the landing slot and buffer are reused. */
          POLL_UNTIL(g_sizes_replies > before);
        }
      }
    }
  }
  Barrier();
  {
    const uint64_t expected = (uint64_t)g_n * 2 * 2 * kSizeKinds;
    CHECK(g_sizes_requests == expected && g_sizes_replies == expected,
          "requests %" PRIu64 " replies %" PRIu64 ", expected %" PRIu64,
          g_sizes_requests, g_sizes_replies, expected);
  }
  Say("sizes ok max_medium=%zu max_long=%zu", largest_medium, largest_long);
}

/* ------------------------------------------------------------------------ */
/* npam */

/* Steps a sender takes towards each target, by mode. */
enum {
  kNpMediumClient,     /* Medium from my buffer, commit fewer */
  kNpMediumAlloc,      /* Medium in a GASNet buffer of the LEAST_ALLOC max */
  kNpCancelMediums,    /* prepare and cancel two Mediums */
  kNpLongClient,       /* Long from my buffer, commit fewer */
  kNpCancelLongClient, /* prepare and cancel a Long from my buffer */
  kNpCancelThenShort,  /* a Medium whose handler cancels two replies */
  kNpLongAlloc,        /* Long in a GASNet buffer, commit fewer */
  kNpCancelLongAlloc,  /* cancel a GASNet-buffer Long both ways */
  kNpLongDestAtCommit, /* GASNet-buffer Long, dest_addr NULL at Prepare */
  kNpLongSegmentEnd,   /* GASNet-buffer Long 100 bytes before the end */
  kNpEnd
};

typedef struct {
  const char *mode;
  int steps[8];
} NpMode;

static const NpMode kNpModes[] = {
    {"npam",
     {kNpMediumClient, kNpCancelMediums, kNpMediumAlloc, kNpLongClient,
      kNpCancelLongClient, kNpCancelThenShort, kNpEnd}},
    {"npam-long-alloc", {kNpLongAlloc, kNpLongAlloc, kNpEnd}},
    {"npam-long-alloc-cancel", {kNpCancelLongAlloc, kNpEnd}},
    {"npam-long-dest-at-commit", {kNpLongDestAtCommit, kNpEnd}},
    {"npam-long-segment-end", {kNpLongSegmentEnd, kNpEnd}},
};

/* How a request handler replies (args[1] & 0xff). */
enum {
  kNpReplyClient,           /* PrepareReplyMedium with my buffer */
  kNpReplyAlloc,            /* PrepareReplyMedium with a GASNet buffer */
  kNpReplyLongClient,       /* PrepareReplyLong with my buffer */
  kNpReplyLongAlloc,        /* PrepareReplyLong, GASNet buffer, dest given */
  kNpReplyLongDestAtCommit, /* PrepareReplyLong, GASNet buffer, dest NULL */
  kNpReplyLongSegmentEnd,   /* PrepareReplyLong 100 bytes before the end */
  kNpReplyCancelThenShort,  /* cancel a Medium and a client Long, then Short */
  kNpReplyCancelAllocThenShort /* cancel a GASNet Long reply, then Short */
};
/* Where a Long lands (args[1] >> 8): the pair's slot or the segment's end. */
enum { kNpInSlot = 0, kNpAtEnd = 1 };
enum { kNpArgs = 3, kNpSlot = 4096, kNpTail = 100 };
enum { kNpGuard = 0x5A, kNpCancelled = 0xCC };

static const NpMode *g_np_mode;
static uint8_t g_np_buf[kNpSlot];
static uint8_t g_np_rbuf[kNpSlot];
static uintptr_t *g_np_size;      /* each rank's segment size */
static gex_AM_Arg_t *g_np_next;   /* next request sequence from each sender */
static gex_AM_Arg_t g_np_waiting; /* id of my outstanding request, or -1 */
static uint64_t g_np_requests;
static uint64_t g_np_replies;

/* My segment: landing slots for requests from each sender and replies from
 * each responder, then slots that only cancelled Longs were prepared for
 * (which must stay untouched), then the segment's tail. */
enum { kNpLandArea = 0, kNpCancelArea = 1 };
static uintptr_t NpSlotOffset(int area, int kind, gex_Rank_t sender) {
  return ((uintptr_t)(area * 2 + (kind == kRequest ? 0 : 1)) * g_n + sender) *
         kNpSlot;
}

/* How far before the segment end a segment-end Long lands. A rank's end
 * receives a request (from the rank before it) and a reply (from the rank
 * after it), possibly at once, so they land in different places; both
 * stay within 200 bytes of the end, well under most_payload. */
static size_t NpEndOffset(int kind) {
  return kind == kReply ? 2 * kNpTail : kNpTail;
}

static char *NpDest(gex_Rank_t target, int where, int area, int kind) {
  return where == kNpAtEnd
             ? g_owner[target] + g_np_size[target] - NpEndOffset(kind)
             : g_owner[target] + NpSlotOffset(area, kind, g_me);
}

static gex_AM_Arg_t NpId(gex_Rank_t sender, gex_AM_Arg_t seq) {
  return (gex_AM_Arg_t)(sender << 16) | seq;
}

static uint32_t NpSeed(gex_AM_Arg_t id, int kind) {
  return (uint32_t)id * 0x01000193u + (uint32_t)kind;
}

/* The segment-end step goes only to my successor, so that each rank's tail
 * has one writer at a time. */
static int NpTakesStep(int step, gex_Rank_t from, gex_Rank_t to) {
  return step != kNpLongSegmentEnd || to == (from + 1) % g_n;
}

static int NpCommits(int step) {
  return step != kNpCancelMediums && step != kNpCancelLongClient;
}

/* Requests `from` commits to `to` in this mode. */
static gex_AM_Arg_t NpExpected(gex_Rank_t from, gex_Rank_t to) {
  gex_AM_Arg_t count = 0;
  const int *step;
  for (step = g_np_mode->steps; *step != kNpEnd; ++step) {
    if (NpTakesStep(*step, from, to) && NpCommits(*step)) ++count;
  }
  return count;
}

/* Checks that [from, to) of my segment holds only the guard byte. */
static void CheckGuard(const char *from, const char *to, const char *what) {
  const char *p;
  for (p = from; p < to; ++p) {
    CHECK((uint8_t)*p == kNpGuard,
          "%s: byte %td past the payload is 0x%02x: "
          "memory outside the committed message was written",
          what, p - from, (uint8_t)*p);
  }
}

/* Fills a GASNet buffer of a Long entirely, as a client may. */
static void NpFillAll(gex_AM_SrcDesc_t sd, gex_AM_Arg_t id, int kind) {
  FillPattern(gex_AM_SrcDescAddr(sd), gex_AM_SrcDescSize(sd), NpSeed(id, kind));
}

static void NpReply(gex_Token_t t, gex_Rank_t src, gex_AM_Arg_t id,
                    gex_AM_Arg_t variant) {
  const int how = variant & 0xff;
  const int where = how == kNpReplyLongSegmentEnd ? kNpAtEnd : kNpInSlot;
  char *const dest =
      where == kNpAtEnd
          ? g_owner[src] + g_np_size[src] - NpEndOffset(kReply)
          : g_owner[src] + NpSlotOffset(kNpLandArea, kReply, g_me);
  const gex_AM_Arg_t reply_variant = how | where << 8;
  const gex_AM_Index_t medium = Index(kNpArgs, kMedium, kReply);
  const gex_AM_Index_t lng = Index(kNpArgs, kLong, kReply);
  gex_Event_t ev = GEX_EVENT_NO_OP;
  gex_AM_SrcDesc_t sd;
  size_t size;
  size_t n;
  int rc;
  switch (how) {
    case kNpReplyClient:
      sd = gex_AM_PrepareReplyMedium(t, g_np_rbuf, 32, 600, &ev, 0, kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareReplyMedium gave NO_OP");
      CHECK(gex_AM_SrcDescAddr(sd) == g_np_rbuf, "SrcDescAddr %p, client %p",
            gex_AM_SrcDescAddr(sd), (void *)g_np_rbuf);
      size = gex_AM_SrcDescSize(sd);
      CHECK(size >= 32 && size <= 600, "SrcDescSize %zu", size);
      n = size - 3;
      FillPattern(g_np_rbuf, size, NpSeed(id, kReply));
      gex_AM_CommitReplyMedium3(sd, medium, n, id, reply_variant,
                                (gex_AM_Arg_t)n);
      CHECK(ev == GEX_EVENT_INVALID, "lc event %p after Commit", (void *)ev);
      memset(g_np_rbuf, 0xEE, size);
      return;
    case kNpReplyAlloc: {
      const size_t least = gex_AM_MaxReplyMedium(
          g_tm, src, NULL, GEX_FLAG_AM_PREPARE_LEAST_ALLOC, kNpArgs);
      CHECK(least >= 512, "LEAST_ALLOC max %zu", least);
      sd = gex_AM_PrepareReplyMedium(t, NULL, least, least, NULL, 0, kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareReplyMedium gave NO_OP");
      size = gex_AM_SrcDescSize(sd);
      CHECK(size == least, "SrcDescSize %zu, least=most=%zu", size, least);
      CHECK(gex_AM_SrcDescAddr(sd) != NULL, "SrcDescAddr NULL");
      n = size / 2;
      FillPattern(gex_AM_SrcDescAddr(sd), size, NpSeed(id, kReply));
      gex_AM_CommitReplyMedium(sd, medium, n, id, reply_variant,
                               (gex_AM_Arg_t)n);
      return;
    }
    case kNpReplyLongClient:
      sd = gex_AM_PrepareReplyLong(t, g_np_rbuf, 32, 1500, dest, GEX_EVENT_NOW,
                                   0, kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareReplyLong gave NO_OP");
      CHECK(gex_AM_SrcDescAddr(sd) == g_np_rbuf, "SrcDescAddr %p, client %p",
            gex_AM_SrcDescAddr(sd), (void *)g_np_rbuf);
      size = gex_AM_SrcDescSize(sd);
      CHECK(size >= 32 && size <= 1500, "SrcDescSize %zu", size);
      n = size - 5;
      FillPattern(g_np_rbuf, size, NpSeed(id, kReply));
      gex_AM_CommitReplyLong3(sd, lng, n, dest, id, reply_variant,
                              (gex_AM_Arg_t)n);
      memset(g_np_rbuf, 0xEE, size);
      return;
    case kNpReplyLongAlloc:
    case kNpReplyLongDestAtCommit:
    case kNpReplyLongSegmentEnd:
      sd = gex_AM_PrepareReplyLong(
          t, NULL, 32, 1500, how == kNpReplyLongDestAtCommit ? NULL : dest,
          NULL, 0, kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareReplyLong gave NO_OP");
      size = gex_AM_SrcDescSize(sd);
      CHECK(size >= 32 && size <= 1500, "SrcDescSize %zu", size);
      CHECK(gex_AM_SrcDescAddr(sd) != NULL, "SrcDescAddr NULL");
      NpFillAll(sd, id, kReply);
      n = where == kNpAtEnd ? kNpTail - 1 : size - 1;
      gex_AM_CommitReplyLong(sd, lng, n, dest, id, reply_variant,
                             (gex_AM_Arg_t)n);
      return;
    case kNpReplyCancelThenShort:
      sd = gex_AM_PrepareReplyMedium(t, NULL, 32, 256, NULL, 0, kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareReplyMedium gave NO_OP");
      memset(gex_AM_SrcDescAddr(sd), kNpCancelled, gex_AM_SrcDescSize(sd));
      rc = gex_AM_CancelReplyMedium(sd, 0);
      CHECK(rc == GASNET_OK, "gex_AM_CancelReplyMedium returned %d", rc);
      sd = gex_AM_PrepareReplyLong(
          t, g_np_rbuf, 32, 256,
          g_owner[src] + NpSlotOffset(kNpCancelArea, kReply, g_me),
          GEX_EVENT_NOW, 0, kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareReplyLong gave NO_OP");
      memset(g_np_rbuf, kNpCancelled, sizeof g_np_rbuf);
      rc = gex_AM_CancelReplyLong(sd, 0);
      CHECK(rc == GASNET_OK, "gex_AM_CancelReplyLong returned %d", rc);
      break;
    default: /* kNpReplyCancelAllocThenShort */
      sd = gex_AM_PrepareReplyLong(
          t, NULL, 32, 256,
          g_owner[src] + NpSlotOffset(kNpCancelArea, kReply, g_me), NULL, 0,
          kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareReplyLong gave NO_OP");
      memset(gex_AM_SrcDescAddr(sd), kNpCancelled, gex_AM_SrcDescSize(sd));
      rc = gex_AM_CancelReplyLong(sd, 0);
      CHECK(rc == GASNET_OK, "gex_AM_CancelReplyLong returned %d", rc);
      break;
  }
  /* The cancelled replies were not replies: this one is. */
  rc = gex_AM_ReplyShort3(t, Index(kNpArgs, kShort, kReply), 0, id,
                          reply_variant, 0);
  CHECK(rc == 0, "gex_AM_ReplyShort3 after cancelled replies returned %d", rc);
}

static void OnNpam(gex_Token_t t, int cat, int kind, void *buf, size_t nbytes,
                   unsigned nargs, const gex_AM_Arg_t *a) {
  const gex_Rank_t src = CheckToken(t, cat, kind, nargs);
  const gex_AM_Arg_t id = a[0];
  const gex_AM_Arg_t variant = a[1];
  const int how = variant & 0xff;
  const int where = variant >> 8;
  const char *const name = g_slots[nargs][cat][kind].name;
  CHECK(nbytes == (size_t)a[2], "%s from %u: nbytes %zu, committed %" PRId32,
        name, src, nbytes, a[2]);
  if (cat == kLong) {
    char *const at = where == kNpAtEnd
                         ? g_base + g_size - NpEndOffset(kind)
                         : g_base + NpSlotOffset(kNpLandArea, kind, src);
    char *const end = where == kNpAtEnd ? at + kNpTail : at + kNpSlot;
    CHECK(buf == at, "%s from %u: buf %p, named %p", name, src, buf,
          (void *)at);
    CHECK_PATTERN(buf, nbytes, NpSeed(id, kind), name);
    CheckGuard(at + nbytes, end, name);
    memset(at, kNpGuard, (size_t)(end - at)); /* ready for the next one */
  } else {
    CHECK_PATTERN(buf, nbytes, NpSeed(id, kind), name);
  }
  if (kind == kRequest) {
    /* Only committed requests arrive: each once, in order. */
    CHECK(id == NpId(src, g_np_next[src]),
          "%s from %u: id 0x%" PRIx32 ", expected 0x%" PRIx32
          " (a cancelled request arrived?)",
          name, src, (uint32_t)id, (uint32_t)NpId(src, g_np_next[src]));
    ++g_np_next[src];
    ++g_np_requests;
    NpReply(t, src, id, variant);
    return;
  }
  CHECK(id == g_np_waiting,
        "%s from %u: reply to 0x%" PRIx32 ", waiting for 0x%" PRIx32, name, src,
        (uint32_t)id, (uint32_t)g_np_waiting);
  {
    const int expected_cat =
        how == kNpReplyCancelThenShort || how == kNpReplyCancelAllocThenShort
            ? kShort
        : how == kNpReplyClient || how == kNpReplyAlloc ? kMedium
                                                        : kLong;
    CHECK(cat == expected_cat,
          "reply variant %d came as %s (a cancelled "
          "reply arrived?)",
          how, kCategoryName[cat]);
  }
  g_np_waiting = -1;
  ++g_np_replies;
}

/* Polls until the reply to my request `id` has arrived. */
static void NpAwaitReply(gex_AM_Arg_t id) { POLL_UNTIL(g_np_waiting != id); }

/* A Medium request from a GASNet buffer asking for reply `how`. */
static void NpMediumAsking(gex_Rank_t to, gex_AM_Arg_t id, int how) {
  gex_AM_SrcDesc_t sd =
      gex_AM_PrepareRequestMedium(g_tm, to, NULL, 64, 64, NULL, 0, kNpArgs);
  CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareRequestMedium gave NO_OP");
  FillPattern(gex_AM_SrcDescAddr(sd), 64, NpSeed(id, kRequest));
  gex_AM_CommitRequestMedium3(sd, Index(kNpArgs, kMedium, kRequest), 64, id,
                              how, 64);
}

static void NpStep(int step, gex_Rank_t to, gex_AM_Arg_t *seq) {
  const gex_AM_Index_t medium = Index(kNpArgs, kMedium, kRequest);
  const gex_AM_Index_t lng = Index(kNpArgs, kLong, kRequest);
  char *const slot = NpDest(to, kNpInSlot, kNpLandArea, kRequest);
  char *const cancel_slot = NpDest(to, kNpInSlot, kNpCancelArea, kRequest);
  const gex_AM_Arg_t id = NpCommits(step) ? NpId(g_me, *seq) : -1;
  gex_AM_SrcDesc_t sd;
  gex_Event_t ev = GEX_EVENT_NO_OP;
  size_t size;
  size_t n;
  int rc;
  if (!NpTakesStep(step, g_me, to)) return;
  if (NpCommits(step)) {
    ++*seq;
    g_np_waiting = id;
  }
  switch (step) {
    case kNpMediumClient:
      /* The buffer is filled after Prepare: it is read at Commit. */
      sd = gex_AM_PrepareRequestMedium(g_tm, to, g_np_buf, 64, 1000, &ev, 0,
                                       kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareRequestMedium gave NO_OP");
      CHECK(gex_AM_SrcDescAddr(sd) == g_np_buf, "SrcDescAddr %p, client %p",
            gex_AM_SrcDescAddr(sd), (void *)g_np_buf);
      size = gex_AM_SrcDescSize(sd);
      CHECK(size >= 64 && size <= 1000, "SrcDescSize %zu", size);
      FillPattern(g_np_buf, size, NpSeed(id, kRequest));
      n = size - 1;
      gex_AM_CommitRequestMedium3(sd, medium, n, id, kNpReplyClient,
                                  (gex_AM_Arg_t)n);
      CHECK(ev == GEX_EVENT_INVALID, "lc event %p after Commit", (void *)ev);
      memset(g_np_buf, 0xEE, size);
      break;
    case kNpMediumAlloc: {
      const size_t least = gex_AM_MaxRequestMedium(
          g_tm, to, NULL, GEX_FLAG_AM_PREPARE_LEAST_ALLOC, kNpArgs);
      CHECK(least >= 512, "LEAST_ALLOC max %zu", least);
      sd = gex_AM_PrepareRequestMedium(g_tm, to, NULL, least, least, NULL, 0,
                                       kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareRequestMedium gave NO_OP");
      size = gex_AM_SrcDescSize(sd);
      CHECK(size == least, "SrcDescSize %zu, least=most=%zu", size, least);
      CHECK(
          gex_AM_SrcDescAddr(sd) != NULL && gex_AM_SrcDescAddr(sd) != g_np_buf,
          "SrcDescAddr %p", gex_AM_SrcDescAddr(sd));
      FillPattern(gex_AM_SrcDescAddr(sd), size, NpSeed(id, kRequest));
      n = size / 2;
      gex_AM_CommitRequestMedium(sd, medium, n, id, kNpReplyAlloc,
                                 (gex_AM_Arg_t)n);
      break;
    }
    case kNpCancelMediums:
      sd = gex_AM_PrepareRequestMedium(g_tm, to, NULL, 64, 512, NULL, 0,
                                       kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareRequestMedium gave NO_OP");
      memset(gex_AM_SrcDescAddr(sd), kNpCancelled, gex_AM_SrcDescSize(sd));
      rc = gex_AM_CancelRequestMedium(sd, 0);
      CHECK(rc == GASNET_OK, "gex_AM_CancelRequestMedium returned %d", rc);
      sd = gex_AM_PrepareRequestMedium(g_tm, to, g_np_buf, 64, 512,
                                       GEX_EVENT_NOW, 0, kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareRequestMedium gave NO_OP");
      memset(g_np_buf, kNpCancelled, sizeof g_np_buf);
      rc = gex_AM_CancelRequestMedium(sd, 0);
      CHECK(rc == GASNET_OK, "gex_AM_CancelRequestMedium returned %d", rc);
      return;
    case kNpLongClient:
      sd = gex_AM_PrepareRequestLong(g_tm, to, g_np_buf, 64, 2000, slot,
                                     GEX_EVENT_NOW, 0, kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareRequestLong gave NO_OP");
      CHECK(gex_AM_SrcDescAddr(sd) == g_np_buf, "SrcDescAddr %p, client %p",
            gex_AM_SrcDescAddr(sd), (void *)g_np_buf);
      size = gex_AM_SrcDescSize(sd);
      CHECK(size >= 64 && size <= 2000, "SrcDescSize %zu", size);
      FillPattern(g_np_buf, size, NpSeed(id, kRequest));
      n = size - 7;
      gex_AM_CommitRequestLong3(sd, lng, n, slot, id, kNpReplyLongClient,
                                (gex_AM_Arg_t)n);
      memset(g_np_buf, 0xEE, size);
      break;
    case kNpCancelLongClient:
      sd = gex_AM_PrepareRequestLong(g_tm, to, g_np_buf, 64, 512, cancel_slot,
                                     GEX_EVENT_NOW, 0, kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareRequestLong gave NO_OP");
      memset(g_np_buf, kNpCancelled, sizeof g_np_buf);
      rc = gex_AM_CancelRequestLong(sd, 0);
      CHECK(rc == GASNET_OK, "gex_AM_CancelRequestLong returned %d", rc);
      return;
    case kNpCancelThenShort:
      NpMediumAsking(to, id, kNpReplyCancelThenShort);
      break;
    case kNpLongAlloc:
    case kNpLongDestAtCommit:
    case kNpLongSegmentEnd: {
      const int where = step == kNpLongSegmentEnd ? kNpAtEnd : kNpInSlot;
      char *const dest = NpDest(to, where, kNpLandArea, kRequest);
      const int how = step == kNpLongAlloc          ? kNpReplyLongAlloc
                      : step == kNpLongDestAtCommit ? kNpReplyLongDestAtCommit
                                                    : kNpReplyLongSegmentEnd;
      sd = gex_AM_PrepareRequestLong(g_tm, to, NULL, 64, 3000,
                                     step == kNpLongDestAtCommit ? NULL : dest,
                                     NULL, 0, kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareRequestLong gave NO_OP");
      size = gex_AM_SrcDescSize(sd);
      CHECK(size >= 64 && size <= 3000, "SrcDescSize %zu", size);
      CHECK(gex_AM_SrcDescAddr(sd) != NULL, "SrcDescAddr NULL");
      NpFillAll(sd, id, kRequest);
      n = where == kNpAtEnd ? kNpTail - 1 : size - 2;
      gex_AM_CommitRequestLong(sd, lng, n, dest, id, how | where << 8,
                               (gex_AM_Arg_t)n);
      break;
    }
    default: /* kNpCancelLongAlloc */
      sd = gex_AM_PrepareRequestLong(g_tm, to, NULL, 64, 512, cancel_slot, NULL,
                                     0, kNpArgs);
      CHECK(sd != GEX_AM_SRCDESC_NO_OP, "PrepareRequestLong gave NO_OP");
      memset(gex_AM_SrcDescAddr(sd), kNpCancelled, gex_AM_SrcDescSize(sd));
      rc = gex_AM_CancelRequestLong(sd, 0);
      CHECK(rc == GASNET_OK, "gex_AM_CancelRequestLong returned %d", rc);
      NpMediumAsking(to, id, kNpReplyCancelAllocThenShort);
      break;
  }
  NpAwaitReply(id);
}

static void ModeNpam(const NpMode *mode) {
  gex_AM_Entry_t entries[5];
  gex_AM_Arg_t *seq_to;
  gex_Rank_t k;
  size_t count = 0;
  uint64_t expected_requests = 0;
  uint64_t expected_replies = 0;
  int cat;
  int kind;

  g_np_mode = mode;
  Attach(4 * (uintptr_t)g_n * kNpSlot + kNpSlot);
  memset(g_base, kNpGuard, g_size);
  g_np_size = (uintptr_t *)Allocate(g_n * sizeof(uintptr_t));
  for (k = 0; k < g_n; ++k) {
    CHECK(gex_EP_QueryBoundSegmentNB(g_tm, k, NULL, NULL, &g_np_size[k], 0) ==
              GEX_EVENT_INVALID,
          "QueryBoundSegmentNB(%u) size", k);
  }
  g_np_next = (gex_AM_Arg_t *)Allocate(g_n * sizeof(gex_AM_Arg_t));
  seq_to = (gex_AM_Arg_t *)Allocate(g_n * sizeof(gex_AM_Arg_t));
  g_np_waiting = -1;
  g_on_message = OnNpam;
  for (cat = kMedium; cat <= kLong; ++cat) {
    for (kind = 0; kind < kKinds; ++kind) {
      MakeEntry(&entries[count++], kNpArgs, cat, kind, 0);
    }
  }
  MakeEntry(&entries[count++], kNpArgs, kShort, kReply, 0);
  Register(entries, count);
  Barrier();

  for (k = 0; k < g_n; ++k) {
    const gex_Rank_t to = (g_me + k) % g_n;
    const int *step;
    for (step = mode->steps; *step != kNpEnd; ++step) {
      NpStep(*step, to, &seq_to[to]);
    }
  }
  Barrier();
  /* Nothing more arrives: a cancelled message would show up here too. */
  gasnet_AMPoll();
  Barrier();
  for (k = 0; k < g_n; ++k) {
    const gex_AM_Arg_t from = NpExpected(k, g_me);
    CHECK(g_np_next[k] == from,
          "%" PRId32 " requests from %u, expected %" PRId32, g_np_next[k], k,
          from);
    CHECK(seq_to[k] == NpExpected(g_me, k), "committed %" PRId32 " to %u",
          seq_to[k], k);
    expected_requests += (uint64_t)from;
    expected_replies += (uint64_t)seq_to[k];
    /* Only cancelled Longs were ever prepared for these slots. */
    CheckGuard(g_base + NpSlotOffset(kNpCancelArea, kRequest, k),
               g_base + NpSlotOffset(kNpCancelArea, kRequest, k) + kNpSlot,
               "slot of cancelled request Longs");
    CheckGuard(g_base + NpSlotOffset(kNpCancelArea, kReply, k),
               g_base + NpSlotOffset(kNpCancelArea, kReply, k) + kNpSlot,
               "slot of cancelled reply Longs");
  }
  CHECK(g_np_requests == expected_requests && g_np_replies == expected_replies,
        "requests %" PRIu64 " (expected %" PRIu64 ") replies %" PRIu64
        " (expected %" PRIu64 ")",
        g_np_requests, expected_requests, g_np_replies, expected_replies);
  Say("%s ok requests=%" PRIu64 " replies=%" PRIu64, mode->mode, g_np_requests,
      g_np_replies);
}

/* ------------------------------------------------------------------------ */

/* immediate */

enum { kImmBound = 100000, kImmMaxRanks = 256 };

/* At the start of each rank's segment. */
typedef struct {
  uint64_t spinning; /* 1: the target stopped polling */
  uint64_t done;     /* senders that finished */
  uint64_t sent[kImmMaxRanks];
} ImmControl;

static uint64_t *g_imm_received; /* from each sender */

/* A rank of this one's neighbourhood (its segment mapped here). */
static ImmControl *ControlOf(gex_Rank_t r) {
  CHECK(g_local[r] != NULL, "immediate: rank %u's segment is not mapped here",
        r);
  return (ImmControl *)g_local[r];
}

static void OnImmediate(gex_Token_t t, int cat, int kind, void *buf,
                        size_t nbytes, unsigned nargs, const gex_AM_Arg_t *a) {
  const gex_Rank_t src = CheckToken(t, cat, kind, nargs);
  (void)buf;
  (void)nbytes;
  CHECK(cat == kShort, "a refused IMMEDIATE %s from %u was delivered",
        kCategoryName[cat], src);
  CHECK(a[0] == (gex_AM_Arg_t)src, "sender arg %" PRId32 " from %u", a[0], src);
  CHECK(a[1] == (gex_AM_Arg_t)g_imm_received[src],
        "from %u: sequence %" PRId32 ", expected %" PRIu64
        " (lost or duplicated)",
        src, a[1], g_imm_received[src]);
  ++g_imm_received[src];
}

/* Fills `target`'s queue from here with IMMEDIATE requests until refused;
 * returns how many were accepted. */
static uint64_t FillQueue(gex_Rank_t target) {
  const gex_AM_Index_t shrt = Index(2, kShort, kRequest);
  uint64_t sent = 0;
  gex_Event_t ev = GEX_EVENT_NO_OP;
  static uint8_t payload[8];
  int rc;
  for (;;) {
    rc = gex_AM_RequestShort2(g_tm, target, shrt, GEX_FLAG_IMMEDIATE,
                              (gex_AM_Arg_t)g_me, (gex_AM_Arg_t)sent);
    if (rc != 0) break;
    ++sent;
    CHECK(sent < kImmBound,
          "%d IMMEDIATE requests to %u (not polling) were "
          "all accepted",
          kImmBound, target);
  }
  /* Every category needs a slot in the same full queue. */
  rc = gex_AM_RequestMedium2(g_tm, target, Index(2, kMedium, kRequest), payload,
                             sizeof payload, GEX_EVENT_NOW, GEX_FLAG_IMMEDIATE,
                             (gex_AM_Arg_t)g_me, -1);
  CHECK(rc != 0, "IMMEDIATE Medium to a full queue returned 0");
  rc = gex_AM_RequestLong2(g_tm, target, Index(2, kLong, kRequest), payload,
                           sizeof payload, g_owner[target] + 4096, &ev,
                           GEX_FLAG_IMMEDIATE, (gex_AM_Arg_t)g_me, -1);
  CHECK(rc != 0, "IMMEDIATE Long to a full queue returned 0");
  CHECK(gex_AM_PrepareRequestMedium(g_tm, target, NULL, 8, 8, NULL,
                                    GEX_FLAG_IMMEDIATE,
                                    2) == GEX_AM_SRCDESC_NO_OP,
        "IMMEDIATE PrepareRequestMedium to a full queue did not give NO_OP");
  rc = gex_AM_RequestShort2(g_tm, target, shrt, GEX_FLAG_IMMEDIATE,
                            (gex_AM_Arg_t)g_me, (gex_AM_Arg_t)sent);
  CHECK(rc != 0, "IMMEDIATE Short accepted again with nobody polling");
  return sent;
}

static void ModeImmediate(void) {
  gex_AM_Entry_t entries[3];
  uint64_t total = 0;
  gex_Rank_t senders = 0;
  gex_Rank_t target;
  gex_Rank_t s;
  int cat;

  CHECK(g_n >= 2 && g_n <= kImmMaxRanks, "immediate needs 2..%d ranks",
        kImmMaxRanks);
  Attach(8192);
  g_imm_received = (uint64_t *)Allocate(g_n * sizeof(uint64_t));
  memset(g_base, 0, sizeof(ImmControl));
  g_on_message = OnImmediate;
  for (cat = 0; cat < kCategories; ++cat) {
    MakeEntry(&entries[cat], 2, cat, kRequest, 0);
  }
  Register(entries, kCategories);
  /* The senders to this rank: the rest of its neighbourhood. */
  for (s = 0; s < g_n; ++s) senders += s != g_me && g_local[s] != NULL;
  Barrier();

  for (target = 0; target < g_n; ++target) {
    Barrier();
    if (target == g_me) {
      ImmControl *const c = ControlOf(g_me);
      /* From here until every sender is done: no GASNet call at all. */
      __atomic_store_n(&c->spinning, 1, __ATOMIC_RELEASE);
      while (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) < senders) {
        sched_yield();
      }
      for (s = 0; s < g_n; ++s) {
        const uint64_t sent =
            s == g_me || g_local[s] == NULL
                ? 0
                : __atomic_load_n(&c->sent[s], __ATOMIC_ACQUIRE);
        POLL_UNTIL(g_imm_received[s] >= sent);
        CHECK(g_imm_received[s] == sent,
              "received %" PRIu64
              " from %u, it "
              "sent %" PRIu64,
              g_imm_received[s], s, sent);
        total += sent;
      }
    } else if (g_local[target] != NULL) {
      ImmControl *const c = ControlOf(target);
      uint64_t sent;
      while (__atomic_load_n(&c->spinning, __ATOMIC_ACQUIRE) == 0) {
        sched_yield();
      }
      sent = FillQueue(target);
      CHECK(sent >= 1, "no IMMEDIATE request to %u was accepted", target);
      Say("immediate to rank %u: sent=%" PRIu64, target, sent);
      __atomic_store_n(&c->sent[g_me], sent, __ATOMIC_RELEASE);
      __atomic_fetch_add(&c->done, 1, __ATOMIC_ACQ_REL);
    }
  }
  Barrier();
  gasnet_AMPoll();
  Barrier();
  for (s = 0; s < g_n; ++s) {
    const uint64_t sent =
        s == g_me || g_local[s] == NULL
            ? 0
            : __atomic_load_n(&ControlOf(g_me)->sent[s], __ATOMIC_ACQUIRE);
    CHECK(g_imm_received[s] == sent,
          "received %" PRIu64
          " from %u, it sent "
          "%" PRIu64 " (a duplicate arrived late?)",
          g_imm_received[s], s, sent);
  }
  Say("immediate ok received=%" PRIu64 " senders=%u", total, senders);
}

/* ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  const char *mode;
  Init(&argc, &argv);
  CHECK(argc == 2, "usage: am_client args|sizes|npam|immediate (argc %d)",
        argc);
  mode = argv[1];
  if (strcmp(mode, "args") == 0) {
    ModeArgs();
  } else if (strcmp(mode, "sizes") == 0) {
    ModeSizes();
  } else if (strncmp(mode, "npam", 4) == 0) {
    size_t i;
    for (i = 0; i < sizeof kNpModes / sizeof kNpModes[0]; ++i) {
      if (strcmp(mode, kNpModes[i].mode) == 0) break;
    }
    CHECK(i < sizeof kNpModes / sizeof kNpModes[0], "unknown mode '%s'", mode);
    ModeNpam(&kNpModes[i]);
  } else if (strcmp(mode, "immediate") == 0) {
    ModeImmediate();
  } else {
    CHECK(0, "unknown mode '%s'", mode);
  }
  Finish();
  return 0;
}
