#include "bootstrap/create_bootstrap.h"

#include <cstdlib>

#include "base/fatal.h"
#include "bootstrap/launcher_bootstrap.h"
#include "bootstrap/singleton_bootstrap.h"

namespace gexrt {

std::unique_ptr<Bootstrap> CreateBootstrap() {
  if (LauncherBootstrap::Present()) {
    auto b = LauncherBootstrap::FromEnvironment();
    if (!b.ok()) FatalErrorF("%s", b.status().message());
    return *std::move(b);
  }
  if (std::getenv("PMIX_RANK") != nullptr) {
    FatalError(
        "this process was started by a PMIx launcher, but PMIx bootstrap is "
        "not available in this build yet; start it with gasnetrun_<conduit> "
        "(fork or ssh spawner)");
  }
  return std::make_unique<SingletonBootstrap>();
}

}  // namespace gexrt
