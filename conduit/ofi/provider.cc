#include "conduit/ofi/provider.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gexrt::ofi {
namespace {

// Modes the conduit can work with: a provider asking for any other mode
// bit (FI_CONTEXT, FI_CONTEXT2, FI_MSG_PREFIX, FI_RESTRICTED_COMP, ...)
// is refused, naming it.
constexpr uint64_t kAcceptedModes = FI_RX_CQ_DATA | FI_ASYNC_IOV;

// Memory-registration modes the conduit supports.
constexpr int kAcceptedMrModes =
    FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;

struct NamedBit {
  uint64_t bit;
  const char* name;
};

constexpr NamedBit kModeNames[] = {
    {FI_CONTEXT, "FI_CONTEXT"},
    {FI_CONTEXT2, "FI_CONTEXT2"},
    {FI_MSG_PREFIX, "FI_MSG_PREFIX"},
    {FI_RESTRICTED_COMP, "FI_RESTRICTED_COMP"},
    {FI_LOCAL_MR, "FI_LOCAL_MR"},
    {FI_NOTIFY_FLAGS_ONLY, "FI_NOTIFY_FLAGS_ONLY"},
    {FI_BUFFERED_RECV, "FI_BUFFERED_RECV"},
};

constexpr NamedBit kMrModeNames[] = {
    {FI_MR_LOCAL, "FI_MR_LOCAL"},
    {FI_MR_RAW, "FI_MR_RAW"},
    {FI_MR_MMU_NOTIFY, "FI_MR_MMU_NOTIFY"},
    {FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT"},
    {FI_MR_HMEM, "FI_MR_HMEM"},
    {FI_MR_COLLECTIVE, "FI_MR_COLLECTIVE"},
};

std::string BitNames(uint64_t bits, const NamedBit* names, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    if ((bits & names[i].bit) != 0) {
      out.push_back(names[i].name);
      bits &= ~names[i].bit;
    }
  }
  if (bits != 0) out.push_back(absl::StrFormat("0x%x", bits));
  return absl::StrJoin(out, " and ");
}

absl::StatusOr<Candidates> Query(const Requirements& r);

// Whether libfabric offers anything at all (FI_PROVIDER applied): when
// not, FI_PROVIDER names no provider it has.
bool AnyProvider() {
  fi_info* list = nullptr;
  const int rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, nullptr, &list);
  if (list != nullptr) fi_freeinfo(list);
  return rc == 0 && list != nullptr;
}

std::string ProviderFilter() {
  const char* p = std::getenv("FI_PROVIDER");
  return p == nullptr ? "" : p;
}

}  // namespace

InfoPtr MakeHints(const Requirements& r) {
  InfoPtr hints(fi_allocinfo());
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG | FI_RMA;
  if (r.multi_recv) hints->caps |= FI_MULTI_RECV;
  if (r.tagged) hints->caps |= FI_TAGGED;
  hints->mode = kAcceptedModes;
  // Messages between two endpoints arrive in order: Fini's flush relies
  // on it (and the exit protocol's messages on each pair).
  // And a message after an RMA write on the same pair arrives after it:
  // a Long's header follows its payload.
  hints->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_SAW;
  hints->rx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_SAW;
  hints->domain_attr->mr_mode = kAcceptedMrModes;
  hints->domain_attr->threading =
      r.thread_safe ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
  // The conduit polls its queues itself, so manual progress is what it
  // wants: a provider that can do both then makes progress in our polls
  // instead of in a thread of its own competing for the CPU (sockets'
  // progress thread made a round trip cost milliseconds). A provider that
  // only has automatic progress is asked again without it.
  hints->domain_attr->data_progress = r.progress != FI_PROGRESS_UNSPEC
                                          ? r.progress
                                      : r.auto_progress ? FI_PROGRESS_UNSPEC
                                                        : FI_PROGRESS_MANUAL;
  hints->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
  hints->domain_attr->av_type = FI_AV_UNSPEC;
  return hints;
}

absl::Status CheckProvider(const fi_info& info, const Requirements& r) {
  if (info.ep_attr == nullptr || info.ep_attr->type != FI_EP_RDM) {
    return absl::FailedPreconditionError("has no FI_EP_RDM endpoint");
  }
  if ((info.caps & FI_MSG) == 0) {
    return absl::FailedPreconditionError("lacks FI_MSG");
  }
  if ((info.caps & FI_RMA) == 0) {
    return absl::FailedPreconditionError("lacks FI_RMA");
  }
  if (r.multi_recv && (info.caps & FI_MULTI_RECV) == 0) {
    return absl::FailedPreconditionError(
        "lacks FI_MULTI_RECV (GASNET_OFI_RECEIVE_BUFF_SIZE=recv runs "
        "without it)");
  }
  if (r.tagged && (info.caps & FI_TAGGED) == 0) {
    return absl::FailedPreconditionError(
        "lacks FI_TAGGED (GASNET_OFI_TAGGED_AM=no runs without it)");
  }
  if (r.progress != FI_PROGRESS_UNSPEC &&
      (info.domain_attr == nullptr ||
       info.domain_attr->data_progress != r.progress)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "does not offer %s data progress (GASNET_OFI_DATA_PROGRESS)",
        r.progress == FI_PROGRESS_AUTO ? "automatic" : "manual"));
  }
  if (info.tx_attr == nullptr ||
      (info.tx_attr->msg_order & FI_ORDER_SAS) == 0) {
    return absl::FailedPreconditionError(
        "lacks FI_ORDER_SAS (messages between two endpoints in order)");
  }
  if ((info.tx_attr->msg_order & FI_ORDER_SAW) == 0) {
    return absl::FailedPreconditionError(
        "lacks FI_ORDER_SAW (a message after a write arrives after it)");
  }
  if (const uint64_t extra = info.mode & ~kAcceptedModes; extra != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "requires %s", BitNames(extra, kModeNames, std::size(kModeNames))));
  }
  if (info.domain_attr == nullptr) {
    return absl::FailedPreconditionError("has no domain attributes");
  }
  const uint64_t mr_extra =
      static_cast<uint64_t>(info.domain_attr->mr_mode) & ~kAcceptedMrModes;
  if (mr_extra != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "requires %s",
        BitNames(mr_extra, kMrModeNames, std::size(kMrModeNames))));
  }
  if (info.domain_attr->mr_key_size > sizeof(uint64_t)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("has %u-byte memory keys (more than 8)",
                        info.domain_attr->mr_key_size));
  }
  const fi_threading need = r.thread_safe ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
  const fi_threading have = info.domain_attr->threading;
  // FI_THREAD_SAFE serves a SEQ client too.
  if (have != need && have != FI_THREAD_SAFE) {
    return absl::FailedPreconditionError(
        absl::StrFormat("lacks %s threading (the client is %s)",
                        r.thread_safe ? "FI_THREAD_SAFE" : "FI_THREAD_DOMAIN",
                        r.thread_safe ? "GASNET_PAR" : "GASNET_SEQ"));
  }
  return absl::OkStatus();
}

std::string Describe(const fi_info& info) {
  const char* prov =
      info.fabric_attr != nullptr && info.fabric_attr->prov_name != nullptr
          ? info.fabric_attr->prov_name
          : "?";
  const char* domain =
      info.domain_attr != nullptr && info.domain_attr->name != nullptr
          ? info.domain_attr->name
          : "?";
  const char* fabric =
      info.fabric_attr != nullptr && info.fabric_attr->name != nullptr
          ? info.fabric_attr->name
          : "?";
  return absl::StrFormat("%s (domain %s, fabric %s)", prov, domain, fabric);
}

absl::StatusOr<Candidates> FindCandidates(const Requirements& r) {
  if (!r.auto_progress && r.progress == FI_PROGRESS_UNSPEC) {
    Requirements manual_only = r;
    manual_only.auto_progress = true;
    absl::StatusOr<Candidates> manual = Query(r);
    if (!manual.ok() || !manual->usable.empty()) return manual;
    return Query(manual_only);
  }
  return Query(r);
}

namespace {

absl::StatusOr<Candidates> Query(const Requirements& r) {
  InfoPtr hints = MakeHints(r);
  fi_info* list = nullptr;
  const int rc =
      fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &list);
  Candidates c;
  if (rc == -FI_ENODATA) return c;
  if (rc != 0) {
    return absl::InternalError(
        absl::StrFormat("fi_getinfo: %s", fi_strerror(-rc)));
  }
  c.list.reset(list);
  for (const fi_info* i = list; i != nullptr; i = i->next) {
    if (CheckProvider(*i, r).ok()) c.usable.push_back(i);
  }
  return c;
}

// Why nothing qualified: ask again with every mode and capability
// allowed, and say what each provider would have needed.
std::string ExplainRefusals(const Requirements& r) {
  // Asked with the capabilities the conduit needs first (a provider
  // reports only the capabilities it was asked for), then with FI_MSG
  // alone, so a provider lacking one is named too.
  fi_info* list = nullptr;
  const uint64_t needed = FI_MSG | FI_RMA | (r.tagged ? FI_TAGGED : 0) |
                          (r.multi_recv ? FI_MULTI_RECV : 0);
  for (const uint64_t caps : {needed, uint64_t{FI_MSG}}) {
    InfoPtr hints(fi_allocinfo());
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = caps;
    hints->mode = ~uint64_t{0};
    hints->domain_attr->mr_mode = static_cast<int>(
        FI_MR_LOCAL | FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
        FI_MR_PROV_KEY | FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT | FI_MR_ENDPOINT);
    if (fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &list) == 0 &&
        list != nullptr) {
      break;
    }
    list = nullptr;
  }
  if (list == nullptr) return "";
  InfoPtr owned(list);
  std::vector<std::string> lines;
  for (const fi_info* i = list; i != nullptr; i = i->next) {
    const absl::Status s = CheckProvider(*i, r);
    const std::string line = absl::StrFormat(
        "%s: %s", Describe(*i), s.ok() ? "refused by fi_getinfo" : s.message());
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) {
      lines.push_back(line);
    }
  }
  return absl::StrJoin(lines, "; ");
}

}  // namespace

absl::StatusOr<InfoPtr> SelectProvider(const Settings& s,
                                       const Requirements& r) {
  absl::StatusOr<Candidates> c = FindCandidates(r);
  if (!c.ok()) return c.status();
  const std::string filter = ProviderFilter();
  if (c->usable.empty()) {
    const std::string why = ExplainRefusals(r);
    if (why.empty()) {
      if (!filter.empty() && !AnyProvider()) {
        return absl::NotFoundError(absl::StrFormat(
            "FI_PROVIDER=%s matches no provider of this libfabric (`fi_info "
            "-l` lists them; tested here: tcp;ofi_rxm, sockets, udp;ofi_rxd, "
            "shm)",
            filter));
      }
      return absl::NotFoundError(absl::StrFormat(
          "no libfabric provider offers an FI_EP_RDM endpoint%s (see "
          "`fi_info -l` for this libfabric's providers)",
          filter.empty() ? std::string()
                         : absl::StrFormat(" under FI_PROVIDER=%s", filter)));
    }
    return absl::FailedPreconditionError(absl::StrFormat(
        "no libfabric provider%s meets the ofi conduit's requirements: %s",
        filter.empty() ? std::string()
                       : absl::StrFormat(" under FI_PROVIDER=%s", filter),
        why));
  }
  const fi_info* chosen = nullptr;
  if (s.device.empty()) {
    chosen = c->usable.front();
  } else {
    std::vector<std::string> names;
    for (const fi_info* i : c->usable) {
      const std::string name = i->domain_attr->name;
      if (name == s.device) {
        chosen = i;
        break;
      }
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
      }
    }
    if (chosen == nullptr) {
      return absl::NotFoundError(absl::StrFormat(
          "%s=%s: no such device among the usable providers' domains (%s)%s",
          s.device_variable, s.device, absl::StrJoin(names, ", "),
          filter.empty() ? std::string()
                         : absl::StrFormat(" under FI_PROVIDER=%s", filter)));
    }
  }
  return InfoPtr(fi_dupinfo(chosen));
}

}  // namespace gexrt::ofi
