// gasnetrun_smp: starts a job of the smp conduit. Everything is in the
// shared launcher (bootstrap/spawn/launcher.h); the smp conduit runs on one
// host, so its default spawner is fork. When the ranks are gone, the
// launcher removes any PSHM object a killed rank left behind.
#include <sys/types.h>

#include <string_view>

#include "absl/types/span.h"
#include "bootstrap/spawn/launcher.h"
#include "pshm/shared_object.h"

int main(int argc, char** argv) {
  return gexrt::spawn::GasnetrunMain(
      argc, argv,
      {.conduit = "smp",
       .default_spawner = gexrt::spawn::SpawnerKind::kFork,
       .cleanup = gexrt::pshm::RemoveJobObjects});
}
