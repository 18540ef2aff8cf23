// How a launcher hands a rank the job's exit decision: kExitSignal queued
// with sigqueue(2), its 64-bit value carrying who asked, the code and
// whether a rank was lost. The launcher reaches a rank this way whatever
// it is doing (computing, blocked in a system call, on another host than
// the rank that began the exit), which Active Messages cannot.
//
// SIGURG because its default action is to ignore it: a rank whose exit
// handler is not in place yet is not harmed (launchers only send it to
// ranks that said ExitReady anyway). exit/ also uses it, without a value,
// for its shared-memory nudge; the value tells the two apart.
#ifndef GEX_BOOTSTRAP_EXIT_SIGNAL_H_
#define GEX_BOOTSTRAP_EXIT_SIGNAL_H_

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>

#include "bootstrap/bootstrap.h"

namespace gexrt {

inline constexpr int kExitSignal = SIGURG;

struct ExitSignalValue {
  Rank initiator = 0;      // The rank whose exit, or death, ends the job.
  int code = 0;            // The job's exit code (0-255).
  bool peer_lost = false;  // A rank died: nobody waits for it.
  // Not an exit at all: a bootstrap collective timed out without this
  // rank, and the launcher asks which call it is in
  // (Bootstrap::ReportCurrentCall). The other fields are unused.
  bool call_query = false;
};

// The value's 64 bits: a tag in the top 16 bits, the initiator in the
// next 32, the flags (bit 8 peer_lost, bit 9 call_query), and the code in
// the low byte.
uint64_t EncodeExitSignal(const ExitSignalValue& v);
// Empty when `bits` was not made by EncodeExitSignal (another sender).
std::optional<ExitSignalValue> DecodeExitSignal(uint64_t bits);

// Queues kExitSignal with `v` to `pid`; false (errno set) when it could
// not be sent.
bool SendExitSignal(pid_t pid, const ExitSignalValue& v);

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_EXIT_SIGNAL_H_
