// The command line of gasnetrun_<conduit>, the job launcher:
//
//   gasnetrun_smp -n <n> [-N <N>] [-E VAR1[,VAR2...]] [-v] [-t] [-k]
//                 [-spawner=(fork|ssh|pmi)] [--] prog [program args]
//
// Parsing is pure: ParseLaunchOptions reads the arguments, ResolveSpawner
// combines the -spawner option with GASNET_<CONDUIT>_SPAWNER. Error messages
// name the option (or variable) and the bad value, and do not name the tool;
// the caller prefixes its own name ("gasnetrun_smp: ") when it prints them.
//
//   absl::StatusOr<LaunchOptions> o = ParseLaunchOptions({"-n4", "./hello"});
//   // o->ranks == 4, o->program_and_args == {"./hello"}
#ifndef GEX_BOOTSTRAP_SPAWN_LAUNCH_OPTIONS_H_
#define GEX_BOOTSTRAP_SPAWN_LAUNCH_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace gexrt::spawn {

// How the processes of a job are started.
enum class SpawnerKind {
  kFork,  // All ranks on this host, forked by the launcher.
  kSsh,   // Ranks on the hosts of a host list, started by a remote shell.
  kPmi,   // Ranks started by a PMI-capable process manager.
};

// "fork", "ssh" or "pmi".
std::string_view SpawnerName(SpawnerKind kind);

// The kind named `name`, in any case, ignoring surrounding whitespace. An
// unknown name is an InvalidArgument error that quotes it and lists the
// valid names.
absl::StatusOr<SpawnerKind> ParseSpawnerName(std::string_view name);

struct LaunchOptions {
  int64_t ranks = 0;                   // -n <n> (or -np): required, >= 1.
  int64_t nodes = 0;                   // -N <N>: 0 = not given; <= ranks.
  std::vector<std::string> env_vars;   // -E: names to propagate, in order,
                                       // each once.
  bool verbose = false;                // -v; also set by -t and -k.
  bool test_only = false;              // -t: print what would run, run none.
  bool keep_files = false;             // -k: keep temporary files.
  bool help = false;                   // -h, -help, --help: print usage.
  std::optional<SpawnerKind> spawner;  // -spawner=NAME / -spawner NAME
  std::vector<std::string> program_and_args;  // Non-empty unless help.
};

// Parses the launcher's arguments (argv without argv[0]).
//
// Accepted forms: "-n 4", "-n4", "-np 4", "-N 2", "-N2", "-E A,B" or "-EA,B"
// (repeatable; names accumulate), "-v", "-t", "-k", "-spawner=ssh",
// "-spawner ssh". Options end at "--" or at the first argument that does not
// start with '-'; everything from there on is the program and its
// arguments, passed through untouched (so "prog -n 2" gives prog "-n 2").
//
// A help option stops parsing: the result has help set and nothing else is
// checked, so "gasnetrun -h" works without -n or a program.
//
// Errors (InvalidArgument, each naming the option and the value): an
// unknown option, an option without its value, -n (or -np), -N or
// -spawner given more than once (-E accumulates; -v, -t, -k may repeat), a
// -n/-N that is not a whole number or is below 1, -N greater than -n, an -E
// name that is not [A-Za-z_][A-Za-z0-9_]*, an unknown spawner, a missing -n, a
// missing program.
absl::StatusOr<LaunchOptions> ParseLaunchOptions(
    absl::Span<const std::string> args);

// The usage text for `tool_name` ("gasnetrun_smp"): a synopsis line and one
// line per option, each ending in '\n'.
std::string LaunchUsage(std::string_view tool_name);

// The spawner to use: the -spawner option if given, else the value of
// GASNET_<conduit_upper>_SPAWNER (`env_value`, null when unset; an empty or
// blank value counts as unset), else `default_kind`. A value that names no
// spawner is an InvalidArgument error naming the variable and the value.
absl::StatusOr<SpawnerKind> ResolveSpawner(const LaunchOptions& options,
                                           std::string_view conduit_upper,
                                           const char* env_value,
                                           SpawnerKind default_kind);

// "GASNET_<conduit_upper>_SPAWNER", the variable ResolveSpawner reads.
std::string SpawnerVariable(std::string_view conduit_upper);

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_LAUNCH_OPTIONS_H_
