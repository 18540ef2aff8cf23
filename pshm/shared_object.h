// Shared memory objects: the one thing that differs between the PSHM
// mechanisms (POSIX shm_open, SysV shmget, mmapped files).
//
// The mechanism is chosen at build time (--//pshm:mechanism, see
// mechanism.bzl); exactly one of shared_object_{posix,sysv,file}.cc is
// compiled in. Everything above this header is mechanism-neutral.
//
// Life of an object (every rank of a supernode does this for its own):
//
//   auto mine = SharedObject::Create(name, size);     // creates and maps
//   ... allgather mine->id() ...
//   auto peer = SharedObject::Map(peer_name, peer_id, size);  // each peer
//   ... barrier: every peer has mapped mine ...
//   mine->RemoveName();   // from now on nothing can leak: the memory goes
//                         // away with the last mapping
//
// SysV objects have no name to remove: Create marks them for removal at
// once (Linux lets peers attach a removed segment by id), so they cannot
// outlive the job even if it is killed during start-up. POSIX and file
// objects carry a name until RemoveName; a job killed before that leaves
// them behind, and the launcher removes them (RemoveJobObjects).
#ifndef GEX_PSHM_SHARED_OBJECT_H_
#define GEX_PSHM_SHARED_OBJECT_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace gexrt::pshm {

// "posix", "sysv" or "file": the mechanism this build uses.
std::string_view MechanismName();

// How one object is known to its peers: the job prefix and the owner's
// job rank and serial make the name; `sysv_id` is the SysV shmid (0 for the
// other mechanisms).
struct ObjectName {
  std::string job_prefix;  // Letters and digits only (JobPrefix()).
  uint32_t owner = 0;
  uint32_t serial = 0;  // Which of the owner's objects (net, segment, ...).

  // The name as the mechanism sees it: "/GASNT<prefix>.<owner>.<serial>"
  // for POSIX, "<dir>/GASNT<prefix>.<owner>.<serial>" for files, a
  // description for SysV (used in messages only).
  std::string Path() const;
};

// A mapped shared memory object. Move-only; unmaps on destruction (and,
// for the creator, removes the name if RemoveName was never called).
class SharedObject {
 public:
  // Creates the object, reserves its memory (so a full /dev/shm or
  // $TMPDIR is an error here, not a SIGBUS later) and maps it read-write.
  // The error names the object, the size and what the system said.
  static absl::StatusOr<SharedObject> Create(const ObjectName& name,
                                             size_t size);
  // Maps a peer's object, `size` bytes of it. `id` is the peer's id().
  static absl::StatusOr<SharedObject> Map(const ObjectName& name, int64_t id,
                                          size_t size);

  // An object that maps nothing (a rank with no segment).
  static SharedObject Empty() { return SharedObject(); }

  SharedObject(SharedObject&& other) noexcept;
  SharedObject& operator=(SharedObject&& other) noexcept;
  SharedObject(const SharedObject&) = delete;
  SharedObject& operator=(const SharedObject&) = delete;
  ~SharedObject();

  // Removes the object's name (POSIX, file) so no new mapping can be made
  // and the memory is freed with the last mapping. Idempotent; a no-op
  // for SysV (already removed at Create) and for mapped peers' objects.
  absl::Status RemoveName();

  void* address() const { return address_; }
  size_t size() const { return size_; }
  // What a peer passes to Map: the SysV shmid, else 0.
  int64_t id() const { return id_; }

 private:
  SharedObject() = default;
  void Release();

  void* address_ = nullptr;
  size_t size_ = 0;
  int64_t id_ = 0;
  bool owner_ = false;
  bool named_ = false;  // The creator has not removed the name yet.
  std::string path_;
};

// Removes every object of job `job_prefix` left behind on this host: named
// objects by prefix (POSIX, file) and SysV segments created by one of
// `rank_pids` that no process has attached. Called by the launcher after
// its ranks are gone; returns how many objects it removed. Errors are
// ignored (another launcher may remove the same object). Its signature is
// a launcher's JobCleanup hook (bootstrap/spawn/job_cleanup.h).
int RemoveJobObjects(std::string_view job_prefix,
                     absl::Span<const pid_t> rank_pids);

// Names of this job's objects that exist now on this host (POSIX and file:
// by prefix; SysV: segments created by one of `rank_pids`). For leak
// checks in tests and tools.
std::vector<std::string> ListJobObjects(std::string_view job_prefix,
                                        absl::Span<const pid_t> rank_pids);

// How much shared memory this host can still give out through this
// mechanism, in bytes: free space in /dev/shm (POSIX), the SysV limits
// (shmmax, shmall) or free space in the file directory. Probed without
// allocating anything, so it never crashes a small machine.
uint64_t AvailableSharedMemory();

namespace internal {
// The directory the file mechanism uses: GASNET_TMPDIR, else TMPDIR, else
// /tmp.
std::string FileDirectory();
}  // namespace internal

}  // namespace gexrt::pshm

#endif  // GEX_PSHM_SHARED_OBJECT_H_
