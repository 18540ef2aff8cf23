#include "base/fatal.h"

#include <execinfo.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/env/parse.h"
#include "base/freeze.h"
#include "base/job_rank.h"
#include "base/stderr_line.h"

namespace gexrt {
namespace {

void DefaultBacktrace(int fd) {
  void* frames[64];
  const int depth = backtrace(frames, 64);
  backtrace_symbols_fd(frames, depth, fd);
}

std::atomic<BacktraceHook> g_backtrace_hook{&DefaultBacktrace};
std::atomic<FatalExitHook> g_fatal_exit_hook{nullptr};
std::atomic<bool> g_fatal_in_progress{false};

std::string Prefixed(std::string_view kind, std::string_view message) {
  const int rank = JobRank();
  return absl::StrFormat(
      "*** %s (proc %s): %s", kind,
      rank == kUnknownRank ? std::string("?") : absl::StrCat(rank), message);
}

}  // namespace

std::string FatalErrorText(std::string_view message) {
  return Prefixed("FATAL ERROR", message);
}

std::string WarningText(std::string_view message) {
  return Prefixed("WARNING", message);
}

bool BacktraceEnabled() {
  // This runs on the fatal path, possibly before settings can be used.
  static const bool enabled = env::FlagEnabled("GASNET_BACKTRACE");
  return enabled;
}

bool FatalErrorInProgress() { return g_fatal_in_progress.load(); }

void FatalError(std::string_view message) {
  g_fatal_in_progress.store(true);
  WriteStderrLine(FatalErrorText(message));
  if (BacktraceEnabled()) {
    WriteStderrLine(Prefixed("BACKTRACE", "stack of the failing thread:"));
    PrintBacktrace(STDERR_FILENO);
  }
  FreezeForDebuggerIfEnabled();
  if (FatalExitHook hook = g_fatal_exit_hook.load()) hook();
  std::abort();
}

void Warning(std::string_view message) {
  WriteStderrLine(WarningText(message));
}

void PrintBacktrace(int fd) { g_backtrace_hook.load()(fd); }

void SetBacktraceHook(BacktraceHook hook) {
  g_backtrace_hook.store(hook != nullptr ? hook : &DefaultBacktrace);
}

void SetFatalExitHook(FatalExitHook hook) { g_fatal_exit_hook.store(hook); }

}  // namespace gexrt
