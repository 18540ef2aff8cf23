/* gasnet_vis.h: GASNet-EX non-contiguous RMA (Vector, Indexed, Strided:
 * "VIS"), as this implementation (gex) offers it. A client includes it
 * after <gasnetex.h>.
 *
 * The contract is the "Vector/Indexed/Strided (VIS)" section of the
 * GASNet-EX specification (docs/GASNet-EX.txt in BerkeleyLab/gasnet); this
 * header is our own. Every call moves bytes between this rank's memory and
 * the bound segment of one peer (tm, rank), described on each side by a
 * list of pieces; the bytes of the source pieces, taken in order, land in
 * the destination pieces, taken in order:
 *
 *   Vector   a gex_Memvec_t list per side (address and length of each
 *            piece; lengths may differ and may be zero). Both sides hold
 *            the same number of bytes in all.
 *   Indexed  an address list per side, every piece of one side having the
 *            same length (dstlen, srclen): dstcount * dstlen must equal
 *            srccount * srclen.
 *   Strided  a base address per side and a shape shared by both: element
 *            (i_0, ..., i_{L-1}), 0 <= i_k < count[k], is the elemsz bytes
 *            at base + sum(i_k * strides[k]), L = stridelevels, level 0
 *            the fastest-varying. Source element i goes to destination
 *            element i, so different strides on the two sides transpose or
 *            reflect. elemsz 0, or any count[k] 0, moves nothing;
 *            stridelevels 0 is one contiguous element.
 *
 * Remote pieces must lie in the peer's bound segment; local pieces may be
 * anywhere in this process. Source pieces may overlap each other;
 * destination pieces may not overlap each other nor the sources.
 *
 * Each family has three forms, as gex_RMA_Put/Get:
 *   ...Blocking  returns 0 when the data has arrived (a Get) or is in the
 *                peer's segment (a Put);
 *   ...NB        returns an event for gex_Event_Wait/Test
 *                (GEX_EVENT_INVALID when it finished before returning);
 *   ...NBI       counted for gex_NBI_Test/Wait (GEX_EC_PUT, GEX_EC_GET)
 *                and in the caller's access region, if one is open.
 * The list arrays (not the strides or counts, read before the call
 * returns) and the data must stay valid and unchanged until completion.
 *
 * flags: 0, or an OR of
 *   GEX_FLAG_IMMEDIATE       may start nothing when it would have to wait:
 *                            NB returns GEX_EVENT_NO_OP, the others
 *                            non-zero;
 *   GEX_FLAG_ENABLE_LEAF_LC  (Puts, NB and NBI) local completion as its own
 *                            event: gex_Event_QueryLeaf(root, GEX_EC_LC)
 *                            for NB, GEX_EC_LC of gex_NBI_Test/Wait for
 *                            NBI. Here a Put's sources are always copied
 *                            before it returns, so that event is complete
 *                            at once;
 *   the segment hints of gasnetex.h (GEX_FLAG_SELF_SEG_UNKNOWN, _SOME,
 *   _BOUND, GEX_FLAG_PEER_SEG_UNKNOWN, _SOME, _BOUND,
 *   GEX_FLAG_PEER_NEVER_SELF, _NEVER_NBRHD), which change nothing here.
 *
 * Peer completion: gex_VIS_SetPeerCompletionHandler(handler, buf, nbytes,
 * 0) arms, for the calling thread, a notification bound to its next VIS
 * call (Put or Get; one that moves no bytes included): once that call's
 * data has been written to the peer's segment (Put) or read from it (Get),
 * the client handler `handler` runs once at the peer, as a 0-argument
 * Medium Reply handler (registered there with GEX_FLAG_AM_MEDIUM |
 * GEX_FLAG_AM_REPLY and 0 arguments) carrying the nbytes bytes at buf
 * (at most GEX_VIS_MAX_PEERCOMPLETION; buf is copied before the VIS call
 * returns). handler 0 disarms. The armed call may not pass
 * GEX_FLAG_IMMEDIATE.
 *
 * How they run: for a peer whose segment is mapped here (this rank, a
 * supernode peer) the pieces are copied directly (memcpy), done when the
 * call returns; for any other peer, and for every peer with
 * GEX_RMA_FORCE_AM=1, the pieces are packed into Active Messages of at
 * most the largest Medium every peer accepts (a Put's data travels in its
 * Requests and the peer unpacks it; a Get's Request lists the remote
 * pieces and the peer packs them into its Reply).
 *
 * Misuse is a fatal error naming the call: a NULL list with a non-zero
 * count, a remote piece outside the peer's segment, totals that differ,
 * a NULL local piece, a rank outside the team, a call from an AM handler,
 * flags the call does not take. */
#ifndef GASNET_VIS_H
#define GASNET_VIS_H
#define _GASNET_VIS_H 1
#define _IN_GASNET_VIS_H 1

#include <gasnetex.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest payload of a peer completion notification, in bytes. */
#define GEX_VIS_MAX_PEERCOMPLETION ((size_t)256)

/* ---- Vector ---------------------------------------------------------- */

extern gex_Event_t gex_VIS_VectorPutNB(gex_TM_t tm, gex_Rank_t dstrank,
                                       size_t dstcount,
                                       gex_Memvec_t const dstlist[],
                                       size_t srccount,
                                       gex_Memvec_t const srclist[],
                                       gex_Flags_t flags);
extern int gex_VIS_VectorPutNBI(gex_TM_t tm, gex_Rank_t dstrank,
                                size_t dstcount, gex_Memvec_t const dstlist[],
                                size_t srccount, gex_Memvec_t const srclist[],
                                gex_Flags_t flags);
extern int gex_VIS_VectorPutBlocking(gex_TM_t tm, gex_Rank_t dstrank,
                                     size_t dstcount,
                                     gex_Memvec_t const dstlist[],
                                     size_t srccount,
                                     gex_Memvec_t const srclist[],
                                     gex_Flags_t flags);

extern gex_Event_t gex_VIS_VectorGetNB(gex_TM_t tm, size_t dstcount,
                                       gex_Memvec_t const dstlist[],
                                       gex_Rank_t srcrank, size_t srccount,
                                       gex_Memvec_t const srclist[],
                                       gex_Flags_t flags);
extern int gex_VIS_VectorGetNBI(gex_TM_t tm, size_t dstcount,
                                gex_Memvec_t const dstlist[],
                                gex_Rank_t srcrank, size_t srccount,
                                gex_Memvec_t const srclist[],
                                gex_Flags_t flags);
extern int gex_VIS_VectorGetBlocking(gex_TM_t tm, size_t dstcount,
                                     gex_Memvec_t const dstlist[],
                                     gex_Rank_t srcrank, size_t srccount,
                                     gex_Memvec_t const srclist[],
                                     gex_Flags_t flags);

/* ---- Indexed --------------------------------------------------------- */

extern gex_Event_t gex_VIS_IndexedPutNB(gex_TM_t tm, gex_Rank_t dstrank,
                                        size_t dstcount, void *const dstlist[],
                                        size_t dstlen, size_t srccount,
                                        void *const srclist[], size_t srclen,
                                        gex_Flags_t flags);
extern int gex_VIS_IndexedPutNBI(gex_TM_t tm, gex_Rank_t dstrank,
                                 size_t dstcount, void *const dstlist[],
                                 size_t dstlen, size_t srccount,
                                 void *const srclist[], size_t srclen,
                                 gex_Flags_t flags);
extern int gex_VIS_IndexedPutBlocking(gex_TM_t tm, gex_Rank_t dstrank,
                                      size_t dstcount, void *const dstlist[],
                                      size_t dstlen, size_t srccount,
                                      void *const srclist[], size_t srclen,
                                      gex_Flags_t flags);

extern gex_Event_t gex_VIS_IndexedGetNB(gex_TM_t tm, size_t dstcount,
                                        void *const dstlist[], size_t dstlen,
                                        gex_Rank_t srcrank, size_t srccount,
                                        void *const srclist[], size_t srclen,
                                        gex_Flags_t flags);
extern int gex_VIS_IndexedGetNBI(gex_TM_t tm, size_t dstcount,
                                 void *const dstlist[], size_t dstlen,
                                 gex_Rank_t srcrank, size_t srccount,
                                 void *const srclist[], size_t srclen,
                                 gex_Flags_t flags);
extern int gex_VIS_IndexedGetBlocking(gex_TM_t tm, size_t dstcount,
                                      void *const dstlist[], size_t dstlen,
                                      gex_Rank_t srcrank, size_t srccount,
                                      void *const srclist[], size_t srclen,
                                      gex_Flags_t flags);

/* ---- Strided --------------------------------------------------------- */

extern gex_Event_t gex_VIS_StridedPutNB(gex_TM_t tm, gex_Rank_t dstrank,
                                        void *dstaddr,
                                        const ptrdiff_t dststrides[],
                                        void *srcaddr,
                                        const ptrdiff_t srcstrides[],
                                        size_t elemsz, const size_t count[],
                                        size_t stridelevels, gex_Flags_t flags);
extern int gex_VIS_StridedPutNBI(gex_TM_t tm, gex_Rank_t dstrank, void *dstaddr,
                                 const ptrdiff_t dststrides[], void *srcaddr,
                                 const ptrdiff_t srcstrides[], size_t elemsz,
                                 const size_t count[], size_t stridelevels,
                                 gex_Flags_t flags);
extern int gex_VIS_StridedPutBlocking(gex_TM_t tm, gex_Rank_t dstrank,
                                      void *dstaddr,
                                      const ptrdiff_t dststrides[],
                                      void *srcaddr,
                                      const ptrdiff_t srcstrides[],
                                      size_t elemsz, const size_t count[],
                                      size_t stridelevels, gex_Flags_t flags);

extern gex_Event_t gex_VIS_StridedGetNB(gex_TM_t tm, void *dstaddr,
                                        const ptrdiff_t dststrides[],
                                        gex_Rank_t srcrank, void *srcaddr,
                                        const ptrdiff_t srcstrides[],
                                        size_t elemsz, const size_t count[],
                                        size_t stridelevels, gex_Flags_t flags);
extern int gex_VIS_StridedGetNBI(gex_TM_t tm, void *dstaddr,
                                 const ptrdiff_t dststrides[],
                                 gex_Rank_t srcrank, void *srcaddr,
                                 const ptrdiff_t srcstrides[], size_t elemsz,
                                 const size_t count[], size_t stridelevels,
                                 gex_Flags_t flags);
extern int gex_VIS_StridedGetBlocking(gex_TM_t tm, void *dstaddr,
                                      const ptrdiff_t dststrides[],
                                      gex_Rank_t srcrank, void *srcaddr,
                                      const ptrdiff_t srcstrides[],
                                      size_t elemsz, const size_t count[],
                                      size_t stridelevels, gex_Flags_t flags);

/* ---- Peer completion ------------------------------------------------- */

/* Arms (handler != 0) or disarms (handler == 0) the calling thread's peer
 * completion notification for its next VIS call (see the top of this
 * file). nbytes <= GEX_VIS_MAX_PEERCOMPLETION; source_addr is ignored when
 * nbytes is 0. flags: 0. */
extern void gex_VIS_SetPeerCompletionHandler(gex_AM_Index_t handler,
                                             const void *source_addr,
                                             size_t nbytes, gex_Flags_t flags);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GASNET_VIS_H */
