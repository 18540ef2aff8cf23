#include "bootstrap/create_bootstrap.h"

#include <cstdlib>

#include "base/fatal.h"
#include "bootstrap/launcher_bootstrap.h"
#include "bootstrap/pmix_bootstrap.h"
#include "bootstrap/singleton_bootstrap.h"

namespace gexrt {

std::unique_ptr<Bootstrap> CreateBootstrap() {
  if (LauncherBootstrap::Present()) {
    auto b = LauncherBootstrap::FromEnvironment();
    if (!b.ok()) FatalErrorF("%s", b.status().message());
    return *std::move(b);
  }
  // After the launcher's channel: a gasnetrun started inside an srun or
  // mpirun job hands its ranks that job's PMIX_* variables too, but the
  // channel is this process's own.
  if (PmixBootstrap::Present()) {
    auto b = PmixBootstrap::Create();
    if (!b.ok()) FatalErrorF("%s", b.status().message());
    return *std::move(b);
  }
  return std::make_unique<SingletonBootstrap>();
}

}  // namespace gexrt
