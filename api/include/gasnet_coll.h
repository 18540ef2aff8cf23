/* gasnet_coll.h: GASNet-1 style collectives (gasnet_coll_*), as this
 * implementation (gex) offers them, over any team (GASNET_TEAM_ALL, the
 * primordial team, or a gex_TM_t from gex_TM_Split / gex_TM_Create). A
 * client includes it after <gasnet.h> or <gasnetex.h>.
 *
 * The contract is the collectives chapter of the GASNet-1 specification
 * (docs/gasnet.texi in BerkeleyLab/gasnet); this header is our own. With
 * n the team's size and "image" a team rank (one image per rank here):
 *
 *   broadcast   srcimage's nbytes at src land in every rank's dst.
 *   scatter     srcimage's src holds n pieces of nbytes; piece i lands in
 *               rank i's dst.
 *   gather      every rank's nbytes at src land, in rank order, in
 *               dstimage's dst (n * nbytes).
 *   gather_all  as gather, into every rank's dst.
 *   exchange    rank i's src holds n pieces of nbytes; piece j of rank i
 *               lands at piece i of rank j's dst.
 *
 * Every call is collective over the team and must be made in the same
 * order by all its ranks (with the gex_Coll_* calls on that team). The
 * blocking forms return when this rank's part is complete; the _nb forms
 * return a gasnet_coll_handle_t (GASNET_COLL_INVALID_HANDLE when already
 * complete) for gasnet_coll_wait_sync / gasnet_coll_try_sync (a handle is
 * spent once it reports completion).
 *
 * flags: exactly one IN_ and one OUT_ synchronisation flag and exactly one
 * of SINGLE or LOCAL, optionally OR'ed with the IN_SEGMENT hints:
 *   GASNET_COLL_IN_NOSYNC    data may move as soon as any rank has entered;
 *   GASNET_COLL_IN_MYSYNC    a rank's own buffers are touched only after it
 *                            has entered;
 *   GASNET_COLL_IN_ALLSYNC   no buffer is read or written before every rank
 *                            has entered (a barrier first), so other ranks
 *                            may write a source (a Put) until they enter;
 *   GASNET_COLL_OUT_NOSYNC   a rank may complete before others have;
 *   GASNET_COLL_OUT_MYSYNC   a rank completes once its own buffers are
 *                            final (its source read, its destination
 *                            written);
 *   GASNET_COLL_OUT_ALLSYNC  no rank completes before every rank's data
 *                            movement is done (a barrier after);
 *   GASNET_COLL_SINGLE       every rank passes the same arguments;
 *   GASNET_COLL_LOCAL        each rank passes its own addresses (a
 *                            non-root's src, a non-root's gather dst, is
 *                            ignored);
 *   GASNET_COLL_SRC_IN_SEGMENT, GASNET_COLL_DST_IN_SEGMENT: the buffers lie
 *                            in the segment (accepted; any memory works
 *                            here).
 * A rank's data movement never writes its dst before it has entered, so
 * NOSYNC and MYSYNC behave alike here.
 *
 * gasnet_coll_barrier_notify / _wait / _try / gasnet_coll_barrier: the
 * named split-phase barrier of gasnet.h on a team (GASNET_TEAM_ALL is
 * gasnet_barrier_notify's barrier itself).
 * gasnet_coll_dumpProfile / dumpTuningState: these collectives have no
 * tunable algorithms; with a file name they write a line saying so, with
 * NULL nothing.
 *
 * Misuse is a fatal error naming the call: a flag combination other than
 * the above, an image outside the team, a NULL buffer with bytes to move,
 * a destroyed or unknown team. */
#ifndef GASNET_COLL_H
#define GASNET_COLL_H
#define _GASNET_COLL_H 1
#define _INCLUDED_GASNET_COLL_H 1

#include <gasnet.h>
#include <gasnetex.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t gasnet_image_t;
typedef gex_TM_t gasnet_team_handle_t;
typedef gex_Event_t gasnet_coll_handle_t;
#define GASNET_COLL_INVALID_HANDLE GEX_EVENT_INVALID

extern gex_TM_t _gasnet_coll_team_all(void);
#define GASNET_TEAM_ALL (_gasnet_coll_team_all())

#define GASNET_COLL_IN_NOSYNC (1 << 0)
#define GASNET_COLL_IN_MYSYNC (1 << 1)
#define GASNET_COLL_IN_ALLSYNC (1 << 2)
#define GASNET_COLL_OUT_NOSYNC (1 << 3)
#define GASNET_COLL_OUT_MYSYNC (1 << 4)
#define GASNET_COLL_OUT_ALLSYNC (1 << 5)
#define GASNET_COLL_SINGLE (1 << 6)
#define GASNET_COLL_LOCAL (1 << 7)
/* A hint that the call may be combined with the ones that follow it until
 * one without the flag: accepted; each collective here runs on its own. */
#define GASNET_COLL_AGGREGATE (1 << 8)
#define GASNET_COLL_DST_IN_SEGMENT (1 << 9)
#define GASNET_COLL_SRC_IN_SEGMENT (1 << 10)

extern gasnet_coll_handle_t gasnet_coll_broadcast_nb(gasnet_team_handle_t team,
                                                     void *dst,
                                                     gasnet_image_t srcimage,
                                                     void *src, size_t nbytes,
                                                     int flags);
extern gasnet_coll_handle_t gasnet_coll_scatter_nb(gasnet_team_handle_t team,
                                                   void *dst,
                                                   gasnet_image_t srcimage,
                                                   void *src, size_t nbytes,
                                                   int flags);
extern gasnet_coll_handle_t gasnet_coll_gather_nb(gasnet_team_handle_t team,
                                                  gasnet_image_t dstimage,
                                                  void *dst, void *src,
                                                  size_t nbytes, int flags);
extern gasnet_coll_handle_t gasnet_coll_gather_all_nb(gasnet_team_handle_t team,
                                                      void *dst, void *src,
                                                      size_t nbytes, int flags);
extern gasnet_coll_handle_t gasnet_coll_exchange_nb(gasnet_team_handle_t team,
                                                    void *dst, void *src,
                                                    size_t nbytes, int flags);

extern void gasnet_coll_broadcast(gasnet_team_handle_t team, void *dst,
                                  gasnet_image_t srcimage, void *src,
                                  size_t nbytes, int flags);
extern void gasnet_coll_scatter(gasnet_team_handle_t team, void *dst,
                                gasnet_image_t srcimage, void *src,
                                size_t nbytes, int flags);
extern void gasnet_coll_gather(gasnet_team_handle_t team,
                               gasnet_image_t dstimage, void *dst, void *src,
                               size_t nbytes, int flags);
extern void gasnet_coll_gather_all(gasnet_team_handle_t team, void *dst,
                                   void *src, size_t nbytes, int flags);
extern void gasnet_coll_exchange(gasnet_team_handle_t team, void *dst,
                                 void *src, size_t nbytes, int flags);

extern int gasnet_coll_try_sync(gasnet_coll_handle_t handle);
extern void gasnet_coll_wait_sync(gasnet_coll_handle_t handle);
extern int gasnet_coll_try_sync_some(gasnet_coll_handle_t *handles,
                                     size_t count);
extern void gasnet_coll_wait_sync_some(gasnet_coll_handle_t *handles,
                                       size_t count);
extern int gasnet_coll_try_sync_all(gasnet_coll_handle_t *handles,
                                    size_t count);
extern void gasnet_coll_wait_sync_all(gasnet_coll_handle_t *handles,
                                      size_t count);

extern void gasnet_coll_barrier_notify(gasnet_team_handle_t team, int id,
                                       int flags);
extern int gasnet_coll_barrier_wait(gasnet_team_handle_t team, int id,
                                    int flags);
extern int gasnet_coll_barrier_try(gasnet_team_handle_t team, int id,
                                   int flags);
extern int gasnet_coll_barrier(gasnet_team_handle_t team, int id, int flags);

extern void gasnet_coll_dumpProfile(char *filename, gasnet_team_handle_t team);
extern void gasnet_coll_dumpTuningState(char *filename,
                                        gasnet_team_handle_t team);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GASNET_COLL_H */
