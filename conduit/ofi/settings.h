// The ofi conduit's environment settings (conduit/ofi/README.md lists
// them with their defaults), read once at start-up and checked together,
// so that a bad value is one message naming the variable before any
// network resource exists.
#ifndef GEX_CONDUIT_OFI_SETTINGS_H_
#define GEX_CONDUIT_OFI_SETTINGS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "base/env/parse.h"

namespace gexrt::ofi {

struct Settings {
  // GASNET_OFI_MAX_MEDIUM: the Medium payload LUB (at least 512).
  size_t max_medium = 8192;
  // GASNET_OFI_AM_INJECT_LIMIT (alias GASNET_OFI_INJECT_LIMIT): an AM of at
  // most this many bytes on the wire goes by fi_inject. kProviderMax (the
  // default): the provider's inject_size; a larger value is clamped to it.
  size_t am_inject_limit = kProviderMax;
  // GASNET_OFI_RMA_INJECT_LIMIT: Puts of at most this many bytes use
  // FI_INJECT.
  size_t rma_inject_limit = kProviderMax;
  // GASNET_OFI_NUM_RECEIVE_BUFFS / GASNET_OFI_RECEIVE_BUFF_SIZE: multi-
  // receive buffers per endpoint; "recv" (multi_recv false) posts
  // num_receive_buffs single-message buffers instead.
  bool multi_recv = true;
  size_t num_receive_buffs = 8;
  size_t receive_buff_size = 1 << 20;
  // Whether the two were set (the conduit picks plain receives itself for
  // a provider whose multi-receive buffers are not safe, unless told).
  bool receive_buff_size_set = false;
  bool num_receive_buffs_set = false;
  // GASNET_OFI_MAX_REQUEST_BUFFS / _MAX_REPLY_BUFFS and the initial
  // counts (_NUM_INITIAL_REQUEST_BUFFS / _REPLY_BUFFS).
  size_t max_request_buffs = 1024;
  size_t max_reply_buffs = 1024;
  size_t initial_request_buffs = 256;
  size_t initial_reply_buffs = 256;
  // The non-bulk Put policy: GASNET_OFI_BBUF_SIZE, _NUM_BBUFS,
  // _BBUF_THRESHOLD (num_bbufs >= threshold / size must hold).
  size_t bbuf_size = 4096;
  size_t num_bbufs = 64;
  size_t bbuf_threshold = 4 * 4096;
  // GASNET_OFI_RMA_POLL_FREQ: poll the transmit queue once per this many
  // RMA operations started.
  int64_t rma_poll_freq = 32;
  // GASNET_OFI_TX_CQ_SIZE / _RX_CQ_SIZE (0: the provider's choice).
  size_t tx_cq_size = 0;
  size_t rx_cq_size = 0;
  // GASNET_OFI_DEVICE (through its topology family GASNET_OFI_DEVICE_TYPE
  // / _<n>): the domain to open; empty: the first that qualifies. And the
  // variable it came from, for messages.
  std::string device;
  std::string device_variable = "GASNET_OFI_DEVICE";
  // GASNET_OFI_LIST_DEVICES / _NODES.
  bool list_devices = false;
  env::NodeList list_devices_nodes = env::NodeList::All();
  // GASNET_OFI_SET_UNIVERSE_SIZE: set FI_UNIVERSE_SIZE to the job size
  // when the user has not set it.
  bool set_universe_size = true;
  // GASNET_OFI_SET_RXM_BUFFER_SIZE: when FI_PROVIDER names tcp, set
  // FI_OFI_RXM_BUFFER_SIZE to kRxmBufferSize and FI_OFI_RXM_EAGER_LIMIT to
  // kRxmEagerLimit unless the user set either (ofi_rxm's bounce buffers,
  // most of a tcp;ofi_rxm rank's memory at its 16 KiB default).
  bool set_rxm_buffer_size = true;
  // GASNET_OFI_USE_CQ_DATA: the AM's source rank travels as remote CQ
  // data where the provider offers FI_REMOTE_CQ_DATA (default yes); no:
  // always in the message header.
  bool use_cq_data = true;
  // GASNET_OFI_TAGGED_AM: the AM header (category, handler, argument
  // count, flags, credits; the source rank too without CQ data) travels
  // in the 64-bit tag of a tagged send (FI_TAGGED) instead of in the
  // message. Tagged receives take one message each (libfabric 1.17 has no
  // tagged multi-receive), so it implies single-message receive buffers.
  bool tagged_am = false;
  // GASNET_OFI_DATA_PROGRESS: "manual", "auto", or empty (the default:
  // manual where the provider offers it, else automatic).
  enum class Progress { kPreferManual, kManual, kAuto };
  Progress data_progress = Progress::kPreferManual;
  // GASNET_OFI_NUM_TX_CONTEXTS: transmit contexts in PAR mode (each thread
  // sends through one, so threads do not serialise on one endpoint). 0:
  // the default, min(4, the CPUs this process may run on). SEQ uses one.
  size_t num_tx_contexts = 0;
  // GASNET_OFI_SCALABLE_EP: those contexts are the transmit contexts of one
  // scalable endpoint where the provider offers enough (default yes); no:
  // always endpoints of their own.
  bool scalable_ep = true;
  // GASNET_OFI_STATS: each rank prints its configuration and counters at
  // exit (one line, "ofi: rank R: ...").
  bool print_stats = false;
  // GASNET_OFI_SHARED_CQ: both receiving endpoints share one completion
  // queue, so a poll is one fi_cq_read (a Reply's wait sets the Requests
  // it reads aside); no: one queue each.
  // Unset: yes.
  std::optional<bool> shared_cq;
  // GASNET_OFI_SPLIT_ENDPOINTS: Requests and Replies arrive at endpoints
  // of their own (yes), or at one (no: one endpoint, one queue, one
  // progress pass a poll). Unset: one.
  std::optional<bool> split_endpoints;

  static constexpr size_t kProviderMax = ~size_t{0};
  // What FI_OFI_RXM_BUFFER_SIZE and _EAGER_LIMIT are set to over tcp
  // (README: "Memory"); the eager limit is rxm's own default.
  static constexpr size_t kRxmBufferSize = 2048;
  static constexpr size_t kRxmEagerLimit = 16384;
};

// Reads and checks every setting. A malformed or out-of-range value, or
// the bounce-buffer condition violated, is an error naming the variable(s).
absl::StatusOr<Settings> ReadSettings();

// The libfabric variables we may set for the user before libfabric reads
// them (never overwriting a value the user set): FI_UNIVERSE_SIZE to
// `job_size` under set_universe_size, FI_OFI_RXM_BUFFER_SIZE and
// _EAGER_LIMIT under set_rxm_buffer_size over tcp (FI_PROVIDER names tcp,
// or names nothing on a host without an RDMA device, where libfabric
// picks tcp;ofi_rxm), and
// FI_MR_CACHE_MAX_{SIZE,COUNT} to -1 for the providers known to need it (cxi,
// verbs; FI_PROVIDER names them). A variable set to the empty string is unset
// (libfabric's default).
void PrepareLibfabricEnvironment(const Settings& s, uint32_t job_size);

// Whether `sys_dir` (the kernel's list of RDMA devices) names a device:
// with none, libfabric's verbs provider has nothing to offer.
bool HostHasRdmaDevice(const char* sys_dir = "/sys/class/infiniband");

}  // namespace gexrt::ofi

#endif  // GEX_CONDUIT_OFI_SETTINGS_H_
