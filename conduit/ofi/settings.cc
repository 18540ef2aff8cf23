#include "conduit/ofi/settings.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "base/env/settings.h"

namespace gexrt::ofi {
namespace {

constexpr int64_t kMaxCount = int64_t{1} << 24;
constexpr int64_t kInitialSendBuffs = 32;

// A size setting with a floor, as a status.
absl::StatusOr<size_t> Size(const char* name, size_t default_bytes,
                            size_t min) {
  absl::StatusOr<uint64_t> v =
      env::TryGetSize(name, default_bytes, env::SizeUnit::kBytes);
  if (!v.ok()) return v.status();
  if (*v < min) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "environment variable %s=%u is too small: at least %u", name, *v, min));
  }
  return static_cast<size_t>(*v);
}

absl::StatusOr<size_t> Count(const char* name, int64_t default_value,
                             int64_t min) {
  absl::StatusOr<int64_t> v =
      env::TryGetInt(name, default_value, min, kMaxCount);
  if (!v.ok()) return v.status();
  return static_cast<size_t>(*v);
}

#define GEX_ASSIGN_OR_RETURN(lhs, expr) \
  do {                                  \
    auto _v = (expr);                   \
    if (!_v.ok()) return _v.status();   \
    lhs = *std::move(_v);               \
  } while (0)

// An inject limit: unset means the provider's maximum.
absl::StatusOr<size_t> InjectLimit(const char* name) {
  if (!env::GetRaw(name).has_value()) return Settings::kProviderMax;
  return Size(name, 0, 0);
}

void SetUnlessUserSet(const char* name, const std::string& value) {
  const char* have = getenv(name);
  if (have == nullptr) {
    setenv(name, value.c_str(), 1);
  } else if (*have == '\0') {
    // Empty: the user asks for libfabric's own default.
    unsetenv(name);
  }
}

}  // namespace

absl::StatusOr<Settings> ReadSettings() {
  Settings s;
  GEX_ASSIGN_OR_RETURN(s.max_medium, Size("GASNET_OFI_MAX_MEDIUM", 8192, 512));
  const char* inject_name = env::GetRaw("GASNET_OFI_AM_INJECT_LIMIT")
                                ? "GASNET_OFI_AM_INJECT_LIMIT"
                                : "GASNET_OFI_INJECT_LIMIT";
  GEX_ASSIGN_OR_RETURN(s.am_inject_limit, InjectLimit(inject_name));
  GEX_ASSIGN_OR_RETURN(s.rma_inject_limit,
                       InjectLimit("GASNET_OFI_RMA_INJECT_LIMIT"));

  GEX_ASSIGN_OR_RETURN(s.tagged_am,
                       env::TryGetBool("GASNET_OFI_TAGGED_AM", false));
  // GASNET_OFI_RECEIVE_BUFF_SIZE: a size, or "recv" for plain receives
  // (then more buffers by default, as each holds one message). Tagged AMs
  // always use plain receives.
  const std::string recv_size =
      absl::AsciiStrToLower(env::GetString("GASNET_OFI_RECEIVE_BUFF_SIZE", ""));
  s.multi_recv = recv_size != "recv" && !s.tagged_am;
  s.receive_buff_size_set = !recv_size.empty();
  s.num_receive_buffs_set =
      env::GetRaw("GASNET_OFI_NUM_RECEIVE_BUFFS").has_value();
  if (recv_size != "recv") {
    GEX_ASSIGN_OR_RETURN(s.receive_buff_size,
                         Size("GASNET_OFI_RECEIVE_BUFF_SIZE", 1 << 20, 1024));
  }
  GEX_ASSIGN_OR_RETURN(
      s.num_receive_buffs,
      Count("GASNET_OFI_NUM_RECEIVE_BUFFS", s.multi_recv ? 8 : 1024, 1));

  GEX_ASSIGN_OR_RETURN(s.max_request_buffs,
                       Count("GASNET_OFI_MAX_REQUEST_BUFFS", 1024, 1));
  GEX_ASSIGN_OR_RETURN(s.max_reply_buffs,
                       Count("GASNET_OFI_MAX_REPLY_BUFFS", 1024, 1));
  // GASNet-EX starts each pool at min(256, MAX); we start at
  // min(kInitialSendBuffs, MAX) and grow on demand as it does: a send
  // buffer is only held from a send to its completion, and the credits
  // bound what is in flight, so 256 of 8 KiB each were mostly never used
  // (README: "Memory").
  GEX_ASSIGN_OR_RETURN(
      s.initial_request_buffs,
      Count("GASNET_OFI_NUM_INITIAL_REQUEST_BUFFS",
            std::min<int64_t>(kInitialSendBuffs, s.max_request_buffs), 1));
  GEX_ASSIGN_OR_RETURN(
      s.initial_reply_buffs,
      Count("GASNET_OFI_NUM_INITIAL_REPLY_BUFFS",
            std::min<int64_t>(kInitialSendBuffs, s.max_reply_buffs), 1));
  if (s.initial_request_buffs > s.max_request_buffs) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GASNET_OFI_NUM_INITIAL_REQUEST_BUFFS=%u exceeds "
                        "GASNET_OFI_MAX_REQUEST_BUFFS=%u",
                        s.initial_request_buffs, s.max_request_buffs));
  }
  if (s.initial_reply_buffs > s.max_reply_buffs) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GASNET_OFI_NUM_INITIAL_REPLY_BUFFS=%u exceeds "
                        "GASNET_OFI_MAX_REPLY_BUFFS=%u",
                        s.initial_reply_buffs, s.max_reply_buffs));
  }

  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  GEX_ASSIGN_OR_RETURN(s.bbuf_size, Size("GASNET_OFI_BBUF_SIZE", page, 1));
  GEX_ASSIGN_OR_RETURN(s.num_bbufs, Count("GASNET_OFI_NUM_BBUFS", 64, 1));
  GEX_ASSIGN_OR_RETURN(s.bbuf_threshold,
                       Size("GASNET_OFI_BBUF_THRESHOLD", 4 * s.bbuf_size, 0));
  // Every bounce-buffered Put must be able to hold its whole payload in
  // bounce buffers at once, or it could wait for buffers it holds itself.
  const size_t needed = (s.bbuf_threshold + s.bbuf_size - 1) / s.bbuf_size;
  if (s.num_bbufs < needed) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GASNET_OFI_NUM_BBUFS=%u is too small for GASNET_OFI_BBUF_THRESHOLD="
        "%u and GASNET_OFI_BBUF_SIZE=%u: NUM_BBUFS must be at least "
        "BBUF_THRESHOLD / BBUF_SIZE = %u",
        s.num_bbufs, s.bbuf_threshold, s.bbuf_size, needed));
  }

  GEX_ASSIGN_OR_RETURN(
      s.rma_poll_freq,
      env::TryGetInt("GASNET_OFI_RMA_POLL_FREQ", 32, 1, kMaxCount));
  GEX_ASSIGN_OR_RETURN(s.tx_cq_size, Count("GASNET_OFI_TX_CQ_SIZE", 0, 0));
  GEX_ASSIGN_OR_RETURN(s.rx_cq_size, Count("GASNET_OFI_RX_CQ_SIZE", 0, 0));

  GEX_ASSIGN_OR_RETURN(s.device_variable,
                       env::TryTopologyVariant("GASNET_OFI_DEVICE"));
  s.device = env::GetString(s.device_variable, "");
  GEX_ASSIGN_OR_RETURN(s.list_devices,
                       env::TryGetBool("GASNET_OFI_LIST_DEVICES", false));
  GEX_ASSIGN_OR_RETURN(s.list_devices_nodes,
                       env::TryGetNodeList("GASNET_OFI_LIST_DEVICES_NODES"));
  GEX_ASSIGN_OR_RETURN(s.set_universe_size,
                       env::TryGetBool("GASNET_OFI_SET_UNIVERSE_SIZE", true));
  GEX_ASSIGN_OR_RETURN(s.set_rxm_buffer_size,
                       env::TryGetBool("GASNET_OFI_SET_RXM_BUFFER_SIZE", true));
  GEX_ASSIGN_OR_RETURN(s.use_cq_data,
                       env::TryGetBool("GASNET_OFI_USE_CQ_DATA", true));
  const std::string progress =
      absl::AsciiStrToLower(env::GetString("GASNET_OFI_DATA_PROGRESS", ""));
  if (progress == "manual") {
    s.data_progress = Settings::Progress::kManual;
  } else if (progress == "auto") {
    s.data_progress = Settings::Progress::kAuto;
  } else if (!progress.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "environment variable GASNET_OFI_DATA_PROGRESS=%s: expected manual "
        "or auto (or unset: manual where the provider offers it)",
        progress));
  }
  int64_t contexts = 0;
  GEX_ASSIGN_OR_RETURN(contexts,
                       env::TryGetInt("GASNET_OFI_NUM_TX_CONTEXTS", 0, 1, 64));
  s.num_tx_contexts = static_cast<size_t>(contexts);
  GEX_ASSIGN_OR_RETURN(s.scalable_ep,
                       env::TryGetBool("GASNET_OFI_SCALABLE_EP", true));
  GEX_ASSIGN_OR_RETURN(s.print_stats,
                       env::TryGetBool("GASNET_OFI_STATS", false));
  if (env::GetRaw("GASNET_OFI_SHARED_CQ").has_value()) {
    GEX_ASSIGN_OR_RETURN(s.shared_cq,
                         env::TryGetBool("GASNET_OFI_SHARED_CQ", true));
  }
  if (env::GetRaw("GASNET_OFI_SPLIT_ENDPOINTS").has_value()) {
    GEX_ASSIGN_OR_RETURN(s.split_endpoints,
                         env::TryGetBool("GASNET_OFI_SPLIT_ENDPOINTS", false));
  }
  return s;
}

#undef GEX_ASSIGN_OR_RETURN

bool HostHasRdmaDevice(const char* sys_dir) {
  DIR* dir = opendir(sys_dir);
  if (dir == nullptr) return false;
  bool found = false;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') {
      found = true;
      break;
    }
  }
  closedir(dir);
  return found;
}

void PrepareLibfabricEnvironment(const Settings& s, uint32_t job_size) {
  if (s.set_universe_size) {
    SetUnlessUserSet("FI_UNIVERSE_SIZE", std::to_string(job_size));
  }
  const char* provider = getenv("FI_PROVIDER");
  const std::string p = provider == nullptr ? "" : provider;
  // ofi_rxm grows each of its five buffer pools (receive, eager send, SAR,
  // atomics, RMA) 1024 entries at a time, each entry
  // FI_OFI_RXM_BUFFER_SIZE (default 16 KiB): 85 MB of a tcp;ofi_rxm rank's
  // 99 MB, touched at fi_enable and the first send. Over tcp the eager
  // limit may exceed the buffer size (tcp receives a larger eager message
  // straight into the posted buffer, FI_OFI_RXM_ENABLE_DYN_RBUF), so the
  // eager limit stays at rxm's default, 16 KiB: every message of ours
  // still goes eager, as before, none by segmentation (SAR; with the
  // buffer at 2 KiB and no eager setting, 2-8 KiB Mediums took 3-5x as
  // long and a C++ API job hung). Only when FI_PROVIDER names tcp (not
  // verbs, where the two must be equal), the user set neither and did not
  // turn dynamic receive buffers off.
  // With no provider named, libfabric takes the first that works: on a
  // host without an RDMA device that is tcp;ofi_rxm (verbs has nothing),
  // which is where most users start.
  const bool rxm_over_tcp =
      (absl::StrContains(p, "tcp") && !absl::StrContains(p, "verbs")) ||
      (p.empty() && !HostHasRdmaDevice());
  const char* dyn_rbuf = getenv("FI_OFI_RXM_ENABLE_DYN_RBUF");
  bool user_set = false;
  for (const char* name :
       {"FI_OFI_RXM_BUFFER_SIZE", "FI_OFI_RXM_EAGER_LIMIT"}) {
    const char* v = getenv(name);
    if (v == nullptr) continue;
    user_set = true;
    // Empty asks for libfabric's default, as below.
    if (*v == '\0') unsetenv(name);
  }
  if (s.set_rxm_buffer_size && rxm_over_tcp && dyn_rbuf == nullptr &&
      !user_set) {
    setenv("FI_OFI_RXM_BUFFER_SIZE",
           std::to_string(Settings::kRxmBufferSize).c_str(), 1);
    setenv("FI_OFI_RXM_EAGER_LIMIT",
           std::to_string(Settings::kRxmEagerLimit).c_str(), 1);
  }
  if (absl::StrContains(p, "cxi") || absl::StartsWith(p, "verbs")) {
    SetUnlessUserSet("FI_MR_CACHE_MAX_SIZE", "-1");
    SetUnlessUserSet("FI_MR_CACHE_MAX_COUNT", "-1");
  }
}

}  // namespace gexrt::ofi
