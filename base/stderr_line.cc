#include "base/stderr_line.h"

#include <errno.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace gexrt {
namespace {

void WriteAll(const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = write(STDERR_FILENO, data + done, size - done);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return;
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace

void WriteStderrLine(std::string_view line) {
  // Lines that fit go through a stack buffer, so that signal handlers (the
  // exit path's reports) may call this without allocating.
  char buffer[1024];
  if (line.size() < sizeof buffer) {
    std::memcpy(buffer, line.data(), line.size());
    buffer[line.size()] = '\n';
    WriteAll(buffer, line.size() + 1);
    return;
  }
  std::string text(line);
  text.push_back('\n');
  WriteAll(text.data(), text.size());
}

}  // namespace gexrt
