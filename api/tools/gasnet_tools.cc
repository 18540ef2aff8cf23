// The out-of-line half of gasnet_tools.h: timers, environment queries,
// errors, backtraces and system queries, over gex's base layer. The atomics,
// barriers and mutexes are inline in the header.
#include "gasnet_tools.h"

#include <execinfo.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "base/cpu.h"
#include "base/env/parse.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "base/host_id.h"
#include "base/string_view.h"
#include "base/timer.h"

namespace gexrt::tools {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// printf-style formatting into a string of whatever length it needs.
std::string VFormat(const char* format, va_list args) {
  va_list measure;
  va_copy(measure, args);
  const int length = std::vsnprintf(nullptr, 0, format, measure);
  va_end(measure);
  if (length <= 0) return std::string();
  std::string text(static_cast<size_t>(length) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, args);
  text.resize(static_cast<size_t>(length));
  return text;
}

// The unit of parse.h whose size is `multiplier` bytes, if there is one.
std::optional<env::SizeUnit> UnitOf(uint64_t multiplier) {
  for (env::SizeUnit unit :
       {env::SizeUnit::kBytes, env::SizeUnit::kKiB, env::SizeUnit::kMiB,
        env::SizeUnit::kGiB, env::SizeUnit::kTiB}) {
    if (static_cast<uint64_t>(unit) == multiplier) return unit;
  }
  return std::nullopt;
}

absl::StatusOr<int64_t> BytesAsInt64(uint64_t bytes) {
  if (bytes > static_cast<uint64_t>(kInt64Max)) {
    return absl::InvalidArgumentError("more than 2^63-1 bytes");
  }
  return static_cast<int64_t>(bytes);
}

// A memory size whose unit, when no suffix is given, is `multiplier` bytes
// (not a power of 1024, which ParseSize handles itself).
absl::StatusOr<int64_t> ParseSizeInUnitsOf(std::string_view text,
                                           uint64_t multiplier) {
  // A bare number: scale it. An exact integer first, then a decimal.
  absl::StatusOr<int64_t> count = env::ParseInt(text, 0, kInt64Max);
  if (count.ok()) {
    uint64_t bytes;
    if (__builtin_mul_overflow(static_cast<uint64_t>(*count), multiplier,
                               &bytes)) {
      return absl::InvalidArgumentError("more than 2^63-1 bytes");
    }
    return BytesAsInt64(bytes);
  }
  absl::StatusOr<double> number = env::ParseDecimal(text);
  if (number.ok()) {
    if (*number < 0) {
      return absl::InvalidArgumentError("a memory size cannot be negative");
    }
    const double bytes = *number * static_cast<double>(multiplier);
    if (!(bytes < 0x1p63)) {
      return absl::InvalidArgumentError("more than 2^63-1 bytes");
    }
    return static_cast<int64_t>(bytes);
  }
  // A number with a suffix: the suffix names the unit.
  absl::StatusOr<uint64_t> bytes = env::ParseSize(text, env::SizeUnit::kBytes);
  if (!bytes.ok()) return bytes.status();
  return BytesAsInt64(*bytes);
}

// gasnett_parse_int's syntax: a plain integer when `multiplier` is 0, else a
// memory size whose default unit is `multiplier` bytes.
absl::StatusOr<int64_t> ParseIntOrSize(std::string_view text,
                                       uint64_t multiplier) {
  if (multiplier == 0) {
    return env::ParseInt(text, std::numeric_limits<int64_t>::min(), kInt64Max);
  }
  if (std::optional<env::SizeUnit> unit = UnitOf(multiplier)) {
    absl::StatusOr<uint64_t> bytes = env::ParseSize(text, *unit);
    if (!bytes.ok()) return bytes.status();
    return BytesAsInt64(*bytes);
  }
  return ParseSizeInUnitsOf(text, multiplier);
}

// The fatal error for a malformed variable, worded as base/env words it.
[[noreturn]] void InvalidVariable(std::string_view name, std::string_view raw,
                                  const absl::Status& why) {
  FatalErrorF("environment variable %s has the invalid value \"%s\": %s", name,
              raw, ToStd(why.message()));
}

bool IsUnsetOrEmpty(const std::optional<std::string>& raw) {
  return !raw.has_value() || StripWhitespace(*raw).empty();
}

int PrintBacktraceIfEnabled(int fd) {
  return BacktraceEnabled() ? gasnett_print_backtrace(fd) : 1;
}

}  // namespace
}  // namespace gexrt::tools

extern "C" {

// ---- timers ----------------------------------------------------------------

gasnett_tick_t gasnett_ticks_now(void) { return gexrt::TicksNow(); }

uint64_t gasnett_ticks_to_ns(gasnett_tick_t ticks) {
  return gexrt::TicksToNs(ticks);
}

double gasnett_tick_granularityus(void) {
  return gexrt::TickGranularityNs() / 1000.0;
}

double gasnett_tick_overheadus(void) {
  return gexrt::TickOverheadNs() / 1000.0;
}

void gasnett_nsleep(uint64_t ns) {
  timespec remaining;
  remaining.tv_sec = static_cast<time_t>(ns / 1'000'000'000u);
  remaining.tv_nsec = static_cast<long>(ns % 1'000'000'000u);
  // A signal handler interrupts nanosleep; sleep out what is left.
  while (nanosleep(&remaining, &remaining) != 0 && errno == EINTR) {
  }
}

// ---- errors, backtraces, process control ----------------------------------

void gasnett_fatalerror(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::string message = gexrt::tools::VFormat(format, args);
  va_end(args);
  // FatalError ends the line itself; GASNet clients often end theirs too.
  while (!message.empty() && message.back() == '\n') message.pop_back();
  gexrt::FatalError(message);
}

void gasnett_killmyprocess(int exitcode) { _exit(exitcode); }

void gasnett_flush_streams(void) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::fflush(nullptr);
}

void gasnett_backtrace_init(const char* exename) {
  // glibc's first backtrace() loads the unwinder from libgcc_s with dlopen,
  // which may allocate and take locks: unsafe in a signal handler or after
  // memory corruption. Take that first one now, while the process is sane.
  (void)exename;
  void* frame[1];
  backtrace(frame, 1);
}

int gasnett_print_backtrace(int fd) {
  void* frames[128];
  const int depth = backtrace(frames, 128);
  if (depth <= 0) return 1;
  backtrace_symbols_fd(frames, depth, fd);
  return 0;
}

int (*gasnett_print_backtrace_ifenabled)(int fd) =
    &gexrt::tools::PrintBacktraceIfEnabled;

// ---- system queries and control --------------------------------------------

const char* gasnett_gethostname(void) {
  // Computed once and never freed: the pointer stays valid through exit.
  static const std::string* const name = new std::string(gexrt::Hostname());
  return name->c_str();
}

int gasnett_cpu_count(void) { return gexrt::OnlineCpuCount(); }

uint64_t gasnett_getPhysMemSz(int failureIsFatal) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  }
  if (failureIsFatal) {
    gexrt::FatalError(
        "gasnett_getPhysMemSz: cannot determine the size of physical memory");
  }
  return 0;
}

void gasnett_set_affinity(int rank) {
  const long configured = sysconf(_SC_NPROCESSORS_CONF);
  const int cpus = configured > 0 ? static_cast<int>(configured) : 1;
  int cpu = rank % cpus;
  if (cpu < 0) cpu += cpus;
  // A dynamically sized set: cpu_set_t holds only 1024 CPUs.
  cpu_set_t* set = CPU_ALLOC(cpu + 1);
  if (set == nullptr) {
    gexrt::WarningF("gasnett_set_affinity(%d): out of memory", rank);
    return;
  }
  const size_t bytes = CPU_ALLOC_SIZE(cpu + 1);
  CPU_ZERO_S(bytes, set);
  CPU_SET_S(cpu, bytes, set);
  // pid 0: the calling thread only.
  if (sched_setaffinity(0, bytes, set) != 0) {
    gexrt::WarningF("gasnett_set_affinity(%d): cannot bind to CPU %d: %s", rank,
                    cpu, std::strerror(errno));
  }
  CPU_FREE(set);
}

int gasnett_sched_yield(void) { return sched_yield(); }

// ---- environment -----------------------------------------------------------

char* gasnett_getenv(const char* keyname) { return std::getenv(keyname); }

char* gasnett_getenv_withdefault(const char* keyname, const char* defaultval) {
  // GetString reports the setting; the pointer returned is the
  // environment's own string (or the caller's default), as GASNet's is.
  gexrt::env::GetString(keyname, defaultval != nullptr ? defaultval : "");
  char* raw = std::getenv(keyname);
  if (raw != nullptr && !gexrt::StripWhitespace(raw).empty()) return raw;
  return const_cast<char*>(defaultval);
}

int gasnett_getenv_yesno_withdefault(const char* keyname, int defaultval) {
  return gexrt::env::GetBool(keyname, defaultval != 0) ? 1 : 0;
}

int64_t gasnett_getenv_int_withdefault(const char* keyname, int64_t defaultval,
                                       uint64_t mem_size_multiplier) {
  if (mem_size_multiplier == 0) return gexrt::env::GetInt(keyname, defaultval);
  const std::optional<std::string> raw = gexrt::env::GetRaw(keyname);
  const std::optional<gexrt::env::SizeUnit> unit =
      gexrt::tools::UnitOf(mem_size_multiplier);
  if (unit.has_value() && defaultval >= 0) {
    // The base layer's getter: it reports, and fails on malformed text.
    const uint64_t bytes =
        gexrt::env::GetSize(keyname, static_cast<uint64_t>(defaultval), *unit);
    absl::StatusOr<int64_t> value = gexrt::tools::BytesAsInt64(bytes);
    if (!value.ok()) {
      gexrt::tools::InvalidVariable(keyname, raw.value_or(""), value.status());
    }
    return *value;
  }
  if (gexrt::tools::IsUnsetOrEmpty(raw)) return defaultval;
  absl::StatusOr<int64_t> value =
      gexrt::tools::ParseIntOrSize(*raw, mem_size_multiplier);
  if (!value.ok()) gexrt::tools::InvalidVariable(keyname, *raw, value.status());
  return *value;
}

double gasnett_getenv_dbl_withdefault(const char* keyname, double defaultval) {
  return gexrt::env::GetDecimal(keyname, defaultval);
}

int64_t gasnett_parse_int(const char* str, uint64_t mem_size_multiplier) {
  absl::StatusOr<int64_t> value =
      gexrt::tools::ParseIntOrSize(str, mem_size_multiplier);
  if (!value.ok()) {
    gexrt::FatalErrorF("gasnett_parse_int: invalid value \"%s\": %s", str,
                       gexrt::ToStd(value.status().message()));
  }
  return *value;
}

int gasnett_verboseenv(void) { return gexrt::env::VerboseEnv() ? 1 : 0; }

void gasnett_setenv(const char* key, const char* value) {
  if (setenv(key, value, /*overwrite=*/1) != 0) {
    gexrt::FatalErrorF("gasnett_setenv(\"%s\", \"%s\"): %s", key, value,
                       std::strerror(errno));
  }
}

void gasnett_unsetenv(const char* key) {
  if (unsetenv(key) != 0) {
    gexrt::FatalErrorF("gasnett_unsetenv(\"%s\"): %s", key,
                       std::strerror(errno));
  }
}

}  // extern "C"
