// The state of one process's GASNet runtime below the API: the job
// (bootstrap, node map), the two ways to reach a peer (the supernode's
// PSHM network, the conduit), the handler table, the job-wide segment
// table and the functions that run on each round of progress.
//
// One per process (GASNet-EX supports one client), built by Init at
// gex_Client_Init and alive until the process exits. The API layer keeps
// its C objects in a class derived from this one (api/runtime.h).
//
//   core::Init(rt, std::move(options), "gex_Client_Init");  // collective
//   core::AttachSegment(rt, bytes);                          // collective
//   core::Request(rt, peer, ...);    // core/router.h
//   core::Progress(rt);              // core/progress.h
#ifndef GEX_CORE_RUNTIME_H_
#define GEX_CORE_RUNTIME_H_

#include <cstddef>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "am/handler_table.h"
#include "base/wait_policy.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/node_map.h"
#include "core/conduit.h"
#include "core/endpoint_segments.h"
#include "core/progress_list.h"
#include "core/segment_table.h"
#include "pshm/am_network.h"
#include "pshm/queue_layout.h"
#include "pshm/supernode.h"

namespace gexrt::core {

// The largest Medium or Long payload PSHM carries: the limit for every
// destination until a conduit with smaller ones has peers.
inline constexpr size_t kSharedMaxPayload = pshm::kMaxMedium;

class Runtime {
 public:
  Runtime() = default;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  virtual ~Runtime() = default;

  Rank rank = 0;
  Rank size = 1;
  bool thread_safe = false;  // GASNET_PAR
  // Yield while waiting: more ranks than CPUs on this host, or
  // gasnet_set_waitmode(GASNET_WAIT_BLOCK). Kept equal to
  // waits.always_yield() (set both).
  bool polite = false;
  // How this process's waits (core's and the PSHM network's) spin or
  // yield: besides `polite`, a PAR client's waiting threads are counted,
  // and once they (times the ranks on this host) outnumber the CPUs, waits
  // spin a bounded number of rounds and then yield.
  WaitPolicy waits;

  // GASNET_STARTUP_TIMES=1: the start-up phases' durations (microseconds),
  // printed as one line per rank when the segment is attached (the scale
  // benchmark reads them). Off: one environment read at init, nothing else.
  struct StartupTimes {
    bool report = false;
    int64_t bootstrap_us = 0;  // the bootstrap and its node-map exchange
    int64_t pshm_us = 0;       // the supernode's shared memory
    int64_t conduit_us = 0;    // the conduit's Init (its address exchange)
  };
  StartupTimes startup_times;

  std::unique_ptr<Bootstrap> bootstrap;
  std::optional<NodeMap> map;
  std::unique_ptr<pshm::Supernode> supernode;
  pshm::AmNetwork* net = nullptr;  // The supernode's.
  std::unique_ptr<Conduit> conduit;
  Capabilities capabilities;
  // Some rank of the job is outside this supernode: the conduit carries
  // traffic and is polled (never on smp).
  bool conduit_has_peers = false;
  // The largest payloads any destination accepts (the smaller of PSHM's
  // and, when it has peers, the conduit's).
  size_t max_medium = 0;
  size_t max_long = 0;

  am::HandlerTable handlers;
  SegmentTable segments;
  // The conduit has registered the primordial segments (its AttachSegment
  // ran: at gex_Segment_Attach, or once every rank of the job had
  // published one through gex_EP_PublishBoundSegment). Until then the
  // RDMA rung and Long-by-RDMA may not address them.
  bool conduit_segments = false;
  // Every rank's published endpoint segments, by endpoint index
  // (gex_EP_PublishBoundSegment).
  EndpointSegments endpoint_segments;
  ProgressList progress;
};

struct InitOptions {
  std::unique_ptr<Conduit> conduit;
  bool thread_safe = false;
  // The program's arguments, for Conduit::StartUp (may be null).
  int* argc = nullptr;
  char*** argv = nullptr;
};

// Builds `rt`: the conduit's StartUp, the bootstrap, the node map, the
// conduit's CheckJob, the supernode's PSHM network, the conduit's Init.
// Collective over the job. A failure is fatal, naming `call`. Messages
// may be dispatched (to `rt`'s handler table) once this returns.
void Init(Runtime& rt, InitOptions options, const char* call);

// Creates and maps this rank's segment of `size` bytes and every
// supernode peer's (PSHM), registers it with the conduit, and fills the
// job-wide segment table. Collective, once; an error (the same on every
// rank) names the cause.
absl::Status AttachSegment(Runtime& rt, size_t size);

}  // namespace gexrt::core

#endif  // GEX_CORE_RUNTIME_H_
