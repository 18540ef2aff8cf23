// The ibv conduit's environment settings (conduit/ibv/README.md lists them
// with their defaults, which follow the ibv-conduit README GASNet users
// know), read once at start-up and checked together, so that a bad value
// or an impossible combination is one message naming the variable(s)
// before any verbs resource exists.
//
// Firehose's settings (GASNET_FIREHOSE_*, GASNET_USE_FIREHOSE,
// GASNET_PINNED_REGIONS_MAX) are read by firehose/settings.h, and the
// credit triple (GASNET_AM_CREDITS_PP, _TOTAL, _SLACK) by am/credits.h
// with this conduit's default of 12 per peer; both are checked here against
// the buffer counts they need.
#ifndef GEX_CONDUIT_IBV_SETTINGS_H_
#define GEX_CONDUIT_IBV_SETTINGS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "am/credits.h"
#include "base/env/parse.h"

namespace gexrt::ibv {

// GASNET_RCV_THREAD_POLL_MODE / GASNET_SND_THREAD_POLL_MODE, any case:
// "serialized" (takes part in the client threads' serialization of CQ
// polls), "exclusive" (the only poller of its CQ), "concurrent" (polls
// without the serialization; GASNet's "unserialized" is read as this).
enum class PollMode { kSerialized, kExclusive, kConcurrent };

// One progress thread's settings (GASNET_RCV_THREAD* or GASNET_SND_THREAD*).
struct ThreadSettings {
  bool enabled = false;  // GASNET_RCV_THREAD (default no)
  uint32_t rate = 0;     // _RATE: wake-ups per second, 0 no limit
  uint64_t idle_ns = 0;  // _IDLE: keep polling this long when idle
  PollMode poll_mode = PollMode::kSerialized;  // _POLL_MODE
  double load = 0;  // _LOAD: fraction of time awake, 0 none
};

struct Settings {
  // --- Ports and rails.
  // GASNET_IBV_PORTS (topology family: GASNET_IBV_PORTS_TYPE selects
  // GASNET_IBV_PORTS_<n>); empty: the first active port of every device.
  std::vector<env::PortSpec> ports;
  // The variable `ports` was read from (for messages).
  std::string ports_variable = "GASNET_IBV_PORTS";
  // GASNET_IBV_LIST_PORTS (default no) and _NODES (default every rank):
  // whether this rank prints the ports it found and chose.
  bool list_ports = false;
  // GASNET_NUM_QPS: QPs to each peer (default 0: one per port used).
  uint32_t num_qps = 0;
  // GASNET_IBV_PORTS_VERBOSE (default 1; 0 silences the warnings about
  // HCAs left out for reasons other than the filter).
  uint32_t ports_verbose = 1;
  // GASNET_IBV_PKEY: the partition key, 2..0x7fff (a set membership bit
  // 0x8000 is dropped); 0 (unset): the key at table index 0.
  uint16_t pkey = 0;

  // --- Job size.
  // GASNET_IBV_LARGE_JOB (ours; default kDefaultLargeJob ranks, 0 never):
  // from this many ranks in the job the large-job defaults apply, so that
  // a rank's memory grows with the peers it talks to, not with the job:
  // GASNET_CONNECT_STATIC defaults to no (unless GASNET_CONNECTFILE_IN is
  // set) and GASNET_USE_SRQ's -1 to yes. Explicit settings still win.
  uint32_t large_job_ranks = 256;
  bool large_job = false;  // ranks >= large_job_ranks (and it is not 0)

  // --- Connections.
  bool connect_static = true;   // GASNET_CONNECT_STATIC
  bool connect_dynamic = true;  // GASNET_CONNECT_DYNAMIC
  // GASNET_CONNECT_RETRANS_MIN / _MAX, microseconds (defaults 1000 and
  // 8000000); min <= max.
  uint64_t connect_retrans_min_us = 1000;
  uint64_t connect_retrans_max_us = 8000000;
  // GASNET_CONNECT_SNDS (default 4) and _RCVS (default
  // max(6, 4 + 2 * ceil(log2(remote peers)))).
  uint32_t connect_snds = 4;
  uint32_t connect_rcvs = 6;
  // GASNET_CONNECTFILE_IN / _OUT ('%' is the rank), _BASE (2..36, 36).
  std::string connectfile_in;
  std::string connectfile_out;
  uint32_t connectfile_base = 36;
  // GASNET_USE_SRQ: -1 (default) use an SRQ in a large job
  // (GASNET_IBV_LARGE_JOB) or where it saves buffers (GASNET_RBUF_COUNT
  // below ReceiveBuffersNeeded); 0 never; n >= 1 the
  // smallest job size (ranks) from which it is used, so 1 means always.
  int64_t use_srq = -1;
  // use_srq resolved for this job: whether this rank wants an SRQ (a device
  // without SRQ support still decides against it).
  bool srq = false;
  // GASNET_USE_XRC (default yes; used only where the device has XRC).
  bool use_xrc = true;
  uint8_t qp_timeout = 18;     // GASNET_QP_TIMEOUT (0..31)
  uint8_t qp_retry_count = 7;  // GASNET_QP_RETRY_COUNT (0..7)
  uint32_t qp_rd_atom = 0;     // GASNET_QP_RD_ATOM (0: the device's max)
  uint32_t max_mtu = 0;        // GASNET_MAX_MTU (0 auto, or 256..4096)
  // GASNET_MAX_MTU=-1: the port's active MTU (max_mtu is then 0).
  bool max_mtu_active = false;

  // --- Active Messages.
  am::CreditConfig credits;       // GASNET_AM_CREDITS_PP/_TOTAL/_SLACK
  uint32_t networkdepth_pp = 24;  // GASNET_NETWORKDEPTH_PP (>= 1)
  // GASNET_NETWORKDEPTH_TOTAL: at least networkdepth_pp; 0: the most the
  // device allows.
  uint32_t networkdepth_total = 255;
  // GASNET_RBUF_COUNT (default 1024): receive buffers in all; at least
  // what the credits need (2 * credits.per_peer per peer) when it is set
  // and GASNET_USE_SRQ turns SRQ off (without SRQ the count is otherwise
  // ignored); 0: as many as the device allows.
  uint32_t rbuf_count = 1024;
  // GASNET_RBUF_SPARES: unposted receive buffers kept for reposting before
  // a Request handler runs; 0 runs the copy-out corner case. Default:
  // 2 * threads that may poll (2 in SEQ), at most rbuf_count / 4. At most
  // rbuf_count when set.
  uint32_t rbuf_spares = 2;
  // GASNET_BBUF_COUNT: send (bounce) buffers, default 1024; set 0 means
  // networkdepth_total. The result is at most networkdepth_total (more
  // could never be in flight) and at least 2 (a Reply sent from a handler
  // run while polling for a buffer needs a second one); 0 only where
  // networkdepth_total is 0 (the device decides).
  uint32_t bbuf_count = 1024;
  // GASNET_INLINESEND_LIMIT: -1 the device's limit, 0 never; default 72.
  int64_t inlinesend_limit = 72;
  // GASNET_PACKEDLONG_LIMIT: a Long up to this many bytes travels in its
  // header's message; default (and most) the Medium limit.
  // After ReadSettings: the value set, or max_medium when unset; never above
  // max_medium. packedlong_set: whether the variable was set.
  size_t packedlong_limit = 0;
  bool packedlong_set = false;
  // GASNET_AM_GATHER_MIN (default 1500; -1 never gathers).
  int64_t am_gather_min = 1500;

  // --- RMA.
  size_t nonbulkput_bounce_limit = 64 << 10;  // GASNET_NONBULKPUT_BOUNCE_LIMIT
  size_t putinmove_limit = 3 << 10;           // GASNET_PUTINMOVE_LIMIT (<=3K)
  size_t put_stripe_sz = 0;                   // GASNET_PUT_STRIPE_SZ (K units)
  size_t get_stripe_sz = 0;                   // GASNET_GET_STRIPE_SZ
  bool use_fenced_puts = false;               // GASNET_USE_FENCED_PUTS

  // --- Memory.
  // GASNET_PHYSMEM_MAX (fraction or size; default 2/3 of physical memory),
  // GASNET_PHYSMEM_PROBE (default: no when PHYSMEM_MAX is set),
  // GASNET_PHYSMEM_WARN (default yes), GASNET_MAXIMIZE_MEMLOCK (yes).
  env::MemoryAmount physmem_max;
  bool physmem_max_set = false;
  bool physmem_probe = false;
  bool physmem_warn = true;
  bool maximize_memlock = true;
  bool use_odp = true;  // GASNET_USE_ODP
  int odp_verbose = 1;  // GASNET_ODP_VERBOSE (0, 1, 2)

  // --- Progress threads.
  ThreadSettings rcv_thread;  // GASNET_RCV_THREAD*
  ThreadSettings snd_thread;  // GASNET_SND_THREAD*
  // GASNET_THREAD_STACK_MIN / _PAD family: a progress thread's stack,
  // bytes (0: the system default). thread_stack is _MIN, thread_stack_pad
  // _PAD; whoever creates the thread uses the larger of thread_stack and
  // the system default plus thread_stack_pad.
  size_t thread_stack = 0;
  size_t thread_stack_pad = 0;

  // --- Ours.
  // GASNET_IBV_STATS: each rank prints one line of counters at exit.
  bool print_stats = false;
  // GASNET_IBV_MAX_MEDIUM: the Medium payload limit and the AM buffer
  // size (512..65536, default 4016: a buffer of 4 KiB with headers).
  size_t max_medium = 4016;
};

// What the settings are checked against.
struct SettingsContext {
  uint32_t rank = 0;
  uint32_t ranks = 1;         // in the job
  uint32_t remote_peers = 0;  // ranks this rank reaches through the conduit
  bool thread_safe = false;   // PAR: more threads may poll
};

// Reads every setting above (and the credit triple), applies the
// defaults, and checks each value and the combinations: credits that need
// more receive buffers than GASNET_RBUF_COUNT gives, a network depth below
// what one AM needs, RETRANS_MIN above _MAX, and so on. An error is
// InvalidArgument naming the variable(s) and the values.
absl::StatusOr<Settings> ReadSettings(const SettingsContext& context);

// The receive buffers a rank needs without SRQ: two per credit per peer
// (its Requests, and the Replies to ours).
uint64_t ReceiveBuffersNeeded(const am::CreditConfig& credits,
                              uint32_t remote_peers);

}  // namespace gexrt::ibv

#endif  // GEX_CONDUIT_IBV_SETTINGS_H_
