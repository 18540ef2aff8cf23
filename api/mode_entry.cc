// The mode-specific entry points of a conduit's final library: the symbols
// gasnetex.h and gasnet.h name for the client's threading mode
// (_gex_Client_Init_SEQ, _gasnet_init_PAR, ...), so a client built for
// another mode does not link. //conduit:conduit.bzl compiles this file
// once per conduit and mode, with GASNET_SEQ or GASNET_PAR defined; the
// conduit comes from core::CreateConduit(), which the conduit's own
// library defines.
#include <utility>

#include "api/client_init.h"
#include "core/conduit.h"
#include "gasnet.h"

namespace {

gexrt::api::InitOptions Options() {
  gexrt::api::InitOptions options;
  options.conduit = gexrt::core::CreateConduit();
#if defined(GASNET_PAR)
  options.thread_safe = true;
#else
  options.thread_safe = false;
#endif
  return options;
}

}  // namespace

// gex_Client_Init and gasnet_init are macros naming the mode's symbols.
extern "C" int gex_Client_Init(gex_Client_t* client_p, gex_EP_t* ep_p,
                               gex_TM_t* tm_p, const char* client_name,
                               int* argc, char*** argv, gex_Flags_t flags) {
  return gexrt::api::ClientInit(Options(), client_p, ep_p, tm_p, client_name,
                                argc, argv, flags);
}

extern "C" int gasnet_init(int* argc, char*** argv) {
  return gexrt::api::LegacyInit(Options(), argc, argv);
}
