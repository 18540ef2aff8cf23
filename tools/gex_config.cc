// gex_config: prints how this process sees its configuration through the
// base layer: host identity, CPU binding, the timer, and the GASNET_*
// settings whose syntaxes base/env parses, each with its value and whether
// it is the default.
//
// It is the first demonstration program; it grows into the full settings
// listing (every layer's table, like `ucx_info -f`) as layers arrive.
//
//   GASNET_PHYSMEM_MAX=5/8 GASNET_IBV_PORTS=mlx5_0+mlx5_1:2
//       bazel run //tools:gex_config   (one command line)
//
// A malformed value ends the program with the fatal error a conduit would
// give, naming the variable.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "base/cpu.h"
#include "base/env/parse.h"
#include "base/env/settings.h"
#include "base/env/topology.h"
#include "base/host_id.h"
#include "base/job_rank.h"
#include "base/timer.h"

namespace gexrt {
namespace {

uint64_t PhysicalMemoryBytes() {
  return static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
         static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

std::string Bytes(uint64_t bytes) {
  return absl::StrFormat("%d bytes (%s)", bytes,
                         env::MemoryAmount::Absolute(bytes).ToString());
}

void Row(std::string_view name, std::string_view value) {
  std::printf("  %-30.*s %.*s\n", static_cast<int>(name.size()), name.data(),
              static_cast<int>(value.size()), value.data());
}

std::string Bound(env::TopologyLevel level) {
  std::optional<int> index = env::BoundObjectIndex(level);
  return index.has_value() ? absl::StrFormat("%d", *index) : "(not bound)";
}

int Main() {
  // A single process is rank 0 of its own job: this also lets
  // GASNET_VERBOSEENV print.
  SetJobRank(0);
  env::WarnUnsupportedVariables();

  std::printf("host\n");
  Row("hostname", Hostname());
  Row("host id (GASNET_HOST_DETECT)", absl::StrFormat("0x%016x", HostId()));
  Row("CPUs this process may use", absl::StrFormat("%d", OnlineCpuCount()));
  Row("bound within socket", Bound(env::TopologyLevel::kSocket));
  Row("bound within NUMA node", Bound(env::TopologyLevel::kNumaNode));
  Row("physical memory", Bytes(PhysicalMemoryBytes()));

  std::printf("timer\n");
  Row("source", TickSourceName());
  Row("granularity", absl::StrFormat("%.1f ns", TickGranularityNs()));
  Row("overhead", absl::StrFormat("%.1f ns", TickOverheadNs()));

  // Settings in each syntax, with the defaults the seeds document.
  std::printf("settings\n");
  const env::MemoryAmount physmem = env::GetMemoryAmount(
      "GASNET_PHYSMEM_MAX", env::MemoryAmount::Fraction(2.0 / 3.0),
      env::SizeUnit::kMiB);
  Row("GASNET_PHYSMEM_MAX",
      absl::StrFormat("%s -> %s", physmem.ToString(),
                      Bytes(physmem.Resolve(PhysicalMemoryBytes()))));
  Row("GASNET_FIREHOSE_M",
      Bytes(env::GetSize("GASNET_FIREHOSE_M", 0, env::SizeUnit::kMiB)));
  Row("GASNET_PUT_STRIPE_SZ",
      Bytes(env::GetSize("GASNET_PUT_STRIPE_SZ", 0, env::SizeUnit::kKiB)));
  Row("GASNET_SUPERNODE_MAXSIZE",
      absl::StrFormat(
          "%d", env::GetInt("GASNET_SUPERNODE_MAXSIZE", 0, 0, INT32_MAX)));
  Row("GASNET_IBV_LIST_PORTS_NODES",
      env::GetNodeList("GASNET_IBV_LIST_PORTS_NODES").ToString());
  const std::string ports_var = env::TopologyVariant("GASNET_IBV_PORTS");
  const std::vector<env::PortSpec> ports = env::GetPortFilter(ports_var);
  const std::string ports_text =
      ports.empty() ? "(no filter)" : env::PortFilterToString(ports);
  Row("GASNET_IBV_PORTS",
      absl::StrFormat("%s   (read from %s)", ports_text, ports_var));
  Row("GASNET_BACKTRACE",
      env::GetBool("GASNET_BACKTRACE", false) ? "yes" : "no");
  Row("GASNET_VERBOSEENV", env::VerboseEnv() ? "yes" : "no");
  return 0;
}

}  // namespace
}  // namespace gexrt

int main() { return gexrt::Main(); }
