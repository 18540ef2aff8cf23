/* Checks for the API test clients (C and C++). A failed CHECK prints
 *   rank R: CHECK FAILED file:line: condition: message
 * to stderr and ends this process at once with exit code 1, without calling
 * into GASNet, so a failure is reported even when the runtime itself is what
 * broke; the launcher then ends the rest of the job and reports the code.
 * Say() prints "rank R: ..." lines on stdout, one whole line at a time. */
#ifndef GEX_TESTS_API_CLIENT_CHECK_H_
#define GEX_TESTS_API_CLIENT_CHECK_H_

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* This process's rank, for messages (-1 until the client sets it). */
static int check_rank = -1;

static inline void CheckFailed(const char *file, int line, const char *cond,
                               const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));

static inline void CheckFailed(const char *file, int line, const char *cond,
                               const char *fmt, ...) {
  va_list ap;
  char message[512];
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "rank %d: CHECK FAILED %s:%d: %s: %s\n", check_rank, file,
          line, cond, message);
  fflush(stderr);
  _exit(1);
}

#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) CheckFailed(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)

static inline void Say(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static inline void Say(const char *fmt, ...) {
  va_list ap;
  char line[512];
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  printf("rank %d: %s\n", check_rank, line);
  fflush(stdout);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GEX_TESTS_API_CLIENT_CHECK_H_ */
