// Picks the Bootstrap for this process from how it was started:
//   - by gasnetrun_<conduit> (GEX_BOOTSTRAP_FD set): the launcher's control
//     channel (launcher_bootstrap.h);
//   - by a PMIx server (PMIX_RANK or PMIX_NAMESPACE set: srun --mpi=pmix,
//     mpirun, gasnetrun_<conduit> -spawner=pmi): PMIx (pmix_bootstrap.h);
//     no server answering is a fatal error saying how to start it;
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
