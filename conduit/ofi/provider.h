// Choosing the libfabric provider and domain the ofi conduit runs on.
//
// fi_getinfo is asked for what the conduit needs (FI_EP_RDM, FI_MSG and
// FI_RMA, FI_MULTI_RECV unless plain receives were asked for, the
// threading mode of the client's build), honouring FI_PROVIDER in
// libfabric's own syntax (libfabric applies it). Each answer is checked
// against the conduit's requirements (README.md: what a provider must
// support, must not require, may require), and GASNET_OFI_DEVICE picks a
// domain by name. When nothing qualifies, a second, permissive query
// explains why, provider by provider ("tcp;ofi_rxm (lo): requires
// FI_MR_LOCAL"), so the message names the missing capability.
#ifndef GEX_CONDUIT_OFI_PROVIDER_H_
#define GEX_CONDUIT_OFI_PROVIDER_H_

#include <rdma/fabric.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "conduit/ofi/settings.h"

namespace gexrt::ofi {

// The libfabric API version the conduit is written against.
inline constexpr uint32_t kApiVersion = FI_VERSION(1, 9);

struct InfoDeleter {
  void operator()(fi_info* info) const { fi_freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// What the conduit asks of a provider.
struct Requirements {
  bool thread_safe = false;  // FI_THREAD_SAFE (PAR) or FI_THREAD_DOMAIN
  bool multi_recv = true;    // FI_MULTI_RECV
  bool tagged = false;       // FI_TAGGED (GASNET_OFI_TAGGED_AM)
  // Accept automatic data progress. false (the default) asks for manual
  // progress first and falls back to automatic only when no provider
  // offers manual (unless `only_manual`).
  bool auto_progress = false;
  // GASNET_OFI_DATA_PROGRESS: exactly this model (FI_PROGRESS_MANUAL or
  // FI_PROGRESS_AUTO; FI_PROGRESS_UNSPEC: the preference above).
  fi_progress progress = FI_PROGRESS_UNSPEC;
};

// The hints for the query (owned by the caller).
InfoPtr MakeHints(const Requirements& r);

// Whether `info` meets every requirement; an error names the first it
// fails ("requires FI_MR_LOCAL", "lacks FI_MULTI_RECV", ...).
absl::Status CheckProvider(const fi_info& info, const Requirements& r);

// "tcp;ofi_rxm (domain lo, fabric 127.0.0.1/32)".
std::string Describe(const fi_info& info);

// The providers and domains that qualify, in libfabric's order of
// preference (a list: the caller keeps the head alive).
struct Candidates {
  InfoPtr list;
  std::vector<const fi_info*> usable;
};
absl::StatusOr<Candidates> FindCandidates(const Requirements& r);

// The one to open: the first candidate, or the one whose domain is
// `s.device`. An error says why nothing qualifies (naming FI_PROVIDER, the
// device variable, or each provider's missing capability).
absl::StatusOr<InfoPtr> SelectProvider(const Settings& s,
                                       const Requirements& r);

}  // namespace gexrt::ofi

#endif  // GEX_CONDUIT_OFI_PROVIDER_H_
