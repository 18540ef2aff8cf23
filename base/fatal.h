// Fatal errors and warnings, prefixed with this process's job rank:
//
//   *** FATAL ERROR (proc 3): gex_Segment_Attach: size 0 is not allowed
//   *** WARNING (proc ?): GASNET_HCA_ID is no longer supported
//
// "proc ?" is printed while the rank is not yet known (base/job_rank.h).
// Each message goes to stderr in a single write(2), so lines from many
// ranks sharing one terminal or pipe never interleave mid-line.
#ifndef GEX_BASE_FATAL_H_
#define GEX_BASE_FATAL_H_

#include <string>
#include <string_view>

#include "absl/strings/str_format.h"

namespace gexrt {

// Prints "*** FATAL ERROR (proc N): <message>", then, when GASNET_BACKTRACE
// is enabled, the backtrace hook's output, then freezes for a debugger when
// GASNET_FREEZE_ON_ERROR is enabled (base/freeze.h), then ends the job
// through the fatal-exit hook (std::abort() until a layer above installs
// one).
[[noreturn]] void FatalError(std::string_view message);

template <typename... Args>
[[noreturn]] void FatalErrorF(const absl::FormatSpec<Args...>& format,
                              const Args&... args) {
  FatalError(absl::StrFormat(format, args...));
}

// Whether FatalError has been called in this process: its std::abort()
// must not be taken for a crash of its own (exit/'s SIGABRT handler lets
// it through).
bool FatalErrorInProgress();

// Prints "*** WARNING (proc N): <message>". Never fatal.
void Warning(std::string_view message);

template <typename... Args>
void WarningF(const absl::FormatSpec<Args...>& format, const Args&... args) {
  Warning(absl::StrFormat(format, args...));
}

// The text FatalError/Warning print for `message` (without the newline):
// exposed so tests can match it exactly.
std::string FatalErrorText(std::string_view message);
std::string WarningText(std::string_view message);

// Writes a backtrace of the calling thread to file descriptor `fd`. The
// default uses glibc's backtrace(3); a debugger-based one may replace it.
// Must be async-signal-safe enough to run from a fatal signal handler.
using BacktraceHook = void (*)(int fd);
void SetBacktraceHook(BacktraceHook hook);

// Writes the calling thread's backtrace to `fd` through the hook.
void PrintBacktrace(int fd);

// Whether fatal errors print a backtrace: GASNET_BACKTRACE (boolean,
// default no), read when first needed.
bool BacktraceEnabled();

// Ends the job after a fatal error. The bootstrap layer installs one that
// aborts every rank; the default is std::abort(). Must not return.
using FatalExitHook = void (*)();
void SetFatalExitHook(FatalExitHook hook);

}  // namespace gexrt

#endif  // GEX_BASE_FATAL_H_
