// Picks the Bootstrap for this process from how it was started:
//   - by gasnetrun_<conduit> (GEX_BOOTSTRAP_FD set): the launcher's control
//     channel (launcher_bootstrap.h);
//   - by a PMIx launcher (PMIX_RANK set): not available in this build yet,
//     a fatal error saying so;
//   - otherwise: a job of one rank (singleton_bootstrap.h).
// Malformed launcher variables are a fatal error naming the variable.
#ifndef GEX_BOOTSTRAP_CREATE_BOOTSTRAP_H_
#define GEX_BOOTSTRAP_CREATE_BOOTSTRAP_H_

#include <memory>

#include "bootstrap/bootstrap.h"

namespace gexrt {

std::unique_ptr<Bootstrap> CreateBootstrap();

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_CREATE_BOOTSTRAP_H_
