// Tracing and statistics behind gasnet_tools.h's GASNETT_TRACE_* and
// GASNETT_STATS_* macros. The library half is always built; a client file
// reaches it only when compiled with GASNET_TRACE / GASNET_STATS defined.
//
// Settings, read once at the first trace or statistics call:
//   GASNET_TRACEFILE / GASNET_STATSFILE  the output file ("stdout",
//       "stderr", or a path in which every '%' becomes this process's rank);
//       unset or empty: no output
//   GASNET_TRACEMASK / GASNET_STATSMASK  the categories to record (letters
//       of kMaskLetters; a leading '^' inverts); unset or empty: all
//   GASNET_TRACENODES / GASNET_STATSNODES  the ranks that write ("0,2-4",
//       "*"); unset: all
//   GASNET_TRACEFLUSH  flush after every line (default no)
//   GASNET_TRACELOCAL  record loopback operations (default yes)
// A bad value is a fatal error naming the variable.
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "base/env/parse.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "base/host_id.h"
#include "base/job_rank.h"
#include "base/pre_exit.h"
#include "base/string_view.h"
#include "base/timer.h"
#include "gasnet_tools.h"

namespace gexrt::tools {
namespace {

// GASNet's categories: Gets, Puts, Remote atomics, Synchronisation,
// collectives (W), Barriers, Locks, AMs, AMPoll (X), Info, Objects,
// Conduit, Data, liNe numbers, High-level (client) messages, Unsuppressable.
constexpr std::string_view kMaskLetters = "GPRSWBLAXIOCDNHU";

// One output: the trace or the statistics.
struct Channel {
  const char* file_var;
  const char* mask_var;
  const char* nodes_var;
  const char* setmask_name;  // the macro, for errors in its argument
  std::atomic<FILE*> file{nullptr};
  bool owns_file = false;  // not stdout/stderr: closed at exit
  std::atomic<bool> enabled[256] = {};
  // The letters enabled, in kMaskLetters order; what GETMASK returns. The
  // buffer stays put, so a returned pointer stays valid.
  char mask[kMaskLetters.size() + 1] = {};
};

struct State {
  std::mutex mu;  // serialises output lines and mask changes
  Channel trace{"GASNET_TRACEFILE", "GASNET_TRACEMASK", "GASNET_TRACENODES",
                "GASNETT_TRACE_SETMASK"};
  Channel stats{"GASNET_STATSFILE", "GASNET_STATSMASK", "GASNET_STATSNODES",
                "GASNETT_STATS_SETMASK"};
  int rank = 0;
  bool flush_every_line = false;
  std::atomic<bool> tracelocal{true};
  uint64_t start_ticks = 0;
  // Statistics of client events (category H), since start or the last
  // GASNETT_STATS_DUMP(1).
  std::atomic<uint64_t> trace_messages{0};
  std::atomic<uint64_t> stats_messages{0};
  std::atomic<gasnett_stats_callback_t> callback{nullptr};
};

State& GetState() {
  // Never destroyed: trace calls may come from other exit-time code.
  static State* const state = new State;
  return *state;
}

// Per-thread source position (GASNETT_TRACE_SETSOURCELINE).
thread_local const char* t_source_file = nullptr;
thread_local unsigned int t_source_line = 0;
thread_local int t_source_frozen = 0;

// The rank named in file names. The job layer records it when the process
// joins a job; a trace call made before that still knows it from the
// launcher's environment; a process outside any job is rank 0.
int RankForFiles() {
  if (JobRank() != kUnknownRank) return JobRank();
  for (const char* var : {"GEX_BOOTSTRAP_RANK", "PMIX_RANK"}) {
    int rank = 0;
    const char* value = std::getenv(var);
    if (value != nullptr && absl::SimpleAtoi(value, &rank) && rank >= 0) {
      return rank;
    }
  }
  return 0;
}

// The letters `text` enables, or the first letter that names no category.
struct ParsedMask {
  bool enabled[256] = {};
  char bad = '\0';
};
ParsedMask ParseMask(std::string_view text) {
  ParsedMask parsed;
  bool invert = false;
  if (!text.empty() && text.front() == '^') {
    invert = true;
    text.remove_prefix(1);
  }
  for (char c : text) {
    if (kMaskLetters.find(c) == std::string_view::npos) {
      parsed.bad = c;
      return parsed;
    }
    parsed.enabled[static_cast<unsigned char>(c)] = true;
  }
  if (invert) {
    for (char c : kMaskLetters) {
      bool& e = parsed.enabled[static_cast<unsigned char>(c)];
      e = !e;
    }
  }
  return parsed;
}

std::string BadLetterMessage(std::string_view text, char bad) {
  return absl::StrFormat(
      "'%c' in \"%s\" is not a category; expected letters from %s, "
      "optionally after a leading ^ that inverts the set",
      bad, text, kMaskLetters);
}

// Sets a channel's mask (caller holds mu or is initialising).
void ApplyMask(Channel& channel, const ParsedMask& parsed) {
  size_t n = 0;
  for (char c : kMaskLetters) {
    const bool on = parsed.enabled[static_cast<unsigned char>(c)];
    channel.enabled[static_cast<unsigned char>(c)].store(
        on, std::memory_order_relaxed);
    if (on) channel.mask[n++] = c;
  }
  channel.mask[n] = '\0';
}

// `pattern` with every '%' replaced by the rank.
std::string ExpandFileName(std::string_view pattern, int rank) {
  std::string name;
  for (char c : pattern) {
    if (c == '%') {
      name += std::to_string(rank);
    } else {
      name += c;
    }
  }
  return name;
}

void OpenChannel(Channel& channel, int rank) {
  const std::optional<std::string> raw = env::GetRaw(channel.file_var);
  const std::string pattern(StripWhitespace(raw.value_or("")));
  // The mask is checked even when there is no file: a typo should not wait
  // for the day the file is set to show up.
  const std::optional<std::string> mask_raw = env::GetRaw(channel.mask_var);
  const std::string mask_text(StripWhitespace(mask_raw.value_or("")));
  ParsedMask parsed =
      mask_text.empty() ? ParseMask(kMaskLetters) : ParseMask(mask_text);
  if (parsed.bad != '\0') {
    FatalErrorF("environment variable %s has the invalid value \"%s\": %s",
                channel.mask_var, mask_text,
                BadLetterMessage(mask_text, parsed.bad));
  }
  const env::NodeList nodes = env::GetNodeList(channel.nodes_var);
  if (pattern.empty() || !nodes.Contains(rank)) {
    ApplyMask(channel, ParsedMask{});
    return;
  }
  FILE* file = nullptr;
  if (pattern == "stdout") {
    file = stdout;
  } else if (pattern == "stderr") {
    file = stderr;
  } else {
    const std::string name = ExpandFileName(pattern, rank);
    file = std::fopen(name.c_str(), "w");
    if (file == nullptr) {
      FatalErrorF(
          "environment variable %s has the value \"%s\": cannot open \"%s\" "
          "for writing: %s",
          channel.file_var, pattern, name, std::strerror(errno));
    }
    channel.owns_file = true;
  }
  ApplyMask(channel, parsed);
  channel.file.store(file, std::memory_order_release);
}

double ElapsedSeconds(const State& state) {
  return static_cast<double>(TicksToNs(TicksNow() - state.start_ticks)) / 1e9;
}

// Writes one line "<rank> <seconds>s> (<category>) <text>" (caller holds
// mu).
void WriteLine(State& state, FILE* file, char category, std::string_view text) {
  std::fprintf(file, "%d %.6fs> (%c) %.*s\n", state.rank, ElapsedSeconds(state),
               category, static_cast<int>(text.size()), text.data());
  if (state.flush_every_line) std::fflush(file);
}

std::string VFormatText(const char* format, va_list args) {
  va_list measure;
  va_copy(measure, args);
  const int length = std::vsnprintf(nullptr, 0, format, measure);
  va_end(measure);
  if (length <= 0) return std::string();
  std::string text(static_cast<size_t>(length) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, args);
  text.resize(static_cast<size_t>(length));
  // A client's own trailing newline would leave an empty line.
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

void WriteStatsSummary(State& state, FILE* file, const char* why);

void CloseAtExit() {
  State& state = GetState();
  if (state.stats.file.load(std::memory_order_acquire) != nullptr) {
    gex_tools_i_stats_dump(0);
  }
  std::lock_guard<std::mutex> lock(state.mu);
  for (Channel* channel : {&state.trace, &state.stats}) {
    FILE* file = channel->file.exchange(nullptr, std::memory_order_acq_rel);
    if (file == nullptr) continue;
    if (channel == &state.trace) WriteLine(state, file, 'I', "end of trace");
    if (channel->owns_file) {
      std::fclose(file);
    } else {
      std::fflush(file);
    }
  }
}

void Initialise() {
  State& state = GetState();
  state.start_ticks = TicksNow();
  state.rank = RankForFiles();
  state.flush_every_line = env::GetBool("GASNET_TRACEFLUSH", false);
  state.tracelocal.store(env::GetBool("GASNET_TRACELOCAL", true));
  OpenChannel(state.trace, state.rank);
  OpenChannel(state.stats, state.rank);
  for (Channel* channel : {&state.trace, &state.stats}) {
    FILE* file = channel->file.load(std::memory_order_relaxed);
    if (file == nullptr) continue;
    const bool is_trace = channel == &state.trace;
    WriteLine(state, file, 'I',
              absl::StrFormat("%s of rank %d (pid %d on %s): %s",
                              is_trace ? "trace" : "statistics", state.rank,
                              static_cast<int>(getpid()), Hostname(),
                              gasnett_exe_name()));
    WriteLine(state, file, 'I',
              absl::StrFormat("%s: %s", channel->mask_var, channel->mask));
    // The release, not GASNETT_CONFIG_STRING: this file's threading model
    // is the library's, not the client's.
    WriteLine(state, file, 'I',
              absl::StrFormat("GASNet tools release %s (gex)",
                              gasnett_release_version_str()));
  }
  if (state.trace.file.load() != nullptr ||
      state.stats.file.load() != nullptr) {
    std::atexit(&CloseAtExit);
    // gasnet_exit and the other runtime exits end with _exit, past atexit.
    AddPreExitHook(&CloseAtExit);
  }
}

State& Ready() {
  static std::once_flag once;
  std::call_once(once, &Initialise);
  return GetState();
}

bool Enabled(const Channel& channel, char category) {
  return channel.file.load(std::memory_order_acquire) != nullptr &&
         channel.enabled[static_cast<unsigned char>(category)].load(
             std::memory_order_relaxed);
}

void SetMask(State& state, Channel& channel, const char* mask) {
  const std::string_view text(mask != nullptr ? mask : "");
  ParsedMask parsed = ParseMask(text);
  if (parsed.bad != '\0') {
    FatalErrorF("%s(\"%s\"): %s", channel.setmask_name, text,
                BadLetterMessage(text, parsed.bad));
  }
  std::lock_guard<std::mutex> lock(state.mu);
  FILE* file = channel.file.load(std::memory_order_relaxed);
  // Without a file nothing is recorded, so the mask stays empty.
  if (file == nullptr) return;
  ApplyMask(channel, parsed);
  WriteLine(state, file, 'I',
            absl::StrFormat("%s: mask now \"%s\"", channel.setmask_name,
                            channel.mask));
}

// The printf-like function a statistics callback writes with.
void CallbackPrintf(const char* format, ...) {
  State& state = GetState();
  va_list args;
  va_start(args, format);
  const std::string text = VFormatText(format, args);
  va_end(args);
  std::lock_guard<std::mutex> lock(state.mu);
  FILE* file = state.stats.file.load(std::memory_order_relaxed);
  if (file != nullptr) WriteLine(state, file, 'H', text);
}

void WriteStatsSummary(State& state, FILE* file, const char* why) {
  WriteLine(
      state, file, 'S',
      absl::StrFormat("--- statistics of rank %d (%s) ---", state.rank, why));
  WriteLine(state, file, 'S',
            absl::StrFormat("GASNET_STATSMASK: %s", state.stats.mask));
  if (state.stats.enabled['H'].load(std::memory_order_relaxed)) {
    WriteLine(state, file, 'S',
              absl::StrFormat("client trace messages (H): %u",
                              state.trace_messages.load()));
    WriteLine(state, file, 'S',
              absl::StrFormat("client statistics messages (H): %u",
                              state.stats_messages.load()));
  }
}

}  // namespace
}  // namespace gexrt::tools

using gexrt::tools::Enabled;
using gexrt::tools::Ready;
using gexrt::tools::State;

extern "C" {

int gex_tools_i_trace_enabled(char category) {
  return Enabled(Ready().trace, category) ? 1 : 0;
}

void gex_tools_i_trace_printf(int force, const char* format, ...) {
  State& state = Ready();
  if (Enabled(state.stats, 'H')) state.trace_messages.fetch_add(1);
  if (!(force ? state.trace.file.load() != nullptr
              : Enabled(state.trace, 'H'))) {
    return;
  }
  va_list args;
  va_start(args, format);
  std::string text = gexrt::tools::VFormatText(format, args);
  va_end(args);
  if (gexrt::tools::t_source_file != nullptr && Enabled(state.trace, 'N')) {
    text = absl::StrFormat("[%s:%u] %s", gexrt::tools::t_source_file,
                           gexrt::tools::t_source_line, text);
  }
  std::lock_guard<std::mutex> lock(state.mu);
  FILE* file = state.trace.file.load(std::memory_order_relaxed);
  if (file != nullptr) gexrt::tools::WriteLine(state, file, 'H', text);
}

const char* gex_tools_i_trace_getmask(void) { return Ready().trace.mask; }

void gex_tools_i_trace_setmask(const char* mask) {
  State& state = Ready();
  gexrt::tools::SetMask(state, state.trace, mask);
}

int gex_tools_i_trace_get_tracelocal(void) {
  return Ready().tracelocal.load() ? 1 : 0;
}

void gex_tools_i_trace_set_tracelocal(int enable) {
  State& state = Ready();
  state.tracelocal.store(enable != 0);
  std::lock_guard<std::mutex> lock(state.mu);
  FILE* file = state.trace.file.load(std::memory_order_relaxed);
  if (file != nullptr && Enabled(state.trace, 'I')) {
    gexrt::tools::WriteLine(
        state, file, 'I',
        enable ? "GASNET_TRACELOCAL now 1: loopback operations are traced"
               : "GASNET_TRACELOCAL now 0: loopback operations are not "
                 "traced");
  }
}

void gex_tools_i_trace_setsourceline(const char* file, unsigned int line) {
  if (gexrt::tools::t_source_frozen > 0) return;
  gexrt::tools::t_source_file = file;
  gexrt::tools::t_source_line = line;
}

void gex_tools_i_trace_getsourceline(const char** pfile, unsigned int* pline) {
  if (pfile != nullptr) *pfile = gexrt::tools::t_source_file;
  if (pline != nullptr) *pline = gexrt::tools::t_source_line;
}

void gex_tools_i_trace_freezesourceline(void) {
  ++gexrt::tools::t_source_frozen;
}

void gex_tools_i_trace_unfreezesourceline(void) {
  if (gexrt::tools::t_source_frozen > 0) --gexrt::tools::t_source_frozen;
}

int gex_tools_i_stats_enabled(char category) {
  return Enabled(Ready().stats, category) ? 1 : 0;
}

void gex_tools_i_stats_printf(int force, const char* format, ...) {
  State& state = Ready();
  const bool on =
      force ? state.stats.file.load() != nullptr : Enabled(state.stats, 'H');
  if (!on) return;
  state.stats_messages.fetch_add(1);
  va_list args;
  va_start(args, format);
  const std::string text = gexrt::tools::VFormatText(format, args);
  va_end(args);
  std::lock_guard<std::mutex> lock(state.mu);
  FILE* file = state.stats.file.load(std::memory_order_relaxed);
  if (file != nullptr) gexrt::tools::WriteLine(state, file, 'H', text);
}

const char* gex_tools_i_stats_getmask(void) { return Ready().stats.mask; }

void gex_tools_i_stats_setmask(const char* mask) {
  State& state = Ready();
  gexrt::tools::SetMask(state, state.stats, mask);
}

void gex_tools_i_stats_dump(int reset) {
  State& state = Ready();
  {
    std::lock_guard<std::mutex> lock(state.mu);
    FILE* file = state.stats.file.load(std::memory_order_relaxed);
    if (file == nullptr) return;
    gexrt::tools::WriteStatsSummary(state, file,
                                    reset ? "dump, then reset" : "dump");
  }
  // The callback writes through CallbackPrintf, which takes the lock.
  if (gasnett_stats_callback_t callback = state.callback.load()) {
    if (Enabled(state.stats, 'H')) callback(&gexrt::tools::CallbackPrintf);
  }
  std::lock_guard<std::mutex> lock(state.mu);
  FILE* file = state.stats.file.load(std::memory_order_relaxed);
  if (file == nullptr) return;
  gexrt::tools::WriteLine(state, file, 'S', "--- end of statistics ---");
  std::fflush(file);
  if (reset) {
    state.trace_messages.store(0);
    state.stats_messages.store(0);
  }
}

int gex_tools_i_stats_init(gasnett_stats_callback_t fn) {
  State& state = Ready();
  state.callback.store(fn);
  return Enabled(state.stats, 'H') ? 1 : 0;
}

}  // extern "C"
