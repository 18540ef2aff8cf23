// Bootstrap timing (not a test: it asserts nothing, and is tagged manual):
// init to first barrier at 1, 2, 4 and 8 ranks under our fork spawner
// (gasnetrun_smp), mpirun, srun on one node of a two-node Slurm cluster it
// starts, and across two nodes (srun -N 2; mpirun over two emulated hosts,
// "mpirun2h"), all in one run, so the figures compare. Five jobs per cell;
// prints the median of the slowest rank's time and of the whole job's wall
// time.
//
//   bazel test //tests/pmix:bootstrap_timing --test_output=all
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/pmix/pmix_testing.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

constexpr int kTrials = 5;

long long Field(const std::string& text, const std::string& key) {
  const size_t at = text.find(key + "=");
  if (at == std::string::npos) return -1;
  return std::atoll(text.c_str() + at + key.size() + 1);
}

double Median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST(BootstrapTiming, InitToFirstBarrier) {
  SlurmCluster cluster;
  const absl::Status slurm = cluster.Start(/*nodes=*/2);
  char agent_dir[] = "/tmp/gexmpi.XXXXXX";
  const bool have_agent_dir = mkdtemp(agent_dir) != nullptr;
  if (!slurm.ok())
    std::printf("srun column skipped: %s\n",
                std::string(slurm.message()).c_str());
  const std::string client = Runfile("tests/pmix/bootstrap_timing_client");
  std::printf("%-8s %5s %16s %16s\n", "launcher", "ranks", "bootstrap ms",
              "job wall ms");
  for (int n : {1, 2, 4, 8}) {
    for (const std::string kind :
         {"fork", "mpirun", "srun", "mpirun2h", "srun-N2"}) {
      PmixJobSpec spec;
      spec.program = client;
      spec.env = MpirunEnv();
      if (kind == "fork") {
        spec.launcher = {Runfile("tools/gasnetrun_smp"), "-n", absl::StrCat(n)};
      } else if (kind == "mpirun") {
        spec.launcher = MpirunLauncher(n);
      } else if (kind == "mpirun2h") {
        if (n < 2 || !have_agent_dir) continue;
        spec.launcher = MpirunTwoHostsLauncher(n, agent_dir);
      } else {
        if (!slurm.ok()) continue;
        if (kind == "srun") {
          spec.launcher = cluster.Srun(n);
          spec.launcher.insert(spec.launcher.end() - 2, {"-N", "1"});
        } else {
          if (n < 2) continue;
          spec.launcher = cluster.SrunAcrossNodes(n);
        }
        spec.env.push_back(cluster.ConfEnv());
      }
      if (spec.launcher.empty()) continue;
      std::vector<double> boot, wall;
      for (int t = 0; t < kTrials; ++t) {
        const absl::Time start = absl::Now();
        PmixJobResult r = RunPmixJob(spec);
        const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
        const long long us = Field(r.out, "max_us");
        if (r.exit_code != 0 || us < 0) {
          ADD_FAILURE() << r.command << " failed: " << r.err;
          continue;
        }
        boot.push_back(us / 1000.0);
        wall.push_back(ms);
      }
      std::printf("%-8s %5d %16.1f %16.1f\n", kind.c_str(), n, Median(boot),
                  Median(wall));
      std::fflush(stdout);
    }
  }
  if (have_agent_dir) RemoveTree(agent_dir);
}

}  // namespace
}  // namespace gexrt::testing
