// The job rank of this process, as far as it is known yet.
//
// Before the bootstrap layer has joined the job the rank is unknown; messages
// printed then say "proc ?". Once known, the rank prefixes every fatal error
// and warning, and it decides which rank prints once-per-job reports
// (GASNET_VERBOSEENV).
#ifndef GEX_BASE_JOB_RANK_H_
#define GEX_BASE_JOB_RANK_H_

namespace gexrt {

// Returned by JobRank() until SetJobRank() is called.
inline constexpr int kUnknownRank = -1;

// Records this process's rank in the job (0-based). Called once by the
// bootstrap layer; calling it again with another value is allowed (a test
// harness may), and runs the listeners again.
void SetJobRank(int rank);

// This process's rank, or kUnknownRank.
int JobRank();

// A function run by SetJobRank() with the new rank. Lower-layer modules that
// defer output until the rank is known (base/env's verbose report) register
// one. At most a few are ever registered; registration is not thread-safe
// and belongs in start-up code.
using JobRankListener = void (*)(int rank);
void AddJobRankListener(JobRankListener listener);

}  // namespace gexrt

#endif  // GEX_BASE_JOB_RANK_H_
