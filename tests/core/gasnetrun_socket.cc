// gasnetrun_socket: starts a job of the socket conduit (core/testing, a
// test-only conduit whose ranks share one host). Everything is in the
// shared launcher (bootstrap/spawn/launcher.h), as for gasnetrun_smp: the
// fork spawner by default, and when the ranks are gone the launcher
// removes any PSHM object a killed rank left behind.
#include "bootstrap/spawn/launcher.h"
#include "pshm/shared_object.h"

int main(int argc, char** argv) {
  return gexrt::spawn::GasnetrunMain(
      argc, argv,
      {.conduit = "socket",
       .default_spawner = gexrt::spawn::SpawnerKind::kFork,
       .cleanup = gexrt::pshm::RemoveJobObjects});
}
