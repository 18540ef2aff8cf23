#include "core/dispatch.h"

#include <cstdint>
#include <string>

#include "absl/base/optimization.h"
#include "absl/strings/str_format.h"
#include "am/handler_table.h"
#include "am/invoke.h"
#include "base/fatal.h"
#include "core/runtime.h"

namespace gexrt::core {
namespace {

[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void BadMessage(const Runtime& rt,
                                                     Rank source,
                                                     am::Category category,
                                                     bool is_request,
                                                     const std::string& why) {
  FatalErrorF("%s from rank %u to rank %u: %s",
              SendCallName(category, is_request), source, rt.rank, why);
}

// The two ways a message can fail to match its handler. Out of line, with
// their strings: a std::string in Deliver's own frame would put a stack
// protector and a bigger frame on every message's path.
[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void Unregistered(const Runtime& rt,
                                                       Rank source,
                                                       am::Category category,
                                                       bool is_request,
                                                       uint8_t handler) {
  BadMessage(rt, source, category, is_request,
             absl::StrFormat("handler index %u is not registered there "
                             "(gex_EP_RegisterHandlers)",
                             handler));
}
[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void Mismatched(
    const Runtime& rt, Rank source, am::Category category, bool is_request,
    const am::Entry& entry, uint8_t nargs) {
  BadMessage(rt, source, category, is_request,
             am::HandlerTable::Mismatch(entry, category, is_request, nargs));
}

// Runs one message's handler: the one place a handler is called.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void Deliver(
    Runtime& rt, Rank source, am::Category category, bool is_request,
    uint8_t handler, uint8_t nargs, const uint32_t* args, void* payload,
    size_t len, void* reply, am::Route route) {
  // The job is exiting: client handlers no longer run.
  if (ABSL_PREDICT_FALSE(handler >= am::kClientIndexBase &&
                         rt.handlers.client_handlers_disabled())) {
    return;
  }
  const am::Entry* entry = rt.handlers.Find(handler);
  if (ABSL_PREDICT_FALSE(entry == nullptr)) {
    Unregistered(rt, source, category, is_request, handler);
  }
  const uint32_t need = am::CategoryFlag(category) |
                        (is_request ? am::kFlagRequest : am::kFlagReply);
  if (ABSL_PREDICT_FALSE(
          (entry->flags & need) != need ||
          (entry->nargs != nargs && entry->nargs != am::kAnyArgs))) {
    Mismatched(rt, source, category, is_request, *entry, nargs);
  }
  am::Token token;
  token.source = source;
  token.entry = entry;
  token.is_request = is_request;
  token.is_long = category == am::Category::kLong;
  token.route = route;
  token.reply = reply;
  am::HandlerContext::Scope scope(&token);
  am::Invoke(entry->fn, category, &token, payload, len, nargs,
             reinterpret_cast<const int32_t*>(args));
}

}  // namespace

void DispatchShared(void* context, const pshm::Message& m) {
  Deliver(*static_cast<Runtime*>(context), m.source, m.category,
          m.channel == pshm::Channel::kRequest, m.handler, m.nargs, m.args,
          m.payload, m.payload_len, m.reply, am::Route::kShared);
}

void DispatchConduit(void* context, const Inbound& m) {
  Deliver(*static_cast<Runtime*>(context), m.source, m.category, m.is_request,
          m.handler, m.nargs, m.args, m.payload, m.len, m.reply,
          am::Route::kConduit);
}

}  // namespace gexrt::core
