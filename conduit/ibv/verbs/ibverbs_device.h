// The verbs interface (verbs.h) over Debian's libibverbs (rdma-core 44):
// one object of ours per verbs object, each call one verbs call. Used for
// real HCAs (and rxe/siw, where a kernel has them).
#ifndef GEX_CONDUIT_IBV_VERBS_IBVERBS_DEVICE_H_
#define GEX_CONDUIT_IBV_VERBS_IBVERBS_DEVICE_H_

#include <memory>

#include "conduit/ibv/verbs/verbs.h"

namespace gexrt::ibv::verbs {

// The libibverbs provider. ListDevices reports what ibv_get_device_list
// finds: an empty list (not an error) on a machine without verbs support.
std::unique_ptr<Provider> MakeIbverbsProvider();

}  // namespace gexrt::ibv::verbs

#endif  // GEX_CONDUIT_IBV_VERBS_IBVERBS_DEVICE_H_
