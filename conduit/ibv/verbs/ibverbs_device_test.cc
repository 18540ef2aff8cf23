// The libibverbs implementation: the device listing always; the data path
// (an RC loopback on the first active port: send/receive, RDMA write and
// read, fetch-add, a refused rkey) only where a device exists. On a machine
// without one the data-path case prints SKIPPED with the reason.
#include "conduit/ibv/verbs/ibverbs_device.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gexrt::ibv::verbs {
namespace {

TEST(IbverbsDeviceTest, ListsDevices) {
  auto provider = MakeIbverbsProvider();
  EXPECT_EQ(provider->kind(), "libibverbs");
  auto devices = provider->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  std::printf("%zu verbs device(s)\n", devices->size());
  for (const DeviceInfo& d : *devices) {
    std::printf("  %s guid %016llx, %u port(s)\n", d.name.c_str(),
                static_cast<unsigned long long>(d.node_guid), d.num_ports);
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.software);
  }
  EXPECT_EQ(provider->Open("no-such-device").status().code(),
            absl::StatusCode::kNotFound);
}

std::vector<Completion> PollN(CompletionQueue& cq, size_t n) {
  std::vector<Completion> out;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  Completion c;
  while (out.size() < n && std::chrono::steady_clock::now() < end) {
    auto got = cq.Poll(std::span<Completion>(&c, 1));
    if (!got.ok()) break;
    if (*got)
      out.push_back(c);
    else
      std::this_thread::yield();
  }
  return out;
}

TEST(IbverbsDeviceTest, RcLoopbackDataPath) {
  auto provider = MakeIbverbsProvider();
  auto devices = provider->ListDevices();
  ASSERT_TRUE(devices.ok());
  std::unique_ptr<Context> ctx;
  uint8_t port_num = 0;
  PortAttr port;
  for (const DeviceInfo& d : *devices) {
    auto c = provider->Open(d.name);
    if (!c.ok()) continue;
    for (uint8_t p = 1; p <= d.num_ports; ++p) {
      auto a = (*c)->QueryPort(p);
      if (a.ok() && a->state == PortState::kActive) {
        ctx = std::move(*c);
        port_num = p;
        port = *a;
        break;
      }
    }
    if (ctx) break;
  }
  if (!ctx) {
    std::printf("SKIPPED: data path: %s\n",
                devices->empty() ? "no verbs device on this machine (no HCA, "
                                   "no rxe/siw)"
                                 : "no device has an ACTIVE port");
    GTEST_SKIP() << "no verbs device with an active port";
  }
  std::printf("data path on %s port %u (lid %u, mtu %u)\n", ctx->name().c_str(),
              port_num, port.lid, port.active_mtu);
  auto attr = ctx->QueryDevice();
  ASSERT_TRUE(attr.ok()) << attr.status();
  std::printf("max_qp %u max_cqe %u max_sge %u max_inline %u odp %d\n",
              attr->max_qp, attr->max_cqe, attr->max_sge, attr->max_inline_data,
              attr->odp_supported);
  auto pd = *ctx->AllocPd();
  auto cq = *ctx->CreateCq(64);
  QpInitAttr qa;
  qa.send_cq = qa.recv_cq = cq.get();
  qa.max_send_wr = qa.max_recv_wr = 16;
  auto q1 = *pd->CreateQp(qa);
  auto q2 = *pd->CreateQp(qa);
  bool use_gid = port.link_layer == LinkLayer::kEthernet;
  auto connect = [&](QueuePair& me, QueuePair& peer) {
    QpInitStateAttr init;
    init.port = port_num;
    init.access = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    ASSERT_TRUE(me.ToInit(init).ok());
    QpRtrAttr rtr;
    rtr.port = port_num;
    rtr.remote.lid = port.lid;
    rtr.remote.gid = port.gid;
    rtr.remote.qpn = peer.qp_num();
    rtr.remote.psn = 0;
    rtr.use_gid = use_gid;
    rtr.path_mtu = port.active_mtu;
    auto s = me.ToRtr(rtr);
    ASSERT_TRUE(s.ok()) << s;
    s = me.ToRts(QpRtsAttr());
    ASSERT_TRUE(s.ok()) << s;
  };
  connect(*q1, *q2);
  connect(*q2, *q1);

  alignas(8) uint64_t buf[4] = {7, 0, 0, 0};
  auto mr = *pd->RegisterMemory(buf, sizeof(buf),
                                kAccessLocalWrite | kAccessRemoteWrite |
                                    kAccessRemoteRead | kAccessRemoteAtomic);
  Sge recv{reinterpret_cast<uint64_t>(&buf[1]), 8, mr->lkey()};
  ASSERT_TRUE(q2->PostRecv(RecvWr{1, &recv, 1}).ok());
  Sge src{reinterpret_cast<uint64_t>(&buf[0]), 8, mr->lkey()};
  SendWr w;
  w.wr_id = 2;
  w.flags = kSendSignaled;
  w.sg_list = &src;
  w.num_sge = 1;
  ASSERT_TRUE(q1->PostSend(w).ok());
  EXPECT_EQ(PollN(*cq, 2).size(), 2u);
  EXPECT_EQ(buf[1], 7u);

  w.opcode = Opcode::kRdmaWrite;
  w.remote_addr = reinterpret_cast<uint64_t>(&buf[2]);
  w.rkey = mr->rkey();
  ASSERT_TRUE(q1->PostSend(w).ok());
  auto c = PollN(*cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  EXPECT_EQ(buf[2], 7u);

  Sge fetched{reinterpret_cast<uint64_t>(&buf[3]), 8, mr->lkey()};
  w.opcode = Opcode::kAtomicFetchAdd;
  w.sg_list = &fetched;
  w.compare_add = 5;
  if (attr->atomic_cap != AtomicCap::kNone) {
    ASSERT_TRUE(q1->PostSend(w).ok());
    c = PollN(*cq, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, WcStatus::kSuccess);
    EXPECT_EQ(buf[3], 7u);
    EXPECT_EQ(buf[2], 12u);
  }

  w.opcode = Opcode::kRdmaWrite;
  w.sg_list = &src;
  w.rkey = mr->rkey() ^ 0x5a5a;  // not a live key
  ASSERT_TRUE(q1->PostSend(w).ok());
  c = PollN(*cq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRemoteAccessError);
  EXPECT_EQ(q1->state(), QpState::kError);
  mr.reset();
  q1.reset();
  q2.reset();
}

}  // namespace
}  // namespace gexrt::ibv::verbs
