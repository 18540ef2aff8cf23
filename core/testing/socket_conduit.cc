#include "core/testing/socket_conduit.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "am/vocabulary.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "base/spin_wait.h"
#include "base/thread_scratch.h"
#include "exit/graceful_exit.h"
#include "exit/signals.h"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace gexrt::core::testing {

enum class SocketConduit::Kind : uint8_t {
  kRequest = 1,  // an Active Message Request
  kReply,        // an Active Message Reply
  kPutData,      // RDMA Put: a chunk for the target's segment
  kPutAck,       // RDMA Put: the chunk is there
  kGetRequest,   // RDMA Get: send `count` bytes at `address` back
  kGetData,      // RDMA Get: the bytes, for `local` on the initiator
};

struct SocketConduit::Header {
  Kind kind;
  uint8_t category;
  uint8_t handler;
  uint8_t nargs;
  uint32_t source;   // the sender's job rank
  uint32_t len;      // payload bytes after the arguments
  uint32_t count;    // kGetRequest: bytes asked for
  uint64_t address;  // a Long's destination; RDMA: the target's address
  uint64_t local;    // RDMA Get: the initiator's destination
  uint64_t cookie;   // RDMA: the initiator's Operation
};

struct SocketConduit::Operation {
  std::atomic<uint64_t> remaining;
  rma::Counter* rc;
};

namespace {

using Header = SocketConduit::Header;
using Kind = SocketConduit::Kind;

static_assert(sizeof(Header) == 40, "the header is packed by hand");

constexpr size_t kMaxDatagram = sizeof(Header) +
                                am::kMaxArgs * sizeof(uint32_t) +
                                SocketConduit::kMaxPayload;
// Datagrams one Drain takes at most, so that a flood cannot keep a poll
// from returning.
constexpr int kDrainBudget = 64;
// The socket buffer sizes asked for; at least two largest datagrams must
// fit (the kernel refuses a datagram larger than the send buffer).
constexpr int kWantBuffer = 4 << 20;

// An RDMA operation's happens-before runs from the initiating thread
// through the target process back to the thread that handles its last
// acknowledgement. ThreadSanitizer cannot see the socket half, so the edge
// is annotated on the Operation (as rma/engine.cc does on its counters).
#if defined(__SANITIZE_THREAD__)
inline void HandOff(void* p) { __tsan_release(p); }
inline void TakeOver(void* p) { __tsan_acquire(p); }
#else
inline void HandOff(void*) {}
inline void TakeOver(void*) {}
#endif

// Each thread receives into its own buffers (one per channel, allocated
// once) and knows which channel it is delivering from, so that a nested
// poll (a handler's Reply waiting for room) never reuses the buffer a
// message being delivered still points into. Trivially destructible
// (ThreadScratch): the exit's polls run in the main thread's exit handler,
// after its thread_local destructors.
struct ThreadState {
  ThreadScratch buffer[2];
  bool busy[2] = {false, false};
};
constinit thread_local ThreadState tl_state;

std::atomic<SocketConduit*> g_created{nullptr};

bool RdmaFromEnv() { return env::GetBool("GEX_TEST_CONDUIT_RDMA", true); }

// Both sockets' addresses as exchanged over the bootstrap.
struct WireAddresses {
  uint32_t len[2];
  char path[2][sizeof(sockaddr_un::sun_path)];
};

std::string Errno(int e) { return std::strerror(e); }

}  // namespace

SocketConduit::SocketConduit(bool rdma) : rdma_(rdma) {}
SocketConduit::SocketConduit() : SocketConduit(RdmaFromEnv()) {}

SocketConduit::~SocketConduit() { Fini(); }

SocketConduit* SocketConduit::Created() {
  return g_created.load(std::memory_order_acquire);
}

void SocketConduit::SetCreated(SocketConduit* conduit) {
  g_created.store(conduit, std::memory_order_release);
}

Capabilities SocketConduit::capabilities() const {
  Capabilities c;
  c.rdma_put = rdma_;
  c.rdma_get = rdma_;
  return c;
}

absl::Status SocketConduit::CheckJob(const NodeMap& map) const {
  if (map.host_count() == 1) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "the socket conduit (a test conduit) reaches other ranks through local "
      "sockets, so every rank must be on one host; this job has %u hosts",
      map.host_count()));
}

absl::Status SocketConduit::Init(const InitArgs& args) {
  if (args.bootstrap == nullptr || args.sink.deliver == nullptr) {
    return absl::InvalidArgumentError("socket conduit: no bootstrap or sink");
  }
  bootstrap_ = args.bootstrap;
  sink_ = args.sink;
  others_ = args.others;
  polite_ = args.polite;
  rank_ = bootstrap_->rank();
  size_ = bootstrap_->size();

  WireAddresses mine{};
  for (int c = 0; c < kChannels; ++c) {
    const int fd =
        socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      return absl::InternalError(
          absl::StrFormat("socket(AF_UNIX, SOCK_DGRAM): %s", Errno(errno)));
    }
    fd_[c] = fd;
    // Best effort (capped by net.core.wmem_max / rmem_max); checked below.
    const int want = kWantBuffer;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof want);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
    int have = 0;
    socklen_t have_len = sizeof have;
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &have, &have_len) != 0) {
      return absl::InternalError(
          absl::StrFormat("getsockopt(SO_SNDBUF): %s", Errno(errno)));
    }
    if (static_cast<size_t>(have) < 2 * kMaxDatagram) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the socket send buffer is %d bytes, fewer than two datagrams of "
          "%zu bytes (raise net.core.wmem_max)",
          have, kMaxDatagram));
    }
    // Autobind: the kernel picks a free abstract address.
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(sa_family_t)) != 0) {
      return absl::InternalError(
          absl::StrFormat("bind (autobind): %s", Errno(errno)));
    }
    socklen_t len = sizeof a;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return absl::InternalError(
          absl::StrFormat("getsockname: %s", Errno(errno)));
    }
    mine.len[c] = len;
    std::memcpy(mine.path[c], a.sun_path, sizeof a.sun_path);
  }

  std::vector<WireAddresses> all(size_);
  bootstrap_->Allgather(&mine, sizeof mine, all.data());
  peers_.assign(size_, Peer{});
  for (Rank r = 0; r < size_; ++r) {
    for (int c = 0; c < kChannels; ++c) {
      Address& a = peers_[r].channel[c];
      if (all[r].len[c] <= offsetof(sockaddr_un, sun_path) ||
          all[r].len[c] > sizeof(sockaddr_un)) {
        return absl::InternalError(absl::StrFormat(
            "rank %u sent a bad socket address (length %u)", r, all[r].len[c]));
      }
      a.addr = sockaddr_un{};
      a.addr.sun_family = AF_UNIX;
      std::memcpy(a.addr.sun_path, all[r].path[c], sizeof a.addr.sun_path);
      a.len = all[r].len[c];
    }
  }
  return absl::OkStatus();
}

absl::Status SocketConduit::AttachSegment(void* base, size_t size) {
  segment_base_.store(reinterpret_cast<uintptr_t>(base),
                      std::memory_order_relaxed);
  segment_size_.store(base == nullptr ? 0 : size, std::memory_order_release);
  // The "remote key" exchange: every rank learns every segment, so an RDMA
  // initiator checks its range before sending anything. Also makes this
  // call collective: no rank sends a Long before every rank registered.
  const RemoteSegment mine{reinterpret_cast<uint64_t>(base),
                           base == nullptr ? 0 : static_cast<uint64_t>(size)};
  std::vector<RemoteSegment> all(size_);
  bootstrap_->Allgather(&mine, sizeof mine, all.data());
  segments_ = std::move(all);
  return absl::OkStatus();
}

void SocketConduit::Fini() {
  closed_.store(true);
  for (std::atomic<int>& fd : fd_) {
    const int was = fd.exchange(-1);
    if (was >= 0) close(was);
  }
}

SocketConduitStats SocketConduit::stats() const {
  const auto get = [](const std::atomic<uint64_t>& a) {
    return a.load(std::memory_order_relaxed);
  };
  SocketConduitStats s;
  s.requests_sent = get(counters_.requests_sent);
  s.replies_sent = get(counters_.replies_sent);
  s.requests_received = get(counters_.requests_received);
  s.replies_received = get(counters_.replies_received);
  s.rdma_puts = get(counters_.rdma_puts);
  s.rdma_gets = get(counters_.rdma_gets);
  s.rdma_chunks = get(counters_.rdma_chunks);
  s.refused = get(counters_.refused);
  s.would_block = get(counters_.would_block);
  return s;
}

bool SocketConduit::Send(Rank dest, Channel to, Channel from, const Header& h,
                         const uint32_t* args, const void* payload, size_t len,
                         bool immediate) {
  if (dest >= size_) {
    FatalErrorF("socket conduit: rank %u is not in the job (size %u)", dest,
                size_);
  }
  const int fd = fd_[from].load(std::memory_order_relaxed);
  if (fd < 0) {
    // Another thread's exit closed the sockets: the job is ending.
    if (closed_.load() && exit::ExitInProgress()) return true;
    FatalErrorF("socket conduit: rank %u: a send to rank %u after Fini", rank_,
                dest);
  }
  iovec iov[3];
  int n = 0;
  iov[n++] = {const_cast<Header*>(&h), sizeof h};
  if (h.nargs != 0) {
    iov[n++] = {const_cast<uint32_t*>(args), h.nargs * sizeof(uint32_t)};
  }
  if (len != 0) iov[n++] = {const_cast<void*>(payload), len};
  const size_t total = sizeof h + h.nargs * sizeof(uint32_t) + len;
  const Address& a = peers_[dest].channel[to];
  msghdr msg{};
  msg.msg_name = const_cast<sockaddr_un*>(&a.addr);
  msg.msg_namelen = a.len;
  msg.msg_iov = iov;
  msg.msg_iovlen = n;
  PoliteSpinWait spin(polite_);
  absl::Time refused_since = absl::InfiniteFuture();
  for (;;) {
    const ssize_t sent = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent >= 0) {
      if (static_cast<size_t>(sent) != total) {
        FatalErrorF("socket conduit: rank %u: sent %zd of %zu bytes to rank %u",
                    rank_, sent, total, dest);
      }
      return true;
    }
    const int e = errno;
    if (e == EINTR) continue;
    if (e == EBADF && closed_.load()) return true;  // Fini, as above
    if (e == ECONNREFUSED) {
      // The peer's socket is closed: it has left (exited, or died). Once
      // this rank is exiting too, nothing waits for the datagram. Before
      // that, the exit is on its way (the peer's exit request, or the
      // launcher's SIGTERM for a dead one): keep polling for it, bounded.
      if (exit::ExitInProgress()) return true;
      if (refused_since == absl::InfiniteFuture()) {
        refused_since = absl::Now();
      } else if (absl::Now() - refused_since > absl::Seconds(60)) {
        FatalErrorF(
            "socket conduit: rank %u: rank %u has refused every datagram for "
            "60 s (its socket is closed)",
            rank_, dest);
      }
    } else if (e != EAGAIN && e != EWOULDBLOCK && e != ENOBUFS) {
      FatalErrorF("socket conduit: rank %u: sending to rank %u: %s", rank_,
                  dest, Errno(e));
    }
    counters_.refused.fetch_add(1, std::memory_order_relaxed);
    if (immediate) {
      counters_.would_block.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    // Wait, polling: a Request both sockets and everything else of this
    // rank, anything else (sent while a request is being handled) only
    // replies, whose handlers never send. Each round is a point where an
    // end signal that waited may run the exit (exit/signals.h): every
    // datagram is whole, no receive is under way in this call.
    exit::AtWaitPoint();
    const bool replies_only = from != kRequests;
    int progress = Drain(kReplies, kDrainBudget);
    if (!replies_only) progress += Drain(kRequests, kDrainBudget);
    progress += others_.Poll(replies_only);
    if (progress == 0) spin.Pause();
  }
}

SendStatus SocketConduit::SendAm(Rank dest, bool request, const Outbound& m,
                                 bool immediate) {
  if (m.nargs > am::kMaxArgs || m.len > kMaxPayload) {
    FatalErrorF(
        "socket conduit: a %s of %u arguments and %zu bytes (at most %u and "
        "%zu)",
        request ? "Request" : "Reply", m.nargs, m.len, am::kMaxArgs,
        kMaxPayload);
  }
  Header h{};
  h.kind = request ? Kind::kRequest : Kind::kReply;
  h.category = static_cast<uint8_t>(m.category);
  h.handler = m.handler;
  h.nargs = m.nargs;
  h.source = rank_;
  const bool has_payload = m.category != Category::kShort;
  h.len = has_payload ? static_cast<uint32_t>(m.len) : 0;
  h.address = m.category == Category::kLong ? m.long_dest : 0;
  const Channel channel = request ? kRequests : kReplies;
  if (!Send(dest, channel, channel, h, m.args, m.payload, h.len, immediate)) {
    return SendStatus::kWouldBlock;
  }
  (request ? counters_.requests_sent : counters_.replies_sent)
      .fetch_add(1, std::memory_order_relaxed);
  return SendStatus::kOk;
}

SendStatus SocketConduit::Request(Rank dest, const Outbound& m,
                                  bool immediate) {
  const exit::ConduitCall call;  // exit/signals.h
  return SendAm(dest, /*request=*/true, m, immediate);
}

SendStatus SocketConduit::Reply(void* reply, const Outbound& m,
                                bool immediate) {
  const exit::ConduitCall call;  // exit/signals.h
  const Peer* peer = static_cast<const Peer*>(reply);
  if (peer < peers_.data() || peer >= peers_.data() + peers_.size()) {
    FatalErrorF("socket conduit: rank %u: %p is not a reply handle of mine",
                rank_, reply);
  }
  return SendAm(static_cast<Rank>(peer - peers_.data()), /*request=*/false, m,
                immediate);
}

int SocketConduit::Poll() {
  const exit::ConduitCall call;  // exit/signals.h
  return Drain(kReplies, kDrainBudget) + Drain(kRequests, kDrainBudget);
}

int SocketConduit::Drain(Channel channel, int budget) {
  ThreadState& t = tl_state;
  const int fd = fd_[channel].load(std::memory_order_relaxed);
  if (fd < 0 || t.busy[channel]) return 0;
  unsigned char* buffer = t.buffer[channel].Get(kMaxDatagram);
  t.busy[channel] = true;
  int handled = 0;
  while (handled < budget) {
    // MSG_TRUNC: the datagram's real length, to see an oversized one.
    const ssize_t got =
        recv(fd, buffer, kMaxDatagram, MSG_DONTWAIT | MSG_TRUNC);
    if (got < 0) {
      const int e = errno;
      if (e == EINTR) continue;
      if (e == EAGAIN || e == EWOULDBLOCK) break;
      t.busy[channel] = false;
      // Another thread's exit closed the socket under this poll.
      if (e == EBADF && closed_.load()) return handled;
      FatalErrorF("socket conduit: rank %u: recv: %s", rank_, Errno(e));
    }
    if (static_cast<size_t>(got) > kMaxDatagram) {
      FatalErrorF(
          "socket conduit: rank %u: a datagram of %zd bytes (at most %zu)",
          rank_, got, kMaxDatagram);
    }
    Handle(buffer, static_cast<size_t>(got));
    ++handled;
  }
  t.busy[channel] = false;
  return handled;
}

unsigned char* SocketConduit::InSegment(uint64_t address, size_t len,
                                        const char* what, Rank source) const {
  const size_t size = segment_size_.load(std::memory_order_acquire);
  const uintptr_t base = segment_base_.load(std::memory_order_relaxed);
  if (size == 0 || address < base || len > size ||
      address - base > size - len) {
    FatalErrorF(
        "socket conduit: rank %u: %s from rank %u to [%p, +%zu) is outside "
        "this rank's segment [%p, +%zu)",
        rank_, what, source, reinterpret_cast<void*>(address), len,
        reinterpret_cast<void*>(base), size);
  }
  return reinterpret_cast<unsigned char*>(address);
}

void SocketConduit::Handle(unsigned char* d, size_t size) {
  Header h;
  if (size < sizeof h) {
    FatalErrorF("socket conduit: rank %u: a datagram of %zu bytes", rank_,
                size);
  }
  std::memcpy(&h, d, sizeof h);
  const size_t args_bytes = h.nargs * sizeof(uint32_t);
  if (h.nargs > am::kMaxArgs || h.source >= size_ ||
      sizeof h + args_bytes + h.len != size) {
    FatalErrorF(
        "socket conduit: rank %u: a malformed datagram (%zu bytes, source %u, "
        "%u arguments, %u payload bytes)",
        rank_, size, h.source, h.nargs, h.len);
  }
  auto* args = reinterpret_cast<const uint32_t*>(d + sizeof h);
  unsigned char* payload = d + sizeof h + args_bytes;
  switch (h.kind) {
    case Kind::kRequest:
    case Kind::kReply: {
      Inbound in;
      in.source = h.source;
      in.category = static_cast<Category>(h.category);
      in.is_request = h.kind == Kind::kRequest;
      in.handler = h.handler;
      in.nargs = h.nargs;
      in.args = args;
      in.len = h.len;
      switch (in.category) {
        case Category::kShort:
          break;
        case Category::kMedium:
          in.payload = payload;
          break;
        case Category::kLong:
          if (h.len == 0) {
            in.payload = reinterpret_cast<void*>(h.address);
          } else {
            unsigned char* to = InSegment(
                h.address, h.len,
                in.is_request ? "a Long Request" : "a Long Reply", h.source);
            std::memcpy(to, payload, h.len);
            in.payload = to;
          }
          break;
        default:
          FatalErrorF("socket conduit: rank %u: category %u from rank %u",
                      rank_, h.category, h.source);
      }
      if (in.is_request) {
        in.reply = &peers_[h.source];
        counters_.requests_received.fetch_add(1, std::memory_order_relaxed);
      } else {
        counters_.replies_received.fetch_add(1, std::memory_order_relaxed);
      }
      sink_.Deliver(in);
      return;
    }
    case Kind::kPutData: {
      unsigned char* to = InSegment(h.address, h.len, "an RDMA Put", h.source);
      std::memcpy(to, payload, h.len);
      Header ack{};
      ack.kind = Kind::kPutAck;
      ack.source = rank_;
      ack.cookie = h.cookie;
      Send(h.source, kReplies, kReplies, ack, nullptr, nullptr, 0,
           /*immediate=*/false);
      return;
    }
    case Kind::kGetRequest: {
      const unsigned char* from =
          InSegment(h.address, h.count, "an RDMA Get", h.source);
      Header data{};
      data.kind = Kind::kGetData;
      data.source = rank_;
      data.len = h.count;
      data.local = h.local;
      data.cookie = h.cookie;
      Send(h.source, kReplies, kReplies, data, nullptr, from, h.count,
           /*immediate=*/false);
      return;
    }
    case Kind::kGetData:
      if (h.len != 0) {
        std::memcpy(reinterpret_cast<void*>(h.local), payload, h.len);
      }
      [[fallthrough]];
    case Kind::kPutAck: {
      auto* op = reinterpret_cast<Operation*>(h.cookie);
      TakeOver(op);
      if (op->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        op->rc->Complete();
        delete op;
      }
      return;
    }
  }
  FatalErrorF("socket conduit: rank %u: a datagram of kind %u from rank %u",
              rank_, static_cast<unsigned>(h.kind), h.source);
}

void SocketConduit::CheckRemote(const char* call, Rank rank,
                                const void* address, size_t len) const {
  const auto a = reinterpret_cast<uint64_t>(address);
  if (rank >= size_ || rank >= segments_.size()) {
    FatalErrorF(
        "socket conduit: %s: rank %u has no registered segment "
        "(job of %u)",
        call, rank, size_);
  }
  const RemoteSegment& s = segments_[rank];
  if (s.size == 0 || a < s.base || len > s.size || a - s.base > s.size - len) {
    FatalErrorF(
        "socket conduit: %s: [%p, +%zu) is outside rank %u's segment [%p, "
        "+%zu)",
        call, address, len, rank, reinterpret_cast<void*>(s.base),
        static_cast<size_t>(s.size));
  }
}

bool SocketConduit::Put(Rank rank, void* dest, const void* src, size_t len,
                        bool immediate, rma::Counter& rc, rma::Counter* lc) {
  const exit::ConduitCall call;  // exit/signals.h
  CheckRemote("Put", rank, dest, len);
  const uint64_t chunks = (len + kMaxPayload - 1) / kMaxPayload;
  if (chunks == 0) {
    rc.Complete();
    if (lc != nullptr) lc->Complete();
    counters_.rdma_puts.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  auto* op = new Operation{{chunks}, &rc};
  HandOff(op);
  const auto* from = static_cast<const unsigned char*>(src);
  const auto to = reinterpret_cast<uint64_t>(dest);
  for (uint64_t i = 0; i < chunks; ++i) {
    const size_t offset = i * kMaxPayload;
    Header h{};
    h.kind = Kind::kPutData;
    h.source = rank_;
    h.len = static_cast<uint32_t>(std::min(kMaxPayload, len - offset));
    h.address = to + offset;
    h.cookie = reinterpret_cast<uint64_t>(op);
    // Only the first chunk may be refused: then nothing was started. (After
    // the last send the operation may already be gone.)
    if (!Send(rank, kRequests, kRequests, h, nullptr, from + offset, h.len,
              immediate && i == 0)) {
      delete op;
      return false;
    }
    counters_.rdma_chunks.fetch_add(1, std::memory_order_relaxed);
  }
  counters_.rdma_puts.fetch_add(1, std::memory_order_relaxed);
  // The kernel has copied every chunk: the source may be reused.
  if (lc != nullptr) lc->Complete();
  return true;
}

bool SocketConduit::Get(void* dest, Rank rank, const void* src, size_t len,
                        bool immediate, rma::Counter& rc) {
  const exit::ConduitCall call;  // exit/signals.h
  CheckRemote("Get", rank, src, len);
  const uint64_t chunks = (len + kMaxPayload - 1) / kMaxPayload;
  if (chunks == 0) {
    rc.Complete();
    counters_.rdma_gets.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  auto* op = new Operation{{chunks}, &rc};
  HandOff(op);
  const auto from = reinterpret_cast<uint64_t>(src);
  const auto to = reinterpret_cast<uint64_t>(dest);
  for (uint64_t i = 0; i < chunks; ++i) {
    const size_t offset = i * kMaxPayload;
    Header h{};
    h.kind = Kind::kGetRequest;
    h.source = rank_;
    h.count = static_cast<uint32_t>(std::min(kMaxPayload, len - offset));
    h.address = from + offset;
    h.local = to + offset;
    h.cookie = reinterpret_cast<uint64_t>(op);
    if (!Send(rank, kRequests, kRequests, h, nullptr, nullptr, 0,
              immediate && i == 0)) {
      delete op;
      return false;
    }
    counters_.rdma_chunks.fetch_add(1, std::memory_order_relaxed);
  }
  counters_.rdma_gets.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace gexrt::core::testing
