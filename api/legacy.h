// gasnet_init for a conduit and mode (the conduit defines the
// mode-specific symbol gasnet.h names and calls this).
#ifndef GEX_API_LEGACY_H_
#define GEX_API_LEGACY_H_

#include "api/driver.h"

namespace gex::api {

int LegacyInit(const InitOptions& options, int* argc, char*** argv);

}  // namespace gex::api

#endif  // GEX_API_LEGACY_H_
