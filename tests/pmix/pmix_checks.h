// What the PMIx job tests (pmix_job_test.cc, two_node_job_test.cc) check
// of a finished job: its description for a failure message, the shared
// memory it left, and the outcome of each exit path.
#ifndef GEX_TESTS_PMIX_PMIX_CHECKS_H_
#define GEX_TESTS_PMIX_PMIX_CHECKS_H_

#include <ostream>
#include <string>
#include <vector>

#include "tests/pmix/pmix_testing.h"

namespace gexrt::testing {

// The command, exit code and output of a job, for failure messages.
std::string Describe(const PmixJobResult& r);

// Shared-memory objects of the job named by "GEX_JOB_ID=<id>".
std::vector<std::string> ShmLeft(const std::string& job_id_env);

// One exit path of exit_client (tests/exit) at kExitRanks ranks, the
// exiter being the last rank.
struct ExitCase {
  std::string mode;  // exit_client's: collective, spin, exit-one, sigkill
  int code = 0;
  // The job exits with `code` (through GASNet's exit); otherwise the
  // launcher ends it: with `launcher_code` where that is set (a rank
  // killed by signal N: 128+N, from mpirun, srun and gasnetrun alike),
  // else nonzero.
  bool exact = true;
  int launcher_code = -1;
};
inline constexpr int kExitRanks = 4;

// Every path: a collective exit with 3 (every rank's buffered lines
// arrive whole) and with 0, gasnet_exit(3) on one rank while the others
// poll, exit(3) behind GASNet's back, and SIGKILL (137).
std::vector<ExitCase> ExitCases();
// For test names: "collective_3", "sigkill_9", ...
std::string ExitCaseName(const ExitCase& c);
void PrintTo(const ExitCase& c, std::ostream* os);

// Whether `r` ended as `c` says, every rank had reached the exit (each
// prints its job line once its segment is attached), and nothing of the
// job is left: no rank running when the launcher returned, no process
// after, no shared memory of `job_id_env`.
void ExpectExitOutcome(const PmixJobResult& r, const ExitCase& c,
                       const std::string& job_id_env);

}  // namespace gexrt::testing

#endif  // GEX_TESTS_PMIX_PMIX_CHECKS_H_
