#include "bootstrap/spawn/launch_options.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/string_view.h"

namespace gexrt::spawn {
namespace {

constexpr SpawnerKind kAllSpawners[] = {SpawnerKind::kFork, SpawnerKind::kSsh,
                                        SpawnerKind::kPmi};

constexpr std::string_view kValidSpawners = "fork, ssh, pmi";

// A -n/-N value: decimal digits with an optional leading '-' (so that "-3"
// is reported as too small rather than as gibberish), at least 1.
absl::StatusOr<int64_t> ParseCount(std::string_view option,
                                   std::string_view text) {
  std::string_view digits = text;
  const bool negative = !digits.empty() && digits.front() == '-';
  if (negative) digits.remove_prefix(1);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return c >= '0' && c <= '9';
      })) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s needs a whole number, got '%s'", option, text));
  }
  int64_t value = 0;
  for (char c : digits) {
    const int digit = c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s is too large, got '%s'", option, text));
    }
    value = value * 10 + digit;
  }
  if (negative || value < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be at least 1, got '%s'", option, text));
  }
  return value;
}

bool IsEnvVarName(std::string_view name) {
  if (name.empty()) return false;
  if (!absl::ascii_isalpha(name[0]) && name[0] != '_') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Adds the comma-separated names of one -E value to `names`, skipping any
// already there (propagating a variable twice would be pointless).
absl::Status AddEnvVars(std::string_view value,
                        std::vector<std::string>& names) {
  for (std::string_view name : SplitOn(value, ',')) {
    if (!IsEnvVarName(name)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "-E: '%s' in '%s' is not an environment variable name (letters, "
          "digits and '_', not starting with a digit)",
          name, value));
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      names.emplace_back(name);
    }
  }
  return absl::OkStatus();
}

// Walks the argument list. `next` is the index of the argument after the
// current option, advanced when an option consumes its value from there.
class ArgReader {
 public:
  explicit ArgReader(absl::Span<const std::string> args) : args_(args) {}

  bool done() const { return next_ >= args_.size(); }
  const std::string& Take() { return args_[next_++]; }
  size_t next() const { return next_; }

  // The value of `option`: `attached` when non-empty ("-n4"), else the next
  // argument ("-n 4"). `what` describes the value for the error message.
  absl::StatusOr<std::string> Value(std::string_view option,
                                    std::string_view attached,
                                    std::string_view what) {
    if (!attached.empty()) return std::string(attached);
    if (done()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s needs a value (%s)", option, what));
    }
    return Take();
  }

 private:
  absl::Span<const std::string> args_;
  size_t next_ = 0;
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// A single-valued option (-n, -N, -spawner) may be given once: with two,
// one would silently win ("-n 2 -n 3", easily made by a wrapper script
// adding its own -n), so the command line is refused instead. `seen`
// holds the value of the first one.
absl::Status GivenOnce(std::string_view option,
                       std::optional<std::string>& seen,
                       std::string_view value) {
  if (seen.has_value()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is given more than once ('%s', then '%s'): give it once", option,
        *seen, value));
  }
  seen = std::string(value);
  return absl::OkStatus();
}

}  // namespace

std::string_view SpawnerName(SpawnerKind kind) {
  switch (kind) {
    case SpawnerKind::kFork:
      return "fork";
    case SpawnerKind::kSsh:
      return "ssh";
    case SpawnerKind::kPmi:
      return "pmi";
  }
  return "unknown";
}

absl::StatusOr<SpawnerKind> ParseSpawnerName(std::string_view name) {
  const std::string lower = ToLower(StripWhitespace(name));
  for (SpawnerKind kind : kAllSpawners) {
    if (lower == SpawnerName(kind)) return kind;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown spawner '%s'; valid spawners are %s", name, kValidSpawners));
}

absl::StatusOr<LaunchOptions> ParseLaunchOptions(
    absl::Span<const std::string> args) {
  LaunchOptions options;
  ArgReader reader(args);
  std::optional<std::string> ranks_seen, nodes_seen, spawner_seen;
  while (!reader.done()) {
    const std::string& arg = reader.Take();
    if (arg == "--") break;
    if (arg.empty() || arg[0] != '-') {
      // The program; it and everything after it belong to the program.
      options.program_and_args.push_back(arg);
      break;
    }
    const std::string_view a = arg;
    if (a == "-h" || a == "-help" || a == "--help") {
      options.help = true;
      return options;
    }
    if (a == "-v") {
      options.verbose = true;
    } else if (a == "-t") {
      options.test_only = true;
      options.verbose = true;
    } else if (a == "-k") {
      options.keep_files = true;
      options.verbose = true;
    } else if (a == "-np" || StartsWith(a, "-n")) {
      // "-n4", and "-np4" for symmetry with "-np 4".
      std::string_view attached = a == "-np" ? "" : a.substr(2);
      if (StartsWith(attached, "p")) attached.remove_prefix(1);
      absl::StatusOr<std::string> value =
          reader.Value("-n", attached, "the number of processes");
      if (!value.ok()) return value.status();
      if (absl::Status s = GivenOnce("-n", ranks_seen, *value); !s.ok()) {
        return s;
      }
      absl::StatusOr<int64_t> ranks = ParseCount("-n", *value);
      if (!ranks.ok()) return ranks.status();
      options.ranks = *ranks;
    } else if (StartsWith(a, "-N")) {
      absl::StatusOr<std::string> value =
          reader.Value("-N", a.substr(2), "the number of nodes");
      if (!value.ok()) return value.status();
      if (absl::Status s = GivenOnce("-N", nodes_seen, *value); !s.ok()) {
        return s;
      }
      absl::StatusOr<int64_t> nodes = ParseCount("-N", *value);
      if (!nodes.ok()) return nodes.status();
      options.nodes = *nodes;
    } else if (StartsWith(a, "-E")) {
      absl::StatusOr<std::string> value = reader.Value(
          "-E", a.substr(2), "comma-separated environment variable names");
      if (!value.ok()) return value.status();
      if (absl::Status s = AddEnvVars(*value, options.env_vars); !s.ok()) {
        return s;
      }
    } else if (a == "-spawner" || StartsWith(a, "-spawner=")) {
      const bool has_equals = a != "-spawner";
      absl::StatusOr<std::string> value =
          has_equals ? std::string(a.substr(9))
                     : reader.Value("-spawner", "", kValidSpawners);
      if (!value.ok()) return value.status();
      if (absl::Status s = GivenOnce("-spawner", spawner_seen, *value);
          !s.ok()) {
        return s;
      }
      absl::StatusOr<SpawnerKind> kind = ParseSpawnerName(*value);
      if (!kind.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("-spawner: ", kind.status().message()));
      }
      options.spawner = *kind;
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "unknown option '%s' (use -h for the list of options)", a));
    }
  }
  while (!reader.done()) options.program_and_args.push_back(reader.Take());

  if (options.ranks == 0) {
    return absl::InvalidArgumentError(
        "-n is required: the number of processes to run");
  }
  if (options.nodes > options.ranks) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "-N %d is more than -n %d: every node needs at least one process",
        options.nodes, options.ranks));
  }
  if (options.program_and_args.empty()) {
    return absl::InvalidArgumentError(
        "no program to run: give it after the options");
  }
  return options;
}

std::string LaunchUsage(std::string_view tool_name) {
  return absl::StrFormat(
      "usage: %s -n <n> [options] [--] prog [program args]\n"
      "options:\n"
      "  -n <n>                   processes to run (required; also -np)\n"
      "  -N <N>                   nodes to spread them over\n"
      "  -E <VAR1[,VAR2...]>      environment variables to pass to the "
      "processes\n"
      "  -v                       say what is being done\n"
      "  -t                       test only: show what would run, run nothing "
      "(implies -v)\n"
      "  -k                       keep temporary files (implies -v)\n"
      "  -spawner=(fork|ssh|pmi)  use this spawner (overrides "
      "GASNET_<CONDUIT>_SPAWNER)\n"
      "                           (pmi: through srun --mpi=pmix or mpirun; "
      "GASNET_PMI_LAUNCHER\n"
      "                           sets the command, e.g. 'srun --mpi=pmix "
      "-n %%n %%P')\n"
      "  -h, --help               print this text and exit\n",
      tool_name);
}

std::string SpawnerVariable(std::string_view conduit_upper) {
  return absl::StrCat("GASNET_", ToAbsl(conduit_upper), "_SPAWNER");
}

absl::StatusOr<SpawnerKind> ResolveSpawner(const LaunchOptions& options,
                                           std::string_view conduit_upper,
                                           const char* env_value,
                                           SpawnerKind default_kind) {
  if (options.spawner.has_value()) return *options.spawner;
  if (env_value == nullptr || StripWhitespace(env_value).empty()) {
    return default_kind;
  }
  absl::StatusOr<SpawnerKind> kind = ParseSpawnerName(env_value);
  if (!kind.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        SpawnerVariable(conduit_upper), ": ", kind.status().message()));
  }
  return *kind;
}

}  // namespace gexrt::spawn
