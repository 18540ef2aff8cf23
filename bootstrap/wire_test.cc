#include "bootstrap/wire.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bootstrap/messages.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

// The largest single allocation made while g_track_allocations is set, so a
// test can check that decoding a hostile frame does not reserve memory for
// what the frame merely claims.
namespace {
std::atomic<bool> g_track_allocations{false};
std::atomic<size_t> g_largest_allocation{0};
}  // namespace

void* operator new(size_t n) {
  if (g_track_allocations.load(std::memory_order_relaxed)) {
    size_t seen = g_largest_allocation.load(std::memory_order_relaxed);
    while (n > seen && !g_largest_allocation.compare_exchange_weak(
                           seen, n, std::memory_order_relaxed)) {
    }
  }
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace gexrt::wire {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// ---------------------------------------------------------------------------
// Helpers.

struct SocketPair {
  SocketPair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    a = fds[0];
    b = fds[1];
  }
  ~SocketPair() {
    CloseA();
    CloseB();
  }
  void CloseA() {
    if (a >= 0) close(a);
    a = -1;
  }
  void CloseB() {
    if (b >= 0) close(b);
    b = -1;
  }
  int a = -1;
  int b = -1;
};

absl::Time Soon() { return absl::Now() + absl::Seconds(60); }

// The 4-byte little-endian length prefix of a frame.
uint32_t PrefixOf(const std::string& frame) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(frame[i]);
  }
  return v;
}

std::string LengthPrefix(uint32_t len) {
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(len >> (8 * i)));
  return out;
}

// The body of one frame, as a FrameAssembler hands it out.
std::string BodyViaAssembler(const std::string& frame) {
  FrameAssembler assembler;
  assembler.Append(frame);
  absl::StatusOr<std::optional<std::string>> next = assembler.Next();
  EXPECT_TRUE(next.ok()) << next.status();
  if (!next.ok() || !next->has_value()) {
    ADD_FAILURE() << "no frame from the assembler";
    return "";
  }
  EXPECT_EQ(assembler.buffered(), 0u);
  return **next;
}

// The body of one frame, written by WriteFrame on one end of a socketpair
// (from a thread, so frames larger than the socket buffer work) and read
// with ReadFrame on the other.
std::string BodyViaSocket(const std::string& frame) {
  SocketPair s;
  absl::Status written;
  std::thread writer([&] { written = WriteFrame(s.a, frame, Soon()); });
  absl::StatusOr<std::string> body = ReadFrame(s.b, Soon());
  writer.join();
  EXPECT_TRUE(written.ok()) << written;
  EXPECT_TRUE(body.ok()) << body.status();
  return body.ok() ? *body : "";
}

// Encodes `m`, checks the frame's length prefix, carries it through both a
// FrameAssembler and a socket, and decodes it.
template <typename T>
T RoundTrip(const T& m, absl::StatusOr<T> (*decode)(std::string_view)) {
  const std::string frame = Encode(m);
  EXPECT_GE(frame.size(), 5u);
  EXPECT_EQ(PrefixOf(frame), frame.size() - 4);
  const std::string body = BodyViaAssembler(frame);
  EXPECT_EQ(body, frame.substr(4));
  EXPECT_EQ(BodyViaSocket(frame), body);
  absl::StatusOr<T> got = decode(body);
  EXPECT_TRUE(got.ok()) << got.status();
  return got.ok() ? *std::move(got) : T{};
}

using EntryList = std::vector<std::pair<uint32_t, std::string>>;
EntryList Flatten(const std::vector<CollectiveEntry>& entries) {
  EntryList out;
  for (const CollectiveEntry& e : entries) out.emplace_back(e.rank, e.data);
  return out;
}

// Every byte value, `n` bytes long.
std::string AllBytes(size_t n) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<char>((i * 131 + 7) % 256);
  return out;
}

std::vector<CollectiveEntry> ManyEntries(size_t n) {
  std::vector<CollectiveEntry> out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back({static_cast<uint32_t>(i * 7919 % 100000), AllBytes(i % 37)});
  }
  return out;
}

// ---------------------------------------------------------------------------
// Round trips with every field checked.

TEST(MessagesRoundTrip, Hello) {
  Hello m;
  m.role = PeerRole::kAgent;
  m.id = 0xfffffffe;
  m.pid = 123456;
  m.token = 0x0123456789abcdefull;
  m.hostname = "node-7.example.org";
  Hello got = RoundTrip(m, Decode<Hello>);
  EXPECT_EQ(got.role, PeerRole::kAgent);
  EXPECT_EQ(got.id, 0xfffffffeu);
  EXPECT_EQ(got.pid, 123456u);
  EXPECT_EQ(got.token, 0x0123456789abcdefull);
  EXPECT_EQ(got.hostname, "node-7.example.org");

  m.role = PeerRole::kRank;
  m.id = 0;
  m.pid = 0xffffffff;
  m.token = ~0ull;
  m.hostname = "";
  got = RoundTrip(m, Decode<Hello>);
  EXPECT_EQ(got.role, PeerRole::kRank);
  EXPECT_EQ(got.id, 0u);
  EXPECT_EQ(got.pid, 0xffffffffu);
  EXPECT_EQ(got.token, ~0ull);
  EXPECT_EQ(got.hostname, "");

  m.hostname = AllBytes(3 << 20);
  got = RoundTrip(m, Decode<Hello>);
  EXPECT_EQ(got.hostname, m.hostname);
}

TEST(MessagesRoundTrip, CollectiveUpEveryOp) {
  for (CollectiveOp op : {CollectiveOp::kBarrier, CollectiveOp::kAllgather,
                          CollectiveOp::kAlltoall, CollectiveOp::kBroadcast}) {
    CollectiveUp m;
    m.seq = 0xfffffff0;
    m.op = op;
    m.len = 0x0000012345678901ull;
    m.root = 77;
    m.entries = {{3, "abc"}, {0, ""}, {0xffffffff, std::string("\0\1\2", 3)}};
    CollectiveUp got = RoundTrip(m, Decode<CollectiveUp>);
    EXPECT_EQ(got.seq, 0xfffffff0u);
    EXPECT_EQ(got.op, op);
    EXPECT_EQ(got.len, 0x0000012345678901ull);
    EXPECT_EQ(got.root, 77u);
    EXPECT_EQ(Flatten(got.entries), Flatten(m.entries));
  }
}

TEST(MessagesRoundTrip, CollectiveEntriesCarryTheirCall) {
  CollectiveUp m;
  m.op = CollectiveOp::kBarrier;
  m.entries = {{1, "", "gex_Segment_Attach"}, {2, "x", ""}};
  const CollectiveUp got = RoundTrip(m, Decode<CollectiveUp>);
  ASSERT_EQ(got.entries.size(), 2u);
  EXPECT_EQ(got.entries[0].call, "gex_Segment_Attach");
  EXPECT_EQ(got.entries[1].call, "");
  EXPECT_EQ(got.entries[1].data, "x");
}

TEST(MessagesRoundTrip, CallQueryAndReport) {
  EXPECT_EQ(RoundTrip(CallQuery{0xabcd}, Decode<CallQuery>).seq, 0xabcdu);
  const CallReport got =
      RoundTrip(CallReport{9, "gasnet_barrier_wait"}, Decode<CallReport>);
  EXPECT_EQ(got.rank, 9u);
  EXPECT_EQ(got.call, "gasnet_barrier_wait");
}

TEST(CallReportInto, MatchesEncode) {
  char buf[128];
  for (const std::string call : {"", "gex_Client_Init", "gasnet_barrier"}) {
    const size_t n = EncodeCallReportInto(buf, sizeof buf, 12345, call);
    EXPECT_EQ(std::string(buf, n), Encode(CallReport{12345, call})) << call;
  }
}

TEST(CallReportInto, CutsANameThatDoesNotFit) {
  char buf[20];
  const size_t n = EncodeCallReportInto(buf, sizeof buf, 1, "a_very_long_name");
  EXPECT_EQ(n, sizeof buf);
  auto got = Decode<CallReport>(std::string_view(buf + 4, n - 4));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->call, "a_very_");
  EXPECT_EQ(EncodeCallReportInto(buf, 12, 1, "x"), 0u);
}

TEST(MessagesRoundTrip, CollectiveUpZeroManyAndLargeEntries) {
  CollectiveUp m;
  m.op = CollectiveOp::kAllgather;
  CollectiveUp got = RoundTrip(m, Decode<CollectiveUp>);
  EXPECT_THAT(got.entries, IsEmpty());

  m.entries = ManyEntries(5000);
  got = RoundTrip(m, Decode<CollectiveUp>);
  EXPECT_EQ(Flatten(got.entries), Flatten(m.entries));

  m.entries = {{1, AllBytes(2 << 20)}, {2, ""}, {3, AllBytes(1 << 20)}};
  got = RoundTrip(m, Decode<CollectiveUp>);
  EXPECT_EQ(Flatten(got.entries), Flatten(m.entries));
}

TEST(MessagesRoundTrip, CollectiveDownUniform) {
  CollectiveDown m;
  m.seq = 9;
  m.uniform = true;
  m.data = "";
  CollectiveDown got = RoundTrip(m, Decode<CollectiveDown>);
  EXPECT_EQ(got.seq, 9u);
  EXPECT_TRUE(got.uniform);
  EXPECT_EQ(got.data, "");
  EXPECT_THAT(got.entries, IsEmpty());

  m.data = AllBytes(3 << 20);
  got = RoundTrip(m, Decode<CollectiveDown>);
  EXPECT_TRUE(got.uniform);
  EXPECT_EQ(got.data, m.data);
}

TEST(MessagesRoundTrip, CollectiveDownPerRank) {
  CollectiveDown m;
  m.seq = 0x80000000;
  m.uniform = false;
  CollectiveDown got = RoundTrip(m, Decode<CollectiveDown>);
  EXPECT_EQ(got.seq, 0x80000000u);
  EXPECT_FALSE(got.uniform);
  EXPECT_THAT(got.entries, IsEmpty());

  m.entries = ManyEntries(3000);
  got = RoundTrip(m, Decode<CollectiveDown>);
  EXPECT_FALSE(got.uniform);
  EXPECT_EQ(Flatten(got.entries), Flatten(m.entries));
  EXPECT_EQ(got.data, "");
}

TEST(MessagesRoundTrip, CollectiveFailed) {
  CollectiveFailed m{42, "rank 3 exited with status 1 before joining"};
  CollectiveFailed got = RoundTrip(m, Decode<CollectiveFailed>);
  EXPECT_EQ(got.seq, 42u);
  EXPECT_EQ(got.reason, m.reason);

  m.reason = "";
  EXPECT_EQ(RoundTrip(m, Decode<CollectiveFailed>).reason, "");
  m.reason = AllBytes(100000);
  EXPECT_EQ(RoundTrip(m, Decode<CollectiveFailed>).reason, m.reason);
}

TEST(MessagesRoundTrip, ExitReady) {
  EXPECT_EQ(RoundTrip(ExitReady{0}, Decode<ExitReady>).rank, 0u);
  EXPECT_EQ(RoundTrip(ExitReady{0x1234}, Decode<ExitReady>).rank, 0x1234u);
}

TEST(MessagesRoundTrip, ExitRequest) {
  const ExitRequest got =
      RoundTrip(ExitRequest{0x4321, -7}, Decode<ExitRequest>);
  EXPECT_EQ(got.rank, 0x4321u);
  EXPECT_EQ(got.exit_code, -7);
}

TEST(MessagesRoundTrip, ExitJob) {
  ExitJob got = RoundTrip(ExitJob{12, 3, true}, Decode<ExitJob>);
  EXPECT_EQ(got.initiator, 12u);
  EXPECT_EQ(got.exit_code, 3);
  EXPECT_TRUE(got.peer_lost);
  got = RoundTrip(ExitJob{0, 0, false}, Decode<ExitJob>);
  EXPECT_FALSE(got.peer_lost);
}

TEST(MessagesRoundTrip, Fini) {
  EXPECT_EQ(RoundTrip(Fini{0}, Decode<Fini>).rank, 0u);
  EXPECT_EQ(RoundTrip(Fini{0xabcdef01}, Decode<Fini>).rank, 0xabcdef01u);
}

TEST(MessagesRoundTrip, Abort) {
  Abort m{17, -3, "it went wrong"};
  Abort got = RoundTrip(m, Decode<Abort>);
  EXPECT_EQ(got.rank, 17u);
  EXPECT_EQ(got.exit_code, -3);
  EXPECT_EQ(got.reason, "it went wrong");

  m = Abort{0xffffffff, INT32_MIN, ""};
  got = RoundTrip(m, Decode<Abort>);
  EXPECT_EQ(got.rank, 0xffffffffu);
  EXPECT_EQ(got.exit_code, INT32_MIN);
  EXPECT_EQ(got.reason, "");

  m.exit_code = INT32_MAX;
  m.reason = AllBytes(1 << 20);
  got = RoundTrip(m, Decode<Abort>);
  EXPECT_EQ(got.exit_code, INT32_MAX);
  EXPECT_EQ(got.reason, m.reason);
}

TEST(MessagesRoundTrip, RankExited) {
  RankExited got = RoundTrip(RankExited{5, 0x0100}, Decode<RankExited>);
  EXPECT_EQ(got.rank, 5u);
  EXPECT_EQ(got.wait_status, 0x0100);
  got = RoundTrip(RankExited{0, -1}, Decode<RankExited>);
  EXPECT_EQ(got.rank, 0u);
  EXPECT_EQ(got.wait_status, -1);
}

TEST(MessagesRoundTrip, Kill) {
  EXPECT_EQ(RoundTrip(Kill{15}, Decode<Kill>).signal, 15);
  EXPECT_EQ(RoundTrip(Kill{-9}, Decode<Kill>).signal, -9);
  EXPECT_EQ(RoundTrip(Kill{0}, Decode<Kill>).signal, 0);
}

TEST(MessagesRoundTrip, AgentError) {
  AgentError got =
      RoundTrip(AgentError{127, "cannot start ./a.out"}, Decode<AgentError>);
  EXPECT_EQ(got.exit_code, 127);
  EXPECT_EQ(got.message, "cannot start ./a.out");
  got = RoundTrip(AgentError{-2, ""}, Decode<AgentError>);
  EXPECT_EQ(got.exit_code, -2);
  EXPECT_EQ(got.message, "");
  const std::string big = AllBytes(2 << 20);
  EXPECT_EQ(RoundTrip(AgentError{1, big}, Decode<AgentError>).message, big);
}

TEST(MessagesRoundTrip, AgentReady) {
  EXPECT_EQ(RoundTrip(AgentReady{0}, Decode<AgentReady>).host, 0u);
  EXPECT_EQ(RoundTrip(AgentReady{4096}, Decode<AgentReady>).host, 4096u);
}

TEST(Messages, TypeOfAndNames) {
  EXPECT_EQ(TypeOf(""), MessageType::kHello);
  EXPECT_EQ(TypeOf(BodyViaAssembler(Encode(Kill{9}))), MessageType::kKill);
  EXPECT_EQ(TypeOf(BodyViaAssembler(Encode(CollectiveUp{}))),
            MessageType::kCollectiveUp);
  EXPECT_EQ(MessageTypeName(MessageType::kHello), "hello");
  EXPECT_EQ(MessageTypeName(static_cast<MessageType>(200)), "unknown message");
  EXPECT_EQ(CollectiveOpName(CollectiveOp::kAlltoall), "alltoall");
  EXPECT_EQ(CollectiveOpName(static_cast<CollectiveOp>(0)),
            "unknown collective");
}

// ---------------------------------------------------------------------------
// Malformed bodies.

struct DecodeCase {
  std::string label;
  MessageType type;
  std::string body;  // a valid body of `type`
  std::function<absl::Status(std::string_view)> decode;
};

template <typename T>
std::function<absl::Status(std::string_view)> StatusOf(
    absl::StatusOr<T> (*decode)(std::string_view)) {
  return [decode](std::string_view body) { return decode(body).status(); };
}

std::vector<DecodeCase> AllDecodeCases() {
  CollectiveUp up;
  up.seq = 3;
  up.op = CollectiveOp::kAlltoall;
  up.len = 2;
  up.root = 1;
  up.entries = {{0, "abcd"}, {1, "efgh"}};
  CollectiveDown uniform;
  uniform.seq = 4;
  uniform.data = "result";
  CollectiveDown per_rank;
  per_rank.seq = 5;
  per_rank.uniform = false;
  per_rank.entries = {{2, "xy"}, {3, ""}};
  Hello hello{PeerRole::kAgent, 2, 99, 0x1122334455667788ull, "n2"};

  auto B = [](const std::string& frame) { return frame.substr(4); };
  return {
      {"Hello", MessageType::kHello, B(Encode(hello)), StatusOf(Decode<Hello>)},
      {"CollectiveUp", MessageType::kCollectiveUp, B(Encode(up)),
       StatusOf(Decode<CollectiveUp>)},
      {"CollectiveDown(uniform)", MessageType::kCollectiveDown,
       B(Encode(uniform)), StatusOf(Decode<CollectiveDown>)},
      {"CollectiveDown(per rank)", MessageType::kCollectiveDown,
       B(Encode(per_rank)), StatusOf(Decode<CollectiveDown>)},
      {"CollectiveFailed", MessageType::kCollectiveFailed,
       B(Encode(CollectiveFailed{1, "why"})),
       StatusOf(Decode<CollectiveFailed>)},
      {"Fini", MessageType::kFini, B(Encode(Fini{3})), StatusOf(Decode<Fini>)},
      {"Abort", MessageType::kAbort, B(Encode(Abort{1, 2, "bye"})),
       StatusOf(Decode<Abort>)},
      {"RankExited", MessageType::kRankExited, B(Encode(RankExited{1, 256})),
       StatusOf(Decode<RankExited>)},
      {"Kill", MessageType::kKill, B(Encode(Kill{15})), StatusOf(Decode<Kill>)},
      {"AgentError", MessageType::kAgentError, B(Encode(AgentError{1, "oops"})),
       StatusOf(Decode<AgentError>)},
      {"AgentReady", MessageType::kAgentReady, B(Encode(AgentReady{7})),
       StatusOf(Decode<AgentReady>)},
      {"ExitReady", MessageType::kExitReady, B(Encode(ExitReady{5})),
       StatusOf(Decode<ExitReady>)},
      {"ExitRequest", MessageType::kExitRequest, B(Encode(ExitRequest{5, 2})),
       StatusOf(Decode<ExitRequest>)},
      {"ExitJob", MessageType::kExitJob, B(Encode(ExitJob{5, 2, true})),
       StatusOf(Decode<ExitJob>)},
      {"CallQuery", MessageType::kCallQuery, B(Encode(CallQuery{5})),
       StatusOf(Decode<CallQuery>)},
      {"CallReport", MessageType::kCallReport,
       B(Encode(CallReport{5, "gex_Segment_Attach"})),
       StatusOf(Decode<CallReport>)},
  };
}

TEST(MessagesMalformed, ValidBodiesDecode) {
  for (const DecodeCase& c : AllDecodeCases()) {
    EXPECT_TRUE(c.decode(c.body).ok()) << c.label << ": " << c.decode(c.body);
    EXPECT_EQ(TypeOf(c.body), c.type) << c.label;
  }
}

TEST(MessagesMalformed, EveryTruncationIsRejected) {
  for (const DecodeCase& c : AllDecodeCases()) {
    const std::string name(MessageTypeName(c.type));
    for (size_t n = 0; n < c.body.size(); ++n) {
      const absl::Status s = c.decode(std::string_view(c.body).substr(0, n));
      EXPECT_FALSE(s.ok()) << c.label << " truncated to " << n << " bytes";
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss)
          << c.label << " truncated to " << n << ": " << s;
      EXPECT_THAT(std::string(s.message()), HasSubstr(name))
          << c.label << " truncated to " << n << " bytes";
    }
  }
}

TEST(MessagesMalformed, TrailingBytesAreRejected) {
  for (const DecodeCase& c : AllDecodeCases()) {
    const std::string name(MessageTypeName(c.type));
    for (const std::string& extra :
         {std::string(1, '\0'), std::string("xyz"), std::string(100, 'q')}) {
      const absl::Status s = c.decode(c.body + extra);
      EXPECT_FALSE(s.ok()) << c.label << " + " << extra.size() << " bytes";
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << c.label << ": " << s;
      EXPECT_THAT(std::string(s.message()), HasSubstr(name)) << c.label;
    }
  }
}

TEST(MessagesMalformed, WrongTypeByteIsRejected) {
  for (const DecodeCase& c : AllDecodeCases()) {
    const std::string name(MessageTypeName(c.type));
    for (int t = 0; t < 256; ++t) {
      if (t == static_cast<int>(c.type)) continue;
      std::string body = c.body;
      body[0] = static_cast<char>(t);
      const absl::Status s = c.decode(body);
      EXPECT_FALSE(s.ok()) << c.label << " with type byte " << t;
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << c.label << ": " << s;
      EXPECT_THAT(std::string(s.message()), HasSubstr("expected a " + name))
          << c.label << " with type byte " << t;
    }
  }
}

TEST(MessagesMalformed, OtherMessagesBodiesAreRejected) {
  const std::vector<DecodeCase> cases = AllDecodeCases();
  for (const DecodeCase& decoder : cases) {
    for (const DecodeCase& input : cases) {
      if (input.type == decoder.type) continue;
      const absl::Status s = decoder.decode(input.body);
      EXPECT_FALSE(s.ok()) << decoder.label << " decoding a " << input.label;
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss)
          << decoder.label << " decoding a " << input.label << ": " << s;
    }
  }
}

TEST(MessagesMalformed, UnknownRoleAndOperationAreRejected) {
  std::string hello = Encode(Hello{}).substr(4);
  for (uint8_t role : {0, 3, 255}) {
    hello[1] = static_cast<char>(role);
    const absl::Status s = Decode<Hello>(hello).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << int{role};
    EXPECT_THAT(std::string(s.message()), HasSubstr("hello"));
  }
  std::string up = Encode(CollectiveUp{}).substr(4);
  for (uint8_t op : {0, 5, 255}) {
    up[5] = static_cast<char>(op);  // type byte, 4-byte seq, then op
    const absl::Status s = Decode<CollectiveUp>(up).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << int{op};
    EXPECT_THAT(std::string(s.message()), HasSubstr("collective"));
  }
}

// A body claiming `count` entries after the CollectiveUp header, followed by
// `entries` real ones.
std::string UpBodyClaiming(uint32_t count,
                           const std::vector<CollectiveEntry>& entries) {
  FrameBuilder b(MessageType::kCollectiveUp);
  b.PutU32(1).PutU8(static_cast<uint8_t>(CollectiveOp::kAllgather));
  b.PutU64(4).PutU32(0).PutU32(count);
  for (const CollectiveEntry& e : entries) b.PutU32(e.rank).PutBytes(e.data);
  return b.Finish().substr(4);
}

TEST(MessagesMalformed, HugeEntryCountDoesNotAllocateHugely) {
  // The tracking works: a real large allocation is seen.
  g_largest_allocation = 0;
  g_track_allocations = true;
  auto control = std::make_unique<std::string>(1 << 20, 'x');
  g_track_allocations = false;
  ASSERT_GE(g_largest_allocation.load(), size_t{1} << 20);
  control.reset();

  const std::vector<std::vector<CollectiveEntry>> tails = {
      {}, {{0, "abcd"}}, {{0, "abcd"}, {1, "efgh"}, {2, ""}}};
  for (const auto& tail : tails) {
    for (uint32_t count : {0xffffffffu, 0x10000000u, 1000000u}) {
      const std::string body = UpBodyClaiming(count, tail);
      g_largest_allocation = 0;
      g_track_allocations = true;
      absl::StatusOr<CollectiveUp> up = Decode<CollectiveUp>(body);
      g_track_allocations = false;
      EXPECT_FALSE(up.ok()) << count;
      EXPECT_EQ(up.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_LT(g_largest_allocation.load(), size_t{1} << 16)
          << "count " << count << " with " << tail.size() << " entries";
    }
  }
  // The same claim in a per-rank result.
  FrameBuilder b(MessageType::kCollectiveDown);
  b.PutU32(0).PutU8(0).PutU32(0xffffffffu).PutU32(1).PutBytes("x");
  const std::string body = b.Finish().substr(4);
  g_largest_allocation = 0;
  g_track_allocations = true;
  absl::StatusOr<CollectiveDown> down = Decode<CollectiveDown>(body);
  g_track_allocations = false;
  EXPECT_FALSE(down.ok());
  EXPECT_LT(g_largest_allocation.load(), size_t{1} << 16);
}

TEST(MessagesMalformed, HugeByteStringLengthIsRejected) {
  FrameBuilder b(MessageType::kAgentError);
  b.PutI32(1).PutU32(0xffffffffu);
  b.PutU8('x');
  const std::string body = b.Finish().substr(4);
  g_largest_allocation = 0;
  g_track_allocations = true;
  absl::StatusOr<AgentError> m = Decode<AgentError>(body);
  g_track_allocations = false;
  EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_LT(g_largest_allocation.load(), size_t{1} << 16);
}

// ---------------------------------------------------------------------------
// FrameBuilder and FrameReader.

TEST(FrameReaderTest, FieldsAreLittleEndianAndChecked) {
  const std::string frame = FrameBuilder(MessageType::kKill)
                                .PutU8(0xab)
                                .PutU32(0x01020304)
                                .PutU64(0x1112131415161718ull)
                                .PutI32(-2)
                                .PutBytes("hi")
                                .Finish();
  EXPECT_EQ(frame.substr(0, 4), LengthPrefix(1 + 1 + 4 + 8 + 4 + 4 + 2));
  EXPECT_EQ(frame.substr(5, 1), "\xab");
  EXPECT_EQ(frame.substr(6, 4), "\x04\x03\x02\x01");
  EXPECT_EQ(frame.substr(10, 8), "\x18\x17\x16\x15\x14\x13\x12\x11");

  FrameReader r(std::string_view(frame).substr(4));
  EXPECT_EQ(r.type(), MessageType::kKill);
  EXPECT_EQ(r.GetU8(), 0xab);
  EXPECT_EQ(r.GetU32(), 0x01020304u);
  EXPECT_EQ(r.GetU64(), 0x1112131415161718ull);
  EXPECT_EQ(r.GetI32(), -2);
  EXPECT_EQ(r.GetBytes(), "hi");
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.at_end());
  EXPECT_TRUE(r.Done().ok());
  // Past the end: fails, and stays failed.
  EXPECT_EQ(r.GetU8(), 0);
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.Done().ok());
}

TEST(FrameReaderTest, AFailedReadPoisonsLaterReads) {
  const std::string body =
      std::string(1, static_cast<char>(MessageType::kFini)) +
      std::string("\x01\x02\x03", 3);
  FrameReader r(body);
  EXPECT_EQ(r.GetU32(), 0u);  // only 3 bytes left
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.GetU8(), 0);  // a byte is there, but the reader has failed
  EXPECT_FALSE(r.ok());
  const absl::Status s = r.Done();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("fini"));
}

TEST(FrameReaderTest, EmptyBody) {
  FrameReader r("");
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.Done().ok());
}

// ---------------------------------------------------------------------------
// FrameAssembler.

std::vector<std::string> SomeFrames() {
  return {Encode(Fini{1}),
          Encode(Hello{PeerRole::kRank, 3, 4, 5, "h"}),
          Encode(AgentError{2, AllBytes(10000)}),  // > the compaction point
          Encode(Kill{9}),
          Encode(CollectiveDown{7, true, AllBytes(5000), {}}),
          Encode(AgentReady{2})};
}

TEST(FrameAssemblerTest, OneByteAtATime) {
  const std::vector<std::string> frames = SomeFrames();
  std::string stream;
  for (const std::string& f : frames) stream += f;

  FrameAssembler assembler;
  std::vector<std::string> bodies;
  for (size_t i = 0; i < stream.size(); ++i) {
    assembler.Append(stream.substr(i, 1));
    absl::StatusOr<std::optional<std::string>> next = assembler.Next();
    ASSERT_TRUE(next.ok()) << next.status();
    if (next->has_value()) {
      bodies.push_back(**next);
      EXPECT_EQ(assembler.buffered(), 0u) << "after byte " << i;
    }
  }
  ASSERT_EQ(bodies.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(bodies[i], frames[i].substr(4)) << "frame " << i;
  }
  absl::StatusOr<std::optional<std::string>> next = assembler.Next();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
}

TEST(FrameAssemblerTest, SeveralFramesInOneAppend) {
  const std::vector<std::string> frames = SomeFrames();
  std::string stream;
  for (const std::string& f : frames) stream += f;
  const std::string partial = Encode(Fini{99});

  FrameAssembler assembler;
  assembler.Append(stream + partial.substr(0, 6));
  for (size_t i = 0; i < frames.size(); ++i) {
    absl::StatusOr<std::optional<std::string>> next = assembler.Next();
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_TRUE(next->has_value()) << "frame " << i;
    EXPECT_EQ(**next, frames[i].substr(4)) << "frame " << i;
  }
  absl::StatusOr<std::optional<std::string>> next = assembler.Next();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
  EXPECT_EQ(assembler.buffered(), 6u);

  assembler.Append(partial.substr(6));
  next = assembler.Next();
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(next->has_value());
  absl::StatusOr<Fini> fini = Decode<Fini>(**next);
  ASSERT_TRUE(fini.ok()) << fini.status();
  EXPECT_EQ(fini->rank, 99u);
}

TEST(FrameAssemblerTest, RandomChunking) {
  std::vector<std::string> frames;
  for (int i = 0; i < 300; ++i) {
    frames.push_back(
        Encode(AgentError{i, AllBytes(static_cast<size_t>(i * 13))}));
  }
  std::string stream;
  for (const std::string& f : frames) stream += f;
  FrameAssembler assembler;
  std::vector<std::string> bodies;
  uint32_t rng = 12345;
  size_t pos = 0;
  while (pos < stream.size()) {
    rng = rng * 1103515245 + 12345;
    const size_t n =
        std::min<size_t>((rng >> 16) % 3000 + 1, stream.size() - pos);
    assembler.Append(std::string_view(stream).substr(pos, n));
    pos += n;
    for (;;) {
      absl::StatusOr<std::optional<std::string>> next = assembler.Next();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) break;
      bodies.push_back(**next);
    }
  }
  ASSERT_EQ(bodies.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(bodies[i], frames[i].substr(4)) << i;
  }
  EXPECT_EQ(assembler.buffered(), 0u);
}

TEST(FrameAssemblerTest, FewerThanFourBytesIsNotAFrame) {
  FrameAssembler assembler;
  absl::StatusOr<std::optional<std::string>> next = assembler.Next();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
  assembler.Append(std::string("\x01\x00\x00", 3));
  next = assembler.Next();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
  EXPECT_EQ(assembler.buffered(), 3u);
}

TEST(FrameAssemblerTest, RejectsLengthZero) {
  FrameAssembler assembler;
  assembler.Append(LengthPrefix(0) + "rest");
  absl::StatusOr<std::optional<std::string>> next = assembler.Next();
  EXPECT_EQ(next.status().code(), absl::StatusCode::kDataLoss);
}

TEST(FrameAssemblerTest, RejectsLengthOverTheMaximum) {
  for (uint32_t len : {kMaxFrameBytes + 1, 0xffffffffu}) {
    FrameAssembler assembler;
    assembler.Append(LengthPrefix(len));
    absl::StatusOr<std::optional<std::string>> next = assembler.Next();
    EXPECT_EQ(next.status().code(), absl::StatusCode::kDataLoss) << len;
  }
  // After a good frame, too.
  FrameAssembler assembler;
  assembler.Append(Encode(Fini{1}) + LengthPrefix(kMaxFrameBytes + 1));
  absl::StatusOr<std::optional<std::string>> next = assembler.Next();
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->has_value());
  EXPECT_FALSE(assembler.Next().ok());
}

TEST(FrameAssemblerTest, MaximumLengthJustWaitsForTheBody) {
  FrameAssembler assembler;
  assembler.Append(LengthPrefix(kMaxFrameBytes) + "abc");
  absl::StatusOr<std::optional<std::string>> next = assembler.Next();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(next->has_value());
}

TEST(FrameAssemblerTest, TakeRestHandsOverUnreadBytes) {
  const std::string one = Encode(Fini{1});
  const std::string two = Encode(Kill{2});
  FrameAssembler assembler;
  assembler.Append(one + two + "xy");
  ASSERT_TRUE(assembler.Next().ok());
  EXPECT_EQ(assembler.TakeRest(), two + "xy");
  EXPECT_EQ(assembler.buffered(), 0u);
  absl::StatusOr<std::optional<std::string>> next = assembler.Next();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
  // Still usable afterwards.
  assembler.Append(one);
  next = assembler.Next();
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ(**next, one.substr(4));
}

// ---------------------------------------------------------------------------
// WriteFrame and ReadFrame over sockets.

TEST(SocketFrames, WriteThenRead) {
  SocketPair s;
  const std::string one = Encode(Hello{PeerRole::kRank, 1, 2, 3, "me"});
  const std::string two = Encode(Fini{1});
  ASSERT_TRUE(WriteFrame(s.a, one).ok());
  ASSERT_TRUE(WriteFrame(s.a, two, Soon()).ok());
  // ReadFrame takes exactly one frame; the next stays in the socket.
  absl::StatusOr<std::string> body = ReadFrame(s.b, Soon());
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, one.substr(4));
  body = ReadFrame(s.b, Soon());
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, two.substr(4));
}

size_t SocketBufferBytes(int fd) {
  int snd = 0, rcv = 0;
  socklen_t len = sizeof snd;
  getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &len);
  len = sizeof rcv;
  getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len);
  return static_cast<size_t>(snd) + static_cast<size_t>(rcv);
}

TEST(SocketFrames, FrameLargerThanTheSocketBuffer) {
  SocketPair s;
  const size_t size = std::max<size_t>(8 << 20, 8 * SocketBufferBytes(s.a));
  const std::string frame = Encode(AgentError{3, AllBytes(size)});
  absl::Status written;
  std::thread writer([&] { written = WriteFrame(s.a, frame, Soon()); });
  absl::StatusOr<std::string> body = ReadFrame(s.b, Soon());
  writer.join();
  EXPECT_TRUE(written.ok()) << written;
  ASSERT_TRUE(body.ok()) << body.status();
  ASSERT_EQ(body->size(), frame.size() - 4);
  EXPECT_TRUE(*body == frame.substr(4));
  absl::StatusOr<AgentError> m = Decode<AgentError>(*body);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->message.size(), size);
}

TEST(SocketFrames, LargeFrameOnANonBlockingWriter) {
  SocketPair s;
  ASSERT_EQ(fcntl(s.a, F_SETFL, fcntl(s.a, F_GETFL) | O_NONBLOCK), 0);
  const std::string frame =
      Encode(CollectiveDown{1, true, AllBytes(4 << 20), {}});
  absl::Status written;
  std::thread writer([&] { written = WriteFrame(s.a, frame, Soon()); });
  absl::StatusOr<std::string> body = ReadFrame(s.b, Soon());
  writer.join();
  EXPECT_TRUE(written.ok()) << written;
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_TRUE(*body == frame.substr(4));
}

TEST(SocketFrames, SilentPeerIsDeadlineExceeded) {
  SocketPair s;
  absl::StatusOr<std::string> body =
      ReadFrame(s.b, absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(body.status().code(), absl::StatusCode::kDeadlineExceeded)
      << body.status();
  // A deadline already past.
  body = ReadFrame(s.b, absl::Now() - absl::Seconds(1));
  EXPECT_EQ(body.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(SocketFrames, PeerStoppingMidFrameIsDeadlineExceeded) {
  SocketPair s;
  const std::string frame = Encode(Fini{5});
  ASSERT_EQ(write(s.a, frame.data(), 6), 6);
  absl::StatusOr<std::string> body =
      ReadFrame(s.b, absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(body.status().code(), absl::StatusCode::kDeadlineExceeded)
      << body.status();
}

TEST(SocketFrames, ClosedPeerIsUnavailable) {
  SocketPair s;
  s.CloseA();
  absl::StatusOr<std::string> body = ReadFrame(s.b, Soon());
  EXPECT_EQ(body.status().code(), absl::StatusCode::kUnavailable)
      << body.status();
}

TEST(SocketFrames, PeerClosingMidFrameIsUnavailable) {
  for (size_t cut : {2, 4, 7}) {
    SocketPair s;
    const std::string frame = Encode(Fini{5});
    ASSERT_EQ(write(s.a, frame.data(), cut), static_cast<ssize_t>(cut));
    s.CloseA();
    absl::StatusOr<std::string> body = ReadFrame(s.b, Soon());
    EXPECT_EQ(body.status().code(), absl::StatusCode::kUnavailable)
        << "cut at " << cut << ": " << body.status();
  }
}

TEST(SocketFrames, CorruptLengthOnTheSocketIsRejected) {
  for (uint32_t len : {0u, kMaxFrameBytes + 1}) {
    SocketPair s;
    const std::string header = LengthPrefix(len);
    ASSERT_EQ(write(s.a, header.data(), 4), 4);
    absl::StatusOr<std::string> body = ReadFrame(s.b, Soon());
    EXPECT_EQ(body.status().code(), absl::StatusCode::kDataLoss)
        << len << ": " << body.status();
  }
}

TEST(SocketFrames, WriteToAClosedPeerIsAnErrorNotSigpipe) {
  // Make sure SIGPIPE would kill the process if WriteFrame let it through.
  struct sigaction dfl = {}, old = {};
  dfl.sa_handler = SIG_DFL;
  ASSERT_EQ(sigaction(SIGPIPE, &dfl, &old), 0);
  SocketPair s;
  s.CloseB();
  const absl::Status small = WriteFrame(s.a, Encode(Fini{1}), Soon());
  const absl::Status large =
      WriteFrame(s.a, Encode(AgentError{1, AllBytes(1 << 20)}), Soon());
  sigaction(SIGPIPE, &old, nullptr);
  EXPECT_FALSE(small.ok());
  EXPECT_EQ(small.code(), absl::StatusCode::kUnavailable) << small;
  EXPECT_FALSE(large.ok());
  EXPECT_EQ(large.code(), absl::StatusCode::kUnavailable) << large;
}

TEST(SocketFrames, PeerClosingDuringALargeWriteIsAnError) {
  struct sigaction dfl = {}, old = {};
  dfl.sa_handler = SIG_DFL;
  ASSERT_EQ(sigaction(SIGPIPE, &dfl, &old), 0);
  SocketPair s;
  const std::string frame = Encode(AgentError{1, AllBytes(16 << 20)});
  absl::Status written;
  std::thread writer([&] { written = WriteFrame(s.a, frame, Soon()); });
  // Read a little, then hang up while the writer is blocked.
  char buf[1000];
  ASSERT_GT(read(s.b, buf, sizeof buf), 0);
  s.CloseB();
  writer.join();
  sigaction(SIGPIPE, &old, nullptr);
  EXPECT_FALSE(written.ok());
}

TEST(SocketFrames, FullNonBlockingSocketHitsTheWriteDeadline) {
  SocketPair s;
  ASSERT_EQ(fcntl(s.a, F_SETFL, fcntl(s.a, F_GETFL) | O_NONBLOCK), 0);
  const size_t size = std::max<size_t>(4 << 20, 4 * SocketBufferBytes(s.a));
  const std::string frame = Encode(AgentError{1, AllBytes(size)});
  const absl::Status s1 =
      WriteFrame(s.a, frame, absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(s1.code(), absl::StatusCode::kDeadlineExceeded) << s1;
  // Still full: a small frame cannot get through either.
  const absl::Status s2 =
      WriteFrame(s.a, Encode(Fini{1}), absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(s2.code(), absl::StatusCode::kDeadlineExceeded) << s2;
}

}  // namespace
}  // namespace gexrt::wire
