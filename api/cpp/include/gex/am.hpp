// gex/am.hpp: Active Messages with typed handlers.
//
// A handler is a plain function; its signature says what it takes:
//
//   void on_ping(gex::Token t, uint32_t seq, int16_t tag);              //
//   Short void on_data(gex::Token t, std::span<const std::byte> p, int32_t k);
//   // Medium/Long
//
// Each argument after the token (and the payload) is an integer, bool or
// enum type of at most 4 bytes (one gex_AM_Arg_t); at most 16 of them.
// Registration and sends name the function itself:
//
//   gex::register_handlers<on_ping, on_data>(client.endpoint());
//   gex::request_short<on_ping>(team, peer, 7u, int16_t{-1});
//   gex::request_medium<on_data>(team, peer, payload, 42);
//   gex::request_long<on_data>(team, peer, payload, remote_dest, 42);
//   // inside a request handler:
//   gex::reply_short<on_pong>(t, seq);
//
// The send calls are checked at compile time against the handler: the
// number of arguments must match, and each argument must convert to its
// parameter without losing bits (the same type; an integer that brace-
// initialises the parameter; or an integer of the same width, since the
// word carries the bit pattern). A mismatch makes the call ill-formed; the
// concept gex::AmSendable<Fn, Args...> says the same as a bool.
//
// What runs: registration puts a trampoline per handler in the C table,
// `void T(gex_Token_t, [void*, size_t,] gex_AM_Arg_t...)`, that converts
// the words back and calls the function by its constant address: a direct
// call the compiler can inline, no std::function and no virtual. A send is
// the arguments packed into a stack array and one call of the C entry
// point the C inline forms (gex_AM_RequestShort2 ...) also call.
//
// Indices: register_handlers<Fns...> asks GASNet for free indices (in the
// order given: call it in the same order on every rank and every rank gets
// the same indices); register_handler<Fn>(ep, index) takes a fixed one. A
// function is registered once per process, for Requests and Replies alike
// (Short; or Medium and Long for a payload handler).
#ifndef GEX_CPP_AM_HPP_
#define GEX_CPP_AM_HPP_

#include <gasnetex.h>

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <span>
#include <type_traits>

#include "gex/client.hpp"
#include "gex/types.hpp"

namespace gex {

// The token a handler gets: who sent the message, and what to reply to.
class Token {
 public:
  constexpr explicit Token(gex_Token_t t) : t_(t) {}

  // The sender's rank (in the team of the message).
  Rank source() const { return info(GEX_TI_SRCRANK).gex_srcrank; }
  bool is_request() const { return info(GEX_TI_IS_REQ).gex_is_req != 0; }
  bool is_long() const { return info(GEX_TI_IS_LONG).gex_is_long != 0; }
  gex_Token_Info_t info(gex_TI_t mask = GEX_TI_ALL) const {
    gex_Token_Info_t i{};
    gex_Token_Info(t_, &i, mask);
    return i;
  }
  constexpr gex_Token_t c_handle() const { return t_; }

 private:
  gex_Token_t t_;
};

// A type one AM argument word carries.
template <class T>
concept AmArg = (std::is_integral_v<T> || std::is_enum_v<T>)&&sizeof(T) <=
                    sizeof(gex_AM_Arg_t) &&
                !std::is_const_v<T> && !std::is_volatile_v<T>;

// The payload parameter of a Medium/Long handler.
template <class T>
concept AmPayloadParam = std::same_as<T, std::span<const std::byte>> ||
    std::same_as<T, std::span<std::byte>>;

// A payload to send: any contiguous, sized range of trivially copyable
// elements (a span, vector, array, string_view...), sent as its bytes.
template <class R>
concept AmPayload =
    std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
    std::is_trivially_copyable_v<std::ranges::range_value_t<R>>;

// Whether an argument of type A may be sent for a parameter of type P.
template <class A, class P>
concept AmArgFor = AmArg<P> &&
    (std::same_as<A, P> || (std::is_integral_v<A> && std::is_integral_v<P> &&
                            !std::same_as<P, bool> && (requires(A a) {
                              P{a};
                            } || sizeof(A) == sizeof(P))));

namespace detail {

template <class>
using Word = gex_AM_Arg_t;

template <AmArg T>
constexpr gex_AM_Arg_t ToWord(T v) {
  if constexpr (std::is_enum_v<T>) {
    return static_cast<gex_AM_Arg_t>(static_cast<std::underlying_type_t<T>>(v));
  } else {
    return static_cast<gex_AM_Arg_t>(v);
  }
}
template <AmArg T>
constexpr T FromWord(gex_AM_Arg_t w) {
  if constexpr (std::same_as<T, bool>) {
    return w != 0;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<T>(static_cast<std::underlying_type_t<T>>(w));
  } else {
    return static_cast<T>(w);
  }
}

// The parameters after the token (and payload).
template <class... P>
struct ArgList {
  static constexpr unsigned kCount = sizeof...(P);
  static constexpr bool kValid = (AmArg<P> && ...) && kCount <= 16;

  template <class... A>
  static constexpr std::array<gex_AM_Arg_t, kCount> Encode(A... a) {
    return {ToWord(static_cast<P>(a))...};
  }
};

// What a handler's signature says. kind: 0 not a handler, 1 Short,
// 2 payload (Medium/Long).
template <class F>
struct HandlerSig {
  static constexpr int kKind = 0;
  static constexpr bool kValid = false;
};
template <class... P>
struct HandlerSig<void (*)(Token, P...)> {
  static constexpr int kKind = 1;
  using Args = ArgList<P...>;
  static constexpr bool kValid = Args::kValid;
  template <auto Fn>
  static void Trampoline(gex_Token_t t, Word<P>... w) {
    Fn(Token(t), FromWord<P>(w)...);
  }
};
template <class... P>
struct HandlerSig<void (*)(Token, P...) noexcept>
    : HandlerSig<void (*)(Token, P...)> {};
template <AmPayloadParam B, class... P>
struct HandlerSig<void (*)(Token, B, P...)> {
  static constexpr int kKind = 2;
  using Args = ArgList<P...>;
  static constexpr bool kValid = Args::kValid;
  template <auto Fn>
  static void Trampoline(gex_Token_t t, void* buf, std::size_t n,
                         Word<P>... w) {
    Fn(Token(t), B(static_cast<std::byte*>(buf), n), FromWord<P>(w)...);
  }
};
template <AmPayloadParam B, class... P>
struct HandlerSig<void (*)(Token, B, P...) noexcept>
    : HandlerSig<void (*)(Token, B, P...)> {};

template <auto Fn>
using SigOf = HandlerSig<std::remove_cvref_t<decltype(Fn)>>;

// The index each handler was registered at (0: not registered). Written by
// registration, which happens before any thread sends.
template <auto Fn>
inline gex_AM_Index_t g_index = 0;

template <auto Fn>
const char* HandlerName() {
  return __PRETTY_FUNCTION__;
}

}  // namespace detail

// A function that can be an Active Message handler.
template <auto Fn>
concept AmHandler = detail::SigOf<Fn>::kValid;
template <auto Fn>
concept AmShortHandler = AmHandler<Fn> && detail::SigOf<Fn>::kKind == 1;
template <auto Fn>
concept AmPayloadHandler = AmHandler<Fn> && detail::SigOf<Fn>::kKind == 2;

// Whether Args... may be sent to handler Fn (count and types).
namespace detail {
// Whether arguments A... fit the parameter list L (an ArgList); the pairs
// are compared only once the counts agree.
template <bool kSameCount, class L, class... A>
struct Match : std::false_type {};
template <class... P, class... A>
struct Match<true, ArgList<P...>, A...>
    : std::bool_constant<(AmArgFor<std::remove_cvref_t<A>, P> && ...)> {};

template <class Sig, class... A>
struct Accepts : std::false_type {};
template <class Sig, class... A>
requires Sig::kValid struct Accepts<Sig, A...>
    : Match<sizeof...(A) == Sig::Args::kCount, typename Sig::Args, A...> {
};
}  // namespace detail

template <auto Fn, class... Args>
concept AmSendable =
    AmHandler<Fn> && detail::Accepts<detail::SigOf<Fn>, Args...>::value;

// The index `Fn` was registered at (0 before registration).
template <auto Fn>
requires AmHandler<Fn> gex_AM_Index_t handler_index() {
  return detail::g_index<Fn>;
}

namespace detail {
template <auto Fn>
gex_AM_Entry_t EntryFor(gex_AM_Index_t index) {
  using Sig = SigOf<Fn>;
  const gex_Flags_t category =
      Sig::kKind == 1 ? GEX_FLAG_AM_SHORT : GEX_FLAG_AM_MEDLONG;
  return gex_AM_Entry_t{
      index,
      reinterpret_cast<gex_AM_Fn_t>(&Sig::template Trampoline<Fn>),
      category | GEX_FLAG_AM_REQREP,
      Sig::Args::kCount,
      nullptr,
      HandlerName<Fn>()};
}
}  // namespace detail

// Registers every handler at indices GASNet picks (the same on every rank
// when every rank registers the same list). Throws gex::Error
// (GASNET_ERR_BAD_ARG) when GASNet refuses, e.g. a handler registered
// twice; then none is registered.
template <auto... Fns>
requires(AmHandler<Fns>&&...) void register_handlers(Endpoint ep) {
  gex_AM_Entry_t table[] = {detail::EntryFor<Fns>(0)...};
  detail::Check(gex_EP_RegisterHandlers(ep.c_handle(), table, sizeof...(Fns)),
                "gex_EP_RegisterHandlers");
  std::size_t i = 0;
  ((detail::g_index<Fns> = table[i++].gex_index), ...);
}

// Registers one handler at a fixed index (GEX_AM_INDEX_BASE..255).
template <auto Fn>
requires AmHandler<Fn>
void register_handler(Endpoint ep, gex_AM_Index_t index) {
  gex_AM_Entry_t entry = detail::EntryFor<Fn>(index);
  detail::Check(gex_EP_RegisterHandlers(ep.c_handle(), &entry, 1),
                "gex_EP_RegisterHandlers");
  detail::g_index<Fn> = entry.gex_index;
}

// ---- Sends ----------------------------------------------------------------
//
// Each returns true once the message is on its way (its payload may be
// reused at once: local completion is synchronous), or false when
// gex::flags::immediate was given (a leading Flags argument) and it would
// have had to wait.

namespace detail {
template <class R>
const void* PayloadData(const R& r) {
  return std::ranges::data(r);
}
template <class R>
std::size_t PayloadBytes(const R& r) {
  return std::ranges::size(r) * sizeof(std::ranges::range_value_t<R>);
}
}  // namespace detail

template <auto Fn, class... A>
requires AmShortHandler<Fn> && AmSendable<Fn, A...>
bool request_short(Flags f, Team tm, Rank r, A... args) {
  const auto w = detail::SigOf<Fn>::Args::Encode(args...);
  return _gex_AM_RequestShortV(tm.c_handle(), r, detail::g_index<Fn>, f.bits,
                               w.size(), w.data()) == 0;
}
template <auto Fn, class... A>
requires AmShortHandler<Fn> && AmSendable<Fn, A...>
bool request_short(Team tm, Rank r, A... args) {
  return request_short<Fn>(Flags(), tm, r, args...);
}

template <auto Fn, AmPayload P, class... A>
requires AmPayloadHandler<Fn> && AmSendable<Fn, A...>
bool request_medium(Flags f, Team tm, Rank r, const P& payload, A... args) {
  const auto w = detail::SigOf<Fn>::Args::Encode(args...);
  return _gex_AM_RequestMediumV(tm.c_handle(), r, detail::g_index<Fn>,
                                detail::PayloadData(payload),
                                detail::PayloadBytes(payload), GEX_EVENT_NOW,
                                f.bits, w.size(), w.data()) == 0;
}
template <auto Fn, AmPayload P, class... A>
requires AmPayloadHandler<Fn> && AmSendable<Fn, A...>
bool request_medium(Team tm, Rank r, const P& payload, A... args) {
  return request_medium<Fn>(Flags(), tm, r, payload, args...);
}

// `dest`: where the payload lands in rank r's segment (its owner's address).
template <auto Fn, AmPayload P, class... A>
requires AmPayloadHandler<Fn> && AmSendable<Fn, A...>
bool request_long(Flags f, Team tm, Rank r, const P& payload, void* dest,
                  A... args) {
  const auto w = detail::SigOf<Fn>::Args::Encode(args...);
  return _gex_AM_RequestLongV(tm.c_handle(), r, detail::g_index<Fn>,
                              detail::PayloadData(payload),
                              detail::PayloadBytes(payload), dest,
                              GEX_EVENT_NOW, f.bits, w.size(), w.data()) == 0;
}
template <auto Fn, AmPayload P, class... A>
requires AmPayloadHandler<Fn> && AmSendable<Fn, A...>
bool request_long(Team tm, Rank r, const P& payload, void* dest, A... args) {
  return request_long<Fn>(Flags(), tm, r, payload, dest, args...);
}

// Replies: from inside a Request handler, at most one per request.
template <auto Fn, class... A>
requires AmShortHandler<Fn> && AmSendable<Fn, A...>
bool reply_short(Flags f, Token t, A... args) {
  const auto w = detail::SigOf<Fn>::Args::Encode(args...);
  return _gex_AM_ReplyShortV(t.c_handle(), detail::g_index<Fn>, f.bits,
                             w.size(), w.data()) == 0;
}
template <auto Fn, class... A>
requires AmShortHandler<Fn> && AmSendable<Fn, A...>
bool reply_short(Token t, A... args) {
  return reply_short<Fn>(Flags(), t, args...);
}

template <auto Fn, AmPayload P, class... A>
requires AmPayloadHandler<Fn> && AmSendable<Fn, A...>
bool reply_medium(Flags f, Token t, const P& payload, A... args) {
  const auto w = detail::SigOf<Fn>::Args::Encode(args...);
  return _gex_AM_ReplyMediumV(t.c_handle(), detail::g_index<Fn>,
                              detail::PayloadData(payload),
                              detail::PayloadBytes(payload), GEX_EVENT_NOW,
                              f.bits, w.size(), w.data()) == 0;
}
template <auto Fn, AmPayload P, class... A>
requires AmPayloadHandler<Fn> && AmSendable<Fn, A...>
bool reply_medium(Token t, const P& payload, A... args) {
  return reply_medium<Fn>(Flags(), t, payload, args...);
}

template <auto Fn, AmPayload P, class... A>
requires AmPayloadHandler<Fn> && AmSendable<Fn, A...>
bool reply_long(Flags f, Token t, const P& payload, void* dest, A... args) {
  const auto w = detail::SigOf<Fn>::Args::Encode(args...);
  return _gex_AM_ReplyLongV(t.c_handle(), detail::g_index<Fn>,
                            detail::PayloadData(payload),
                            detail::PayloadBytes(payload), dest, GEX_EVENT_NOW,
                            f.bits, w.size(), w.data()) == 0;
}
template <auto Fn, AmPayload P, class... A>
requires AmPayloadHandler<Fn> && AmSendable<Fn, A...>
bool reply_long(Token t, const P& payload, void* dest, A... args) {
  return reply_long<Fn>(Flags(), t, payload, dest, args...);
}

// The largest Medium and Long payloads any peer takes.
inline std::size_t max_medium() { return gex_AM_LUBRequestMedium(); }
inline std::size_t max_long() { return gex_AM_LUBRequestLong(); }

}  // namespace gex

#endif  // GEX_CPP_AM_HPP_
