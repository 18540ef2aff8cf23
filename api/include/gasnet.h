/* gasnet.h: the GASNet-1 ("legacy") calls that GASNet-EX still offers, over
 * the same runtime as gasnetex.h (which this header includes). The
 * semantics are GASNet-1's (docs/gasnet.texi in BerkeleyLab/gasnet); this
 * header is our own. A legacy client and a GASNet-EX client may mix the two:
 * gasnet_QueryGexObjects hands out the objects gasnet_init created. */
#ifndef GASNET_H
#define GASNET_H
#define _GASNET_H 1
#define _INCLUDED_GASNET_H 1

#include "gasnetex.h"
/* GASNet-EX's gasnet.h brings the tools (gasnett_*, GASNETT_IDENT, if_pf,
 * ...) with it; clients of gasnet.h use them without including
 * gasnet_tools.h themselves. */
#include "gasnet_tools.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gasnet_node_t, gasnet_handler_t, gasnet_token_t, gasnet_handlerarg_t,
 * gasnet_register_value_t, gasnet_seginfo_t, gasnet_nodeinfo_t, the
 * barrier, wait modes and thread information come from gasnetex.h, as in
 * GASNet-EX. */

typedef struct {
  gasnet_handler_t index; /* 0: pick a free one (written back) */
  void (*fnptr)();
} gasnet_handlerentry_t;

/* Starts the job (see gex_Client_Init); attach then registers the handler
 * table and creates the segment (segsize a multiple of GASNET_PAGESIZE;
 * minheapoffset is accepted and ignored: segments are not placed relative
 * to the heap). Both are collective. */
#define gasnet_init _GEX_MODE_SYMBOL(_gasnet_init_)
extern int gasnet_init(int *argc, char ***argv);
extern int gasnet_attach(gasnet_handlerentry_t *table, int numentries,
                         uintptr_t segsize, uintptr_t minheapoffset);

extern gasnet_node_t gasnet_mynode(void);
extern gasnet_node_t gasnet_nodes(void);
extern int gasnet_getSegmentInfo(gasnet_seginfo_t *seginfo_table,
                                 int numentries);
extern void gasnet_QueryGexObjects(gex_Client_t *client_p, gex_EP_t *ep_p,
                                   gex_TM_t *tm_p, gex_Segment_t *segment_p);

#define GASNET_VERSION GASNET_SPEC_VERSION_MAJOR

/* The primordial team, which every legacy call uses: read inline from the
 * RMA fast path's record once segments are attached, else asked of the
 * library (which reports a call before gasnet_init). */
extern gex_TM_t _gasnet_legacy_tm(void);
static inline gex_TM_t _gasnet_tm(void) {
  gex_TM_t tm = _gex_direct.tm;
  return tm != GEX_TM_INVALID ? tm : _gasnet_legacy_tm();
}

/* ---------------------------------------------------------------------- */
/* Legacy Active Messages, over the primordial team. Each call returns
 * GASNET_OK; the source buffer may be reused on return (the LongAsync
 * forms too: local completion is synchronous here). */
extern int gasnet_AMGetMsgSource(gasnet_token_t token, gasnet_node_t *srcindex);
/* No AM handler ever interrupts the client here (handlers run from
 * GASNet calls), so GASNet-1's holding and resuming of interrupts are
 * no-ops. */
#define gasnet_hold_interrupts() ((void)0)
#define gasnet_resume_interrupts() ((void)0)
#define gasnet_AMMaxArgs() ((size_t)gex_AM_MaxArgs())
#define gasnet_AMMaxMedium() gex_AM_LUBRequestMedium()
#define gasnet_AMMaxLongRequest() gex_AM_LUBRequestLong()
#define gasnet_AMMaxLongReply() gex_AM_LUBReplyLong()

#define gasnet_AMRequestShort0(node, h) \
  gex_AM_RequestShort0(_gasnet_tm(), node, h, 0)
#define gasnet_AMRequestShortM(node, h, ...) \
  gex_AM_RequestShort(_gasnet_tm(), node, h, 0, __VA_ARGS__)
#define gasnet_AMRequestMedium0(node, h, src, nbytes)                   \
  gex_AM_RequestMedium0(_gasnet_tm(), node, h, src, nbytes, GEX_EVENT_NOW, \
                        0)
#define gasnet_AMRequestMediumM(node, h, src, nbytes, ...)           \
  gex_AM_RequestMedium(_gasnet_tm(), node, h, src, nbytes, GEX_EVENT_NOW, \
                       0, __VA_ARGS__)
#define gasnet_AMRequestLong0(node, h, src, nbytes, dest)                  \
  gex_AM_RequestLong0(_gasnet_tm(), node, h, src, nbytes, dest, GEX_EVENT_NOW, \
                      0)
#define gasnet_AMRequestLongM(node, h, src, nbytes, dest, ...)              \
  gex_AM_RequestLong(_gasnet_tm(), node, h, src, nbytes, dest, GEX_EVENT_NOW, \
                     0, __VA_ARGS__)
#define gasnet_AMRequestLongAsync0 gasnet_AMRequestLong0
#define gasnet_AMRequestLongAsyncM gasnet_AMRequestLongM
#define gasnet_AMReplyShort0(token, h) gex_AM_ReplyShort0(token, h, 0)
#define gasnet_AMReplyShortM(token, h, ...) \
  gex_AM_ReplyShort(token, h, 0, __VA_ARGS__)
#define gasnet_AMReplyMedium0(token, h, src, nbytes) \
  gex_AM_ReplyMedium0(token, h, src, nbytes, GEX_EVENT_NOW, 0)
#define gasnet_AMReplyMediumM(token, h, src, nbytes, ...) \
  gex_AM_ReplyMedium(token, h, src, nbytes, GEX_EVENT_NOW, 0, __VA_ARGS__)
#define gasnet_AMReplyLong0(token, h, src, nbytes, dest) \
  gex_AM_ReplyLong0(token, h, src, nbytes, dest, GEX_EVENT_NOW, 0)
#define gasnet_AMReplyLongM(token, h, src, nbytes, dest, ...) \
  gex_AM_ReplyLong(token, h, src, nbytes, dest, GEX_EVENT_NOW, 0, __VA_ARGS__)

/* Numbered forms (1..16 arguments) map onto the M forms. */
#define gasnet_AMRequestShort1 gasnet_AMRequestShortM
#define gasnet_AMRequestShort2 gasnet_AMRequestShortM
#define gasnet_AMRequestShort3 gasnet_AMRequestShortM
#define gasnet_AMRequestShort4 gasnet_AMRequestShortM
#define gasnet_AMRequestShort5 gasnet_AMRequestShortM
#define gasnet_AMRequestShort6 gasnet_AMRequestShortM
#define gasnet_AMRequestShort7 gasnet_AMRequestShortM
#define gasnet_AMRequestShort8 gasnet_AMRequestShortM
#define gasnet_AMRequestShort9 gasnet_AMRequestShortM
#define gasnet_AMRequestShort10 gasnet_AMRequestShortM
#define gasnet_AMRequestShort11 gasnet_AMRequestShortM
#define gasnet_AMRequestShort12 gasnet_AMRequestShortM
#define gasnet_AMRequestShort13 gasnet_AMRequestShortM
#define gasnet_AMRequestShort14 gasnet_AMRequestShortM
#define gasnet_AMRequestShort15 gasnet_AMRequestShortM
#define gasnet_AMRequestShort16 gasnet_AMRequestShortM
#define gasnet_AMRequestMedium1 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium2 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium3 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium4 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium5 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium6 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium7 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium8 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium9 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium10 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium11 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium12 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium13 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium14 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium15 gasnet_AMRequestMediumM
#define gasnet_AMRequestMedium16 gasnet_AMRequestMediumM
#define gasnet_AMRequestLong1 gasnet_AMRequestLongM
#define gasnet_AMRequestLong2 gasnet_AMRequestLongM
#define gasnet_AMRequestLong3 gasnet_AMRequestLongM
#define gasnet_AMRequestLong4 gasnet_AMRequestLongM
#define gasnet_AMRequestLong5 gasnet_AMRequestLongM
#define gasnet_AMRequestLong6 gasnet_AMRequestLongM
#define gasnet_AMRequestLong7 gasnet_AMRequestLongM
#define gasnet_AMRequestLong8 gasnet_AMRequestLongM
#define gasnet_AMRequestLong9 gasnet_AMRequestLongM
#define gasnet_AMRequestLong10 gasnet_AMRequestLongM
#define gasnet_AMRequestLong11 gasnet_AMRequestLongM
#define gasnet_AMRequestLong12 gasnet_AMRequestLongM
#define gasnet_AMRequestLong13 gasnet_AMRequestLongM
#define gasnet_AMRequestLong14 gasnet_AMRequestLongM
#define gasnet_AMRequestLong15 gasnet_AMRequestLongM
#define gasnet_AMRequestLong16 gasnet_AMRequestLongM
#define gasnet_AMRequestLongAsync1 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync2 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync3 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync4 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync5 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync6 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync7 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync8 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync9 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync10 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync11 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync12 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync13 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync14 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync15 gasnet_AMRequestLongAsyncM
#define gasnet_AMRequestLongAsync16 gasnet_AMRequestLongAsyncM
#define gasnet_AMReplyShort1 gasnet_AMReplyShortM
#define gasnet_AMReplyShort2 gasnet_AMReplyShortM
#define gasnet_AMReplyShort3 gasnet_AMReplyShortM
#define gasnet_AMReplyShort4 gasnet_AMReplyShortM
#define gasnet_AMReplyShort5 gasnet_AMReplyShortM
#define gasnet_AMReplyShort6 gasnet_AMReplyShortM
#define gasnet_AMReplyShort7 gasnet_AMReplyShortM
#define gasnet_AMReplyShort8 gasnet_AMReplyShortM
#define gasnet_AMReplyShort9 gasnet_AMReplyShortM
#define gasnet_AMReplyShort10 gasnet_AMReplyShortM
#define gasnet_AMReplyShort11 gasnet_AMReplyShortM
#define gasnet_AMReplyShort12 gasnet_AMReplyShortM
#define gasnet_AMReplyShort13 gasnet_AMReplyShortM
#define gasnet_AMReplyShort14 gasnet_AMReplyShortM
#define gasnet_AMReplyShort15 gasnet_AMReplyShortM
#define gasnet_AMReplyShort16 gasnet_AMReplyShortM
#define gasnet_AMReplyMedium1 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium2 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium3 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium4 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium5 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium6 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium7 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium8 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium9 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium10 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium11 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium12 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium13 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium14 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium15 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium16 gasnet_AMReplyMediumM
#define gasnet_AMReplyLong1 gasnet_AMReplyLongM
#define gasnet_AMReplyLong2 gasnet_AMReplyLongM
#define gasnet_AMReplyLong3 gasnet_AMReplyLongM
#define gasnet_AMReplyLong4 gasnet_AMReplyLongM
#define gasnet_AMReplyLong5 gasnet_AMReplyLongM
#define gasnet_AMReplyLong6 gasnet_AMReplyLongM
#define gasnet_AMReplyLong7 gasnet_AMReplyLongM
#define gasnet_AMReplyLong8 gasnet_AMReplyLongM
#define gasnet_AMReplyLong9 gasnet_AMReplyLongM
#define gasnet_AMReplyLong10 gasnet_AMReplyLongM
#define gasnet_AMReplyLong11 gasnet_AMReplyLongM
#define gasnet_AMReplyLong12 gasnet_AMReplyLongM
#define gasnet_AMReplyLong13 gasnet_AMReplyLongM
#define gasnet_AMReplyLong14 gasnet_AMReplyLongM
#define gasnet_AMReplyLong15 gasnet_AMReplyLongM
#define gasnet_AMReplyLong16 gasnet_AMReplyLongM

/* ---------------------------------------------------------------------- */
/* Legacy one-sided RMA over the primordial team, as thin inline wrappers of
 * the gex_RMA calls (same checks, same fast path to mapped peers). The
 * remote range must lie in rank `node`'s segment. Non-bulk forms may reuse
 * the source on return; _bulk forms not before the operation completes.
 * NB forms return a handle (GASNET_INVALID_HANDLE when already complete),
 * which must be synced exactly once; NBI forms are synced with
 * gasnet_wait_syncnbi_* or an access region. */

typedef gex_Event_t gasnet_handle_t;
#define GASNET_INVALID_HANDLE ((gasnet_handle_t)0)

/* One contiguous piece of memory (the legacy twin of gex_Memvec_t). */
typedef struct {
  void *addr;
  size_t len;
} gasnet_memvec_t;

static inline void gasnet_put(gasnet_node_t node, void *dest, const void *src,
                              size_t nbytes) {
  gex_RMA_PutBlocking(_gasnet_tm(), node, dest, src, nbytes, 0);
}
static inline void gasnet_put_bulk(gasnet_node_t node, void *dest, const void *src,
                                   size_t nbytes) {
  gex_RMA_PutBlocking(_gasnet_tm(), node, dest, src, nbytes, 0);
}
static inline gasnet_handle_t gasnet_put_nb(gasnet_node_t node, void *dest,
                                            const void *src, size_t nbytes) {
  return gex_RMA_PutNB(_gasnet_tm(), node, dest, src, nbytes, GEX_EVENT_NOW,
                       0);
}
static inline gasnet_handle_t gasnet_put_nb_bulk(gasnet_node_t node,
                                                 void *dest, const void *src,
                                                 size_t nbytes) {
  return gex_RMA_PutNB(_gasnet_tm(), node, dest, src, nbytes, GEX_EVENT_DEFER,
                       0);
}
static inline void gasnet_put_nbi(gasnet_node_t node, void *dest, const void *src,
                                  size_t nbytes) {
  gex_RMA_PutNBI(_gasnet_tm(), node, dest, src, nbytes, GEX_EVENT_NOW, 0);
}
static inline void gasnet_put_nbi_bulk(gasnet_node_t node, void *dest,
                                       const void *src, size_t nbytes) {
  gex_RMA_PutNBI(_gasnet_tm(), node, dest, src, nbytes, GEX_EVENT_DEFER, 0);
}

/* Value forms: nbytes (1..SIZEOF_GASNET_REGISTER_VALUE_T) bytes holding
 * `value` as an unsigned integer of that width. */
static inline void gasnet_put_val(gasnet_node_t node, void *dest,
                                  gasnet_register_value_t value,
                                  size_t nbytes) {
  gex_RMA_PutBlockingVal(_gasnet_tm(), node, dest, value, nbytes, 0);
}
static inline gasnet_handle_t gasnet_put_nb_val(gasnet_node_t node,
                                                void *dest,
                                                gasnet_register_value_t value,
                                                size_t nbytes) {
  return gex_RMA_PutNBVal(_gasnet_tm(), node, dest, value, nbytes, 0);
}
static inline void gasnet_put_nbi_val(gasnet_node_t node, void *dest,
                                      gasnet_register_value_t value,
                                      size_t nbytes) {
  gex_RMA_PutNBIVal(_gasnet_tm(), node, dest, value, nbytes, 0);
}

static inline void gasnet_get(void *dest, gasnet_node_t node, void *src,
                              size_t nbytes) {
  gex_RMA_GetBlocking(_gasnet_tm(), dest, node, src, nbytes, 0);
}
static inline void gasnet_get_bulk(void *dest, gasnet_node_t node, void *src,
                                   size_t nbytes) {
  gex_RMA_GetBlocking(_gasnet_tm(), dest, node, src, nbytes, 0);
}
static inline gasnet_handle_t gasnet_get_nb(void *dest, gasnet_node_t node,
                                            void *src, size_t nbytes) {
  return gex_RMA_GetNB(_gasnet_tm(), dest, node, src, nbytes, 0);
}
static inline gasnet_handle_t gasnet_get_nb_bulk(void *dest,
                                                 gasnet_node_t node, void *src,
                                                 size_t nbytes) {
  return gex_RMA_GetNB(_gasnet_tm(), dest, node, src, nbytes, 0);
}
static inline void gasnet_get_nbi(void *dest, gasnet_node_t node, void *src,
                                  size_t nbytes) {
  gex_RMA_GetNBI(_gasnet_tm(), dest, node, src, nbytes, 0);
}
static inline void gasnet_get_nbi_bulk(void *dest, gasnet_node_t node,
                                       void *src, size_t nbytes) {
  gex_RMA_GetNBI(_gasnet_tm(), dest, node, src, nbytes, 0);
}
static inline gasnet_register_value_t gasnet_get_val(gasnet_node_t node,
                                                     void *src,
                                                     size_t nbytes) {
  return gex_RMA_GetBlockingVal(_gasnet_tm(), node, src, nbytes, 0);
}

/* A value Get in flight: gasnet_wait_syncnb_valget (exactly once) returns
 * the value. */
typedef struct _gasnet_valget_op *gasnet_valget_handle_t;
extern gasnet_valget_handle_t gasnet_get_nb_val(gasnet_node_t node, void *src,
                                                size_t nbytes);
extern gasnet_register_value_t gasnet_wait_syncnb_valget(
    gasnet_valget_handle_t handle);

/* Sets nbytes of rank node's segment at dest to (unsigned char)val. The NB
 * and NBI forms complete before they return (the handle is
 * GASNET_INVALID_HANDLE). */
extern void gasnet_memset(gasnet_node_t node, void *dest, int val,
                          size_t nbytes);
extern gasnet_handle_t gasnet_memset_nb(gasnet_node_t node, void *dest,
                                        int val, size_t nbytes);
extern void gasnet_memset_nbi(gasnet_node_t node, void *dest, int val,
                              size_t nbytes);

/* Handles: try returns GASNET_OK (complete: the handle is consumed) or
 * GASNET_ERR_NOT_READY; the array forms skip GASNET_INVALID_HANDLE entries
 * and set the entries they complete to it (_some: at least one, or all
 * were invalid; _all: every one). */
#define gasnet_try_syncnb(h) gex_Event_Test(h)
#define gasnet_wait_syncnb(h) gex_Event_Wait(h)
#define gasnet_try_syncnb_some(hs, n) gex_Event_TestSome(hs, n, 0)
#define gasnet_wait_syncnb_some(hs, n) gex_Event_WaitSome(hs, n, 0)
#define gasnet_try_syncnb_all(hs, n) gex_Event_TestAll(hs, n, 0)
#define gasnet_wait_syncnb_all(hs, n) gex_Event_WaitAll(hs, n, 0)

/* Implicit handles of the calling thread (outside an access region). */
#define gasnet_try_syncnbi_gets() gex_NBI_Test(GEX_EC_GET, 0)
#define gasnet_try_syncnbi_puts() gex_NBI_Test(GEX_EC_PUT, 0)
#define gasnet_try_syncnbi_all() gex_NBI_Test(GEX_EC_GET | GEX_EC_PUT, 0)
#define gasnet_wait_syncnbi_gets() gex_NBI_Wait(GEX_EC_GET, 0)
#define gasnet_wait_syncnbi_puts() gex_NBI_Wait(GEX_EC_PUT, 0)
#define gasnet_wait_syncnbi_all() gex_NBI_Wait(GEX_EC_GET | GEX_EC_PUT, 0)
#define gasnet_begin_nbi_accessregion() gex_NBI_BeginAccessRegion(0)
#define gasnet_end_nbi_accessregion() gex_NBI_EndAccessRegion(0)

/* ---------------------------------------------------------------------- */
/* Handler-safe locks (see gex_HSL_t). */
typedef gex_HSL_t gasnet_hsl_t;
#define GASNET_HSL_INITIALIZER GEX_HSL_INITIALIZER
#define gasnet_hsl_init(hsl) gex_HSL_Init(hsl)
#define gasnet_hsl_destroy(hsl) gex_HSL_Destroy(hsl)
#define gasnet_hsl_lock(hsl) gex_HSL_Lock(hsl)
#define gasnet_hsl_unlock(hsl) gex_HSL_Unlock(hsl)
/* GASNET_OK, or GASNET_ERR_NOT_READY when another thread holds it. */
#define gasnet_hsl_trylock(hsl) gex_HSL_Trylock(hsl)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GASNET_H */
