// gex/event.hpp: completion of non-blocking operations.
//
//   gex::Event      owns one gex_Event_t (an NB Put or Get, an access
//                   region, a barrier): wait(), test(); move-only; its
//                   destructor waits for a pending operation.
//   gex::Leaf       a leaf of an Event (local completion of its Puts): a
//                   non-owning view, tested or waited any number of times
//                   until its root Event is synced.
//   gex::ec         event categories (gex_EC_t) for leaves and NBI syncs.
//   gex::wait_all(e1, e2, ...), wait_some, test_all, test_some: the C array
//                   calls over several Events at once (also over a span).
//
// Every call is inline and goes straight to the C call of the same name.
#ifndef GEX_CPP_EVENT_HPP_
#define GEX_CPP_EVENT_HPP_

#include <gasnetex.h>

#include <concepts>
#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

#include "gex/types.hpp"

namespace gex {

// Event categories: combine with |.
enum class ec : gex_EC_t {
  get = GEX_EC_GET,
  put = GEX_EC_PUT,
  am = GEX_EC_AM,
  lc = GEX_EC_LC,
  rmw = GEX_EC_RMW,
  all = GEX_EC_ALL,
};
constexpr ec operator|(ec a, ec b) {
  return static_cast<ec>(static_cast<gex_EC_t>(a) | static_cast<gex_EC_t>(b));
}
constexpr gex_EC_t to_c(ec e) { return static_cast<gex_EC_t>(e); }

class Event;
class Leaf;

namespace detail {
inline gex_Event_t* LcSlot(Leaf& leaf);
inline gex_Event_t* Handles(std::span<Event> events);
}  // namespace detail

// A leaf event (gex_Event_QueryLeaf, or the lc_opt event of an NB Put): it
// does not own anything. Valid until its root Event is synced; before that
// it may be tested or waited any number of times. A default Leaf is
// complete.
class Leaf {
 public:
  Leaf() = default;
  constexpr explicit Leaf(gex_Event_t h) : h_(h) {}

  // Whether the operation it stands for has completed.
  bool test() const { return gex_Event_Test(h_) == GASNET_OK; }
  void wait() const { gex_Event_Wait(h_); }
  // Complete without asking GASNet (GEX_EVENT_INVALID).
  bool trivially_done() const { return h_ == GEX_EVENT_INVALID; }
  constexpr gex_Event_t c_handle() const { return h_; }
  friend constexpr bool operator==(Leaf, Leaf) = default;

 private:
  friend gex_Event_t* detail::LcSlot(Leaf& leaf);
  gex_Event_t h_ = GEX_EVENT_INVALID;
};

// Where an NB call writes the leaf it returns through lc_opt.
inline gex_Event_t* detail::LcSlot(Leaf& leaf) { return &leaf.h_; }

// The root event of one non-blocking operation, owned: exactly one of
// wait(), a successful test() or a wait/test over several events syncs it
// (after which it is complete and holds GEX_EVENT_INVALID).
//
// Destruction: an Event that is still pending is waited for in its
// destructor (so a buffer declared before it outlives the operation). Do
// not let a pending Event die inside an AM handler, where blocking is
// fatal. release() hands the C handle over instead.
//
// The same size as gex_Event_t and standard-layout, so a span of Events is
// handed to the C array calls as it is.
class [[nodiscard]] Event {
 public:
  Event() = default;
  constexpr explicit Event(gex_Event_t h) : h_(h) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept
      : h_(std::exchange(other.h_, GEX_EVENT_INVALID)) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      wait();
      h_ = std::exchange(other.h_, GEX_EVENT_INVALID);
    }
    return *this;
  }
  ~Event() { wait(); }

  // Blocks (polling) until the operation completes.
  void wait() {
    if (!done()) gex_Event_Wait(h_);
    h_ = GEX_EVENT_INVALID;
  }
  // Polls once; true when the operation has completed (then synced).
  bool test() {
    if (done() || gex_Event_Test(h_) == GASNET_OK) {
      h_ = GEX_EVENT_INVALID;
      return true;
    }
    return false;
  }
  // Known complete without a call: synced already, completed before the
  // call returned (GEX_EVENT_INVALID), or refused (GEX_EVENT_NO_OP).
  bool done() const { return h_ == GEX_EVENT_INVALID || h_ == GEX_EVENT_NO_OP; }
  // An IMMEDIATE call that did nothing (GEX_EVENT_NO_OP).
  bool refused() const { return h_ == GEX_EVENT_NO_OP; }

  // The leaf for `category` (ec::lc: local completion of the Puts this
  // event covers); complete when this event already is.
  Leaf leaf(ec category) const {
    if (done()) return Leaf();
    return Leaf(gex_Event_QueryLeaf(h_, to_c(category)));
  }

  constexpr gex_Event_t c_handle() const { return h_; }
  // Gives up ownership: the caller syncs the returned handle.
  gex_Event_t release() { return std::exchange(h_, GEX_EVENT_INVALID); }

 private:
  friend gex_Event_t* detail::Handles(std::span<Event> events);
  template <class... E>
  friend void wait_all(E&... events);
  template <class... E>
  friend std::size_t wait_some(E&... events);
  template <class... E>
  friend bool test_all(E&... events);
  template <class... E>
  friend bool test_some(E&... events);

  gex_Event_t h_ = GEX_EVENT_INVALID;
};

static_assert(sizeof(Event) == sizeof(gex_Event_t));
static_assert(std::is_standard_layout_v<Event>);

// The C handles of a span of Events, in place (an Event is exactly one
// gex_Event_t; the C array calls write GEX_EVENT_INVALID into the ones they
// sync, which is what a synced Event holds).
inline gex_Event_t* detail::Handles(std::span<Event> events) {
  return events.empty() ? nullptr : &events.front().h_;
}

// Over a span of Events.
inline void wait_all(std::span<Event> events) {
  gex_Event_WaitAll(detail::Handles(events), events.size(), 0);
}
// Returns once at least one has completed (those are synced).
inline void wait_some(std::span<Event> events) {
  gex_Event_WaitSome(detail::Handles(events), events.size(), 0);
}
// True when every one has completed (they are all synced then; on false,
// the ones that completed are synced).
inline bool test_all(std::span<Event> events) {
  return gex_Event_TestAll(detail::Handles(events), events.size(), 0) ==
         GASNET_OK;
}
// True when at least one has completed (those are synced).
inline bool test_some(std::span<Event> events) {
  return gex_Event_TestSome(detail::Handles(events), events.size(), 0) ==
         GASNET_OK;
}

// Over Events named one by one: wait_all(put_ev, get_ev, region_ev).
// One C call over a stack array of the handles; each synced Event becomes
// complete.
template <class... E>
void wait_all(E&... events) {
  static_assert((std::same_as<E, Event> && ...), "gex::wait_all takes Events");
  gex_Event_t handles[] = {events.h_...};
  gex_Event_WaitAll(handles, sizeof...(E), 0);
  ((events.h_ = GEX_EVENT_INVALID), ...);
}

// Returns how many of the Events are complete afterwards (at least one).
template <class... E>
std::size_t wait_some(E&... events) {
  static_assert((std::same_as<E, Event> && ...), "gex::wait_some takes Events");
  gex_Event_t handles[] = {events.h_...};
  gex_Event_WaitSome(handles, sizeof...(E), 0);
  std::size_t i = 0;
  ((events.h_ = handles[i++]), ...);
  return (std::size_t{0} + ... + (events.done() ? 1u : 0u));
}

template <class... E>
bool test_all(E&... events) {
  static_assert((std::same_as<E, Event> && ...), "gex::test_all takes Events");
  gex_Event_t handles[] = {events.h_...};
  const bool all = gex_Event_TestAll(handles, sizeof...(E), 0) == GASNET_OK;
  std::size_t i = 0;
  ((events.h_ = handles[i++]), ...);
  return all;
}

template <class... E>
bool test_some(E&... events) {
  static_assert((std::same_as<E, Event> && ...), "gex::test_some takes Events");
  gex_Event_t handles[] = {events.h_...};
  const bool some = gex_Event_TestSome(handles, sizeof...(E), 0) == GASNET_OK;
  std::size_t i = 0;
  ((events.h_ = handles[i++]), ...);
  return some;
}

}  // namespace gex

#endif  // GEX_CPP_EVENT_HPP_
