#include "conduit/ibv/settings.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/env/settings.h"

namespace gexrt::ibv {
namespace {

constexpr uint32_t kDefaultCreditsPerPeer = 12;
// GASNET_IBV_LARGE_JOB's default: from 256 ranks a static mesh costs more
// than it saves (README.md, "Job size").
constexpr uint32_t kDefaultLargeJob = 256;
constexpr int64_t kMaxU32 = std::numeric_limits<uint32_t>::max();
// Queue depths and buffer counts beyond this are typing mistakes, not
// configurations: no HCA has queues that deep, and the buffers alone would
// be terabytes.
constexpr int64_t kMaxCount = int64_t{1} << 24;
// The most GASNET_PUTINMOVE_LIMIT may be: the payload that fits in the
// AM Medium that asks for the remote pinning.
constexpr uint64_t kMaxPutInMove = 3 << 10;
constexpr uint64_t kMinMaxMedium = 512;
constexpr uint64_t kMaxMaxMedium = 65536;
// Progress threads estimated to poll at once, for the GASNET_RBUF_SPARES
// default: the one client thread in SEQ, a guess for PAR.
constexpr uint32_t kSeqPollers = 1;
constexpr uint32_t kParPollers = 4;

#define GEX_ASSIGN_OR_RETURN(lhs, expr) \
  do {                                  \
    auto _v = (expr);                   \
    if (!_v.ok()) return _v.status();   \
    lhs = *std::move(_v);               \
  } while (0)

#define GEX_RETURN_IF_ERROR(expr)             \
  do {                                        \
    if (absl::Status _s = (expr); !_s.ok()) { \
      return _s;                              \
    }                                         \
  } while (0)

// Whether `name` is set to something other than whitespace (the getters
// treat empty as unset too).
bool IsSet(const char* name) {
  const std::optional<std::string> raw = env::GetRaw(name);
  return raw.has_value() && !absl::StripAsciiWhitespace(*raw).empty();
}

// "NAME=value" for a message, with the text as written when it differs
// from the value read ("NAME=4K (4096)").
template <typename T>
std::string Shown(const std::string& name, const T& value) {
  const std::string text = absl::StrCat(value);
  const std::optional<std::string> raw = env::GetRaw(name);
  const std::string written =
      raw.has_value() ? std::string(absl::StripAsciiWhitespace(*raw)) : "";
  if (written.empty() || written == text) return absl::StrCat(name, "=", text);
  return absl::StrCat(name, "=", written, " (", text, ")");
}

template <typename... Args>
absl::Status Invalid(const absl::FormatSpec<Args...>& format,
                     const Args&... args) {
  return absl::InvalidArgumentError(absl::StrFormat(format, args...));
}

// An integer setting in [min, max], narrowed to T (the range fits T).
template <typename T>
absl::StatusOr<T> Int(const std::string& name, int64_t default_value,
                      int64_t min, int64_t max) {
  absl::StatusOr<int64_t> v = env::TryGetInt(name, default_value, min, max);
  if (!v.ok()) return v.status();
  return static_cast<T>(*v);
}

absl::StatusOr<ThreadSettings> ReadThread(const std::string& prefix) {
  ThreadSettings t;
  GEX_ASSIGN_OR_RETURN(t.enabled, env::TryGetBool(prefix, false));
  GEX_ASSIGN_OR_RETURN(t.rate, Int<uint32_t>(prefix + "_RATE", 0, 0, kMaxU32));
  GEX_ASSIGN_OR_RETURN(t.idle_ns,
                       Int<uint64_t>(prefix + "_IDLE", 0, 0,
                                     std::numeric_limits<int64_t>::max()));
  std::string mode;
  GEX_ASSIGN_OR_RETURN(
      mode, env::TryGetChoice(
                prefix + "_POLL_MODE", "serialized",
                {"serialized", "exclusive", "concurrent", "unserialized"}));
  if (mode == "serialized") {
    t.poll_mode = PollMode::kSerialized;
  } else if (mode == "exclusive") {
    t.poll_mode = PollMode::kExclusive;
  } else {
    t.poll_mode = PollMode::kConcurrent;
  }
  const std::string load_name = prefix + "_LOAD";
  GEX_ASSIGN_OR_RETURN(t.load, env::TryGetDecimal(load_name, 0.0));
  if (t.load < 0.0 || t.load > 1.0) {
    return Invalid(
        "environment variable %s is out of range: a fraction of time from "
        "0 (no limit) to 1",
        Shown(load_name, t.load));
  }
  return t;
}

// MAX(6, 4 + 2 * ceil(log2(peers))); ceil(log2(p)) is the bit width of
// p - 1 for p >= 1.
uint32_t DefaultConnectRcvs(uint32_t remote_peers) {
  const uint32_t log2_ceil =
      remote_peers <= 1
          ? 0
          : static_cast<uint32_t>(std::bit_width(remote_peers - 1));
  return std::max<uint32_t>(6, 4 + 2 * log2_ceil);
}

absl::Status ReadPorts(const SettingsContext& context, Settings& s) {
  env::WarnIfSet("GASNET_HCA_ID", "use GASNET_IBV_PORTS to choose HCAs");
  env::WarnIfSet("GASNET_PORT_NUM", "use GASNET_IBV_PORTS to choose ports");
  GEX_ASSIGN_OR_RETURN(s.ports_variable,
                       env::TryTopologyVariant("GASNET_IBV_PORTS"));
  GEX_ASSIGN_OR_RETURN(s.ports, env::TryGetPortFilter(s.ports_variable));
  GEX_ASSIGN_OR_RETURN(
      s.ports_verbose,
      Int<uint32_t>("GASNET_IBV_PORTS_VERBOSE", 1, 0, kMaxU32));
  bool list_ports = false;
  GEX_ASSIGN_OR_RETURN(list_ports,
                       env::TryGetBool("GASNET_IBV_LIST_PORTS", false));
  // Read even when listing is off, so that a malformed list is reported.
  absl::StatusOr<env::NodeList> nodes =
      env::TryGetNodeList("GASNET_IBV_LIST_PORTS_NODES");
  if (!nodes.ok()) return nodes.status();
  s.list_ports = list_ports && nodes->Contains(context.rank);
  GEX_ASSIGN_OR_RETURN(s.num_qps,
                       Int<uint32_t>("GASNET_NUM_QPS", 0, 0, kMaxCount));
  if (IsSet("GASNET_IBV_PKEY")) {
    int64_t pkey = 0;
    GEX_ASSIGN_OR_RETURN(pkey, env::TryGetInt("GASNET_IBV_PKEY", 0, 0, 0xffff));
    // The membership bit is not part of the key.
    const int64_t key = pkey & 0x7fff;
    if (key < 2) {
      return Invalid(
          "environment variable GASNET_IBV_PKEY=%d (0x%x): a partition key "
          "is 2..0x7fff (the membership bit 0x8000 is ignored)",
          pkey, pkey);
    }
    s.pkey = static_cast<uint16_t>(key);
  }
  return absl::OkStatus();
}

absl::Status ReadJobSize(const SettingsContext& context, Settings& s) {
  GEX_ASSIGN_OR_RETURN(
      s.large_job_ranks,
      Int<uint32_t>("GASNET_IBV_LARGE_JOB", kDefaultLargeJob, 0, kMaxU32));
  s.large_job = s.large_job_ranks != 0 && context.ranks >= s.large_job_ranks;
  return absl::OkStatus();
}

absl::Status ReadConnections(const SettingsContext& context, Settings& s) {
  // A large job connects on demand, unless a connect file says which pairs
  // to connect at start-up (asking for it is asking for static ones).
  const bool static_default = !s.large_job || IsSet("GASNET_CONNECTFILE_IN");
  GEX_ASSIGN_OR_RETURN(
      s.connect_static,
      env::TryGetBool("GASNET_CONNECT_STATIC", static_default));
  GEX_ASSIGN_OR_RETURN(s.connect_dynamic,
                       env::TryGetBool("GASNET_CONNECT_DYNAMIC", true));
  GEX_ASSIGN_OR_RETURN(
      s.connect_retrans_min_us,
      Int<uint64_t>("GASNET_CONNECT_RETRANS_MIN", 1000, 1, kMaxU32));
  GEX_ASSIGN_OR_RETURN(
      s.connect_retrans_max_us,
      Int<uint64_t>("GASNET_CONNECT_RETRANS_MAX", 8000000, 1, kMaxU32));
  if (s.connect_retrans_min_us > s.connect_retrans_max_us) {
    return Invalid(
        "environment variables GASNET_CONNECT_RETRANS_MIN=%u and "
        "GASNET_CONNECT_RETRANS_MAX=%u: the first retransmission interval "
        "is above the longest (microseconds; MIN must not exceed MAX)",
        s.connect_retrans_min_us, s.connect_retrans_max_us);
  }
  GEX_ASSIGN_OR_RETURN(s.connect_snds,
                       Int<uint32_t>("GASNET_CONNECT_SNDS", 4, 1, kMaxCount));
  GEX_ASSIGN_OR_RETURN(
      s.connect_rcvs,
      Int<uint32_t>("GASNET_CONNECT_RCVS",
                    DefaultConnectRcvs(context.remote_peers), 1, kMaxCount));
  s.connectfile_in = env::GetString("GASNET_CONNECTFILE_IN", "");
  s.connectfile_out = env::GetString("GASNET_CONNECTFILE_OUT", "");
  GEX_ASSIGN_OR_RETURN(s.connectfile_base,
                       Int<uint32_t>("GASNET_CONNECTFILE_BASE", 36, 2, 36));
  GEX_ASSIGN_OR_RETURN(s.use_xrc, env::TryGetBool("GASNET_USE_XRC", true));
  GEX_ASSIGN_OR_RETURN(s.qp_timeout,
                       Int<uint8_t>("GASNET_QP_TIMEOUT", 18, 0, 31));
  GEX_ASSIGN_OR_RETURN(s.qp_retry_count,
                       Int<uint8_t>("GASNET_QP_RETRY_COUNT", 7, 0, 7));
  GEX_ASSIGN_OR_RETURN(s.qp_rd_atom,
                       Int<uint32_t>("GASNET_QP_RD_ATOM", 0, 0, 255));
  int64_t mtu = 0;
  GEX_ASSIGN_OR_RETURN(mtu, env::TryGetInt("GASNET_MAX_MTU", 0));
  switch (mtu) {
    case -1:
      s.max_mtu_active = true;
      s.max_mtu = 0;
      break;
    case 0:
    case 256:
    case 512:
    case 1024:
    case 2048:
    case 4096:
      s.max_mtu = static_cast<uint32_t>(mtu);
      break;
    default:
      return Invalid(
          "environment variable GASNET_MAX_MTU=%d is not an IB MTU: expected "
          "0 (automatic), -1 (the port's active MTU), 256, 512, 1024, 2048 "
          "or 4096",
          mtu);
  }
  return absl::OkStatus();
}

absl::Status ReadProgressThreads(Settings& s) {
  GEX_ASSIGN_OR_RETURN(s.rcv_thread, ReadThread("GASNET_RCV_THREAD"));
  GEX_ASSIGN_OR_RETURN(s.snd_thread, ReadThread("GASNET_SND_THREAD"));
  GEX_ASSIGN_OR_RETURN(
      s.thread_stack,
      env::TryGetSize("GASNET_THREAD_STACK_MIN", 0, env::SizeUnit::kBytes));
  GEX_ASSIGN_OR_RETURN(
      s.thread_stack_pad,
      env::TryGetSize("GASNET_THREAD_STACK_PAD", 0, env::SizeUnit::kBytes));
  return absl::OkStatus();
}

absl::Status ReadActiveMessages(const SettingsContext& context, Settings& s) {
  GEX_ASSIGN_OR_RETURN(
      s.credits,
      am::CreditConfigFromEnv(context.remote_peers, kDefaultCreditsPerPeer));

  GEX_ASSIGN_OR_RETURN(
      s.networkdepth_pp,
      Int<uint32_t>("GASNET_NETWORKDEPTH_PP", 24, 1, kMaxCount));
  GEX_ASSIGN_OR_RETURN(
      s.networkdepth_total,
      Int<uint32_t>("GASNET_NETWORKDEPTH_TOTAL", 255, 0, kMaxCount));
  if (s.networkdepth_total != 0 && s.networkdepth_total < s.networkdepth_pp) {
    return Invalid(
        "environment variables GASNET_NETWORKDEPTH_TOTAL=%u and "
        "GASNET_NETWORKDEPTH_PP=%u: the depth over all peers is below the "
        "depth to one peer (raise TOTAL, or set it to 0 for the device's "
        "limit, or lower PP)",
        s.networkdepth_total, s.networkdepth_pp);
  }

  // Receive buffers and SRQ.
  const bool rbuf_set = IsSet("GASNET_RBUF_COUNT");
  GEX_ASSIGN_OR_RETURN(s.rbuf_count,
                       Int<uint32_t>("GASNET_RBUF_COUNT", 1024, 0, kMaxCount));
  GEX_ASSIGN_OR_RETURN(s.use_srq,
                       env::TryGetInt("GASNET_USE_SRQ", -1, -1, kMaxU32));
  const uint64_t needed = ReceiveBuffersNeeded(s.credits, context.remote_peers);
  if (s.use_srq == -1) {
    // A large job shares one receive queue among its peers, so that
    // receive buffers do not grow with the peers connected.
    s.srq = s.large_job || (s.rbuf_count != 0 && s.rbuf_count < needed);
  } else {
    s.srq = s.use_srq != 0 && int64_t{context.ranks} >= s.use_srq;
  }
  // Without SRQ every peer gets its own buffers and the count is unused;
  // a count set below them, with SRQ turned off by GASNET_USE_SRQ, asks
  // for two things at once.
  if (!s.srq && rbuf_set && s.rbuf_count != 0 && s.rbuf_count < needed) {
    return Invalid(
        "environment variables GASNET_RBUF_COUNT=%u and GASNET_USE_SRQ=%d "
        "(no SRQ in a job of %u ranks): without SRQ, "
        "GASNET_AM_CREDITS_PP=%u (as GASNET_AM_CREDITS_TOTAL=%u leaves it) "
        "needs %u receive buffers for %u remote peers (2 per credit per "
        "peer); raise GASNET_RBUF_COUNT, lower the credits, or let "
        "GASNET_USE_SRQ enable SRQ",
        s.rbuf_count, s.use_srq, context.ranks, s.credits.per_peer,
        s.credits.total, needed, context.remote_peers);
  }

  const uint32_t pollers = (context.thread_safe ? kParPollers : kSeqPollers) +
                           (s.rcv_thread.enabled ? 1 : 0);
  uint32_t default_spares = 2 * pollers;
  if (s.rbuf_count != 0) {
    default_spares = std::min(default_spares, s.rbuf_count / 4);
  }
  GEX_ASSIGN_OR_RETURN(
      s.rbuf_spares,
      Int<uint32_t>("GASNET_RBUF_SPARES", default_spares, 0, kMaxCount));
  if (s.rbuf_count != 0 && s.rbuf_spares > s.rbuf_count) {
    return Invalid(
        "environment variables GASNET_RBUF_SPARES=%u and "
        "GASNET_RBUF_COUNT=%u: more spare receive buffers than receive "
        "buffers",
        s.rbuf_spares, s.rbuf_count);
  }

  // Send (bounce) buffers.
  GEX_ASSIGN_OR_RETURN(s.bbuf_count,
                       Int<uint32_t>("GASNET_BBUF_COUNT", 1024, 0, kMaxCount));
  if (s.bbuf_count == 1) {
    return Invalid(
        "environment variable GASNET_BBUF_COUNT=1 is too small: at least 2 "
        "(a handler run while a send waits for a buffer may need one to "
        "Reply), or 0 for GASNET_NETWORKDEPTH_TOTAL");
  }
  if (s.bbuf_count == 0) s.bbuf_count = s.networkdepth_total;
  if (s.networkdepth_total != 0) {
    s.bbuf_count = std::min(s.bbuf_count, s.networkdepth_total);
    if (s.bbuf_count < 2) {
      return Invalid(
          "environment variables GASNET_BBUF_COUNT and "
          "GASNET_NETWORKDEPTH_TOTAL=%u: the send buffers are bounded by the "
          "network depth, which leaves %u; at least 2 are needed",
          s.networkdepth_total, s.bbuf_count);
    }
  }

  GEX_ASSIGN_OR_RETURN(
      s.inlinesend_limit,
      env::TryGetInt("GASNET_INLINESEND_LIMIT", 72, -1, kMaxCount));
  GEX_ASSIGN_OR_RETURN(s.am_gather_min,
                       env::TryGetInt("GASNET_AM_GATHER_MIN", 1500, -1,
                                      std::numeric_limits<int64_t>::max()));

  uint64_t medium = 0;
  GEX_ASSIGN_OR_RETURN(medium, env::TryGetSize("GASNET_IBV_MAX_MEDIUM", 4016,
                                               env::SizeUnit::kBytes));
  if (medium < kMinMaxMedium || medium > kMaxMaxMedium) {
    return Invalid(
        "environment variable %s is out of range: "
        "%u..%u bytes (default 4016)",
        Shown("GASNET_IBV_MAX_MEDIUM", medium), kMinMaxMedium, kMaxMaxMedium);
  }
  s.max_medium = static_cast<size_t>(medium);

  s.packedlong_set = IsSet("GASNET_PACKEDLONG_LIMIT");
  uint64_t packed = 0;
  GEX_ASSIGN_OR_RETURN(packed,
                       env::TryGetSize("GASNET_PACKEDLONG_LIMIT", s.max_medium,
                                       env::SizeUnit::kBytes));
  if (packed > s.max_medium) {
    return Invalid(
        "environment variables %s and %s: a packed Long travels in one AM "
        "buffer, "
        "so its payload is at most the Medium limit",
        Shown("GASNET_PACKEDLONG_LIMIT", packed),
        Shown("GASNET_IBV_MAX_MEDIUM", s.max_medium));
  }
  s.packedlong_limit = static_cast<size_t>(packed);
  return absl::OkStatus();
}

absl::Status ReadRma(Settings& s) {
  GEX_ASSIGN_OR_RETURN(s.nonbulkput_bounce_limit,
                       env::TryGetSize("GASNET_NONBULKPUT_BOUNCE_LIMIT",
                                       64 << 10, env::SizeUnit::kBytes));
  uint64_t putinmove = 0;
  GEX_ASSIGN_OR_RETURN(putinmove,
                       env::TryGetSize("GASNET_PUTINMOVE_LIMIT", kMaxPutInMove,
                                       env::SizeUnit::kBytes));
  if (putinmove > kMaxPutInMove) {
    return Invalid(
        "environment variable %s is above the "
        "largest supported value, %u (3K)",
        Shown("GASNET_PUTINMOVE_LIMIT", putinmove), kMaxPutInMove);
  }
  s.putinmove_limit = static_cast<size_t>(putinmove);
  GEX_ASSIGN_OR_RETURN(
      s.put_stripe_sz,
      env::TryGetSize("GASNET_PUT_STRIPE_SZ", 0, env::SizeUnit::kKiB));
  GEX_ASSIGN_OR_RETURN(
      s.get_stripe_sz,
      env::TryGetSize("GASNET_GET_STRIPE_SZ", 0, env::SizeUnit::kKiB));
  GEX_ASSIGN_OR_RETURN(s.use_fenced_puts,
                       env::TryGetBool("GASNET_USE_FENCED_PUTS", false));
  return absl::OkStatus();
}

absl::Status ReadMemory(Settings& s) {
  s.physmem_max_set = IsSet("GASNET_PHYSMEM_MAX");
  GEX_ASSIGN_OR_RETURN(
      s.physmem_max,
      env::TryGetMemoryAmount("GASNET_PHYSMEM_MAX",
                              env::MemoryAmount::Fraction(2.0 / 3.0),
                              env::SizeUnit::kMiB));
  GEX_ASSIGN_OR_RETURN(s.physmem_probe, env::TryGetBool("GASNET_PHYSMEM_PROBE",
                                                        !s.physmem_max_set));
  GEX_ASSIGN_OR_RETURN(s.physmem_warn,
                       env::TryGetBool("GASNET_PHYSMEM_WARN", true));
  GEX_ASSIGN_OR_RETURN(s.maximize_memlock,
                       env::TryGetBool("GASNET_MAXIMIZE_MEMLOCK", true));
  GEX_ASSIGN_OR_RETURN(s.use_odp, env::TryGetBool("GASNET_USE_ODP", true));
  GEX_ASSIGN_OR_RETURN(
      s.odp_verbose,
      Int<int>("GASNET_ODP_VERBOSE", 1, 0, std::numeric_limits<int>::max()));
  return absl::OkStatus();
}

}  // namespace

uint64_t ReceiveBuffersNeeded(const am::CreditConfig& credits,
                              uint32_t remote_peers) {
  return 2 * uint64_t{credits.per_peer} * remote_peers;
}

absl::StatusOr<Settings> ReadSettings(const SettingsContext& context) {
  Settings s;
  // The getters report a number outside its range as OutOfRange; every
  // bad setting is InvalidArgument here, whatever the getter said.
  auto read_all = [&]() -> absl::Status {
    GEX_RETURN_IF_ERROR(ReadPorts(context, s));
    GEX_RETURN_IF_ERROR(ReadJobSize(context, s));
    GEX_RETURN_IF_ERROR(ReadConnections(context, s));
    // Before the AM settings: the receive thread counts among the pollers
    // the GASNET_RBUF_SPARES default is sized for.
    GEX_RETURN_IF_ERROR(ReadProgressThreads(s));
    GEX_RETURN_IF_ERROR(ReadActiveMessages(context, s));
    GEX_RETURN_IF_ERROR(ReadRma(s));
    GEX_RETURN_IF_ERROR(ReadMemory(s));
    GEX_ASSIGN_OR_RETURN(s.print_stats,
                         env::TryGetBool("GASNET_IBV_STATS", false));
    return absl::OkStatus();
  };
  if (absl::Status status = read_all(); !status.ok()) {
    return absl::InvalidArgumentError(status.message());
  }
  return s;
}

#undef GEX_ASSIGN_OR_RETURN
#undef GEX_RETURN_IF_ERROR

}  // namespace gexrt::ibv
