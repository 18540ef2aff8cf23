// The Bootstrap of a rank started by a PMIx server: Slurm's
// `srun --mpi=pmix`, Open MPI's `mpirun`, or gasnetrun_<conduit>
// -spawner=pmi, which hands the job to one of them.
//
// Rank and size come from PMIx (the namespace's rank and PMIX_JOB_SIZE).
// The collectives map onto PMIx's key-value exchange:
//   Barrier    a fence that moves no data;
//   Allgather  put, commit, a fence with PMIX_COLLECT_DATA, then a local
//              get per rank;
//   Alltoall   each rank puts one key per destination, commit, a collecting
//              fence, then a local get of its own block from each rank;
//   Broadcast  the root alone puts, commit, a collecting fence (only the
//              root's value travels), then a local get;
//   Abort      PMIx_Abort (the server ends every rank), Fini PMIx_Finalize.
// Only the barrier can do without PMIX_COLLECT_DATA: fetching on demand
// (direct modex) after a plain fence does not work for the data
// collectives, because a PMIx client caches a rank's data after the first
// fetch and does not see what that rank puts later (PMIx 4.2 under mpirun
// answers NOT-FOUND, even with PMIX_GET_REFRESH_CACHE).
// Every contribution carries its collective's sequence number, kind and
// length, so a rank that calls a different collective, or passes another
// length, is a fatal error naming it.
//
// While a collective waits, the wait hook (bootstrap.h, SetWaitHook) runs
// every millisecond on the calling thread: PMIx's non-blocking calls
// complete on its own progress thread, so the wait can be sliced.
//
// Every wait (PMIx_Init included; PMIx_Finalize is bounded by the exit
// path's GASNET_EXITTIMEOUT alarm instead) is bounded by
// GASNET_BOOTSTRAP_TIMEOUT:
// a fence that does not complete is a fatal error naming the fence and the
// launcher (PMIx cannot say which rank is missing); a get that does not
// answer names the rank whose data did not come.
//
// The exit protocol (exit/) runs over Active Messages; RequestJobExit
// returns false (a PMIx server has no "end the job with this code" that
// would reach ranks still running without killing them). A rank that
// exits without a coordinated exit skips PMIx_Finalize, which PMIx servers
// take as a failure: the job ends nonzero, as it should.
//
// A rank's death: neither mpirun (Open MPI 4.1) nor srun tells the others
// through a PMIx event; their daemon (the ranks' parent: mpirun, orted,
// slurmstepd) sends SIGCONT and SIGTERM, mpirun SIGKILL a second later.
// Once exit/'s handlers are in place (ExitReady), SIGTERM, SIGINT and
// SIGHUP from the parent become the launcher's decision with "a rank was
// lost" (bootstrap/exit_signal.h): the rank exits with 128 + signal at
// once, skipping the exit protocol's waits for the dead rank and
// PMIx_Finalize (mpirun's server does not answer while it waits to send
// SIGKILL). The same signals from anyone else reach exit/'s handler
// unchanged; a client's own handler (installed before the bootstrap
// started) is never wrapped. Each rank dies with its parent
// (PR_SET_PDEATHSIG), and under gasnetrun -spawner=pmi records its pid
// for gasnetrun (pmix_bootstrap_pids.h).
//
// The node map (bootstrap/node_map.h, DiscoverNodeMap) follows PMIx's
// nodes: PMIX_NODEID (else PMIX_HOSTNAME) names this rank's node, and
// ranks of one node form one host of the map. It is cross-checked against
// our host identity (GASNET_HOST_DETECT): two ranks PMIx places on one
// node with different host ids is a fatal error naming them; ranks of
// different PMIx nodes on one machine (Slurm with two slurmd on one host,
// mpirun --host a:2,b:2 through a local remote-shell agent) are different
// hosts of the map and do not share memory.
#ifndef GEX_BOOTSTRAP_PMIX_BOOTSTRAP_H_
#define GEX_BOOTSTRAP_PMIX_BOOTSTRAP_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/node_map.h"

namespace gexrt {

// What PMIx says about this rank's node (after PmixBootstrap::Create).
struct PmixNodeInfo {
  std::string hostname;           // PMIX_HOSTNAME; empty when not given.
  bool has_node_id = false;       // Whether PMIx gave PMIX_NODEID.
  uint32_t node_id = 0;           // PMIX_NODEID.
  uint32_t local_rank = 0;        // PMIX_LOCAL_RANK.
  uint32_t local_size = 0;        // PMIX_LOCAL_SIZE.
  std::vector<Rank> local_peers;  // PMIX_LOCAL_PEERS, ascending.
};

struct PmixPending;  // One outstanding non-blocking PMIx call.

class PmixBootstrap final : public Bootstrap, public LauncherNodeSource {
 public:
  // Whether a PMIx server started this process (PMIX_RANK or
  // PMIX_NAMESPACE in the environment).
  static bool Present();

  // PMIx_Init and the job's facts. Fails (with a message saying how the
  // program should be started) when no PMIx server answers. Sets the job
  // rank (base/job_rank.h) and installs a fatal-error hook that ends the
  // whole job through PMIx_Abort.
  static absl::StatusOr<std::unique_ptr<PmixBootstrap>> Create();

  ~PmixBootstrap() override;

  Rank rank() const override { return rank_; }
  Rank size() const override { return size_; }
  void Barrier() override;
  void Allgather(const void* src, size_t len, void* dst) override;
  void Alltoall(const void* src, size_t len, void* dst) override;
  void Broadcast(const void* src, size_t len, void* dst, Rank root) override;
  [[noreturn]] void Abort(int exit_code, std::string_view reason) override;
  // exit/'s handlers are in place: SIGTERM, SIGINT and SIGHUP from this
  // rank's parent (the launcher's daemon) become the launcher's decision
  // with "a rank was lost" (see the header comment).
  void ExitReady() override;
  void Fini() override;

  const PmixNodeInfo& node_info() const { return node_; }
  // "srun", "mpirun" or "the PMIx launcher", for messages.
  const std::string& launcher_name() const { return launcher_; }

  // LauncherNodeSource: PMIX_NODEID, else a hash of PMIX_HOSTNAME.
  std::optional<uint64_t> LauncherNodeId() const override;
  std::string LauncherNodeName() const override { return node_.hostname; }
  std::string LauncherName() const override { return launcher_; }

  // The fatal-error hook's work: PMIx_Abort with code 1 (the server kills
  // every rank), best effort.
  void AbortFromFatal();

 private:
  PmixBootstrap() = default;

  // Waits for a non-blocking PMIx call until `deadline`, running the wait
  // hook (SetWaitHook) every millisecond meanwhile; false when it ran out.
  bool Wait(PmixPending* p, absl::Time deadline) const;
  // Puts `value` under `key` (PMIX_GLOBAL) and commits.
  void PutCommit(std::string_view call, const std::string& key,
                 std::string value);
  // A fence over the whole namespace, bounded by timeout_.
  void Fence(std::string_view call, uint32_t seq, bool collect);
  // Rank `peer`'s value of `key`, bounded by timeout_.
  std::string Get(std::string_view call, uint32_t seq, Rank peer,
                  const std::string& key);
  // Strips and checks the header of rank `peer`'s contribution.
  std::string_view Payload(std::string_view call, uint32_t seq, Rank peer,
                           std::string_view blob, uint8_t op,
                           uint64_t len) const;
  std::string Header(uint32_t seq, uint8_t op, uint64_t len) const;
  void CheckOpen(std::string_view call) const;

  std::string nspace_;
  Rank rank_ = 0;
  Rank size_ = 1;
  absl::Duration timeout_;
  std::string launcher_;
  PmixNodeInfo node_;
  uint32_t next_seq_ = 0;
  bool finalized_ = false;
};

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_PMIX_BOOTSTRAP_H_
