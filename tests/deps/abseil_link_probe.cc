// Links one abseil component on its own: built once per public target of
// @com_google_absl with ABSL_PROBE_<target> defined and only that target in
// `deps`. Each branch calls something compiled into the component's shared
// libraries (not just inline header code), so a missing library on the link
// line fails the build. Exits 0 when the call gave the expected answer.

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#if defined(ABSL_PROBE_base)
#include "absl/base/call_once.h"
#include "absl/base/internal/sysinfo.h"
#elif defined(ABSL_PROBE_core_headers)
#include "absl/base/macros.h"
#elif defined(ABSL_PROBE_log_severity)
#include <sstream>

#include "absl/base/log_severity.h"
#elif defined(ABSL_PROBE_numeric) || defined(ABSL_PROBE_int128)
#include <sstream>

#include "absl/numeric/int128.h"
#elif defined(ABSL_PROBE_span)
#include "absl/types/span.h"
#elif defined(ABSL_PROBE_optional)
#include "absl/types/optional.h"
#elif defined(ABSL_PROBE_variant)
#include "absl/types/variant.h"
#elif defined(ABSL_PROBE_strings)
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#elif defined(ABSL_PROBE_str_format)
#include "absl/strings/str_format.h"
#elif defined(ABSL_PROBE_cord)
#include "absl/strings/cord.h"
#elif defined(ABSL_PROBE_time)
#include "absl/time/time.h"
#elif defined(ABSL_PROBE_synchronization)
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#elif defined(ABSL_PROBE_status)
#include "absl/status/status.h"
#elif defined(ABSL_PROBE_statusor)
#include "absl/status/statusor.h"
#elif defined(ABSL_PROBE_inlined_vector)
#include "absl/container/inlined_vector.h"
#elif defined(ABSL_PROBE_hash)
#include "absl/hash/hash.h"
#elif defined(ABSL_PROBE_flat_hash_map)
#include "absl/container/flat_hash_map.h"
#elif defined(ABSL_PROBE_flat_hash_set)
#include "absl/container/flat_hash_set.h"
#elif defined(ABSL_PROBE_random)
#include "absl/random/random.h"
#elif defined(ABSL_PROBE_cleanup)
#include "absl/cleanup/cleanup.h"
#elif defined(ABSL_PROBE_stacktrace)
#include "absl/debugging/stacktrace.h"
#elif defined(ABSL_PROBE_symbolize)
#include "absl/debugging/symbolize.h"
#elif defined(ABSL_PROBE_debugging) || defined(ABSL_PROBE_examine_stack)
#include "absl/debugging/internal/examine_stack.h"
#include "absl/debugging/leak_check.h"
#include "absl/debugging/symbolize.h"
#elif defined(ABSL_PROBE_failure_signal_handler)
#include "absl/debugging/failure_signal_handler.h"
#else
#error "define ABSL_PROBE_<target>"
#endif

namespace {

// Returns true when the component answered as expected.
bool Probe(const char* argv0) {
#if defined(ABSL_PROBE_base)
  static absl::once_flag once;
  int calls = 0;
  absl::call_once(once, [&] { ++calls; });
  absl::call_once(once, [&] { ++calls; });
  return calls == 1 && absl::base_internal::NumCPUs() >= 1;
#elif defined(ABSL_PROBE_core_headers)
  int a[3] = {};
  return ABSL_ARRAYSIZE(a) == 3 && ABSL_PREDICT_TRUE(a[0] == 0);
#elif defined(ABSL_PROBE_log_severity)
  std::ostringstream os;
  os << absl::LogSeverity::kWarning;  // operator<< lives in the library.
  return !os.str().empty();
#elif defined(ABSL_PROBE_numeric) || defined(ABSL_PROBE_int128)
  absl::uint128 big = absl::MakeUint128(1, 0);  // 2^64
  std::ostringstream os;
  os << big;  // formatting lives in the library.
  return os.str() == "18446744073709551616";
#elif defined(ABSL_PROBE_span)
  int a[4] = {1, 2, 3, 4};
  absl::Span<int> s(a);
  return s.subspan(1, 2).size() == 2 && s.at(3) == 4;
#elif defined(ABSL_PROBE_optional)
  absl::optional<int> o;
  try {
    (void)o.value();  // throws from libabsl_bad_optional_access.
  } catch (const absl::bad_optional_access&) {
    return true;
  }
  return false;
#elif defined(ABSL_PROBE_variant)
  absl::variant<int, std::string> v = 1;
  try {
    (void)absl::get<std::string>(v);
  } catch (const absl::bad_variant_access&) {
    return true;
  }
  return false;
#elif defined(ABSL_PROBE_strings)
  int n = 0;
  return absl::SimpleAtoi("42", &n) && n == 42 &&
         absl::StrCat("a", 1, "b") == "a1b";
#elif defined(ABSL_PROBE_str_format)
  return absl::StrFormat("%05d|%s", 42, "x") == "00042|x";
#elif defined(ABSL_PROBE_cord)
  absl::Cord c("hello ");
  c.Append(std::string(100, 'x'));
  return c.size() == 106 && c.StartsWith("hello");
#elif defined(ABSL_PROBE_time)
  absl::Time t = absl::FromUnixSeconds(86400);
  return absl::FormatTime("%Y-%m-%d", t, absl::UTCTimeZone()) == "1970-01-02";
#elif defined(ABSL_PROBE_synchronization)
  absl::Mutex mu;
  int value = 0;
  {
    absl::MutexLock lock(&mu);
    value = 1;
  }
  absl::Notification done;
  done.Notify();
  return value == 1 && done.HasBeenNotified();
#elif defined(ABSL_PROBE_status)
  absl::Status s = absl::NotFoundError("gone");
  return absl::IsNotFound(s) && s.ToString() == "NOT_FOUND: gone";
#elif defined(ABSL_PROBE_statusor)
  absl::StatusOr<int> ok = 7;
  absl::StatusOr<int> bad = absl::InternalError("x");
  return ok.ok() && *ok == 7 && !bad.ok() &&
         bad.status().code() == absl::StatusCode::kInternal;
#elif defined(ABSL_PROBE_inlined_vector)
  absl::InlinedVector<int, 2> v = {1, 2};
  v.push_back(3);  // spills to the heap.
  try {
    (void)v.at(5);  // throws from libabsl_throw_delegate.
  } catch (const std::out_of_range&) {
    return v.size() == 3;
  }
  return false;
#elif defined(ABSL_PROBE_hash)
  return absl::Hash<std::string>{}("abc") == absl::Hash<std::string>{}("abc");
#elif defined(ABSL_PROBE_flat_hash_map)
  absl::flat_hash_map<int, std::string> m;
  for (int i = 0; i < 100; ++i) m[i] = std::to_string(i);
  return m.size() == 100 && m.at(42) == "42";
#elif defined(ABSL_PROBE_flat_hash_set)
  absl::flat_hash_set<std::string> s = {"a", "b", "a"};
  return s.size() == 2 && s.contains("b");
#elif defined(ABSL_PROBE_random)
  absl::BitGen gen;
  int x = absl::Uniform(gen, 10, 20);
  return x >= 10 && x < 20;
#elif defined(ABSL_PROBE_cleanup)
  int ran = 0;
  {
    absl::Cleanup c = [&] { ran = 1; };
  }
  return ran == 1;
#elif defined(ABSL_PROBE_stacktrace)
  void* frames[8];
  return absl::GetStackTrace(frames, 8, 0) > 0;
#elif defined(ABSL_PROBE_symbolize)
  absl::InitializeSymbolizer(argv0);
  char name[256];
  return absl::Symbolize(reinterpret_cast<void*>(&Probe), name, sizeof(name)) &&
         std::strstr(name, "Probe") != nullptr;
#elif defined(ABSL_PROBE_debugging) || defined(ABSL_PROBE_examine_stack)
  // Format a two-frame "stack" of our own: one line per frame. (A live
  // trace is no good here: libabsl_stacktrace walks frame pointers and
  // stops at the first frame built without one, so its depth varies.)
  absl::InitializeSymbolizer(argv0);
  void* stack[2] = {reinterpret_cast<void*>(&Probe),
                    reinterpret_cast<void*>(&Probe)};
  int frame_sizes[2] = {0, 0};
  std::string trace;
  absl::debugging_internal::DumpPCAndFrameSizesAndStackTrace(
      nullptr, stack, frame_sizes, 2, 0, true,
      [](const char* s, void* arg) {
        static_cast<std::string*>(arg)->append(s);
      },
      &trace);
  (void)absl::LeakCheckerIsActive();
  return std::count(trace.begin(), trace.end(), '@') == 2;
#elif defined(ABSL_PROBE_failure_signal_handler)
  absl::FailureSignalHandlerOptions options;
  absl::InstallFailureSignalHandler(options);
  return true;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  (void)argc;
  if (!Probe(argv[0])) {
    std::fprintf(stderr, "abseil probe gave an unexpected answer\n");
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
