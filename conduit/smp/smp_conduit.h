// The smp conduit: a job whose ranks all share one host and reach each
// other only through PSHM, which core/ drives itself. The conduit's part
// is what differs from other conduits at start-up: GASNET_PSHM_NODES (a
// program started directly becomes its own job's launcher) and the check
// that every rank is in one supernode. It carries no traffic.
#ifndef GEX_CONDUIT_SMP_SMP_CONDUIT_H_
#define GEX_CONDUIT_SMP_SMP_CONDUIT_H_

#include "core/conduit.h"

namespace gexrt::smp {

class SmpConduit final : public core::Conduit {
 public:
  const char* name() const override { return "smp"; }
  core::Capabilities capabilities() const override { return {}; }
  // Started directly (no launcher) with GASNET_PSHM_NODES=N > 1: this
  // process becomes the job's launcher, running the program N times with
  // the fork spawner, and exits with the job's code. Ranks find the
  // launcher's variables and return at once.
  void StartUp(int* argc, char*** argv) override;
  absl::Status CheckJob(const NodeMap& map) const override;
  // Reads GASNET_SMP_STATS and keeps what its line reports.
  absl::Status Init(const core::InitArgs& args) override;
  // GASNET_SMP_STATS=1: one line on stdout, "smp: rank R: peers N
  // connected_peers 0 conduit_bytes 0 supernode_peers M pshm_region_bytes
  // B" -- the field names every conduit's stats line uses; this conduit
  // allocates nothing per peer, and B is what PSHM's network maps for
  // this rank's queues and pools at this supernode size.
  void Fini() override;
  // No rank is ever reached through the conduit.
  size_t MaxMedium() const override { return 0; }
  size_t MaxLong() const override { return 0; }
  core::SendStatus Request(Rank dest, const core::Outbound&, bool) override;
  core::SendStatus Reply(void*, const core::Outbound&, bool) override;
  int Poll() override { return 0; }

 private:
  bool print_stats_ = false;
  bool printed_ = false;
  Rank rank_ = 0;
  Rank size_ = 0;
  uint32_t supernode_size_ = 0;
};

}  // namespace gexrt::smp

#endif  // GEX_CONDUIT_SMP_SMP_CONDUIT_H_
