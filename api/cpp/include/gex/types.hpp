// gex/types.hpp: the small vocabulary of the C++ API: ranks, flags and the
// exception that carries a GASNet error code.
//
// Part of the header-only C++ layer over <gasnetex.h>; include <gex/gex.hpp>
// for all of it (see api/cpp/README.md).
#ifndef GEX_CPP_TYPES_HPP_
#define GEX_CPP_TYPES_HPP_

#include <gasnetex.h>

#include <stdexcept>
#include <string>

namespace gex {

// A rank in a team (or in the job). The same type as gex_Rank_t and as the
// library's internal gex::Rank (both uint32_t), so the two aliases never
// clash when both are visible.
using Rank = gex_Rank_t;
inline constexpr Rank kRankInvalid = GEX_RANK_INVALID;

// GASNet flags (gex_Flags_t) as a distinct type, so that a flags argument
// can never be taken for an Active Message argument or a size.
struct Flags {
  gex_Flags_t bits = 0;

  constexpr Flags() = default;
  constexpr explicit Flags(gex_Flags_t b) : bits(b) {}
  friend constexpr Flags operator|(Flags a, Flags b) {
    return Flags(a.bits | b.bits);
  }
  friend constexpr bool operator==(Flags, Flags) = default;
};

namespace flags {
inline constexpr Flags none{};
// The call may return without doing anything rather than wait for
// resources (the call then reports it: false, or a refused Event).
inline constexpr Flags immediate{GEX_FLAG_IMMEDIATE};
}  // namespace flags

// An error returned by a GASNet call, thrown by the calls that can fail in
// a recoverable way (start-up, segment attach, handler registration).
// Everything else GASNet treats as misuse is a fatal error that ends the
// job with a message naming the call, exactly as in C.
class Error : public std::runtime_error {
 public:
  Error(int code, const char* call)
      : std::runtime_error(std::string(call) + ": " + gasnet_ErrorName(code) +
                           " (" + gasnet_ErrorDesc(code) + ")"),
        code_(code),
        call_(call) {}

  // The GASNet return code (GASNET_ERR_*).
  int code() const noexcept { return code_; }
  // The C call that returned it ("gex_Segment_Attach").
  const char* call() const noexcept { return call_; }

 private:
  int code_;
  const char* call_;
};

namespace detail {
inline void Check(int rc, const char* call) {
  if (rc != GASNET_OK) throw Error(rc, call);
}
}  // namespace detail

}  // namespace gex

#endif  // GEX_CPP_TYPES_HPP_
