// Segments beyond gex_Segment_Attach: gex_Segment_Create (host memory, the
// client's or allocated here), gex_EP_BindSegment,
// gex_EP_PublishBoundSegment (over the primordial team or a sub-team),
// gex_Segment_QueryBound, gex_Segment_Destroy and gex_Segment_QueryKind.
//
// Where a published segment can be reached from (docs: README, "Segments
// and endpoints"): a segment allocated here lives in a PSHM shared object,
// so supernode peers map it at publication and Put/Get to it is a memcpy,
// as for the primordial segment; a segment in the client's memory is
// reached by its own process, and by ranks outside the supernode through
// the conduit. Bound to the primordial endpoint (instead of
// gex_Segment_Attach) it becomes the segment every RMA, AM Long, VIS and
// atomic call through the primordial team addresses.
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "am/token.h"
#include "api/endpoint.h"
#include "api/rma.h"
#include "api/runtime.h"
#include "api/team.h"
#include "base/fatal.h"
#include "bootstrap/current_call.h"
#include "core/endpoint_segments.h"
#include "gasnet_coll.h"

using gexrt::ScopedCurrentCall;
using gexrt::api::EndpointRecord;
using gexrt::api::ReportError;
using gexrt::api::Runtime;
using gexrt::api::RuntimeFor;
using gexrt::api::SegmentRecord;

namespace {

[[noreturn]] void NotASegment(const char* call, gex_Segment_t s) {
  gexrt::FatalErrorF(
      "%s: segment %p is not a live segment of this client (never "
      "created, or destroyed)",
      call, static_cast<void*>(s));
}

EndpointRecord& CheckEndpoint(const char* call, gex_EP_t ep) {
  EndpointRecord* e = gexrt::api::FindEndpoint(ep);
  if (e == nullptr) {
    gexrt::FatalErrorF("%s: ep %p is not one of this client's endpoints", call,
                       static_cast<void*>(ep));
  }
  return *e;
}

}  // namespace

namespace gexrt::api {

bool BoundSegment(const char* call, Runtime& rt, gex_TM_t tm, gex_Rank_t rank,
                  void** owneraddr_p, void** localaddr_p, uintptr_t* size_p) {
  const gex_EP_Location_t loc = LocateEndpoint(call, rt, tm, rank);
  void* owner = nullptr;
  void* local = nullptr;
  uintptr_t size = 0;
  if (loc.gex_rank == rt.rank) {
    // One of this process's endpoints: its bound segment, published or not.
    gex_EP_t ep = EndpointByIndex(loc.gex_ep_index);
    if (ep == nullptr || ep->segment == nullptr) return false;
    owner = local = ep->segment->addr;
    size = ep->segment->size;
  } else if (loc.gex_ep_index == 0 && rt.segments.attached()) {
    const rma::SegmentEntry s = rt.segments.segment(loc.gex_rank);
    if (s.size == 0) return false;
    owner = reinterpret_cast<void*>(s.base);
    local = s.local;
    size = s.size;
  } else {
    if (!rt.endpoint_segments.published(loc.gex_ep_index, loc.gex_rank)) {
      return false;
    }
    const rma::SegmentEntry s =
        rt.endpoint_segments.segment(loc.gex_ep_index, loc.gex_rank);
    owner = reinterpret_cast<void*>(s.base);
    local = s.local;
    size = s.size;
  }
  if (owneraddr_p != nullptr) *owneraddr_p = owner;
  if (localaddr_p != nullptr) *localaddr_p = local;
  if (size_p != nullptr) *size_p = size;
  return true;
}

}  // namespace gexrt::api

extern "C" {

int gex_Segment_Create(gex_Segment_t* segment_p, gex_Client_t client,
                       void* address, uintptr_t length, gex_MK_t kind,
                       gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_Segment_Create";
  const ScopedCurrentCall current(kCall);
  Runtime& rt = RuntimeFor(kCall);
  if (segment_p == nullptr) {
    return ReportError(kCall, GASNET_ERR_BAD_ARG, "segment_p is NULL");
  }
  if (client != &rt.client) {
    return ReportError(kCall, GASNET_ERR_BAD_ARG,
                       "client is not this process's client");
  }
  if (kind != GEX_MK_HOST) {
    return ReportError(
        kCall, GASNET_ERR_BAD_ARG,
        absl::StrFormat("kind %p: only GEX_MK_HOST (host memory) is "
                        "available here",
                        static_cast<void*>(kind)));
  }
  if (flags != 0) {
    return ReportError(kCall, GASNET_ERR_BAD_ARG,
                       absl::StrFormat("flags %#x must be 0", flags));
  }
  if (length == 0) {
    return ReportError(kCall, GASNET_ERR_BAD_ARG, "length is 0");
  }
  if (address != nullptr && reinterpret_cast<uintptr_t>(address) + length <
                                reinterpret_cast<uintptr_t>(address)) {
    return ReportError(
        kCall, GASNET_ERR_BAD_ARG,
        absl::StrFormat("[%p, +%u) wraps the address space", address, length));
  }
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  auto record = std::make_unique<SegmentRecord>();
  record->segment.client = &rt.client;
  record->segment.size = length;
  record->kind = kind;
  if (address == nullptr) {
    absl::StatusOr<gexrt::core::SegmentObject> object =
        gexrt::core::CreateSharedSegment(rt, length, &record->serial);
    if (!object.ok()) {
      return ReportError(kCall, GASNET_ERR_RESOURCE,
                         std::string(object.status().message()));
    }
    record->segment.addr = object->address();
    record->object.emplace(*std::move(object));
  } else {
    record->segment.addr = address;
  }
  SegmentRecord* r = record.release();  // Until gex_Segment_Destroy.
  gexrt::api::AddCreatedSegment(r);
  *segment_p = &r->segment;
  return GASNET_OK;
}

void gex_Segment_Destroy(gex_Segment_t segment, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_Segment_Destroy";
  const ScopedCurrentCall current(kCall);
  Runtime& rt = RuntimeFor(kCall);
  if (segment == &rt.segment) {
    gexrt::FatalErrorF(
        "%s: gex_Segment_Attach's segment lives as long as the client", kCall);
  }
  SegmentRecord* r = gexrt::api::FindCreatedSegment(segment);
  if (r == nullptr) NotASegment(kCall, segment);
  if ((flags & ~GEX_FLAG_GLOBALLY_QUIESCED) != 0) {
    gexrt::FatalErrorF(
        "%s: flags %#x: only GEX_FLAG_GLOBALLY_QUIESCED is "
        "accepted",
        kCall, flags);
  }
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  if (r->bound_to == &rt.ep) {
    gexrt::FatalErrorF(
        "%s: segment %p is the primordial endpoint's (it lives as long as "
        "the client)",
        kCall, static_cast<void*>(segment));
  }
  if (r->published && (flags & GEX_FLAG_GLOBALLY_QUIESCED) == 0) {
    gexrt::FatalErrorF(
        "%s: segment %p was published (gex_EP_PublishBoundSegment): peers "
        "may still address it; destroy it with GEX_FLAG_GLOBALLY_QUIESCED "
        "once no communication on it is in flight anywhere",
        kCall, static_cast<void*>(segment));
  }
  if (r->bound_to != nullptr) r->bound_to->segment = nullptr;
  gexrt::api::RemoveCreatedSegment(r);
  // A shared object is unmapped here; peers that mapped it keep their
  // mapping (the memory goes with the last one).
  delete r;
}

gex_MK_t gex_Segment_QueryKind(gex_Segment_t segment) {
  static constexpr char kCall[] = "gex_Segment_QueryKind";
  Runtime& rt = RuntimeFor(kCall);
  if (segment == &rt.segment) return GEX_MK_HOST;
  const SegmentRecord* r = gexrt::api::FindCreatedSegment(segment);
  if (r == nullptr) NotASegment(kCall, segment);
  return r->kind;
}

int gex_EP_BindSegment(gex_EP_t ep, gex_Segment_t segment, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_EP_BindSegment";
  const ScopedCurrentCall current(kCall);
  Runtime& rt = RuntimeFor(kCall);
  EndpointRecord& e = CheckEndpoint(kCall, ep);
  SegmentRecord* r = gexrt::api::FindCreatedSegment(segment);
  if (r == nullptr) {
    if (segment == &rt.segment) {
      gexrt::FatalErrorF(
          "%s: gex_Segment_Attach's segment is bound to the primordial "
          "endpoint already",
          kCall);
    }
    NotASegment(kCall, segment);
  }
  if (flags != 0) gexrt::FatalErrorF("%s: flags %#x must be 0", kCall, flags);
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  if (ep->segment != nullptr || (e.index == 0 && rt.attached)) {
    gexrt::FatalErrorF(
        "%s: endpoint %u already has a bound segment (an endpoint binds "
        "one segment, once)",
        kCall, static_cast<unsigned>(e.index));
  }
  if (r->bound_to != nullptr) {
    gexrt::FatalErrorF(
        "%s: segment %p is already bound to endpoint %u (a segment binds to "
        "one endpoint)",
        kCall, static_cast<void*>(segment),
        static_cast<unsigned>(gexrt::api::EndpointIndex(kCall, r->bound_to)));
  }
  if (e.index == 0 && !r->object.has_value() &&
      rt.map->my_supernode_members().size() > 1) {
    // The primordial segment is the one supernode peers copy into
    // directly (and PSHM Longs land in): it must be mappable by them.
    gexrt::FatalErrorF(
        "%s: the primordial endpoint's segment must be one GASNet allocates "
        "(gex_Segment_Create with address NULL) so that this rank's "
        "supernode peers can map it; client memory can be bound to an "
        "endpoint made by gex_EP_Create",
        kCall);
  }
  r->bound_to = ep;
  r->published = false;
  ep->segment = segment;
  return GASNET_OK;
}

int gex_EP_PublishBoundSegment(gex_TM_t tm, gex_EP_t* eps, size_t num_eps,
                               gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_EP_PublishBoundSegment";
  const ScopedCurrentCall current(kCall);
  Runtime& rt = RuntimeFor(kCall);
  // Over a sub-team: the team's gather-all and barrier, and no conduit
  // hook (the conduit's are collective over the job).
  gexrt::core::PublishGroup group;
  const bool subteam = tm != &rt.tm;
  if (subteam) {
    const gexrt::api::Team& t = gexrt::api::LiveTeam(kCall, tm);
    if (t.pair) {
      return ReportError(kCall, GASNET_ERR_BAD_ARG,
                         "tm is a gex_TM_Pair, which takes no collective "
                         "calls (use a team)");
    }
    group.members = t.members;
    group.allgather = [tm](const void* mine, size_t bytes, void* out) {
      gasnet_coll_gather_all(
          tm, out, const_cast<void*>(mine), bytes,
          GASNET_COLL_IN_MYSYNC | GASNET_COLL_OUT_MYSYNC | GASNET_COLL_LOCAL);
    };
    group.barrier = [tm] { gex_Coll_BarrierBlocking(tm, 0); };
  }
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  // Bad arguments on one rank: it still joins the exchange (publishing
  // nothing), so no rank waits forever; every rank then gets the error.
  std::string problem;
  std::vector<gexrt::core::LocalSegment> mine;
  std::vector<SegmentRecord*> records;
  if (flags != 0) {
    problem = absl::StrFormat("flags %#x must be 0", flags);
  } else if (eps == nullptr && num_eps != 0) {
    problem = absl::StrFormat("eps is NULL with num_eps %zu", num_eps);
  } else if (num_eps > GASNET_MAXEPS) {
    problem = absl::StrFormat(
        "num_eps %zu: more than the GASNET_MAXEPS (%d) endpoints a process "
        "has",
        num_eps, GASNET_MAXEPS);
  }
  for (size_t i = 0; problem.empty() && i < num_eps; ++i) {
    const EndpointRecord* e = gexrt::api::FindEndpoint(eps[i]);
    if (e == nullptr) {
      problem = absl::StrFormat(
          "eps[%zu] (%p) is not one of this client's "
          "endpoints",
          i, static_cast<void*>(eps[i]));
      break;
    }
    for (const gexrt::core::LocalSegment& m : mine) {
      if (m.ep_index == e->index) {
        problem = absl::StrFormat("eps[%zu] names endpoint %u twice", i,
                                  static_cast<unsigned>(e->index));
      }
    }
    gexrt::core::LocalSegment s;
    s.ep_index = e->index;
    SegmentRecord* r = nullptr;
    if (eps[i]->segment != nullptr) {
      r = gexrt::api::FindCreatedSegment(eps[i]->segment);
    }
    if (e->index == 0 && rt.attached && r == nullptr) {
      // gex_Segment_Attach published it to every rank already: nothing
      // new to say, over any team.
      continue;
    }
    // The primordial endpoint's created segment may be published over
    // any team, and again over another (spec, gex_EP_PublishBoundSegment:
    // collective over tm, it publishes the segments bound to eps to tm's
    // members): core records it for the members and hands it to the
    // conduit once every rank of the job has published one.
    if (r != nullptr) {
      s.base = r->segment.addr;
      s.size = r->segment.size;
      if (r->object.has_value()) {
        s.object = &*r->object;
        s.serial = r->serial;
      }
    }
    mine.push_back(s);
    records.push_back(r);
  }
  if (!problem.empty()) {
    ReportError(kCall, GASNET_ERR_BAD_ARG, problem);
    mine.clear();
  }
  bool primordial = false;
  const absl::Status s = gexrt::core::PublishSegments(
      rt, mine, !problem.empty(), &primordial, subteam ? &group : nullptr);
  if (!problem.empty()) return GASNET_ERR_BAD_ARG;
  if (!s.ok()) {
    return ReportError(kCall,
                       s.code() == absl::StatusCode::kInvalidArgument
                           ? GASNET_ERR_BAD_ARG
                           : GASNET_ERR_RESOURCE,
                       std::string(s.message()));
  }
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i] == nullptr) continue;
    records[i]->published = true;
    // This rank's own primordial segment is published: it is the segment
    // of the primordial endpoint from now on (no gex_Segment_Attach).
    if (mine[i].ep_index == 0 && mine[i].size != 0) rt.attached = true;
  }
  if (primordial) {
    // Endpoint 0's segments: the table the RMA engine, AM Longs and the
    // API's checks read, and the inline Put/Get path (and whether the
    // conduit has registered them yet).
    gexrt::core::RefreshPrimordialTable(rt);
    gexrt::api::RmaSegmentsAttached(rt);
  }
  return GASNET_OK;
}

int gex_Segment_QueryBound(gex_TM_t tm, gex_Rank_t rank, void** owneraddr_p,
                           void** localaddr_p, uintptr_t* size_p) {
  static constexpr char kCall[] = "gex_Segment_QueryBound";
  Runtime& rt = RuntimeFor(kCall);
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  return gexrt::api::BoundSegment(kCall, rt, tm, rank, owneraddr_p, localaddr_p,
                                  size_p)
             ? GASNET_OK
             : 1;
}

}  // extern "C"
