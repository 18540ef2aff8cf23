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
#include "base/stderr_line.h"

namespace gexrt::pshm::fd_backed {
namespace {

std::string JobFilePrefix(std::string_view job_prefix) {
  return absl::StrFormat("%s%s.", kFilePrefix, job_prefix);
}

// Why creating `path` failed with EEXIST: names are per job, so the object
// is either another user's, made to block the job (the name was
// predicted), or one of this user's left by a job with the same id. Looked
// at through a read-only open that follows no link and creates nothing.
std::string ExistingObjectError(OpenFn open_fn, const std::string& path) {
  const uid_t me = geteuid();
  const int fd =
      open_fn(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    const int err = errno;
    if (fd >= 0) close(fd);
    return absl::StrFormat(
        "cannot create shared memory object %s: it already exists and "
        "cannot be inspected (%s): it is probably another user's, made "
        "before this job could create it",
        path, strerror(err));
  }
  close(fd);
  if (st.st_uid != me) {
    return absl::StrFormat(
        "cannot create shared memory object %s: it already exists and is "
        "owned by another user (uid %u; this job runs as uid %u), who "
        "created it before this job could: the job cannot use this name "
        "and leaves the object alone",
        path, st.st_uid, me);
  }
  return absl::StrFormat(
      "cannot create shared memory object %s: it already exists (owned by "
      "this user, uid %u: left by an earlier job with the same id?)",
      path, me);
}

}  // namespace

absl::Status Create(OpenFn open_fn, UnlinkFn unlink_fn, const std::string& path,
                    size_t size, mechanism::Mapping* out) {
  const int fd = open_fn(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST) {
      return absl::AlreadyExistsError(ExistingObjectError(open_fn, path));
    }
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
  const uid_t me = geteuid();
  for (const std::string& path : List(dir, job_prefix)) {
    // Only what this job's user made: a launcher running as root must not
    // remove another user's file that merely carries the job's name (one
    // made to block the job, say). In a sticky directory (/dev/shm, /tmp)
    // no one else can swap the file for another between the lstat and the
    // unlink.
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) continue;  // Already gone.
    if (st.st_uid != me) {
      WriteStderrLine(absl::StrFormat(
          "%s: not removing %s: it carries this job's name but is owned by "
          "uid %u, not by this job's user (uid %u)",
          program_invocation_short_name, path, st.st_uid, me));
      continue;
    }
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
