// POSIX shared memory: shm_open objects, which glibc keeps in /dev/shm.
#include <fcntl.h>
#include <sys/mman.h>

#include "absl/strings/str_format.h"
#include "pshm/fd_backed.h"
#include "pshm/mechanism_impl.h"

namespace gexrt::pshm::mechanism {
namespace {

constexpr char kShmDir[] = "/dev/shm";

int OpenShm(const std::string& path, int flags, mode_t mode) {
  return shm_open(path.c_str(), flags, mode);
}
int UnlinkShm(const std::string& path) { return shm_unlink(path.c_str()); }

}  // namespace

std::string_view Name() { return "posix"; }

std::string Path(std::string_view job_prefix, uint32_t owner, uint32_t serial) {
  return absl::StrFormat("/%s%s.%u.%u", fd_backed::kFilePrefix, job_prefix,
                         owner, serial);
}

absl::Status Create(const std::string& path, size_t size, Mapping* out) {
  return fd_backed::Create(OpenShm, UnlinkShm, path, size, out);
}

absl::Status Map(const std::string& path, int64_t, size_t size, Mapping* out) {
  return fd_backed::Map(OpenShm, path, size, out);
}

void Unmap(void* address, size_t size) { fd_backed::Unmap(address, size); }

absl::Status RemoveName(const std::string& path) {
  return fd_backed::RemoveName(UnlinkShm, "shm_unlink", path);
}

std::vector<std::string> List(std::string_view job_prefix,
                              absl::Span<const pid_t>) {
  return fd_backed::List(kShmDir, job_prefix);
}

int RemoveAll(std::string_view job_prefix, absl::Span<const pid_t>) {
  return fd_backed::RemoveAll(kShmDir, job_prefix);
}

uint64_t Available() { return fd_backed::FreeSpace(kShmDir); }

}  // namespace gexrt::pshm::mechanism
