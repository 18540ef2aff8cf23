// Graceful exit: however a rank begins to exit, the whole job ends, every
// rank with the agreed exit code, its output flushed, nothing left behind.
//
// A conduit builds the exit protocol (exit/protocol.h) over its system
// Active Messages once its network is up, then calls Install. From then on
// there are three ways in, all ending in the same three steps:
//
//   - ExitJob(code): gasnet_exit, or the runtime itself ending the job.
//   - A remote exit request from the leader of a non-collective exit
//     (OnRemoteExit, the protocol's callback), in a handler or a nudge.
//   - The process exiting on its own: return from main or exit(), caught
//     by an on_exit handler that keeps the status.
//
// Signals (exit/signals.h) lead into the same steps.
//
// The steps, as GASNet's ibv-conduit names them:
//   ExitHead(code)  records the first exit's code; true for the first.
//   ExitBody()      runs once per process (other threads that get here
//                   wait for the process to end): ignores SIGQUIT, arms an
//                   alarm at GASNET_EXITTIMEOUT that ends the process with
//                   the saved code whatever happens, stops client handlers,
//                   runs the protocol (reduce within 0.5 s or half the
//                   timeout; if that fails, elect, or hand the exit to the
//                   launcher; the leader's requests, the member's wait or
//                   the launcher's decision within nine tenths),
//                   flushes stdio, tells the bootstrap this rank leaves on
//                   purpose when the exit was coordinated, and returns the
//                   code to exit with (nonzero when coordination failed).
//   ExitTail(code)  ends the process with `code`.
//
// GEX_EXIT_REPORT=1 makes each rank print, at the end of ExitBody,
//   *** EXIT (proc R): code=C outcome=O sent: reduce=A elect=B
//       elect_reply=C exit_request=D exit_reply=E
// (one line; O is reduced, leader, member or failed): what tests count.
#ifndef GEX_EXIT_GRACEFUL_EXIT_H_
#define GEX_EXIT_GRACEFUL_EXIT_H_

#include "absl/time/time.h"
#include "bootstrap/bootstrap.h"
#include "exit/protocol.h"

namespace gexrt::exit {

struct Environment {
  Protocol* protocol = nullptr;    // Lives until the process ends.
  Bootstrap* bootstrap = nullptr;  // Likewise.
  absl::Duration timeout;          // GASNET_EXITTIMEOUT.
  // Stops client Active Message handlers from running (internal ones go
  // on: the protocol needs them).
  void (*disable_client_handlers)(void* context) = nullptr;
  // Releases the network once the protocol is done with it, before the
  // bootstrap's Fini (only when the exit was coordinated; optional).
  void (*fini_network)(void* context) = nullptr;
  void* context = nullptr;
};

// Once per process, when the protocol can run: remembers `env`, installs
// the signal handlers (exit/signals.h) and the on_exit handler.
void Install(const Environment& env);

// gasnet_exit. Before Install: flushes stdio and ends this process with
// `code`.
[[noreturn]] void ExitJob(int code);

// Protocol::RemoteExitFn: the leader asked this rank to exit with `code`.
// When this is the rank's first exit, raises SIGQUIT if the client has a
// handler of its own for it (GASNet's promise to clients), then exits;
// otherwise returns (the exit under way learns it is a member). Called
// inside the conduit (exit/signals.h), it takes the code and returns: the
// rest (RunRemoteExitBody) waits for the conduit to return.
void OnRemoteExit(void* context, Rank leader, int code);
[[noreturn]] void RunRemoteExitBody();

bool ExitHead(int code);
// After Install (every caller comes after it: ExitJob checks).
int ExitBody();
[[noreturn]] void ExitTail(int code);

// Whether this thread is the one running ExitBody.
bool ThisThreadRunsExitBody();

// Whether this process has begun to exit (ExitHead was called).
bool ExitInProgress();
// The code ExitHead recorded, or `fallback` when none.
int SavedExitCode(int fallback);
// The bootstrap Install was given, or null (before Install).
Bootstrap* InstalledBootstrap();
// The protocol, after Install (else null).
Protocol* InstalledProtocol();

}  // namespace gexrt::exit

#endif  // GEX_EXIT_GRACEFUL_EXIT_H_
