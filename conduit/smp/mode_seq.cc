// The smp conduit's SEQ entry points: the symbols gasnetex.h and gasnet.h
// name for a GASNET_SEQ client, so a client built for another mode does
// not link against this library.
#include "api/driver.h"
#include "api/legacy.h"
#include "conduit/smp/smp_driver.h"
#include "gasnet.h"

namespace {

gex::api::InitOptions Options() {
  gex::api::InitOptions options;
  options.driver = &gex::smp::SmpDriver();
  options.thread_safe = false;
  return options;
}

}  // namespace

extern "C" int _gex_Client_Init_SEQ(gex_Client_t* client_p, gex_EP_t* ep_p,
                                    gex_TM_t* tm_p, const char* client_name,
                                    int* argc, char*** argv,
                                    gex_Flags_t flags) {
  return gex::api::ClientInit(Options(), client_p, ep_p, tm_p, client_name,
                              argc, argv, flags);
}

extern "C" int _gasnet_init_SEQ(int* argc, char*** argv) {
  return gex::api::LegacyInit(Options(), argc, argv);
}
