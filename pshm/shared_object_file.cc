// mmapped files in GASNET_TMPDIR / TMPDIR / /tmp: the fallback for systems
// with neither POSIX nor SysV shared memory.
#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/str_format.h"
#include "pshm/fd_backed.h"
#include "pshm/mechanism_impl.h"
#include "pshm/shared_object.h"

namespace gexrt::pshm::mechanism {
namespace {

int OpenFile(const std::string& path, int flags, mode_t mode) {
  return open(path.c_str(), flags, mode);
}
int UnlinkFile(const std::string& path) { return unlink(path.c_str()); }

}  // namespace

std::string_view Name() { return "file"; }

std::string Path(std::string_view job_prefix, uint32_t owner, uint32_t serial) {
  return absl::StrFormat("%s/%s%s.%u.%u", internal::FileDirectory(),
                         fd_backed::kFilePrefix, job_prefix, owner, serial);
}

absl::Status Create(const std::string& path, size_t size, Mapping* out) {
  return fd_backed::Create(OpenFile, UnlinkFile, path, size, out);
}

absl::Status Map(const std::string& path, int64_t, size_t size, Mapping* out) {
  return fd_backed::Map(OpenFile, path, size, out);
}

void Unmap(void* address, size_t size) { fd_backed::Unmap(address, size); }

absl::Status RemoveName(const std::string& path) {
  return fd_backed::RemoveName(UnlinkFile, "unlink", path);
}

std::vector<std::string> List(std::string_view job_prefix,
                              absl::Span<const pid_t>) {
  return fd_backed::List(internal::FileDirectory(), job_prefix);
}

int RemoveAll(std::string_view job_prefix, absl::Span<const pid_t>) {
  return fd_backed::RemoveAll(internal::FileDirectory(), job_prefix);
}

uint64_t Available() { return fd_backed::FreeSpace(internal::FileDirectory()); }

}  // namespace gexrt::pshm::mechanism
