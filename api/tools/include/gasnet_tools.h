/*
 * gasnet_tools.h: gex's implementation of the GASNet tools portability
 * interface (timers, memory barriers, atomics, mutexes and condition
 * variables, thread keys, environment queries, backtraces, system queries,
 * data utilities, tracing and statistics).
 *
 * Source-compatible with the subset of GASNet's gasnet_tools.h that clients
 * use; the names and their contracts are GASNet's (see README-tools in the
 * GASNet distribution), the code is ours. Usable from C11 and C++.
 *
 * A tools-only program links //api/tools:gasnet_tools_seq, or
 * :gasnet_tools_par when it defines GASNETT_THREAD_SAFE; a conduit target
 * brings the tools with it. A conduit client includes gasnetex.h first: the
 * full-mode part at the end of this header (GASNETT_MAX_THREADS, the
 * dt/op/ti and VIS formatters, the diagnostics) needs its types.
 *
 *   #include <gasnet_tools.h>
 *
 *   gasnett_tick_t start = gasnett_ticks_now();
 *   do_work();
 *   uint64_t us = gasnett_ticks_to_us(gasnett_ticks_now() - start);
 *
 *   static gasnett_atomic_t refs = gasnett_atomic_init(1);
 *   if (gasnett_atomic_decrement_and_test(&refs, GASNETT_ATOMIC_REL)) ...
 *
 * Differences from GASNet worth knowing:
 *  - The threading model (GASNETT_THREAD_SAFE or GASNETT_THREAD_SINGLE,
 *    decided as GASNet decides it) changes no behaviour: atomics are always
 *    real atomic instructions and mutexes always lock. The "strong" atomics
 *    are therefore the same as the plain ones.
 *  - Tracing and statistics (GASNETT_TRACE_*, GASNETT_STATS_*) are real in a
 *    file compiled with GASNET_TRACE / GASNET_STATS defined (the project's
 *    --config=trace) and expand to nothing otherwise, in a tools-only client
 *    as in a conduit client. Only the client's own messages (mask letter H)
 *    are traced so far: the communication layers do not yet feed events.
 *  - Read-modify-write atomics are always sequentially consistent, whatever
 *    fence flags are passed; flags only add ordering to reads and writes.
 *  - gasnett_ticks_now() is an ordinary function call, not inline: the tick
 *    source (time-stamp counter or CLOCK_MONOTONIC) is chosen at run time
 *    by the C++ base layer, which a C header cannot reach into.
 *  - Mutex misuse checks (recursive locking, unlocking a mutex the thread
 *    does not hold, gasnett_mutex_assertlocked) are active only when the
 *    including file is compiled with GEX_DEBUG defined nonzero (the project's
 *    --config=dbg). All files of one program should agree on it.
 *
 * Like GASNet's, many of these "functions" may be macros or inline
 * functions: never take their address or #undef them.
 */
#ifndef GEX_API_TOOLS_GASNET_TOOLS_H_
#define GEX_API_TOOLS_GASNET_TOOLS_H_
#define _GASNET_TOOLS_H 1
#define _INCLUDED_GASNET_TOOLS_H 1

/* ------------------------------------------------------------------------
 * Threading model, decided as GASNet decides it: GASNETT_THREAD_SAFE (a
 * client that runs several threads, linked with the _par tools library) or
 * GASNETT_THREAD_SINGLE (the _seq library); a conduit client's GASNET_PAR /
 * GASNET_PARSYNC / GASNET_SEQ decide it too. With none of them, a client
 * compiled for threads (-pthread defines _REENTRANT) is thread-safe. gex's
 * tools behave the same in both models (atomics are always atomic, mutexes
 * always lock): the model only names the configuration (GASNETT_THREAD_MODEL,
 * GASNETT_CONFIG_STRING).
 */
#if defined(GASNETT_THREAD_SAFE) + defined(GASNETT_THREAD_SINGLE) + \
        defined(GASNETT_LITE_MODE) >                                \
    1
#error \
    "define at most one of GASNETT_THREAD_SAFE, GASNETT_THREAD_SINGLE, GASNETT_LITE_MODE"
#endif
#if defined(GASNETT_THREAD_SAFE) && defined(GASNET_SEQ)
#error \
    "GASNETT_THREAD_SAFE conflicts with GASNET_SEQ (a single-threaded conduit client)"
#endif
#if defined(GASNETT_THREAD_SINGLE) && \
    (defined(GASNET_PAR) || defined(GASNET_PARSYNC))
#error "GASNETT_THREAD_SINGLE conflicts with GASNET_PAR/GASNET_PARSYNC"
#endif
#if defined(GASNETT_LITE_MODE)
#undef GASNETT_LITE_MODE
#define GASNETT_LITE_MODE 1
#define GASNETT_THREAD_MODEL LITE
#elif defined(GASNETT_THREAD_SAFE) || defined(GASNET_PAR) ||    \
    defined(GASNET_PARSYNC) ||                                  \
    (!defined(GASNET_SEQ) && !defined(GASNETT_THREAD_SINGLE) && \
     (defined(_REENTRANT) || defined(_THREAD_SAFE) ||           \
      defined(PTHREAD_MUTEX_INITIALIZER)))
#undef GASNETT_THREAD_SAFE
#define GASNETT_THREAD_SAFE 1
#define GASNETT_THREAD_MODEL PAR
#else
#undef GASNETT_THREAD_SINGLE
#define GASNETT_THREAD_SINGLE 1
#define GASNETT_THREAD_MODEL SEQ
#endif
#ifndef GASNETT_LITE_MODE
#define GASNETT_LITE_MODE 0
#endif

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
/* GASNet's header makes these available to its clients too; some rely on
 * it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gasnet_portable_platform.h"

/* ------------------------------------------------------------------------
 * Versions and configuration
 */

/* The GASNet release this implements (also what gasnetex.h reports; a
 * tools-only client gets the numbers here). */
#ifndef GASNET_RELEASE_VERSION_MAJOR
#define GASNET_RELEASE_VERSION_MAJOR 2025
#define GASNET_RELEASE_VERSION_MINOR 8
#define GASNET_RELEASE_VERSION_PATCH 0
#endif
#define GASNETT_RELEASE_VERSION_MAJOR GASNET_RELEASE_VERSION_MAJOR
#define GASNETT_RELEASE_VERSION_MINOR GASNET_RELEASE_VERSION_MINOR
#define GASNETT_RELEASE_VERSION_PATCH GASNET_RELEASE_VERSION_PATCH

/* The GASNet tools specification version the interface follows. */
#define GASNETT_SPEC_VERSION_MAJOR 1
#define GASNETT_SPEC_VERSION_MINOR 20

/* Internal helpers of this header (not part of the interface). */
#define GEX_TOOLS_I_STR(x) #x
#define GEX_TOOLS_I_XSTR(x) GEX_TOOLS_I_STR(x)

#if __SIZEOF_POINTER__ == 8
#define GEX_TOOLS_I_PTR_CONFIG "64bit"
#else
#define GEX_TOOLS_I_PTR_CONFIG "32bit"
#endif

/* "a.b.c" from three numeric macros. */
#define GEX_TOOLS_I_VERSION3(a, b, c) \
  GEX_TOOLS_I_XSTR(a) "." GEX_TOOLS_I_XSTR(b) "." GEX_TOOLS_I_XSTR(c)
#define GEX_TOOLS_I_RELEASE_STR                       \
  GEX_TOOLS_I_VERSION3(GASNETT_RELEASE_VERSION_MAJOR, \
                       GASNETT_RELEASE_VERSION_MINOR, \
                       GASNETT_RELEASE_VERSION_PATCH)
#define GEX_TOOLS_I_SPEC_STR                   \
  GEX_TOOLS_I_XSTR(GASNETT_SPEC_VERSION_MAJOR) \
  "." GEX_TOOLS_I_XSTR(GASNETT_SPEC_VERSION_MINOR)

/* A description of this build, for clients that print or compare it:
 * "RELEASE=2025.8.0,SPEC=1.20,EXSPEC=0.19,PTR=64bit,PAR,gex". */
#define GASNETT_CONFIG_STRING                                      \
  "RELEASE=" GEX_TOOLS_I_RELEASE_STR ",SPEC=" GEX_TOOLS_I_SPEC_STR \
  ",EXSPEC=0.19,PTR=" GEX_TOOLS_I_PTR_CONFIG                       \
  "," GEX_TOOLS_I_XSTR(GASNETT_THREAD_MODEL) ",gex"

/* The target this code is compiled for, as a GNU triple. */
#if defined(__x86_64__) && defined(__linux__)
#define GASNETT_SYSTEM_TUPLE "x86_64-pc-linux-gnu"
#elif defined(__aarch64__) && defined(__linux__)
#define GASNETT_SYSTEM_TUPLE "aarch64-unknown-linux-gnu"
#elif defined(__powerpc64__) && defined(__linux__)
#define GASNETT_SYSTEM_TUPLE "powerpc64le-unknown-linux-gnu"
#elif defined(__linux__)
#define GASNETT_SYSTEM_TUPLE "unknown-unknown-linux-gnu"
#else
#define GASNETT_SYSTEM_TUPLE "unknown-unknown-unknown"
#endif

/* The compiler, as "|COMPILER_FAMILY:<family>|COMPILER_VERSION:<x.y.z>|". */
#define GASNETT_PLATFORM_COMPILER_IDSTR PLATFORM_COMPILER_IDSTR
#define GASNETT_PLATFORM_COMPILER_FAMILYID PLATFORM_COMPILER_FAMILYID
#define GASNETT_PLATFORM_COMPILER_ID PLATFORM_COMPILER_ID
#define GASNETT_PLATFORM_COMPILER_VERSION PLATFORM_COMPILER_VERSION

/* Conservative sizes for layout decisions (compile-time constants). */
#define GASNETT_CACHE_LINE_BYTES 64
#define GASNETT_PAGESIZE 4096
#define GASNETT_PAGESHIFT 12

/* ------------------------------------------------------------------------
 * Compiler annotations
 *
 *   GASNETT_INLINE(f) int f(int x) { ... }      force inlining (static)
 *   GASNETT_PLEASE_INLINE(f) int f(int x) ...   inline where possible
 *   GASNETT_NEVER_INLINE(f, int f(int x)) { ... }
 *   void die(void) GASNETT_NORETURN;
 *   GASNETT_FORMAT_PRINTF(f, 1, 2, void f(const char *fmt, ...));
 */
#define GASNETT_INLINE(fnname) static inline __attribute__((__always_inline__))
#define GASNETT_PLEASE_INLINE(fnname) static inline
#define GASNETT_NEVER_INLINE(fnname, declarator) \
  __attribute__((__noinline__)) declarator
#define GASNETT_RESTRICT __restrict__
#define GASNETT_UNUSED __attribute__((__unused__))
#define GASNETT_USED __attribute__((__used__))
#define GASNETT_NORETURN __attribute__((__noreturn__))
#define GASNETT_NORETURNP(fnname)
#define GASNETT_MALLOC __attribute__((__malloc__))
#define GASNETT_MALLOCP(fnname)
#define GASNETT_PURE __attribute__((__pure__))
#define GASNETT_PUREP(fnname)
#define GASNETT_CONST __attribute__((__const__))
#define GASNETT_CONSTP(fnname)
#define GASNETT_HOT __attribute__((__hot__))
#define GASNETT_COLD __attribute__((__cold__))
#define GASNETT_DEPRECATED __attribute__((__deprecated__))
#define GASNETT_WARN_UNUSED_RESULT __attribute__((__warn_unused_result__))
#define GASNETT_FORMAT_PRINTF(fnname, fmtarg, firstvararg, declarator) \
  __attribute__((__format__(__printf__, fmtarg, firstvararg))) declarator
#define GASNETT_FORMAT_PRINTF_FUNCPTR(fnname, fmtarg, firstvararg, declarator) \
  declarator

/* The enclosing function's name, as a const char *. */
#define GASNETT_CURRENT_FUNCTION __func__

/* Branch hints: the value of expr (as 0 or 1), expected true or false. */
#define GASNETT_PREDICT_TRUE(expr) __builtin_expect(!!(expr), 1)
#define GASNETT_PREDICT_FALSE(expr) __builtin_expect(!!(expr), 0)
#ifndef if_pt
#define if_pt(cond) if (GASNETT_PREDICT_TRUE(cond))
#endif
#ifndef if_pf
#define if_pf(cond) if (GASNETT_PREDICT_FALSE(cond))
#endif

/* Marks arguments as used (to silence -Wunused-parameter), as an
 * expression statement: GASNETT_UNUSED_ARGS2(token, arg); */
#define GASNETT_UNUSED_ARGS1(a) ((void)(a))
#define GASNETT_UNUSED_ARGS2(a, b) (GASNETT_UNUSED_ARGS1(a), (void)(b))
#define GASNETT_UNUSED_ARGS3(a, b, c) (GASNETT_UNUSED_ARGS2(a, b), (void)(c))
#define GASNETT_UNUSED_ARGS4(a, b, c, d) \
  (GASNETT_UNUSED_ARGS3(a, b, c), (void)(d))
#define GASNETT_UNUSED_ARGS5(a, b, c, d, e) \
  (GASNETT_UNUSED_ARGS4(a, b, c, d), (void)(e))
#define GASNETT_UNUSED_ARGS6(a, b, c, d, e, f) \
  (GASNETT_UNUSED_ARGS5(a, b, c, d, e), (void)(f))
#define GASNETT_UNUSED_ARGS7(a, b, c, d, e, f, g) \
  (GASNETT_UNUSED_ARGS6(a, b, c, d, e, f), (void)(g))
#define GASNETT_UNUSED_ARGS8(a, b, c, d, e, f, g, h) \
  (GASNETT_UNUSED_ARGS7(a, b, c, d, e, f, g), (void)(h))

/* Falls through to the next case label without a warning. */
#if defined(__cplusplus) && __cplusplus >= 201703L
#define GASNETT_FALLTHROUGH [[fallthrough]];
#else
#define GASNETT_FALLTHROUGH __attribute__((__fallthrough__));
#endif

/* Nonzero iff expr is a compile-time constant (the optimiser's view). */
#define gasnett_constant_p(expr) __builtin_constant_p(expr)

/* Tells the compiler this point is never reached (after a call that cannot
 * return, in a switch's impossible default). Reaching it is undefined
 * behaviour, except with GEX_DEBUG, where it is a fatal error naming the
 * place. */
#if defined(GEX_DEBUG) && GEX_DEBUG
#define gasnett_unreachable()                                          \
  gasnett_fatalerror("gasnett_unreachable() reached at %s:%d in %s()", \
                     __FILE__, __LINE__, __func__)
#else
#define gasnett_unreachable() __builtin_unreachable()
#endif

/* Embeds identText in the executable (for the RCS `ident` tool, and for
 * launchers that read an executable's "$Key: value $" strings). Use at file
 * scope: GASNETT_IDENT(my_id, "$MyLib: 1.0 $"); The string survives the
 * compiler (used) and the linker's section garbage collection (retain,
 * where the toolchain has it). */
#if defined(__has_attribute)
#if __has_attribute(__retain__)
#define GEX_TOOLS_I_RETAIN __attribute__((__retain__))
#endif
#endif
#ifndef GEX_TOOLS_I_RETAIN
#define GEX_TOOLS_I_RETAIN
#endif
#define GASNETT_IDENT(identName, identText) \
  GASNETT_USED GEX_TOOLS_I_RETAIN static const char identName[] = identText

#ifdef __cplusplus
#define GASNETT_BEGIN_EXTERNC extern "C" {
#define GASNETT_END_EXTERNC }
#define GASNETT_EXTERNC extern "C"
#else
#define GASNETT_BEGIN_EXTERNC
#define GASNETT_END_EXTERNC
#define GASNETT_EXTERNC
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Timers
 *
 * A tick is an opaque unit of a per-process monotonic clock. Subtract two
 * readings and convert the interval; never compare ticks across processes.
 */

typedef uint64_t gasnett_tick_t;

#define GASNETT_TICK_MIN ((gasnett_tick_t)0)
#define GASNETT_TICK_MAX ((gasnett_tick_t) ~(gasnett_tick_t)0)

/* The current tick count. Never smaller than an earlier reading in the same
 * process. */
extern gasnett_tick_t gasnett_ticks_now(void);

/* A tick count (usually an interval) in nanoseconds. The first call may take
 * up to ~10 ms to calibrate the clock. */
extern uint64_t gasnett_ticks_to_ns(gasnett_tick_t ticks);

/* A tick count in microseconds: exactly gasnett_ticks_to_ns(ticks) / 1000. */
static inline uint64_t gasnett_ticks_to_us(gasnett_tick_t ticks) {
  return gasnett_ticks_to_ns(ticks) / 1000;
}

/* The smallest interval the clock resolves, and the average cost of one
 * gasnett_ticks_now(), in microseconds (measured once, then cached). */
extern double gasnett_tick_granularityus(void);
extern double gasnett_tick_overheadus(void);

/* Sleeps for at least ns nanoseconds (a signal handler's interruption is
 * slept out). Returns 0, or -1 with errno set when the sleep failed. */
extern int gasnett_nsleep(uint64_t ns);

/* The wall-clock time (gettimeofday()) in microseconds since the epoch. */
extern uint64_t gasnett_gettimeofday_us(void);

/* ------------------------------------------------------------------------
 * Memory barriers (between the threads of one process)
 *
 *   gasnett_local_wmb()   earlier stores are ordered before later stores
 *   gasnett_local_rmb()   earlier loads are ordered before later loads
 *   gasnett_local_mb()    full barrier: all earlier loads and stores before
 *                         all later ones
 *   gasnett_weak_*()      the same (gex has no unthreaded mode to elide them)
 *   gasnett_compiler_fence()  stops compiler reordering only
 *
 * Each also stops the compiler from moving memory accesses across it.
 */

/* GCC warns (-Wtsan) at every fence in a ThreadSanitizer build, which does
 * not model fences; the fences stay correct, so the warning is kept out of
 * client builds here. */
#if defined(__SANITIZE_THREAD__) && !defined(__clang__) && __GNUC__ >= 11
#define GEX_TOOLS_I_QUIET_TSAN 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#else
#define GEX_TOOLS_I_QUIET_TSAN 0
#endif
GASNETT_INLINE(gex_tools_i_fence_mb) void gex_tools_i_fence_mb(void) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
/* A release fence orders all earlier accesses before later stores. */
GASNETT_INLINE(gex_tools_i_fence_wmb) void gex_tools_i_fence_wmb(void) {
  __atomic_thread_fence(__ATOMIC_RELEASE);
}
/* An acquire fence orders earlier loads before all later accesses. */
GASNETT_INLINE(gex_tools_i_fence_rmb) void gex_tools_i_fence_rmb(void) {
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
}
#if GEX_TOOLS_I_QUIET_TSAN
#pragma GCC diagnostic pop
#endif

#define gasnett_compiler_fence() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define gasnett_local_mb() gex_tools_i_fence_mb()
#define gasnett_local_wmb() gex_tools_i_fence_wmb()
#define gasnett_local_rmb() gex_tools_i_fence_rmb()
#define gasnett_weak_mb() gasnett_local_mb()
#define gasnett_weak_wmb() gasnett_local_wmb()
#define gasnett_weak_rmb() gasnett_local_rmb()

/* A hint for the body of a spin-wait loop. */
#if defined(__x86_64__) || defined(__i386__)
#define gasnett_spinloop_hint() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define gasnett_spinloop_hint() __asm__ __volatile__("yield" ::: "memory")
#else
#define gasnett_spinloop_hint() gasnett_compiler_fence()
#endif

/* ------------------------------------------------------------------------
 * Atomics
 *
 * Three families with the same operations:
 *   gasnett_atomic_t    holds a gasnett_atomic_val_t (32-bit unsigned)
 *   gasnett_atomic32_t  holds a uint32_t
 *   gasnett_atomic64_t  holds a uint64_t (8-byte aligned everywhere)
 * Operations, with X one of atomic, atomic32, atomic64 and V its value type:
 *   gasnett_X_init(v)                       static initializer
 *   V    gasnett_X_read(p, flags)
 *   void gasnett_X_set(p, v, flags)
 *   void gasnett_X_increment(p, flags)
 *   void gasnett_X_decrement(p, flags)
 *   int  gasnett_X_decrement_and_test(p, flags)    nonzero iff now 0
 *   int  gasnett_X_compare_and_swap(p, oldval, newval, flags)
 *                                           nonzero iff *p was oldval and
 *                                           is now newval
 *   V    gasnett_X_swap(p, v, flags)        stores v, returns the old value
 *   V    gasnett_X_add(p, v, flags)         returns the new value
 *   V    gasnett_X_subtract(p, v, flags)    returns the new value
 * Values wrap around modulo 2^width. All accesses to an atomic object must go
 * through these operations (after initialization).
 *
 * flags (OR'd together; 0 is GASNETT_ATOMIC_NONE) ask for ordering of other
 * memory accesses relative to the operation. An implementation may give
 * more ordering than asked, never less. Here read-modify-write operations
 * are always sequentially consistent; a read with a *_POST flag is an
 * acquire load, a read with a *_PRE flag is preceded by a full fence; a set
 * with a *_PRE flag is a release store, a set with a *_POST flag is followed
 * by a full fence.
 */
#define GASNETT_ATOMIC_NONE 0x00
#define GASNETT_ATOMIC_RMB_PRE 0x01
#define GASNETT_ATOMIC_WMB_PRE 0x02
#define GASNETT_ATOMIC_RMB_POST 0x04
#define GASNETT_ATOMIC_WMB_POST 0x08
#define GASNETT_ATOMIC_RMB_POST_IF_TRUE 0x10
#define GASNETT_ATOMIC_RMB_POST_IF_FALSE 0x20
#define GASNETT_ATOMIC_MB_PRE (GASNETT_ATOMIC_RMB_PRE | GASNETT_ATOMIC_WMB_PRE)
#define GASNETT_ATOMIC_MB_POST \
  (GASNETT_ATOMIC_RMB_POST | GASNETT_ATOMIC_WMB_POST)
/* Acquire/release conveniences, as GASNet defines them. */
#define GASNETT_ATOMIC_REL GASNETT_ATOMIC_WMB_PRE
#define GASNETT_ATOMIC_ACQ GASNETT_ATOMIC_RMB_POST
#define GASNETT_ATOMIC_ACQ_IF_TRUE GASNETT_ATOMIC_RMB_POST_IF_TRUE
#define GASNETT_ATOMIC_ACQ_IF_FALSE GASNETT_ATOMIC_RMB_POST_IF_FALSE
/* gex extension (not in GASNet): full fences on both sides. */
#define GASNETT_ATOMIC_MB (GASNETT_ATOMIC_MB_PRE | GASNETT_ATOMIC_MB_POST)

#define GASNETT_HAVE_ATOMIC_CAS 1
#define GASNETT_HAVE_ATOMIC_ADD_SUB 1
#define GASNETT_HAVE_STRONGATOMIC_CAS 1
#define GASNETT_HAVE_STRONGATOMIC_ADD_SUB 1

typedef uint32_t gasnett_atomic_val_t;
typedef int32_t gasnett_atomic_sval_t;
#define GASNETT_ATOMIC_MAX ((gasnett_atomic_val_t)UINT32_MAX)
#define GASNETT_ATOMIC_SIGNED_MIN ((gasnett_atomic_sval_t)INT32_MIN)
#define GASNETT_ATOMIC_SIGNED_MAX ((gasnett_atomic_sval_t)INT32_MAX)
/* A value read from a gasnett_atomic_t, as a signed number. */
#define gasnett_atomic_signed(v) ((gasnett_atomic_sval_t)(v))

typedef struct {
  gasnett_atomic_val_t gex_tools_i_value;
} gasnett_atomic_t;
typedef struct {
  uint32_t gex_tools_i_value;
} gasnett_atomic32_t;
typedef struct {
  uint64_t gex_tools_i_value __attribute__((__aligned__(8)));
} gasnett_atomic64_t;

#define gasnett_atomic_init(v) \
  { (gasnett_atomic_val_t)(v) }
#define gasnett_atomic32_init(v) \
  { (uint32_t)(v) }
#define gasnett_atomic64_init(v) \
  { (uint64_t)(v) }

#define GEX_TOOLS_I_PRE_FLAGS GASNETT_ATOMIC_MB_PRE
#define GEX_TOOLS_I_POST_FLAGS                                \
  (GASNETT_ATOMIC_MB_POST | GASNETT_ATOMIC_RMB_POST_IF_TRUE | \
   GASNETT_ATOMIC_RMB_POST_IF_FALSE)

/* Defines the operations of one family. The flags argument is almost always
 * a constant, so the branches on it fold away once inlined. Read-modify-write
 * operations ignore it: they are sequentially consistent. */
#define GEX_TOOLS_I_ATOMIC_FAMILY(X, T, V)                                     \
  static inline V gasnett_##X##_read(T *p, int flags) {                        \
    if (flags & GEX_TOOLS_I_PRE_FLAGS) gex_tools_i_fence_mb();                 \
    if (flags & GEX_TOOLS_I_POST_FLAGS) {                                      \
      return __atomic_load_n(&p->gex_tools_i_value, __ATOMIC_ACQUIRE);         \
    }                                                                          \
    return __atomic_load_n(&p->gex_tools_i_value, __ATOMIC_RELAXED);           \
  }                                                                            \
  static inline void gasnett_##X##_set(T *p, V v, int flags) {                 \
    if (flags & GEX_TOOLS_I_PRE_FLAGS) {                                       \
      __atomic_store_n(&p->gex_tools_i_value, v, __ATOMIC_RELEASE);            \
    } else {                                                                   \
      __atomic_store_n(&p->gex_tools_i_value, v, __ATOMIC_RELAXED);            \
    }                                                                          \
    if (flags & GEX_TOOLS_I_POST_FLAGS) gex_tools_i_fence_mb();                \
  }                                                                            \
  static inline void gasnett_##X##_increment(T *p, int flags) {                \
    (void)flags;                                                               \
    __atomic_add_fetch(&p->gex_tools_i_value, (V)1, __ATOMIC_SEQ_CST);         \
  }                                                                            \
  static inline void gasnett_##X##_decrement(T *p, int flags) {                \
    (void)flags;                                                               \
    __atomic_sub_fetch(&p->gex_tools_i_value, (V)1, __ATOMIC_SEQ_CST);         \
  }                                                                            \
  static inline int gasnett_##X##_decrement_and_test(T *p, int flags) {        \
    (void)flags;                                                               \
    return __atomic_sub_fetch(&p->gex_tools_i_value, (V)1,                     \
                              __ATOMIC_SEQ_CST) == 0;                          \
  }                                                                            \
  static inline int gasnett_##X##_compare_and_swap(T *p, V oldval, V newval,   \
                                                   int flags) {                \
    (void)flags;                                                               \
    return __atomic_compare_exchange_n(&p->gex_tools_i_value, &oldval, newval, \
                                       0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  }                                                                            \
  static inline V gasnett_##X##_swap(T *p, V v, int flags) {                   \
    (void)flags;                                                               \
    return __atomic_exchange_n(&p->gex_tools_i_value, v, __ATOMIC_SEQ_CST);    \
  }                                                                            \
  static inline V gasnett_##X##_add(T *p, V v, int flags) {                    \
    (void)flags;                                                               \
    return __atomic_add_fetch(&p->gex_tools_i_value, v, __ATOMIC_SEQ_CST);     \
  }                                                                            \
  static inline V gasnett_##X##_subtract(T *p, V v, int flags) {               \
    (void)flags;                                                               \
    return __atomic_sub_fetch(&p->gex_tools_i_value, v, __ATOMIC_SEQ_CST);     \
  }

GEX_TOOLS_I_ATOMIC_FAMILY(atomic, gasnett_atomic_t, gasnett_atomic_val_t)
GEX_TOOLS_I_ATOMIC_FAMILY(atomic32, gasnett_atomic32_t, uint32_t)
GEX_TOOLS_I_ATOMIC_FAMILY(atomic64, gasnett_atomic64_t, uint64_t)

/* GASNet's "strong" atomics are atomic even in unthreaded builds and
 * against signal handlers. Ours always are (lock-free on every supported
 * target), so they are the same types and operations. */
#define gasnett_strongatomic_t gasnett_atomic_t
#define gasnett_strongatomic_init gasnett_atomic_init
#define gasnett_strongatomic_read gasnett_atomic_read
#define gasnett_strongatomic_set gasnett_atomic_set
#define gasnett_strongatomic_increment gasnett_atomic_increment
#define gasnett_strongatomic_decrement gasnett_atomic_decrement
#define gasnett_strongatomic_decrement_and_test \
  gasnett_atomic_decrement_and_test
#define gasnett_strongatomic_compare_and_swap gasnett_atomic_compare_and_swap
#define gasnett_strongatomic_swap gasnett_atomic_swap
#define gasnett_strongatomic_add gasnett_atomic_add
#define gasnett_strongatomic_subtract gasnett_atomic_subtract
#define gasnett_strongatomic32_t gasnett_atomic32_t
#define gasnett_strongatomic32_init gasnett_atomic32_init
#define gasnett_strongatomic32_read gasnett_atomic32_read
#define gasnett_strongatomic32_set gasnett_atomic32_set
#define gasnett_strongatomic32_increment gasnett_atomic32_increment
#define gasnett_strongatomic32_decrement gasnett_atomic32_decrement
#define gasnett_strongatomic32_decrement_and_test \
  gasnett_atomic32_decrement_and_test
#define gasnett_strongatomic32_compare_and_swap \
  gasnett_atomic32_compare_and_swap
#define gasnett_strongatomic32_swap gasnett_atomic32_swap
#define gasnett_strongatomic32_add gasnett_atomic32_add
#define gasnett_strongatomic32_subtract gasnett_atomic32_subtract
#define gasnett_strongatomic64_t gasnett_atomic64_t
#define gasnett_strongatomic64_init gasnett_atomic64_init
#define gasnett_strongatomic64_read gasnett_atomic64_read
#define gasnett_strongatomic64_set gasnett_atomic64_set
#define gasnett_strongatomic64_increment gasnett_atomic64_increment
#define gasnett_strongatomic64_decrement gasnett_atomic64_decrement
#define gasnett_strongatomic64_decrement_and_test \
  gasnett_atomic64_decrement_and_test
#define gasnett_strongatomic64_compare_and_swap \
  gasnett_atomic64_compare_and_swap
#define gasnett_strongatomic64_swap gasnett_atomic64_swap
#define gasnett_strongatomic64_add gasnett_atomic64_add
#define gasnett_strongatomic64_subtract gasnett_atomic64_subtract

/* ------------------------------------------------------------------------
 * Errors, backtraces, process control
 */

/* Prints "*** FATAL ERROR (proc N): <formatted message>" to stderr, then a
 * backtrace when GASNET_BACKTRACE is enabled, then ends the job (abort()
 * unless a runtime layer installed a job-wide exit). Never returns. */
extern void gasnett_fatalerror(const char *format, ...)
    __attribute__((__format__(__printf__, 1, 2))) GASNETT_NORETURN;

/* Ends this process at once with exitcode: every thread stops, no atexit
 * handlers run, stdio buffers are not flushed. */
extern void gasnett_killmyprocess(int exitcode) GASNETT_NORETURN;

/* Flushes stdout, stderr and every other open output stream. */
extern void gasnett_flush_streams(void);

/* Flushes, then closes stdin, stdout and stderr (before shutdown). */
extern void gasnett_close_streams(void);

/* Freezes the calling thread for a debugger: sets *flag to 1, prints
 * "*** FREEZE (proc N): ... 'set var <flagsymname> = 0' ..." to stderr and
 * waits (politely) until *flag is 0 again. */
extern void gasnett_freezeForDebuggerNow(volatile int *flag,
                                         const char *flagsymname);

/* The same for the variable gasnet_frozen, but only when
 * GASNET_FREEZE_ON_ERROR is enabled; otherwise returns at once. */
extern void gasnett_freezeForDebuggerErr(void);

/* "file:line in function()" of where it is written, in memory from
 * malloc() that the caller frees. */
#define gasnett_current_loc \
  gex_tools_i_current_loc(__FILE__, __LINE__, GASNETT_CURRENT_FUNCTION)
extern char *gex_tools_i_current_loc(const char *file, int line,
                                     const char *function);

/* Call early with argv[0]. Prepares the unwinder so that later backtraces
 * (possibly from a signal handler) need no dynamic loading. The name is
 * accepted for compatibility: glibc finds symbols without it. */
extern void gasnett_backtrace_init(const char *exename);

/* Writes a backtrace of the calling thread to file descriptor fd. Returns 0
 * on success, nonzero when no backtrace could be taken. Symbol names appear
 * for functions the dynamic symbol table exports (link with -rdynamic to
 * see all of them). */
extern int gasnett_print_backtrace(int fd);

/* Points to a function that calls gasnett_print_backtrace(fd) when
 * GASNET_BACKTRACE is enabled and otherwise returns 1 without printing.
 * Clients may point it elsewhere (to add demangling, say). */
extern int (*gasnett_print_backtrace_ifenabled)(int fd);

/* ------------------------------------------------------------------------
 * System queries and control
 */

/* The host's name as gethostname() reports it, in a buffer that stays valid
 * for the life of the process. */
extern const char *gasnett_gethostname(void);

/* The number of CPUs this process may run on (its affinity mask, never more
 * than the CPUs online). At least 1. */
extern int gasnett_cpu_count(void);

/* Bytes of physical memory on this host. When it cannot be determined: a
 * fatal error if failureIsFatal, else 0. */
extern uint64_t gasnett_getPhysMemSz(int failureIsFatal);

/* Binds the calling thread to the processor numbered rank modulo the number
 * of processors configured. Best effort: a failure prints a warning. */
extern void gasnett_set_affinity(int rank);

/* Yields the processor (sched_yield()); returns its result. */
extern int gasnett_sched_yield(void);

/* Nonzero iff this machine stores the least significant byte first. */
static inline int gasnett_isLittleEndian(void) {
  return __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
}

/* ------------------------------------------------------------------------
 * Environment
 *
 * The *_withdefault queries report what they read when GASNET_VERBOSEENV
 * is enabled, and treat a malformed value as a fatal error that names the
 * variable. An unset or empty variable yields the default.
 */

/* The raw value of keyname, or NULL when unset. Not reported. */
extern char *gasnett_getenv(const char *keyname);

/* The value of keyname, or defaultval when unset or empty. */
extern char *gasnett_getenv_withdefault(const char *keyname,
                                        const char *defaultval);

/* A yes/no value: 1/0, yes/no, y/n, true/false, on/off in any case. */
extern int gasnett_getenv_yesno_withdefault(const char *keyname,
                                            int defaultval);

/* An integer. With mem_size_multiplier 0: decimal or 0x-prefixed hex,
 * optionally signed. Otherwise a (possibly fractional) memory size with an
 * optional suffix K, M, G or T (powers of 1024, optionally followed by B) or
 * B for bytes; a number without a suffix is multiplied by
 * mem_size_multiplier (1024 for "kilobytes by default", say). */
extern int64_t gasnett_getenv_int_withdefault(const char *keyname,
                                              int64_t defaultval,
                                              uint64_t mem_size_multiplier);

/* A floating-point value: "1.5", "-1e4" or a fraction such as "3/8". */
extern double gasnett_getenv_dbl_withdefault(const char *keyname,
                                             double defaultval);

/* Parses str as gasnett_getenv_int_withdefault parses a value; malformed
 * text is a fatal error. */
extern int64_t gasnett_parse_int(const char *str, uint64_t mem_size_multiplier);

/* Nonzero iff GASNET_VERBOSEENV reporting is on. */
extern int gasnett_verboseenv(void);

/* Report a setting the client read itself, the way the *_withdefault
 * queries report theirs: with GASNET_VERBOSEENV on, once per key, from
 * rank 0 only, as "ENV parameter: KEY = VALUE   (default)". is_dflt says
 * the value is the default; is_mem_size shows val as a size ("64K"). */
extern void gasnett_envstr_display(const char *key, const char *val,
                                   int is_dflt);
extern void gasnett_envint_display(const char *key, int64_t val, int is_dflt,
                                   int is_mem_size);
extern void gasnett_envdbl_display(const char *key, double val, int is_dflt);

/* Set or remove a variable in this process's environment only. A failure
 * (an invalid name, say) is a fatal error. */
extern void gasnett_setenv(const char *key, const char *value);
extern void gasnett_unsetenv(const char *key);

/* ------------------------------------------------------------------------
 * Mutexes and condition variables (over pthreads)
 *
 * They behave as the pthread calls of the same names with default
 * attributes; each returns 0 or the pthread error code (trylock: EBUSY when
 * the mutex is held). With GEX_DEBUG, misuse is a fatal error: locking a
 * mutex the thread already holds, unlocking or waiting on one it does not,
 * destroying a held one, and the assertions below.
 */

typedef struct {
  pthread_mutex_t gex_tools_i_mutex;
  /* With GEX_DEBUG: the holding thread's id, or 0. */
  uintptr_t gex_tools_i_owner;
} gasnett_mutex_t;
#define GASNETT_MUTEX_INITIALIZER \
  { PTHREAD_MUTEX_INITIALIZER, 0 }

typedef struct {
  pthread_cond_t gex_tools_i_cond;
} gasnett_cond_t;
#define GASNETT_COND_INITIALIZER \
  { PTHREAD_COND_INITIALIZER }

#if defined(GEX_DEBUG) && GEX_DEBUG
#define GEX_TOOLS_I_MUTEX_DEBUG 1
#else
#define GEX_TOOLS_I_MUTEX_DEBUG 0
#endif

static inline uintptr_t gex_tools_i_self(void) {
  return (uintptr_t)pthread_self();
}
static inline uintptr_t gex_tools_i_owner(gasnett_mutex_t *pl) {
  return __atomic_load_n(&pl->gex_tools_i_owner, __ATOMIC_RELAXED);
}
static inline void gex_tools_i_set_owner(gasnett_mutex_t *pl, uintptr_t who) {
  __atomic_store_n(&pl->gex_tools_i_owner, who, __ATOMIC_RELAXED);
}

static inline int gasnett_mutex_init(gasnett_mutex_t *pl) {
  pl->gex_tools_i_owner = 0;
  return pthread_mutex_init(&pl->gex_tools_i_mutex, NULL);
}
static inline int gasnett_mutex_destroy_ignoreerr(gasnett_mutex_t *pl) {
  return pthread_mutex_destroy(&pl->gex_tools_i_mutex);
}
static inline int gasnett_mutex_destroy(gasnett_mutex_t *pl) {
  if (GEX_TOOLS_I_MUTEX_DEBUG && gex_tools_i_owner(pl) != 0) {
    gasnett_fatalerror("gasnett_mutex_destroy: the mutex is locked");
  }
  return pthread_mutex_destroy(&pl->gex_tools_i_mutex);
}
static inline int gasnett_mutex_lock(gasnett_mutex_t *pl) {
  int rc;
  if (GEX_TOOLS_I_MUTEX_DEBUG && gex_tools_i_owner(pl) == gex_tools_i_self()) {
    gasnett_fatalerror(
        "gasnett_mutex_lock: recursive lock of a mutex this thread holds");
  }
  rc = pthread_mutex_lock(&pl->gex_tools_i_mutex);
  if (GEX_TOOLS_I_MUTEX_DEBUG && rc == 0) {
    gex_tools_i_set_owner(pl, gex_tools_i_self());
  }
  return rc;
}
static inline int gasnett_mutex_trylock(gasnett_mutex_t *pl) {
  const int rc = pthread_mutex_trylock(&pl->gex_tools_i_mutex);
  if (GEX_TOOLS_I_MUTEX_DEBUG && rc == 0) {
    gex_tools_i_set_owner(pl, gex_tools_i_self());
  }
  return rc;
}
static inline int gasnett_mutex_unlock(gasnett_mutex_t *pl) {
  if (GEX_TOOLS_I_MUTEX_DEBUG) {
    if (gex_tools_i_owner(pl) != gex_tools_i_self()) {
      gasnett_fatalerror(
          "gasnett_mutex_unlock: this thread does not hold the mutex");
    }
    gex_tools_i_set_owner(pl, 0);
  }
  return pthread_mutex_unlock(&pl->gex_tools_i_mutex);
}
static inline void gasnett_mutex_assertlocked(gasnett_mutex_t *pl) {
  if (GEX_TOOLS_I_MUTEX_DEBUG && gex_tools_i_owner(pl) != gex_tools_i_self()) {
    gasnett_fatalerror(
        "gasnett_mutex_assertlocked: this thread does not hold the mutex");
  }
  (void)pl;
}
static inline void gasnett_mutex_assertunlocked(gasnett_mutex_t *pl) {
  if (GEX_TOOLS_I_MUTEX_DEBUG && gex_tools_i_owner(pl) == gex_tools_i_self()) {
    gasnett_fatalerror(
        "gasnett_mutex_assertunlocked: this thread holds the mutex");
  }
  (void)pl;
}

static inline int gasnett_cond_init(gasnett_cond_t *pc) {
  return pthread_cond_init(&pc->gex_tools_i_cond, NULL);
}
static inline int gasnett_cond_destroy(gasnett_cond_t *pc) {
  return pthread_cond_destroy(&pc->gex_tools_i_cond);
}
/* Wakes at least one / every waiter. Call with the associated mutex held,
 * after setting the condition the waiters check. */
static inline int gasnett_cond_signal(gasnett_cond_t *pc) {
  return pthread_cond_signal(&pc->gex_tools_i_cond);
}
static inline int gasnett_cond_broadcast(gasnett_cond_t *pc) {
  return pthread_cond_broadcast(&pc->gex_tools_i_cond);
}
/* Releases pl (which the caller holds), sleeps until signalled or woken
 * spuriously, and takes pl again before returning. Always re-check the
 * condition in a loop. */
static inline int gasnett_cond_wait(gasnett_cond_t *pc, gasnett_mutex_t *pl) {
  int rc;
  if (GEX_TOOLS_I_MUTEX_DEBUG) {
    if (gex_tools_i_owner(pl) != gex_tools_i_self()) {
      gasnett_fatalerror(
          "gasnett_cond_wait: this thread does not hold the mutex");
    }
    gex_tools_i_set_owner(pl, 0);
  }
  rc = pthread_cond_wait(&pc->gex_tools_i_cond, &pl->gex_tools_i_mutex);
  if (GEX_TOOLS_I_MUTEX_DEBUG) gex_tools_i_set_owner(pl, gex_tools_i_self());
  return rc;
}

/* ------------------------------------------------------------------------
 * Versions, configuration and executable
 */

/* The release as a number that grows with every release:
 * major * 1000000 + minor * 10000 + patch (2025080000 for 2025.8.0). */
extern uint64_t gasnett_release_version(void);

/* The release as "major.minor.patch" ("2025.8.0"). */
extern const char *gasnett_release_version_str(void);

/* The library's configuration options that cost performance (debug checks,
 * tracing, statistics), one per line, each line indented; "" when there are
 * none. Clients print it as a warning when it is not empty. */
extern const char *gasnett_performance_warning_str(void);

/* The absolute path of this process's executable (/proc/self/exe), or ""
 * when it cannot be found. Valid for the life of the process. */
extern const char *gasnett_exe_name(void);

/* ------------------------------------------------------------------------
 * Signals and resource limits
 */

typedef void (*gasnett_sighandlerfn_t)(int);

/* Installs fp (a function, SIG_DFL or SIG_IGN) for signal sigtocatch and
 * returns the previous handler. An invalid signal is a fatal error. */
extern gasnett_sighandlerfn_t gasnett_reghandler(int sigtocatch,
                                                 gasnett_sighandlerfn_t fp);

/* Raises the soft limit of resource res (an RLIMIT_* constant) to its hard
 * limit; lim_desc names it in the warning a failure prints. Returns 1 when
 * the soft limit now equals the hard limit, else 0. */
extern int gasnett_maximize_rlimit(int res, const char *lim_desc);

/* gasnett_maximize_rlimit for every limit on a process's memory and
 * execution (address space, data, resident set, stack, locked memory, CPU
 * time); not file-system limits. Returns 1 when all succeeded, else 0. */
extern int gasnett_maximize_rlimits(void);

/* ------------------------------------------------------------------------
 * Memory
 */

/* Maps size bytes (rounded up to pages) of zeroed, private, anonymous
 * memory, readable and writable, and returns its address; failure is a
 * fatal error naming the call and the size. gasnett_munmap gives it back
 * (a failure there is fatal too). */
extern void *gasnett_mmap(uintptr_t size);
extern void gasnett_munmap(void *addr, uintptr_t size);

/* ------------------------------------------------------------------------
 * Data utilities
 */

/* A 64-bit checksum of the numbytes bytes at p (numbytes <= 0: nothing).
 * Cheap, deterministic across runs and processes, and sensitive to the
 * order of bytes; not cryptographic. */
extern uint64_t gasnett_checksum(const void *p, int numbytes);

/* The number of bytes equal to zero in the machine representation of x. */
static inline int gasnett_count0s_uint64_t(uint64_t x) {
  int zeros = 0;
  int i;
  for (i = 0; i < 8; ++i) zeros += ((x >> (8 * i)) & 0xff) == 0;
  return zeros;
}
static inline int gasnett_count0s_uint32_t(uint32_t x) {
  /* The upper four bytes of the widened value are nonzero: not counted. */
  return gasnett_count0s_uint64_t((uint64_t)x | 0xffffffff00000000ull);
}
static inline int gasnett_count0s_uintptr_t(uintptr_t x) {
#if __SIZEOF_POINTER__ == 8
  return gasnett_count0s_uint64_t((uint64_t)x);
#else
  return gasnett_count0s_uint32_t((uint32_t)x);
#endif
}

/* The number of zero bytes in [p, p + numbytes). */
extern size_t gasnett_count0s(const void *p, size_t numbytes);

/* Copies numbytes from src to dst (which must not overlap) and returns the
 * number of zero bytes copied: gasnett_count0s(memcpy(dst, src, n), n) in
 * one pass. */
extern size_t gasnett_count0s_copy(void *GASNETT_RESTRICT dst,
                                   const void *GASNETT_RESTRICT src,
                                   size_t numbytes);

/* Formats val into buf (bufsz bytes, always NUL-terminated) and returns
 * buf. As a memory size (is_mem_size nonzero): the largest unit among B,
 * KB, MB, GB, TB that divides val exactly ("64KB", "1536B"), so that
 * gasnett_parse_int(buf, 1) gives val back; otherwise a decimal integer. */
extern char *gasnett_format_number(int64_t val, char *buf, size_t bufsz,
                                   int is_mem_size);

/* ------------------------------------------------------------------------
 * Thread-specific data
 *
 *   GASNETT_THREADKEY_DEFINE(mykey);    at file scope in exactly one file
 *   GASNETT_THREADKEY_DECLARE(mykey);   in a header, to use it elsewhere
 *   void *v = gasnett_threadkey_get(mykey);     NULL until set
 *   gasnett_threadkey_set(mykey, v);
 *   gasnett_threadkey_init(mykey);      optional (any number of times)
 *   gasnett_threadkey_get_noinit(mykey) / _set_noinit(mykey, v)
 *
 * Each thread has its own value (compiler thread-local storage, which needs
 * no initialisation, so the _noinit forms are the same calls).
 */
#define GEX_TOOLS_I_THREADKEY(key) gex_tools_i_threadkey_##key
/* Storing the address of a local in a key is legitimate (the thread clears
 * or stops using it before the local dies), but GCC's -Wdangling-pointer
 * (in -Wall) flags it; the empty asm hides where the pointer came from. */
static inline void gex_tools_i_threadkey_store(void **slot, void *value) {
  __asm__("" : "+r"(value));
  *slot = value;
}
#define GASNETT_THREADKEY_DECLARE(key) \
  extern __thread void *GEX_TOOLS_I_THREADKEY(key)
#define GASNETT_THREADKEY_DEFINE(key) \
  __thread void *GEX_TOOLS_I_THREADKEY(key) = NULL
#define gasnett_threadkey_get(key) ((void *)GEX_TOOLS_I_THREADKEY(key))
#define gasnett_threadkey_set(key, newval) \
  gex_tools_i_threadkey_store(&GEX_TOOLS_I_THREADKEY(key), (void *)(newval))
#define gasnett_threadkey_init(key) ((void)&GEX_TOOLS_I_THREADKEY(key))
#define gasnett_threadkey_get_noinit(key) gasnett_threadkey_get(key)
#define gasnett_threadkey_set_noinit(key, newval) \
  gasnett_threadkey_set(key, newval)

/* ------------------------------------------------------------------------
 * Backtrace extension
 *
 * A client adds its own backtrace mechanism by defining, in one file:
 *
 *   gasnett_backtrace_type_t gasnett_backtrace_user = {
 *     "MYAPP", &myapp_backtrace, 1 };
 *
 * gasnett_print_backtrace(fd) then tries the mechanisms named in
 * GASNET_BACKTRACE_TYPE (comma-separated, in order; default "<name>,EXECINFO"
 * with the client's name first) until one returns 0. EXECINFO is glibc's
 * backtrace(). Unknown names in the list are skipped.
 */
typedef struct {
  const char *name;  /* upper-case name for GASNET_BACKTRACE_TYPE */
  int (*fnp)(int);   /* writes a backtrace to the fd; 0 on success */
  int threadsupport; /* nonzero if it backtraces the calling thread */
} gasnett_backtrace_type_t;
extern gasnett_backtrace_type_t gasnett_backtrace_user;

/* ------------------------------------------------------------------------
 * Tracing and statistics
 *
 * In a file compiled with GASNET_TRACE defined (GASNet's --enable-trace;
 * here --config=trace), the GASNETT_TRACE_* macros write to the trace file
 * that GASNET_TRACEFILE names; with GASNET_STATS defined the GASNETT_STATS_*
 * macros write to GASNET_STATSFILE. Otherwise every one of them expands to
 * a constant or a no-op whose arguments are not evaluated (but are still
 * type-checked, and count as used).
 *
 *   GASNETT_TRACE_PRINTF(fmt, ...)        a line in the trace, if the mask
 *                                         has H (client messages)
 *   GASNETT_TRACE_PRINTF_FORCE(fmt, ...)  a line whatever the mask
 *   GASNETT_TRACE_ENABLED                 nonzero iff PRINTF would write
 *   GASNETT_TRACE_GETMASK() / SETMASK(m)  the mask (letters, see README)
 *   GASNETT_TRACE_GET_TRACELOCAL() / SET_TRACELOCAL(v)
 *   GASNETT_TRACE_SETSOURCELINE(file, line) / GETSOURCELINE(&file, &line)
 *   GASNETT_TRACE_FREEZESOURCELINE() / UNFREEZESOURCELINE()
 *   GASNETT_STATS_PRINTF(fmt, ...) / GASNETT_STATS_PRINTF_FORCE(fmt, ...)
 *   GASNETT_STATS_GETMASK() / SETMASK(m)
 *   GASNETT_STATS_DUMP(reset)             write the statistics so far
 *   GASNETT_STATS_INIT(callback)          register a dump callback
 *
 * The library half below is always present; only these macros change.
 */

/* Internal entry points of the macros (not part of the interface). */
extern int gex_tools_i_trace_enabled(char category);
extern void gex_tools_i_trace_printf(int force, const char *format, ...)
    __attribute__((__format__(__printf__, 2, 3)));
extern const char *gex_tools_i_trace_getmask(void);
extern void gex_tools_i_trace_setmask(const char *mask);
extern int gex_tools_i_trace_get_tracelocal(void);
extern void gex_tools_i_trace_set_tracelocal(int enable);
extern void gex_tools_i_trace_setsourceline(const char *file,
                                            unsigned int line);
extern void gex_tools_i_trace_getsourceline(const char **pfile,
                                            unsigned int *pline);
extern void gex_tools_i_trace_freezesourceline(void);
extern void gex_tools_i_trace_unfreezesourceline(void);
extern int gex_tools_i_stats_enabled(char category);
extern void gex_tools_i_stats_printf(int force, const char *format, ...)
    __attribute__((__format__(__printf__, 2, 3)));
extern const char *gex_tools_i_stats_getmask(void);
extern void gex_tools_i_stats_setmask(const char *mask);
extern void gex_tools_i_stats_dump(int reset);

/* The type of a statistics callback: it is passed a printf-like function
 * that writes a line into the statistics output. */
typedef void (*gasnett_stats_printf_fn_t)(const char *format, ...);
typedef void (*gasnett_stats_callback_t)(gasnett_stats_printf_fn_t printfn);
/* Registers fn (NULL: none) to run at every statistics dump; returns
 * nonzero iff client statistics (mask letter H) are being collected. */
extern int gex_tools_i_stats_init(gasnett_stats_callback_t fn);

/* What a compiled-out macro expands to: sizeof keeps the arguments
 * unevaluated but type-checked (the format attribute applies), and they
 * count as used, so no -Wunused warning appears in either build. */
static inline int gex_tools_i_printf_noop(const char *format, ...)
    __attribute__((__format__(__printf__, 1, 2)));
static inline int gex_tools_i_printf_noop(const char *format, ...) {
  (void)format;
  return 0;
}
static inline int gex_tools_i_getsourceline_noop(const char **pfile,
                                                 unsigned int *pline) {
  (void)pfile;
  (void)pline;
  return 0;
}
static inline int gex_tools_i_setsourceline_noop(const char *file,
                                                 unsigned int line) {
  (void)file;
  (void)line;
  return 0;
}
static inline int gex_tools_i_stats_init_noop(gasnett_stats_callback_t fn) {
  (void)fn;
  return 0;
}
#define GEX_TOOLS_I_UNEVALUATED(expr) ((void)sizeof(expr))

#if defined(GASNET_TRACE)
#define GASNETT_TRACE_ENABLED gex_tools_i_trace_enabled('H')
#define GASNETT_TRACE_PRINTF(...) gex_tools_i_trace_printf(0, __VA_ARGS__)
#define GASNETT_TRACE_PRINTF_FORCE(...) gex_tools_i_trace_printf(1, __VA_ARGS__)
#define GASNETT_TRACE_GETMASK() gex_tools_i_trace_getmask()
#define GASNETT_TRACE_SETMASK(mask) gex_tools_i_trace_setmask(mask)
#define GASNETT_TRACE_GET_TRACELOCAL() gex_tools_i_trace_get_tracelocal()
#define GASNETT_TRACE_SET_TRACELOCAL(newval) \
  gex_tools_i_trace_set_tracelocal(newval)
#define GASNETT_TRACE_SETSOURCELINE(file, line) \
  gex_tools_i_trace_setsourceline((file), (unsigned int)(line))
#define GASNETT_TRACE_GETSOURCELINE(pfile, pline) \
  gex_tools_i_trace_getsourceline((pfile), (pline))
#define GASNETT_TRACE_FREEZESOURCELINE() gex_tools_i_trace_freezesourceline()
#define GASNETT_TRACE_UNFREEZESOURCELINE() \
  gex_tools_i_trace_unfreezesourceline()
#else
#define GASNETT_TRACE_ENABLED 0
#define GASNETT_TRACE_PRINTF(...) \
  GEX_TOOLS_I_UNEVALUATED(gex_tools_i_printf_noop(__VA_ARGS__))
#define GASNETT_TRACE_PRINTF_FORCE(...) \
  GEX_TOOLS_I_UNEVALUATED(gex_tools_i_printf_noop(__VA_ARGS__))
#define GASNETT_TRACE_GETMASK() ""
#define GASNETT_TRACE_SETMASK(mask) GEX_TOOLS_I_UNEVALUATED(mask)
#define GASNETT_TRACE_GET_TRACELOCAL() 0
#define GASNETT_TRACE_SET_TRACELOCAL(newval) GEX_TOOLS_I_UNEVALUATED(newval)
#define GASNETT_TRACE_SETSOURCELINE(file, line) \
  GEX_TOOLS_I_UNEVALUATED(gex_tools_i_setsourceline_noop((file), (line)))
#define GASNETT_TRACE_GETSOURCELINE(pfile, pline) \
  GEX_TOOLS_I_UNEVALUATED(gex_tools_i_getsourceline_noop((pfile), (pline)))
#define GASNETT_TRACE_FREEZESOURCELINE() ((void)0)
#define GASNETT_TRACE_UNFREEZESOURCELINE() ((void)0)
#endif

#if defined(GASNET_STATS)
#define GASNETT_STATS_PRINTF(...) gex_tools_i_stats_printf(0, __VA_ARGS__)
#define GASNETT_STATS_PRINTF_FORCE(...) gex_tools_i_stats_printf(1, __VA_ARGS__)
#define GASNETT_STATS_GETMASK() gex_tools_i_stats_getmask()
#define GASNETT_STATS_SETMASK(mask) gex_tools_i_stats_setmask(mask)
#define GASNETT_STATS_DUMP(reset) gex_tools_i_stats_dump(reset)
#define GASNETT_STATS_INIT(callbackfn) gex_tools_i_stats_init(callbackfn)
#else
#define GASNETT_STATS_PRINTF(...) \
  GEX_TOOLS_I_UNEVALUATED(gex_tools_i_printf_noop(__VA_ARGS__))
#define GASNETT_STATS_PRINTF_FORCE(...) \
  GEX_TOOLS_I_UNEVALUATED(gex_tools_i_printf_noop(__VA_ARGS__))
#define GASNETT_STATS_GETMASK() ""
#define GASNETT_STATS_SETMASK(mask) GEX_TOOLS_I_UNEVALUATED(mask)
#define GASNETT_STATS_DUMP(reset) GEX_TOOLS_I_UNEVALUATED(reset)
#define GASNETT_STATS_INIT(callbackfn) \
  ((int)(0 * sizeof(gex_tools_i_stats_init_noop(callbackfn))))
#endif

/* The link-time check of the threading model (see api/tools/linkcheck.cc):
 * a reference to the model's symbol from every file that includes this
 * header, so that a client linked with the wrong tools library (a
 * GASNETT_THREAD_SAFE client with :gasnet_tools_seq) fails to link. */
#if !defined(GEX_TOOLS_I_BUILDING_LIBRARY) && !defined(_GEX_BUILDING_LIBRARY)
#define GEX_TOOLS_I_LINKCHECK \
  _CONCAT(gex_tools_i_linkcheck_, GASNETT_THREAD_MODEL)
extern int GEX_TOOLS_I_LINKCHECK;
static int *gex_tools_i_linkcheck(void) __attribute__((__used__));
static int *gex_tools_i_linkcheck(void) { return &GEX_TOOLS_I_LINKCHECK; }
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GEX_API_TOOLS_GASNET_TOOLS_H_ */

/* ------------------------------------------------------------------------
 * Full mode: what GASNet offers only to a conduit client, which includes
 * gasnetex.h before gasnet_tools.h (they need its types). Outside the
 * include guard, so that including gasnet_tools.h again after gasnetex.h
 * adds this part.
 */
#if (defined(GASNETEX_H) || defined(_INCLUDED_GASNETEX_H)) && \
    !defined(GEX_API_TOOLS_GASNET_TOOLS_FULL_H_)
#define GEX_API_TOOLS_GASNET_TOOLS_FULL_H_

#ifdef __cplusplus
extern "C" {
#endif

/* The most client threads a process may use with GASNet (what
 * gex_System_QueryMaxThreads() reports): 1 for a GASNET_SEQ client. */
#if defined(GASNET_SEQ)
#define GASNETT_MAX_THREADS 1
#else
#define GASNETT_MAX_THREADS 65535
#endif

/* The set of values in dt / op / ti as names joined by '|'
 * ("GEX_DT_I32|GEX_DT_DBL"); "(empty)" for 0 and "(invalid)" when a bit
 * names no value. Writes into buf when it is not NULL and returns the
 * length of the text plus one (the size buf needs: call with NULL first). */
extern size_t gasnett_format_dt(char *buf, gex_DT_t dt);
extern size_t gasnett_format_op(char *buf, gex_OP_t op);
extern size_t gasnett_format_ti(char *buf, gex_TI_t ti);

/* VIS descriptions, for error messages. Each *_bufsz(...) is the size of
 * the buffer the matching call needs; the call fills it and returns the
 * total number of data bytes the list describes.
 *
 * gasnett_format_memveclist: count gex_Memvec_t entries as
 *   "{[addr,len],...} (n entries, N bytes)".
 * gasnett_format_addrlist: count addresses of len bytes each.
 * gasnett_format_putsgets: a strided transfer (dst/src address and strides,
 *   elemsz and count[0..stridelevels-1]) with rank peer of team tm; pstats
 *   is accepted for compatibility and ignored (may be NULL). */
extern size_t gasnett_format_memveclist_bufsz(size_t count);
extern size_t gasnett_format_memveclist(char *buf, size_t count,
                                        gex_Memvec_t const *list);
extern size_t gasnett_format_addrlist_bufsz(size_t count);
extern size_t gasnett_format_addrlist(char *buf, size_t count,
                                      void *const *list, size_t len);
extern size_t gasnett_format_putsgets_bufsz(size_t stridelevels);
extern size_t gasnett_format_putsgets(
    char *buf, void *pstats, gex_TM_t tm, gex_Rank_t rank, void *dstaddr,
    const ptrdiff_t dststrides[], void *srcaddr, const ptrdiff_t srcstrides[],
    size_t elemsz, const size_t count[], size_t stridelevels);

/* Self-checks of the tools in this process (GASNet's testinternal):
 * timers, atomics and mutexes under threadcnt threads, thread keys,
 * zero-byte counting and checksums, number formatting, the format helpers.
 * testsections selects sections by letter (NULL or "" for all: A timers,
 * B atomics, C mutexes and condition variables, D thread keys, E data
 * utilities, F formatting). Runs iters iterations of each; myteam, myseg,
 * peer and peerseg are accepted for compatibility (these checks are local)
 * and may be GEX_TM_INVALID/NULL. Returns the number of failed checks (0:
 * all passed), each described on stderr. */
extern int gasnett_run_diagnostics(int iters, int threadcnt,
                                   const char *testsections, gex_TM_t myteam,
                                   void *myseg, gex_Rank_t peer, void *peerseg);

/* The AM handlers gasnett_run_diagnostics needs registered (with
 * gex_EP_RegisterHandlers) before it runs: *htable points to
 * *htable_cnt entries. The local checks need none, so the count is 0. */
extern void gasnett_diagnostic_gethandlers(gex_AM_Entry_t **htable,
                                           int *htable_cnt);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* full mode */
