// The software device (soft_device.h, README.md).
//
// Why cross-memory attach (CMA) and not a progress engine in each target:
// RDMA completes without the target's CPU, and the conduit's logic leans on
// that (a rank blocked in a barrier still has its segment written and read
// by peers; firehose's remote pins are used while the owner computes). With
// the target's queues and registration table in shared memory, an initiator
// can check and deliver by itself, as an HCA does, so a target never has
// to poll for a remote operation to finish. Registered memory can be
// anything (the conduit registers malloc'd buffers, and firehose any page
// of the client's), so it cannot be assumed to be shared memory; CMA
// reaches it wherever it is. Same-uid processes may use CMA (we are not
// under Yama's restricted ptrace; PR_SET_PTRACER_ANY is set in case).
//
// Layout of the shared object (all positions are offsets from its start,
// so every process can follow them whatever its mapping address):
//   DeviceHeader | arena of LID 1 | arena of LID 2 | ...
// and each arena is ProcHeader (registration table, QP directory, async
// event ring, counters) followed by a bump allocator the owner alone uses
// for its CQs, receive queues and SRQs. Nothing in an arena is reused once
// freed (a process creates a bounded number of queues).
//
// Locks are spin locks in shared memory (lock-free atomics are address-free
// across processes), polite after a few spins. Order: QP, then RQ/SRQ,
// then CQ, then event ring; an MR slot and an atomic stripe are taken alone
// or innermost. A process that dies holding one hangs its peers: the job
// is lost anyway, and the launcher kills it.
#include "conduit/ibv/verbs/soft_device.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/string_view.h"

namespace gexrt::ibv::verbs {
namespace {

// ---- limits of the software device ----------------------------------------

constexpr uint32_t kMaxSge = 8;
constexpr uint32_t kMaxQpWr = 16384;
constexpr uint32_t kMaxCqe = 65536;
constexpr uint32_t kMaxMrs = 4096;     // per process
constexpr uint32_t kQpIndexBits = 12;  // QPN = LID << 12 | index
constexpr uint32_t kMaxQps = (1u << kQpIndexBits) - 1;  // index 0 unused
constexpr uint32_t kEventRing = 64;
constexpr uint32_t kAtomicStripes = 256;
constexpr uint64_t kMagic = 0x31746673'78656767ull;  // "ggexsft1"
constexpr uint32_t kVersion = 2;                     // 2: ShmQp::pkey
constexpr uint64_t kMaxMessage = uint64_t{1} << 31;

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ---- shared-memory structures ---------------------------------------------

struct SpinLock {
  std::atomic<uint32_t> v{0};
  void lock() {
    for (int spins = 0;; ++spins) {
      if (v.load(std::memory_order_relaxed) == 0 &&
          v.exchange(1, std::memory_order_acquire) == 0) {
        return;
      }
      if (spins > 64) sched_yield();
    }
  }
  void unlock() { v.store(0, std::memory_order_release); }
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

struct SharedCounters {
  std::atomic<uint64_t> rnr_naks;
  std::atomic<uint64_t> transport_retries;
  std::atomic<uint64_t> ud_drops;
  std::atomic<uint64_t> pkey_drops;
  std::atomic<uint64_t> cq_overflows;
  std::atomic<uint64_t> remote_access_errors;

  DeviceCounters Read() const {
    DeviceCounters c;
    c.rnr_naks = rnr_naks.load(std::memory_order_relaxed);
    c.transport_retries = transport_retries.load(std::memory_order_relaxed);
    c.ud_drops = ud_drops.load(std::memory_order_relaxed);
    c.pkey_drops = pkey_drops.load(std::memory_order_relaxed);
    c.cq_overflows = cq_overflows.load(std::memory_order_relaxed);
    c.remote_access_errors =
        remote_access_errors.load(std::memory_order_relaxed);
    return c;
  }
};

struct DeviceHeader {
  std::atomic<uint64_t> magic;
  uint32_t version;
  uint32_t max_procs;
  uint64_t arena_bytes;
  uint64_t arenas_offset;
  uint64_t total_bytes;
  uint64_t key_hash;
  uint32_t mtu;
  uint32_t max_inline;
  std::atomic<uint32_t> next_lid;  // LIDs from 1
  std::atomic<uint32_t> attached;
  SharedCounters counters;
  SpinLock stripes[kAtomicStripes];
};

struct ShmMr {
  SpinLock lock;
  uint32_t key;  // 0: free; else slot << 16 | generation (never 0)
  uint32_t access;
  uint32_t pd;
  uint16_t generation;
  uint64_t addr;
  uint64_t length;
};

struct ShmEvent {
  uint8_t type;
  uint32_t qpn;
  uint64_t cq_off;
};

struct ProcHeader {
  std::atomic<uint32_t> alive;
  int32_t pid;
  uint32_t lid;
  SharedCounters counters;
  SpinLock event_lock;
  uint64_t event_head;
  uint64_t event_tail;
  uint64_t events_lost;
  ShmEvent events[kEventRing];
  std::atomic<uint64_t> qps[kMaxQps + 1];  // ShmQp offsets; 0: none
  ShmMr mrs[kMaxMrs];
};

struct ShmCqe {
  Completion c;
  uint64_t sq_seq;  // send completions: the WR's sequence in its QP
};

struct ShmCq {
  SpinLock lock;
  uint32_t depth;
  uint32_t owner_lid;
  uint64_t head;
  uint64_t tail;
  std::atomic<uint32_t> overflowed;
  // Blocking waits: pushes bump `wake_seq` (a futex word, shared between
  // processes) and wake it, only while `waiters` is nonzero.
  std::atomic<uint32_t> wake_seq;
  std::atomic<uint32_t> waiters;
  ShmCqe entries[];  // depth
};

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX,
          nullptr, nullptr, 0);
}

// Waits while *word == expected, at most `ns` (negative: no limit).
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t ns) {
  timespec ts{};
  timespec* tp = nullptr;
  if (ns >= 0) {
    ts.tv_sec = ns / 1'000'000'000;
    ts.tv_nsec = ns % 1'000'000'000;
    tp = &ts;
  }
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected,
          tp, nullptr, 0);
}

struct ShmRecv {
  uint64_t wr_id;
  uint32_t num_sge;
  Sge sge[kMaxSge];
};

struct ShmRq {
  SpinLock lock;
  uint32_t capacity;
  uint32_t max_sge;
  uint32_t owner_lid;  // SRQs: who gets kSrqLimitReached
  uint32_t limit;      // SRQs: armed while nonzero (one-shot, as verbs)
  uint64_t head;
  uint64_t tail;
  ShmRecv entries[];  // capacity
};

struct ShmQp {
  SpinLock lock;  // held while delivering to this QP
  uint32_t qpn;
  uint8_t type;
  std::atomic<uint8_t> state;
  bool has_srq;
  uint8_t min_rnr_timer;
  uint32_t pd;
  uint32_t access;
  uint32_t qkey;
  uint16_t pkey;        // its P_Key table entry, set in INIT
  uint32_t remote_lid;  // RC: the connected peer
  uint32_t remote_qpn;
  uint32_t expected_psn;
  uint64_t recv_cq_off;
  uint64_t rq_off;  // its own RQ, or the SRQ's
};

std::string ErrnoText(int err) { return std::strerror(err); }

// A device's GUID (and GID interface ID): the job key's and the index's.
uint64_t DeviceHash(const std::string& key, uint32_t index) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  h = (h ^ index) * 1099511628211ull;
  return h;
}

// ---- the mapped device -----------------------------------------------------

// One process's view of the device object.
class Device {
 public:
  Device(uint8_t* base, DeviceHeader* header) : base_(base), header_(header) {}
  uint8_t* base() const { return base_; }
  DeviceHeader* header() const { return header_; }

  template <typename T>
  T* At(uint64_t off) const {
    return reinterpret_cast<T*>(base_ + off);
  }
  template <typename T>
  uint64_t Off(const T* p) const {
    return reinterpret_cast<const uint8_t*>(p) - base_;
  }
  uint64_t ArenaOffset(uint32_t lid) const {
    return header_->arenas_offset + uint64_t{lid - 1} * header_->arena_bytes;
  }
  ProcHeader* Proc(uint32_t lid) const {
    if (lid == 0 || lid > header_->max_procs) return nullptr;
    return At<ProcHeader>(ArenaOffset(lid));
  }
  // The live shared QP `qpn`, or null.
  ShmQp* Qp(uint32_t qpn) const {
    ProcHeader* p = Proc(qpn >> kQpIndexBits);
    if (p == nullptr || p->alive.load(std::memory_order_acquire) == 0) {
      return nullptr;
    }
    uint32_t index = qpn & kMaxQps;
    if (index == 0) return nullptr;
    uint64_t off = p->qps[index].load(std::memory_order_acquire);
    return off == 0 ? nullptr : At<ShmQp>(off);
  }

 private:
  uint8_t* base_;
  DeviceHeader* header_;
};

// Appends an async event to `lid`'s ring (dropped, and counted, when full).
void PostEvent(const Device& dev, uint32_t lid, AsyncEventType type,
               uint32_t qpn, uint64_t cq_off) {
  ProcHeader* p = dev.Proc(lid);
  if (p == nullptr) return;
  std::lock_guard<SpinLock> g(p->event_lock);
  if (p->event_tail - p->event_head == kEventRing) {
    ++p->events_lost;
    return;
  }
  ShmEvent& e = p->events[p->event_tail % kEventRing];
  e.type = static_cast<uint8_t>(type);
  e.qpn = qpn;
  e.cq_off = cq_off;
  ++p->event_tail;
}

// Adds one completion to a CQ. False when the CQ is (or now becomes)
// overflowed: the completion is lost, the owner gets kCqError once.
bool PushCqe(const Device& dev, ShmCq* cq, const Completion& c,
             uint64_t sq_seq) {
  bool first_overflow;
  {
    std::lock_guard<SpinLock> g(cq->lock);
    if (cq->overflowed.load(std::memory_order_relaxed) == 0) {
      if (cq->tail - cq->head < cq->depth) {
        ShmCqe& e = cq->entries[cq->tail % cq->depth];
        e.c = c;
        e.sq_seq = sq_seq;
        ++cq->tail;
        first_overflow = false;
      } else {
        cq->overflowed.store(1, std::memory_order_release);
        first_overflow = true;
      }
    } else {
      return false;
    }
  }
  if (!first_overflow) {
    if (cq->waiters.load(std::memory_order_seq_cst) != 0) {
      cq->wake_seq.fetch_add(1, std::memory_order_seq_cst);
      FutexWakeAll(&cq->wake_seq);
    }
    return true;
  }
  // The first overflow: counted, and the owner hears of it once.
  dev.header()->counters.cq_overflows.fetch_add(1, std::memory_order_relaxed);
  if (ProcHeader* p = dev.Proc(cq->owner_lid)) {
    p->counters.cq_overflows.fetch_add(1, std::memory_order_relaxed);
  }
  PostEvent(dev, cq->owner_lid, AsyncEventType::kCqError, 0, dev.Off(cq));
  return false;
}

Completion FlushCompletion(uint64_t wr_id, uint32_t qpn, WcOpcode op) {
  Completion c;
  c.wr_id = wr_id;
  c.status = WcStatus::kFlushError;
  c.opcode = op;
  c.qp_num = qpn;
  return c;
}

// Moves a shared QP to ERROR and flushes its posted receives (its own RQ;
// an SRQ's belong to the SRQ). The caller holds qp->lock. The owner's send
// queue is flushed by the owner at its next progress.
void ErrorSharedQp(const Device& dev, ShmQp* qp, bool fatal_event) {
  uint8_t old = qp->state.exchange(static_cast<uint8_t>(QpState::kError),
                                   std::memory_order_acq_rel);
  if (old == static_cast<uint8_t>(QpState::kError)) return;
  if (fatal_event) {
    PostEvent(dev, qp->qpn >> kQpIndexBits, AsyncEventType::kQpFatal, qp->qpn,
              0);
  }
  if (qp->has_srq || qp->rq_off == 0) return;
  ShmRq* rq = dev.At<ShmRq>(qp->rq_off);
  ShmCq* cq = dev.At<ShmCq>(qp->recv_cq_off);
  std::lock_guard<SpinLock> g(rq->lock);
  while (rq->head != rq->tail) {
    const ShmRecv& r = rq->entries[rq->head % rq->capacity];
    PushCqe(dev, cq, FlushCompletion(r.wr_id, qp->qpn, WcOpcode::kRecv), 0);
    ++rq->head;
  }
}

// The registration `key` in `proc`, locked, if it is live, in `pd`, grants
// `need` and covers [addr, addr+len). Else null (and nothing held).
ShmMr* LockMr(ProcHeader* proc, uint32_t key, uint32_t pd, uint32_t need,
              uint64_t addr, uint64_t len) {
  uint32_t slot = key >> 16;
  if (proc == nullptr || slot >= kMaxMrs) return nullptr;
  ShmMr* mr = &proc->mrs[slot];
  mr->lock.lock();
  bool ok = mr->key == key && key != 0 && mr->pd == pd &&
            (mr->access & need) == need && addr >= mr->addr &&
            len <= mr->length && addr - mr->addr <= mr->length - len;
  if (!ok) {
    mr->lock.unlock();
    return nullptr;
  }
  return mr;
}

// Moves bytes between this process and `pid` with CMA. False on a fault.
bool RemoteWrite(pid_t pid, const iovec* local, size_t nlocal,
                 const iovec* remote, size_t nremote, size_t total) {
  if (total == 0) return true;
  ssize_t n = process_vm_writev(pid, local, nlocal, remote, nremote, 0);
  return n == static_cast<ssize_t>(total);
}
bool RemoteRead(pid_t pid, const iovec* local, size_t nlocal,
                const iovec* remote, size_t nremote, size_t total) {
  if (total == 0) return true;
  ssize_t n = process_vm_readv(pid, local, nlocal, remote, nremote, 0);
  return n == static_cast<ssize_t>(total);
}

// What the initiator sees when CMA into the target failed: a target
// process that is gone (it died without closing the device) answers nothing,
// so the requester's retries run out (kRetryExceeded), and later requests
// find it dead; any other fault is the responder's error.
WcStatus CmaFailure(ProcHeader* target) {
  if (errno == ESRCH) {
    target->alive.store(0, std::memory_order_release);
    return WcStatus::kRetryExceeded;
  }
  return WcStatus::kRemoteOperationError;
}

// ---- objects ----------------------------------------------------------------

class SoftContext;
class SoftQp;

class SoftCq final : public CompletionQueue {
 public:
  SoftCq(SoftContext* ctx, ShmCq* shm) : ctx_(ctx), shm_(shm) {}
  ~SoftCq() override;
  absl::StatusOr<size_t> Poll(std::span<Completion> out) override;
  uint32_t depth() const override { return shm_->depth; }
  absl::Status RequestNotify() override {
    if (!armed_.exchange(true)) {
      shm_->waiters.fetch_add(1, std::memory_order_seq_cst);
    }
    armed_seq_.store(shm_->wake_seq.load(std::memory_order_seq_cst));
    return absl::OkStatus();
  }
  absl::StatusOr<bool> WaitNotify(int64_t timeout_ns) override;
  void Interrupt() override {
    interrupted_.store(true, std::memory_order_seq_cst);
    shm_->wake_seq.fetch_add(1, std::memory_order_seq_cst);
    FutexWakeAll(&shm_->wake_seq);
  }
  ShmCq* shm() const { return shm_; }

 private:
  SoftContext* ctx_;
  ShmCq* shm_;
  std::atomic<bool> armed_{false};
  std::atomic<uint32_t> armed_seq_{0};
  std::atomic<bool> interrupted_{false};
};

absl::StatusOr<bool> SoftCq::WaitNotify(int64_t timeout_ns) {
  if (!armed_.load()) {
    return absl::FailedPreconditionError("WaitNotify without RequestNotify");
  }
  const uint64_t start = NowNs();
  bool arrived = false;
  for (;;) {
    if (interrupted_.exchange(false)) break;
    uint32_t seq = shm_->wake_seq.load(std::memory_order_seq_cst);
    if (seq != armed_seq_.load()) {
      arrived = true;
      break;
    }
    int64_t left = -1;
    if (timeout_ns >= 0) {
      left = timeout_ns - static_cast<int64_t>(NowNs() - start);
      if (left <= 0) break;
    }
    FutexWait(&shm_->wake_seq, seq, left);
  }
  if (armed_.exchange(false)) {
    shm_->waiters.fetch_sub(1, std::memory_order_seq_cst);
  }
  return arrived;
}

class SoftMr final : public MemoryRegion {
 public:
  SoftMr(ShmMr* slot, void* addr, size_t len, uint32_t key, uint32_t access)
      : MemoryRegion(addr, len, key, key, access), slot_(slot) {}
  ~SoftMr() override {
    // Waits for any access in flight (it holds the lock), then the key is
    // dead: a later access with it fails, even once the slot is reused
    // (the generation differs).
    std::lock_guard<SpinLock> g(slot_->lock);
    slot_->key = 0;
  }

 private:
  ShmMr* slot_;
};

class SoftAh final : public AddressHandle {
 public:
  explicit SoftAh(const AhAttr& attr) : attr_(attr) {}
  const AhAttr& attr() const { return attr_; }

 private:
  AhAttr attr_;
};

class SoftSrq final : public SharedReceiveQueue {
 public:
  SoftSrq(SoftContext* ctx, ShmRq* rq) : ctx_(ctx), rq_(rq) {}
  ~SoftSrq() override;
  absl::Status PostRecv(const RecvWr& wr) override;
  absl::Status ArmLimit(uint32_t limit) override {
    if (limit > rq_->capacity) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "SRQ limit %u exceeds its %u WRs", limit, rq_->capacity));
    }
    std::lock_guard<SpinLock> g(rq_->lock);
    rq_->limit = limit;
    return absl::OkStatus();
  }
  ShmRq* rq() const { return rq_; }

 private:
  SoftContext* ctx_;
  ShmRq* rq_;
};

absl::Status PushRecv(ShmRq* rq, const RecvWr& wr) {
  if (wr.num_sge > rq->max_sge) {
    return absl::InvalidArgumentError(
        absl::StrFormat("receive WR has %u SGEs; the queue allows %u",
                        wr.num_sge, rq->max_sge));
  }
  std::lock_guard<SpinLock> g(rq->lock);
  if (rq->tail - rq->head == rq->capacity) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("receive queue full (%u WRs)", rq->capacity));
  }
  ShmRecv& r = rq->entries[rq->tail % rq->capacity];
  r.wr_id = wr.wr_id;
  r.num_sge = wr.num_sge;
  for (uint32_t i = 0; i < wr.num_sge; ++i) r.sge[i] = wr.sg_list[i];
  ++rq->tail;
  return absl::OkStatus();
}

absl::Status SoftSrq::PostRecv(const RecvWr& wr) { return PushRecv(rq_, wr); }

class SoftPd final : public ProtectionDomain {
 public:
  SoftPd(SoftContext* ctx, uint32_t id) : ctx_(ctx), id_(id) {}
  absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(
      void* addr, size_t length, uint32_t access) override;
  absl::StatusOr<std::unique_ptr<QueuePair>> CreateQp(
      const QpInitAttr& attr) override;
  absl::StatusOr<std::unique_ptr<SharedReceiveQueue>> CreateSrq(
      const SrqInitAttr& attr) override;
  absl::StatusOr<std::unique_ptr<AddressHandle>> CreateAddressHandle(
      const AhAttr& attr) override {
    if (attr.dlid == 0 && !attr.use_gid) {
      return absl::InvalidArgumentError("address handle with no LID");
    }
    return std::unique_ptr<AddressHandle>(new SoftAh(attr));
  }
  uint32_t id() const { return id_; }

 private:
  SoftContext* ctx_;
  uint32_t id_;
};

class SoftContext final : public Context {
 public:
  SoftContext(const SoftDeviceOptions& options, std::string name,
              std::string shm_name, uint8_t* base, size_t size, uint32_t lid)
      : options_(options),
        shm_name_(std::move(shm_name)),
        dev_(base, reinterpret_cast<DeviceHeader*>(base)),
        size_(size),
        lid_(lid),
        pid_(getpid()),
        name_(std::move(name)) {
    proc_ = dev_.Proc(lid);
    bump_ = dev_.ArenaOffset(lid) + ((sizeof(ProcHeader) + 63) & ~63ull);
    arena_end_ = dev_.ArenaOffset(lid) + dev_.header()->arena_bytes;
  }
  ~SoftContext() override;

  const std::string& name() const override { return name_; }
  absl::StatusOr<DeviceAttr> QueryDevice() override;
  absl::StatusOr<PortAttr> QueryPort(uint8_t port) override;
  absl::StatusOr<uint16_t> QueryPkey(uint8_t port, uint16_t index) override;
  // InvalidArgument unless `port` is 1, the device's one port.
  absl::Status CheckPort(uint8_t port) const;
  absl::StatusOr<std::unique_ptr<ProtectionDomain>> AllocPd() override {
    std::lock_guard<std::mutex> g(mu_);
    return std::unique_ptr<ProtectionDomain>(new SoftPd(this, ++next_pd_));
  }
  absl::StatusOr<std::unique_ptr<CompletionQueue>> CreateCq(
      uint32_t depth) override;
  std::optional<AsyncEvent> PollAsyncEvent() override;
  std::optional<DeviceCounters> Counters() const override {
    return proc_->counters.Read();
  }
  std::optional<DeviceCounters> JobCounters() const override {
    return dev_.header()->counters.Read();
  }

  const Device& dev() const { return dev_; }
  ProcHeader* proc() const { return proc_; }
  uint32_t lid() const { return lid_; }
  uint32_t max_inline() const { return dev_.header()->max_inline; }
  uint32_t mtu() const { return dev_.header()->mtu; }

  // Arena memory for a shared structure, zeroed; 0 when the arena is full.
  uint64_t Allocate(uint64_t bytes) {
    std::lock_guard<std::mutex> g(mu_);
    uint64_t off = bump_;
    uint64_t end = off + ((bytes + 63) & ~63ull);
    if (end > arena_end_) return 0;
    bump_ = end;
    std::memset(dev_.base() + off, 0, bytes);
    return off;
  }

  absl::StatusOr<uint32_t> ReserveQpIndex();
  void PublishQp(uint32_t index, SoftQp* qp, uint64_t shm_off);
  void RemoveQp(uint32_t index);
  SoftQp* LocalQp(uint32_t qpn) const {
    return (qpn >> kQpIndexBits) == lid_
               ? qps_[qpn & kMaxQps].load(std::memory_order_acquire)
               : nullptr;
  }
  void AddCq(SoftCq* cq) {
    std::lock_guard<std::mutex> g(mu_);
    cqs_[dev_.Off(cq->shm())] = cq;
  }
  void AddSrq(SoftSrq* srq) {
    std::lock_guard<std::mutex> g(mu_);
    srqs_[dev_.Off(srq->rq())] = srq;
  }
  void RemoveSrq(SoftSrq* srq) {
    std::lock_guard<std::mutex> g(mu_);
    srqs_.erase(dev_.Off(srq->rq()));
  }
  void RemoveCq(SoftCq* cq) {
    std::lock_guard<std::mutex> g(mu_);
    cqs_.erase(dev_.Off(cq->shm()));
  }
  // Send queues waiting for a retry (RNR, timeout) or for a flush.
  std::atomic<int> waiting_qps{0};
  void ProgressWaiting();

  void Add(std::atomic<uint64_t> SharedCounters::*field) {
    (proc_->counters.*field).fetch_add(1, std::memory_order_relaxed);
    (dev_.header()->counters.*field).fetch_add(1, std::memory_order_relaxed);
  }

 private:
  SoftDeviceOptions options_;
  std::string shm_name_;
  Device dev_;
  size_t size_;
  uint32_t lid_;
  pid_t pid_;
  std::string name_;
  ProcHeader* proc_;
  std::mutex mu_;  // object creation, tables
  uint64_t bump_;
  uint64_t arena_end_;
  uint32_t next_pd_ = 0;
  std::atomic<uint32_t> next_qp_index_{1};
  // By QP index; read by polls without mu_.
  std::unique_ptr<std::atomic<SoftQp*>[]> qps_ {
    new std::atomic<SoftQp*>[ kMaxQps + 1 ]()
  };
  std::unordered_map<uint64_t, SoftCq*> cqs_;
  std::unordered_map<uint64_t, SoftSrq*> srqs_;
};

// ---- queue pairs
// -------------------------------------------------------------

class SoftQp final : public QueuePair {
 public:
  SoftQp(SoftContext* ctx, SoftPd* pd, const QpInitAttr& attr,
         const QpCaps& caps, uint32_t qpn, ShmQp* shm)
      : QueuePair(qpn, attr.type, caps),
        ctx_(ctx),
        pd_(pd),
        send_cq_(static_cast<SoftCq*>(attr.send_cq)),
        shm_(shm),
        sig_all_(attr.sq_sig_all),
        ring_(caps.max_send_wr),
        sges_(size_t{caps.max_send_wr} * caps.max_send_sge),
        inline_(size_t{caps.max_send_wr} * std::max(caps.max_inline_data, 1u)) {
    // Each slot's SGEs: max_send_sge of them (PostSend refuses more), not
    // the device's maximum, so that a QP's send ring costs what it was
    // created for.
    for (size_t i = 0; i < ring_.size(); ++i) {
      ring_[i].sge = sges_.data() + i * caps.max_send_sge;
    }
  }
  ~SoftQp() override;

  QpState state() const override {
    return static_cast<QpState>(shm_->state.load(std::memory_order_acquire));
  }
  absl::Status ToInit(const QpInitStateAttr& attr) override;
  absl::Status ToRtr(const QpRtrAttr& attr) override;
  absl::Status ToRts(const QpRtsAttr& attr) override;
  absl::Status ToError() override;
  absl::Status ToReset() override;
  absl::Status PostSend(const SendWr& wr) override;
  absl::Status PostRecv(const RecvWr& wr) override;

  // Runs what the send queue holds, as far as it can (caller holds mu_).
  void Progress();
  // The same, from a CQ poll of the context.
  void ProgressFromPoll() {
    if (!waiting_.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> g(mu_);
    if (waiting_) Progress();
  }
  // A send completion for sequence `seq` was polled: slots up to it free.
  void Reclaim(uint64_t seq) {
    uint64_t cur = reclaimed_.load(std::memory_order_relaxed);
    while (seq + 1 > cur && !reclaimed_.compare_exchange_weak(
                                cur, seq + 1, std::memory_order_relaxed)) {
    }
  }
  ShmQp* shm() const { return shm_; }
  void set_index(uint32_t index) { index_ = index; }

 private:
  struct Pending {
    SendWr wr;
    Sge* sge;         // max_send_sge entries in sges_
    uint32_t length;  // total payload bytes
    bool signaled;
  };
  enum class Outcome { kDone, kRnr, kNotReady };

  // Executes one WR; on kDone, *status says how it went.
  Outcome Execute(Pending& p, uint64_t seq, WcStatus* status);
  Outcome ExecuteRc(Pending& p, uint64_t seq, WcStatus* status);
  Outcome ExecuteUd(Pending& p, uint64_t seq, WcStatus* status);
  bool CheckLocal(const Pending& p) const;
  // Fills `iov` with the payload's local pieces; returns how many.
  size_t LocalIov(const Pending& p, uint64_t seq, iovec* iov) const;
  WcStatus DeliverRecv(ShmQp* t, ProcHeader* tp, const Pending& p, uint64_t seq,
                       size_t grh, bool* rnr);
  void Complete(const Pending& p, uint64_t seq, WcStatus status);
  void EnterErrorLocked();
  void FlushLocked();
  WcOpcode SendOpcode(Opcode op) const;
  uint8_t* InlineSlot(uint64_t seq) {
    return inline_.data() +
           (seq % ring_.size()) * std::max(caps().max_inline_data, 1u);
  }

  SoftContext* ctx_;
  SoftPd* pd_;
  SoftCq* send_cq_;
  ShmQp* shm_;
  bool sig_all_;
  uint32_t index_ = 0;
  std::mutex mu_;  // the send queue
  std::vector<Pending> ring_;
  std::vector<Sge> sges_;  // ring_'s SGEs, max_send_sge per slot
  std::vector<uint8_t> inline_;
  uint64_t posted_ = 0;    // next sequence
  uint64_t executed_ = 0;  // sequences below this have run or flushed
  std::atomic<uint64_t> reclaimed_{0};
  // Counted in ctx_->waiting_qps; written under mu_, read without it.
  std::atomic<bool> waiting_{false};
  uint32_t rnr_failures_ = 0;
  uint32_t timeouts_ = 0;
  uint64_t retry_at_ns_ = 0;
  // RC connection.
  uint32_t remote_lid_ = 0;
  uint32_t remote_qpn_ = 0;
  uint32_t sq_psn_ = 0;
  uint8_t timeout_ = 14;
  uint8_t retry_cnt_ = 7;
  uint8_t rnr_retry_ = 7;
  uint8_t port_ = 1;
};

WcOpcode SoftQp::SendOpcode(Opcode op) const {
  switch (op) {
    case Opcode::kSend:
    case Opcode::kSendWithImm:
      return WcOpcode::kSend;
    case Opcode::kRdmaWrite:
    case Opcode::kRdmaWriteWithImm:
      return WcOpcode::kRdmaWrite;
    case Opcode::kRdmaRead:
      return WcOpcode::kRdmaRead;
    case Opcode::kAtomicFetchAdd:
      return WcOpcode::kAtomicFetchAdd;
    case Opcode::kAtomicCompareSwap:
      return WcOpcode::kAtomicCompareSwap;
  }
  return WcOpcode::kSend;
}

absl::Status SoftQp::ToInit(const QpInitStateAttr& attr) {
  std::lock_guard<std::mutex> g(mu_);
  QpState s = state();
  if (s != QpState::kReset && s != QpState::kInit) {
    return absl::FailedPreconditionError(
        absl::StrCat("QP ", qp_num(), ": INIT from ", ToAbsl(ToString(s))));
  }
  if (attr.port != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "port ", attr.port, ": ", kSoftDeviceName, " has port 1 only"));
  }
  absl::StatusOr<uint16_t> pkey = ctx_->QueryPkey(attr.port, attr.pkey_index);
  if (!pkey.ok()) return pkey.status();
  std::lock_guard<SpinLock> l(shm_->lock);
  shm_->access = attr.access;
  shm_->qkey = attr.qkey;
  shm_->pkey = *pkey;
  port_ = attr.port;
  shm_->state.store(static_cast<uint8_t>(QpState::kInit),
                    std::memory_order_release);
  return absl::OkStatus();
}

absl::Status SoftQp::ToRtr(const QpRtrAttr& attr) {
  std::lock_guard<std::mutex> g(mu_);
  QpState s = state();
  if (s != QpState::kInit) {
    return absl::FailedPreconditionError(
        absl::StrCat("QP ", qp_num(), ": RTR from ", ToAbsl(ToString(s))));
  }
  if (type() == QpType::kRc) {
    if (attr.remote.qpn == 0 || (attr.remote.lid == 0 && !attr.use_gid)) {
      return absl::InvalidArgumentError(
          absl::StrCat("QP ", qp_num(), ": RTR needs the remote LID and QPN"));
    }
    if (!IsValidMtu(attr.path_mtu)) {
      return absl::InvalidArgumentError(
          absl::StrCat("QP ", qp_num(), ": path MTU ", attr.path_mtu));
    }
    uint32_t lid = attr.remote.lid;
    if (attr.use_gid) {
      // Our GIDs carry the LID in their last two bytes.
      lid = (uint32_t{attr.remote.gid.raw[14]} << 8) | attr.remote.gid.raw[15];
    }
    remote_lid_ = lid;
    remote_qpn_ = attr.remote.qpn;
  }
  std::lock_guard<SpinLock> l(shm_->lock);
  shm_->remote_lid = remote_lid_;
  shm_->remote_qpn = remote_qpn_;
  shm_->expected_psn = attr.remote.psn & 0xffffff;
  shm_->min_rnr_timer = attr.min_rnr_timer;
  shm_->state.store(static_cast<uint8_t>(QpState::kRtr),
                    std::memory_order_release);
  return absl::OkStatus();
}

absl::Status SoftQp::ToRts(const QpRtsAttr& attr) {
  std::lock_guard<std::mutex> g(mu_);
  QpState s = state();
  if (s != QpState::kRtr) {
    return absl::FailedPreconditionError(
        absl::StrCat("QP ", qp_num(), ": RTS from ", ToAbsl(ToString(s))));
  }
  if (attr.retry_cnt > 7 || attr.rnr_retry > 7 || attr.timeout > 31) {
    return absl::InvalidArgumentError(
        absl::StrCat("QP ", qp_num(),
                     ": retry_cnt and rnr_retry are 0..7, "
                     "timeout 0..31"));
  }
  sq_psn_ = attr.sq_psn & 0xffffff;
  timeout_ = attr.timeout;
  retry_cnt_ = attr.retry_cnt;
  rnr_retry_ = attr.rnr_retry;
  shm_->state.store(static_cast<uint8_t>(QpState::kRts),
                    std::memory_order_release);
  return absl::OkStatus();
}

absl::Status SoftQp::ToError() {
  std::lock_guard<std::mutex> g(mu_);
  {
    std::lock_guard<SpinLock> l(shm_->lock);
    ErrorSharedQp(ctx_->dev(), shm_, false);
  }
  FlushLocked();
  return absl::OkStatus();
}

absl::Status SoftQp::ToReset() {
  std::lock_guard<std::mutex> g(mu_);
  {
    std::lock_guard<SpinLock> l(shm_->lock);
    shm_->state.store(static_cast<uint8_t>(QpState::kReset),
                      std::memory_order_release);
    if (!shm_->has_srq) {
      ShmRq* rq = ctx_->dev().At<ShmRq>(shm_->rq_off);
      std::lock_guard<SpinLock> r(rq->lock);
      rq->head = rq->tail;
    }
  }
  executed_ = posted_;
  reclaimed_.store(posted_, std::memory_order_relaxed);
  if (waiting_) {
    waiting_ = false;
    ctx_->waiting_qps.fetch_sub(1, std::memory_order_relaxed);
  }
  rnr_failures_ = timeouts_ = 0;
  return absl::OkStatus();
}

absl::Status SoftQp::PostRecv(const RecvWr& wr) {
  if (shm_->has_srq) {
    return absl::FailedPreconditionError(
        absl::StrCat("QP ", qp_num(), " receives from an SRQ"));
  }
  QpState s = state();
  if (s == QpState::kReset) {
    return absl::FailedPreconditionError(
        absl::StrCat("QP ", qp_num(), ": receive posted in RESET"));
  }
  ShmRq* rq = ctx_->dev().At<ShmRq>(shm_->rq_off);
  if (s == QpState::kError) {
    // Flushed at once, as verbs does in ERROR.
    if (wr.num_sge > rq->max_sge) {
      return absl::InvalidArgumentError("too many SGEs");
    }
    PushCqe(ctx_->dev(), ctx_->dev().At<ShmCq>(shm_->recv_cq_off),
            FlushCompletion(wr.wr_id, qp_num(), WcOpcode::kRecv), 0);
    return absl::OkStatus();
  }
  return PushRecv(rq, wr);
}

absl::Status SoftQp::PostSend(const SendWr& wr) {
  std::lock_guard<std::mutex> g(mu_);
  QpState s = state();
  if (s != QpState::kRts && s != QpState::kError) {
    return absl::FailedPreconditionError(
        absl::StrCat("QP ", qp_num(), ": send posted in ", ToAbsl(ToString(s)),
                     " (needs RTS)"));
  }
  if (posted_ - reclaimed_.load(std::memory_order_relaxed) >= ring_.size()) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("QP %u: send queue full (%zu WRs outstanding)",
                        qp_num(), ring_.size()));
  }
  if (wr.num_sge > caps().max_send_sge) {
    return absl::InvalidArgumentError(
        absl::StrFormat("QP %u: %u SGEs, max_send_sge is %u", qp_num(),
                        wr.num_sge, caps().max_send_sge));
  }
  bool is_send =
      wr.opcode == Opcode::kSend || wr.opcode == Opcode::kSendWithImm;
  bool is_atomic = wr.opcode == Opcode::kAtomicFetchAdd ||
                   wr.opcode == Opcode::kAtomicCompareSwap;
  if (type() == QpType::kUd && (!is_send || wr.ah == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "QP ", qp_num(), ": UD posts sends with an address handle only"));
  }
  uint64_t length = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) length += wr.sg_list[i].length;
  if (wr.flags & kSendInline) {
    if (wr.opcode == Opcode::kRdmaRead || is_atomic) {
      return absl::InvalidArgumentError(
          absl::StrCat("QP ", qp_num(), ": ", ToAbsl(ToString(wr.opcode)),
                       " cannot be inline"));
    }
    if (length > caps().max_inline_data) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "QP %u: inline payload of %u bytes exceeds max_inline_data %u",
          qp_num(), length, caps().max_inline_data));
    }
  }
  if (is_atomic && (wr.num_sge != 1 || length != 8)) {
    return absl::InvalidArgumentError(
        absl::StrCat("QP ", qp_num(), ": an atomic takes one 8-byte SGE"));
  }
  if (type() == QpType::kUd && length > ctx_->mtu()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("QP %u: UD payload of %u bytes exceeds the MTU %u",
                        qp_num(), length, ctx_->mtu()));
  }
  if (length > kMaxMessage) {
    return absl::InvalidArgumentError("message larger than max_msg_sz");
  }

  uint64_t seq = posted_++;
  Pending& p = ring_[seq % ring_.size()];
  p.wr = wr;
  p.length = static_cast<uint32_t>(length);
  p.signaled = sig_all_ || (wr.flags & kSendSignaled) != 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) p.sge[i] = wr.sg_list[i];
  p.wr.sg_list = p.sge;
  if (wr.flags & kSendInline) {
    uint8_t* dst = InlineSlot(seq);
    for (uint32_t i = 0; i < wr.num_sge; ++i) {
      std::memcpy(dst, reinterpret_cast<const void*>(wr.sg_list[i].addr),
                  wr.sg_list[i].length);
      dst += wr.sg_list[i].length;
    }
  }
  if (executed_ == seq) Progress();
  return absl::OkStatus();
}

size_t SoftQp::LocalIov(const Pending& p, uint64_t seq, iovec* iov) const {
  if (p.wr.flags & kSendInline) {
    iov[0].iov_base = const_cast<SoftQp*>(this)->InlineSlot(seq);
    iov[0].iov_len = p.length;
    return 1;
  }
  size_t n = 0;
  for (uint32_t i = 0; i < p.wr.num_sge; ++i) {
    if (p.sge[i].length == 0) continue;
    iov[n].iov_base = reinterpret_cast<void*>(p.sge[i].addr);
    iov[n].iov_len = p.sge[i].length;
    ++n;
  }
  return n;
}

bool SoftQp::CheckLocal(const Pending& p) const {
  if (p.wr.flags & kSendInline) return true;
  bool writes = p.wr.opcode == Opcode::kRdmaRead ||
                p.wr.opcode == Opcode::kAtomicFetchAdd ||
                p.wr.opcode == Opcode::kAtomicCompareSwap;
  for (uint32_t i = 0; i < p.wr.num_sge; ++i) {
    const Sge& s = p.sge[i];
    if (s.length == 0) continue;
    ShmMr* mr =
        LockMr(ctx_->proc(), s.lkey, pd_->id(),
               writes ? uint32_t{kAccessLocalWrite} : 0u, s.addr, s.length);
    if (mr == nullptr) return false;
    mr->lock.unlock();
  }
  return true;
}

// Takes the next receive WR of `t` (locked by the caller) and writes the
// payload into it. *rnr when there is none.
WcStatus SoftQp::DeliverRecv(ShmQp* t, ProcHeader* tp, const Pending& p,
                             uint64_t seq, size_t grh, bool* rnr) {
  const Device& dev = ctx_->dev();
  ShmRq* rq = dev.At<ShmRq>(t->rq_off);
  ShmRecv r;
  {
    std::lock_guard<SpinLock> g(rq->lock);
    if (rq->head == rq->tail) {
      *rnr = true;
      return WcStatus::kSuccess;
    }
    r = rq->entries[rq->head % rq->capacity];
    ++rq->head;
    if (rq->limit != 0 && rq->tail - rq->head < rq->limit) {
      rq->limit = 0;
      PostEvent(dev, rq->owner_lid, AsyncEventType::kSrqLimitReached, 0,
                dev.Off(rq));
    }
  }
  *rnr = false;
  ShmCq* cq = dev.At<ShmCq>(t->recv_cq_off);
  Completion rc;
  rc.wr_id = r.wr_id;
  rc.qp_num = t->qpn;
  bool is_write = p.wr.opcode == Opcode::kRdmaWriteWithImm;
  rc.opcode = is_write ? WcOpcode::kRecvRdmaWithImm : WcOpcode::kRecv;
  rc.with_imm = p.wr.opcode == Opcode::kSendWithImm || is_write;
  rc.imm_data = rc.with_imm ? p.wr.imm_data : 0;
  rc.byte_len = static_cast<uint32_t>(p.length + grh);
  if (t->type == static_cast<uint8_t>(QpType::kUd)) {
    rc.src_qp = qp_num();
    rc.slid = static_cast<uint16_t>(ctx_->lid());
  }
  WcStatus target_status = WcStatus::kSuccess;
  WcStatus initiator_status = WcStatus::kSuccess;
  if (!is_write) {
    // The receive's SGEs must be live local-write registrations of the
    // target's PD, and hold the payload.
    iovec remote[kMaxSge];
    size_t nremote = 0;
    uint64_t room = 0;
    for (uint32_t i = 0; i < r.num_sge; ++i) {
      const Sge& s = r.sge[i];
      if (s.length == 0) continue;
      ShmMr* mr =
          LockMr(tp, s.lkey, t->pd, kAccessLocalWrite, s.addr, s.length);
      if (mr == nullptr) {
        target_status = WcStatus::kLocalProtectionError;
        break;
      }
      mr->lock.unlock();
      remote[nremote].iov_base = reinterpret_cast<void*>(s.addr);
      remote[nremote].iov_len = s.length;
      ++nremote;
      room += s.length;
    }
    if (target_status == WcStatus::kSuccess && room < p.length + grh) {
      target_status = WcStatus::kLocalLengthError;
    }
    if (target_status == WcStatus::kSuccess) {
      // Trim the receive's pieces to GRH + payload.
      uint64_t want = p.length + grh;
      size_t n = 0;
      for (; n < nremote && want > 0; ++n) {
        if (remote[n].iov_len > want) remote[n].iov_len = want;
        want -= remote[n].iov_len;
      }
      nremote = n;
      static const uint8_t kZeroGrh[kUdGrhBytes] = {};
      iovec local[kMaxSge + 1];
      size_t nlocal = 0;
      if (grh) local[nlocal++] = {const_cast<uint8_t*>(kZeroGrh), grh};
      nlocal += LocalIov(p, seq, local + nlocal);
      if (!RemoteWrite(tp->pid, local, nlocal, remote, nremote,
                       p.length + grh)) {
        WcStatus failure = CmaFailure(tp);
        if (failure == WcStatus::kRetryExceeded) return failure;
        target_status = WcStatus::kLocalProtectionError;
      }
    }
    if (target_status != WcStatus::kSuccess) {
      initiator_status = WcStatus::kRemoteOperationError;
      if (target_status == WcStatus::kLocalLengthError) {
        initiator_status = WcStatus::kRemoteInvalidRequest;
      }
    }
  }
  rc.status = target_status;
  if (!PushCqe(dev, cq, rc, 0)) {
    ErrorSharedQp(dev, t, true);
  } else if (target_status != WcStatus::kSuccess) {
    ErrorSharedQp(dev, t, false);
  }
  return initiator_status;
}

SoftQp::Outcome SoftQp::ExecuteUd(Pending& p, uint64_t seq, WcStatus* status) {
  const Device& dev = ctx_->dev();
  *status = WcStatus::kSuccess;  // UD: the sender never learns of a drop
  const AhAttr& ah = static_cast<SoftAh*>(p.wr.ah)->attr();
  uint32_t lid = ah.dlid;
  if (ah.use_gid) lid = (uint32_t{ah.dgid.raw[14]} << 8) | ah.dgid.raw[15];
  ShmQp* t = (p.wr.remote_qpn >> kQpIndexBits) == lid ? dev.Qp(p.wr.remote_qpn)
                                                      : nullptr;
  auto drop = [&] {
    ctx_->Add(&SharedCounters::ud_drops);
    return Outcome::kDone;
  };
  if (t == nullptr) return drop();
  std::lock_guard<SpinLock> g(t->lock);
  QpState ts = static_cast<QpState>(t->state.load(std::memory_order_acquire));
  if ((ts != QpState::kRtr && ts != QpState::kRts) ||
      t->type != static_cast<uint8_t>(QpType::kUd) ||
      t->qkey != p.wr.remote_qkey) {
    return drop();
  }
  if (!PkeysMatch(shm_->pkey, t->pkey)) {
    ctx_->Add(&SharedCounters::pkey_drops);
    return Outcome::kDone;
  }
  bool rnr = false;
  DeliverRecv(t, dev.Proc(lid), p, seq, kUdGrhBytes, &rnr);
  if (rnr) return drop();
  return Outcome::kDone;
}

SoftQp::Outcome SoftQp::ExecuteRc(Pending& p, uint64_t seq, WcStatus* status) {
  const Device& dev = ctx_->dev();
  ShmQp* t = dev.Qp(remote_qpn_);
  if (t == nullptr || (remote_qpn_ >> kQpIndexBits) != remote_lid_) {
    return Outcome::kNotReady;
  }
  ProcHeader* tp = dev.Proc(remote_lid_);
  std::lock_guard<SpinLock> g(t->lock);
  QpState ts = static_cast<QpState>(t->state.load(std::memory_order_acquire));
  // A responder that is not ready, is connected elsewhere or expects
  // another PSN drops the packets: the requester times out and retries.
  if ((ts != QpState::kRtr && ts != QpState::kRts) ||
      t->type != static_cast<uint8_t>(QpType::kRc) ||
      t->remote_qpn != qp_num() || t->remote_lid != ctx_->lid() ||
      t->expected_psn != sq_psn_) {
    return Outcome::kNotReady;
  }
  // Another partition's packets are dropped too (counted: nothing else
  // tells a P_Key mismatch from a responder that is not ready).
  if (!PkeysMatch(shm_->pkey, t->pkey)) {
    ctx_->Add(&SharedCounters::pkey_drops);
    return Outcome::kNotReady;
  }
  *status = WcStatus::kSuccess;
  auto remote_error = [&](WcStatus s) {
    ctx_->Add(&SharedCounters::remote_access_errors);
    *status = s;
  };
  const Opcode op = p.wr.opcode;
  const uint64_t len = p.length;
  switch (op) {
    case Opcode::kSend:
    case Opcode::kSendWithImm: {
      bool rnr = false;
      *status = DeliverRecv(t, tp, p, seq, 0, &rnr);
      if (rnr) return Outcome::kRnr;
      break;
    }
    case Opcode::kRdmaWrite:
    case Opcode::kRdmaWriteWithImm: {
      ShmMr* mr = (t->access & kAccessRemoteWrite)
                      ? LockMr(tp, p.wr.rkey, t->pd, kAccessRemoteWrite,
                               p.wr.remote_addr, len)
                      : nullptr;
      if (mr == nullptr) {
        remote_error(WcStatus::kRemoteAccessError);
        break;
      }
      if (op == Opcode::kRdmaWriteWithImm) {
        // Needs a receive WR; without one nothing is written (RNR).
        ShmRq* rq = dev.At<ShmRq>(t->rq_off);
        bool empty;
        {
          std::lock_guard<SpinLock> r(rq->lock);
          empty = rq->head == rq->tail;
        }
        if (empty) {
          mr->lock.unlock();
          return Outcome::kRnr;
        }
      }
      iovec local[kMaxSge];
      size_t nlocal = LocalIov(p, seq, local);
      iovec remote{reinterpret_cast<void*>(p.wr.remote_addr), len};
      bool ok = RemoteWrite(tp->pid, local, nlocal, &remote, 1, len);
      mr->lock.unlock();
      if (!ok) {
        *status = CmaFailure(tp);
        break;
      }
      if (op == Opcode::kRdmaWriteWithImm) {
        // The receive gets the immediate data and the length, no payload.
        // (Another QP of a shared SRQ may have taken the last receive since
        // the check: then this is an RNR, and the retry rewrites the data.)
        bool rnr = false;
        DeliverRecv(t, tp, p, seq, 0, &rnr);
        if (rnr) return Outcome::kRnr;
      }
      break;
    }
    case Opcode::kRdmaRead: {
      ShmMr* mr = (t->access & kAccessRemoteRead)
                      ? LockMr(tp, p.wr.rkey, t->pd, kAccessRemoteRead,
                               p.wr.remote_addr, len)
                      : nullptr;
      if (mr == nullptr) {
        remote_error(WcStatus::kRemoteAccessError);
        break;
      }
      iovec local[kMaxSge];
      size_t nlocal = LocalIov(p, seq, local);
      iovec remote{reinterpret_cast<void*>(p.wr.remote_addr), len};
      bool ok = RemoteRead(tp->pid, local, nlocal, &remote, 1, len);
      mr->lock.unlock();
      if (!ok) *status = CmaFailure(tp);
      break;
    }
    case Opcode::kAtomicFetchAdd:
    case Opcode::kAtomicCompareSwap: {
      if (p.wr.remote_addr % 8 != 0) {
        *status = WcStatus::kRemoteInvalidRequest;
        break;
      }
      ShmMr* mr = (t->access & kAccessRemoteAtomic)
                      ? LockMr(tp, p.wr.rkey, t->pd, kAccessRemoteAtomic,
                               p.wr.remote_addr, 8)
                      : nullptr;
      if (mr == nullptr) {
        remote_error(WcStatus::kRemoteAccessError);
        break;
      }
      // Atomic with respect to every other atomic through this device
      // (AtomicCap::kHca): one stripe lock per (LID, word).
      SpinLock& stripe =
          dev.header()
              ->stripes[(remote_lid_ * 2654435761u ^ (p.wr.remote_addr >> 3)) %
                        kAtomicStripes];
      uint64_t old = 0;
      bool ok;
      {
        std::lock_guard<SpinLock> s(stripe);
        iovec l{&old, 8};
        iovec r{reinterpret_cast<void*>(p.wr.remote_addr), 8};
        ok = RemoteRead(tp->pid, &l, 1, &r, 1, 8);
        if (ok) {
          uint64_t next = old;
          if (op == Opcode::kAtomicFetchAdd) {
            next = old + p.wr.compare_add;
          } else if (old == p.wr.compare_add) {
            next = p.wr.swap;
          }
          if (next != old) {
            iovec nl{&next, 8};
            ok = RemoteWrite(tp->pid, &nl, 1, &r, 1, 8);
          }
        }
      }
      mr->lock.unlock();
      if (!ok) {
        *status = CmaFailure(tp);
        break;
      }
      std::memcpy(reinterpret_cast<void*>(p.sge[0].addr), &old, 8);
      break;
    }
  }
  // The packet was accepted (even if refused with a NAK): both PSNs move.
  t->expected_psn = (t->expected_psn + 1) & 0xffffff;
  sq_psn_ = (sq_psn_ + 1) & 0xffffff;
  return Outcome::kDone;
}

SoftQp::Outcome SoftQp::Execute(Pending& p, uint64_t seq, WcStatus* status) {
  if (!CheckLocal(p)) {
    *status = WcStatus::kLocalProtectionError;
    return Outcome::kDone;
  }
  return type() == QpType::kUd ? ExecuteUd(p, seq, status)
                               : ExecuteRc(p, seq, status);
}

void SoftQp::Complete(const Pending& p, uint64_t seq, WcStatus status) {
  if (!p.signaled && status == WcStatus::kSuccess) return;
  Completion c;
  c.wr_id = p.wr.wr_id;
  c.status = status;
  c.opcode = SendOpcode(p.wr.opcode);
  c.qp_num = qp_num();
  if (status == WcStatus::kSuccess &&
      (c.opcode == WcOpcode::kRdmaRead ||
       c.opcode == WcOpcode::kAtomicFetchAdd ||
       c.opcode == WcOpcode::kAtomicCompareSwap)) {
    c.byte_len = p.length;
  }
  if (!PushCqe(ctx_->dev(), send_cq_->shm(), c, seq)) {
    // The completion is lost: the QP can no longer be trusted.
    std::lock_guard<SpinLock> l(shm_->lock);
    ErrorSharedQp(ctx_->dev(), shm_, true);
  }
}

void SoftQp::FlushLocked() {
  while (executed_ < posted_) {
    uint64_t seq = executed_++;
    Pending& p = ring_[seq % ring_.size()];
    Completion c =
        FlushCompletion(p.wr.wr_id, qp_num(), SendOpcode(p.wr.opcode));
    PushCqe(ctx_->dev(), send_cq_->shm(), c, seq);
  }
  if (waiting_) {
    waiting_ = false;
    ctx_->waiting_qps.fetch_sub(1, std::memory_order_relaxed);
  }
}

void SoftQp::EnterErrorLocked() {
  {
    std::lock_guard<SpinLock> l(shm_->lock);
    ErrorSharedQp(ctx_->dev(), shm_, false);
  }
  FlushLocked();
}

// Caller holds mu_.
void SoftQp::Progress() {
  while (executed_ < posted_) {
    if (state() == QpState::kError) {
      FlushLocked();
      return;
    }
    uint64_t now = 0;
    if (retry_at_ns_ != 0) {
      now = NowNs();
      if (now < retry_at_ns_) break;
    }
    uint64_t seq = executed_;
    Pending& p = ring_[seq % ring_.size()];
    WcStatus status = WcStatus::kSuccess;
    Outcome o = Execute(p, seq, &status);
    if (o == Outcome::kRnr) {
      ctx_->Add(&SharedCounters::rnr_naks);
      ++rnr_failures_;
      if (rnr_retry_ != 7 && rnr_failures_ > rnr_retry_) {
        o = Outcome::kDone;
        status = WcStatus::kRnrRetryExceeded;
      } else {
        uint8_t timer = 12;
        if (ShmQp* t = ctx_->dev().Qp(remote_qpn_)) timer = t->min_rnr_timer;
        retry_at_ns_ = (now ? now : NowNs()) + RnrTimerMicros(timer) * 1000ull;
      }
    } else if (o == Outcome::kNotReady) {
      ctx_->Add(&SharedCounters::transport_retries);
      ++timeouts_;
      if (timeouts_ > retry_cnt_) {
        o = Outcome::kDone;
        status = WcStatus::kRetryExceeded;
      } else {
        uint64_t us = AckTimeoutMicros(timeout_);
        if (us == 0) --timeouts_;  // timeout 0: wait forever
        retry_at_ns_ = (now ? now : NowNs()) + std::max<uint64_t>(us, 1) * 1000;
      }
    }
    if (o != Outcome::kDone) {
      if (!waiting_) {
        waiting_ = true;
        ctx_->waiting_qps.fetch_add(1, std::memory_order_relaxed);
      }
      return;
    }
    retry_at_ns_ = 0;
    rnr_failures_ = timeouts_ = 0;
    ++executed_;
    Complete(p, seq, status);
    if (status != WcStatus::kSuccess) {
      EnterErrorLocked();
      return;
    }
  }
  if (waiting_ && executed_ == posted_) {
    waiting_ = false;
    ctx_->waiting_qps.fetch_sub(1, std::memory_order_relaxed);
  }
}

SoftQp::~SoftQp() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (waiting_) ctx_->waiting_qps.fetch_sub(1, std::memory_order_relaxed);
    waiting_ = false;
  }
  {
    std::lock_guard<SpinLock> l(shm_->lock);
    shm_->state.store(static_cast<uint8_t>(QpState::kError),
                      std::memory_order_release);
  }
  ctx_->RemoveQp(index_);
}

// ---- PD ------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<MemoryRegion>> SoftPd::RegisterMemory(
    void* addr, size_t length, uint32_t access) {
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) &&
      !(access & kAccessLocalWrite)) {
    return absl::InvalidArgumentError(
        "remote write or atomic access needs local write");
  }
  if (access & kAccessOnDemand) {
    return absl::InvalidArgumentError(
        absl::StrCat(kSoftDeviceName, " does not support ODP"));
  }
  if (addr == nullptr && length != 0) {
    return absl::InvalidArgumentError("registration of a null address");
  }
  ProcHeader* proc = ctx_->proc();
  // Slot 0 is never used, so no key is 0.
  for (uint32_t slot = 1; slot < kMaxMrs; ++slot) {
    ShmMr* mr = &proc->mrs[slot];
    std::lock_guard<SpinLock> g(mr->lock);
    if (mr->key != 0) continue;
    if (++mr->generation == 0) mr->generation = 1;
    mr->addr = reinterpret_cast<uint64_t>(addr);
    mr->length = length;
    mr->access = access;
    mr->pd = id_;
    mr->key = (slot << 16) | mr->generation;
    return std::unique_ptr<MemoryRegion>(
        new SoftMr(mr, addr, length, mr->key, access));
  }
  return absl::ResourceExhaustedError(
      absl::StrCat(kSoftDeviceName, ": all ", kMaxMrs - 1,
                   " registrations of this process are in use"));
}

absl::StatusOr<std::unique_ptr<SharedReceiveQueue>> SoftPd::CreateSrq(
    const SrqInitAttr& attr) {
  if (attr.max_wr == 0 || attr.max_wr > kMaxQpWr || attr.max_sge == 0 ||
      attr.max_sge > kMaxSge) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SRQ of %u WRs x %u SGEs (limits: %u, %u)", attr.max_wr,
                        attr.max_sge, kMaxQpWr, kMaxSge));
  }
  uint64_t off =
      ctx_->Allocate(sizeof(ShmRq) + uint64_t{attr.max_wr} * sizeof(ShmRecv));
  if (off == 0) return absl::ResourceExhaustedError("device arena full");
  ShmRq* rq = ctx_->dev().At<ShmRq>(off);
  rq->capacity = attr.max_wr;
  rq->max_sge = attr.max_sge;
  rq->owner_lid = ctx_->lid();
  auto srq = std::make_unique<SoftSrq>(ctx_, rq);
  ctx_->AddSrq(srq.get());
  return std::unique_ptr<SharedReceiveQueue>(srq.release());
}

absl::StatusOr<std::unique_ptr<QueuePair>> SoftPd::CreateQp(
    const QpInitAttr& attr) {
  if (attr.send_cq == nullptr || attr.recv_cq == nullptr) {
    return absl::InvalidArgumentError("a QP needs a send and a receive CQ");
  }
  if (attr.max_send_wr == 0 || attr.max_send_wr > kMaxQpWr ||
      attr.max_recv_wr > kMaxQpWr ||
      (attr.srq == nullptr && attr.max_recv_wr == 0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("QP of %u send and %u receive WRs (1..%u each)",
                        attr.max_send_wr, attr.max_recv_wr, kMaxQpWr));
  }
  if (attr.max_send_sge > kMaxSge || attr.max_recv_sge > kMaxSge) {
    return absl::InvalidArgumentError(
        absl::StrFormat("at most %u SGEs per WR", kMaxSge));
  }
  if (attr.max_inline_data > ctx_->max_inline()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("max_inline_data %u exceeds the device's %u",
                        attr.max_inline_data, ctx_->max_inline()));
  }
  QpCaps caps;
  caps.max_send_wr = attr.max_send_wr;
  caps.max_recv_wr = attr.srq ? 0 : attr.max_recv_wr;
  caps.max_send_sge = std::max(attr.max_send_sge, 1u);
  caps.max_recv_sge = std::max(attr.max_recv_sge, 1u);
  caps.max_inline_data = attr.max_inline_data;

  uint64_t qp_off = ctx_->Allocate(sizeof(ShmQp));
  uint64_t rq_off = 0;
  if (attr.srq == nullptr) {
    rq_off = ctx_->Allocate(sizeof(ShmRq) +
                            uint64_t{caps.max_recv_wr} * sizeof(ShmRecv));
  } else {
    rq_off = ctx_->dev().Off(static_cast<SoftSrq*>(attr.srq)->rq());
  }
  if (qp_off == 0 || rq_off == 0) {
    return absl::ResourceExhaustedError("device arena full");
  }
  ShmQp* shm = ctx_->dev().At<ShmQp>(qp_off);
  if (attr.srq == nullptr) {
    ShmRq* rq = ctx_->dev().At<ShmRq>(rq_off);
    rq->capacity = caps.max_recv_wr;
    rq->max_sge = caps.max_recv_sge;
  }
  shm->type = static_cast<uint8_t>(attr.type);
  shm->has_srq = attr.srq != nullptr;
  shm->pd = id_;
  shm->recv_cq_off = ctx_->dev().Off(static_cast<SoftCq*>(attr.recv_cq)->shm());
  shm->rq_off = rq_off;
  shm->state.store(static_cast<uint8_t>(QpState::kReset));

  absl::StatusOr<uint32_t> index = ctx_->ReserveQpIndex();
  if (!index.ok()) return index.status();
  uint32_t qpn = (ctx_->lid() << kQpIndexBits) | *index;
  shm->qpn = qpn;
  auto qp = std::make_unique<SoftQp>(ctx_, this, attr, caps, qpn, shm);
  qp->set_index(*index);
  ctx_->PublishQp(*index, qp.get(), qp_off);
  return std::unique_ptr<QueuePair>(qp.release());
}

// ---- context ---------------------------------------------------------------

absl::StatusOr<uint32_t> SoftContext::ReserveQpIndex() {
  std::lock_guard<std::mutex> g(mu_);
  if (next_qp_index_ > kMaxQps) {
    return absl::ResourceExhaustedError(absl::StrCat(
        kSoftDeviceName, ": a process creates at most ", kMaxQps, " QPs"));
  }
  return next_qp_index_.fetch_add(1, std::memory_order_relaxed);
}

void SoftContext::PublishQp(uint32_t index, SoftQp* qp, uint64_t shm_off) {
  std::lock_guard<std::mutex> g(mu_);
  qps_[index].store(qp, std::memory_order_release);
  proc_->qps[index].store(shm_off, std::memory_order_release);
}

void SoftContext::RemoveQp(uint32_t index) {
  if (index == 0) return;
  std::lock_guard<std::mutex> g(mu_);
  qps_[index].store(nullptr, std::memory_order_release);
  proc_->qps[index].store(0, std::memory_order_release);
}

void SoftContext::ProgressWaiting() {
  // Not under mu_ (a QP's own lock serialises it). A QP must not be
  // destroyed while another thread polls, as with verbs.
  uint32_t end = next_qp_index_.load(std::memory_order_relaxed);
  for (uint32_t i = 1; i < end && i <= kMaxQps; ++i) {
    if (SoftQp* qp = qps_[i].load(std::memory_order_acquire)) {
      qp->ProgressFromPoll();
    }
  }
}

absl::StatusOr<DeviceAttr> SoftContext::QueryDevice() {
  DeviceAttr a;
  a.max_qp = kMaxQps;
  a.max_qp_wr = kMaxQpWr;
  a.max_sge = kMaxSge;
  a.max_cq = 1024;
  a.max_cqe = kMaxCqe;
  a.max_mr = kMaxMrs - 1;
  a.max_mr_size = ~uint64_t{0};
  a.max_srq = 1024;
  a.max_srq_wr = kMaxQpWr;
  a.max_qp_rd_atom = 16;
  a.max_qp_init_rd_atom = 16;
  a.max_inline_data = max_inline();
  a.atomic_cap = AtomicCap::kHca;
  a.odp_supported = false;
  a.xrc_supported = false;
  a.phys_port_cnt = 1;
  return a;
}

absl::Status SoftContext::CheckPort(uint8_t port) const {
  if (port == 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(kSoftDeviceName, " has port 1 only, not ", port));
}

absl::StatusOr<PortAttr> SoftContext::QueryPort(uint8_t port) {
  if (absl::Status s = CheckPort(port); !s.ok()) return s;
  PortAttr a;
  a.state = PortState::kActive;
  a.max_mtu = 4096;
  a.active_mtu = mtu();
  a.max_msg_sz = static_cast<uint32_t>(kMaxMessage);
  a.lid = static_cast<uint16_t>(lid_);
  a.sm_lid = 1;
  a.link_layer = LinkLayer::kInfiniBand;
  a.gid.raw[0] = 0xfe;
  a.gid.raw[1] = 0x80;
  uint64_t h = dev_.header()->key_hash;
  for (int i = 0; i < 6; ++i)
    a.gid.raw[8 + i] = static_cast<uint8_t>(h >> (8 * i));
  a.gid.raw[14] = static_cast<uint8_t>(lid_ >> 8);
  a.gid.raw[15] = static_cast<uint8_t>(lid_);
  a.pkey_table_len = static_cast<uint16_t>(options_.pkeys.size());
  return a;
}

absl::StatusOr<uint16_t> SoftContext::QueryPkey(uint8_t port, uint16_t index) {
  if (absl::Status s = CheckPort(port); !s.ok()) return s;
  if (index >= options_.pkeys.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, " port 1: P_Key index ", index, " (its table has ",
                     options_.pkeys.size(), " entries)"));
  }
  return options_.pkeys[index];
}

absl::StatusOr<std::unique_ptr<CompletionQueue>> SoftContext::CreateCq(
    uint32_t depth) {
  if (depth == 0 || depth > kMaxCqe) {
    return absl::InvalidArgumentError(
        absl::StrFormat("CQ depth %u (1..%u)", depth, kMaxCqe));
  }
  uint64_t off = Allocate(sizeof(ShmCq) + uint64_t{depth} * sizeof(ShmCqe));
  if (off == 0) return absl::ResourceExhaustedError("device arena full");
  ShmCq* shm = dev_.At<ShmCq>(off);
  shm->depth = depth;
  shm->owner_lid = lid_;
  auto cq = std::make_unique<SoftCq>(this, shm);
  AddCq(cq.get());
  return std::unique_ptr<CompletionQueue>(cq.release());
}

std::optional<AsyncEvent> SoftContext::PollAsyncEvent() {
  ShmEvent e;
  {
    std::lock_guard<SpinLock> g(proc_->event_lock);
    if (proc_->event_head == proc_->event_tail) return std::nullopt;
    e = proc_->events[proc_->event_head % kEventRing];
    ++proc_->event_head;
  }
  AsyncEvent out;
  out.type = static_cast<AsyncEventType>(e.type);
  out.qp_num = e.qpn;
  if (out.type == AsyncEventType::kCqError) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = cqs_.find(e.cq_off);
    out.cq = it == cqs_.end() ? nullptr : it->second;
  }
  if (out.type == AsyncEventType::kSrqLimitReached) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = srqs_.find(e.cq_off);
    out.srq = it == srqs_.end() ? nullptr : it->second;
  }
  return out;
}

SoftContext::~SoftContext() {
  proc_->alive.store(0, std::memory_order_release);
  DeviceHeader* h = dev_.header();
  bool last = h->attached.fetch_sub(1, std::memory_order_acq_rel) == 1;
  munmap(dev_.base(), size_);
  if (last) shm_unlink(shm_name_.c_str());
}

SoftCq::~SoftCq() { ctx_->RemoveCq(this); }
SoftSrq::~SoftSrq() { ctx_->RemoveSrq(this); }

absl::StatusOr<size_t> SoftCq::Poll(std::span<Completion> out) {
  if (ctx_->waiting_qps.load(std::memory_order_relaxed) > 0) {
    ctx_->ProgressWaiting();
  }
  size_t n = 0;
  {
    std::lock_guard<SpinLock> g(shm_->lock);
    while (n < out.size() && shm_->head != shm_->tail) {
      const ShmCqe& e = shm_->entries[shm_->head % shm_->depth];
      out[n] = e.c;
      if (e.c.opcode != WcOpcode::kRecv &&
          e.c.opcode != WcOpcode::kRecvRdmaWithImm) {
        if (SoftQp* qp = ctx_->LocalQp(e.c.qp_num)) qp->Reclaim(e.sq_seq);
      }
      ++shm_->head;
      ++n;
    }
  }
  return n;
}

// ---- provider
// ----------------------------------------------------------------

class SoftProvider final : public Provider {
 public:
  explicit SoftProvider(const SoftDeviceOptions& options) : options_(options) {}
  std::string_view kind() const override { return "software"; }
  absl::StatusOr<std::vector<DeviceInfo>> ListDevices() override {
    std::vector<DeviceInfo> out;
    for (uint32_t i = 0; i < options_.num_devices; ++i) {
      DeviceInfo d;
      d.name = absl::StrCat(kSoftDevicePrefix, i);
      d.node_guid = DeviceHash(options_.job_key, i);
      d.num_ports = 1;
      d.software = true;
      out.push_back(std::move(d));
    }
    return out;
  }
  absl::StatusOr<std::unique_ptr<Context>> Open(
      const std::string& device_name) override;

 private:
  SoftDeviceOptions options_;
};

absl::StatusOr<std::unique_ptr<Context>> SoftProvider::Open(
    const std::string& device_name) {
  uint32_t index = 0;
  bool found = false;
  for (uint32_t i = 0; i < options_.num_devices; ++i) {
    if (device_name == absl::StrCat(kSoftDevicePrefix, i)) {
      index = i;
      found = true;
    }
  }
  if (!found) {
    return absl::NotFoundError(absl::StrCat(
        "no verbs device '", device_name, "' (the software devices are ",
        kSoftDevicePrefix, "0..", options_.num_devices - 1, ")"));
  }
  const std::string name = SoftDeviceShmName(options_.job_key, index);
  // Data moves with cross-memory attach; where a sandbox (seccomp, a
  // container) forbids it, say so now rather than fail every operation.
  {
    uint64_t probe_src = 0x5eed, probe_dst = 0;
    iovec l{&probe_dst, 8}, r{&probe_src, 8};
    if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 8) {
      return absl::UnavailableError(
          absl::StrCat("the software device needs cross-memory attach "
                       "(process_vm_readv), which fails here: ",
                       ErrnoText(errno)));
    }
  }
  const uint64_t header_bytes = (sizeof(DeviceHeader) + 4095) & ~4095ull;
  const uint64_t total =
      header_bytes + uint64_t{options_.max_procs} * options_.arena_bytes;
  bool creator = true;
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    creator = false;
    fd = shm_open(name.c_str(), O_RDWR, 0600);
  }
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("shm_open ", name, ": ", ErrnoText(errno)));
  }
  if (creator && ftruncate(fd, static_cast<off_t>(total)) != 0) {
    int err = errno;
    close(fd);
    shm_unlink(name.c_str());
    return absl::ResourceExhaustedError(
        absl::StrCat("ftruncate ", name, ": ", ErrnoText(err)));
  }
  // A joiner waits (bounded) for the creator to size and initialise it.
  const uint64_t deadline = NowNs() + 10'000'000'000ull;
  struct stat st;
  while (true) {
    if (fstat(fd, &st) != 0) {
      int err = errno;
      close(fd);
      return absl::UnavailableError(
          absl::StrCat("fstat ", name, ": ", ErrnoText(err)));
    }
    if (static_cast<uint64_t>(st.st_size) >= header_bytes) break;
    if (NowNs() > deadline) {
      close(fd);
      return absl::DeadlineExceededError(
          absl::StrCat(name, " was never initialised by its creator"));
    }
    sched_yield();
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap ", name, ": ", ErrnoText(errno)));
  }
  auto* h = static_cast<DeviceHeader*>(base);
  if (creator) {
    h->version = kVersion;
    h->max_procs = options_.max_procs;
    h->arena_bytes = options_.arena_bytes;
    h->arenas_offset = header_bytes;
    h->total_bytes = total;
    h->key_hash = DeviceHash(options_.job_key, index);
    h->mtu = options_.mtu;
    h->max_inline = options_.max_inline_data;
    h->next_lid.store(1);
    h->magic.store(kMagic, std::memory_order_release);
  } else {
    while (h->magic.load(std::memory_order_acquire) != kMagic) {
      if (NowNs() > deadline) {
        munmap(base, size);
        return absl::DeadlineExceededError(
            absl::StrCat(name, " was never initialised by its creator"));
      }
      sched_yield();
    }
    if (h->version != kVersion || h->total_bytes != size) {
      munmap(base, size);
      return absl::FailedPreconditionError(absl::StrCat(
          name, " was created by another version or with other sizes"));
    }
  }
  uint32_t lid = h->next_lid.fetch_add(1, std::memory_order_acq_rel);
  if (const uint32_t max_procs = h->max_procs; lid > max_procs) {
    // `h` lies in the mapping: read what the message needs first.
    munmap(base, size);
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s: more than %u processes opened %s (the limit is "
                        "GASNET_IBV_SOFTWARE_MAX_PROCS for the conduit)",
                        name, max_procs, kSoftDeviceName));
  }
  h->attached.fetch_add(1, std::memory_order_acq_rel);
  // Peers move data with process_vm_writev/readv into this process.
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  auto ctx = std::make_unique<SoftContext>(
      options_, device_name, name, static_cast<uint8_t*>(base), size, lid);
  ProcHeader* p = ctx->proc();
  p->pid = getpid();
  p->lid = lid;
  p->alive.store(1, std::memory_order_release);
  return std::unique_ptr<Context>(ctx.release());
}

bool ValidKey(const std::string& key) {
  if (key.empty() || key.size() > 64) return false;
  for (char c : key) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
          c == '.')) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string SoftDeviceShmName(const std::string& job_key, uint32_t index) {
  return absl::StrCat("/", kSoftDevicePrefix, index, "-", job_key);
}

absl::StatusOr<std::unique_ptr<Provider>> MakeSoftProvider(
    const SoftDeviceOptions& options) {
  if (!ValidKey(options.job_key)) {
    return absl::InvalidArgumentError(
        absl::StrCat("software device job key '", options.job_key,
                     "': 1-64 characters of [A-Za-z0-9_.-]"));
  }
  if (options.num_devices == 0 || options.num_devices > kMaxSoftDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_devices must be 1..", kMaxSoftDevices));
  }
  if (options.max_procs == 0 || options.max_procs > 4095) {
    return absl::InvalidArgumentError("max_procs must be 1..4095");
  }
  if (options.arena_bytes < (uint64_t{1} << 20)) {
    return absl::InvalidArgumentError("arena_bytes must be at least 1 MiB");
  }
  if (!IsValidMtu(options.mtu)) {
    return absl::InvalidArgumentError(
        absl::StrCat("MTU ", options.mtu, ": one of 256..4096"));
  }
  return std::unique_ptr<Provider>(new SoftProvider(options));
}

absl::Status RemoveSoftDevice(const std::string& job_key) {
  for (uint32_t i = 0; i < kMaxSoftDevices; ++i) {
    std::string name = SoftDeviceShmName(job_key, i);
    if (shm_unlink(name.c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError(
          absl::StrCat("shm_unlink ", name, ": ", ErrnoText(errno)));
    }
  }
  return absl::OkStatus();
}

}  // namespace gexrt::ibv::verbs
