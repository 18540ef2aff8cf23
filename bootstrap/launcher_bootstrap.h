// The Bootstrap of a rank started by gasnetrun_<conduit>: collectives go
// over the control channel the launcher left open on a file descriptor
// (a socketpair to the launcher process of this host).
//
// The launcher passes, in the environment:
//   GEX_BOOTSTRAP_FD    the control channel's descriptor number
//   GEX_BOOTSTRAP_RANK  this process's job rank
//   GEX_BOOTSTRAP_SIZE  the number of ranks
// (internal variables: set by the launcher, never by users).
#ifndef GEX_BOOTSTRAP_LAUNCHER_BOOTSTRAP_H_
#define GEX_BOOTSTRAP_LAUNCHER_BOOTSTRAP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/messages.h"

namespace gexrt {

inline constexpr char kBootstrapFdVar[] = "GEX_BOOTSTRAP_FD";
inline constexpr char kBootstrapRankVar[] = "GEX_BOOTSTRAP_RANK";
inline constexpr char kBootstrapSizeVar[] = "GEX_BOOTSTRAP_SIZE";

class LauncherBootstrap final : public Bootstrap {
 public:
  // Whether this process was started by a launcher (GEX_BOOTSTRAP_FD set).
  static bool Present();
  // Reads the variables above and takes over the descriptor; a malformed
  // value is an error naming the variable. Sets the job rank (base/
  // job_rank.h) and installs a fatal-error hook that ends the whole job.
  static absl::StatusOr<std::unique_ptr<LauncherBootstrap>> FromEnvironment();

  // `fd` is owned. `timeout` bounds every wait; the launcher enforces
  // GASNET_BOOTSTRAP_TIMEOUT itself and names the late ranks, so ranks wait
  // a little longer than that before blaming the launcher.
  LauncherBootstrap(int fd, Rank rank, Rank size, absl::Duration timeout);
  ~LauncherBootstrap() override;

  Rank rank() const override { return rank_; }
  Rank size() const override { return size_; }
  void Barrier() override;
  void Allgather(const void* src, size_t len, void* dst) override;
  void Alltoall(const void* src, size_t len, void* dst) override;
  void Broadcast(const void* src, size_t len, void* dst, Rank root) override;
  [[noreturn]] void Abort(int exit_code, std::string_view reason) override;
  void ExitReady() override;
  bool RequestJobExit(int code) override;
  void ReportCurrentCall() override;
  void Fini() override;

  // Tells the launcher this rank hit a fatal error (the fatal-error hook
  // calls it just before aborting), so the job ends at once.
  void NotifyFatal();

 private:
  // Sends this rank's part of the next collective and returns what the
  // launcher sends back for this rank. A failure is fatal.
  // Returns once the control channel has something to read (or at
  // `deadline`), running the wait hook between slices.
  void WaitReadable(absl::Time deadline) const;
  std::string Exchange(wire::CollectiveOp op, uint64_t len, Rank root,
                       std::string data);
  void CheckOpen(std::string_view call) const;
  // A fatal error when `len` bytes per rank would not fit in one frame.
  void CheckLength(wire::CollectiveOp op, uint64_t len) const;

  int fd_;
  Rank rank_;
  Rank size_;
  absl::Duration timeout_;
  uint32_t next_seq_ = 0;
};

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_LAUNCHER_BOOTSTRAP_H_
