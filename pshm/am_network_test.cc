// Unit tests of the PSHM Active Message network, in one process: every
// simulated rank's region is plain memory of this process, and each rank is
// an AmNetwork instance (driven by its own thread where ranks must run at
// once).
//
// A reply exists only as the answer to a request, sent from inside that
// request's handler (SendReply(*m.reply, ...)) into the request's own slot.
// Where a test needs a reply from rank X to rank Y, Y sends X a "carrier"
// request (handler kCarrier) whose handler sends the reply, and Y's next
// poll runs it (ReplyVia).
#include "pshm/am_network.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "pshm/queue_config.h"
#include "pshm/queue_layout.h"

namespace gexrt::pshm {
namespace {

// Supernode index i is job rank kJobRankBase + i, so a test can tell the
// two apart in Message::source and Message::source_index.
constexpr uint32_t kJobRankBase = 100;

// The handler index of a carrier request: one that exists only to be
// replied to (see ReplyVia). No test uses it for anything else.
constexpr uint8_t kCarrier = 255;

QueueConfig Config(uint32_t depth, uint64_t memory = kDefaultQueueMemory) {
  QueueConfig config;
  config.depth = depth;
  config.memory = memory;
  return config;
}

QueueConfig MinMemory(uint32_t depth) {
  return Config(depth, MinQueueMemory());
}

// The regions of one simulated supernode, formatted, in this process.
class Supernode {
 public:
  // One configuration per peer (each region describes itself).
  explicit Supernode(const std::vector<QueueConfig>& configs) {
    const auto peers = static_cast<uint32_t>(configs.size());
    for (uint32_t i = 0; i < peers; ++i) {
      const size_t bytes = AmNetwork::RegionBytes(configs[i], peers);
      void* region = std::aligned_alloc(kCacheLine, bytes);
      // Not zeroed, unlike a fresh shared object: FormatRegion must write
      // everything a reader looks at.
      std::memset(region, 0xA5, bytes);
      AmNetwork::FormatRegion(region, configs[i], peers, kJobRankBase + i);
      regions_.push_back(region);
      ranks_.push_back(kJobRankBase + i);
    }
  }
  Supernode(uint32_t peers, const QueueConfig& config)
      : Supernode(std::vector<QueueConfig>(peers, config)) {}
  Supernode(const Supernode&) = delete;
  Supernode& operator=(const Supernode&) = delete;
  ~Supernode() {
    for (void* region : regions_) std::free(region);
  }

  uint32_t peers() const { return static_cast<uint32_t>(regions_.size()); }

  // Where rank `index`'s payload pool for `channel` lies, from the layout
  // its region's header describes.
  std::pair<const unsigned char*, const unsigned char*> PoolBytes(
      uint32_t index, Channel channel) const {
    const auto* header =
        static_cast<const layout::RegionHeader*>(regions_[index]);
    const auto* begin = static_cast<const unsigned char*>(regions_[index]) +
                        layout::PoolOffset(header->peers, header->depth,
                                           header->pool_bytes, channel);
    return {begin, begin + header->pool_bytes};
  }

  AmNetwork::Options Options(uint32_t index, Dispatcher dispatcher,
                             void* context, bool thread_safe,
                             WaitPolicy* wait_policy = nullptr) const {
    AmNetwork::Options options;
    options.my_index = index;
    options.ranks = ranks_;
    options.regions = regions_;
    options.dispatcher = dispatcher;
    options.context = context;
    options.thread_safe = thread_safe;
    // Tests run more threads than this machine may have cores.
    options.polite = true;
    options.wait_policy = wait_policy;
    return options;
  }

 private:
  std::vector<void*> regions_;
  std::vector<uint32_t> ranks_;
};

// One message as a handler saw it, copied.
struct Delivery {
  uint32_t source = 0;
  uint32_t source_index = 0;
  Channel channel = Channel::kRequest;
  Category category = Category::kShort;
  uint8_t handler = 0;
  bool can_reply = false;  // Message::reply was set (a request).
  std::vector<uint32_t> args;
  std::vector<unsigned char> payload;  // Medium and Long bytes, copied.
  const void* payload_address = nullptr;
  size_t payload_len = 0;
};

// A simulated rank: an AmNetwork whose dispatcher records each message, or
// calls on_message when set. Carrier requests go to `carrier` instead.
class Endpoint {
 public:
  Endpoint(const Supernode& node, uint32_t index, bool thread_safe = false,
           WaitPolicy* wait_policy = nullptr)
      : net_(node.Options(index, &Endpoint::Dispatch, this, thread_safe,
                          wait_policy)) {}
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  AmNetwork& net() { return net_; }
  uint32_t index() const { return net_.my_index(); }

  // Replaces the recording: every message but a carrier goes here.
  std::function<void(const Message&)> on_message;
  // Runs in the handler of each recorded request, after recording it: a
  // test's way of replying (SendReply(*m.reply, ...)).
  std::function<void(const Message&)> on_request;
  // Runs in the handler of each carrier request (never recorded).
  std::function<void(const Message&)> carrier;
  std::vector<Delivery> delivered;
  int carriers = 0;  // Carrier requests handled.

 private:
  static void Dispatch(void* context, const Message& m) {
    auto* self = static_cast<Endpoint*>(context);
    if (m.reply != nullptr && m.handler == kCarrier) {
      ++self->carriers;
      if (self->carrier) self->carrier(m);
      return;
    }
    if (self->on_message) {
      self->on_message(m);
      return;
    }
    Delivery d;
    d.source = m.source;
    d.source_index = m.source_index;
    d.channel = m.channel;
    d.category = m.category;
    d.handler = m.handler;
    d.can_reply = m.reply != nullptr;
    d.args.assign(m.args, m.args + m.nargs);
    d.payload_address = m.payload;
    d.payload_len = m.payload_len;
    if (m.category != Category::kShort && m.payload_len != 0) {
      const auto* p = static_cast<const unsigned char*>(m.payload);
      d.payload.assign(p, p + m.payload_len);
    }
    self->delivered.push_back(std::move(d));
    if (m.reply != nullptr && self->on_request) self->on_request(m);
  }

  AmNetwork net_;
};

uint32_t Mix(uint32_t a, uint32_t b) {
  uint32_t x = a * 0x9E3779B9u ^ (b + 0x7F4A7C15u);
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  return x;
}

// Distinct argument values for each (salt, position).
std::vector<uint32_t> MakeArgs(uint32_t nargs, uint32_t salt) {
  std::vector<uint32_t> args(nargs);
  for (uint32_t i = 0; i < nargs; ++i) args[i] = Mix(salt, i + 1);
  return args;
}

// Bytes that differ with the seed and along the buffer (no short period).
std::vector<unsigned char> MakePayload(size_t n, uint32_t seed) {
  std::vector<unsigned char> bytes(n);
  uint32_t x = Mix(seed, 0xB0D1E5u) | 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    bytes[i] = static_cast<unsigned char>(x);
  }
  return bytes;
}

bool PayloadMatches(const void* p, size_t n, uint32_t seed) {
  const std::vector<unsigned char> want = MakePayload(n, seed);
  return n == 0 || std::memcmp(p, want.data(), n) == 0;
}

// Requests.

SendStatus SendShort(Endpoint& from, uint32_t dest, uint8_t handler,
                     const std::vector<uint32_t>& args, bool immediate) {
  return from.net().SendRequest(dest, Category::kShort, handler, args.data(),
                                static_cast<uint8_t>(args.size()), nullptr, 0,
                                nullptr, 0, immediate);
}

SendStatus SendMedium(Endpoint& from, uint32_t dest, uint8_t handler,
                      const std::vector<uint32_t>& args,
                      const std::vector<unsigned char>& payload,
                      bool immediate) {
  return from.net().SendRequest(dest, Category::kMedium, handler, args.data(),
                                static_cast<uint8_t>(args.size()),
                                payload.data(), payload.size(), nullptr, 0,
                                immediate);
}

// A Long whose destination is mapped at the same address on both sides
// (one process).
SendStatus SendLong(Endpoint& from, uint32_t dest, uint8_t handler,
                    const std::vector<uint32_t>& args,
                    const std::vector<unsigned char>& payload, void* target,
                    bool immediate) {
  return from.net().SendRequest(dest, Category::kLong, handler, args.data(),
                                static_cast<uint8_t>(args.size()),
                                payload.data(), payload.size(), target,
                                reinterpret_cast<uintptr_t>(target), immediate);
}

// Replies, from inside the handler of the request `to` belongs to.

SendStatus ReplyShort(AmNetwork& net, ReplyTo& to, uint8_t handler,
                      const std::vector<uint32_t>& args, bool immediate) {
  return net.SendReply(to, Category::kShort, handler, args.data(),
                       static_cast<uint8_t>(args.size()), nullptr, 0, nullptr,
                       0, immediate);
}

SendStatus ReplyMedium(AmNetwork& net, ReplyTo& to, uint8_t handler,
                       const std::vector<uint32_t>& args,
                       const std::vector<unsigned char>& payload,
                       bool immediate) {
  return net.SendReply(to, Category::kMedium, handler, args.data(),
                       static_cast<uint8_t>(args.size()), payload.data(),
                       payload.size(), nullptr, 0, immediate);
}

// Sends a reply from inside a request's handler: given the replier's
// network and the request's ReplyTo.
using ReplyFn = std::function<SendStatus(AmNetwork& net, ReplyTo& to)>;

// Has `replier` reply to `requester`: the requester sends the replier a
// carrier request (immediate), the replier polls until that request's
// handler has run, and `reply` sends the reply from inside it. Returns
// false (and sends nothing) when the requester's queue had no room for the
// carrier; otherwise *status is what `reply` returned. The reply then
// waits in the carrier's slot for the requester's next poll. Polling the
// replier also delivers whatever else has arrived there.
bool TryReplyVia(Endpoint& replier, Endpoint& requester, const ReplyFn& reply,
                 SendStatus* status) {
  if (requester.net().SendRequest(replier.index(), Category::kShort, kCarrier,
                                  nullptr, 0, nullptr, 0, nullptr, 0,
                                  /*immediate=*/true) != SendStatus::kOk) {
    return false;
  }
  bool ran = false;
  replier.carrier = [&](const Message& m) {
    EXPECT_FALSE(ran) << "one carrier, one handler";
    ran = true;
    *status = reply(replier.net(), *m.reply);
  };
  // The carrier is the last request from the requester: a poll or two
  // delivers it, after the requester's earlier ones.
  for (int i = 0; i < 3 && !ran; ++i) replier.net().PollRequests();
  replier.carrier = nullptr;
  if (!ran) {
    ADD_FAILURE() << "the carrier request was not delivered";
    *status = SendStatus::kWouldBlock;
  }
  return true;
}

// TryReplyVia where the carrier must find room.
SendStatus ReplyVia(Endpoint& replier, Endpoint& requester,
                    const ReplyFn& reply) {
  SendStatus status = SendStatus::kWouldBlock;
  if (!TryReplyVia(replier, requester, reply, &status)) {
    ADD_FAILURE() << "no room for the carrier request from rank "
                  << requester.index() << " to rank " << replier.index();
  }
  return status;
}

// A message from `from` to `to` on `channel`: a request, or a reply (to a
// carrier request from `to`, see ReplyVia); either way, `to`'s next Poll
// delivers it. `target` is a Long's destination (the same address on both
// sides).
SendStatus SendOn(Channel channel, Endpoint& from, Endpoint& to,
                  Category category, uint8_t handler,
                  const std::vector<uint32_t>& args,
                  const std::vector<unsigned char>& payload, void* target,
                  bool immediate) {
  const auto nargs = static_cast<uint8_t>(args.size());
  const auto long_dest = reinterpret_cast<uintptr_t>(target);
  if (channel == Channel::kRequest) {
    return from.net().SendRequest(to.index(), category, handler, args.data(),
                                  nargs, payload.data(), payload.size(), target,
                                  long_dest, immediate);
  }
  return ReplyVia(from, to, [&](AmNetwork& net, ReplyTo& reply_to) {
    return net.SendReply(reply_to, category, handler, args.data(), nargs,
                         payload.data(), payload.size(), target, long_dest,
                         immediate);
  });
}

// Whether a Medium with `nargs` arguments and `len` payload bytes fits in
// its slot (no pool chunk).
bool FitsInline(Category c, uint32_t nargs, size_t len) {
  return layout::BodyBytes(c, nargs, len) <= layout::kInlineBytes;
}

// The replies in a record, as their first argument.
// One request from `a` to `b` (index 1), run by `b` (tag 50, no reply):
// requests `a` sends next start in the ring, not in the reused last slot,
// whose skip ahead would count as finished at once.
void StartInTheRing(Endpoint& a, Endpoint& b) {
  ASSERT_EQ(SendShort(a, 1, 1, {50}, true), SendStatus::kOk);
  ASSERT_EQ(b.net().Poll(), 1);
}

std::vector<uint32_t> ReplyTags(const std::vector<Delivery>& delivered) {
  std::vector<uint32_t> tags;
  for (const Delivery& d : delivered) {
    if (d.channel == Channel::kReply) tags.push_back(d.args.at(0));
  }
  return tags;
}

constexpr Channel kChannelsToTest[] = {Channel::kRequest, Channel::kReply};

// ---------------------------------------------------------------------------
// Basic delivery.

TEST(AmNetworkTest, RegionBytesGrowWithPeersDepthAndMemory) {
  const size_t base = AmNetwork::RegionBytes(Config(8), 2);
  EXPECT_EQ(base % kCacheLine, 0u);
  EXPECT_GT(AmNetwork::RegionBytes(Config(8), 3), base);
  EXPECT_GT(AmNetwork::RegionBytes(Config(9), 2), base);
  EXPECT_GT(AmNetwork::RegionBytes(Config(8, 2 * kDefaultQueueMemory), 2),
            base);
  // Two pools (request, reply) of the configured memory at least.
  EXPECT_GE(base, 2 * kDefaultQueueMemory);
}

TEST(AmNetworkTest, ShortCarriesEveryArgumentCount) {
  Supernode node(2, Config(8));
  Endpoint a(node, 0), b(node, 1);
  EXPECT_EQ(a.net().my_index(), 0u);
  EXPECT_EQ(b.net().my_index(), 1u);
  EXPECT_EQ(a.net().peers(), 2u);
  for (Channel channel : kChannelsToTest) {
    for (uint32_t dest : {1u, 0u}) {  // To a peer, then loopback.
      Endpoint& to = dest == 0 ? a : b;
      for (uint32_t nargs = 0; nargs <= kMaxArgs; ++nargs) {
        SCOPED_TRACE(absl::StrFormat("channel %d dest %u nargs %u",
                                     static_cast<int>(channel), dest, nargs));
        const std::vector<uint32_t> args = MakeArgs(
            nargs, nargs + 100 * dest + 1000 * (channel == Channel::kReply));
        const auto handler = static_cast<uint8_t>(200 + nargs);
        ASSERT_EQ(SendOn(channel, a, to, Category::kShort, handler, args, {},
                         nullptr, /*immediate=*/true),
                  SendStatus::kOk);
        to.delivered.clear();
        ASSERT_EQ(to.net().Poll(), 1);
        ASSERT_EQ(to.delivered.size(), 1u);
        const Delivery& d = to.delivered[0];
        EXPECT_EQ(d.source, kJobRankBase + 0);
        EXPECT_EQ(d.source_index, 0u);
        EXPECT_EQ(d.channel, channel);
        EXPECT_EQ(d.can_reply, channel == Channel::kRequest);
        EXPECT_EQ(d.category, Category::kShort);
        EXPECT_EQ(d.handler, handler);
        EXPECT_EQ(d.args, args);
        EXPECT_EQ(d.payload_address, nullptr);
        EXPECT_EQ(d.payload_len, 0u);
        EXPECT_EQ(to.net().Poll(), 0);  // Exactly once.
      }
    }
  }
}

TEST(AmNetworkTest, MediumSizesAroundTheInlineLimit) {
  Supernode node(2, Config(8));
  Endpoint a(node, 0), b(node, 1);
  for (Channel channel : kChannelsToTest) {
    for (uint32_t nargs : {0u, 1u, 2u, 3u, 7u, 10u, 11u, 12u, 15u, 16u}) {
      const size_t offset = layout::PayloadOffset(Category::kMedium, nargs);
      std::vector<size_t> sizes = {0, 1, 1000, kMaxMedium - 1, kMaxMedium};
      if (offset <= layout::kInlineBytes) {
        const size_t limit = layout::kInlineBytes - offset;
        sizes.push_back(limit);
        sizes.push_back(limit + 1);
        if (limit > 0) sizes.push_back(limit - 1);
      }
      for (size_t size : sizes) {
        for (uint32_t dest : {1u, 0u}) {
          SCOPED_TRACE(absl::StrFormat("channel %d nargs %u size %u dest %u",
                                       static_cast<int>(channel), nargs, size,
                                       dest));
          Endpoint& to = dest == 0 ? a : b;
          const uint32_t seed =
              static_cast<uint32_t>(size * 31 + nargs + dest) +
              (channel == Channel::kReply ? 77777u : 0u);
          const std::vector<uint32_t> args = MakeArgs(nargs, seed);
          const std::vector<unsigned char> payload = MakePayload(size, seed);
          ASSERT_EQ(SendOn(channel, a, to, Category::kMedium, 7, args, payload,
                           nullptr, /*immediate=*/true),
                    SendStatus::kOk);
          to.delivered.clear();
          ASSERT_EQ(to.net().Poll(), 1);
          ASSERT_EQ(to.delivered.size(), 1u);
          const Delivery& d = to.delivered[0];
          EXPECT_EQ(d.channel, channel);
          EXPECT_EQ(d.category, Category::kMedium);
          EXPECT_EQ(d.handler, 7);
          EXPECT_EQ(d.args, args);
          EXPECT_EQ(d.payload_len, size);
          EXPECT_TRUE(d.payload == payload) << "payload differs";
        }
      }
    }
  }
}

// Reserve tells where the body went: in the slot up to the inline limit,
// in a pool chunk just past it. A reply's slot is its request's.
TEST(AmNetworkTest, ReserveUsesTheSlotUpToTheInlineLimitAndAChunkBeyond) {
  Supernode node(2, Config(8));
  Endpoint a(node, 0), b(node, 1);
  for (Channel channel : kChannelsToTest) {
    for (uint32_t nargs = 0; nargs <= kMaxArgs; ++nargs) {
      for (size_t size : {size_t{0}, size_t{1}, size_t{8}, size_t{40},
                          size_t{47}, size_t{48}, size_t{49}, size_t{64}}) {
        SCOPED_TRACE(absl::StrFormat("channel %d nargs %u size %u",
                                     static_cast<int>(channel), nargs, size));
        const uint32_t seed = nargs * 1000 + static_cast<uint32_t>(size) +
                              (channel == Channel::kReply ? 500000u : 0u);
        const std::vector<uint32_t> args = MakeArgs(nargs, seed);
        const std::vector<unsigned char> bytes = MakePayload(size, seed);
        // Checks where the body lies, fills it and commits.
        auto fill = [&](AmNetwork& net, Reservation& r) {
          const bool inline_body = FitsInline(Category::kMedium, nargs, size);
          EXPECT_EQ(r.chunk_offset == 0, inline_body);
          EXPECT_EQ(r.dest, 1u);
          const auto* slot_begin = reinterpret_cast<unsigned char*>(r.slot);
          const auto* payload = static_cast<unsigned char*>(r.payload);
          if (inline_body) {
            EXPECT_GE(payload, slot_begin + layout::kSlotHeaderBytes);
            EXPECT_LE(payload + size, slot_begin + sizeof(layout::Slot));
          } else {
            EXPECT_FALSE(payload >= slot_begin &&
                         payload < slot_begin + sizeof(layout::Slot));
          }
          if (size != 0) std::memcpy(r.payload, bytes.data(), size);
          net.Commit(r, 9, args.data(), size, 0);
        };
        if (channel == Channel::kRequest) {
          Reservation r;
          ASSERT_EQ(a.net().ReserveRequest(1, Category::kMedium,
                                           static_cast<uint8_t>(nargs), size,
                                           /*immediate=*/true, &r),
                    SendStatus::kOk);
          EXPECT_EQ(r.reply_to, nullptr);
          fill(a.net(), r);
        } else {
          // b asks, a replies into b's request's slot.
          ASSERT_EQ(ReplyVia(a, b,
                             [&](AmNetwork& net, ReplyTo& to) {
                               Reservation r;
                               const SendStatus s = net.ReserveReply(
                                   to, Category::kMedium,
                                   static_cast<uint8_t>(nargs), size,
                                   /*immediate=*/true, &r);
                               if (s != SendStatus::kOk) return s;
                               EXPECT_EQ(r.reply_to, &to);
                               EXPECT_EQ(r.slot, to.slot);
                               fill(net, r);
                               return s;
                             }),
                    SendStatus::kOk);
        }
        b.delivered.clear();
        ASSERT_EQ(b.net().Poll(), 1);
        ASSERT_EQ(b.delivered.size(), 1u);
        EXPECT_EQ(b.delivered[0].channel, channel);
        EXPECT_EQ(b.delivered[0].args, args);
        EXPECT_TRUE(b.delivered[0].payload == bytes);
      }
    }
  }
}

// Negotiated payload: reserve room for the most, send less.
TEST(AmNetworkTest, CommitSendsLessThanReserved) {
  Supernode node(2, Config(8));
  Endpoint a(node, 0), b(node, 1);
  for (Channel channel : kChannelsToTest) {
    for (size_t sent : {size_t{0}, size_t{5}, size_t{48}, size_t{4096}}) {
      SCOPED_TRACE(absl::StrFormat("channel %d sent %u",
                                   static_cast<int>(channel), sent));
      const std::vector<unsigned char> bytes =
          MakePayload(sent, static_cast<uint32_t>(sent));
      const uint32_t args[2] = {11, 22};
      auto fill = [&](AmNetwork& net, Reservation& r) {
        if (sent != 0) std::memcpy(r.payload, bytes.data(), sent);
        net.Commit(r, 3, args, sent, 0);
      };
      if (channel == Channel::kRequest) {
        Reservation r;
        ASSERT_EQ(a.net().ReserveRequest(1, Category::kMedium, 2, kMaxMedium,
                                         /*immediate=*/true, &r),
                  SendStatus::kOk);
        fill(a.net(), r);
      } else {
        ASSERT_EQ(ReplyVia(a, b,
                           [&](AmNetwork& net, ReplyTo& to) {
                             Reservation r;
                             const SendStatus s = net.ReserveReply(
                                 to, Category::kMedium, 2, kMaxMedium,
                                 /*immediate=*/true, &r);
                             if (s == SendStatus::kOk) fill(net, r);
                             return s;
                           }),
                  SendStatus::kOk);
      }
      b.delivered.clear();
      ASSERT_EQ(b.net().Poll(), 1);
      ASSERT_EQ(b.delivered.size(), 1u);
      EXPECT_EQ(b.delivered[0].channel, channel);
      EXPECT_EQ(b.delivered[0].payload_len, sent);
      EXPECT_TRUE(b.delivered[0].payload == bytes);
      EXPECT_EQ(b.delivered[0].args, (std::vector<uint32_t>{11, 22}));
    }
  }
}

// A Long's payload is in the destination when its handler runs, and the
// handler gets the destination address and length.
TEST(AmNetworkTest, LongLandsBeforeTheHandlerRuns) {
  Supernode node(2, Config(8));
  Endpoint a(node, 0), b(node, 1);
  std::vector<unsigned char> segment_a(1 << 18, 0), segment_b(1 << 18, 0);
  for (Channel channel : kChannelsToTest) {
    for (uint32_t dest : {1u, 0u}) {
      Endpoint& to = dest == 0 ? a : b;
      unsigned char* segment = dest == 0 ? segment_a.data() : segment_b.data();
      for (uint32_t nargs : {0u, 1u, 9u, 10u, 11u, 16u}) {
        for (size_t size : {size_t{0}, size_t{1}, size_t{48}, size_t{1000},
                            size_t{kMaxMedium}, size_t{100000}}) {
          SCOPED_TRACE(absl::StrFormat("channel %d dest %u nargs %u size %u",
                                       static_cast<int>(channel), dest, nargs,
                                       size));
          const uint32_t seed =
              static_cast<uint32_t>(size) * 7 + nargs * 3 + dest;
          const std::vector<uint32_t> args = MakeArgs(nargs, seed);
          const std::vector<unsigned char> payload = MakePayload(size, seed);
          unsigned char* target = segment + 64 + nargs;  // Unaligned too.
          std::memset(segment, 0, 1 << 18);
          int calls = 0;
          to.on_message = [&](const Message& m) {
            ++calls;
            EXPECT_EQ(m.category, Category::kLong);
            EXPECT_EQ(m.channel, channel);
            EXPECT_EQ(m.handler, 42);
            EXPECT_EQ(m.payload, static_cast<void*>(target));
            EXPECT_EQ(m.payload_len, size);
            EXPECT_EQ(std::vector<uint32_t>(m.args, m.args + m.nargs), args);
            EXPECT_TRUE(PayloadMatches(m.payload, size, seed))
                << "the payload was not in place when the handler ran";
          };
          ASSERT_EQ(SendOn(channel, a, to, Category::kLong, 42, args, payload,
                           target, /*immediate=*/true),
                    SendStatus::kOk);
          ASSERT_EQ(to.net().Poll(), 1);
          EXPECT_EQ(calls, 1);
          to.on_message = nullptr;
        }
      }
    }
  }
}

// Loopback: requests to this rank, and replies from this rank's handlers
// to itself, of every category, in order.
TEST(AmNetworkTest, LoopbackDeliversEveryCategory) {
  Supernode node(1, Config(4));
  Endpoint a(node, 0);
  EXPECT_EQ(a.net().peers(), 1u);
  std::vector<unsigned char> segment(8192), reply_segment(8192);
  const std::vector<uint32_t> args = MakeArgs(5, 1);
  const std::vector<unsigned char> small = MakePayload(20, 2);
  const std::vector<unsigned char> big = MakePayload(5000, 3);
  // Each request is answered in its own category, with handler + 10.
  a.on_request = [&](const Message& m) {
    const std::vector<uint32_t> reply_args = {m.handler};
    const std::vector<unsigned char>& bytes = m.handler == 2 ? small : big;
    const auto handler = static_cast<uint8_t>(m.handler + 10);
    SendStatus s;
    if (m.category == Category::kShort) {
      s = ReplyShort(a.net(), *m.reply, handler, reply_args, true);
    } else if (m.category == Category::kMedium) {
      s = ReplyMedium(a.net(), *m.reply, handler, reply_args, bytes, true);
    } else {
      s = a.net().SendReply(
          *m.reply, Category::kLong, handler, reply_args.data(), 1, big.data(),
          big.size(), reply_segment.data(),
          reinterpret_cast<uintptr_t>(reply_segment.data()), true);
    }
    EXPECT_EQ(s, SendStatus::kOk);
  };
  ASSERT_EQ(SendShort(a, 0, 1, args, true), SendStatus::kOk);
  ASSERT_EQ(SendMedium(a, 0, 2, args, small, true), SendStatus::kOk);
  ASSERT_EQ(SendMedium(a, 0, 3, args, big, true), SendStatus::kOk);
  ASSERT_EQ(SendLong(a, 0, 4, args, big, segment.data(), true),
            SendStatus::kOk);
  // The requests (whose handlers reply into their slots)...
  EXPECT_EQ(a.net().PollRequests(), 4);
  ASSERT_EQ(a.delivered.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(a.delivered[i].channel, Channel::kRequest);
    EXPECT_EQ(a.delivered[i].handler, i + 1);  // In order.
    EXPECT_EQ(a.delivered[i].source, kJobRankBase);
    EXPECT_EQ(a.delivered[i].source_index, 0u);
    EXPECT_EQ(a.delivered[i].args, args);
  }
  EXPECT_TRUE(a.delivered[1].payload == small);
  EXPECT_TRUE(a.delivered[2].payload == big);
  EXPECT_EQ(a.delivered[3].payload_address, segment.data());
  EXPECT_TRUE(a.delivered[3].payload == big);
  // ... then the replies, in the order of their requests.
  EXPECT_EQ(a.net().Poll(), 4);
  ASSERT_EQ(a.delivered.size(), 8u);
  for (int i = 0; i < 4; ++i) {
    const Delivery& d = a.delivered[4 + i];
    EXPECT_EQ(d.channel, Channel::kReply);
    EXPECT_FALSE(d.can_reply);
    EXPECT_EQ(d.category, a.delivered[i].category);
    EXPECT_EQ(d.handler, i + 11);
    EXPECT_EQ(d.source, kJobRankBase);
    EXPECT_EQ(d.args, (std::vector<uint32_t>{static_cast<uint32_t>(i + 1)}));
  }
  EXPECT_TRUE(a.delivered[5].payload == small);
  EXPECT_TRUE(a.delivered[6].payload == big);
  EXPECT_EQ(a.delivered[7].payload_address, reply_segment.data());
  EXPECT_TRUE(a.delivered[7].payload == big);
  EXPECT_EQ(a.net().Poll(), 0);
}

TEST(AmNetworkTest, RequestsAndRepliesTravelOnTheirOwnChannels) {
  Supernode node(2, Config(4));
  Endpoint a(node, 0), b(node, 1);
  auto short_reply = [](uint8_t handler, uint32_t tag) -> ReplyFn {
    return [handler, tag](AmNetwork& net, ReplyTo& to) {
      return ReplyShort(net, to, handler, {tag}, true);
    };
  };
  // A request for b, and a reply for b (to b's carrier request).
  ASSERT_EQ(SendShort(a, 1, 1, {1}, true), SendStatus::kOk);
  ASSERT_EQ(ReplyVia(a, b, short_reply(2, 2)), SendStatus::kOk);
  // PollReplies takes the reply only, PollRequests the request only.
  EXPECT_EQ(b.net().PollReplies(), 1);
  ASSERT_EQ(b.delivered.size(), 1u);
  EXPECT_EQ(b.delivered[0].channel, Channel::kReply);
  EXPECT_EQ(b.delivered[0].handler, 2);
  EXPECT_EQ(b.net().PollReplies(), 0);
  EXPECT_EQ(b.net().PollRequests(), 1);
  ASSERT_EQ(b.delivered.size(), 2u);
  EXPECT_EQ(b.delivered[1].channel, Channel::kRequest);
  EXPECT_EQ(b.delivered[1].handler, 1);
  EXPECT_EQ(b.net().PollRequests(), 0);
  EXPECT_EQ(b.net().Poll(), 0);

  // Poll delivers requests before replies, whatever the sending order.
  b.delivered.clear();
  ASSERT_EQ(SendShort(a, 1, 3, {3}, true), SendStatus::kOk);
  ASSERT_EQ(ReplyVia(a, b,
                     [](AmNetwork& net, ReplyTo& to) {
                       return ReplyMedium(net, to, 4, {4}, MakePayload(500, 4),
                                          true);
                     }),
            SendStatus::kOk);
  EXPECT_EQ(b.net().Poll(), 2);
  ASSERT_EQ(b.delivered.size(), 2u);
  EXPECT_EQ(b.delivered[0].channel, Channel::kRequest);
  EXPECT_EQ(b.delivered[0].handler, 3);
  EXPECT_EQ(b.delivered[1].channel, Channel::kReply);
  EXPECT_EQ(b.delivered[1].handler, 4);
  EXPECT_TRUE(b.delivered[1].payload == MakePayload(500, 4));

  // A's full request queue to b does not stop a's reply to b (it goes in
  // b's request's slot).
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(SendShort(a, 1, 5, {5}, true), SendStatus::kOk);
  }
  EXPECT_EQ(SendShort(a, 1, 5, {5}, true), SendStatus::kWouldBlock);
  EXPECT_EQ(ReplyVia(a, b, short_reply(6, 6)), SendStatus::kOk);
  b.delivered.clear();
  EXPECT_EQ(b.net().Poll(), 5);
  ASSERT_EQ(b.delivered.size(), 5u);
  EXPECT_EQ(b.delivered[4].channel, Channel::kReply);
  EXPECT_EQ(b.delivered[4].handler, 6);
  EXPECT_EQ(a.net().waits(), 0u);
}

TEST(AmNetworkTest, SourcesAreKeptApartAndInOrder) {
  Supernode node(3, Config(8));
  Endpoint a(node, 0), b(node, 1), c(node, 2);
  // a answers each request with its arguments.
  a.on_request = [&](const Message& m) {
    EXPECT_EQ(ReplyShort(a.net(), *m.reply, 3, {m.args[0], m.args[1]}, true),
              SendStatus::kOk);
  };
  for (uint32_t i = 0; i < 8; ++i) {
    ASSERT_EQ(SendShort(b, 0, 1, {1, i}, true), SendStatus::kOk);
    ASSERT_EQ(SendMedium(c, 0, 2, {2, i}, MakePayload(100 + i, i), true),
              SendStatus::kOk);
  }
  EXPECT_EQ(a.net().Poll(), 16);
  uint32_t next[3] = {0, 0, 0};
  for (const Delivery& d : a.delivered) {
    ASSERT_TRUE(d.source_index == 1 || d.source_index == 2);
    EXPECT_EQ(d.source, kJobRankBase + d.source_index);
    EXPECT_EQ(d.args[0], d.source_index);
    EXPECT_EQ(d.args[1], next[d.source_index]++);
    if (d.source_index == 2) {
      EXPECT_TRUE(d.payload == MakePayload(100 + d.args[1], d.args[1]));
    }
  }
  EXPECT_EQ(next[1], 8u);
  EXPECT_EQ(next[2], 8u);
  // Each sender gets its own replies, in order.
  for (Endpoint* e : {&b, &c}) {
    EXPECT_EQ(e->net().Poll(), 8);
    ASSERT_EQ(e->delivered.size(), 8u);
    for (uint32_t i = 0; i < 8; ++i) {
      const Delivery& d = e->delivered[i];
      EXPECT_EQ(d.channel, Channel::kReply);
      EXPECT_EQ(d.source_index, 0u);
      EXPECT_EQ(d.args, (std::vector<uint32_t>{e->index(), i}));
    }
  }
}

// Each region describes itself: a sender uses the receiver's depth, and
// its own pool size.
TEST(AmNetworkTest, SendersUseTheReceiversDepth) {
  Supernode node({MinMemory(2), Config(5)});
  Endpoint a(node, 0), b(node, 1);
  int sent = 0;
  while (SendShort(b, 0, 1, {1}, true) == SendStatus::kOk) {
    ASSERT_LT(++sent, 100);
  }
  EXPECT_EQ(sent, 2);
  sent = 0;
  while (SendShort(a, 1, 1, {1}, true) == SendStatus::kOk) {
    ASSERT_LT(++sent, 100);
  }
  EXPECT_EQ(sent, 5);
  EXPECT_EQ(a.net().Poll(), 2);
  EXPECT_EQ(b.net().Poll(), 5);

  // a's pool (the minimum) holds one 40000-byte body; b's holds several.
  const std::vector<unsigned char> big = MakePayload(40000, 1);
  EXPECT_EQ(SendMedium(a, 1, 1, {}, big, true), SendStatus::kOk);
  EXPECT_EQ(SendMedium(a, 1, 1, {}, big, true), SendStatus::kWouldBlock);
  EXPECT_EQ(SendMedium(b, 0, 1, {}, big, true), SendStatus::kOk);
  EXPECT_EQ(SendMedium(b, 0, 1, {}, big, true), SendStatus::kOk);
  EXPECT_EQ(b.net().Poll(), 1);
  EXPECT_EQ(a.net().Poll(), 2);
  for (const Endpoint* e : {&a, &b}) {
    for (const Delivery& d : e->delivered) {
      if (d.category == Category::kMedium) {
        EXPECT_TRUE(d.payload == big);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Flow control, immediate, cancel.

TEST(AmNetworkTest, ImmediateWouldBlockWhenTheQueueIsFull) {
  for (uint32_t depth : {1u, 2u, 3u, 8u}) {
    SCOPED_TRACE(absl::StrFormat("depth %u", depth));
    Supernode node(2, Config(depth));
    Endpoint a(node, 0), b(node, 1);
    uint32_t sent = 0;
    for (int round = 0; round < 3; ++round) {
      for (uint32_t i = 0; i < depth; ++i) {
        // Alternate inline and chunked bodies.
        if (i % 2 == 0) {
          ASSERT_EQ(SendShort(a, 1, 1, {sent++}, true), SendStatus::kOk);
        } else {
          ASSERT_EQ(SendMedium(a, 1, 1, {sent}, MakePayload(1000, sent), true),
                    SendStatus::kOk);
          ++sent;
        }
      }
      // Full: every kind of message waits, many times over.
      for (int i = 0; i < 50; ++i) {
        EXPECT_EQ(SendShort(a, 1, 1, {999}, true), SendStatus::kWouldBlock);
        EXPECT_EQ(SendMedium(a, 1, 1, {999}, MakePayload(3000, 999), true),
                  SendStatus::kWouldBlock);
        Reservation r;
        EXPECT_EQ(a.net().ReserveRequest(1, Category::kMedium, 1, kMaxMedium,
                                         true, &r),
                  SendStatus::kWouldBlock);
      }
      EXPECT_EQ(a.net().waits(), 0u) << "immediate sends must not wait";
      EXPECT_EQ(b.net().Poll(), static_cast<int>(depth));
      EXPECT_EQ(b.net().Poll(), 0);
    }
    // Nothing lost, duplicated or reordered; refused messages never came.
    ASSERT_EQ(b.delivered.size(), sent);
    for (uint32_t i = 0; i < sent; ++i) {
      EXPECT_EQ(b.delivered[i].args[0], i);
      if (b.delivered[i].category == Category::kMedium) {
        EXPECT_TRUE(b.delivered[i].payload == MakePayload(1000, i));
      }
    }
    // The refused chunked sends gave their chunks back: the (1 MiB) pool
    // still takes full-size messages up to the queue depth.
    for (uint32_t i = 0; i < depth; ++i) {
      EXPECT_EQ(SendMedium(a, 1, 1, MakeArgs(16, i), MakePayload(kMaxMedium, i),
                           true),
                SendStatus::kOk);
    }
    EXPECT_EQ(b.net().Poll(), static_cast<int>(depth));
    EXPECT_TRUE(ReplyTags(a.delivered).empty());
  }
}

TEST(AmNetworkTest, ImmediateWouldBlockWhenThePoolIsFull) {
  Supernode node(2, MinMemory(64));
  Endpoint a(node, 0), b(node, 1);
  const size_t size = 20000;
  const size_t chunk =
      layout::ChunkBytes(layout::BodyBytes(Category::kMedium, 1, size));
  const size_t fit = MinQueueMemory() / chunk;
  ASSERT_GE(fit, 2u);
  ASSERT_LT(fit, 64u);  // The pool, not the queue, is what runs out.
  uint32_t sent = 0;
  for (int round = 0; round < 4; ++round) {
    uint32_t this_round = 0;
    while (SendMedium(a, 1, 1, {sent}, MakePayload(size, sent), true) ==
           SendStatus::kOk) {
      ++sent;
      ASSERT_LE(++this_round, 64u);
    }
    EXPECT_EQ(this_round, fit);
    // An inline message needs no chunk and still goes; so does a reply
    // (its own pool).
    EXPECT_EQ(SendShort(a, 1, 2, {sent}, true), SendStatus::kOk);
    ++sent;
    EXPECT_EQ(ReplyVia(a, b,
                       [&](AmNetwork& net, ReplyTo& to) {
                         return ReplyMedium(net, to, 3, {0},
                                            MakePayload(size, 12345), true);
                       }),
              SendStatus::kOk);
    EXPECT_EQ(a.net().waits(), 0u);
    EXPECT_EQ(b.net().Poll(), static_cast<int>(this_round) + 2);
  }
  uint32_t next = 0;
  int replies = 0;
  for (const Delivery& d : b.delivered) {
    if (d.channel == Channel::kReply) {
      EXPECT_TRUE(d.payload == MakePayload(size, 12345));
      ++replies;
      continue;
    }
    EXPECT_EQ(d.args[0], next);
    if (d.handler == 1) {
      EXPECT_TRUE(d.payload == MakePayload(size, next));
    }
    ++next;
  }
  EXPECT_EQ(next, sent);
  EXPECT_EQ(replies, 4);
}

// A blocking send that finds no room polls this rank's own queues while it
// waits: here the only way to make room (loopback).
TEST(AmNetworkTest, BlockingSendPollsWhileWaiting) {
  {
    // The queue: a slot is freed once its request has been run.
    Supernode node(1, MinMemory(1));
    Endpoint a(node, 0);
    ASSERT_EQ(SendShort(a, 0, 1, {0}, false), SendStatus::kOk);
    EXPECT_TRUE(a.delivered.empty());
    ASSERT_EQ(SendShort(a, 0, 1, {1}, false), SendStatus::kOk);
    // The first was delivered while the second waited.
    ASSERT_EQ(a.delivered.size(), 1u);
    EXPECT_EQ(a.delivered[0].args[0], 0u);
    EXPECT_GT(a.net().waits(), 0u);
    EXPECT_EQ(a.net().Poll(), 1);
    ASSERT_EQ(a.delivered.size(), 2u);
    EXPECT_EQ(a.delivered[1].args[0], 1u);
  }
  {
    // The request pool: the minimum holds one full-size message.
    Supernode node(1, MinMemory(4));
    Endpoint a(node, 0);
    const std::vector<uint32_t> args = MakeArgs(16, 5);
    for (uint32_t i = 0; i < 3; ++i) {
      std::vector<uint32_t> tagged = args;
      tagged[0] = i;
      ASSERT_EQ(SendMedium(a, 0, 2, tagged, MakePayload(kMaxMedium, i), false),
                SendStatus::kOk);
    }
    EXPECT_GT(a.net().waits(), 0u);
    EXPECT_EQ(a.delivered.size(), 2u);  // Each wait ran the one before.
    a.net().Poll();
    ASSERT_EQ(a.delivered.size(), 3u);
    for (uint32_t i = 0; i < 3; ++i) {
      EXPECT_EQ(a.delivered[i].args[0], i);
      EXPECT_TRUE(a.delivered[i].payload == MakePayload(kMaxMedium, i));
    }
  }
  {
    // The reply pool: each handler's full-size reply waits for the one
    // before it to be run, and runs it while it waits.
    Supernode node(1, MinMemory(4));
    Endpoint a(node, 0);
    a.on_request = [&](const Message& m) {
      std::vector<uint32_t> tagged = MakeArgs(16, 6);
      tagged[0] = m.args[0];
      EXPECT_EQ(ReplyMedium(a.net(), *m.reply, 3, tagged,
                            MakePayload(kMaxMedium, m.args[0]), false),
                SendStatus::kOk);
    };
    for (uint32_t i = 0; i < 3; ++i) {
      ASSERT_EQ(SendShort(a, 0, 1, {i}, true), SendStatus::kOk);
    }
    EXPECT_EQ(a.net().waits(), 0u);
    // (Counting the three requests; not the replies their waits ran.)
    EXPECT_EQ(a.net().PollRequests(), 3);
    EXPECT_GT(a.net().waits(), 0u);
    // Request 1's reply ran reply 0 while it waited; request 2's, reply 1.
    std::vector<std::pair<Channel, uint32_t>> order;
    for (const Delivery& d : a.delivered)
      order.emplace_back(d.channel, d.args[0]);
    using P = std::pair<Channel, uint32_t>;
    EXPECT_EQ(order, (std::vector<P>{{Channel::kRequest, 0},
                                     {Channel::kRequest, 1},
                                     {Channel::kReply, 0},
                                     {Channel::kRequest, 2},
                                     {Channel::kReply, 1}}));
    EXPECT_EQ(a.net().Poll(), 1);
    EXPECT_EQ(ReplyTags(a.delivered), (std::vector<uint32_t>{0, 1, 2}));
    for (const Delivery& d : a.delivered) {
      if (d.channel == Channel::kReply) {
        EXPECT_TRUE(d.payload == MakePayload(kMaxMedium, d.args[0]));
      }
    }
  }
}

TEST(AmNetworkTest, CancelDeliversNothingAndFreesTheChunk) {
  // The minimum pool holds exactly one full-size body, so a chunk that a
  // Cancel did not free would stop the next Reserve.
  Supernode node(2, MinMemory(4));
  Endpoint a(node, 0), b(node, 1);
  for (uint32_t dest : {1u, 0u}) {
    Endpoint& to = dest == 0 ? a : b;
    for (int i = 0; i < 200; ++i) {
      Reservation r;
      ASSERT_EQ(a.net().ReserveRequest(dest, Category::kMedium, kMaxArgs,
                                       kMaxMedium, /*immediate=*/true, &r),
                SendStatus::kOk)
          << "after " << i << " cancels";
      ASSERT_NE(r.chunk_offset, 0u);
      std::memset(r.payload, 0xEE, kMaxMedium);
      a.net().Cancel(r);
      ASSERT_EQ(to.net().Poll(), 0);  // Takes the slot, delivers nothing.
    }
    EXPECT_TRUE(to.delivered.empty());
    const std::vector<uint32_t> args = MakeArgs(kMaxArgs, 77);
    const std::vector<unsigned char> payload = MakePayload(kMaxMedium, 77);
    ASSERT_EQ(SendMedium(a, dest, 5, args, payload, true), SendStatus::kOk);
    ASSERT_EQ(to.net().Poll(), 1);
    ASSERT_EQ(to.delivered.size(), 1u);
    EXPECT_EQ(to.delivered[0].args, args);
    EXPECT_TRUE(to.delivered[0].payload == payload);
  }

  // A cancelled slot occupies the queue until the receiver skips it.
  b.delivered.clear();
  for (int i = 0; i < 4; ++i) {
    Reservation r;
    ASSERT_EQ(a.net().ReserveRequest(1, Category::kShort, 0, 0, true, &r),
              SendStatus::kOk);
    a.net().Cancel(r);
  }
  Reservation r;
  EXPECT_EQ(a.net().ReserveRequest(1, Category::kShort, 0, 0, true, &r),
            SendStatus::kWouldBlock);
  EXPECT_EQ(b.net().Poll(), 0);
  ASSERT_EQ(a.net().ReserveRequest(1, Category::kShort, 0, 0, true, &r),
            SendStatus::kOk);
  a.net().Cancel(r);

  // Cancels between commits keep the others in order.
  for (uint32_t i = 0; i < 3; ++i) {
    ASSERT_EQ(a.net().ReserveRequest(1, Category::kMedium, 1, 100, true, &r),
              SendStatus::kOk);
    const std::vector<unsigned char> bytes = MakePayload(100, i);
    std::memcpy(r.payload, bytes.data(), 100);
    if (i == 1) {
      a.net().Cancel(r);
    } else {
      a.net().Commit(r, 6, &i, 100, 0);
    }
  }
  EXPECT_EQ(b.net().Poll(), 2);
  ASSERT_EQ(b.delivered.size(), 2u);
  EXPECT_EQ(b.delivered[0].args[0], 0u);
  EXPECT_EQ(b.delivered[1].args[0], 2u);
  EXPECT_TRUE(b.delivered[1].payload == MakePayload(100, 2));
  EXPECT_TRUE(ReplyTags(a.delivered).empty());
}

// A reply reserved and cancelled was not sent: its chunk is free, the
// handler may still reply, and the requester gets exactly that reply. A
// handler that cancels and sends nothing leaves a request without reply.
TEST(AmNetworkTest, CancelledReplyLeavesRoomForTheReply) {
  // The minimum reply pool holds one full-size body.
  Supernode node(2, MinMemory(4));
  Endpoint a(node, 0), b(node, 1);
  const std::vector<uint32_t> args = MakeArgs(kMaxArgs, 5);
  const std::vector<unsigned char> payload = MakePayload(kMaxMedium, 5);
  b.on_request = [&](const Message& m) {
    for (int i = 0; i < 3; ++i) {
      Reservation r;
      if (b.net().ReserveReply(*m.reply, Category::kMedium, kMaxArgs,
                               kMaxMedium, /*immediate=*/true,
                               &r) != SendStatus::kOk) {
        ADD_FAILURE() << "the cancelled reply's chunk was not freed";
        return;
      }
      EXPECT_NE(r.chunk_offset, 0u);
      EXPECT_EQ(r.reply_to, m.reply);
      std::memset(r.payload, 0xEE, kMaxMedium);
      b.net().Cancel(r);
    }
    Reservation r;
    ASSERT_EQ(b.net().ReserveReply(*m.reply, Category::kShort, 2, 0, true, &r),
              SendStatus::kOk);
    b.net().Cancel(r);
    EXPECT_EQ(ReplyMedium(b.net(), *m.reply, 7, args, payload, true),
              SendStatus::kOk);
  };
  ASSERT_EQ(SendShort(a, 1, 1, {1}, true), SendStatus::kOk);
  EXPECT_EQ(b.net().Poll(), 1);
  EXPECT_EQ(a.net().Poll(), 1);
  ASSERT_EQ(a.delivered.size(), 1u);
  EXPECT_EQ(a.delivered[0].channel, Channel::kReply);
  EXPECT_EQ(a.delivered[0].handler, 7);
  EXPECT_EQ(a.delivered[0].args, args);
  EXPECT_TRUE(a.delivered[0].payload == payload);
  EXPECT_EQ(a.net().Poll(), 0);

  // Cancelled and nothing more: no reply, and the slot comes back.
  b.on_request = [&](const Message& m) {
    Reservation r;
    ASSERT_EQ(
        b.net().ReserveReply(*m.reply, Category::kMedium, 1, 100, true, &r),
        SendStatus::kOk);
    b.net().Cancel(r);
  };
  ASSERT_EQ(SendShort(a, 1, 1, {2}, true), SendStatus::kOk);
  EXPECT_EQ(b.net().Poll(), 1);
  EXPECT_EQ(a.net().Poll(), 0);
  EXPECT_EQ(a.delivered.size(), 1u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(SendShort(a, 1, 1, {3}, true), SendStatus::kOk);
  }
  EXPECT_EQ(SendShort(a, 1, 1, {3}, true), SendStatus::kWouldBlock);
}

// ---------------------------------------------------------------------------
// A request's slot carries its reply.

// The reply is written into the request's own slot, and the slot stays
// taken until the requester has run the reply: `depth` requests answered
// by the receiver leave no room for another until the requester polls.
TEST(AmNetworkTest, ARequestAndItsReplyShareOneSlot) {
  for (uint32_t depth : {1u, 2u, 3u, 8u}) {
    for (uint32_t dest : {1u, 0u}) {
      SCOPED_TRACE(absl::StrFormat("depth %u dest %u", depth, dest));
      Supernode node(2, Config(depth));
      Endpoint a(node, 0), b(node, 1);
      Endpoint& to = dest == 0 ? a : b;
      std::vector<const layout::Slot*> request_slots, reply_slots;
      to.on_request = [&](const Message& m) {
        Reservation r;
        if (to.net().ReserveReply(*m.reply, Category::kShort, 1, 0, true, &r) !=
            SendStatus::kOk) {
          ADD_FAILURE() << "a reply does not wait for a slot";
          return;
        }
        EXPECT_EQ(r.slot, m.reply->slot);
        EXPECT_EQ(r.reply_to, m.reply);
        EXPECT_EQ(r.dest, 0u);  // The requester.
        EXPECT_EQ(r.chunk_offset, 0u);
        reply_slots.push_back(r.slot);
        to.net().Commit(r, 2, m.args, 0, 0);
      };
      uint32_t tag = 0;
      for (int round = 0; round < 3; ++round) {
        for (uint32_t i = 0; i < depth; ++i) {
          Reservation r;
          ASSERT_EQ(
              a.net().ReserveRequest(dest, Category::kShort, 1, 0, true, &r),
              SendStatus::kOk);
          request_slots.push_back(r.slot);
          a.net().Commit(r, 1, &tag, 0, 0);
          ++tag;
        }
        EXPECT_EQ(SendShort(a, dest, 1, {999}, true), SendStatus::kWouldBlock);
        // The receiver runs them all and replies to each...
        EXPECT_EQ(to.net().PollRequests(), static_cast<int>(depth));
        EXPECT_EQ(reply_slots, request_slots);
        // ... and still no slot is free: each holds a reply.
        EXPECT_EQ(SendShort(a, dest, 1, {999}, true), SendStatus::kWouldBlock);
        Reservation r;
        EXPECT_EQ(
            a.net().ReserveRequest(dest, Category::kMedium, 1, 1000, true, &r),
            SendStatus::kWouldBlock);
        // Running the replies frees them all.
        EXPECT_EQ(a.net().PollReplies(), static_cast<int>(depth));
      }
      EXPECT_EQ(a.net().waits(), 0u);
      std::vector<uint32_t> want(3 * depth);
      for (uint32_t i = 0; i < want.size(); ++i) want[i] = i;
      EXPECT_EQ(ReplyTags(a.delivered), want);
    }
  }
}

// Round trips one after another (each request sent once the last one's
// reply has run) keep to one slot, so that they move one cache line back
// and forth; requests sent while others are unfinished still go round the
// ring, and every message is delivered once and in order either way.
TEST(AmNetworkTest, BackToBackRoundTripsReuseTheLastSlot) {
  for (int modes = 0; modes < 4; ++modes) {
    const bool sender_thread_safe = (modes & 1) != 0;
    const bool receiver_thread_safe = (modes & 2) != 0;
    for (uint32_t depth : {1u, 2u, 3u, 8u}) {
      for (uint32_t dest : {1u, 0u}) {
        SCOPED_TRACE(absl::StrFormat(
            "thread_safe sender %d receiver %d depth %u dest %u",
            sender_thread_safe, receiver_thread_safe, depth, dest));
        Supernode node(2, Config(depth));
        Endpoint a(node, 0, sender_thread_safe),
            b(node, 1, receiver_thread_safe);
        Endpoint& to = dest == 0 ? a : b;
        to.on_request = [&](const Message& m) {
          EXPECT_EQ(ReplyShort(to.net(), *m.reply, 2, {m.args[0]}, true),
                    SendStatus::kOk);
        };
        uint32_t tag = 0;
        auto reserve = [&](const layout::Slot** slot) {
          Reservation r;
          ASSERT_EQ(
              a.net().ReserveRequest(dest, Category::kShort, 1, 0, true, &r),
              SendStatus::kOk);
          *slot = r.slot;
          a.net().Commit(r, 1, &tag, 0, 0);
          ++tag;
        };
        auto round_trip = [&](const layout::Slot** slot) {
          reserve(slot);
          // The request's handler, then its reply (to a itself or not).
          EXPECT_EQ(to.net().PollRequests(), 1);
          EXPECT_EQ(a.net().PollReplies(), 1);
        };
        const layout::Slot* first = nullptr;
        round_trip(&first);
        for (int i = 0; i < 20; ++i) {
          const layout::Slot* slot = nullptr;
          round_trip(&slot);
          EXPECT_EQ(slot, first) << "round trip " << i;
        }
        // A flood: the ring's slots in turn from the last one used, as
        // many as the depth allows.
        std::vector<const layout::Slot*> flood(depth);
        for (uint32_t i = 0; i < depth; ++i) reserve(&flood[i]);
        EXPECT_EQ(SendShort(a, dest, 1, {999}, true), SendStatus::kWouldBlock);
        for (uint32_t i = 1; i < depth; ++i) {
          EXPECT_NE(flood[i], flood[i - 1]);
        }
        EXPECT_EQ(flood[0], first);
        EXPECT_EQ(to.net().PollRequests(), static_cast<int>(depth));
        EXPECT_EQ(a.net().PollReplies(), static_cast<int>(depth));
        // Drained again: back to the flood's last slot.
        const layout::Slot* after = nullptr;
        round_trip(&after);
        EXPECT_EQ(after, flood[depth - 1]);
        round_trip(&after);
        EXPECT_EQ(after, flood[depth - 1]);

        std::vector<uint32_t> want(tag);
        for (uint32_t i = 0; i < tag; ++i) want[i] = i;
        EXPECT_EQ(ReplyTags(a.delivered), want);
        std::vector<uint32_t> requests;
        for (const Delivery& d : to.delivered) {
          if (d.channel == Channel::kRequest) requests.push_back(d.args[0]);
        }
        EXPECT_EQ(requests, want);
        EXPECT_EQ(a.net().waits(), 0u);
      }
    }
  }
}

// A request whose handler sends no reply gives its slot back without the
// requester running anything: the next send finds it finished.
TEST(AmNetworkTest, ARequestWithoutAReplyFreesItsSlotWithoutRequesterPolling) {
  for (bool thread_safe : {false, true}) {
    for (uint32_t depth : {1u, 3u}) {
      SCOPED_TRACE(
          absl::StrFormat("thread_safe %d depth %u", thread_safe, depth));
      Supernode node(2, Config(depth));
      Endpoint a(node, 0, thread_safe), b(node, 1, thread_safe);
      uint32_t sent = 0;
      for (int round = 0; round < 4; ++round) {
        for (uint32_t i = 0; i < depth; ++i) {
          const SendStatus s =
              (sent % 2 == 0)
                  ? SendShort(a, 1, 1, {sent}, true)
                  : SendMedium(a, 1, 1, {sent}, MakePayload(500, sent), true);
          ASSERT_EQ(s, SendStatus::kOk) << "round " << round << " i " << i;
          ++sent;
        }
        EXPECT_EQ(SendShort(a, 1, 1, {999}, true), SendStatus::kWouldBlock);
        EXPECT_EQ(b.net().Poll(), static_cast<int>(depth));
      }
      EXPECT_EQ(a.net().waits(), 0u);
      EXPECT_TRUE(a.delivered.empty());
      ASSERT_EQ(b.delivered.size(), sent);
      for (uint32_t i = 0; i < sent; ++i) {
        EXPECT_EQ(b.delivered[i].args[0], i);
      }
      // And a later Poll of the requester finds nothing to run.
      EXPECT_EQ(a.net().Poll(), 0);
    }
  }
}

// A single-threaded receiver says which requests it has finished a quarter
// of the ring at a time and at the end of each pass over its queue, not
// after every request: a sender waiting for slots reads that line, and a
// store per request would take the line back from the sender every time.
// So a full sender gets nothing back while the first quarter of a pass
// runs, then a quarter at a time.
TEST(AmNetworkTest, AReceiverGivesSlotsBackAQuarterRingAtATime) {
  for (uint32_t depth : {8u, 5u, 1u}) {
    SCOPED_TRACE(absl::StrFormat("depth %u", depth));
    const uint32_t quarter = (depth + 3) / 4;
    Supernode node(2, Config(depth));
    Endpoint a(node, 0), b(node, 1);
    ASSERT_NO_FATAL_FAILURE(StartInTheRing(a, b));
    std::vector<SendStatus> during;  // `a`'s send from each handler
    b.on_request = [&](const Message& m) {
      if (m.args[0] < depth) {
        during.push_back(SendShort(a, 1, 1, {100 + m.args[0]}, true));
      }
    };
    for (uint32_t i = 0; i < depth; ++i) {
      ASSERT_EQ(SendShort(a, 1, 1, {i}, true), SendStatus::kOk);
    }
    ASSERT_EQ(SendShort(a, 1, 1, {99}, true), SendStatus::kWouldBlock);
    EXPECT_EQ(b.net().Poll(), static_cast<int>(depth));
    ASSERT_EQ(during.size(), depth);
    for (uint32_t i = 0; i < depth; ++i) {
      EXPECT_EQ(during[i],
                i < quarter ? SendStatus::kWouldBlock : SendStatus::kOk)
          << "handler " << i;
    }
    // The requests sent from the handlers, in order; the pass that ran
    // them said so at its end, so every slot is free again.
    EXPECT_EQ(b.net().Poll(), static_cast<int>(depth - quarter));
    for (uint32_t i = 0; i < depth; ++i) {
      EXPECT_EQ(SendShort(a, 1, 1, {200 + i}, true), SendStatus::kOk);
    }
    EXPECT_EQ(a.net().waits(), 0u);
    ASSERT_EQ(b.delivered.size(), 1 + 2 * depth - quarter);
    for (uint32_t i = 0; i < depth; ++i) {
      EXPECT_EQ(b.delivered[1 + i].args[0], i);
    }
    for (uint32_t i = depth; i < 2 * depth - quarter; ++i) {
      EXPECT_EQ(b.delivered[1 + i].args[0], 100 + quarter + (i - depth));
    }
  }
}

// Replies run in the order of their requests (SEQ), and a request without
// a reply between two with replies holds up neither.
TEST(AmNetworkTest, RepliesRunInRequestOrder) {
  {
    Supernode node(2, Config(8));
    Endpoint a(node, 0), b(node, 1);
    b.on_request = [&](const Message& m) {
      const uint32_t tag = m.args[0];
      SendStatus s;
      switch (tag % 3) {
        case 0:
          s = ReplyShort(b.net(), *m.reply, 2, {tag}, true);
          break;
        case 1:
          s = ReplyMedium(b.net(), *m.reply, 2, {tag}, MakePayload(20, tag),
                          true);
          break;
        default:
          s = ReplyMedium(b.net(), *m.reply, 2, {tag}, MakePayload(3000, tag),
                          true);
          break;
      }
      EXPECT_EQ(s, SendStatus::kOk);
    };
    for (uint32_t tag = 0; tag < 6; ++tag) {
      ASSERT_EQ(SendShort(a, 1, 1, {tag}, true), SendStatus::kOk);
    }
    EXPECT_EQ(b.net().Poll(), 6);
    EXPECT_EQ(a.net().Poll(), 6);
    EXPECT_EQ(ReplyTags(a.delivered),
              (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
    for (const Delivery& d : a.delivered) {
      if (d.category == Category::kMedium) {
        EXPECT_TRUE(PayloadMatches(d.payload.data(), d.payload_len, d.args[0]));
      }
    }
  }
  // Which requests get a reply (1) and which do not (0).
  const std::vector<std::vector<int>> patterns = {
      {1, 0, 1}, {0, 1}, {1, 0}, {0, 0, 1}, {1, 0, 0, 1}, {0, 1, 0, 1, 0}};
  for (bool thread_safe : {false, true}) {
    for (const std::vector<int>& pattern : patterns) {
      SCOPED_TRACE(absl::StrFormat("thread_safe %d pattern %s", thread_safe,
                                   testing::PrintToString(pattern)));
      constexpr uint32_t kDepth = 8;
      Supernode node(2, Config(kDepth));
      Endpoint a(node, 0, thread_safe), b(node, 1, thread_safe);
      b.on_request = [&](const Message& m) {
        if (m.args[1] != 0) {
          EXPECT_EQ(ReplyShort(b.net(), *m.reply, 2, {m.args[0]}, true),
                    SendStatus::kOk);
        }
      };
      std::vector<uint32_t> want;
      for (uint32_t tag = 0; tag < pattern.size(); ++tag) {
        ASSERT_EQ(SendShort(a, 1, 1, {tag, static_cast<uint32_t>(pattern[tag])},
                            true),
                  SendStatus::kOk);
        if (pattern[tag] != 0) want.push_back(tag);
      }
      EXPECT_EQ(b.net().Poll(), static_cast<int>(pattern.size()));
      // One ordinary poll runs every reply, past the requests without one.
      EXPECT_EQ(a.net().Poll(), static_cast<int>(want.size()));
      EXPECT_EQ(ReplyTags(a.delivered), want);
      EXPECT_EQ(a.net().Poll(), 0);
      // Every slot is free again.
      for (uint32_t i = 0; i < kDepth; ++i) {
        EXPECT_EQ(SendShort(a, 1, 1, {100 + i, 0}, true), SendStatus::kOk);
      }
      EXPECT_EQ(SendShort(a, 1, 1, {999, 0}, true), SendStatus::kWouldBlock);
    }
  }
}

// A single-threaded receiver's count also says where its replies are, so a
// requester frees the slots of finished requests from there on without
// reading them; before it, a slot is read, and one holding a reply stays
// taken until the reply has run (only a poll runs replies).
TEST(AmNetworkTest, ARepliedRequestKeepsItsSlotUntilItsReplyRuns) {
  constexpr uint32_t kDepth = 8;
  for (uint32_t replied : {0u, 3u, 7u}) {
    SCOPED_TRACE(absl::StrFormat("reply to request %u", replied));
    Supernode node(2, Config(kDepth));
    Endpoint a(node, 0), b(node, 1);
    ASSERT_NO_FATAL_FAILURE(StartInTheRing(a, b));
    b.on_request = [&](const Message& m) {
      if (m.args[0] == replied) {
        EXPECT_EQ(ReplyShort(b.net(), *m.reply, 2, {m.args[0]}, true),
                  SendStatus::kOk);
      }
    };
    for (uint32_t i = 0; i < kDepth; ++i) {
      ASSERT_EQ(SendShort(a, 1, 1, {i}, true), SendStatus::kOk);
    }
    ASSERT_EQ(b.net().Poll(), static_cast<int>(kDepth));
    b.on_request = nullptr;
    // Without polling, the requester gets back the slots before the reply.
    for (uint32_t i = 0; i < replied; ++i) {
      ASSERT_EQ(SendShort(a, 1, 1, {100 + i}, true), SendStatus::kOk) << i;
    }
    EXPECT_EQ(SendShort(a, 1, 1, {199}, true), SendStatus::kWouldBlock);
    EXPECT_TRUE(a.delivered.empty());
    // The reply runs in a poll; then the rest come back too.
    EXPECT_EQ(a.net().Poll(), 1);
    EXPECT_EQ(ReplyTags(a.delivered), std::vector<uint32_t>{replied});
    for (uint32_t i = replied; i < kDepth; ++i) {
      ASSERT_EQ(SendShort(a, 1, 1, {100 + i}, true), SendStatus::kOk) << i;
    }
    EXPECT_EQ(SendShort(a, 1, 1, {199}, true), SendStatus::kWouldBlock);
    EXPECT_EQ(b.net().Poll(), static_cast<int>(kDepth));
    EXPECT_EQ(a.net().waits(), 0u);
  }
}

// A requester waiting for a slot does not look for replies in its peer's
// slots at every round (that reads the lines the peer works through), but
// it still finds a reply that the peer's count does not show yet: here the
// peer waits inside a handler for room in its reply pool, which the
// requester's first, unrun reply holds, and publishes no count meanwhile.
TEST(AmNetworkTest, ASenderWaitingForASlotRunsRepliesTheCountDoesNotShow) {
  constexpr uint32_t kDepth = 8;         // The count goes out every 2.
  constexpr size_t kReplyBytes = 40000;  // One fills the minimum pool.
  Supernode node(2, MinMemory(kDepth));
  Endpoint a(node, 0), b(node, 1);
  ASSERT_NO_FATAL_FAILURE(StartInTheRing(a, b));
  std::atomic<uint32_t> handled{0};
  std::atomic<bool> stop{false};
  b.on_request = [&](const Message& m) {
    if (m.args[0] < 2) {
      EXPECT_EQ(ReplyMedium(b.net(), *m.reply, 2, {m.args[0]},
                            MakePayload(kReplyBytes, m.args[0]), false),
                SendStatus::kOk);
    }
    handled.fetch_add(1);
  };
  std::atomic<bool> go{false};
  std::thread receiver([&] {
    // The whole queue in one pass: the first reply's request is then
    // finished but not yet counted when the second's handler waits.
    while (!go.load()) sched_yield();
    while (!stop.load()) {
      if (b.net().Poll() == 0) sched_yield();
    }
  });
  // Requests 0 and 1 get replies; the ninth waits for a slot, and the
  // second reply for the first's room, until `a` runs the first.
  for (uint32_t i = 0; i < kDepth; ++i) {
    ASSERT_EQ(SendShort(a, 1, 1, {i}, true), SendStatus::kOk) << i;
  }
  go.store(true);
  ASSERT_EQ(SendShort(a, 1, 1, {kDepth}, false), SendStatus::kOk);
  while (handled.load() < kDepth + 1 || a.delivered.size() < 2) {
    if (a.net().Poll() == 0) sched_yield();
  }
  stop.store(true);
  receiver.join();
  EXPECT_EQ(ReplyTags(a.delivered), (std::vector<uint32_t>{0, 1}));
  for (const Delivery& d : a.delivered) {
    EXPECT_TRUE(PayloadMatches(d.payload.data(), d.payload_len, d.args[0]));
  }
  EXPECT_GT(a.net().waits(), 0u);
}

// Queue positions are 32-bit and wrap. At the largest depth every round
// trip skips a ring ahead (the last slot's reuse), so 2^16 of them bring
// the positions to the wrap in a moment; a flood with replies to some of
// its requests then straddles it. Replies run in order, none is lost, and
// the slots of requests without one come back through the count (whose
// finished and replied-to positions are compared across the wrap).
TEST(AmNetworkTest, PositionsWrapUnderAFloodWithSomeReplies) {
  constexpr uint32_t kDepth = kMaxQueueDepth;  // A ring of 2^16 slots.
  Supernode node(2, Config(kDepth));
  Endpoint a(node, 0), b(node, 1);
  // 2^16 - 2 round trips (each reply run before the next request, so each
  // request finds nothing unfinished and skips a ring ahead, to the
  // position 2^16 on): the flood's first request, the last slot's reuse
  // again, is at 2^32 - 2^16 - 1.
  b.on_request = [&](const Message& m) {
    EXPECT_EQ(ReplyShort(b.net(), *m.reply, 2, {m.args[0]}, true),
              SendStatus::kOk);
  };
  constexpr uint32_t kRoundTrips = (1u << 16) - 2;
  for (uint32_t i = 0; i < kRoundTrips; ++i) {
    ASSERT_EQ(SendShort(a, 1, 1, {i}, true), SendStatus::kOk) << i;
    ASSERT_EQ(b.net().Poll(), 1) << i;
    ASSERT_EQ(a.net().Poll(), 1) << i;
  }
  a.delivered.clear();
  b.delivered.clear();
  // Batches of 40000 across the wrap, sent without waiting, with a reply
  // to every 7th request in all but the third: when the queue is full, the
  // sender frees finished slots itself (through the count) and polls only
  // when the oldest one holds a reply.
  b.on_request = [&](const Message& m) {
    if (m.args[1] != 0) {
      EXPECT_EQ(ReplyShort(b.net(), *m.reply, 2, {m.args[0]}, true),
                SendStatus::kOk);
    }
  };
  constexpr uint32_t kBatch = 40000;
  std::vector<uint32_t> want;
  uint32_t tag = 0;
  auto send_batch = [&](bool replies) {
    int polls = 0;
    for (uint32_t i = 0; i < kBatch; ++i, ++tag) {
      const uint32_t reply = replies && tag % 7 == 0 ? 1 : 0;
      while (SendShort(a, 1, 1, {tag, reply}, true) != SendStatus::kOk) {
        if (a.net().Poll() == 0 || ++polls > 2) return -1;
      }
      if (reply != 0) want.push_back(tag);
    }
    return polls;
  };
  EXPECT_EQ(send_batch(true), 0);  // The queue holds it.
  ASSERT_EQ(b.net().Poll(), static_cast<int>(kBatch));
  // This one straddles the wrap. The queue fills, and the first slot back
  // holds a reply: one poll runs the first batch's replies.
  EXPECT_EQ(send_batch(true), 1);
  ASSERT_EQ(b.net().Poll(), static_cast<int>(kBatch));
  // The same across the wrap: the count's replied-to end is past it.
  EXPECT_EQ(send_batch(false), 1);
  ASSERT_EQ(b.net().Poll(), static_cast<int>(kBatch));
  // That batch had no replies: its slots come back through the count alone.
  EXPECT_EQ(send_batch(true), 0);
  ASSERT_EQ(b.net().Poll(), static_cast<int>(kBatch));
  while (a.net().Poll() != 0) {
  }
  ASSERT_EQ(b.delivered.size(), 4 * kBatch);
  for (uint32_t i = 0; i < 4 * kBatch; ++i) {
    ASSERT_EQ(b.delivered[i].args[0], i);
  }
  EXPECT_EQ(ReplyTags(a.delivered), want);
  EXPECT_EQ(a.net().waits(), 0u);
}

// A request handler that polls runs later requests from the same source
// inside it. Their replies are still run in request order (SEQ), none is
// lost, and every slot comes back.
TEST(AmNetworkTest, AHandlerThatPollsKeepsRepliesAndSlotsRight) {
  for (bool thread_safe : {false, true}) {
    // Bit i: request i gets a reply.
    for (uint32_t mask = 0; mask < 8; ++mask) {
      SCOPED_TRACE(
          absl::StrFormat("thread_safe %d mask %u", thread_safe, mask));
      constexpr uint32_t kDepth = 4;
      Supernode node(2, Config(kDepth));
      Endpoint a(node, 0, thread_safe), b(node, 1, thread_safe);
      int nested = -1;
      int early = -1;  // Replies a could run while request 0 was running.
      b.on_request = [&](const Message& m) {
        const uint32_t tag = m.args[0];
        if (tag == 0) {
          nested = b.net().Poll();
          early = a.net().PollReplies();
        }
        if ((mask >> tag & 1) != 0) {
          EXPECT_EQ(ReplyShort(b.net(), *m.reply, 2, {tag}, true),
                    SendStatus::kOk);
        }
      };
      for (uint32_t tag = 0; tag < 3; ++tag) {
        ASSERT_EQ(SendShort(a, 1, 1, {tag}, true), SendStatus::kOk);
      }
      b.net().Poll();
      EXPECT_EQ(nested, 2);
      ASSERT_EQ(b.delivered.size(), 3u);
      for (uint32_t tag = 0; tag < 3; ++tag) {
        EXPECT_EQ(b.delivered[tag].args[0], tag);
      }
      std::vector<uint32_t> want;
      for (uint32_t tag = 0; tag < 3; ++tag) {
        if ((mask >> tag & 1) != 0) want.push_back(tag);
      }
      if (!thread_safe) {
        // Requests 1 and 2 finished first, but their replies wait for
        // request 0's.
        EXPECT_EQ(early, 0);
      } else {
        // Thread-safe mode may run them early; each still runs once.
        EXPECT_GE(early, 0);
        EXPECT_LE(early, std::popcount(mask & 6u));
      }
      EXPECT_EQ(a.net().Poll() + early, static_cast<int>(want.size()));
      std::vector<uint32_t> got = ReplyTags(a.delivered);
      if (thread_safe) std::sort(got.begin(), got.end());
      EXPECT_EQ(got, want);
      EXPECT_EQ(a.net().Poll(), 0);
      // Every slot is free again, and works.
      b.on_request = [&](const Message& m) {
        EXPECT_EQ(ReplyShort(b.net(), *m.reply, 2, {m.args[0]}, true),
                  SendStatus::kOk);
      };
      for (uint32_t i = 0; i < kDepth; ++i) {
        EXPECT_EQ(SendShort(a, 1, 1, {10 + i}, true), SendStatus::kOk);
      }
      EXPECT_EQ(SendShort(a, 1, 1, {99}, true), SendStatus::kWouldBlock);
      EXPECT_EQ(b.net().Poll(), static_cast<int>(kDepth));
      a.delivered.clear();
      EXPECT_EQ(a.net().Poll(), static_cast<int>(kDepth));
      EXPECT_EQ(ReplyTags(a.delivered),
                (std::vector<uint32_t>{10, 11, 12, 13}));
    }
  }
}

// ---------------------------------------------------------------------------
// Payload pools.

// Whether a reserved body lies wholly inside the sender's pool for its
// channel (read from the region's layout), chunk header included.
bool BodyInPool(const Supernode& node, uint32_t sender, const Reservation& r,
                size_t max_payload) {
  const Channel channel =
      r.reply_to != nullptr ? Channel::kReply : Channel::kRequest;
  const auto [begin, end] = node.PoolBytes(sender, channel);
  const unsigned char* chunk = r.body - sizeof(layout::ChunkHeader);
  const unsigned char* body_end =
      r.body + layout::BodyBytes(r.category, r.nargs, max_payload);
  return chunk >= begin && body_end <= end;
}

// Chunks come back out of order (two receivers polled at random times, one
// of them this rank) and bodies that do not divide the pool make the
// allocator wrap around; every body must stay inside the pool and arrive
// intact, in order. Both channels (the reply pool ends the region): rank
// 0's replies answer carrier requests from the receiver.
TEST(AmNetworkTest, PoolWrapAroundKeepsContents) {
  Supernode node(3, MinMemory(8));
  std::vector<std::unique_ptr<Endpoint>> ranks;
  for (uint32_t i = 0; i < 3; ++i) {
    ranks.push_back(std::make_unique<Endpoint>(node, i));
  }
  Endpoint& sender = *ranks[0];
  const size_t sizes[] = {40000, 12345, 49, 20000, 777, 33333, 4000, 65000};
  uint32_t next_send[3][2] = {};
  uint32_t random = 12345;
  auto next_random = [&random] {
    random = random * 1103515245u + 12345u;
    return random >> 16;
  };
  int would_block = 0;
  for (int i = 0; i < 4000; ++i) {
    const uint32_t dest = next_random() % 3;
    const int c = (i / 7) % 2;
    const Channel channel = static_cast<Channel>(c);
    const uint32_t seq = next_send[dest][c]++;
    const size_t size = sizes[(seq + dest) % 8];
    const uint32_t seed = dest * 1000000 + c * 100000 + seq;
    const std::vector<uint32_t> args = {seq, static_cast<uint32_t>(size)};
    const std::vector<unsigned char> payload = MakePayload(size, seed);
    const bool reserve = i % 2 == 0;
    // Checks a reservation, fills it and commits.
    auto fill = [&](AmNetwork& net, Reservation& r) {
      EXPECT_NE(r.chunk_offset, 0u);
      EXPECT_TRUE(BodyInPool(node, 0, r, size))
          << "message " << i << " of " << size << " bytes";
      std::memcpy(r.payload, payload.data(), size);
      net.Commit(r, 1, args.data(), size, 0);
    };
    // One try; kWouldBlock when there is no room (for a reply: for the
    // carrier, or in the reply pool, when the carrier goes unanswered).
    auto attempt = [&]() -> SendStatus {
      if (channel == Channel::kRequest) {
        if (!reserve) return SendMedium(sender, dest, 1, args, payload, true);
        Reservation r;
        const SendStatus s = sender.net().ReserveRequest(
            dest, Category::kMedium, 2, size, true, &r);
        if (s == SendStatus::kOk) fill(sender.net(), r);
        return s;
      }
      SendStatus s = SendStatus::kWouldBlock;
      if (!TryReplyVia(
              sender, *ranks[dest],
              [&](AmNetwork& net, ReplyTo& to) {
                if (!reserve)
                  return ReplyMedium(net, to, 1, args, payload, true);
                Reservation r;
                const SendStatus st =
                    net.ReserveReply(to, Category::kMedium, 2, size, true, &r);
                if (st == SendStatus::kOk) fill(net, r);
                return st;
              },
              &s)) {
        return SendStatus::kWouldBlock;
      }
      return s;
    };
    int tries = 0;
    while (attempt() != SendStatus::kOk) {
      ++would_block;
      ASSERT_LT(++tries, 10) << "no progress after polling every rank";
      // Poll one receiver (maybe not the one holding the oldest chunk),
      // then all of them.
      if (tries == 1) {
        ranks[next_random() % 3]->net().Poll();
      } else {
        for (auto& rank : ranks) rank->net().Poll();
      }
    }
    if (next_random() % 3 == 0) ranks[next_random() % 3]->net().Poll();
  }
  for (auto& rank : ranks) rank->net().Poll();
  EXPECT_GT(would_block, 0);
  for (uint32_t dest = 0; dest < 3; ++dest) {
    for (int c = 0; c < 2; ++c) {
      uint32_t seq = 0;
      for (const Delivery& d : ranks[dest]->delivered) {
        if (d.channel != static_cast<Channel>(c)) continue;
        ASSERT_EQ(d.source_index, 0u);
        ASSERT_EQ(d.args[0], seq);
        ASSERT_EQ(d.payload_len, d.args[1]);
        ASSERT_TRUE(PayloadMatches(d.payload.data(), d.payload_len,
                                   dest * 1000000 + c * 100000 + seq))
            << "dest " << dest << " channel " << c << " seq " << seq;
        ++seq;
      }
      EXPECT_EQ(seq, next_send[dest][c]);
    }
  }
}

// A reservation held open while the pool wraps: the chunks after it are
// freed, the allocator goes round to the start of the pool, and the held
// chunk stays intact.
TEST(AmNetworkTest, HeldReservationSurvivesWrapAround) {
  Supernode node(2, MinMemory(8));
  Endpoint a(node, 0), b(node, 1);
  // Two chunks fit in the minimum pool, not three: the third must go round
  // to the start of the pool, where the first one was freed.
  const size_t size = 25000;  // Two chunks fit in the minimum pool.
  ASSERT_EQ(SendMedium(a, 1, 1, {0}, MakePayload(size, 0), true),
            SendStatus::kOk);
  Reservation held;
  ASSERT_EQ(a.net().ReserveRequest(1, Category::kMedium, 1, size, true, &held),
            SendStatus::kOk);
  const std::vector<unsigned char> held_bytes = MakePayload(size, 1);
  std::memcpy(held.payload, held_bytes.data(), size);
  // The first is delivered and freed; the held one blocks the queue behind
  // it but its chunk must not be handed out again.
  EXPECT_EQ(b.net().Poll(), 1);
  Reservation third;
  ASSERT_EQ(a.net().ReserveRequest(1, Category::kMedium, 1, size, true, &third),
            SendStatus::kOk);
  ASSERT_TRUE(BodyInPool(node, 0, third, size));
  ASSERT_TRUE(BodyInPool(node, 0, held, size));
  // It does not overlap the held one.
  EXPECT_TRUE(third.body + size <= held.body || held.body + size <= third.body);
  const std::vector<unsigned char> third_bytes = MakePayload(size, 2);
  std::memcpy(third.payload, third_bytes.data(), size);
  // No room for a fourth.
  Reservation fourth;
  EXPECT_EQ(
      a.net().ReserveRequest(1, Category::kMedium, 1, size, true, &fourth),
      SendStatus::kWouldBlock);
  const uint32_t one = 1, two = 2;
  a.net().Commit(third, 1, &two, size, 0);
  EXPECT_EQ(b.net().Poll(), 0);  // Waits for the held one, in order.
  a.net().Commit(held, 1, &one, size, 0);
  EXPECT_EQ(b.net().Poll(), 2);
  ASSERT_EQ(b.delivered.size(), 3u);
  EXPECT_EQ(b.delivered[1].args[0], 1u);
  EXPECT_TRUE(b.delivered[1].payload == held_bytes);
  EXPECT_EQ(b.delivered[2].args[0], 2u);
  EXPECT_TRUE(b.delivered[2].payload == third_bytes);
}

// ---------------------------------------------------------------------------
// Replies that wait.

// Request handlers (loopback) reply with bodies that fill the reply pool:
// a reply waits for room polling replies (and only replies), which runs
// the earlier replies, in order, inside the later request's handler.
TEST(AmNetworkTest, ReplyFromAHandlerWaitsOnRepliesOnly) {
  constexpr uint32_t kRequests = 6;
  Supernode node(1, MinMemory(8));
  Endpoint a(node, 0);
  bool in_request = false;
  uint32_t requests = 0;
  std::vector<uint32_t> replies;
  a.on_message = [&](const Message& m) {
    if (m.channel == Channel::kReply) {
      EXPECT_EQ(m.reply, nullptr);
      replies.push_back(m.args[0]);
      if (m.category == Category::kMedium) {
        EXPECT_TRUE(PayloadMatches(m.payload, m.payload_len, m.args[0]));
      }
      return;
    }
    EXPECT_FALSE(in_request) << "a request was delivered inside a reply wait";
    in_request = true;
    ++requests;
    const uint32_t tag = m.args[0];
    // Alternate inline and (nearly) full-size bodies: the reply pool
    // holds one of the latter.
    const SendStatus s =
        tag % 2 == 0 ? ReplyShort(a.net(), *m.reply, 2, {tag}, false)
                     : ReplyMedium(a.net(), *m.reply, 3, {tag},
                                   MakePayload(kMaxMedium - 100, tag), false);
    EXPECT_EQ(s, SendStatus::kOk);
    in_request = false;
  };
  for (uint32_t tag = 0; tag < kRequests; ++tag) {
    ASSERT_EQ(SendShort(a, 0, 1, {tag}, true), SendStatus::kOk);
  }
  for (int i = 0;
       i < 10 && (requests < kRequests || replies.size() < kRequests); ++i) {
    a.net().Poll();
  }
  EXPECT_EQ(requests, kRequests);
  EXPECT_EQ(replies, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_GT(a.net().waits(), 0u);
}

// Two ranks each inside request handlers, each replying with bodies that
// need more of its reply pool than it has while the other has not run its
// replies yet: they complete only because a rank waiting for room polls
// replies (and runs the other's, freeing the other's pool).
TEST(AmNetworkTest, CrossedRepliesFromHandlersDoNotDeadlock) {
  constexpr uint32_t kRequests = 4;      // Each way; the queue depth.
  constexpr size_t kReplyBytes = 30000;  // Two fit in the minimum pool.
  Supernode node(2, MinMemory(kRequests));
  std::vector<std::unique_ptr<Endpoint>> ranks;
  for (uint32_t i = 0; i < 2; ++i) {
    ranks.push_back(std::make_unique<Endpoint>(node, i));
  }
  std::atomic<int> in_handler{0};
  uint32_t replies[2] = {0, 0};
  uint32_t requests[2] = {0, 0};
  bool in_order[2] = {true, true};
  bool payload_ok[2] = {true, true};
  for (uint32_t me = 0; me < 2; ++me) {
    Endpoint& e = *ranks[me];
    e.on_message = [&, me](const Message& m) {
      if (m.channel == Channel::kReply) {
        if (m.args[0] != replies[me]) in_order[me] = false;
        if (!PayloadMatches(m.payload, m.payload_len, m.args[0] + 10 * me)) {
          payload_ok[me] = false;
        }
        ++replies[me];
        return;
      }
      // Both ranks are in a request handler before either replies.
      if (requests[me]++ == 0) {
        in_handler.fetch_add(1);
        while (in_handler.load() < 2) sched_yield();
      }
      const uint32_t seq = m.args[0];
      const uint32_t peer = 1 - me;
      if (ReplyMedium(ranks[me]->net(), *m.reply, 2, {seq},
                      MakePayload(kReplyBytes, seq + 10 * peer),
                      false) != SendStatus::kOk) {
        in_order[me] = false;
      }
    };
  }
  std::vector<std::thread> threads;
  for (uint32_t me = 0; me < 2; ++me) {
    threads.emplace_back([&, me] {
      Endpoint& e = *ranks[me];
      for (uint32_t seq = 0; seq < kRequests; ++seq) {
        SendShort(e, 1 - me, 1, {seq}, false);
      }
      while (requests[me] < kRequests || replies[me] < kRequests) {
        if (e.net().Poll() == 0) sched_yield();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int me = 0; me < 2; ++me) {
    EXPECT_EQ(requests[me], kRequests);
    EXPECT_EQ(replies[me], kRequests);
    EXPECT_TRUE(in_order[me]);
    EXPECT_TRUE(payload_ok[me]);
  }
}

// ---------------------------------------------------------------------------
// Floods: every rank on its own thread sends to every rank (itself
// included) as fast as it can, blocking, while the others do the same; each
// request is answered from its handler. Deadlock freedom, per-sender order,
// exactly-once delivery and payload integrity.

struct FloodParams {
  uint32_t ranks;
  uint32_t depth;
  bool min_memory;
  uint32_t messages;  // Per ordered pair.
};

void PrintTo(const FloodParams& p, std::ostream* os) {
  *os << absl::StrFormat("{ranks %u, depth %u, %s memory, %u messages}",
                         p.ranks, p.depth, p.min_memory ? "min" : "default",
                         p.messages);
}

std::string FloodName(const testing::TestParamInfo<FloodParams>& info) {
  return absl::StrFormat("Ranks%uDepth%u%s", info.param.ranks, info.param.depth,
                         info.param.min_memory ? "MinMemory" : "");
}

class FloodTest : public testing::TestWithParam<FloodParams> {};

constexpr size_t kLongStride = 1024;
const size_t kFloodChunkSizes[] = {49, 300, 4000, 20000, 40000, kMaxMedium};
const size_t kFloodLongSizes[] = {0, 1, 100, 1000};

struct FloodRank {
  std::unique_ptr<Endpoint> endpoint;
  // Long destinations: one area per (source, message).
  std::vector<unsigned char> segment;
  std::vector<uint32_t> next_request;  // Per source.
  std::vector<uint32_t> next_reply;    // Per source.
  uint64_t requests = 0;
  uint64_t replies = 0;
  std::vector<std::string> errors;

  void Error(std::string text) {
    if (errors.size() < 20) errors.push_back(std::move(text));
  }
};

// The message `seq` from `source` to `dest`: its category, arguments and
// payload, all derived from (source, dest, seq).
struct FloodMessage {
  Category category;
  std::vector<uint32_t> args;
  size_t size;
  uint32_t seed;
};

FloodMessage MakeFloodMessage(uint32_t source, uint32_t dest, uint32_t seq) {
  FloodMessage m;
  const uint32_t nargs = 2 + seq % 15;
  m.args = MakeArgs(nargs, Mix(source * 7 + dest, seq));
  m.args[0] = seq;
  m.args[1] = source;
  m.seed = Mix(seq, source * 131 + dest);
  switch ((seq + source + dest) % 5) {
    case 0:
      m.category = Category::kShort;
      m.size = 0;
      break;
    case 1:  // Inline or just past it.
      m.category = Category::kMedium;
      m.size = seq % 41;
      break;
    case 2:
    case 3:
      m.category = Category::kMedium;
      m.size = kFloodChunkSizes[seq % 6];
      break;
    default:
      m.category = Category::kLong;
      m.size = kFloodLongSizes[seq % 4];
      break;
  }
  return m;
}

TEST_P(FloodTest, EveryMessageOnceInOrder) {
  const FloodParams p = GetParam();
  Supernode node(p.ranks, p.min_memory ? MinMemory(p.depth) : Config(p.depth));
  std::vector<FloodRank> ranks(p.ranks);
  for (uint32_t i = 0; i < p.ranks; ++i) {
    FloodRank& r = ranks[i];
    r.endpoint = std::make_unique<Endpoint>(node, i);
    r.segment.assign(size_t{p.ranks} * p.messages * kLongStride, 0);
    r.next_request.assign(p.ranks, 0);
    r.next_reply.assign(p.ranks, 0);
  }
  for (uint32_t me = 0; me < p.ranks; ++me) {
    FloodRank& r = ranks[me];
    r.endpoint->on_message = [&r, &ranks, &p, me](const Message& m) {
      const uint32_t src = m.source_index;
      if (m.source != kJobRankBase + src) r.Error("bad source rank");
      if ((m.reply == nullptr) != (m.channel == Channel::kReply)) {
        r.Error("Message::reply set on a reply or missing on a request");
      }
      if (m.channel == Channel::kReply) {
        ++r.replies;
        if (m.nargs != 1 || m.args[0] != r.next_reply[src]) {
          r.Error(absl::StrFormat("reply from %u out of order", src));
        }
        if (!PayloadMatches(m.payload, m.payload_len, Mix(m.args[0], src))) {
          r.Error("reply payload differs");
        }
        ++r.next_reply[src];
        return;
      }
      ++r.requests;
      const uint32_t seq = r.next_request[src]++;
      const FloodMessage want = MakeFloodMessage(src, me, seq);
      if (m.nargs < 2 || m.args[0] != seq || m.args[1] != src) {
        r.Error(absl::StrFormat("request from %u: got seq %u, want %u", src,
                                m.nargs >= 1 ? m.args[0] : 0, seq));
        return;
      }
      if (m.category != want.category ||
          std::vector<uint32_t>(m.args, m.args + m.nargs) != want.args ||
          m.payload_len != want.size) {
        r.Error(absl::StrFormat("request %u from %u: wrong header", seq, src));
      } else if (m.category != Category::kShort &&
                 !PayloadMatches(m.payload, m.payload_len, want.seed)) {
        r.Error(
            absl::StrFormat("request %u from %u: payload differs", seq, src));
      }
      if (m.category == Category::kLong &&
          m.payload != r.segment.data() +
                           (size_t{src} * p.messages + seq) * kLongStride) {
        r.Error("Long destination differs");
      }
      // Answer from the handler, into the request's slot (a big one now
      // and then uses the reply pool).
      const std::vector<unsigned char> body =
          MakePayload(seq % 3 == 0 ? 3000 : seq % 11, Mix(seq, me));
      if (ReplyMedium(r.endpoint->net(), *m.reply, 2, {seq}, body, false) !=
          SendStatus::kOk) {
        r.Error("a blocking reply did not go");
      }
    };
  }
  std::vector<std::thread> threads;
  for (uint32_t me = 0; me < p.ranks; ++me) {
    threads.emplace_back([&ranks, &p, me] {
      FloodRank& r = ranks[me];
      Endpoint& e = *r.endpoint;
      for (uint32_t seq = 0; seq < p.messages; ++seq) {
        for (uint32_t k = 0; k < p.ranks; ++k) {
          const uint32_t dest = (me + k) % p.ranks;
          const FloodMessage m = MakeFloodMessage(me, dest, seq);
          const std::vector<unsigned char> payload =
              MakePayload(m.size, m.seed);
          SendStatus s;
          if (m.category == Category::kShort) {
            s = SendShort(e, dest, 1, m.args, false);
          } else if (m.category == Category::kMedium) {
            s = SendMedium(e, dest, 1, m.args, payload, false);
          } else {
            unsigned char* target =
                ranks[dest].segment.data() +
                (size_t{me} * p.messages + seq) * kLongStride;
            s = SendLong(e, dest, 1, m.args, payload, target, false);
          }
          if (s != SendStatus::kOk) r.Error("a blocking send did not go");
        }
      }
      const uint64_t expected = uint64_t{p.messages} * p.ranks;
      while (r.requests < expected || r.replies < expected) {
        if (e.net().Poll() == 0) sched_yield();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (uint32_t me = 0; me < p.ranks; ++me) {
    const FloodRank& r = ranks[me];
    for (const std::string& e : r.errors)
      ADD_FAILURE() << "rank " << me << ": " << e;
    for (uint32_t src = 0; src < p.ranks; ++src) {
      EXPECT_EQ(r.next_request[src], p.messages) << me << " from " << src;
      EXPECT_EQ(r.next_reply[src], p.messages) << me << " from " << src;
    }
    // Nothing more arrives.
    EXPECT_EQ(r.endpoint->net().Poll(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Depths, FloodTest,
    testing::Values(FloodParams{2, 1, false, 300}, FloodParams{2, 1, true, 300},
                    FloodParams{2, 2, false, 400}, FloodParams{2, 3, true, 400},
                    FloodParams{2, 8, false, 600}, FloodParams{2, 8, true, 600},
                    FloodParams{3, 3, true, 300}, FloodParams{3, 8, false, 300},
                    FloodParams{4, 2, true, 150}),
    FloodName);

// ---------------------------------------------------------------------------
// Thread-safe mode: several threads of one rank send at once.

struct ThreadSafeParams {
  uint32_t depth;
  bool min_memory;
  // Each rank's waits follow a WaitPolicy that counts its threads, set up
  // as if every rank had a CPU of its own and one thread fitted on it: the
  // senders' waits spin a bounded number of rounds and then yield, as a
  // PAR runtime's do when its threads outnumber the CPUs. Otherwise the
  // network's own policy, yielding at every round.
  bool counted_waits = false;
};

void PrintTo(const ThreadSafeParams& p, std::ostream* os) {
  *os << absl::StrFormat("{depth %u, %s memory%s}", p.depth,
                         p.min_memory ? "min" : "default",
                         p.counted_waits ? ", counted waits" : "");
}

std::string ThreadSafeName(
    const testing::TestParamInfo<ThreadSafeParams>& info) {
  return absl::StrFormat("Depth%u%s%s", info.param.depth,
                         info.param.min_memory ? "MinMemory" : "",
                         info.param.counted_waits ? "CountedWaits" : "");
}

class ThreadSafeTest : public testing::TestWithParam<ThreadSafeParams> {};

// Ranks 1 and 2 each run 4 producer threads sending to rank 0 (and now and
// then to themselves), which one thread polls and which replies to each
// request; the producers' threads poll their own rank for the replies.
TEST_P(ThreadSafeTest, ProducersOnManyThreads) {
  constexpr uint32_t kSenders = 2;
  constexpr uint32_t kThreads = 4;
  constexpr uint32_t kMessages = 400;  // Per thread, to rank 0.
  const ThreadSafeParams p = GetParam();
  Supernode node(1 + kSenders,
                 p.min_memory ? MinMemory(p.depth) : Config(p.depth));
  std::vector<std::unique_ptr<WaitPolicy>> policies;
  std::vector<std::unique_ptr<Endpoint>> ranks;
  for (uint32_t i = 0; i <= kSenders; ++i) {
    WaitPolicy* policy = nullptr;
    if (p.counted_waits) {
      policies.push_back(std::make_unique<WaitPolicy>());
      policy = policies.back().get();
      policy->Configure(/*ranks_on_host=*/1, /*cpus=*/1,
                        /*count_threads=*/true);
    }
    ranks.push_back(
        std::make_unique<Endpoint>(node, i, /*thread_safe=*/true, policy));
  }

  // Rank 0: checks per-(source, thread) order; replies with (thread, seq).
  std::vector<uint32_t> next(size_t{(1 + kSenders) * kThreads}, 0);
  std::vector<std::string> receiver_errors;
  uint64_t received = 0;
  ranks[0]->on_message = [&](const Message& m) {
    ++received;
    if (m.channel != Channel::kRequest || m.reply == nullptr || m.nargs < 2) {
      receiver_errors.push_back("unexpected message");
      return;
    }
    const uint32_t thread = m.args[0], seq = m.args[1];
    if (thread >= kThreads || m.source_index == 0) {
      receiver_errors.push_back("bad source or thread");
      return;
    }
    uint32_t& want = next[m.source_index * kThreads + thread];
    if (seq != want && receiver_errors.size() < 20) {
      receiver_errors.push_back(
          absl::StrFormat("from rank %u thread %u: got %u, want %u",
                          m.source_index, thread, seq, want));
    }
    want = seq + 1;
    if (m.category == Category::kMedium &&
        !PayloadMatches(m.payload, m.payload_len,
                        Mix(m.source_index * kThreads + thread, seq)) &&
        receiver_errors.size() < 20) {
      receiver_errors.push_back("payload differs");
    }
    const uint32_t reply[2] = {thread, seq};
    ranks[0]->net().SendReply(*m.reply, Category::kShort, 3, reply, 2, nullptr,
                              0, nullptr, 0, false);
  };

  // Ranks 1..kSenders: handlers may run on any of their threads at once.
  struct SenderState {
    std::vector<std::atomic<uint8_t>> reply_seen =
        std::vector<std::atomic<uint8_t>>(kThreads * kMessages);
    std::vector<std::atomic<uint8_t>> loopback_seen =
        std::vector<std::atomic<uint8_t>>(kThreads * kMessages);
    std::atomic<uint32_t> replies{0};
    std::atomic<uint32_t> loopbacks{0};
    std::atomic<uint32_t> duplicates{0};
    std::atomic<uint32_t> loopbacks_sent{0};
  };
  std::vector<std::unique_ptr<SenderState>> states;
  for (uint32_t k = 0; k <= kSenders; ++k) {
    states.push_back(std::make_unique<SenderState>());
  }
  for (uint32_t k = 1; k <= kSenders; ++k) {
    SenderState& s = *states[k];
    ranks[k]->on_message = [&s](const Message& m) {
      if (m.nargs < 2 || m.args[0] >= kThreads || m.args[1] >= kMessages) {
        s.duplicates.fetch_add(1);  // Counted as an error.
        return;
      }
      const uint32_t index = m.args[0] * kMessages + m.args[1];
      if (m.channel == Channel::kReply) {
        if (s.reply_seen[index].exchange(1) != 0) s.duplicates.fetch_add(1);
        s.replies.fetch_add(1);
      } else {
        if (s.loopback_seen[index].exchange(1) != 0) s.duplicates.fetch_add(1);
        s.loopbacks.fetch_add(1);
      }
    };
  }

  std::atomic<bool> receiver_done{false};
  std::thread receiver([&] {
    while (received < kSenders * kThreads * kMessages) {
      if (ranks[0]->net().Poll() == 0) sched_yield();
    }
    receiver_done = true;
  });
  std::vector<std::thread> producers;
  std::atomic<uint32_t> would_block{0};
  for (uint32_t k = 1; k <= kSenders; ++k) {
    for (uint32_t t = 0; t < kThreads; ++t) {
      producers.emplace_back([&, k, t] {
        AmNetwork& net = ranks[k]->net();
        SenderState& s = *states[k];
        for (uint32_t seq = 0; seq < kMessages; ++seq) {
          const uint32_t args[3] = {t, seq, k};
          const bool immediate = seq % 3 == 1;
          const uint32_t seed = Mix(k * kThreads + t, seq);
          for (;;) {
            SendStatus status;
            switch (seq % 4) {
              case 0:
                status = net.SendRequest(0, Category::kShort, 1, args, 3,
                                         nullptr, 0, nullptr, 0, immediate);
                break;
              case 1:
              case 2: {
                const size_t sizes[] = {10, 100, 3000, 20000, kMaxMedium};
                const std::vector<unsigned char> payload =
                    MakePayload(sizes[seq % 5], seed);
                status = net.SendRequest(0, Category::kMedium, 1, args, 2,
                                         payload.data(), payload.size(),
                                         nullptr, 0, immediate);
                break;
              }
              default: {
                // Reserve, cancel one, then send through Reserve/Commit.
                Reservation r;
                status = net.ReserveRequest(0, Category::kMedium, 2, 5000,
                                            immediate, &r);
                if (status != SendStatus::kOk) break;
                net.Cancel(r);
                status = net.ReserveRequest(0, Category::kMedium, 2, 5000,
                                            immediate, &r);
                if (status != SendStatus::kOk) break;
                const std::vector<unsigned char> payload =
                    MakePayload(2000, seed);
                std::memcpy(r.payload, payload.data(), payload.size());
                net.Commit(r, 1, args, payload.size(), 0);
                break;
              }
            }
            if (status == SendStatus::kOk) break;
            would_block.fetch_add(1);
            if (net.Poll() == 0) sched_yield();
          }
          if (seq % 7 == 0) {
            // Loopback on a rank whose other threads are polling.
            const uint32_t mine[2] = {t, seq};
            net.SendRequest(k, Category::kShort, 4, mine, 2, nullptr, 0,
                            nullptr, 0, false);
            s.loopbacks_sent.fetch_add(1);
          }
        }
        // Until every reply and loopback for this rank has arrived.
        while (s.replies.load() < kThreads * kMessages ||
               s.loopbacks.load() < (kMessages + 6) / 7 * kThreads) {
          if (net.Poll() == 0) sched_yield();
        }
      });
    }
  }
  for (std::thread& t : producers) t.join();
  receiver.join();
  EXPECT_TRUE(receiver_done);
  for (const std::string& e : receiver_errors) ADD_FAILURE() << e;
  EXPECT_EQ(received, kSenders * kThreads * kMessages);
  for (uint32_t k = 1; k <= kSenders; ++k) {
    for (uint32_t t = 0; t < kThreads; ++t) {
      EXPECT_EQ(next[k * kThreads + t], kMessages);
    }
    EXPECT_EQ(states[k]->replies.load(), kThreads * kMessages);
    EXPECT_EQ(states[k]->loopbacks.load(), states[k]->loopbacks_sent.load());
    EXPECT_EQ(states[k]->duplicates.load(), 0u);
  }
  // Every wait round has ended: no thread is counted as waiting.
  for (const auto& policy : policies) EXPECT_EQ(policy->waiting(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ThreadSafeTest,
    testing::Values(ThreadSafeParams{2, true}, ThreadSafeParams{3, false},
                    ThreadSafeParams{8, true},
                    ThreadSafeParams{2, true, /*counted_waits=*/true},
                    ThreadSafeParams{8, false, /*counted_waits=*/true}),
    ThreadSafeName);

// (Found a bug once: a reply run twice when TakeLaterReplies, after a
// handler, went on from its own position although another thread's
// in-order pass had run the replies there; see also
// ThreadSafeLaterReplyRunsOnceWhenTheInOrderPassOvertakes.)
//
// Thread-safe mode, replies through a small reply pool: several threads of
// rank 1 send requests to rank 0, whose several threads poll and answer
// each with a Medium too big for the slot (a chunk of rank 0's minimum
// reply pool). A handler waiting for room may need a reply to a later
// request, answered on another thread, to be run first: every reply must
// still arrive, exactly once, intact.
TEST(AmNetworkTest, ThreadSafeChunkedRepliesFromManyPollersArriveOnce) {
  constexpr uint32_t kSenders = 3;     // Threads of rank 1.
  constexpr uint32_t kPollers = 3;     // Threads of rank 0.
  constexpr uint32_t kMessages = 200;  // Per sender thread.
  constexpr uint32_t kTotal = kSenders * kMessages;
  const size_t kReplySizes[] = {49, 300, 4000, 20000, 30000, kMaxMedium - 64};
  Supernode node(2, MinMemory(8));
  Endpoint a(node, 0, /*thread_safe=*/true), b(node, 1, /*thread_safe=*/true);
  auto reply_size = [&](uint32_t thread, uint32_t seq) {
    return kReplySizes[(thread + seq) % std::size(kReplySizes)];
  };
  std::atomic<uint32_t> handled{0};
  std::atomic<uint32_t> errors{0};
  a.on_message = [&](const Message& m) {
    if (m.reply == nullptr || m.nargs != 2 || m.args[0] >= kSenders ||
        m.args[1] >= kMessages) {
      errors.fetch_add(1);
      return;
    }
    const uint32_t thread = m.args[0], seq = m.args[1];
    const size_t size = reply_size(thread, seq);
    ASSERT_GT(layout::BodyBytes(Category::kMedium, 2, size),
              layout::kInlineBytes);
    if (ReplyMedium(a.net(), *m.reply, 2, {thread, seq},
                    MakePayload(size, Mix(thread, seq)),
                    /*immediate=*/false) != SendStatus::kOk) {
      errors.fetch_add(1);
    }
    handled.fetch_add(1);
  };
  std::vector<std::atomic<uint8_t>> seen(kTotal);
  std::atomic<uint32_t> replies{0};
  std::atomic<uint32_t> duplicates{0};
  b.on_message = [&](const Message& m) {
    if (m.reply != nullptr || m.channel != Channel::kReply || m.nargs != 2 ||
        m.args[0] >= kSenders || m.args[1] >= kMessages) {
      errors.fetch_add(1);
      return;
    }
    const uint32_t thread = m.args[0], seq = m.args[1];
    if (m.payload_len != reply_size(thread, seq) ||
        !PayloadMatches(m.payload, m.payload_len, Mix(thread, seq))) {
      errors.fetch_add(1);
    }
    if (seen[thread * kMessages + seq].exchange(1) != 0) {
      duplicates.fetch_add(1);
    }
    replies.fetch_add(1);
  };

  std::atomic<bool> done{false};
  std::vector<std::thread> pollers;
  for (uint32_t t = 0; t < kPollers; ++t) {
    pollers.emplace_back([&] {
      while (!done.load()) {
        if (a.net().Poll() == 0) sched_yield();
      }
    });
  }
  std::vector<std::thread> senders;
  for (uint32_t t = 0; t < kSenders; ++t) {
    senders.emplace_back([&, t] {
      for (uint32_t seq = 0; seq < kMessages; ++seq) {
        // Blocking: a full queue is waited for polling (running replies).
        if (SendShort(b, 0, 1, {t, seq}, false) != SendStatus::kOk) {
          errors.fetch_add(1);
        }
      }
      while (replies.load() < kTotal) {
        if (b.net().Poll() == 0) sched_yield();
      }
    });
  }
  for (std::thread& t : senders) t.join();
  done = true;
  for (std::thread& t : pollers) t.join();
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_EQ(duplicates.load(), 0u);
  EXPECT_EQ(handled.load(), kTotal);
  EXPECT_EQ(replies.load(), kTotal);
  for (uint32_t i = 0; i < kTotal; ++i) {
    EXPECT_EQ(seen[i].load(), 1) << "reply " << i;
  }
  // Nothing more arrives.
  EXPECT_EQ(a.net().Poll(), 0);
  EXPECT_EQ(b.net().Poll(), 0);
}

// The bug above in a deterministic form: thread X
// runs a reply to a later request in TakeLaterReplies (request 0's handler
// is still running on the receiver); while X is inside that reply's
// handler, request 0 is answered and thread Y's ordinary poll runs the
// replies in order, request 2's included. X must not then run request 2's
// reply again (it does: `runs[2]` is 2). Threads hand over through atomic
// flags; no sleeps.
TEST(AmNetworkTest, ThreadSafeLaterReplyRunsOnceWhenTheInOrderPassOvertakes) {
  Supernode node(2, Config(4));
  Endpoint a(node, 0, /*thread_safe=*/true), b(node, 1, /*thread_safe=*/true);
  auto wait_for = [](const std::atomic<bool>& flag) {
    while (!flag.load()) sched_yield();
  };
  std::atomic<bool> others_answered{false}, x_in_reply{false},
      first_answered{false}, y_done{false};
  // a: request 0's handler runs requests 1 and 2 (nested poll; each
  // replies), then waits until X is inside reply 1's handler to reply.
  a.on_message = [&](const Message& m) {
    const uint32_t tag = m.args[0];
    if (tag == 0) {
      EXPECT_EQ(a.net().Poll(), 2);
      others_answered = true;
      wait_for(x_in_reply);
    }
    EXPECT_EQ(ReplyShort(a.net(), *m.reply, 2, {tag}, true), SendStatus::kOk);
  };
  std::atomic<int> runs[3] = {0, 0, 0};
  b.on_message = [&](const Message& m) {
    const uint32_t tag = m.args[0];
    if (m.reply != nullptr || tag >= 3) {
      ADD_FAILURE() << "unexpected message";
      return;
    }
    if (runs[tag].fetch_add(1) == 0 && tag == 1) {
      // X, in TakeLaterReplies: let request 0 be answered and Y poll.
      x_in_reply = true;
      wait_for(y_done);
    }
  };
  for (uint32_t tag = 0; tag < 3; ++tag) {
    ASSERT_EQ(SendShort(b, 0, 1, {tag}, true), SendStatus::kOk);
  }
  std::thread z([&] {
    a.net().Poll();  // Request 0 (and 1 and 2 inside it).
    first_answered = true;
  });
  wait_for(others_answered);
  std::thread x([&] {
    b.net().PollReplies();
    x_in_reply = true;  // Had it not run reply 1 early: no hang either.
  });
  wait_for(first_answered);
  // Y: replies 0 and 2, in order (reply 1 was X's).
  b.net().PollReplies();
  y_done = true;
  x.join();
  z.join();
  b.net().Poll();
  for (int tag = 0; tag < 3; ++tag) {
    EXPECT_EQ(runs[tag].load(), 1) << "reply " << tag;
  }
}

// ---------------------------------------------------------------------------
// Fatal errors.

class AmNetworkDeathTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

void IgnoreMessage(void*, const Message&) {}

TEST_F(AmNetworkDeathTest, RegionOfAnotherPeerCount) {
  Supernode two(2, Config(4));
  Supernode three(3, Config(4));
  AmNetwork::Options options =
      two.Options(0, IgnoreMessage, nullptr, /*thread_safe=*/false);
  AmNetwork::Options other =
      three.Options(0, IgnoreMessage, nullptr, /*thread_safe=*/false);
  options.regions[1] = other.regions[1];  // Formatted for 3 peers.
  EXPECT_DEATH({ AmNetwork net(options); },
               "region of rank 101 is not a PSHM network.*3 peers.*expected "
               "2 peers");
}

TEST_F(AmNetworkDeathTest, RegionOfAnotherOwner) {
  Supernode node(2, Config(4));
  AmNetwork::Options options = node.Options(1, IgnoreMessage, nullptr, false);
  options.ranks = {kJobRankBase, 7};  // Region 1 belongs to job rank 101.
  EXPECT_DEATH({ AmNetwork net(options); },
               "region of rank 7 is not a PSHM network.*owner 101");
  // Swapped regions: each names the other's owner.
  AmNetwork::Options swapped = node.Options(0, IgnoreMessage, nullptr, false);
  std::swap(swapped.regions[0], swapped.regions[1]);
  EXPECT_DEATH({ AmNetwork net(swapped); }, "not a PSHM network");
}

TEST_F(AmNetworkDeathTest, UnformattedRegion) {
  Supernode node(2, Config(4));
  AmNetwork::Options options = node.Options(0, IgnoreMessage, nullptr, false);
  const size_t bytes = AmNetwork::RegionBytes(Config(4), 2);
  std::unique_ptr<void, decltype(&std::free)> zeros(
      std::aligned_alloc(kCacheLine, bytes), &std::free);
  std::memset(zeros.get(), 0, bytes);
  options.regions[1] = zeros.get();
  EXPECT_DEATH({ AmNetwork net(options); }, "not a PSHM network");
}

TEST_F(AmNetworkDeathTest, BadOptions) {
  Supernode node(2, Config(4));
  AmNetwork::Options options = node.Options(2, IgnoreMessage, nullptr, false);
  EXPECT_DEATH({ AmNetwork net(options); }, "bad options");
  options = node.Options(0, nullptr, nullptr, false);
  EXPECT_DEATH({ AmNetwork net(options); }, "bad options");
  options = node.Options(0, IgnoreMessage, nullptr, false);
  options.ranks.pop_back();
  EXPECT_DEATH({ AmNetwork net(options); }, "bad options");
}

TEST_F(AmNetworkDeathTest, BodyLargerThanThePool) {
  Supernode node(2, MinMemory(4));
  Endpoint a(node, 0), b(node, 1);
  Reservation r;
  EXPECT_DEATH(a.net().ReserveRequest(1, Category::kMedium, kMaxArgs,
                                      2 * kMaxMedium, false, &r),
               "does not fit in a payload pool");
  // A reply's body too.
  b.on_request = [&](const Message& m) {
    Reservation reply;
    b.net().ReserveReply(*m.reply, Category::kMedium, kMaxArgs, 2 * kMaxMedium,
                         false, &reply);
    b.net().Cancel(reply);
  };
  ASSERT_EQ(SendShort(a, 1, 1, {}, true), SendStatus::kOk);
  EXPECT_DEATH(b.net().Poll(), "does not fit in a payload pool");
}

// A request has at most one reply: a second SendReply, or a reservation
// after the reply was sent or while one is reserved, is a fatal error.
TEST_F(AmNetworkDeathTest, SecondReply) {
  Supernode node(2, Config(4));
  Endpoint a(node, 0), b(node, 1);
  for (uint32_t dest : {1u, 0u}) {
    Endpoint& to = dest == 0 ? a : b;
    to.on_request = [&](const Message& m) {
      ReplyShort(to.net(), *m.reply, 2, {1}, true);
      ReplyShort(to.net(), *m.reply, 2, {2}, true);
    };
    ASSERT_EQ(SendShort(a, dest, 1, {}, true), SendStatus::kOk);
    EXPECT_DEATH(to.net().Poll(), "second reply");
    to.on_request = [&](const Message& m) {
      ReplyMedium(to.net(), *m.reply, 2, {1}, MakePayload(1000, 1), true);
      Reservation r;
      to.net().ReserveReply(*m.reply, Category::kShort, 0, 0, true, &r);
      to.net().Cancel(r);
    };
    EXPECT_DEATH(to.net().Poll(), "second reply");
    to.on_request = [&](const Message& m) {
      Reservation r;
      to.net().ReserveReply(*m.reply, Category::kShort, 0, 0, true, &r);
      ReplyShort(to.net(), *m.reply, 2, {1}, true);
      to.net().Cancel(r);
    };
    EXPECT_DEATH(to.net().Poll(), "second reply");
  }
}

// Returning from a request handler with its reply reserved but neither
// committed nor cancelled is a fatal error.
TEST_F(AmNetworkDeathTest, ReplyLeftReserved) {
  Supernode node(2, Config(4));
  Endpoint a(node, 0), b(node, 1);
  for (uint32_t dest : {1u, 0u}) {
    Endpoint& to = dest == 0 ? a : b;
    for (size_t size : {size_t{0}, size_t{1000}}) {
      to.on_request = [&to, size](const Message& m) {
        Reservation r;
        to.net().ReserveReply(*m.reply, Category::kMedium, 1, size, true, &r);
      };
      ASSERT_EQ(SendShort(a, dest, 1, {}, true), SendStatus::kOk);
      EXPECT_DEATH(to.net().Poll(), "neither committed nor cancelled");
    }
  }
}

// ---------------------------------------------------------------------------
// Was a known bug: queue positions are 32-bit and wrap at 2^32, and with a
// depth that is not a power of two a slot index of `position % depth`
// jumped at the wrap (2^32 % 3 == 1), so positions 2^32 - 1 and 2^32 (== 0)
// used the same slot and a message was overwritten unread. The ring now
// has RingSlots(depth) slots, a power of two, so a position keeps its slot
// across the wrap. The test takes 2^32 messages on one pair (about 100 s
// with -c opt), so it stays disabled; run it with
//   bazel run -c opt //pshm:am_network_test --
//     --gtest_also_run_disabled_tests --gtest_filter='*PositionWrap*'
TEST(AmNetworkTest, DISABLED_NonPowerOfTwoDepthSurvivesPositionWrap) {
  Supernode node(1, Config(3));
  Endpoint a(node, 0);
  uint32_t expect = 0;
  bool in_order = true;
  a.on_message = [&](const Message& m) {
    if (m.args[0] != expect) in_order = false;
    ++expect;
  };
  uint32_t tag = 0;
  auto send = [&] {
    return a.net().SendRequest(0, Category::kShort, 1, &tag, 1, nullptr, 0,
                               nullptr, 0, /*immediate=*/true);
  };
  // One message first, then pairs, so one pair straddles the wrap: message
  // 2^32 - 1 is still unread when message 2^32 is sent.
  ASSERT_EQ(send(), SendStatus::kOk);
  ++tag;
  ASSERT_EQ(a.net().Poll(), 1);
  const uint64_t pairs = (uint64_t{1} << 31) + 4;
  for (uint64_t i = 0; i < pairs; ++i) {
    ASSERT_EQ(send(), SendStatus::kOk) << "message " << (2 * i + 1);
    ++tag;
    ASSERT_EQ(send(), SendStatus::kOk) << "message " << (2 * i + 2);
    ++tag;
    ASSERT_EQ(a.net().Poll(), 2)
        << "messages " << (2 * i + 1) << " and " << (2 * i + 2);
  }
  EXPECT_TRUE(in_order);
}

}  // namespace
}  // namespace gexrt::pshm
