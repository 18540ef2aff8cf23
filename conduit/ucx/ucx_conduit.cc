#include "conduit/ucx/ucx_conduit.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "am/vocabulary.h"
#include "base/fatal.h"
#include "base/spin_wait.h"
#include "core/am_wire.h"
#include "core/peer_lost.h"
#include "exit/graceful_exit.h"
#include "exit/signals.h"

namespace gexrt::ucx {

using core::Category;
using core::SendStatus;
namespace wire = core::wire;

// ---------------------------------------------------------------------------
// The wire format of an Active Message.

namespace {

// The one UCP AM id this conduit uses.
constexpr unsigned kAmId = 0;

// The wire format is core/am_wire.h's; the hello at Init is ours.
using wire::ArgsEnd;
using wire::kFlagCreditsOnly;
using wire::kFlagRequest;
using wire::kMaxOverhead;
using wire::PayloadOffset;
using WireHeader = wire::Header;
constexpr uint8_t kFlagHello = wire::kFirstConduitFlag;  // wire-up done

// A send buffer starts with the pool it returns to; the message follows.
constexpr size_t kSendPrefix = 16;

// Messages delivered per queue per poll, so a flood cannot starve the rest
// of the rank's progress.
constexpr int kPollBudget = 64;

// Fini: how long to wait for what was sent to leave, then to keep serving
// peers that are still flushing towards us.
constexpr absl::Duration kFlushFor = absl::Milliseconds(500);
constexpr absl::Duration kLingerFor = absl::Milliseconds(20);

// The largest Long: the header's length field, and far beyond any segment
// a test here attaches.
constexpr size_t kMaxLong = size_t{1} << 30;

std::string StatusText(ucs_status_t s) { return ucs_status_string(s); }

// A send or RMA to a peer failed (UCX reports a peer that died or left as
// an endpoint timeout or a reset): core/peer_lost.h's grace. One per
// process (one conduit).
core::PeerLostClock g_peer_lost;

void PeerLost(const char* what, Rank peer, ucs_status_t status) {
  g_peer_lost.Lost(
      absl::StrFormat("%s rank %u: %s", what, peer, ucs_status_string(status)));
}

inline void CheckPeerLost(Rank me) { g_peer_lost.Check("ucx", me); }

// Calls into UCX are marked (InUcx), and each entry into the conduit
// (ConduitCall): an end signal or the launcher's exit decision that lands
// inside either waits until the conduit returns to the client, or until a
// wait round of the outermost call (WaitRound), the one rule of
// exit/signals.h. Run from the handler, the exit would send and poll
// through UCX from inside ucp_worker_progress: UCX does not allow that
// re-entry (it asserts `worker->inprogress++ == 0`). (A signal delivered
// to UCX's own async thread waits too, handed to the client's thread:
// run there, the exit tore a tcp message the main thread was sending,
// tcp_ep.c's `ctx->offset <= ctx->length`.)
using InUcx = exit::LibraryCall;

// ucp_worker_progress, as a call an end signal waits for.
unsigned ProgressWorker(ucp_worker_h worker) {
  const InUcx in;
  return ucp_worker_progress(worker);
}

// libucs installs handlers for the fatal signals when it loads (its
// UCX_HANDLE_ERRORS backtrace), before main; they print UCX's report and
// end the process their way, so a crash would lose the exit layer's
// graceful exit, report and exit code. Handlers living in UCX's libraries
// go back to the default before the exit layer installs its own; any
// other (the client's) stays.
void DropLibrarySignalHandlers() {
  exit::DropLibrarySignalHandlers({"libucs", "libucp", "libuct"});
}

// Completion callbacks of nbx operations whose user data is an
// rma::Counter: the request goes back to UCX, the counter completes.
void CompleteCounter(void* request, ucs_status_t status, void* user_data) {
  // (The data did not move; the job is ending, see PeerLost.)
  if (status != UCS_OK) PeerLost("an RMA operation with", 0, status);
  static_cast<rma::Counter*>(user_data)->Complete();
  ucp_request_free(request);
}

}  // namespace

struct UcxConduit::ReplyHandle {
  Rank source;
  bool replied;
};

// A send buffer's completion: the buffer goes back to its pool.
void SendDone(void* request, ucs_status_t status, void* user_data) {
  (void)status;  // A failed send is reported by the endpoint's error handler.
  auto* buffer = static_cast<unsigned char*>(user_data);
  BufferPool* pool;
  std::memcpy(&pool, buffer, sizeof pool);
  pool->Put(buffer);
  ucp_request_free(request);
}

namespace {

// Sends the message of `len` bytes built at `buffer + kSendPrefix` (a
// buffer of `pool`) to `ep` as one eager UCP AM; the buffer goes back to
// its pool once UCX is done with it (at once when the send completed in
// place or failed). UCS_OK, or why the send failed.
ucs_status_t SendEager(ucp_ep_h ep, BufferPool& pool, unsigned char* buffer,
                       size_t len) {
  BufferPool* owner = &pool;
  std::memcpy(buffer, &owner, sizeof owner);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FIELD_FLAGS;
  p.cb.send = &SendDone;
  p.user_data = buffer;
  // Eager only: the receive callback takes whole messages; rendezvous
  // would need a receive posted from it.
  p.flags = UCP_AM_SEND_FLAG_EAGER;
  ucs_status_ptr_t req;
  {
    const InUcx in;
    req = ucp_am_send_nbx(ep, kAmId, nullptr, 0, buffer + kSendPrefix, len, &p);
  }
  if (UCS_PTR_IS_PTR(req)) return UCS_OK;
  pool.Put(buffer);
  return req == nullptr ? UCS_OK : UCS_PTR_STATUS(req);
}

}  // namespace

// ---------------------------------------------------------------------------
// Start-up and shut-down.

UcxConduit::UcxConduit() = default;

UcxConduit::~UcxConduit() { Fini(); }

core::Capabilities UcxConduit::capabilities() const {
  core::Capabilities c;
  c.rdma_put = true;
  c.rdma_get = true;
  return c;
}

size_t UcxConduit::MaxLong() const { return kMaxLong; }

void UcxConduit::StartUp(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  DropLibrarySignalHandlers();
}

absl::Status UcxConduit::CreateContext() {
  ucp_config_t* config = nullptr;
  ucs_status_t s;
  {
    // UCX reads GASNET_UCX_<key> (and UCX_<key>) for this context, and when
    // the first worker is created it warns about every GASNET_UCX_* it did
    // not use: ours are out of its sight meanwhile (bug 4301, fixed rather
    // than silenced, so a misspelt UCX key under our prefix still warns).
    const HiddenOwnVariables hidden;
    s = ucp_config_read("GASNET", nullptr, &config);
    if (s != UCS_OK) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "ucx conduit: reading UCX's settings (GASNET_UCX_* and UCX_*): %s",
          StatusText(s)));
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES |
                        UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_RMA;
    if (settings_.offload_atomics) {
      params.features |= UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
    }
    params.mt_workers_shared = thread_safe_ ? 1 : 0;
    params.estimated_num_eps = size_;
    s = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (s != UCS_OK) {
      context_ = nullptr;
      return absl::UnavailableError(absl::StrFormat(
          "ucx conduit: rank %u: UCX found no usable transport (%s) with "
          "GASNET_UCX_TLS=%s and GASNET_UCX_NET_DEVICES=%s (UCX_TLS=%s, "
          "UCX_NET_DEVICES=%s); `ucx_info -d` lists what this host has",
          rank_, StatusText(s),
          settings_.tls.empty() ? "(unset)" : settings_.tls,
          settings_.net_devices.empty() ? "(unset)" : settings_.net_devices,
          getenv("UCX_TLS") ? getenv("UCX_TLS") : "(unset)",
          getenv("UCX_NET_DEVICES") ? getenv("UCX_NET_DEVICES") : "(unset)"));
    }
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode =
        thread_safe_ ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
    s = ucp_worker_create(context_, &wp, &worker_);
    if (s != UCS_OK) {
      worker_ = nullptr;
      return absl::InternalError(
          absl::StrFormat("ucx conduit: ucp_worker_create: %s", StatusText(s)));
    }
  }
  ucp_am_handler_param_t hp{};
  hp.field_mask =
      UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
      UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  hp.id = kAmId;
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  hp.cb = &UcxConduit::OnAm;
  hp.arg = this;
  s = ucp_worker_set_am_recv_handler(worker_, &hp);
  if (s != UCS_OK) {
    return absl::InternalError(absl::StrFormat(
        "ucx conduit: ucp_worker_set_am_recv_handler: %s", StatusText(s)));
  }
  return absl::OkStatus();
}

absl::Status UcxConduit::Init(const core::InitArgs& args) {
  absl::StatusOr<WaitPolicy*> waits =
      core::CheckInitArgs("ucx", args, own_waits_);
  if (!waits.ok()) return waits.status();
  waits_ = *waits;
  bootstrap_ = args.bootstrap;
  sink_ = args.sink;
  others_ = args.others;
  polite_ = args.polite;
  thread_safe_ = args.thread_safe;
  rank_ = bootstrap_->rank();
  size_ = bootstrap_->size();

  absl::StatusOr<Settings> settings = ReadSettings();
  if (!settings.ok()) return settings.status();
  settings_ = *std::move(settings);
  // PSHM orders its own traffic; UCX's shared-memory transports do not
  // order a Put against a later AM. So the Long shortcut is safe by
  // default only where no two ranks of a host talk through UCX.
  ordered_ = settings_.am_ordered_tls.value_or(args.map->host_count() ==
                                               args.map->supernode_count());
  message_size_ = kMaxOverhead + settings_.max_medium;

  const uint32_t peers =
      static_cast<uint32_t>(size_ - args.map->my_supernode_members().size());
  absl::StatusOr<am::CreditConfig> credit = am::CreditConfigFromEnv(peers);
  if (!credit.ok()) return credit.status();
  credits_ = std::make_unique<am::Credits>(size_, *credit);
  request_pool_ = std::make_unique<BufferPool>(
      kSendPrefix + message_size_,
      std::min<size_t>(64, settings_.max_request_buffs),
      settings_.max_request_buffs, thread_safe_);
  reply_pool_ = std::make_unique<BufferPool>(
      kSendPrefix + message_size_,
      std::min<size_t>(64, settings_.max_reply_buffs),
      settings_.max_reply_buffs, thread_safe_);
  // Received messages wait here until delivered. Credits bound how many:
  // per peer, its unanswered Requests, the Replies to ours, and credit
  // messages (each returns more than the slack). So no maximum is set;
  // stats() shows the high-water mark.
  rx_pool_ =
      std::make_unique<BufferPool>(message_size_, 64, ~size_t{0}, thread_safe_);

  if (absl::Status s = CreateContext(); !s.ok()) return s;
  if (absl::Status s = ConnectPeers(*args.map); !s.ok()) return s;
  DropLibrarySignalHandlers();
  return absl::OkStatus();
}

absl::Status UcxConduit::ConnectPeers(const NodeMap& map) {
  ucp_address_t* address = nullptr;
  size_t address_len = 0;
  ucs_status_t s = ucp_worker_get_address(worker_, &address, &address_len);
  if (s != UCS_OK) {
    return absl::InternalError(absl::StrFormat(
        "ucx conduit: ucp_worker_get_address: %s", StatusText(s)));
  }
  // Addresses differ in length: the lengths first, then each padded to
  // the longest.
  uint64_t mine = address_len;
  std::vector<uint64_t> lengths(size_);
  bootstrap_->Allgather(&mine, sizeof mine, lengths.data());
  const size_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::vector<unsigned char> padded(longest, 0);
  std::memcpy(padded.data(), address, address_len);
  ucp_worker_release_address(worker_, address);
  std::vector<unsigned char> all(longest * size_);
  bootstrap_->Allgather(padded.data(), longest, all.data());
  address_stride_ = longest;

  eps_.assign(size_, nullptr);
  std::vector<Rank> peers;
  for (Rank r = 0; r < size_; ++r) {
    if (r == rank_ || map.SameSupernode(rank_, r)) continue;
    ucp_ep_params_t ep{};
    // UCP_ERR_HANDLING_MODE_PEER would let a failed peer reach a handler
    // instead of UCX's log, but UCX 1.13 then refuses its shared-memory
    // transports (posix, sysv: "unreachable"). A lost peer is the
    // launcher's to report: it ends the job.
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.address = reinterpret_cast<const ucp_address_t*>(&all[longest * r]);
    s = ucp_ep_create(worker_, &ep, &eps_[r]);
    if (s != UCS_OK) {
      eps_[r] = nullptr;
      return absl::UnavailableError(absl::StrFormat(
          "ucx conduit: rank %u cannot reach rank %u (%s host) with the "
          "transports UCX was given: GASNET_UCX_TLS=%s, "
          "GASNET_UCX_NET_DEVICES=%s (UCX: %s); a job across supernodes "
          "needs a transport between them (tcp, or sm within one host)",
          rank_, r, map.SameHost(rank_, r) ? "same" : "another",
          settings_.tls.empty() ? "(unset)" : settings_.tls,
          settings_.net_devices.empty() ? "(unset)" : settings_.net_devices,
          StatusText(s)));
    }
    peers.push_back(r);
  }

  // Wire-up: UCX connects lazily, and a connection needs both sides'
  // progress. A hidden hello to every peer, then waiting for every peer's,
  // leaves each pair connected before Init returns, so a message sent
  // just before a blocking bootstrap collective (where nothing progresses
  // UCX) does not wait in UCX for a connection.
  for (Rank r : peers) {
    unsigned char* buffer = TakeBuffer(*reply_pool_, false, true);
    WireHeader h{};
    h.flags = kFlagCreditsOnly | kFlagHello;
    h.source = rank_;
    std::memcpy(buffer + kSendPrefix, &h, sizeof h);
    const ucs_status_t sent =
        SendEager(eps_[r], *reply_pool_, buffer, sizeof h);
    if (sent != UCS_OK) {
      return absl::UnavailableError(
          absl::StrFormat("ucx conduit: rank %u: the hello to rank %u: %s",
                          rank_, r, StatusText(sent)));
    }
  }
  while (hellos_.load(std::memory_order_acquire) < peers.size()) {
    WaitRound([&] { return ProgressWorker(worker_); });
  }
  if (settings_.offload_atomics) addresses_ = std::move(all);
  return absl::OkStatus();
}

void UcxConduit::Fini() {
  if (closed_.exchange(true)) return;
  finishing_.store(true, std::memory_order_relaxed);
  if (settings_.print_stats && worker_ != nullptr) PrintStats();
  if (worker_ != nullptr) {
    // What this rank sent must leave before its endpoints close, or a peer
    // still waiting for our last exit message would wait for its timeout.
    // Bounded: a peer that has gone cannot acknowledge.
    std::atomic<bool> flushed{false};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = [](void* request, ucs_status_t, void* done) {
      static_cast<std::atomic<bool>*>(done)->store(true);
      ucp_request_free(request);
    };
    p.user_data = &flushed;
    ucs_status_ptr_t req = ucp_worker_flush_nbx(worker_, &p);
    const absl::Time deadline = absl::Now() + kFlushFor;
    if (UCS_PTR_IS_PTR(req)) {
      PoliteSpinWait spin(polite_);
      while (!flushed.load() && absl::Now() < deadline) {
        if (ucp_worker_progress(worker_) == 0) spin.Pause();
      }
      // Not flushed in time: UCX still owns the request and the flag;
      // the flag stays alive below until progress stops.
    }
    const absl::Time linger = absl::Now() + kLingerFor;
    PoliteSpinWait spin(polite_);
    while (absl::Now() < linger) {
      if (ucp_worker_progress(worker_) == 0) spin.Pause();
    }
    if (UCS_PTR_IS_PTR(req) && !flushed.load()) {
      // The flush request's callback must not outlive `flushed`: cancel
      // by abandoning the worker (the process is ending).
      return;
    }
  }
  // In PAR mode other threads may still be inside the conduit while one
  // thread ends the job; releasing UCX under them would crash them. The
  // process is about to end: UCX stays up, later calls do nothing.
  if (thread_safe_) return;
  // What PrepareAtomics created (a conduit peer's endpoint and key are
  // released below, with the rest).
  for (Rank r = 0; r < atomic_eps_.size(); ++r) {
    if (eps_[r] != nullptr) continue;
    if (atomic_rkeys_[r] != nullptr) ucp_rkey_destroy(atomic_rkeys_[r]);
    CloseEndpoint(atomic_eps_[r]);
  }
  atomic_eps_.clear();
  atomic_rkeys_.clear();
  for (RemoteSegment& s : segments_) {
    if (s.rkey != nullptr) ucp_rkey_destroy(s.rkey);
    s.rkey = nullptr;
  }
  for (ucp_ep_h& ep : eps_) CloseEndpoint(ep);
  if (segment_memh_ != nullptr) ucp_mem_unmap(context_, segment_memh_);
  segment_memh_ = nullptr;
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  worker_ = nullptr;
  if (context_ != nullptr) ucp_cleanup(context_);
  context_ = nullptr;
}

UcxStats UcxConduit::stats() const {
  UcxStats s;
  s.requests_sent = counters_.requests_sent.load();
  s.replies_sent = counters_.replies_sent.load();
  s.credit_messages_sent = counters_.credit_messages_sent.load();
  s.credit_waits = counters_.credit_waits.load();
  s.buffer_waits = counters_.buffer_waits.load();
  s.rx_buffers = rx_pool_ ? rx_pool_->allocated() : 0;
  s.tx_buffers = (request_pool_ ? request_pool_->allocated() : 0) +
                 (reply_pool_ ? reply_pool_->allocated() : 0);
  s.atomics = counters_.atomics.load();
  s.peers = size_ > 0 ? size_ - 1 : 0;
  for (Rank r = 0; r < eps_.size(); ++r) {
    if (eps_[r] == nullptr) continue;
    ++s.connected_peers;
    ++s.endpoints;
  }
  for (const RemoteSegment& seg : segments_) s.rkeys += seg.rkey != nullptr;
  // PrepareAtomics's own endpoints and keys: those of ranks without an AM
  // endpoint (a conduit peer's are counted above).
  for (Rank r = 0; r < atomic_eps_.size(); ++r) {
    if (r < eps_.size() && eps_[r] != nullptr) continue;
    s.endpoints += atomic_eps_[r] != nullptr;
    s.rkeys += atomic_rkeys_[r] != nullptr;
  }
  uint64_t bytes = eps_.capacity() * sizeof(ucp_ep_h) + addresses_.capacity() +
                   segments_.capacity() * sizeof(RemoteSegment) +
                   packed_keys_.capacity() +
                   atomic_eps_.capacity() * sizeof(ucp_ep_h) +
                   atomic_rkeys_.capacity() * sizeof(ucp_rkey_h);
  if (credits_ != nullptr) bytes += credits_->MemoryBytes();
  for (const BufferPool* pool : {rx_pool_.get(), request_pool_.get(),
                                 reply_pool_.get(), atomic_pool_.get()}) {
    if (pool != nullptr) bytes += pool->allocated() * pool->buffer_size();
  }
  s.conduit_bytes = bytes;
  return s;
}

void UcxConduit::PrintStats() const {
  const UcxStats s = stats();
  std::printf(
      "ucx: rank %u: requests %llu replies %llu credit_messages %llu "
      "credit_waits %llu buffer_waits %llu rx_buffers %llu (%zu bytes each) "
      "tx_buffers %llu ordered_tls %d atomics %llu peers %llu "
      "connected_peers %llu conduit_bytes %llu endpoints %llu rkeys %llu\n",
      rank_, static_cast<unsigned long long>(s.requests_sent),
      static_cast<unsigned long long>(s.replies_sent),
      static_cast<unsigned long long>(s.credit_messages_sent),
      static_cast<unsigned long long>(s.credit_waits),
      static_cast<unsigned long long>(s.buffer_waits),
      static_cast<unsigned long long>(s.rx_buffers), message_size_,
      static_cast<unsigned long long>(s.tx_buffers), ordered_ ? 1 : 0,
      static_cast<unsigned long long>(s.atomics),
      static_cast<unsigned long long>(s.peers),
      static_cast<unsigned long long>(s.connected_peers),
      static_cast<unsigned long long>(s.conduit_bytes),
      static_cast<unsigned long long>(s.endpoints),
      static_cast<unsigned long long>(s.rkeys));
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------
// Receiving.

ucs_status_t UcxConduit::OnAm(void* arg, const void* header,
                              size_t header_length, void* data, size_t length,
                              const ucp_am_recv_param_t* param) {
  (void)header;
  (void)header_length;
  auto* self = static_cast<UcxConduit*>(arg);
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 ||
      length < sizeof(WireHeader) || length > self->message_size_) {
    FatalErrorF("ucx conduit: rank %u: a malformed message (%zu bytes%s)",
                self->rank_, length,
                (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0
                    ? ", rendezvous"
                    : "");
  }
  WireHeader h;
  std::memcpy(&h, data, sizeof h);
  if ((h.flags & kFlagHello) != 0) {
    self->hellos_.fetch_add(1, std::memory_order_release);
    return UCS_OK;
  }
  // Handlers may send, and UCX forbids that from its callbacks: the
  // message waits in a receive buffer until progress has returned.
  unsigned char* copy = self->rx_pool_->Get();
  std::memcpy(copy, data, length);
  const int which = (h.flags & kFlagRequest) != 0 ? 0 : 1;
  {
    std::lock_guard<std::mutex> lock(self->queue_mutex_);
    self->queue_[which].push_back({copy, length});
  }
  self->queued_.fetch_add(1, std::memory_order_release);
  return UCS_OK;
}

int UcxConduit::DrainQueue(bool replies, int budget) {
  const int which = replies ? 1 : 0;
  int n = 0;
  while (n < budget) {
    Queued q;
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      if (queue_[which].empty()) break;
      q = queue_[which].front();
      queue_[which].pop_front();
    }
    queued_.fetch_sub(1, std::memory_order_relaxed);
    Deliver(q.msg, q.len);
    rx_pool_->Put(q.msg);
    ++n;
  }
  return n;
}

void UcxConduit::Deliver(unsigned char* msg, size_t len) {
  const wire::Receiver me{"ucx", rank_, size_, segment_base_, segment_size_};
  core::Inbound in;
  uint32_t args[am::kMaxArgs];
  const wire::Header h = wire::Decode(me, msg, len, in, args);
  if (h.credits != 0) credits_->Grant(h.source, h.credits);
  if ((h.flags & kFlagCreditsOnly) != 0) return;
  if (!in.is_request) {
    sink_.Deliver(in);
    return;
  }
  ReplyHandle reply{h.source, false};
  in.reply = &reply;
  sink_.Deliver(in);
  // No Reply went back: the Request's credit is owed, banked until the
  // slack is exceeded.
  if (!reply.replied && credits_->Bank(h.source)) SendCredits(h.source);
}

int UcxConduit::Poll() {
  const exit::ConduitCall call;
  if (closed_.load(std::memory_order_relaxed)) return 0;
  CheckPeerLost(rank_);
  int n = static_cast<int>(ProgressWorker(worker_));
  if (queued_.load(std::memory_order_acquire) != 0) {
    n += DrainQueue(/*replies=*/true, kPollBudget);
    n += DrainQueue(/*replies=*/false, kPollBudget);
  }
  return n;
}

void UcxConduit::ProgressSends() {
  const exit::ConduitCall call;
  // UCX's progress runs no handler of ours: the receive callback only
  // queues. So it is safe inside a bootstrap collective's wait, and it
  // moves both our queued sends and UCX's wire-up.
  if (closed_.load(std::memory_order_relaxed) || worker_ == nullptr) return;
  ProgressWorker(worker_);
}

int UcxConduit::Progress(bool replies_only) {
  if (closed_.load(std::memory_order_relaxed)) {
    return others_.Poll(replies_only);
  }
  CheckPeerLost(rank_);
  int n = static_cast<int>(ProgressWorker(worker_));
  if (queued_.load(std::memory_order_acquire) != 0) {
    n += DrainQueue(/*replies=*/true, kPollBudget);
    if (!replies_only) n += DrainQueue(/*replies=*/false, kPollBudget);
  }
  return n + others_.Poll(replies_only);
}

void UcxConduit::WaitCounter(const rma::Counter& c, bool replies_only) {
  while (!c.Done()) {
    WaitRound([&] { return Progress(replies_only); });
  }
}

// ---------------------------------------------------------------------------
// Active Messages.

core::SendStatus UcxConduit::Request(Rank dest, const core::Outbound& m,
                                     bool immediate) {
  const exit::ConduitCall call;
  if (dest >= size_ || eps_[dest] == nullptr) {
    FatalErrorF("ucx conduit: rank %u is not a conduit peer of rank %u", dest,
                rank_);
  }
  return Send(dest, nullptr, m, /*credits_only=*/false, immediate);
}

core::SendStatus UcxConduit::Reply(void* reply, const core::Outbound& m,
                                   bool immediate) {
  const exit::ConduitCall call;
  auto* handle = static_cast<ReplyHandle*>(reply);
  return Send(handle->source, handle, m, /*credits_only=*/false, immediate);
}

void UcxConduit::SendCredits(Rank dest) {
  core::Outbound m;
  ReplyHandle handle{dest, false};
  // Once the job is exiting the peer may already be gone: the credits are
  // offered once (immediate), banked again if they cannot go.
  if (Send(dest, &handle, m, /*credits_only=*/true,
           /*immediate=*/exit::ExitInProgress()) == SendStatus::kOk) {
    counters_.credit_messages_sent.fetch_add(1, std::memory_order_relaxed);
  }
}

bool UcxConduit::TakeCredit(Rank dest, bool immediate) {
  return credits_->AcquireOrWait(dest, immediate, counters_.credit_waits, [&] {
    WaitRound([&] { return Progress(/*replies_only=*/false); });
  });
}

unsigned char* UcxConduit::TakeBuffer(BufferPool& pool, bool immediate,
                                      bool replies_only) {
  unsigned char* b = pool.Get();
  if (b != nullptr) return b;
  counters_.buffer_waits.fetch_add(1, std::memory_order_relaxed);
  if (immediate) return nullptr;
  while ((b = pool.Get()) == nullptr) {
    WaitRound([&] { return Progress(replies_only); });
  }
  return b;
}

void UcxConduit::WriteLongPayload(Rank dest, const void* src, size_t len,
                                  uint64_t long_dest, bool replies_only) {
  const RemoteSegment& s =
      CheckRemote("AM Long", dest, reinterpret_cast<void*>(long_dest), len);
  rma::Counter done;
  done.Start(1);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = &CompleteCounter;
  p.user_data = &done;
  ucs_status_ptr_t req;
  {
    const InUcx in;
    req = ucp_put_nbx(eps_[dest], src, len, long_dest, s.rkey, &p);
  }
  if (UCS_PTR_IS_ERR(req)) {
    PeerLost("a Long's payload to", dest, UCS_PTR_STATUS(req));
    req = nullptr;
  }
  if (req == nullptr) done.Complete();
  if (!ordered_) {
    // The header must not overtake the payload: it waits for the Put's
    // remote completion.
    rma::Counter flushed;
    flushed.Start(1);
    p.user_data = &flushed;
    {
      const InUcx in;
      req = ucp_ep_flush_nbx(eps_[dest], &p);
    }
    if (UCS_PTR_IS_ERR(req)) {
      PeerLost("flushing to", dest, UCS_PTR_STATUS(req));
      req = nullptr;
    }
    if (req == nullptr) flushed.Complete();
    WaitCounter(flushed, replies_only);
  }
  // The source must be reusable when the send returns.
  WaitCounter(done, replies_only);
}

namespace {}  // namespace

core::SendStatus UcxConduit::Send(Rank dest, ReplyHandle* reply,
                                  const core::Outbound& m, bool credits_only,
                                  bool immediate) {
  if (closed_.load(std::memory_order_relaxed)) return SendStatus::kOk;
  const bool request = reply == nullptr;
  const bool is_long = m.category == Category::kLong;
  wire::CheckOutbound("ucx", request, m, settings_.max_medium, kMaxLong);
  const bool replies_only = !request;
  const bool long_by_rma = is_long && m.len > settings_.max_medium;
  const size_t inline_len =
      (m.category == Category::kShort || long_by_rma) ? 0 : m.len;
  const size_t payload_at = PayloadOffset(m.nargs);
  const size_t total =
      inline_len != 0 ? payload_at + inline_len : ArgsEnd(m.nargs);

  if (request && !TakeCredit(dest, immediate)) return SendStatus::kWouldBlock;
  BufferPool& pool = request ? *request_pool_ : *reply_pool_;
  unsigned char* buffer = TakeBuffer(pool, immediate, replies_only);
  if (buffer == nullptr) {
    if (request) credits_->Grant(dest, 1);
    return SendStatus::kWouldBlock;
  }
  if (long_by_rma) {
    WriteLongPayload(dest, m.payload, m.len, m.long_dest, replies_only);
  }

  unsigned char* msg = buffer + kSendPrefix;
  wire::Encode(m, rank_, request, credits_only, long_by_rma,
               /*inline_payload=*/inline_len != 0, msg);
  // A Reply returns its Request's credit, besides what was banked.
  const uint32_t credits =
      credits_->TakeBanked(dest) + (request || credits_only ? 0 : 1);
  std::memcpy(msg + offsetof(WireHeader, credits), &credits, sizeof credits);

  const ucs_status_t sent = SendEager(eps_[dest], pool, buffer, total);
  if (sent != UCS_OK) PeerLost("sending to", dest, sent);
  if (!credits_only) {
    if (request) {
      counters_.requests_sent.fetch_add(1, std::memory_order_relaxed);
    } else {
      reply->replied = true;
      counters_.replies_sent.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return SendStatus::kOk;
}

// ---------------------------------------------------------------------------
// RMA.

absl::Status UcxConduit::AttachSegment(void* base, size_t size) {
  struct Published {
    uint64_t base = 0;
    uint64_t size = 0;
    uint64_t rkey_len = 0;
  };
  Published mine;
  void* packed = nullptr;
  size_t packed_len = 0;
  if (base != nullptr && size != 0) {
    ucp_mem_map_params_t mp{};
    mp.field_mask =
        UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = base;
    mp.length = size;
    ucs_status_t s = ucp_mem_map(context_, &mp, &segment_memh_);
    if (s != UCS_OK) {
      segment_memh_ = nullptr;
      return absl::InternalError(absl::StrFormat(
          "ucx conduit: ucp_mem_map of the segment [%p, +%zu): %s", base, size,
          StatusText(s)));
    }
    s = ucp_rkey_pack(context_, segment_memh_, &packed, &packed_len);
    if (s != UCS_OK) {
      return absl::InternalError(
          absl::StrFormat("ucx conduit: ucp_rkey_pack: %s", StatusText(s)));
    }
    mine.base = reinterpret_cast<uint64_t>(base);
    mine.size = size;
    mine.rkey_len = packed_len;
    segment_base_ = reinterpret_cast<uintptr_t>(base);
    segment_size_ = size;
  }
  std::vector<Published> all(size_);
  bootstrap_->Allgather(&mine, sizeof mine, all.data());
  size_t longest = 8;
  for (const Published& p : all)
    longest = std::max<size_t>(longest, p.rkey_len);
  std::vector<unsigned char> padded(longest, 0);
  if (packed != nullptr) {
    std::memcpy(padded.data(), packed, packed_len);
    ucp_rkey_buffer_release(packed);
  }
  std::vector<unsigned char> keys(longest * size_);
  bootstrap_->Allgather(padded.data(), longest, keys.data());
  segments_.assign(size_, RemoteSegment{});
  for (Rank r = 0; r < size_; ++r) {
    segments_[r].base = all[r].base;
    segments_[r].size = all[r].size;
    if (eps_[r] == nullptr || all[r].size == 0) continue;
    ucs_status_t s =
        ucp_ep_rkey_unpack(eps_[r], &keys[longest * r], &segments_[r].rkey);
    if (s != UCS_OK) {
      return absl::InternalError(absl::StrFormat(
          "ucx conduit: rank %u: unpacking rank %u's segment key: %s", rank_, r,
          StatusText(s)));
    }
  }
  if (settings_.offload_atomics) {
    packed_keys_ = std::move(keys);
    key_stride_ = longest;
  }
  return absl::OkStatus();
}

void UcxConduit::CloseEndpoint(ucp_ep_h& ep) {
  if (ep == nullptr) return;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &p);
  if (UCS_PTR_IS_PTR(req)) {
    const absl::Time deadline = absl::Now() + kFlushFor;
    while (ucp_request_check_status(req) == UCS_INPROGRESS &&
           absl::Now() < deadline) {
      ucp_worker_progress(worker_);
    }
    ucp_request_free(req);
  }
  ep = nullptr;
}

const UcxConduit::RemoteSegment& UcxConduit::CheckRemote(const char* call,
                                                         Rank rank,
                                                         const void* address,
                                                         size_t len) const {
  if (rank >= segments_.size() || eps_[rank] == nullptr ||
      segments_[rank].rkey == nullptr) {
    FatalErrorF(
        "ucx conduit: %s: rank %u has no segment this rank can reach over "
        "UCX (job of %u; segments attached: %s)",
        call, rank, size_, segments_.empty() ? "no" : "yes");
  }
  return CheckInSegment(call, rank, address, len);
}

const UcxConduit::RemoteSegment& UcxConduit::CheckInSegment(const char* call,
                                                            Rank rank,
                                                            const void* address,
                                                            size_t len) const {
  const RemoteSegment& s = segments_[rank];
  const uint64_t a = reinterpret_cast<uint64_t>(address);
  if (a < s.base || len > s.size || a - s.base > s.size - len) {
    FatalErrorF(
        "ucx conduit: %s: [%p, +%zu) is outside rank %u's segment [%p, +%u)",
        call, address, len, rank, reinterpret_cast<void*>(s.base), s.size);
  }
  return s;
}

bool UcxConduit::Put(Rank rank, void* dest, const void* src, size_t len,
                     bool immediate, rma::Counter& rc, rma::Counter* lc) {
  const exit::ConduitCall call;
  (void)immediate;  // UCX queues what it cannot start: nothing refuses.
  if (closed_.load(std::memory_order_relaxed)) {
    FatalError("ucx conduit: Put after the conduit was closed");
  }
  if (len == 0) {
    if (lc != nullptr) lc->Complete();
    rc.Complete();
    return true;
  }
  const RemoteSegment& s = CheckRemote("Put", rank, dest, len);
  // Without `lc` the source must be reusable on return: wait for the
  // Put's local completion here.
  rma::Counter local;
  rma::Counter* local_done = lc;
  if (local_done == nullptr) {
    local.Start(1);
    local_done = &local;
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = &CompleteCounter;
  p.user_data = local_done;
  ucs_status_ptr_t req;
  {
    const InUcx in;
    req = ucp_put_nbx(eps_[rank], src, len, reinterpret_cast<uint64_t>(dest),
                      s.rkey, &p);
  }
  if (UCS_PTR_IS_ERR(req)) {
    PeerLost("a Put to", rank, UCS_PTR_STATUS(req));
    req = nullptr;
  }
  if (req == nullptr) local_done->Complete();
  // Remote completion: a flush of the endpoint completes once everything
  // issued on it before has arrived.
  p.user_data = &rc;
  {
    const InUcx in;
    req = ucp_ep_flush_nbx(eps_[rank], &p);
  }
  if (UCS_PTR_IS_ERR(req)) {
    PeerLost("flushing a Put to", rank, UCS_PTR_STATUS(req));
    req = nullptr;
  }
  if (req == nullptr) rc.Complete();
  if (local_done == &local) WaitCounter(local, /*replies_only=*/false);
  return true;
}

bool UcxConduit::Get(void* dest, Rank rank, const void* src, size_t len,
                     bool immediate, rma::Counter& rc) {
  const exit::ConduitCall call;
  (void)immediate;
  if (closed_.load(std::memory_order_relaxed)) {
    FatalError("ucx conduit: Get after the conduit was closed");
  }
  if (len == 0) {
    rc.Complete();
    return true;
  }
  const RemoteSegment& s = CheckRemote("Get", rank, src, len);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = &CompleteCounter;
  p.user_data = &rc;
  ucs_status_ptr_t req;
  {
    const InUcx in;
    req = ucp_get_nbx(eps_[rank], dest, len, reinterpret_cast<uint64_t>(src),
                      s.rkey, &p);
  }
  if (UCS_PTR_IS_ERR(req)) {
    PeerLost("a Get from", rank, UCS_PTR_STATUS(req));
    req = nullptr;
  }
  if (req == nullptr) rc.Complete();
  return true;
}

// ---------------------------------------------------------------------------
// Remote atomics.

// One atomic operation in flight: the operand UCP reads, the reply buffer
// UCP writes the old value into (a compare-swap's new value on the way
// in), and where the result and the completion go. From
// atomic_pool_, so that nothing is allocated per operation.
struct UcxConduit::AtomicScratch {
  uint64_t value;
  uint64_t reply;
  void* result;
  rma::Counter* counter;
  BufferPool* pool;
  uint32_t size;
  Rank rank;
};

namespace {

// The operation is done at the target: the old value where the caller
// wants it, then the completion.
void FinishAtomic(UcxConduit::AtomicScratch* a) {
  if (a->result != nullptr) std::memcpy(a->result, &a->reply, a->size);
  rma::Counter* counter = a->counter;
  a->pool->Put(reinterpret_cast<unsigned char*>(a));
  counter->Complete();
}

void AtomicDone(void* request, ucs_status_t status, void* user_data) {
  auto* a = static_cast<UcxConduit::AtomicScratch*>(user_data);
  ucp_request_free(request);
  if (status != UCS_OK) {
    // Never completed: no old value came back (the job is ending, see
    // PeerLost).
    PeerLost("an atomic operation on", a->rank, status);
    return;
  }
  FinishAtomic(a);
}

}  // namespace

uint32_t UcxConduit::AtomicOps(uint32_t dt) const {
  if (!settings_.offload_atomics || (dt & rma::kDtIntegers) == 0 ||
      rma::DtSize(dt) == 0) {
    return 0;
  }
  // The seed's table: everything but MULT, MIN and MAX, on the integers.
  constexpr uint32_t kBase = rma::kOpAdd | rma::kOpSub | rma::kOpInc |
                             rma::kOpDec | rma::kOpAnd | rma::kOpOr |
                             rma::kOpXor | rma::kOpSet | rma::kOpCas;
  return kBase | kBase << rma::kFetchShift | rma::kOpGet;
}

absl::Status UcxConduit::PrepareAtomics() {
  std::lock_guard<std::mutex> lock(atomics_mutex_);
  if (atomics_ready_) return absl::OkStatus();
  if (addresses_.empty() || packed_keys_.empty()) {
    return absl::FailedPreconditionError(
        "ucx conduit: remote atomics need the segment attached first");
  }
  std::vector<ucp_ep_h> eps(size_, nullptr);
  std::vector<ucp_rkey_h> rkeys(size_, nullptr);
  absl::Status status;
  for (Rank r = 0; r < size_ && status.ok(); ++r) {
    if (eps_[r] != nullptr) {
      eps[r] = eps_[r];
      rkeys[r] = segments_[r].rkey;
      continue;
    }
    // This rank or a supernode peer: reached through UCX for atomics only
    // (its self or shared-memory transport, or tcp over loopback).
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.address = reinterpret_cast<const ucp_address_t*>(
        &addresses_[address_stride_ * r]);
    ucs_status_t s = ucp_ep_create(worker_, &ep, &eps[r]);
    if (s != UCS_OK) {
      eps[r] = nullptr;
      status = absl::UnavailableError(absl::StrFormat(
          "ucx conduit: rank %u cannot reach rank %u for remote atomics with "
          "GASNET_UCX_TLS=%s (%s); GASNET_UCX_OFFLOAD_ATOMICS=0 keeps them "
          "off UCX",
          rank_, r, settings_.tls.empty() ? "(unset)" : settings_.tls,
          StatusText(s)));
      break;
    }
    if (segments_[r].size == 0) continue;
    s = ucp_ep_rkey_unpack(eps[r], &packed_keys_[key_stride_ * r], &rkeys[r]);
    if (s != UCS_OK) {
      rkeys[r] = nullptr;
      status = absl::InternalError(absl::StrFormat(
          "ucx conduit: rank %u: unpacking rank %u's segment key for remote "
          "atomics: %s",
          rank_, r, StatusText(s)));
    }
  }
  if (!status.ok()) {
    for (Rank r = 0; r < size_; ++r) {
      if (eps_[r] != nullptr) continue;
      if (rkeys[r] != nullptr) ucp_rkey_destroy(rkeys[r]);
      CloseEndpoint(eps[r]);
    }
    return status;
  }
  atomic_eps_ = std::move(eps);
  atomic_rkeys_ = std::move(rkeys);
  atomic_pool_ = std::make_unique<BufferPool>(
      sizeof(AtomicScratch), 16, settings_.max_request_buffs, thread_safe_);
  atomics_ready_ = true;
  return absl::OkStatus();
}

bool UcxConduit::Atomic(Rank rank, void* target, const core::AtomicOp& op,
                        void* result, bool immediate, rma::Counter& c) {
  const exit::ConduitCall call;
  if (closed_.load(std::memory_order_relaxed)) {
    FatalError("ucx conduit: a remote atomic after the conduit was closed");
  }
  const uint32_t size = static_cast<uint32_t>(rma::DtSize(op.dt));
  const uint64_t address = reinterpret_cast<uint64_t>(target);
  if (rank >= atomic_eps_.size() || atomic_rkeys_[rank] == nullptr) {
    FatalErrorF(
        "ucx conduit: a remote atomic: rank %u has no segment this rank can "
        "reach over UCX (job of %u; PrepareAtomics %s)",
        rank, size_, atomic_eps_.empty() ? "not run" : "run");
  }
  CheckInSegment("a remote atomic", rank, target, size);
  unsigned char* buffer =
      TakeBuffer(*atomic_pool_, immediate, /*replies_only=*/false);
  if (buffer == nullptr) return false;
  auto* a = reinterpret_cast<AtomicScratch*>(buffer);
  a->result = result;
  a->counter = &c;
  a->pool = atomic_pool_.get();
  a->size = size;
  a->rank = rank;
  a->reply = 0;
  // Each opcode as one of UCP's, in its fetching form.
  const uint32_t base = rma::IsFetching(op.op) && op.op != rma::kOpGet
                            ? op.op >> rma::kFetchShift
                            : op.op;
  ucp_atomic_op_t code = UCP_ATOMIC_OP_ADD;
  uint64_t value = op.operand1;
  switch (base) {
    case rma::kOpAdd:
      break;
    case rma::kOpSub:
      value = 0 - op.operand1;
      break;
    case rma::kOpInc:
      value = 1;
      break;
    case rma::kOpDec:
      value = ~uint64_t{0};
      break;
    case rma::kOpAnd:
      code = UCP_ATOMIC_OP_AND;
      break;
    case rma::kOpOr:
      code = UCP_ATOMIC_OP_OR;
      break;
    case rma::kOpXor:
      code = UCP_ATOMIC_OP_XOR;
      break;
    case rma::kOpSet:
      code = UCP_ATOMIC_OP_SWAP;
      break;
    case rma::kOpCas:
      // UCP compares with the operand and stores what the reply buffer
      // holds on the way in.
      code = UCP_ATOMIC_OP_CSWAP;
      a->reply = op.operand2;
      break;
    case rma::kOpGet:
      code = UCP_ATOMIC_OP_OR;
      value = 0;
      break;
    default:
      FatalErrorF("ucx conduit: opcode 0x%x is not one UCP performs", op.op);
  }
  a->value = value;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
  p.cb.send = &AtomicDone;
  p.user_data = a;
  p.datatype = ucp_dt_make_contig(size);
  p.reply_buffer = &a->reply;
  counters_.atomics.fetch_add(1, std::memory_order_relaxed);
  ucs_status_ptr_t req;
  {
    const InUcx in;
    req = ucp_atomic_op_nbx(atomic_eps_[rank], code, &a->value, 1, address,
                            atomic_rkeys_[rank], &p);
  }
  if (UCS_PTR_IS_ERR(req)) {
    PeerLost("an atomic operation on", rank, UCS_PTR_STATUS(req));
    return true;  // Never completes; the job is ending.
  }
  if (req == nullptr) FinishAtomic(a);
  return true;
}

// UCP may carry one endpoint's atomics over several lanes, which need not
// keep their order; a fence makes the operations started after it wait
// for those started before (ucp_worker_fence: ordering, not completion).
void UcxConduit::FenceAtomics() {
  const exit::ConduitCall call;
  ucs_status_t s;
  {
    const InUcx in;
    s = ucp_worker_fence(worker_);
  }
  if (s != UCS_OK) {
    FatalErrorF("ucx conduit: ucp_worker_fence: %s", ucs_status_string(s));
  }
}

}  // namespace gexrt::ucx

namespace gexrt {

std::unique_ptr<core::Conduit> core::CreateConduit() {
  return std::make_unique<ucx::UcxConduit>();
}

}  // namespace gexrt
