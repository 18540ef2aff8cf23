// gasnetrun_ibv: starts a job of the ibv conduit. Everything is in the
// shared launcher (bootstrap/spawn/launcher.h), as for gasnetrun_smp. The
// default spawner is ssh when a host list is configured (GASNET_SSH_SERVERS,
// GASNET_SSH_NODEFILE or a batch system's node file), else fork: a job on
// this host alone needs no remote shell. -spawner= or GASNET_IBV_SPAWNER
// choose otherwise. When the ranks are gone, the launcher removes what a
// killed rank left behind: PSHM objects, and the software verbs device's
// shared memory (conduit/ibv/verbs/README.md).
#include <sys/types.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/types/span.h"
#include "bootstrap/spawn/host_list.h"
#include "bootstrap/spawn/launcher.h"
#include "conduit/ibv/verbs/soft_device.h"
#include "pshm/shared_object.h"

namespace {

// The software device's key is the job's PSHM prefix: the job id's letters
// and digits (pshm::AgreeJobPrefix, at most 47 of them).
int RemoveJobObjectsAndSoftDevice(std::string_view job_id,
                                  absl::Span<const pid_t> rank_pids) {
  int removed = gexrt::pshm::RemoveJobObjects(job_id, rank_pids);
  std::string key;
  for (char c : job_id) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c))) key.push_back(c);
  }
  key.resize(std::min<size_t>(key.size(), 47));
  if (!key.empty() && gexrt::ibv::verbs::RemoveSoftDevice(key).ok()) {
    // (RemoveSoftDevice does not say how many it removed.)
  }
  return removed;
}

}  // namespace

int main(int argc, char** argv) {
  const bool have_hosts =
      gexrt::spawn::HostListFromEnvironment(&std::getenv).ok();
  return gexrt::spawn::GasnetrunMain(
      argc, argv,
      {.conduit = "ibv",
       .default_spawner = have_hosts ? gexrt::spawn::SpawnerKind::kSsh
                                     : gexrt::spawn::SpawnerKind::kFork,
       .cleanup = RemoveJobObjectsAndSoftDevice});
}
