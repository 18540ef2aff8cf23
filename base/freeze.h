// GASNET_FREEZE_ON_ERROR: stop a failing process where it is, so that a
// debugger can be attached to it, instead of letting it exit.
//
// With the setting enabled, a fatal error (base/fatal.h) or a fatal signal
// (exit/) prints
//
//   *** FREEZE (proc 3): frozen for a debugger (pid 4711): attach with
//   'gdb -p 4711', then 'set var gasnet_frozen = 0' and 'continue'
//
// and waits until the C variable `gasnet_frozen` is cleared (GASNet's own
// convention, so the usual debugger recipe works unchanged). The wait is
// async-signal-safe: it may run from a signal handler.
#ifndef GEX_BASE_FREEZE_H_
#define GEX_BASE_FREEZE_H_

extern "C" {
// Nonzero while a process is frozen; a debugger clears it to go on.
extern volatile int gasnet_frozen;
}

namespace gexrt {

// Whether GASNET_FREEZE_ON_ERROR (boolean, default no) is enabled. Read
// once, directly from the environment (this runs on fatal paths); a
// malformed value counts as "no".
bool FreezeOnErrorEnabled();

// When FreezeOnErrorEnabled(): prints the message above and waits until
// gasnet_frozen is cleared. Otherwise returns at once.
void FreezeForDebuggerIfEnabled();

// Unconditionally: sets *flag to 1, prints the message above naming
// `flag_name` (the variable a debugger clears) and waits until *flag is 0.
// Async-signal-safe, like FreezeForDebuggerIfEnabled.
void FreezeForDebuggerNow(volatile int* flag, const char* flag_name);

}  // namespace gexrt

#endif  // GEX_BASE_FREEZE_H_
