// The RMA calls of gasnetex.h (api/rma.cc): start-up hook, and the debug
// build's buffer checks that the AM calls share.
#ifndef GEX_API_RMA_H_
#define GEX_API_RMA_H_

#include <cstddef>

namespace gexrt::api {

// Whether the costlier misuse checks are compiled in: --config=dbg defines
// GEX_DEBUG=1 (GASNet's debug build). The every-build checks are single
// compares on the hot path; these make system calls or range arithmetic.
#if defined(GEX_DEBUG) && GEX_DEBUG
inline constexpr bool kDebugChecks = true;
#else
inline constexpr bool kDebugChecks = false;
#endif

// Debug checks, each a fatal error naming `call` when it fails:
// [p, +n) (n > 0) is mapped memory (its first and last pages; `what` names
// the buffer in the message) ...
void DebugCheckMapped(const char* call, const char* what, const void* p,
                      size_t n);
// ... and [src, +n) does not overlap [dst, +n), both addresses in this
// process (a copy between overlapping ranges is undefined).
void DebugCheckOverlap(const char* call, const void* src, const void* dst,
                       size_t n);

class Runtime;

// Creates the RMA engine over `rt`'s network and registers its internal
// handlers (reads GEX_RMA_FORCE_AM). Called once by gex_Client_Init on
// every rank, after the supernode is up and before any message can be
// dispatched.
void RmaInit(Runtime& rt);

// Publishes the segments mapped here for <gasnetex.h>'s inline Put/Get
// path (_gex_direct), unless GEX_RMA_FORCE_AM is set. Called by
// gex_Segment_Attach once every rank's segment is known, before it returns.
void RmaSegmentsAttached(Runtime& rt);

}  // namespace gexrt::api

#endif  // GEX_API_RMA_H_
