#include "base/env/settings.h"

#include <cstdlib>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/env/topology.h"
#include "base/fatal.h"
#include "base/job_rank.h"
#include "base/stderr_line.h"
#include "base/string_view.h"

namespace gexrt::env {
namespace {

// Variables GASNet users may still set that we do not honour, with what to
// use instead.
constexpr std::pair<std::string_view, std::string_view> kUnsupported[] = {
    {"GASNET_HCA_ID", "use GASNET_IBV_PORTS to select HCAs"},
    {"GASNET_PORT_NUM", "use GASNET_IBV_PORTS to select ports"},
};

// std::mutex, not absl::Mutex: Debian's abseil is not built for TSan, and
// settings may be read from several threads of a PAR-mode client.
struct State {
  std::mutex mu;
  absl::flat_hash_set<std::string> reported;
  absl::flat_hash_set<std::string> warned;
  // Report lines made before the job rank was known.
  std::vector<std::string> pending;
  bool listening = false;
  std::optional<bool> verbose;
  std::optional<bool> quiet;
  internal::ReportSink sink = &WriteStderrLine;
};

State& GetState() {
  // Never destroyed: settings may be read from atexit handlers.
  static State* state = new State;
  return *state;
}

// Once the rank is known, rank 0 prints what was held; the others drop it.
void OnJobRankKnown(int rank) {
  State& state = GetState();
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(state.mu);
    lines.swap(state.pending);
  }
  if (rank != 0) return;
  for (const std::string& line : lines) state.sink(line);
}

void Report(std::string_view name, std::string_view shown, bool is_default,
            std::string_view raw) {
  if (!VerboseEnv()) return;
  State& state = GetState();
  std::string line = absl::StrFormat("ENV parameter: %s = %s", name, shown);
  if (is_default) {
    absl::StrAppend(&line, "   (default)");
  } else if (StripWhitespace(raw) != shown) {
    absl::StrAppendFormat(&line, "   (set as \"%s\")", raw);
  }
  const int rank = JobRank();
  {
    std::lock_guard<std::mutex> lock(state.mu);
    if (!state.reported.insert(std::string(name)).second) return;
    if (rank == kUnknownRank) {
      state.pending.push_back(std::move(line));
      if (!state.listening) {
        state.listening = true;
        AddJobRankListener(&OnJobRankKnown);
      }
      return;
    }
  }
  if (rank == 0) state.sink(line);
}

}  // namespace

void Display(std::string_view name, std::string_view shown, bool is_default) {
  Report(name, shown, is_default, shown);
}

namespace {

std::string InvalidValueMessage(std::string_view name, std::string_view raw,
                                const absl::Status& why) {
  return absl::StrFormat(
      "environment variable %s has the invalid value \"%s\": %s", name, raw,
      why.message());
}

// Reads `name`, parses it with `parse` or falls back to `default_value`, and
// reports the outcome. `show` renders a value for the report.
template <typename T, typename Parse, typename Show>
absl::StatusOr<T> TryGetTyped(std::string_view name, const T& default_value,
                              Parse parse, Show show) {
  std::optional<std::string> raw = GetRaw(name);
  if (!raw.has_value() || StripWhitespace(*raw).empty()) {
    Report(name, show(default_value), /*is_default=*/true, "");
    return default_value;
  }
  absl::StatusOr<T> value = parse(*raw);
  if (!value.ok()) {
    return absl::Status(value.status().code(),
                        InvalidValueMessage(name, *raw, value.status()));
  }
  Report(name, show(*value), /*is_default=*/false, *raw);
  return value;
}

template <typename T>
T OrDie(absl::StatusOr<T> value) {
  if (!value.ok()) FatalError(ToStd(value.status().message()));
  return *std::move(value);
}

// A boolean control variable read straight from the environment once (they
// gate reporting itself, so they cannot go through Report()).
bool ReadControlFlag(std::string_view name) {
  std::optional<std::string> raw = GetRaw(name);
  if (!raw.has_value() || StripWhitespace(*raw).empty()) {
    return false;
  }
  absl::StatusOr<bool> value = ParseBool(*raw);
  if (!value.ok()) FatalError(InvalidValueMessage(name, *raw, value.status()));
  return *value;
}

// ReadControlFlag, read once and kept in `State::*slot` (ResetForTest
// clears it). The read happens outside the lock: it may end in FatalError.
bool CachedControlFlag(std::optional<bool> State::*slot,
                       std::string_view name) {
  State& state = GetState();
  {
    std::lock_guard<std::mutex> lock(state.mu);
    if ((state.*slot).has_value()) return *(state.*slot);
  }
  const bool value = ReadControlFlag(name);
  std::lock_guard<std::mutex> lock(state.mu);
  state.*slot = value;
  return value;
}

std::string ShowBool(bool v) { return v ? "yes" : "no"; }
std::string ShowInt(int64_t v) { return absl::StrCat(v); }
std::string ShowDecimal(double v) { return absl::StrFormat("%g", v); }
std::string ShowSize(uint64_t v) {
  return MemoryAmount::Absolute(v).ToString();
}
std::string ShowMemory(const MemoryAmount& v) {
  return v.is_fraction ? absl::StrCat(v.ToString(), " of the whole")
                       : v.ToString();
}
std::string ShowNodeList(const NodeList& v) { return v.ToString(); }
std::string ShowPorts(const std::vector<PortSpec>& specs) {
  return specs.empty() ? "(no filter)" : PortFilterToString(specs);
}
std::string ShowString(const std::string& v) { return v; }

// GASNet-EX reads the leading number of an integer or size setting and
// ignores what follows; we read the same value, but say what was ignored
// (unless GASNET_QUIET), once per variable and value.
void WarnIgnoredText(std::string_view name, std::string_view raw,
                     std::string_view used, std::string_view ignored) {
  if (Quiet()) return;
  State& state = GetState();
  {
    std::lock_guard<std::mutex> lock(state.mu);
    if (!state.warned.insert(absl::StrCat(ToAbsl(name), "=", ToAbsl(raw)))
             .second) {
      return;
    }
  }
  WarningF(
      "environment variable %s has the value \"%s\": using %s, its leading "
      "number, and ignoring \"%s\" after it, as GASNet-EX does "
      "(GASNET_QUIET=1 silences this)",
      name, raw, used, ignored);
}

// The exact reading of a value if it has one; otherwise GASNet-EX's
// (`leading`, called only then), with a warning naming what was ignored;
// otherwise the exact reading's error.
template <typename T, typename Leading, typename Show>
absl::StatusOr<T> ExactOrLeading(std::string_view name, std::string_view text,
                                 absl::StatusOr<T> exact, Leading leading,
                                 Show show) {
  if (exact.ok()) return exact;
  auto lead = leading();
  if (!lead.ok()) return exact.status();
  WarnIgnoredText(name, text, show(lead->value), lead->ignored);
  return lead->value;
}

}  // namespace

std::string ShowBytes(uint64_t bytes) { return ShowSize(bytes); }

std::optional<std::string> GetRaw(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

absl::StatusOr<bool> TryGetBool(std::string_view name, bool default_value) {
  return TryGetTyped(name, default_value, ParseBool, ShowBool);
}
bool GetBool(std::string_view name, bool default_value) {
  return OrDie(TryGetBool(name, default_value));
}

absl::StatusOr<int64_t> TryGetInt(std::string_view name, int64_t default_value,
                                  int64_t min, int64_t max) {
  return TryGetTyped(
      name, default_value,
      [name, min, max](std::string_view text) {
        return ExactOrLeading(
            name, text, ParseInt(text, min, max),
            [&] { return ParseLeadingInt(text, min, max); }, ShowInt);
      },
      ShowInt);
}
int64_t GetInt(std::string_view name, int64_t default_value, int64_t min,
               int64_t max) {
  return OrDie(TryGetInt(name, default_value, min, max));
}

absl::StatusOr<double> TryGetDecimal(std::string_view name,
                                     double default_value) {
  return TryGetTyped(name, default_value, ParseDecimal, ShowDecimal);
}
double GetDecimal(std::string_view name, double default_value) {
  return OrDie(TryGetDecimal(name, default_value));
}

absl::StatusOr<uint64_t> TryGetSize(std::string_view name,
                                    uint64_t default_bytes, SizeUnit unit) {
  return TryGetTyped(
      name, default_bytes,
      [name, unit](std::string_view text) {
        return ExactOrLeading(
            name, text, ParseSize(text, unit),
            [&] { return ParseLeadingSize(text, unit); }, ShowSize);
      },
      ShowSize);
}
uint64_t GetSize(std::string_view name, uint64_t default_bytes, SizeUnit unit) {
  return OrDie(TryGetSize(name, default_bytes, unit));
}

absl::StatusOr<MemoryAmount> TryGetMemoryAmount(std::string_view name,
                                                MemoryAmount default_value,
                                                SizeUnit unit) {
  return TryGetTyped(
      name, default_value,
      [unit](std::string_view text) { return ParseMemoryAmount(text, unit); },
      ShowMemory);
}
MemoryAmount GetMemoryAmount(std::string_view name, MemoryAmount default_value,
                             SizeUnit unit) {
  return OrDie(TryGetMemoryAmount(name, default_value, unit));
}

absl::StatusOr<NodeList> TryGetNodeList(std::string_view name) {
  return TryGetTyped(name, NodeList::All(), ParseNodeList, ShowNodeList);
}
NodeList GetNodeList(std::string_view name) {
  return OrDie(TryGetNodeList(name));
}

absl::StatusOr<std::vector<PortSpec>> TryGetPortFilter(std::string_view name) {
  return TryGetTyped(name, std::vector<PortSpec>{}, ParsePortFilter, ShowPorts);
}
std::vector<PortSpec> GetPortFilter(std::string_view name) {
  return OrDie(TryGetPortFilter(name));
}

std::string GetString(std::string_view name, std::string_view default_value) {
  return OrDie(TryGetTyped(
      name, std::string(default_value),
      [](std::string_view text) -> absl::StatusOr<std::string> {
        return std::string(StripWhitespace(text));
      },
      ShowString));
}

absl::StatusOr<std::string> TryGetChoice(
    std::string_view name, std::string_view default_value,
    std::initializer_list<std::string_view> choices) {
  auto parse = [choices](std::string_view text) -> absl::StatusOr<std::string> {
    const std::string_view word = StripWhitespace(text);
    for (std::string_view choice : choices) {
      if (absl::EqualsIgnoreCase(ToAbsl(word), ToAbsl(choice))) {
        return std::string(choice);
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "not a recognised choice; expected one of: ",
        absl::StrJoin(
            choices.begin(), choices.end(), ", ",
            [](std::string* out, std::string_view c) { out->append(c); }),
        " (any case)"));
  };
  return TryGetTyped(name, std::string(default_value), parse, ShowString);
}
std::string GetChoice(std::string_view name, std::string_view default_value,
                      std::initializer_list<std::string_view> choices) {
  return OrDie(TryGetChoice(name, default_value, choices));
}

std::string TopologyVariantFor(std::string_view family,
                               std::optional<int> bound_index) {
  if (bound_index.has_value()) {
    std::string specific = absl::StrCat(ToAbsl(family), "_", *bound_index);
    std::optional<std::string> raw = GetRaw(specific);
    if (raw.has_value() && !StripWhitespace(*raw).empty()) {
      return specific;
    }
  }
  return std::string(family);
}

absl::StatusOr<std::string> TryTopologyVariant(std::string_view family) {
  absl::StatusOr<TopologyLevel> level = TryGetTyped(
      absl::StrCat(ToAbsl(family), "_TYPE"), TopologyLevel::kSocket,
      ParseTopologyLevel,
      [](TopologyLevel l) { return std::string(TopologyLevelName(l)); });
  if (!level.ok()) return level.status();
  return TopologyVariantFor(family, BoundObjectIndex(*level));
}
std::string TopologyVariant(std::string_view family) {
  return OrDie(TryTopologyVariant(family));
}

bool VerboseEnv() {
  return CachedControlFlag(&State::verbose, "GASNET_VERBOSEENV");
}

bool Quiet() { return CachedControlFlag(&State::quiet, "GASNET_QUIET"); }

void WarnIfSet(std::string_view name, std::string_view advice) {
  std::optional<std::string> raw = GetRaw(name);
  if (!raw.has_value() || raw->empty() || Quiet()) return;
  State& state = GetState();
  {
    std::lock_guard<std::mutex> lock(state.mu);
    if (!state.warned.insert(std::string(name)).second) return;
  }
  WarningF(
      "environment variable %s is set (to \"%s\") but is no longer "
      "supported and is ignored: %s (GASNET_QUIET=1 silences this)",
      name, *raw, advice);
}

void WarnUnsupportedVariables() {
  for (const auto& [name, advice] : kUnsupported) WarnIfSet(name, advice);
}

namespace internal {

void SetReportSinkForTest(ReportSink sink) {
  GetState().sink = sink != nullptr ? sink : &WriteStderrLine;
}

void ResetForTest() {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mu);
  state.reported.clear();
  state.warned.clear();
  state.pending.clear();
  state.verbose.reset();
  state.quiet.reset();
}

}  // namespace internal
}  // namespace gexrt::env
