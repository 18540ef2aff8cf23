// Status helpers shared by every layer. Fallible operations return
// absl::Status / absl::StatusOr; these helpers build the common ones.
#ifndef GEX_BASE_STATUS_H_
#define GEX_BASE_STATUS_H_

#include <string_view>

#include "absl/status/status.h"

namespace gexrt {

// A status for a failed system call: the code follows errno's meaning
// (ENOENT -> NotFound, EACCES -> PermissionDenied, ...), and the message is
// "<what>: <strerror(err)>".
absl::Status ErrnoToStatus(int err, std::string_view what);

}  // namespace gexrt

#endif  // GEX_BASE_STATUS_H_
