#include "conduit/ucx/settings.h"

#include <stdlib.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/env/settings.h"

namespace gexrt::ucx {
namespace {

// UCX 1.13's transport names and the aliases ucp_init expands (see
// `ucx_info -f`, UCX_TLS). Transports of hardware this host lacks are
// known names all the same: UCX reports them unavailable.
constexpr const char* kKnownTransports[] = {
    "all",       "self",     "tcp",       "sm",       "shm",       "mm",
    "posix",     "sysv",     "xpmem",     "cma",      "knem",      "ib",
    "rc",        "rc_v",     "rc_x",      "rc_verbs", "rc_mlx5",   "ud",
    "ud_v",      "ud_x",     "ud_verbs",  "ud_mlx5",  "dc",        "dc_x",
    "dc_mlx5",   "ugni",     "ugni_rdma", "ugni_udt", "ugni_smsg", "cuda",
    "cuda_copy", "cuda_ipc", "gdr_copy",  "rocm",     "rocm_copy", "rocm_ipc",
    "rocm_gdr",
};

constexpr int64_t kMaxBuffs = int64_t{1} << 20;

#define GEX_ASSIGN_OR_RETURN(lhs, expr) \
  do {                                  \
    auto _v = (expr);                   \
    if (!_v.ok()) return _v.status();   \
    lhs = *std::move(_v);               \
  } while (0)

}  // namespace

absl::Status CheckTransportList(const char* variable,
                                const std::string& value) {
  absl::string_view list = value;
  // A leading '^' negates the whole list.
  if (!list.empty() && list.front() == '^') list.remove_prefix(1);
  for (absl::string_view entry : absl::StrSplit(list, ',')) {
    absl::string_view name = absl::StripAsciiWhitespace(entry);
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("environment variable %s=%s: an empty transport name",
                          variable, value));
    }
    // "\name": the transport itself, not an alias; "name:aux": for
    // wire-up only.
    if (name.front() == '\\') name.remove_prefix(1);
    if (const size_t colon = name.find(':'); colon != name.npos) {
      name = name.substr(0, colon);
    }
    bool known = false;
    for (const char* k : kKnownTransports) known = known || name == k;
    if (!known) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "environment variable %s=%s: '%s' is not a UCX transport (UCX "
          "1.13 knows: %s; `ucx_info -d` lists those this host has)",
          variable, value, name, absl::StrJoin(kKnownTransports, ", ")));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Settings> ReadSettings() {
  Settings s;
  absl::StatusOr<uint64_t> medium = env::TryGetSize(
      "GASNET_UCX_MAX_MEDIUM", kDefaultMaxMedium, env::SizeUnit::kBytes);
  if (!medium.ok()) return medium.status();
  // The header's length field is 32 bits; far beyond any useful size.
  if (*medium < kMinMaxMedium || *medium > (uint64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "environment variable GASNET_UCX_MAX_MEDIUM=%u is out of range: at "
        "least %u (default %u), at most 1G",
        *medium, kMinMaxMedium, kDefaultMaxMedium));
  }
  s.max_medium = static_cast<size_t>(*medium);
  if (env::GetRaw("GASNET_UCX_AM_ORDERED_TLS").has_value()) {
    GEX_ASSIGN_OR_RETURN(s.am_ordered_tls,
                         env::TryGetBool("GASNET_UCX_AM_ORDERED_TLS", false));
  }
  int64_t n = 0;
  GEX_ASSIGN_OR_RETURN(
      n, env::TryGetInt("GASNET_UCX_MAX_REQUEST_BUFFS", 1024, 1, kMaxBuffs));
  s.max_request_buffs = static_cast<size_t>(n);
  GEX_ASSIGN_OR_RETURN(
      n, env::TryGetInt("GASNET_UCX_MAX_REPLY_BUFFS", 1024, 1, kMaxBuffs));
  s.max_reply_buffs = static_cast<size_t>(n);
  GEX_ASSIGN_OR_RETURN(s.print_stats,
                       env::TryGetBool("GASNET_UCX_STATS", false));
  GEX_ASSIGN_OR_RETURN(s.offload_atomics,
                       env::TryGetBool("GASNET_UCX_OFFLOAD_ATOMICS", true));
  s.tls = env::GetRaw("GASNET_UCX_TLS").value_or("");
  s.net_devices = env::GetRaw("GASNET_UCX_NET_DEVICES").value_or("");
  if (env::GetRaw("GASNET_UCX_TLS").has_value()) {
    if (absl::Status c = CheckTransportList("GASNET_UCX_TLS", s.tls); !c.ok()) {
      return c;
    }
  }
  return s;
}

#undef GEX_ASSIGN_OR_RETURN

HiddenOwnVariables::HiddenOwnVariables() {
  for (const char* name : kOwnVariables) {
    const char* value = getenv(name);
    if (value == nullptr) continue;
    saved_.emplace_back(name, value);
    unsetenv(name);
  }
}

HiddenOwnVariables::~HiddenOwnVariables() {
  for (const auto& [name, value] : saved_) {
    setenv(name.c_str(), value.c_str(), 1);
  }
}

}  // namespace gexrt::ucx
