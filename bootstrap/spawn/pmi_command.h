// The command line of the pmi spawner (gasnetrun_<conduit> -spawner=pmi):
// the job is handed to an external PMIx launcher, described by a command
// template, GASNET_PMI_LAUNCHER.
//
// Syntax: the template is split into words as a POSIX shell would (quotes
// and backslashes; no expansions), then these placeholders are replaced
// inside words:
//   %n   the number of ranks (-n)
//   %N   the number of nodes (-N)
//   %E   the names of the variables to propagate (-E, every GASNET_*
//        variable set, GEX_JOB_ID), comma-separated
//   %e   one of those names (see groups)
//   %P   the program and its arguments, as separate words; exactly once,
//        as a word of its own, outside any group
//   %%   a literal '%'
// Words between a "[" word and a "]" word form a group: it is dropped when
// it names %N or %R and -N was not given (or %E/%e with no names), and a group
// that names %e is repeated once per name. Groups do not nest.
//
// Defaults (GASNET_PMI_LAUNCHER unset or empty):
//   srun, when Slurm is configured (SLURM_CONF names a file, or
//   /etc/slurm/slurm.conf exists) and srun is on PATH:
//     srun --mpi=pmix -K1 -O -n %n [ -N %N ] [ --export=ALL,%E ] %P
//   (-K1: a rank that fails ends the job; -O: as many ranks as asked, even
//   on fewer CPUs, as the fork spawner does);
//   else mpirun (Open MPI), when on PATH:
//     mpirun --oversubscribe -n %n [ --map-by ppr:%R:node ] [ -x %e ] %P
//   with --allow-run-as-root added when run as root; %R (only here and in
//   user templates) is ceil(ranks / nodes), the ranks per node for -N.
//
//   auto cmd = ExpandPmiTemplate("srun --mpi=pmix -n %n %P",
//                                {.ranks = 4, .program = {"/bin/prog"}});
//   // {"srun", "--mpi=pmix", "-n", "4", "/bin/prog"}
#ifndef GEX_BOOTSTRAP_SPAWN_PMI_COMMAND_H_
#define GEX_BOOTSTRAP_SPAWN_PMI_COMMAND_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gexrt::spawn {

inline constexpr char kPmiLauncherVar[] = "GASNET_PMI_LAUNCHER";

struct PmiJob {
  int64_t ranks = 1;
  int64_t nodes = 0;                   // 0: -N not given.
  std::vector<std::string> env_names;  // For %E and %e.
  std::vector<std::string> program;    // Program and arguments.
};

// The launcher's argv. A malformed template (unbalanced or nested
// brackets, an unknown placeholder, %P missing, repeated or inside a group,
// %N outside a group without -N, unterminated quotes, no words) is an
// InvalidArgument error naming GASNET_PMI_LAUNCHER and what is wrong.
absl::StatusOr<std::vector<std::string>> ExpandPmiTemplate(
    std::string_view tmpl, const PmiJob& job);

// What the machine offers, for the default.
struct PmiEnvironment {
  bool slurm_configured = false;
  bool has_srun = false;
  bool has_mpirun = false;
  bool root = false;
};

// The default template for `env`; an error (naming GASNET_PMI_LAUNCHER)
// when neither launcher is available.
absl::StatusOr<std::string> DefaultPmiTemplate(const PmiEnvironment& env);

// Looks at this machine: SLURM_CONF or /etc/slurm/slurm.conf, srun and
// mpirun on PATH, the effective uid.
PmiEnvironment DetectPmiEnvironment();

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_PMI_COMMAND_H_
