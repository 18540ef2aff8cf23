// A conduit's hook for what its ranks may leave on a host when they are
// killed (PSHM objects): run by each launcher (gasnetrun and every ssh
// agent) once all of its local ranks have ended; when the launcher is
// killed outright, by its clean-up guard (cleanup_guard.h).
#ifndef GEX_BOOTSTRAP_SPAWN_JOB_CLEANUP_H_
#define GEX_BOOTSTRAP_SPAWN_JOB_CLEANUP_H_

#include <sys/types.h>

#include <string_view>

#include "absl/types/span.h"

namespace gexrt::spawn {

// `job_id` is the job's GEX_JOB_ID; `rank_pids` the pids of the ranks this
// launcher started. Returns how many objects it removed. Must not fail
// loudly: another launcher may be cleaning up the same host.
using JobCleanup = int (*)(std::string_view job_id,
                           absl::Span<const pid_t> rank_pids);

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_JOB_CLEANUP_H_
