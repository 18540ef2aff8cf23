// The record each rank of a job started through gasnetrun_<conduit>
// -spawner=pmi leaves for gasnetrun: the external launcher (srun, mpirun)
// may return while ranks are still ending (Open MPI 4.1's mpirun sends
// SIGKILL and exits without waiting for its ranks to die), so gasnetrun
// checks the ranks itself before it returns.
//
// gasnetrun sets GEX_PMI_RANK_DIR to a fresh directory; each rank's
// PmixBootstrap writes "<dir>/<rank>": its host id (base/host_id.h), pid
// and start time (the kernel's, in clock ticks since boot: a pid reused by
// another process does not match). A rank whose directory is not
// reachable (another host, no shared file system) writes nothing;
// gasnetrun only looks at its own host's records.
//
//   WriteOwnRankRecord(dir, rank);           // in the rank
//   for (const RankRecord& r : ReadRankRecords(dir))
//     if (RankRecordAlive(r)) ...;           // in gasnetrun
#ifndef GEX_BOOTSTRAP_PMIX_BOOTSTRAP_PIDS_H_
#define GEX_BOOTSTRAP_PMIX_BOOTSTRAP_PIDS_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace gexrt {

inline constexpr char kPmiRankDirVar[] = "GEX_PMI_RANK_DIR";

struct RankRecord {
  uint32_t rank = 0;
  uint64_t host_id = 0;
  pid_t pid = 0;
  uint64_t start_time = 0;
};

// "<host id hex> <pid> <start time>\n" and back; nullopt when malformed.
std::string FormatRankRecord(const RankRecord& r);
std::optional<RankRecord> ParseRankRecord(uint32_t rank, std::string_view text);

// The start time of a live (not zombie) process; nullopt when it is gone
// or a zombie.
std::optional<uint64_t> LiveProcessStartTime(pid_t pid);

// Writes this process's record as "<dir>/<rank>" (created, mode 0600).
absl::Status WriteOwnRankRecord(const std::string& dir, uint32_t rank);

// Every well-formed record under `dir` (files named by a rank number).
std::vector<RankRecord> ReadRankRecords(const std::string& dir);

// Whether the record is this host's and its process still runs (same pid,
// same start time, not a zombie).
bool RankRecordAlive(const RankRecord& r);

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_PMIX_BOOTSTRAP_PIDS_H_
