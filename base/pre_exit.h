// Work that must happen when the process ends through the runtime's exit
// path (gasnet_exit, a fatal or terminating signal, another rank's exit),
// which leaves with _exit(2) and so skips atexit handlers: files a library
// buffers itself (gasnet_tools' trace and statistics files), which stdio's
// own flush does not reach.
#ifndef GEX_BASE_PRE_EXIT_H_
#define GEX_BASE_PRE_EXIT_H_

namespace gexrt {

// Registers `hook` to run once, in registration order, when the runtime's
// exit path runs (exit/graceful_exit.cc). At most kMaxPreExitHooks; more is
// a fatal error. Thread-safe; a hook that is already registered is not
// added twice.
inline constexpr int kMaxPreExitHooks = 8;
void AddPreExitHook(void (*hook)());

// Runs the hooks registered so far, the first time it is called; later
// calls do nothing. A hook may run from a signal handler, and must expect
// the normal atexit path to follow (be idempotent).
void RunPreExitHooks();

}  // namespace gexrt

#endif  // GEX_BASE_PRE_EXIT_H_
