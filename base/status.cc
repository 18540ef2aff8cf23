#include "base/status.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"

namespace gexrt {

absl::Status ErrnoToStatus(int err, std::string_view what) {
  // absl::ErrnoToStatusCode maps errno values to canonical codes.
  return absl::Status(absl::ErrnoToStatusCode(err),
                      absl::StrFormat("%s: %s", what, std::strerror(err)));
}

}  // namespace gexrt
