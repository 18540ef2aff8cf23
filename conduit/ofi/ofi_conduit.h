// The ofi conduit: core::Conduit over libfabric FI_EP_RDM endpoints, for
// the ranks outside this rank's supernode (README.md: providers, settings,
// limits).
//
// Endpoints. Each rank opens one RDM endpoint (GASNET_OFI_SPLIT_ENDPOINTS=
// yes: two, one receiving Requests and one Replies, ep_[0] and ep_[1];
// otherwise both name the one) with one completion queue for sends,
// receives and RMA (cq_[0] and cq_[1] the same unless
// GASNET_OFI_SHARED_CQ=no). A wait for room while sending a Reply (or
// while a Request handler runs) must not run a Request handler: its
// drain sets the Requests it reads aside for the next full poll. Addresses
// are exchanged over the bootstrap.
//
// Active Messages. A message is a header (category, handler, argument
// count, piggy-backed credits, payload length; the source rank too unless
// it travels as remote CQ data), the arguments, then the payload at an
// 8-byte aligned offset. One of at most GASNET_OFI_AM_INJECT_LIMIT bytes
// goes by fi_inject from the stack; a larger one is built in a buffer of
// the request or reply pool and sent by fi_send, the buffer returning to
// its pool at the send's completion. Receives land in multi-receive
// buffers (or single-message buffers with GASNET_OFI_RECEIVE_BUFF_SIZE=
// recv), reposted once libfabric has released them and no handler still
// reads them. A Long's payload up to the Medium size travels in the
// message and is copied into the segment before the handler runs; a
// larger one is written by RMA with delivery completion first, then the
// header follows (the handler sees the data).
//
// Flow control: am::Credits (am/credits.h). Every Request takes a credit
// for its destination, every Reply returns one (plus any banked), a
// Request handled without a Reply banks its credit, and past the slack a
// hidden credit message goes back. So no pattern of traffic makes either
// side buffer more than GASNET_AM_CREDITS_PP messages per peer.
//
// RMA: fi_writemsg/fi_readmsg into the peer's registered segment (keys and
// bases exchanged at AttachSegment; FI_MR_VIRT_ADDR or offsets,
// FI_MR_PROV_KEY or our key, FI_MR_ENDPOINT binding). Puts ask for
// FI_DELIVERY_COMPLETE, so a completion means the data is at the target
// (remote completion). A Put whose source must be reusable on return (no
// `lc`) follows the seed's policy: FI_INJECT up to
// GASNET_OFI_RMA_INJECT_LIMIT, bounce buffers up to
// GASNET_OFI_BBUF_THRESHOLD, else it waits for local completion. Local
// buffers need no registration (FI_MR_LOCAL is refused).
//
// Threads: in PAR mode the domain is FI_THREAD_SAFE; pools take a mutex;
// each receive queue is read under a mutex (so a buffer is never reposted
// while a message in it is being delivered by another thread), and
// messages are delivered outside it.
#ifndef GEX_CONDUIT_OFI_OFI_CONDUIT_H_
#define GEX_CONDUIT_OFI_OFI_CONDUIT_H_

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "am/credits.h"
#include "base/wait_policy.h"
#include "conduit/ofi/provider.h"
#include "conduit/ofi/settings.h"
#include "core/conduit.h"
#include "core/peer_lost.h"
#include "exit/signals.h"

namespace gexrt::ofi {

// What the conduit has done (a snapshot), for tests and statistics.
struct OfiStats {
  uint64_t requests_sent = 0;
  uint64_t replies_sent = 0;
  uint64_t credit_messages_sent = 0;
  uint64_t injected = 0;       // AMs sent by fi_inject
  uint64_t credit_waits = 0;   // Requests that found no credit
  uint64_t nb_put_inject = 0;  // the non-bulk Put policy's three paths
  uint64_t nb_put_bounce = 0;
  uint64_t nb_put_block = 0;
  // Footprint (GASNET_OFI_STATS): the ranks reached through libfabric,
  // those connected (greeted) so far, the address-vector entries this rank
  // inserted, and what the conduit itself allocated, in bytes and counts
  // (libfabric's own memory is not in it).
  uint64_t peers = 0;
  uint64_t connected_peers = 0;
  uint64_t av_entries = 0;
  uint64_t recv_buffers = 0;
  uint64_t send_buffers = 0;  // both AM pools, as grown so far
  uint64_t bounce_buffers = 0;
  uint64_t rma_ops = 0;
  uint64_t per_rank_bytes = 0;  // the tables with one entry per rank
  uint64_t conduit_bytes = 0;   // everything above, buffers included
};

class OfiConduit final : public core::Conduit {
 public:
  OfiConduit();
  ~OfiConduit() override;
  OfiConduit(const OfiConduit&) = delete;
  OfiConduit& operator=(const OfiConduit&) = delete;

  const char* name() const override { return "ofi"; }
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
  // Negotiated payload: a Medium is built in a send buffer of the pool,
  // the client writing its payload in place (no copy); a Long's goes
  // through core's default.
  core::SendStatus Reserve(core::Reservation& r, size_t max_payload,
                           bool immediate) override;
  void Commit(core::Reservation& r, const core::Outbound& m) override;
  void Cancel(core::Reservation& r) override;
  int Poll() override;
  absl::Status AttachSegment(void* base, size_t size) override;
  bool Put(Rank rank, void* dest, const void* src, size_t len, bool immediate,
           rma::Counter& rc, rma::Counter* lc) override;
  bool Get(void* dest, Rank rank, const void* src, size_t len, bool immediate,
           rma::Counter& rc) override;
  // A read of no completions on each queue: the provider's progress runs
  // (a manual-progress provider moves queued sends then) and every
  // completion stays queued for Poll.
  void ProgressSends() override;
  // Manual progress: drives the provider until every AM sent so far has
  // its transmit completion (see the .cc). Automatic: nothing.
  void FlushSends() override;
  void Fini() override;

  OfiStats stats() const;
  // GASNET_OFI_STATS: one line on stdout at Fini (the provider, the
  // properties the hot paths were specialised on, the counters).
  void PrintStats() const;

  // Internal types, public for the implementation's helpers.
  struct TxContext;
  struct SendBuffer;
  struct RmaOp;
  struct RxBuffer;
  struct ReplyHandle;
  struct Lane;
  struct Paths;

 private:
  enum Endpoint : int { kRequestEp = 0, kReplyEp = 1, kEndpoints = 2 };
  // Puts and Gets go between reply endpoints: a manual-progress provider
  // serves an incoming RMA only while the target polls that endpoint, and
  // every wait polls the reply endpoint, while a Reply's wait does not
  // poll the request endpoint. (A Long's payload goes on its message's
  // own endpoint pair, ahead of its header.)
  static constexpr Endpoint kRmaEp = kReplyEp;

  // A pool of fixed-size objects: a free list, grown on demand up to a
  // maximum; a mutex only in PAR mode.
  template <typename T>
  class Pool;

  struct RemoteSegment {
    uint64_t base = 0;  // as the owner sees it
    uint64_t size = 0;
    uint64_t key[2] = {0, 0};  // per endpoint (one value without
                               // FI_MR_ENDPOINT)
  };

  // Opens receiving endpoint `which` (a Lane's own when >= kEndpoints).
  absl::Status OpenEndpoint(int which, fid_ep** ep, fid_cq** cq);
  absl::Status OpenLanes(size_t count);
  // A completion queue: a receiving endpoint's (DATA or TAGGED format)
  // or a transmit context's (CONTEXT format).
  absl::Status OpenCq(bool receives, fid_cq** cq);
  absl::Status PostReceive(RxBuffer* b);
  void RepostOrFatal(RxBuffer* b);

  // The hot paths, specialised by template on the provider's properties
  // (remote CQ data carries the source; the header travels in the tag;
  // small messages can be injected; manual data progress) and picked once
  // at Init into paths_ (the dispatch table).
  //
  // Builds and sends one message (a Request when `reply` is null);
  // `credits_only`: the hidden kind.
  template <bool kCqData, bool kTagged, bool kInject, bool kManual>
  core::SendStatus Send(Rank dest, ReplyHandle* reply, const core::Outbound& m,
                        bool credits_only, bool immediate);
  // Sends a message built in a send buffer by Reserve.
  template <bool kCqData, bool kTagged, bool kInject, bool kManual>
  void CommitInPlace(core::Reservation& r, const core::Outbound& m);
  // Sends the bytes [msg, +len) (and `tag`) to `dest`'s endpoint `to`
  // through `lane`. `inject`: by fi_inject (`buffer`, if any, goes back
  // to its pool at once); otherwise by fi_send from `buffer`, which goes
  // back at the completion. false: would block and `immediate`.
  // kManual: never `inject`; the completion is counted on `lane` (for
  // FlushSends).
  template <bool kCqData, bool kTagged, bool kManual>
  bool Transmit(Lane& lane, Endpoint to, Rank dest, const void* msg, size_t len,
                uint64_t tag, SendBuffer* buffer, bool inject, bool immediate,
                bool replies_only);
  // Receive-queue processing.
  template <bool kCqData, bool kTagged>
  int DrainRx(Endpoint ep, int budget);
  template <bool kCqData, bool kTagged>
  void Deliver(Endpoint ep, const unsigned char* msg, size_t len,
               uint64_t cq_data, uint64_t tag);
  // Requests a reply-endpoint drain read from the shared queue, delivered
  // by the next request-endpoint drain.
  struct SetAsideMessage {
    RxBuffer* buffer;
    const unsigned char* msg;
    size_t len;
    uint64_t data;
    uint64_t tag;
  };
  void SetAside(const SetAsideMessage& m);
  template <bool kCqData, bool kTagged>
  int DeliverSetAside();
  // After each RMA chunk is posted: manual progress polls every
  // GASNET_OFI_RMA_POLL_FREQ.
  template <bool kManual>
  void RmaPosted(Lane& lane);
  template <bool kCqData, bool kTagged, bool kInject, bool kManual>
  static constexpr Paths MakePaths();
  template <size_t... I>
  static const Paths& SelectPaths(size_t index, std::index_sequence<I...>);

  // A hidden message carrying only credits back to `dest` (a Reply that
  // runs no handler).
  void SendCredits(Rank dest);
  void Complete(TxContext* ctx);
  // Reads the transmit completions of lanes after the first: `lane`'s,
  // and one other in turn (so none is left unread); all of them.
  int DrainLanes(Lane& lane);
  int DrainAllLanes();
  int DrainLane(Lane& lane);
  // A completion queue's error entry: fatal unless the job is ending.
  void CqError(fid_cq* cq);
  // A send failed because its peer is gone: the job gets
  // core::PeerLostClock's grace to be ended by the launcher, then a poll
  // ends it.
  void PeerLost(const char* why);
  // An RMA call made after Fini (from another thread in PAR mode).
  [[noreturn]] void AfterFini(const char* call);
  // The calling thread's transmit context.
  Lane& MyLane();

  // At Fini, before closing: waits (bounded) until what this rank sent
  // has left.
  void Flush();
  // At Init: connects every off-supernode pair (hidden hellos).
  absl::Status Connect(const NodeMap& map);
  // Sends a hidden marker on both endpoints to each of `peers` (Flush:
  // only those sent to) and waits for their transmit completions until
  // `deadline`; true when all completed.
  bool SendMarkers(bool hello, absl::Time deadline,
                   const std::vector<Rank>& peers);

  // Whether this call comes from a signal handler that interrupted a
  // libfabric call on this thread (then it must not call libfabric).
  bool Interrupted();

  // One round of a wait: progress everything this wait may run.
  int Progress(bool replies_only);

  // Whether a post that returned `rc` should be retried (after progress):
  // -FI_EAGAIN, or a connection to `peer` not made yet, for a while.
  bool NotYet(ssize_t rc, Rank peer);

  // RMA.
  const RemoteSegment& CheckRemote(const char* call, Rank rank,
                                   const void* address, size_t len) const;
  uint64_t RemoteAddress(const RemoteSegment& s, const void* address) const;
  // Posts one write or read of one chunk; false on -FI_EAGAIN.
  bool PostWrite(Lane& lane, Endpoint ep, Rank rank, const void* src,
                 size_t len, uint64_t raddr, const RemoteSegment& s, RmaOp* op,
                 uint64_t flags);
  bool PostRead(Lane& lane, Rank rank, void* dest, size_t len, uint64_t raddr,
                const RemoteSegment& s, RmaOp* op);
  // Starts an RMA of `len` bytes in chunks of at most `chunk`, one RmaOp
  // each (the first holds the count and completes `rc` and `lc` after the
  // last): `prepare(op, offset, n, may_refuse, progress)` readies a chunk
  // (false: refused), `post(op, offset, n)` posts it (false: not yet,
  // retried after progress). false: `immediate`, and nothing was started.
  template <typename Prepare, typename Post>
  bool StartChunks(Lane& lane, size_t len, size_t chunk, bool immediate,
                   bool replies_only, rma::Counter& rc, rma::Counter* lc,
                   Prepare prepare, Post post);
  // Writes a Long's payload to `dest`'s segment and waits for delivery.
  bool WriteLongPayload(Lane& lane, Endpoint ep, Rank dest, const void* src,
                        size_t len, uint64_t long_dest, bool immediate,
                        bool replies_only);
  // Writes the header and arguments of `m` at `out` (and the padding
  // before an inline payload of `inline_len` bytes); returns the tag.
  template <bool kCqData, bool kTagged>
  uint64_t WriteHeader(unsigned char* out, const core::Outbound& m,
                       bool request, uint8_t flags, uint32_t credits,
                       size_t inline_len);
  // A send buffer of `ep`'s pool, waiting (polling) unless `immediate`;
  // null: none, and `immediate`.
  SendBuffer* TakeSendBuffer(Endpoint ep, bool immediate);
  // Counts a Request (`reply` null) or a Reply (and marks it replied).
  void CountSent(ReplyHandle* reply);
  // A Request's credit for `dest`, waiting (polling) for one unless
  // `immediate`; false: none, and `immediate`.
  bool TakeCredit(Rank dest, bool immediate);
  // Bytes of header and arguments before a message's payload.
  size_t PayloadOffsetFor(bool is_long, unsigned nargs) const;

  Settings settings_;
  bool thread_safe_ = false;
  bool polite_ = false;
  // How this conduit's waits spin or yield (the runtime's policy, which
  // counts PAR threads in waits; own_waits_ when built alone).
  WaitPolicy* waits_ = nullptr;
  WaitPolicy own_waits_;

  // One round of a wait: `poll` runs with this thread counted as waiting,
  // then the thread pauses as the policy says (spins while the waiting
  // threads fit the CPUs, yields once they do not).
  template <typename Poll>
  void WaitRound(Poll&& poll) {
    exit::AtWaitPoint();  // a deferred exit may start here (exit/signals.h)
    WaitPolicy::Round round(*waits_);
    round.PauseIfIdle(poll() != 0);
  }
  Rank rank_ = 0;
  Rank size_ = 0;
  core::Sink sink_;
  core::OtherProgress others_;
  Bootstrap* bootstrap_ = nullptr;

  // libfabric objects.
  InfoPtr info_;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_[kEndpoints] = {nullptr, nullptr};
  // Each endpoint's completions, sends and receives.
  fid_cq* cq_[kEndpoints] = {nullptr, nullptr};
  // Transmit contexts: the first sends from ep_; in PAR mode each further
  // one (GASNET_OFI_NUM_TX_CONTEXTS) is an endpoint of its own, and each
  // thread sends through one.
  std::vector<std::unique_ptr<Lane>> lanes_;
  fid_ep* sep_ = nullptr;  // their scalable endpoint, if they have one
  std::atomic<uint32_t> next_lane_{0};
  std::atomic<uint32_t> lane_turn_{0};
  fid_mr* segment_mr_[kEndpoints] = {nullptr, nullptr};
  // fi_addr_t of every rank's endpoints: addresses_[2 * rank + endpoint].
  std::vector<fi_addr_t> addresses_;

  // Properties of the provider, fixed at Init.
  bool cq_data_ = false;      // the source rank travels as remote CQ data
  bool tagged_ = false;       // the header travels in the tag
  bool manual_ = false;       // FI_PROGRESS_MANUAL data progress
  bool virt_addr_ = false;    // FI_MR_VIRT_ADDR
  bool prov_key_ = false;     // FI_MR_PROV_KEY
  bool mr_endpoint_ = false;  // FI_MR_ENDPOINT
  size_t am_inject_ = 0;      // messages up to this size are injected
  size_t rma_inject_ = 0;
  size_t max_message_ = 0;  // the largest AM on the wire
  size_t max_rma_ = 0;      // the largest RMA transfer of one operation
  // The dispatch table: the hot paths specialised at Init.
  const Paths* paths_ = nullptr;

  std::unique_ptr<am::Credits> credits_;
  std::unique_ptr<Pool<SendBuffer>> send_pool_[kEndpoints];
  std::unique_ptr<Pool<RmaOp>> rma_pool_;
  std::unique_ptr<Pool<SendBuffer>> bbuf_pool_;
  std::vector<std::unique_ptr<RxBuffer>> rx_buffers_;
  std::mutex rx_mutex_[kEndpoints];
  // GASNET_OFI_SHARED_CQ: both receiving endpoints complete into cq_[0]
  // (cq_[1] is the same queue), so a poll is one fi_cq_read.
  bool shared_cq_ = false;
  // GASNET_OFI_SPLIT_ENDPOINTS=no: one endpoint receives both (ep_[1] is
  // ep_[0]); the header tells a Request from a Reply.
  bool one_ep_ = false;
  std::vector<SetAsideMessage> set_aside_;
  std::mutex set_aside_mutex_;
  std::atomic<bool> has_set_aside_{false};

  std::vector<RemoteSegment> segments_;
  uintptr_t segment_base_ = 0;
  size_t segment_size_ = 0;
  std::atomic<uint64_t> rma_started_{0};
  // The flush markers not yet complete, and their completion context.
  std::atomic<int> flush_pending_{0};
  std::unique_ptr<TxContext> marker_ctx_;
  std::atomic<uint64_t> hellos_received_{0};
  // Footprint counts for OfiStats, fixed at Init.
  uint32_t peers_ = 0;
  uint32_t connected_peers_ = 0;
  uint64_t av_entries_ = 0;
  // How many transmit contexts each rank has (hellos come from each).
  std::vector<uint32_t> peer_lanes_;
  // Set by Flush: a peer that has closed may refuse what is still going
  // to it, and nothing waits for it any more.
  std::atomic<bool> finishing_{false};
  // Fini has run: later calls (other PAR threads) do nothing.
  std::atomic<bool> closed_{false};
  // A signal handler found libfabric interrupted: Fini closes nothing.
  std::atomic<bool> abandoned_{false};
  core::PeerLostClock peer_lost_;
  // (Unix nanoseconds; 0: none yet.)
  std::atomic<int64_t> connect_deadline_ns_{0};

  struct Counters {
    std::atomic<uint64_t> requests_sent{0}, replies_sent{0},
        credit_messages_sent{0}, injected{0}, credit_waits{0}, nb_put_inject{0},
        nb_put_bounce{0}, nb_put_block{0};
  };
  Counters counters_;
};

}  // namespace gexrt::ofi

#endif  // GEX_CONDUIT_OFI_OFI_CONDUIT_H_
