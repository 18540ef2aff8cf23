#include "bootstrap/spawn/pmi_command.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bootstrap/spawn/shell_words.h"

namespace gexrt::spawn {
namespace {

absl::Status Bad(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(kPmiLauncherVar, ": ", what));
}

// The placeholders a word names ('%%' excluded).
struct Names {
  bool n = false, N = false, E = false, e = false, P = false, R = false;
};

absl::StatusOr<Names> Scan(const std::string& word) {
  Names names;
  for (size_t i = 0; i < word.size(); ++i) {
    if (word[i] != '%') continue;
    if (i + 1 == word.size()) {
      return Bad(
          absl::StrFormat("'%s' ends in a lone '%%' (write %%%% for "
                          "a literal '%%')",
                          word));
    }
    switch (word[++i]) {
      case '%':
        break;
      case 'n':
        names.n = true;
        break;
      case 'N':
        names.N = true;
        break;
      case 'E':
        names.E = true;
        break;
      case 'e':
        names.e = true;
        break;
      case 'P':
        names.P = true;
        break;
      case 'R':
        names.R = true;
        break;
      default:
        return Bad(absl::StrFormat(
            "unknown placeholder '%%%c' in '%s' (known: %%n %%N %%R %%E %%e "
            "%%P %%%%)",
            word[i], word));
    }
  }
  return names;
}

std::string Substitute(const std::string& word, const PmiJob& job,
                       const std::string& one_name) {
  std::string out;
  for (size_t i = 0; i < word.size(); ++i) {
    if (word[i] != '%') {
      out.push_back(word[i]);
      continue;
    }
    switch (word[++i]) {
      case '%':
        out.push_back('%');
        break;
      case 'n':
        absl::StrAppend(&out, job.ranks);
        break;
      case 'N':
        absl::StrAppend(&out, job.nodes);
        break;
      case 'R':
        absl::StrAppend(&out, job.nodes > 0
                                  ? (job.ranks + job.nodes - 1) / job.nodes
                                  : job.ranks);
        break;
      case 'E':
        absl::StrAppend(&out, absl::StrJoin(job.env_names, ","));
        break;
      case 'e':
        out += one_name;
        break;
    }
  }
  return out;
}

bool OnPath(const char* name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    if (access(absl::StrCat(dir, "/", name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandPmiTemplate(
    std::string_view tmpl, const PmiJob& job) {
  absl::StatusOr<std::vector<std::string>> words = SplitShellWords(tmpl);
  if (!words.ok()) return Bad(std::string(words.status().message()));
  if (words->empty()) return Bad("the template has no words");
  std::vector<std::string> out;
  bool seen_program = false;
  // Where the open group's words start; 0 when no group is open (a group's
  // words follow its '[', so they never start at 0). A plain index: GCC's
  // -Wmaybe-uninitialized misread a std::optional here in -c opt builds.
  size_t group_start = 0;
  Names group_names;
  for (size_t i = 0; i < words->size(); ++i) {
    const std::string& w = (*words)[i];
    if (w == "[") {
      if (group_start != 0) return Bad("groups ('[' ... ']') do not nest");
      group_start = i + 1;
      group_names = Names();
      continue;
    }
    if (w == "]") {
      if (group_start == 0) return Bad("']' without its '['");
      const bool keep =
          !((group_names.N || group_names.R) && job.nodes == 0) &&
          !((group_names.E || group_names.e) && job.env_names.empty());
      if (keep) {
        std::vector<std::string> names =
            group_names.e ? job.env_names : std::vector<std::string>{""};
        for (const std::string& name : names) {
          for (size_t k = group_start; k < i; ++k) {
            out.push_back(Substitute((*words)[k], job, name));
          }
        }
      }
      group_start = 0;
      continue;
    }
    absl::StatusOr<Names> names = Scan(w);
    if (!names.ok()) return names.status();
    if (names->P) {
      if (w != "%P")
        return Bad(
            absl::StrFormat("%%P must be a word of its "
                            "own, not part of '%s'",
                            w));
      if (group_start != 0) return Bad("%P may not be inside a group");
      if (seen_program) return Bad("%P appears more than once");
      seen_program = true;
      out.insert(out.end(), job.program.begin(), job.program.end());
      continue;
    }
    if (group_start != 0) {
      group_names.N |= names->N;
      group_names.R |= names->R;
      group_names.E |= names->E;
      group_names.e |= names->e;
      continue;
    }
    if (names->e) return Bad("%e may only appear inside a group");
    if (names->N && job.nodes == 0) {
      return Bad(absl::StrFormat(
          "'%s' needs -N, which was not given (put it in a group: "
          "[ -N %%N ])",
          w));
    }
    out.push_back(Substitute(w, job, ""));
  }
  if (group_start != 0) return Bad("'[' without its ']'");
  if (!seen_program) {
    return Bad("the template has no %P (where the program goes)");
  }
  if (out.front().empty() || out.front() == job.program.front()) {
    return Bad("the template must start with the launcher's name");
  }
  return out;
}

absl::StatusOr<std::string> DefaultPmiTemplate(const PmiEnvironment& env) {
  if (env.slurm_configured && env.has_srun) {
    return std::string(
        "srun --mpi=pmix -K1 -O -n %n [ -N %N ] [ --export=ALL,%E ] %P");
  }
  if (env.has_mpirun) {
    return absl::StrCat("mpirun ", env.root ? "--allow-run-as-root " : "",
                        "--oversubscribe -n %n [ --map-by ppr:%R:node ] "
                        "[ -x %e ] %P");
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "-spawner=pmi: no PMIx launcher found: neither srun (with a Slurm "
      "configuration) nor mpirun is on PATH; install one, or set ",
      kPmiLauncherVar, " to a launcher's command template"));
}

PmiEnvironment DetectPmiEnvironment() {
  PmiEnvironment env;
  const char* conf = std::getenv("SLURM_CONF");
  env.slurm_configured =
      (conf != nullptr && *conf != '\0' && access(conf, R_OK) == 0) ||
      access("/etc/slurm/slurm.conf", R_OK) == 0;
  env.has_srun = OnPath("srun");
  env.has_mpirun = OnPath("mpirun");
  env.root = geteuid() == 0;
  return env;
}

}  // namespace gexrt::spawn
