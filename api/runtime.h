// The state behind the C API: one client per process (what GASNet-EX
// supports today), its primordial endpoint, team and segment, over core's
// runtime (bootstrap, node map, PSHM, the conduit, handler table).
// Internal to api/: the public faces are include/gasnetex.h and gasnet.h.
#ifndef GEX_API_RUNTIME_H_
#define GEX_API_RUNTIME_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "api/barrier.h"
#include "core/dispatch.h"
#include "core/progress.h"
#include "core/runtime.h"
#include "gasnetex.h"

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

namespace gexrt::api {

// The C API's state over core's: the C objects handed to the client, the
// barrier, and the answers to the system queries.
class Runtime : public core::Runtime {
 public:
  Barrier barrier;

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

// gex_System_SetVerboseErrors: whether ReportError prints (default on).
// Process-wide, and settable before gex_Client_Init.
inline std::atomic<bool> g_verbose_errors{true};

// The process's runtime, or null before gex_Client_Init.
inline Runtime* g_runtime = nullptr;

// The runtime, or a fatal error naming `call` when the client has not
// been initialised.
Runtime& RuntimeFor(const char* call);

using core::Progress;
using core::SendCallName;
using core::WaitProgress;

// Prints `message` (prefixed with the call) when verbose errors are on
// and returns `code`.
int ReportError(const char* call, int code, const std::string& message);

}  // namespace gexrt::api

#endif  // GEX_API_RUNTIME_H_
