// What the benchmark CLIs do the same way once their job has started:
// pinning each rank to a CPU and naming the threading mode. Standard C++
// only (the caller asks the job its place), so it builds for any conduit.
#ifndef TOOLS_BENCH_JOB_H_
#define TOOLS_BENCH_JOB_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "tools/bench_args.h"

namespace gex_bench {

// Pins this rank, the `host_index`th of the `host_ranks` on its host (from
// gex_System_QueryHostInfo), per `mode` (host rank r on allowed CPU
// r % ncpus; kAuto pins when the host's ranks fit its CPUs) and returns a
// line describing what it did, for the header. *polite is set when the host
// has more ranks than CPUs, so spins must yield. A failure to pin is
// reported on stderr, prefixed by `program` and the job rank `me`, and the
// run goes on unpinned.
std::string PinToCpu(Pin mode, uint32_t host_ranks, uint32_t host_index,
                     std::string_view program, uint32_t me, bool* polite);

// Where the command line leaves a benchmark before it measures. Every rank
// parses the same arguments and reaches the same verdict; rank 0 (`leader`)
// says why. Returns the code to end the job with (2 after printing
// `parse_error` or when the job has fewer than 2 ranks, 0 after printing
// the usage for `help`), or nullopt to go on. `usage` makes the -h text for
// the program's name as invoked; `conduit` names gasnetrun_<conduit> in
// the hint.
std::optional<int> CommandLineVerdict(
    std::string_view program, int argc, char** argv, bool leader,
    uint32_t ranks, const std::optional<std::string>& parse_error, bool help,
    std::string (*usage)(std::string_view), std::string_view conduit);

// Opens `path` for the CSV before anything is measured, so a bad path
// costs nothing: null for an empty path; on failure a message naming the
// path (prefixed by `program`) and *failed set.
std::FILE* OpenCsv(std::string_view program, const std::string& path,
                   bool* failed);

// The threading mode the client was built for. Inline: the mode macro is
// the client's (set by the conduit target it links), not this library's.
inline const char* ThreadMode() {
#if defined(GASNET_PAR)
  return "PAR";
#elif defined(GASNET_PARSYNC)
  return "PARSYNC";
#else
  return "SEQ";
#endif
}

}  // namespace gex_bench

#endif  // TOOLS_BENCH_JOB_H_
