#include "conduit/ibv/ibv_conduit.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "am/vocabulary.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "conduit/ibv/connect_file.h"
#include "conduit/ibv/memory_limits.h"
#include "core/am_wire.h"
#include "core/peer_lost.h"
#include "exit/graceful_exit.h"
#include "firehose/settings.h"
#include "pshm/supernode.h"

namespace gexrt::ibv {

using core::Category;
using core::SendStatus;
namespace wire = core::wire;

// ---------------------------------------------------------------------------
// The wire format of an Active Message (one SEND).

namespace {

using wire::ArgsEnd;
using wire::kFlagRequest;
using wire::kMaxOverhead;
using wire::PayloadOffset;
using WireHeader = wire::Header;

// Completions taken per poll of one queue, and messages delivered per
// Poll, so that a flood cannot starve the rest of the rank's progress.
constexpr int kPollBatch = 16;
constexpr int kPollBudget = 64;

// The largest Long (the header's length field), and the largest piece of
// one RDMA work request.
constexpr size_t kMaxLong = size_t{1} << 30;
constexpr size_t kMaxPiece = size_t{1} << 30;

// Fini: how long to wait for what was sent to complete.
constexpr absl::Duration kDrainFor = absl::Milliseconds(500);

// Whether this thread is the receive thread (GASNET_RCV_THREAD): with
// GASNET_RCV_THREAD_POLL_MODE=exclusive it alone polls for AMs.
thread_local bool t_receive_thread = false;
// Whether this thread is a send thread (GASNET_SND_THREAD).
thread_local bool t_send_thread = false;

// Receive work requests carry the buffer's index; send ones the Op's.
constexpr uint32_t kNoBuffer = ~uint32_t{0};

// The P_Key `port`'s QPs use: GASNET_IBV_PKEY's (`wanted`, 0 when unset)
// looked up in the port's table, or the entry at index 0.
absl::Status ResolvePkey(verbs::Context& context, uint16_t wanted,
                         PortInfo& port) {
  auto entry = [&](uint16_t index) {
    return context.QueryPkey(port.port, index);
  };
  if (wanted != 0) {
    absl::StatusOr<uint16_t> index =
        FindPkeyIndex(wanted, port.attr.pkey_table_len, entry,
                      absl::StrCat(port.device, ":", port.port));
    if (!index.ok()) return index.status();
    port.pkey_index = *index;
  }
  if (port.pkey_index < port.attr.pkey_table_len) {
    absl::StatusOr<uint16_t> key = entry(port.pkey_index);
    if (!key.ok()) return key.status();
    port.pkey = *key;
  }
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------
// Internal types.

struct IbvConduit::Rail {
  PortInfo port;
  std::unique_ptr<verbs::Context> context;
  verbs::DeviceAttr device;
  std::unique_ptr<verbs::ProtectionDomain> pd;
  std::unique_ptr<verbs::CompletionQueue> send_cq;
  std::unique_ptr<verbs::CompletionQueue> recv_cq;  // rail 0 only
  std::unique_ptr<verbs::SharedReceiveQueue> srq;   // rail 0, with SRQ
  std::unique_ptr<verbs::MemoryRegion> rbuf_mr;     // rail 0 only
  std::unique_ptr<verbs::MemoryRegion> bbuf_mr;
  std::unique_ptr<verbs::MemoryRegion> segment_mr;
  uint32_t path_mtu = 1024;
};

struct IbvConduit::Qp {
  std::unique_ptr<verbs::QueuePair> qp;
  uint32_t rail = 0;
  Rank peer = 0;
  uint32_t sq_used = 0;   // send WRs not yet completed (under lock_)
  uint32_t sq_depth = 0;  // GASNET_NETWORKDEPTH_PP, or what the QP got
  uint32_t posted = 0;    // receives posted (the AM QP, without SRQ)
  verbs::QpAddress local;
};

struct IbvConduit::Peer {
  // kNone: QPs not created. kPending: this rank sent a REQ and waits for
  // the REP. kAwaitRtu: this rank answered a REQ (its QPs are ready) and
  // waits for the RTU saying the peer's are. kConnected: both are.
  enum State : uint8_t { kNone, kPending, kAwaitRtu, kConnected };
  std::vector<std::unique_ptr<Qp>> qps;  // [0] carries the AMs
  std::atomic<uint8_t> state{kNone};
  std::atomic<uint32_t> next_qp{0};  // RMA without striping: rotates
  std::atomic<bool> used{false};     // for GASNET_CONNECTFILE_OUT
  // Dynamic connections, under lock_: when the next REQ is due (none
  // sent yet: InfinitePast) and the interval after it.
  absl::Time req_due = absl::InfinitePast();
  absl::Duration req_interval = absl::ZeroDuration();
};

// Dynamic connections: one UD QP per rank (rail 0) carrying the handshake
// (REQ, REP, RTU) that connects a pair's RC QPs on first use.
struct IbvConduit::Ud {
  struct Address {
    uint16_t lid = 0;
    verbs::Gid gid;
    uint32_t qpn = 0;
  };
  std::unique_ptr<verbs::CompletionQueue> cq;
  std::unique_ptr<verbs::QueuePair> qp;
  unsigned char* buffers = nullptr;  // receives, then sends
  size_t bytes = 0;
  std::unique_ptr<verbs::MemoryRegion> mr;
  std::vector<uint32_t> free_sends;
  std::vector<Address> addresses;                              // every rank's
  std::vector<std::unique_ptr<verbs::AddressHandle>> handles;  // by rank
  uint32_t qkey = 0;
};

// One send work request in flight.
struct IbvConduit::Op {
  uint32_t index = 0;
  Qp* qp = nullptr;
  uint32_t bbuf = kNoBuffer;   // a send buffer to give back
  rma::Counter* rc = nullptr;  // completes with the WR
  rma::Counter* lc = nullptr;  // completes with the WR too
  firehose::LocalCache* cache = nullptr;
  firehose::LocalCache::Hold hold;  // released with the WR
  void* copy_to = nullptr;          // a Get through a send buffer
  size_t copy_len = 0;
  const char* what = "";  // for error messages
};

struct IbvConduit::ReplyHandle {
  Rank source;
  bool replied;
};

// Firehose's pins are registrations on one rail's protection domain, for
// local access (the peer's side of an RDMA is always its segment).
class IbvConduit::Pinner final : public firehose::Pinner {
 public:
  // `extra_access`: kAccessOnDemand where ODP is used (memory_limits.h).
  Pinner(verbs::ProtectionDomain* pd, uint32_t extra_access)
      : pd_(pd), extra_access_(extra_access) {}
  absl::StatusOr<firehose::Registration> Pin(uintptr_t base,
                                             size_t length) override {
    absl::StatusOr<std::unique_ptr<verbs::MemoryRegion>> mr =
        pd_->RegisterMemory(reinterpret_cast<void*>(base), length,
                            verbs::kAccessLocalWrite | extra_access_);
    if (!mr.ok()) return mr.status();
    firehose::Registration r;
    r.base = base;
    r.length = length;
    r.local_key = (*mr)->lkey();
    r.remote_key = (*mr)->rkey();
    r.handle = mr->release();
    return r;
  }
  void Unpin(const firehose::Registration& r) override {
    delete static_cast<verbs::MemoryRegion*>(r.handle);
  }

 private:
  verbs::ProtectionDomain* pd_;
  uint32_t extra_access_;
};

// GASNET_RCV_THREAD / GASNET_SND_THREAD: a thread that sleeps on a
// completion queue and does `work` when it wakes. Its stack follows
// GASNET_THREAD_STACK_MIN / _PAD; _RATE bounds its wake-ups a second,
// _IDLE keeps it polling that long after the last event, _LOAD bounds the
// fraction of time it is awake (it sleeps in proportion to the time it
// worked).
class IbvConduit::ProgressThread {
 public:
  ProgressThread(verbs::CompletionQueue* cq, const ThreadSettings& s,
                 size_t stack_min, size_t stack_pad, std::function<int()> work)
      : cq_(cq), settings_(s), work_(std::move(work)) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    size_t stack = 0;
    pthread_attr_getstacksize(&attr, &stack);
    stack = std::max(stack_min, stack + stack_pad);
    if (stack != 0) pthread_attr_setstacksize(&attr, stack);
    started_ = pthread_create(
                   &thread_, &attr,
                   [](void* self) -> void* {
                     static_cast<ProgressThread*>(self)->Run();
                     return nullptr;
                   },
                   this) == 0;
    pthread_attr_destroy(&attr);
    if (!started_) {
      FatalErrorF(
          "ibv conduit: starting a progress thread (stack %zu bytes, "
          "GASNET_THREAD_STACK_MIN / _PAD) failed",
          stack);
    }
  }
  ~ProgressThread() { Stop(); }
  void Stop() {
    if (!started_) return;
    started_ = false;
    stop_.store(true);
    if (pthread_equal(pthread_self(), thread_)) {
      // The job is ending from one of this thread's handlers (an exit
      // request arrived): it cannot join itself, and it never returns to
      // its loop (the process ends).
      pthread_detach(thread_);
      return;
    }
    cq_->Interrupt();
    pthread_join(thread_, nullptr);
  }

 private:
  using Clock = std::chrono::steady_clock;

  void Run() {
    auto last_event = Clock::now();
    const auto min_gap =
        settings_.rate == 0
            ? Clock::duration::zero()
            : std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(1.0 / settings_.rate));
    auto last_wake = Clock::now() - min_gap;
    auto awake_since = Clock::now();
    while (!stop_.load(std::memory_order_relaxed)) {
      if (work_() != 0) {
        last_event = Clock::now();
        continue;
      }
      if (Clock::now() - last_event <
          std::chrono::nanoseconds(settings_.idle_ns)) {
        continue;
      }
      // GASNET_*_THREAD_LOAD: awake at most that fraction of the time.
      // (Bounded, so that a stop request is seen within 10 ms.)
      if (settings_.load > 0 && settings_.load < 1) {
        const auto awake = Clock::now() - awake_since;
        const auto rest = std::chrono::duration_cast<Clock::duration>(
            awake * ((1 - settings_.load) / settings_.load));
        std::this_thread::sleep_for(
            std::min<Clock::duration>(rest, std::chrono::milliseconds(10)));
        awake_since = Clock::now();
      }
      // The verbs idiom: arm, poll once more, then sleep.
      if (!cq_->RequestNotify().ok()) return;
      if (work_() != 0) {
        last_event = Clock::now();
        continue;
      }
      absl::StatusOr<bool> woke = cq_->WaitNotify(100'000'000);
      if (!woke.ok()) return;
      // GASNET_*_THREAD_RATE: no more than `rate` wake-ups a second.
      const auto now = Clock::now();
      if (min_gap != Clock::duration::zero() && now - last_wake < min_gap) {
        std::this_thread::sleep_for(min_gap - (now - last_wake));
      }
      last_wake = Clock::now();
      awake_since = last_wake;
    }
  }

  verbs::CompletionQueue* cq_;
  ThreadSettings settings_;
  std::function<int()> work_;
  std::atomic<bool> stop_{false};
  pthread_t thread_{};
  bool started_ = false;
};

// ---------------------------------------------------------------------------
// Start-up.

IbvConduit::IbvConduit() = default;

IbvConduit::~IbvConduit() { Fini(); }

core::Capabilities IbvConduit::capabilities() const {
  core::Capabilities c;
  c.rdma_put = true;
  c.rdma_get = true;
  return c;
}

size_t IbvConduit::MaxLong() const { return kMaxLong; }

absl::Status IbvConduit::Init(const core::InitArgs& args) {
  absl::StatusOr<WaitPolicy*> waits =
      core::CheckInitArgs("ibv", args, own_waits_);
  if (!waits.ok()) return waits.status();
  waits_ = *waits;
  bootstrap_ = args.bootstrap;
  sink_ = args.sink;
  others_ = args.others;
  thread_safe_ = args.thread_safe;
  rank_ = bootstrap_->rank();
  size_ = bootstrap_->size();
  const NodeMap& map = *args.map;

  const uint32_t remote_peers =
      static_cast<uint32_t>(size_ - map.my_supernode_members().size());
  absl::StatusOr<Settings> settings =
      ReadSettings({.rank = rank_,
                    .ranks = size_,
                    .remote_peers = remote_peers,
                    .thread_safe = thread_safe_});
  if (!settings.ok()) return settings.status();
  settings_ = *std::move(settings);
  buffer_size_ = (kMaxOverhead + settings_.max_medium + 63) & ~size_t{63};
  packed_long_ = std::min(settings_.packedlong_limit, settings_.max_medium);
  use_srq_ = settings_.srq;
  if (settings_.rbuf_count == 0) {
    // GASNET_RBUF_COUNT=0: no limit; as many as the credits can use.
    settings_.rbuf_count = static_cast<uint32_t>(std::min<uint64_t>(
        ReceiveBuffersNeeded(settings_.credits, remote_peers) +
            settings_.rbuf_spares + 64,
        uint64_t{1} << 20));
  }
  credits_ = std::make_unique<am::Credits>(size_, settings_.credits);
  if (settings_.rcv_thread.enabled || settings_.snd_thread.enabled) {
    if (!thread_safe_) {
      if (!env::Quiet() && rank_ == 0) {
        std::fprintf(stderr,
                     "ibv conduit: GASNET_RCV_THREAD / GASNET_SND_THREAD "
                     "ignored: a progress thread runs handlers beside the "
                     "client's threads, which needs a PAR build "
                     "(gasnet_ibv_par)\n");
      }
      settings_.rcv_thread.enabled = false;
      settings_.snd_thread.enabled = false;
    }
  }
  lock_.Enable(thread_safe_);
  // An end signal or the launcher's exit decision that lands inside the
  // conduit (each entry from above, and the progress threads' rounds, are
  // exit::ConduitCall scopes) waits until the conduit returns to the
  // client or a wait round of the outermost call (exit/signals.h): run
  // from the handler, its exit would wait on a device lock the interrupted
  // frame holds, or find a send half posted.
  // GASNET_RCV_THREAD_POLL_MODE: serialized and concurrent are the same
  // here (every poll takes the conduit's lock in PAR); exclusive leaves the
  // AM queue to the thread alone.
  exclusive_receive_thread_ =
      settings_.rcv_thread.enabled &&
      settings_.rcv_thread.poll_mode == PollMode::kExclusive;

  const std::string job_key = pshm::AgreeJobPrefix(*bootstrap_);
  if (absl::Status s = OpenRails(job_key, map); !s.ok()) return s;
  if (absl::Status s = CreateBuffers(map); !s.ok()) return s;
  if (absl::Status s = ConnectPeers(map); !s.ok()) return s;

  return absl::OkStatus();
}

absl::Status IbvConduit::OpenRails(const std::string& job_key,
                                   const NodeMap& map) {
  absl::StatusOr<verbs::Selection> selection = verbs::SelectProvider(job_key);
  if (!selection.ok()) return selection.status();
  selection_ = *std::move(selection);
  software_ = selection_.provider->kind() == "software";
  if (software_ && map.host_count() > 1) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "ibv conduit: the job spans %u hosts, but this rank got the software "
        "verbs device (%s), which connects the processes of one host only; "
        "run where an HCA exists, or on one host",
        map.host_count(), selection_.reason));
  }
  absl::StatusOr<std::vector<verbs::DeviceInfo>> devices =
      selection_.provider->ListDevices();
  if (!devices.ok()) return devices.status();

  // Open every device the filter may use, list its ports, choose.
  std::vector<std::unique_ptr<verbs::Context>> contexts;
  std::vector<verbs::DeviceAttr> attrs;
  std::vector<PortInfo> listing;
  std::vector<size_t> context_of;  // listing index -> contexts index
  for (const verbs::DeviceInfo& d : *devices) {
    bool wanted = settings_.ports.empty();
    for (const env::PortSpec& s : settings_.ports) wanted |= s.hca == d.name;
    if (!wanted) {
      // Still listed (for the error message), not opened.
      for (uint8_t p = 1; p <= d.num_ports; ++p) {
        listing.push_back({d.name, p, {}, /*queried=*/false});
        context_of.push_back(~size_t{0});
      }
      continue;
    }
    absl::StatusOr<std::unique_ptr<verbs::Context>> c =
        selection_.provider->Open(d.name);
    if (!c.ok()) return c.status();
    absl::StatusOr<verbs::DeviceAttr> attr = (*c)->QueryDevice();
    if (!attr.ok()) return attr.status();
    for (uint8_t p = 1; p <= d.num_ports; ++p) {
      absl::StatusOr<verbs::PortAttr> pa = (*c)->QueryPort(p);
      if (!pa.ok()) return pa.status();
      listing.push_back({d.name, p, *pa});
      context_of.push_back(contexts.size());
    }
    contexts.push_back(*std::move(c));
    attrs.push_back(*attr);
  }
  absl::StatusOr<std::vector<PortInfo>> chosen =
      ChoosePorts(listing, settings_.ports, settings_.ports_variable);
  if (!chosen.ok()) {
    return absl::Status(
        chosen.status().code(),
        absl::StrFormat("%s (rank %u, %s)", chosen.status().message(), rank_,
                        selection_.reason));
  }
  // GASNET_IBV_PORTS_VERBOSE: the probe is the same for every rank of a
  // host, so the first one reports it.
  if (map.my_host_members().front() == rank_) {
    for (const std::string& line :
         DescribeProbe(listing, *chosen, settings_.ports,
                       settings_.ports_variable, settings_.ports_verbose)) {
      std::fprintf(stderr, "ibv: rank %u: %s\n", rank_, line.c_str());
    }
  }
  for (const PortInfo& p : *chosen) {
    size_t at = 0;
    while (listing[at].device != p.device || listing[at].port != p.port) ++at;
    const size_t ci = context_of[at];
    auto rail = std::make_unique<Rail>();
    rail->port = p;
    rail->device = attrs[ci];
    // One context per rail: a second rail on the same device opens it
    // again (verbs allows it), so that each rail owns its objects.
    if (contexts[ci] != nullptr) {
      rail->context = std::move(contexts[ci]);
    } else {
      absl::StatusOr<std::unique_ptr<verbs::Context>> c =
          selection_.provider->Open(p.device);
      if (!c.ok()) return c.status();
      rail->context = *std::move(c);
    }
    if (absl::Status s =
            ResolvePkey(*rail->context, settings_.pkey, rail->port);
        !s.ok()) {
      return absl::Status(s.code(), absl::StrFormat("ibv conduit: rank %u: %s",
                                                    rank_, s.message()));
    }
    uint32_t mtu = p.attr.active_mtu;
    if (settings_.max_mtu != 0) mtu = std::min(mtu, settings_.max_mtu);
    rail->path_mtu = mtu;
    rails_.push_back(std::move(rail));
  }
  if (settings_.list_ports) {
    std::vector<PortInfo> used;
    for (const auto& rail : rails_) used.push_back(rail->port);
    std::printf("ibv: rank %u: %s\nibv: rank %u: using:\n%s", rank_,
                selection_.reason.c_str(), rank_, DescribePorts(used).c_str());
    std::fflush(stdout);
  }

  // The device's limits, checked before anything is created.
  const verbs::DeviceAttr& dev = rails_[0]->device;
  inline_limit_ = settings_.inlinesend_limit < 0
                      ? dev.max_inline_data
                      : static_cast<uint32_t>(std::min<int64_t>(
                            settings_.inlinesend_limit, dev.max_inline_data));
  if (settings_.networkdepth_pp > dev.max_qp_wr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ibv conduit: GASNET_NETWORKDEPTH_PP=%u exceeds the device's %u work "
        "requests per queue (%s)",
        settings_.networkdepth_pp, dev.max_qp_wr, rails_[0]->port.device));
  }

  for (auto& rail : rails_) {
    absl::StatusOr<std::unique_ptr<verbs::ProtectionDomain>> pd =
        rail->context->AllocPd();
    if (!pd.ok()) return pd.status();
    rail->pd = *std::move(pd);
    absl::StatusOr<std::unique_ptr<verbs::CompletionQueue>> cq =
        rail->context->CreateCq(settings_.networkdepth_total + 16);
    if (!cq.ok()) return cq.status();
    rail->send_cq = *std::move(cq);
  }
  Rail& first = *rails_[0];
  absl::StatusOr<std::unique_ptr<verbs::CompletionQueue>> rcq =
      first.context->CreateCq(settings_.rbuf_count + 16);
  if (!rcq.ok()) return rcq.status();
  first.recv_cq = *std::move(rcq);
  if (use_srq_) {
    absl::StatusOr<std::unique_ptr<verbs::SharedReceiveQueue>> srq =
        first.pd->CreateSrq(
            {.max_wr = std::min(settings_.rbuf_count, dev.max_srq_wr),
             .max_sge = 1});
    if (!srq.ok()) return srq.status();
    first.srq = *std::move(srq);
  }
  return absl::OkStatus();
}

absl::Status IbvConduit::CreateBuffers(const NodeMap& map) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto map_pages = [&](size_t bytes) -> unsigned char* {
    bytes = (bytes + page - 1) / page * page;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
  };
  rbufs_bytes_ = (settings_.rbuf_count * buffer_size_ + page - 1) / page * page;
  bbufs_bytes_ = (settings_.bbuf_count * buffer_size_ + page - 1) / page * page;
  rbufs_ = map_pages(rbufs_bytes_);
  bbufs_ = map_pages(bbufs_bytes_);
  if (rbufs_ == nullptr || bbufs_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "ibv conduit: rank %u: no memory for %u receive and %u send buffers "
        "of %zu bytes (GASNET_RBUF_COUNT, GASNET_BBUF_COUNT)",
        rank_, settings_.rbuf_count, settings_.bbuf_count, buffer_size_));
  }
  for (size_t i = 0; i < rails_.size(); ++i) {
    Rail& rail = *rails_[i];
    absl::StatusOr<std::unique_ptr<verbs::MemoryRegion>> mr =
        rail.pd->RegisterMemory(bbufs_, bbufs_bytes_, verbs::kAccessLocalWrite);
    if (!mr.ok()) return mr.status();
    rail.bbuf_mr = *std::move(mr);
    if (i == 0) {
      mr = rail.pd->RegisterMemory(rbufs_, rbufs_bytes_,
                                   verbs::kAccessLocalWrite);
      if (!mr.ok()) return mr.status();
      rail.rbuf_mr = *std::move(mr);
    }
  }
  // The spares are kept apart for reposting before a Request handler; the
  // rest are posted at connection or for Replies.
  const uint32_t spares = std::min(settings_.rbuf_spares, settings_.rbuf_count);
  for (uint32_t b = settings_.rbuf_count; b-- > 0;) {
    (b < spares ? spares_ : unposted_).push_back(b);
  }
  free_bbufs_.reserve(settings_.bbuf_count);
  for (uint32_t b = settings_.bbuf_count; b-- > 0;) free_bbufs_.push_back(b);
  const uint32_t ops = settings_.networkdepth_total + 1;
  ops_.reserve(ops);
  free_ops_.reserve(ops);
  for (uint32_t i = 0; i < ops; ++i) {
    ops_.push_back(std::make_unique<Op>());
    ops_.back()->index = i;
    free_ops_.push_back(ops_.back().get());
  }
  deferred_.reserve(settings_.rbuf_count);

  // Firehose for RMA from and to memory outside the segment: one local
  // cache per rail (registrations belong to a protection domain).
  // What firehose may pin: GASNET_PHYSMEM_MAX's share for this rank
  // (memory_limits.h), after GASNET_MAXIMIZE_MEMLOCK raised the limit.
  // Probing pins that much at start-up, so it runs only when
  // GASNET_PHYSMEM_PROBE says so explicitly (GASNet's default probes when
  // PHYSMEM_MAX is unset; README.md says why we do not).
  if (absl::Status s = MaximizeMemlock(settings_.maximize_memlock);
      !s.ok() && env::VerboseEnv() && rank_ == 0) {
    std::fprintf(stderr, "ibv conduit: %s\n", std::string(s.message()).c_str());
  }
  Settings physmem = settings_;
  if (!env::GetRaw("GASNET_PHYSMEM_PROBE").has_value()) {
    physmem.physmem_probe = false;
  }
  const uint32_t ranks_here = std::max<uint32_t>(1, map.ranks_on_my_machine());
  MlockProber prober;
  absl::StatusOr<PhysmemPlan> plan =
      PlanPhysmem(physmem, ranks_here, 0, &prober);
  if (!plan.ok()) return plan.status();
  if (!plan->note.empty() && rank_ == 0) {
    std::fprintf(stderr, "ibv conduit: %s\n", plan->note.c_str());
  }
  const OdpChoice odp = ChooseOdp(settings_, rails_[0]->device, rank_);
  // ODP is on by default; that a device lacks it is news only to whoever
  // asked for it.
  if (!odp.note.empty() && env::GetRaw("GASNET_USE_ODP").has_value()) {
    std::fprintf(stderr, "ibv conduit: %s\n", odp.note.c_str());
  }
  firehose::Resources resources;
  resources.pool_bytes = plan->bytes;
  resources.main_fraction = 0.75;
  resources.device_max_regions = rails_[0]->device.max_mr;
  resources.ranks_on_host = ranks_here;
  absl::StatusOr<firehose::Settings> fh = firehose::SettingsFromEnv(resources);
  if (!fh.ok()) return fh.status();
  if (fh->enabled) {
    for (auto& rail : rails_) {
      pinners_.push_back(
          std::make_unique<Pinner>(rail->pd.get(), odp.access_flags));
      absl::StatusOr<std::unique_ptr<firehose::LocalCache>> cache =
          firehose::LocalCache::Create(firehose::LocalLimitsFor(*fh),
                                       pinners_.back().get());
      if (!cache.ok()) return cache.status();
      firehose_.push_back(*std::move(cache));
    }
  }
  return absl::OkStatus();
}

absl::Status IbvConduit::ConnectQp(Qp& qp, const verbs::QpAddress& remote,
                                   const Rail& rail) {
  verbs::QpRtrAttr rtr;
  rtr.remote = remote;
  rtr.path_mtu = rail.path_mtu;
  rtr.port = rail.port.port;
  rtr.use_gid = rail.port.attr.link_layer == verbs::LinkLayer::kEthernet;
  rtr.max_dest_rd_atomic = static_cast<uint8_t>(
      std::min<uint32_t>(settings_.qp_rd_atom != 0 ? settings_.qp_rd_atom
                                                   : rail.device.max_qp_rd_atom,
                         255));
  if (absl::Status s = qp.qp->ToRtr(rtr); !s.ok()) return s;
  verbs::QpRtsAttr rts;
  rts.sq_psn = qp.local.psn;
  rts.timeout = settings_.qp_timeout;
  rts.retry_cnt = settings_.qp_retry_count;
  rts.rnr_retry = 7;
  rts.max_rd_atomic = static_cast<uint8_t>(std::min<uint32_t>(
      settings_.qp_rd_atom != 0 ? settings_.qp_rd_atom
                                : rail.device.max_qp_init_rd_atom,
      255));
  return qp.qp->ToRts(rts);
}

absl::StatusOr<IbvConduit::Peer*> IbvConduit::CreatePeer(Rank r) {
  auto peer = std::make_unique<Peer>();
  const uint32_t n = std::min(qp_counts_[rank_], qp_counts_[r]);
  const verbs::DeviceAttr& dev = rails_[0]->device;
  const uint32_t per_peer = settings_.credits.per_peer;
  for (uint32_t j = 0; j < n; ++j) {
    auto qp = std::make_unique<Qp>();
    qp->rail = j % rails_.size();
    qp->peer = r;
    Rail& rail = *rails_[qp->rail];
    verbs::QpInitAttr attr;
    attr.type = verbs::QpType::kRc;
    attr.send_cq = rail.send_cq.get();
    // Only the AM QP receives; the others still need a CQ.
    attr.recv_cq = rails_[0]->recv_cq.get();
    attr.srq = (j == 0 && use_srq_) ? rails_[0]->srq.get() : nullptr;
    attr.max_send_wr = settings_.networkdepth_pp;
    attr.max_recv_wr = j == 0 ? std::min(dev.max_qp_wr, 2 * per_peer + 2) : 1;
    attr.max_inline_data = inline_limit_;
    attr.max_send_sge = 2;  // an AM's gathered payload
    absl::StatusOr<std::unique_ptr<verbs::QueuePair>> q =
        rail.pd->CreateQp(attr);
    if (!q.ok()) {
      return absl::Status(
          q.status().code(),
          absl::StrFormat("ibv conduit: rank %u: creating QP %u to rank %u "
                          "(%zu peers so far x %u QPs): %s",
                          rank_, j, r, connected_.size() + 1, n,
                          q.status().message()));
    }
    qp->qp = *std::move(q);
    qp->sq_depth =
        std::min(settings_.networkdepth_pp, qp->qp->caps().max_send_wr);
    verbs::QpInitStateAttr init;
    init.port = rail.port.port;
    init.pkey_index = rail.port.pkey_index;
    init.access = verbs::kAccessRemoteWrite | verbs::kAccessRemoteRead |
                  verbs::kAccessRemoteAtomic;
    if (absl::Status s = qp->qp->ToInit(init); !s.ok()) return s;
    qp->local.lid = rail.port.attr.lid;
    qp->local.gid = rail.port.attr.gid;
    qp->local.qpn = qp->qp->qp_num();
    qp->local.psn = random_() & 0xffffff;
    // Only the AM QPs receive, all on rail 0 (QP numbers are per
    // device, so another rail's may repeat one).
    if (j == 0) qp_by_num_[qp->local.qpn] = qp.get();
    peer->qps.push_back(std::move(qp));
  }
  // The AM QP gets a Request buffer per credit before anyone sends.
  if (!use_srq_) {
    for (uint32_t i = 0; i < per_peer && !unposted_.empty(); ++i) {
      const uint32_t b = unposted_.back();
      unposted_.pop_back();
      if (!PostReceive(*rails_[0], peer->qps[0].get(), b)) {
        return absl::InternalError("ibv conduit: posting a receive failed");
      }
    }
  }
  Peer* p = peer.get();
  peers_[r] = std::move(peer);
  peer_of_[r].store(p, std::memory_order_release);
  connected_.push_back(r);
  return p;
}

absl::Status IbvConduit::ConnectPeer(Rank r, Peer& peer,
                                     const verbs::QpAddress* remote) {
  for (uint32_t j = 0; j < peer.qps.size(); ++j) {
    Qp& qp = *peer.qps[j];
    if (absl::Status s = ConnectQp(qp, remote[j], *rails_[qp.rail]); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrFormat("ibv conduit: rank %u: connecting QP %u "
                                    "to rank %u: %s",
                                    rank_, j, r, s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status IbvConduit::ConnectPeers(const NodeMap& map) {
  if (!settings_.connect_static && !settings_.connect_dynamic) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ibv conduit: rank %u: GASNET_CONNECT_STATIC=0 and "
        "GASNET_CONNECT_DYNAMIC=0 leave no way to connect to a peer; enable "
        "one of them",
        rank_));
  }
  // Which peers are connected at start-up: every conduit peer, or those
  // GASNET_CONNECTFILE_IN names (either side's file names a connection),
  // or none (GASNET_CONNECT_STATIC=0). The rest connect on first use.
  std::vector<unsigned char> want(size_, 0);
  std::vector<bool> from_file;
  if (!settings_.connectfile_in.empty() && settings_.connect_static) {
    absl::StatusOr<std::vector<bool>> f =
        ReadConnectFile(settings_.connectfile_in, rank_, size_);
    if (!f.ok()) return f.status();
    from_file = *std::move(f);
  }
  for (Rank r = 0; r < size_; ++r) {
    if (r == rank_ || map.SameSupernode(rank_, r)) continue;
    want[r] = !settings_.connect_static ? 0
              : from_file.empty()       ? 1
                                        : (from_file[r] ? 1 : 0);
  }
  // First one allgather of 8 bytes per rank: its QPs per peer
  // (GASNET_NUM_QPS, or one per rail; a pair uses the smaller of its two
  // counts) and whether it wants any pair connected at start-up and has
  // any conduit peer at all. A job in which no rank wants a static pair
  // (the large-job default) knows from this alone that every pair
  // connects on demand.
  struct Hello {
    uint32_t qps;
    uint32_t flags;
  };
  enum : uint32_t {
    kWantsSome = 1,    // this rank wants some pair at start-up
    kHasPeers = 2,     // this rank has a conduit peer
    kSomeStatic = 4,   // some pair of this rank's connects at start-up
    kSomeDynamic = 8,  // some pair of this rank's is left to connect later
  };
  Hello hello{std::min<uint32_t>(settings_.num_qps != 0
                                     ? settings_.num_qps
                                     : static_cast<uint32_t>(rails_.size()),
                                 kMaxQpsPerPeer),
              0};
  for (Rank r = 0; r < size_; ++r) {
    if (r == rank_ || map.SameSupernode(rank_, r)) continue;
    hello.flags |= kHasPeers | (want[r] != 0 ? kWantsSome : 0);
  }
  std::vector<Hello> hellos(size_);
  bootstrap_->Allgather(&hello, sizeof hello, hellos.data());
  qp_counts_.assign(size_, 0);
  uint32_t job_flags = 0;
  for (Rank r = 0; r < size_; ++r) {
    qp_counts_[r] = hellos[r].qps;
    job_flags |= hellos[r].flags;
  }
  const uint32_t most = *std::max_element(qp_counts_.begin(), qp_counts_.end());
  // What each peer wants of this rank, where some rank wants anything:
  // one byte to and from every rank, so the exchange is O(N) per rank (not
  // the whole N x N matrix), then one byte from each saying which kinds of
  // pair it has. Every rank sees the same flags, so all agree on the
  // collectives below (the address exchange, the UD QP's).
  std::vector<unsigned char> theirs(size_, 0);
  bool static_needed = false;
  bool dynamic_needed = (job_flags & kHasPeers) != 0;
  if ((job_flags & kWantsSome) != 0) {
    bootstrap_->Alltoall(want.data(), 1, theirs.data());
    unsigned char kinds = 0;
    for (Rank r = 0; r < size_; ++r) {
      if (r == rank_ || map.SameSupernode(rank_, r)) continue;
      kinds |= (want[r] != 0 || theirs[r] != 0) ? kSomeStatic : kSomeDynamic;
    }
    std::vector<unsigned char> all_kinds(size_, 0);
    bootstrap_->Allgather(&kinds, 1, all_kinds.data());
    unsigned char job_kinds = 0;
    for (unsigned char k : all_kinds) job_kinds |= k;
    static_needed = (job_kinds & kSomeStatic) != 0;
    dynamic_needed = (job_kinds & kSomeDynamic) != 0;
  }

  peers_.resize(size_);
  peer_of_ = std::make_unique<std::atomic<Peer*>[]>(size_);
  conduit_peer_.assign(size_, false);
  for (Rank r = 0; r < size_; ++r) {
    conduit_peer_[r] = r != rank_ && !map.SameSupernode(rank_, r);
  }
  random_.seed(static_cast<uint32_t>(getpid()) ^ (rank_ << 16));
  std::vector<verbs::QpAddress> out;
  if (static_needed) out.resize(size_t{size_} * most);
  for (Rank r = 0; r < size_; ++r) {
    if (r == rank_ || map.SameSupernode(rank_, r)) continue;
    if (want[r] == 0 && theirs[r] == 0) continue;
    absl::StatusOr<Peer*> peer = CreatePeer(r);
    if (!peer.ok()) return peer.status();
    for (uint32_t j = 0; j < (*peer)->qps.size(); ++j) {
      out[size_t{r} * most + j] = (*peer)->qps[j]->local;
    }
  }
  if (use_srq_) {
    while (!unposted_.empty()) {
      const uint32_t b = unposted_.back();
      unposted_.pop_back();
      if (!PostReceive(*rails_[0], nullptr, b)) {
        return absl::InternalError("ibv conduit: posting to the SRQ failed");
      }
    }
  }
  std::vector<verbs::QpAddress> in;
  if (static_needed) {
    in.resize(size_t{size_} * most);
    bootstrap_->Alltoall(out.data(), most * sizeof(verbs::QpAddress),
                         in.data());
  }
  for (Rank r : connected_) {
    Peer& peer = *peers_[r];
    if (absl::Status s = ConnectPeer(r, peer, &in[size_t{r} * most]); !s.ok()) {
      return s;
    }
    peer.state.store(Peer::kConnected, std::memory_order_release);
  }
  if (dynamic_needed && settings_.connect_dynamic) {
    if (absl::Status s = CreateUd(); !s.ok()) return s;
  }
  // Every QP is ready to receive before anyone sends.
  bootstrap_->Barrier();
  return absl::OkStatus();
}

void IbvConduit::StartThreads() {
  // Not at Init: the client registers its handlers after the conduit's
  // Init and before its first call into it, and nothing may run a handler
  // before then (api/client.cc). The first Poll or Request starts them.
  if (settings_.rcv_thread.enabled) {
    threads_.push_back(std::make_unique<ProgressThread>(
        rails_[0]->recv_cq.get(), settings_.rcv_thread, settings_.thread_stack,
        settings_.thread_stack_pad, [this] {
          const exit::ConduitCall call;
          t_receive_thread = true;
          return PollReceives(false, kPollBudget);
        }));
  }
  if (settings_.snd_thread.enabled) {
    for (auto& rail : rails_) {
      threads_.push_back(std::make_unique<ProgressThread>(
          rail->send_cq.get(), settings_.snd_thread, settings_.thread_stack,
          settings_.thread_stack_pad, [this] {
            const exit::ConduitCall call;
            t_send_thread = true;
            return PollSendCqs();
          }));
    }
    send_threads_running_.store(true, std::memory_order_relaxed);
  }
}

void IbvConduit::StopThreads() {
  send_threads_running_.store(false, std::memory_order_relaxed);
  for (auto& t : threads_) t->Stop();
  threads_.clear();
}

void IbvConduit::Fini() {
  if (closed_.load()) return;
  if (MaybeMutex::Held()) {
    // Ended from a signal handler that interrupted the conduit's own work:
    // the objects are in use below us. The process ends; the launcher
    // removes the software device's shared memory.
    closed_.store(true);
    return;
  }
  StopThreads();
  // What was sent completes before the QPs go (bounded: a peer that has
  // left never acknowledges).
  const absl::Time deadline = absl::Now() + kDrainFor;
  while (absl::Now() < deadline) {
    uint32_t in_flight;
    {
      std::lock_guard<MaybeMutex> lock(lock_);
      in_flight = sends_in_flight_;
    }
    if (in_flight == 0) break;
    if (PollSendCqs() == 0) std::this_thread::yield();
  }
  if (settings_.print_stats && !rails_.empty()) PrintStats();
  if (!settings_.connectfile_out.empty()) {
    std::vector<uint32_t> used;
    for (Rank r : connected_) {
      if (peers_[r]->used.load()) used.push_back(r);
    }
    if (absl::Status s =
            WriteConnectFile(settings_.connectfile_out, rank_, size_,
                             settings_.connectfile_base, used);
        !s.ok()) {
      std::fprintf(stderr, "ibv conduit: rank %u: %s\n", rank_,
                   std::string(s.message()).c_str());
    }
  }
  std::lock_guard<MaybeMutex> lock(lock_);
  closed_.store(true);
  // Children before parents, as verbs requires.
  firehose_.clear();
  pinners_.clear();
  qp_by_num_.clear();
  for (Rank r = 0; r < peers_.size(); ++r) peer_of_[r].store(nullptr);
  peers_.clear();
  if (ud_ != nullptr) {
    ud_->handles.clear();
    ud_->qp.reset();
    ud_->mr.reset();
    ud_->cq.reset();
    delete[] ud_->buffers;
    ud_.reset();
  }
  for (auto& rail : rails_) {
    rail->segment_mr.reset();
    rail->bbuf_mr.reset();
    rail->rbuf_mr.reset();
    rail->srq.reset();
    rail->recv_cq.reset();
    rail->send_cq.reset();
    rail->pd.reset();
    rail->context.reset();
  }
  rails_.clear();
  if (rbufs_ != nullptr) munmap(rbufs_, rbufs_bytes_);
  if (bbufs_ != nullptr) munmap(bbufs_, bbufs_bytes_);
  rbufs_ = bbufs_ = nullptr;
}

IbvStats IbvConduit::stats() const {
  IbvStats s;
  s.requests_sent = counters_.requests_sent.load();
  s.replies_sent = counters_.replies_sent.load();
  s.credit_messages_sent = counters_.credit_messages_sent.load();
  s.credit_waits = counters_.credit_waits.load();
  s.inline_sends = counters_.inline_sends.load();
  s.copy_outs = counters_.copy_outs.load();
  s.reply_buffers = counters_.reply_buffers.load();
  s.puts = counters_.puts.load();
  s.gets = counters_.gets.load();
  s.bounced_puts = counters_.bounced_puts.load();
  s.piggybacked_credits = counters_.piggybacked_credits.load();
  s.dynamic_connections = counters_.dynamic_connections.load();
  s.gathered_sends = counters_.gathered_sends.load();
  s.fenced_puts = counters_.fenced_puts.load();
  s.send_completions_by_client = counters_.send_completions_by_client.load();
  s.send_completions_by_thread = counters_.send_completions_by_thread.load();
  for (const auto& cache : firehose_) {
    const firehose::LocalCache::Stats f = cache->stats();
    s.firehose_hits += f.hits;
    s.firehose_misses += f.misses;
    s.firehose_evictions += f.evictions;
  }
  for (const auto& rail : rails_) {
    if (rail->context == nullptr) continue;
    if (std::optional<verbs::DeviceCounters> c = rail->context->Counters()) {
      s.rnr_naks += c->rnr_naks;
      s.transport_retries += c->transport_retries;
    }
  }
  return s;
}

IbvMemory IbvConduit::Memory() {
  std::lock_guard<MaybeMutex> lock(lock_);
  IbvMemory m;
  for (Rank r = 0; r < conduit_peer_.size(); ++r) m.peers += conduit_peer_[r];
  m.connected_peers = connected_.size();
  m.recv_buffers = settings_.rbuf_count;
  m.send_buffers = settings_.bbuf_count;
  auto bytes = [](const auto& v) {
    return uint64_t{v.capacity()} * sizeof(v[0]);
  };
  m.fixed_bytes = rbufs_bytes_ + bbufs_bytes_ + bytes(spares_) +
                  bytes(unposted_) + bytes(free_bbufs_) + bytes(free_ops_) +
                  bytes(ops_) + ops_.size() * sizeof(Op) + bytes(deferred_) +
                  bytes(rails_) + rails_.size() * sizeof(Rail) + sizeof(*this);
  m.table_bytes = bytes(peers_) + uint64_t{size_} * sizeof(peer_of_[0]) +
                  conduit_peer_.capacity() / 8 + bytes(qp_counts_) +
                  bytes(segments_) + bytes(connected_) +
                  (credits_ != nullptr ? credits_->MemoryBytes() : 0);
  if (ud_ != nullptr) {
    ++m.qps;
    m.fixed_bytes += sizeof(Ud) + ud_->bytes + bytes(ud_->free_sends);
    m.table_bytes += bytes(ud_->addresses) + bytes(ud_->handles);
  }
  for (Rank r : connected_) {
    const Peer& peer = *peers_[r];
    m.qps += peer.qps.size();
    m.connection_bytes +=
        sizeof(Peer) + bytes(peer.qps) + peer.qps.size() * sizeof(Qp);
  }
  // The QP-number index: a slot (key, pointer, control byte) per bucket.
  m.connection_bytes +=
      qp_by_num_.bucket_count() * (sizeof(std::pair<uint32_t, Qp*>) + 1);
  return m;
}

void IbvConduit::PrintStats() {
  const IbvStats s = stats();
  const IbvMemory m = Memory();
  std::printf(
      "ibv: rank %u: requests %llu replies %llu credit_messages %llu "
      "credit_waits %llu piggybacked_credits %llu inline %llu copy_outs %llu "
      "reply_buffers %llu "
      "puts %llu gets %llu bounced_puts %llu firehose_hits %llu "
      "firehose_misses %llu firehose_evictions %llu rnr_naks %llu "
      "transport_retries %llu dynamic_connections %llu gathered %llu "
      "fenced_puts %llu send_cqes_client %llu send_cqes_thread %llu srq %d "
      "rails %zu peers %llu connected_peers %llu qps %llu recv_buffers %llu "
      "send_buffers %llu conduit_bytes %llu conduit_fixed_bytes %llu "
      "conduit_table_bytes %llu conduit_connection_bytes %llu "
      "device %s\n",
      rank_, static_cast<unsigned long long>(s.requests_sent),
      static_cast<unsigned long long>(s.replies_sent),
      static_cast<unsigned long long>(s.credit_messages_sent),
      static_cast<unsigned long long>(s.credit_waits),
      static_cast<unsigned long long>(s.piggybacked_credits),
      static_cast<unsigned long long>(s.inline_sends),
      static_cast<unsigned long long>(s.copy_outs),
      static_cast<unsigned long long>(s.reply_buffers),
      static_cast<unsigned long long>(s.puts),
      static_cast<unsigned long long>(s.gets),
      static_cast<unsigned long long>(s.bounced_puts),
      static_cast<unsigned long long>(s.firehose_hits),
      static_cast<unsigned long long>(s.firehose_misses),
      static_cast<unsigned long long>(s.firehose_evictions),
      static_cast<unsigned long long>(s.rnr_naks),
      static_cast<unsigned long long>(s.transport_retries),
      static_cast<unsigned long long>(s.dynamic_connections),
      static_cast<unsigned long long>(s.gathered_sends),
      static_cast<unsigned long long>(s.fenced_puts),
      static_cast<unsigned long long>(s.send_completions_by_client),
      static_cast<unsigned long long>(s.send_completions_by_thread),
      use_srq_ ? 1 : 0, rails_.size(), static_cast<unsigned long long>(m.peers),
      static_cast<unsigned long long>(m.connected_peers),
      static_cast<unsigned long long>(m.qps),
      static_cast<unsigned long long>(m.recv_buffers),
      static_cast<unsigned long long>(m.send_buffers),
      static_cast<unsigned long long>(m.total()),
      static_cast<unsigned long long>(m.fixed_bytes),
      static_cast<unsigned long long>(m.table_bytes),
      static_cast<unsigned long long>(m.connection_bytes),
      software_ ? "software" : "hca");
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------
// Work requests and their completions.

bool IbvConduit::PostReceive(Rail& rail, Qp* qp, uint32_t buffer,
                             bool counted) {
  verbs::Sge sge;
  sge.addr = reinterpret_cast<uint64_t>(rbufs_ + size_t{buffer} * buffer_size_);
  sge.length = static_cast<uint32_t>(buffer_size_);
  sge.lkey = rail.rbuf_mr->lkey();
  verbs::RecvWr wr;
  wr.wr_id = buffer;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  absl::Status s =
      qp == nullptr ? rail.srq->PostRecv(wr) : qp->qp->PostRecv(wr);
  if (!s.ok()) {
    if (closed_.load() || exit::ExitInProgress()) return false;
    FatalErrorF("ibv conduit: rank %u: posting a receive buffer: %s", rank_,
                s.message());
  }
  if (qp != nullptr && !counted) ++qp->posted;
  return true;
}

void IbvConduit::PostReplyBuffers(Peer& peer, Rank dest) {
  if (use_srq_) return;
  Qp& q = *peer.qps[0];
  const uint32_t per_peer = credits_->config().per_peer;
  const uint32_t outstanding = per_peer - credits_->Available(dest);
  while (q.posted < per_peer + outstanding && !unposted_.empty()) {
    const uint32_t b = unposted_.back();
    unposted_.pop_back();
    if (!PostReceive(*rails_[0], &q, b)) {
      unposted_.push_back(b);
      return;
    }
    counters_.reply_buffers.fetch_add(1, std::memory_order_relaxed);
  }
}

bool IbvConduit::Reserve(Qp& qp, bool need_buffer, Op** op) {
  if (qp.sq_used >= qp.sq_depth ||
      sends_in_flight_ >= settings_.networkdepth_total || free_ops_.empty() ||
      (need_buffer && free_bbufs_.empty())) {
    return false;
  }
  Op* o = free_ops_.back();
  free_ops_.pop_back();
  o->qp = &qp;
  o->bbuf = kNoBuffer;
  if (need_buffer) {
    o->bbuf = free_bbufs_.back();
    free_bbufs_.pop_back();
  }
  o->rc = o->lc = nullptr;
  o->cache = nullptr;
  o->hold = {};
  o->copy_to = nullptr;
  o->copy_len = 0;
  ++qp.sq_used;
  ++sends_in_flight_;
  *op = o;
  return true;
}

bool IbvConduit::ReserveWaiting(Qp& qp, bool need_buffer, bool immediate,
                                bool replies_only, Op** op) {
  for (;;) {
    {
      std::lock_guard<MaybeMutex> lock(lock_);
      if (Reserve(qp, need_buffer, op)) return true;
    }
    if (immediate) return false;
    WaitRound([&] { return Progress(replies_only); });
  }
}

void IbvConduit::ReleaseOp(Op* op) {
  --op->qp->sq_used;
  --sends_in_flight_;
  if (op->bbuf != kNoBuffer) free_bbufs_.push_back(op->bbuf);
  if (op->cache != nullptr) op->cache->Release(op->hold);
  free_ops_.push_back(op);
}

void IbvConduit::PostSend(Qp& qp, Op* op, verbs::SendWr& wr) {
  wr.wr_id = op->index;
  wr.flags |= verbs::kSendSignaled;
  absl::Status s = qp.qp->PostSend(wr);
  if (ABSL_PREDICT_FALSE(!s.ok())) {
    if (closed_.load() || exit::ExitInProgress()) {
      // The job is ending; the peer may be gone. The WR never ran.
      if (op->rc != nullptr) op->rc->Complete();
      if (op->lc != nullptr) op->lc->Complete();
      ReleaseOp(op);
      return;
    }
    FatalErrorF("ibv conduit: rank %u: posting %s to rank %u: %s", rank_,
                op->what, qp.peer, s.message());
  }
}

int IbvConduit::PollSendCqs() {
  // GASNET_SND_THREAD_POLL_MODE=exclusive: the client's polls and waits
  // leave the send queues to the send threads (a wait for a send's
  // completion then waits for a thread to reap it).
  const bool threads_running =
      send_threads_running_.load(std::memory_order_relaxed);
  if (threads_running && !t_send_thread &&
      settings_.snd_thread.poll_mode == PollMode::kExclusive) {
    return 0;
  }
  int n = 0;
  verbs::Completion wc[kPollBatch];
  std::lock_guard<MaybeMutex> lock(lock_);
  if (closed_.load(std::memory_order_relaxed)) return 0;
  CheckAsyncEvents();
  for (auto& rail : rails_) {
    absl::StatusOr<size_t> got = rail->send_cq->Poll(wc);
    if (!got.ok()) {
      FatalErrorF("ibv conduit: rank %u: polling a send CQ: %s", rank_,
                  got.status().message());
    }
    for (size_t i = 0; i < *got; ++i) {
      Op* op = ops_[wc[i].wr_id].get();
      if (ABSL_PREDICT_FALSE(wc[i].status != verbs::WcStatus::kSuccess) &&
          !exit::ExitInProgress()) {
        const std::string why =
            absl::StrFormat("%s to rank %u failed: %s", op->what, op->qp->peer,
                            verbs::ToString(wc[i].status));
        // A peer that does not answer (it died, or left before this rank
        // heard of the exit; flushes follow on its QP) gets the grace; an
        // access the device refused is a bug here, fatal at once.
        if (wc[i].status == verbs::WcStatus::kRetryExceeded ||
            wc[i].status == verbs::WcStatus::kRnrRetryExceeded ||
            wc[i].status == verbs::WcStatus::kFlushError) {
          peer_lost_.Lost(why);
        } else {
          FatalErrorF("ibv conduit: rank %u: %s", rank_, why);
        }
      }
      if (op->copy_to != nullptr) {
        std::memcpy(op->copy_to, bbufs_ + size_t{op->bbuf} * buffer_size_,
                    op->copy_len);
      }
      rma::Counter* rc = op->rc;
      rma::Counter* lc = op->lc;
      ReleaseOp(op);
      if (lc != nullptr) lc->Complete();
      if (rc != nullptr) rc->Complete();
      ++n;
    }
  }
  if (n != 0 && threads_running) {
    (t_send_thread ? counters_.send_completions_by_thread
                   : counters_.send_completions_by_client)
        .fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }
  return n;
}

bool IbvConduit::Interrupted() const {
  // A signal that ends the job (the launcher's SIGTERM, SIGINT) runs the
  // exit from its handler, on whatever this thread was doing: inside the
  // conduit's locked work it may hold a lock of the device the handler's
  // polls would wait for forever. Calls made then touch nothing.
  return closed_.load(std::memory_order_relaxed) || MaybeMutex::Held();
}

void IbvConduit::CheckAsyncEvents() {
  for (auto& rail : rails_) {
    while (std::optional<verbs::AsyncEvent> e =
               rail->context->PollAsyncEvent()) {
      switch (e->type) {
        case verbs::AsyncEventType::kCqError:
        case verbs::AsyncEventType::kQpFatal:
        case verbs::AsyncEventType::kQpAccessError:
        case verbs::AsyncEventType::kQpRequestError:
        case verbs::AsyncEventType::kDeviceFatal:
        case verbs::AsyncEventType::kSrqError:
          if (exit::ExitInProgress()) break;
          FatalErrorF(
              "ibv conduit: rank %u: device %s reported %s (QP %u); the "
              "conduit cannot go on",
              rank_, rail->port.device, verbs::ToString(e->type), e->qp_num);
        default:
          break;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Receiving.

void IbvConduit::ReturnBuffer(uint32_t buffer) {
  (spares_.size() < settings_.rbuf_spares ? spares_ : unposted_)
      .push_back(buffer);
}

int IbvConduit::PollReceives(bool replies_only, int budget) {
  if (exclusive_receive_thread_ && !t_receive_thread) return 0;
  int delivered = 0;
  // Requests deferred by a Reply's wait go first, in arrival order.
  if (!replies_only) {
    std::vector<Deferred> later;
    {
      std::lock_guard<MaybeMutex> lock(lock_);
      if (!deferred_.empty()) {
        later.swap(deferred_);
        deferred_.reserve(settings_.rbuf_count);
      }
    }
    for (Deferred& d : later) {
      const unsigned char* msg = d.copy != nullptr
                                     ? d.copy.get()
                                     : rbufs_ + size_t{d.buffer} * buffer_size_;
      Deliver(msg, d.len);
      ++delivered;
      if (d.copy == nullptr) {
        std::lock_guard<MaybeMutex> lock(lock_);
        ReturnBuffer(d.buffer);
      }
    }
  }
  Rail& rail = *rails_[0];
  verbs::Completion wc[kPollBatch];
  while (delivered < budget) {
    size_t got = 0;
    {
      std::lock_guard<MaybeMutex> lock(lock_);
      if (closed_.load(std::memory_order_relaxed)) return delivered;
      absl::StatusOr<size_t> polled = rail.recv_cq->Poll(std::span(
          wc, std::min<size_t>(kPollBatch,
                               static_cast<size_t>(budget - delivered))));
      if (!polled.ok()) {
        FatalErrorF("ibv conduit: rank %u: polling the receive CQ: %s", rank_,
                    polled.status().message());
      }
      got = *polled;
      // The counts first: the buffers have left their queue. A Request's
      // stays counted: its replacement is posted below, before its
      // handler, and another thread topping up Reply buffers meanwhile
      // must not take that place (the queue would then overflow).
      for (size_t i = 0; i < got && !use_srq_; ++i) {
        if (wc[i].status != verbs::WcStatus::kSuccess) continue;
        auto it = qp_by_num_.find(wc[i].qp_num);
        if (it == qp_by_num_.end()) {
          FatalErrorF("ibv conduit: rank %u: a message on unknown QP %u", rank_,
                      wc[i].qp_num);
        }
        WireHeader h;
        std::memcpy(&h, rbufs_ + wc[i].wr_id * buffer_size_, sizeof h);
        if ((h.flags & kFlagRequest) == 0) --it->second->posted;
      }
    }
    if (got == 0) break;
    for (size_t i = 0; i < got; ++i) {
      const verbs::Completion& c = wc[i];
      if (c.status != verbs::WcStatus::kSuccess) {
        if (c.status == verbs::WcStatus::kFlushError ||
            exit::ExitInProgress()) {
          continue;  // its QP went to ERROR: the send side reports why
        }
        FatalErrorF("ibv conduit: rank %u: a receive failed: %s", rank_,
                    verbs::ToString(c.status));
      }
      auto buffer = static_cast<uint32_t>(c.wr_id);
      const unsigned char* msg = rbufs_ + size_t{buffer} * buffer_size_;
      if (c.byte_len < sizeof(WireHeader) || c.byte_len > buffer_size_) {
        FatalErrorF("ibv conduit: rank %u: a malformed message (%u bytes)",
                    rank_, c.byte_len);
      }
      WireHeader h;
      std::memcpy(&h, msg, sizeof h);
      const bool request = (h.flags & kFlagRequest) != 0;
      std::unique_ptr<unsigned char[]> copy;
      // A Request's buffer is replaced before its handler runs (with SRQ,
      // every message's): by a spare, or, with none left, the message is
      // copied out and its own buffer goes back at once. The buffer of the
      // message before this one is a spare again by now (the seed's
      // reuse), so a batch touches the spares once per message.
      if (request || use_srq_) {
        std::lock_guard<MaybeMutex> lock(lock_);
        Qp* qp = use_srq_ ? nullptr : qp_by_num_.find(c.qp_num)->second;
        if (!spares_.empty()) {
          const uint32_t spare = spares_.back();
          spares_.pop_back();
          PostReceive(rail, qp, spare, /*counted=*/true);
        } else {
          copy.reset(new unsigned char[c.byte_len]);
          std::memcpy(copy.get(), msg, c.byte_len);
          msg = copy.get();
          PostReceive(rail, qp, buffer, /*counted=*/true);
          buffer = kNoBuffer;
          counters_.copy_outs.fetch_add(1, std::memory_order_relaxed);
        }
      }
      if (replies_only && request) {
        std::lock_guard<MaybeMutex> lock(lock_);
        deferred_.push_back({buffer, std::move(copy), c.byte_len});
        continue;
      }
      Deliver(msg, c.byte_len);
      ++delivered;
      if (buffer != kNoBuffer) {
        std::lock_guard<MaybeMutex> lock(lock_);
        ReturnBuffer(buffer);
      }
    }
  }
  return delivered;
}

void IbvConduit::Deliver(const unsigned char* msg, size_t len) {
  const wire::Receiver me{"ibv", rank_, size_, segment_base_, segment_size_};
  core::Inbound in;
  uint32_t args[am::kMaxArgs];
  const wire::Header h = wire::Decode(me, msg, len, in, args);
  if (ABSL_PREDICT_FALSE(ud_ != nullptr)) SawTrafficFrom(h.source);
  if (h.credits != 0) credits_->Grant(h.source, h.credits);
  if ((h.flags & wire::kFlagCreditsOnly) != 0) return;
  if (!in.is_request) {
    sink_.Deliver(in);
    return;
  }
  ReplyHandle reply{h.source, false};
  in.reply = &reply;
  sink_.Deliver(in);
  // No Reply went back: the Request's credit is owed, banked until the
  // slack is exceeded, then sent back alone (the seed's SYS_ack).
  if (!reply.replied && credits_->Bank(h.source)) SendCredits(h.source);
}

int IbvConduit::Poll() {
  const exit::ConduitCall call;  // exit/signals.h
  if (Interrupted()) return 0;
  StartThreadsOnce();
  peer_lost_.Check("ibv", rank_);
  int n = PollSendCqs();
  if (ud_ != nullptr) {
    std::lock_guard<MaybeMutex> lock(lock_);
    n += PollUd();
  }
  n += PollReceives(/*replies_only=*/false, kPollBudget);
  return n;
}

int IbvConduit::Progress(bool replies_only) {
  if (Interrupted()) return others_.Poll(replies_only);
  peer_lost_.Check("ibv", rank_);
  int n = PollSendCqs();
  if (ud_ != nullptr) {
    std::lock_guard<MaybeMutex> lock(lock_);
    n += PollUd();
  }
  n += PollReceives(replies_only, kPollBudget);
  return n + others_.Poll(replies_only);
}

void IbvConduit::ProgressSends() {
  const exit::ConduitCall call;  // exit/signals.h
  // A bootstrap collective's wait (core calls this over and over): answer
  // connection requests. A peer may need a connection to this rank to
  // finish what it does before it joins the collective (a thread's Put,
  // the last AMs), and this rank polls nothing else meanwhile. No handler
  // runs here.
  if (ud_ == nullptr || Interrupted()) return;
  std::lock_guard<MaybeMutex> lock(lock_);
  PollUd();
}

void IbvConduit::WaitSent(const rma::Counter& c) {
  while (!c.Done()) {
    WaitRound([&] { return PollSendCqs(); });
  }
}

// ---------------------------------------------------------------------------
// Dynamic connections (GASNET_CONNECT_DYNAMIC): a pair not connected at
// start-up connects on first use with a three-way handshake over UD, as
// the InfiniBand connection manager does: REQ (the initiator's QP
// addresses), REP (the responder's, whose QPs are then ready), RTU (the
// initiator's are too). The REQ is retransmitted from
// GASNET_CONNECT_RETRANS_MIN, doubling, until GASNET_CONNECT_RETRANS_MAX.
// When both ranks of a pair start at once, the lower rank's REQ wins: the
// higher answers it with the QPs it had made for its own.

namespace {

constexpr uint32_t kUdMagic = 0x67657863;  // "gexc"
constexpr uint32_t kUdQkey = 0x11170001;
enum UdType : uint8_t { kUdReq = 1, kUdRep = 2, kUdRtu = 3 };

}  // namespace

struct IbvConduit::UdMessage {
  uint32_t magic;
  uint8_t type;
  uint8_t nqps;
  uint16_t unused;
  uint32_t source;
  uint32_t job_size;
  verbs::QpAddress qps[kMaxQpsPerPeer];
};

namespace {
constexpr size_t kUdSlot = verbs::kUdGrhBytes + sizeof(IbvConduit::UdMessage);
}  // namespace

absl::Status IbvConduit::CreateUd() {
  auto ud = std::make_unique<Ud>();
  Rail& rail = *rails_[0];
  if (sizeof(UdMessage) > rail.path_mtu) {
    return absl::InternalError(absl::StrFormat(
        "ibv conduit: a connection message (%zu bytes) exceeds the MTU %u",
        sizeof(UdMessage), rail.path_mtu));
  }
  const uint32_t slots = settings_.connect_rcvs + settings_.connect_snds;
  absl::StatusOr<std::unique_ptr<verbs::CompletionQueue>> cq =
      rail.context->CreateCq(slots + 4);
  if (!cq.ok()) return cq.status();
  ud->cq = *std::move(cq);
  verbs::QpInitAttr attr;
  attr.type = verbs::QpType::kUd;
  attr.send_cq = ud->cq.get();
  attr.recv_cq = ud->cq.get();
  attr.max_send_wr = settings_.connect_snds;
  attr.max_recv_wr = settings_.connect_rcvs;
  absl::StatusOr<std::unique_ptr<verbs::QueuePair>> qp =
      rail.pd->CreateQp(attr);
  if (!qp.ok()) return qp.status();
  ud->qp = *std::move(qp);
  ud->qkey = kUdQkey;
  verbs::QpInitStateAttr init;
  init.port = rail.port.port;
  init.pkey_index = rail.port.pkey_index;
  init.qkey = ud->qkey;
  if (absl::Status st = ud->qp->ToInit(init); !st.ok()) return st;
  if (absl::Status st = ud->qp->ToRtr({}); !st.ok()) return st;
  verbs::QpRtsAttr rts;
  rts.sq_psn = random_() & 0xffffff;
  if (absl::Status st = ud->qp->ToRts(rts); !st.ok()) return st;
  ud->bytes = slots * kUdSlot;
  ud->buffers = new unsigned char[ud->bytes]();
  absl::StatusOr<std::unique_ptr<verbs::MemoryRegion>> mr =
      rail.pd->RegisterMemory(ud->buffers, ud->bytes, verbs::kAccessLocalWrite);
  if (!mr.ok()) return mr.status();
  ud->mr = *std::move(mr);
  for (uint32_t i = 0; i < settings_.connect_rcvs; ++i) {
    verbs::Sge sge{reinterpret_cast<uint64_t>(ud->buffers + i * kUdSlot),
                   static_cast<uint32_t>(kUdSlot), ud->mr->lkey()};
    verbs::RecvWr wr;
    wr.wr_id = i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (absl::Status st = ud->qp->PostRecv(wr); !st.ok()) return st;
  }
  for (uint32_t i = 0; i < settings_.connect_snds; ++i) {
    ud->free_sends.push_back(settings_.connect_rcvs + i);
  }
  Ud::Address mine;
  mine.lid = rail.port.attr.lid;
  mine.gid = rail.port.attr.gid;
  mine.qpn = ud->qp->qp_num();
  ud->addresses.resize(size_);
  bootstrap_->Allgather(&mine, sizeof mine, ud->addresses.data());
  ud->handles.resize(size_);
  ud_ = std::move(ud);
  return absl::OkStatus();
}

void IbvConduit::SendUd(Rank dest, uint8_t type) {
  Ud& ud = *ud_;
  while (ud.free_sends.empty()) PollUd();
  if (ud.handles[dest] == nullptr) {
    verbs::AhAttr ah;
    ah.dlid = ud.addresses[dest].lid;
    ah.port = rails_[0]->port.port;
    ah.use_gid = rails_[0]->port.attr.link_layer == verbs::LinkLayer::kEthernet;
    ah.dgid = ud.addresses[dest].gid;
    absl::StatusOr<std::unique_ptr<verbs::AddressHandle>> h =
        rails_[0]->pd->CreateAddressHandle(ah);
    if (!h.ok()) {
      FatalErrorF("ibv conduit: rank %u: an address handle for rank %u: %s",
                  rank_, dest, h.status().message());
    }
    ud.handles[dest] = *std::move(h);
  }
  const uint32_t slot = ud.free_sends.back();
  ud.free_sends.pop_back();
  auto* m = reinterpret_cast<UdMessage*>(ud.buffers + slot * kUdSlot);
  *m = UdMessage{};
  m->magic = kUdMagic;
  m->type = type;
  m->source = rank_;
  m->job_size = size_;
  if (type != kUdRtu) {
    const Peer& peer = *peers_[dest];
    m->nqps = static_cast<uint8_t>(peer.qps.size());
    for (size_t j = 0; j < peer.qps.size(); ++j) m->qps[j] = peer.qps[j]->local;
  }
  verbs::Sge sge{reinterpret_cast<uint64_t>(m), sizeof *m, ud.mr->lkey()};
  verbs::SendWr wr;
  wr.wr_id = slot;
  wr.opcode = verbs::Opcode::kSend;
  wr.flags = verbs::kSendSignaled;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.ah = ud.handles[dest].get();
  wr.remote_qpn = ud.addresses[dest].qpn;
  wr.remote_qkey = ud.qkey;
  if (absl::Status st = ud.qp->PostSend(wr); !st.ok()) {
    FatalErrorF(
        "ibv conduit: rank %u: sending a connection message to rank "
        "%u: %s",
        rank_, dest, st.message());
  }
}

int IbvConduit::PollUd() {
  Ud& ud = *ud_;
  constexpr size_t kBatch = 8;
  verbs::Completion wc[kBatch];
  absl::StatusOr<size_t> got = ud.cq->Poll(wc);
  if (!got.ok()) {
    FatalErrorF("ibv conduit: rank %u: polling the connection CQ: %s", rank_,
                got.status().message());
  }
  // The whole batch is settled before any message is handled: handling
  // one may send (SendUd), and a send with no free slot polls this CQ
  // again, where it must find the slots this batch freed and receives
  // posted again, not wait for completions already taken off the CQ.
  UdMessage messages[kBatch];
  size_t n = 0;
  for (size_t i = 0; i < *got; ++i) {
    const verbs::Completion& c = wc[i];
    const auto slot = static_cast<uint32_t>(c.wr_id);
    if (slot >= settings_.connect_rcvs) {  // a send's
      ud.free_sends.push_back(slot);
      continue;
    }
    if (c.status == verbs::WcStatus::kSuccess) {
      std::memcpy(&messages[n++],
                  ud.buffers + slot * kUdSlot + verbs::kUdGrhBytes,
                  sizeof(UdMessage));
    }
    verbs::Sge sge{reinterpret_cast<uint64_t>(ud.buffers + slot * kUdSlot),
                   static_cast<uint32_t>(kUdSlot), ud.mr->lkey()};
    verbs::RecvWr wr;
    wr.wr_id = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    (void)ud.qp->PostRecv(wr);
  }
  for (size_t i = 0; i < n; ++i) HandleUd(messages[i]);
  return static_cast<int>(*got);
}

void IbvConduit::HandleUd(const UdMessage& m) {
  if (m.magic != kUdMagic || m.source >= size_ || m.job_size != size_ ||
      m.source == rank_ || m.nqps > kMaxQpsPerPeer) {
    return;  // not ours (another job's, or corrupt): dropped, as UD may
  }
  const Rank src = m.source;
  Peer* peer = peers_[src].get();
  const uint8_t state =
      peer == nullptr ? uint8_t{Peer::kNone} : peer->state.load();
  auto connect = [&](Peer& p) {
    if (m.nqps != p.qps.size()) {
      FatalErrorF("ibv conduit: rank %u: rank %u offers %u QPs, %zu expected",
                  rank_, src, m.nqps, p.qps.size());
    }
    if (absl::Status st = ConnectPeer(src, p, m.qps); !st.ok()) {
      FatalErrorF("%s", st.message());
    }
  };
  switch (m.type) {
    case kUdReq:
      if (state == Peer::kConnected || state == Peer::kAwaitRtu) {
        SendUd(src, kUdRep);  // our REP was lost, or theirs was
        return;
      }
      if (state == Peer::kPending && src > rank_) return;  // ours wins
      if (peer == nullptr) {
        absl::StatusOr<Peer*> created = CreatePeer(src);
        if (!created.ok()) FatalErrorF("%s", created.status().message());
        peer = *created;
      }
      connect(*peer);
      peer->state.store(Peer::kAwaitRtu, std::memory_order_release);
      SendUd(src, kUdRep);
      return;
    case kUdRep:
      if (state == Peer::kPending) {
        connect(*peer);
        peer->state.store(Peer::kConnected, std::memory_order_release);
        counters_.dynamic_connections.fetch_add(1, std::memory_order_relaxed);
        SendUd(src, kUdRtu);
      } else if (state == Peer::kAwaitRtu) {
        // The peer answers our REQ, so its QPs are ready: the RTU was lost.
        peer->state.store(Peer::kConnected, std::memory_order_release);
        counters_.dynamic_connections.fetch_add(1, std::memory_order_relaxed);
      }
      return;
    case kUdRtu:
      if (state == Peer::kAwaitRtu) {
        peer->state.store(Peer::kConnected, std::memory_order_release);
        counters_.dynamic_connections.fetch_add(1, std::memory_order_relaxed);
      }
      return;
    default:
      return;
  }
}

void IbvConduit::SawTrafficFrom(Rank source) {
  // A message over RC from a peer that answered our REQ means its QPs are
  // ready: as good as the RTU, which UD may have lost or not yet brought.
  Peer* p = peer_of_[source].load(std::memory_order_acquire);
  if (ABSL_PREDICT_TRUE(p == nullptr ||
                        p->state.load(std::memory_order_relaxed) !=
                            Peer::kAwaitRtu)) {
    return;
  }
  std::lock_guard<MaybeMutex> lock(lock_);
  if (p->state.load() == Peer::kAwaitRtu) {
    p->state.store(Peer::kConnected, std::memory_order_release);
    counters_.dynamic_connections.fetch_add(1, std::memory_order_relaxed);
  }
}

IbvConduit::Peer* IbvConduit::PeerFor(Rank dest, const char* call,
                                      bool immediate) {
  Peer* p = peer_of_[dest].load(std::memory_order_acquire);
  if (ABSL_PREDICT_TRUE(p != nullptr &&
                        p->state.load(std::memory_order_acquire) ==
                            Peer::kConnected)) {
    return p;
  }
  return ConnectTo(dest, call, immediate);
}

IbvConduit::Peer* IbvConduit::ConnectTo(Rank dest, const char* call,
                                        bool immediate) {
  if (ud_ == nullptr || !conduit_peer_[dest]) {
    if (conduit_peer_[dest]) {
      FatalErrorF(
          "ibv conduit: %s: rank %u has no connection to rank %u: "
          "GASNET_CONNECTFILE_IN=%s does not name one, and "
          "GASNET_CONNECT_DYNAMIC=0 forbids making it on demand",
          call, rank_, dest, settings_.connectfile_in);
    }
    FatalErrorF("ibv conduit: %s: rank %u is not a conduit peer of rank %u",
                call, dest, rank_);
  }
  for (;;) {
    {
      std::lock_guard<MaybeMutex> lock(lock_);
      if (AdvanceConnect(dest, call)) return peers_[dest].get();
    }
    if (immediate) return nullptr;
    WaitRound([&] { return Progress(/*replies_only=*/false); });
  }
}

bool IbvConduit::AdvanceConnect(Rank dest, const char* call) {
  Peer* peer = peers_[dest].get();
  if (peer != nullptr && peer->state.load() == Peer::kConnected) return true;
  if (peer == nullptr) {
    absl::StatusOr<Peer*> created = CreatePeer(dest);
    if (!created.ok()) FatalErrorF("%s", created.status().message());
    peer = *created;
    peer->state.store(Peer::kPending, std::memory_order_release);
  }
  // In kAwaitRtu too: the peer, connected by then, answers the REQ with a
  // REP, which stands for an RTU that was lost.
  const absl::Time now = absl::Now();
  if (now < peer->req_due) return false;
  const absl::Duration most =
      absl::Microseconds(settings_.connect_retrans_max_us);
  if (peer->req_due == absl::InfinitePast()) {
    peer->req_interval = absl::Microseconds(settings_.connect_retrans_min_us);
  } else if (peer->req_interval < most) {
    peer->req_interval = std::min(peer->req_interval * 2, most);
  } else if (!exit::ExitInProgress()) {
    // While the job exits, a peer may have left before it could answer;
    // the exit protocol's own deadlines decide then.
    FatalErrorF(
        "ibv conduit: %s: rank %u got no answer from rank %u to a "
        "connection request over UD (retransmitted up to "
        "GASNET_CONNECT_RETRANS_MAX=%llu us)",
        call, rank_, dest,
        static_cast<unsigned long long>(settings_.connect_retrans_max_us));
  }
  SendUd(dest, kUdReq);
  peer->req_due = now + peer->req_interval;
  return false;
}

// ---------------------------------------------------------------------------
// Active Messages.

namespace {}  // namespace

core::SendStatus IbvConduit::Request(Rank dest, const core::Outbound& m,
                                     bool immediate) {
  const exit::ConduitCall call;  // exit/signals.h
  if (ABSL_PREDICT_FALSE(dest >= size_)) {
    FatalErrorF("ibv conduit: rank %u is not a conduit peer of rank %u", dest,
                rank_);
  }
  StartThreadsOnce();
  return Send(dest, nullptr, m, /*credits_only=*/false, immediate);
}

core::SendStatus IbvConduit::Reply(void* reply, const core::Outbound& m,
                                   bool immediate) {
  const exit::ConduitCall call;  // exit/signals.h
  auto* handle = static_cast<ReplyHandle*>(reply);
  return Send(handle->source, handle, m, /*credits_only=*/false, immediate);
}

void IbvConduit::SendCredits(Rank dest) {
  core::Outbound m;
  ReplyHandle handle{dest, false};
  if (Send(dest, &handle, m, /*credits_only=*/true,
           /*immediate=*/exit::ExitInProgress()) == SendStatus::kOk) {
    counters_.credit_messages_sent.fetch_add(1, std::memory_order_relaxed);
  }
}

bool IbvConduit::TakeCredit(Rank dest, bool immediate) {
  return credits_->AcquireOrWait(dest, immediate, counters_.credit_waits, [&] {
    WaitRound([&] { return Progress(/*replies_only=*/false); });
  });
}

core::SendStatus IbvConduit::Send(Rank dest, ReplyHandle* reply,
                                  const core::Outbound& m, bool credits_only,
                                  bool immediate) {
  if (Interrupted()) return SendStatus::kOk;
  const bool request = reply == nullptr;
  const bool is_long = m.category == Category::kLong;
  wire::CheckOutbound("ibv", request, m, settings_.max_medium, kMaxLong);
  const bool replies_only = !request;
  const bool long_by_rdma = is_long && m.len > packed_long_;
  const size_t inline_len =
      (m.category == Category::kShort || long_by_rdma) ? 0 : m.len;
  const size_t payload_at = PayloadOffset(m.nargs);
  const size_t total =
      inline_len != 0 ? payload_at + inline_len : ArgsEnd(m.nargs);
  Peer* const connected =
      PeerFor(dest, request ? "an AM Request" : "an AM Reply", immediate);
  if (connected == nullptr) return SendStatus::kWouldBlock;
  Peer& peer = *connected;
  Qp& qp = *peer.qps[0];
  if (ABSL_PREDICT_FALSE(!peer.used.load(std::memory_order_relaxed))) {
    peer.used.store(true, std::memory_order_relaxed);
  }

  if (request && !TakeCredit(dest, immediate)) return SendStatus::kWouldBlock;
  alignas(8) unsigned char local[512];
  const bool use_inline =
      total <= std::min<size_t>(inline_limit_, sizeof local);
  // GASNET_AM_GATHER_MIN: a payload this large that lies in registered
  // memory (the segment) is not copied: the SEND gathers it from where it
  // is, and the call waits for the SEND to complete instead.
  uint32_t payload_lkey = 0;
  const bool gather =
      !use_inline && inline_len != 0 && settings_.am_gather_min >= 0 &&
      inline_len >= static_cast<uint64_t>(settings_.am_gather_min) &&
      KnownKey(qp.rail, m.payload, inline_len, &payload_lkey);
  rma::Counter gathered;
  // A Long's payload first, by RDMA WRITE on the same QP: RC delivers it
  // before the header that follows. The source may be reused only once
  // the write has completed.
  rma::Counter written;
  if (long_by_rdma) {
    CheckInSegment("AM Long", dest, reinterpret_cast<void*>(m.long_dest),
                   m.len);
    written.Start(1);
    Rdma(dest, /*write=*/true, const_cast<void*>(m.payload), m.long_dest, m.len,
         written, replies_only, /*qp_index=*/0);
  }
  Op* op;
  if (!ReserveWaiting(qp, !use_inline, immediate && !long_by_rdma, replies_only,
                      &op)) {
    if (request) credits_->Grant(dest, 1);
    return SendStatus::kWouldBlock;
  }
  unsigned char* msg =
      use_inline ? local : bbufs_ + size_t{op->bbuf} * buffer_size_;
  wire::Encode(m, rank_, request, credits_only, long_by_rdma,
               /*inline_payload=*/inline_len != 0 && !gather, msg);
  if (gather) {
    std::memset(msg + ArgsEnd(m.nargs), 0, payload_at - ArgsEnd(m.nargs));
  }
  op->what = request ? "an AM Request" : "an AM Reply";
  if (gather) {
    gathered.Start(1);
    op->rc = &gathered;
  }
  {
    std::lock_guard<MaybeMutex> lock(lock_);
    // The credits are taken last, under the lock, so that what is banked
    // travels once.
    const uint32_t banked = credits_->TakeBanked(dest);
    const uint32_t credits = banked + (request || credits_only ? 0 : 1);
    if (banked != 0 && !credits_only) {
      counters_.piggybacked_credits.fetch_add(banked,
                                              std::memory_order_relaxed);
    }
    std::memcpy(msg + offsetof(WireHeader, credits), &credits, sizeof credits);
    if (request) PostReplyBuffers(peer, dest);
    verbs::Sge sge[2];
    sge[0].addr = reinterpret_cast<uint64_t>(msg);
    sge[0].length = static_cast<uint32_t>(gather ? payload_at : total);
    sge[0].lkey = use_inline ? 0 : rails_[qp.rail]->bbuf_mr->lkey();
    sge[1].addr = reinterpret_cast<uint64_t>(m.payload);
    sge[1].length = static_cast<uint32_t>(inline_len);
    sge[1].lkey = payload_lkey;
    verbs::SendWr wr;
    wr.opcode = verbs::Opcode::kSend;
    wr.flags = use_inline ? uint32_t{verbs::kSendInline} : 0u;
    wr.sg_list = sge;
    wr.num_sge = gather ? 2 : 1;
    PostSend(qp, op, wr);
  }
  if (use_inline) {
    counters_.inline_sends.fetch_add(1, std::memory_order_relaxed);
  }
  if (gather) {
    counters_.gathered_sends.fetch_add(1, std::memory_order_relaxed);
    WaitSent(gathered);
  }
  if (!credits_only) {
    if (request) {
      counters_.requests_sent.fetch_add(1, std::memory_order_relaxed);
    } else {
      reply->replied = true;
      counters_.replies_sent.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (long_by_rdma) WaitSent(written);
  return SendStatus::kOk;
}

// ---------------------------------------------------------------------------
// RMA.

absl::Status IbvConduit::AttachSegment(void* base, size_t size) {
  RemoteSegment mine;
  if (base != nullptr && size != 0) {
    for (size_t i = 0; i < rails_.size(); ++i) {
      absl::StatusOr<std::unique_ptr<verbs::MemoryRegion>> mr =
          rails_[i]->pd->RegisterMemory(
              base, size,
              verbs::kAccessLocalWrite | verbs::kAccessRemoteWrite |
                  verbs::kAccessRemoteRead | verbs::kAccessRemoteAtomic);
      if (!mr.ok()) {
        return absl::Status(
            mr.status().code(),
            absl::StrFormat("ibv conduit: rank %u: registering the segment "
                            "[%p, +%zu) on %s: %s",
                            rank_, base, size, rails_[i]->port.device,
                            mr.status().message()));
      }
      rails_[i]->segment_mr = *std::move(mr);
      mine.rkey[i] = rails_[i]->segment_mr->rkey();
    }
    mine.base = reinterpret_cast<uint64_t>(base);
    mine.size = size;
    segment_base_ = reinterpret_cast<uintptr_t>(base);
    segment_size_ = size;
  }
  segments_.assign(size_, RemoteSegment{});
  bootstrap_->Allgather(&mine, sizeof mine, segments_.data());
  return absl::OkStatus();
}

void IbvConduit::CheckInSegment(const char* call, Rank rank,
                                const void* address, size_t len) const {
  if (rank >= size_ || rank >= segments_.size() || segments_[rank].size == 0 ||
      !conduit_peer_[rank]) {
    FatalErrorF(
        "ibv conduit: %s: rank %u has no segment this rank can reach over "
        "verbs (job of %u; segments attached: %s)",
        call, rank, size_, segments_.empty() ? "no" : "yes");
  }
  const RemoteSegment& s = segments_[rank];
  const uint64_t a = reinterpret_cast<uint64_t>(address);
  if (a < s.base || len > s.size || a - s.base > s.size - len) {
    FatalErrorF(
        "ibv conduit: %s: [%p, +%zu) is outside rank %u's segment [%p, +%llu)",
        call, address, len, rank, reinterpret_cast<void*>(s.base),
        static_cast<unsigned long long>(s.size));
  }
}

bool IbvConduit::KnownKey(uint32_t rail, const void* addr, size_t len,
                          uint32_t* lkey) const {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  const Rail& r = *rails_[rail];
  if (r.segment_mr != nullptr && a >= segment_base_ && len <= segment_size_ &&
      a - segment_base_ <= segment_size_ - len) {
    *lkey = r.segment_mr->lkey();
    return true;
  }
  const auto b = reinterpret_cast<uintptr_t>(bbufs_);
  if (a >= b && len <= bbufs_bytes_ && a - b <= bbufs_bytes_ - len) {
    *lkey = r.bbuf_mr->lkey();
    return true;
  }
  return false;
}

void IbvConduit::Rdma(Rank rank, bool write, void* local, uint64_t remote,
                      size_t len, rma::Counter& rc, bool replies_only,
                      int qp_index, rma::Counter* lc) {
  Peer& peer = *PeerFor(rank, write ? "a Put" : "a Get", /*immediate=*/false);
  if (ABSL_PREDICT_FALSE(!peer.used.load(std::memory_order_relaxed))) {
    peer.used.store(true, std::memory_order_relaxed);
  }
  const size_t stripe =
      write ? settings_.put_stripe_sz : settings_.get_stripe_sz;
  const bool striping = qp_index < 0 && stripe != 0 && peer.qps.size() > 1;
  uint32_t q = qp_index >= 0
                   ? static_cast<uint32_t>(qp_index)
                   : peer.next_qp.fetch_add(1, std::memory_order_relaxed) %
                         peer.qps.size();
  // A Put small enough is copied into send buffers, so its source is free
  // at once (GASNET_NONBULKPUT_BOUNCE_LIMIT).
  const bool bounce_put =
      write && lc != nullptr && len <= settings_.nonbulkput_bounce_limit;
  size_t done = 0;
  bool first = true;
  while (done < len) {
    Qp& qp = *peer.qps[q];
    const uint32_t rail = qp.rail;
    auto* at = static_cast<unsigned char*>(local) + done;
    size_t piece = std::min(len - done, kMaxPiece);
    if (striping) piece = std::min(piece, stripe);
    uint32_t lkey = 0;
    enum { kDirect, kBounce, kPinned } how = kDirect;
    if (KnownKey(rail, at, piece, &lkey)) {
      how = kDirect;
    } else if (bounce_put || (!write && piece <= buffer_size_) ||
               firehose_.empty()) {
      how = kBounce;
      piece = std::min(piece, buffer_size_);
    } else {
      how = kPinned;
      piece =
          firehose_[rail]->Acquirable(reinterpret_cast<uintptr_t>(at), piece);
    }
    if (!first) {
      rc.Start(1);
      if (lc != nullptr) lc->Start(1);
    }
    first = false;
    firehose::LocalCache::Hold hold;
    if (how == kPinned) {
      absl::StatusOr<firehose::LocalCache::Hold> h =
          firehose_[rail]->Acquire(reinterpret_cast<uintptr_t>(at), piece,
                                   [&] { Progress(replies_only); });
      if (!h.ok()) {
        FatalErrorF(
            "ibv conduit: rank %u: pinning [%p, +%zu) for %s rank %u: %s",
            rank_, at, piece, write ? "a Put to" : "a Get from", rank,
            h.status().message());
      }
      hold = *h;
      lkey = static_cast<uint32_t>(hold.local_key());
    }
    Op* op;
    ReserveWaiting(qp, how == kBounce, /*immediate=*/false, replies_only, &op);
    op->what = write ? "an RDMA write" : "an RDMA read";
    op->rc = &rc;
    if (how == kPinned) {
      op->cache = firehose_[rail].get();
      op->hold = hold;
    }
    verbs::Sge sge;
    sge.addr = reinterpret_cast<uint64_t>(at);
    sge.length = static_cast<uint32_t>(piece);
    sge.lkey = lkey;
    if (how == kBounce) {
      unsigned char* b = bbufs_ + size_t{op->bbuf} * buffer_size_;
      sge.addr = reinterpret_cast<uint64_t>(b);
      sge.lkey = rails_[rail]->bbuf_mr->lkey();
      if (write) {
        std::memcpy(b, at, piece);
        counters_.bounced_puts.fetch_add(1, std::memory_order_relaxed);
      } else {
        op->copy_to = at;
        op->copy_len = piece;
      }
    }
    if (lc != nullptr) {
      if (how == kBounce && write) {
        lc->Complete();  // the source was copied: free now
      } else {
        op->lc = lc;
      }
    }
    // GASNET_USE_FENCED_PUTS (several rails): a write's acknowledgement
    // need not mean its data is visible before another rail's traffic; a
    // READ of its last byte behind it on the same QP does (IB orders a
    // read after earlier writes), so the remote completion waits for that.
    const bool fence = write && settings_.use_fenced_puts && rails_.size() > 1;
    rma::Counter* fenced_rc = nullptr;
    if (fence) std::swap(fenced_rc, op->rc);
    verbs::SendWr wr;
    wr.opcode = write ? verbs::Opcode::kRdmaWrite : verbs::Opcode::kRdmaRead;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.remote_addr = remote + done;
    wr.rkey = segments_[rank].rkey[rail];
    {
      std::lock_guard<MaybeMutex> lock(lock_);
      PostSend(qp, op, wr);
    }
    if (fence) {
      // (Reserved after the write is posted: a queue of depth 1 frees its
      // slot when the write completes.)
      Op* fence_op;
      ReserveWaiting(qp, /*need_buffer=*/true, /*immediate=*/false,
                     replies_only, &fence_op);
      fence_op->what = "a fencing RDMA read";
      fence_op->rc = fenced_rc;
      verbs::Sge last;
      last.addr = reinterpret_cast<uint64_t>(bbufs_ + size_t{fence_op->bbuf} *
                                                          buffer_size_);
      last.length = 1;
      last.lkey = rails_[rail]->bbuf_mr->lkey();
      verbs::SendWr read;
      read.opcode = verbs::Opcode::kRdmaRead;
      read.sg_list = &last;
      read.num_sge = 1;
      read.remote_addr = remote + done + piece - 1;
      read.rkey = wr.rkey;
      std::lock_guard<MaybeMutex> lock(lock_);
      PostSend(qp, fence_op, read);
      counters_.fenced_puts.fetch_add(1, std::memory_order_relaxed);
    }
    (write ? counters_.puts : counters_.gets)
        .fetch_add(1, std::memory_order_relaxed);
    done += piece;
    if (striping) q = (q + 1) % peer.qps.size();
  }
}

bool IbvConduit::Put(Rank rank, void* dest, const void* src, size_t len,
                     bool immediate, rma::Counter& rc, rma::Counter* lc) {
  const exit::ConduitCall call;  // exit/signals.h
  (void)immediate;
  if (closed_.load(std::memory_order_relaxed)) {
    FatalError("ibv conduit: Put after the conduit was closed");
  }
  if (len == 0) {
    if (lc != nullptr) lc->Complete();
    rc.Complete();
    return true;
  }
  CheckInSegment("Put", rank, dest, len);
  // Without `lc` the source must be reusable on return.
  rma::Counter local;
  rma::Counter* local_done = lc;
  if (local_done == nullptr) {
    local.Start(1);
    local_done = &local;
  }
  Rdma(rank, /*write=*/true, const_cast<void*>(src),
       reinterpret_cast<uint64_t>(dest), len, rc, /*replies_only=*/false,
       /*qp_index=*/-1, local_done);
  if (local_done == &local) WaitSent(local);
  return true;
}

bool IbvConduit::Get(void* dest, Rank rank, const void* src, size_t len,
                     bool immediate, rma::Counter& rc) {
  const exit::ConduitCall call;  // exit/signals.h
  (void)immediate;
  if (closed_.load(std::memory_order_relaxed)) {
    FatalError("ibv conduit: Get after the conduit was closed");
  }
  if (len == 0) {
    rc.Complete();
    return true;
  }
  CheckInSegment("Get", rank, src, len);
  Rdma(rank, /*write=*/false, dest, reinterpret_cast<uint64_t>(src), len, rc,
       /*replies_only=*/false, /*qp_index=*/-1, nullptr);
  return true;
}

}  // namespace gexrt::ibv

namespace gexrt::core {

std::unique_ptr<Conduit> CreateConduit() {
  return std::make_unique<ibv::IbvConduit>();
}

}  // namespace gexrt::core
