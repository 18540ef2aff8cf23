// The segments bound to this client's endpoints, job-wide, by endpoint
// index: what gex_EP_PublishBoundSegment told this process about every
// rank's endpoint of each index (0: the primordial endpoint, whose table
// is also core's SegmentTable, the one the RMA engine reads; 1 and up:
// endpoints made by gex_EP_Create).
//
// A segment GASNet allocated (gex_Segment_Create with no address) lives
// in a PSHM shared object, so a supernode peer maps it at publication and
// reaches it with loads and stores, as it does the primordial segment. A
// segment in the client's own memory cannot be mapped by another process:
// its peers know its address and size only (`local` stays null), and reach
// it through the conduit.
//
// Publication (PublishSegments) is collective over the job or a team: one
// allgather over the bootstrap of every rank's records, the supernode
// peers' objects mapped, a barrier, and then the names removed (so
// nothing is left behind however the job ends), then the conduit's
// PublishSegments hook (registration and remote keys).
//
//   core::CreateSharedSegment(rt, bytes)         // gex_Segment_Create(NULL)
//   core::PublishSegments(rt, {{ep_index, base, size, &object}}, &any0)
//   rt.endpoint_segments.segment(ep_index, rank)   // QueryBound, RMA
#ifndef GEX_CORE_ENDPOINT_SEGMENTS_H_
#define GEX_CORE_ENDPOINT_SEGMENTS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "bootstrap/bootstrap.h"
#include "pshm/shared_object.h"
#include "rma/segment_view.h"

namespace gexrt::core {

class Runtime;

// GASNET_MAXEPS: endpoints per process, the primordial one included.
inline constexpr uint32_t kMaxEndpoints = 32;

class EndpointSegments {
 public:
  EndpointSegments() = default;
  EndpointSegments(const EndpointSegments&) = delete;
  EndpointSegments& operator=(const EndpointSegments&) = delete;

  // Whether rank `r`'s endpoint `ep` has had a segment published to this
  // process.
  bool published(uint32_t ep, Rank r) const {
    return ep < kMaxEndpoints && r < tables_[ep].size() &&
           tables_[ep][r].published;
  }
  // That segment (all zero when none was published).
  rma::SegmentEntry segment(uint32_t ep, Rank r) const {
    return published(ep, r) ? tables_[ep][r].entry : rma::SegmentEntry{};
  }
  // Endpoint `ep` (< kMaxEndpoints)'s segments by rank, as the RMA engine
  // reads a table: one object per index for the life of the process, which
  // every publication of that index updates (an engine built before the
  // first one sees the later ones).
  const rma::SegmentView& view(uint32_t ep) const { return spans_[ep]; }

  // Records rank `r`'s endpoint `ep` segment; `mapping` (may be empty)
  // is this process's mapping of it, kept until it is replaced. `size`:
  // the job's size.
  void Set(uint32_t ep, Rank r, Rank size, const rma::SegmentEntry& entry,
           pshm::SharedObject mapping);

 private:
  struct Slot {
    rma::SegmentEntry entry;
    bool published = false;
    pshm::SharedObject mapping = pshm::SharedObject::Empty();
  };
  std::array<std::vector<Slot>, kMaxEndpoints> tables_;
  std::array<std::vector<rma::SegmentEntry>, kMaxEndpoints> views_;
  std::array<rma::SegmentView, kMaxEndpoints> spans_;
};

// A segment this process publishes.
struct LocalSegment {
  uint32_t ep_index = 0;
  // In this process (size 0: the endpoint has no segment; published as
  // such, which the spec allows, and nothing is recorded).
  void* base = nullptr;
  size_t size = 0;
  // The shared object holding it (a segment GASNet allocated), or null
  // for client memory. Its name is removed once every peer has mapped it.
  pshm::SharedObject* object = nullptr;
  uint32_t serial = 0;  // The object's serial (ObjectName).
};

// The memory of a segment this runtime allocated (a PSHM shared object,
// so supernode peers can map it): the name api/ holds it by, which keeps
// api/ off pshm/ (tools/check_seam.sh).
using SegmentObject = pshm::SharedObject;

// Creates a shared object of `size` bytes (rounded up to whole pages) for
// a segment GASNet allocates; `serial` receives the serial it was given.
// Not collective.
absl::StatusOr<pshm::SharedObject> CreateSharedSegment(Runtime& rt, size_t size,
                                                       uint32_t* serial);

// Who takes part in a publication other than the job's: a team's members
// (job ranks, in the order `allgather` lays out their contributions) and
// the team's collectives. Such a publication does not reach the conduit
// (its hooks are collective over the job): it records addresses and maps
// supernode peers' shared segments only.
struct PublishGroup {
  std::vector<Rank> members;
  // Gathers `bytes` bytes from every member into `out`, in member order.
  std::function<void(const void* mine, size_t bytes, void* out)> allgather;
  std::function<void()> barrier;
};

// Publishes `mine` (endpoint indices distinct, each below kMaxEndpoints)
// to every rank and records every rank's in rt.endpoint_segments.
// Collective over the job (every rank calls it, with its own list, maybe
// empty). `local_error`: this rank's arguments were bad (it still joins
// the exchange, publishing nothing, so no rank waits forever); every rank
// then returns an error naming the ranks. On success, `primordial` (when
// not null) tells whether some rank published endpoint 0; the caller
// then refreshes rt.segments (RefreshPrimordialTable).
// `group`: null for the whole job (over the bootstrap), else a team's.
// Endpoint 0 (the primordial endpoint's segment, published over any team,
// again if the client likes): the conduit's AttachSegment runs once, in
// the publication whose members are the whole job and after which every
// rank has published a segment for it (rt.conduit_segments then true);
// the shared object's name stays until a publication reaches every rank.
// A segment this process mapped at an earlier publication keeps that
// mapping.
absl::Status PublishSegments(Runtime& rt, absl::Span<const LocalSegment> mine,
                             bool local_error, bool* primordial,
                             const PublishGroup* group = nullptr);

// Copies endpoint 0's published segments into rt.segments (the table the
// RMA engine, the AM router's Long path and the API's checks read).
void RefreshPrimordialTable(Runtime& rt);

}  // namespace gexrt::core

#endif  // GEX_CORE_ENDPOINT_SEGMENTS_H_
