// Judging ThreadSanitizer's reports from the ranks of a PAR job. Each rank
// writes its reports to a file of its own (TsanEnv). Reports about memory
// private to a process (heap, globals, stacks) are always failures.
// Reports about the job's shared memory (the PSHM queues, pools and
// segments, mapped from GASNT* objects) are judged only with one rank:
// between processes the synchronization happens in the other process,
// where this process's ThreadSanitizer cannot see it, so with several ranks
// such reports are noise (they are counted in the log).
#ifndef GEX_TESTS_API_TSAN_REPORTS_H_
#define GEX_TESTS_API_TSAN_REPORTS_H_

#include <string>
#include <vector>

namespace gexrt::testing {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kTsan = true;
#else
inline constexpr bool kTsan = false;
#endif

// Under ThreadSanitizer, the TSAN_OPTIONS for a job whose ranks keep going
// after a report and write them to "<dir>/tsan.<pid>"; else nothing.
std::vector<std::string> TsanEnv(const std::string& dir);

// Fails the current test on every report in `dir` about process-private
// memory, and with `ranks` 1 on any report at all.
void ExpectNoTsanReports(const std::string& dir, int ranks);

}  // namespace gexrt::testing

#endif  // GEX_TESTS_API_TSAN_REPORTS_H_
