// slurm_scale: the scale benchmark under Slurm (srun --mpi=pmix, the PMIx
// bootstrap) on the one-node cluster the PMIx tests start. Starts the
// cluster, runs tools/gex_scale.py with srun as the launcher, stops the
// cluster (on every path: the cluster's destructor). Rows are labelled
// CONDUIT-slurm in tests/benchmarks/scale/scale.csv.
//
//   bazel run //tests/scale:slurm_scale -- ucx 2,4,8,16,32,64,128,256
//
// Extra arguments go to `gex_scale.py run`. Not a test: minutes long.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "tests/pmix/pmix_testing.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CONDUIT SIZES [gex_scale.py options]\n",
                 argv[0]);
    return 2;
  }
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (workspace == nullptr) {
    std::fprintf(stderr, "slurm_scale: run it with bazel run\n");
    return 2;
  }
  const std::string conduit = argv[1];
  gexrt::testing::SlurmCluster cluster;
  if (absl::Status s = cluster.Start(); !s.ok()) {
    std::fprintf(stderr, "slurm_scale: no Slurm cluster: %s\n",
                 std::string(s.message()).c_str());
    return 1;
  }
  std::vector<std::string> srun = cluster.Srun(0);
  srun.resize(srun.size() - 1);  // "-n" stays; the size is gex_scale's {n}
  const std::string ws = workspace;
  std::vector<std::string> args = {
      "python3",
      ws + "/tools/gex_scale.py",
      "run",
      "--conduit",
      conduit,
      "--sizes",
      argv[2],
      "--label",
      conduit + "-slurm",
      "--bin-dir",
      ws + "/bazel-bin/tools",
      "--env",
      cluster.ConfEnv(),
      "--launcher",
      absl::StrJoin(srun, " ") + " {n}",
  };
  for (int i = 3; i < argc; ++i) args.push_back(argv[i]);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    execvp(cargs[0], cargs.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return 1;
  cluster.Stop();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
