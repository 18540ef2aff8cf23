// The RMA calls of gasnetex.h (api/rma.cc): start-up hook.
#ifndef GEX_API_RMA_H_
#define GEX_API_RMA_H_

namespace gexrt::api {

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
