// Latency of the software device's data path, one process and two contexts
// (the same shared object and CMA path as between processes):
//   bazel run -c opt //conduit/ibv/verbs:soft_device_benchmark
// BM_SendRecv: post a receive, send 8 bytes (inline), reap both
// completions. BM_RdmaWrite / BM_RdmaRead: one signaled 8-byte operation and
// its completion. BM_FetchAdd: one atomic.
#include <random>
#include <string>

#include "benchmark/benchmark.h"
#include "conduit/ibv/verbs/soft_device.h"

namespace gexrt::ibv::verbs {
namespace {

struct Bench {
  std::unique_ptr<Provider> provider;
  std::unique_ptr<Context> a, b;
  std::unique_ptr<ProtectionDomain> apd, bpd;
  std::unique_ptr<CompletionQueue> acq, bcq;
  std::unique_ptr<QueuePair> qa, qb;
  alignas(8) uint64_t local = 1, remote[2] = {};
  std::unique_ptr<MemoryRegion> lmr, rmr;

  Bench() {
    SoftDeviceOptions o;
    o.job_key = "bench" + std::to_string(std::random_device()());
    o.max_procs = 2;
    o.arena_bytes = 4 << 20;
    provider = std::move(*MakeSoftProvider(o));
    a = std::move(*provider->Open(kSoftDeviceName));
    b = std::move(*provider->Open(kSoftDeviceName));
    apd = std::move(*a->AllocPd());
    bpd = std::move(*b->AllocPd());
    acq = std::move(*a->CreateCq(64));
    bcq = std::move(*b->CreateCq(64));
    QpInitAttr qi;
    qi.max_send_wr = qi.max_recv_wr = 16;
    qi.max_inline_data = 64;
    qi.send_cq = qi.recv_cq = acq.get();
    qa = std::move(*apd->CreateQp(qi));
    qi.send_cq = qi.recv_cq = bcq.get();
    qb = std::move(*bpd->CreateQp(qi));
    Connect(*qa, b->QueryPort(1)->lid, qb->qp_num());
    Connect(*qb, a->QueryPort(1)->lid, qa->qp_num());
    lmr = std::move(*apd->RegisterMemory(&local, 8, kAccessLocalWrite));
    rmr = std::move(
        *bpd->RegisterMemory(remote, sizeof(remote),
                             kAccessLocalWrite | kAccessRemoteWrite |
                                 kAccessRemoteRead | kAccessRemoteAtomic));
  }
  ~Bench() {
    lmr.reset();
    rmr.reset();
    qa.reset();
    qb.reset();
    acq.reset();
    bcq.reset();
    apd.reset();
    bpd.reset();
    a.reset();
    b.reset();
  }
  static void Connect(QueuePair& q, uint16_t lid, uint32_t qpn) {
    QpInitStateAttr init;
    init.access = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    (void)q.ToInit(init);
    QpRtrAttr rtr;
    rtr.remote.lid = lid;
    rtr.remote.qpn = qpn;
    (void)q.ToRtr(rtr);
    (void)q.ToRts(QpRtsAttr());
  }
  static void Reap(CompletionQueue& cq) {
    Completion c;
    while (*cq.Poll(std::span<Completion>(&c, 1)) == 0) {
    }
  }
  void One(Opcode op) {
    Sge s{reinterpret_cast<uint64_t>(&local), 8, lmr->lkey()};
    SendWr w;
    w.opcode = op;
    w.flags = kSendSignaled;
    w.sg_list = &s;
    w.num_sge = 1;
    w.remote_addr = reinterpret_cast<uint64_t>(&remote[0]);
    w.rkey = rmr->rkey();
    w.compare_add = 1;
    (void)qa->PostSend(w);
    Reap(*acq);
  }
};

void BM_SendRecv(benchmark::State& state) {
  Bench b;
  Sge r{reinterpret_cast<uint64_t>(&b.remote[1]), 8, b.rmr->lkey()};
  Sge s{reinterpret_cast<uint64_t>(&b.local), 8, 0};
  SendWr w;
  w.flags = kSendSignaled | kSendInline;
  w.sg_list = &s;
  w.num_sge = 1;
  for (auto _ : state) {
    (void)b.qb->PostRecv(RecvWr{1, &r, 1});
    (void)b.qa->PostSend(w);
    Bench::Reap(*b.acq);
    Bench::Reap(*b.bcq);
  }
}
BENCHMARK(BM_SendRecv);

void BM_RdmaWrite(benchmark::State& state) {
  Bench b;
  for (auto _ : state) b.One(Opcode::kRdmaWrite);
}
BENCHMARK(BM_RdmaWrite);

void BM_RdmaRead(benchmark::State& state) {
  Bench b;
  for (auto _ : state) b.One(Opcode::kRdmaRead);
}
BENCHMARK(BM_RdmaRead);

void BM_FetchAdd(benchmark::State& state) {
  Bench b;
  for (auto _ : state) b.One(Opcode::kAtomicFetchAdd);
}
BENCHMARK(BM_FetchAdd);

}  // namespace
}  // namespace gexrt::ibv::verbs
