// The client's endpoints and created segments (gex_EP_Create,
// gex_Segment_Create): the records behind the handles, shared by
// api/endpoint.cc and api/segment.cc. The primordial endpoint is the
// Runtime's `ep` (index 0, every capability); endpoints made by
// gex_EP_Create get indices 1, 2, ... in creation order (so ranks that
// create theirs in the same order agree on the indices).
#ifndef GEX_API_ENDPOINT_H_
#define GEX_API_ENDPOINT_H_

#include <cstdint>
#include <optional>

#include "api/runtime.h"
#include "gasnetex.h"

namespace gexrt::api {

// What we support on an endpoint made by gex_EP_Create: RMA only (Put
// and Get into bound segments). AM, VIS, COLL and AD need the endpoint
// to have handler tables and team membership of its own.
inline constexpr gex_EP_Capabilities_t kCreatedEpCapabilities =
    GEX_EP_CAPABILITY_RMA;

struct EndpointRecord {
  gex_EP_t ep = nullptr;  // The handle (rt.ep for index 0).
  gex_EP_Index_t index = 0;
  gex_EP_Capabilities_t capabilities = 0;
};

struct SegmentRecord {
  gex_Segment_opaque segment;  // The handle points here.
  gex_MK_t kind = GEX_MK_HOST;
  // A segment GASNet allocated: the shared object holding it (so that
  // supernode peers can map it). Empty for client memory.
  std::optional<core::SegmentObject> object;
  uint32_t serial = 0;
  gex_EP_t bound_to = nullptr;
  bool published = false;  // While bound to `bound_to`.
};

// The record of `ep`, or null when it is not one of this client's
// endpoints.
EndpointRecord* FindEndpoint(gex_EP_t ep);
// The record of `segment` when gex_Segment_Create made it, else null
// (gex_Segment_Attach's, or not a segment).
SegmentRecord* FindCreatedSegment(gex_Segment_t segment);
// Remembers / forgets a created segment.
void AddCreatedSegment(SegmentRecord* record);
void RemoveCreatedSegment(SegmentRecord* record);

// gex_EP_QueryIndex's answer (fatal naming the call for a bad handle).
gex_EP_Index_t EndpointIndex(const char* call, gex_EP_t ep);

// This process's endpoint of index `index`, or null.
gex_EP_t EndpointByIndex(gex_EP_Index_t index);

// (tm, rank) as a job rank and endpoint index: the primordial team's
// member `rank` is (rank, 0), a sub-team's (its job rank, 0) (teams hold
// primordial endpoints only), a gex_TM_Pair's (rank, the pair's remote
// index). Fatal, naming `call`, for a tm that is not a live team or a
// rank outside it.
gex_EP_Location_t LocateEndpoint(const char* call, Runtime& rt, gex_TM_t tm,
                                 gex_Rank_t rank);

// The segment bound to endpoint (tm, rank), as gex_Segment_QueryBound
// reports it (api/segment.cc): false, writing nothing, when it has none or
// (another process's) none was published to this one. Any output may be
// null.
bool BoundSegment(const char* call, Runtime& rt, gex_TM_t tm, gex_Rank_t rank,
                  void** owneraddr_p, void** localaddr_p, uintptr_t* size_p);

}  // namespace gexrt::api

#endif  // GEX_API_ENDPOINT_H_
