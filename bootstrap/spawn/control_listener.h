// The listening side of the ssh spawner's control channel: the TCP port a
// launcher's agents connect back to, and the connections that have not yet
// said who they are.
//
// The port is reachable by anyone who can reach the address it is bound
// to, so until a connection has presented the job token (a wire::Hello
// with the job's secret, job_secret.h) it is treated as hostile:
//   - it may send one frame, at most a hello's largest size
//     (kMaxHelloFrameBytes); a longer length prefix ends it at once, so
//     nothing but that many bytes is ever buffered for it;
//   - it has `hello_timeout` (a few seconds; agents send their hello the
//     moment they connect) to send it, then is closed;
//   - at most `max_pending` such connections are held; a new one closes
//     the oldest;
//   - when accept(2) fails for want of descriptors (EMFILE, ENFILE) the
//     oldest pending connection is closed to make room, and with none to
//     close the listener is left out of the poll set for `accept_backoff`,
//     so the event loop does not spin on a listener it cannot serve.
// Bytes from a connection whose hello is malformed or carries another
// token are dropped with the connection; only an authenticated
// connection's bytes ever leave this class (Arrival).
//
// Time is passed in (`now`), so tests drive the deadlines.
#ifndef GEX_BOOTSTRAP_SPAWN_CONTROL_LISTENER_H_
#define GEX_BOOTSTRAP_SPAWN_CONTROL_LISTENER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "bootstrap/messages.h"

namespace gexrt::spawn {

// The longest host name a hello may carry (DNS's limit; agents truncate
// theirs to it).
inline constexpr size_t kMaxHelloHostname = 255;

// The largest hello frame (length prefix included), computed from the
// encoder so that it follows the message's fields.
size_t MaxHelloFrameBytes();

class ControlListener {
 public:
  struct Options {
    // The job token a connection must present.
    uint64_t token = 0;
    size_t max_pending = 64;
    absl::Duration hello_timeout = absl::Seconds(5);
    absl::Duration accept_backoff = absl::Milliseconds(250);
    // Told why a connection was dropped (for -v); may be empty.
    std::function<void(const std::string&)> log;
  };

  // A connection that presented the job token: from now on the caller's.
  struct Arrival {
    int fd = -1;
    wire::Hello hello;
    // What the peer sent after its hello (its next frames), if anything.
    std::string rest;
  };

  ControlListener() = default;  // not listening
  // Takes `listen_fd` (non-blocking) and closes it on Close().
  ControlListener(int listen_fd, Options options);
  ~ControlListener();
  ControlListener(const ControlListener&) = delete;
  ControlListener& operator=(const ControlListener&) = delete;
  ControlListener(ControlListener&& other) noexcept;
  ControlListener& operator=(ControlListener&& other) noexcept;

  // The listening socket to poll at `now`: -1 once closed or while backing
  // off after running out of descriptors.
  int ListenFdToPoll(absl::Time now) const;
  // Pending connections, by slot: slot i's descriptor (-1 when it has been
  // closed; slots are reused only after Sweep()).
  size_t slots() const { return pending_.size(); }
  int SlotFd(size_t slot) const { return pending_[slot].fd; }
  size_t pending() const;

  // The listening socket is readable: accepts what is waiting (a bounded
  // number per call).
  void OnListenReady(absl::Time now);
  // Slot `slot` is readable: reads at most the rest of one hello frame.
  // Returns the connection once its hello carries the job token; drops it
  // when it breaks the rules above or closes.
  std::optional<Arrival> OnPendingReady(size_t slot);
  // Closes pending connections whose time is up.
  void OnTimers(absl::Time now);
  // The earliest time after `now` at which OnTimers or ListenFdToPoll has
  // something new to do.
  absl::Time NextDeadline(absl::Time now) const;
  // Forgets closed slots (call between rounds of poll results).
  void Sweep();

  // Stops listening and closes every pending connection (every expected
  // agent has connected, or the job is over).
  void Close();
  bool listening() const { return listen_fd_ >= 0; }
  // Connections dropped so far for any reason (tests, -v).
  uint64_t dropped() const { return dropped_; }

 private:
  struct Pending {
    int fd = -1;
    absl::Time deadline;
    std::string buffer;  // never more than MaxHelloFrameBytes()
  };

  void Drop(Pending& p, const std::string& why);
  // Closes the oldest open pending connection; false when there is none.
  bool DropOldest(const std::string& why);

  int listen_fd_ = -1;
  Options options_;
  std::deque<Pending> pending_;  // oldest first
  absl::Time paused_until_ = absl::InfinitePast();
  uint64_t dropped_ = 0;
  uint64_t logged_ = 0;
};

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_CONTROL_LISTENER_H_
