/* legacy_gex_client: one rank of a job written against <gasnetex.h> ONLY
 * (C11, SEQ), started by its launcher from legacy_job_test. It uses the
 * GASNet-1 names that GASNet-EX exports from gasnetex.h (barriers, wait
 * modes, segment limits, gasnet_getenv, gasnet_seginfo_t, gasnet_nodeinfo_t,
 * thread information) and the GASNet-EX names that clients of spec 0.19
 * expect there, so a name declared only in gasnet.h fails its build. A
 * failed check ends the job with exit code 1 ("rank R: CHECK FAILED").
 *
 *   names       Identity (release 2025.8.0, spec 0.19), the configuration
 *               macros (#if-tested: HAVE_PTHREAD_H, PLATFORM_ARCH_*,
 *               GASNET_SUPPORTS_TI_*, GASNET_HIDDEN_AM_CONCURRENCY_LEVEL
 *               against gex_System_QueryHiddenAMConcurrencyLevel), the core
 *               name against the conduit, every new flag non-zero and
 *               disjoint from every other flag its calls accept,
 *               capabilities, memory kinds, gex_Memvec_t, gex_EP_Location_t
 *               (this rank's primordial endpoint), gex_ProgressThreadInfo_t,
 *               gasnet_getenv (a variable set here), the segment limits
 *               before and after attach, gasnet_getNodeInfo against
 *               gex_System_QueryHostInfo/NbrhdInfo and, after attach, its
 *               offsets against gex_EP_QueryBoundSegmentNB (a store through
 *               owner address + offset lands in the peer's segment, checked
 *               by the peer), gasneti_mynode, the THREADINFO macros (the
 *               same value twice on one thread, another on another thread),
 *               gasnet_set_waitmode, and the Commit *_v2 forms (Medium and
 *               Long, Request and Reply, 2 arguments, flags 0) to every
 *               rank. Prints "rank R: names ok replies=P".
 *   mk          gasnet_mk.h: gex_MK_Create of GEX_MK_CLASS_HOST gives
 *               GEX_MK_HOST (and gex_MK_Destroy takes it); a device class,
 *               non-zero flags and NULL args give GASNET_ERR_BAD_ARG and
 *               GEX_MK_INVALID. Prints "rank R: mk ok".
 *   unnamed     gasnet_barrier with GASNET_BARRIERFLAG_UNNAMED (= ANONYMOUS|8)
 *               and a different id on every rank: completes with GASNET_OK
 *               and gasnet_barrier_result reports GASNET_BARRIERFLAG_ANONYMOUS;
 *               then split-phase (notify/try/wait) the same; a named barrier
 *               in between reports 0 and its id. Prints "rank R: unnamed ok".
 *   early-long  Before any rank attaches a segment: every rank sends every
 *               rank (itself too) zero-byte Long Requests (0 and 3
 *               arguments, dest_addr NULL; and one prepared in a GASNet
 *               buffer and committed), each answered by a zero-byte
 *               Long Reply; every handler checks nbytes 0 and its
 *               arguments. A barrier then lets the ranks attach, and the
 *               same again after attach. Prints
 *               "rank R: early-long ok requests=Q replies=P". */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <gasnetex.h>
#if GASNET_HAVE_MK_CLASS_MULTIPLE || defined(GASNET_HAVE_MK_CLASS_CUDA_UVA)
#error "only host memory is available"
#endif
#include <gasnet_mk.h> /* the mk mode's; it must not bring in gasnet.h */
#include <pthread.h>

#include "tests/api/client_check.h"

/* What a client tests with #if: each must be defined (-Wundef, -Werror). */
#if !HAVE_PTHREAD_H
#error "HAVE_PTHREAD_H"
#endif
#if PLATFORM_ARCH_64 + PLATFORM_ARCH_32 != 1
#error "exactly one of PLATFORM_ARCH_32 and PLATFORM_ARCH_64"
#endif
#if PLATFORM_ARCH_LITTLE_ENDIAN + PLATFORM_ARCH_BIG_ENDIAN != 1
#error "exactly one byte order"
#endif
#if !GASNET_SUPPORTS_TI_ENTRY || !GASNET_SUPPORTS_TI_IS_REQ || \
    !GASNET_SUPPORTS_TI_IS_LONG
#error "GASNET_SUPPORTS_TI_*"
#endif
#ifndef GASNET_HIDDEN_AM_CONCURRENCY_LEVEL
#error "Missing GASNET_HIDDEN_AM_CONCURRENCY_LEVEL definition"
#endif
#if !defined(_INCLUDED_GASNETEX_H) || defined(_INCLUDED_GASNET_H)
#error "gasnetex.h's guard, and gasnet.h not included"
#endif
#if GASNET_RELEASE_VERSION_MAJOR != 2025 || \
    GASNET_RELEASE_VERSION_MINOR != 8 || GASNET_RELEASE_VERSION_PATCH != 0
#error "release 2025.8.0"
#endif
#if GEX_SPEC_VERSION_MAJOR != 0 || GEX_SPEC_VERSION_MINOR != 19
#error "spec 0.19"
#endif
#if GEX_FLAG_PEER_NEVER_SELF == 0 || GEX_FLAG_PEER_NEVER_NBRHD == 0
#error "GEX_FLAG_PEER_NEVER_*"
#endif

_Static_assert(GASNET_BARRIERFLAG_UNNAMED == (GASNET_BARRIERFLAG_ANONYMOUS | 8),
               "GASNET_BARRIERFLAG_UNNAMED");
_Static_assert(GASNET_WAIT_BLOCK != GASNET_WAIT_SPIN, "wait modes");

enum { kSegSize = 64 * 1024, kMaxRanks = 32 };
enum {
  kMediumReq,
  kMediumRep,
  kLongReq,
  kLongRep,
  kLong0Req,
  kLong0Rep,
  kLong3Req,
  kLong3Rep,
  kHandlers
};

static gex_Client_t g_client;
static gex_EP_t g_ep;
static gex_TM_t g_tm;
static gex_Segment_t g_seg = GEX_SEGMENT_INVALID;
static gex_Rank_t g_me;
static gex_Rank_t g_n;
static gex_AM_Index_t g_index[kHandlers];
static volatile unsigned g_requests;
static volatile unsigned g_replies;
static int g_attached;

/* ---------------------------------------------------------------------- */
/* Flags: every flag non-zero and disjoint from the others a call accepts. */

static void CheckDisjoint(const char *family, const gex_Flags_t *flags,
                          const char *const *names, int count) {
  int i;
  int j;
  for (i = 0; i < count; ++i) {
    CHECK(flags[i] != 0, "%s: %s is 0", family, names[i]);
    for (j = 0; j < i; ++j) {
      CHECK((flags[i] & flags[j]) == 0, "%s: %s and %s share bits %#x", family,
            names[i], names[j], (unsigned)(flags[i] & flags[j]));
    }
  }
}

static void CheckFlags(void) {
  /* Point-to-point calls (RMA, AM, VIS, gex_AD_Op*). */
  const gex_Flags_t p2p[] = {
      GEX_FLAG_IMMEDIATE,
      GEX_FLAG_AM_PREPARE_LEAST_CLIENT,
      GEX_FLAG_AM_PREPARE_LEAST_ALLOC,
      GEX_FLAG_ENABLE_LEAF_LC,
      GEX_FLAG_RANK_IS_JOBRANK,
      GEX_FLAG_SELF_SEG_UNKNOWN,
      GEX_FLAG_SELF_SEG_SOME,
      GEX_FLAG_SELF_SEG_BOUND,
      GEX_FLAG_SELF_SEG_OFFSET,
      GEX_FLAG_PEER_SEG_UNKNOWN,
      GEX_FLAG_PEER_SEG_SOME,
      GEX_FLAG_PEER_SEG_BOUND,
      GEX_FLAG_PEER_SEG_OFFSET,
      GEX_FLAG_PEER_NEVER_SELF,
      GEX_FLAG_PEER_NEVER_NBRHD,
      GEX_FLAG_AD_ACQ,
      GEX_FLAG_AD_REL,
      GEX_FLAG_AD_MY_RANK,
      GEX_FLAG_AD_MY_NBRHD,
  };
  const char *const p2p_names[] = {
      "IMMEDIATE",
      "AM_PREPARE_LEAST_CLIENT",
      "AM_PREPARE_LEAST_ALLOC",
      "ENABLE_LEAF_LC",
      "RANK_IS_JOBRANK",
      "SELF_SEG_UNKNOWN",
      "SELF_SEG_SOME",
      "SELF_SEG_BOUND",
      "SELF_SEG_OFFSET",
      "PEER_SEG_UNKNOWN",
      "PEER_SEG_SOME",
      "PEER_SEG_BOUND",
      "PEER_SEG_OFFSET",
      "PEER_NEVER_SELF",
      "PEER_NEVER_NBRHD",
      "AD_ACQ",
      "AD_REL",
      "AD_MY_RANK",
      "AD_MY_NBRHD",
  };
  /* gex_AD_Create. */
  const gex_Flags_t ad_create[] = {GEX_FLAG_AD_FAVOR_MY_RANK,
                                   GEX_FLAG_AD_FAVOR_MY_NBRHD,
                                   GEX_FLAG_AD_FAVOR_REMOTE};
  const char *const ad_create_names[] = {
      "AD_FAVOR_MY_RANK", "AD_FAVOR_MY_NBRHD", "AD_FAVOR_REMOTE"};
  /* Team construction. */
  const gex_Flags_t tm[] = {
      GEX_FLAG_TM_GLOBAL_SCRATCH,    GEX_FLAG_TM_LOCAL_SCRATCH,
      GEX_FLAG_TM_SYMMETRIC_SCRATCH, GEX_FLAG_TM_NO_SCRATCH,
      GEX_FLAG_TM_SCRATCH_SIZE_MIN,  GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED,
      GEX_FLAG_SCRATCH_SEG_OFFSET,
  };
  const char *const tm_names[] = {
      "TM_GLOBAL_SCRATCH",    "TM_LOCAL_SCRATCH",
      "TM_SYMMETRIC_SCRATCH", "TM_NO_SCRATCH",
      "TM_SCRATCH_SIZE_MIN",  "TM_SCRATCH_SIZE_RECOMMENDED",
      "SCRATCH_SEG_OFFSET",
  };
  /* Endpoint hints and the Destroy calls' quiescence. */
  const gex_Flags_t other[] = {GEX_FLAG_HINT_ACCEL_AD, GEX_FLAG_HINT_ACCEL_COLL,
                               GEX_FLAG_GLOBALLY_QUIESCED};
  const char *const other_names[] = {"HINT_ACCEL_AD", "HINT_ACCEL_COLL",
                                     "GLOBALLY_QUIESCED"};
  const gex_EP_Capabilities_t caps[] = {
      GEX_EP_CAPABILITY_RMA, GEX_EP_CAPABILITY_AM, GEX_EP_CAPABILITY_VIS,
      GEX_EP_CAPABILITY_COLL, GEX_EP_CAPABILITY_AD};
  const char *const cap_names[] = {"RMA", "AM", "VIS", "COLL", "AD"};
  gex_Flags_t caps_as_flags[5];
  gex_EP_Capabilities_t all = 0;
  int i;
  CheckDisjoint("point-to-point", p2p, p2p_names,
                (int)(sizeof p2p / sizeof p2p[0]));
  CheckDisjoint("gex_AD_Create", ad_create, ad_create_names, 3);
  CheckDisjoint("team construction", tm, tm_names,
                (int)(sizeof tm / sizeof tm[0]));
  CheckDisjoint("hints", other, other_names, 3);
  CHECK(GEX_FLAG_HINT_ACCEL_ALL ==
            (GEX_FLAG_HINT_ACCEL_AD | GEX_FLAG_HINT_ACCEL_COLL),
        "GEX_FLAG_HINT_ACCEL_ALL %#x", (unsigned)GEX_FLAG_HINT_ACCEL_ALL);
  for (i = 0; i < 5; ++i) {
    caps_as_flags[i] = (gex_Flags_t)caps[i];
    all |= caps[i];
  }
  CheckDisjoint("capabilities", caps_as_flags, cap_names, 5);
  CHECK(GEX_EP_CAPABILITY_ALL == all, "GEX_EP_CAPABILITY_ALL %#x, union %#x",
        (unsigned)GEX_EP_CAPABILITY_ALL, (unsigned)all);
  CHECK(GEX_THREAD_ROLE_RCV != 0 && GEX_THREAD_ROLE_SND != 0 &&
            (GEX_THREAD_ROLE_RCV & GEX_THREAD_ROLE_SND) == 0,
        "thread roles");
}

/* ---------------------------------------------------------------------- */
/* Thread information. */

static gasnet_threadinfo_t InfoOf(gasnet_threadinfo_t given) {
  GASNET_POST_THREADINFO(given);
  return GASNET_GET_THREADINFO();
}

static void *OtherThread(void *arg) {
  GASNET_BEGIN_FUNCTION();
  *(gasnet_threadinfo_t *)arg = GASNET_GET_THREADINFO();
  return NULL;
}

static void CheckThreadInfo(void) {
  GASNET_BEGIN_FUNCTION();
  const gasnet_threadinfo_t mine = GASNET_GET_THREADINFO();
  gasnet_threadinfo_t other = NULL;
  pthread_t thread;
  CHECK(mine != NULL, "GASNET_GET_THREADINFO() is NULL");
  CHECK(InfoOf(mine) == mine, "GASNET_GET_THREADINFO() changed on one thread");
  CHECK(pthread_create(&thread, NULL, OtherThread, &other) == 0,
        "pthread_create");
  CHECK(pthread_join(thread, NULL) == 0, "pthread_join");
  CHECK(other != NULL && other != mine,
        "another thread's GASNET_GET_THREADINFO() %p, mine %p", other, mine);
}

/* ---------------------------------------------------------------------- */
/* Handlers. */

static gex_Rank_t Src(gex_Token_t t) {
  gex_Token_Info_t info;
  const gex_TI_t got = gex_Token_Info(t, &info, GEX_TI_SRCRANK);
  CHECK((got & GEX_TI_SRCRANK) != 0 && info.gex_srcrank < g_n,
        "gex_Token_Info");
  return info.gex_srcrank;
}

static void MediumReq(gex_Token_t t, void *buf, size_t nbytes, gex_AM_Arg_t a0,
                      gex_AM_Arg_t a1) {
  const gex_Rank_t src = Src(t);
  gex_AM_SrcDesc_t sd;
  CHECK(nbytes == 8 && a0 == (gex_AM_Arg_t)src && a1 == 11 &&
            memcmp(buf, "medium-q", 8) == 0,
        "MediumReq from %u: %zu bytes, args %d %d", src, nbytes, a0, a1);
  ++g_requests;
  sd = gex_AM_PrepareReplyMedium(t, NULL, 8, 8, NULL, 0, 2);
  CHECK(sd != GEX_AM_SRCDESC_NO_OP, "gex_AM_PrepareReplyMedium");
  memcpy(gex_AM_SrcDescAddr(sd), "medium-r", 8);
  /* As clients write it: the _v2 forms return non-zero when an IMMEDIATE
   * commit could not go ahead (spec 0.19, "gex_AM_Commit*_v2"); ours took
   * the resources at Prepare, so it goes ahead. */
  if (gex_AM_CommitReplyMedium2_v2(sd, g_index[kMediumRep], 8,
                                   GEX_FLAG_IMMEDIATE, (gex_AM_Arg_t)g_me,
                                   12)) {
    CHECK(0, "gex_AM_CommitReplyMedium2_v2 with GEX_FLAG_IMMEDIATE failed");
  }
}

static void MediumRep(gex_Token_t t, void *buf, size_t nbytes, gex_AM_Arg_t a0,
                      gex_AM_Arg_t a1) {
  const gex_Rank_t src = Src(t);
  CHECK(nbytes == 8 && a0 == (gex_AM_Arg_t)src && a1 == 12 &&
            memcmp(buf, "medium-r", 8) == 0,
        "MediumRep from %u: %zu bytes, args %d %d", src, nbytes, a0, a1);
  ++g_replies;
}

/* Long payloads land at 16 * sender (requests) and 16 * (32 + sender)
 * (replies) in the target's segment. */
static char *LongSlot(gex_Rank_t target, gex_Rank_t sender, int reply) {
  void *owner = NULL;
  gex_EP_QueryBoundSegmentNB(g_tm, target, &owner, NULL, NULL, 0);
  CHECK(owner != NULL, "rank %u has no segment", target);
  return (char *)owner + 16 * ((size_t)sender + (reply ? kMaxRanks : 0));
}

static void LongReq(gex_Token_t t, void *buf, size_t nbytes, gex_AM_Arg_t a0,
                    gex_AM_Arg_t a1) {
  const gex_Rank_t src = Src(t);
  gex_AM_SrcDesc_t sd;
  CHECK(nbytes == 6 && a0 == (gex_AM_Arg_t)src && a1 == 21 &&
            buf == LongSlot(g_me, src, 0) && memcmp(buf, "long-q", 6) == 0,
        "LongReq from %u: %zu bytes at %p, args %d %d", src, nbytes, buf, a0,
        a1);
  ++g_requests;
  sd = gex_AM_PrepareReplyLong(t, "long-r", 6, 6, NULL, GEX_EVENT_NOW, 0, 2);
  CHECK(sd != GEX_AM_SRCDESC_NO_OP, "gex_AM_PrepareReplyLong");
  {
    const int rc = gex_AM_CommitReplyLong2_v2(sd, g_index[kLongRep], 6,
                                              LongSlot(src, g_me, 1), 0,
                                              (gex_AM_Arg_t)g_me, 22);
    CHECK(rc == 0, "gex_AM_CommitReplyLong2_v2 returned %d", rc);
  }
}

static void LongRep(gex_Token_t t, void *buf, size_t nbytes, gex_AM_Arg_t a0,
                    gex_AM_Arg_t a1) {
  const gex_Rank_t src = Src(t);
  CHECK(nbytes == 6 && a0 == (gex_AM_Arg_t)src && a1 == 22 &&
            buf == LongSlot(g_me, src, 1) && memcmp(buf, "long-r", 6) == 0,
        "LongRep from %u: %zu bytes at %p, args %d %d", src, nbytes, buf, a0,
        a1);
  ++g_replies;
}

static void Long0Req(gex_Token_t t, void *buf, size_t nbytes) {
  const gex_Rank_t src = Src(t);
  (void)buf;
  CHECK(nbytes == 0, "Long0Req from %u: %zu bytes", src, nbytes);
  ++g_requests;
  CHECK(gex_AM_ReplyLong0(t, g_index[kLong0Rep], NULL, 0, NULL, GEX_EVENT_NOW,
                          0) == GASNET_OK,
        "gex_AM_ReplyLong0");
}

static void Long0Rep(gex_Token_t t, void *buf, size_t nbytes) {
  const gex_Rank_t src = Src(t);
  (void)buf;
  CHECK(nbytes == 0, "Long0Rep from %u: %zu bytes", src, nbytes);
  ++g_replies;
}

static void Long3Req(gex_Token_t t, void *buf, size_t nbytes, gex_AM_Arg_t a0,
                     gex_AM_Arg_t a1, gex_AM_Arg_t a2) {
  const gex_Rank_t src = Src(t);
  (void)buf;
  CHECK(nbytes == 0 && a0 == (gex_AM_Arg_t)src && a1 == INT32_MIN && a2 == 3,
        "Long3Req from %u: %zu bytes, args %d %d %d", src, nbytes, a0, a1, a2);
  ++g_requests;
  CHECK(gex_AM_ReplyLong3(t, g_index[kLong3Rep], NULL, 0, NULL, GEX_EVENT_NOW,
                          0, (gex_AM_Arg_t)g_me, INT32_MAX, 4) == GASNET_OK,
        "gex_AM_ReplyLong3");
}

static void Long3Rep(gex_Token_t t, void *buf, size_t nbytes, gex_AM_Arg_t a0,
                     gex_AM_Arg_t a1, gex_AM_Arg_t a2) {
  const gex_Rank_t src = Src(t);
  (void)buf;
  CHECK(nbytes == 0 && a0 == (gex_AM_Arg_t)src && a1 == INT32_MAX && a2 == 4,
        "Long3Rep from %u: %zu bytes, args %d %d %d", src, nbytes, a0, a1, a2);
  ++g_replies;
}

static void Register(void) {
  gex_AM_Entry_t e[kHandlers];
  const gex_Flags_t req = GEX_FLAG_AM_REQUEST;
  const gex_Flags_t rep = GEX_FLAG_AM_REPLY;
  int i;
  memset(e, 0, sizeof e);
  e[kMediumReq].gex_fnptr = (gex_AM_Fn_t)MediumReq;
  e[kMediumReq].gex_flags = GEX_FLAG_AM_MEDIUM | req;
  e[kMediumReq].gex_nargs = 2;
  e[kMediumRep].gex_fnptr = (gex_AM_Fn_t)MediumRep;
  e[kMediumRep].gex_flags = GEX_FLAG_AM_MEDIUM | rep;
  e[kMediumRep].gex_nargs = 2;
  e[kLongReq].gex_fnptr = (gex_AM_Fn_t)LongReq;
  e[kLongReq].gex_flags = GEX_FLAG_AM_LONG | req;
  e[kLongReq].gex_nargs = 2;
  e[kLongRep].gex_fnptr = (gex_AM_Fn_t)LongRep;
  e[kLongRep].gex_flags = GEX_FLAG_AM_LONG | rep;
  e[kLongRep].gex_nargs = 2;
  e[kLong0Req].gex_fnptr = (gex_AM_Fn_t)Long0Req;
  e[kLong0Req].gex_flags = GEX_FLAG_AM_LONG | req;
  e[kLong0Rep].gex_fnptr = (gex_AM_Fn_t)Long0Rep;
  e[kLong0Rep].gex_flags = GEX_FLAG_AM_LONG | rep;
  e[kLong3Req].gex_fnptr = (gex_AM_Fn_t)Long3Req;
  e[kLong3Req].gex_flags = GEX_FLAG_AM_LONG | req;
  e[kLong3Req].gex_nargs = 3;
  e[kLong3Rep].gex_fnptr = (gex_AM_Fn_t)Long3Rep;
  e[kLong3Rep].gex_flags = GEX_FLAG_AM_LONG | rep;
  e[kLong3Rep].gex_nargs = 3;
  CHECK(gex_EP_RegisterHandlers(g_ep, e, kHandlers) == GASNET_OK,
        "gex_EP_RegisterHandlers");
  for (i = 0; i < kHandlers; ++i) g_index[i] = e[i].gex_index;
}

static void Attach(void) {
  const int rc = gex_Segment_Attach(&g_seg, g_tm, kSegSize);
  CHECK(rc == GASNET_OK, "gex_Segment_Attach returned %d", rc);
  g_attached = 1;
}

/* ---------------------------------------------------------------------- */
/* Modes. */

static void CheckNodeInfo(void) {
  gasnet_nodeinfo_t info[kMaxRanks];
  gex_RankInfo_t *hosts = NULL;
  gex_RankInfo_t *nbrhd = NULL;
  gex_Rank_t host_count = 0;
  gex_Rank_t nbrhd_count = 0;
  gex_Rank_t mine = 0;
  gex_Rank_t r;
  gex_Rank_t i;
  int rc;
  memset(info, 0xa5, sizeof info);
  rc = gasnet_getNodeInfo(info, (int)g_n);
  CHECK(rc == GASNET_OK, "gasnet_getNodeInfo returned %d", rc);
  gex_System_QueryHostInfo(&hosts, &host_count, &mine);
  gex_System_QueryNbrhdInfo(&nbrhd, &nbrhd_count, &mine);
  for (r = 0; r < g_n; ++r) {
    int on_host = 0;
    int in_nbrhd = 0;
    void *owner = NULL;
    void *local = NULL;
    for (i = 0; i < host_count; ++i) on_host |= hosts[i].gex_jobrank == r;
    for (i = 0; i < nbrhd_count; ++i) in_nbrhd |= nbrhd[i].gex_jobrank == r;
    CHECK(on_host == (info[r].host == info[g_me].host),
          "rank %u: host %u (mine %u), on my host per QueryHostInfo: %d", r,
          info[r].host, info[g_me].host, on_host);
    CHECK(in_nbrhd == (info[r].supernode == info[g_me].supernode),
          "rank %u: supernode %u (mine %u), in my nbrhd per QueryNbrhdInfo: %d",
          r, info[r].supernode, info[g_me].supernode, in_nbrhd);
    if (!g_attached) continue;
    gex_EP_QueryBoundSegmentNB(g_tm, r, &owner, &local, NULL, 0);
    if (local == NULL) {
      CHECK(info[r].offset == 0,
            "rank %u: offset %" PRIdPTR " for a peer not mapped here", r,
            info[r].offset);
    } else {
      CHECK((char *)owner + info[r].offset == (char *)local,
            "rank %u: owner %p + offset %" PRIdPTR " is not local %p", r, owner,
            info[r].offset, local);
      /* Leave a mark for rank r to find in its own segment. */
      ((volatile uint32_t *)((char *)owner + info[r].offset))[1024 + g_me] =
          0xc0de0000u + g_me;
    }
  }
}

static void CheckMarks(void) {
  const volatile uint32_t *mine =
      (const volatile uint32_t *)gex_Segment_QueryAddr(g_seg);
  gasnet_nodeinfo_t info[kMaxRanks];
  void *local = NULL;
  gex_Rank_t r;
  CHECK(gasnet_getNodeInfo(info, (int)g_n) == GASNET_OK, "gasnet_getNodeInfo");
  for (r = 0; r < g_n; ++r) {
    /* Rank r marked my segment when mine is mapped in r: as r and I share a
     * supernode, mine is mapped in r exactly when r's is mapped here. */
    gex_EP_QueryBoundSegmentNB(g_tm, r, NULL, &local, NULL, 0);
    if (local == NULL) continue;
    CHECK(mine[1024 + r] == 0xc0de0000u + r,
          "rank %u's mark through its getNodeInfo offset: %#x", r,
          mine[1024 + r]);
  }
}

static void ModeNames(void) {
  uintptr_t max_local = gasnet_getMaxLocalSegmentSize();
  uintptr_t max_global = gasnet_getMaxGlobalSegmentSize();
  gasnet_seginfo_t si;
  gex_Memvec_t mv[2];
  gex_EP_Location_t loc;
  gex_ProgressThreadInfo_t pti;
  gex_MK_t kind = GEX_MK_HOST;
  char *value;
  char buf[8] = "abcdefg";
  gex_Rank_t r;
  int rc;

  CHECK(strcmp(GASNET_CORE_NAME_STR, GASNET_CONDUIT_NAME_STR) == 0 &&
            strlen(GASNET_CORE_VERSION_STR) > 0,
        "core %s %s, conduit %s", GASNET_CORE_NAME_STR, GASNET_CORE_VERSION_STR,
        GASNET_CONDUIT_NAME_STR);
  CHECK(strstr(GASNET_CONFIG_STRING, "RELEASE=2025.8.0,SPEC=0.19") != NULL,
        "GASNET_CONFIG_STRING %s", GASNET_CONFIG_STRING);
  CHECK(gex_System_QueryHiddenAMConcurrencyLevel() ==
            GASNET_HIDDEN_AM_CONCURRENCY_LEVEL,
        "hidden AM concurrency %d vs GASNET_HIDDEN_AM_CONCURRENCY_LEVEL %d",
        gex_System_QueryHiddenAMConcurrencyLevel(),
        GASNET_HIDDEN_AM_CONCURRENCY_LEVEL);
  CHECK(gasneti_mynode == g_me, "gasneti_mynode %u", (unsigned)gasneti_mynode);
  CheckFlags();
  CHECK(kind != GEX_MK_INVALID, "GEX_MK_HOST is GEX_MK_INVALID");

  mv[0].gex_addr = buf;
  mv[0].gex_len = 3;
  mv[1].gex_addr = buf + 4;
  mv[1].gex_len = 4;
  CHECK(memcmp(mv[1].gex_addr, "efg", mv[1].gex_len) == 0 &&
            sizeof mv[0] == sizeof(void *) + sizeof(size_t),
        "gex_Memvec_t");
  loc.gex_rank = g_me;
  loc.gex_ep_index = gex_EP_QueryIndex(g_ep);
  CHECK(loc.gex_rank == g_me && loc.gex_ep_index == 0,
        "the primordial endpoint's index %u", (unsigned)loc.gex_ep_index);
  memset(&pti, 0, sizeof pti);
  pti.gex_thread_roles = GEX_THREAD_ROLE_RCV | GEX_THREAD_ROLE_SND;
  pti.gex_device_list = "none";
  pti.gex_progress_fn = OtherThread;
  pti.gex_progress_arg = NULL;
  CHECK(pti.gex_progress_fn != NULL && strcmp(pti.gex_device_list, "none") == 0,
        "gex_ProgressThreadInfo_t");

  CHECK(setenv("LEGACY_GEX_CLIENT_VAR", "value 42", 1) == 0, "setenv");
  value = gasnet_getenv("LEGACY_GEX_CLIENT_VAR");
  CHECK(value != NULL && strcmp(value, "value 42") == 0, "gasnet_getenv: %s",
        value == NULL ? "(null)" : value);
  CHECK(gasnet_getenv("LEGACY_GEX_CLIENT_UNSET_VAR") == NULL,
        "gasnet_getenv of an unset variable");

  CHECK(max_global <= max_local && max_global >= kSegSize,
        "segment limits: local %" PRIuPTR " global %" PRIuPTR, max_local,
        max_global);
  CheckThreadInfo();
  CheckNodeInfo(); /* before attach: no offsets */
  Attach();
  CHECK(gasnet_getMaxLocalSegmentSize() == max_local &&
            gasnet_getMaxGlobalSegmentSize() == max_global,
        "segment limits changed at attach");
  si.addr = gex_Segment_QueryAddr(g_seg);
  si.size = gex_Segment_QuerySize(g_seg);
  CHECK(si.addr != NULL && si.size >= kSegSize, "gasnet_seginfo_t");
  memset(si.addr, 0, si.size);
  gasnet_barrier(0, GASNET_BARRIERFLAG_UNNAMED);
  CheckNodeInfo();
  rc = gasnet_barrier(1, 0);
  CHECK(rc == GASNET_OK, "gasnet_barrier returned %d", rc);
  CheckMarks();

  rc = gasnet_set_waitmode(GASNET_WAIT_BLOCK);
  CHECK(rc == GASNET_OK, "gasnet_set_waitmode(GASNET_WAIT_BLOCK) %d", rc);
  /* Negotiated-payload AMs committed with the *_v2 forms to every rank. */
  for (r = 0; r < g_n; ++r) {
    const gex_Rank_t to = (g_me + r) % g_n;
    gex_AM_SrcDesc_t sd =
        gex_AM_PrepareRequestMedium(g_tm, to, NULL, 8, 8, NULL, 0, 2);
    CHECK(sd != GEX_AM_SRCDESC_NO_OP, "gex_AM_PrepareRequestMedium");
    memcpy(gex_AM_SrcDescAddr(sd), "medium-q", 8);
    /* The variadic form, counting its arguments. */
    CHECK(gex_AM_CommitRequestMedium_v2(sd, g_index[kMediumReq], 8,
                                        GEX_FLAG_IMMEDIATE, (gex_AM_Arg_t)g_me,
                                        11) == 0,
          "gex_AM_CommitRequestMedium_v2");
    sd = gex_AM_PrepareRequestLong(g_tm, to, "long-q", 6, 6, NULL,
                                   GEX_EVENT_NOW, 0, 2);
    CHECK(sd != GEX_AM_SRCDESC_NO_OP, "gex_AM_PrepareRequestLong");
    if (gex_AM_CommitRequestLong2_v2(sd, g_index[kLongReq], 6,
                                     LongSlot(to, g_me, 0), 0,
                                     (gex_AM_Arg_t)g_me, 21) != 0) {
      CHECK(0, "gex_AM_CommitRequestLong2_v2");
    }
  }
  GASNET_BLOCKUNTIL(g_replies == 2 * g_n);
  rc = gasnet_set_waitmode(GASNET_WAIT_SPIN);
  CHECK(rc == GASNET_OK, "gasnet_set_waitmode(GASNET_WAIT_SPIN) %d", rc);
  rc = gasnet_barrier(2, 0);
  CHECK(rc == GASNET_OK && g_requests == 2 * g_n,
        "gasnet_barrier %d, %u requests", rc, g_requests);
  Say("names ok replies=%u", g_replies);
}

static void ModeMk(void) {
  gex_MK_Create_args_t args;
  gex_MK_t kind = GEX_MK_INVALID;
  int rc;
  memset(&args, 0, sizeof args);
  args.gex_class = GEX_MK_CLASS_HOST;
  rc = gex_MK_Create(&kind, g_client, &args, 0);
  CHECK(rc == GASNET_OK && kind == GEX_MK_HOST,
        "gex_MK_Create(HOST): %d, kind %p", rc, (void *)kind);
  gex_MK_Destroy(kind, 0);
  gex_System_SetVerboseErrors(0);
  args.gex_class = GEX_MK_CLASS_CUDA_UVA;
  args.gex_args.gex_class_cuda_uva.gex_CUdevice = 0;
  kind = GEX_MK_HOST;
  rc = gex_MK_Create(&kind, g_client, &args, 0);
  CHECK(rc == GASNET_ERR_BAD_ARG && kind == GEX_MK_INVALID,
        "gex_MK_Create(CUDA_UVA): %d, kind %p", rc, (void *)kind);
  args.gex_class = GEX_MK_CLASS_HOST;
  kind = GEX_MK_HOST;
  rc = gex_MK_Create(&kind, g_client, &args, 1);
  CHECK(rc == GASNET_ERR_BAD_ARG && kind == GEX_MK_INVALID,
        "gex_MK_Create with flags: %d", rc);
  rc = gex_MK_Create(&kind, g_client, NULL, 0);
  CHECK(rc == GASNET_ERR_BAD_ARG, "gex_MK_Create(NULL args): %d", rc);
  gex_System_SetVerboseErrors(1);
  Say("mk ok");
}

static void ModeUnnamed(void) {
  const int my_id = (int)g_me * 7 + 1;
  int id = -1;
  int rc;
  Attach();
  rc = gasnet_barrier(my_id, GASNET_BARRIERFLAG_UNNAMED);
  CHECK(rc == GASNET_OK, "unnamed gasnet_barrier returned %d", rc);
  rc = gasnet_barrier_result(&id);
  CHECK(rc == GASNET_BARRIERFLAG_ANONYMOUS,
        "gasnet_barrier_result after an unnamed barrier: %d", rc);
  rc = gasnet_barrier(4321, 0);
  CHECK(rc == GASNET_OK, "named gasnet_barrier returned %d", rc);
  rc = gasnet_barrier_result(&id);
  CHECK(rc == 0 && id == 4321,
        "gasnet_barrier_result after a named barrier: %d, id %d", rc, id);
  gasnet_barrier_notify(my_id + 1, GASNET_BARRIERFLAG_UNNAMED);
  while ((rc = gasnet_barrier_try(my_id + 1, GASNET_BARRIERFLAG_UNNAMED)) ==
         GASNET_ERR_NOT_READY) {
  }
  CHECK(rc == GASNET_OK, "unnamed gasnet_barrier_try returned %d", rc);
  rc = gasnet_barrier_result(&id);
  CHECK(rc == GASNET_BARRIERFLAG_ANONYMOUS,
        "gasnet_barrier_result after an unnamed try: %d", rc);
  gasnet_barrier_notify(my_id + 2, GASNET_BARRIERFLAG_UNNAMED);
  rc = gasnet_barrier_wait(my_id + 2, GASNET_BARRIERFLAG_UNNAMED);
  CHECK(rc == GASNET_OK, "unnamed gasnet_barrier_wait returned %d", rc);
  rc = gasnet_barrier_result(&id);
  CHECK(rc == GASNET_BARRIERFLAG_ANONYMOUS,
        "gasnet_barrier_result after an unnamed wait: %d", rc);
  Say("unnamed ok");
}

static void SendZeroByteLongs(void) {
  gex_Rank_t r;
  for (r = 0; r < g_n; ++r) {
    const gex_Rank_t to = (g_me + r) % g_n;
    /* Negotiated payload: a GASNet buffer of 0 bytes, dest given at
     * Commit. */
    gex_AM_SrcDesc_t sd =
        gex_AM_PrepareRequestLong(g_tm, to, NULL, 0, 0, NULL, NULL, 0, 0);
    CHECK(sd != GEX_AM_SRCDESC_NO_OP, "gex_AM_PrepareRequestLong to %u", to);
    gex_AM_CommitRequestLong0(sd, g_index[kLong0Req], 0, NULL);
    CHECK(gex_AM_RequestLong0(g_tm, to, g_index[kLong0Req], NULL, 0, NULL,
                              GEX_EVENT_NOW, 0) == GASNET_OK,
          "gex_AM_RequestLong0 to %u", to);
    CHECK(gex_AM_RequestLong3(g_tm, to, g_index[kLong3Req], NULL, 0, NULL,
                              GEX_EVENT_NOW, 0, (gex_AM_Arg_t)g_me, INT32_MIN,
                              3) == GASNET_OK,
          "gex_AM_RequestLong3 to %u", to);
  }
}

static void ModeEarlyLong(void) {
  /* No rank attaches before every rank's requests are answered: each
   * rank's last reply comes before it enters the barrier. */
  SendZeroByteLongs();
  GASNET_BLOCKUNTIL(g_replies == 3 * g_n);
  gex_Coll_BarrierBlocking(g_tm, 0);
  CHECK(g_requests == 3 * g_n, "%u requests before attach", g_requests);
  Attach();
  gex_Coll_BarrierBlocking(g_tm, 0);
  SendZeroByteLongs();
  GASNET_BLOCKUNTIL(g_replies == 6 * g_n);
  gex_Coll_BarrierBlocking(g_tm, 0);
  CHECK(g_requests == 6 * g_n, "%u requests", g_requests);
  Say("early-long ok requests=%u replies=%u", g_requests, g_replies);
}

int main(int argc, char **argv) {
  const char *mode;
  int rc = gex_Client_Init(&g_client, &g_ep, &g_tm, "legacy_gex_client", &argc,
                           &argv, 0);
  CHECK(rc == GASNET_OK, "gex_Client_Init returned %d", rc);
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = (int)g_me;
  CHECK(g_n <= kMaxRanks, "%u ranks", g_n);
  CHECK(argc == 2, "usage: legacy_gex_client names|mk|unnamed|early-long");
  mode = argv[1];
  Register();
  if (strcmp(mode, "names") == 0) {
    ModeNames();
  } else if (strcmp(mode, "mk") == 0) {
    ModeMk();
  } else if (strcmp(mode, "unnamed") == 0) {
    ModeUnnamed();
  } else if (strcmp(mode, "early-long") == 0) {
    ModeEarlyLong();
  } else {
    CHECK(0, "unknown mode '%s'", mode);
  }
  gasnet_barrier(0, GASNET_BARRIERFLAG_ANONYMOUS);
  gasnet_exit(0);
}
