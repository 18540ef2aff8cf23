// gasnett_run_diagnostics: self-checks of the tools in the calling process,
// for clients (GASNet's testinternal) that want to know the tools work on
// this machine before trusting them. Each check compares against an answer
// computed another way; a failure is printed and counted, never fatal.
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "gasnet_tools.h"

namespace gexrt::tools {
namespace {

GASNETT_THREADKEY_DEFINE(diagnostic_key);

struct Run {
  int iters;
  int threads;
  std::atomic<int> failures{0};
};

void Fail(Run& run, const char* section, const char* what) {
  std::fprintf(stderr, "gasnett_run_diagnostics: %s: %s\n", section, what);
  run.failures.fetch_add(1);
}

#define DIAG_CHECK(run, section, cond)      \
  do {                                      \
    if (!(cond)) Fail(run, section, #cond); \
  } while (0)

// Runs body(thread_index) on `threads` threads at once and joins them.
template <typename Body>
void OnThreads(int threads, Body body) {
  struct Arg {
    Body* body;
    int index;
  };
  std::vector<pthread_t> ids(static_cast<size_t>(threads));
  std::vector<Arg> args(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    args[t] = Arg{&body, t};
    pthread_create(
        &ids[t], nullptr,
        [](void* p) -> void* {
          Arg* a = static_cast<Arg*>(p);
          (*a->body)(a->index);
          return nullptr;
        },
        &args[t]);
  }
  for (pthread_t id : ids) pthread_join(id, nullptr);
}

void CheckTimers(Run& run) {
  const char* s = "A timers";
  gasnett_tick_t previous = gasnett_ticks_now();
  for (int i = 0; i < run.iters * 100; ++i) {
    const gasnett_tick_t now = gasnett_ticks_now();
    DIAG_CHECK(run, s, now >= previous);
    previous = now;
  }
  const gasnett_tick_t start = gasnett_ticks_now();
  const uint64_t wall_start = gasnett_gettimeofday_us();
  DIAG_CHECK(run, s, gasnett_nsleep(2'000'000) == 0);
  const uint64_t ticked_ns = gasnett_ticks_to_ns(gasnett_ticks_now() - start);
  DIAG_CHECK(run, s, ticked_ns >= 2'000'000);
  DIAG_CHECK(run, s, gasnett_gettimeofday_us() >= wall_start + 2'000);
  DIAG_CHECK(run, s, gasnett_tick_granularityus() > 0.0);
  DIAG_CHECK(run, s, gasnett_tick_overheadus() > 0.0);
}

void CheckAtomics(Run& run) {
  const char* s = "B atomics";
  static gasnett_atomic_t counter = gasnett_atomic_init(0);
  static gasnett_atomic64_t counter64 = gasnett_atomic64_init(0);
  gasnett_atomic_set(&counter, 0, 0);
  gasnett_atomic64_set(&counter64, 0, 0);
  const int per_thread = run.iters * 100;
  OnThreads(run.threads, [&](int) {
    for (int i = 0; i < per_thread; ++i) {
      gasnett_atomic_increment(&counter, 0);
      gasnett_atomic64_add(&counter64, 3, 0);
      // A CAS loop: each success adds exactly one.
      uint64_t seen;
      do {
        seen = gasnett_atomic64_read(&counter64, 0);
      } while (
          !gasnett_atomic64_compare_and_swap(&counter64, seen, seen + 1, 0));
    }
  });
  const uint64_t expected = uint64_t(run.threads) * uint64_t(per_thread);
  DIAG_CHECK(run, s,
             gasnett_atomic_read(&counter, 0) ==
                 static_cast<gasnett_atomic_val_t>(expected));
  DIAG_CHECK(run, s, gasnett_atomic64_read(&counter64, 0) == 4 * expected);
  DIAG_CHECK(run, s,
             gasnett_atomic_swap(&counter, 7, 0) ==
                 static_cast<gasnett_atomic_val_t>(expected));
  DIAG_CHECK(run, s, gasnett_atomic_subtract(&counter, 7, 0) == 0);
  DIAG_CHECK(run, s, gasnett_atomic_decrement_and_test(&counter, 0) == 0);
}

void CheckMutexes(Run& run) {
  const char* s = "C mutexes and condition variables";
  static gasnett_mutex_t lock = GASNETT_MUTEX_INITIALIZER;
  static gasnett_cond_t cond = GASNETT_COND_INITIALIZER;
  static uint64_t plain = 0;  // only touched under `lock`
  static int arrived = 0;
  plain = 0;
  arrived = 0;
  const int per_thread = run.iters * 10;
  OnThreads(run.threads, [&](int) {
    for (int i = 0; i < per_thread; ++i) {
      gasnett_mutex_lock(&lock);
      ++plain;
      gasnett_mutex_unlock(&lock);
    }
    // Every thread waits here until all have arrived.
    gasnett_mutex_lock(&lock);
    if (++arrived == run.threads) {
      gasnett_cond_broadcast(&cond);
    } else {
      while (arrived < run.threads) gasnett_cond_wait(&cond, &lock);
    }
    gasnett_mutex_unlock(&lock);
  });
  DIAG_CHECK(run, s, plain == uint64_t(run.threads) * uint64_t(per_thread));
  DIAG_CHECK(run, s, arrived == run.threads);
  DIAG_CHECK(run, s, gasnett_mutex_trylock(&lock) == 0);
  DIAG_CHECK(run, s, gasnett_mutex_unlock(&lock) == 0);
}

void CheckThreadKeys(Run& run) {
  const char* s = "D thread keys";
  std::atomic<int> wrong{0};
  OnThreads(run.threads, [&](int index) {
    gasnett_threadkey_init(diagnostic_key);
    if (gasnett_threadkey_get(diagnostic_key) != nullptr) wrong.fetch_add(1);
    int mine = index;
    gasnett_threadkey_set(diagnostic_key, &mine);
    for (int i = 0; i < run.iters; ++i) {
      gasnett_sched_yield();
      if (gasnett_threadkey_get_noinit(diagnostic_key) != &mine) {
        wrong.fetch_add(1);
      }
    }
  });
  DIAG_CHECK(run, s, wrong.load() == 0);
}

void CheckData(Run& run) {
  const char* s = "E data utilities";
  unsigned char block[257];
  unsigned char copy[257];
  for (int round = 0; round < run.iters; ++round) {
    size_t zeros = 0;
    for (size_t i = 0; i < sizeof(block); ++i) {
      block[i] = static_cast<unsigned char>((i * 7 + round) % 5 == 0 ? 0 : i);
      zeros += block[i] == 0;
    }
    for (size_t offset = 0; offset < 9; ++offset) {
      size_t expected = 0;
      for (size_t i = offset; i < sizeof(block); ++i) expected += !block[i];
      DIAG_CHECK(
          run, s,
          gasnett_count0s(block + offset, sizeof(block) - offset) == expected);
    }
    DIAG_CHECK(run, s,
               gasnett_count0s_copy(copy, block, sizeof(block)) == zeros);
    DIAG_CHECK(run, s, std::memcmp(copy, block, sizeof(block)) == 0);
    DIAG_CHECK(run, s,
               gasnett_checksum(copy, sizeof(copy)) ==
                   gasnett_checksum(block, sizeof(block)));
    copy[round % sizeof(copy)] ^= 1;
    DIAG_CHECK(run, s,
               gasnett_checksum(copy, sizeof(copy)) !=
                   gasnett_checksum(block, sizeof(block)));
  }
  DIAG_CHECK(run, s, gasnett_count0s_uint64_t(0) == 8);
  DIAG_CHECK(run, s, gasnett_count0s_uint32_t(0x01000001u) == 2);
}

void CheckFormatting(Run& run) {
  const char* s = "F formatting";
  char text[64];
  for (int shift = 0; shift < 62; ++shift) {
    const int64_t value = int64_t{1} << shift;
    gasnett_format_number(value, text, sizeof(text), 1);
    DIAG_CHECK(run, s, gasnett_parse_int(text, 1) == value);
    gasnett_format_number(value + 1, text, sizeof(text), 0);
    DIAG_CHECK(run, s, gasnett_parse_int(text, 0) == value + 1);
  }
}

}  // namespace
}  // namespace gexrt::tools

extern "C" {

int gasnett_run_diagnostics(int iters, int threadcnt, const char* testsections,
                            void* myteam, void* myseg, uint32_t peer,
                            void* peerseg) {
  (void)myteam;
  (void)myseg;
  (void)peer;
  (void)peerseg;
  gexrt::tools::Run run;
  run.iters = iters > 0 ? iters : 1;
  run.threads = threadcnt > 0 ? threadcnt : 1;
  const std::string_view sections(testsections != nullptr ? testsections : "");
  auto wanted = [&](char letter) {
    return sections.empty() || sections.find(letter) != std::string_view::npos;
  };
  if (wanted('A')) gexrt::tools::CheckTimers(run);
  if (wanted('B')) gexrt::tools::CheckAtomics(run);
  if (wanted('C')) gexrt::tools::CheckMutexes(run);
  if (wanted('D')) gexrt::tools::CheckThreadKeys(run);
  if (wanted('E')) gexrt::tools::CheckData(run);
  if (wanted('F')) gexrt::tools::CheckFormatting(run);
  return run.failures.load();
}

void gasnett_diagnostic_gethandlers(void** htable, int* htable_cnt) {
  // The checks are all local: no AM handlers to register. The table pointer
  // is still valid memory, for registration calls that reject NULL.
  alignas(64) static unsigned char empty_table[64];
  if (htable != nullptr) *htable = empty_table;
  if (htable_cnt != nullptr) *htable_cnt = 0;
}

}  // extern "C"
