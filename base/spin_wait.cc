#include "base/spin_wait.h"

#include <sched.h>

namespace gexrt {

void YieldCpu() { sched_yield(); }

}  // namespace gexrt
