#include "core/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/cpu.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "base/string_view.h"
#include "bootstrap/create_bootstrap.h"
#include "core/dispatch.h"
#include "pshm/queue_layout.h"

namespace gexrt::core {
namespace {

// A send that waits for room polls every transport, not only its own: a
// rank waiting on the conduit may be the one a supernode peer waits for
// through PSHM, and the other way round.

// InitArgs::others: the PSHM network, for the conduit's waits.
int PollShared(void* context, bool replies_only) {
  pshm::AmNetwork& net = *static_cast<Runtime*>(context)->net;
  return replies_only ? net.PollReplies() : net.Poll();
}

// pshm's OtherPoll: the conduit, for PSHM's request waits.
int PollConduit(void* context) {
  return static_cast<Runtime*>(context)->conduit->Poll();
}

// "the ucx conduit: <message>", without a second "ucx conduit: " where
// the conduit's message names itself already.
std::string FromTheConduit(const Runtime& rt, std::string_view message) {
  const std::string own = std::string(rt.conduit->name()) + " conduit: ";
  if (message.starts_with(own)) message.remove_prefix(own.size());
  return "the " + own + std::string(message);
}

// Microseconds since `start`, for GASNET_STARTUP_TIMES.
int64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

void Init(Runtime& rt, InitOptions options, const char* call) {
  rt.conduit = std::move(options.conduit);
  if (rt.conduit == nullptr) FatalErrorF("%s: no conduit", call);
  rt.conduit->StartUp(options.argc, options.argv);

  rt.thread_safe = options.thread_safe;
  rt.startup_times.report = env::GetBool("GASNET_STARTUP_TIMES", false);
  auto phase_start = std::chrono::steady_clock::now();
  rt.bootstrap = CreateBootstrap();
  rt.rank = rt.bootstrap->rank();
  rt.size = rt.bootstrap->size();
  rt.map.emplace(DiscoverNodeMap(*rt.bootstrap));
  if (const absl::Status s = rt.conduit->CheckJob(*rt.map); !s.ok()) {
    // Every rank sees the same map, so every rank stops here.
    FatalErrorF("%s: %s", call, s.message());
  }
  // Every rank on this machine competes for its CPUs, a launcher's other
  // nodes on the same kernel included.
  rt.waits.Configure(static_cast<int>(rt.map->ranks_on_my_machine()),
                     OnlineCpuCount(), rt.thread_safe);
  // The same rule as MyHostIsOversubscribed (more ranks here than CPUs).
  rt.polite = rt.waits.always_yield();
  rt.conduit_has_peers = rt.map->my_supernode_members().size() < rt.size;
  rt.startup_times.bootstrap_us = MicrosSince(phase_start);
  phase_start = std::chrono::steady_clock::now();

  pshm::Supernode::Options sn;
  sn.dispatcher = &DispatchShared;
  sn.context = &rt;
  // Only when the conduit has peers: smp's waits poll PSHM alone.
  if (rt.conduit_has_peers) sn.other_poll = &PollConduit;
  sn.thread_safe = rt.thread_safe;
  sn.wait_policy = &rt.waits;
  auto supernode = pshm::Supernode::Create(*rt.bootstrap, *rt.map, sn);
  if (!supernode.ok())
    FatalErrorF("%s: %s", call, supernode.status().message());
  rt.supernode = *std::move(supernode);
  rt.net = &rt.supernode->network();
  rt.startup_times.pshm_us = MicrosSince(phase_start);
  phase_start = std::chrono::steady_clock::now();

  rt.capabilities = rt.conduit->capabilities();
  InitArgs args;
  args.bootstrap = rt.bootstrap.get();
  args.map = &*rt.map;
  args.thread_safe = rt.thread_safe;
  args.polite = rt.polite;
  args.waits = &rt.waits;
  args.sink = Sink{&DispatchConduit, &rt};
  args.others = OtherProgress{&PollShared, &rt};
  if (const absl::Status s = rt.conduit->Init(args); !s.ok()) {
    FatalErrorF("%s: %s", call, FromTheConduit(rt, ToStd(s.message())));
  }
  rt.startup_times.conduit_us = MicrosSince(phase_start);
  if (rt.conduit_has_peers) {
    rt.bootstrap->SetWaitHook(
        [](void* context) {
          static_cast<Runtime*>(context)->conduit->ProgressSends();
        },
        &rt);
  }
  rt.max_medium = kSharedMaxPayload;
  rt.max_long = kSharedMaxPayload;
  if (rt.conduit_has_peers) {
    rt.max_medium = std::min(rt.max_medium, rt.conduit->MaxMedium());
    rt.max_long = std::min(rt.max_long, rt.conduit->MaxLong());
  }
}

absl::Status AttachSegment(Runtime& rt, size_t size) {
  const auto attach_start = std::chrono::steady_clock::now();
  std::vector<pshm::Supernode::Segment> job;
  if (absl::Status s = rt.supernode->AttachSegment(*rt.bootstrap, size, &job);
      !s.ok()) {
    return s;
  }
  std::vector<rma::SegmentEntry> entries(job.size());
  for (Rank r = 0; r < job.size(); ++r) {
    entries[r].base = job[r].base;
    entries[r].size = job[r].size;
    if (job[r].size != 0) {
      entries[r].local = static_cast<unsigned char*>(
          rt.supernode->Translate(r, job[r].base, job[r].size));
    }
  }
  const rma::SegmentEntry mine = entries[rt.rank];
  // Every rank registers, even one with no segment: the conduit's
  // exchange is collective.
  const absl::Status registered = rt.conduit->AttachSegment(
      mine.size == 0 ? nullptr : mine.local, mine.size);
  if (!registered.ok()) {
    return absl::Status(registered.code(),
                        FromTheConduit(rt, ToStd(registered.message())));
  }
  rt.conduit_segments = true;
  rt.segments.Fill(std::move(entries));
  if (rt.startup_times.report) {
    const Runtime::StartupTimes& t = rt.startup_times;
    std::printf(
        "startup: rank %u: bootstrap_us %lld pshm_us %lld conduit_us %lld "
        "attach_us %lld\n",
        rt.rank, static_cast<long long>(t.bootstrap_us),
        static_cast<long long>(t.pshm_us), static_cast<long long>(t.conduit_us),
        static_cast<long long>(MicrosSince(attach_start)));
    std::fflush(stdout);
  }
  return absl::OkStatus();
}

}  // namespace gexrt::core
