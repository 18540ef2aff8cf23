// The software device's verbs behaviour: what the ibv conduit relies on.
//
// Most cases open two contexts (two LIDs) in this process: the data still
// goes through the shared device object and CMA, exactly as between
// processes. The cases that are about processes (a target that never polls,
// atomics from several processes at once) fork. Waits poll with a deadline;
// nothing sleeps.
#include "conduit/ibv/verbs/soft_device.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "conduit/ibv/verbs/verbs.h"
#include "gtest/gtest.h"

namespace gexrt::ibv::verbs {
namespace {

constexpr auto kDeadline = std::chrono::seconds(20);

// Unique across concurrent runs (which may share /dev/shm but not a PID
// namespace, so the PID alone is not enough).
std::string UniqueKey(const char* test) {
  uint64_t nonce = std::random_device()();
  nonce =
      nonce << 20 ^ std::chrono::steady_clock::now().time_since_epoch().count();
  return std::string("t") + std::to_string(getpid()) + "-" +
         std::to_string(nonce % 1000000007) + "-" +
         std::string(test).substr(0, 32);
}

// One process's end: context, PD, CQ.
struct Node {
  std::unique_ptr<Context> ctx;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  uint16_t lid = 0;

  Node() = default;
  Node(Node&&) = default;
  Node& operator=(Node&& o) {
    Reset();
    ctx = std::move(o.ctx);
    pd = std::move(o.pd);
    cq = std::move(o.cq);
    lid = o.lid;
    return *this;
  }
  ~Node() { Reset(); }

  // Children before their parent.
  void Reset() {
    cq.reset();
    pd.reset();
    ctx.reset();
  }

  static Node Open(Provider& provider, uint32_t cq_depth = 256) {
    Node n;
    auto ctx = provider.Open(kSoftDeviceName);
    if (!ctx.ok()) {
      std::fprintf(stderr, "open: %s\n", ctx.status().ToString().c_str());
      std::abort();
    }
    n.ctx = std::move(*ctx);
    n.pd = std::move(*n.ctx->AllocPd());
    n.cq = std::move(*n.ctx->CreateCq(cq_depth));
    n.lid = n.ctx->QueryPort(1)->lid;
    return n;
  }
};

std::unique_ptr<QueuePair> MakeQp(Node& n, QpType type = QpType::kRc,
                                  uint32_t inline_bytes = 64,
                                  SharedReceiveQueue* srq = nullptr) {
  QpInitAttr a;
  a.type = type;
  a.send_cq = n.cq.get();
  a.recv_cq = n.cq.get();
  a.srq = srq;
  a.max_send_wr = 64;
  a.max_recv_wr = 64;
  a.max_send_sge = 2;
  a.max_recv_sge = 2;
  a.max_inline_data = inline_bytes;
  auto qp = n.pd->CreateQp(a);
  if (!qp.ok()) {
    std::fprintf(stderr, "CreateQp: %s\n", qp.status().ToString().c_str());
    std::abort();
  }
  return std::move(*qp);
}

constexpr uint32_t kAllRemote =
    kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

QpAddress AddressOf(const Node& n, const QueuePair& qp, uint32_t psn) {
  QpAddress a;
  a.lid = n.lid;
  a.qpn = qp.qp_num();
  a.psn = psn;
  return a;
}

struct ConnectOptions {
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;  // 10 us
  uint8_t retry_cnt = 7;
  uint8_t timeout = 8;  // ~1 ms
  uint16_t pkey_index = 0;
};

absl::Status Connect(QueuePair& qp, const QpAddress& remote, uint32_t my_psn,
                     const ConnectOptions& o = {}) {
  QpInitStateAttr init;
  init.access = kAllRemote;
  init.pkey_index = o.pkey_index;
  if (auto s = qp.ToInit(init); !s.ok()) return s;
  QpRtrAttr rtr;
  rtr.remote = remote;
  rtr.path_mtu = 4096;
  rtr.min_rnr_timer = o.min_rnr_timer;
  if (auto s = qp.ToRtr(rtr); !s.ok()) return s;
  QpRtsAttr rts;
  rts.sq_psn = my_psn;
  rts.rnr_retry = o.rnr_retry;
  rts.retry_cnt = o.retry_cnt;
  rts.timeout = o.timeout;
  return qp.ToRts(rts);
}

// Polls until `n` completions arrived (or the deadline).
std::vector<Completion> PollN(CompletionQueue& cq, size_t n) {
  std::vector<Completion> out;
  auto end = std::chrono::steady_clock::now() + kDeadline;
  Completion buf[16];
  while (out.size() < n && std::chrono::steady_clock::now() < end) {
    auto got = cq.Poll(
        std::span<Completion>(buf, std::min<size_t>(16, n - out.size())));
    if (!got.ok()) break;
    out.insert(out.end(), buf, buf + *got);
    if (*got == 0) std::this_thread::yield();
  }
  return out;
}

// No completion now (a few polls).
bool NoCompletion(CompletionQueue& cq) {
  Completion c;
  for (int i = 0; i < 3; ++i) {
    if (*cq.Poll(std::span<Completion>(&c, 1)) != 0) return false;
  }
  return true;
}

class SoftDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = UniqueKey(
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    provider_ = std::move(*MakeSoftProvider(Options()));
  }
  SoftDeviceOptions Options() const {
    SoftDeviceOptions o;
    o.job_key = key_;
    o.max_procs = 8;
    o.arena_bytes = 16 << 20;
    o.max_inline_data = 128;
    return o;
  }
  void TearDown() override {
    Unpair();
    // The last context to close removes the object: nothing is left.
    for (uint32_t i = 0; i < kMaxSoftDevices; ++i) {
      std::string path = "/dev/shm" + SoftDeviceShmName(key_, i);
      EXPECT_NE(access(path.c_str(), F_OK), 0) << path << " left behind";
    }
    (void)RemoveSoftDevice(key_);
  }

  // Two nodes with an RC connection a<->b.
  void Pair(const ConnectOptions& o = {}) {
    a_ = Node::Open(*provider_);
    b_ = Node::Open(*provider_);
    qa_ = MakeQp(a_);
    qb_ = MakeQp(b_);
    ASSERT_TRUE(Connect(*qa_, AddressOf(b_, *qb_, 200), 100, o).ok());
    ASSERT_TRUE(Connect(*qb_, AddressOf(a_, *qa_, 100), 200, o).ok());
  }
  void Unpair() {
    qa_.reset();
    qb_.reset();
    a_.Reset();
    b_.Reset();
  }

  std::string key_;
  std::unique_ptr<Provider> provider_;
  Node a_, b_;
  std::unique_ptr<QueuePair> qa_, qb_;
};

// A signaled inline send of `sge` (its lkey unused).
SendWr InlineSend(const Sge* sge, uint64_t id = 0) {
  SendWr w;
  w.wr_id = id;
  w.flags = kSendInline | kSendSignaled;
  w.sg_list = sge;
  w.num_sge = 1;
  return w;
}

SendWr Write(uint64_t id, const Sge* sge, uint64_t raddr, uint32_t rkey) {
  SendWr w;
  w.wr_id = id;
  w.opcode = Opcode::kRdmaWrite;
  w.flags = kSendSignaled;
  w.sg_list = sge;
  w.num_sge = 1;
  w.remote_addr = raddr;
  w.rkey = rkey;
  return w;
}

TEST_F(SoftDeviceTest, ListsOneDeviceAndQueriesIt) {
  auto devices = provider_->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].name, kSoftDeviceName);
  EXPECT_TRUE((*devices)[0].software);
  EXPECT_FALSE(provider_->Open("mlx5_0").ok());

  Node n = Node::Open(*provider_);
  Node m = Node::Open(*provider_);
  auto attr = n.ctx->QueryDevice();
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(attr->max_inline_data, 128u);
  EXPECT_EQ(attr->atomic_cap, AtomicCap::kHca);
  EXPECT_FALSE(attr->odp_supported);
  EXPECT_FALSE(attr->xrc_supported);
  auto port = n.ctx->QueryPort(1);
  ASSERT_TRUE(port.ok());
  EXPECT_EQ(port->state, PortState::kActive);
  EXPECT_EQ(port->active_mtu, 4096u);
  EXPECT_NE(n.lid, 0);
  EXPECT_NE(n.lid, m.lid);
  EXPECT_EQ(port->gid.raw[15], n.lid & 0xff);
  EXPECT_FALSE(n.ctx->QueryPort(2).ok());
}

TEST_F(SoftDeviceTest, StateTransitionsFollowVerbs) {
  a_ = Node::Open(*provider_);
  b_ = Node::Open(*provider_);
  qa_ = MakeQp(a_);
  qb_ = MakeQp(b_);
  EXPECT_EQ(qa_->state(), QpState::kReset);
  QpRtrAttr rtr;
  rtr.remote = AddressOf(b_, *qb_, 0);
  EXPECT_EQ(qa_->ToRtr(rtr).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(qa_->ToRts(QpRtsAttr()).code(),
            absl::StatusCode::kFailedPrecondition);
  int v = 0;
  Sge sge{reinterpret_cast<uint64_t>(&v), 4, 0};
  RecvWr r{1, &sge, 1};
  EXPECT_EQ(qa_->PostRecv(r).code(), absl::StatusCode::kFailedPrecondition);

  QpInitStateAttr init;
  init.access = kAllRemote;
  ASSERT_TRUE(qa_->ToInit(init).ok());
  EXPECT_EQ(qa_->state(), QpState::kInit);
  EXPECT_EQ(qa_->ToRts(QpRtsAttr()).code(),
            absl::StatusCode::kFailedPrecondition);
  SendWr s;
  s.sg_list = &sge;
  s.num_sge = 1;
  s.flags = kSendInline;
  EXPECT_EQ(qa_->PostSend(s).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(qa_->ToRtr(rtr).ok());
  EXPECT_EQ(qa_->state(), QpState::kRtr);
  ASSERT_TRUE(qa_->ToRts(QpRtsAttr()).ok());
  EXPECT_EQ(qa_->state(), QpState::kRts);
  ASSERT_TRUE(qa_->ToError().ok());
  EXPECT_EQ(qa_->state(), QpState::kError);
  ASSERT_TRUE(qa_->ToReset().ok());
  EXPECT_EQ(qa_->state(), QpState::kReset);
}

TEST_F(SoftDeviceTest, SendRecvInOrderWithImmediate) {
  Pair();
  char src[2][32] = {"first message", "second, with imm"};
  char dst[2][64] = {};
  auto smr = *a_.pd->RegisterMemory(src, sizeof(src), 0);
  auto dmr = *b_.pd->RegisterMemory(dst, sizeof(dst), kAccessLocalWrite);
  for (int i = 0; i < 2; ++i) {
    Sge r{reinterpret_cast<uint64_t>(dst[i]), 64, dmr->lkey()};
    ASSERT_TRUE(qb_->PostRecv(RecvWr{uint64_t(10 + i), &r, 1}).ok());
  }
  for (int i = 0; i < 2; ++i) {
    Sge s{reinterpret_cast<uint64_t>(src[i]), 32, smr->lkey()};
    SendWr w;
    w.wr_id = 20 + i;
    w.opcode = i ? Opcode::kSendWithImm : Opcode::kSend;
    w.imm_data = 0xabcd;
    w.flags = kSendSignaled;
    w.sg_list = &s;
    w.num_sge = 1;
    ASSERT_TRUE(qa_->PostSend(w).ok());
  }
  auto sent = PollN(*a_.cq, 2);
  ASSERT_EQ(sent.size(), 2u);
  auto got = PollN(*b_.cq, 2);
  ASSERT_EQ(got.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(sent[i].wr_id, uint64_t(20 + i));
    EXPECT_EQ(sent[i].status, WcStatus::kSuccess);
    EXPECT_EQ(sent[i].opcode, WcOpcode::kSend);
    EXPECT_EQ(got[i].wr_id, uint64_t(10 + i));
    EXPECT_EQ(got[i].status, WcStatus::kSuccess);
    EXPECT_EQ(got[i].opcode, WcOpcode::kRecv);
    EXPECT_EQ(got[i].byte_len, 32u);
    EXPECT_EQ(got[i].qp_num, qb_->qp_num());
    EXPECT_STREQ(dst[i], src[i]);
  }
  EXPECT_FALSE(got[0].with_imm);
  EXPECT_TRUE(got[1].with_imm);
  EXPECT_EQ(got[1].imm_data, 0xabcdu);
  EXPECT_EQ(a_.ctx->Counters()->rnr_naks, 0u);
}

TEST_F(SoftDeviceTest, SendWithoutReceiveIsAnRnrRetriedUntilPosted) {
  Pair();  // rnr_retry 7: retry forever, every 10 us
  uint64_t v = 42, dst = 0;
  auto smr = *a_.pd->RegisterMemory(&v, 8, 0);
  auto dmr = *b_.pd->RegisterMemory(&dst, 8, kAccessLocalWrite);
  Sge s{reinterpret_cast<uint64_t>(&v), 8, smr->lkey()};
  SendWr w;
  w.wr_id = 1;
  w.flags = kSendSignaled;
  w.sg_list = &s;
  w.num_sge = 1;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  EXPECT_TRUE(NoCompletion(*a_.cq));
  EXPECT_GE(a_.ctx->Counters()->rnr_naks, 1u);
  EXPECT_GE(b_.ctx->JobCounters()->rnr_naks, 1u);  // job-wide sum
  // Later WRs wait behind it (in order).
  uint64_t wdst = 0;
  auto wmr =
      *b_.pd->RegisterMemory(&wdst, 8, kAccessLocalWrite | kAccessRemoteWrite);
  ASSERT_TRUE(qa_->PostSend(Write(2, &s, reinterpret_cast<uint64_t>(&wdst),
                                  wmr->rkey()))
                  .ok());
  EXPECT_EQ(wdst, 0u);

  Sge r{reinterpret_cast<uint64_t>(&dst), 8, dmr->lkey()};
  ASSERT_TRUE(qb_->PostRecv(RecvWr{7, &r, 1}).ok());
  auto sent = PollN(*a_.cq, 2);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].wr_id, 1u);
  EXPECT_EQ(sent[0].status, WcStatus::kSuccess);
  EXPECT_EQ(sent[1].wr_id, 2u);
  EXPECT_EQ(sent[1].status, WcStatus::kSuccess);
  EXPECT_EQ(dst, 42u);
  EXPECT_EQ(wdst, 42u);
  EXPECT_EQ(PollN(*b_.cq, 1).size(), 1u);
}

TEST_F(SoftDeviceTest, RnrRetryExhaustedErrorsTheQpAndFlushesTheRest) {
  ConnectOptions o;
  o.rnr_retry = 2;
  Pair(o);
  uint64_t v = 1;
  auto smr = *a_.pd->RegisterMemory(&v, 8, 0);
  Sge s{reinterpret_cast<uint64_t>(&v), 8, smr->lkey()};
  SendWr w;
  w.flags = kSendSignaled;
  w.sg_list = &s;
  w.num_sge = 1;
  for (uint64_t id = 1; id <= 3; ++id) {
    w.wr_id = id;
    ASSERT_TRUE(qa_->PostSend(w).ok());
  }
  auto c = PollN(*a_.cq, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].wr_id, 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRnrRetryExceeded);
  EXPECT_EQ(c[1].status, WcStatus::kFlushError);
  EXPECT_EQ(c[2].status, WcStatus::kFlushError);
  EXPECT_EQ(c[2].wr_id, 3u);
  EXPECT_EQ(a_.ctx->Counters()->rnr_naks, 3u);  // first try + 2 retries
  EXPECT_EQ(qa_->state(), QpState::kError);
  // Posting to a QP in ERROR flushes at once.
  w.wr_id = 4;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  c = PollN(*a_.cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kFlushError);
}

TEST_F(SoftDeviceTest, RdmaWriteAndReadWithinARegistration) {
  Pair();
  std::vector<uint8_t> local(4096), remote(8192, 0);
  for (size_t i = 0; i < local.size(); ++i) local[i] = uint8_t(i * 7);
  auto lmr =
      *a_.pd->RegisterMemory(local.data(), local.size(), kAccessLocalWrite);
  auto rmr = *b_.pd->RegisterMemory(
      remote.data(), remote.size(),
      kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
  Sge s{reinterpret_cast<uint64_t>(local.data()), 4096, lmr->lkey()};
  uint64_t raddr = reinterpret_cast<uint64_t>(remote.data()) + 4096;
  ASSERT_TRUE(qa_->PostSend(Write(1, &s, raddr, rmr->rkey())).ok());
  auto c = PollN(*a_.cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  EXPECT_EQ(c[0].opcode, WcOpcode::kRdmaWrite);
  EXPECT_EQ(std::memcmp(remote.data() + 4096, local.data(), 4096), 0);
  EXPECT_TRUE(NoCompletion(*b_.cq));  // a plain write consumes no receive

  std::fill(local.begin(), local.end(), 0);
  SendWr rd = Write(2, &s, raddr, rmr->rkey());
  rd.opcode = Opcode::kRdmaRead;
  ASSERT_TRUE(qa_->PostSend(rd).ok());
  c = PollN(*a_.cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  EXPECT_EQ(c[0].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(std::memcmp(remote.data() + 4096, local.data(), 4096), 0);

  // Write with immediate: data, then a receive completion with the imm.
  uint32_t scratch = 0;
  auto smr = *b_.pd->RegisterMemory(&scratch, 4, kAccessLocalWrite);
  Sge rs{reinterpret_cast<uint64_t>(&scratch), 4, smr->lkey()};
  ASSERT_TRUE(qb_->PostRecv(RecvWr{9, &rs, 1}).ok());
  SendWr wi = Write(3, &s, raddr, rmr->rkey());
  wi.opcode = Opcode::kRdmaWriteWithImm;
  wi.imm_data = 77;
  ASSERT_TRUE(qa_->PostSend(wi).ok());
  c = PollN(*b_.cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(c[0].imm_data, 77u);
  EXPECT_EQ(c[0].byte_len, 4096u);
  EXPECT_EQ(PollN(*a_.cq, 1).size(), 1u);
}

TEST_F(SoftDeviceTest, RdmaOutsideARegistrationErrorsAndFlushes) {
  Pair();
  std::vector<uint8_t> local(256, 1), remote(1024, 0);
  auto lmr =
      *a_.pd->RegisterMemory(local.data(), local.size(), kAccessLocalWrite);
  auto rmr = *b_.pd->RegisterMemory(remote.data(), remote.size(),
                                    kAccessLocalWrite | kAccessRemoteWrite);
  Sge s{reinterpret_cast<uint64_t>(local.data()), 256, lmr->lkey()};
  // 1000 + 256 runs past the end of the 1024-byte registration.
  uint64_t raddr = reinterpret_cast<uint64_t>(remote.data()) + 1000;
  ASSERT_TRUE(qa_->PostSend(Write(1, &s, raddr, rmr->rkey())).ok());
  for (uint64_t id = 2; id <= 3; ++id) {
    ASSERT_TRUE(qa_->PostSend(Write(id, &s, raddr - 1000, rmr->rkey())).ok());
  }
  auto c = PollN(*a_.cq, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].status, WcStatus::kRemoteAccessError);
  EXPECT_EQ(c[1].status, WcStatus::kFlushError);
  EXPECT_EQ(c[2].status, WcStatus::kFlushError);
  EXPECT_EQ(qa_->state(), QpState::kError);
  EXPECT_EQ(remote[1000], 0);  // nothing written
  EXPECT_EQ(remote[0], 0);
  EXPECT_EQ(a_.ctx->Counters()->remote_access_errors, 1u);
  lmr.reset();
  rmr.reset();
  Unpair();

  // Read without remote-read access: refused the same way.
  Pair();
  lmr = *a_.pd->RegisterMemory(local.data(), local.size(), kAccessLocalWrite);
  rmr = *b_.pd->RegisterMemory(remote.data(), remote.size(),
                               kAccessLocalWrite | kAccessRemoteWrite);
  s.lkey = lmr->lkey();
  SendWr rd =
      Write(4, &s, reinterpret_cast<uint64_t>(remote.data()), rmr->rkey());
  rd.opcode = Opcode::kRdmaRead;
  ASSERT_TRUE(qa_->PostSend(rd).ok());
  c = PollN(*a_.cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRemoteAccessError);
  // A local SGE with a wrong lkey: local protection error.
  lmr.reset();
  rmr.reset();
  Unpair();
  Pair();
  auto rmr2 = *b_.pd->RegisterMemory(remote.data(), remote.size(),
                                     kAccessLocalWrite | kAccessRemoteWrite);
  s.lkey = 0x12345;
  ASSERT_TRUE(
      qa_->PostSend(Write(5, &s, reinterpret_cast<uint64_t>(remote.data()),
                          rmr2->rkey()))
          .ok());
  c = PollN(*a_.cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kLocalProtectionError);
  rmr2.reset();
}

TEST_F(SoftDeviceTest, StaleKeyAfterDeregistrationIsCaught) {
  Pair();
  uint64_t v = 5;
  std::vector<uint64_t> remote(16, 0);
  auto lmr = *a_.pd->RegisterMemory(&v, 8, kAccessLocalWrite);
  auto rmr = *b_.pd->RegisterMemory(remote.data(), 128,
                                    kAccessLocalWrite | kAccessRemoteWrite);
  uint32_t stale = rmr->rkey();
  Sge s{reinterpret_cast<uint64_t>(&v), 8, lmr->lkey()};
  uint64_t raddr = reinterpret_cast<uint64_t>(remote.data());
  ASSERT_TRUE(qa_->PostSend(Write(1, &s, raddr, stale)).ok());
  ASSERT_EQ(PollN(*a_.cq, 1).at(0).status, WcStatus::kSuccess);
  rmr.reset();
  // The same memory registered again (likely the same slot): a new key;
  // the old one stays dead.
  auto again = *b_.pd->RegisterMemory(remote.data(), 128,
                                      kAccessLocalWrite | kAccessRemoteWrite);
  EXPECT_NE(again->rkey(), stale);
  ASSERT_TRUE(qa_->PostSend(Write(2, &s, raddr + 8, stale)).ok());
  auto c = PollN(*a_.cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRemoteAccessError);
  EXPECT_EQ(remote[1], 0u);
  again.reset();
}

TEST_F(SoftDeviceTest, AtomicsFetchAddAndCompareSwap) {
  Pair();
  alignas(8) uint64_t target = 10, result = 0;
  auto tmr = *b_.pd->RegisterMemory(&target, 8,
                                    kAccessLocalWrite | kAccessRemoteAtomic);
  auto lmr = *a_.pd->RegisterMemory(&result, 8, kAccessLocalWrite);
  Sge s{reinterpret_cast<uint64_t>(&result), 8, lmr->lkey()};
  SendWr w = Write(1, &s, reinterpret_cast<uint64_t>(&target), tmr->rkey());
  w.opcode = Opcode::kAtomicFetchAdd;
  w.compare_add = 5;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  ASSERT_EQ(PollN(*a_.cq, 1).at(0).status, WcStatus::kSuccess);
  EXPECT_EQ(result, 10u);
  EXPECT_EQ(target, 15u);
  w.opcode = Opcode::kAtomicCompareSwap;
  w.compare_add = 14;  // mismatch: no swap
  w.swap = 100;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  ASSERT_EQ(PollN(*a_.cq, 1).at(0).status, WcStatus::kSuccess);
  EXPECT_EQ(result, 15u);
  EXPECT_EQ(target, 15u);
  w.compare_add = 15;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  ASSERT_EQ(PollN(*a_.cq, 1).at(0).status, WcStatus::kSuccess);
  EXPECT_EQ(result, 15u);
  EXPECT_EQ(target, 100u);
  // Misaligned: remote invalid request.
  w.remote_addr += 4;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  EXPECT_EQ(PollN(*a_.cq, 1).at(0).status, WcStatus::kRemoteInvalidRequest);
  tmr.reset();
  lmr.reset();
}

TEST_F(SoftDeviceTest, CqOverflowIsReportedAsAnAsyncError) {
  a_ = Node::Open(*provider_, /*cq_depth=*/4);
  b_ = Node::Open(*provider_);
  qa_ = MakeQp(a_);
  qb_ = MakeQp(b_);
  ASSERT_TRUE(Connect(*qa_, AddressOf(b_, *qb_, 0), 0).ok());
  ASSERT_TRUE(Connect(*qb_, AddressOf(a_, *qa_, 0), 0).ok());
  uint64_t v = 0, remote = 0;
  auto lmr = *a_.pd->RegisterMemory(&v, 8, 0);
  auto rmr = *b_.pd->RegisterMemory(&remote, 8,
                                    kAccessLocalWrite | kAccessRemoteWrite);
  Sge s{reinterpret_cast<uint64_t>(&v), 8, lmr->lkey()};
  std::optional<AsyncEvent> none = a_.ctx->PollAsyncEvent();
  EXPECT_FALSE(none.has_value());
  for (uint64_t id = 0; id < 5; ++id) {
    ASSERT_TRUE(qa_->PostSend(Write(id, &s, reinterpret_cast<uint64_t>(&remote),
                                    rmr->rkey()))
                    .ok());
  }
  bool cq_error = false, qp_fatal = false;
  while (auto e = a_.ctx->PollAsyncEvent()) {
    if (e->type == AsyncEventType::kCqError && e->cq == a_.cq.get()) {
      cq_error = true;
    }
    if (e->type == AsyncEventType::kQpFatal && e->qp_num == qa_->qp_num()) {
      qp_fatal = true;
    }
  }
  EXPECT_TRUE(cq_error);
  EXPECT_TRUE(qp_fatal);
  EXPECT_EQ(qa_->state(), QpState::kError);
  EXPECT_EQ(a_.ctx->Counters()->cq_overflows, 1u);
  EXPECT_EQ(PollN(*a_.cq, 4).size(), 4u);  // what fitted is still there
}

TEST_F(SoftDeviceTest, InlineLimitIsEnforced) {
  a_ = Node::Open(*provider_);
  QpInitAttr too_big;
  too_big.send_cq = too_big.recv_cq = a_.cq.get();
  too_big.max_send_wr = too_big.max_recv_wr = 4;
  too_big.max_inline_data = 129;  // the device allows 128
  EXPECT_EQ(a_.pd->CreateQp(too_big).status().code(),
            absl::StatusCode::kInvalidArgument);
  b_ = Node::Open(*provider_);
  qa_ = MakeQp(a_, QpType::kRc, /*inline_bytes=*/64);
  qb_ = MakeQp(b_);
  EXPECT_EQ(qa_->caps().max_inline_data, 64u);
  ASSERT_TRUE(Connect(*qa_, AddressOf(b_, *qb_, 0), 0).ok());
  ASSERT_TRUE(Connect(*qb_, AddressOf(a_, *qa_, 0), 0).ok());

  char payload[65];
  std::memset(payload, 'x', sizeof(payload));
  char dst[128] = {};
  auto dmr = *b_.pd->RegisterMemory(dst, sizeof(dst), kAccessLocalWrite);
  Sge r{reinterpret_cast<uint64_t>(dst), 128, dmr->lkey()};
  ASSERT_TRUE(qb_->PostRecv(RecvWr{1, &r, 1}).ok());
  Sge s{reinterpret_cast<uint64_t>(payload), 65, 0};  // no lkey: inline
  SendWr w = InlineSend(&s);
  EXPECT_EQ(qa_->PostSend(w).code(), absl::StatusCode::kInvalidArgument);
  s.length = 64;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  std::memset(payload, 'y', sizeof(payload));  // copied at post
  ASSERT_EQ(PollN(*a_.cq, 1).at(0).status, WcStatus::kSuccess);
  auto got = PollN(*b_.cq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].byte_len, 64u);
  EXPECT_EQ(dst[0], 'x');
  EXPECT_EQ(dst[63], 'x');
  EXPECT_EQ(dst[64], 0);
}

TEST_F(SoftDeviceTest, UdSendRecvWithAddressHandles) {
  a_ = Node::Open(*provider_);
  b_ = Node::Open(*provider_);
  qa_ = MakeQp(a_, QpType::kUd);
  qb_ = MakeQp(b_, QpType::kUd);
  for (QueuePair* qp : {qa_.get(), qb_.get()}) {
    QpInitStateAttr init;
    init.qkey = 0x1234;
    ASSERT_TRUE(qp->ToInit(init).ok());
    ASSERT_TRUE(qp->ToRtr(QpRtrAttr()).ok());
    ASSERT_TRUE(qp->ToRts(QpRtsAttr()).ok());
  }
  AhAttr ah_attr;
  ah_attr.dlid = b_.lid;
  auto ah = *a_.pd->CreateAddressHandle(ah_attr);
  char msg[] = "datagram";
  char buf[kUdGrhBytes + 64] = {};
  auto mr = *b_.pd->RegisterMemory(buf, sizeof(buf), kAccessLocalWrite);
  Sge s{reinterpret_cast<uint64_t>(msg), sizeof(msg), 0};
  SendWr w = InlineSend(&s, 3);
  w.ah = ah.get();
  w.remote_qpn = qb_->qp_num();
  w.remote_qkey = 0x1234;
  // No receive posted: UD drops it, the sender still succeeds.
  ASSERT_TRUE(qa_->PostSend(w).ok());
  ASSERT_EQ(PollN(*a_.cq, 1).at(0).status, WcStatus::kSuccess);
  EXPECT_EQ(a_.ctx->Counters()->ud_drops, 1u);
  EXPECT_EQ(a_.ctx->Counters()->rnr_naks, 0u);
  Sge r{reinterpret_cast<uint64_t>(buf), sizeof(buf), mr->lkey()};
  ASSERT_TRUE(qb_->PostRecv(RecvWr{8, &r, 1}).ok());
  // Wrong Q_Key: dropped too, the receive stays posted.
  w.remote_qkey = 0x9999;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  EXPECT_EQ(a_.ctx->Counters()->ud_drops, 2u);
  w.remote_qkey = 0x1234;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  EXPECT_EQ(PollN(*a_.cq, 2).size(), 2u);
  auto got = PollN(*b_.cq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, WcStatus::kSuccess);
  EXPECT_EQ(got[0].byte_len, kUdGrhBytes + sizeof(msg));
  EXPECT_EQ(got[0].src_qp, qa_->qp_num());
  EXPECT_EQ(got[0].slid, a_.lid);
  EXPECT_STREQ(buf + kUdGrhBytes, msg);
  // RDMA is refused on UD at post time.
  w.opcode = Opcode::kRdmaWrite;
  EXPECT_FALSE(qa_->PostSend(w).ok());
  mr.reset();
  ah.reset();
}

TEST_F(SoftDeviceTest, SrqIsSharedBySeveralQps) {
  b_ = Node::Open(*provider_);  // the receiver, with one SRQ
  SrqInitAttr sa;
  sa.max_wr = 16;
  auto srq = *b_.pd->CreateSrq(sa);
  std::vector<Node> senders;
  std::vector<std::unique_ptr<QueuePair>> sq, rq;
  for (int i = 0; i < 3; ++i) {
    senders.push_back(Node::Open(*provider_));
    sq.push_back(MakeQp(senders.back()));
    rq.push_back(MakeQp(b_, QpType::kRc, 0, srq.get()));
    EXPECT_EQ(rq.back()->PostRecv(RecvWr{}).code(),
              absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE(Connect(*sq[i], AddressOf(b_, *rq[i], 0), 0).ok());
    ASSERT_TRUE(Connect(*rq[i], AddressOf(senders[i], *sq[i], 0), 0).ok());
  }
  uint32_t slots[3] = {};
  auto mr = *b_.pd->RegisterMemory(slots, sizeof(slots), kAccessLocalWrite);
  for (int i = 0; i < 3; ++i) {
    Sge r{reinterpret_cast<uint64_t>(&slots[i]), 4, mr->lkey()};
    ASSERT_TRUE(srq->PostRecv(RecvWr{uint64_t(i), &r, 1}).ok());
  }
  EXPECT_FALSE(srq->ArmLimit(17).ok());  // more than the SRQ holds
  ASSERT_TRUE(srq->ArmLimit(2).ok());
  for (int i = 2; i >= 0; --i) {
    if (i == 1) {
      // One receive taken, two left: not below the limit yet.
      EXPECT_FALSE(b_.ctx->PollAsyncEvent().has_value());
    }
    uint32_t v = 100 + i;
    Sge s{reinterpret_cast<uint64_t>(&v), 4, 0};
    SendWr w;
    w.flags = kSendInline;
    w.sg_list = &s;
    w.num_sge = 1;
    ASSERT_TRUE(sq[i]->PostSend(w).ok());
  }
  auto got = PollN(*b_.cq, 3);
  ASSERT_EQ(got.size(), 3u);
  // Fewer than 2 left: the limit event, once.
  auto e = b_.ctx->PollAsyncEvent();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->type, AsyncEventType::kSrqLimitReached);
  EXPECT_EQ(e->srq, srq.get());
  EXPECT_FALSE(b_.ctx->PollAsyncEvent().has_value());
  // SRQ receives are taken in posting order, by whichever QP came first.
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(got[k].wr_id, uint64_t(k));
    EXPECT_EQ(got[k].qp_num, rq[2 - k]->qp_num());
    EXPECT_EQ(slots[k], uint32_t(102 - k));
  }
  mr.reset();
  rq.clear();
  sq.clear();
  srq.reset();
  for (Node& n : senders) n.Reset();
  senders.clear();
  b_.Reset();
}

TEST_F(SoftDeviceTest, PeerNotReadyOrWrongPsnIsATransportRetryError) {
  a_ = Node::Open(*provider_);
  b_ = Node::Open(*provider_);
  qa_ = MakeQp(a_);
  qb_ = MakeQp(b_);
  ConnectOptions o;
  o.retry_cnt = 2;
  o.timeout = 1;  // 8 us
  ASSERT_TRUE(Connect(*qa_, AddressOf(b_, *qb_, 0), 0, o).ok());
  // qb stays in RESET: nothing answers.
  uint32_t v = 1;
  Sge s{reinterpret_cast<uint64_t>(&v), 4, 0};
  SendWr w = InlineSend(&s);
  ASSERT_TRUE(qa_->PostSend(w).ok());
  auto c = PollN(*a_.cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRetryExceeded);
  EXPECT_EQ(a_.ctx->Counters()->transport_retries, 3u);
  qa_.reset();
  qb_.reset();

  // Connected, but told the wrong PSN.
  qa_ = MakeQp(a_);
  qb_ = MakeQp(b_);
  ASSERT_TRUE(Connect(*qa_, AddressOf(b_, *qb_, 0), 5, o).ok());
  ASSERT_TRUE(Connect(*qb_, AddressOf(a_, *qa_, 6), 0, o).ok());
  ASSERT_TRUE(qa_->PostSend(w).ok());
  c = PollN(*a_.cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRetryExceeded);
}

TEST_F(SoftDeviceTest, PkeysPartitionTheFabric) {
  SoftDeviceOptions o = Options();
  o.pkeys = {0xffff, 0x8123, 0x0123, 0x8456};
  provider_ = std::move(*MakeSoftProvider(o));
  a_ = Node::Open(*provider_);
  b_ = Node::Open(*provider_);
  ASSERT_EQ(a_.ctx->QueryPort(1)->pkey_table_len, 4u);
  EXPECT_EQ(*a_.ctx->QueryPkey(1, 1), 0x8123u);
  EXPECT_EQ(*a_.ctx->QueryPkey(1, 2), 0x0123u);
  EXPECT_FALSE(a_.ctx->QueryPkey(1, 4).ok());
  {
    std::unique_ptr<QueuePair> qp = MakeQp(a_);
    QpInitStateAttr init;
    init.pkey_index = 4;
    EXPECT_FALSE(qp->ToInit(init).ok()) << "an index past the table";
  }
  uint32_t v = 1;
  Sge s{reinterpret_cast<uint64_t>(&v), 4, 0};
  SendWr w = InlineSend(&s);
  uint32_t b_buf = 0;
  auto mr = *b_.pd->RegisterMemory(&b_buf, sizeof(b_buf), kAccessLocalWrite);
  Sge r{reinterpret_cast<uint64_t>(&b_buf), sizeof(b_buf), mr->lkey()};
  // A send from index `ia` to index `ib`: its completion status.
  auto send = [&](uint16_t ia, uint16_t ib) {
    qa_ = MakeQp(a_);
    qb_ = MakeQp(b_);
    ConnectOptions ca, cb;
    ca.retry_cnt = cb.retry_cnt = 2;
    ca.timeout = cb.timeout = 1;  // 8 us
    ca.pkey_index = ia;
    cb.pkey_index = ib;
    EXPECT_TRUE(Connect(*qa_, AddressOf(b_, *qb_, 0), 0, ca).ok());
    EXPECT_TRUE(Connect(*qb_, AddressOf(a_, *qa_, 0), 0, cb).ok());
    EXPECT_TRUE(qb_->PostRecv(RecvWr{1, &r, 1}).ok());
    EXPECT_TRUE(qa_->PostSend(w).ok());
    std::vector<Completion> c = PollN(*a_.cq, 1);
    (void)PollN(*b_.cq, c.size() == 1 && c[0].status == WcStatus::kSuccess);
    qa_.reset();
    qb_.reset();
    return c.size() == 1 ? c[0].status : WcStatus::kGeneralError;
  };
  // One partition, both full members or one limited: delivered.
  EXPECT_EQ(send(1, 1), WcStatus::kSuccess);
  EXPECT_EQ(send(1, 2), WcStatus::kSuccess);
  EXPECT_EQ(a_.ctx->Counters()->pkey_drops, 0u);
  // Two partitions, or two limited members: dropped until the retries
  // run out.
  EXPECT_EQ(send(1, 3), WcStatus::kRetryExceeded);
  const uint64_t drops = a_.ctx->Counters()->pkey_drops;
  EXPECT_GT(drops, 0u);
  EXPECT_EQ(send(2, 2), WcStatus::kRetryExceeded);
  EXPECT_GT(a_.ctx->Counters()->pkey_drops, drops);

  // (Whatever the receives left behind, flushed or not.)
  for (Completion c; *b_.cq->Poll(std::span<Completion>(&c, 1)) != 0;) {
  }

  // UD: another partition's datagram is discarded, the sender none the
  // wiser; the receive stays posted for one from the right partition.
  std::unique_ptr<QueuePair> ua = MakeQp(a_, QpType::kUd);
  std::unique_ptr<QueuePair> ua2 = MakeQp(a_, QpType::kUd);
  std::unique_ptr<QueuePair> ub = MakeQp(b_, QpType::kUd);
  for (auto [qp, index] : {std::pair{ua.get(), 3}, std::pair{ua2.get(), 1},
                           std::pair{ub.get(), 1}}) {
    QpInitStateAttr init;
    init.qkey = 0x11;
    init.pkey_index = static_cast<uint16_t>(index);
    ASSERT_TRUE(qp->ToInit(init).ok());
    ASSERT_TRUE(qp->ToRtr(QpRtrAttr()).ok());
    ASSERT_TRUE(qp->ToRts(QpRtsAttr()).ok());
  }
  char buf[kUdGrhBytes + 16] = {};
  auto ud_mr = *b_.pd->RegisterMemory(buf, sizeof(buf), kAccessLocalWrite);
  Sge ur{reinterpret_cast<uint64_t>(buf), sizeof(buf), ud_mr->lkey()};
  ASSERT_TRUE(ub->PostRecv(RecvWr{2, &ur, 1}).ok());
  AhAttr ah_attr;
  ah_attr.dlid = b_.lid;
  auto ah = *a_.pd->CreateAddressHandle(ah_attr);
  w.ah = ah.get();
  w.remote_qpn = ub->qp_num();
  w.remote_qkey = 0x11;
  const uint64_t before = a_.ctx->Counters()->pkey_drops;
  ASSERT_TRUE(ua->PostSend(w).ok());
  ASSERT_EQ(PollN(*a_.cq, 1).at(0).status, WcStatus::kSuccess);
  EXPECT_EQ(a_.ctx->Counters()->pkey_drops, before + 1);
  EXPECT_TRUE(NoCompletion(*b_.cq));
  ASSERT_TRUE(ua2->PostSend(w).ok());
  ASSERT_EQ(PollN(*a_.cq, 1).at(0).status, WcStatus::kSuccess);
  EXPECT_EQ(PollN(*b_.cq, 1).size(), 1u);
  ua.reset();
  ua2.reset();
  ub.reset();
  ah.reset();
  ud_mr.reset();
  mr.reset();
}

TEST_F(SoftDeviceTest, RegistrationChecksItsFlags) {
  a_ = Node::Open(*provider_);
  int v;
  EXPECT_EQ(a_.pd->RegisterMemory(&v, 4, kAccessRemoteWrite).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a_.pd->RegisterMemory(&v, 4, kAccessLocalWrite | kAccessOnDemand)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  auto mr = a_.pd->RegisterMemory(&v, 4, kAccessLocalWrite | kAccessRemoteRead);
  ASSERT_TRUE(mr.ok());
  EXPECT_EQ((*mr)->lkey(), (*mr)->rkey());
  mr->reset();
  a_.Reset();
}

TEST_F(SoftDeviceTest, WaitNotifyWakesOnACompletionAndOnInterrupt) {
  Pair();
  // Nothing arrives: a bounded wait times out.
  ASSERT_TRUE(b_.cq->RequestNotify().ok());
  EXPECT_TRUE(NoCompletion(*b_.cq));
  auto r = b_.cq->WaitNotify(1'000'000);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  // A waiter with no limit is woken by a receive completion.
  uint32_t dst = 0;
  auto dmr = *b_.pd->RegisterMemory(&dst, 4, kAccessLocalWrite);
  Sge rs{reinterpret_cast<uint64_t>(&dst), 4, dmr->lkey()};
  ASSERT_TRUE(qb_->PostRecv(RecvWr{1, &rs, 1}).ok());
  ASSERT_TRUE(b_.cq->RequestNotify().ok());
  ASSERT_TRUE(NoCompletion(*b_.cq));
  std::atomic<int> woke{-1};
  std::thread waiter([&] {
    auto w = b_.cq->WaitNotify(-1);
    woke.store(w.ok() && *w ? 1 : 0);
  });
  uint32_t v = 9;
  Sge s{reinterpret_cast<uint64_t>(&v), 4, 0};
  SendWr w;
  w.flags = kSendInline;
  w.sg_list = &s;
  w.num_sge = 1;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  waiter.join();
  EXPECT_EQ(woke.load(), 1);
  EXPECT_EQ(PollN(*b_.cq, 1).size(), 1u);
  EXPECT_EQ(dst, 9u);
  // Interrupt ends a wait with no limit.
  ASSERT_TRUE(b_.cq->RequestNotify().ok());
  std::thread sleeper([&] {
    auto w = b_.cq->WaitNotify(-1);
    woke.store(w.ok() && *w ? 1 : 0);
  });
  b_.cq->Interrupt();
  sleeper.join();
  EXPECT_EQ(woke.load(), 0);
}

// ---- between processes ----------------------------------------------------

// A page shared with forked children: addresses and flags.
struct Mailbox {
  std::atomic<int> ready[8];
  QpAddress child_addr[8];
  QpAddress parent_addr[8];
  uint64_t target_addr;
  uint32_t rkey;
  std::atomic<int> go;
};

// A Mailbox in memory the forked children share with the test (placed
// before the fork), unmapped when the test's body ends. get() is null
// when the mapping failed.
class SharedMailbox {
 public:
  SharedMailbox() {
    void* p = mmap(nullptr, sizeof(Mailbox), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) box_ = new (p) Mailbox();
  }
  ~SharedMailbox() {
    if (box_ != nullptr) munmap(box_, sizeof(Mailbox));
  }
  SharedMailbox(const SharedMailbox&) = delete;
  SharedMailbox& operator=(const SharedMailbox&) = delete;
  Mailbox* get() const { return box_; }

 private:
  Mailbox* box_ = nullptr;
};

bool WaitFor(const std::atomic<int>& flag, int value) {
  auto end = std::chrono::steady_clock::now() + kDeadline;
  while (flag.load(std::memory_order_acquire) != value) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

#define CHILD_CHECK(cond)                                               \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "child %d: %s:%d: %s\n", getpid(), __FILE__, \
                   __LINE__, #cond);                                    \
      _exit(1);                                                         \
    }                                                                   \
  } while (0)

TEST_F(SoftDeviceTest, ProcessesDoAtomicsAndWritesOnATargetThatNeverPolls) {
  constexpr int kChildren = 3;
  constexpr uint64_t kAdds = 2000;
  SharedMailbox shared;
  Mailbox* box = shared.get();
  ASSERT_NE(box, nullptr);

  // The parent: a counter, a region the children write, one QP each.
  b_ = Node::Open(*provider_);
  alignas(64) static uint64_t words[2 + kChildren * 8];
  std::memset(words, 0, sizeof(words));
  auto mr = *b_.pd->RegisterMemory(
      words, sizeof(words),
      kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteAtomic);
  box->target_addr = reinterpret_cast<uint64_t>(words);
  box->rkey = mr->rkey();
  std::vector<std::unique_ptr<QueuePair>> qps;
  for (int i = 0; i < kChildren; ++i) {
    qps.push_back(MakeQp(b_));
    box->parent_addr[i] = AddressOf(b_, *qps[i], 0);
  }

  std::vector<pid_t> pids;
  for (int i = 0; i < kChildren; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Node n = Node::Open(*provider_);
      auto qp = MakeQp(n);
      box->child_addr[i] = AddressOf(n, *qp, 0);
      box->ready[i].store(1, std::memory_order_release);
      CHILD_CHECK(WaitFor(box->go, 1));
      CHILD_CHECK(Connect(*qp, box->parent_addr[i], 0).ok());
      alignas(8) uint64_t fetched[2] = {};
      auto lmr =
          *n.pd->RegisterMemory(fetched, sizeof(fetched), kAccessLocalWrite);
      Sge s{reinterpret_cast<uint64_t>(&fetched[0]), 8, lmr->lkey()};
      // Fetch-adds on word 0; compare-swap increments on word 1.
      for (uint64_t k = 0; k < kAdds; ++k) {
        SendWr w = Write(k, &s, box->target_addr, box->rkey);
        w.opcode = Opcode::kAtomicFetchAdd;
        w.compare_add = 1;
        CHILD_CHECK(qp->PostSend(w).ok());
        auto c = PollN(*n.cq, 1);
        CHILD_CHECK(c.size() == 1 && c[0].status == WcStatus::kSuccess);
      }
      for (uint64_t k = 0; k < kAdds / 4; ++k) {
        uint64_t expect = 0;
        for (;;) {
          SendWr w = Write(k, &s, box->target_addr + 8, box->rkey);
          w.opcode = Opcode::kAtomicCompareSwap;
          w.compare_add = expect;
          w.swap = expect + 1;
          CHILD_CHECK(qp->PostSend(w).ok());
          auto c = PollN(*n.cq, 1);
          CHILD_CHECK(c.size() == 1 && c[0].status == WcStatus::kSuccess);
          if (fetched[0] == expect) break;
          expect = fetched[0];
        }
      }
      // And an RDMA write of this child's slot.
      uint64_t mine[8];
      for (int j = 0; j < 8; ++j) mine[j] = (uint64_t(i) << 32) | j;
      auto wmr = *n.pd->RegisterMemory(mine, sizeof(mine), 0);
      Sge ws{reinterpret_cast<uint64_t>(mine), sizeof(mine), wmr->lkey()};
      CHILD_CHECK(
          qp->PostSend(Write(1, &ws, box->target_addr + 16 + i * 64, box->rkey))
              .ok());
      auto c = PollN(*n.cq, 1);
      CHILD_CHECK(c.size() == 1 && c[0].status == WcStatus::kSuccess);
      wmr.reset();
      lmr.reset();
      qp.reset();
      n.Reset();
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (int i = 0; i < kChildren; ++i) {
    ASSERT_TRUE(WaitFor(box->ready[i], 1));
    ASSERT_TRUE(Connect(*qps[i], box->child_addr[i], 0).ok());
  }
  box->go.store(1, std::memory_order_release);
  // The parent never polls: RDMA needs no help from its target.
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(words[0], kChildren * kAdds);
  EXPECT_EQ(words[1], kChildren * (kAdds / 4));
  for (int i = 0; i < kChildren; ++i) {
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(words[2 + i * 8 + j], (uint64_t(i) << 32) | j);
    }
  }
  EXPECT_EQ(b_.ctx->JobCounters()->remote_access_errors, 0u);
  mr.reset();
  qps.clear();
  b_.Reset();
}

TEST_F(SoftDeviceTest, ProcessesSendAndReceive) {
  SharedMailbox shared;
  Mailbox* box = shared.get();
  ASSERT_NE(box, nullptr);
  b_ = Node::Open(*provider_);
  qb_ = MakeQp(b_);
  box->parent_addr[0] = AddressOf(b_, *qb_, 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Node n = Node::Open(*provider_);
    auto qp = MakeQp(n);
    box->child_addr[0] = AddressOf(n, *qp, 0);
    box->ready[0].store(1, std::memory_order_release);
    CHILD_CHECK(WaitFor(box->go, 1));
    CHILD_CHECK(Connect(*qp, box->parent_addr[0], 0).ok());
    for (uint32_t k = 0; k < 100; ++k) {
      Sge s{reinterpret_cast<uint64_t>(&k), 4, 0};
      SendWr w = InlineSend(&s, k);
      CHILD_CHECK(qp->PostSend(w).ok());
      auto c = PollN(*n.cq, 1);
      CHILD_CHECK(c.size() == 1 && c[0].status == WcStatus::kSuccess &&
                  c[0].wr_id == k);
    }
    qp.reset();
    n.Reset();
    _exit(0);
  }
  // Receives posted before the child may send: no RNR at all.
  uint32_t slots[100] = {};
  auto mr = *b_.pd->RegisterMemory(slots, sizeof(slots), kAccessLocalWrite);
  ASSERT_TRUE(WaitFor(box->ready[0], 1));
  ASSERT_TRUE(Connect(*qb_, box->child_addr[0], 0).ok());
  for (uint32_t k = 0; k < 64; ++k) {
    Sge r{reinterpret_cast<uint64_t>(&slots[k]), 4, mr->lkey()};
    ASSERT_TRUE(qb_->PostRecv(RecvWr{k, &r, 1}).ok());
  }
  box->go.store(1, std::memory_order_release);
  uint32_t next_post = 64;
  for (uint32_t k = 0; k < 100; ++k) {
    auto c = PollN(*b_.cq, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].wr_id, k);  // in order
    EXPECT_EQ(slots[k], k);
    if (next_post < 100) {
      Sge r{reinterpret_cast<uint64_t>(&slots[next_post]), 4, mr->lkey()};
      ASSERT_TRUE(qb_->PostRecv(RecvWr{next_post, &r, 1}).ok());
      ++next_post;
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  mr.reset();
  qb_.reset();
  b_.Reset();
}

TEST_F(SoftDeviceTest, APeerThatDiedIsATransportRetryError) {
  SharedMailbox shared;
  Mailbox* box = shared.get();
  ASSERT_NE(box, nullptr);
  a_ = Node::Open(*provider_);
  qa_ = MakeQp(a_);
  box->parent_addr[0] = AddressOf(a_, *qa_, 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Connects, registers memory, then dies without closing anything.
    Node n = Node::Open(*provider_);
    auto qp = MakeQp(n);
    static uint64_t mem[4];
    auto mr = *n.pd->RegisterMemory(mem, sizeof(mem),
                                    kAccessLocalWrite | kAccessRemoteWrite);
    CHILD_CHECK(Connect(*qp, box->parent_addr[0], 0).ok());
    box->child_addr[0] = AddressOf(n, *qp, 0);
    box->target_addr = reinterpret_cast<uint64_t>(mem);
    box->rkey = mr->rkey();
    box->ready[0].store(1, std::memory_order_release);
    _exit(0);
  }
  ASSERT_TRUE(WaitFor(box->ready[0], 1));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ConnectOptions o;
  o.retry_cnt = 1;
  o.timeout = 1;
  ASSERT_TRUE(Connect(*qa_, box->child_addr[0], 0, o).ok());
  uint64_t v = 3;
  Sge s{reinterpret_cast<uint64_t>(&v), 8, 0};
  SendWr w = Write(1, &s, box->target_addr, box->rkey);
  w.flags |= kSendInline;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  auto c = PollN(*a_.cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRetryExceeded);
  EXPECT_EQ(qa_->state(), QpState::kError);
  // The dead process never closed the device: the launcher's cleanup.
  Unpair();
  EXPECT_TRUE(RemoveSoftDevice(key_).ok());
}

TEST_F(SoftDeviceTest, ThreadsSendConcurrentlyIntoOneSrqAndCq) {
  constexpr int kThreads = 2;
  constexpr uint32_t kMessages = 500;
  a_ = Node::Open(*provider_);
  b_ = Node::Open(*provider_);
  SrqInitAttr sa;
  sa.max_wr = 64;
  auto srq = *b_.pd->CreateSrq(sa);
  std::vector<std::unique_ptr<CompletionQueue>> send_cqs;
  std::vector<std::unique_ptr<QueuePair>> senders, receivers;
  for (int i = 0; i < kThreads; ++i) {
    send_cqs.push_back(std::move(*a_.ctx->CreateCq(64)));
    QpInitAttr qa;
    qa.send_cq = qa.recv_cq = send_cqs.back().get();
    qa.max_send_wr = qa.max_recv_wr = 64;
    qa.max_inline_data = 16;
    senders.push_back(std::move(*a_.pd->CreateQp(qa)));
    receivers.push_back(MakeQp(b_, QpType::kRc, 0, srq.get()));
    ASSERT_TRUE(Connect(*senders[i], AddressOf(b_, *receivers[i], 0), 0).ok());
    ASSERT_TRUE(Connect(*receivers[i], AddressOf(a_, *senders[i], 0), 0).ok());
  }
  std::vector<uint64_t> slots(64);
  auto mr =
      *b_.pd->RegisterMemory(slots.data(), slots.size() * 8, kAccessLocalWrite);
  auto post = [&](uint64_t slot) {
    Sge r{reinterpret_cast<uint64_t>(&slots[slot]), 8, mr->lkey()};
    return srq->PostRecv(RecvWr{slot, &r, 1});
  };
  for (uint64_t k = 0; k < 64; ++k) ASSERT_TRUE(post(k).ok());

  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (uint32_t k = 0; k < kMessages; ++k) {
        uint64_t v = (uint64_t(i) << 32) | k;
        Sge s{reinterpret_cast<uint64_t>(&v), 8, 0};
        SendWr w = InlineSend(&s, k);
        if (!senders[i]->PostSend(w).ok()) ++failures;
        auto c = PollN(*send_cqs[i], 1);
        if (c.size() != 1 || c[0].status != WcStatus::kSuccess ||
            c[0].wr_id != k) {
          ++failures;
        }
      }
    });
  }
  // Per sender, messages arrive in order.
  uint32_t next[kThreads] = {};
  for (uint32_t n = 0; n < kThreads * kMessages; ++n) {
    auto c = PollN(*b_.cq, 1);
    ASSERT_EQ(c.size(), 1u);
    ASSERT_EQ(c[0].status, WcStatus::kSuccess);
    uint64_t v = slots[c[0].wr_id];
    int who = static_cast<int>(v >> 32);
    ASSERT_LT(who, kThreads);
    EXPECT_EQ(c[0].qp_num, receivers[who]->qp_num());
    EXPECT_EQ(uint32_t(v), next[who]++);
    ASSERT_TRUE(post(c[0].wr_id).ok());
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  mr.reset();
  receivers.clear();
  senders.clear();
  send_cqs.clear();
  srq.reset();
}

TEST_F(SoftDeviceTest, SeveralDevicesForMultiRail) {
  SoftDeviceOptions o;
  o.job_key = key_;
  o.num_devices = 2;
  o.max_procs = 4;
  o.arena_bytes = 4 << 20;
  auto provider = std::move(*MakeSoftProvider(o));
  auto devices = *provider->ListDevices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].name, "gexsoft0");
  EXPECT_EQ(devices[1].name, "gexsoft1");
  EXPECT_NE(devices[0].node_guid, devices[1].node_guid);
  EXPECT_FALSE(provider->Open("gexsoft2").ok());
  auto d0 = std::move(*provider->Open("gexsoft0"));
  auto d1 = std::move(*provider->Open("gexsoft1"));
  EXPECT_EQ(d1->name(), "gexsoft1");
  // Separate devices: each numbers its LIDs from 1, GIDs differ.
  EXPECT_EQ(d0->QueryPort(1)->lid, 1);
  EXPECT_EQ(d1->QueryPort(1)->lid, 1);
  EXPECT_NE(d0->QueryPort(1)->gid, d1->QueryPort(1)->gid);
  std::string path1 = "/dev/shm" + SoftDeviceShmName(key_, 1);
  EXPECT_EQ(access(path1.c_str(), F_OK), 0);
  d0.reset();
  d1.reset();
  EXPECT_NE(access(path1.c_str(), F_OK), 0);
  SoftDeviceOptions bad = o;
  bad.num_devices = kMaxSoftDevices + 1;
  EXPECT_FALSE(MakeSoftProvider(bad).ok());
}

// One context past max_procs is refused with a message naming the limit
// (it read the limit from the header after unmapping it once: a crash at
// the 65th rank of a job).
TEST_F(SoftDeviceTest, OneContextPastMaxProcsIsRefused) {
  SoftDeviceOptions o = Options();
  o.max_procs = 2;
  o.arena_bytes = 4 << 20;
  o.job_key = key_ + "_max";
  auto provider = std::move(*MakeSoftProvider(o));
  auto c1 = provider->Open("gexsoft0");
  auto c2 = provider->Open("gexsoft0");
  ASSERT_TRUE(c1.ok() && c2.ok());
  auto c3 = provider->Open("gexsoft0");
  ASSERT_FALSE(c3.ok());
  EXPECT_EQ(c3.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(c3.status().message().find("more than 2 processes"),
            absl::string_view::npos)
      << c3.status();
  c1->reset();
  c2->reset();
  (void)RemoveSoftDevice(o.job_key);
}

TEST_F(SoftDeviceTest, LargeTransfersAcrossSeveralSges) {
  Pair();
  constexpr size_t kBytes = size_t{4} << 20;
  std::vector<uint8_t> src(kBytes), dst(kBytes + 64, 0);
  std::mt19937 rng(7);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  auto smr = *a_.pd->RegisterMemory(src.data(), kBytes, kAccessLocalWrite);
  auto dmr = *b_.pd->RegisterMemory(
      dst.data(), dst.size(),
      kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
  // Two SGEs gathered into one remote range.
  Sge s[2] = {{reinterpret_cast<uint64_t>(src.data()), kBytes / 2, smr->lkey()},
              {reinterpret_cast<uint64_t>(src.data()) + kBytes / 2, kBytes / 2,
               smr->lkey()}};
  SendWr w =
      Write(1, s, reinterpret_cast<uint64_t>(dst.data()) + 64, dmr->rkey());
  w.num_sge = 2;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  ASSERT_EQ(PollN(*a_.cq, 1).at(0).status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(dst.data() + 64, src.data(), kBytes), 0);
  // And read back, scattered into two SGEs.
  std::fill(src.begin(), src.end(), 0);
  w.opcode = Opcode::kRdmaRead;
  ASSERT_TRUE(qa_->PostSend(w).ok());
  auto c = PollN(*a_.cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  EXPECT_EQ(c[0].byte_len, kBytes);
  EXPECT_EQ(std::memcmp(dst.data() + 64, src.data(), kBytes), 0);
}

}  // namespace
}  // namespace gexrt::ibv::verbs
