// The out-of-line half of gasnet_tools.h: timers, environment queries,
// errors, backtraces and system queries, over gex's base layer. The atomics,
// barriers and mutexes are inline in the header.
#include "gasnet_tools.h"

#include <execinfo.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
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
#include "base/freeze.h"
#include "base/host_id.h"
#include "base/string_view.h"
#include "base/timer.h"

// The client's gasnett_backtrace_user, if it defined one: a weak reference,
// so that a client that does not define it still links (its address is then
// null).
#pragma weak gasnett_backtrace_user

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

int ExecinfoBacktrace(int fd) {
  void* frames[128];
  const int depth = backtrace(frames, 128);
  if (depth <= 0) return 1;
  backtrace_symbols_fd(frames, depth, fd);
  return 0;
}

// The client's gasnett_backtrace_user, or null if it defined none.
const gasnett_backtrace_type_t* UserBacktrace() {
  return &gasnett_backtrace_user;
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

int gasnett_nsleep(uint64_t ns) {
  timespec remaining;
  remaining.tv_sec = static_cast<time_t>(ns / 1'000'000'000u);
  remaining.tv_nsec = static_cast<long>(ns % 1'000'000'000u);
  // A signal handler interrupts nanosleep; sleep out what is left, so that
  // the caller always gets the delay it asked for.
  while (nanosleep(&remaining, &remaining) != 0) {
    if (errno != EINTR) return -1;
  }
  return 0;
}

uint64_t gasnett_gettimeofday_us(void) {
  timeval now;
  gettimeofday(&now, nullptr);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000u +
         static_cast<uint64_t>(now.tv_usec);
}

// ---- versions, configuration, executable ----------------------------------

uint64_t gasnett_release_version(void) {
  return uint64_t{GASNETT_RELEASE_VERSION_MAJOR} * 1'000'000u +
         uint64_t{GASNETT_RELEASE_VERSION_MINOR} * 10'000u +
         uint64_t{GASNETT_RELEASE_VERSION_PATCH};
}

const char* gasnett_release_version_str(void) {
  return GEX_TOOLS_I_RELEASE_STR;
}

const char* gasnett_performance_warning_str(void) {
  // What this library was compiled with: --config=dbg and --config=trace
  // define these for every file, the library included.
  static const char* const warning =
#if defined(GEX_DEBUG) && GEX_DEBUG
      "        debug checks (GEX_DEBUG)\n"
#endif
#if defined(GASNET_TRACE)
      "        tracing (GASNET_TRACE)\n"
#endif
#if defined(GASNET_STATS)
      "        statistics collection (GASNET_STATS)\n"
#endif
      "";
  return warning;
}

const char* gasnett_exe_name(void) {
  // Computed once: the executable does not change under a running process.
  static const std::string* const name = [] {
    char path[PATH_MAX + 1];
    const ssize_t length = readlink("/proc/self/exe", path, PATH_MAX);
    return new std::string(length > 0 ? std::string(path, length) : "");
  }();
  return name->c_str();
}

// ---- signals and resource limits -------------------------------------------

gasnett_sighandlerfn_t gasnett_reghandler(int sigtocatch,
                                          gasnett_sighandlerfn_t fp) {
  struct sigaction action;
  struct sigaction previous;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = fp;
  sigemptyset(&action.sa_mask);
  // Like signal() on glibc: restart interrupted calls, keep the handler.
  action.sa_flags = SA_RESTART;
  if (sigaction(sigtocatch, &action, &previous) != 0) {
    gexrt::FatalErrorF(
        "gasnett_reghandler: cannot install a handler for "
        "signal %d: %s",
        sigtocatch, std::strerror(errno));
  }
  return previous.sa_handler;
}

int gasnett_maximize_rlimit(int res, const char* lim_desc) {
  rlimit limit;
  if (getrlimit(res, &limit) != 0) {
    gexrt::WarningF("gasnett_maximize_rlimit: cannot read %s: %s", lim_desc,
                    std::strerror(errno));
    return 0;
  }
  if (limit.rlim_cur == limit.rlim_max) return 1;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(res, &limit) != 0) {
    gexrt::WarningF("gasnett_maximize_rlimit: cannot raise %s: %s", lim_desc,
                    std::strerror(errno));
    return 0;
  }
  return 1;
}

int gasnett_maximize_rlimits(void) {
  int ok = 1;
  ok &= gasnett_maximize_rlimit(RLIMIT_AS, "RLIMIT_AS");
  ok &= gasnett_maximize_rlimit(RLIMIT_DATA, "RLIMIT_DATA");
  ok &= gasnett_maximize_rlimit(RLIMIT_RSS, "RLIMIT_RSS");
  ok &= gasnett_maximize_rlimit(RLIMIT_STACK, "RLIMIT_STACK");
  ok &= gasnett_maximize_rlimit(RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK");
  ok &= gasnett_maximize_rlimit(RLIMIT_CPU, "RLIMIT_CPU");
  return ok;
}

// ---- data utilities
// ----------------------------------------------------------

uint64_t gasnett_checksum(const void* p, int numbytes) {
  // FNV-1a over the bytes: order-sensitive, no table, same on every host.
  uint64_t hash = 0xcbf29ce484222325u;
  const unsigned char* bytes = static_cast<const unsigned char*>(p);
  for (int i = 0; i < numbytes; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3u;
  }
  return hash;
}

size_t gasnett_count0s(const void* p, size_t numbytes) {
  const unsigned char* bytes = static_cast<const unsigned char*>(p);
  size_t zeros = 0;
  size_t i = 0;
  // Eight bytes at a time: a zero byte of `word` leaves the high bit of its
  // byte in `flagged` set, and no other byte does (the classic
  // haszero trick, made exact by masking the carries out first).
  constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7fu;
  for (; i + 8 <= numbytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    const uint64_t flagged = ~(((word & kLow7) + kLow7) | word | kLow7);
    zeros += static_cast<size_t>(__builtin_popcountll(flagged));
  }
  for (; i < numbytes; ++i) zeros += bytes[i] == 0;
  return zeros;
}

size_t gasnett_count0s_copy(void* dst, const void* src, size_t numbytes) {
  std::memcpy(dst, src, numbytes);
  return gasnett_count0s(dst, numbytes);
}

char* gasnett_format_number(int64_t val, char* buf, size_t bufsz,
                            int is_mem_size) {
  if (buf == nullptr || bufsz == 0) return buf;
  if (!is_mem_size || val <= 0) {
    std::snprintf(buf, bufsz, "%" PRId64, val);
    return buf;
  }
  // The largest unit that divides val exactly, so parsing gives val back.
  static constexpr const char* kUnits[] = {"B", "KB", "MB", "GB", "TB"};
  int unit = 0;
  int64_t scaled = val;
  while (unit < 4 && scaled % 1024 == 0) {
    scaled /= 1024;
    ++unit;
  }
  std::snprintf(buf, bufsz, "%" PRId64 "%s", scaled, kUnits[unit]);
  return buf;
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

void gasnett_close_streams(void) {
  gasnett_flush_streams();
  std::fclose(stdin);
  std::fclose(stdout);
  std::fclose(stderr);
}

void gasnett_freezeForDebuggerNow(volatile int* flag, const char* flagsymname) {
  if (flag == nullptr) {
    gexrt::FatalError("gasnett_freezeForDebuggerNow: flag is NULL");
  }
  gexrt::FreezeForDebuggerNow(flag, flagsymname);
}

void gasnett_freezeForDebuggerErr(void) { gexrt::FreezeForDebuggerIfEnabled(); }

char* gex_tools_i_current_loc(const char* file, int line,
                              const char* function) {
  const std::string loc =
      absl::StrFormat("%s:%d in %s()", file != nullptr ? file : "?", line,
                      function != nullptr ? function : "?");
  char* out = static_cast<char*>(std::malloc(loc.size() + 1));
  if (out == nullptr) gexrt::FatalError("gasnett_current_loc: out of memory");
  std::memcpy(out, loc.c_str(), loc.size() + 1);
  return out;
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
  // The mechanisms in the order GASNET_BACKTRACE_TYPE names them, read at
  // each call (clients set it at run time); by default the client's own
  // first. No allocation: this may run in a failing process.
  const gasnett_backtrace_type_t* user = gexrt::tools::UserBacktrace();
  const char* list = std::getenv("GASNET_BACKTRACE_TYPE");
  if (list == nullptr || *list == '\0') {
    if (user != nullptr && user->fnp != nullptr && user->fnp(fd) == 0) {
      return 0;
    }
    return gexrt::tools::ExecinfoBacktrace(fd);
  }
  const char* p = list;
  while (*p != '\0') {
    const char* end = p;
    while (*end != '\0' && *end != ',') ++end;
    const std::string_view name(p, static_cast<size_t>(end - p));
    if (name == "EXECINFO") {
      if (gexrt::tools::ExecinfoBacktrace(fd) == 0) return 0;
    } else if (user != nullptr && user->fnp != nullptr &&
               user->name != nullptr && name == user->name) {
      if (user->fnp(fd) == 0) return 0;
    }
    p = *end == ',' ? end + 1 : end;
  }
  return 1;
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

void gasnett_envstr_display(const char* key, const char* val, int is_dflt) {
  gexrt::env::Display(key, val != nullptr ? val : "", is_dflt != 0);
}

void gasnett_envint_display(const char* key, int64_t val, int is_dflt,
                            int is_mem_size) {
  const std::string shown =
      is_mem_size != 0 && val >= 0
          ? gexrt::env::ShowBytes(static_cast<uint64_t>(val))
          : std::to_string(val);
  gexrt::env::Display(key, shown, is_dflt != 0);
}

void gasnett_envdbl_display(const char* key, double val, int is_dflt) {
  gexrt::env::Display(key, absl::StrFormat("%g", val), is_dflt != 0);
}

// ---- memory ----------------------------------------------------------------

void* gasnett_mmap(uintptr_t size) {
  void* addr = size == 0 ? MAP_FAILED
                         : mmap(nullptr, size, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr == MAP_FAILED) {
    gexrt::FatalErrorF("gasnett_mmap(%ju): %s", static_cast<uintmax_t>(size),
                       size == 0 ? "the size is 0" : std::strerror(errno));
  }
  return addr;
}

void gasnett_munmap(void* addr, uintptr_t size) {
  if (munmap(addr, size) != 0) {
    gexrt::FatalErrorF("gasnett_munmap(%p, %ju): %s", addr,
                       static_cast<uintmax_t>(size), std::strerror(errno));
  }
}

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
