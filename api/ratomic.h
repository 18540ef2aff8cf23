// Remote atomics (gasnet_ratomic.h; api/ratomic.cc): start-up hook.
#ifndef GEX_API_RATOMIC_H_
#define GEX_API_RATOMIC_H_

namespace gexrt::api {

class Runtime;

// Registers the remote atomics' internal AM handlers (fixed indices
// 120-121, see api/ratomic.cc). Called once by gex_Client_Init on every
// rank, before any message can be dispatched: a peer may operate on a
// rank's segment before that rank creates a domain of its own, and
// gex_AD_Create then needs no synchronisation.
void RatomicInit(Runtime& rt);

}  // namespace gexrt::api

#endif  // GEX_API_RATOMIC_H_
