/* gasnet_tools.h from a C11 client: compiled as C with pedantic warnings as
 * errors, and exercised from plain C. Exits 0 when every check passes,
 * 1 otherwise, naming each failed check on stderr. */

/* A thread-safe tools client defines this, as GASNet asks; the header must
 * accept it. */
#define GASNETT_THREAD_SAFE 1
#include <gasnet_tools.h>
#include <pthread.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

GASNETT_INLINE(twice)
int twice(int x) { return 2 * x; }

static const char *name_of_this_function(void) {
  return GASNETT_CURRENT_FUNCTION;
}

static void check_config(void) {
  CHECK(GASNETT_RELEASE_VERSION_MAJOR == 2025);
  CHECK(GASNETT_RELEASE_VERSION_MINOR == 8);
  CHECK(GASNETT_RELEASE_VERSION_PATCH == 0);
  CHECK(strncmp(GASNETT_CONFIG_STRING, "RELEASE=2025.8.0,", 17) == 0);
  CHECK(strstr(GASNETT_CONFIG_STRING, ",PAR,") != NULL);
  CHECK(strstr(GASNETT_SYSTEM_TUPLE, "linux") != NULL);
  CHECK(strncmp(GASNETT_PLATFORM_COMPILER_IDSTR, "|COMPILER_FAMILY:", 17) == 0);
  /* The compiler-version comparisons, in #if and as values. */
#if !PLATFORM_COMPILER_VERSION_GE(4, 0, 0) || \
    PLATFORM_COMPILER_VERSION_LT(4, 0, 0)
#error "PLATFORM_COMPILER_VERSION_GE/_LT disagree with a GCC/Clang >= 4"
#endif
  CHECK(PLATFORM_COMPILER_VERSION_GE(4, 0, 0));
  CHECK(!PLATFORM_COMPILER_VERSION_GT(1000, 0, 0));
  CHECK(PLATFORM_COMPILER_VERSION_LE(1000, 0, 0));
  CHECK(PLATFORM_COMPILER_VERSION_EQ(0, 0, 0) == 0);
  CHECK(PLATFORM_COMPILER_VERSION_INT(1, 2, 3) == 0x010203);
  CHECK(GASNETT_CACHE_LINE_BYTES == 64);
  CHECK(GASNETT_PAGESIZE == 4096);
  CHECK(twice(21) == 42);
  CHECK(strcmp(name_of_this_function(), "name_of_this_function") == 0);
  CHECK(GASNETT_PREDICT_TRUE(7) == 1);
  CHECK(GASNETT_PREDICT_FALSE(0) == 0);
}

static void check_ticks(void) {
  gasnett_tick_t previous = gasnett_ticks_now();
  gasnett_tick_t start = previous;
  int i;
  for (i = 0; i < 10000; ++i) {
    gasnett_tick_t now = gasnett_ticks_now();
    CHECK(now >= previous);
    previous = now;
  }
  CHECK(gasnett_ticks_to_us(previous - start) ==
        gasnett_ticks_to_ns(previous - start) / 1000);
  CHECK(gasnett_ticks_to_ns(0) == 0);
  CHECK(GASNETT_TICK_MIN == 0);
  CHECK(GASNETT_TICK_MAX == UINT64_MAX);
  CHECK(gasnett_tick_granularityus() > 0.0);
  CHECK(gasnett_tick_overheadus() > 0.0);
  start = gasnett_ticks_now();
  CHECK(gasnett_nsleep(2000000) == 0);
  /* A sleep never ends early; the margin absorbs calibration error. */
  CHECK(gasnett_ticks_to_ns(gasnett_ticks_now() - start) >= 1500000);
}

static void check_atomics(void) {
  gasnett_atomic_t a = gasnett_atomic_init(GASNETT_ATOMIC_MAX);
  gasnett_atomic32_t b = gasnett_atomic32_init(10);
  gasnett_atomic64_t c = gasnett_atomic64_init(UINT64_C(1) << 40);
  gasnett_local_mb();
  gasnett_local_wmb();
  gasnett_local_rmb();
  gasnett_compiler_fence();
  gasnett_weak_mb();
  CHECK(gasnett_atomic_signed(gasnett_atomic_read(&a, 0)) == -1);
  gasnett_atomic_increment(&a, GASNETT_ATOMIC_MB);
  CHECK(gasnett_atomic_read(&a, GASNETT_ATOMIC_ACQ) == 0);
  gasnett_atomic_set(&a, 3, GASNETT_ATOMIC_REL);
  CHECK(gasnett_atomic_add(&a, 4, 0) == 7);
  CHECK(gasnett_atomic_subtract(&a, 5, 0) == 2);
  CHECK(!gasnett_atomic_decrement_and_test(&a, 0));
  CHECK(gasnett_atomic_decrement_and_test(&a, GASNETT_ATOMIC_ACQ_IF_TRUE));
  CHECK(!gasnett_atomic_compare_and_swap(&a, 1, 2, 0));
  CHECK(gasnett_atomic_compare_and_swap(&a, 0, 2, 0));
  CHECK(gasnett_atomic_swap(&a, 9, 0) == 2);
  gasnett_atomic_decrement(&a, 0);
  CHECK(gasnett_atomic_read(&a, 0) == 8);

  CHECK(gasnett_atomic32_add(&b, 5, 0) == 15);
  CHECK(gasnett_atomic32_swap(&b, 1, 0) == 15);
  CHECK(gasnett_atomic32_decrement_and_test(&b, 0));

  CHECK(gasnett_atomic64_add(&c, UINT64_C(1) << 40, 0) == UINT64_C(1) << 41);
  CHECK(gasnett_atomic64_compare_and_swap(&c, UINT64_C(1) << 41, 5, 0));
  gasnett_atomic64_set(&c, 0, 0);
  gasnett_atomic64_decrement(&c, 0);
  CHECK(gasnett_atomic64_read(&c, 0) == UINT64_MAX);
}

enum { kThreads = 4, kIterations = 20000 };

struct shared {
  gasnett_atomic_t atomic_count;
  gasnett_mutex_t lock;
  gasnett_cond_t cond;
  long locked_count;
  int finished;
};

static void *worker(void *arg) {
  struct shared *s = (struct shared *)arg;
  int i;
  for (i = 0; i < kIterations; ++i) {
    gasnett_atomic_increment(&s->atomic_count, 0);
    gasnett_mutex_lock(&s->lock);
    ++s->locked_count;
    gasnett_mutex_unlock(&s->lock);
  }
  gasnett_mutex_lock(&s->lock);
  ++s->finished;
  gasnett_cond_signal(&s->cond);
  gasnett_mutex_unlock(&s->lock);
  return NULL;
}

static void check_threads(void) {
  struct shared s = {gasnett_atomic_init(0), GASNETT_MUTEX_INITIALIZER,
                     GASNETT_COND_INITIALIZER, 0, 0};
  pthread_t threads[kThreads];
  int i;
  for (i = 0; i < kThreads; ++i) {
    CHECK(pthread_create(&threads[i], NULL, worker, &s) == 0);
  }
  /* Wait for every worker's "finished" through the condition variable. */
  gasnett_mutex_lock(&s.lock);
  while (s.finished < kThreads) CHECK(gasnett_cond_wait(&s.cond, &s.lock) == 0);
  gasnett_mutex_unlock(&s.lock);
  for (i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  CHECK(gasnett_atomic_read(&s.atomic_count, 0) ==
        (gasnett_atomic_val_t)kThreads * kIterations);
  CHECK(s.locked_count == (long)kThreads * kIterations);
}

static void *try_from_other_thread(void *arg) {
  static int result;
  result = gasnett_mutex_trylock((gasnett_mutex_t *)arg);
  if (result == 0) gasnett_mutex_unlock((gasnett_mutex_t *)arg);
  return &result;
}

static void check_trylock(void) {
  gasnett_mutex_t m;
  pthread_t thread;
  void *result;
  CHECK(gasnett_mutex_init(&m) == 0);
  CHECK(gasnett_mutex_trylock(&m) == 0);
  CHECK(pthread_create(&thread, NULL, try_from_other_thread, &m) == 0);
  pthread_join(thread, &result);
  CHECK(*(int *)result == EBUSY);
  CHECK(gasnett_mutex_unlock(&m) == 0);
  CHECK(pthread_create(&thread, NULL, try_from_other_thread, &m) == 0);
  pthread_join(thread, &result);
  CHECK(*(int *)result == 0);
  CHECK(gasnett_mutex_destroy(&m) == 0);
}

static void check_env(void) {
  gasnett_unsetenv("GEX_TOOLS_C_TEST");
  CHECK(gasnett_getenv("GEX_TOOLS_C_TEST") == NULL);
  CHECK(gasnett_getenv_yesno_withdefault("GEX_TOOLS_C_TEST", 1) == 1);
  CHECK(gasnett_getenv_int_withdefault("GEX_TOOLS_C_TEST", -4, 0) == -4);
  CHECK(gasnett_getenv_dbl_withdefault("GEX_TOOLS_C_TEST", 0.25) == 0.25);
  gasnett_setenv("GEX_TOOLS_C_TEST", "no");
  CHECK(strcmp(gasnett_getenv("GEX_TOOLS_C_TEST"), "no") == 0);
  CHECK(gasnett_getenv_yesno_withdefault("GEX_TOOLS_C_TEST", 1) == 0);
  gasnett_setenv("GEX_TOOLS_C_TEST", "4K");
  CHECK(gasnett_getenv_int_withdefault("GEX_TOOLS_C_TEST", 0, 1) == 4096);
  gasnett_setenv("GEX_TOOLS_C_TEST", "3");
  CHECK(gasnett_getenv_int_withdefault("GEX_TOOLS_C_TEST", 0, 1024) == 3072);
  CHECK(gasnett_getenv_int_withdefault("GEX_TOOLS_C_TEST", 0, 0) == 3);
  gasnett_setenv("GEX_TOOLS_C_TEST", "3/8");
  CHECK(gasnett_getenv_dbl_withdefault("GEX_TOOLS_C_TEST", 0) == 0.375);
  CHECK(strcmp(gasnett_getenv_withdefault("GEX_TOOLS_C_TEST", "x"), "3/8") ==
        0);
  gasnett_unsetenv("GEX_TOOLS_C_TEST");
  CHECK(gasnett_parse_int("0x40", 0) == 64);
}

static void check_system(void) {
  const char *host = gasnett_gethostname();
  CHECK(host != NULL && host[0] != '\0');
  CHECK(gasnett_cpu_count() >= 1);
  CHECK(gasnett_getPhysMemSz(0) > 0);
  CHECK(gasnett_sched_yield() == 0);
  CHECK(gasnett_isLittleEndian() ==
        (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__));
  gasnett_backtrace_init("gasnet_tools_c_test");
  gasnett_flush_streams();
}

int main(void) {
  check_config();
  check_ticks();
  check_atomics();
  check_threads();
  check_trylock();
  check_env();
  check_system();
  if (failures != 0) {
    fprintf(stderr, "gasnet_tools_c_test: %d check(s) failed\n", failures);
    return 1;
  }
  printf("gasnet_tools_c_test: all checks passed\n");
  return 0;
}
