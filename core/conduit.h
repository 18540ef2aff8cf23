// The conduit seam: what a network driver (conduit/<name>) implements so
// that everything above it (the C and C++ APIs, RMA, the barrier and
// collectives, the exit protocol) runs over it unchanged.
//
// A conduit carries traffic to the ranks OUTSIDE this rank's supernode.
// Supernode peers are reached through PSHM (pshm/), which core/ drives
// itself: the router (core/router.h) tests "is the peer in my supernode"
// inline and calls the conduit only otherwise, so nothing here is on the
// shared-memory fast path, and a virtual call costs nothing next to a
// network send. smp (conduit/smp) is the smallest conduit: every rank must
// be a supernode peer, so it has no traffic of its own.
//
// Life of a conduit (core/runtime.cc calls these, in this order):
//   StartUp     before anything else, on the process as it was started
//               (smp: GASNET_PSHM_NODES makes it the job's launcher);
//   CheckJob    whether it can reach the job as the node map places it;
//   Init        collective: endpoints, address exchange over the bootstrap;
//   AttachSegment  collective: registration, remote-key exchange;
//   Request/Reply/Poll, Put/Get  while the job runs, from any thread in
//               PAR mode (InitArgs::thread_safe);
//   Fini        at exit, before the bootstrap's.
//
// Inbound messages go to core's dispatcher through InitArgs::sink, one
// plain function call per message. A Request's `reply` handle is the
// conduit's own; the token carries it, and a Reply to that token comes
// back to this conduit's Reply() (a reply goes back the way its request
// came).
#ifndef GEX_CORE_CONDUIT_H_
#define GEX_CORE_CONDUIT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "am/vocabulary.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/node_map.h"
#include "rma/atomic.h"
#include "rma/event.h"

namespace gexrt {
class WaitPolicy;  // base/wait_policy.h
}  // namespace gexrt

namespace gexrt::core {

using am::Category;
using am::SendStatus;

// What a conduit can do, for core to choose paths and for tools to print.
struct Capabilities {
  // Put/Get by the network itself (the RMA ladder's middle rung); without
  // it, RMA to off-supernode peers goes over Active Messages.
  bool rdma_put = false;
  bool rdma_get = false;
  // Reserve/Commit build a negotiated-payload message in the conduit's own
  // buffer; without it core's default (a bounce buffer, sent at Commit).
  bool negotiated_payload = false;
};

// A message to send.
struct Outbound {
  Category category = Category::kShort;
  uint8_t handler = 0;
  uint8_t nargs = 0;
  const uint32_t* args = nullptr;
  // A Medium's bytes, or a Long's source.
  const void* payload = nullptr;
  size_t len = 0;
  // A Long's destination, in the target's segment as the target sees it.
  uint64_t long_dest = 0;
};

// A message that arrived, as the conduit hands it to core. Valid for the
// duration of the Deliver call only.
struct Inbound {
  Rank source = 0;
  Category category = Category::kShort;
  bool is_request = false;
  uint8_t handler = 0;
  uint8_t nargs = 0;
  const uint32_t* args = nullptr;
  // A Medium's bytes; a Long's destination in this rank's segment, where
  // the conduit has already written the payload.
  void* payload = nullptr;
  size_t len = 0;
  // A Request's: the conduit's handle for its reply, given back to Reply().
  void* reply = nullptr;
};

// Where inbound messages go: core's dispatcher.
struct Sink {
  void (*deliver)(void* context, const Inbound& message) = nullptr;
  void* context = nullptr;
  void Deliver(const Inbound& m) const { deliver(context, m); }
};

// The rest of this rank's progress (the supernode's PSHM network), for a
// conduit's waits. A send that waits for room must keep polling every
// transport, not only its own: otherwise a rank waiting on the conduit and
// a supernode peer waiting on it through PSHM can wait for each other
// forever (tests/core's flood job did). `replies_only`: the wait is a
// Reply's, so only reply handlers may run.
struct OtherProgress {
  int (*poll)(void* context, bool replies_only) = nullptr;
  void* context = nullptr;
  int Poll(bool replies_only) const {
    return poll == nullptr ? 0 : poll(context, replies_only);
  }
};

struct InitArgs {
  Bootstrap* bootstrap = nullptr;
  const NodeMap* map = nullptr;
  // GASNET_PAR: any thread may send and poll.
  bool thread_safe = false;
  // More ranks than cores on this host: waits should yield.
  bool polite = false;
  // The runtime's wait policy (base/wait_policy.h), shared by every wait of
  // the process: a conduit wait that takes a WaitPolicy::Round per round
  // counts its PAR thread with the others and spins or yields as they do.
  // Null in tests that build a conduit alone.
  WaitPolicy* waits = nullptr;
  Sink sink;
  // Polled, besides the conduit's own queues, by every wait of Request
  // and Reply.
  OtherProgress others;
};

// One remote atomic operation in rma/atomic.h's vocabulary: a type
// (kDt*), one opcode (kOp*), and the operands as 64-bit patterns (for CAS,
// operand1 is the value compared and operand2 the one stored).
struct AtomicOp {
  uint32_t dt = 0;
  uint32_t op = 0;
  uint64_t operand1 = 0;
  uint64_t operand2 = 0;
};

// A segment bound to one of this rank's endpoints (Conduit::PublishSegments).
struct PublishedSegment {
  uint32_t ep_index = 0;  // 0: the primordial endpoint.
  void* base = nullptr;   // In this process; null with size 0: none.
  size_t size = 0;
};

// A negotiated-payload message between Reserve and Commit or Cancel. The
// conduit may keep what it likes in `state`; `buffer` is where the client
// writes up to `capacity` bytes of Medium payload.
struct Reservation {
  bool is_request = false;
  Rank dest = 0;          // A Request's.
  void* reply = nullptr;  // A Reply's handle.
  Category category = Category::kMedium;
  uint8_t nargs = 0;
  void* buffer = nullptr;
  size_t capacity = 0;
  uintptr_t state[4] = {};
};

class Conduit {
 public:
  virtual ~Conduit() = default;

  // "smp", "ofi", ...: names gasnetrun_<name> and messages.
  virtual const char* name() const = 0;
  virtual Capabilities capabilities() const = 0;

  // Before anything else in gex_Client_Init, on the process as it was
  // started. May take the process over and not return (smp starts the job
  // itself under GASNET_PSHM_NODES). Default: nothing.
  virtual void StartUp(int* argc, char*** argv) {}

  // Whether this conduit can reach every rank of the job as `map` places
  // them (every rank sees the same map, so every rank agrees). An error
  // names why not; gex_Client_Init then fails on every rank.
  virtual absl::Status CheckJob(const NodeMap& map) const {
    return absl::OkStatus();
  }

  // Collective over the job: endpoints, address exchange.
  virtual absl::Status Init(const InitArgs& args) = 0;

  // The largest Medium payload and Long payload of one message to a rank
  // this conduit serves (the API reports the smaller of this and PSHM's).
  virtual size_t MaxMedium() const = 0;
  virtual size_t MaxLong() const = 0;

  // Sends a Request to `dest` (never a supernode peer). The payload has
  // been copied out, or sent, when it returns. With `immediate` returns
  // kWouldBlock, having sent nothing, where it would have to wait;
  // otherwise waits, polling its own queues and InitArgs::others (so ranks
  // flooding each other cannot deadlock; a Reply's wait polls replies
  // only).
  virtual SendStatus Request(Rank dest, const Outbound& m, bool immediate) = 0;
  // Replies to the Request whose Inbound::reply was `reply`, from inside
  // its handler.
  virtual SendStatus Reply(void* reply, const Outbound& m, bool immediate) = 0;

  // Negotiated payload. The defaults give a bounce buffer (the client
  // writes into memory of the Reservation's, sent by Commit as an ordinary
  // Request or Reply); a conduit with capabilities().negotiated_payload
  // overrides all three to build the message in place.
  virtual SendStatus Reserve(Reservation& r, size_t max_payload,
                             bool immediate);
  virtual void Commit(Reservation& r, const Outbound& m);
  virtual void Cancel(Reservation& r);

  // Delivers what has arrived (through the Sink); returns how many
  // messages were delivered.
  virtual int Poll() = 0;

  // Collective over the job, once: this rank's segment is [base, +size)
  // (size 0: none). Registration and remote-key exchange go here.
  virtual absl::Status AttachSegment(void* base, size_t size) {
    return absl::OkStatus();
  }

  // Collective over the job: segments bound to this rank's endpoints
  // that gex_EP_PublishBoundSegment publishes (`mine`, maybe empty: every
  // rank calls it, once per publication). Endpoint 0's segments come to
  // AttachSegment instead (gex_Segment_Attach not called): once, in the
  // publication after which every rank has published one. A conduit with RDMA
  // registers these and exchanges their keys here. Default: nothing (Active
  // Messages reach any of them: a Long's destination is written by the target).
  virtual absl::Status PublishSegments(
      const std::vector<PublishedSegment>& mine) {
    return absl::OkStatus();
  }

  // RDMA (capabilities().rdma_put / rdma_get). [dest, +len) or
  // [src, +len) lies in `rank`'s segment, as `rank` sees it; `rc` (and
  // `lc` when not null) get Complete() once the data has arrived (the
  // source may be reused). false: `immediate`, and nothing was started.
  virtual bool Put(Rank rank, void* dest, const void* src, size_t len,
                   bool immediate, rma::Counter& rc, rma::Counter* lc) {
    return false;
  }
  virtual bool Get(void* dest, Rank rank, const void* src, size_t len,
                   bool immediate, rma::Counter& rc) {
    return false;
  }

  // Remote atomics performed by the network (gasnet_ratomic.h). The
  // opcodes of type `dt` (one rma::kDt*) this conduit performs itself;
  // default none. An atomic domain whose type and every opcode are in
  // this set sends all its operations here, to supernode peers and to this
  // rank as well (a network atomic need not be atomic against a CPU one,
  // so one domain never mixes the two); any other domain takes the generic
  // path (api/ratomic.cc: CPU atomics where the segment is mapped, Active
  // Messages otherwise).
  virtual uint32_t AtomicOps(uint32_t dt) const { return 0; }
  // Readies Atomic() for every rank of the job, this one and its supernode
  // peers included (endpoints and keys the conduit does not keep for its
  // own traffic). Called by gex_AD_Create, after the segment is attached,
  // for each domain it sends here; not collective; may be called again.
  virtual absl::Status PrepareAtomics() { return absl::OkStatus(); }
  // Starts `op` on the object at `target` in `rank`'s segment (as `rank`
  // sees it). The old value (for a fetching opcode, `result` not null) is
  // written to `result` before `c` gets Complete(). false: `immediate`,
  // and nothing was started.
  virtual bool Atomic(Rank rank, void* target, const AtomicOp& op, void* result,
                      bool immediate, rma::Counter& c) {
    return false;
  }
  // Orders this thread's Atomic() calls: none started after it is
  // performed at its target before every one started before it is
  // (GEX_FLAG_AD_REL, which must not see an earlier operation overtaken
  // by a later one over another path of the network). Default: nothing
  // (a conduit whose atomics stay in issue order).
  virtual void FenceAtomics() {}

  // Moves what this rank has queued to send onto the network without
  // delivering anything (no handler runs). Called over and over while a
  // bootstrap collective waits (Bootstrap::SetWaitHook): a network that
  // sends only when driven (libfabric's manual progress) would otherwise
  // hold the last messages sent before the collective, and a peer that
  // waits for them in a barrier would never leave it. Default: nothing
  // (the network sends by itself).
  virtual void ProgressSends() {}

  // Returns once every message this rank has sent so far has been handed
  // to the network (the provider's transmit completion: the bytes have
  // left this process, not necessarily arrived), polling meanwhile, so
  // handlers may run. Called when a barrier completes on this rank (never
  // from a handler): the client may then compute without calling GASNet,
  // and a network that moves a queued send only when driven (libfabric's
  // manual progress) would keep that barrier's last message, and the peer
  // waiting for it in the same barrier, until this rank's next call.
  // Default: nothing (the network sends by itself).
  virtual void FlushSends() {}

  // The job is ending (after the exit protocol, before the bootstrap's
  // Fini): release the network.
  virtual void Fini() {}
};

// The start of a network conduit's Init: whether `args` has what every
// conduit needs (an error naming `conduit` otherwise), and the wait policy
// its waits take: the runtime's, or, for a conduit built alone (unit
// tests), `own`, configured as the runtime would for one rank.
absl::StatusOr<WaitPolicy*> CheckInitArgs(const char* conduit,
                                          const InitArgs& args,
                                          WaitPolicy& own);

// Defined once by each conduit's library (conduit/<name>): the process's
// conduit. The final library a client links (gasnet_<name>_seq/_par)
// holds exactly one.
std::unique_ptr<Conduit> CreateConduit();

}  // namespace gexrt::core

#endif  // GEX_CORE_CONDUIT_H_
