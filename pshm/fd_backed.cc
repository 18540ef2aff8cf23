#include "pshm/fd_backed.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "base/status.h"

namespace gexrt::pshm::fd_backed {
namespace {

std::string JobFilePrefix(std::string_view job_prefix) {
  return absl::StrFormat("%s%s.", kFilePrefix, job_prefix);
}

}  // namespace

absl::Status Create(OpenFn open_fn, UnlinkFn unlink_fn, const std::string& path,
                    size_t size, mechanism::Mapping* out) {
  const int fd = open_fn(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    return ErrnoToStatus(
        err, absl::StrFormat("cannot create shared memory object %s", path));
  }
  auto fail = [&](std::string_view what, int err) {
    close(fd);
    unlink_fn(path);
    return ErrnoToStatus(
        err, absl::StrFormat("cannot %s shared memory object %s (%u bytes)",
                             what, path, size));
  };
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    return fail("size", errno);
  }
  // Reserve the pages now: on tmpfs a write into a hole past the free
  // space is a SIGBUS, so a full /dev/shm must fail here, cleanly.
  if (int err = posix_fallocate(fd, 0, static_cast<off_t>(size)); err != 0) {
    if (err != EOPNOTSUPP && err != EINVAL) return fail("reserve", err);
  }
  void* address =
      mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) return fail("map", errno);
  close(fd);
  out->address = address;
  out->id = 0;
  out->named = true;
  return absl::OkStatus();
}

absl::Status Map(OpenFn open_fn, const std::string& path, size_t size,
                 mechanism::Mapping* out) {
  const int fd = open_fn(path, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    const int err = errno;
    return ErrnoToStatus(
        err,
        absl::StrFormat("cannot open a peer's shared memory object %s", path));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < size) {
    close(fd);
    return absl::DataLossError(absl::StrFormat(
        "a peer's shared memory object %s is smaller than the %u bytes "
        "expected",
        path, size));
  }
  void* address =
      mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (address == MAP_FAILED) {
    return ErrnoToStatus(
        err, absl::StrFormat(
                 "cannot map a peer's shared memory object %s (%u bytes)", path,
                 size));
  }
  out->address = address;
  out->id = 0;
  out->named = false;
  return absl::OkStatus();
}

void Unmap(void* address, size_t size) { munmap(address, size); }

absl::Status RemoveName(UnlinkFn unlink_fn, std::string_view call,
                        const std::string& path) {
  if (unlink_fn(path) != 0 && errno != ENOENT) {
    return ErrnoToStatus(errno, absl::StrFormat("%s(%s)", call, path));
  }
  return absl::OkStatus();
}

std::vector<std::string> List(const std::string& dir,
                              std::string_view job_prefix) {
  std::vector<std::string> found;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return found;
  const std::string prefix = JobFilePrefix(job_prefix);
  while (struct dirent* entry = readdir(d)) {
    std::string_view name(entry->d_name);
    if (name.substr(0, prefix.size()) == prefix) {
      found.push_back(absl::StrFormat("%s/%s", dir, name));
    }
  }
  closedir(d);
  return found;
}

int RemoveAll(const std::string& dir, std::string_view job_prefix) {
  int removed = 0;
  for (const std::string& path : List(dir, job_prefix)) {
    if (unlink(path.c_str()) == 0) ++removed;
  }
  return removed;
}

uint64_t FreeSpace(const std::string& dir) {
  struct statvfs st;
  if (statvfs(dir.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

}  // namespace gexrt::pshm::fd_backed
