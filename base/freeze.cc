#include "base/freeze.h"

#include <time.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_format.h"
#include "base/env/parse.h"
#include "base/job_rank.h"
#include "base/stderr_line.h"

extern "C" {
volatile int gasnet_frozen = 0;
}

namespace gexrt {

bool FreezeOnErrorEnabled() {
  static const bool enabled = env::FlagEnabled("GASNET_FREEZE_ON_ERROR");
  return enabled;
}

void FreezeForDebuggerIfEnabled() {
  if (!FreezeOnErrorEnabled()) return;
  FreezeForDebuggerNow(&gasnet_frozen, "gasnet_frozen");
}

void FreezeForDebuggerNow(volatile int* flag, const char* flag_name) {
  // Formatted into a fixed buffer: no allocation, this may be a signal
  // handler that interrupted malloc.
  char line[320];
  const int rank = JobRank();
  const long pid = static_cast<long>(getpid());
  char who[16];
  if (rank == kUnknownRank) {
    absl::SNPrintF(who, sizeof who, "?");
  } else {
    absl::SNPrintF(who, sizeof who, "%d", rank);
  }
  absl::SNPrintF(line, sizeof line,
                 "*** FREEZE (proc %s): frozen for a debugger (pid %d): attach "
                 "with 'gdb -p %d', then 'set var %s = 0' and 'continue'",
                 who, pid, pid, flag_name != nullptr ? flag_name : "?");
  // Set before the message: whoever reads it may look at the flag next.
  // Atomic accesses: in a test another thread, not a debugger, clears it.
  __atomic_store_n(flag, 1, __ATOMIC_SEQ_CST);
  WriteStderrLine(line);
  while (__atomic_load_n(flag, __ATOMIC_SEQ_CST) != 0) {
    // A debugger may clear the flag at any moment; look every 10 ms.
    const struct timespec tick = {0, 10 * 1000 * 1000};
    nanosleep(&tick, nullptr);
  }
}

}  // namespace gexrt
