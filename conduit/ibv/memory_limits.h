// How much memory the ibv conduit may pin, decided once at Init from the
// memory settings (conduit/ibv/settings.h; the ibv-conduit README's
// "pinnable memory probe" and ODP variables):
//
//   GASNET_MAXIMIZE_MEMLOCK  raise RLIMIT_MEMLOCK's soft limit to its hard
//                            limit first (MaximizeMemlock);
//   GASNET_PHYSMEM_MAX       an upper bound per host, a fraction of physical
//                            memory or a size (default 2/3), shared equally
//                            by the host's ranks (PlanPhysmem);
//   GASNET_PHYSMEM_PROBE     check that bound by pinning memory for real
//                            (through a Prober), and use what was found;
//   GASNET_PHYSMEM_WARN      say so when the probe found less than asked;
//   GASNET_USE_ODP           register with on-demand paging where the
//                            device supports it (ChooseOdp);
//   GASNET_ODP_VERBOSE       who says so when it does not.
//
// Nothing here prints: each result carries a `note` (or a Status) that the
// conduit prints with its other start-up messages. Usage at Init:
//
//   if (absl::Status s = MaximizeMemlock(settings.maximize_memlock); !s.ok())
//     ...  // optional message; GASNet stays silent here
//   MlockProber prober;
//   GEX_ASSIGN_OR_RETURN(PhysmemPlan plan,
//                        PlanPhysmem(settings, ranks_on_host, 0, &prober));
//   if (!plan.note.empty()) ...  // print it
//   OdpChoice odp = ChooseOdp(settings, device_attr, rank);
//   // firehose registers with its access flags | odp.access_flags, and
//   // pins at most plan.bytes.
#ifndef GEX_CONDUIT_IBV_MEMORY_LIMITS_H_
#define GEX_CONDUIT_IBV_MEMORY_LIMITS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "conduit/ibv/settings.h"
#include "conduit/ibv/verbs/types.h"

namespace gexrt::ibv {

// GASNET_MAXIMIZE_MEMLOCK: when `enabled`, sets RLIMIT_MEMLOCK's soft limit
// to its hard limit. OK when disabled, already equal, or raised; otherwise
// an error status (the errno of getrlimit/setrlimit) that is only worth a
// warning: the job can run with the limit as it is.
absl::Status MaximizeMemlock(bool enabled);

// Finds how much memory this process can really pin, up to a cap.
// Narrow so that tests substitute a fake.
class Prober {
 public:
  virtual ~Prober() = default;
  // The bytes that could be pinned at once, at most `limit`. Everything
  // the probe pinned is released before it returns.
  virtual uint64_t PinnableBytes(uint64_t limit) = 0;
};

// The real prober: mmaps anonymous memory and mlocks it, keeping each
// region that locks and halving the size of the next attempt after a
// failure (any mlock or mmap failure, EPERM and ENOMEM included, means "not
// that much more"), until `limit` is reached, the step falls below
// min_step, max_attempts regions were tried, or the deadline passes. Then
// everything is unlocked and unmapped. It never maps more than `limit` in
// all, so the cost is bounded by what was asked. The result is a multiple
// of the page size (the found amount, rounded down; `limit` itself when all
// of it locked).
class MlockProber : public Prober {
 public:
  struct Options {
    uint64_t min_step = 1 << 20;  // stop refining below this many bytes
    int max_attempts = 64;        // mmap+mlock attempts in all
    absl::Duration deadline = absl::Seconds(10);  // checked between tries
  };
  MlockProber() = default;
  explicit MlockProber(Options options) : options_(options) {}

  uint64_t PinnableBytes(uint64_t limit) override;

 private:
  Options options_;
};

// The pinnable-memory budget of one rank.
struct PhysmemPlan {
  uint64_t bytes = 0;   // firehose (and the segment) may pin at most this
  bool probed = false;  // `bytes` is what the probe found, not just asked
  std::string note;     // a warning to print, or empty
};

// This machine's physical memory: MemTotal of /proc/meminfo, else
// sysconf(_SC_PHYS_PAGES) * page size; 0 when neither is known.
uint64_t PhysicalMemoryBytes();

// The memory one rank may pin. The host's bound is GASNET_PHYSMEM_MAX
// (settings.physmem_max) resolved against `physical_bytes` (0: read with
// PhysicalMemoryBytes()), divided by `ranks_on_host` (rounded down). With
// settings.physmem_probe, `prober` (required then) is asked for that
// per-rank amount, and the plan takes what it found (each rank probes its
// own share, which RLIMIT_MEMLOCK limits per process; ranks probing
// together press the host's limits as the whole would). When it finds
// less and settings.physmem_warn is on, `note` says so, naming the
// variables and the RLIMIT_MEMLOCK soft limit.
//
// Errors (InvalidArgument): ranks_on_host 0; physical memory unknown; an
// absolute GASNET_PHYSMEM_MAX above physical memory (named in the message).
absl::StatusOr<PhysmemPlan> PlanPhysmem(const Settings& settings,
                                        uint32_t ranks_on_host,
                                        uint64_t physical_bytes,
                                        Prober* prober);

// Whether registrations use on-demand paging.
struct OdpChoice {
  bool use = false;
  // Added to firehose's registration flags: verbs::kAccessOnDemand when
  // `use`, else 0.
  uint32_t access_flags = 0;
  std::string note;  // one line to print, or empty
};

// ODP is used where settings.use_odp (GASNET_USE_ODP) is on and the device
// reports odp_supported. When it was asked for but is unsupported, `note`
// says so: from rank 0 only at GASNET_ODP_VERBOSE=1, from every rank at 2
// or more, from none at 0.
OdpChoice ChooseOdp(const Settings& settings, const verbs::DeviceAttr& attr,
                    uint32_t rank);

}  // namespace gexrt::ibv

#endif  // GEX_CONDUIT_IBV_MEMORY_LIMITS_H_
