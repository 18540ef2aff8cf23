// The smp conduit's driver: the API layer's hooks for a job whose ranks
// all share one host and reach each other only through PSHM.
#ifndef GEX_CONDUIT_SMP_SMP_DRIVER_H_
#define GEX_CONDUIT_SMP_SMP_DRIVER_H_

#include "api/driver.h"

namespace gex::smp {

const api::Driver& SmpDriver();

}  // namespace gex::smp

#endif  // GEX_CONDUIT_SMP_SMP_DRIVER_H_
