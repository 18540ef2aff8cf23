// Writing whole lines to stderr.
//
// Many ranks often share one terminal or pipe. A line written with a single
// write(2) (retried on EINTR and partial writes) is never split by another
// process's output, so every report and error from every layer goes out
// through here.
#ifndef GEX_BASE_STDERR_LINE_H_
#define GEX_BASE_STDERR_LINE_H_

#include <string_view>

namespace gexrt {

// Writes `line` and a newline to stderr in one write(2) where the kernel
// allows. Errors are ignored: there is nowhere left to report them. Lines
// under 1 KiB are written without allocating, so a signal handler may
// call this.
void WriteStderrLine(std::string_view line);

}  // namespace gexrt

#endif  // GEX_BASE_STDERR_LINE_H_
