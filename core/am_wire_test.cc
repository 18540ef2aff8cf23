#include "core/am_wire.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace gexrt::core::wire {
namespace {

struct Buffers {
  alignas(8) unsigned char msg[kMaxOverhead + 256] = {};
  alignas(8) unsigned char segment[1024] = {};
};

Receiver Me(Buffers& b) {
  return Receiver{"test", 1, 4, reinterpret_cast<uintptr_t>(b.segment),
                  sizeof b.segment};
}

TEST(AmWireTest, MediumRoundTripsWithEveryArgumentCount) {
  for (unsigned nargs = 0; nargs <= am::kMaxArgs; ++nargs) {
    Buffers b;
    uint32_t args[am::kMaxArgs];
    for (unsigned i = 0; i < nargs; ++i) args[i] = 0x1000u * i + nargs;
    const char payload[] = "thirteen byte";
    Outbound m;
    m.category = Category::kMedium;
    m.handler = 200;
    m.nargs = static_cast<uint8_t>(nargs);
    m.args = args;
    m.payload = payload;
    m.len = sizeof payload;
    const size_t len =
        Encode(m, 3, /*request=*/true, false, false, true, b.msg);
    EXPECT_EQ(len, PayloadOffset(nargs) + sizeof payload);
    EXPECT_EQ(PayloadOffset(nargs) % 8, 0u);
    Inbound in;
    uint32_t out[am::kMaxArgs];
    const Header h = Decode(Me(b), b.msg, len, in, out);
    EXPECT_EQ(h.credits, 0u);
    EXPECT_EQ(in.source, 3u);
    EXPECT_TRUE(in.is_request);
    EXPECT_EQ(in.category, Category::kMedium);
    EXPECT_EQ(in.handler, 200);
    ASSERT_EQ(in.nargs, nargs);
    for (unsigned i = 0; i < nargs; ++i) EXPECT_EQ(in.args[i], args[i]);
    ASSERT_EQ(in.len, sizeof payload);
    EXPECT_EQ(std::memcmp(in.payload, payload, sizeof payload), 0);
  }
}

TEST(AmWireTest, PackedLongLandsInTheSegmentAndRdmaLongIsLeftAlone) {
  Buffers b;
  const char payload[] = "long payload";
  Outbound m;
  m.category = Category::kLong;
  m.payload = payload;
  m.len = sizeof payload;
  m.long_dest = reinterpret_cast<uint64_t>(b.segment + 100);
  size_t len = Encode(m, 0, false, false, false, true, b.msg);
  Inbound in;
  uint32_t args[am::kMaxArgs];
  Decode(Me(b), b.msg, len, in, args);
  EXPECT_FALSE(in.is_request);
  EXPECT_EQ(in.payload, b.segment + 100);
  EXPECT_EQ(std::memcmp(b.segment + 100, payload, sizeof payload), 0);

  // Written first by RDMA: the header carries no payload and the segment
  // is not touched by decoding.
  std::memset(b.segment, 0, sizeof b.segment);
  len = Encode(m, 0, false, false, /*long_by_rdma=*/true, false, b.msg);
  EXPECT_EQ(len, ArgsEnd(0));
  const Header h = Decode(Me(b), b.msg, len, in, args);
  EXPECT_NE(h.flags & kFlagLongByRdma, 0);
  EXPECT_EQ(in.len, sizeof payload);
  EXPECT_EQ(b.segment[100], 0);
}

TEST(AmWireTest, CreditsOnlyCarriesNothingElse) {
  Buffers b;
  Outbound m;
  const size_t len =
      Encode(m, 2, false, /*credits_only=*/true, false, false, b.msg);
  const uint32_t credits = 5;
  std::memcpy(b.msg + offsetof(Header, credits), &credits, sizeof credits);
  Inbound in;
  in.handler = 77;
  uint32_t args[am::kMaxArgs];
  const Header h = Decode(Me(b), b.msg, len, in, args);
  EXPECT_NE(h.flags & kFlagCreditsOnly, 0);
  EXPECT_EQ(h.credits, 5u);
  EXPECT_EQ(in.handler, 77);  // untouched
}

TEST(AmWireDeathTest, MalformedMessagesAreFatalNamingTheConduit) {
  Buffers b;
  Outbound m;
  m.category = Category::kMedium;
  size_t len = Encode(m, 1, true, false, false, true, b.msg);
  Inbound in;
  uint32_t args[am::kMaxArgs];
  EXPECT_DEATH(Decode(Me(b), b.msg, 10, in, args),
               "test conduit: rank 1: a malformed message");
  b.msg[2] = am::kMaxArgs + 1;  // nargs
  EXPECT_DEATH(Decode(Me(b), b.msg, len, in, args), "17 arguments");
  // A source outside the job.
  len = Encode(m, 9, true, false, false, true, b.msg);
  EXPECT_DEATH(Decode(Me(b), b.msg, len, in, args), "source 9");
  // A Medium claiming more payload than arrived.
  const char payload[8] = {};
  m.payload = payload;
  m.len = sizeof payload;
  len = Encode(m, 1, true, false, false, true, b.msg);
  EXPECT_DEATH(Decode(Me(b), b.msg, len - 1, in, args),
               "claims 8 payload bytes");
}

TEST(AmWireDeathTest, LongOutsideTheSegmentIsFatal) {
  Buffers b;
  const char payload[16] = {};
  Outbound m;
  m.category = Category::kLong;
  m.payload = payload;
  m.len = sizeof payload;
  m.long_dest = reinterpret_cast<uint64_t>(b.segment + sizeof b.segment - 8);
  const size_t len = Encode(m, 0, true, false, false, true, b.msg);
  Inbound in;
  uint32_t args[am::kMaxArgs];
  EXPECT_DEATH(Decode(Me(b), b.msg, len, in, args),
               "outside this rank's segment");
}

TEST(AmWireDeathTest, OutboundLimitsAreChecked) {
  Outbound m;
  m.category = Category::kMedium;
  m.len = 101;
  EXPECT_DEATH(CheckOutbound("test", true, m, 100, 1000),
               "test conduit: a Request of 0 arguments and 101 payload");
  m.category = Category::kLong;
  m.len = 1001;
  EXPECT_DEATH(CheckOutbound("test", false, m, 100, 1000), "a Reply");
  m.len = 1000;
  CheckOutbound("test", false, m, 100, 1000);  // at the limit: fine
}

}  // namespace
}  // namespace gexrt::core::wire
