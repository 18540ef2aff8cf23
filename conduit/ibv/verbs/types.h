// The value types of the narrow verbs interface (verbs.h): attributes,
// addressing, work requests, completions and async events.
//
// They mirror libibverbs' types closely enough that a reader of the verbs
// man pages recognises each field, but they are ours: small, with no
// pointers into a library, and the same for both implementations (the
// libibverbs one and the software device). Work requests and completions are
// plain structs that a caller fills on its stack; posting and polling copy
// them and never allocate.
#ifndef GEX_CONDUIT_IBV_VERBS_TYPES_H_
#define GEX_CONDUIT_IBV_VERBS_TYPES_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace gexrt::ibv::verbs {

class AddressHandle;
class CompletionQueue;
class SharedReceiveQueue;

// ---- devices and ports -------------------------------------------------

enum class PortState : uint8_t { kDown, kInit, kArmed, kActive, kActiveDefer };
enum class LinkLayer : uint8_t { kUnspecified, kInfiniBand, kEthernet };
// Which atomics are atomic with respect to each other (ibv_atomic_cap):
// none; those through this HCA (kHca, the usual answer); all, CPU included.
enum class AtomicCap : uint8_t { kNone, kHca, kGlobal };

// A 128-bit GID, in network byte order as on the wire.
struct Gid {
  std::array<uint8_t, 16> raw{};
  bool IsZero() const;
  friend bool operator==(const Gid&, const Gid&) = default;
};

// One entry of a device listing.
struct DeviceInfo {
  std::string name;        // "mlx5_0", "gexsoft0"
  uint64_t node_guid = 0;  // host byte order
  uint8_t num_ports = 0;
  bool software = false;  // the software device (not an HCA)
};

// What a device can do (ibv_query_device[_ex], plus the inline probe).
struct DeviceAttr {
  uint32_t max_qp = 0;
  uint32_t max_qp_wr = 0;  // per send or receive queue
  uint32_t max_sge = 0;    // per work request
  uint32_t max_cq = 0;
  uint32_t max_cqe = 0;  // per CQ
  uint32_t max_mr = 0;
  uint64_t max_mr_size = 0;
  uint32_t max_srq = 0;
  uint32_t max_srq_wr = 0;
  uint32_t max_qp_rd_atom = 0;       // incoming RDMA reads/atomics per QP
  uint32_t max_qp_init_rd_atom = 0;  // outgoing
  // The largest max_inline_data a QP creation accepts (libibverbs has no
  // attribute for it: the real implementation probes). 0: no inline sends.
  uint32_t max_inline_data = 0;
  AtomicCap atomic_cap = AtomicCap::kNone;
  bool odp_supported = false;  // on-demand paging for RC send/write/read
  // XRC (eXtended Reliable Connection) domains; the interface has no XRC
  // objects yet, so a conduit asked for XRC uses RC with an SRQ instead.
  bool xrc_supported = false;
  uint8_t phys_port_cnt = 0;
};

struct PortAttr {
  PortState state = PortState::kDown;
  uint32_t max_mtu = 0;     // bytes: 256 .. 4096
  uint32_t active_mtu = 0;  // bytes
  uint32_t max_msg_sz = 0;
  uint16_t lid = 0;
  uint16_t sm_lid = 0;
  uint8_t lmc = 0;
  LinkLayer link_layer = LinkLayer::kUnspecified;
  Gid gid;                      // GID index 0
  uint16_t pkey_table_len = 0;  // entries of the P_Key table (QueryPkey)
};

// Two P_Keys let their QPs talk when their 15-bit keys are equal and at
// least one of them has the full-membership bit (0x8000), as in IB.
inline constexpr uint16_t kPkeyFullMember = 0x8000;
inline constexpr bool PkeysMatch(uint16_t a, uint16_t b) {
  return ((a ^ b) & 0x7fff) == 0 && ((a | b) & kPkeyFullMember) != 0;
}

// ---- memory registration -------------------------------------------------

// Access flags of a registration and of a QP (what remote peers may do).
// As in verbs, remote write and remote atomic need local write.
enum Access : uint32_t {
  kAccessLocalWrite = 1u << 0,
  kAccessRemoteWrite = 1u << 1,
  kAccessRemoteRead = 1u << 2,
  kAccessRemoteAtomic = 1u << 3,
  kAccessOnDemand = 1u << 4,  // ODP; only where DeviceAttr::odp_supported
};

// ---- queue pairs -------------------------------------------------------

enum class QpType : uint8_t { kRc, kUd };
enum class QpState : uint8_t { kReset, kInit, kRtr, kRts, kSqd, kSqe, kError };

struct QpInitAttr {
  QpType type = QpType::kRc;
  CompletionQueue* send_cq = nullptr;
  CompletionQueue* recv_cq = nullptr;
  SharedReceiveQueue* srq = nullptr;  // receives come from it when set
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;  // ignored with an SRQ
  uint32_t max_send_sge = 1;
  uint32_t max_recv_sge = 1;
  uint32_t max_inline_data = 0;
  bool sq_sig_all = false;  // every send WR completes, signaled or not
};

// What a QP got (may exceed what was asked, as verbs may round up).
struct QpCaps {
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;
  uint32_t max_send_sge = 0;
  uint32_t max_recv_sge = 0;
  uint32_t max_inline_data = 0;
};

// What one side of an RC connection tells the other (through the bootstrap
// exchange, a connect file or a UD handshake), and what a UD sender needs
// of its destination besides an address handle.
struct QpAddress {
  uint16_t lid = 0;
  Gid gid;
  uint32_t qpn = 0;
  uint32_t psn = 0;  // the first packet sequence number the QP sends
  friend bool operator==(const QpAddress&, const QpAddress&) = default;
};

// RESET -> INIT.
struct QpInitStateAttr {
  uint8_t port = 1;
  uint16_t pkey_index = 0;
  uint32_t access = 0;  // RC: Access bits remote peers may use
  uint32_t qkey = 0;    // UD: the Q_Key incoming datagrams must carry
};

// INIT -> RTR. RC only needs all of it; UD ignores it.
struct QpRtrAttr {
  QpAddress remote;  // lid, gid (with use_gid), qpn, psn
  uint32_t path_mtu = 1024;
  uint8_t port = 1;
  uint8_t sl = 0;
  bool use_gid = false;  // RoCE or routed IB: address by remote.gid
  uint8_t sgid_index = 0;
  uint8_t hop_limit = 64;
  uint8_t max_dest_rd_atomic = 1;
  uint8_t min_rnr_timer = 12;  // IB encoding: 12 = 0.64 ms
};

// RTR -> RTS.
struct QpRtsAttr {
  uint32_t sq_psn = 0;        // must equal the psn the peer was told
  uint8_t timeout = 14;       // 4.096 us * 2^timeout; 0 = infinite
  uint8_t retry_cnt = 7;      // transport retries, 0..7
  uint8_t rnr_retry = 7;      // RNR retries, 0..6, 7 = infinite
  uint8_t max_rd_atomic = 1;  // outgoing reads/atomics in flight
};

// ---- work requests -----------------------------------------------------

// Scatter/gather element; the same layout as struct ibv_sge.
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

enum class Opcode : uint8_t {
  kSend,
  kSendWithImm,
  kRdmaWrite,
  kRdmaWriteWithImm,
  kRdmaRead,
  kAtomicFetchAdd,
  kAtomicCompareSwap,
};

enum SendFlags : uint32_t {
  kSendSignaled = 1u << 0,   // produce a completion (else only on error)
  kSendInline = 1u << 1,     // copy the payload at post time; no lkey
  kSendFence = 1u << 2,      // wait for earlier reads/atomics
  kSendSolicited = 1u << 3,  // wake a solicited-only waiter at the target
};

struct SendWr {
  uint64_t wr_id = 0;
  Opcode opcode = Opcode::kSend;
  uint32_t flags = 0;  // SendFlags
  const Sge* sg_list = nullptr;
  uint32_t num_sge = 0;
  uint32_t imm_data = 0;  // delivered unchanged (no byte swapping)
  // RDMA and atomics: the target address and its registration's rkey.
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  // Atomics (8 bytes, 8-byte aligned): fetch-add adds compare_add;
  // compare-swap writes swap where the value equals compare_add. The
  // original value lands in the (8-byte) local SGE.
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  // UD: the destination.
  AddressHandle* ah = nullptr;
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
};

struct RecvWr {
  uint64_t wr_id = 0;
  const Sge* sg_list = nullptr;
  uint32_t num_sge = 0;
};

// A UD receive buffer starts with this many bytes for the GRH (present or
// not); the payload follows and byte_len counts both.
inline constexpr uint32_t kUdGrhBytes = 40;

// ---- completions -------------------------------------------------------

enum class WcStatus : uint8_t {
  kSuccess,
  kLocalLengthError,
  kLocalQpOperationError,
  kLocalProtectionError,
  kFlushError,  // the QP is in ERROR; the WR did not run
  kBadResponse,
  kLocalAccessError,
  kRemoteInvalidRequest,
  kRemoteAccessError,  // rkey, bounds or access flags refused it
  kRemoteOperationError,
  kRetryExceeded,  // transport retries exhausted (peer gone, not ready)
  kRnrRetryExceeded,
  kGeneralError,
};

enum class WcOpcode : uint8_t {
  kSend,
  kRdmaWrite,
  kRdmaRead,
  kAtomicCompareSwap,
  kAtomicFetchAdd,
  kRecv,
  kRecvRdmaWithImm,
};

struct Completion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  // Valid only when status is kSuccess (as in verbs).
  WcOpcode opcode = WcOpcode::kSend;
  bool with_imm = false;
  uint32_t byte_len = 0;  // receives (UD: kUdGrhBytes included)
  uint32_t imm_data = 0;
  uint32_t qp_num = 0;  // the local QP
  uint32_t src_qp = 0;  // UD receives: the sender's QP
  uint16_t slid = 0;    // UD receives: the sender's LID
  uint32_t vendor_err = 0;
};

// ---- async events ------------------------------------------------------

enum class AsyncEventType : uint8_t {
  kCqError,  // a CQ overflowed; its completions are no longer reliable
  kQpFatal,  // a QP went to ERROR without a completion to say so
  kQpRequestError,
  kQpAccessError,
  kCommEstablished,
  kSqDrained,
  kSrqError,
  kSrqLimitReached,
  kQpLastWqeReached,
  kPortActive,
  kPortError,
  kLidChange,
  kPkeyChange,
  kGidChange,
  kSmChange,
  kClientReregister,
  kDeviceFatal,
  kOther,
};

struct AsyncEvent {
  AsyncEventType type = AsyncEventType::kOther;
  uint32_t qp_num = 0;                      // QP events
  const CompletionQueue* cq = nullptr;      // kCqError
  const SharedReceiveQueue* srq = nullptr;  // kSrqLimitReached, kSrqError
  uint8_t port = 0;                         // port events
};

// Counters only the software device keeps (the conduit's tests assert on
// them): per opened context, and summed over every process of the job.
struct DeviceCounters {
  uint64_t rnr_naks = 0;           // sends that met no posted receive
  uint64_t transport_retries = 0;  // sends to a peer QP not ready or gone
  uint64_t ud_drops = 0;           // datagrams dropped (no receive, Q_Key)
  uint64_t pkey_drops = 0;         // packets dropped between unmatched P_Keys
  uint64_t cq_overflows = 0;
  uint64_t remote_access_errors = 0;
};

std::string_view ToString(PortState s);
std::string_view ToString(QpState s);
std::string_view ToString(QpType t);
std::string_view ToString(WcStatus s);
std::string_view ToString(WcOpcode o);
std::string_view ToString(Opcode o);
std::string_view ToString(AsyncEventType t);
std::string ToString(const Gid& gid);  // "fe80:0000:...:0001"

// IB's 5-bit RNR timer encoding, in microseconds (0 means 655.36 ms).
uint32_t RnrTimerMicros(uint8_t encoded);
// 4.096 us * 2^timeout; 0 when `timeout` is 0 (infinite).
uint64_t AckTimeoutMicros(uint8_t timeout);
// 256, 512, ... 4096 -> true.
bool IsValidMtu(uint32_t bytes);

}  // namespace gexrt::ibv::verbs

#endif  // GEX_CONDUIT_IBV_VERBS_TYPES_H_
