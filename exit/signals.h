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

#include <initializer_list>

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

}  // namespace gexrt::exit

#endif  // GEX_EXIT_SIGNALS_H_
