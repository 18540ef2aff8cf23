// The socket conduit alone: several SocketConduit instances in one process,
// started together over a ThreadBootstrap (Init and AttachSegment are
// collective, so they run on one thread per rank), then driven from the
// test's thread: each instance's Poll() delivers to a recording Sink whose
// handlers may reply. No sleeps: every wait is a bounded polling loop.
#include "core/testing/socket_conduit.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "am/vocabulary.h"
#include "bootstrap/node_map.h"
#include "core/conduit.h"
#include "core/testing/thread_bootstrap.h"
#include "gtest/gtest.h"
#include "rma/event.h"

namespace gexrt::core::testing {
namespace {

constexpr size_t kSegmentSize = 1 << 20;
// Polling rounds a test waits at most for something that must happen.
constexpr int kPollLimit = 1000000;

// A message as a Sink saw it (copied out of the conduit's buffer).
struct Received {
  Rank source = 0;
  Category category = Category::kShort;
  bool is_request = false;
  uint8_t handler = 0;
  std::vector<uint32_t> args;
  std::vector<unsigned char> payload;  // A Medium's or Long's bytes.
  void* payload_address = nullptr;
  size_t len = 0;
  void* reply = nullptr;
};

// One rank: its conduit, bootstrap, segment and what arrived.
struct Node {
  Rank rank = 0;
  std::unique_ptr<ThreadBootstrap> bootstrap;
  std::unique_ptr<SocketConduit> conduit;
  std::unique_ptr<unsigned char[]> segment;
  std::mutex mu;
  std::vector<Received> received;
  // Called after recording each message (from inside Poll), e.g. to reply.
  std::function<void(Node&, const Inbound&)> on_message;

  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return received.size();
  }
  unsigned char* base() { return segment.get(); }
  uint64_t address(size_t offset) {
    return reinterpret_cast<uint64_t>(segment.get() + offset);
  }
};

void Record(void* context, const Inbound& m) {
  Node& node = *static_cast<Node*>(context);
  Received r;
  r.source = m.source;
  r.category = m.category;
  r.is_request = m.is_request;
  r.handler = m.handler;
  r.args.assign(m.args, m.args + m.nargs);
  if (m.category != Category::kShort && m.len != 0) {
    const auto* p = static_cast<const unsigned char*>(m.payload);
    r.payload.assign(p, p + m.len);
  }
  r.payload_address = m.payload;
  r.len = m.len;
  r.reply = m.reply;
  {
    std::lock_guard<std::mutex> lock(node.mu);
    node.received.push_back(std::move(r));
  }
  if (node.on_message) node.on_message(node, m);
}

// A job of `n` socket conduits in this process, started and with their
// segments attached.
class Job {
 public:
  explicit Job(Rank n, bool thread_safe = false, bool rdma = true)
      : thread_job_(n), nodes_(n) {
    const std::vector<uint64_t> hosts(n, 42);
    std::vector<std::thread> threads;
    for (Rank r = 0; r < n; ++r) {
      Node& node = nodes_[r];
      node.rank = r;
      node.bootstrap = std::make_unique<ThreadBootstrap>(&thread_job_, r);
      node.conduit = std::make_unique<SocketConduit>(rdma);
      node.segment = std::make_unique<unsigned char[]>(kSegmentSize);
      maps_.push_back(NodeMap::Build(hosts, r, 0));
    }
    for (Rank r = 0; r < n; ++r) {
      threads.emplace_back([this, r, thread_safe] {
        Node& node = nodes_[r];
        InitArgs args;
        args.bootstrap = node.bootstrap.get();
        args.map = &maps_[r];
        args.thread_safe = thread_safe;
        args.sink = Sink{&Record, &node};
        init_ok_[r] =
            node.conduit->Init(args).ok() &&
            node.conduit->AttachSegment(node.base(), kSegmentSize).ok();
      });
    }
    for (std::thread& t : threads) t.join();
  }

  bool ok() const {
    for (Rank r = 0; r < nodes_.size(); ++r) {
      if (!init_ok_[r]) return false;
    }
    return true;
  }
  Node& operator[](Rank r) { return nodes_[r]; }
  SocketConduit& conduit(Rank r) { return *nodes_[r].conduit; }

  // Polls every rank until `done()`, at most kPollLimit rounds.
  bool PollUntil(const std::function<bool()>& done) {
    for (int i = 0; i < kPollLimit; ++i) {
      if (done()) return true;
      for (Node& node : nodes_) node.conduit->Poll();
    }
    return done();
  }

 private:
  ThreadJob thread_job_;
  std::vector<Node> nodes_;
  std::vector<NodeMap> maps_;
  bool init_ok_[8] = {};
};

std::vector<unsigned char> Pattern(size_t len, unsigned seed) {
  std::vector<unsigned char> v(len);
  for (size_t i = 0; i < len; ++i) {
    v[i] = static_cast<unsigned char>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
  }
  return v;
}

Outbound Message(Category category, uint8_t handler,
                 const std::vector<uint32_t>& args,
                 const void* payload = nullptr, size_t len = 0,
                 uint64_t long_dest = 0) {
  Outbound m;
  m.category = category;
  m.handler = handler;
  m.nargs = static_cast<uint8_t>(args.size());
  m.args = args.data();
  m.payload = payload;
  m.len = len;
  m.long_dest = long_dest;
  return m;
}

TEST(SocketConduitTest, StartsWithDistinctAddressesAndReportsItself) {
  Job job(3);
  ASSERT_TRUE(job.ok());
  EXPECT_STREQ(job.conduit(0).name(), "socket");
  EXPECT_EQ(job.conduit(1).rank(), 1u);
  EXPECT_EQ(job.conduit(0).MaxMedium(), 65536u);
  EXPECT_EQ(job.conduit(0).MaxLong(), 65536u);
  EXPECT_TRUE(job.conduit(0).capabilities().rdma_put);
  EXPECT_TRUE(job.conduit(0).capabilities().rdma_get);
  EXPECT_FALSE(SocketConduit(false).capabilities().rdma_put);
  EXPECT_FALSE(SocketConduit(false).capabilities().rdma_get);
  // Nothing arrives that was not sent.
  EXPECT_EQ(job.conduit(0).Poll(), 0);
  EXPECT_EQ(job[0].count(), 0u);
}

TEST(SocketConduitTest, CheckJobRefusesASecondHost) {
  const uint64_t one_host[] = {1, 1};
  const uint64_t two_hosts[] = {1, 2};
  SocketConduit conduit(true);
  EXPECT_TRUE(conduit.CheckJob(NodeMap::Build(one_host, 0, 0)).ok());
  const absl::Status s = conduit.CheckJob(NodeMap::Build(two_hosts, 0, 0));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("one host"), std::string::npos) << s;
}

TEST(SocketConduitTest, RequestsAndRepliesCarrySourceArgsAndPayload) {
  Job job(3);
  ASSERT_TRUE(job.ok());
  // Rank 1 answers every request with a Medium reply naming the requester
  // (from the Inbound) and carrying the request's payload reversed.
  job[1].on_message = [&](Node& node, const Inbound& m) {
    if (!m.is_request) return;
    std::vector<unsigned char> back(
        static_cast<const unsigned char*>(m.payload),
        static_cast<const unsigned char*>(m.payload) + m.len);
    std::reverse(back.begin(), back.end());
    const std::vector<uint32_t> args = {m.source, 0xfeedu, m.handler};
    EXPECT_EQ(node.conduit->Reply(m.reply,
                                  Message(Category::kMedium, 77, args,
                                          back.data(), back.size()),
                                  /*immediate=*/false),
              SendStatus::kOk);
  };

  const std::vector<uint32_t> short_args = {1, 0xffffffffu};
  std::vector<uint32_t> sixteen(16);
  for (uint32_t i = 0; i < 16; ++i) sixteen[i] = 0x80000000u + i;
  const std::vector<unsigned char> medium = Pattern(65536, 1);
  const std::vector<unsigned char> medium2 = Pattern(300, 2);
  ASSERT_EQ(job.conduit(0).Request(1, Message(Category::kShort, 10, short_args),
                                   false),
            SendStatus::kOk);
  ASSERT_EQ(job.conduit(0).Request(1,
                                   Message(Category::kMedium, 11, sixteen,
                                           medium.data(), medium.size()),
                                   false),
            SendStatus::kOk);
  ASSERT_EQ(
      job.conduit(2).Request(
          1, Message(Category::kMedium, 12, {}, medium2.data(), medium2.size()),
          false),
      SendStatus::kOk);
  ASSERT_TRUE(job.PollUntil([&] {
    return job[1].count() == 3 && job[0].count() == 2 && job[2].count() == 1;
  })) << job[1].count()
      << " " << job[0].count() << " " << job[2].count();

  // What rank 1 received, in each sender's order.
  std::vector<Received> from0, from2;
  for (const Received& r : job[1].received) {
    EXPECT_TRUE(r.is_request);
    (r.source == 0 ? from0 : from2).push_back(r);
  }
  ASSERT_EQ(from0.size(), 2u);
  ASSERT_EQ(from2.size(), 1u);
  EXPECT_EQ(from0[0].category, Category::kShort);
  EXPECT_EQ(from0[0].handler, 10);
  EXPECT_EQ(from0[0].args, short_args);
  EXPECT_EQ(from0[0].len, 0u);
  EXPECT_EQ(from0[1].category, Category::kMedium);
  EXPECT_EQ(from0[1].handler, 11);
  EXPECT_EQ(from0[1].args, sixteen);
  EXPECT_EQ(from0[1].payload, medium);
  EXPECT_EQ(from2[0].source, 2u);
  EXPECT_EQ(from2[0].handler, 12);
  EXPECT_TRUE(from2[0].args.empty());
  EXPECT_EQ(from2[0].payload, medium2);
  // The reply handles identify the requester: one per source.
  EXPECT_EQ(from0[0].reply, from0[1].reply);
  EXPECT_NE(from0[0].reply, from2[0].reply);
  EXPECT_NE(from0[0].reply, nullptr);

  // Each reply went back to its own requester only.
  for (const Rank requester : {0u, 2u}) {
    for (const Received& r : job[requester].received) {
      EXPECT_FALSE(r.is_request);
      EXPECT_EQ(r.reply, nullptr);
      EXPECT_EQ(r.source, 1u);
      EXPECT_EQ(r.category, Category::kMedium);
      EXPECT_EQ(r.handler, 77);
      ASSERT_EQ(r.args.size(), 3u);
      EXPECT_EQ(r.args[0], requester);
      EXPECT_EQ(r.args[1], 0xfeedu);
    }
  }
  std::vector<unsigned char> reversed = medium;
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(job[0].received[0].len, 0u);  // the Short's reply
  EXPECT_EQ(job[0].received[1].payload, reversed);
  std::vector<unsigned char> reversed2 = medium2;
  std::reverse(reversed2.begin(), reversed2.end());
  EXPECT_EQ(job[2].received[0].payload, reversed2);

  const SocketConduitStats s0 = job.conduit(0).stats();
  const SocketConduitStats s1 = job.conduit(1).stats();
  EXPECT_EQ(s0.requests_sent, 2u);
  EXPECT_EQ(s0.replies_received, 2u);
  EXPECT_EQ(s0.replies_sent, 0u);
  EXPECT_EQ(s1.requests_received, 3u);
  EXPECT_EQ(s1.replies_sent, 3u);
  EXPECT_EQ(s1.requests_sent, 0u);
}

TEST(SocketConduitTest, LongLandsAtTheAddressInTheTargetsSegment) {
  Job job(2);
  ASSERT_TRUE(job.ok());
  std::memset(job[1].base(), 0xee, kSegmentSize);
  std::memset(job[0].base(), 0xdd, kSegmentSize);
  const size_t offset = 4096 + 7;
  const std::vector<unsigned char> data = Pattern(65536, 3);
  const std::vector<unsigned char> back = Pattern(1000, 4);
  // Rank 1 replies with a Long into rank 0's segment, at the address rank 0
  // named in its arguments (as the requester sees it).
  job[1].on_message = [&](Node& node, const Inbound& m) {
    if (!m.is_request) return;
    const uint64_t dest = (uint64_t{m.args[1]} << 32) | m.args[0];
    EXPECT_EQ(node.conduit->Reply(m.reply,
                                  Message(Category::kLong, 21, {5}, back.data(),
                                          back.size(), dest),
                                  false),
              SendStatus::kOk);
  };
  const uint64_t reply_at = job[0].address(kSegmentSize - back.size());
  const std::vector<uint32_t> args = {static_cast<uint32_t>(reply_at),
                                      static_cast<uint32_t>(reply_at >> 32)};
  ASSERT_EQ(
      job.conduit(0).Request(1,
                             Message(Category::kLong, 20, args, data.data(),
                                     data.size(), job[1].address(offset)),
                             false),
      SendStatus::kOk);
  ASSERT_TRUE(job.PollUntil(
      [&] { return job[1].count() == 1 && job[0].count() == 1; }));

  const Received& req = job[1].received[0];
  EXPECT_EQ(req.category, Category::kLong);
  EXPECT_EQ(req.payload_address, job[1].base() + offset);
  EXPECT_EQ(req.len, data.size());
  EXPECT_EQ(std::memcmp(job[1].base() + offset, data.data(), data.size()), 0);
  // Nothing around it changed.
  EXPECT_EQ(job[1].base()[offset - 1], 0xee);
  EXPECT_EQ(job[1].base()[offset + data.size()], 0xee);

  const Received& rep = job[0].received[0];
  EXPECT_FALSE(rep.is_request);
  EXPECT_EQ(rep.category, Category::kLong);
  EXPECT_EQ(rep.args, std::vector<uint32_t>{5});
  EXPECT_EQ(rep.payload_address, job[0].base() + kSegmentSize - back.size());
  EXPECT_EQ(std::memcmp(job[0].base() + kSegmentSize - back.size(), back.data(),
                        back.size()),
            0);
  EXPECT_EQ(job[0].base()[kSegmentSize - back.size() - 1], 0xdd);

  // A Long of no bytes is delivered with its address and writes nothing.
  job[1].on_message = nullptr;
  ASSERT_EQ(job.conduit(0).Request(
                1, Message(Category::kLong, 22, {}, nullptr, 0, 12345), false),
            SendStatus::kOk);
  ASSERT_TRUE(job.PollUntil([&] { return job[1].count() == 2; }));
  EXPECT_EQ(job[1].received[1].payload_address,
            reinterpret_cast<void*>(uintptr_t{12345}));
  EXPECT_EQ(job[1].received[1].len, 0u);
}

TEST(SocketConduitTest,
     ImmediateRequestsAreRefusedWhenFullAndAcceptedOnesArrive) {
  Job job(2);
  ASSERT_TRUE(job.ok());
  // Rank 1 does not poll while rank 0 sends.
  uint32_t accepted = 0;
  SendStatus status = SendStatus::kOk;
  for (; accepted < 100000; ++accepted) {
    const std::vector<uint32_t> args = {0, accepted};
    status = job.conduit(0).Request(1, Message(Category::kShort, 30, args),
                                    /*immediate=*/true);
    if (status != SendStatus::kOk) break;
  }
  ASSERT_EQ(status, SendStatus::kWouldBlock)
      << "100000 IMMEDIATE requests to a rank that does not poll were accepted";
  EXPECT_GE(accepted, 1u);
  // The other categories need room in the same queue.
  const std::vector<unsigned char> bytes = Pattern(100, 5);
  EXPECT_EQ(
      job.conduit(0).Request(
          1, Message(Category::kMedium, 31, {1}, bytes.data(), bytes.size()),
          true),
      SendStatus::kWouldBlock);
  EXPECT_EQ(
      job.conduit(0).Request(1,
                             Message(Category::kLong, 32, {1}, bytes.data(),
                                     bytes.size(), job[1].address(0)),
                             true),
      SendStatus::kWouldBlock);
  EXPECT_EQ(job.conduit(0).stats().would_block, 3u);
  EXPECT_EQ(job.conduit(0).stats().requests_sent, accepted);

  // Rank 1 drains: exactly the accepted ones, once each, in order.
  ASSERT_TRUE(job.PollUntil([&] { return job[1].count() >= accepted; }));
  for (int i = 0; i < 1000; ++i) job.conduit(1).Poll();
  ASSERT_EQ(job[1].count(), accepted);
  for (uint32_t i = 0; i < accepted; ++i) {
    const Received& r = job[1].received[i];
    EXPECT_EQ(r.handler, 30);
    ASSERT_EQ(r.args.size(), 2u);
    EXPECT_EQ(r.args[1], i);
  }
  // And there is room again.
  EXPECT_EQ(
      job.conduit(0).Request(1, Message(Category::kShort, 30, {0, 0}), true),
      SendStatus::kOk);
}

TEST(SocketConduitTest,
     ImmediateRepliesAreRefusedWhenTheRequestersRepliesAreFull) {
  Job job(2);
  ASSERT_TRUE(job.ok());
  // Rank 1 replies IMMEDIATE to each request; rank 0 never polls its
  // replies until one is refused (it sends in small batches, rank 1 polls).
  uint32_t replied = 0;
  bool refused = false;
  job[1].on_message = [&](Node& node, const Inbound& m) {
    if (refused) return;  // Not replying is allowed.
    if (node.conduit->Reply(m.reply, Message(Category::kShort, 41, {replied}),
                            true) == SendStatus::kOk) {
      ++replied;
    } else {
      refused = true;
    }
  };
  for (int batch = 0; batch < 20000 && !refused; ++batch) {
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(
          job.conduit(0).Request(1, Message(Category::kShort, 40, {}), true),
          SendStatus::kOk);
    }
    for (int i = 0;
         i < 4 && job[1].count() < job.conduit(0).stats().requests_sent; ++i) {
      job.conduit(1).Poll();
    }
    ASSERT_EQ(job[1].count(), job.conduit(0).stats().requests_sent);
  }
  ASSERT_TRUE(refused);
  EXPECT_EQ(job.conduit(1).stats().would_block, 1u);
  EXPECT_EQ(job.conduit(1).stats().replies_sent, replied);
  // Rank 0 now drains exactly the replies that were accepted, in order.
  for (int i = 0; i < 1000; ++i) job.conduit(0).Poll();
  uint32_t replies = 0;
  for (const Received& r : job[0].received) {
    if (r.is_request) continue;
    ASSERT_EQ(r.args.size(), 1u);
    EXPECT_EQ(r.args[0], replies);
    ++replies;
  }
  EXPECT_EQ(replies, replied);
}

TEST(SocketConduitTest, RdmaPutAndGetMoveTheBytesAndCompleteTheCounters) {
  Job job(3);
  ASSERT_TRUE(job.ok());
  // Three chunks and a bit: the chunks are 64 KiB.
  const size_t len = 3 * 65536 + 123;
  const std::vector<unsigned char> src = Pattern(len, 6);
  std::memset(job[1].base(), 0, kSegmentSize);
  rma::Counter rc, lc;
  rc.Start(1);
  lc.Start(1);
  ASSERT_TRUE(job.conduit(0).Put(1, job[1].base() + 1000, src.data(), len,
                                 /*immediate=*/false, rc, &lc));
  EXPECT_TRUE(lc.Done());  // The source was copied out.
  ASSERT_TRUE(job.PollUntil([&] { return rc.Done(); }));
  EXPECT_EQ(std::memcmp(job[1].base() + 1000, src.data(), len), 0);
  EXPECT_EQ(job[1].base()[999], 0);
  EXPECT_EQ(job[1].base()[1000 + len], 0);

  // Get from rank 2's segment into memory outside any segment.
  const std::vector<unsigned char> there = Pattern(len, 7);
  std::memcpy(job[2].base() + 5, there.data(), len);
  std::vector<unsigned char> got(len + 2, 0x55);
  rma::Counter grc;
  grc.Start(1);
  ASSERT_TRUE(job.conduit(0).Get(got.data() + 1, 2, job[2].base() + 5, len,
                                 /*immediate=*/false, grc));
  ASSERT_TRUE(job.PollUntil([&] { return grc.Done(); }));
  EXPECT_EQ(std::memcmp(got.data() + 1, there.data(), len), 0);
  EXPECT_EQ(got[0], 0x55);
  EXPECT_EQ(got[len + 1], 0x55);

  const SocketConduitStats s = job.conduit(0).stats();
  EXPECT_EQ(s.rdma_puts, 1u);
  EXPECT_EQ(s.rdma_gets, 1u);
  EXPECT_EQ(s.rdma_chunks, 8u);
  // No Active Message was involved, and nothing was delivered to a Sink.
  EXPECT_EQ(s.requests_sent, 0u);
  EXPECT_EQ(job.conduit(1).stats().requests_received, 0u);
  EXPECT_EQ(job[0].count() + job[1].count() + job[2].count(), 0u);
}

TEST(SocketConduitTest, RdmaImmediatePutToAFullTargetStartsNothing) {
  Job job(2);
  ASSERT_TRUE(job.ok());
  uint32_t accepted = 0;
  while (accepted < 100000 &&
         job.conduit(0).Request(1, Message(Category::kShort, 50, {accepted}),
                                true) == SendStatus::kOk) {
    ++accepted;
  }
  ASSERT_LT(accepted, 100000u);
  const std::vector<unsigned char> src = Pattern(100, 8);
  std::memset(job[1].base(), 0, kSegmentSize);
  rma::Counter rc, lc;
  EXPECT_FALSE(job.conduit(0).Put(1, job[1].base(), src.data(), src.size(),
                                  /*immediate=*/true, rc, &lc));
  std::vector<unsigned char> dest(100);
  EXPECT_FALSE(job.conduit(0).Get(dest.data(), 1, job[1].base(), dest.size(),
                                  /*immediate=*/true, rc));
  EXPECT_EQ(job.conduit(0).stats().rdma_puts, 0u);
  EXPECT_EQ(job.conduit(0).stats().rdma_gets, 0u);
  EXPECT_EQ(job.conduit(0).stats().rdma_chunks, 0u);
  // Once drained, only the requests arrived and the segment is untouched.
  ASSERT_TRUE(job.PollUntil([&] { return job[1].count() >= accepted; }));
  for (int i = 0; i < 1000; ++i) job.conduit(1).Poll();
  EXPECT_EQ(job[1].count(), accepted);
  EXPECT_EQ(job[1].base()[0], 0);
}

TEST(SocketConduitTest, ThreadsSendAndPollConcurrently) {
  // PAR: two threads send non-IMMEDIATE requests from rank 0 (waiting,
  // when the target is full, by polling rank 0), two threads poll rank 1,
  // whose handler replies; every request and reply arrives exactly once.
  Job job(2, /*thread_safe=*/true);
  ASSERT_TRUE(job.ok());
  constexpr uint32_t kPerThread = 3000;
  constexpr uint32_t kSenders = 2;
  std::atomic<uint32_t> requests{0}, replies{0};
  std::vector<std::atomic<uint32_t>> seen(kSenders * kPerThread);
  job[1].on_message = [&](Node& node, const Inbound& m) {
    seen[m.args[0]].fetch_add(1, std::memory_order_relaxed);
    requests.fetch_add(1, std::memory_order_relaxed);
    const std::vector<uint32_t> args = {m.args[0]};
    node.conduit->Reply(
        m.reply, Message(Category::kMedium, 61, args, m.payload, m.len), false);
  };
  job[0].on_message = [&](Node&, const Inbound& m) {
    if (!m.is_request) replies.fetch_add(1, std::memory_order_relaxed);
  };
  const uint32_t total = kSenders * kPerThread;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kSenders; ++t) {
    threads.emplace_back([&, t] {
      unsigned char payload[64];
      for (uint32_t i = 0; i < kPerThread; ++i) {
        const uint32_t id = t * kPerThread + i;
        std::memset(payload, static_cast<int>(id & 0xff), sizeof payload);
        const std::vector<uint32_t> args = {id};
        job.conduit(0).Request(
            1, Message(Category::kMedium, 60, args, payload, sizeof payload),
            false);
        if (i % 8 == 0) job.conduit(0).Poll();
      }
      for (int i = 0; i < kPollLimit && replies.load() < total; ++i) {
        job.conduit(0).Poll();
      }
    });
  }
  for (int p = 0; p < 2; ++p) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10 * kPollLimit && !stop.load(); ++i) {
        job.conduit(1).Poll();
      }
    });
  }
  for (uint32_t t = 0; t < kSenders; ++t) threads[t].join();
  stop.store(true);
  for (size_t t = kSenders; t < threads.size(); ++t) threads[t].join();

  EXPECT_EQ(requests.load(), total);
  EXPECT_EQ(replies.load(), total);
  for (uint32_t id = 0; id < total; ++id) {
    EXPECT_EQ(seen[id].load(), 1u) << "request " << id;
  }
  std::lock_guard<std::mutex> lock(job[0].mu);
  for (const Received& r : job[0].received) {
    ASSERT_EQ(r.payload.size(), 64u);
    EXPECT_EQ(r.payload[0], static_cast<unsigned char>(r.args[0] & 0xff));
  }
}

TEST(SocketConduitTest, ThreadsPutAndGetConcurrently) {
  Job job(2, /*thread_safe=*/true);
  ASSERT_TRUE(job.ok());
  constexpr int kThreads = 3;
  constexpr size_t kLen = 2 * 65536 + 10;
  std::atomic<bool> stop{false};
  std::thread poller([&] {
    for (int i = 0; i < 10 * kPollLimit && !stop.load(); ++i) {
      job.conduit(1).Poll();
    }
  });
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::vector<unsigned char> src = Pattern(kLen, 10 + t);
      unsigned char* at = job[1].base() + t * kLen;
      rma::Counter rc;
      rc.Start(1);
      job.conduit(0).Put(1, at, src.data(), kLen, false, rc, nullptr);
      for (int i = 0; i < kPollLimit && !rc.Done(); ++i) job.conduit(0).Poll();
      if (!rc.Done()) return;
      std::vector<unsigned char> back(kLen);
      rma::Counter grc;
      grc.Start(1);
      job.conduit(0).Get(back.data(), 1, at, kLen, false, grc);
      for (int i = 0; i < kPollLimit && !grc.Done(); ++i) job.conduit(0).Poll();
      if (grc.Done() && back == src) good.fetch_add(1);
    });
  }
  for (std::thread& t : threads) t.join();
  stop.store(true);
  poller.join();
  EXPECT_EQ(good.load(), kThreads);
  EXPECT_EQ(job.conduit(0).stats().rdma_puts, static_cast<uint64_t>(kThreads));
  EXPECT_EQ(job.conduit(0).stats().rdma_gets, static_cast<uint64_t>(kThreads));
}

using SocketConduitDeathTest = ::testing::Test;

TEST(SocketConduitDeathTest, LongOutsideTheTargetsSegmentIsFatal) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_DEATH(
      {
        Job job(2);
        if (!job.ok()) return;
        const std::vector<unsigned char> data(100, 1);
        // Its last 10 bytes are past the end of rank 1's segment.
        job.conduit(0).Request(
            1,
            Message(Category::kLong, 70, {}, data.data(), data.size(),
                    job[1].address(kSegmentSize - 90)),
            false);
        for (int i = 0; i < kPollLimit; ++i) job.conduit(1).Poll();
      },
      "a Long Request from rank 0 to \\[0x[0-9a-f]+, \\+100\\) is outside "
      "this rank's segment");
}

TEST(SocketConduitDeathTest, RdmaOutsideTheTargetsSegmentIsFatal) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_DEATH(
      {
        Job job(2);
        if (!job.ok()) return;
        std::vector<unsigned char> data(100, 1);
        rma::Counter rc;
        job.conduit(0).Put(1, job[1].base() - 1, data.data(), data.size(),
                           false, rc, nullptr);
      },
      "Put: \\[0x[0-9a-f]+, \\+100\\) is outside rank 1's segment");
}

}  // namespace
}  // namespace gexrt::core::testing
