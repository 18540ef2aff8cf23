#include "api/exit.h"

#include <cstdint>
#include <vector>

#include "am/handler_table.h"
#include "am/token.h"
#include "api/runtime.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "bootstrap/exit_timeout.h"
#include "exit/graceful_exit.h"
#include "exit/protocol.h"
#include "pshm/supernode.h"

namespace gex::api {
namespace {

// The supernode's objects: network (0), segments (1), barrier (2), this.
constexpr uint32_t kExitSerial = 3;

// The protocol's messages as internal Short Active Messages of three
// arguments (kind, a, b), over the PSHM network (every rank of an smp job
// is a supernode peer).
class AmTransport final : public exit::Transport {
 public:
  AmTransport(Runtime* rt, uint8_t handler) : rt_(rt), handler_(handler) {}

  bool TrySend(Rank dest, const exit::Message& m, bool reply) override {
    const int32_t index = rt_->supernode->LocalIndex(dest);
    if (index < 0) {
      FatalErrorF("exit: rank %u cannot be reached from rank %u", dest,
                  rt_->rank);
    }
    const uint32_t args[3] = {static_cast<uint32_t>(m.kind), m.a, m.b};
    if (!reply) {
      return rt_->net->SendRequest(static_cast<uint32_t>(index),
                                   pshm::Category::kShort, handler_, args, 3,
                                   nullptr, 0, nullptr, 0,
                                   /*immediate=*/true) == pshm::SendStatus::kOk;
    }
    // The protocol replies only from the handler of `dest`'s request.
    const am::Token* token = am::HandlerContext::Current();
    if (token == nullptr || !token->is_request || token->source != dest) {
      FatalErrorF("exit: a reply to rank %u outside its request's handler",
                  dest);
    }
    return rt_->net->SendReply(ReplyTo(*token), pshm::Category::kShort,
                               handler_, args, 3, nullptr, 0, nullptr, 0,
                               /*immediate=*/true) == pshm::SendStatus::kOk;
  }

  void Poll() override { rt_->net->Poll(); }

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

void ExitHandler(gex_Token_t token, gex_AM_Arg_t kind, gex_AM_Arg_t a,
                 gex_AM_Arg_t b) {
  gex_Token_Info_t info;
  gex_Token_Info(token, &info, GEX_TI_SRCRANK);
  const auto k = static_cast<uint32_t>(kind);
  if (k >= exit::kMessageKinds) {
    FatalErrorF("exit: message of unknown kind %u from rank %u", k,
                info.gex_srcrank);
  }
  g_exit->protocol->OnMessage(
      info.gex_srcrank,
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
  const uint32_t group = exit::GroupSize(members, topology.group_size);
  topology.leaders = RanksWithFlag(*rt.bootstrap, sn.my_index() % group == 0);

  auto* state = new ExitState;  // Lives until the process ends.
  absl::StatusOr<pshm::SharedObject> cells = pshm::ShareWithSupernode(
      *rt.bootstrap, sn, kExitSerial, exit::SharedAreaBytes(members));
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
  env.context = &rt;
  exit::Install(env);
}

}  // namespace gex::api
