// The narrow verbs interface the ibv conduit is written against.
//
// Two implementations (README.md):
//   - ibverbs_device.h: Debian's libibverbs (rdma-core), for real HCAs;
//   - soft_device.h: the software device, between processes of one host
//     over shared memory, which is what the test suite runs on where no HCA
//     exists.
// select.h picks one (GASNET_IBV_SOFTWARE_DEVICE).
//
// The objects are those of verbs: a Provider lists devices and opens one
// (Context); a Context queries the device and its ports, allocates
// protection domains and completion queues, and delivers async events; a
// ProtectionDomain registers memory and creates queue pairs, shared receive
// queues and address handles.
//
// Ownership: every object is a std::unique_ptr its creator returns. A
// child must be destroyed before its parent (QPs before their CQs, SRQ and
// PD; MRs, SRQs and AHs before their PD; everything before its Context),
// exactly as verbs refuses to destroy a parent that is still in use.
//
// Errors: calls return absl::Status / absl::StatusOr; nothing throws. The
// hot path -- PostSend, PostRecv and Poll -- does not allocate when it
// succeeds: work requests and completions are caller-owned structs, copied.
// Each is one virtual call, the same cost as libibverbs' own dispatch
// through its context's ops table.
//
// Threads: as verbs, each object may be used from several threads; the
// implementations serialise per queue. (The conduit serialises anyway.)
#ifndef GEX_CONDUIT_IBV_VERBS_VERBS_H_
#define GEX_CONDUIT_IBV_VERBS_VERBS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "conduit/ibv/verbs/types.h"

namespace gexrt::ibv::verbs {

class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;

  // Moves up to out.size() completions into `out`, oldest first, and
  // returns how many. Completions of one QP's send queue (and of one QP's
  // receive queue) come in the order their WRs were posted. Polling is
  // also when the software device makes progress on the send queues that
  // complete into this CQ (retries after an RNR NAK or a timeout).
  virtual absl::StatusOr<size_t> Poll(std::span<Completion> out) = 0;

  // The number of entries the CQ holds (at least the depth asked for).
  // More unpolled completions than this is an overflow: a kCqError async
  // event, and the completions are lost.
  virtual uint32_t depth() const = 0;

  // Blocking, for a progress thread, the verbs way:
  //   RequestNotify();  then Poll() once more (a completion that arrived
  //   before the request wakes nobody);  if that found nothing,
  //   WaitNotify(timeout_ns): true once a completion arrived after the
  //   request, false on timeout (negative: no limit) or Interrupt().
  // Posting and polling pay nothing extra unless a thread is armed.
  virtual absl::Status RequestNotify() = 0;
  virtual absl::StatusOr<bool> WaitNotify(int64_t timeout_ns) = 0;
  // Makes a current (or the next) WaitNotify return false; for shutdown.
  virtual void Interrupt() = 0;
};

class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;  // deregisters

  void* addr() const { return addr_; }
  size_t length() const { return length_; }
  uint32_t lkey() const { return lkey_; }
  uint32_t rkey() const { return rkey_; }
  uint32_t access() const { return access_; }

 protected:
  MemoryRegion(void* addr, size_t length, uint32_t lkey, uint32_t rkey,
               uint32_t access)
      : addr_(addr),
        length_(length),
        lkey_(lkey),
        rkey_(rkey),
        access_(access) {}

 private:
  void* addr_;
  size_t length_;
  uint32_t lkey_;
  uint32_t rkey_;
  uint32_t access_;
};

// The destination of UD sends.
struct AhAttr {
  uint16_t dlid = 0;
  uint8_t port = 1;
  uint8_t sl = 0;
  bool use_gid = false;
  Gid dgid;
  uint8_t sgid_index = 0;
  uint8_t hop_limit = 64;
};

class AddressHandle {
 public:
  virtual ~AddressHandle() = default;
};

struct SrqInitAttr {
  uint32_t max_wr = 0;
  uint32_t max_sge = 1;
};

class SharedReceiveQueue {
 public:
  virtual ~SharedReceiveQueue() = default;
  // As QueuePair::PostRecv; any QP attached to the SRQ may consume it.
  virtual absl::Status PostRecv(const RecvWr& wr) = 0;
  // Arms the limit event: once fewer than `limit` receives remain posted,
  // one kSrqLimitReached async event (then disarmed, as in verbs). 0
  // disarms.
  virtual absl::Status ArmLimit(uint32_t limit) = 0;
};

class QueuePair {
 public:
  virtual ~QueuePair() = default;

  uint32_t qp_num() const { return qp_num_; }
  QpType type() const { return type_; }
  const QpCaps& caps() const { return caps_; }

  // The state as the device sees it: a QP moves itself to kError on an
  // error completion (or, for the software device, when its peer's CQ
  // overflowed).
  virtual QpState state() const = 0;

  // The transitions, each valid only from the state verbs allows:
  // RESET->INIT, INIT->RTR, RTR->RTS; ToError and ToReset from any state.
  // A wrong transition is FailedPrecondition and changes nothing.
  virtual absl::Status ToInit(const QpInitStateAttr& attr) = 0;
  virtual absl::Status ToRtr(const QpRtrAttr& attr) = 0;
  virtual absl::Status ToRts(const QpRtsAttr& attr) = 0;
  // Outstanding WRs complete with kFlushError; later posts flush too.
  virtual absl::Status ToError() = 0;
  // Discards everything outstanding, no completions.
  virtual absl::Status ToReset() = 0;

  // Posts one send WR. Refused (nothing queued, no completion) when the QP
  // is not in RTS (or ERROR, where it flushes), the send queue is full,
  // num_sge exceeds the QP's max_send_sge, an inline payload exceeds
  // max_inline_data, or the opcode does not fit the QP type. Failures of
  // the operation itself (keys, bounds, the peer) arrive as completions.
  virtual absl::Status PostSend(const SendWr& wr) = 0;
  // Posts one receive WR (not on a QP with an SRQ). Valid from INIT on.
  virtual absl::Status PostRecv(const RecvWr& wr) = 0;

 protected:
  QueuePair(uint32_t qp_num, QpType type, const QpCaps& caps)
      : qp_num_(qp_num), type_(type), caps_(caps) {}

 private:
  uint32_t qp_num_;
  QpType type_;
  QpCaps caps_;
};

class ProtectionDomain {
 public:
  virtual ~ProtectionDomain() = default;

  // Registers [addr, addr+length) with Access bits `access`. Remote write
  // and remote atomic need local write (InvalidArgument otherwise), as do
  // ODP registrations a device does not support.
  virtual absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(
      void* addr, size_t length, uint32_t access) = 0;

  // The CQs (and SRQ) in `attr` must outlive the QP.
  virtual absl::StatusOr<std::unique_ptr<QueuePair>> CreateQp(
      const QpInitAttr& attr) = 0;

  virtual absl::StatusOr<std::unique_ptr<SharedReceiveQueue>> CreateSrq(
      const SrqInitAttr& attr) = 0;

  virtual absl::StatusOr<std::unique_ptr<AddressHandle>> CreateAddressHandle(
      const AhAttr& attr) = 0;
};

// One opened device.
class Context {
 public:
  virtual ~Context() = default;

  virtual const std::string& name() const = 0;
  virtual absl::StatusOr<DeviceAttr> QueryDevice() = 0;
  // Ports are numbered from 1.
  virtual absl::StatusOr<PortAttr> QueryPort(uint8_t port) = 0;
  // Entry `index` (< PortAttr::pkey_table_len) of the port's P_Key table,
  // membership bit included; the index is what QpInitStateAttr::pkey_index
  // names.
  virtual absl::StatusOr<uint16_t> QueryPkey(uint8_t port, uint16_t index) = 0;

  virtual absl::StatusOr<std::unique_ptr<ProtectionDomain>> AllocPd() = 0;
  // A CQ holding at least `depth` completions.
  virtual absl::StatusOr<std::unique_ptr<CompletionQueue>> CreateCq(
      uint32_t depth) = 0;

  // The next async event, if any; never blocks.
  virtual std::optional<AsyncEvent> PollAsyncEvent() = 0;

  // The software device's counters (nullopt for a real HCA): this
  // context's, and the sum over every context of the job.
  virtual std::optional<DeviceCounters> Counters() const { return {}; }
  virtual std::optional<DeviceCounters> JobCounters() const { return {}; }
};

class Provider {
 public:
  virtual ~Provider() = default;

  // "libibverbs" or "software".
  virtual std::string_view kind() const = 0;
  // Every device (an empty list is a valid answer).
  virtual absl::StatusOr<std::vector<DeviceInfo>> ListDevices() = 0;
  virtual absl::StatusOr<std::unique_ptr<Context>> Open(
      const std::string& device_name) = 0;
};

}  // namespace gexrt::ibv::verbs

#endif  // GEX_CONDUIT_IBV_VERBS_VERBS_H_
