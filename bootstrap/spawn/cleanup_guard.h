// The launcher's clean-up, run even when the launcher cannot run it.
//
// A launcher removes what its killed ranks left on the host (the conduit's
// JobCleanup: PSHM objects whose names were not yet removed) once they are
// gone. A launcher killed with SIGKILL runs nothing, and its ranks die with
// it (PR_SET_PDEATHSIG), so a job killed that way during start-up would
// leave its objects behind. The guard is a small process, started before
// any rank, that outlives the launcher for exactly as long as that takes:
//   - the launcher tells it the pid of each rank it starts (Watch) and, on
//     every path where it ran the clean-up itself, dismisses it (Dismiss);
//   - when its socket from the launcher closes without a dismissal (the
//     launcher died), it waits (bounded) until every watched rank has
//     exited, runs the clean-up, says what it removed, and exits.
//
// The guard is not the launcher's child (it is started through an
// intermediate process before the launcher becomes a subreaper), so the
// launcher's accounting of its children never sees it; it is adopted by
// the launcher's own reaper (init, or a subreaper above). It ignores the
// terminal's and the launcher's signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT,
// SIGPIPE): its life is bounded by the launcher's plus the clean-up. It
// keeps the launcher's stdout and stderr open until it exits, so whoever
// reads the launcher's output up to its end also waits for the clean-up.
#ifndef GEX_BOOTSTRAP_SPAWN_CLEANUP_GUARD_H_
#define GEX_BOOTSTRAP_SPAWN_CLEANUP_GUARD_H_

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bootstrap/spawn/job_cleanup.h"

namespace gexrt::spawn {

class CleanupGuard {
 public:
  // How long a guard waits for the ranks to exit after the launcher died
  // before cleaning up anyway (they die with the launcher, so this is only
  // reached by a rank stuck in the kernel).
  static constexpr absl::Duration kRankWait = absl::Seconds(10);

  // An inactive guard: Watch and Dismiss do nothing.
  CleanupGuard() = default;
  // Closing without Dismiss: the guard cleans up (after the ranks exit).
  ~CleanupGuard();
  CleanupGuard(CleanupGuard&& other) noexcept;
  CleanupGuard& operator=(CleanupGuard&& other) noexcept;
  CleanupGuard(const CleanupGuard&) = delete;
  CleanupGuard& operator=(const CleanupGuard&) = delete;

  // Starts the guard process for `cleanup` of job `job_id`; `name`
  // ("gasnetrun") prefixes what it says. Call before this process starts
  // any rank or becomes a child subreaper.
  static absl::StatusOr<CleanupGuard> Start(JobCleanup cleanup,
                                            std::string job_id,
                                            std::string name);

  bool active() const { return to_guard_ >= 0; }
  // The guard process (-1 when inactive).
  pid_t pid() const { return pid_; }

  // Adds a rank the guard waits for, and whose SysV segments it may
  // remove, should the launcher die.
  void Watch(pid_t rank);

  // The launcher has run the clean-up itself: the guard exits without
  // doing anything. Returns once the guard has exited (bounded), so that
  // nothing of the job is still running when the launcher returns.
  void Dismiss();

 private:
  pid_t pid_ = -1;
  int to_guard_ = -1;  // the launcher's end of the guard's command socket
  int pidfd_ = -1;     // the guard process, to wait for its exit
};

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_CLEANUP_GUARD_H_
