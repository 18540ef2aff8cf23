#include "base/stderr_line.h"

#include <unistd.h>

#include <cerrno>
#include <string>

namespace gex {

void WriteStderrLine(std::string_view line) {
  std::string text(line);
  text.push_back('\n');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n =
        write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return;
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace gex
