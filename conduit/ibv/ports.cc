#include "conduit/ibv/ports.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gexrt::ibv {
namespace {

bool Active(const PortInfo& p) {
  return p.attr.state == verbs::PortState::kActive ||
         p.attr.state == verbs::PortState::kActiveDefer;
}

std::string Listing(const std::vector<PortInfo>& listing) {
  if (listing.empty()) return "no device at all";
  std::vector<std::string> names;
  for (const PortInfo& p : listing) {
    names.push_back(absl::StrFormat(
        "%s:%d (%s)", p.device, p.port,
        p.queried ? verbs::ToString(p.attr.state) : "not queried"));
  }
  return absl::StrCat("the devices have ", absl::StrJoin(names, ", "));
}

}  // namespace

absl::StatusOr<std::vector<PortInfo>> ChoosePorts(
    const std::vector<PortInfo>& listing,
    const std::vector<env::PortSpec>& filter, const std::string& variable) {
  std::vector<PortInfo> chosen;
  auto add = [&](const PortInfo& p) {
    for (const PortInfo& c : chosen) {
      if (c.device == p.device && c.port == p.port) return;
    }
    chosen.push_back(p);
  };
  if (filter.empty()) {
    std::vector<std::string> seen;
    for (const PortInfo& p : listing) {
      if (!Active(p)) continue;
      if (std::find(seen.begin(), seen.end(), p.device) != seen.end()) {
        continue;
      }
      seen.push_back(p.device);
      add(p);
    }
    if (chosen.empty()) {
      return absl::NotFoundError(absl::StrFormat(
          "ibv conduit: no active port on any device (%s)", Listing(listing)));
    }
    return chosen;
  }
  for (const env::PortSpec& spec : filter) {
    bool device_found = false;
    for (const PortInfo& p : listing) device_found |= p.device == spec.hca;
    if (!device_found) {
      return absl::NotFoundError(absl::StrFormat(
          "ibv conduit: %s names device '%s', which does not exist (%s)",
          variable, spec.hca, Listing(listing)));
    }
    if (spec.ports.empty()) {
      const auto first = std::find_if(
          listing.begin(), listing.end(),
          [&](const PortInfo& p) { return p.device == spec.hca && Active(p); });
      if (first == listing.end()) {
        return absl::NotFoundError(absl::StrFormat(
            "ibv conduit: %s names device '%s', which has no active port (%s)",
            variable, spec.hca, Listing(listing)));
      }
      add(*first);
      continue;
    }
    for (int port : spec.ports) {
      const auto it =
          std::find_if(listing.begin(), listing.end(), [&](const PortInfo& p) {
            return p.device == spec.hca && p.port == port;
          });
      if (it == listing.end() || !Active(*it)) {
        return absl::NotFoundError(absl::StrFormat(
            "ibv conduit: %s names port %d of device '%s', which %s (%s)",
            variable, port, spec.hca,
            it == listing.end() ? "does not exist" : "is not active",
            Listing(listing)));
      }
      add(*it);
    }
  }
  return chosen;
}

std::vector<std::string> DescribeProbe(const std::vector<PortInfo>& listing,
                                       const std::vector<PortInfo>& chosen,
                                       const std::vector<env::PortSpec>& filter,
                                       const std::string& variable,
                                       uint32_t verbose) {
  std::vector<std::string> lines;
  if (verbose == 0) return lines;
  for (const PortInfo& p : listing) {
    const std::string name = absl::StrFormat("%s:%d", p.device, p.port);
    const bool used =
        std::any_of(chosen.begin(), chosen.end(), [&](const PortInfo& c) {
          return c.device == p.device && c.port == p.port;
        });
    // Whether the filter lets this port be considered at all.
    bool admitted = filter.empty();
    for (const env::PortSpec& spec : filter) {
      admitted |=
          spec.hca == p.device &&
          (spec.ports.empty() || std::find(spec.ports.begin(), spec.ports.end(),
                                           p.port) != spec.ports.end());
    }
    if (used) {
      if (verbose >= 2) lines.push_back(absl::StrCat(name, ": used"));
    } else if (!admitted) {
      if (verbose >= 2) {
        lines.push_back(absl::StrCat(name, ": not named by ", variable));
      }
    } else if (!Active(p)) {
      lines.push_back(absl::StrFormat("%s is %s: not used", name,
                                      verbs::ToString(p.attr.state)));
    } else if (verbose >= 2) {
      lines.push_back(absl::StrCat(
          name, ": not used (only the first active port of a device is)"));
    }
  }
  return lines;
}

absl::StatusOr<uint16_t> FindPkeyIndex(
    uint16_t key, uint16_t table_len,
    absl::FunctionRef<absl::StatusOr<uint16_t>(uint16_t index)> entry,
    const std::string& port_name) {
  std::optional<uint16_t> limited;
  std::vector<std::string> held;
  for (uint16_t i = 0; i < table_len; ++i) {
    absl::StatusOr<uint16_t> value = entry(i);
    if (!value.ok()) return value.status();
    // Unused entries read as 0 (or a bare membership bit).
    if ((*value & 0x7fff) == 0) continue;
    held.push_back(absl::StrFormat("0x%04x", *value));
    if ((*value & 0x7fff) != key) continue;
    if ((*value & verbs::kPkeyFullMember) != 0) return i;
    if (!limited.has_value()) limited = i;
  }
  if (limited.has_value()) return *limited;
  return absl::NotFoundError(absl::StrFormat(
      "GASNET_IBV_PKEY=0x%04x: port %s has no such partition (its P_Key "
      "table holds %s)",
      key, port_name,
      held.empty() ? std::string("no keys") : absl::StrJoin(held, ", ")));
}

std::string DescribePorts(const std::vector<PortInfo>& ports) {
  std::string out;
  for (const PortInfo& p : ports) {
    absl::StrAppendFormat(&out,
                          "%s:%d %s lid %d mtu %d pkey 0x%04x (index %d)\n",
                          p.device, p.port, verbs::ToString(p.attr.state),
                          p.attr.lid, p.attr.active_mtu, p.pkey, p.pkey_index);
  }
  return out;
}

}  // namespace gexrt::ibv
