// gasnetrun_smp: starts a job of the smp conduit. Everything is in the
// shared launcher (bootstrap/spawn/launcher.h); the smp conduit runs on one
// host, so its default spawner is fork.
#include "bootstrap/spawn/launcher.h"

int main(int argc, char** argv) {
  return gex::spawn::GasnetrunMain(
      argc, argv,
      {.conduit = "smp", .default_spawner = gex::spawn::SpawnerKind::kFork});
}
