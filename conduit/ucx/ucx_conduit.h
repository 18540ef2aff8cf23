// The ucx conduit: core::Conduit over UCX's UCP API, for the ranks outside
// this rank's supernode (README.md: transports, settings, limits).
//
// One UCP context and one worker per process (in PAR mode the worker is
// UCS_THREAD_MODE_MULTI and every thread sends and polls through it).
// UCX reads its own settings with the "GASNET" prefix (GASNET_UCX_TLS,
// GASNET_UCX_NET_DEVICES apply to this context alone). Worker addresses
// are exchanged by Bootstrap::Allgather; an endpoint is created to every
// rank outside the supernode at Init, so an unreachable peer (no common
// transport) fails Init on every rank instead of the first message.
//
// Active Messages: one UCP AM id. A message is our header (category,
// handler, argument count, credits, source, payload length, a Long's
// destination), the arguments, then a Medium's (or small Long's) payload at
// an 8-byte offset, built in a buffer of the request or reply pool (sized
// for GASNET_UCX_MAX_MEDIUM) and sent by ucp_am_send_nbx, eager only; the
// buffer goes back at the send's completion. The receive callback, which
// runs inside ucp_worker_progress, copies the message into a receive-pool
// buffer and queues it: handlers run after progress returns, so they may
// send (UCX forbids progress from its callbacks). A Long larger than a
// Medium is first written by ucp_put_nbx into the target's segment; its
// header follows once the Put is remotely complete (ucp_ep_flush_nbx), or
// at once with GASNET_UCX_AM_ORDERED_TLS.
//
// Flow control: am::Credits, as the ofi conduit. Every Request takes a
// credit, a Reply returns it, an unanswered Request's credit is banked and
// sent back explicitly past the slack. So at most GASNET_AM_CREDITS_PP
// Requests per peer are ever queued at a receiver, the receive pool is
// bounded by credits times peers (plus the Replies to our own Requests),
// and the send pools by their maxima: no traffic pattern makes this
// conduit, or UCX under it, buffer without bound (the seed's bug 4337).
//
// RMA: the segment is mapped by ucp_mem_map at AttachSegment, its packed
// rkey exchanged and unpacked for every conduit peer. A Put is
// ucp_put_nbx (local completion: its callback) then ucp_ep_flush_nbx
// (remote completion: the flush's callback); a Get is ucp_get_nbx. Local
// buffers need no registration.
//
// Remote atomics (GASNET_UCX_OFFLOAD_ATOMICS, default on): the integer
// opcodes UCP has (add, and, or, xor, swap, compare-swap; sub, inc and dec
// as adds, set as a swap, get as an or with 0) by ucp_atomic_op_nbx, each
// in its fetching form with a reply buffer so that its completion means it
// was performed at the target. A domain that uses them sends every
// operation through UCP, this rank's and supernode peers' too: the first
// such domain (PrepareAtomics) creates endpoints to those ranks and
// unpacks their segment keys. Where the transport has no atomics (tcp),
// UCP performs them at the target's worker progress with CPU atomics.
#ifndef GEX_CONDUIT_UCX_UCX_CONDUIT_H_
#define GEX_CONDUIT_UCX_UCX_CONDUIT_H_

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "am/credits.h"
#include "base/wait_policy.h"
#include "conduit/ucx/buffer_pool.h"
#include "conduit/ucx/settings.h"
#include "core/conduit.h"
#include "exit/signals.h"

namespace gexrt::ucx {

// What the conduit has done (a snapshot), for tests and statistics.
struct UcxStats {
  uint64_t requests_sent = 0;
  uint64_t replies_sent = 0;
  uint64_t credit_messages_sent = 0;
  uint64_t credit_waits = 0;  // Requests that found no credit
  uint64_t buffer_waits = 0;  // sends that found their pool empty
  uint64_t rx_buffers = 0;    // receive buffers ever allocated
  uint64_t tx_buffers = 0;    // send buffers ever allocated (both pools)
  uint64_t atomics = 0;       // remote atomics started through UCP
  // What the job's size costs this rank (the scale benchmark and the
  // job-size test read these): the field names are the ones every
  // conduit's stats line uses.
  uint64_t peers = 0;            // other ranks of the job
  uint64_t connected_peers = 0;  // ranks with an AM endpoint (conduit peers)
  uint64_t endpoints = 0;        // UCP endpoints, atomics-only ones included
  uint64_t rkeys = 0;            // unpacked remote keys
  // Bytes the conduit itself allocated for per-peer and fixed state: the
  // per-rank tables (endpoints, segments, keys, addresses, credits) and
  // the AM buffer pools; not what UCX allocates inside.
  uint64_t conduit_bytes = 0;
};

class UcxConduit final : public core::Conduit {
 public:
  UcxConduit();
  ~UcxConduit() override;
  UcxConduit(const UcxConduit&) = delete;
  UcxConduit& operator=(const UcxConduit&) = delete;

  const char* name() const override { return "ucx"; }
  core::Capabilities capabilities() const override;
  // Puts the fatal signals back to the exit layer (see the .cc).
  void StartUp(int* argc, char*** argv) override;
  absl::Status Init(const core::InitArgs& args) override;
  size_t MaxMedium() const override { return settings_.max_medium; }
  size_t MaxLong() const override;
  core::SendStatus Request(Rank dest, const core::Outbound& m,
                           bool immediate) override;
  core::SendStatus Reply(void* reply, const core::Outbound& m,
                         bool immediate) override;
  int Poll() override;
  void ProgressSends() override;
  absl::Status AttachSegment(void* base, size_t size) override;
  bool Put(Rank rank, void* dest, const void* src, size_t len, bool immediate,
           rma::Counter& rc, rma::Counter* lc) override;
  bool Get(void* dest, Rank rank, const void* src, size_t len, bool immediate,
           rma::Counter& rc) override;
  uint32_t AtomicOps(uint32_t dt) const override;
  absl::Status PrepareAtomics() override;
  bool Atomic(Rank rank, void* target, const core::AtomicOp& op, void* result,
              bool immediate, rma::Counter& c) override;
  void FenceAtomics() override;
  void Fini() override;

  UcxStats stats() const;

  // Internal types, public for the UCX callbacks.
  struct Received;
  struct ReplyHandle;
  struct SendOp;
  struct AtomicScratch;

 private:
  struct RemoteSegment {
    uint64_t base = 0;
    uint64_t size = 0;
    ucp_rkey_h rkey = nullptr;
  };

  // UCX callbacks (static trampolines with `this` as their argument).
  static ucs_status_t OnAm(void* arg, const void* header, size_t header_length,
                           void* data, size_t length,
                           const ucp_am_recv_param_t* param);

  absl::Status CreateContext();
  absl::Status ConnectPeers(const NodeMap& map);

  // Builds and sends one message (a Request when `reply` is null;
  // `credits_only`: the hidden credit message).
  core::SendStatus Send(Rank dest, ReplyHandle* reply, const core::Outbound& m,
                        bool credits_only, bool immediate);
  void SendCredits(Rank dest);
  bool TakeCredit(Rank dest, bool immediate);
  unsigned char* TakeBuffer(BufferPool& pool, bool immediate,
                            bool replies_only);
  // Writes a Long's payload into `dest`'s segment before its header.
  void WriteLongPayload(Rank dest, const void* src, size_t len,
                        uint64_t long_dest, bool replies_only);
  // Delivers one queued message (and gives its buffer back).
  void Deliver(unsigned char* msg, size_t len);
  // Delivers up to `budget` queued messages of one queue.
  int DrainQueue(bool replies, int budget);
  // One round of a wait: UCX progress, then what may be delivered.
  int Progress(bool replies_only);
  // Waits (progressing) until every operation `c` started has completed.
  void WaitCounter(const rma::Counter& c, bool replies_only);
  // GASNET_UCX_STATS: one line on stdout at Fini.
  void PrintStats() const;

  // Closes `ep` (forcibly, bounded) and nulls it; null: nothing.
  void CloseEndpoint(ucp_ep_h& ep);
  const RemoteSegment& CheckRemote(const char* call, Rank rank,
                                   const void* address, size_t len) const;
  // `rank`'s segment, once [address, +len) is known to lie in it (fatal
  // otherwise, naming `call`); CheckRemote first checks that Put and Get
  // reach it.
  const RemoteSegment& CheckInSegment(const char* call, Rank rank,
                                      const void* address, size_t len) const;
  ucp_ep_h EndpointOf(Rank rank) const;

  template <typename Poll>
  void WaitRound(Poll&& poll) {
    exit::AtWaitPoint();  // a deferred exit may start here (exit/signals.h)
    WaitPolicy::Round round(*waits_);
    round.PauseIfIdle(poll() != 0);
  }

  Settings settings_;
  bool thread_safe_ = false;
  bool polite_ = false;
  bool ordered_ = false;  // GASNET_UCX_AM_ORDERED_TLS in effect
  WaitPolicy* waits_ = nullptr;
  WaitPolicy own_waits_;
  Rank rank_ = 0;
  Rank size_ = 0;
  core::Sink sink_;
  core::OtherProgress others_;
  Bootstrap* bootstrap_ = nullptr;

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<ucp_ep_h> eps_;  // null: self or a supernode peer
  // Every rank's worker address, `address_stride_` bytes apart (for the
  // endpoints PrepareAtomics creates).
  std::vector<unsigned char> addresses_;
  size_t address_stride_ = 0;
  ucp_mem_h segment_memh_ = nullptr;
  std::vector<RemoteSegment> segments_;
  uintptr_t segment_base_ = 0;
  size_t segment_size_ = 0;
  size_t message_size_ = 0;  // the largest message on the wire
  // Every rank's packed segment key, `key_stride_` bytes apart.
  std::vector<unsigned char> packed_keys_;
  size_t key_stride_ = 0;

  // Remote atomics, by rank (PrepareAtomics): a conduit peer's endpoint and
  // key are its own (eps_, segments_); the rest were created for atomics.
  std::mutex atomics_mutex_;
  bool atomics_ready_ = false;  // under atomics_mutex_
  std::vector<ucp_ep_h> atomic_eps_;
  std::vector<ucp_rkey_h> atomic_rkeys_;
  std::unique_ptr<BufferPool> atomic_pool_;

  std::unique_ptr<am::Credits> credits_;
  std::unique_ptr<BufferPool> request_pool_;
  std::unique_ptr<BufferPool> reply_pool_;
  std::unique_ptr<BufferPool> rx_pool_;
  // Messages received, not yet delivered: Requests and Replies apart, so
  // that a Reply's wait delivers Replies only.
  struct Queued {
    unsigned char* msg;
    size_t len;
  };
  std::deque<Queued> queue_[2];  // [0] Requests, [1] Replies
  std::mutex queue_mutex_;
  std::atomic<int> queued_{0};
  // Wire-up hellos received at Init.
  std::atomic<size_t> hellos_{0};

  // Set once Fini starts: peer errors are expected, later calls do nothing.
  std::atomic<bool> finishing_{false};
  std::atomic<bool> closed_{false};

  struct Counters {
    std::atomic<uint64_t> requests_sent{0}, replies_sent{0},
        credit_messages_sent{0}, credit_waits{0}, buffer_waits{0}, atomics{0};
  };
  Counters counters_;
};

}  // namespace gexrt::ucx

#endif  // GEX_CONDUIT_UCX_UCX_CONDUIT_H_
