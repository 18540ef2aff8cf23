// Unit tests of rma::Engine in one process, no job: the engine runs over a
// fake Transport that delivers its messages in-process (a queue that
// rma::Engine::Wait drains, like a network whose replies arrive while the
// initiator polls) and over a SegmentView of local buffers.
//
// The job, as the engine sees it (kSize ranks, this one rank 0):
//   rank 0: this rank; its segment is mapped here at its own base.
//   rank 1: a supernode peer; its segment is mapped here (`local`) at an
//           address other than its base (the peer's own view), so a direct
//           Put or Get must translate.
//   rank 2: reachable only over the network (`local` null). Its segment's
//           base is the real address of a buffer here, so the fake network
//           can run rank 2's handlers in this process (they dereference
//           addresses as rank 2 sees them).
#include "rma/engine.h"

#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "am/handler_table.h"
#include "am/invoke.h"
#include "am/token.h"
#include "gtest/gtest.h"
#include "rma/event.h"
#include "rma/segment_view.h"

namespace gexrt::rma {
namespace {

constexpr Rank kSelf = 0;
constexpr Rank kMapped = 1;
constexpr Rank kUnmapped = 2;
constexpr Rank kSize = 3;
constexpr size_t kSegSize = 4 * Engine::kChunk;
constexpr size_t kSlack = 2 * Engine::kChunk;
// Rank 1's segment as rank 1 sees it (never dereferenced here).
constexpr uintptr_t kMappedBase = 0x100000000ull;

// A byte pattern that differs between offsets and between `seed`s.
unsigned char Pattern(size_t i, unsigned seed) {
  return static_cast<unsigned char>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
}
std::vector<unsigned char> Bytes(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = Pattern(i, seed);
  return v;
}

// One message a Transport call sent (as the test sees it afterwards).
struct Sent {
  bool is_request = false;
  Rank rank = 0;  // Request: the target. Reply: the requester.
  am::Category category = am::Category::kShort;
  uint8_t handler = 0;
  std::vector<uint32_t> args;
  size_t len = 0;
  void* long_dest = nullptr;
  bool immediate = false;
};

struct RdmaCall {
  bool is_put = false;
  Rank rank = 0;
  void* dest = nullptr;
  const void* src = nullptr;
  size_t len = 0;
  bool immediate = false;
};

// The fake network. Messages (and RDMA completions) are queued and
// delivered by Wait (or DeliverOne), each handler through am::Invoke with a
// token on the stack, as core/dispatch.cc does.
class FakeNetwork {
 public:
  explicit FakeNetwork(const am::HandlerTable& table) : table_(table) {}

  Transport MakeTransport(bool with_rdma) {
    Transport t;
    t.context = this;
    t.request = &Request;
    t.reply = &Reply;
    t.wait = &Wait;
    if (with_rdma) {
      t.rdma_put = &RdmaPut;
      t.rdma_get = &RdmaGet;
    }
    return t;
  }

  // Refuse every immediate request/RDMA (as if the queues were full).
  bool refuse_immediate = false;

  std::vector<Sent> sent;  // Every Request and Reply sent, in order.
  std::vector<RdmaCall> rdma;
  int waits = 0;

  std::vector<Sent> Requests() const { return Filter(true); }
  std::vector<Sent> Replies() const { return Filter(false); }
  size_t pending() const { return queue_.size(); }

  // Runs the oldest queued delivery; false when none is queued.
  bool DeliverOne() {
    if (queue_.empty()) return false;
    std::function<void()> f = std::move(queue_.front());
    queue_.pop_front();
    f();
    return true;
  }

 private:
  std::vector<Sent> Filter(bool requests) const {
    std::vector<Sent> out;
    for (const Sent& s : sent) {
      if (s.is_request == requests) out.push_back(s);
    }
    return out;
  }

  // Delivers a message to its handler: checks it fits the registered
  // entry, lands a Long's payload, then runs the handler.
  void Deliver(Rank source, bool is_request, am::Category category,
               uint8_t handler, const std::vector<uint32_t>& args,
               std::vector<unsigned char>& payload, void* long_dest,
               void* reply) {
    const am::Entry* entry = table_.Find(handler);
    if (entry == nullptr) {
      ADD_FAILURE() << "handler " << int{handler} << " is not registered";
      return;
    }
    const std::string why = am::HandlerTable::Mismatch(
        *entry, category, is_request, static_cast<unsigned>(args.size()));
    if (!why.empty()) {
      ADD_FAILURE() << why;
      return;
    }
    void* buf = payload.data();
    if (category == am::Category::kLong) {
      if (!payload.empty())
        std::memcpy(long_dest, payload.data(), payload.size());
      buf = long_dest;
    }
    am::Token token;
    token.source = source;
    token.entry = entry;
    token.is_request = is_request;
    token.is_long = category == am::Category::kLong;
    token.route = am::Route::kConduit;
    token.reply = reply;
    am::HandlerContext::Scope scope(&token);
    am::Invoke(entry->fn, category, &token, buf, payload.size(),
               static_cast<unsigned>(args.size()),
               reinterpret_cast<const int32_t*>(args.data()));
  }

  static FakeNetwork& Of(void* context) {
    return *static_cast<FakeNetwork*>(context);
  }

  static bool Request(void* context, Rank rank, am::Category category,
                      uint8_t handler, const uint32_t* args, unsigned nargs,
                      const void* payload, size_t len, void* long_dest,
                      bool immediate) {
    FakeNetwork& net = Of(context);
    EXPECT_FALSE(am::HandlerContext::InHandler())
        << "a Request sent from a handler";
    if (immediate && net.refuse_immediate) return false;
    Sent s;
    s.is_request = true;
    s.rank = rank;
    s.category = category;
    s.handler = handler;
    s.args.assign(args, args + nargs);
    s.len = len;
    s.long_dest = long_dest;
    s.immediate = immediate;
    net.sent.push_back(s);
    // The payload is copied out before the call returns.
    std::vector<unsigned char> copy;
    if (len != 0) {
      copy.assign(static_cast<const unsigned char*>(payload),
                  static_cast<const unsigned char*>(payload) + len);
    }
    // Runs at `rank` (in this process); the Request came from this rank.
    net.queue_.push_back([&net, rank, category, handler, a = s.args,
                          p = std::move(copy), long_dest]() mutable {
      const Rank saved = net.delivering_at_;
      net.delivering_at_ = rank;
      net.Deliver(kSelf, /*is_request=*/true, category, handler, a, p,
                  long_dest, /*reply=*/&net);
      net.delivering_at_ = saved;
    });
    return true;
  }

  static void Reply(void* context, am::Token* token, am::Category category,
                    uint8_t handler, const uint32_t* args, unsigned nargs,
                    const void* payload, size_t len, void* long_dest) {
    FakeNetwork& net = Of(context);
    EXPECT_TRUE(token->is_request) << "a Reply from a Reply handler";
    EXPECT_FALSE(token->replied) << "a second Reply";
    EXPECT_EQ(token->reply, &net);
    token->replied = true;
    Sent s;
    s.is_request = false;
    s.rank = token->source;
    s.category = category;
    s.handler = handler;
    s.args.assign(args, args + nargs);
    s.len = len;
    s.long_dest = long_dest;
    net.sent.push_back(s);
    std::vector<unsigned char> copy;
    if (len != 0) {
      copy.assign(static_cast<const unsigned char*>(payload),
                  static_cast<const unsigned char*>(payload) + len);
    }
    // From the rank whose Request handler is running.
    net.queue_.push_back([&net, from = net.delivering_at_, category, handler,
                          a = s.args, p = std::move(copy),
                          long_dest]() mutable {
      net.Deliver(from, /*is_request=*/false, category, handler, a, p,
                  long_dest, nullptr);
    });
  }

  // One round: delivers what was queued when it started (replies those
  // deliveries send wait for the next round).
  static void Wait(void* context) {
    FakeNetwork& net = Of(context);
    ++net.waits;
    for (size_t n = net.queue_.size(); n > 0; --n) net.DeliverOne();
  }

  // RDMA: the source is read at once (local completion), the destination
  // written and `rc` completed by a later Wait.
  static bool RdmaPut(void* context, Rank rank, void* dest, const void* src,
                      size_t len, bool immediate, Counter& rc, Counter* lc) {
    FakeNetwork& net = Of(context);
    if (immediate && net.refuse_immediate) return false;
    net.rdma.push_back({true, rank, dest, src, len, immediate});
    std::vector<unsigned char> copy(
        static_cast<const unsigned char*>(src),
        static_cast<const unsigned char*>(src) + len);
    if (lc != nullptr) lc->Complete();
    net.queue_.push_back([dest, c = std::move(copy), &rc] {
      std::memcpy(dest, c.data(), c.size());
      rc.Complete();
    });
    return true;
  }
  static bool RdmaGet(void* context, void* dest, Rank rank, const void* src,
                      size_t len, bool immediate, Counter& rc) {
    FakeNetwork& net = Of(context);
    if (immediate && net.refuse_immediate) return false;
    net.rdma.push_back({false, rank, dest, src, len, immediate});
    net.queue_.push_back([dest, src, len, &rc] {
      std::memcpy(dest, src, len);
      rc.Complete();
    });
    return true;
  }

  const am::HandlerTable& table_;
  std::deque<std::function<void()>> queue_;
  // The rank whose Request handler is running (its Reply comes from it).
  Rank delivering_at_ = kSelf;
};

struct Config {
  bool rdma = false;
  bool force_am = false;
  // Rank 1's base is its local mapping (so the fake network, which runs
  // rank 1's handlers here, may be used to reach it).
  bool mapped_at_own_base = false;
  bool attached = true;
};

// A job of kSize ranks with this rank's engine.
class EngineTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }

  void Build(const Config& config) {
    // Each buffer has slack behind the segment it backs.
    for (auto& b : seg_) b.assign(kSegSize + kSlack, 0);
    entries_[kSelf] = {reinterpret_cast<uintptr_t>(seg_[kSelf].data()),
                       kSegSize, seg_[kSelf].data()};
    entries_[kMapped] = {config.mapped_at_own_base
                             ? reinterpret_cast<uintptr_t>(seg_[kMapped].data())
                             : kMappedBase,
                         kSegSize, seg_[kMapped].data()};
    entries_[kUnmapped] = {reinterpret_cast<uintptr_t>(seg_[kUnmapped].data()),
                           kSegSize, nullptr};
    view_ = config.attached ? SegmentView(absl::MakeConstSpan(entries_, kSize))
                            : SegmentView();
    Engine::Options o;
    o.rank = kSelf;
    o.size = kSize;
    o.segments = &view_;
    o.transport = net_.MakeTransport(config.rdma);
    o.force_am = config.force_am;
    engine_ = std::make_unique<Engine>(o, table_);
  }

  // Rank r's segment at `offset`, as rank r sees it.
  void* Remote(Rank r, size_t offset) const {
    return reinterpret_cast<void*>(entries_[r].base + offset);
  }
  unsigned char* Backing(Rank r, size_t offset) {
    return seg_[r].data() + offset;
  }
  // Whether rank r's segment holds `want` at `offset`.
  bool Holds(Rank r, size_t offset, const std::vector<unsigned char>& want) {
    return std::memcmp(Backing(r, offset), want.data(), want.size()) == 0;
  }

  // A Put the way api/rma.cc issues a blocking one.
  void PutBlocking(Rank r, void* dest, const void* src, size_t n) {
    if (engine_->PutDirect("put", r, dest, src, n)) return;
    Counter rc;
    EXPECT_EQ(engine_->PutRemote("put", r, dest, src, n, false, rc, nullptr),
              Issue::kPending);
    engine_->Wait("put", rc);
  }
  void GetBlocking(void* dest, Rank r, const void* src, size_t n) {
    if (engine_->GetDirect("get", dest, r, src, n)) return;
    Counter rc;
    EXPECT_EQ(engine_->GetRemote("get", dest, r, src, n, false, rc),
              Issue::kPending);
    engine_->Wait("get", rc);
  }

  am::HandlerTable table_;
  FakeNetwork net_{table_};
  std::vector<unsigned char> seg_[kSize];
  SegmentEntry entries_[kSize];
  SegmentView view_;
  std::unique_ptr<Engine> engine_;
};

// ---- construction ---------------------------------------------------------

TEST_F(EngineTest, RegistersItsSixHandlersInTheInternalRange) {
  Build({});
  const char* names[] = {"gex rma put",
                         "gex rma put done",
                         "gex rma get",
                         "gex rma get reply long",
                         "gex rma get reply medium",
                         "gex rma put to an endpoint"};
  for (unsigned i = 0; i < 6; ++i) {
    const am::Entry* e = table_.Find(static_cast<uint8_t>(1 + i));
    ASSERT_NE(e, nullptr) << i;
    EXPECT_STREQ(e->name, names[i]);
    EXPECT_EQ(e->cdata, engine_.get());
  }
  EXPECT_EQ(table_.Find(7), nullptr);
  EXPECT_EQ(table_.Find(am::kClientIndexBase), nullptr);
  // Kinds and categories as the protocol uses them.
  EXPECT_EQ(table_.Find(1)->flags, am::kFlagLong | am::kFlagRequest);
  EXPECT_EQ(table_.Find(2)->flags, am::kFlagShort | am::kFlagReply);
  EXPECT_EQ(table_.Find(3)->flags, am::kFlagShort | am::kFlagRequest);
  EXPECT_EQ(table_.Find(4)->flags, am::kFlagLong | am::kFlagReply);
  EXPECT_EQ(table_.Find(5)->flags, am::kFlagMedium | am::kFlagReply);
  EXPECT_EQ(table_.Find(6)->flags, am::kFlagMedium | am::kFlagRequest);
  EXPECT_FALSE(engine_->force_am());
}

TEST_F(EngineTest, ASecondEngineTakesTheNextIndices) {
  Build({});
  Engine::Options o;
  o.segments = &view_;
  o.transport = net_.MakeTransport(false);
  o.force_am = true;
  Engine second(o, table_);
  EXPECT_TRUE(second.force_am());
  for (uint8_t i = 7; i <= 12; ++i) {
    ASSERT_NE(table_.Find(i), nullptr) << int{i};
    EXPECT_EQ(table_.Find(i)->cdata, &second);
  }
}

// ---- an endpoint's engine (ForEndpoint) ----------------------------------

// Another endpoint index's segments: rank 0's own is mapped (its own
// memory), rank 2's only known by address (client memory, or off-node).
class EndpointEngineTest : public EngineTest {
 protected:
  void BuildEndpoint(const Config& config) {
    Build(config);
    for (auto& b : ep_seg_) b.assign(kSegSize, 0);
    ep_entries_[kSelf] = {reinterpret_cast<uintptr_t>(ep_seg_[kSelf].data()),
                          kSegSize, ep_seg_[kSelf].data()};
    ep_entries_[kUnmapped] = {
        reinterpret_cast<uintptr_t>(ep_seg_[kUnmapped].data()), kSegSize,
        nullptr};
    ep_view_ = SegmentView(absl::MakeConstSpan(ep_entries_, kSize));
    endpoint_ = engine_->ForEndpoint(&ep_view_, 2);
  }
  void* EpRemote(Rank r, size_t offset) const {
    return reinterpret_cast<void*>(ep_entries_[r].base + offset);
  }

  std::vector<unsigned char> ep_seg_[kSize];
  SegmentEntry ep_entries_[kSize];  // Rank 1 has none.
  SegmentView ep_view_;
  std::unique_ptr<Engine> endpoint_;
};

TEST_F(EndpointEngineTest, RegistersNothingAndCopiesMappedRanges) {
  BuildEndpoint({});
  EXPECT_EQ(table_.Find(7), nullptr);
  const auto src = Bytes(100, 3);
  ASSERT_TRUE(
      endpoint_->PutDirect("put", kSelf, EpRemote(kSelf, 8), src.data(), 100));
  EXPECT_EQ(std::memcmp(ep_seg_[kSelf].data() + 8, src.data(), 100), 0);
  // The primordial segment is untouched.
  EXPECT_EQ(Backing(kSelf, 8)[0], 0);
  std::vector<unsigned char> got(100);
  ASSERT_TRUE(
      endpoint_->GetDirect("get", got.data(), kSelf, EpRemote(kSelf, 8), 100));
  EXPECT_EQ(got, src);
}

TEST_F(EndpointEngineTest, PutIsMediumChunksTheTargetCopiesNeverRdma) {
  BuildEndpoint({.rdma = true});
  const size_t n = Engine::kChunk + 10;
  const auto src = Bytes(n, 5);
  ASSERT_FALSE(endpoint_->PutDirect("put", kUnmapped, EpRemote(kUnmapped, 4),
                                    src.data(), n));
  Counter rc, lc;
  EXPECT_EQ(
      endpoint_->PutRemote("gex_RMA_PutNB", kUnmapped, EpRemote(kUnmapped, 4),
                           src.data(), n, false, rc, &lc),
      Issue::kPending);
  EXPECT_TRUE(net_.rdma.empty());
  const std::vector<Sent> requests = net_.Requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const Sent& r : requests) {
    EXPECT_EQ(r.category, am::Category::kMedium);
    EXPECT_EQ(r.handler, 6);  // "gex rma put to an endpoint"
    EXPECT_EQ(r.long_dest, nullptr);
  }
  EXPECT_TRUE(lc.Done());
  endpoint_->Wait("put", rc);
  EXPECT_EQ(std::memcmp(ep_seg_[kUnmapped].data() + 4, src.data(), n), 0);
  // Not the primordial segment's bytes at the same offset.
  EXPECT_EQ(Backing(kUnmapped, 4)[0], 0);
}

TEST_F(EndpointEngineTest, GetIsTheAmPathNeverRdma) {
  BuildEndpoint({.rdma = true});
  const auto want = Bytes(300, 9);
  std::memcpy(ep_seg_[kUnmapped].data() + 64, want.data(), want.size());
  std::vector<unsigned char> got(300);
  Counter rc;
  EXPECT_EQ(endpoint_->GetRemote("gex_RMA_GetNB", got.data(), kUnmapped,
                                 EpRemote(kUnmapped, 64), 300, false, rc),
            Issue::kPending);
  EXPECT_TRUE(net_.rdma.empty());
  endpoint_->Wait("get", rc);
  EXPECT_EQ(got, want);
}

TEST_F(EndpointEngineTest, ARankWithoutASegmentThereNamesTheEndpoint) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  BuildEndpoint({});
  const auto src = Bytes(8, 1);
  EXPECT_DEATH(
      {
        Counter rc;
        endpoint_->PutRemote("gex_RMA_PutBlocking", kMapped,
                             reinterpret_cast<void*>(kMappedBase), src.data(),
                             8, false, rc, nullptr);
      },
      "gex_RMA_PutBlocking: rank 1's endpoint 2 has no segment published to "
      "this process");
  EXPECT_DEATH(
      {
        Counter rc;
        endpoint_->PutRemote("gex_RMA_PutBlocking", kUnmapped,
                             EpRemote(kUnmapped, kSegSize - 4), src.data(), 8,
                             false, rc, nullptr);
      },
      "outside rank 2's segment of endpoint 2");
}

TEST_F(EngineTest, ProgressIsOneRoundOfTheTransportsWait) {
  Build({});
  engine_->Progress();
  engine_->Progress();
  EXPECT_EQ(net_.waits, 2);
  Counter done;
  engine_->Wait("gex_NBI_Wait", done);  // already done: no round
  EXPECT_EQ(net_.waits, 2);
}

// ---- direct: mapped peers -------------------------------------------------

TEST_F(EngineTest, PutAndGetToAMappedPeerAreOneCopyThroughItsMapping) {
  Build({.rdma = true});
  const auto src = Bytes(3 * Engine::kChunk + 5, 1);
  EXPECT_TRUE(engine_->PutDirect("gex_RMA_PutBlocking", kMapped,
                                 Remote(kMapped, 100), src.data(), src.size()));
  EXPECT_TRUE(Holds(kMapped, 100, src));
  EXPECT_EQ(Backing(kMapped, 99)[0], 0);
  EXPECT_EQ(Backing(kMapped, 100 + src.size())[0], 0);

  std::vector<unsigned char> back(src.size());
  EXPECT_TRUE(engine_->GetDirect("gex_RMA_GetBlocking", back.data(), kMapped,
                                 Remote(kMapped, 100), back.size()));
  EXPECT_EQ(back, src);

  // The whole segment, exactly.
  const auto whole = Bytes(kSegSize, 2);
  EXPECT_TRUE(engine_->PutDirect("put", kMapped, Remote(kMapped, 0),
                                 whole.data(), whole.size()));
  EXPECT_TRUE(Holds(kMapped, 0, whole));

  // And this rank's own segment.
  EXPECT_TRUE(engine_->PutDirect("put", kSelf, Remote(kSelf, 7), src.data(),
                                 src.size()));
  EXPECT_TRUE(Holds(kSelf, 7, src));

  EXPECT_TRUE(net_.sent.empty());
  EXPECT_TRUE(net_.rdma.empty());
  EXPECT_EQ(net_.waits, 0);
}

TEST_F(EngineTest, ZeroBytesAreDoneAtOnceForAnyRankInTheJob) {
  Build({});
  int x = 0;
  for (Rank r = 0; r < kSize; ++r) {
    EXPECT_TRUE(engine_->PutDirect("put", r, Remote(r, 0), &x, 0));
    EXPECT_TRUE(engine_->GetDirect("get", &x, r, Remote(r, 0), 0));
  }
  EXPECT_TRUE(net_.sent.empty());
}

TEST_F(EngineTest, DirectDeclinesAnUnmappedPeerAndARangeOutsideTheMapping) {
  Build({});
  const auto src = Bytes(64, 3);
  std::vector<unsigned char> dst(64);
  EXPECT_FALSE(engine_->PutDirect("put", kUnmapped, Remote(kUnmapped, 0),
                                  src.data(), src.size()));
  EXPECT_FALSE(engine_->GetDirect("get", dst.data(), kUnmapped,
                                  Remote(kUnmapped, 0), dst.size()));
  // Past the end of the mapped peer's segment: left to PutRemote (which
  // reports it).
  EXPECT_FALSE(engine_->PutDirect("put", kMapped, Remote(kMapped, kSegSize - 8),
                                  src.data(), src.size()));
  EXPECT_EQ(Backing(kMapped, kSegSize - 8)[0], 0);
  EXPECT_TRUE(Holds(kUnmapped, 0, std::vector<unsigned char>(64, 0)));
  EXPECT_TRUE(net_.sent.empty());
}

// ---- the conduit's RDMA ---------------------------------------------------

TEST_F(EngineTest, UnmappedPeerGoesOverRdmaWhenTheConduitHasIt) {
  Build({.rdma = true});
  const auto src = Bytes(3 * Engine::kChunk + 1, 4);  // not chunked
  ASSERT_FALSE(engine_->PutDirect("put", kUnmapped, Remote(kUnmapped, 16),
                                  src.data(), src.size()));
  Counter rc, lc;
  EXPECT_EQ(
      engine_->PutRemote("gex_RMA_PutNB", kUnmapped, Remote(kUnmapped, 16),
                         src.data(), src.size(), false, rc, &lc),
      Issue::kPending);
  ASSERT_EQ(net_.rdma.size(), 1u);
  EXPECT_TRUE(net_.rdma[0].is_put);
  EXPECT_EQ(net_.rdma[0].rank, kUnmapped);
  EXPECT_EQ(net_.rdma[0].dest, Remote(kUnmapped, 16));
  EXPECT_EQ(net_.rdma[0].src, src.data());
  EXPECT_EQ(net_.rdma[0].len, src.size());
  EXPECT_FALSE(net_.rdma[0].immediate);
  // One start on each counter: the fake completed lc at once, rc later.
  EXPECT_TRUE(lc.Done());
  EXPECT_FALSE(rc.Done());
  EXPECT_FALSE(Holds(kUnmapped, 16, src));
  engine_->Wait("gex_Event_Wait", rc);
  EXPECT_TRUE(rc.Done());
  EXPECT_TRUE(Holds(kUnmapped, 16, src));

  std::vector<unsigned char> back(src.size());
  ASSERT_FALSE(engine_->GetDirect("get", back.data(), kUnmapped,
                                  Remote(kUnmapped, 16), back.size()));
  Counter grc;
  EXPECT_EQ(engine_->GetRemote("gex_RMA_GetNB", back.data(), kUnmapped,
                               Remote(kUnmapped, 16), back.size(), true, grc),
            Issue::kPending);
  ASSERT_EQ(net_.rdma.size(), 2u);
  EXPECT_FALSE(net_.rdma[1].is_put);
  EXPECT_EQ(net_.rdma[1].dest, back.data());
  EXPECT_EQ(net_.rdma[1].src, Remote(kUnmapped, 16));
  EXPECT_EQ(net_.rdma[1].len, back.size());
  EXPECT_TRUE(net_.rdma[1].immediate);
  EXPECT_FALSE(grc.Done());
  engine_->Wait("gex_Event_Wait", grc);
  EXPECT_EQ(back, src);

  // The AM path was not used.
  EXPECT_TRUE(net_.sent.empty());
}

TEST_F(EngineTest, RdmaPutWithoutALocalCounter) {
  Build({.rdma = true});
  const auto src = Bytes(10, 5);
  Counter rc;
  EXPECT_EQ(engine_->PutRemote("put", kUnmapped, Remote(kUnmapped, 0),
                               src.data(), src.size(), false, rc, nullptr),
            Issue::kPending);
  engine_->Wait("put", rc);
  EXPECT_TRUE(Holds(kUnmapped, 0, src));
}

TEST_F(EngineTest, RdmaImmediateRefusalLeavesTheCountersUnchanged) {
  Build({.rdma = true});
  net_.refuse_immediate = true;
  const auto src = Bytes(100, 6);
  Counter rc, lc;
  // One operation already outstanding on each: after the refusal one
  // completion each must make them done again.
  rc.Start(1);
  lc.Start(1);
  EXPECT_EQ(engine_->PutRemote("put", kUnmapped, Remote(kUnmapped, 0),
                               src.data(), src.size(), true, rc, &lc),
            Issue::kWouldBlock);
  std::vector<unsigned char> dst(100);
  EXPECT_EQ(engine_->GetRemote("get", dst.data(), kUnmapped,
                               Remote(kUnmapped, 0), dst.size(), true, rc),
            Issue::kWouldBlock);
  EXPECT_TRUE(net_.rdma.empty());
  EXPECT_EQ(net_.pending(), 0u);
  rc.Complete();
  lc.Complete();
  EXPECT_TRUE(rc.Done());
  EXPECT_TRUE(lc.Done());
  // Without IMMEDIATE the same calls go ahead.
  Counter rc2;
  EXPECT_EQ(engine_->PutRemote("put", kUnmapped, Remote(kUnmapped, 0),
                               src.data(), src.size(), false, rc2, nullptr),
            Issue::kPending);
  engine_->Wait("put", rc2);
  EXPECT_TRUE(Holds(kUnmapped, 0, src));
}

// ---- Active Messages: Put -------------------------------------------------

TEST_F(EngineTest, AmPutSendsLongChunksThatLandAndAreAcknowledged) {
  Build({});
  const size_t n = 2 * Engine::kChunk + 100;
  const auto src = Bytes(n, 7);
  ASSERT_FALSE(engine_->PutDirect("put", kUnmapped, Remote(kUnmapped, 10),
                                  src.data(), n));
  Counter rc, lc;
  EXPECT_EQ(
      engine_->PutRemote("gex_RMA_PutNB", kUnmapped, Remote(kUnmapped, 10),
                         src.data(), n, false, rc, &lc),
      Issue::kPending);
  // The source was copied into the payloads before PutRemote returned.
  EXPECT_TRUE(lc.Done());
  EXPECT_FALSE(rc.Done());
  const std::vector<Sent> requests = net_.Requests();
  ASSERT_EQ(requests.size(), 3u);
  const size_t lens[] = {Engine::kChunk, Engine::kChunk, 100};
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(requests[i].rank, kUnmapped);
    EXPECT_EQ(requests[i].category, am::Category::kLong);
    EXPECT_EQ(requests[i].handler, 1);  // "gex rma put"
    EXPECT_EQ(requests[i].len, lens[i]);
    EXPECT_EQ(requests[i].long_dest,
              Remote(kUnmapped, 10 + i * Engine::kChunk));
    EXPECT_FALSE(requests[i].immediate);
  }
  // Nothing has arrived before the initiator waits.
  EXPECT_FALSE(Holds(kUnmapped, 10, src));
  // Step the network: three requests land and reply, then each reply
  // completes one of the three starts.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(net_.DeliverOne());
  }
  EXPECT_TRUE(Holds(kUnmapped, 10, src));
  const std::vector<Sent> replies = net_.Replies();
  ASSERT_EQ(replies.size(), 3u);
  for (const Sent& r : replies) {
    EXPECT_EQ(r.category, am::Category::kShort);
    EXPECT_EQ(r.handler, 2);  // "gex rma put done"
    EXPECT_EQ(r.rank, kSelf);
  }
  EXPECT_FALSE(rc.Done());
  ASSERT_TRUE(net_.DeliverOne());
  EXPECT_FALSE(rc.Done());
  ASSERT_TRUE(net_.DeliverOne());
  EXPECT_FALSE(rc.Done());
  ASSERT_TRUE(net_.DeliverOne());
  EXPECT_TRUE(rc.Done());
  EXPECT_FALSE(net_.DeliverOne());
  EXPECT_EQ(Backing(kUnmapped, 9)[0], 0);
  EXPECT_EQ(Backing(kUnmapped, 10 + n)[0], 0);
}

TEST_F(EngineTest, AmPutChunkBoundaries) {
  Build({});
  for (size_t n : {size_t{1}, Engine::kChunk - 1, Engine::kChunk,
                   Engine::kChunk + 1, 2 * Engine::kChunk, kSegSize}) {
    SCOPED_TRACE(n);
    net_.sent.clear();
    const auto src = Bytes(n, static_cast<unsigned>(n));
    const size_t offset = kSegSize - n;  // ends at the segment's end
    PutBlocking(kUnmapped, Remote(kUnmapped, offset), src.data(), n);
    EXPECT_TRUE(Holds(kUnmapped, offset, src));
    EXPECT_EQ(net_.Requests().size(),
              (n + Engine::kChunk - 1) / Engine::kChunk);
    EXPECT_EQ(net_.Replies().size(), net_.Requests().size());
    for (const Sent& s : net_.Requests()) {
      EXPECT_LE(s.len, Engine::kChunk);
    }
    EXPECT_EQ(net_.pending(), 0u);
  }
}

TEST_F(EngineTest, AmPutImmediateRefusalStartsNothing) {
  Build({});
  net_.refuse_immediate = true;
  const auto src = Bytes(3 * Engine::kChunk, 8);
  Counter rc, lc;
  rc.Start(1);
  lc.Start(1);
  EXPECT_EQ(engine_->PutRemote("put", kUnmapped, Remote(kUnmapped, 0),
                               src.data(), src.size(), true, rc, &lc),
            Issue::kWouldBlock);
  EXPECT_TRUE(net_.sent.empty());
  EXPECT_EQ(net_.pending(), 0u);
  rc.Complete();
  lc.Complete();
  EXPECT_TRUE(rc.Done());
  EXPECT_TRUE(lc.Done());
}

TEST_F(EngineTest, AmPutImmediateAppliesToTheFirstChunkOnly) {
  Build({});
  const auto src = Bytes(3 * Engine::kChunk, 9);
  Counter rc;
  EXPECT_EQ(engine_->PutRemote("put", kUnmapped, Remote(kUnmapped, 0),
                               src.data(), src.size(), true, rc, nullptr),
            Issue::kPending);
  const std::vector<Sent> requests = net_.Requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_TRUE(requests[0].immediate);
  EXPECT_FALSE(requests[1].immediate);
  EXPECT_FALSE(requests[2].immediate);
  engine_->Wait("put", rc);
  EXPECT_TRUE(Holds(kUnmapped, 0, src));
}

TEST_F(EngineTest, AmPathIsUsedWithoutRdmaHooksAndNeverTouchesThem) {
  // (No rdma hooks: a call through a null one would crash.)
  Build({});
  const auto src = Bytes(1000, 10);
  PutBlocking(kUnmapped, Remote(kUnmapped, 0), src.data(), src.size());
  std::vector<unsigned char> back(1000);
  GetBlocking(back.data(), kUnmapped, Remote(kUnmapped, 0), back.size());
  EXPECT_EQ(back, src);
  EXPECT_TRUE(net_.rdma.empty());
  EXPECT_EQ(net_.Requests().size(), 2u);
}

// ---- Active Messages: Get -------------------------------------------------

TEST_F(EngineTest, AmGetIntoThisRanksSegmentComesBackAsLongReplies) {
  Build({});
  const size_t n = 2 * Engine::kChunk + 3;
  const auto data = Bytes(n, 11);
  std::memcpy(Backing(kUnmapped, 40), data.data(), n);
  unsigned char* dest = Backing(kSelf, 1);  // in this rank's segment
  Counter rc;
  ASSERT_FALSE(
      engine_->GetDirect("get", dest, kUnmapped, Remote(kUnmapped, 40), n));
  EXPECT_EQ(engine_->GetRemote("gex_RMA_GetNB", dest, kUnmapped,
                               Remote(kUnmapped, 40), n, false, rc),
            Issue::kPending);
  EXPECT_FALSE(rc.Done());
  const std::vector<Sent> requests = net_.Requests();
  ASSERT_EQ(requests.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(requests[i].category, am::Category::kShort);
    EXPECT_EQ(requests[i].handler, 3);  // "gex rma get"
    EXPECT_EQ(requests[i].rank, kUnmapped);
    ASSERT_EQ(requests[i].args.size(), 8u);
    EXPECT_EQ(requests[i].args[4], i < 2 ? Engine::kChunk : 3u);  // length
    EXPECT_EQ(requests[i].args[7], 0u);  // a Long reply
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(net_.DeliverOne());
  }
  const std::vector<Sent> replies = net_.Replies();
  ASSERT_EQ(replies.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(replies[i].category, am::Category::kLong);
    EXPECT_EQ(replies[i].handler, 4);  // "gex rma get reply long"
    EXPECT_EQ(replies[i].long_dest, dest + i * Engine::kChunk);
  }
  EXPECT_FALSE(rc.Done());
  engine_->Wait("gex_Event_Wait", rc);
  EXPECT_TRUE(rc.Done());
  EXPECT_TRUE(Holds(kSelf, 1, data));
  EXPECT_EQ(Backing(kSelf, 0)[0], 0);
  EXPECT_EQ(Backing(kSelf, 1 + n)[0], 0);
}

TEST_F(EngineTest, AmGetOutsideThisRanksSegmentComesBackAsMediumReplies) {
  Build({});
  const size_t n = Engine::kChunk + 17;
  const auto data = Bytes(n, 12);
  std::memcpy(Backing(kUnmapped, 0), data.data(), n);
  std::vector<unsigned char> dest(n + 2, 0xee);  // not in any segment
  Counter rc;
  EXPECT_EQ(engine_->GetRemote("get", dest.data() + 1, kUnmapped,
                               Remote(kUnmapped, 0), n, false, rc),
            Issue::kPending);
  engine_->Wait("get", rc);
  EXPECT_EQ(std::vector<unsigned char>(dest.begin() + 1, dest.end() - 1), data);
  EXPECT_EQ(dest.front(), 0xee);
  EXPECT_EQ(dest.back(), 0xee);
  const std::vector<Sent> replies = net_.Replies();
  ASSERT_EQ(replies.size(), 2u);
  for (const Sent& r : replies) {
    EXPECT_EQ(r.category, am::Category::kMedium);
    EXPECT_EQ(r.handler, 5);  // "gex rma get reply medium"
    EXPECT_EQ(r.long_dest, nullptr);
  }
  EXPECT_EQ(replies[0].len, Engine::kChunk);
  EXPECT_EQ(replies[1].len, 17u);
  for (const Sent& r : net_.Requests()) {
    EXPECT_EQ(r.args[7], 1u);
  }
}

TEST_F(EngineTest, AmGetPicksTheReplyPerChunk) {
  Build({});
  const size_t n = Engine::kChunk;
  const auto data = Bytes(3 * n, 13);
  std::memcpy(Backing(kUnmapped, 0), data.data(), 3 * n);
  // Ends exactly at the end of this rank's segment: a Long.
  Counter rc;
  EXPECT_EQ(engine_->GetRemote("get", Backing(kSelf, kSegSize - n), kUnmapped,
                               Remote(kUnmapped, 0), n, false, rc),
            Issue::kPending);
  engine_->Wait("get", rc);
  ASSERT_EQ(net_.Replies().size(), 1u);
  EXPECT_EQ(net_.Replies()[0].category, am::Category::kLong);
  EXPECT_TRUE(
      Holds(kSelf, kSegSize - n,
            std::vector<unsigned char>(data.begin(), data.begin() + n)));
  // One byte later, n + 2 bytes (into the slack behind the segment): the
  // first chunk straddles the end and the second lies past it (both
  // Medium).
  net_.sent.clear();
  unsigned char* dest = Backing(kSelf, kSegSize - n + 1);
  Counter rc2;
  EXPECT_EQ(engine_->GetRemote("get", dest, kUnmapped, Remote(kUnmapped, n),
                               n + 2, false, rc2),
            Issue::kPending);
  engine_->Wait("get", rc2);
  const std::vector<Sent> replies = net_.Replies();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].category, am::Category::kMedium);  // straddles the end
  EXPECT_EQ(replies[1].category, am::Category::kMedium);  // wholly past it
  EXPECT_EQ(std::memcmp(dest, data.data() + n, n + 2), 0);
  // One that fits: the first chunk inside, the second outside.
  net_.sent.clear();
  dest = Backing(kSelf, kSegSize - n);
  Counter rc3;
  EXPECT_EQ(engine_->GetRemote("get", dest, kUnmapped, Remote(kUnmapped, n),
                               n + 5, false, rc3),
            Issue::kPending);
  engine_->Wait("get", rc3);
  const std::vector<Sent> r3 = net_.Replies();
  ASSERT_EQ(r3.size(), 2u);
  EXPECT_EQ(r3[0].category, am::Category::kLong);
  EXPECT_EQ(r3[0].long_dest, dest);
  EXPECT_EQ(r3[1].category, am::Category::kMedium);
  EXPECT_EQ(r3[1].len, 5u);
  EXPECT_EQ(std::memcmp(dest, data.data() + n, n + 5), 0);
}

TEST_F(EngineTest, AmGetImmediateRefusalStartsNothing) {
  Build({});
  net_.refuse_immediate = true;
  std::vector<unsigned char> dst(2 * Engine::kChunk);
  Counter rc;
  rc.Start(1);
  EXPECT_EQ(engine_->GetRemote("get", dst.data(), kUnmapped,
                               Remote(kUnmapped, 0), dst.size(), true, rc),
            Issue::kWouldBlock);
  EXPECT_TRUE(net_.sent.empty());
  rc.Complete();
  EXPECT_TRUE(rc.Done());
  // Not immediate: goes ahead even though the fake refuses immediates.
  Counter rc2;
  EXPECT_EQ(engine_->GetRemote("get", dst.data(), kUnmapped,
                               Remote(kUnmapped, 0), dst.size(), false, rc2),
            Issue::kPending);
  const std::vector<Sent> requests = net_.Requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_FALSE(requests[0].immediate);
  engine_->Wait("get", rc2);
}

TEST_F(EngineTest, ManyOperationsShareOneCounter) {
  // As the NBI counters do: starts accumulate, each reply completes one.
  Build({});
  const auto a = Bytes(Engine::kChunk + 1, 14);
  const auto b = Bytes(300, 15);
  std::vector<unsigned char> got(300);
  Counter rc, lc;
  EXPECT_EQ(engine_->PutRemote("put", kUnmapped, Remote(kUnmapped, 0), a.data(),
                               a.size(), false, rc, &lc),
            Issue::kPending);
  EXPECT_EQ(engine_->PutRemote("put", kUnmapped,
                               Remote(kUnmapped, 2 * Engine::kChunk), b.data(),
                               b.size(), false, rc, &lc),
            Issue::kPending);
  EXPECT_EQ(engine_->GetRemote("get", got.data(), kUnmapped,
                               Remote(kUnmapped, 2 * Engine::kChunk),
                               got.size(), false, rc),
            Issue::kPending);
  EXPECT_TRUE(lc.Done());
  // 2 + 1 + 1 starts: four round trips.
  for (int i = 0; i < 4; ++i) {  // requests
    ASSERT_TRUE(net_.DeliverOne());
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(net_.DeliverOne());
    EXPECT_FALSE(rc.Done()) << i;
  }
  ASSERT_TRUE(net_.DeliverOne());
  EXPECT_TRUE(rc.Done());
  EXPECT_TRUE(Holds(kUnmapped, 0, a));
  EXPECT_EQ(got, b);  // the Get was issued after the Put it reads
}

// ---- GEX_RMA_FORCE_AM -----------------------------------------------------

TEST_F(EngineTest, ForceAmSendsMappedRanksOverActiveMessages) {
  Build({.rdma = true, .force_am = true, .mapped_at_own_base = true});
  EXPECT_TRUE(engine_->force_am());
  const auto src = Bytes(Engine::kChunk + 50, 16);
  for (Rank r : {kSelf, kMapped}) {
    SCOPED_TRACE(r);
    net_.sent.clear();
    ASSERT_FALSE(
        engine_->PutDirect("put", r, Remote(r, 8), src.data(), src.size()));
    // Nothing was copied directly.
    EXPECT_FALSE(Holds(r, 8, src));
    Counter rc, lc;
    EXPECT_EQ(engine_->PutRemote("put", r, Remote(r, 8), src.data(), src.size(),
                                 false, rc, &lc),
              Issue::kPending);
    engine_->Wait("put", rc);
    EXPECT_TRUE(Holds(r, 8, src));
    EXPECT_EQ(net_.Requests().size(), 2u);

    std::vector<unsigned char> back(src.size());
    ASSERT_FALSE(
        engine_->GetDirect("get", back.data(), r, Remote(r, 8), back.size()));
    Counter grc;
    EXPECT_EQ(engine_->GetRemote("get", back.data(), r, Remote(r, 8),
                                 back.size(), false, grc),
              Issue::kPending);
    engine_->Wait("get", grc);
    EXPECT_EQ(back, src);
    EXPECT_EQ(net_.Requests().size(), 4u);
  }
  // FORCE_AM beats the conduit's RDMA too.
  Counter rc;
  const auto small = Bytes(5, 17);
  EXPECT_EQ(engine_->PutRemote("put", kUnmapped, Remote(kUnmapped, 0),
                               small.data(), small.size(), false, rc, nullptr),
            Issue::kPending);
  engine_->Wait("put", rc);
  EXPECT_TRUE(Holds(kUnmapped, 0, small));
  EXPECT_TRUE(net_.rdma.empty());
  // Zero bytes are still done at once.
  EXPECT_TRUE(
      engine_->PutDirect("put", kSelf, Remote(kSelf, 0), src.data(), 0));
}

// ---- misuse ---------------------------------------------------------------

using EngineDeathTest = EngineTest;

TEST_F(EngineDeathTest, RemoteRangeOutsideTheSegmentNamesTheCall) {
  Build({.rdma = true});
  const auto src = Bytes(64, 18);
  std::vector<unsigned char> dst(64);
  // Past the end (straddling), on each rung's way in.
  EXPECT_DEATH(
      {
        Counter rc;
        engine_->PutRemote("gex_RMA_PutBlocking", kUnmapped,
                           Remote(kUnmapped, kSegSize - 8), src.data(), 64,
                           false, rc, nullptr);
      },
      "FATAL ERROR.*gex_RMA_PutBlocking: remote range \\[.*, \\+64\\) is "
      "outside rank 2's segment");
  EXPECT_DEATH(
      {
        Counter rc;
        engine_->GetRemote("gex_RMA_GetNBI", dst.data(), kUnmapped,
                           Remote(kUnmapped, kSegSize), 1, false, rc);
      },
      "gex_RMA_GetNBI: remote range .* is outside rank 2's segment");
  // Before the segment.
  EXPECT_DEATH(
      {
        Counter rc;
        engine_->GetRemote("gex_RMA_GetNB", dst.data(), kUnmapped,
                           Backing(kUnmapped, 0) - 1, 2, false, rc);
      },
      "gex_RMA_GetNB: remote range .* is outside rank 2's segment");
  // A mapped peer's range past its segment: PutDirect declines, PutRemote
  // reports it.
  EXPECT_DEATH(
      {
        if (!engine_->PutDirect("gex_RMA_PutNBI", kMapped,
                                Remote(kMapped, kSegSize - 1), src.data(), 2)) {
          Counter rc;
          engine_->PutRemote("gex_RMA_PutNBI", kMapped,
                             Remote(kMapped, kSegSize - 1), src.data(), 2,
                             false, rc, nullptr);
        }
      },
      "gex_RMA_PutNBI: remote range .* is outside rank 1's segment");
}

TEST_F(EngineDeathTest, AnyRangeBeforeAttachNamesTheCall) {
  Build({.attached = false});
  const auto src = Bytes(4, 19);
  EXPECT_DEATH(
      {
        if (!engine_->PutDirect("gex_RMA_PutBlocking", kSelf, Remote(kSelf, 0),
                                src.data(), 4)) {
          Counter rc;
          engine_->PutRemote("gex_RMA_PutBlocking", kSelf, Remote(kSelf, 0),
                             src.data(), 4, false, rc, nullptr);
        }
      },
      "gex_RMA_PutBlocking: no segment is attached yet");
}

TEST_F(EngineDeathTest, RankOutsideTheJobNamesTheCall) {
  Build({});
  int x = 0;
  EXPECT_DEATH(engine_->PutDirect("gex_RMA_PutBlocking", kSize, &x, &x, 4),
               "gex_RMA_PutBlocking: rank 3 is not in the team \\(size 3\\)");
  EXPECT_DEATH(engine_->GetDirect("gex_RMA_GetNB", &x, 1000, &x, 0),
               "gex_RMA_GetNB: rank 1000 is not in the team \\(size 3\\)");
}

TEST_F(EngineDeathTest, WrappingRangesNameTheCall) {
  Build({});
  int x = 0;
  void* top = reinterpret_cast<void*>(UINTPTR_MAX - 10);
  EXPECT_DEATH(engine_->PutDirect("gex_RMA_PutNB", kUnmapped, top, &x, 100),
               "gex_RMA_PutNB: nbytes 100 overflows: the remote range "
               "starting at .* wraps around the address space");
  EXPECT_DEATH(engine_->GetDirect("gex_RMA_GetBlocking", top, kUnmapped,
                                  Remote(kUnmapped, 0), 100),
               "gex_RMA_GetBlocking: nbytes 100 overflows: the local range");
  EXPECT_DEATH(engine_->PutDirect("gex_RMA_PutNBI", kSelf, Remote(kSelf, 0),
                                  top, SIZE_MAX),
               "gex_RMA_PutNBI: nbytes [0-9]+ overflows");
}

TEST_F(EngineDeathTest, CallsFromAHandlerNameTheCall) {
  Build({});
  int x = 0;
  EXPECT_DEATH(
      {
        am::Token token;
        am::HandlerContext::Scope scope(&token);
        engine_->PutDirect("gex_RMA_PutBlocking", kSelf, Remote(kSelf, 0), &x,
                           4);
      },
      "gex_RMA_PutBlocking: called from an AM handler");
  EXPECT_DEATH(
      {
        am::Token token;
        am::HandlerContext::Scope scope(&token);
        // Even zero bytes.
        engine_->GetDirect("gex_RMA_GetNB", &x, kSelf, Remote(kSelf, 0), 0);
      },
      "gex_RMA_GetNB: called from an AM handler");
  EXPECT_DEATH(
      {
        Counter c;
        c.Start(1);
        am::Token token;
        am::HandlerContext::Scope scope(&token);
        engine_->Wait("gex_Event_Wait", c);
      },
      "gex_Event_Wait: called from an AM handler \\(it may block\\)");
}

// A Put issued by a client handler that the network runs.
void PutFromHandler(void* token, int32_t lo, int32_t hi) {
  auto* e = reinterpret_cast<Engine*>(
      static_cast<uintptr_t>(static_cast<uint32_t>(lo)) |
      static_cast<uintptr_t>(static_cast<uint32_t>(hi)) << 32);
  (void)token;
  int x = 0;
  e->PutDirect("gex_RMA_PutNBI", kSelf, &x, &x, sizeof x);
}

TEST_F(EngineDeathTest, APutFromADeliveredHandlerIsFatal) {
  Build({});
  am::Entry entry;
  entry.fn = reinterpret_cast<am::HandlerFn>(&PutFromHandler);
  entry.flags = am::kFlagShort | am::kFlagRequest;
  entry.nargs = 2;
  entry.name = "put from handler";
  ASSERT_TRUE(table_.Register(&entry, 1, false).ok());
  const auto p = reinterpret_cast<uintptr_t>(engine_.get());
  const uint32_t args[2] = {static_cast<uint32_t>(p),
                            static_cast<uint32_t>(p >> 32)};
  const Transport t = net_.MakeTransport(false);
  ASSERT_TRUE(t.request(t.context, kSelf, am::Category::kShort, entry.index,
                        args, 2, nullptr, 0, nullptr, false));
  EXPECT_DEATH(engine_->Progress(),
               "gex_RMA_PutNBI: called from an AM handler");
}

}  // namespace
}  // namespace gexrt::rma
