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

/* Legacy Active Messages, over the primordial team. */
extern int gasnet_AMGetMsgSource(gasnet_token_t token, gasnet_node_t *srcindex);
#define gasnet_AMMaxArgs() ((size_t)gex_AM_MaxArgs())
#define gasnet_AMMaxMedium() gex_AM_LUBRequestMedium()
#define gasnet_AMMaxLongRequest() gex_AM_LUBRequestLong()
#define gasnet_AMMaxLongReply() gex_AM_LUBReplyLong()
extern gex_TM_t _gasnet_legacy_tm(void);

#define gasnet_AMRequestShort0(node, h) \
  gex_AM_RequestShort0(_gasnet_legacy_tm(), node, h, 0)
#define gasnet_AMRequestShortM(node, h, ...) \
  gex_AM_RequestShort(_gasnet_legacy_tm(), node, h, 0, __VA_ARGS__)
#define gasnet_AMRequestMedium0(node, h, src, nbytes) \
  gex_AM_RequestMedium0(_gasnet_legacy_tm(), node, h, src, nbytes, GEX_EVENT_NOW, 0)
#define gasnet_AMRequestMediumM(node, h, src, nbytes, ...)                  \
  gex_AM_RequestMedium(_gasnet_legacy_tm(), node, h, src, nbytes, \
                       GEX_EVENT_NOW, 0, __VA_ARGS__)
#define gasnet_AMRequestLong0(node, h, src, nbytes, dest)                 \
  gex_AM_RequestLong0(_gasnet_legacy_tm(), node, h, src, nbytes, dest, \
                      GEX_EVENT_NOW, 0)
#define gasnet_AMRequestLongM(node, h, src, nbytes, dest, ...)            \
  gex_AM_RequestLong(_gasnet_legacy_tm(), node, h, src, nbytes, dest, \
                     GEX_EVENT_NOW, 0, __VA_ARGS__)
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

/* Numbered legacy forms (1..16 arguments) map onto the M forms. */
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
#define gasnet_AMRequestLong1 gasnet_AMRequestLongM
#define gasnet_AMRequestLong2 gasnet_AMRequestLongM
#define gasnet_AMRequestLong3 gasnet_AMRequestLongM
#define gasnet_AMRequestLong4 gasnet_AMRequestLongM
#define gasnet_AMReplyShort1 gasnet_AMReplyShortM
#define gasnet_AMReplyShort2 gasnet_AMReplyShortM
#define gasnet_AMReplyShort3 gasnet_AMReplyShortM
#define gasnet_AMReplyShort4 gasnet_AMReplyShortM
#define gasnet_AMReplyShort5 gasnet_AMReplyShortM
#define gasnet_AMReplyShort6 gasnet_AMReplyShortM
#define gasnet_AMReplyShort7 gasnet_AMReplyShortM
#define gasnet_AMReplyShort8 gasnet_AMReplyShortM
#define gasnet_AMReplyMedium1 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium2 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium3 gasnet_AMReplyMediumM
#define gasnet_AMReplyMedium4 gasnet_AMReplyMediumM
#define gasnet_AMReplyLong1 gasnet_AMReplyLongM
#define gasnet_AMReplyLong2 gasnet_AMReplyLongM
#define gasnet_AMReplyLong3 gasnet_AMReplyLongM
#define gasnet_AMReplyLong4 gasnet_AMReplyLongM

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GASNET_H */
