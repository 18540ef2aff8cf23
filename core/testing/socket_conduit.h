// The socket conduit: a test-only Conduit whose ranks are processes (or,
// in a unit test, objects) on this host, reached over AF_UNIX datagram
// sockets. It exists so that everything core/ does for ranks outside the
// supernode (the routed path, replies by origin, the RMA ladder's RDMA
// rung, IMMEDIATE on a full network, the exit over a conduit) is tested on
// one host before any network library is involved (see README.md).
//
// Each rank has two nonblocking sockets, autobound to abstract addresses
// and exchanged over the bootstrap in Init: one for requests (AM Requests,
// RDMA Put data and Get requests) and one for replies (AM Replies, Put
// acknowledgements, Get data). A message is one datagram: a Header, the
// arguments, the payload. Flow control is the kernel's: a send to a socket
// whose queue is full fails with EAGAIN; an IMMEDIATE send then returns
// kWouldBlock, any other waits, polling its own sockets and the rest of the
// rank (InitArgs::others: PSHM): a Request all of them, a Reply, and
// anything sent while a request is handled, only replies (whose handlers
// never send), so ranks flooding each other cannot deadlock.
//
// A Long's payload is written by the receiver into its own segment at the
// destination the sender named (fatal, naming the range, when that is not
// inside the segment registered with AttachSegment) before the message is
// delivered with payload = that address.
//
// RDMA (unless GEX_TEST_CONDUIT_RDMA=0): Put sends the data in chunks of at
// most MaxLong() bytes to the target's request socket; the target writes
// each into its segment and acknowledges it to the initiator's reply
// socket; the last acknowledgement completes `rc`. `lc` is completed once
// the last chunk has been sent (the kernel has copied the source). Get
// sends one request per chunk; the target sends the bytes back and the
// initiator copies them to the destination; the last one completes `rc`.
//
// Threads (InitArgs::thread_safe): any thread may send and poll. Each
// thread receives into its own buffers and delivers without holding any
// lock, so a handler may reply (and, waiting, poll again) freely; a
// thread's nested poll skips the socket it is already delivering from.
// Counters are atomic.
#ifndef GEX_CORE_TESTING_SOCKET_CONDUIT_H_
#define GEX_CORE_TESTING_SOCKET_CONDUIT_H_

#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/conduit.h"

namespace gexrt::core::testing {

// What a SocketConduit has done, for tests (a snapshot).
struct SocketConduitStats {
  // Active Messages through this conduit (every category; internal ones,
  // such as the barrier's and the exit protocol's, included).
  uint64_t requests_sent = 0;
  uint64_t replies_sent = 0;
  uint64_t requests_received = 0;
  uint64_t replies_received = 0;
  // RDMA operations started (Put/Get calls that returned true), and the
  // chunks they sent.
  uint64_t rdma_puts = 0;
  uint64_t rdma_gets = 0;
  uint64_t rdma_chunks = 0;
  // Sends the kernel refused with EAGAIN/ENOBUFS (each try, waiting ones
  // included), and IMMEDIATE calls that returned kWouldBlock / false.
  uint64_t refused = 0;
  uint64_t would_block = 0;
};

class SocketConduit final : public Conduit {
 public:
  // The largest Medium or Long payload of one message, and of one RDMA
  // chunk (rma::Engine::kChunk must fit).
  static constexpr size_t kMaxPayload = 65536;

  // `rdma`: whether capabilities() offers Put/Get.
  explicit SocketConduit(bool rdma);
  // rdma unless GEX_TEST_CONDUIT_RDMA=0.
  SocketConduit();
  ~SocketConduit() override;
  SocketConduit(const SocketConduit&) = delete;
  SocketConduit& operator=(const SocketConduit&) = delete;

  // The instance core::CreateConduit() made in this process (null when
  // none: the conduit was not linked as the process's conduit).
  static SocketConduit* Created();
  static void SetCreated(SocketConduit* conduit);

  const char* name() const override { return "socket"; }
  Capabilities capabilities() const override;
  // Every rank must be on this host (the sockets are local).
  absl::Status CheckJob(const NodeMap& map) const override;
  absl::Status Init(const InitArgs& args) override;
  size_t MaxMedium() const override { return kMaxPayload; }
  size_t MaxLong() const override { return kMaxPayload; }
  SendStatus Request(Rank dest, const Outbound& m, bool immediate) override;
  SendStatus Reply(void* reply, const Outbound& m, bool immediate) override;
  int Poll() override;
  absl::Status AttachSegment(void* base, size_t size) override;
  bool Put(Rank rank, void* dest, const void* src, size_t len, bool immediate,
           rma::Counter& rc, rma::Counter* lc) override;
  bool Get(void* dest, Rank rank, const void* src, size_t len, bool immediate,
           rma::Counter& rc) override;
  void Fini() override;

  SocketConduitStats stats() const;
  Rank rank() const { return rank_; }

  // The datagram's header (public for the implementation's helpers).
  struct Header;
  enum class Kind : uint8_t;

 private:
  enum Channel : int { kRequests = 0, kReplies = 1, kChannels = 2 };
  struct Address {
    sockaddr_un addr;
    socklen_t len = 0;
  };
  // Where a rank's sockets are; a Request's reply handle points to its
  // source's.
  struct Peer {
    Address channel[kChannels];
  };
  struct RemoteSegment {
    uint64_t base = 0;
    uint64_t size = 0;
  };
  // An RDMA operation in flight (one per Put/Get call).
  struct Operation;

  // Sends one datagram to `dest`'s `to` socket from this rank's `from`
  // socket. Waiting (not `immediate`), polls this rank's requests too when
  // `from` is kRequests. false: `immediate` and the kernel refused it.
  bool Send(Rank dest, Channel to, Channel from, const Header& h,
            const uint32_t* args, const void* payload, size_t len,
            bool immediate);
  // Receives and handles up to `budget` datagrams from `channel`.
  int Drain(Channel channel, int budget);
  void Handle(unsigned char* datagram, size_t size);
  // [address, +len) in this rank's segment, where it is mapped (the
  // segment is this process's own memory); fatal naming `what` if not.
  unsigned char* InSegment(uint64_t address, size_t len, const char* what,
                           Rank source) const;
  void CheckRemote(const char* call, Rank rank, const void* address,
                   size_t len) const;
  SendStatus SendAm(Rank dest, bool request, const Outbound& m, bool immediate);

  bool rdma_;
  Rank rank_ = 0;
  Rank size_ = 0;
  bool polite_ = false;
  Sink sink_;
  OtherProgress others_;
  Bootstrap* bootstrap_ = nullptr;
  // Atomic: another thread of a PAR rank may be polling or sending while
  // one that exits runs Fini, which sets closed_ before it closes them;
  // what such a call then meets (EBADF, -1) ends it quietly.
  std::atomic<int> fd_[kChannels] = {-1, -1};
  std::atomic<bool> closed_{false};
  std::vector<Peer> peers_;
  std::vector<RemoteSegment> segments_;
  std::atomic<uintptr_t> segment_base_{0};
  std::atomic<size_t> segment_size_{0};

  struct Counters {
    std::atomic<uint64_t> requests_sent{0}, replies_sent{0},
        requests_received{0}, replies_received{0}, rdma_puts{0}, rdma_gets{0},
        rdma_chunks{0}, refused{0}, would_block{0};
  };
  Counters counters_;
};

}  // namespace gexrt::core::testing

#endif  // GEX_CORE_TESTING_SOCKET_CONDUIT_H_
