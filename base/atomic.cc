#include "base/atomic.h"

#include <sched.h>

#include <new>

namespace gexrt {

// Checked here rather than in the header: GCC warns (-Winterference-size)
// wherever a header uses std::hardware_destructive_interference_size,
// because its value may change with -mtune.
#if defined(__cpp_lib_hardware_interference_size) && \
    (defined(__x86_64__) || defined(__i386__))
static_assert(kCacheLineSize == std::hardware_destructive_interference_size,
              "kCacheLineSize disagrees with the compiler's idea of the "
              "x86 cache line");
#endif
static_assert(sizeof(CacheLinePadded<char>) == kCacheLineSize);
static_assert(alignof(CacheLinePadded<char>) == kCacheLineSize);
static_assert(sizeof(Atomic32) == 4 && alignof(Atomic32) == 4);
static_assert(sizeof(Atomic64) == 8 && alignof(Atomic64) == 8);

void PoliteSpinWait::Yield() { sched_yield(); }

}  // namespace gexrt
