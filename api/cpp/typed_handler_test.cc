// Typed Active Message handlers, checked without a job: which send calls
// compile (as concepts and requires-expressions evaluated to true or
// false, since a call that fails to compile cannot be a passing test), the
// handler signatures that are accepted, and the trampolines' conversion of
// argument words back to each parameter type. Also that the public gex::
// names sit beside the library's internal ones, which live in gexrt:: so
// the two never collide (bootstrap/bootstrap.h defines gexrt::Rank). No
// GASNet function is called.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/bootstrap.h"  // the internal gexrt::Rank
#include "gex/gex.hpp"
#include "gtest/gtest.h"

namespace {

enum class Color : uint8_t { kRed = 1, kBlue = 200 };
enum class Wide : uint64_t { kX = 1 };

// What the last handler call saw.
struct Seen {
  int calls = 0;
  gex_Token_t token = nullptr;
  std::span<const std::byte> payload;
  std::vector<long long> args;
};
Seen g_seen;

void Short0(gex::Token t) {
  ++g_seen.calls;
  g_seen.token = t.c_handle();
}
void Short2(gex::Token, uint32_t a, int16_t b) {
  ++g_seen.calls;
  g_seen.args = {a, b};
}
void Mixed(gex::Token, bool b, int8_t i8, uint8_t u8, int16_t i16, uint16_t u16,
           int32_t i32, uint32_t u32, Color c) {
  ++g_seen.calls;
  g_seen.args = {b, i8, u8, i16, u16, i32, u32, static_cast<long long>(c)};
}
void Medium1(gex::Token, std::span<const std::byte> p, int32_t k) {
  ++g_seen.calls;
  g_seen.payload = p;
  g_seen.args = {k};
}
void MutablePayload(gex::Token, std::span<std::byte> p) { p[0] = std::byte{1}; }
void NoexceptShort(gex::Token, int32_t) noexcept {}
void Sixteen(gex::Token, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
             int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
             int32_t, int32_t, int32_t) {}

// Not handlers.
void Seventeen(gex::Token, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
               int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
               int32_t, int32_t, int32_t, int32_t) {}
void TakesInt64(gex::Token, int64_t) {}
void TakesDouble(gex::Token, double) {}
void TakesPointer(gex::Token, int*) {}
void TakesWideEnum(gex::Token, Wide) {}
void NoToken(int32_t) {}
int ReturnsInt(gex::Token) { return 0; }
void PayloadNotFirst(gex::Token, int32_t, std::span<const std::byte>) {}
void RawTokenFirst(gex_Token_t, int32_t) {}

// ---------------------------------------------------------------------------
// Which functions are handlers.

static_assert(gex::AmShortHandler<Short0>);
static_assert(gex::AmShortHandler<Short2>);
static_assert(gex::AmShortHandler<Mixed>);
static_assert(gex::AmShortHandler<NoexceptShort>);
static_assert(gex::AmShortHandler<Sixteen>);
static_assert(gex::AmPayloadHandler<Medium1>);
static_assert(gex::AmPayloadHandler<MutablePayload>);
static_assert(!gex::AmShortHandler<Medium1>);
static_assert(!gex::AmPayloadHandler<Short2>);

static_assert(!gex::AmHandler<Seventeen>);   // more than 16 arguments
static_assert(!gex::AmHandler<TakesInt64>);  // wider than an argument word
static_assert(!gex::AmHandler<TakesDouble>);
static_assert(!gex::AmHandler<TakesPointer>);
static_assert(!gex::AmHandler<TakesWideEnum>);
static_assert(!gex::AmHandler<NoToken>);
static_assert(!gex::AmHandler<ReturnsInt>);
static_assert(!gex::AmHandler<PayloadNotFirst>);
static_assert(!gex::AmHandler<RawTokenFirst>);

// ---------------------------------------------------------------------------
// Which sends compile: the requires-expressions are exactly the calls a
// client would write.

template <auto Fn, class... A>
constexpr bool kCanRequestShort = requires(gex::Team tm, A... a) {
  gex::request_short<Fn>(tm, 0u, a...);
};
template <auto Fn, class... A>
constexpr bool kCanReplyShort = requires(gex::Token t, A... a) {
  gex::reply_short<Fn>(t, a...);
};
template <auto Fn, class P, class... A>
constexpr bool kCanRequestMedium = requires(gex::Team tm, const P& p, A... a) {
  gex::request_medium<Fn>(tm, 0u, p, a...);
};
template <auto Fn, class P, class... A>
constexpr bool kCanRequestLong = requires(gex::Team tm, const P& p, void* d,
                                          A... a) {
  gex::request_long<Fn>(tm, 0u, p, d, a...);
};
template <auto Fn, class P, class... A>
constexpr bool kCanReplyMedium = requires(gex::Token t, const P& p, A... a) {
  gex::reply_medium<Fn>(t, p, a...);
};

TEST(TypedHandlerTest, MatchingSendsCompile) {
  EXPECT_TRUE((kCanRequestShort<Short0>));
  EXPECT_TRUE((kCanRequestShort<Short2, uint32_t, int16_t>));
  // An int of the same width as uint32_t carries the same bits.
  EXPECT_TRUE((kCanRequestShort<Short2, int, int16_t>));
  EXPECT_TRUE((kCanRequestShort<Short2, uint32_t, uint16_t>));
  // An int8_t widens to int16_t without loss.
  EXPECT_TRUE((kCanRequestShort<Short2, uint32_t, int8_t>));
  EXPECT_TRUE((kCanReplyShort<Short2, uint32_t, int16_t>));
  EXPECT_TRUE((kCanRequestShort<Mixed, bool, int8_t, uint8_t, int16_t, uint16_t,
                                int32_t, uint32_t, Color>));
  EXPECT_TRUE((kCanRequestShort<Sixteen, int, int, int, int, int, int, int, int,
                                int, int, int, int, int, int, int, int>));
  EXPECT_TRUE((kCanRequestMedium<Medium1, std::span<const std::byte>, int>));
  EXPECT_TRUE((kCanRequestMedium<Medium1, std::vector<double>, int32_t>));
  EXPECT_TRUE((kCanRequestMedium<Medium1, std::array<char, 3>, int32_t>));
  EXPECT_TRUE((kCanRequestMedium<Medium1, std::string_view, int32_t>));
  EXPECT_TRUE((kCanRequestLong<Medium1, std::vector<int>, uint32_t>));
  EXPECT_TRUE((kCanReplyMedium<Medium1, std::vector<int>, int32_t>));
  EXPECT_TRUE((gex::AmSendable<Short2, const uint32_t&, int16_t&>));
}

TEST(TypedHandlerTest, WrongArgumentCountsDoNotCompile) {
  EXPECT_FALSE((kCanRequestShort<Short0, int>));
  EXPECT_FALSE((kCanRequestShort<Short2>));
  EXPECT_FALSE((kCanRequestShort<Short2, uint32_t>));
  EXPECT_FALSE((kCanRequestShort<Short2, uint32_t, int16_t, int16_t>));
  EXPECT_FALSE((kCanReplyShort<Short2, uint32_t>));
  EXPECT_FALSE((kCanRequestMedium<Medium1, std::vector<int>>));
  EXPECT_FALSE((kCanRequestMedium<Medium1, std::vector<int>, int, int>));
  EXPECT_FALSE((kCanRequestLong<Medium1, std::vector<int>>));
  EXPECT_FALSE((kCanRequestShort<Sixteen, int, int, int, int, int, int, int,
                                 int, int, int, int, int, int, int, int>));
  EXPECT_FALSE((gex::AmSendable<Short2, uint32_t>));
  EXPECT_FALSE((gex::AmSendable<Short0, int>));
}

TEST(TypedHandlerTest, WrongArgumentTypesDoNotCompile) {
  // Narrowing: wider integers, and int into a 16-bit parameter.
  EXPECT_FALSE((kCanRequestShort<Short2, uint64_t, int16_t>));
  EXPECT_FALSE((kCanRequestShort<Short2, uint32_t, int>));
  EXPECT_FALSE((kCanRequestShort<Short2, uint32_t, uint32_t>));
  // Not integers at all.
  EXPECT_FALSE((kCanRequestShort<Short2, double, int16_t>));
  EXPECT_FALSE((kCanRequestShort<Short2, int*, int16_t>));
  EXPECT_FALSE((kCanRequestShort<Short2, std::string, int16_t>));
  EXPECT_FALSE((kCanRequestShort<Short2, gex::Flags, int16_t>));
  // Enums only as themselves, and nothing but a bool for a bool.
  EXPECT_FALSE((kCanRequestShort<Mixed, int, int8_t, uint8_t, int16_t, uint16_t,
                                 int32_t, uint32_t, Color>));
  EXPECT_FALSE((kCanRequestShort<Mixed, bool, int8_t, uint8_t, int16_t,
                                 uint16_t, int32_t, uint32_t, int>));
  // Categories: no Medium to a Short handler, no Short to a payload one.
  EXPECT_FALSE(
      (kCanRequestMedium<Short2, std::vector<int>, uint32_t, int16_t>));
  EXPECT_FALSE((kCanRequestShort<Medium1, int32_t>));
  EXPECT_FALSE((kCanRequestLong<Short0, std::vector<int>>));
  // A payload must be contiguous bytes of trivially copyable elements.
  EXPECT_FALSE((kCanRequestMedium<Medium1, int, int32_t>));
  EXPECT_FALSE((kCanRequestMedium<Medium1, std::vector<std::string>, int>));
  // Not a handler at all.
  EXPECT_FALSE((kCanRequestShort<TakesInt64, int64_t>));
  EXPECT_FALSE((gex::AmSendable<TakesDouble, double>));
}

// ---------------------------------------------------------------------------
// RMA forms that must not compile: lc options a form does not take, and
// element types that differ between the remote pointer and the span.

template <class Lc>
constexpr bool kPutNbTakes = requires(gex::Team tm, int* d,
                                      std::span<const int> s, Lc lc) {
  gex::put_nb(tm, 0u, d, s, lc);
};
template <class Lc>
constexpr bool kPutNbiTakes = requires(gex::Team tm, int* d,
                                       std::span<const int> s, Lc lc) {
  gex::put_nbi(tm, 0u, d, s, lc);
};

TEST(TypedRmaTest, LocalCompletionOptionsAreChecked) {
  EXPECT_TRUE(kPutNbTakes<gex::lc::Now>);
  EXPECT_TRUE(kPutNbTakes<gex::lc::Defer>);
  EXPECT_TRUE(kPutNbTakes<gex::Leaf&>);
  EXPECT_FALSE(kPutNbTakes<gex::lc::Group>);
  EXPECT_TRUE(kPutNbiTakes<gex::lc::Now>);
  EXPECT_TRUE(kPutNbiTakes<gex::lc::Defer>);
  EXPECT_TRUE(kPutNbiTakes<gex::lc::Group>);
  EXPECT_FALSE(kPutNbiTakes<gex::Leaf&>);
}

template <class V>
constexpr bool kCanPutFrom = requires(gex::Team tm, int* d, V v) {
  gex::put(tm, 0u, d, v);
};
template <class V>
constexpr bool kCanGetInto = requires(gex::Team tm, V v, const int* s) {
  gex::get(tm, v, 0u, s);
};
template <class T>
constexpr bool kCanPutVal = requires(gex::Team tm, T* d, T v) {
  gex::put_val(tm, 0u, d, v);
};

TEST(TypedRmaTest, ElementTypesMustAgree) {
  EXPECT_TRUE(kCanPutFrom<std::vector<int>>);
  EXPECT_TRUE(kCanPutFrom<std::span<const int>>);
  EXPECT_TRUE((kCanPutFrom<std::array<int, 4>>));
  EXPECT_FALSE(kCanPutFrom<std::vector<double>>);
  EXPECT_TRUE(kCanGetInto<std::span<int>>);
  EXPECT_FALSE(kCanGetInto<std::span<const int>>);  // into read-only memory
  EXPECT_FALSE(kCanGetInto<std::span<unsigned>>);
  EXPECT_TRUE(kCanPutVal<uint16_t>);
  EXPECT_TRUE(kCanPutVal<double>);
  EXPECT_FALSE((kCanPutVal<std::array<char, 9>>));  // over 8 bytes
}

// ---------------------------------------------------------------------------
// The trampolines registration puts in the C table: called here the way
// the library calls a handler, with argument words.

template <auto Fn>
auto Trampoline() {
  return &gex::detail::SigOf<Fn>::template Trampoline<Fn>;
}

TEST(TypedHandlerTest, TrampolinesConvertEveryWordBack) {
  g_seen = {};
  auto* token = reinterpret_cast<gex_Token_t>(&g_seen);
  Trampoline<Short0>()(token);
  EXPECT_EQ(g_seen.calls, 1);
  EXPECT_EQ(g_seen.token, token);

  // What a send encodes is what the handler gets, at the extremes of
  // every parameter type.
  const auto words = gex::detail::SigOf<Mixed>::Args::Encode(
      true, int8_t{-128}, uint8_t{255}, int16_t{-32768}, uint16_t{65535},
      int32_t{-2147483647 - 1}, uint32_t{4294967295u}, Color::kBlue);
  Trampoline<Mixed>()(token, words[0], words[1], words[2], words[3], words[4],
                      words[5], words[6], words[7]);
  EXPECT_EQ(g_seen.calls, 2);
  EXPECT_EQ(g_seen.args,
            (std::vector<long long>{1, -128, 255, -32768, 65535,
                                    -2147483647LL - 1, 4294967295LL, 200}));

  // A same-width int sent for a uint32_t parameter arrives as its bits.
  const auto w2 = gex::detail::SigOf<Short2>::Args::Encode(-1, int8_t{-5});
  Trampoline<Short2>()(token, w2[0], w2[1]);
  EXPECT_EQ(g_seen.args, (std::vector<long long>{4294967295LL, -5}));

  std::byte buf[5] = {};
  const auto w3 = gex::detail::SigOf<Medium1>::Args::Encode(-7);
  Trampoline<Medium1>()(token, buf, sizeof buf, w3[0]);
  EXPECT_EQ(g_seen.payload.data(), buf);
  EXPECT_EQ(g_seen.payload.size(), sizeof buf);
  EXPECT_EQ(g_seen.args, (std::vector<long long>{-7}));

  Trampoline<MutablePayload>()(token, buf, 1);
  EXPECT_EQ(buf[0], std::byte{1});
}

// The trampoline has exactly the C handler signature the library calls
// through (am/invoke.h): token, [buf, nbytes,] one int32_t word per
// argument.
static_assert(
    std::is_same_v<decltype(Trampoline<Short2>()),
                   void (*)(gex_Token_t, gex_AM_Arg_t, gex_AM_Arg_t)>);
static_assert(
    std::is_same_v<decltype(Trampoline<Medium1>()),
                   void (*)(gex_Token_t, void*, size_t, gex_AM_Arg_t)>);

// ---------------------------------------------------------------------------
// Names and value types.

TEST(TypesTest, PublicRankIsTheInternalRank) {
  static_assert(std::is_same_v<gex::Rank, gex_Rank_t>);
  static_assert(std::is_same_v<gex::Rank, uint32_t>);
  static_assert(std::is_same_v<gex::Rank, gexrt::Rank>);
  EXPECT_EQ(gex::kRankInvalid, GEX_RANK_INVALID);
}

TEST(TypesTest, HandlesAreThinValues) {
  static_assert(sizeof(gex::Team) == sizeof(gex_TM_t));
  static_assert(sizeof(gex::Endpoint) == sizeof(gex_EP_t));
  static_assert(sizeof(gex::Segment) == sizeof(gex_Segment_t));
  static_assert(sizeof(gex::Token) == sizeof(gex_Token_t));
  static_assert(sizeof(gex::Event) == sizeof(gex_Event_t));
  static_assert(std::is_trivially_copyable_v<gex::Team>);
  static_assert(!std::is_copy_constructible_v<gex::Event>);
  static_assert(std::is_nothrow_move_constructible_v<gex::Event>);
  static_assert(!std::is_copy_constructible_v<gex::Client>);
  static_assert(std::is_move_constructible_v<gex::Client>);
  static_assert(!std::is_copy_constructible_v<gex::AccessRegion>);
  static_assert(!std::is_move_constructible_v<gex::AccessRegion>);
  EXPECT_TRUE((gex::flags::immediate | gex::flags::none).bits ==
              GEX_FLAG_IMMEDIATE);
  EXPECT_EQ(gex::to_c(gex::ec::put | gex::ec::get), GEX_EC_PUT | GEX_EC_GET);
}

TEST(TypesTest, ValueFormsCarryTheMemoryImage) {
  EXPECT_EQ(gex::detail::ToValue(int8_t{-1}), 0xffu);
  EXPECT_EQ(gex::detail::ToValue(int16_t{-2}), 0xfffeu);
  EXPECT_EQ(gex::detail::FromValue<int16_t>(0xfffeu), -2);
  EXPECT_EQ(gex::detail::ToValue(1.0f), 0x3f800000u);
  EXPECT_EQ(gex::detail::FromValue<float>(0x3f800000u), 1.0f);
  struct Three {
    char c[3];
  };
  const Three t{{1, 2, 3}};
  EXPECT_EQ(gex::detail::ToValue(t), 0x030201u);
}

}  // namespace
