#include "conduit/smp/smp_conduit.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "bootstrap/launcher_bootstrap.h"
#include "bootstrap/spawn/launcher.h"
#include "pshm/am_network.h"
#include "pshm/queue_config.h"
#include "pshm/shared_object.h"

namespace gexrt {
namespace smp {
namespace {

// The program's arguments after argv[0], from `argv` when init was given
// them, else from the kernel.
std::vector<std::string> ProgramArguments(int* argc, char*** argv) {
  std::vector<std::string> args;
  if (argc != nullptr && argv != nullptr && *argv != nullptr) {
    for (int i = 1; i < *argc; ++i) args.emplace_back((*argv)[i]);
    return args;
  }
  FILE* f = std::fopen("/proc/self/cmdline", "r");
  std::string all;
  if (f != nullptr) {
    char buf[4096];
    size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) all.append(buf, got);
    std::fclose(f);
  }
  size_t pos = all.find('\0');  // Skip argv[0].
  while (pos != std::string::npos && pos + 1 < all.size()) {
    const size_t end = all.find('\0', pos + 1);
    args.push_back(all.substr(pos + 1, end - pos - 1));
    pos = end;
  }
  return args;
}

}  // namespace

void SmpConduit::StartUp(int* argc, char*** argv) {
  if (LauncherBootstrap::Present() || std::getenv("PMIX_RANK") != nullptr) {
    return;
  }
  const int64_t nodes = env::GetInt("GASNET_PSHM_NODES", 1, 1, 1 << 20);
  if (nodes <= 1) return;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    FatalError(
        "GASNET_PSHM_NODES: cannot find this program (/proc/self/exe) to "
        "start its ranks");
  }
  exe[n] = '\0';
  std::vector<std::string> args = {absl::StrFormat("gasnetrun_%s", name()),
                                   "-n", std::to_string(nodes), "--", exe};
  for (std::string& a : ProgramArguments(argc, argv)) {
    args.push_back(std::move(a));
  }
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  spawn::ConduitLauncher launcher;
  launcher.conduit = name();
  launcher.cleanup = &pshm::RemoveJobObjects;
  std::fflush(nullptr);
  std::exit(spawn::GasnetrunMain(static_cast<int>(cargs.size() - 1),
                                 cargs.data(), launcher));
}

absl::Status SmpConduit::CheckJob(const NodeMap& map) const {
  if (map.supernode_count() == 1) return absl::OkStatus();
  const char* max = std::getenv("GASNET_SUPERNODE_MAXSIZE");
  return absl::FailedPreconditionError(absl::StrFormat(
      "the smp conduit reaches other ranks only through shared memory, so "
      "every rank must be in one supernode; this job has %u host(s) and %u "
      "supernode(s)%s",
      map.host_count(), map.supernode_count(),
      max != nullptr
          ? absl::StrFormat(" (GASNET_SUPERNODE_MAXSIZE=%s splits the host)",
                            max)
          : std::string()));
}

absl::Status SmpConduit::Init(const core::InitArgs& args) {
  print_stats_ = env::GetBool("GASNET_SMP_STATS", false);
  rank_ = args.map->my_rank();
  size_ = args.map->size();
  supernode_size_ =
      static_cast<uint32_t>(args.map->my_supernode_members().size());
  return absl::OkStatus();
}

void SmpConduit::Fini() {
  if (!print_stats_ || printed_) return;
  printed_ = true;
  // The same sizing PSHM's supernode used at start-up (its settings were
  // checked there, so they read cleanly here).
  const absl::StatusOr<pshm::QueueConfig> config = pshm::QueueConfigFromEnv();
  const size_t region =
      config.ok() ? pshm::AmNetwork::RegionBytes(*config, supernode_size_) : 0;
  std::printf(
      "smp: rank %u: peers %u connected_peers 0 conduit_bytes 0 "
      "supernode_peers %u pshm_region_bytes %zu\n",
      rank_, size_ > 0 ? size_ - 1 : 0,
      supernode_size_ > 0 ? supernode_size_ - 1 : 0, region);
  std::fflush(stdout);
}

core::SendStatus SmpConduit::Request(Rank dest, const core::Outbound&, bool) {
  FatalErrorF("smp: rank %u is outside this rank's supernode", dest);
}

core::SendStatus SmpConduit::Reply(void*, const core::Outbound&, bool) {
  FatalError("smp: a reply through a conduit that carries no traffic");
}

}  // namespace smp

std::unique_ptr<core::Conduit> core::CreateConduit() {
  return std::make_unique<smp::SmpConduit>();
}

}  // namespace gexrt
