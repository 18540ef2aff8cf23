// The shared parts of the two mechanisms whose objects are files with
// names (POSIX shm, which lives in /dev/shm on Linux, and plain files):
// create-reserve-map, map, list and remove by prefix, free space. Internal
// to //pshm:shared_object.
#ifndef GEX_PSHM_FD_BACKED_H_
#define GEX_PSHM_FD_BACKED_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "pshm/mechanism_impl.h"

namespace gexrt::pshm::fd_backed {

// Opens `path` like open(2); returns an fd or -1 with errno set.
using OpenFn = int (*)(const std::string& path, int flags, mode_t mode);
// Removes `path` like unlink(2); returns 0 or -1 with errno set.
using UnlinkFn = int (*)(const std::string& path);

// Every object's file name starts with this, then the job prefix and '.'.
inline constexpr std::string_view kFilePrefix = "GASNT";

absl::Status Create(OpenFn open_fn, UnlinkFn unlink_fn, const std::string& path,
                    size_t size, mechanism::Mapping* out);
absl::Status Map(OpenFn open_fn, const std::string& path, size_t size,
                 mechanism::Mapping* out);
void Unmap(void* address, size_t size);
// Removes `path` with `unlink_fn` (named `call` in the error); a name
// already gone is not an error.
absl::Status RemoveName(UnlinkFn unlink_fn, std::string_view call,
                        const std::string& path);

// Names (full paths) in `dir` that belong to job `job_prefix`.
std::vector<std::string> List(const std::string& dir,
                              std::string_view job_prefix);
// Unlinks them; returns how many went.
int RemoveAll(const std::string& dir, std::string_view job_prefix);
// Free bytes in the file system holding `dir` (0 when it cannot be read).
uint64_t FreeSpace(const std::string& dir);

}  // namespace gexrt::pshm::fd_backed

#endif  // GEX_PSHM_FD_BACKED_H_
