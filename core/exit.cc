#include "core/exit.h"

#include <cstdint>
#include <vector>

#include "am/handler_table.h"
#include "am/token.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "bootstrap/exit_timeout.h"
#include "bootstrap/supernode_groups.h"
#include "core/progress.h"
#include "core/router.h"
#include "core/runtime.h"
#include "exit/graceful_exit.h"
#include "exit/protocol.h"
#include "pshm/supernode.h"

namespace gexrt::core {
namespace {

// The protocol's messages as internal Short Active Messages of three
// arguments (kind, a, b), over the router (PSHM to supernode peers, the
// conduit to the rest). Every send is IMMEDIATE: the protocol retries
// while it polls, so it never waits on a full queue.
class AmTransport final : public exit::Transport {
 public:
  AmTransport(Runtime* rt, uint8_t handler) : rt_(rt), handler_(handler) {}

  bool TrySend(Rank dest, const exit::Message& m, bool reply) override {
    if (dest >= rt_->size) {
      FatalErrorF("exit: rank %u is not in the job (size %u)", dest, rt_->size);
    }
    const uint32_t args[3] = {static_cast<uint32_t>(m.kind), m.a, m.b};
    if (!reply) {
      return Request(*rt_, dest, am::Category::kShort, handler_, args, 3,
                     nullptr, 0, 0, nullptr,
                     /*immediate=*/true) == am::SendStatus::kOk;
    }
    // The protocol replies only from the handler of `dest`'s request.
    const am::Token* token = am::HandlerContext::Current();
    if (token == nullptr || !token->is_request || token->source != dest) {
      FatalErrorF("exit: a reply to rank %u outside its request's handler",
                  dest);
    }
    return Reply(*rt_, *const_cast<am::Token*>(token), am::Category::kShort,
                 handler_, args, 3, nullptr, 0, 0, nullptr,
                 /*immediate=*/true) == am::SendStatus::kOk;
  }

  void Poll() override { PollNetworks(*rt_); }

 private:
  Runtime* rt_;
  uint8_t handler_;
};

// Everything the exit needs for the rest of the process's life.
struct ExitState {
  pshm::SharedObject cells = pshm::SharedObject::Empty();
  std::unique_ptr<AmTransport> transport;
  std::unique_ptr<exit::Protocol> protocol;
};

ExitState* g_exit = nullptr;

void ExitHandler(void* token, int32_t kind, int32_t a, int32_t b) {
  const Rank source = static_cast<const am::Token*>(token)->source;
  const auto k = static_cast<uint32_t>(kind);
  if (k >= exit::kMessageKinds) {
    FatalErrorF("exit: message of unknown kind %u from rank %u", k, source);
  }
  g_exit->protocol->OnMessage(
      source,
      exit::Message{static_cast<exit::MessageKind>(k), static_cast<uint32_t>(a),
                    static_cast<uint32_t>(b)});
}

void DisableClientHandlers(void* context) {
  static_cast<Runtime*>(context)->handlers.DisableClientHandlers();
}

}  // namespace

void ExitInit(Runtime& rt) {
  am::Entry entry;
  entry.fn = reinterpret_cast<am::HandlerFn>(&ExitHandler);
  entry.flags = am::kFlagShort | am::kFlagRequest | am::kFlagReply;
  entry.nargs = 3;
  entry.name = "gex exit";
  if (absl::Status s = rt.handlers.Register(&entry, 1, /*internal=*/true);
      !s.ok()) {
    FatalErrorF("exit: %s", s.message());
  }

  const pshm::Supernode& sn = *rt.supernode;
  const auto members = static_cast<uint32_t>(sn.members().size());
  exit::Topology topology;
  topology.rank = rt.rank;
  topology.size = rt.size;
  topology.supernode = sn.members();
  topology.my_index = sn.my_index();
  // GEX_EXIT_GROUP=k splits each supernode into groups of k for the
  // reduce (1: every exit message is an Active Message), so tests reach
  // the cross-supernode path on one host.
  topology.group_size = static_cast<uint32_t>(
      env::GetInt("GEX_EXIT_GROUP", 0, 0, int64_t{1} << 20));
  topology.leaders = SupernodeGroups::Find(*rt.bootstrap, members,
                                           sn.my_index(), topology.group_size)
                         .leaders;

  auto* state = new ExitState;  // Lives until the process ends.
  absl::StatusOr<pshm::SharedObject> cells = pshm::ShareWithSupernode(
      *rt.bootstrap, sn, pshm::SharedSerial::kExitCells,
      exit::SharedAreaBytes(members));
  if (!cells.ok()) FatalErrorF("exit: %s", cells.status().message());
  state->cells = *std::move(cells);
  state->transport = std::make_unique<AmTransport>(&rt, entry.index);
  state->protocol = std::make_unique<exit::Protocol>(
      topology, state->cells.address(), state->transport.get(), rt.polite,
      &exit::OnRemoteExit, nullptr);
  g_exit = state;

  exit::Environment env;
  env.protocol = state->protocol.get();
  env.bootstrap = rt.bootstrap.get();
  env.timeout = ExitTimeoutFromEnv(rt.size);
  env.disable_client_handlers = &DisableClientHandlers;
  env.fini_network = [](void* context) {
    Runtime& rt = *static_cast<Runtime*>(context);
    rt.bootstrap->SetWaitHook(nullptr, nullptr);  // The network is going.
    rt.conduit->Fini();
  };
  env.context = &rt;
  exit::Install(env);
}

}  // namespace gexrt::core
