// The ibv conduit: core::Conduit over InfiniBand verbs, for the ranks
// outside this rank's supernode (README.md: ports, settings, limits).
//
// Everything goes through the narrow verbs interface of ./verbs, so the
// same code runs on a real HCA (libibverbs) and on the software device the
// test suite uses where none exists (GASNET_IBV_SOFTWARE_DEVICE).
//
// Rails: one per chosen port (ports.h), each its own device context,
// protection domain, send and receive completion queues, and (with SRQ)
// shared receive queue; the segment and the AM buffers are registered on
// every rail. To each peer go GASNET_NUM_QPS reliable-connected QPs (one
// per rail by default), connected at Init through the bootstrap exchange
// (static connections; GASNET_CONNECTFILE_IN limits which,
// GASNET_CONNECTFILE_OUT records those used) or on first use by a
// REQ/REP/RTU handshake over one UD QP per rank (dynamic connections,
// GASNET_CONNECT_DYNAMIC). Active Messages travel on a peer's first QP;
// RMA is striped over all of them (GASNET_PUT/GET_STRIPE_SZ), with a
// fencing READ behind each Put piece under GASNET_USE_FENCED_PUTS.
//
// Active Messages (the seed's Core API section): every message is a SEND
// of our header, the arguments and a Medium's (or a packed Long's)
// payload, inline when it fits GASNET_INLINESEND_LIMIT, else from a
// registered send buffer (GASNET_BBUF_COUNT), or gathered from the segment
// without a copy (GASNET_AM_GATHER_MIN). The format is core/am_wire.h's. A
// larger Long is an RDMA WRITE into the target's segment followed by its header
// on the same QP (RC delivers them in order). Flow control by am::Credits: a
// Request takes a credit; the target posts a replacement receive buffer before
// running a Request handler (from GASNET_RBUF_SPARES; with none left it
// copies the message out and reposts the same buffer); the Reply, or the
// banked credit on the next message back, or an explicit credit message
// (the SYS_ack) past GASNET_AM_CREDITS_SLACK, returns it. Receive buffers:
// credits-per-peer preposted for a peer's Requests, and one more posted
// for each Request in flight for its Reply, so no send ever meets an empty
// receive queue (RNR). With SRQ, one shared queue of GASNET_RBUF_COUNT
// buffers per rail is reposted before each handler instead.
//
// RMA: RDMA WRITE and READ between registered memory. A local buffer in
// the segment or the AM buffers uses their registration; a Put of at most
// GASNET_NONBULKPUT_BOUNCE_LIMIT bytes from elsewhere is copied into send
// buffers (its source is free at once); anything else is pinned through
// firehose's local cache (GASNET_FIREHOSE_*), one per rail, and unpinned
// lazily. Transfers above GASNET_PUT_STRIPE_SZ / GASNET_GET_STRIPE_SZ are
// split over the peer's QPs.
//
// Threads: in PAR mode one lock serialises the verbs calls and the
// bookkeeping (a real HCA driver takes one per queue anyway); handlers run
// outside it. Progress threads (GASNET_RCV_THREAD, GASNET_SND_THREAD)
// block on the completion queues (RequestNotify/WaitNotify) and poll.
#ifndef GEX_CONDUIT_IBV_IBV_CONDUIT_H_
#define GEX_CONDUIT_IBV_IBV_CONDUIT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/container/flat_hash_map.h"
#include "am/credits.h"
#include "base/wait_policy.h"
#include "conduit/ibv/ports.h"
#include "conduit/ibv/settings.h"
#include "conduit/ibv/verbs/select.h"
#include "conduit/ibv/verbs/verbs.h"
#include "core/conduit.h"
#include "core/peer_lost.h"
#include "exit/signals.h"
#include "firehose/local_cache.h"

namespace gexrt::ibv {

// What the conduit has done (a snapshot), for tests and statistics.
struct IbvStats {
  uint64_t requests_sent = 0;
  uint64_t replies_sent = 0;
  uint64_t credit_messages_sent = 0;  // explicit credit messages (SYS_ack)
  uint64_t credit_waits = 0;          // Requests that found no credit
  // Banked credits that rode back on a Request or Reply (not a SYS_ack).
  uint64_t piggybacked_credits = 0;
  // Peers connected on demand (GASNET_CONNECT_DYNAMIC), either side.
  uint64_t dynamic_connections = 0;
  // AMs whose payload was gathered from the segment (GASNET_AM_GATHER_MIN).
  uint64_t gathered_sends = 0;
  // RDMA reads behind Put pieces (GASNET_USE_FENCED_PUTS, several rails).
  uint64_t fenced_puts = 0;
  uint64_t inline_sends = 0;
  uint64_t copy_outs = 0;       // Requests copied out: no spare buffer
  uint64_t reply_buffers = 0;   // receive buffers posted for Replies
  uint64_t puts = 0, gets = 0;  // RDMA operations (WRs)
  uint64_t bounced_puts = 0;
  uint64_t firehose_hits = 0, firehose_misses = 0;
  uint64_t firehose_evictions = 0;
  // The software device's counters for this rank's contexts (0 on an HCA).
  uint64_t rnr_naks = 0;
  uint64_t transport_retries = 0;
  // Send completions reaped, while send threads (GASNET_SND_THREAD) ran,
  // by the client's own threads and by the send threads.
  uint64_t send_completions_by_client = 0;
  uint64_t send_completions_by_thread = 0;
};

// What one rank of the conduit holds, by what it grows with (the
// conduit's own allocations, counted by it; the verbs device's objects
// -- QPs, CQs, the software device's memory -- are not in it).
struct IbvMemory {
  uint64_t peers = 0;            // ranks reached through the conduit
  uint64_t connected_peers = 0;  // of those, the ones with QPs
  uint64_t qps = 0;              // RC QPs, plus the UD QP if any
  uint64_t recv_buffers = 0;     // AM receive buffers (GASNET_RBUF_COUNT)
  uint64_t send_buffers = 0;     // AM send buffers (GASNET_BBUF_COUNT)
  // Fixed: AM buffers, send slots, rails, the UD QP's buffers.
  uint64_t fixed_bytes = 0;
  // Per rank of the job, connected or not: the tables indexed by rank
  // (peers, credits, segments, QP counts, UD addresses).
  uint64_t table_bytes = 0;
  // Per connected peer: its Peer and Qp records and their index.
  uint64_t connection_bytes = 0;
  uint64_t total() const {
    return fixed_bytes + table_bytes + connection_bytes;
  }
};

class IbvConduit final : public core::Conduit {
 public:
  IbvConduit();
  ~IbvConduit() override;
  IbvConduit(const IbvConduit&) = delete;
  IbvConduit& operator=(const IbvConduit&) = delete;

  const char* name() const override { return "ibv"; }
  core::Capabilities capabilities() const override;
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
  void Fini() override;

  IbvStats stats() const;
  // Takes the lock: not from a handler run under it.
  IbvMemory Memory();

  // The most QPs to one peer (GASNET_NUM_QPS is cut to it).
  static constexpr uint32_t kMaxQpsPerPeer = 8;

  // Internal types (ibv_conduit.cc).
  struct Rail;
  struct Ud;
  struct UdMessage;
  struct Qp;
  struct Peer;
  struct Op;
  struct ReplyHandle;
  class Pinner;
  class ProgressThread;

 private:
  // A lock that is a lock only in PAR mode.
  // Also counts, per thread, how deep the thread is inside the conduit's
  // locked work: a fatal signal's exit that interrupted it touches nothing
  // (Interrupted()). End signals wait by exit/signals.h's rule instead.
  class MaybeMutex {
   public:
    void lock() {
      if (on_) m_.lock();
      ++depth_;
    }
    void unlock() {
      if (on_) m_.unlock();
      --depth_;
    }
    void Enable(bool on) { on_ = on; }
    static bool Held() { return depth_ != 0; }

   private:
    static inline thread_local int depth_ = 0;
    std::mutex m_;
    bool on_ = false;
  };
  // Closed, or called from a signal handler that interrupted this thread
  // inside the conduit: the call must touch nothing.
  bool Interrupted() const;

  absl::Status OpenRails(const std::string& job_key, const NodeMap& map);
  absl::Status CreateBuffers(const NodeMap& map);
  absl::Status ConnectPeers(const NodeMap& map);
  // Under lock_ (or at Init): `r`'s QPs, in INIT, with their receive
  // buffers posted; registered in peers_ and peer_of_.
  absl::StatusOr<Peer*> CreatePeer(Rank r);
  // `peer`'s QPs to RTS towards `remote` (one address per QP).
  absl::Status ConnectPeer(Rank r, Peer& peer, const verbs::QpAddress* remote);
  // The connected peer `dest`, connecting it on demand (dynamic
  // connections) or failing with a message naming `call`. With
  // `immediate` (an IMMEDIATE send, or one of the exit protocol's) a peer
  // not yet connected is nullptr at once: the handshake is started or
  // carried on (a REQ when its retransmission is due), and the caller's
  // retry carries it further.
  Peer* PeerFor(Rank dest, const char* call, bool immediate);
  Peer* ConnectTo(Rank dest, const char* call, bool immediate);
  // A message from `source` arrived over RC: a peer still awaiting its
  // RTU is connected.
  void SawTrafficFrom(Rank source);
  // Under lock_: true once `dest` is connected; otherwise creates its QPs
  // (the first time) and sends a REQ when one is due.
  bool AdvanceConnect(Rank dest, const char* call);
  // Dynamic connections' UD side (all under lock_ but CreateUd).
  absl::Status CreateUd();
  void SendUd(Rank dest, uint8_t type);
  int PollUd();
  void HandleUd(const UdMessage& m);
  absl::Status ConnectQp(Qp& qp, const verbs::QpAddress& remote,
                         const Rail& rail);

  // Sending.
  core::SendStatus Send(Rank dest, ReplyHandle* reply, const core::Outbound& m,
                        bool credits_only, bool immediate);
  void SendCredits(Rank dest);
  bool TakeCredit(Rank dest, bool immediate);
  // Under lock_: room on `qp`'s send queue and in the network depth, and an
  // Op (and a send buffer when `need_buffer`); false when there is none.
  bool Reserve(Qp& qp, bool need_buffer, Op** op);
  // Waits (polling) until Reserve succeeds; false only when `immediate`.
  bool ReserveWaiting(Qp& qp, bool need_buffer, bool immediate,
                      bool replies_only, Op** op);
  // Posts `wr` on `qp` for `op` (under lock_); fatal on refusal.
  void PostSend(Qp& qp, Op* op, verbs::SendWr& wr);
  void ReleaseOp(Op* op);
  // Under lock_: keeps a peer's first QP holding enough receive buffers
  // for the Replies to the Requests in flight to it.
  void PostReplyBuffers(Peer& peer, Rank dest);
  // `counted`: qp->posted already counts it (a Request's replacement).
  bool PostReceive(Rail& rail, Qp* qp, uint32_t buffer, bool counted = false);
  // Under lock_: a receive buffer back to the spares, or the rest.
  void ReturnBuffer(uint32_t buffer);

  // Receiving and completions.
  int PollSendCqs();
  int PollReceives(bool replies_only, int budget);
  // Decodes (core/am_wire.h: the header names the source) and delivers.
  void Deliver(const unsigned char* msg, size_t len);
  int Progress(bool replies_only);
  // Waits for work requests of ours to complete (an RDMA WRITE whose
  // source must be free when the call returns) polling the send queues
  // only: their completion needs nobody's handler, and a send call that
  // ran handlers could run the Reply to its own Request before returning.
  void WaitSent(const rma::Counter& c);
  void CheckAsyncEvents();

  // RMA.
  // The lkey of [addr, +len) on `rail` if it is registered memory of ours
  // (segment or AM buffers), else 0 and false.
  bool KnownKey(uint32_t rail, const void* addr, size_t len,
                uint32_t* lkey) const;
  // RDMA WRITE (`write`) or READ between `local` and `remote` in `rank`'s
  // segment, in pieces: `rc` (and `lc`, when not null) get one Complete()
  // per Start() the caller made, and this adds a Start() for every piece
  // after the first. `qp_index` pins the QP (a Long's payload must precede
  // its header on the AM QP); -1 rotates or stripes.
  void Rdma(Rank rank, bool write, void* local, uint64_t remote, size_t len,
            rma::Counter& rc, bool replies_only, int qp_index,
            rma::Counter* lc = nullptr);
  void CheckInSegment(const char* call, Rank rank, const void* address,
                      size_t len) const;

  void PrintStats();
  void StartThreads();
  void StartThreadsOnce() {
    if (ABSL_PREDICT_FALSE(!threads_started_.load(std::memory_order_acquire)) &&
        (settings_.rcv_thread.enabled || settings_.snd_thread.enabled)) {
      std::call_once(threads_once_, [this] {
        StartThreads();
        threads_started_.store(true, std::memory_order_release);
      });
    }
  }
  void StopThreads();

  template <typename PollFn>
  void WaitRound(PollFn&& poll) {
    exit::AtWaitPoint();  // a deferred exit may start here (exit/signals.h)
    WaitPolicy::Round round(*waits_);
    round.PauseIfIdle(poll() != 0);
  }

  Settings settings_;
  bool thread_safe_ = false;
  WaitPolicy* waits_ = nullptr;
  WaitPolicy own_waits_;
  Rank rank_ = 0;
  Rank size_ = 0;
  core::Sink sink_;
  core::OtherProgress others_;
  Bootstrap* bootstrap_ = nullptr;
  bool software_ = false;
  bool use_srq_ = false;
  uint32_t inline_limit_ = 0;
  size_t buffer_size_ = 0;  // one AM buffer: headers + max_medium
  size_t packed_long_ = 0;  // the largest Long sent in its header's message

  verbs::Selection selection_;
  std::vector<std::unique_ptr<Rail>> rails_;
  // By rank; null: not connected (yet). peers_ owns, under lock_;
  // peer_of_ is what the send paths read without it.
  std::vector<std::unique_ptr<Peer>> peers_;
  std::unique_ptr<std::atomic<Peer*>[]> peer_of_;
  std::vector<bool> conduit_peer_;   // outside this rank's supernode
  std::vector<uint32_t> qp_counts_;  // every rank's QPs per peer
  std::mt19937 random_;              // PSNs
  std::unique_ptr<Ud> ud_;           // null: no dynamic connections
  absl::flat_hash_map<uint32_t, Qp*> qp_by_num_;
  std::vector<Rank> connected_;  // the peers with QPs

  // The AM buffers: one allocation each for receive and send buffers,
  // registered on every rail.
  unsigned char* rbufs_ = nullptr;
  unsigned char* bbufs_ = nullptr;
  size_t rbufs_bytes_ = 0;
  size_t bbufs_bytes_ = 0;
  std::vector<uint32_t> spares_;    // unposted receive buffers, the reserve
  std::vector<uint32_t> unposted_;  // unposted receive buffers, the rest
  std::vector<uint32_t> free_bbufs_;
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<Op*> free_ops_;
  uint32_t sends_in_flight_ = 0;  // under lock_, against NETWORKDEPTH_TOTAL

  // Requests received during a Reply's wait, delivered by the next full
  // poll: the receive buffer holding it (its replacement was posted
  // already), or its copy when none was spare; its length.
  struct Deferred {
    uint32_t buffer;
    std::unique_ptr<unsigned char[]> copy;  // null: in `buffer`
    size_t len;
  };
  std::vector<Deferred> deferred_;

  // The segment and everyone's.
  uintptr_t segment_base_ = 0;
  size_t segment_size_ = 0;
  struct RemoteSegment {
    uint64_t base = 0;
    uint64_t size = 0;
    uint32_t rkey[8] = {};
  };
  std::vector<RemoteSegment> segments_;

  std::unique_ptr<am::Credits> credits_;
  MaybeMutex lock_;
  std::vector<std::unique_ptr<Pinner>> pinners_;
  std::vector<std::unique_ptr<firehose::LocalCache>> firehose_;
  std::vector<std::unique_ptr<ProgressThread>> threads_;
  bool exclusive_receive_thread_ = false;  // GASNET_RCV_THREAD_POLL_MODE
  // From when the send threads start until they stop (with
  // GASNET_SND_THREAD_POLL_MODE=exclusive only they reap send completions
  // then; before, connection set-up reaps its own, and Fini drains after).
  std::atomic<bool> send_threads_running_{false};
  std::once_flag threads_once_;
  std::atomic<bool> threads_started_{false};

  std::atomic<bool> closed_{false};
  core::PeerLostClock peer_lost_;
  struct Counters {
    std::atomic<uint64_t> requests_sent{0}, replies_sent{0},
        credit_messages_sent{0}, credit_waits{0}, inline_sends{0}, copy_outs{0},
        reply_buffers{0}, puts{0}, gets{0}, bounced_puts{0},
        piggybacked_credits{0}, dynamic_connections{0}, gathered_sends{0},
        fenced_puts{0}, send_completions_by_client{0},
        send_completions_by_thread{0};
  };
  Counters counters_;
};

}  // namespace gexrt::ibv

#endif  // GEX_CONDUIT_IBV_IBV_CONDUIT_H_
