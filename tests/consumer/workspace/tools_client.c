/* A tools-only client (GASNet's libgasnet_tools-seq/-par), built in the
 * consumer workspace on @gex//api/tools:gasnet_tools_seq, or with
 * GASNETT_THREAD_SAFE on :gasnet_tools_par. Prints
 * "tools_client: <SEQ|PAR> ok" when every check passes; exits 1 naming the
 * first failed check otherwise. */
#include <gasnet_tools.h>
#include <string.h>

#if defined(GASNETT_THREAD_SAFE)
#include <pthread.h>
#define MODEL "PAR"
#else
#define MODEL "SEQ"
#endif

#define CHECK(cond)                                         \
  do {                                                      \
    if (!(cond)) {                                          \
      fprintf(stderr, "tools_client: failed: %s\n", #cond); \
      return 1;                                             \
    }                                                       \
  } while (0)

GASNETT_THREADKEY_DEFINE(key);
static gasnett_atomic_t counter = gasnett_atomic_init(0);

#if defined(GASNETT_THREAD_SAFE)
static void *worker(void *arg) {
  int i;
  gasnett_threadkey_set(key, arg);
  for (i = 0; i < 10000; ++i) gasnett_atomic_increment(&counter, 0);
  return gasnett_threadkey_get(key) == arg ? arg : NULL;
}
#endif

int main(void) {
  gasnett_tick_t start = gasnett_ticks_now();
  char text[32];
  CHECK(strcmp(gasnett_release_version_str(), "2025.8.0") == 0);
  CHECK(strstr(GASNETT_CONFIG_STRING, "," MODEL ",") != NULL);
  CHECK(gasnett_nsleep(1000000) == 0);
  CHECK(gasnett_ticks_to_ns(gasnett_ticks_now() - start) >= 1000000u);
  CHECK(gasnett_threadkey_get(key) == NULL);
  gasnett_format_number(3 << 20, text, sizeof(text), 1);
  CHECK(gasnett_parse_int(text, 1) == 3 << 20);
#if defined(GASNETT_THREAD_SAFE)
  {
    pthread_t threads[4];
    int slots[4];
    void *result;
    int t;
    for (t = 0; t < 4; ++t) {
      CHECK(pthread_create(&threads[t], NULL, worker, &slots[t]) == 0);
    }
    for (t = 0; t < 4; ++t) {
      CHECK(pthread_join(threads[t], &result) == 0);
      CHECK(result == &slots[t]);
    }
    CHECK(gasnett_atomic_read(&counter, 0) == 40000);
  }
#endif
  /* Tracing is compiled out here: the arguments are not evaluated. */
  GASNETT_TRACE_PRINTF("%d", (int)gasnett_atomic_add(&counter, 1, 0));
  CHECK(GASNETT_TRACE_ENABLED == 0);
  printf("tools_client: %s ok\n", MODEL);
  return 0;
}
