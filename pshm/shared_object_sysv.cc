// SysV shared memory: shmget(IPC_PRIVATE) segments, attached by id.
//
// The creator marks its segment for removal (IPC_RMID) right after
// attaching it; Linux still lets peers attach a removed segment by id, and
// frees it when the last process detaches. So a SysV object can outlive its
// job only in the instant between shmget and shmctl; RemoveAll covers that
// by the creator's pid.
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "base/stderr_line.h"
#include "pshm/mechanism_impl.h"

namespace gexrt::pshm::mechanism {
namespace {

struct SegmentEntry {
  int64_t id;
  uint64_t size;
  pid_t creator;
  uint64_t attached;
};

// /proc/sysvipc/shm: "key shmid perms size cpid lpid nattch ..." per line.
std::vector<SegmentEntry> ReadSegments() {
  std::vector<SegmentEntry> entries;
  std::ifstream in("/proc/sysvipc/shm");
  std::string line;
  std::getline(in, line);  // Header.
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    int64_t key, id, perms;
    uint64_t size, attached;
    pid_t cpid, lpid;
    if (fields >> key >> id >> perms >> size >> cpid >> lpid >> attached) {
      entries.push_back({id, size, cpid, attached});
    }
  }
  return entries;
}

uint64_t ReadNumber(const char* path, uint64_t fallback) {
  std::ifstream in(path);
  uint64_t value;
  return (in >> value) ? value : fallback;
}

bool CreatedByJob(const SegmentEntry& e, absl::Span<const pid_t> pids) {
  return std::find(pids.begin(), pids.end(), e.creator) != pids.end();
}

}  // namespace

std::string_view Name() { return "sysv"; }

std::string Path(std::string_view job_prefix, uint32_t owner, uint32_t serial) {
  return absl::StrFormat("SysV segment %u of rank %u (job %s)", serial, owner,
                         job_prefix);
}

absl::Status Create(const std::string& path, size_t size, Mapping* out) {
  const int id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
  if (id < 0) {
    const int err = errno;
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot create %s (%u bytes): shmget: %s%s", path, size,
        std::strerror(err),
        err == EINVAL || err == ENOSPC || err == ENOMEM
            ? " (see kernel.shmmax, kernel.shmall and kernel.shmmni)"
            : ""));
  }
  void* address = shmat(id, nullptr, 0);
  const int err = errno;
  // Removed now: it lives as long as someone has it attached.
  shmctl(id, IPC_RMID, nullptr);
  if (address == reinterpret_cast<void*>(-1)) {
    return ErrnoToStatus(
        err, absl::StrFormat("cannot attach %s (%u bytes): shmat", path, size));
  }
  out->address = address;
  out->id = id;
  out->named = false;
  return absl::OkStatus();
}

absl::Status Map(const std::string& path, int64_t id, size_t size,
                 Mapping* out) {
  struct shmid_ds ds;
  if (shmctl(static_cast<int>(id), IPC_STAT, &ds) != 0) {
    const int err = errno;
    return ErrnoToStatus(
        err, absl::StrFormat("cannot find a peer's %s (id %d)", path, id));
  }
  if (ds.shm_segsz < size) {
    return absl::DataLossError(
        absl::StrFormat("a peer's %s (id %d) has %u bytes, not the %u expected",
                        path, id, ds.shm_segsz, size));
  }
  void* address = shmat(static_cast<int>(id), nullptr, 0);
  if (address == reinterpret_cast<void*>(-1)) {
    const int err = errno;
    return ErrnoToStatus(
        err, absl::StrFormat("cannot attach a peer's %s (id %d)", path, id));
  }
  out->address = address;
  out->id = id;
  out->named = false;
  return absl::OkStatus();
}

void Unmap(void* address, size_t) { shmdt(address); }

absl::Status RemoveName(const std::string&) { return absl::OkStatus(); }

std::vector<std::string> List(std::string_view,
                              absl::Span<const pid_t> rank_pids) {
  std::vector<std::string> found;
  for (const SegmentEntry& e : ReadSegments()) {
    if (CreatedByJob(e, rank_pids)) {
      found.push_back(absl::StrFormat("SysV shmid %d (%u bytes, creator %d)",
                                      e.id, e.size, e.creator));
    }
  }
  return found;
}

int RemoveAll(std::string_view, absl::Span<const pid_t> rank_pids) {
  int removed = 0;
  const uid_t me = geteuid();
  for (const SegmentEntry& e : ReadSegments()) {
    if (!CreatedByJob(e, rank_pids) || e.attached != 0) continue;
    // A pid says who created a segment only while that pid is not reused:
    // the owner must also be this job's user, or a launcher running as
    // root could remove another user's segment.
    struct shmid_ds ds;
    if (shmctl(static_cast<int>(e.id), IPC_STAT, &ds) != 0) continue;
    if (ds.shm_perm.uid != me || ds.shm_perm.cuid != me) {
      WriteStderrLine(absl::StrFormat(
          "%s: not removing SysV shmid %d: its creator's pid %d was one of "
          "this job's, but it is owned by uid %u, not by this job's user "
          "(uid %u)",
          program_invocation_short_name, e.id, e.creator, ds.shm_perm.uid, me));
      continue;
    }
    if (shmctl(static_cast<int>(e.id), IPC_RMID, nullptr) == 0) ++removed;
  }
  return removed;
}

uint64_t Available() {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t shmmax = ReadNumber("/proc/sys/kernel/shmmax", 0);
  const uint64_t shmall_pages = ReadNumber("/proc/sys/kernel/shmall", 0);
  uint64_t used_pages = 0;
  for (const SegmentEntry& e : ReadSegments()) {
    used_pages += (e.size + page - 1) / page;
  }
  const uint64_t total =
      shmall_pages > UINT64_MAX / page ? UINT64_MAX : shmall_pages * page;
  const uint64_t left =
      total > used_pages * page ? total - used_pages * page : 0;
  return std::min(shmmax, left);
}

}  // namespace gexrt::pshm::mechanism
