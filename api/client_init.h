// gex_Client_Init (and gasnet_init) for the conduit a final library was
// built with: the mode's entry points (api/mode_entry.cc, compiled once
// per conduit and mode by //conduit:conduit.bzl) call these with the
// conduit from core::CreateConduit().
#ifndef GEX_API_CLIENT_INIT_H_
#define GEX_API_CLIENT_INIT_H_

#include <memory>

#include "core/conduit.h"
#include "gasnetex.h"

namespace gexrt::api {

struct InitOptions {
  std::unique_ptr<core::Conduit> conduit;
  bool thread_safe = false;  // GASNET_PAR
};

// gex_Client_Init for the conduit and mode in `options`.
int ClientInit(InitOptions options, gex_Client_t* client_p, gex_EP_t* ep_p,
               gex_TM_t* tm_p, const char* client_name, int* argc, char*** argv,
               gex_Flags_t flags);

// gasnet_init: gex_Client_Init with the legacy client's objects.
int LegacyInit(InitOptions options, int* argc, char*** argv);

}  // namespace gexrt::api

#endif  // GEX_API_CLIENT_INIT_H_
