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
//       with 128 + signal. Deferred inside the conduit (below).
//   SIGQUIT   the job exits with 128 + SIGQUIT; ignored once an exit is
//       under way. Deferred inside the conduit (below).
//   kNudgeSignal (SIGURG)   the leader of a non-collective exit left a
//       request in this rank's shared cell (exit/protocol.h), or a
//       launcher queued the job's decision. The exit it starts waits
//       while the thread is inside the conduit (below).
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

// Deferring the start of an exit while a thread is inside the conduit.
//
// The exit of an end signal (SIGTERM SIGINT SIGHUP SIGQUIT) runs from the
// signal's handler, on whatever the thread was doing, and so would that of
// a remote request (the nudge: a launcher's decision, a supernode peer's
// request; or an exit request's handler in a poll). The exit sends
// and polls through the conduit. In the middle of the conduit's own work
// (a message half sent or half read, a lock held, a receive guard set, a
// network library's progress engine running) that re-entry stalls the
// exit or corrupts the network's state. So every conduit follows one rule:
//
//  - Each entry into the conduit from above (Request, Reply, Poll, Put,
//    Get, ...) is a ConduitCall scope, and each call into a network
//    library a LibraryCall scope. While a thread is inside either, an end
//    signal that lands on it is only recorded; a remote request's exit
//    takes its code at once (ExitInProgress: waits give up) and its body
//    waits.
//  - It is acted on (the exit runs, on this thread) when the thread leaves
//    its outermost scope, i.e. the conduit returns to the client, or
//  - at a wait point (AtWaitPoint): a round of a wait of the outermost
//    conduit call (credit, send buffer, queue room, an RMA's completion)
//    that holds no lock and has no message under way, where the conduit
//    is as re-entrant as it is for the handlers its polls run. Waits of a
//    call nested inside the conduit (a Reply from a handler) are not such
//    points: the outer call's state is mid-way.
//
// In PAR mode any thread may act on what another recorded (the record is
// per process). Fatal signals are never deferred (returning would fault
// again); a conduit tells from InsideLibraryCall that the fatal exit
// interrupted its library and must touch nothing. The cost per scope: a
// thread-local increment and decrement and, on leaving the outermost, one
// relaxed load.
namespace internal {
inline constinit thread_local int tl_conduit_depth = 0;
inline constinit thread_local int tl_library_depth = 0;
// A thread of the client's: the one that installed the handlers, and any
// that has called into the conduit. Others are a network library's own
// (UCX's async thread, libfabric's progress threads): the kernel may hand
// them a process-directed signal, and an exit run there would drive the
// network beside the client's thread (UCX then tore a tcp message in
// two). On them an exit waits as inside the conduit, and the client's
// first thread is poked (kNudgeSignal) to act on it.
inline constinit thread_local bool tl_client_thread = false;
// Non-zero while an end signal or an exit's body waits.
extern std::atomic<int> g_exit_deferred;
void ActOnDeferredExitSlow();
// OnRemoteExit inside the conduit: the body runs when acted on.
void DeferExitBody();
// Set once a thread runs ExitBody.
extern std::atomic<bool> g_exit_body_running;
// Parks this thread for good unless it is the one running the exit.
void ParkUnlessExiting();
}  // namespace internal

// Whether an exit start that lands on this thread now must wait: the
// thread is inside the conduit (a ConduitCall or a LibraryCall), or is not
// a client thread (above).
inline bool InsideConduit() {
  return internal::tl_conduit_depth != 0 || internal::tl_library_depth != 0 ||
         !internal::tl_client_thread;
}

// Whether this thread is inside a network library call (a fatal signal's
// exit must then leave the conduit alone).
inline bool InsideLibraryCall() { return internal::tl_library_depth != 0; }

// Runs the exit of a recorded end signal, or a waiting exit body, if any.
// Called by the scopes below as the thread leaves the conduit; cheap when
// nothing waits (one relaxed load).
inline void ActOnDeferredExit() {
  if (ABSL_PREDICT_FALSE(
          internal::g_exit_deferred.load(std::memory_order_relaxed) != 0)) {
    internal::ActOnDeferredExitSlow();
  }
}

// One round of a wait of the conduit (see above): acts on a recorded exit
// start when this wait belongs to the outermost conduit call and no
// library call is under way. And once another thread of this process runs
// the exit (PAR), parks this one there for good, as ExitBody parks the
// threads that reach it: a client thread still sending would take the
// credits and queue room the exit's own messages need, and wait for
// peers that have left. Conduits call it at the top of each round.
inline void AtWaitPoint() {
  if (internal::tl_conduit_depth == 1 && internal::tl_library_depth == 0) {
    ActOnDeferredExit();
    if (ABSL_PREDICT_FALSE(
            internal::g_exit_body_running.load(std::memory_order_relaxed))) {
      internal::ParkUnlessExiting();
    }
  }
}

// An entry into the conduit from above (first statement of the call, so
// that it outlives every lock the call takes).
class ConduitCall {
 public:
  ConduitCall() {
    internal::tl_client_thread = true;
    ++internal::tl_conduit_depth;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~ConduitCall() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (--internal::tl_conduit_depth == 0 && internal::tl_library_depth == 0) {
      ActOnDeferredExit();
    }
  }
  ConduitCall(const ConduitCall&) = delete;
  ConduitCall& operator=(const ConduitCall&) = delete;
};

// One call into a network library (UCX, libfabric, verbs), or the
// conduit's own work a fatal signal's exit must not re-enter.
class LibraryCall {
 public:
  LibraryCall() {
    ++internal::tl_library_depth;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~LibraryCall() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (--internal::tl_library_depth == 0 && internal::tl_conduit_depth == 0) {
      ActOnDeferredExit();
    }
  }
  LibraryCall(const LibraryCall&) = delete;
  LibraryCall& operator=(const LibraryCall&) = delete;
};

}  // namespace gexrt::exit

#endif  // GEX_EXIT_SIGNALS_H_
