// What a conduit gives the API layer: its name and the checks and hooks
// that differ between conduits. A conduit's final library defines the
// mode-specific entry points (gex_Client_Init's _SEQ/_PAR symbols) and
// passes its Driver to ClientInit; nothing on a hot path goes through it.
#ifndef GEX_API_DRIVER_H_
#define GEX_API_DRIVER_H_

#include "absl/status/status.h"
#include "bootstrap/node_map.h"
#include "gasnetex.h"

namespace gex::api {

struct Driver {
  // "smp": names gasnetrun_<name> and messages.
  const char* name = nullptr;
  // Whether the conduit can reach the ranks of the job as `map` places
  // them (an error names why not), checked before anything is mapped.
  absl::Status (*check_job)(const NodeMap& map) = nullptr;
};

struct InitOptions {
  const Driver* driver = nullptr;
  bool thread_safe = false;  // GASNET_PAR
};

// gex_Client_Init for the conduit and mode in `options`.
int ClientInit(const InitOptions& options, gex_Client_t* client_p,
               gex_EP_t* ep_p, gex_TM_t* tm_p, const char* client_name,
               int* argc, char*** argv, gex_Flags_t flags);

}  // namespace gex::api

#endif  // GEX_API_DRIVER_H_
