// Endpoints: gex_EP_Create (additional endpoints, RMA-only here),
// gex_TM_TranslateRankToEP, gex_System_QueryProgressThreads, and the
// registry of endpoints and created segments (api/endpoint.h).
#include "api/endpoint.h"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_format.h"
#include "am/token.h"
#include "api/team.h"
#include "base/fatal.h"
#include "core/endpoint_segments.h"

static_assert(GASNET_MAXEPS == gexrt::core::kMaxEndpoints);

namespace gexrt::api {
namespace {

struct Registry {
  std::mutex mu;
  // Index i - 1: endpoint i (gex_EP_Create's); they live until exit.
  std::vector<std::unique_ptr<EndpointRecord>> created;
  std::vector<std::unique_ptr<gex_EP_opaque>> handles;
  std::unordered_map<gex_EP_t, EndpointRecord*> by_handle;
  std::unordered_map<gex_Segment_t, SegmentRecord*> segments;
  EndpointRecord primordial;
};

Registry& Reg() {
  static Registry* r = new Registry;  // Lives until exit.
  return *r;
}

}  // namespace

EndpointRecord* FindEndpoint(gex_EP_t ep) {
  Runtime* rt = g_runtime;
  if (rt == nullptr || ep == nullptr) return nullptr;
  Registry& reg = Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  if (ep == &rt->ep) {
    reg.primordial.ep = ep;
    reg.primordial.index = 0;
    reg.primordial.capabilities = GEX_EP_CAPABILITY_ALL;
    return &reg.primordial;
  }
  auto it = reg.by_handle.find(ep);
  return it == reg.by_handle.end() ? nullptr : it->second;
}

SegmentRecord* FindCreatedSegment(gex_Segment_t segment) {
  Registry& reg = Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  auto it = reg.segments.find(segment);
  return it == reg.segments.end() ? nullptr : it->second;
}

void AddCreatedSegment(SegmentRecord* record) {
  Registry& reg = Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  reg.segments[&record->segment] = record;
}

void RemoveCreatedSegment(SegmentRecord* record) {
  Registry& reg = Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  reg.segments.erase(&record->segment);
}

gex_EP_t EndpointByIndex(gex_EP_Index_t index) {
  Runtime* rt = g_runtime;
  if (rt == nullptr) return nullptr;
  if (index == 0) return &rt->ep;
  Registry& reg = Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  return index <= reg.created.size() ? reg.created[index - 1]->ep : nullptr;
}

gex_EP_Index_t EndpointIndex(const char* call, gex_EP_t ep) {
  const Runtime* rt = g_runtime;
  if (rt != nullptr && ep == &rt->ep) return 0;  // No lock for the common one.
  const EndpointRecord* e = FindEndpoint(ep);
  if (e == nullptr) {
    FatalErrorF("%s: ep %p is not one of this client's endpoints", call,
                static_cast<void*>(ep));
  }
  return e->index;
}

gex_EP_Location_t LocateEndpoint(const char* call, Runtime& rt, gex_TM_t tm,
                                 gex_Rank_t rank) {
  if (tm == nullptr) FatalErrorF("%s: tm NULL is not this client's team", call);
  gex_EP_Location_t loc;
  loc.gex_ep_index = 0;
  if (tm == &rt.tm) {
    if (rank >= rt.size) {
      FatalErrorF("%s: rank %u is not in the team (size %u)", call, rank,
                  rt.size);
    }
    loc.gex_rank = rank;
    return loc;
  }
  const Team& t = LiveTeam(call, tm);
  if (t.pair) {
    if (rank >= rt.size) {
      FatalErrorF("%s: rank %u is not a job rank (job of %u)", call, rank,
                  rt.size);
    }
    loc.gex_rank = rank;
    loc.gex_ep_index = t.remote_ep_index;
  } else {
    if (rank >= t.size) {
      FatalErrorF("%s: rank %u is not in the team (size %u)", call, rank,
                  t.size);
    }
    loc.gex_rank = t.members[rank];
  }
  return loc;
}

}  // namespace gexrt::api

using gexrt::api::EndpointRecord;
using gexrt::api::ReportError;
using gexrt::api::Runtime;
using gexrt::api::RuntimeFor;

extern "C" {

int gex_EP_Create(gex_EP_t* ep_p, gex_Client_t client,
                  gex_EP_Capabilities_t capabilities, gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_EP_Create";
  Runtime& rt = RuntimeFor(kCall);
  if (ep_p == nullptr) {
    return ReportError(kCall, GASNET_ERR_BAD_ARG, "ep_p is NULL");
  }
  if (client != &rt.client) {
    return ReportError(kCall, GASNET_ERR_BAD_ARG,
                       "client is not this process's client");
  }
  if (flags != 0) {
    return ReportError(kCall, GASNET_ERR_BAD_ARG,
                       absl::StrFormat("flags %#x must be 0", flags));
  }
  if (capabilities == 0 || (capabilities & ~GEX_EP_CAPABILITY_ALL) != 0) {
    return ReportError(
        kCall, GASNET_ERR_BAD_ARG,
        absl::StrFormat("capabilities %#x: not a set of GEX_EP_CAPABILITY_*",
                        capabilities));
  }
  if ((capabilities & ~gexrt::api::kCreatedEpCapabilities) != 0) {
    return ReportError(
        kCall, GASNET_ERR_BAD_ARG,
        absl::StrFormat(
            "capabilities %#x: an additional endpoint supports "
            "GEX_EP_CAPABILITY_RMA only here (AM, VIS, COLL and AD are "
            "the primordial endpoint's)",
            capabilities));
  }
  if (gexrt::am::HandlerContext::InHandler()) {
    gexrt::FatalErrorF("%s: called from an AM handler", kCall);
  }
  gexrt::api::Registry& reg = gexrt::api::Reg();
  std::lock_guard<std::mutex> lock(reg.mu);
  if (reg.created.size() + 1 >= GASNET_MAXEPS) {
    return ReportError(
        kCall, GASNET_ERR_RESOURCE,
        absl::StrFormat("this process already has GASNET_MAXEPS (%d) "
                        "endpoints",
                        GASNET_MAXEPS));
  }
  auto handle = std::make_unique<gex_EP_opaque>();
  handle->client = &rt.client;
  handle->flags = flags;
  auto record = std::make_unique<EndpointRecord>();
  record->ep = handle.get();
  record->index = static_cast<gex_EP_Index_t>(reg.created.size() + 1);
  record->capabilities = capabilities;
  reg.by_handle[handle.get()] = record.get();
  *ep_p = handle.get();
  reg.handles.push_back(std::move(handle));
  reg.created.push_back(std::move(record));
  return GASNET_OK;
}

gex_EP_Location_t gex_TM_TranslateRankToEP(gex_TM_t tm, gex_Rank_t rank,
                                           gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_TM_TranslateRankToEP";
  Runtime& rt = RuntimeFor(kCall);
  if (flags != 0) gexrt::FatalErrorF("%s: flags %#x must be 0", kCall, flags);
  return gexrt::api::LocateEndpoint(kCall, rt, tm, rank);
}

int gex_System_QueryProgressThreads(gex_Client_t client, unsigned int* count_p,
                                    const gex_ProgressThreadInfo_t** info_p,
                                    gex_Flags_t flags) {
  static constexpr char kCall[] = "gex_System_QueryProgressThreads";
  Runtime& rt = RuntimeFor(kCall);
  if (client != &rt.client || count_p == nullptr || info_p == nullptr) {
    return ReportError(kCall, GASNET_ERR_BAD_ARG,
                       "client is not this process's client, or count_p or "
                       "info_p is NULL");
  }
  if (flags != 0) {
    return ReportError(kCall, GASNET_ERR_BAD_ARG,
                       absl::StrFormat("flags %#x must be 0", flags));
  }
  // No progress threads: nothing for the client to run.
  static const gex_ProgressThreadInfo_t kNone[1] = {};
  *count_p = 0;
  *info_p = kNone;
  return GASNET_OK;
}

}  // extern "C"
