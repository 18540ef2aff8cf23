// The two random values of an ssh-spawned job, drawn independently:
//   - the job token, a 64-bit secret that agents present when they connect
//     back to their parent launcher (control channel authentication). It
//     never appears on a command line: it travels on the remote shell's
//     stdin, as the first line, and nothing public is derived from it;
//   - the job id (GEX_JOB_ID), which is public: it names the job's shared
//     memory objects (/dev/shm/GASNT<job id>.*), so it carries 64 random
//     bits of its own, making those names impossible to guess ahead of
//     the job.
#ifndef GEX_BOOTSTRAP_SPAWN_JOB_SECRET_H_
#define GEX_BOOTSTRAP_SPAWN_JOB_SECRET_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gexrt::spawn {

// 64 bits from the kernel's random source (getrandom, else
// /dev/urandom). An error when neither works: a job must not start with a
// guessable secret.
absl::StatusOr<uint64_t> SecureRandom64();

// A fresh job id: this host's id (8 hex digits), the launcher's pid
// (decimal) and 64 random bits (16 hex digits), letters and digits only,
// at most 31 characters (the PSHM layer keeps at most 47).
absl::StatusOr<std::string> NewJobId();

// How the token travels: 16 hex digits and a newline.
std::string TokenLine(uint64_t token);

// Reads the token line from `fd` (an agent's stdin), one byte at a time so
// that nothing after the line is consumed: the rest of stdin belongs to
// rank 0. Waits at most until `deadline`. Errors say what was wrong (end of
// input before the token, a malformed line, no token in time).
absl::StatusOr<uint64_t> ReadTokenLine(int fd, absl::Time deadline);

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_JOB_SECRET_H_
