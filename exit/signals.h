// The signals of a rank's exit, installed by exit::Install for each one
// whose disposition is still the default (a handler the client or a tool
// such as a sanitizer set first is left alone):
//
//   SIGSEGV SIGBUS SIGILL SIGFPE SIGABRT SIGSYS   fatal: prints
//       "*** Caught a fatal signal (proc R): SIGSEGV(11)", a backtrace when
//       GASNET_BACKTRACE is set, freezes when GASNET_FREEZE_ON_ERROR is,
//       tells the job (exit code 128 + signal), then dies of the signal.
//   SIGTERM SIGINT SIGHUP   a request to end the job: raised again as
//       SIGQUIT when the client handles SIGQUIT itself, else the job exits
//       with 128 + signal.
//   SIGQUIT   the job exits with 128 + SIGQUIT; ignored once an exit is
//       under way.
//   kNudgeSignal (SIGURG)   the leader of a non-collective exit left a
//       request in this rank's shared cell (exit/protocol.h).
//
// While ExitBody runs, SIGALRM bounds it (ArmExitAlarm).
#ifndef GEX_EXIT_SIGNALS_H_
#define GEX_EXIT_SIGNALS_H_

#include <atomic>
#include <initializer_list>

#include "absl/base/optimization.h"
#include "absl/time/time.h"

namespace gexrt::exit {

void InstallSignalHandlers();

// Whether the client has its own SIGQUIT handler (neither the default, nor
// ignored, nor ours).
bool ClientHandlesSigquit();

// From now on, SIGALRM after `timeout` ends the process with the saved
// exit code (1 when that is 0: the exit did not finish); Disarm cancels.
void ArmExitAlarm(absl::Duration timeout);
void DisarmExitAlarm();

// Resets to the default every handler of the signals above that lives in
// a shared library whose file name contains one of `libraries` (a
// conduit's network libraries install their own when they load or open an
// endpoint, and would end a crashing or signalled rank their way, losing
// the graceful exit, its report and its exit code). Handlers anywhere else
// (the client's) are left alone. Call before Install, and again after
// anything that may have installed more.
void DropLibrarySignalHandlers(std::initializer_list<const char*> libraries);

// Deferring the end signals (SIGTERM SIGINT SIGHUP SIGQUIT) while a thread
// is inside code the exit cannot re-enter. The exit runs from the signal's
// handler, on whatever the thread was doing; a conduit whose device holds
// a lock meanwhile (a software device's spin lock around a completion
// queue) would have the exit's sends wait for it forever. Such a conduit
// sets `inside` (true while this thread is in that code); an end signal
// that lands then is only recorded, and the conduit calls
// RaiseDeferredEndSignal when the thread leaves, which raises it again.
// One probe per process; null removes it. Fatal signals are never
// deferred (returning would fault again).
void SetEndSignalDeferral(bool (*inside)());

namespace internal {
extern std::atomic<int> g_deferred_end_signal;
void RaiseDeferredEndSignalSlow();
}  // namespace internal

// Cheap when nothing was deferred (one relaxed load).
inline void RaiseDeferredEndSignal() {
  if (ABSL_PREDICT_FALSE(internal::g_deferred_end_signal.load(
                             std::memory_order_relaxed) != 0)) {
    internal::RaiseDeferredEndSignalSlow();
  }
}

// The usual probe: a per-thread depth of calls into a network library
// (UCX, libfabric), kept by LibraryCall scopes around each call.
// SetEndSignalDeferral(&InsideLibraryCall) defers end signals while the
// depth is above zero. The cost per call: a thread-local increment and
// decrement (and, with kRaiseOnLeave, one relaxed load on leaving).
namespace internal {
inline constinit thread_local int tl_library_call_depth = 0;
}  // namespace internal

inline bool InsideLibraryCall() { return internal::tl_library_call_depth != 0; }

// Marks one call into a network library. kRaiseOnLeave: leaving the
// outermost one raises a deferred end signal (a conduit whose every
// library call may run the exit afterwards); otherwise the conduit calls
// RaiseDeferredEndSignal itself where no lock of its own is held.
template <bool kRaiseOnLeave>
class LibraryCall {
 public:
  LibraryCall() {
    ++internal::tl_library_call_depth;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~LibraryCall() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (--internal::tl_library_call_depth == 0 && kRaiseOnLeave) {
      RaiseDeferredEndSignal();
    }
  }
  LibraryCall(const LibraryCall&) = delete;
  LibraryCall& operator=(const LibraryCall&) = delete;
};

}  // namespace gexrt::exit

#endif  // GEX_EXIT_SIGNALS_H_
