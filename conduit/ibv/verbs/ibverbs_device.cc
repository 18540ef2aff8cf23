#include "conduit/ibv/verbs/ibverbs_device.h"

#include <endian.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/string_view.h"

namespace gexrt::ibv::verbs {
namespace {

// Our Sge is passed to verbs as is.
static_assert(sizeof(Sge) == sizeof(ibv_sge));
static_assert(offsetof(Sge, addr) == offsetof(ibv_sge, addr));
static_assert(offsetof(Sge, length) == offsetof(ibv_sge, length));
static_assert(offsetof(Sge, lkey) == offsetof(ibv_sge, lkey));

absl::Status VerbsError(const char* call, int err) {
  return absl::Status(absl::ErrnoToStatusCode(err),
                      absl::StrCat(call, ": ", std::strerror(err)));
}

int ToIbvAccess(uint32_t a) {
  int out = 0;
  if (a & kAccessLocalWrite) out |= IBV_ACCESS_LOCAL_WRITE;
  if (a & kAccessRemoteWrite) out |= IBV_ACCESS_REMOTE_WRITE;
  if (a & kAccessRemoteRead) out |= IBV_ACCESS_REMOTE_READ;
  if (a & kAccessRemoteAtomic) out |= IBV_ACCESS_REMOTE_ATOMIC;
  if (a & kAccessOnDemand) out |= IBV_ACCESS_ON_DEMAND;
  return out;
}

ibv_mtu ToIbvMtu(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 1024:
      return IBV_MTU_1024;
    case 2048:
      return IBV_MTU_2048;
    default:
      return IBV_MTU_4096;
  }
}

uint32_t FromIbvMtu(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

PortState FromIbvPortState(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_INIT:
      return PortState::kInit;
    case IBV_PORT_ARMED:
      return PortState::kArmed;
    case IBV_PORT_ACTIVE:
      return PortState::kActive;
    case IBV_PORT_ACTIVE_DEFER:
      return PortState::kActiveDefer;
    default:
      return PortState::kDown;
  }
}

QpState FromIbvQpState(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET:
      return QpState::kReset;
    case IBV_QPS_INIT:
      return QpState::kInit;
    case IBV_QPS_RTR:
      return QpState::kRtr;
    case IBV_QPS_RTS:
      return QpState::kRts;
    case IBV_QPS_SQD:
      return QpState::kSqd;
    case IBV_QPS_SQE:
      return QpState::kSqe;
    default:
      return QpState::kError;
  }
}

WcStatus FromIbvWcStatus(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS:
      return WcStatus::kSuccess;
    case IBV_WC_LOC_LEN_ERR:
      return WcStatus::kLocalLengthError;
    case IBV_WC_LOC_QP_OP_ERR:
      return WcStatus::kLocalQpOperationError;
    case IBV_WC_LOC_PROT_ERR:
      return WcStatus::kLocalProtectionError;
    case IBV_WC_WR_FLUSH_ERR:
      return WcStatus::kFlushError;
    case IBV_WC_BAD_RESP_ERR:
      return WcStatus::kBadResponse;
    case IBV_WC_LOC_ACCESS_ERR:
      return WcStatus::kLocalAccessError;
    case IBV_WC_REM_INV_REQ_ERR:
      return WcStatus::kRemoteInvalidRequest;
    case IBV_WC_REM_ACCESS_ERR:
      return WcStatus::kRemoteAccessError;
    case IBV_WC_REM_OP_ERR:
      return WcStatus::kRemoteOperationError;
    case IBV_WC_RETRY_EXC_ERR:
      return WcStatus::kRetryExceeded;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return WcStatus::kRnrRetryExceeded;
    default:
      return WcStatus::kGeneralError;
  }
}

WcOpcode FromIbvWcOpcode(ibv_wc_opcode o) {
  switch (o) {
    case IBV_WC_SEND:
      return WcOpcode::kSend;
    case IBV_WC_RDMA_WRITE:
      return WcOpcode::kRdmaWrite;
    case IBV_WC_RDMA_READ:
      return WcOpcode::kRdmaRead;
    case IBV_WC_COMP_SWAP:
      return WcOpcode::kAtomicCompareSwap;
    case IBV_WC_FETCH_ADD:
      return WcOpcode::kAtomicFetchAdd;
    case IBV_WC_RECV_RDMA_WITH_IMM:
      return WcOpcode::kRecvRdmaWithImm;
    default:
      return WcOpcode::kRecv;
  }
}

AsyncEventType FromIbvEvent(ibv_event_type t) {
  switch (t) {
    case IBV_EVENT_CQ_ERR:
      return AsyncEventType::kCqError;
    case IBV_EVENT_QP_FATAL:
      return AsyncEventType::kQpFatal;
    case IBV_EVENT_QP_REQ_ERR:
      return AsyncEventType::kQpRequestError;
    case IBV_EVENT_QP_ACCESS_ERR:
      return AsyncEventType::kQpAccessError;
    case IBV_EVENT_COMM_EST:
      return AsyncEventType::kCommEstablished;
    case IBV_EVENT_SQ_DRAINED:
      return AsyncEventType::kSqDrained;
    case IBV_EVENT_SRQ_ERR:
      return AsyncEventType::kSrqError;
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return AsyncEventType::kSrqLimitReached;
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return AsyncEventType::kQpLastWqeReached;
    case IBV_EVENT_PORT_ACTIVE:
      return AsyncEventType::kPortActive;
    case IBV_EVENT_PORT_ERR:
      return AsyncEventType::kPortError;
    case IBV_EVENT_LID_CHANGE:
      return AsyncEventType::kLidChange;
    case IBV_EVENT_PKEY_CHANGE:
      return AsyncEventType::kPkeyChange;
    case IBV_EVENT_GID_CHANGE:
      return AsyncEventType::kGidChange;
    case IBV_EVENT_SM_CHANGE:
      return AsyncEventType::kSmChange;
    case IBV_EVENT_CLIENT_REREGISTER:
      return AsyncEventType::kClientReregister;
    case IBV_EVENT_DEVICE_FATAL:
      return AsyncEventType::kDeviceFatal;
    default:
      return AsyncEventType::kOther;
  }
}

Gid FromIbvGid(const ibv_gid& g) {
  Gid out;
  std::memcpy(out.raw.data(), g.raw, 16);
  return out;
}

class IbvCq final : public CompletionQueue {
 public:
  // Owns `cq`, its completion channel and the eventfd Interrupt() writes.
  IbvCq(ibv_cq* cq, ibv_comp_channel* channel, int interrupt_fd)
      : cq_(cq), channel_(channel), interrupt_fd_(interrupt_fd) {}
  ~IbvCq() override {
    if (unacked_ > 0) ibv_ack_cq_events(cq_, unacked_);
    ibv_destroy_cq(cq_);
    ibv_destroy_comp_channel(channel_);
    close(interrupt_fd_);
  }

  absl::Status RequestNotify() override {
    int rc = ibv_req_notify_cq(cq_, 0);
    return rc == 0 ? absl::OkStatus() : VerbsError("ibv_req_notify_cq", rc);
  }

  absl::StatusOr<bool> WaitNotify(int64_t timeout_ns) override {
    pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {interrupt_fd_, POLLIN, 0}};
    int ms = timeout_ns < 0
                 ? -1
                 : static_cast<int>((timeout_ns + 999'999) / 1'000'000);
    int n = poll(fds, 2, ms);
    if (n < 0) {
      if (errno == EINTR) return false;
      return VerbsError("poll", errno);
    }
    if (fds[1].revents & POLLIN) {
      uint64_t v;
      (void)!read(interrupt_fd_, &v, sizeof(v));
      return false;
    }
    if (fds[0].revents & POLLIN) {
      ibv_cq* cq = nullptr;
      void* context = nullptr;
      if (ibv_get_cq_event(channel_, &cq, &context) != 0) {
        return VerbsError("ibv_get_cq_event", errno);
      }
      // Acks are batched: each costs a lock in libibverbs.
      if (++unacked_ == 64) {
        ibv_ack_cq_events(cq_, unacked_);
        unacked_ = 0;
      }
      return true;
    }
    return false;
  }

  void Interrupt() override {
    uint64_t one = 1;
    (void)!write(interrupt_fd_, &one, sizeof(one));
  }
  absl::StatusOr<size_t> Poll(std::span<Completion> out) override {
    ibv_wc wc[32];
    size_t total = 0;
    while (total < out.size()) {
      int want = static_cast<int>(std::min<size_t>(32, out.size() - total));
      int n = ibv_poll_cq(cq_, want, wc);
      if (n < 0) return absl::InternalError("ibv_poll_cq failed");
      for (int i = 0; i < n; ++i) {
        Completion& c = out[total + i];
        c.wr_id = wc[i].wr_id;
        c.status = FromIbvWcStatus(wc[i].status);
        c.opcode = FromIbvWcOpcode(wc[i].opcode);
        c.with_imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) != 0;
        c.byte_len = wc[i].byte_len;
        c.imm_data = c.with_imm ? wc[i].imm_data : 0;
        c.qp_num = wc[i].qp_num;
        c.src_qp = wc[i].src_qp;
        c.slid = wc[i].slid;
        c.vendor_err = wc[i].vendor_err;
      }
      total += n;
      if (n < want) break;
    }
    return total;
  }
  uint32_t depth() const override { return static_cast<uint32_t>(cq_->cqe); }
  ibv_cq* raw() const { return cq_; }

 private:
  ibv_cq* cq_;
  ibv_comp_channel* channel_;
  int interrupt_fd_;
  unsigned int unacked_ = 0;
};

class IbvMr final : public MemoryRegion {
 public:
  IbvMr(ibv_mr* mr, uint32_t access)
      : MemoryRegion(mr->addr, mr->length, mr->lkey, mr->rkey, access),
        mr_(mr) {}
  ~IbvMr() override { ibv_dereg_mr(mr_); }

 private:
  ibv_mr* mr_;
};

class IbvAh final : public AddressHandle {
 public:
  explicit IbvAh(ibv_ah* ah) : ah_(ah) {}
  ~IbvAh() override { ibv_destroy_ah(ah_); }
  ibv_ah* raw() const { return ah_; }

 private:
  ibv_ah* ah_;
};

class IbvSrq final : public SharedReceiveQueue {
 public:
  explicit IbvSrq(ibv_srq* srq) : srq_(srq) {}
  ~IbvSrq() override { ibv_destroy_srq(srq_); }
  absl::Status PostRecv(const RecvWr& wr) override {
    ibv_recv_wr w{};
    w.wr_id = wr.wr_id;
    w.sg_list = reinterpret_cast<ibv_sge*>(const_cast<Sge*>(wr.sg_list));
    w.num_sge = static_cast<int>(wr.num_sge);
    ibv_recv_wr* bad = nullptr;
    int rc = ibv_post_srq_recv(srq_, &w, &bad);
    return rc == 0 ? absl::OkStatus() : VerbsError("ibv_post_srq_recv", rc);
  }
  absl::Status ArmLimit(uint32_t limit) override {
    ibv_srq_attr attr{};
    attr.srq_limit = limit;
    int rc = ibv_modify_srq(srq_, &attr, IBV_SRQ_LIMIT);
    return rc == 0 ? absl::OkStatus() : VerbsError("ibv_modify_srq", rc);
  }
  ibv_srq* raw() const { return srq_; }

 private:
  ibv_srq* srq_;
};

QpCaps CapsOf(const ibv_qp_cap& c) {
  QpCaps out;
  out.max_send_wr = c.max_send_wr;
  out.max_recv_wr = c.max_recv_wr;
  out.max_send_sge = c.max_send_sge;
  out.max_recv_sge = c.max_recv_sge;
  out.max_inline_data = c.max_inline_data;
  return out;
}

class IbvQp final : public QueuePair {
 public:
  IbvQp(ibv_qp* qp, QpType type, const QpCaps& caps, bool srq)
      : QueuePair(qp->qp_num, type, caps), qp_(qp), srq_(srq) {}
  ~IbvQp() override { ibv_destroy_qp(qp_); }

  QpState state() const override {
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    if (ibv_query_qp(qp_, &attr, IBV_QP_STATE, &init) != 0) {
      return QpState::kError;
    }
    return FromIbvQpState(attr.qp_state);
  }

  absl::Status ToInit(const QpInitStateAttr& a) override {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = a.pkey_index;
    attr.port_num = a.port;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (type() == QpType::kUd) {
      attr.qkey = a.qkey;
      mask |= IBV_QP_QKEY;
    } else {
      attr.qp_access_flags = ToIbvAccess(a.access);
      mask |= IBV_QP_ACCESS_FLAGS;
    }
    return Modify(attr, mask, "INIT");
  }

  absl::Status ToRtr(const QpRtrAttr& a) override {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    int mask = IBV_QP_STATE;
    if (type() == QpType::kRc) {
      attr.path_mtu = ToIbvMtu(a.path_mtu);
      attr.dest_qp_num = a.remote.qpn;
      attr.rq_psn = a.remote.psn & 0xffffff;
      attr.max_dest_rd_atomic = a.max_dest_rd_atomic;
      attr.min_rnr_timer = a.min_rnr_timer;
      attr.ah_attr.dlid = a.remote.lid;
      attr.ah_attr.sl = a.sl;
      attr.ah_attr.port_num = a.port;
      if (a.use_gid) {
        attr.ah_attr.is_global = 1;
        std::memcpy(attr.ah_attr.grh.dgid.raw, a.remote.gid.raw.data(), 16);
        attr.ah_attr.grh.sgid_index = a.sgid_index;
        attr.ah_attr.grh.hop_limit = a.hop_limit;
      }
      mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
    return Modify(attr, mask, "RTR");
  }

  absl::Status ToRts(const QpRtsAttr& a) override {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = a.sq_psn & 0xffffff;
    int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (type() == QpType::kRc) {
      attr.timeout = a.timeout;
      attr.retry_cnt = a.retry_cnt;
      attr.rnr_retry = a.rnr_retry;
      attr.max_rd_atomic = a.max_rd_atomic;
      mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
              IBV_QP_MAX_QP_RD_ATOMIC;
    }
    return Modify(attr, mask, "RTS");
  }

  absl::Status ToError() override {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    return Modify(attr, IBV_QP_STATE, "ERROR");
  }
  absl::Status ToReset() override {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RESET;
    return Modify(attr, IBV_QP_STATE, "RESET");
  }

  absl::Status PostSend(const SendWr& wr) override {
    ibv_send_wr w{};
    w.wr_id = wr.wr_id;
    w.sg_list = reinterpret_cast<ibv_sge*>(const_cast<Sge*>(wr.sg_list));
    w.num_sge = static_cast<int>(wr.num_sge);
    int flags = 0;
    if (wr.flags & kSendSignaled) flags |= IBV_SEND_SIGNALED;
    if (wr.flags & kSendInline) flags |= IBV_SEND_INLINE;
    if (wr.flags & kSendFence) flags |= IBV_SEND_FENCE;
    if (wr.flags & kSendSolicited) flags |= IBV_SEND_SOLICITED;
    w.send_flags = flags;
    switch (wr.opcode) {
      case Opcode::kSend:
        w.opcode = IBV_WR_SEND;
        break;
      case Opcode::kSendWithImm:
        w.opcode = IBV_WR_SEND_WITH_IMM;
        w.imm_data = wr.imm_data;
        break;
      case Opcode::kRdmaWrite:
        w.opcode = IBV_WR_RDMA_WRITE;
        break;
      case Opcode::kRdmaWriteWithImm:
        w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        w.imm_data = wr.imm_data;
        break;
      case Opcode::kRdmaRead:
        w.opcode = IBV_WR_RDMA_READ;
        break;
      case Opcode::kAtomicFetchAdd:
        w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
        break;
      case Opcode::kAtomicCompareSwap:
        w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
        break;
    }
    if (wr.opcode == Opcode::kAtomicFetchAdd ||
        wr.opcode == Opcode::kAtomicCompareSwap) {
      w.wr.atomic.remote_addr = wr.remote_addr;
      w.wr.atomic.rkey = wr.rkey;
      w.wr.atomic.compare_add = wr.compare_add;
      w.wr.atomic.swap = wr.swap;
    } else if (type() == QpType::kUd) {
      if (wr.ah == nullptr) {
        return absl::InvalidArgumentError("UD send without address handle");
      }
      w.wr.ud.ah = static_cast<IbvAh*>(wr.ah)->raw();
      w.wr.ud.remote_qpn = wr.remote_qpn;
      w.wr.ud.remote_qkey = wr.remote_qkey;
    } else {
      w.wr.rdma.remote_addr = wr.remote_addr;
      w.wr.rdma.rkey = wr.rkey;
    }
    ibv_send_wr* bad = nullptr;
    int rc = ibv_post_send(qp_, &w, &bad);
    return rc == 0 ? absl::OkStatus() : VerbsError("ibv_post_send", rc);
  }

  absl::Status PostRecv(const RecvWr& wr) override {
    if (srq_) {
      return absl::FailedPreconditionError("this QP receives from an SRQ");
    }
    ibv_recv_wr w{};
    w.wr_id = wr.wr_id;
    w.sg_list = reinterpret_cast<ibv_sge*>(const_cast<Sge*>(wr.sg_list));
    w.num_sge = static_cast<int>(wr.num_sge);
    ibv_recv_wr* bad = nullptr;
    int rc = ibv_post_recv(qp_, &w, &bad);
    return rc == 0 ? absl::OkStatus() : VerbsError("ibv_post_recv", rc);
  }

 private:
  absl::Status Modify(ibv_qp_attr& attr, int mask, const char* to) {
    int rc = ibv_modify_qp(qp_, &attr, mask);
    if (rc == 0) return absl::OkStatus();
    return absl::Status(absl::ErrnoToStatusCode(rc),
                        absl::StrCat("QP ", qp_num(), ": ibv_modify_qp to ", to,
                                     ": ", std::strerror(rc)));
  }

  ibv_qp* qp_;
  bool srq_;
};

class IbvPd final : public ProtectionDomain {
 public:
  explicit IbvPd(ibv_pd* pd) : pd_(pd) {}
  ~IbvPd() override { ibv_dealloc_pd(pd_); }

  absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(
      void* addr, size_t length, uint32_t access) override {
    ibv_mr* mr = ibv_reg_mr(pd_, addr, length, ToIbvAccess(access));
    if (mr == nullptr) return VerbsError("ibv_reg_mr", errno);
    return std::unique_ptr<MemoryRegion>(new IbvMr(mr, access));
  }

  absl::StatusOr<std::unique_ptr<QueuePair>> CreateQp(
      const QpInitAttr& a) override {
    if (a.send_cq == nullptr || a.recv_cq == nullptr) {
      return absl::InvalidArgumentError("a QP needs a send and a receive CQ");
    }
    ibv_qp_init_attr init{};
    init.send_cq = static_cast<IbvCq*>(a.send_cq)->raw();
    init.recv_cq = static_cast<IbvCq*>(a.recv_cq)->raw();
    init.srq = a.srq ? static_cast<IbvSrq*>(a.srq)->raw() : nullptr;
    init.cap.max_send_wr = a.max_send_wr;
    init.cap.max_recv_wr = a.srq ? 0 : a.max_recv_wr;
    init.cap.max_send_sge = a.max_send_sge;
    init.cap.max_recv_sge = a.srq ? 0 : a.max_recv_sge;
    init.cap.max_inline_data = a.max_inline_data;
    init.qp_type = a.type == QpType::kRc ? IBV_QPT_RC : IBV_QPT_UD;
    init.sq_sig_all = a.sq_sig_all ? 1 : 0;
    ibv_qp* qp = ibv_create_qp(pd_, &init);
    if (qp == nullptr) return VerbsError("ibv_create_qp", errno);
    return std::unique_ptr<QueuePair>(
        new IbvQp(qp, a.type, CapsOf(init.cap), a.srq != nullptr));
  }

  absl::StatusOr<std::unique_ptr<SharedReceiveQueue>> CreateSrq(
      const SrqInitAttr& a) override {
    ibv_srq_init_attr init{};
    init.attr.max_wr = a.max_wr;
    init.attr.max_sge = a.max_sge;
    ibv_srq* srq = ibv_create_srq(pd_, &init);
    if (srq == nullptr) return VerbsError("ibv_create_srq", errno);
    auto out = std::make_unique<IbvSrq>(srq);
    srq->srq_context = out.get();  // for SRQ events
    return std::unique_ptr<SharedReceiveQueue>(out.release());
  }

  absl::StatusOr<std::unique_ptr<AddressHandle>> CreateAddressHandle(
      const AhAttr& a) override {
    ibv_ah_attr attr{};
    attr.dlid = a.dlid;
    attr.sl = a.sl;
    attr.port_num = a.port;
    if (a.use_gid) {
      attr.is_global = 1;
      std::memcpy(attr.grh.dgid.raw, a.dgid.raw.data(), 16);
      attr.grh.sgid_index = a.sgid_index;
      attr.grh.hop_limit = a.hop_limit;
    }
    ibv_ah* ah = ibv_create_ah(pd_, &attr);
    if (ah == nullptr) return VerbsError("ibv_create_ah", errno);
    return std::unique_ptr<AddressHandle>(new IbvAh(ah));
  }

  ibv_pd* raw() const { return pd_; }

 private:
  ibv_pd* pd_;
};

class IbvContext final : public Context {
 public:
  IbvContext(std::string name, ibv_context* ctx)
      : name_(std::move(name)), ctx_(ctx) {
    // Async events are polled, never waited for.
    int fl = fcntl(ctx_->async_fd, F_GETFL);
    if (fl >= 0) fcntl(ctx_->async_fd, F_SETFL, fl | O_NONBLOCK);
  }
  ~IbvContext() override { ibv_close_device(ctx_); }

  const std::string& name() const override { return name_; }

  absl::StatusOr<DeviceAttr> QueryDevice() override {
    ibv_device_attr_ex ex{};
    int rc = ibv_query_device_ex(ctx_, nullptr, &ex);
    if (rc != 0) return VerbsError("ibv_query_device_ex", rc);
    const ibv_device_attr& d = ex.orig_attr;
    DeviceAttr a;
    a.max_qp = d.max_qp;
    a.max_qp_wr = d.max_qp_wr;
    a.max_sge = d.max_sge;
    a.max_cq = d.max_cq;
    a.max_cqe = d.max_cqe;
    a.max_mr = d.max_mr;
    a.max_mr_size = d.max_mr_size;
    a.max_srq = d.max_srq;
    a.max_srq_wr = d.max_srq_wr;
    a.max_qp_rd_atom = d.max_qp_rd_atom;
    a.max_qp_init_rd_atom = d.max_qp_init_rd_atom;
    a.atomic_cap = d.atomic_cap == IBV_ATOMIC_NONE  ? AtomicCap::kNone
                   : d.atomic_cap == IBV_ATOMIC_HCA ? AtomicCap::kHca
                                                    : AtomicCap::kGlobal;
    a.odp_supported = (ex.odp_caps.general_caps & IBV_ODP_SUPPORT) != 0 &&
                      (ex.odp_caps.per_transport_caps.rc_odp_caps &
                       (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE |
                        IBV_ODP_SUPPORT_READ)) ==
                          (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE |
                           IBV_ODP_SUPPORT_READ);
    a.xrc_supported = (d.device_cap_flags & IBV_DEVICE_XRC) != 0;
    a.phys_port_cnt = d.phys_port_cnt;
    a.max_inline_data = ProbeInline();
    return a;
  }

  absl::StatusOr<PortAttr> QueryPort(uint8_t port) override {
    ibv_port_attr p{};
    int rc = ibv_query_port(ctx_, port, &p);
    if (rc != 0) return VerbsError("ibv_query_port", rc);
    PortAttr a;
    a.state = FromIbvPortState(p.state);
    a.max_mtu = FromIbvMtu(p.max_mtu);
    a.active_mtu = FromIbvMtu(p.active_mtu);
    a.max_msg_sz = p.max_msg_sz;
    a.lid = p.lid;
    a.sm_lid = p.sm_lid;
    a.lmc = p.lmc;
    a.link_layer =
        p.link_layer == IBV_LINK_LAYER_INFINIBAND ? LinkLayer::kInfiniBand
        : p.link_layer == IBV_LINK_LAYER_ETHERNET ? LinkLayer::kEthernet
                                                  : LinkLayer::kUnspecified;
    ibv_gid gid{};
    if (ibv_query_gid(ctx_, port, 0, &gid) == 0) a.gid = FromIbvGid(gid);
    a.pkey_table_len = p.pkey_tbl_len;
    return a;
  }

  absl::StatusOr<uint16_t> QueryPkey(uint8_t port, uint16_t index) override {
    __be16 pkey = 0;
    // 0, or -1 with errno (it reads sysfs).
    if (ibv_query_pkey(ctx_, port, index, &pkey) != 0) {
      return VerbsError("ibv_query_pkey", errno);
    }
    return be16toh(pkey);
  }

  absl::StatusOr<std::unique_ptr<ProtectionDomain>> AllocPd() override {
    ibv_pd* pd = ibv_alloc_pd(ctx_);
    if (pd == nullptr) return VerbsError("ibv_alloc_pd", errno);
    return std::unique_ptr<ProtectionDomain>(new IbvPd(pd));
  }

  absl::StatusOr<std::unique_ptr<CompletionQueue>> CreateCq(
      uint32_t depth) override {
    ibv_comp_channel* channel = ibv_create_comp_channel(ctx_);
    if (channel == nullptr) return VerbsError("ibv_create_comp_channel", errno);
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0) {
      int err = errno;
      ibv_destroy_comp_channel(channel);
      return VerbsError("eventfd", err);
    }
    ibv_cq* cq =
        ibv_create_cq(ctx_, static_cast<int>(depth), nullptr, channel, 0);
    if (cq == nullptr) {
      int err = errno;
      close(efd);
      ibv_destroy_comp_channel(channel);
      return VerbsError("ibv_create_cq", err);
    }
    auto out = std::make_unique<IbvCq>(cq, channel, efd);
    cq->cq_context = out.get();  // for kCqError events
    return std::unique_ptr<CompletionQueue>(out.release());
  }

  std::optional<AsyncEvent> PollAsyncEvent() override {
    ibv_async_event e;
    if (ibv_get_async_event(ctx_, &e) != 0) return std::nullopt;
    AsyncEvent out;
    out.type = FromIbvEvent(e.event_type);
    switch (e.event_type) {
      case IBV_EVENT_CQ_ERR:
        out.cq = static_cast<const CompletionQueue*>(e.element.cq->cq_context);
        break;
      case IBV_EVENT_SRQ_ERR:
      case IBV_EVENT_SRQ_LIMIT_REACHED:
        out.srq =
            static_cast<const SharedReceiveQueue*>(e.element.srq->srq_context);
        break;
      case IBV_EVENT_PORT_ACTIVE:
      case IBV_EVENT_PORT_ERR:
      case IBV_EVENT_LID_CHANGE:
      case IBV_EVENT_PKEY_CHANGE:
      case IBV_EVENT_GID_CHANGE:
      case IBV_EVENT_SM_CHANGE:
      case IBV_EVENT_CLIENT_REREGISTER:
        out.port = static_cast<uint8_t>(e.element.port_num);
        break;
      case IBV_EVENT_QP_FATAL:
      case IBV_EVENT_QP_REQ_ERR:
      case IBV_EVENT_QP_ACCESS_ERR:
      case IBV_EVENT_COMM_EST:
      case IBV_EVENT_SQ_DRAINED:
      case IBV_EVENT_PATH_MIG:
      case IBV_EVENT_PATH_MIG_ERR:
      case IBV_EVENT_QP_LAST_WQE_REACHED:
        out.qp_num = e.element.qp->qp_num;
        break;
      default:
        break;
    }
    ibv_ack_async_event(&e);
    return out;
  }

 private:
  // The largest max_inline_data an RC QP creation accepts (verbs has no
  // attribute for it): tries 1024, 512, ... and remembers the answer.
  uint32_t ProbeInline() {
    std::lock_guard<std::mutex> g(mu_);
    if (inline_probed_) return max_inline_;
    inline_probed_ = true;
    ibv_pd* pd = ibv_alloc_pd(ctx_);
    ibv_cq* cq = ibv_create_cq(ctx_, 1, nullptr, nullptr, 0);
    if (pd != nullptr && cq != nullptr) {
      for (uint32_t size = 1024; size >= 16; size /= 2) {
        ibv_qp_init_attr init{};
        init.send_cq = init.recv_cq = cq;
        init.cap.max_send_wr = init.cap.max_recv_wr = 1;
        init.cap.max_send_sge = init.cap.max_recv_sge = 1;
        init.cap.max_inline_data = size;
        init.qp_type = IBV_QPT_RC;
        if (ibv_qp* qp = ibv_create_qp(pd, &init)) {
          max_inline_ = init.cap.max_inline_data;
          ibv_destroy_qp(qp);
          break;
        }
      }
    }
    if (cq) ibv_destroy_cq(cq);
    if (pd) ibv_dealloc_pd(pd);
    return max_inline_;
  }

  std::string name_;
  ibv_context* ctx_;
  std::mutex mu_;
  bool inline_probed_ = false;
  uint32_t max_inline_ = 0;
};

// The device list, freed on scope exit.
class DeviceList {
 public:
  DeviceList() { list_ = ibv_get_device_list(&count_); }
  ~DeviceList() {
    if (list_ != nullptr) ibv_free_device_list(list_);
  }
  ibv_device** list() const { return list_; }
  int count() const { return list_ ? count_ : 0; }

 private:
  ibv_device** list_ = nullptr;
  int count_ = 0;
};

class IbvProvider final : public Provider {
 public:
  std::string_view kind() const override { return "libibverbs"; }

  absl::StatusOr<std::vector<DeviceInfo>> ListDevices() override {
    errno = 0;
    DeviceList devices;
    std::vector<DeviceInfo> out;
    if (devices.list() == nullptr) {
      // ENOSYS: the kernel has no verbs support at all; that is "none".
      if (errno == ENOSYS || errno == 0) return out;
      return VerbsError("ibv_get_device_list", errno);
    }
    for (int i = 0; i < devices.count(); ++i) {
      ibv_device* d = devices.list()[i];
      DeviceInfo info;
      info.name = ibv_get_device_name(d);
      info.node_guid = be64toh(ibv_get_device_guid(d));
      if (ibv_context* ctx = ibv_open_device(d)) {
        ibv_device_attr attr{};
        if (ibv_query_device(ctx, &attr) == 0) {
          info.num_ports = attr.phys_port_cnt;
        }
        ibv_close_device(ctx);
      }
      out.push_back(std::move(info));
    }
    return out;
  }

  absl::StatusOr<std::unique_ptr<Context>> Open(
      const std::string& name) override {
    errno = 0;
    DeviceList devices;
    for (int i = 0; i < devices.count(); ++i) {
      ibv_device* d = devices.list()[i];
      if (name != ibv_get_device_name(d)) continue;
      ibv_context* ctx = ibv_open_device(d);
      if (ctx == nullptr) return VerbsError("ibv_open_device", errno);
      return std::unique_ptr<Context>(new IbvContext(name, ctx));
    }
    return absl::NotFoundError(absl::StrCat("no verbs device '", name, "' (",
                                            devices.count(), " found)"));
  }
};

}  // namespace

std::unique_ptr<Provider> MakeIbverbsProvider() {
  return std::make_unique<IbvProvider>();
}

}  // namespace gexrt::ibv::verbs
