#include "conduit/ofi/ofi_conduit.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "am/vocabulary.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "base/host_id.h"
#include "base/spin_wait.h"
#include "base/thread_scratch.h"
#include "exit/graceful_exit.h"
#include "exit/signals.h"

namespace gexrt::ofi {

using core::Category;
using core::SendStatus;

// ---------------------------------------------------------------------------
// The wire format of an Active Message.

namespace {

// flags: the category in the low two bits, then:
constexpr uint8_t kFlagRequest = 0x04;
constexpr uint8_t kFlagCreditsOnly = 0x08;  // hidden: credits, no handler
constexpr uint8_t kFlagLongByRma = 0x10;    // the payload was written first
constexpr uint8_t kFlagHello = 0x20;  // hidden, at Init: the pair is connected

struct WireHeader {
  uint8_t flags;
  uint8_t handler;
  uint8_t nargs;
  uint8_t unused0;
  uint16_t credits;
  uint16_t unused1;
  uint32_t len;  // payload bytes (a Long's, wherever they travel)
};
static_assert(sizeof(WireHeader) == 12, "the header is packed by hand");

// An AM's header fields, wherever they travel: in a WireHeader at the
// front of the message, or (GASNET_OFI_TAGGED_AM) in the 64-bit tag.
struct AmHeader {
  uint8_t flags = 0;
  uint8_t handler = 0;
  uint8_t nargs = 0;
  uint16_t credits = 0;
  uint32_t len = 0;  // payload bytes (a Long's, wherever they travel)
  uint32_t source = 0;
  uint64_t long_dest = 0;
};

// The tag's layout: flags, handler, argument count, credits, and the
// source rank in the top 24 bits unless CQ data carries it. A tagged
// message's body is a Long's destination and payload length (16 bytes),
// the arguments, then the payload; a Medium's length is what follows its
// arguments (and padding).
constexpr int kTagCreditsShift = 24;
constexpr int kTagSourceShift = 40;
constexpr uint32_t kMaxTaggedSource = (1u << 24) - 1;

// Bytes before the arguments: the header (source rank unless CQ data
// carries it; a Long's destination) or, tagged, only a Long's fields.
template <bool kCqData, bool kTagged>
constexpr size_t PrefixBytes(bool is_long) {
  if constexpr (kTagged) {
    return is_long ? 16 : 0;
  } else {
    return sizeof(WireHeader) + (kCqData ? 0 : 4) + (is_long ? 8 : 0);
  }
}
template <bool kCqData, bool kTagged>
constexpr size_t ArgsEnd(bool is_long, unsigned nargs) {
  return PrefixBytes<kCqData, kTagged>(is_long) + 4 * size_t{nargs};
}
// The payload starts 8-byte aligned (relative to the message).
constexpr size_t PayloadOffset(size_t args_end) {
  return (args_end + 7) & ~size_t{7};
}
// The largest header, arguments and padding of any message.
constexpr size_t kMaxOverhead =
    PayloadOffset(ArgsEnd<false, false>(true, am::kMaxArgs));

// Writes `h`'s prefix at `out` (and into `tag`); returns its length.
template <bool kCqData, bool kTagged>
size_t EncodeHeader(const AmHeader& h, bool is_long, unsigned char* out,
                    uint64_t* tag) {
  if constexpr (kTagged) {
    *tag = uint64_t{h.flags} | uint64_t{h.handler} << 8 |
           uint64_t{h.nargs} << 16 | uint64_t{h.credits} << kTagCreditsShift |
           (kCqData ? 0 : uint64_t{h.source} << kTagSourceShift);
    if (!is_long) return 0;
    std::memcpy(out, &h.long_dest, 8);
    std::memcpy(out + 8, &h.len, 4);
    std::memset(out + 12, 0, 4);
    return 16;
  } else {
    *tag = 0;
    WireHeader w{};
    w.flags = h.flags;
    w.handler = h.handler;
    w.nargs = h.nargs;
    w.credits = h.credits;
    w.len = h.len;
    std::memcpy(out, &w, sizeof w);
    size_t off = sizeof w;
    if constexpr (!kCqData) {
      std::memcpy(out + off, &h.source, 4);
      off += 4;
    }
    if (is_long) {
      std::memcpy(out + off, &h.long_dest, 8);
      off += 8;
    }
    return off;
  }
}

// Reads the header of the message [msg, +len) (with its CQ data and tag)
// into `h`; false when the message is too short for it. A tagged
// Medium's length is set later, from where its arguments end.
template <bool kCqData, bool kTagged>
bool DecodeHeader(const unsigned char* msg, size_t len, uint64_t cq_data,
                  uint64_t tag, AmHeader* h) {
  if constexpr (kTagged) {
    h->flags = static_cast<uint8_t>(tag);
    h->handler = static_cast<uint8_t>(tag >> 8);
    h->nargs = static_cast<uint8_t>(tag >> 16);
    h->credits = static_cast<uint16_t>(tag >> kTagCreditsShift);
    h->source = kCqData ? static_cast<uint32_t>(cq_data)
                        : static_cast<uint32_t>(tag >> kTagSourceShift);
    h->len = 0;
    if ((h->flags & 3) == static_cast<uint8_t>(Category::kLong)) {
      if (len < 16) return false;
      std::memcpy(&h->long_dest, msg, 8);
      std::memcpy(&h->len, msg + 8, 4);
    }
    return true;
  } else {
    WireHeader w;
    if (len < PrefixBytes<kCqData, false>(false)) return false;
    std::memcpy(&w, msg, sizeof w);
    h->flags = w.flags;
    h->handler = w.handler;
    h->nargs = w.nargs;
    h->credits = w.credits;
    h->len = w.len;
    size_t off = sizeof w;
    if constexpr (kCqData) {
      h->source = static_cast<uint32_t>(cq_data);
    } else {
      std::memcpy(&h->source, msg + off, 4);
      off += 4;
    }
    if ((h->flags & 3) == static_cast<uint8_t>(Category::kLong)) {
      if (len < off + 8) return false;
      std::memcpy(&h->long_dest, msg + off, 8);
    }
    return true;
  }
}

// Messages of at most this many bytes are built on the stack and injected.
constexpr size_t kMaxInject = 4096;

// How many completions one read takes, and one poll at most.
constexpr int kCqBatch = 16;
constexpr int kPollBudget = 64;

// How long a send keeps retrying a connection the provider could not make.
constexpr absl::Duration kConnectRetryFor = absl::Seconds(60);

// How long Fini waits for its last messages to leave, and then keeps
// serving its peers' last messages.
constexpr absl::Duration kFlushFor = absl::Milliseconds(500);
constexpr absl::Duration kLingerFor = absl::Milliseconds(20);
// How long Init waits for every off-supernode pair to connect.
constexpr absl::Duration kConnectFor = absl::Seconds(60);

// How long a rank that lost a peer mid-send waits for the job to be ended
// (by the launcher, which saw the peer go) before it ends it itself.

// Whether a send's error `err` says its peer is gone (died, or closed).
bool IsPeerGone(int err) {
  switch (err) {
    case FI_ENOTCONN:
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_ECONNREFUSED:
    case FI_EHOSTUNREACH:
    case FI_ENETUNREACH:
    case FI_ESHUTDOWN:
    case FI_EIO:  // sockets' report of a peer that died
      return true;
    default:
      return false;
  }
}

// RMA chunks never exceed this (whatever the provider's maximum).
constexpr size_t kMaxRmaChunk = size_t{1} << 30;

// Whether a completion is of a send or an RMA this rank started (the rest
// are receives, and a multi-receive buffer's release).
inline bool IsTransmit(uint64_t flags) {
  return (flags & (FI_SEND | FI_WRITE | FI_READ)) != 0;
}

std::string FiError(ssize_t rc) {
  return absl::StrFormat("%s (%d)", fi_strerror(static_cast<int>(-rc)),
                         static_cast<int>(rc));
}

// A Medium payload whose receive position is not 8-byte aligned (the
// provider chose where in a multi-receive buffer it landed) is copied
// here first: clients may rely on GASNet's payload alignment. (A
// ThreadScratch: the exit's polls run in the main thread's exit handler,
// after its thread_local destructors.)
constinit thread_local ThreadScratch tl_aligned;

unsigned char* AlignedCopy(const unsigned char* from, size_t len,
                           size_t capacity) {
  unsigned char* to = tl_aligned.Get(capacity);
  std::memcpy(to, from, len);
  return to;
}

// Calls into libfabric are marked (InLibfabric), and each entry into the
// conduit (ConduitCall): an end signal or the launcher's exit decision that
// lands inside either waits until the conduit returns to the client, or
// until a wait round of the outermost call (WaitRound), the one rule of
// exit/signals.h. Run from the handler inside libfabric, the exit's sends
// and polls would wait for a provider lock the interrupted frame holds;
// run from the conduit's own work, they would find its state half way. A
// fatal signal inside libfabric is not deferred: its exit finds the
// conduit Interrupted() and touches nothing.
using InLibfabric = exit::LibraryCall;

}  // namespace

// ---------------------------------------------------------------------------
// Completion contexts and pools.

struct OfiConduit::TxContext {
  // libfabric's per-operation space (unused unless a provider asks; the
  // conduit accepts none of the context modes, but it costs nothing).
  fi_context2 fi;
  enum Kind : uint8_t { kSend, kRma, kFlush } kind;
};

struct OfiConduit::SendBuffer : TxContext {
  int pool = 0;  // which pool it returns to: an Endpoint, or 2 (bounce)
  // Manual progress: the transmit context whose Lane::done its completion
  // counts (null otherwise).
  Lane* lane = nullptr;
  std::unique_ptr<unsigned char[]> data;
};

struct OfiConduit::RmaOp : TxContext {
  RmaOp* head = nullptr;  // the operation's first chunk: holds the rest
  std::atomic<uint64_t> remaining{0};
  rma::Counter* rc = nullptr;
  rma::Counter* lc = nullptr;
  SendBuffer* bbuf = nullptr;
};

struct OfiConduit::RxBuffer {
  fi_context2 fi;
  int ep = 0;
  size_t size = 0;
  std::unique_ptr<unsigned char[]> data;
  // Deliveries in progress from this buffer, plus kReleased once
  // libfabric has let it go: reposted when only kReleased remains.
  std::atomic<uint32_t> refs{0};
  static constexpr uint32_t kReleased = 1u << 30;
};

// A Request's reply handle (Inbound::reply): on the stack of its delivery.
struct OfiConduit::ReplyHandle {
  Rank source = 0;
  bool replied = false;
};

// A transmit context. The first sends Requests from the request endpoint
// and Replies and RMA from the reply endpoint, its completions arriving
// with their receives; each further one (PAR mode) is a transmit-only
// endpoint of its own, sending everything, with a completion queue of
// its own.
struct OfiConduit::Lane {
  // What goes to a peer's endpoint e leaves from ep[e].
  fid_ep* ep[kEndpoints] = {nullptr, nullptr};
  fid_ep* own = nullptr;  // lanes after the first
  fid_cq* cq = nullptr;
  // Per destination endpoint, the peers sent to (Fini flushes those).
  std::unique_ptr<std::atomic<uint8_t>[]> unflushed[kEndpoints];
  // Serialises reading `cq` (lanes after the first).
  std::mutex mutex;
  std::atomic<uint64_t> sent{0};  // AMs sent through it
  // Manual progress: of those, the ones whose transmit completion has
  // been read (FlushSends waits for `sent`).
  std::atomic<uint64_t> done{0};
};

// The dispatch table (see MakePaths).
struct OfiConduit::Paths {
  core::SendStatus (OfiConduit::*send)(Rank, ReplyHandle*,
                                       const core::Outbound&, bool, bool);
  void (OfiConduit::*commit)(core::Reservation&, const core::Outbound&);
  int (OfiConduit::*drain_rx)(Endpoint, int);
  void (OfiConduit::*rma_posted)(Lane&);
};

template <bool kCqData, bool kTagged, bool kInject, bool kManual>
constexpr OfiConduit::Paths OfiConduit::MakePaths() {
  return Paths{&OfiConduit::Send<kCqData, kTagged, kInject, kManual>,
               &OfiConduit::CommitInPlace<kCqData, kTagged, kInject, kManual>,
               &OfiConduit::DrainRx<kCqData, kTagged>,
               &OfiConduit::RmaPosted<kManual>};
}

// Index bits: 8 CQ data, 4 tagged, 2 inject, 1 manual progress.
template <size_t... I>
const OfiConduit::Paths& OfiConduit::SelectPaths(size_t index,
                                                 std::index_sequence<I...>) {
  static constexpr Paths kAll[] = {
      MakePaths<(I & 8) != 0, (I & 4) != 0, (I & 2) != 0, (I & 1) != 0>()...};
  return kAll[index];
}

namespace {
// The calling thread's transmit context (an index into lanes_; ~0: none
// yet).
thread_local uint32_t tl_lane = ~0u;
}  // namespace

OfiConduit::Lane& OfiConduit::MyLane() {
  if (lanes_.size() == 1) return *lanes_[0];
  if (tl_lane == ~0u) {
    tl_lane = next_lane_.fetch_add(1, std::memory_order_relaxed);
  }
  return *lanes_[tl_lane % lanes_.size()];
}

template <typename T>
class OfiConduit::Pool {
 public:
  template <typename Make>
  Pool(size_t initial, size_t max, bool thread_safe, Make make)
      : max_(max), thread_safe_(thread_safe), make_(make) {
    for (size_t i = 0; i < initial; ++i) Grow();
  }
  // An object, or null when all `max` are in use.
  T* Get() {
    Lock lock(*this);
    if (free_.empty() && all_.size() < max_) Grow();
    if (free_.empty()) return nullptr;
    T* t = free_.back();
    free_.pop_back();
    return t;
  }
  void Put(T* t) {
    Lock lock(*this);
    free_.push_back(t);
  }
  // Objects allocated so far (for the stats; takes the lock).
  size_t allocated() {
    Lock lock(*this);
    return all_.size();
  }

 private:
  struct Lock {
    explicit Lock(Pool& p) : pool(p) {
      if (pool.thread_safe_) pool.mutex_.lock();
    }
    ~Lock() {
      if (pool.thread_safe_) pool.mutex_.unlock();
    }
    Pool& pool;
  };
  void Grow() {
    all_.push_back(make_());
    free_.push_back(all_.back().get());
    // free_ never reallocates on the hot path once it holds max_ slots.
    if (free_.capacity() < max_) free_.reserve(std::min<size_t>(max_, 4096));
  }
  size_t max_;
  bool thread_safe_;
  std::function<std::unique_ptr<T>()> make_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<T>> all_;
  std::vector<T*> free_;
};

// ---------------------------------------------------------------------------
// Start-up and shut-down.

OfiConduit::OfiConduit() = default;

OfiConduit::~OfiConduit() { Fini(); }

core::Capabilities OfiConduit::capabilities() const {
  core::Capabilities c;
  c.rdma_put = true;
  c.rdma_get = true;
  return c;
}

size_t OfiConduit::MaxLong() const {
  // A Long larger than a Medium is written by RMA: as large as one RMA.
  return std::max(settings_.max_medium, max_rma_);
}

namespace {

// libfabric links the psm provider's PSM library (libinfinipath), whose
// constructor installs handlers for the fatal and ending signals at load,
// before main: they print their own backtrace and exit 1. The shm
// provider installs its own when it opens an endpoint (to remove its
// regions, then die of the signal). The exit layer leaves handlers a
// client installed alone, so a crash or the launcher's SIGTERM would lose
// the graceful exit, its report and its exit code (128 + signal).
// Handlers that live in those libraries are reset to the default before
// the exit layer installs its own (the launcher removes shm's regions:
// they are named after the job); anything else (the client's) is left.
void DropLibrarySignalHandlers() {
  exit::DropLibrarySignalHandlers({"libinfinipath", "libpsm", "libfabric"});
}

}  // namespace

void OfiConduit::StartUp(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  DropLibrarySignalHandlers();
}

absl::Status OfiConduit::Init(const core::InitArgs& args) {
  absl::StatusOr<WaitPolicy*> waits =
      core::CheckInitArgs("ofi", args, own_waits_);
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
  PrepareLibfabricEnvironment(settings_, size_);

  Requirements req;
  req.thread_safe = thread_safe_;
  req.multi_recv = settings_.multi_recv;
  req.tagged = settings_.tagged_am;
  if (settings_.data_progress == Settings::Progress::kManual) {
    req.progress = FI_PROGRESS_MANUAL;
  } else if (settings_.data_progress == Settings::Progress::kAuto) {
    req.progress = FI_PROGRESS_AUTO;
  }
  if (settings_.list_devices &&
      settings_.list_devices_nodes.Contains(static_cast<int64_t>(rank_))) {
    absl::StatusOr<Candidates> c = FindCandidates(req);
    if (c.ok()) {
      std::vector<std::string> seen;
      for (const fi_info* i : c->usable) {
        const std::string line = absl::StrFormat(
            "ofi: rank %u: usable provider/device: %s / %s", rank_,
            i->fabric_attr->prov_name, i->domain_attr->name);
        if (std::find(seen.begin(), seen.end(), line) != seen.end()) continue;
        seen.push_back(line);
        std::printf("%s\n", line.c_str());
      }
      if (seen.empty()) {
        std::printf("ofi: rank %u: no usable provider/device\n", rank_);
      }
      std::fflush(stdout);
    }
  }
  absl::StatusOr<InfoPtr> info = SelectProvider(settings_, req);
  if (!info.ok()) return info.status();
  info_ = *std::move(info);
  // udp;ofi_rxd (Debian's libfabric 1.17) corrupts messages in
  // multi-receive buffers under load: 8 KiB Mediums (segmented by rxd)
  // arrived with garbage headers, or twice, in 3 of 4 runs of a 4-rank
  // job on a loaded 2-CPU host, and in none of 6 with plain receives. So
  // it gets plain receives unless GASNET_OFI_RECEIVE_BUFF_SIZE says
  // otherwise.
  if (settings_.multi_recv && !settings_.receive_buff_size_set &&
      absl::StrContains(info_->fabric_attr->prov_name, "ofi_rxd")) {
    settings_.multi_recv = false;
    if (!settings_.num_receive_buffs_set) settings_.num_receive_buffs = 1024;
  }

  const fi_domain_attr& dom = *info_->domain_attr;
  cq_data_ = settings_.use_cq_data && dom.cq_data_size >= sizeof(uint32_t);
  tagged_ = settings_.tagged_am;
  manual_ = dom.data_progress == FI_PROGRESS_MANUAL;
  if (tagged_ && !cq_data_ && size_ > kMaxTaggedSource + 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GASNET_OFI_TAGGED_AM=yes: a job of %u ranks needs the source rank "
        "in remote CQ data (at most %u ranks fit in the tag)",
        size_, kMaxTaggedSource + 1));
  }
  virt_addr_ = (dom.mr_mode & FI_MR_VIRT_ADDR) != 0;
  prov_key_ = (dom.mr_mode & FI_MR_PROV_KEY) != 0;
  mr_endpoint_ = (dom.mr_mode & FI_MR_ENDPOINT) != 0;
  const size_t provider_inject = info_->tx_attr->inject_size;
  am_inject_ =
      std::min({settings_.am_inject_limit, provider_inject, kMaxInject});
  rma_inject_ = std::min(settings_.rma_inject_limit, provider_inject);
  max_rma_ = std::min<size_t>(info_->ep_attr->max_msg_size, kMaxRmaChunk);
  max_message_ = kMaxOverhead + settings_.max_medium;
  if (max_message_ > info_->ep_attr->max_msg_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GASNET_OFI_MAX_MEDIUM=%u: messages of %u bytes exceed the "
        "provider's largest message (%u bytes)",
        settings_.max_medium, max_message_, info_->ep_attr->max_msg_size));
  }
  if (settings_.multi_recv && settings_.receive_buff_size < 2 * max_message_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GASNET_OFI_RECEIVE_BUFF_SIZE=%u must hold at least two of the "
        "largest messages (2 x %u bytes with GASNET_OFI_MAX_MEDIUM=%u)",
        settings_.receive_buff_size, max_message_, settings_.max_medium));
  }

  // The dispatch table.
  const bool inject =
      am_inject_ > 0 && am_inject_ >= PayloadOffsetFor(false, 0);
  paths_ = &SelectPaths((cq_data_ ? 8 : 0) | (tagged_ ? 4 : 0) |
                            (inject ? 2 : 0) | (manual_ ? 1 : 0),
                        std::make_index_sequence<16>());

  if (int rc = fi_fabric(info_->fabric_attr, &fabric_, nullptr); rc != 0) {
    return absl::InternalError(
        absl::StrFormat("fi_fabric (%s): %s", Describe(*info_), FiError(rc)));
  }
  if (int rc = fi_domain(fabric_, info_.get(), &domain_, nullptr); rc != 0) {
    return absl::InternalError(
        absl::StrFormat("fi_domain (%s): %s", Describe(*info_), FiError(rc)));
  }
  fi_av_attr av{};
  av.type = dom.av_type == FI_AV_UNSPEC ? FI_AV_TABLE : dom.av_type;
  // Transmit contexts: several only in PAR mode.
  size_t lanes = 1;
  if (thread_safe_) {
    lanes = settings_.num_tx_contexts;
    if (lanes == 0) {
      cpu_set_t cpus;
      const int n =
          sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
      lanes = static_cast<size_t>(std::clamp(n, 1, 4));
    }
  }
  av.count = (kEndpoints + lanes - 1) * static_cast<size_t>(size_);
  if (int rc = fi_av_open(domain_, &av, &av_, nullptr); rc != 0) {
    return absl::InternalError(absl::StrFormat("fi_av_open: %s", FiError(rc)));
  }
  one_ep_ = !settings_.split_endpoints.value_or(false);
  shared_cq_ = one_ep_ || settings_.shared_cq.value_or(true);
  for (int e = 0; e < kEndpoints; ++e) {
    if (shared_cq_ && e > 0) cq_[e] = cq_[0];
    if (one_ep_ && e > 0) {
      ep_[e] = ep_[0];
      continue;
    }
    if (absl::Status s = OpenEndpoint(e, &ep_[e], &cq_[e]); !s.ok()) return s;
  }
  if (shared_cq_) set_aside_.reserve(256);
  if (absl::Status s = OpenLanes(lanes); !s.ok()) return s;

  // Receive buffers go up before any peer can know our address (one set
  // per receiving endpoint).
  const size_t rx_size =
      settings_.multi_recv ? settings_.receive_buff_size : max_message_;
  for (int e = 0; e < (one_ep_ ? 1 : kEndpoints); ++e) {
    for (size_t i = 0; i < settings_.num_receive_buffs; ++i) {
      auto b = std::make_unique<RxBuffer>();
      b->ep = e;
      b->size = rx_size;
      b->data.reset(new unsigned char[rx_size]);
      if (absl::Status s = PostReceive(b.get()); !s.ok()) return s;
      rx_buffers_.push_back(std::move(b));
    }
  }

  // Address exchange: both endpoints of every rank, then (when any rank
  // has several transmit contexts) the further contexts' endpoints, which
  // every peer puts in its address vector too (a provider may need to
  // know where a message came from).
  struct WireNames {
    uint32_t lanes;
    uint32_t len[kEndpoints];
    char name[kEndpoints][256];
  };
  struct Name {
    uint32_t len = 0;
    char name[256] = {};
  };
  auto get_name = [](fid_ep* ep, Name* out) -> absl::Status {
    size_t len = sizeof out->name;
    if (int rc = fi_getname(&ep->fid, out->name, &len); rc != 0) {
      return absl::InternalError(absl::StrFormat(
          "fi_getname: %s (an address of %u bytes?)", FiError(rc), len));
    }
    out->len = static_cast<uint32_t>(len);
    return absl::OkStatus();
  };
  WireNames mine{};
  mine.lanes = static_cast<uint32_t>(lanes_.size());
  for (int e = 0; e < kEndpoints; ++e) {
    Name n;
    if (absl::Status s = get_name(ep_[e], &n); !s.ok()) return s;
    mine.len[e] = n.len;
    std::memcpy(mine.name[e], n.name, sizeof n.name);
  }
  std::vector<WireNames> all(size_);
  bootstrap_->Allgather(&mine, sizeof mine, all.data());
  auto insert = [this](const void* name, Rank r) -> absl::StatusOr<fi_addr_t> {
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    const int n = fi_av_insert(av_, name, 1, &a, 0, nullptr);
    if (n != 1) {
      return absl::InternalError(
          absl::StrFormat("fi_av_insert of rank %u's address: %s", r,
                          n < 0 ? FiError(n) : std::string("not inserted")));
    }
    ++av_entries_;
    return a;
  };
  addresses_.assign(2 * static_cast<size_t>(size_), FI_ADDR_NOTAVAIL);
  peer_lanes_.assign(size_, 1);
  uint32_t most_lanes = 1;
  for (Rank r = 0; r < size_; ++r) {
    peer_lanes_[r] = std::max<uint32_t>(all[r].lanes, 1);
    most_lanes = std::max(most_lanes, peer_lanes_[r]);
    for (int e = 0; e < kEndpoints; ++e) {
      if (one_ep_ && e > 0) {  // (every rank has the same setting)
        addresses_[2 * static_cast<size_t>(r) + e] =
            addresses_[2 * static_cast<size_t>(r)];
        continue;
      }
      absl::StatusOr<fi_addr_t> a = insert(all[r].name[e], r);
      if (!a.ok()) return a.status();
      addresses_[2 * static_cast<size_t>(r) + e] = *a;
    }
  }
  if (most_lanes > 1) {
    std::vector<Name> extra(most_lanes - 1);
    for (size_t k = 1; k < lanes_.size(); ++k) {
      // (A scalable endpoint's contexts all have its address.)
      fid_ep* named = sep_ != nullptr ? sep_ : lanes_[k]->own;
      if (absl::Status s = get_name(named, &extra[k - 1]); !s.ok()) {
        return s;
      }
    }
    std::vector<Name> every(static_cast<size_t>(size_) * extra.size());
    bootstrap_->Allgather(extra.data(), extra.size() * sizeof(Name),
                          every.data());
    for (Rank r = 0; r < size_; ++r) {
      for (uint32_t k = 1; k < peer_lanes_[r]; ++k) {
        absl::StatusOr<fi_addr_t> a =
            insert(every[r * extra.size() + k - 1].name, r);
        if (!a.ok()) return a.status();
      }
    }
  }

  for (auto& lane : lanes_) {
    for (auto& marks : lane->unflushed) {
      marks.reset(new std::atomic<uint8_t>[size_]);
      for (Rank r = 0; r < size_; ++r) marks[r].store(0);
    }
  }

  // Pools.
  const size_t message = max_message_;
  auto make_send = [message](int pool) {
    return [message, pool] {
      auto b = std::make_unique<SendBuffer>();
      b->kind = TxContext::kSend;
      b->pool = pool;
      b->data.reset(new unsigned char[message]);
      return b;
    };
  };
  send_pool_[kRequestEp] = std::make_unique<Pool<SendBuffer>>(
      settings_.initial_request_buffs, settings_.max_request_buffs,
      thread_safe_, make_send(kRequestEp));
  send_pool_[kReplyEp] = std::make_unique<Pool<SendBuffer>>(
      settings_.initial_reply_buffs, settings_.max_reply_buffs, thread_safe_,
      make_send(kReplyEp));
  const size_t bbuf = settings_.bbuf_size;
  bbuf_pool_ = std::make_unique<Pool<SendBuffer>>(
      settings_.num_bbufs, settings_.num_bbufs, thread_safe_, [bbuf] {
        auto b = std::make_unique<SendBuffer>();
        b->kind = TxContext::kSend;
        b->pool = kEndpoints;
        b->data.reset(new unsigned char[bbuf]);
        return b;
      });
  rma_pool_ =
      std::make_unique<Pool<RmaOp>>(256, size_t{1} << 22, thread_safe_, [] {
        auto op = std::make_unique<RmaOp>();
        op->kind = TxContext::kRma;
        return op;
      });

  const uint32_t peers =
      static_cast<uint32_t>(size_ - args.map->my_supernode_members().size());
  peers_ = peers;
  absl::StatusOr<am::CreditConfig> credit = am::CreditConfigFromEnv(peers);
  if (!credit.ok()) return credit.status();
  if (credit->per_peer > 0xffff) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GASNET_AM_CREDITS_PP=%u: at most 65535 (the header's credit field)",
        credit->per_peer));
  }
  credits_ = std::make_unique<am::Credits>(size_, *credit);

  DropLibrarySignalHandlers();
  return Connect(*args.map);
}

absl::Status OfiConduit::OpenCq(bool receives, fid_cq** cq) {
  // A transmit context's own endpoint receives nothing: its queue holds
  // only the completions of what it sent.
  fi_cq_attr attr{};
  attr.format = !receives ? FI_CQ_FORMAT_CONTEXT
                : tagged_ ? FI_CQ_FORMAT_TAGGED
                          : FI_CQ_FORMAT_DATA;
  attr.wait_obj = FI_WAIT_NONE;
  attr.size = !receives ? settings_.tx_cq_size
              : settings_.tx_cq_size != 0 && settings_.rx_cq_size != 0
                  ? settings_.tx_cq_size + settings_.rx_cq_size
                  : std::max(settings_.tx_cq_size, settings_.rx_cq_size);
  if (int rc = fi_cq_open(domain_, &attr, cq, nullptr); rc != 0) {
    return absl::InternalError(absl::StrFormat(
        "fi_cq_open (GASNET_OFI_TX_CQ_SIZE=%u, GASNET_OFI_RX_CQ_SIZE=%u): %s",
        settings_.tx_cq_size, settings_.rx_cq_size, FiError(rc)));
  }
  return absl::OkStatus();
}

absl::Status OfiConduit::OpenEndpoint(int e, fid_ep** ep, fid_cq** cq) {
  const bool receives = e < kEndpoints;
  // One completion queue for sends, RMA and receives (with tcp;ofi_rxm
  // each read is a progress pass with a system call). `*cq` already set:
  // the other receiving endpoint's, shared (GASNET_OFI_SHARED_CQ).
  if (*cq == nullptr) {
    if (absl::Status s = OpenCq(receives, cq); !s.ok()) return s;
  }
  // shm names an endpoint after the process id ("fi_shm://<pid>") in
  // /dev/shm, which processes in different pid namespaces on one host
  // (containers, sandboxed test runs) share: two of them with the same pid
  // collided (fi_enable: EBUSY). Each endpoint gets a name of its own.
  InfoPtr named;
  const fi_info* info = info_.get();
  if (info_->addr_format == FI_ADDR_STR && info_->src_addr != nullptr &&
      std::strncmp(static_cast<const char*>(info_->src_addr), "fi_shm://", 9) ==
          0) {
    named.reset(fi_dupinfo(info_.get()));
    // Under our launcher the name carries the job's PSHM prefix, so the
    // launcher's clean-up removes what a killed rank's endpoint left in
    // /dev/shm, as it does for PSHM's own objects.
    std::string job;
    if (const char* id = std::getenv("GEX_JOB_ID"); id != nullptr) {
      for (const char* p = id; *p != '\0'; ++p) {
        if (std::isalnum(static_cast<unsigned char>(*p))) job.push_back(*p);
      }
    }
    const std::string name =
        job.empty()
            ? absl::StrFormat("fi_shm://gex%016x_%d_%u_%d", HostId(), getpid(),
                              rank_, e)
            : absl::StrFormat("fi_shm://GASNT%s.ofi%u_%d", job, rank_, e);
    std::free(named->src_addr);
    named->src_addr = strdup(name.c_str());
    named->src_addrlen = name.size() + 1;
    info = named.get();
  }
  if (int rc = fi_endpoint(domain_, const_cast<fi_info*>(info), ep, nullptr);
      rc != 0) {
    return absl::InternalError(absl::StrFormat("fi_endpoint: %s", FiError(rc)));
  }
  int rc = fi_ep_bind(*ep, &av_->fid, 0);
  if (rc == 0) rc = fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV);
  if (rc != 0) {
    return absl::InternalError(absl::StrFormat("fi_ep_bind: %s", FiError(rc)));
  }
  if (int r = fi_enable(*ep); r != 0) {
    return absl::InternalError(absl::StrFormat("fi_enable: %s", FiError(r)));
  }
  // After fi_enable: shm (libfabric 1.17) creates the receive context the
  // option lives in only then, and crashes when it is set before.
  if (receives && settings_.multi_recv) {
    // A message never straddles two buffers: the provider releases a
    // buffer once less than the largest message fits.
    size_t min = max_message_;
    if (int r = fi_setopt(&(*ep)->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
                          &min, sizeof min);
        r != 0) {
      return absl::InternalError(
          absl::StrFormat("fi_setopt(FI_OPT_MIN_MULTI_RECV): %s", FiError(r)));
    }
  }
  return absl::OkStatus();
}

absl::Status OfiConduit::OpenLanes(size_t count) {
  auto lane0 = std::make_unique<Lane>();
  for (int e = 0; e < kEndpoints; ++e) lane0->ep[e] = ep_[e];
  lanes_.push_back(std::move(lane0));
  if (count == 1) return absl::OkStatus();
  // The further contexts: the transmit contexts of one scalable endpoint
  // where the provider has enough of them (sockets: 16), else endpoints of
  // their own (tcp;ofi_rxm, shm, udp;ofi_rxd offer one context each).
  const size_t extra = count - 1;
  const size_t offered = info_->domain_attr->max_ep_tx_ctx;
  if (settings_.scalable_ep && offered > 1 && offered >= extra) {
    InfoPtr info(fi_dupinfo(info_.get()));
    info->ep_attr->tx_ctx_cnt = extra;
    info->ep_attr->rx_ctx_cnt = 0;
    if (int rc = fi_scalable_ep(domain_, info.get(), &sep_, nullptr); rc != 0) {
      return absl::InternalError(absl::StrFormat(
          "fi_scalable_ep (%u transmit contexts): %s", extra, FiError(rc)));
    }
    if (int rc = fi_scalable_ep_bind(sep_, &av_->fid, 0); rc != 0) {
      return absl::InternalError(
          absl::StrFormat("fi_scalable_ep_bind: %s", FiError(rc)));
    }
    for (size_t k = 0; k < extra; ++k) {
      auto lane = std::make_unique<Lane>();
      if (absl::Status s = OpenCq(/*receives=*/false, &lane->cq); !s.ok()) {
        return s;
      }
      int rc = fi_tx_context(sep_, static_cast<int>(k), nullptr, &lane->own,
                             nullptr);
      if (rc == 0) rc = fi_ep_bind(lane->own, &lane->cq->fid, FI_TRANSMIT);
      if (rc == 0) rc = fi_enable(lane->own);
      if (rc != 0) {
        return absl::InternalError(
            absl::StrFormat("transmit context %u of the scalable endpoint: %s",
                            k, FiError(rc)));
      }
      for (int e = 0; e < kEndpoints; ++e) lane->ep[e] = lane->own;
      lanes_.push_back(std::move(lane));
    }
    if (int rc = fi_enable(sep_); rc != 0) {
      return absl::InternalError(absl::StrFormat(
          "fi_enable of the scalable endpoint: %s", FiError(rc)));
    }
    return absl::OkStatus();
  }
  for (size_t k = 1; k < count; ++k) {
    auto lane = std::make_unique<Lane>();
    if (absl::Status s = OpenEndpoint(kEndpoints + static_cast<int>(k) - 1,
                                      &lane->own, &lane->cq);
        !s.ok()) {
      return s;
    }
    for (int e = 0; e < kEndpoints; ++e) lane->ep[e] = lane->own;
    lanes_.push_back(std::move(lane));
  }
  return absl::OkStatus();
}

absl::Status OfiConduit::PostReceive(RxBuffer* b) {
  iovec iov{b->data.get(), b->size};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = FI_ADDR_UNSPEC;
  msg.context = &b->fi;
  const uint64_t flags = settings_.multi_recv ? FI_MULTI_RECV : 0;
  fi_msg_tagged tmsg{};
  tmsg.msg_iov = &iov;
  tmsg.iov_count = 1;
  tmsg.addr = FI_ADDR_UNSPEC;
  tmsg.context = &b->fi;
  tmsg.tag = 0;
  tmsg.ignore = ~uint64_t{0};  // any tag: the tag is the header
  PoliteSpinWait spin(polite_);
  for (;;) {
    ssize_t rc;
    {
      const InLibfabric in;
      rc = tagged_ ? fi_trecvmsg(ep_[b->ep], &tmsg, 0)
                   : fi_recvmsg(ep_[b->ep], &msg, flags);
    }
    if (rc == 0) return absl::OkStatus();
    if (rc != -FI_EAGAIN) {
      return absl::InternalError(
          absl::StrFormat("fi_recvmsg: %s", FiError(rc)));
    }
    // Some providers (udp;ofi_rxd) ask to be progressed first.
    (this->*paths_->drain_rx)(static_cast<Endpoint>(b->ep), kCqBatch);
    spin.Pause();
  }
}

void OfiConduit::RepostOrFatal(RxBuffer* b) {
  b->refs.store(0, std::memory_order_relaxed);
  if (absl::Status s = PostReceive(b); !s.ok()) {
    FatalErrorF("ofi conduit: rank %u: reposting a receive buffer: %s", rank_,
                s.message());
  }
}

bool OfiConduit::SendMarkers(bool hello, absl::Time deadline,
                             const std::vector<Rank>& peers) {
  // One marker per destination endpoint (the provider may read it until
  // the send completes): a credits-only message carrying no credits,
  // shaped like its endpoint's traffic (a Request or a Reply), sent from
  // every transmit context (at Fini: those that sent to that peer).
  if (marker_ctx_ == nullptr) {
    marker_ctx_ = std::make_unique<TxContext>();
    marker_ctx_->kind = TxContext::kFlush;
  }
  unsigned char markers[kEndpoints][sizeof(WireHeader) + sizeof(uint32_t)] = {};
  uint64_t tags[kEndpoints] = {};
  size_t marker_len = 0;
  for (int e = 0; e < kEndpoints; ++e) {
    AmHeader h;
    h.flags = kFlagCreditsOnly | (e == kRequestEp ? kFlagRequest : 0) |
              (hello ? kFlagHello : 0);
    h.source = rank_;
    marker_len =
        tagged_    ? EncodeHeader<false, true>(h, false, markers[e], &tags[e])
        : cq_data_ ? EncodeHeader<true, false>(h, false, markers[e], &tags[e])
                   : EncodeHeader<false, false>(h, false, markers[e], &tags[e]);
  }
  PoliteSpinWait spin(polite_);
  auto poll = [this] { return Poll() + DrainAllLanes(); };
  for (auto& lane : lanes_) {
    for (int e = 0; e < kEndpoints; ++e) {
      for (Rank r : peers) {
        if (!hello &&
            lane->unflushed[e][r].load(std::memory_order_relaxed) == 0) {
          continue;
        }
        iovec iov{markers[e], marker_len};
        const fi_addr_t to = addresses_[2 * static_cast<size_t>(r) + e];
        const uint64_t flags = FI_COMPLETION | FI_TRANSMIT_COMPLETE |
                               (cq_data_ ? FI_REMOTE_CQ_DATA : 0);
        for (;;) {
          ssize_t rc;
          {
            const InLibfabric in;
            if (tagged_) {
              fi_msg_tagged msg{};
              msg.msg_iov = &iov;
              msg.iov_count = 1;
              msg.addr = to;
              msg.context = &marker_ctx_->fi;
              msg.data = rank_;
              msg.tag = tags[e];
              rc = fi_tsendmsg(lane->ep[e], &msg, flags);
            } else {
              fi_msg msg{};
              msg.msg_iov = &iov;
              msg.iov_count = 1;
              msg.addr = to;
              msg.context = &marker_ctx_->fi;
              msg.data = rank_;
              rc = fi_sendmsg(lane->ep[e], &msg, flags);
            }
          }
          if (rc == 0) {
            flush_pending_.fetch_add(1, std::memory_order_relaxed);
            break;
          }
          if (!NotYet(rc, r) || absl::Now() > deadline) break;
          if (poll() == 0) spin.Pause();
        }
      }
    }
  }
  while (flush_pending_.load(std::memory_order_acquire) > 0 &&
         absl::Now() < deadline) {
    if (poll() == 0) spin.Pause();
  }
  return flush_pending_.load(std::memory_order_acquire) == 0;
}

absl::Status OfiConduit::Connect(const NodeMap& map) {
  // Connection-based providers (tcp;ofi_rxm, sockets) connect a pair on
  // its first message, and a manual-progress one moves that message only
  // when this rank calls into libfabric again. A rank whose last barrier
  // message waited for its connection and which then only copied to its
  // supernode peers (direct RMA never polls the network) would hold up
  // the barrier for everyone (the exit suite's rma case hung so). So every
  // pair is connected here, each rank sending a hidden hello to each
  // off-supernode peer on both endpoints and waiting for its peers'.
  std::vector<Rank> peers;
  for (Rank r = 0; r < size_; ++r) {
    if (!map.SameSupernode(r, rank_)) peers.push_back(r);
  }
  if (peers.empty()) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + kConnectFor;
  const bool sent = SendMarkers(/*hello=*/true, deadline, peers);
  uint64_t expected = 0;
  for (Rank r : peers) expected += kEndpoints * uint64_t{peer_lanes_[r]};
  PoliteSpinWait spin(polite_);
  while (hellos_received_.load(std::memory_order_relaxed) < expected &&
         absl::Now() < deadline) {
    if (Poll() + DrainAllLanes() == 0) spin.Pause();
  }
  if (!sent || hellos_received_.load() < expected) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "connecting to the %u off-supernode peers took longer than %s "
        "(%u of %u hellos received)",
        peers.size(), absl::FormatDuration(kConnectFor),
        hellos_received_.load(), expected));
  }
  connected_peers_ = static_cast<uint32_t>(peers.size());
  return absl::OkStatus();
}

void OfiConduit::Flush() {
  finishing_.store(true, std::memory_order_relaxed);
  // A message may still sit in the provider's queues when its send call
  // has returned (fi_inject's copy; a manual-progress provider sends on a
  // later poll), and closing the endpoint drops it: a peer still waiting
  // for our last exit message would wait until the exit timeout. So each
  // peer we sent to gets a marker with a transmit completion; messages
  // between two endpoints are ordered (FI_ORDER_SAS, required at Init),
  // so once the markers complete, everything before them has left. The
  // wait is bounded: a provider that completes a send only when the peer
  // acknowledges it (udp;ofi_rxd) cannot finish it with a peer that has
  // already gone, and not every rank of an exit reaches Fini (a rank that
  // could not coordinate leaves without it), so no collective step is
  // possible here. Afterwards the rank keeps polling a moment, so that
  // peers still flushing get their acknowledgements.
  std::vector<Rank> all(size_);
  for (Rank r = 0; r < size_; ++r) all[r] = r;
  SendMarkers(/*hello=*/false, absl::Now() + kFlushFor, all);
  const absl::Time linger = absl::Now() + kLingerFor;
  PoliteSpinWait spin(polite_);
  while (absl::Now() < linger) {
    if (Poll() + DrainAllLanes() == 0) spin.Pause();
  }
}

void OfiConduit::ProgressSends() {
  const exit::ConduitCall call;
  if (Interrupted() || abandoned_.load(std::memory_order_relaxed)) return;
  for (int e = 0; e < kEndpoints; ++e) {
    if (cq_[e] == nullptr || (e > 0 && cq_[e] == cq_[0])) continue;
    // (Inside from before the lock: an end signal that lands while it is
    // held waits too, rather than running an exit that would take it.)
    const InLibfabric in;
    std::unique_lock<std::mutex> lock(rx_mutex_[shared_cq_ ? 0 : e],
                                      std::defer_lock);
    if (thread_safe_) lock.lock();
    (void)fi_cq_read(cq_[e], nullptr, 0);
  }
  for (size_t k = 1; k < lanes_.size(); ++k) {
    Lane& lane = *lanes_[k];
    if (lane.cq == nullptr) continue;
    const InLibfabric in;
    std::lock_guard<std::mutex> lock(lane.mutex);
    (void)fi_cq_read(lane.cq, nullptr, 0);
  }
}

void OfiConduit::FlushSends() {
  const exit::ConduitCall call;
  // Why: a manual-progress provider (sockets) moves a queued send only
  // inside a later libfabric call on this rank -- one ring entry per
  // progress pass, and its bytes go out through a buffer flushed by later
  // passes. A rank that completes a barrier with its last round's message
  // still queued, and then computes without calling GASNet, leaves the
  // peer that needs that message waiting in the same barrier for ever
  // (tests/exit's compute cases hung so). So when a barrier completes,
  // this waits until each AM sent so far has its completion -- asked as
  // FI_INJECT_COMPLETE, not waiting for the peer (see Transmit); sockets
  // gives it once every byte is written to the socket -- polling as any
  // wait does.
  // Under manual progress no AM is injected (fi_inject has no
  // completion), so every one has a completion; Lane::sent counts them
  // posted, Lane::done completed. The cost stays with manual progress: a
  // small AM goes from a pool buffer instead of fi_inject (no lock in SEQ
  // mode, no wait), one relaxed counter per completion, and the wait
  // here at a barrier's end; with automatic progress nothing changes and
  // this returns at once. A send to a peer whose socket is full (it
  // computes, not reading) waits for that peer's next poll: the barrier
  // returns later, but nobody waits on this rank meanwhile.
  if (!manual_ || Interrupted() || abandoned_.load(std::memory_order_relaxed) ||
      finishing_.load(std::memory_order_relaxed)) {
    return;
  }
  for (auto& l : lanes_) {
    Lane& lane = *l;
    const uint64_t target = lane.sent.load(std::memory_order_relaxed);
    while (lane.done.load(std::memory_order_acquire) < target &&
           !finishing_.load(std::memory_order_relaxed)) {
      WaitRound([&] {
        return Progress(/*replies_only=*/false) +
               (&lane != lanes_[0].get() ? DrainLane(lane) : 0);
      });
    }
  }
}

void OfiConduit::Fini() {
  // Ending from a signal handler that interrupted libfabric: its locks may
  // be held, so nothing is closed (the process is about to end anyway).
  if (Interrupted() || abandoned_.load(std::memory_order_relaxed)) return;
  if (settings_.print_stats && info_ != nullptr) PrintStats();
  if (ep_[kRequestEp] != nullptr && !addresses_.empty()) Flush();
  closed_.store(true, std::memory_order_release);
  // In PAR mode other threads may still be inside the conduit (sending,
  // polling) while one thread ends the job; closing under them would
  // crash them (GASNet's ofi conduit has that bug, 4267). The process is
  // about to end: the endpoints stay open, later calls do nothing, and
  // the launcher removes what shm left in /dev/shm (named after the job).
  if (thread_safe_) return;
  for (auto& lane : lanes_) {
    if (lane->own != nullptr) fi_close(&lane->own->fid);
    if (lane->cq != nullptr) fi_close(&lane->cq->fid);
    lane->own = nullptr;
    lane->cq = nullptr;
  }
  if (sep_ != nullptr) fi_close(&sep_->fid);
  sep_ = nullptr;
  if (ep_[1] == ep_[0]) ep_[1] = nullptr;
  for (int e = 0; e < kEndpoints; ++e) {
    if (ep_[e] != nullptr) fi_close(&ep_[e]->fid);
    ep_[e] = nullptr;
  }
  for (fid_mr*& mr : segment_mr_) {
    if (mr != nullptr) fi_close(&mr->fid);
    mr = nullptr;
  }
  if (cq_[1] == cq_[0]) cq_[1] = nullptr;
  for (fid_cq*& cq : cq_) {
    if (cq != nullptr) fi_close(&cq->fid);
    cq = nullptr;
  }
  if (av_ != nullptr) fi_close(&av_->fid);
  av_ = nullptr;
  if (domain_ != nullptr) fi_close(&domain_->fid);
  domain_ = nullptr;
  if (fabric_ != nullptr) fi_close(&fabric_->fid);
  fabric_ = nullptr;
}

void OfiConduit::PrintStats() const {
  const OfiStats st = stats();
  std::string per_lane;
  for (const auto& lane : lanes_) {
    absl::StrAppend(&per_lane, per_lane.empty() ? "" : ",",
                    lane->sent.load(std::memory_order_relaxed));
  }
  std::printf(
      "ofi: rank %u: provider %s, %s, %zu transmit context(s)%s, header in "
      "the %s, source in %s, %s progress; requests=%llu replies=%llu "
      "credit_messages=%llu injected=%llu credit_waits=%llu sent_per_context="
      "%s peers %llu connected_peers %llu conduit_bytes %llu av_entries %llu "
      "recv_buffers %llu send_buffers %llu bounce_buffers %llu rma_ops %llu "
      "per_rank_bytes %llu\n",
      rank_, Describe(*info_).c_str(),
      one_ep_      ? "one receiving endpoint"
      : shared_cq_ ? "two receiving endpoints (one CQ)"
                   : "two receiving endpoints (two CQs)",
      lanes_.size(),
      lanes_.size() == 1 ? ""
      : sep_ != nullptr  ? " (a scalable endpoint's)"
                         : " (endpoints)",
      tagged_ ? "tag" : "message",
      cq_data_  ? "CQ data"
      : tagged_ ? "the tag"
                : "the header",
      manual_ ? "manual" : "automatic",
      static_cast<unsigned long long>(st.requests_sent),
      static_cast<unsigned long long>(st.replies_sent),
      static_cast<unsigned long long>(st.credit_messages_sent),
      static_cast<unsigned long long>(st.injected),
      static_cast<unsigned long long>(st.credit_waits), per_lane.c_str(),
      static_cast<unsigned long long>(st.peers),
      static_cast<unsigned long long>(st.connected_peers),
      static_cast<unsigned long long>(st.conduit_bytes),
      static_cast<unsigned long long>(st.av_entries),
      static_cast<unsigned long long>(st.recv_buffers),
      static_cast<unsigned long long>(st.send_buffers),
      static_cast<unsigned long long>(st.bounce_buffers),
      static_cast<unsigned long long>(st.rma_ops),
      static_cast<unsigned long long>(st.per_rank_bytes));
  std::fflush(stdout);
}

OfiStats OfiConduit::stats() const {
  const auto get = [](const std::atomic<uint64_t>& a) {
    return a.load(std::memory_order_relaxed);
  };
  OfiStats s;
  s.requests_sent = get(counters_.requests_sent);
  s.replies_sent = get(counters_.replies_sent);
  s.credit_messages_sent = get(counters_.credit_messages_sent);
  s.injected = get(counters_.injected);
  s.credit_waits = get(counters_.credit_waits);
  s.nb_put_inject = get(counters_.nb_put_inject);
  s.nb_put_bounce = get(counters_.nb_put_bounce);
  s.nb_put_block = get(counters_.nb_put_block);

  // The footprint, from what Init allocated and the pools hold now.
  s.peers = peers_;
  s.connected_peers = connected_peers_;
  s.av_entries = av_entries_;
  uint64_t bytes = 0;
  for (const auto& b : rx_buffers_) bytes += sizeof(RxBuffer) + b->size;
  s.recv_buffers = rx_buffers_.size();
  for (const auto& pool : send_pool_) {
    if (pool != nullptr) s.send_buffers += pool->allocated();
  }
  bytes += s.send_buffers * (sizeof(SendBuffer) + max_message_);
  if (bbuf_pool_ != nullptr) s.bounce_buffers = bbuf_pool_->allocated();
  bytes += s.bounce_buffers * (sizeof(SendBuffer) + settings_.bbuf_size);
  if (rma_pool_ != nullptr) s.rma_ops = rma_pool_->allocated();
  bytes += s.rma_ops * sizeof(RmaOp);
  bytes += set_aside_.capacity() * sizeof(SetAsideMessage);
  bytes += lanes_.size() * sizeof(Lane);
  // One entry per rank: addresses (both endpoints), transmit-context
  // counts, segments, each lane's flush marks (per endpoint), and
  // am::Credits' state (one cache line per rank, am/credits.h).
  const uint64_t per_rank = 2 * sizeof(fi_addr_t) + sizeof(uint32_t) +
                            sizeof(RemoteSegment) +
                            lanes_.size() * kEndpoints * sizeof(uint8_t) + 64;
  s.per_rank_bytes = per_rank * size_;
  s.conduit_bytes = bytes + s.per_rank_bytes;
  return s;
}

// ---------------------------------------------------------------------------
// Progress.

bool OfiConduit::Interrupted() {
  if (closed_.load(std::memory_order_relaxed)) return true;
  if (!exit::InsideLibraryCall()) return false;
  abandoned_.store(true, std::memory_order_relaxed);
  return true;
}

int OfiConduit::Poll() {
  const exit::ConduitCall call;
  if (Interrupted()) return 0;
  peer_lost_.Check("ofi", rank_);
  // (One queue: one read, delivering both endpoints' messages.)
  int n = shared_cq_ ? 0 : (this->*paths_->drain_rx)(kReplyEp, kPollBudget);
  n += (this->*paths_->drain_rx)(kRequestEp, kPollBudget);
  if (lanes_.size() > 1) n += DrainLanes(MyLane());
  return n;
}

int OfiConduit::Progress(bool replies_only) {
  if (Interrupted()) return others_.Poll(replies_only);
  peer_lost_.Check("ofi", rank_);
  // (A transmit context's own queue holds no receives: a Reply's wait may
  // read it.)
  int n = 0;
  if (replies_only || !shared_cq_) {
    n += (this->*paths_->drain_rx)(kReplyEp, kPollBudget);
  }
  if (!replies_only) n += (this->*paths_->drain_rx)(kRequestEp, kPollBudget);
  if (lanes_.size() > 1) n += DrainLanes(MyLane());
  return n + others_.Poll(replies_only);
}

int OfiConduit::DrainLane(Lane& lane) {
  if (lane.cq == nullptr) return 0;
  int done = 0;
  for (;;) {
    fi_cq_entry e[kCqBatch];
    ssize_t n;
    {
      const InLibfabric in;
      std::unique_lock<std::mutex> lock(lane.mutex, std::try_to_lock);
      if (!lock.owns_lock()) return done;  // another thread is reading it
      n = fi_cq_read(lane.cq, e, kCqBatch);
    }
    if (n == -FI_EAGAIN) return done;
    if (n < 0) {
      if (n == -FI_EAVAIL) {
        CqError(lane.cq);
        continue;
      }
      FatalErrorF("ofi conduit: rank %u: fi_cq_read: %s", rank_, FiError(n));
    }
    for (ssize_t i = 0; i < n; ++i) {
      Complete(static_cast<TxContext*>(e[i].op_context));
    }
    done += static_cast<int>(n);
    if (n < kCqBatch) return done;
  }
}

int OfiConduit::DrainLanes(Lane& lane) {
  // The thread's own, and one other in turn: a context whose threads have
  // stopped sending still has its completions read.
  const uint32_t turn = lane_turn_.fetch_add(1, std::memory_order_relaxed);
  Lane& other = *lanes_[1 + turn % (lanes_.size() - 1)];
  return DrainLane(lane) + (&other != &lane ? DrainLane(other) : 0);
}

int OfiConduit::DrainAllLanes() {
  int n = 0;
  for (size_t k = 1; k < lanes_.size(); ++k) n += DrainLane(*lanes_[k]);
  return n;
}

void OfiConduit::CqError(fid_cq* cq) {
  fi_cq_err_entry err{};
  const ssize_t read = fi_cq_readerr(cq, &err, 0);
  // (PAR: another thread may have taken the entry since fi_cq_read.)
  if (read == -FI_EAGAIN) return;
  if (const ssize_t rc = read; rc <= 0) {
    FatalErrorF(
        "ofi conduit: rank %u: fi_cq_read: an error entry that "
        "fi_cq_readerr cannot read (%s)",
        rank_, FiError(rc));
  }
  const bool send = IsTransmit(err.flags);
  auto* ctx = static_cast<TxContext*>(err.op_context);
  // A failed RMA is never completed: its caller would take data that did
  // not move for data that did.
  const bool rma = send && ctx != nullptr && ctx->kind == TxContext::kRma;
  if (finishing_.load(std::memory_order_relaxed) || err.err == FI_ECANCELED) {
    // As the job ends (a peer or this rank closing), what fails is waited
    // for by nobody: a send's resources are released. (An RMA's waiter is
    // another thread, which the exiting one ends with the process.)
    if (send && !rma) Complete(ctx);
    return;
  }
  if (IsPeerGone(err.err)) {
    // A peer died or left while this rank still sent to it (or, sockets,
    // while a message from it was arriving). Its launcher ends the job
    // with that rank's exit code; this rank waits for that (bounded)
    // instead of ending the job first with a code of its own. What failed
    // is not reused (a send's buffer, a receive buffer): the provider's
    // state for it is unknown, and the job is ending.
    if (send && ctx != nullptr && ctx->kind == TxContext::kFlush) {
      Complete(ctx);
    }
    PeerLost(fi_strerror(err.err));
    return;
  }
  FatalErrorF("ofi conduit: rank %u: %s failed: %s (%s)", rank_,
              send ? "a send or RMA" : "a receive", fi_strerror(err.err),
              fi_cq_strerror(cq, err.prov_errno, err.err_data, nullptr, 0));
}

void OfiConduit::AfterFini(const char* call) {
  if (thread_safe_) {
    // Another thread is ending the process (the conduit is closed): this
    // one waits to be ended with it, as the exit's other threads do.
    // Completing would report data that never moved.
    for (;;) pause();
  }
  FatalErrorF("ofi conduit: %s after the conduit was finalized", call);
}

void OfiConduit::PeerLost(const char* why) {
  peer_lost_.Lost(absl::StrFormat("a send or RMA to a peer failed (%s)", why));
}

void OfiConduit::Complete(TxContext* ctx) {
  if (ctx->kind == TxContext::kFlush) {
    flush_pending_.fetch_sub(1, std::memory_order_acq_rel);
    return;
  }
  if (ctx->kind == TxContext::kSend) {
    auto* b = static_cast<SendBuffer*>(ctx);
    if (b->lane != nullptr) {
      b->lane->done.fetch_add(1, std::memory_order_release);
      b->lane = nullptr;
    }
    (b->pool == kEndpoints ? *bbuf_pool_ : *send_pool_[b->pool]).Put(b);
    return;
  }
  auto* op = static_cast<RmaOp*>(ctx);
  RmaOp* head = op->head;
  if (op->bbuf != nullptr) {
    bbuf_pool_->Put(op->bbuf);
    op->bbuf = nullptr;
  }
  const bool last =
      head->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1;
  if (last) {
    if (head->lc != nullptr) head->lc->Complete();
    head->rc->Complete();
  }
  if (op != head) rma_pool_->Put(op);
  if (last) rma_pool_->Put(head);
}

template <bool kCqData, bool kTagged>
int OfiConduit::DrainRx(Endpoint ep, int budget) {
  using Entry =
      std::conditional_t<kTagged, fi_cq_tagged_entry, fi_cq_data_entry>;
  fid_cq* const cq = cq_[ep];
  if (cq == nullptr) return 0;
  // With one queue for both endpoints (GASNET_OFI_SHARED_CQ), a drain for
  // the reply endpoint (a Reply's or a handler's wait) sets Requests
  // aside, and a drain for the request endpoint delivers them first.
  const bool set_requests_aside = shared_cq_ && ep == kReplyEp;
  std::mutex& mutex = rx_mutex_[shared_cq_ ? 0 : ep];
  int delivered = 0;
  if (shared_cq_ && !set_requests_aside &&
      has_set_aside_.load(std::memory_order_acquire)) {
    delivered += DeliverSetAside<kCqData, kTagged>();
  }
  while (delivered < budget) {
    Entry e[kCqBatch];
    ssize_t n;
    {
      // Under the lock, every buffer a completion points into is marked in
      // use before any thread can see a later completion release it.
      const InLibfabric in;
      std::unique_lock<std::mutex> lock(mutex, std::defer_lock);
      if (thread_safe_) lock.lock();
      n = fi_cq_read(cq, e, kCqBatch);
      for (ssize_t i = 0; i < n; ++i) {
        if (IsTransmit(e[i].flags)) continue;
        static_cast<RxBuffer*>(e[i].op_context)
            ->refs.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (n == -FI_EAGAIN) break;
    if (n < 0) {
      if (n == -FI_EAVAIL) {
        CqError(cq);
        continue;
      }
      FatalErrorF("ofi conduit: rank %u: fi_cq_read: %s", rank_, FiError(n));
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (IsTransmit(e[i].flags)) {
        Complete(static_cast<TxContext*>(e[i].op_context));
        continue;
      }
      auto* b = static_cast<RxBuffer*>(e[i].op_context);
      auto from = static_cast<Endpoint>(b->ep);
      const bool released =
          !settings_.multi_recv || (e[i].flags & FI_MULTI_RECV) != 0;
      if (released) b->refs.fetch_add(RxBuffer::kReleased);
      // A multi-receive buffer's release may come alone, with no message
      // (length 0); a tagged message may be empty (all in its tag).
      if ((e[i].flags & FI_RECV) != 0 &&
          (!settings_.multi_recv || e[i].len != 0)) {
        const auto* msg = settings_.multi_recv
                              ? static_cast<const unsigned char*>(e[i].buf)
                              : b->data.get();
        uint64_t tag = 0;
        if constexpr (kTagged) tag = e[i].tag;
        // One endpoint for both: the header says which.
        if (one_ep_) {
          const uint8_t flags = kTagged ? static_cast<uint8_t>(tag)
                                        : (e[i].len != 0 ? msg[0] : 0);
          from = (flags & kFlagRequest) != 0 ? kRequestEp : kReplyEp;
        }
        if (set_requests_aside && from == kRequestEp) {
          // Keeps its reference on the buffer until delivered.
          SetAside(SetAsideMessage{b, msg, e[i].len, e[i].data, tag});
          continue;
        }
        Deliver<kCqData, kTagged>(from, msg, e[i].len, e[i].data, tag);
        ++delivered;
      }
      if (b->refs.fetch_sub(1, std::memory_order_acq_rel) - 1 ==
          RxBuffer::kReleased) {
        RepostOrFatal(b);
      }
    }
    if (n < kCqBatch) break;
  }
  return delivered;
}

void OfiConduit::SetAside(const SetAsideMessage& m) {
  std::unique_lock<std::mutex> lock(set_aside_mutex_, std::defer_lock);
  if (thread_safe_) lock.lock();
  set_aside_.push_back(m);
  has_set_aside_.store(true, std::memory_order_release);
}

template <bool kCqData, bool kTagged>
int OfiConduit::DeliverSetAside() {
  std::vector<SetAsideMessage> now;
  {
    std::unique_lock<std::mutex> lock(set_aside_mutex_, std::defer_lock);
    if (thread_safe_) lock.lock();
    now.swap(set_aside_);
    set_aside_.reserve(now.capacity());
    has_set_aside_.store(false, std::memory_order_relaxed);
  }
  for (const SetAsideMessage& m : now) {
    Deliver<kCqData, kTagged>(kRequestEp, m.msg, m.len, m.data, m.tag);
    if (m.buffer->refs.fetch_sub(1, std::memory_order_acq_rel) - 1 ==
        RxBuffer::kReleased) {
      RepostOrFatal(m.buffer);
    }
  }
  return static_cast<int>(now.size());
}

template <bool kCqData, bool kTagged>
void OfiConduit::Deliver(Endpoint ep, const unsigned char* msg, size_t len,
                         uint64_t cq_data, uint64_t tag) {
  AmHeader h;
  if (!DecodeHeader<kCqData, kTagged>(msg, len, cq_data, tag, &h)) {
    FatalErrorF("ofi conduit: rank %u: a message of %zu bytes (tag 0x%x)",
                rank_, len, tag);
  }
  const uint32_t source = h.source;
  const auto category = static_cast<Category>(h.flags & 3);
  const bool is_request = (h.flags & kFlagRequest) != 0;
  const bool is_long = category == Category::kLong;
  const size_t args_end = ArgsEnd<kCqData, kTagged>(is_long, h.nargs);
  if (source >= size_ || h.nargs > am::kMaxArgs || args_end > len ||
      is_request != (ep == kRequestEp) || (h.flags & 3) == 3) {
    FatalErrorF(
        "ofi conduit: rank %u: a malformed message (%zu bytes, source %u, "
        "flags 0x%x, %u arguments)",
        rank_, len, source, h.flags, h.nargs);
  }
  if (h.credits != 0) credits_->Grant(source, h.credits);
  if ((h.flags & kFlagCreditsOnly) != 0) {
    if ((h.flags & kFlagHello) != 0) {
      hellos_received_.fetch_add(1, std::memory_order_relaxed);
    }
    return;
  }
  // A tagged Medium's length: what follows its arguments and padding.
  if constexpr (kTagged) {
    if (category == Category::kMedium && len > args_end) {
      h.len =
          static_cast<uint32_t>(len - std::min(len, PayloadOffset(args_end)));
    }
  }
  const uint64_t long_dest = h.long_dest;
  // The arguments, aligned (the message may sit anywhere in its buffer).
  uint32_t args[am::kMaxArgs];
  std::memcpy(args, msg + args_end - 4 * size_t{h.nargs}, 4 * size_t{h.nargs});

  core::Inbound in;
  in.source = source;
  in.category = category;
  in.is_request = is_request;
  in.handler = h.handler;
  in.nargs = h.nargs;
  in.args = args;
  in.len = h.len;
  const size_t payload_at = PayloadOffset(args_end);
  const bool inline_payload = category == Category::kMedium ||
                              (is_long && (h.flags & kFlagLongByRma) == 0);
  if (inline_payload && h.len != 0 && payload_at + h.len > len) {
    FatalErrorF(
        "ofi conduit: rank %u: a message of %zu bytes from rank %u claims "
        "%u payload bytes",
        rank_, len, source, h.len);
  }
  const unsigned char* payload = msg + payload_at;
  if (category == Category::kMedium) {
    in.payload = (reinterpret_cast<uintptr_t>(payload) & 7) == 0
                     ? const_cast<unsigned char*>(payload)
                     : AlignedCopy(payload, h.len, settings_.max_medium);
  } else if (is_long) {
    if (h.len != 0) {
      if (segment_size_ == 0 || long_dest < segment_base_ ||
          h.len > segment_size_ ||
          long_dest - segment_base_ > segment_size_ - h.len) {
        FatalErrorF(
            "ofi conduit: rank %u: a Long from rank %u to [%p, +%u) is "
            "outside this rank's segment [%p, +%zu)",
            rank_, source, reinterpret_cast<void*>(long_dest), h.len,
            reinterpret_cast<void*>(segment_base_), segment_size_);
      }
      if ((h.flags & kFlagLongByRma) == 0) {
        std::memcpy(reinterpret_cast<void*>(long_dest), payload, h.len);
      }
    }
    in.payload = reinterpret_cast<void*>(long_dest);
  }
  if (!is_request) {
    sink_.Deliver(in);
    return;
  }
  ReplyHandle reply{source, false};
  in.reply = &reply;
  sink_.Deliver(in);
  // No Reply went back: the Request's credit is owed, banked until the
  // slack is exceeded.
  if (!reply.replied && credits_->Bank(source)) SendCredits(source);
}

// ---------------------------------------------------------------------------
// Active Messages.

core::SendStatus OfiConduit::Request(Rank dest, const core::Outbound& m,
                                     bool immediate) {
  const exit::ConduitCall call;
  // From a signal handler that interrupted libfabric: the message cannot
  // go; the exit protocol falls back on its deadlines.
  if (Interrupted()) return SendStatus::kOk;
  if (dest >= size_) {
    FatalErrorF("ofi conduit: rank %u is not in the job (size %u)", dest,
                size_);
  }
  return (this->*paths_->send)(dest, nullptr, m, /*credits_only=*/false,
                               immediate);
}

core::SendStatus OfiConduit::Reply(void* reply, const core::Outbound& m,
                                   bool immediate) {
  const exit::ConduitCall call;
  if (Interrupted()) return SendStatus::kOk;
  auto* handle = static_cast<ReplyHandle*>(reply);
  return (this->*paths_->send)(handle->source, handle, m,
                               /*credits_only=*/false, immediate);
}

void OfiConduit::SendCredits(Rank dest) {
  core::Outbound m;
  ReplyHandle handle{dest, false};
  // Once the job is exiting, the peer may have finished and closed its
  // endpoints (its last Request to us is what this answers), and a
  // provider may then retry the connection forever (sockets does): the
  // credits are offered once, and banked again if they cannot go.
  const bool exiting = exit::ExitInProgress();
  if ((this->*paths_->send)(dest, &handle, m, /*credits_only=*/true,
                            /*immediate=*/exiting) == SendStatus::kOk) {
    counters_.credit_messages_sent.fetch_add(1, std::memory_order_relaxed);
  }
}

bool OfiConduit::TakeCredit(Rank dest, bool immediate) {
  return credits_->AcquireOrWait(dest, immediate, counters_.credit_waits, [&] {
    WaitRound([&] { return Progress(/*replies_only=*/false); });
  });
}

size_t OfiConduit::PayloadOffsetFor(bool is_long, unsigned nargs) const {
  const size_t args_end = tagged_    ? ArgsEnd<false, true>(is_long, nargs)
                          : cq_data_ ? ArgsEnd<true, false>(is_long, nargs)
                                     : ArgsEnd<false, false>(is_long, nargs);
  return PayloadOffset(args_end);
}

namespace {

// The checks every AM send makes.
void CheckOutbound(bool request, const core::Outbound& m, size_t max_medium,
                   size_t max_long) {
  if (m.nargs > am::kMaxArgs ||
      (m.category == Category::kMedium && m.len > max_medium) ||
      (m.category == Category::kLong && m.len > max_long)) {
    FatalErrorF(
        "ofi conduit: a %s of %u arguments and %zu payload bytes (at most %u "
        "arguments, Medium %zu, Long %zu bytes)",
        request ? "Request" : "Reply", m.nargs, m.len, am::kMaxArgs, max_medium,
        max_long);
  }
}

}  // namespace

template <bool kCqData, bool kTagged, bool kInject, bool kManual>
core::SendStatus OfiConduit::Send(Rank dest, ReplyHandle* reply,
                                  const core::Outbound& m, bool credits_only,
                                  bool immediate) {
  const bool request = reply == nullptr;
  const bool is_long = m.category == Category::kLong;
  CheckOutbound(request, m, settings_.max_medium, MaxLong());
  const Endpoint ep = request ? kRequestEp : kReplyEp;
  const bool replies_only = !request;
  const bool long_by_rma = is_long && m.len > settings_.max_medium;
  const size_t inline_len =
      (m.category == Category::kShort || long_by_rma) ? 0 : m.len;
  const size_t args_end = ArgsEnd<kCqData, kTagged>(is_long, m.nargs);
  const size_t payload_at = PayloadOffset(args_end);
  const size_t total = inline_len != 0 ? payload_at + inline_len : args_end;
  Lane& lane = MyLane();

  if (request && !TakeCredit(dest, immediate)) return SendStatus::kWouldBlock;
  // What to give back when an IMMEDIATE send ends up sending nothing.
  auto undo_credit = [&] {
    if (request) credits_->Grant(dest, 1);
  };

  // The payload travels on the message's own endpoint pair, so the header
  // that follows it arrives after it (FI_ORDER_SAW, required at Init) even
  // where a provider's delivery completion is only a transmit completion.
  if (long_by_rma && !WriteLongPayload(lane, ep, dest, m.payload, m.len,
                                       m.long_dest, immediate, replies_only)) {
    undo_credit();
    return SendStatus::kWouldBlock;
  }

  // Manual progress: no fi_inject, which has no completion for
  // FlushSends to count (fi_sendmsg with FI_INJECT | FI_COMPLETION would
  // have one, but udp;ofi_rxd in libfabric 1.17 crashes on it).
  const bool inject = kInject && !kManual && total <= am_inject_;
  unsigned char stack[kInject && !kManual ? kMaxInject : 1];
  unsigned char* out = stack;
  SendBuffer* buffer = nullptr;
  if (!inject) {
    if ((buffer = TakeSendBuffer(ep, immediate)) == nullptr) {
      undo_credit();
      return SendStatus::kWouldBlock;
    }
    out = buffer->data.get();
  }

  const uint32_t banked = credits_->TakeBanked(dest);
  uint8_t flags = 0;
  if (credits_only) flags |= kFlagCreditsOnly;
  if (long_by_rma) flags |= kFlagLongByRma;
  // A Reply returns its Request's credit, besides what was banked.
  const uint64_t tag = WriteHeader<kCqData, kTagged>(
      out, m, request, flags, banked + (request || credits_only ? 0 : 1),
      inline_len);
  if (inline_len != 0) std::memcpy(out + payload_at, m.payload, inline_len);
  if (!Transmit<kCqData, kTagged, kManual>(lane, ep, dest, out, total, tag,
                                           buffer, inject, immediate,
                                           replies_only)) {
    if (buffer != nullptr) send_pool_[ep]->Put(buffer);
    for (uint32_t i = 0; i < banked; ++i) credits_->Bank(dest);
    undo_credit();
    return SendStatus::kWouldBlock;
  }
  if (!credits_only) CountSent(reply);
  return SendStatus::kOk;
}

template <bool kCqData, bool kTagged>
uint64_t OfiConduit::WriteHeader(unsigned char* out, const core::Outbound& m,
                                 bool request, uint8_t flags, uint32_t credits,
                                 size_t inline_len) {
  AmHeader h;
  h.flags = static_cast<uint8_t>(static_cast<uint8_t>(m.category) & 3) |
            (request ? kFlagRequest : 0) | flags;
  h.handler = m.handler;
  h.nargs = m.nargs;
  h.credits = static_cast<uint16_t>(std::min<uint32_t>(credits, 0xffff));
  h.len = static_cast<uint32_t>(m.len);
  h.source = rank_;
  h.long_dest = m.long_dest;
  uint64_t tag;
  const bool is_long = m.category == Category::kLong;
  const size_t off = EncodeHeader<kCqData, kTagged>(h, is_long, out, &tag);
  if (m.nargs != 0) std::memcpy(out + off, m.args, 4 * size_t{m.nargs});
  if (inline_len != 0) {
    const size_t args_end = ArgsEnd<kCqData, kTagged>(is_long, m.nargs);
    std::memset(out + args_end, 0, PayloadOffset(args_end) - args_end);
  }
  return tag;
}

OfiConduit::SendBuffer* OfiConduit::TakeSendBuffer(Endpoint ep,
                                                   bool immediate) {
  SendBuffer* buffer;
  while ((buffer = send_pool_[ep]->Get()) == nullptr) {
    if (immediate) return nullptr;
    WaitRound([&] { return Progress(/*replies_only=*/ep == kReplyEp); });
  }
  return buffer;
}

void OfiConduit::CountSent(ReplyHandle* reply) {
  if (reply == nullptr) {
    counters_.requests_sent.fetch_add(1, std::memory_order_relaxed);
  } else {
    reply->replied = true;
    counters_.replies_sent.fetch_add(1, std::memory_order_relaxed);
  }
}

// Negotiated payload. Reserve claims the Request's credit and a send
// buffer, and points the client at the payload's place in it; Commit
// writes the header in front and sends the buffer as it is.
// state[0]: the SendBuffer (0: core's default handles this one).

core::SendStatus OfiConduit::Reserve(core::Reservation& r, size_t max_payload,
                                     bool immediate) {
  const exit::ConduitCall call;
  r.state[0] = 0;
  if (r.category != Category::kMedium || Interrupted()) {
    return Conduit::Reserve(r, max_payload, immediate);
  }
  const bool request = r.is_request;
  const Rank dest =
      request ? r.dest : static_cast<ReplyHandle*>(r.reply)->source;
  if (request && dest >= size_) {
    FatalErrorF("ofi conduit: rank %u is not in the job (size %u)", dest,
                size_);
  }
  if (request && !TakeCredit(dest, immediate)) return SendStatus::kWouldBlock;
  SendBuffer* const buffer =
      TakeSendBuffer(request ? kRequestEp : kReplyEp, immediate);
  if (buffer == nullptr) {
    if (request) credits_->Grant(dest, 1);
    return SendStatus::kWouldBlock;
  }
  r.state[0] = reinterpret_cast<uintptr_t>(buffer);
  r.buffer = buffer->data.get() + PayloadOffsetFor(false, r.nargs);
  r.capacity = std::min(max_payload, settings_.max_medium);
  return SendStatus::kOk;
}

void OfiConduit::Commit(core::Reservation& r, const core::Outbound& m) {
  const exit::ConduitCall call;
  if (r.state[0] == 0) {
    Conduit::Commit(r, m);
    return;
  }
  (this->*paths_->commit)(r, m);
}

void OfiConduit::Cancel(core::Reservation& r) {
  const exit::ConduitCall call;
  if (r.state[0] == 0) {
    Conduit::Cancel(r);
    return;
  }
  auto* buffer = reinterpret_cast<SendBuffer*>(r.state[0]);
  send_pool_[r.is_request ? kRequestEp : kReplyEp]->Put(buffer);
  if (r.is_request) credits_->Grant(r.dest, 1);
  r.state[0] = 0;
}

template <bool kCqData, bool kTagged, bool kInject, bool kManual>
void OfiConduit::CommitInPlace(core::Reservation& r, const core::Outbound& m) {
  const bool request = r.is_request;
  auto* reply = static_cast<ReplyHandle*>(r.reply);
  const Rank dest = request ? r.dest : reply->source;
  CheckOutbound(request, m, settings_.max_medium, MaxLong());
  if (m.len > r.capacity || m.nargs != r.nargs) {
    FatalErrorF(
        "ofi conduit: a negotiated-payload Medium committed with %zu bytes "
        "and %u arguments, reserved for at most %zu bytes and %u arguments",
        m.len, m.nargs, r.capacity, r.nargs);
  }
  auto* buffer = reinterpret_cast<SendBuffer*>(r.state[0]);
  r.state[0] = 0;
  const Endpoint ep = request ? kRequestEp : kReplyEp;
  unsigned char* out = buffer->data.get();
  const size_t args_end = ArgsEnd<kCqData, kTagged>(false, m.nargs);
  const size_t payload_at = PayloadOffset(args_end);
  // The client wrote the payload in place (m.payload is r.buffer).
  const size_t total = m.len != 0 ? payload_at + m.len : args_end;

  const uint32_t banked = credits_->TakeBanked(dest);
  const uint64_t tag = WriteHeader<kCqData, kTagged>(
      out, m, request, 0, banked + (request ? 0 : 1), m.len);
  const bool inject = kInject && !kManual && total <= am_inject_;
  Transmit<kCqData, kTagged, kManual>(MyLane(), ep, dest, out, total, tag,
                                      buffer, inject, /*immediate=*/false,
                                      /*replies_only=*/!request);
  CountSent(request ? nullptr : reply);
}

template <bool kCqData, bool kTagged, bool kManual>
bool OfiConduit::Transmit(Lane& lane, Endpoint ep, Rank dest, const void* msg,
                          size_t len, uint64_t tag, SendBuffer* buffer,
                          bool inject, bool immediate, bool replies_only) {
  const fi_addr_t to = addresses_[2 * static_cast<size_t>(dest) + ep];
  fid_ep* from = lane.ep[ep];
  if constexpr (kManual) {
    // Never injected (see Send): the completion counts the send.
    buffer->lane = &lane;
  }
  for (;;) {
    ssize_t rc;
    {
      const InLibfabric in;
      if (inject) {
        if constexpr (kTagged) {
          rc = kCqData ? fi_tinjectdata(from, msg, len, rank_, to, tag)
                       : fi_tinject(from, msg, len, to, tag);
        } else {
          rc = kCqData ? fi_injectdata(from, msg, len, rank_, to)
                       : fi_inject(from, msg, len, to);
        }
      } else if constexpr (kManual) {
        // FI_INJECT_COMPLETE: a completion that does not wait for the
        // peer. sockets defaults to transmit completion, which waits for
        // the peer's acknowledgement -- and a peer that has left the
        // barrier and computes never sends it (FlushSends hung so); with
        // FI_INJECT_COMPLETE sockets still completes a send only once its
        // bytes are written to the socket.
        iovec iov{const_cast<void*>(msg), len};
        const uint64_t flags = FI_COMPLETION | FI_INJECT_COMPLETE |
                               (kCqData ? FI_REMOTE_CQ_DATA : uint64_t{0});
        if constexpr (kTagged) {
          fi_msg_tagged t{};
          t.msg_iov = &iov;
          t.iov_count = 1;
          t.addr = to;
          t.tag = tag;
          t.context = &buffer->fi;
          t.data = rank_;
          rc = fi_tsendmsg(from, &t, flags);
        } else {
          fi_msg t{};
          t.msg_iov = &iov;
          t.iov_count = 1;
          t.addr = to;
          t.context = &buffer->fi;
          t.data = rank_;
          rc = fi_sendmsg(from, &t, flags);
        }
      } else {
        if constexpr (kTagged) {
          rc = kCqData
                   ? fi_tsenddata(from, msg, len, nullptr, rank_, to, tag,
                                  &buffer->fi)
                   : fi_tsend(from, msg, len, nullptr, to, tag, &buffer->fi);
        } else {
          rc = kCqData ? fi_senddata(from, msg, len, nullptr, rank_, to,
                                     &buffer->fi)
                       : fi_send(from, msg, len, nullptr, to, &buffer->fi);
        }
      }
    }
    if (rc == 0) {
      if (inject) {
        counters_.injected.fetch_add(1, std::memory_order_relaxed);
        if (buffer != nullptr) send_pool_[ep]->Put(buffer);
      }
      lane.sent.fetch_add(1, std::memory_order_relaxed);
      std::atomic<uint8_t>& mark = lane.unflushed[ep][dest];
      if (mark.load(std::memory_order_relaxed) == 0) {
        mark.store(1, std::memory_order_relaxed);
      }
      return true;
    }
    if (!NotYet(rc, dest)) {
      FatalErrorF("ofi conduit: rank %u: %s of %zu bytes to rank %u: %s", rank_,
                  inject ? "fi_inject" : "fi_send", len, dest, FiError(rc));
    }
    if (immediate) return false;
    WaitRound([&] { return Progress(replies_only); });
  }
}

bool OfiConduit::NotYet(ssize_t rc, Rank peer) {
  if (rc == -FI_EAGAIN) return true;
  if (rc != -FI_ENOENT && rc != -FI_ECONNREFUSED) return false;
  // The sockets provider reports a connection it could not make yet (the
  // peer's listener busy on a loaded host) as ENOENT: a retry makes it.
  // Bounded, so a peer that is really gone is still an error.
  const int64_t now = absl::ToUnixNanos(absl::Now());
  int64_t expected = 0;
  const int64_t deadline = now + absl::ToInt64Nanoseconds(kConnectRetryFor);
  if (connect_deadline_ns_.compare_exchange_strong(expected, deadline)) {
    return true;
  }
  return now < expected;
}

// ---------------------------------------------------------------------------
// RMA.

absl::Status OfiConduit::AttachSegment(void* base, size_t size) {
  RemoteSegment mine;
  if (base != nullptr && size != 0) {
    const uint64_t access =
        FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    // RMA reaches both endpoints (Puts and Gets, and a Reply's Long
    // payload, the reply endpoint; a Request's Long payload the request
    // endpoint, ahead of its header). With FI_MR_ENDPOINT a registration
    // serves one endpoint, so there is one per endpoint; otherwise one
    // serves the domain. Without FI_MR_PROV_KEY the keys are ours to
    // choose (unique within the domain).
    const bool per_endpoint = mr_endpoint_ && !one_ep_;
    const int registrations = per_endpoint ? kEndpoints : 1;
    for (int e = 0; e < registrations; ++e) {
      const uint64_t requested_key = prov_key_ ? 0 : 0x6765 + e;
      if (int rc = fi_mr_reg(domain_, base, size, access, 0, requested_key, 0,
                             &segment_mr_[e], nullptr);
          rc != 0) {
        return absl::InternalError(
            absl::StrFormat("fi_mr_reg of the segment [%p, +%zu): %s", base,
                            size, FiError(rc)));
      }
      if (mr_endpoint_) {
        int rc = fi_mr_bind(segment_mr_[e], &ep_[e]->fid, 0);
        if (rc == 0) rc = fi_mr_enable(segment_mr_[e]);
        if (rc != 0) {
          return absl::InternalError(absl::StrFormat(
              "binding the segment's registration to the endpoint "
              "(FI_MR_ENDPOINT): %s",
              FiError(rc)));
        }
      }
    }
    mine.base = reinterpret_cast<uint64_t>(base);
    mine.size = size;
    for (int e = 0; e < kEndpoints; ++e) {
      mine.key[e] = fi_mr_key(segment_mr_[per_endpoint ? e : 0]);
      if (mine.key[e] == FI_KEY_NOTAVAIL) {
        return absl::InternalError("fi_mr_key: no key for the segment");
      }
    }
    segment_base_ = reinterpret_cast<uintptr_t>(base);
    segment_size_ = size;
  }
  std::vector<RemoteSegment> all(size_);
  bootstrap_->Allgather(&mine, sizeof mine, all.data());
  segments_ = std::move(all);
  return absl::OkStatus();
}

const OfiConduit::RemoteSegment& OfiConduit::CheckRemote(const char* call,
                                                         Rank rank,
                                                         const void* address,
                                                         size_t len) const {
  if (rank >= segments_.size()) {
    FatalErrorF(
        "ofi conduit: %s: rank %u has no registered segment (job of %u; "
        "segments attached: %s)",
        call, rank, size_, segments_.empty() ? "no" : "yes");
  }
  const RemoteSegment& s = segments_[rank];
  const auto a = reinterpret_cast<uint64_t>(address);
  if (s.size == 0 || a < s.base || len > s.size || a - s.base > s.size - len) {
    FatalErrorF(
        "ofi conduit: %s: [%p, +%zu) is outside rank %u's segment [%p, "
        "+%zu)",
        call, address, len, rank, reinterpret_cast<void*>(s.base),
        static_cast<size_t>(s.size));
  }
  return s;
}

uint64_t OfiConduit::RemoteAddress(const RemoteSegment& s,
                                   const void* address) const {
  const auto a = reinterpret_cast<uint64_t>(address);
  return virt_addr_ ? a : a - s.base;
}

bool OfiConduit::PostWrite(Lane& lane, Endpoint ep, Rank rank, const void* src,
                           size_t len, uint64_t raddr, const RemoteSegment& s,
                           RmaOp* op, uint64_t flags) {
  const uint64_t key = s.key[ep];
  iovec iov{const_cast<void*>(src), len};
  fi_rma_iov rma{raddr, len, key};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = addresses_[2 * static_cast<size_t>(rank) + ep];
  msg.rma_iov = &rma;
  msg.rma_iov_count = 1;
  msg.context = &op->fi;
  // Delivery completion: the completion means the data is at the target,
  // which is what `rc` (and a Long's handler) needs.
  const InLibfabric in;
  const ssize_t rc = fi_writemsg(lane.ep[ep], &msg,
                                 flags | FI_COMPLETION | FI_DELIVERY_COMPLETE);
  if (rc == 0) return true;
  if (!NotYet(rc, rank)) {
    FatalErrorF("ofi conduit: rank %u: fi_writemsg of %zu bytes to rank %u: %s",
                rank_, len, rank, FiError(rc));
  }
  return false;
}

bool OfiConduit::PostRead(Lane& lane, Rank rank, void* dest, size_t len,
                          uint64_t raddr, const RemoteSegment& s, RmaOp* op) {
  const uint64_t key = s.key[kRmaEp];
  iovec iov{dest, len};
  fi_rma_iov rma{raddr, len, key};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = addresses_[2 * static_cast<size_t>(rank) + kRmaEp];
  msg.rma_iov = &rma;
  msg.rma_iov_count = 1;
  msg.context = &op->fi;
  const InLibfabric in;
  const ssize_t rc = fi_readmsg(lane.ep[kRmaEp], &msg, FI_COMPLETION);
  if (rc == 0) return true;
  if (!NotYet(rc, rank)) {
    FatalErrorF(
        "ofi conduit: rank %u: fi_readmsg of %zu bytes from rank %u: %s", rank_,
        len, rank, FiError(rc));
  }
  return false;
}

template <bool kManual>
void OfiConduit::RmaPosted(Lane& lane) {
  // With automatic progress the provider moves the data itself; the
  // completions are read by whoever waits for them.
  if constexpr (kManual) {
    const uint64_t n = rma_started_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n % static_cast<uint64_t>(settings_.rma_poll_freq) == 0) {
      (this->*paths_->drain_rx)(kRmaEp, kCqBatch);
      if (lane.cq != nullptr) DrainLane(lane);
    }
  }
}

namespace {

// Gets an object from `get`, waiting with `progress` while there is none.
// null: `immediate` and none was free.
// StartChunks' `prepare` for operations that need nothing per chunk.
constexpr auto NothingToPrepare = [](auto*, size_t, size_t, bool, auto) {
  return true;
};

template <typename Get, typename Progress>
auto WaitFor(Get get, bool immediate, bool polite, Progress progress)
    -> decltype(get()) {
  PoliteSpinWait spin(polite);
  for (;;) {
    if (auto* t = get(); t != nullptr) return t;
    if (immediate) return nullptr;
    if (progress() == 0) spin.Pause();
  }
}

}  // namespace

template <typename Prepare, typename Post>
bool OfiConduit::StartChunks(Lane& lane, size_t len, size_t chunk,
                             bool immediate, bool replies_only,
                             rma::Counter& rc, rma::Counter* lc,
                             Prepare prepare, Post post) {
  const uint64_t chunks = (len + chunk - 1) / chunk;
  auto progress = [this, replies_only] { return Progress(replies_only); };
  RmaOp* head = nullptr;
  PoliteSpinWait spin(polite_);
  for (uint64_t i = 0; i < chunks; ++i) {
    // Only the first chunk may be refused: then nothing was started.
    const bool may_refuse = immediate && i == 0;
    const size_t offset = i * chunk;
    const size_t n = std::min(chunk, len - offset);
    RmaOp* op = WaitFor([this] { return rma_pool_->Get(); }, may_refuse,
                        polite_, progress);
    if (op == nullptr) return false;
    if (i == 0) {
      head = op;
      head->remaining.store(chunks, std::memory_order_relaxed);
      head->rc = &rc;
      head->lc = lc;
    }
    op->head = head;
    op->bbuf = nullptr;
    if (!prepare(op, offset, n, may_refuse, progress)) {
      rma_pool_->Put(op);
      return false;
    }
    while (!post(op, offset, n)) {
      if (may_refuse) {
        if (op->bbuf != nullptr) bbuf_pool_->Put(op->bbuf);
        rma_pool_->Put(op);
        return false;
      }
      if (progress() == 0) spin.Pause();
    }
    (this->*paths_->rma_posted)(lane);
  }
  return true;
}

bool OfiConduit::Put(Rank rank, void* dest, const void* src, size_t len,
                     bool immediate, rma::Counter& rc, rma::Counter* lc) {
  const exit::ConduitCall call;
  if (closed_.load(std::memory_order_relaxed)) AfterFini("Put");
  if (Interrupted()) {
    FatalError(
        "ofi conduit: RMA from a signal handler that interrupted libfabric");
  }
  const RemoteSegment& s = CheckRemote("Put", rank, dest, len);
  Lane& lane = MyLane();
  if (len == 0) {
    if (lc != nullptr) lc->Complete();
    rc.Complete();
    return true;
  }
  // The non-bulk policy, when the source must be reusable on return.
  enum { kDirect, kInject, kBounce, kBlock } path = kDirect;
  if (lc == nullptr) {
    path = len <= rma_inject_                ? kInject
           : len <= settings_.bbuf_threshold ? kBounce
                                             : kBlock;
  }
  rma::Counter local;
  if (path == kBlock) {
    local.Start(1);
    lc = &local;
  }
  const auto* from = static_cast<const unsigned char*>(src);
  const uint64_t raddr = RemoteAddress(s, dest);
  const uint64_t flags = path == kInject ? FI_INJECT : 0;
  // A bounce buffer per chunk: the source is copied, so it may be reused.
  auto bounce = [this, path, from](RmaOp* op, size_t offset, size_t n,
                                   bool may_refuse, auto progress) {
    if (path != kBounce) return true;
    op->bbuf = WaitFor([this] { return bbuf_pool_->Get(); }, may_refuse,
                       polite_, progress);
    if (op->bbuf == nullptr) return false;
    std::memcpy(op->bbuf->data.get(), from + offset, n);
    return true;
  };
  auto write = [&](RmaOp* op, size_t offset, size_t n) {
    const void* source =
        op->bbuf != nullptr ? op->bbuf->data.get() : from + offset;
    return PostWrite(lane, kRmaEp, rank, source, n, raddr + offset, s, op,
                     flags);
  };
  if (!StartChunks(lane, len, path == kBounce ? settings_.bbuf_size : max_rma_,
                   immediate, /*replies_only=*/false, rc, lc, bounce, write)) {
    return false;
  }
  switch (path) {
    case kInject:
      counters_.nb_put_inject.fetch_add(1, std::memory_order_relaxed);
      break;
    case kBounce:
      counters_.nb_put_bounce.fetch_add(1, std::memory_order_relaxed);
      break;
    case kBlock:
      counters_.nb_put_block.fetch_add(1, std::memory_order_relaxed);
      while (!local.Done()) {
        WaitRound([&] { return Progress(/*replies_only=*/false); });
      }
      break;
    case kDirect:
      break;
  }
  return true;
}

bool OfiConduit::Get(void* dest, Rank rank, const void* src, size_t len,
                     bool immediate, rma::Counter& rc) {
  const exit::ConduitCall call;
  if (closed_.load(std::memory_order_relaxed)) AfterFini("Get");
  if (Interrupted()) {
    FatalError(
        "ofi conduit: RMA from a signal handler that interrupted libfabric");
  }
  const RemoteSegment& s = CheckRemote("Get", rank, src, len);
  if (len == 0) {
    rc.Complete();
    return true;
  }
  auto* to = static_cast<unsigned char*>(dest);
  const uint64_t raddr = RemoteAddress(s, src);
  Lane& lane = MyLane();
  return StartChunks(
      lane, len, max_rma_, immediate, /*replies_only=*/false, rc, nullptr,
      NothingToPrepare, [&](RmaOp* op, size_t offset, size_t n) {
        return PostRead(lane, rank, to + offset, n, raddr + offset, s, op);
      });
}

bool OfiConduit::WriteLongPayload(Lane& lane, Endpoint ep, Rank dest,
                                  const void* src, size_t len,
                                  uint64_t long_dest, bool immediate,
                                  bool replies_only) {
  const void* to = reinterpret_cast<const void*>(long_dest);
  const RemoteSegment& s = CheckRemote("a Long's payload", dest, to, len);
  rma::Counter done;
  done.Start(1);
  const auto* from = static_cast<const unsigned char*>(src);
  const uint64_t raddr = RemoteAddress(s, to);
  if (!StartChunks(lane, len, max_rma_, immediate, replies_only, done, nullptr,
                   NothingToPrepare, [&](RmaOp* op, size_t offset, size_t n) {
                     return PostWrite(lane, ep, dest, from + offset, n,
                                      raddr + offset, s, op, 0);
                   })) {
    return false;
  }
  while (!done.Done()) {
    WaitRound([&] { return Progress(replies_only); });
  }
  return true;
}

}  // namespace gexrt::ofi

// ---------------------------------------------------------------------------

namespace gexrt {

std::unique_ptr<core::Conduit> core::CreateConduit() {
  return std::make_unique<ofi::OfiConduit>();
}

}  // namespace gexrt
