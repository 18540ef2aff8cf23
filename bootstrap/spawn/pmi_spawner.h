// The pmi spawner: gasnetrun_<conduit> -spawner=pmi (or
// GASNET_<CONDUIT>_SPAWNER=pmi) hands the job to an external PMIx launcher
// (srun --mpi=pmix, mpirun; see pmi_command.h for GASNET_PMI_LAUNCHER),
// whose PMIx server the ranks' PmixBootstrap (bootstrap/pmix_bootstrap.h)
// talks to. gasnetrun stays in between: it gives the job a GEX_JOB_ID (so
// shared-memory objects carry a known prefix), forwards SIGINT, SIGTERM
// and SIGHUP to the launcher, and once the launcher has exited waits for
// (after 1 s, kills) the ranks of this host still running, by the records
// they left under GEX_PMI_RANK_DIR (bootstrap/pmix_bootstrap_pids.h), then
// removes what killed ranks left on this host (the conduit's JobCleanup).
// Ranks on other hosts are the external launcher's to end and clean up.
#ifndef GEX_BOOTSTRAP_SPAWN_PMI_SPAWNER_H_
#define GEX_BOOTSTRAP_SPAWN_PMI_SPAWNER_H_

#include <string>
#include <vector>

#include "bootstrap/spawn/job_cleanup.h"
#include "bootstrap/spawn/launch_options.h"

namespace gexrt::spawn {

// Runs the job; returns gasnetrun's exit code: the launcher's (128+N when
// it was killed by signal N), 0 for -t (which prints the command and runs
// nothing), 2 for a bad template, 1 when no launcher can be started.
// Messages go to stderr prefixed with `tool`. `program` is the resolved
// program and its arguments.
int RunPmiJob(const std::string& tool, const LaunchOptions& options,
              const std::vector<std::string>& program, JobCleanup cleanup);

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_PMI_SPAWNER_H_
