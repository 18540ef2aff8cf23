// The shared body of every gasnetrun_<conduit> launcher: parses the
// command line (launch_options.h), picks the spawner (-spawner=, else
// GASNET_<CONDUIT>_SPAWNER, else the conduit's default), starts the job and
// returns its exit code. Each tools/gasnetrun_<conduit> binary is a main()
// that calls GasnetrunMain with its conduit's description.
//
// The same binary is also the ssh spawner's per-host agent: started by the
// remote shell with the hidden first argument --gex-spawn-agent.
#ifndef GEX_BOOTSTRAP_SPAWN_LAUNCHER_H_
#define GEX_BOOTSTRAP_SPAWN_LAUNCHER_H_

#include <string>

#include "bootstrap/spawn/job_cleanup.h"
#include "bootstrap/spawn/launch_options.h"

namespace gexrt::spawn {

struct ConduitLauncher {
  std::string conduit;  // "smp": names the tool and the variable
  SpawnerKind default_spawner = SpawnerKind::kFork;
  // Removes what killed ranks left behind on a host (job_cleanup.h).
  JobCleanup cleanup = nullptr;
};

// Returns the process exit code: the job's (the first nonzero code a rank
// exited with, 128+N for a rank killed by signal N, 0 when all exit 0),
// 0 for -h and -t, 2 for a usage error, 1 when the job cannot start.
int GasnetrunMain(int argc, char** argv, const ConduitLauncher& conduit);

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_LAUNCHER_H_
