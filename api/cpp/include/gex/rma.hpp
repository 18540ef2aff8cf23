// gex/rma.hpp: one-sided Put and Get over std::span.
//
// The remote side is a typed pointer in the peer's segment, as its owner
// sees it (Team::bound_segment(r).owner_addr); the local side is a span of
// the same element type, anywhere in memory. T must be trivially
// copyable. Every call is one inline call of the C function of the same
// form, with the span's data and size in bytes: no copy, no allocation.
//
//   gex::put(team, r, dest, src_span);                 // blocking
//   gex::Event e = gex::put_nb(team, r, dest, src_span, gex::lc::now);
//   gex::put_nbi(team, r, dest, src_span);             // lc::defer
//   gex::get(team, dst_span, r, src);                  // blocking
//   gex::Event g = gex::get_nb(team, dst_span, r, src);
//   gex::get_nbi(team, dst_span, r, src);
//   gex::nbi_wait(gex::ec::put | gex::ec::get);
//   { gex::AccessRegion region; ...NBI calls...; gex::Event all = region.end();
//   } gex::put_val(team, r, dest_u32, 42u);  uint32_t v = gex::get_val(team, r,
//   src_u32);
//
// Local completion of a Put's source (the lc argument) is a type, so the
// options a form does not take fail to compile rather than at run time:
//   NB:  gex::lc::now, gex::lc::defer (default), or a gex::Leaf& that
//        receives the local-completion leaf;
//   NBI: gex::lc::now, gex::lc::defer (default), gex::lc::group (counted
//        for nbi_wait(ec::lc) or the access region's ec::lc leaf).
//
// With gex::flags::immediate a call may do nothing rather than wait for
// resources: the blocking and NBI forms then return false, the NB forms a
// refused() Event. Without it they always return true. Misuse (a remote
// range outside the peer's segment, a rank outside the team) is fatal and
// names the C call, as in C.
#ifndef GEX_CPP_RMA_HPP_
#define GEX_CPP_RMA_HPP_

#include <gasnetex.h>

#include <bit>
#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>

#include "gex/client.hpp"
#include "gex/event.hpp"
#include "gex/types.hpp"

namespace gex {

// Local completion options.
namespace lc {
struct Now {};
struct Defer {};
struct Group {};
// The source may be reused as soon as the call returns.
inline constexpr Now now{};
// Not before the operation completes (its Event, or nbi_wait(ec::put)).
inline constexpr Defer defer{};
// NBI only: counted for nbi_wait(ec::lc) or the region's ec::lc leaf.
inline constexpr Group group{};
}  // namespace lc

// Element types RMA moves: anything trivially copyable.
template <class T>
concept Rmaable = std::is_trivially_copyable_v<T> && !std::is_const_v<T>;

// Value-form types: trivially copyable, 1 to 8 bytes.
template <class T>
concept RmaValue = Rmaable<T> && sizeof(T) >= 1 &&
                   sizeof(T) <= sizeof(gex_RMA_Value_t);

namespace detail {
inline gex_Event_t* LcOpt(lc::Now) { return GEX_EVENT_NOW; }
inline gex_Event_t* LcOpt(lc::Defer) { return GEX_EVENT_DEFER; }
inline gex_Event_t* LcOpt(lc::Group) { return GEX_EVENT_GROUP; }
inline gex_Event_t* LcOpt(Leaf& leaf) { return LcSlot(leaf); }

// An n-byte value as the C value forms carry it: the unsigned integer of
// that width whose memory image is the value's.
template <RmaValue T>
gex_RMA_Value_t ToValue(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1u : 0u;
  } else if constexpr (std::is_enum_v<T>) {
    return ToValue(static_cast<std::underlying_type_t<T>>(v));
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<gex_RMA_Value_t>(
        static_cast<std::make_unsigned_t<T>>(v));
  } else {
    static_assert(std::endian::native == std::endian::little,
                  "value forms of non-integral types assume little-endian");
    gex_RMA_Value_t u = 0;
    std::memcpy(&u, &v, sizeof(T));
    return u;
  }
}
template <RmaValue T>
T FromValue(gex_RMA_Value_t u) {
  if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    return static_cast<T>(u);
  } else {
    static_assert(std::endian::native == std::endian::little,
                  "value forms of non-integral types assume little-endian");
    T v;
    std::memcpy(&v, &u, sizeof(T));
    return v;
  }
}
}  // namespace detail

// ---- Put --------------------------------------------------------------

// Blocking: returns once the data is at the destination.
template <Rmaable T>
bool put(Team tm, Rank r, T* dest, std::type_identity_t<std::span<const T>> src,
         Flags f = {}) {
  return gex_RMA_PutBlocking(tm.c_handle(), r, dest, src.data(),
                             src.size_bytes(), f.bits) == 0;
}

// Non-blocking with an explicit event.
template <Rmaable T>
Event put_nb(Team tm, Rank r, T* dest,
             std::type_identity_t<std::span<const T>> src, lc::Defer = {},
             Flags f = {}) {
  return Event(gex_RMA_PutNB(tm.c_handle(), r, dest, src.data(),
                             src.size_bytes(), GEX_EVENT_DEFER, f.bits));
}
template <Rmaable T>
Event put_nb(Team tm, Rank r, T* dest,
             std::type_identity_t<std::span<const T>> src, lc::Now,
             Flags f = {}) {
  return Event(gex_RMA_PutNB(tm.c_handle(), r, dest, src.data(),
                             src.size_bytes(), GEX_EVENT_NOW, f.bits));
}
// `local` receives the leaf for the source's local completion (complete
// already when the copy was done before the call returned).
template <Rmaable T>
Event put_nb(Team tm, Rank r, T* dest,
             std::type_identity_t<std::span<const T>> src, Leaf& local,
             Flags f = {}) {
  return Event(gex_RMA_PutNB(tm.c_handle(), r, dest, src.data(),
                             src.size_bytes(), detail::LcSlot(local), f.bits));
}

// Non-blocking with implicit events: synced by nbi_wait/nbi_test or, inside
// an AccessRegion, by the region's Event.
template <Rmaable T, class Lc = lc::Defer>
requires std::same_as<Lc, lc::Now> || std::same_as<Lc, lc::Defer> ||
    std::same_as<Lc, lc::Group>
bool put_nbi(Team tm, Rank r, T* dest,
             std::type_identity_t<std::span<const T>> src, Lc local = {},
             Flags f = {}) {
  return gex_RMA_PutNBI(tm.c_handle(), r, dest, src.data(), src.size_bytes(),
                        detail::LcOpt(local), f.bits) == 0;
}

// ---- Get --------------------------------------------------------------

template <Rmaable T>
bool get(Team tm, std::type_identity_t<std::span<T>> dest, Rank r, const T* src,
         Flags f = {}) {
  return gex_RMA_GetBlocking(tm.c_handle(), dest.data(), r, const_cast<T*>(src),
                             dest.size_bytes(), f.bits) == 0;
}
template <Rmaable T>
Event get_nb(Team tm, std::type_identity_t<std::span<T>> dest, Rank r,
             const T* src, Flags f = {}) {
  return Event(gex_RMA_GetNB(tm.c_handle(), dest.data(), r, const_cast<T*>(src),
                             dest.size_bytes(), f.bits));
}
template <Rmaable T>
bool get_nbi(Team tm, std::type_identity_t<std::span<T>> dest, Rank r,
             const T* src, Flags f = {}) {
  return gex_RMA_GetNBI(tm.c_handle(), dest.data(), r, const_cast<T*>(src),
                        dest.size_bytes(), f.bits) == 0;
}

// ---- Values (1 to 8 bytes, no buffer) ------------------------------------

template <RmaValue T>
bool put_val(Team tm, Rank r, T* dest, std::type_identity_t<T> value,
             Flags f = {}) {
  return gex_RMA_PutBlockingVal(tm.c_handle(), r, dest, detail::ToValue(value),
                                sizeof(T), f.bits) == 0;
}
template <RmaValue T>
Event put_val_nb(Team tm, Rank r, T* dest, std::type_identity_t<T> value,
                 Flags f = {}) {
  return Event(gex_RMA_PutNBVal(tm.c_handle(), r, dest, detail::ToValue(value),
                                sizeof(T), f.bits));
}
template <RmaValue T>
bool put_val_nbi(Team tm, Rank r, T* dest, std::type_identity_t<T> value,
                 Flags f = {}) {
  return gex_RMA_PutNBIVal(tm.c_handle(), r, dest, detail::ToValue(value),
                           sizeof(T), f.bits) == 0;
}
template <RmaValue T>
T get_val(Team tm, Rank r, const T* src, Flags f = {}) {
  return detail::FromValue<T>(gex_RMA_GetBlockingVal(
      tm.c_handle(), r, const_cast<T*>(src), sizeof(T), f.bits));
}

// ---- Implicit events ------------------------------------------------------

// The calling thread's NBI operations outside access regions, by category:
// waits until every one in `mask` has completed / tests once.
inline void nbi_wait(ec mask = ec::all) { gex_NBI_Wait(to_c(mask), 0); }
inline bool nbi_test(ec mask = ec::all) {
  return gex_NBI_Test(to_c(mask), 0) == GASNET_OK;
}

// An access region of the calling thread (gex_NBI_BeginAccessRegion in the
// constructor): its NBI calls until end() are covered by the Event end()
// returns, not by nbi_wait. Regions do not nest (a second one on the same
// thread is fatal). Bound to its thread: neither copied nor moved. If
// end() was not called, the destructor ends the region and waits for its
// operations.
class AccessRegion {
 public:
  explicit AccessRegion(Flags f = {}) { gex_NBI_BeginAccessRegion(f.bits); }
  AccessRegion(const AccessRegion&) = delete;
  AccessRegion& operator=(const AccessRegion&) = delete;
  ~AccessRegion() {
    if (open_) end().wait();
  }

  // Ends the region (once); the Event covers its operations, and its
  // leaf(ec::lc) the local completion of its lc::group Puts.
  Event end(Flags f = {}) {
    open_ = false;
    return Event(gex_NBI_EndAccessRegion(f.bits));
  }

 private:
  bool open_ = true;
};

}  // namespace gex

#endif  // GEX_CPP_RMA_HPP_
