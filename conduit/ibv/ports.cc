#include "conduit/ibv/ports.h"

#include <algorithm>

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
    names.push_back(absl::StrFormat("%s:%d (%s)", p.device, p.port,
                                    verbs::ToString(p.attr.state)));
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

std::string DescribePorts(const std::vector<PortInfo>& ports) {
  std::string out;
  for (const PortInfo& p : ports) {
    absl::StrAppendFormat(&out, "%s:%d %s lid %d mtu %d\n", p.device, p.port,
                          verbs::ToString(p.attr.state), p.attr.lid,
                          p.attr.active_mtu);
  }
  return out;
}

}  // namespace gexrt::ibv
