// Calling a handler with the arguments a message carries. Handlers are
// plain C functions of GASNet's signatures:
//   Short:        void fn(token, int32_t a0, ..., a[n-1])
//   Medium, Long: void fn(token, void* buf, size_t nbytes, a0, ..., a[n-1])
// The table of callers is built at compile time, one per argument count,
// so a call is one indexed load and one indirect call, as a hand-written
// switch would be.
#ifndef GEX_AM_INVOKE_H_
#define GEX_AM_INVOKE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "am/handler_table.h"

namespace gexrt::am {
namespace internal {

template <size_t>
using Arg = int32_t;

template <size_t... I>
void CallShort(HandlerFn fn, void* token, void*, size_t, const int32_t* a) {
  reinterpret_cast<void (*)(void*, Arg<I>...)>(fn)(token, a[I]...);
}

template <size_t... I>
void CallPayload(HandlerFn fn, void* token, void* buf, size_t nbytes,
                 const int32_t* a) {
  reinterpret_cast<void (*)(void*, void*, size_t, Arg<I>...)>(fn)(
      token, buf, nbytes, a[I]...);
}

using Caller = void (*)(HandlerFn, void*, void*, size_t, const int32_t*);

template <size_t... N>
constexpr auto ShortCallers(std::index_sequence<N...>) {
  return std::array<Caller, sizeof...(N)>{
      []<size_t... I>(std::index_sequence<I...>)
          ->Caller{return &CallShort<I...>;
}
(std::make_index_sequence<N>())...
};  // namespace internal
}  // namespace gexrt::am

template <size_t... N>
constexpr auto PayloadCallers(std::index_sequence<N...>) {
  return std::array<Caller, sizeof...(N)>{
      []<size_t... I>(std::index_sequence<I...>)
          ->Caller{return &CallPayload<I...>;
}
(std::make_index_sequence<N>())...
}
;
}

inline constexpr auto kShortCallers =
    ShortCallers(std::make_index_sequence<kMaxArgs + 1>());
inline constexpr auto kPayloadCallers =
    PayloadCallers(std::make_index_sequence<kMaxArgs + 1>());

}  // namespace internal

// Calls `fn` as a handler of `category` with `nargs` (<= kMaxArgs)
// arguments; `buf`/`nbytes` are ignored for a Short.
inline void Invoke(HandlerFn fn, Category category, void* token, void* buf,
                   size_t nbytes, unsigned nargs, const int32_t* args) {
  const auto& callers = category == Category::kShort
                            ? internal::kShortCallers
                            : internal::kPayloadCallers;
  callers[nargs](fn, token, buf, nbytes, args);
}

}  // namespace gexrt::am

#endif  // GEX_AM_INVOKE_H_
