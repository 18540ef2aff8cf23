// gex/client.hpp: the client, its endpoint, team and segment.
//
//   gex::Client client(argc, argv, "my_app");   // gex_Client_Init
//   gex::Team team = client.team();
//   gex::Segment seg(team, 16 << 20);           // gex_Segment_Attach
//   team.barrier();
//
// Client owns the process's one GASNet client: constructing it starts this
// rank's part of the job, and it cannot be copied (it can be moved). The
// others are thin value types holding a C handle: copy them freely.
//
// What destruction means: nothing. The C library keeps one client per
// process for the whole job and has no call that tears a client or a
// segment down; the job ends with gex::exit_job (gasnet_exit), which ends the
// process. A Client or Segment going out of scope therefore leaves the
// runtime and the segment as they are, and handles copied from them stay
// valid until the process exits.
#ifndef GEX_CPP_CLIENT_HPP_
#define GEX_CPP_CLIENT_HPP_

#include <gasnetex.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "gex/event.hpp"
#include "gex/types.hpp"

namespace gex {

class Segment;

// An endpoint (gex_EP_t).
class Endpoint {
 public:
  constexpr Endpoint() = default;
  constexpr explicit Endpoint(gex_EP_t ep) : ep_(ep) {}

  // The segment bound to it (invalid before one is attached).
  Segment segment() const;
  gex_EP_Index_t index() const { return gex_EP_QueryIndex(ep_); }
  constexpr gex_EP_t c_handle() const { return ep_; }
  friend constexpr bool operator==(Endpoint, Endpoint) = default;

 private:
  gex_EP_t ep_ = GEX_EP_INVALID;
};

// Where a rank's bound segment is.
struct BoundSegment {
  void* owner_addr = nullptr;  // its base as its owner sees it (RMA addresses)
  void* local_addr = nullptr;  // as mapped in this process, or null
  std::uintptr_t size = 0;
};

// A team (gex_TM_t): its ranks, their segments, the barrier.
class Team {
 public:
  constexpr Team() = default;
  constexpr explicit Team(gex_TM_t tm) : tm_(tm) {}

  Rank rank() const { return gex_TM_QueryRank(tm_); }
  Rank size() const { return gex_TM_QuerySize(tm_); }
  Endpoint endpoint() const { return Endpoint(gex_TM_QueryEP(tm_)); }
  Rank to_jobrank(Rank r) const {
    return gex_TM_TranslateRankToJobrank(tm_, r);
  }
  Rank from_jobrank(Rank j) const {
    return gex_TM_TranslateJobrankToRank(tm_, j);
  }

  // Where rank `r`'s segment is (completes at once on every conduit here).
  BoundSegment bound_segment(Rank r) const {
    BoundSegment b;
    gex_Event_Wait(gex_EP_QueryBoundSegmentNB(tm_, r, &b.owner_addr,
                                              &b.local_addr, &b.size, 0));
    return b;
  }

  void barrier() const { gex_Coll_BarrierBlocking(tm_, 0); }
  Event barrier_nb() const { return Event(gex_Coll_BarrierNB(tm_, 0)); }

  constexpr gex_TM_t c_handle() const { return tm_; }
  friend constexpr bool operator==(Team, Team) = default;

 private:
  gex_TM_t tm_ = GEX_TM_INVALID;
};

// This rank's segment. Constructing one from a team attaches it
// (gex_Segment_Attach, collective over the team; throws gex::Error on
// failure). There is no detach in GASNet: the segment stays attached until
// the job ends, and copies name the same segment.
class Segment {
 public:
  constexpr Segment() = default;
  // Attaches `bytes` (rounded up to pages) and binds it to the team's
  // endpoint. Collective.
  Segment(Team team, std::uintptr_t bytes) {
    detail::Check(gex_Segment_Attach(&seg_, team.c_handle(), bytes),
                  "gex_Segment_Attach");
  }
  // An already attached segment.
  static Segment wrap(gex_Segment_t seg) {
    Segment s;
    s.seg_ = seg;
    return s;
  }

  void* addr() const { return gex_Segment_QueryAddr(seg_); }
  std::uintptr_t size() const { return gex_Segment_QuerySize(seg_); }
  std::span<std::byte> bytes() const {
    return {static_cast<std::byte*>(addr()), static_cast<std::size_t>(size())};
  }
  constexpr bool valid() const { return seg_ != GEX_SEGMENT_INVALID; }
  constexpr gex_Segment_t c_handle() const { return seg_; }
  friend constexpr bool operator==(Segment, Segment) = default;

 private:
  gex_Segment_t seg_ = GEX_SEGMENT_INVALID;
};

inline Segment Endpoint::segment() const {
  return Segment::wrap(gex_EP_QuerySegment(ep_));
}

// The process's GASNet client (gex_Client_Init). One per process; a second
// one throws gex::Error (GASNET_ERR_RESOURCE). Not copyable; a moved-from
// Client holds nothing. Its destructor does nothing (see the top).
class Client {
 public:
  // Starts this rank's part of the job. argc/argv get back the program's
  // own arguments (the launcher's are removed).
  Client(int& argc, char**& argv, const char* name = "gex_cpp_client",
         Flags flags = {}) {
    detail::Check(
        gex_Client_Init(&client_, &ep_, &tm_, name, &argc, &argv, flags.bits),
        "gex_Client_Init");
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  Client(Client&& other) noexcept
      : client_(std::exchange(other.client_, GEX_CLIENT_INVALID)),
        ep_(std::exchange(other.ep_, GEX_EP_INVALID)),
        tm_(std::exchange(other.tm_, GEX_TM_INVALID)) {}
  Client& operator=(Client&&) = delete;
  ~Client() = default;

  // The primordial endpoint and the team of every rank of the job.
  constexpr Endpoint endpoint() const { return Endpoint(ep_); }
  constexpr Team team() const { return Team(tm_); }
  const char* name() const { return gex_Client_QueryName(client_); }
  constexpr gex_Client_t c_handle() const { return client_; }

 private:
  gex_Client_t client_ = GEX_CLIENT_INVALID;
  gex_EP_t ep_ = GEX_EP_INVALID;
  gex_TM_t tm_ = GEX_TM_INVALID;
};

// Runs the handlers of messages that have arrived.
inline void poll() { gasnet_AMPoll(); }

// Polls until `done()` holds, politely (yielding when the host is
// oversubscribed), as GASNET_BLOCKUNTIL does.
template <class Pred>
void poll_until(Pred&& done) {
  while (!done()) _gex_PollForWait();
}

// Ends the whole job with `code` (gasnet_exit): every rank exits. (Not
// named gex::exit, which is left to the library's exit layer.)
[[noreturn]] inline void exit_job(int code) { gasnet_exit(code); }

// This rank in the job, and the job's size.
inline Rank job_rank() { return gex_System_QueryJobRank(); }
inline Rank job_size() { return gex_System_QueryJobSize(); }

}  // namespace gex

#endif  // GEX_CPP_CLIENT_HPP_
