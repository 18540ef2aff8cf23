// gasnet_exit and the rest of the job's exit (core/exit.cc): the exit
// protocol (exit/) over this runtime's system Active Messages.
#ifndef GEX_CORE_EXIT_H_
#define GEX_CORE_EXIT_H_

namespace gexrt::core {

class Runtime;

// Registers the exit protocol's internal handler, shares the supernode's
// exit cells, finds every group's leader (GEX_EXIT_GROUP), and installs
// the exit paths (signals, on_exit; exit/graceful_exit.h). Collective:
// gex_Client_Init calls it on every rank once the supernode is up.
void ExitInit(Runtime& rt);

}  // namespace gexrt::core

#endif  // GEX_CORE_EXIT_H_
