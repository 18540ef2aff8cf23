// gasnetrun_ucx: starts a job of the ucx conduit. Everything is in the
// shared launcher (bootstrap/spawn/launcher.h), as for gasnetrun_smp. The
// default spawner is ssh when a host list is configured (GASNET_SSH_SERVERS,
// GASNET_SSH_NODEFILE or a batch system's node file), else fork: a job on
// this host alone needs no remote shell. -spawner= or GASNET_UCX_SPAWNER
// choose otherwise. When the ranks are gone, the launcher removes any PSHM
// object a killed rank left behind.
#include <cstdlib>

#include "bootstrap/spawn/host_list.h"
#include "bootstrap/spawn/launcher.h"
#include "pshm/shared_object.h"

int main(int argc, char** argv) {
  const bool have_hosts =
      gexrt::spawn::HostListFromEnvironment(&std::getenv).ok();
  return gexrt::spawn::GasnetrunMain(
      argc, argv,
      {.conduit = "ucx",
       .default_spawner = have_hosts ? gexrt::spawn::SpawnerKind::kSsh
                                     : gexrt::spawn::SpawnerKind::kFork,
       .cleanup = gexrt::pshm::RemoveJobObjects});
}
