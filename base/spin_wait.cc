#include "base/spin_wait.h"

#include <sched.h>

namespace gexrt {

void PoliteSpinWait::Yield() { sched_yield(); }

}  // namespace gexrt
