// The state behind the C API: one client per process (what GASNet-EX
// supports today), its primordial endpoint, team and segment, and the
// layers they sit on (bootstrap, node map, supernode, handler table).
// Internal to api/: the public faces are include/gasnetex.h and gasnet.h.
#ifndef GEX_API_RUNTIME_H_
#define GEX_API_RUNTIME_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "am/handler_table.h"
#include "am/token.h"
#include "api/barrier.h"
#include "api/driver.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/node_map.h"
#include "gasnetex.h"
#include "pshm/am_network.h"
#include "pshm/supernode.h"

struct gex_Client_opaque {
  std::string name;
  const void* cdata = nullptr;
  gex_Flags_t flags = 0;
};

struct gex_Segment_opaque {
  gex_Client_t client = nullptr;
  void* addr = nullptr;
  uintptr_t size = 0;
  const void* cdata = nullptr;
  gex_Flags_t flags = 0;
};

struct gex_EP_opaque {
  gex_Client_t client = nullptr;
  gex_Segment_t segment = nullptr;
  const void* cdata = nullptr;
  gex_Flags_t flags = 0;
};

struct gex_TM_opaque {
  gex_Client_t client = nullptr;
  gex_EP_t ep = nullptr;
  const void* cdata = nullptr;
  gex_Flags_t flags = 0;
};

namespace gex::api {

class Runtime {
 public:
  Runtime() = default;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Rank rank = 0;
  Rank size = 1;
  bool thread_safe = false;
  const Driver* driver = nullptr;
  std::unique_ptr<Bootstrap> bootstrap;
  std::optional<NodeMap> map;
  std::unique_ptr<pshm::Supernode> supernode;
  pshm::AmNetwork* net = nullptr;
  am::HandlerTable handlers;
  Barrier barrier;
  // Yield while waiting: more ranks than CPUs here, or
  // gasnet_set_waitmode(GASNET_WAIT_BLOCK).
  bool polite = false;
  std::atomic<bool> verbose_errors{true};

  gex_Client_opaque client;
  gex_EP_opaque ep;
  gex_TM_opaque tm;
  gex_Segment_opaque segment;
  bool attached = false;

  // gex_System_QueryHostInfo / QueryNbrhdInfo.
  std::vector<gex_Rank_t> host_ranks;
  gex_Rank_t host_index = 0;
  std::vector<gex_Rank_t> nbrhd_ranks;
  gex_Rank_t nbrhd_index = 0;
};

// The process's runtime, or null before gex_Client_Init.
inline Runtime* g_runtime = nullptr;

// The runtime, or a fatal error naming `call` when the client has not
// been initialised.
Runtime& RuntimeFor(const char* call);

// The C API call that sends a message of `category` as a Request or a
// Reply ("gex_AM_RequestMedium"), for messages about it.
inline const char* SendCallName(am::Category category, bool request) {
  static const char* const kNames[2][3] = {
      {"gex_AM_ReplyShort", "gex_AM_ReplyMedium", "gex_AM_ReplyLong"},
      {"gex_AM_RequestShort", "gex_AM_RequestMedium", "gex_AM_RequestLong"}};
  return kNames[request][static_cast<int>(category)];
}

// Where the reply to `token`'s Request goes (its network handle).
inline pshm::ReplyTo& ReplyTo(const am::Token& token) {
  return *static_cast<pshm::ReplyTo*>(token.reply);
}

// One round of progress: poll the network, then let the barrier and the
// collectives send what has become possible (each one atomic load when
// nothing is in flight; not from inside a handler, where sending a
// Request is not allowed). What every polling call (gasnet_AMPoll, the Test
// calls) does. Returns the number of messages the network delivered.
int Progress(Runtime& rt);

// One round of waiting: Progress, then yielding the CPU when polite, or a
// spin-wait pause when nothing arrived.
void WaitProgress(Runtime& rt);

// Prints `message` (prefixed with the call) when verbose errors are on
// and returns `code`.
int ReportError(const char* call, int code, const std::string& message);

}  // namespace gex::api

#endif  // GEX_API_RUNTIME_H_
