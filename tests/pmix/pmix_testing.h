// Running jobs under real PMIx launchers from a test, and the one-node
// Slurm cluster those tests start themselves.
//
// Ranks under srun are not children of the test (slurmd starts them through
// slurmstepd), so "no rank survives" is judged by command line: every
// process whose command line holds the job's program path must be gone
// within a bound once the launcher has exited (a bounded poll, then the
// leftovers are named and killed).
//
//   SlurmCluster cluster;
//   if (absl::Status s = cluster.Start(); !s.ok()) GTEST_SKIP() << s;
//   PmixJobResult r = RunPmixJob({cluster.Srun(4), program, {"args"}});
//   cluster.Stop();  // also done by the destructor
#ifndef GEX_TESTS_PMIX_PMIX_TESTING_H_
#define GEX_TESTS_PMIX_PMIX_TESTING_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gexrt::testing {

// The full path of `name` on PATH, or "" when it is not installed.
std::string FindProgram(const std::string& name);

struct PmixJobSpec {
  // The launcher's words before the program ("mpirun", "-n", "4", ...).
  std::vector<std::string> launcher;
  std::string program;  // An absolute path.
  std::vector<std::string> args;
  // "NAME=value" added to the test's environment ("NAME" alone unsets it;
  // a later entry for a name wins).
  std::vector<std::string> env;
  absl::Duration limit = absl::Seconds(40);
};

struct PmixJobResult {
  int exit_code = -1;  // The launcher's, or 128+signal.
  std::string out, err;
  // Processes running `program` still alive 20 s after the launcher
  // exited ("pid cmdline"); killed before return.
  std::vector<std::string> survivors;
  // The ranks that were still running when the launcher returned ("rank
  // R pid P"), by the pids they printed ("rank R: job=... pid=P", as
  // exit_client does): checked as soon as the launcher has been waited
  // for. A process already in its exit (the kernel's PF_EXITING) or with
  // SIGKILL pending runs no more code of its own and does not count; a
  // process gone by the time it is read does not either (its pid, if
  // reused, no longer runs `program`).
  std::vector<std::string> alive_at_return;
  std::string command;
};

// Runs the launcher with the program; a launcher that outlives `limit` is
// killed (and the job fails).
PmixJobResult RunPmixJob(const PmixJobSpec& spec);

// Of `pids`, those still running `program` and code of their own (as
// PmixJobResult::alive_at_return judges), as "pid P".
std::vector<std::string> RanksRunning(const std::vector<pid_t>& pids,
                                      const std::string& program);

// "mpirun --allow-run-as-root --oversubscribe -n <n>" (Open MPI 4.1: root
// is allowed, and more ranks than CPUs), or empty when mpirun is missing.
std::vector<std::string> MpirunLauncher(int n);

// Environment every mpirun job gets: the hash data store (the default one
// prints a harmless error here), and a short TMPDIR (the PMIx server's
// socket lives there; Bazel's is too long for a socket path).
std::vector<std::string> MpirunEnv();

// "mpirun ... -n <n> --host a:<n/2>,b:<n-n/2>" with a remote-shell agent
// that drops the host name and runs the command here: two hosts to Open MPI
// and to PMIx (ranks 0..n/2-1 on 'a'), one kernel. The agent and each
// host's TMPDIR (dir/a, dir/b: the daemons' session directories and PMIx
// sockets) live under `dir`, which must be short (a socket path) and is
// the caller's to remove (RemoveTree). Empty when mpirun is missing or the
// agent cannot be written.
std::vector<std::string> MpirunTwoHostsLauncher(int n, const std::string& dir);

// Removes `dir` and everything under it (best effort).
void RemoveTree(const std::string& dir);

// "GEX_JOB_ID=<id>" for a job whose shared-memory objects the test wants to
// find afterwards (/dev/shm/GASNT<id>.*): PMIx launchers set no job id of
// ours, so the test picks one.
std::string NewTestJobId();

// A Slurm cluster of one or two nodes on this machine: munged, slurmctld
// and one slurmd per node in the foreground, each with a private socket,
// port, state and log under a temporary directory, started by pid and
// stopped by pid (SIGTERM, then SIGKILL after a bound); each also dies with
// the test process (PR_SET_PDEATHSIG). Two nodes are two slurmd (-N gexn1,
// -N gexn2) on distinct loopback ports with their own spool and TmpFS
// directories (%n): to srun and to PMIx they are two hosts, though both
// run on this kernel.
class SlurmCluster {
 public:
  SlurmCluster() = default;
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;
  ~SlurmCluster() { Stop(); }

  // Starts the daemons for `nodes` nodes (1 or 2) and waits (bounded) for
  // every node to be idle. An error says which daemon could not start and
  // why (its log's tail): the caller skips.
  absl::Status Start(int nodes = 1);
  // Stops every daemon it started and waits for the job steps' slurmstepd
  // processes to end. Idempotent.
  void Stop();

  // "srun --mpi=pmix -K1 -O -n <n>" (-K1: a failed rank ends the step;
  // -O: more ranks than CPUs).
  std::vector<std::string> Srun(int n) const;
  // Srun(n) spread over every node of the cluster ("-N <nodes>"): srun's
  // block distribution puts ranks 0..n/nodes-1 on the first node.
  std::vector<std::string> SrunAcrossNodes(int n) const;
  // The node names, in order ("gexnode"; or "gexn1", "gexn2").
  const std::vector<std::string>& nodes() const { return nodes_; }
  // SLURM_CONF=<the cluster's slurm.conf>, for srun and friends.
  std::string ConfEnv() const;
  const std::string& dir() const { return dir_; }

 private:
  absl::Status StartDaemon(const std::string& name,
                           const std::vector<std::string>& argv);
  absl::Status WaitForIdleNode();
  std::string LogTail(const std::string& name) const;

  std::string dir_;
  std::string conf_;
  std::vector<std::string> nodes_;
  std::vector<std::pair<std::string, pid_t>> daemons_;  // Start order.
};

}  // namespace gexrt::testing

#endif  // GEX_TESTS_PMIX_PMIX_TESTING_H_
