// The object behind a gex_Event_t the runtime completes later (an RMA
// operation or access region, its local-completion leaf, a barrier). It is
// defined by the RMA layer (rma/event.h), which owns events; the constant
// events GEX_EVENT_INVALID and GEX_EVENT_NO_OP are not objects.
#ifndef GEX_API_EVENT_H_
#define GEX_API_EVENT_H_

#include <cstdint>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "gasnetex.h"
#include "rma/event.h"

namespace gexrt::api {

// A fatal error naming `call`: `e` is not a live event.
[[noreturn]] ABSL_ATTRIBUTE_NOINLINE void BadEvent(const char* call,
                                                   gex_Event_t e);

// Checks, before a test or wait calls through `e` (neither
// GEX_EVENT_INVALID nor GEX_EVENT_NO_OP), that it is a live event: a
// misaligned pointer, or one whose magic is not kLiveEvent (something that
// is not an event, or an RMA event already synced and released), is a
// fatal error naming `call`. One compare on a line the test reads anyway.
inline void CheckLiveEvent(const char* call, gex_Event_t e) {
  if (ABSL_PREDICT_FALSE(
          reinterpret_cast<uintptr_t>(e) % alignof(gex_Event_opaque) != 0 ||
          e->magic != rma::kLiveEvent)) {
    BadEvent(call, e);
  }
}

}  // namespace gexrt::api

#endif  // GEX_API_EVENT_H_
