// The hot path does not allocate: PostSend, PostRecv and Poll on the
// software device, counted by replacing the global operator new in this
// test binary.
#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <string>

#include "conduit/ibv/verbs/soft_device.h"
#include "gtest/gtest.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace gexrt::ibv::verbs {
namespace {

TEST(SoftDeviceAllocTest, PostAndPollDoNotAllocate) {
  SoftDeviceOptions o;
  o.job_key = "alloc" + std::to_string(std::random_device()());
  o.max_procs = 2;
  o.arena_bytes = 4 << 20;
  auto provider = std::move(*MakeSoftProvider(o));
  auto a = std::move(*provider->Open(kSoftDeviceName));
  auto b = std::move(*provider->Open(kSoftDeviceName));
  auto apd = std::move(*a->AllocPd());
  auto bpd = std::move(*b->AllocPd());
  auto acq = std::move(*a->CreateCq(64));
  auto bcq = std::move(*b->CreateCq(64));
  QpInitAttr qa;
  qa.max_send_wr = qa.max_recv_wr = 16;
  qa.max_inline_data = 64;
  qa.send_cq = qa.recv_cq = acq.get();
  const long at_create = g_allocations.load();
  auto qpa = std::move(*apd->CreateQp(qa));
  // The counter sees the library's allocations (creation allocates).
  EXPECT_GT(g_allocations.load() - at_create, 0);
  qa.send_cq = qa.recv_cq = bcq.get();
  auto qpb = std::move(*bpd->CreateQp(qa));
  auto connect = [](QueuePair& q, uint16_t lid, uint32_t qpn) {
    QpInitStateAttr init;
    init.access = kAccessRemoteWrite;
    ASSERT_TRUE(q.ToInit(init).ok());
    QpRtrAttr rtr;
    rtr.remote.lid = lid;
    rtr.remote.qpn = qpn;
    ASSERT_TRUE(q.ToRtr(rtr).ok());
    ASSERT_TRUE(q.ToRts(QpRtsAttr()).ok());
  };
  connect(*qpa, b->QueryPort(1)->lid, qpb->qp_num());
  connect(*qpb, a->QueryPort(1)->lid, qpa->qp_num());
  uint64_t src = 1, dst[2] = {};
  auto smr = std::move(*apd->RegisterMemory(&src, 8, 0));
  auto dmr = std::move(*bpd->RegisterMemory(
      dst, sizeof(dst), kAccessLocalWrite | kAccessRemoteWrite));

  Sge s{reinterpret_cast<uint64_t>(&src), 8, smr->lkey()};
  Sge r{reinterpret_cast<uint64_t>(&dst[0]), 8, dmr->lkey()};
  Completion c[4];
  const long before = g_allocations.load();
  for (int i = 0; i < 1000; ++i) {
    if (!qpb->PostRecv(RecvWr{1, &r, 1}).ok()) FAIL();
    SendWr w;
    w.flags = kSendSignaled;
    w.sg_list = &s;
    w.num_sge = 1;
    if (!qpa->PostSend(w).ok()) FAIL();
    w.opcode = Opcode::kRdmaWrite;
    w.remote_addr = reinterpret_cast<uint64_t>(&dst[1]);
    w.rkey = dmr->rkey();
    w.flags = kSendSignaled | kSendInline;
    if (!qpa->PostSend(w).ok()) FAIL();
    size_t got = 0;
    while (got < 2) got += *acq->Poll(std::span<Completion>(c, 4));
    while (*bcq->Poll(std::span<Completion>(c, 4)) == 0) {
    }
  }
  EXPECT_EQ(g_allocations.load() - before, 0);
  smr.reset();
  dmr.reset();
  qpa.reset();
  qpb.reset();
  acq.reset();
  bcq.reset();
  apd.reset();
  bpd.reset();
  a.reset();
  b.reset();
}

}  // namespace
}  // namespace gexrt::ibv::verbs
