/* gasnetex.h: the GASNet-EX C API, as this implementation (gex) offers it.
 *
 * The contract is the GASNet-EX specification (docs/GASNet-EX.txt in
 * BerkeleyLab/gasnet); this header is our own. A client includes it with no
 * path prefix and depends on one conduit target, which also defines the
 * threading mode:
 *
 *   //conduit/smp:gasnet_smp_seq   -> GASNET_SEQ   (one client thread calls)
 *   //conduit/smp:gasnet_smp_par   -> GASNET_PAR   (any thread may call)
 *
 * A client may instead define exactly one of GASNET_SEQ, GASNET_PAR or
 * GASNET_PARSYNC itself. The mode is checked at link time: gex_Client_Init
 * names a mode-specific symbol, so a SEQ client linked against a PAR library
 * fails to link instead of running unsafely.
 *
 * Valid as C11 and as C++. What this version implements is listed in the
 * README ("The C API"). */
#ifndef GASNETEX_H
#define GASNETEX_H
#define _GASNETEX_H 1
#define _IN_GASNETEX_H 1
#define _INCLUDED_GASNETEX_H 1

/* The C library headers GASNet's gasnetex.h brings in, so that clients
 * written against it (atol, printf, assert, INT_MAX ...) compile here. */
#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Platform and configuration macros clients test with #if (HAVE_PTHREAD_H,
 * PLATFORM_ARCH_64, ...), shared with gasnet_tools.h. */
#include "gasnet_platform.h"

/* The versions and the basic types (gex_Rank_t, gex_TM_t, ...). */
#include "gasnet_fwd.h"

/* ---------------------------------------------------------------------- */
/* Threading mode and conduit: defined by the conduit target (Bazel
 * `defines`) or by the client, exactly one mode. */

#if defined(_GEX_BUILDING_LIBRARY)
/* The library itself is built once for every mode and conduit. */
#if !defined(GASNET_CONDUIT_NAME_STR)
#define GASNET_CONDUIT_NAME_STR "(library)"
#endif
#endif
#if defined(GASNET_SEQ) + defined(GASNET_PAR) + defined(GASNET_PARSYNC) > 1
#error "define only one of GASNET_SEQ, GASNET_PAR, GASNET_PARSYNC"
#endif
#if !defined(GASNET_SEQ) && !defined(GASNET_PAR) && \
    !defined(GASNET_PARSYNC) && !defined(_GEX_BUILDING_LIBRARY)
#error "no GASNet threading mode: depend on //conduit/<name>:gasnet_<name>_seq or _par, or define GASNET_SEQ, GASNET_PAR or GASNET_PARSYNC"
#endif
#if defined(GASNET_PAR)
#define GASNETI_THREAD_MODE_STR "PAR"
#define GASNETI_THREAD_MODE_SUFFIX PAR
#elif defined(GASNET_PARSYNC)
#define GASNETI_THREAD_MODE_STR "PARSYNC"
#define GASNETI_THREAD_MODE_SUFFIX PARSYNC
#else
#define GASNETI_THREAD_MODE_STR "SEQ"
#define GASNETI_THREAD_MODE_SUFFIX SEQ
#endif

/* The conduit's final library (//conduit:conduit.bzl) defines
 * GASNET_CONDUIT_<NAME>=1, GASNET_CONDUIT_NAME=<NAME> and
 * _GEX_CONDUIT_NAME_LC=<name> for its clients; the strings follow. */
#define _GEX_STR(x) #x
#define _GEX_XSTR(x) _GEX_STR(x)
#if defined(GASNET_CONDUIT_NAME) && !defined(GASNET_CONDUIT_NAME_STR)
#define GASNET_CONDUIT_NAME_STR _GEX_XSTR(GASNET_CONDUIT_NAME)
#define GASNET_CONDUIT_NAME_STR_LC _GEX_XSTR(_GEX_CONDUIT_NAME_LC)
#elif !defined(GASNET_CONDUIT_NAME_STR)
#error "no GASNet conduit: depend on //conduit/<name>:gasnet_<name>_seq or _par"
#endif
/* The core and extended API's names and versions, as GASNet's conduits
 * report them: the name is a bare token (the conduit's, SMP ...), the
 * version a number token; the _STR forms are their strings. */
#if defined(GASNET_CONDUIT_NAME)
#define GASNET_CORE_NAME GASNET_CONDUIT_NAME
#else
#define GASNET_CORE_NAME GEX
#endif
#define GASNET_CORE_NAME_STR _GEX_XSTR(GASNET_CORE_NAME)
#define GASNET_CORE_VERSION 1.0
#define GASNET_CORE_VERSION_STR _GEX_XSTR(GASNET_CORE_VERSION)
#define GASNET_EXTENDED_NAME GASNET_CORE_NAME
#define GASNET_EXTENDED_NAME_STR GASNET_CORE_NAME_STR
#define GASNET_EXTENDED_VERSION GASNET_CORE_VERSION
#define GASNET_EXTENDED_VERSION_STR GASNET_CORE_VERSION_STR

/* ---------------------------------------------------------------------- */
/* Versions and configuration a client tests. */

/* GEX_SPEC_VERSION_*, GASNET_SPEC_VERSION_*, GASNET_RELEASE_VERSION_* and
 * the basic types come from gasnet_fwd.h. */
#define GASNETI_RELEASE_VERSION 2025.8.0
#define GASNETI_GEX_IMPLEMENTATION "gex"

#define GASNET_SEGMENT_FAST 1
#define GASNETI_SEGMENT_CONFIG "FAST"
#define GASNET_PSHM 1
#define GASNET_ALIGNED_SEGMENTS 0
#define GASNET_PAGESIZE 4096
#define GASNET_CACHE_LINE_BYTES 64
#define GASNET_MAXNODES 0x7fffffff
/* Endpoints per process, the primordial one included (gex_EP_Create). */
#define GASNET_MAXEPS 32
#define GASNET_SUPPORTS_AM_CANCEL 1
/* gex_Token_Info fills these fields. */
#define GASNET_SUPPORTS_TI_SRCRANK 1
#define GASNET_SUPPORTS_TI_EP 1
#define GASNET_SUPPORTS_TI_ENTRY 1
#define GASNET_SUPPORTS_TI_IS_REQ 1
#define GASNET_SUPPORTS_TI_IS_LONG 1
/* AM handlers run only inside GASNet calls of the client's own threads
 * (polls, waits, injection): no hidden thread runs them. See
 * gex_System_QueryHiddenAMConcurrencyLevel. */
#define GASNET_HIDDEN_AM_CONCURRENCY_LEVEL 0
/* No progress threads (gex_System_QueryProgressThreads reports none). */
#define GASNET_RCV_THREAD 0
#define GASNET_SND_THREAD 0
/* Memory kinds: host memory only (gasnet_mk.h). The per-class macros
 * (GASNET_HAVE_MK_CLASS_CUDA_UVA, _HIP, _ZE) stay undefined: clients test
 * them with #if defined(...). */
#define GASNET_HAVE_MK_CLASS_MULTIPLE 0
#if defined(GEX_DEBUG) && GEX_DEBUG
#define GASNET_DEBUG 1
#define GASNETI_BUILD_KIND_STR "debug"
#else
#define GASNET_NDEBUG 1
#define GASNETI_BUILD_KIND_STR "release"
#endif
#define GASNET_CONFIG_STRING                                              \
  "RELEASE=2025.8.0,SPEC=0.19,CONDUIT=" GASNET_CONDUIT_NAME_STR           \
  ",THREADMODEL=" GASNETI_THREAD_MODE_STR ",SEGMENT=FAST,PTR=64bit,PSHM," \
  "IMPLEMENTATION=gex," GASNETI_BUILD_KIND_STR

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* Basic types. */

#define GEX_RANK_INVALID ((gex_Rank_t)0xFFFFFFFFu)

#define GEX_CLIENT_INVALID ((gex_Client_t)0)
#define GEX_EP_INVALID ((gex_EP_t)0)
#define GEX_TM_INVALID ((gex_TM_t)0)
#define GEX_SEGMENT_INVALID ((gex_Segment_t)0)
#define GEX_AM_SRCDESC_NO_OP ((gex_AM_SrcDesc_t)0)

/* What an endpoint can do (gex_EP_Create's capabilities). */
#define GEX_EP_CAPABILITY_RMA ((gex_EP_Capabilities_t)1u << 0)
#define GEX_EP_CAPABILITY_AM ((gex_EP_Capabilities_t)1u << 1)
#define GEX_EP_CAPABILITY_VIS ((gex_EP_Capabilities_t)1u << 2)
#define GEX_EP_CAPABILITY_COLL ((gex_EP_Capabilities_t)1u << 3)
#define GEX_EP_CAPABILITY_AD ((gex_EP_Capabilities_t)1u << 4)
#define GEX_EP_CAPABILITY_ALL ((gex_EP_Capabilities_t)0x1fu)

/* An endpoint's place in the job: its process's job rank and its index
 * among that process's endpoints (0: the primordial one). */
typedef struct {
  gex_Rank_t gex_rank;
  gex_EP_Index_t gex_ep_index;
} gex_EP_Location_t;

/* Memory kinds. GEX_MK_HOST is ordinary host memory, the only kind here
 * (gasnet_mk.h creates kinds; the host class gives GEX_MK_HOST). */
#define GEX_MK_INVALID ((gex_MK_t)(uintptr_t)0)
#define GEX_MK_HOST ((gex_MK_t)(uintptr_t)1)

/* One contiguous piece of memory (VIS vector calls). */
typedef struct {
  void *gex_addr;
  size_t gex_len;
} gex_Memvec_t;

/* A progress thread GASNet asks the client to run (with
 * GEX_FLAG_DEFER_THREADS): call gex_progress_fn(gex_progress_arg) on a
 * thread of the client's, for the roles named (receive, send). */
typedef unsigned int gex_ThreadRoles_t;
#define GEX_THREAD_ROLE_RCV ((gex_ThreadRoles_t)1u << 0)
#define GEX_THREAD_ROLE_SND ((gex_ThreadRoles_t)1u << 1)
typedef struct {
  gex_ThreadRoles_t gex_thread_roles;
  const char *gex_device_list;
  void *(*gex_progress_fn)(void *);
  void *gex_progress_arg;
} gex_ProgressThreadInfo_t;

/* Events. GEX_EVENT_INVALID is an event that has already completed;
 * GEX_EVENT_NO_OP one that never needs waiting. The lc_opt constants
 * choose local completion for an AM or RMA call. */
#define GEX_EVENT_INVALID ((gex_Event_t)(uintptr_t)0)
#define GEX_EVENT_NO_OP ((gex_Event_t)(uintptr_t)1)
#define GEX_EVENT_NOW ((gex_Event_t *)(uintptr_t)1)
#define GEX_EVENT_DEFER ((gex_Event_t *)(uintptr_t)2)
#define GEX_EVENT_GROUP ((gex_Event_t *)(uintptr_t)3)

/* Return codes. */
#define GASNET_OK 0
#define _GASNET_ERR_BASE 10000
#define GASNET_ERR_NOT_INIT (_GASNET_ERR_BASE + 1)
#define GASNET_ERR_RESOURCE (_GASNET_ERR_BASE + 2)
#define GASNET_ERR_BAD_ARG (_GASNET_ERR_BASE + 3)
#define GASNET_ERR_NOT_READY (_GASNET_ERR_BASE + 4)
#define GASNET_ERR_BARRIER_MISMATCH (_GASNET_ERR_BASE + 5)

/* The name ("GASNET_ERR_BAD_ARG") and a description of a return code. */
extern const char *gasnet_ErrorName(int errval);
extern const char *gasnet_ErrorDesc(int errval);

/* ---------------------------------------------------------------------- */
/* Flags. As the specification allows, the bits a given call accepts are
 * disjoint, but flags that no one call accepts together may share a bit:
 * the point-to-point flags (RMA, AM, VIS, gex_AD_Op*) use bits 0-7, 13-15
 * and 18-25; gex_AD_Create 26-28; endpoint hints 29-30; the Destroy calls
 * 31; team construction (gex_TM_Split/Create) reuses 8-14, which only
 * handler registration and point-to-point calls use otherwise. The flags
 * below GEX_FLAG_PEER_SEG_UNKNOWN are plain unsigned constants, usable in
 * #if (clients test GEX_FLAG_PEER_NEVER_SELF that way). */

#define GEX_FLAG_IMMEDIATE ((gex_Flags_t)1u << 0)
#define GEX_FLAG_AM_PREPARE_LEAST_CLIENT ((gex_Flags_t)1u << 1)
#define GEX_FLAG_AM_PREPARE_LEAST_ALLOC ((gex_Flags_t)1u << 2)
#define GEX_FLAG_ENABLE_LEAF_LC ((gex_Flags_t)1u << 3)
#define GEX_FLAG_RANK_IS_JOBRANK ((gex_Flags_t)1u << 4)
#define GEX_FLAG_SELF_SEG_UNKNOWN ((gex_Flags_t)1u << 5)
#define GEX_FLAG_PEER_SEG_UNKNOWN ((gex_Flags_t)1u << 6)
/* Where the local (SELF) and remote (PEER) addresses of a point-to-point
 * call lie: UNKNOWN (the default) says nothing; SOME in some segment of
 * the client; BOUND in the segment bound to the endpoint; OFFSET: the
 * address is an offset into that bound segment [not supported here]. */
#define GEX_FLAG_SELF_SEG_SOME (1u << 7)
#define GEX_FLAG_SELF_SEG_BOUND (1u << 13)
#define GEX_FLAG_SELF_SEG_OFFSET (1u << 14)
#define GEX_FLAG_PEER_SEG_SOME (1u << 15)
#define GEX_FLAG_PEER_SEG_BOUND (1u << 18)
#define GEX_FLAG_PEER_SEG_OFFSET (1u << 19)
/* Assertions that the peer is never this rank / never in this rank's
 * neighbourhood (shared-memory peers). */
#define GEX_FLAG_PEER_NEVER_SELF (1u << 20)
#define GEX_FLAG_PEER_NEVER_NBRHD (1u << 21)

/* Remote atomics (gasnet_ratomic.h). gex_AD_Op*: ACQ and REL fences (zero,
 * one or both); MY_RANK or MY_NBRHD (at most one) asserts that the target
 * is this rank's memory or its neighbourhood's. gex_AD_Create: at most one
 * FAVOR_* bias for the implementation chosen. */
#define GEX_FLAG_AD_ACQ (1u << 22)
#define GEX_FLAG_AD_REL (1u << 23)
#define GEX_FLAG_AD_MY_RANK (1u << 24)
#define GEX_FLAG_AD_MY_NBRHD (1u << 25)
#define GEX_FLAG_AD_FAVOR_MY_RANK (1u << 26)
#define GEX_FLAG_AD_FAVOR_MY_NBRHD (1u << 27)
#define GEX_FLAG_AD_FAVOR_REMOTE (1u << 28)

/* Endpoint creation hints: which services the client wants accelerated. */
#define GEX_FLAG_HINT_ACCEL_AD (1u << 29)
#define GEX_FLAG_HINT_ACCEL_COLL (1u << 30)
#define GEX_FLAG_HINT_ACCEL_ALL \
  (GEX_FLAG_HINT_ACCEL_AD | GEX_FLAG_HINT_ACCEL_COLL)

/* gex_TM_Destroy, gex_Segment_Destroy: the caller asserts that no
 * communication on the object is still in flight anywhere. */
#define GEX_FLAG_GLOBALLY_QUIESCED (1u << 31)

/* Team construction (gex_TM_Split, gex_TM_Create): where the team's
 * scratch space comes from (GLOBAL: the collective's callers' segments;
 * LOCAL: this rank's; SYMMETRIC: the same offset everywhere; NO_SCRATCH:
 * none), and the size queries (SCRATCH_SIZE_MIN / _RECOMMENDED: return the
 * size instead of creating). SCRATCH_SEG_OFFSET: the scratch address is
 * an offset into the bound segment. */
#define GEX_FLAG_TM_GLOBAL_SCRATCH (1u << 8)
#define GEX_FLAG_TM_LOCAL_SCRATCH (1u << 9)
#define GEX_FLAG_TM_SYMMETRIC_SCRATCH (1u << 10)
#define GEX_FLAG_TM_NO_SCRATCH (1u << 11)
#define GEX_FLAG_TM_SCRATCH_SIZE_MIN (1u << 12)
#define GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED (1u << 13)
#define GEX_FLAG_SCRATCH_SEG_OFFSET (1u << 14)

/* Handler registration: category and kind. */
#define GEX_FLAG_AM_SHORT ((gex_Flags_t)1u << 8)
#define GEX_FLAG_AM_MEDIUM ((gex_Flags_t)1u << 9)
#define GEX_FLAG_AM_LONG ((gex_Flags_t)1u << 10)
#define GEX_FLAG_AM_MEDLONG (GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_LONG)
#define GEX_FLAG_AM_REQUEST ((gex_Flags_t)1u << 11)
#define GEX_FLAG_AM_REPLY ((gex_Flags_t)1u << 12)
#define GEX_FLAG_AM_REQREP (GEX_FLAG_AM_REQUEST | GEX_FLAG_AM_REPLY)

/* gex_Client_Init. */
#define GEX_FLAG_USES_GASNET1 ((gex_Flags_t)1u << 16)
#define GEX_FLAG_DEFER_THREADS ((gex_Flags_t)1u << 17)

/* ---------------------------------------------------------------------- */
/* Client, endpoint, team, segment. */

/* Starts this process's part of the job (every rank calls it, once): joins
 * the launcher's job (or, started directly with GASNET_PSHM_NODES=N, starts
 * N-1 more ranks first), maps the supernode's shared memory, and returns
 * the client, its primordial endpoint and the team of all ranks. *argc and
 * *argv (may be NULL) get back the program's own arguments. Returns
 * GASNET_OK or an error code (after printing why). */
#define gex_Client_Init _GEX_MODE_SYMBOL(_gex_Client_Init_)
#define _GEX_MODE_SYMBOL(prefix) _GEX_MODE_CAT(prefix, GASNETI_THREAD_MODE_SUFFIX)
#define _GEX_MODE_CAT(a, b) _GEX_MODE_CAT2(a, b)
#define _GEX_MODE_CAT2(a, b) a##b
extern int gex_Client_Init(gex_Client_t *client_p, gex_EP_t *ep_p,
                           gex_TM_t *tm_p, const char *client_name, int *argc,
                           char ***argv, gex_Flags_t flags);

extern const char *gex_Client_QueryName(gex_Client_t client);
extern gex_Flags_t gex_Client_QueryFlags(gex_Client_t client);
extern void *gex_Client_QueryCData(gex_Client_t client);
extern void gex_Client_SetCData(gex_Client_t client, const void *cdata);

/* Allocates and attaches this rank's segment of `length` bytes (rounded up
 * to pages) and binds it to tm's endpoint. Collective over tm. */
extern int gex_Segment_Attach(gex_Segment_t *segment_p, gex_TM_t tm,
                              uintptr_t length);
extern gex_Client_t gex_Segment_QueryClient(gex_Segment_t segment);
extern gex_Flags_t gex_Segment_QueryFlags(gex_Segment_t segment);
extern void *gex_Segment_QueryCData(gex_Segment_t segment);
extern void gex_Segment_SetCData(gex_Segment_t segment, const void *cdata);
extern void *gex_Segment_QueryAddr(gex_Segment_t segment);
extern uintptr_t gex_Segment_QuerySize(gex_Segment_t segment);

extern gex_Client_t gex_EP_QueryClient(gex_EP_t ep);
extern gex_Flags_t gex_EP_QueryFlags(gex_EP_t ep);
extern void *gex_EP_QueryCData(gex_EP_t ep);
extern void gex_EP_SetCData(gex_EP_t ep, const void *cdata);
extern gex_Segment_t gex_EP_QuerySegment(gex_EP_t ep);
extern gex_EP_Index_t gex_EP_QueryIndex(gex_EP_t ep);

/* Where `rank`'s bound segment is: its base as the owner sees it, as this
 * process sees it (NULL when it is not mapped here), and its size. Any
 * output pointer may be NULL. Completes at once (returns
 * GEX_EVENT_INVALID). */
extern gex_Event_t gex_EP_QueryBoundSegmentNB(gex_TM_t tm, gex_Rank_t rank,
                                              void **owneraddr_p,
                                              void **localaddr_p,
                                              uintptr_t *size_p,
                                              gex_Flags_t flags);

/* Segments and endpoints beyond gex_Segment_Attach (the multi-endpoint and
 * memory-kinds parts of the specification; README, "Segments and
 * endpoints").
 *
 * gex_Segment_Create makes a segment of `length` bytes of host memory
 * (kind GEX_MK_HOST, the only kind here): the client's own at `address`,
 * or, with address NULL, memory allocated here, shared so that supernode
 * peers can map it. It is bound to no endpoint yet. flags must be 0.
 * GASNET_OK, or GASNET_ERR_BAD_ARG / GASNET_ERR_RESOURCE (printed). */
extern int gex_Segment_Create(gex_Segment_t *segment_p, gex_Client_t client,
                              void *address, uintptr_t length, gex_MK_t kind,
                              gex_Flags_t flags);
/* Destroys a segment gex_Segment_Create made (unbinding it). A published
 * segment only with GEX_FLAG_GLOBALLY_QUIESCED (the client asserts no
 * communication on it is in flight anywhere); the primordial endpoint's
 * never. Misuse is fatal, naming the call. */
extern void gex_Segment_Destroy(gex_Segment_t segment, gex_Flags_t flags);
/* The segment's memory kind (GEX_MK_HOST). */
extern gex_MK_t gex_Segment_QueryKind(gex_Segment_t segment);
/* Where the segment bound to the endpoint (tm, rank) is: its base as its
 * owner sees it, as this process sees it (NULL when not mapped here) and
 * its size. 0 with the outputs written (any may be NULL); non-zero, with
 * nothing written, when that endpoint has no bound segment or (a remote
 * one) its segment was not published to this process. */
extern int gex_Segment_QueryBound(gex_TM_t tm, gex_Rank_t rank,
                                  void **owneraddr_p, void **localaddr_p,
                                  uintptr_t *size_p);

/* Makes an additional endpoint of `client`, index 1, 2, ... in creation
 * order (up to GASNET_MAXEPS per process). Supported capabilities:
 * GEX_EP_CAPABILITY_RMA only; any other is refused with GASNET_ERR_BAD_ARG.
 * flags must be 0. */
extern int gex_EP_Create(gex_EP_t *ep_p, gex_Client_t client,
                         gex_EP_Capabilities_t capabilities,
                         gex_Flags_t flags);
/* Binds `segment` (from gex_Segment_Create) to `ep`: once per endpoint and
 * per segment. The primordial endpoint (if gex_Segment_Attach was not
 * called) takes a segment allocated here (address NULL) when it has
 * supernode peers. flags must be 0. Returns GASNET_OK; misuse is fatal,
 * naming the call (as GASNet-EX's debug build makes it). */
extern int gex_EP_BindSegment(gex_EP_t ep, gex_Segment_t segment,
                               gex_Flags_t flags);
/* Collective over tm (the primordial team or a sub-team; a gex_TM_Pair is
 * refused): publishes the segments bound to eps[0..num_eps) (an endpoint
 * with none publishes nothing), so that every member may address them.
 * num_eps may differ by rank. The primordial endpoint's segment is
 * published over the primordial team. flags must be 0. GASNET_OK,
 * GASNET_ERR_BAD_ARG (on every member when any member's arguments were
 * bad) or GASNET_ERR_RESOURCE. */
extern int gex_EP_PublishBoundSegment(gex_TM_t tm, gex_EP_t *eps,
                                      size_t num_eps, gex_Flags_t flags);

/* The (job rank, endpoint index) of member `rank` of tm. flags must be 0. */
extern gex_EP_Location_t gex_TM_TranslateRankToEP(gex_TM_t tm,
                                                  gex_Rank_t rank,
                                                  gex_Flags_t flags);

/* The progress threads the client is asked to run (GEX_FLAG_DEFER_THREADS):
 * none here, so *count_p is 0 (and *info_p an empty array). GASNET_OK. */
extern int gex_System_QueryProgressThreads(
    gex_Client_t client, unsigned int *count_p,
    const gex_ProgressThreadInfo_t **info_p, gex_Flags_t flags);

extern gex_Client_t gex_TM_QueryClient(gex_TM_t tm);
extern gex_EP_t gex_TM_QueryEP(gex_TM_t tm);
extern gex_Flags_t gex_TM_QueryFlags(gex_TM_t tm);
extern void *gex_TM_QueryCData(gex_TM_t tm);
extern void gex_TM_SetCData(gex_TM_t tm, const void *cdata);
extern gex_Rank_t gex_TM_QueryRank(gex_TM_t tm);
extern gex_Rank_t gex_TM_QuerySize(gex_TM_t tm);
extern gex_Rank_t gex_TM_TranslateRankToJobrank(gex_TM_t tm, gex_Rank_t rank);
extern gex_Rank_t gex_TM_TranslateJobrankToRank(gex_TM_t tm,
                                                gex_Rank_t jobrank);

/* Teams. gex_TM_Split (collective over parent_tm) makes one team per
 * colour from the callers with that colour, ordered by key then by parent
 * rank; a caller passing NULL new_tm_p takes part but joins none (whatever
 * its colour), and one with GEX_TM_NO_COLOR (or any negative colour: the
 * specification asks for non-negative colours, this is our extension)
 * joins none and gets GEX_TM_INVALID. gex_TM_Create (collective over
 * parent_tm): each caller names its new team's members in team order
 * (parent ranks, or job ranks with GEX_FLAG_RANK_IS_JOBRANK; primordial
 * endpoints only), the same list on every member; a caller with numargs 0
 * joins none. With GEX_FLAG_TM_SCRATCH_SIZE_RECOMMENDED (or the deprecated
 * _MIN; not both) either call is a collective query that makes nothing and
 * writes nothing: it returns the scratch size to pass (4096 here, _MIN 64,
 * the same on every caller) to a caller that would join a team, 0 to one
 * that would not. The scratch a caller passes is accepted, left untouched
 * and handed back by gex_TM_Destroy. gex_TM_Destroy (collective over the
 * team) ends a sub-team; it returns non-zero when it filled *scratch_p.
 * gex_TM_Pair names the pair (local_ep, the endpoint remote_ep_index of
 * whichever rank a call addresses): no collective creation, ranks are job
 * ranks, no collectives, not destroyed. Ranks in every call on a sub-team
 * are team ranks. Misuse (a destroyed or unknown team) is a fatal error
 * naming the call. */
#define GEX_TM_NO_COLOR (-1)
typedef void *gex_Addr_t;
extern size_t gex_TM_Split(gex_TM_t *new_tm_p, gex_TM_t parent_tm, int color,
                           int key, void *scratch_addr, size_t scratch_size,
                           gex_Flags_t flags);
extern size_t gex_TM_Create(gex_TM_t *new_tms, size_t num_new_tms,
                            gex_TM_t parent_tm, gex_EP_Location_t *args,
                            size_t numargs, gex_Addr_t *scratch_addrs,
                            size_t scratch_size, gex_Flags_t flags);
extern int gex_TM_Destroy(gex_TM_t tm, gex_Memvec_t *scratch_p,
                          gex_Flags_t flags);
extern gex_TM_t gex_TM_Pair(gex_EP_t local_ep, gex_EP_Index_t remote_ep_index);

/* ---------------------------------------------------------------------- */
/* The job and where this rank sits in it. */

typedef const struct {
  gex_Rank_t gex_jobrank;
} gex_RankInfo_t;

extern gex_Rank_t gex_System_QueryJobRank(void);
extern gex_Rank_t gex_System_QueryJobSize(void);
/* The ranks sharing this rank's host (neighbourhood: its supernode), in
 * job-rank order, their count, and this rank's index among them. */
extern void gex_System_QueryHostInfo(gex_RankInfo_t **info_p,
                                     gex_Rank_t *info_count_p,
                                     gex_Rank_t *my_info_index_p);
extern void gex_System_QueryNbrhdInfo(gex_RankInfo_t **info_p,
                                      gex_Rank_t *info_count_p,
                                      gex_Rank_t *my_info_index_p);
extern void gex_System_QueryMyPosition(gex_Rank_t *nbrhd_set_size_p,
                                       gex_Rank_t *nbrhd_set_rank_p,
                                       gex_Rank_t *host_set_size_p,
                                       gex_Rank_t *host_set_rank_p);
extern int gex_System_QueryHiddenAMConcurrencyLevel(void);
extern uint64_t gex_System_QueryMaxThreads(void);
/* Whether errors returned by API calls are also printed (default on). */
extern void gex_System_SetVerboseErrors(int enable);
extern int gex_System_GetVerboseErrors(void);

/* ---------------------------------------------------------------------- */
/* Active Messages. */

/* Handlers are called as
 *   Short:  fn(gex_Token_t token, gex_AM_Arg_t a0, ...)
 *   Medium: fn(gex_Token_t token, void *buf, size_t nbytes, a0, ...)
 *   Long:   fn(gex_Token_t token, void *buf, size_t nbytes, a0, ...) */
typedef void (*gex_AM_Fn_t)();

typedef struct {
  gex_AM_Index_t gex_index; /* 0 on input: pick a free index */
  gex_AM_Fn_t gex_fnptr;
  gex_Flags_t gex_flags;  /* GEX_FLAG_AM_{SHORT,MEDIUM,LONG,MEDLONG} and
                             GEX_FLAG_AM_{REQUEST,REPLY,REQREP} */
  unsigned int gex_nargs; /* 0..16 */
  const void *gex_cdata;  /* for the handler (gex_Token_Info) */
  const char *gex_name;   /* for messages */
} gex_AM_Entry_t;

/* Client handler indices. 0 in gex_index asks for one to be assigned (the
 * entry is updated with it). Indices below are reserved for GASNet. */
#define GEX_AM_INDEX_BASE 128

/* Registers `numentries` handlers with the endpoint. Returns GASNET_OK or
 * GASNET_ERR_BAD_ARG (a used index, no free index, bad flags or nargs). */
extern int gex_EP_RegisterHandlers(gex_EP_t ep, gex_AM_Entry_t *table,
                                   size_t numentries);

typedef struct {
  gex_Rank_t gex_srcrank;
  gex_EP_t gex_ep;
  const gex_AM_Entry_t *gex_entry;
  int gex_is_req;
  int gex_is_long;
} gex_Token_Info_t;

#define GEX_TI_SRCRANK ((gex_TI_t)1u << 0)
#define GEX_TI_ENTRY ((gex_TI_t)1u << 1)
#define GEX_TI_IS_REQ ((gex_TI_t)1u << 2)
#define GEX_TI_IS_LONG ((gex_TI_t)1u << 3)
#define GEX_TI_EP ((gex_TI_t)1u << 4)
#define GEX_TI_ALL (((gex_TI_t)1u << 5) - 1)

/* Fills the fields of `mask` that this implementation knows (all of them)
 * and returns which it filled. */
extern gex_TI_t gex_Token_Info(gex_Token_t token, gex_Token_Info_t *info,
                               gex_TI_t mask);

/* Limits. The LUB forms hold for every peer and option; the others may be
 * larger for a given peer (GEX_RANK_INVALID: any peer), lc_opt and flags. */
extern unsigned int gex_AM_MaxArgs(void);
extern size_t gex_AM_LUBRequestMedium(void);
extern size_t gex_AM_LUBReplyMedium(void);
extern size_t gex_AM_LUBRequestLong(void);
extern size_t gex_AM_LUBReplyLong(void);
extern size_t gex_AM_MaxRequestMedium(gex_TM_t tm, gex_Rank_t rank,
                                      const gex_Event_t *lc_opt,
                                      gex_Flags_t flags, unsigned int nargs);
extern size_t gex_AM_MaxReplyMedium(gex_TM_t tm, gex_Rank_t rank,
                                    const gex_Event_t *lc_opt,
                                    gex_Flags_t flags, unsigned int nargs);
extern size_t gex_AM_MaxRequestLong(gex_TM_t tm, gex_Rank_t rank,
                                    const gex_Event_t *lc_opt,
                                    gex_Flags_t flags, unsigned int nargs);
extern size_t gex_AM_MaxReplyLong(gex_TM_t tm, gex_Rank_t rank,
                                  const gex_Event_t *lc_opt, gex_Flags_t flags,
                                  unsigned int nargs);
extern size_t gex_Token_MaxReplyMedium(gex_Token_t token,
                                       const gex_Event_t *lc_opt,
                                       gex_Flags_t flags, unsigned int nargs);
extern size_t gex_Token_MaxReplyLong(gex_Token_t token,
                                     const gex_Event_t *lc_opt,
                                     gex_Flags_t flags, unsigned int nargs);

/* The out-of-line entry points behind every fixed-arity call. They return 0
 * once the message is on its way (its source buffer may be reused at once:
 * local completion is synchronous, and an lc_opt event pointer gets
 * GEX_EVENT_INVALID), or non-zero with GEX_FLAG_IMMEDIATE when it would
 * have had to wait for queue space. */
extern int _gex_AM_RequestShortV(gex_TM_t tm, gex_Rank_t rank,
                                 gex_AM_Index_t handler, gex_Flags_t flags,
                                 unsigned int nargs, const gex_AM_Arg_t *args);
extern int _gex_AM_RequestMediumV(gex_TM_t tm, gex_Rank_t rank,
                                  gex_AM_Index_t handler,
                                  const void *source_addr, size_t nbytes,
                                  gex_Event_t *lc_opt, gex_Flags_t flags,
                                  unsigned int nargs,
                                  const gex_AM_Arg_t *args);
extern int _gex_AM_RequestLongV(gex_TM_t tm, gex_Rank_t rank,
                                gex_AM_Index_t handler,
                                const void *source_addr, size_t nbytes,
                                void *dest_addr, gex_Event_t *lc_opt,
                                gex_Flags_t flags, unsigned int nargs,
                                const gex_AM_Arg_t *args);
extern int _gex_AM_ReplyShortV(gex_Token_t token, gex_AM_Index_t handler,
                               gex_Flags_t flags, unsigned int nargs,
                               const gex_AM_Arg_t *args);
extern int _gex_AM_ReplyMediumV(gex_Token_t token, gex_AM_Index_t handler,
                                const void *source_addr, size_t nbytes,
                                gex_Event_t *lc_opt, gex_Flags_t flags,
                                unsigned int nargs, const gex_AM_Arg_t *args);
extern int _gex_AM_ReplyLongV(gex_Token_t token, gex_AM_Index_t handler,
                              const void *source_addr, size_t nbytes,
                              void *dest_addr, gex_Event_t *lc_opt,
                              gex_Flags_t flags, unsigned int nargs,
                              const gex_AM_Arg_t *args);

/* Negotiated-payload AMs: Prepare reserves room for between least_payload
 * and most_payload bytes (client_buf NULL: in a GASNet buffer, written at
 * gex_AM_SrcDescAddr; else the payload is read from client_buf at Commit),
 * then exactly one Commit (with nbytes <= gex_AM_SrcDescSize) or Cancel.
 * Returns GEX_AM_SRCDESC_NO_OP only with GEX_FLAG_IMMEDIATE. */
extern gex_AM_SrcDesc_t gex_AM_PrepareRequestMedium(
    gex_TM_t tm, gex_Rank_t rank, const void *client_buf, size_t least_payload,
    size_t most_payload, gex_Event_t *lc_opt, gex_Flags_t flags,
    unsigned int nargs);
extern gex_AM_SrcDesc_t gex_AM_PrepareReplyMedium(
    gex_Token_t token, const void *client_buf, size_t least_payload,
    size_t most_payload, gex_Event_t *lc_opt, gex_Flags_t flags,
    unsigned int nargs);
extern gex_AM_SrcDesc_t gex_AM_PrepareRequestLong(
    gex_TM_t tm, gex_Rank_t rank, const void *client_buf, size_t least_payload,
    size_t most_payload, void *dest_addr, gex_Event_t *lc_opt,
    gex_Flags_t flags, unsigned int nargs);
extern gex_AM_SrcDesc_t gex_AM_PrepareReplyLong(
    gex_Token_t token, const void *client_buf, size_t least_payload,
    size_t most_payload, void *dest_addr, gex_Event_t *lc_opt,
    gex_Flags_t flags, unsigned int nargs);
extern void *gex_AM_SrcDescAddr(gex_AM_SrcDesc_t sd);
extern size_t gex_AM_SrcDescSize(gex_AM_SrcDesc_t sd);
extern void _gex_AM_CommitRequestMediumV(gex_AM_SrcDesc_t sd,
                                         gex_AM_Index_t handler,
                                         size_t nbytes, unsigned int nargs,
                                         const gex_AM_Arg_t *args);
extern void _gex_AM_CommitReplyMediumV(gex_AM_SrcDesc_t sd,
                                       gex_AM_Index_t handler, size_t nbytes,
                                       unsigned int nargs,
                                       const gex_AM_Arg_t *args);
extern void _gex_AM_CommitRequestLongV(gex_AM_SrcDesc_t sd,
                                       gex_AM_Index_t handler, size_t nbytes,
                                       void *dest_addr, unsigned int nargs,
                                       const gex_AM_Arg_t *args);
extern void _gex_AM_CommitReplyLongV(gex_AM_SrcDesc_t sd,
                                     gex_AM_Index_t handler, size_t nbytes,
                                     void *dest_addr, unsigned int nargs,
                                     const gex_AM_Arg_t *args);
/* Releases a prepared message unsent. Returns GASNET_OK. */
extern int gex_AM_CancelRequestMedium(gex_AM_SrcDesc_t sd, gex_Flags_t flags);
extern int gex_AM_CancelReplyMedium(gex_AM_SrcDesc_t sd, gex_Flags_t flags);
extern int gex_AM_CancelRequestLong(gex_AM_SrcDesc_t sd, gex_Flags_t flags);
extern int gex_AM_CancelReplyLong(gex_AM_SrcDesc_t sd, gex_Flags_t flags);

/* Runs the handlers of messages that have arrived. */
extern int gasnet_AMPoll(void);
#define gex_AM_Poll() gasnet_AMPoll()

/* Polls until `cond` holds, yielding the CPU between polls when this host
 * has more ranks than CPUs or the wait mode is GASNET_WAIT_BLOCK. */
extern void _gex_PollForWait(void);
#define GASNET_BLOCKUNTIL(cond) \
  do {                          \
    while (!(cond)) {           \
      _gex_PollForWait();       \
    }                           \
  } while (0)

/* ---------------------------------------------------------------------- */
/* Events. */

/* GASNET_OK when `event` has completed (it is then released), else
 * GASNET_ERR_NOT_READY. */
extern int gex_Event_Test(gex_Event_t event);
extern void gex_Event_Wait(gex_Event_t event);
/* Over arrays: *Some returns GASNET_OK when at least one completed (those
 * entries become GEX_EVENT_INVALID); *All when every one did. */
extern int gex_Event_TestSome(gex_Event_t *events, size_t num_events,
                              gex_Flags_t flags);
extern int gex_Event_TestAll(gex_Event_t *events, size_t num_events,
                             gex_Flags_t flags);
extern void gex_Event_WaitSome(gex_Event_t *events, size_t num_events,
                               gex_Flags_t flags);
extern void gex_Event_WaitAll(gex_Event_t *events, size_t num_events,
                              gex_Flags_t flags);

/* ---------------------------------------------------------------------- */
/* Barrier over a team. */

extern gex_Event_t gex_Coll_BarrierNB(gex_TM_t tm, gex_Flags_t flags);
extern void gex_Coll_BarrierBlocking(gex_TM_t tm, gex_Flags_t flags);

/* ---------------------------------------------------------------------- */
/* Data types and operation codes (reductions; the atomics' codes are
 * defined too so that clients may test for them). Every value is its own
 * bit, so values combine with bitwise OR. */

#define GEX_DT_I32 (1u << 0)  /* int32_t */
#define GEX_DT_U32 (1u << 1)  /* uint32_t */
#define GEX_DT_I64 (1u << 2)  /* int64_t */
#define GEX_DT_U64 (1u << 3)  /* uint64_t */
#define GEX_DT_FLT (1u << 4)  /* float */
#define GEX_DT_DBL (1u << 5)  /* double */
#define GEX_DT_USER (1u << 6) /* opaque bytes, reductions only */

/* A non-fetching opcode in bits 0-11 and its fetching form 12 bits up. */
#define GEX_OP_ADD (1u << 0)
#define GEX_OP_MULT (1u << 1)
#define GEX_OP_MIN (1u << 2)
#define GEX_OP_MAX (1u << 3)
#define GEX_OP_SUB (1u << 4)
#define GEX_OP_INC (1u << 5)
#define GEX_OP_DEC (1u << 6)
#define GEX_OP_AND (1u << 7)
#define GEX_OP_OR (1u << 8)
#define GEX_OP_XOR (1u << 9)
#define GEX_OP_SET (1u << 10)
#define GEX_OP_CAS (1u << 11)
#define GEX_OP_FADD (GEX_OP_ADD << 12)
#define GEX_OP_FMULT (GEX_OP_MULT << 12)
#define GEX_OP_FMIN (GEX_OP_MIN << 12)
#define GEX_OP_FMAX (GEX_OP_MAX << 12)
#define GEX_OP_FSUB (GEX_OP_SUB << 12)
#define GEX_OP_FINC (GEX_OP_INC << 12)
#define GEX_OP_FDEC (GEX_OP_DEC << 12)
#define GEX_OP_FAND (GEX_OP_AND << 12)
#define GEX_OP_FOR (GEX_OP_OR << 12)
#define GEX_OP_FXOR (GEX_OP_XOR << 12)
#define GEX_OP_SWAP (GEX_OP_SET << 12)
#define GEX_OP_FCAS (GEX_OP_CAS << 12)
#define GEX_OP_CSWAP GEX_OP_FCAS /* the deprecated name */
#define GEX_OP_GET (1u << 24)
#define GEX_OP_USER (1u << 25)    /* associative and commutative */
#define GEX_OP_USER_NC (1u << 26) /* associative only: applied in rank order */
#define GEX_OP_TO_FETCHING(op) ((gex_OP_t)((op) << 12))
#define GEX_OP_TO_NONFETCHING(op) ((gex_OP_t)((op) >> 12))

/* ---------------------------------------------------------------------- */
/* Collectives over a team (the job team here). Each call is collective:
 * every rank makes the same calls in the same order, with the same
 * single-valued arguments (root, nbytes, dt, dt_sz, dt_cnt, op). Each
 * returns a root event for gex_Event_Test/Wait (GEX_EVENT_INVALID when
 * there is nothing to do: nbytes or dt_cnt 0). Several may be in flight
 * and be completed in any order. src and dst may be any memory; src must
 * stay unchanged, and dst unread, until the event completes. flags: none
 * defined (pass 0).
 *
 * Misuse is a fatal error naming the call: a root outside the team, an
 * unknown dt or op, an op the type does not take (AND/OR/XOR on FLT or DBL,
 * a built-in op on GEX_DT_USER, a fetching or atomic-only op), dt_sz not
 * the built-in type's size, dt_sz * dt_cnt overflowing or a buffer that
 * wraps the address space, a NULL buffer that is needed, a call from an AM
 * handler. */

/* Combines `count` elements: arg2_and_out[i] = arg1[i] (+) arg2_and_out[i].
 * arg1 holds the left operands. May be called on any thread, any number of
 * times, with any count; it must not call GASNet. */
typedef void (*gex_Coll_ReduceFn_t)(const void *arg1, void *arg2_and_out,
                                    size_t count, const void *cdata);

/* Copies nbytes from src on `root` to dst on every rank (the root copies
 * src to dst unless they are equal; src is ignored elsewhere). */
extern gex_Event_t gex_Coll_BroadcastNB(gex_TM_t tm, gex_Rank_t root,
                                        void *dst, const void *src,
                                        size_t nbytes, gex_Flags_t flags);
/* dst[i] on `root` = src[i] of rank 0 (+) src[i] of rank 1 ... (+) rank N-1,
 * for i < dt_cnt. dst is ignored elsewhere; src == dst is allowed on the
 * root. With GEX_OP_USER/USER_NC, user_op(.., user_cdata) is the operator
 * (USER_NC: applied strictly in rank order). */
extern gex_Event_t gex_Coll_ReduceToOneNB(gex_TM_t tm, gex_Rank_t root,
                                          void *dst, const void *src,
                                          gex_DT_t dt, size_t dt_sz,
                                          size_t dt_cnt, gex_OP_t op,
                                          gex_Coll_ReduceFn_t user_op,
                                          void *user_cdata, gex_Flags_t flags);
/* The same result in dst on every rank (src == dst on all ranks or none). */
extern gex_Event_t gex_Coll_ReduceToAllNB(gex_TM_t tm, void *dst,
                                          const void *src, gex_DT_t dt,
                                          size_t dt_sz, size_t dt_cnt,
                                          gex_OP_t op,
                                          gex_Coll_ReduceFn_t user_op,
                                          void *user_cdata, gex_Flags_t flags);

/* ---------------------------------------------------------------------- */
/* Handler-safe locks: the only locks a handler may take. */

typedef struct {
  pthread_mutex_t gex_mutex;
} gex_HSL_t;
#define GEX_HSL_INITIALIZER \
  { PTHREAD_MUTEX_INITIALIZER }
extern void gex_HSL_Init(gex_HSL_t *hsl);
extern void gex_HSL_Destroy(gex_HSL_t *hsl);
extern void gex_HSL_Lock(gex_HSL_t *hsl);
extern void gex_HSL_Unlock(gex_HSL_t *hsl);
/* GASNET_OK, or GASNET_ERR_NOT_READY when held. */
extern int gex_HSL_Trylock(gex_HSL_t *hsl);

/* ---------------------------------------------------------------------- */
/* Leaving. */

/* Ends the whole job with `exitcode`: every rank exits, and the launcher
 * reports `exitcode` (the first one given, when several ranks call it). */
extern void gasnet_exit(int exitcode)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

/* ---------------------------------------------------------------------- */
/* One-sided RMA: Put and Get, with explicit events (NB), implicit events
 * (NBI) and access regions.
 *
 * The remote range (dest of a Put, src of a Get) must lie in the bound
 * segment of rank `rank` (its owner's addresses); the local range need not
 * be in any segment. nbytes 0 does nothing. Blocking and NBI calls return
 * 0, NB calls an event; with GEX_FLAG_IMMEDIATE a call that would have to
 * wait for resources may instead do nothing and return non-zero (NB:
 * GEX_EVENT_NO_OP). A copy to or from a peer whose segment is mapped here
 * (every peer on smp) is done before the call returns: NB calls then
 * return GEX_EVENT_INVALID and never refuse an IMMEDIATE call.
 *
 * lc_opt (local completion of a Put's source): GEX_EVENT_NOW (complete on
 * return), GEX_EVENT_DEFER (by the time the operation completes),
 * GEX_EVENT_GROUP (NBI only: counted for gex_NBI_Test/Wait(GEX_EC_LC) or
 * the enclosing access region's leaf), or, for NB calls, a pointer that
 * receives a leaf event (GEX_EVENT_INVALID when already complete).
 *
 * Misuse is a fatal error naming the call: a rank outside the team, a
 * remote range outside the peer's segment, nbytes that wraps an address,
 * an lc_opt the call does not take, a call from an AM handler. */

/* Event categories, for gex_NBI_Test/Wait masks and gex_Event_QueryLeaf. */
typedef unsigned int gex_EC_t;
#define GEX_EC_GET ((gex_EC_t)1u << 0)
#define GEX_EC_PUT ((gex_EC_t)1u << 1)
#define GEX_EC_AM ((gex_EC_t)1u << 2)
#define GEX_EC_LC ((gex_EC_t)1u << 3)
#define GEX_EC_RMW ((gex_EC_t)1u << 4)
#define GEX_EC_ALL ((gex_EC_t)0x1fu)

#define SIZEOF_GEX_RMA_VALUE_T 8

/* gex_RMA_Put{Blocking,NBI,NB} and gex_RMA_Get{Blocking,NBI,NB} are
 * defined inline below: the copy to or from a peer mapped here is done in
 * the caller, and everything else goes to these out-of-line calls (which
 * check everything again and report misuse under the gex_ name). */
extern int _gex_RMA_PutBlocking(gex_TM_t tm, gex_Rank_t rank, void *dest,
                                const void *src, size_t nbytes,
                                gex_Flags_t flags);
extern int _gex_RMA_PutNBI(gex_TM_t tm, gex_Rank_t rank, void *dest,
                           const void *src, size_t nbytes, gex_Event_t *lc_opt,
                           gex_Flags_t flags);
extern gex_Event_t _gex_RMA_PutNB(gex_TM_t tm, gex_Rank_t rank, void *dest,
                                  const void *src, size_t nbytes,
                                  gex_Event_t *lc_opt, gex_Flags_t flags);
extern int _gex_RMA_GetBlocking(gex_TM_t tm, void *dest, gex_Rank_t rank,
                                void *src, size_t nbytes, gex_Flags_t flags);
extern int _gex_RMA_GetNBI(gex_TM_t tm, void *dest, gex_Rank_t rank, void *src,
                           size_t nbytes, gex_Flags_t flags);
extern gex_Event_t _gex_RMA_GetNB(gex_TM_t tm, void *dest, gex_Rank_t rank,
                                  void *src, size_t nbytes, gex_Flags_t flags);

/* Internal, for the inline path (not part of the API). After
 * gex_Segment_Attach, _gex_direct.peers[r] describes rank r's segment as
 * mapped in this process: its owner's base address and size (0 when it is
 * not mapped here, or when GEX_RMA_FORCE_AM is set) and the distance from
 * the owner's addresses to ours. _gex_am_handler_depth is the calling
 * thread's AM handler depth (RMA is not allowed in a handler). */
typedef struct {
  uintptr_t base;
  uintptr_t size;
  uintptr_t delta;
} _gex_DirectPeer_t;
typedef struct {
  gex_TM_t tm;
  gex_Rank_t size;
  const _gex_DirectPeer_t *peers;
} _gex_Direct_t;
extern _gex_Direct_t _gex_direct;
#if defined(__cplusplus)
extern __thread unsigned _gex_am_handler_depth;
#else
extern _Thread_local unsigned _gex_am_handler_depth;
#endif

/* Where [remote, remote + nbytes) of rank's segment is mapped here, or NULL
 * when the call must go out of line: not a mapped peer, a range not wholly
 * in its segment, a local range that wraps or is NULL, a handler calling,
 * or a debug build (which checks every call in the library). */
static inline void *_gex_RMA_DirectAddress(gex_TM_t tm, gex_Rank_t rank,
                                           const void *remote,
                                           const void *local, size_t nbytes) {
#if defined(GASNET_DEBUG)
  (void)tm;
  (void)rank;
  (void)remote;
  (void)local;
  (void)nbytes;
  return NULL;
#else
  /* The local range cannot wrap once nbytes fits in a segment (far below
   * 2^63) and local lies in the lower half of the address space, where
   * every user mapping is: a sign test instead of an add and a compare.
   * A NULL local buffer fails the same test (> 0), so the library names
   * the call instead of memcpy faulting here. */
  if (tm == _gex_direct.tm && rank < _gex_direct.size &&
      (intptr_t)(uintptr_t)local > 0 && _gex_am_handler_depth == 0) {
    const _gex_DirectPeer_t *peer = &_gex_direct.peers[rank];
    const uintptr_t offset = (uintptr_t)remote - peer->base;
    if (offset < peer->size && nbytes <= peer->size - offset) {
      return (void *)((uintptr_t)remote + peer->delta);
    }
  }
  return NULL;
#endif
}

static inline int gex_RMA_PutBlocking(gex_TM_t tm, gex_Rank_t rank,
                                      void *dest, const void *src,
                                      size_t nbytes, gex_Flags_t flags) {
  void *local_dest = _gex_RMA_DirectAddress(tm, rank, dest, src, nbytes);
  if (local_dest != NULL) {
    memcpy(local_dest, src, nbytes);
    return 0;
  }
  return _gex_RMA_PutBlocking(tm, rank, dest, src, nbytes, flags);
}

static inline int gex_RMA_PutNBI(gex_TM_t tm, gex_Rank_t rank, void *dest,
                                 const void *src, size_t nbytes,
                                 gex_Event_t *lc_opt, gex_Flags_t flags) {
  void *local_dest = _gex_RMA_DirectAddress(tm, rank, dest, src, nbytes);
  /* NBI takes NOW, DEFER or GROUP (1..3); anything else is reported. */
  if (local_dest != NULL && (uintptr_t)lc_opt - 1 <= 2) {
    memcpy(local_dest, src, nbytes);
    return 0;
  }
  return _gex_RMA_PutNBI(tm, rank, dest, src, nbytes, lc_opt, flags);
}

static inline gex_Event_t gex_RMA_PutNB(gex_TM_t tm, gex_Rank_t rank,
                                        void *dest, const void *src,
                                        size_t nbytes, gex_Event_t *lc_opt,
                                        gex_Flags_t flags) {
  void *local_dest = _gex_RMA_DirectAddress(tm, rank, dest, src, nbytes);
  /* NB takes NOW, DEFER or an event pointer (not NULL, not GROUP). */
  if (local_dest != NULL && lc_opt != NULL && lc_opt != GEX_EVENT_GROUP) {
    memcpy(local_dest, src, nbytes);
    if (lc_opt != GEX_EVENT_NOW && lc_opt != GEX_EVENT_DEFER) {
      *lc_opt = GEX_EVENT_INVALID;
    }
    return GEX_EVENT_INVALID;
  }
  return _gex_RMA_PutNB(tm, rank, dest, src, nbytes, lc_opt, flags);
}

static inline int gex_RMA_GetBlocking(gex_TM_t tm, void *dest,
                                      gex_Rank_t rank, void *src,
                                      size_t nbytes, gex_Flags_t flags) {
  const void *local_src = _gex_RMA_DirectAddress(tm, rank, src, dest, nbytes);
  if (local_src != NULL) {
    memcpy(dest, local_src, nbytes);
    return 0;
  }
  return _gex_RMA_GetBlocking(tm, dest, rank, src, nbytes, flags);
}

static inline int gex_RMA_GetNBI(gex_TM_t tm, void *dest, gex_Rank_t rank,
                                 void *src, size_t nbytes, gex_Flags_t flags) {
  const void *local_src = _gex_RMA_DirectAddress(tm, rank, src, dest, nbytes);
  if (local_src != NULL) {
    memcpy(dest, local_src, nbytes);
    return 0;
  }
  return _gex_RMA_GetNBI(tm, dest, rank, src, nbytes, flags);
}

static inline gex_Event_t gex_RMA_GetNB(gex_TM_t tm, void *dest,
                                        gex_Rank_t rank, void *src,
                                        size_t nbytes, gex_Flags_t flags) {
  const void *local_src = _gex_RMA_DirectAddress(tm, rank, src, dest, nbytes);
  if (local_src != NULL) {
    memcpy(dest, local_src, nbytes);
    return GEX_EVENT_INVALID;
  }
  return _gex_RMA_GetNB(tm, dest, rank, src, nbytes, flags);
}

/* Value forms: nbytes (1 to SIZEOF_GEX_RMA_VALUE_T) bytes of `value`, as an
 * unsigned integer of that width in memory; the Get returns the integer
 * read. The value is copied at once, so they take no lc_opt. */
extern gex_RMA_Value_t gex_RMA_GetBlockingVal(gex_TM_t tm, gex_Rank_t rank,
                                              void *src, size_t nbytes,
                                              gex_Flags_t flags);
extern int gex_RMA_PutBlockingVal(gex_TM_t tm, gex_Rank_t rank, void *dest,
                                  gex_RMA_Value_t value, size_t nbytes,
                                  gex_Flags_t flags);
extern int gex_RMA_PutNBIVal(gex_TM_t tm, gex_Rank_t rank, void *dest,
                             gex_RMA_Value_t value, size_t nbytes,
                             gex_Flags_t flags);
extern gex_Event_t gex_RMA_PutNBVal(gex_TM_t tm, gex_Rank_t rank, void *dest,
                                    gex_RMA_Value_t value, size_t nbytes,
                                    gex_Flags_t flags);

/* Implicit-event operations of the calling thread, outside access regions:
 * GASNET_OK when every one of the categories in event_mask has completed
 * (Test), or once they have (Wait). */
extern int gex_NBI_Test(gex_EC_t event_mask, gex_Flags_t flags);
extern void gex_NBI_Wait(gex_EC_t event_mask, gex_Flags_t flags);

/* An access region: the calling thread's NBI calls between Begin and End
 * are covered by the event End returns (GEX_EVENT_INVALID when they have
 * all completed already) instead of by gex_NBI_Test/Wait. Regions do not
 * nest; End without Begin is an error. */
extern void gex_NBI_BeginAccessRegion(gex_Flags_t flags);
extern gex_Event_t gex_NBI_EndAccessRegion(gex_Flags_t flags);

/* The leaf event of `root` for event_category (GEX_EC_LC: local completion
 * of the Puts it covers). GEX_EVENT_INVALID for root GEX_EVENT_INVALID.
 * The leaf lives until the root is synced and may be tested or waited any
 * number of times before that. */
extern gex_Event_t gex_Event_QueryLeaf(gex_Event_t root,
                                       gex_EC_t event_category);

/* ---------------------------------------------------------------------- */
/* GASNet-1 names that GASNet-EX's gasnetex.h exports too (gasnet.h has the
 * rest of the legacy API). */

typedef gex_Rank_t gasnet_node_t;
typedef uint8_t gasnet_handler_t;
typedef gex_Token_t gasnet_token_t;
typedef gex_AM_Arg_t gasnet_handlerarg_t;
typedef gex_RMA_Value_t gasnet_register_value_t;
#define SIZEOF_GASNET_REGISTER_VALUE_T SIZEOF_GEX_RMA_VALUE_T

/* A rank's segment: its base (in its owner's addresses) and size. */
typedef struct {
  void *addr;
  uintptr_t size;
} gasnet_seginfo_t;

/* Where each rank runs, by rank: `host` identifies its host (ranks on one
 * host share the value), `supernode` the ranks it shares memory with (its
 * neighbourhood); `offset` is what to add to an address in that rank's
 * segment to reach it from here (for ranks whose segment is mapped here,
 * once segments are attached; 0 otherwise). Fills min(numentries, ranks)
 * entries. GASNET_OK, or GASNET_ERR_BAD_ARG for a bad table. */
typedef struct {
  gasnet_node_t host;
  gasnet_node_t supernode;
  intptr_t offset;
} gasnet_nodeinfo_t;
extern int gasnet_getNodeInfo(gasnet_nodeinfo_t *nodeinfo_table,
                              int numentries);

/* The largest segment gex_Segment_Attach / gasnet_attach may ask for, on
 * this rank (Local) and on every rank (Global). */
extern uintptr_t gasnet_getMaxLocalSegmentSize(void);
extern uintptr_t gasnet_getMaxGlobalSegmentSize(void);

/* getenv, as the job sees it (a value GASNET_* settings came from). */
extern char *gasnet_getenv(const char *name);

/* Split-phase barrier over all ranks, with optional names. Every rank
 * notifies, then waits (or tries). ANONYMOUS: this rank gives no name
 * (matches any); UNNAMED: no rank of this barrier gives a name (an
 * anonymous barrier). A wait returns GASNET_ERR_BARRIER_MISMATCH when two
 * ranks notified different names, or a rank notified
 * GASNET_BARRIERFLAG_MISMATCH, or the wait itself is named (no ANONYMOUS
 * flag) with an id other than the name some rank gave the barrier; its id
 * and flags need not repeat the notify's: an anonymous wait matches any
 * barrier, a named wait any barrier no rank named. */
#define GASNET_BARRIERFLAG_ANONYMOUS 1
#define GASNET_BARRIERFLAG_MISMATCH 2
#define GASNET_BARRIERFLAG_UNNAMED (GASNET_BARRIERFLAG_ANONYMOUS | 8)
extern void gasnet_barrier_notify(int id, int flags);
extern int gasnet_barrier_wait(int id, int flags);
/* GASNET_ERR_NOT_READY while other ranks have not notified yet. */
extern int gasnet_barrier_try(int id, int flags);
extern int gasnet_barrier(int id, int flags);
/* After the last barrier completed: GASNET_BARRIERFLAG_ANONYMOUS when no
 * rank named it (*id then meaningless), 0 with the name in *id, or
 * GASNET_ERR_BARRIER_MISMATCH. */
extern int gasnet_barrier_result(int *id);

/* How a thread waits in GASNet calls: SPIN polls; BLOCK and SPINBLOCK
 * yield the CPU between polls. */
#define GASNET_WAIT_SPIN 0
#define GASNET_WAIT_BLOCK 1
#define GASNET_WAIT_SPINBLOCK 2
extern int gasnet_set_waitmode(int wait_mode);

/* Thread information: an optimisation hint in GASNet (it saves looking up
 * the calling thread's state); here GET names the calling thread and POST
 * keeps it in a local variable no call needs. Every macro is usable where
 * a declaration is (POST, BEGIN_FUNCTION) or an expression is (GET). */
typedef void *gasnet_threadinfo_t;
#define GASNET_GET_THREADINFO() \
  ((gasnet_threadinfo_t)(void *)&_gex_am_handler_depth)
#define GASNET_POST_THREADINFO(info)                                 \
  __attribute__((__unused__)) gasnet_threadinfo_t _gex_threadinfo = \
      (info)
#define GASNET_BEGIN_FUNCTION() GASNET_POST_THREADINFO(GASNET_GET_THREADINFO())

/* This rank in the job (an internal name of GASNet's that some clients
 * read). */
#define gasneti_mynode (gex_System_QueryJobRank())

#ifdef __cplusplus
} /* extern "C" */
#endif

#include "gex_am_calls.h"


#endif /* GASNETEX_H */
