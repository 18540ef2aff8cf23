// Vector, Indexed and Strided RMA (gasnet_vis.h; api/vis.cc): start-up
// hook.
#ifndef GEX_API_VIS_H_
#define GEX_API_VIS_H_

namespace gexrt::api {

class Runtime;

// Registers VIS's internal AM handlers (fixed indices 124-127, see
// api/vis.cc) and reads GEX_RMA_FORCE_AM. Called once by gex_Client_Init
// on every rank, before any message can be dispatched: a peer may send a
// VIS message to a rank that never makes a VIS call itself.
void VisInit(Runtime& rt);

}  // namespace gexrt::api

#endif  // GEX_API_VIS_H_
