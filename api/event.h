// The object behind a gex_Event_t the runtime completes later (a barrier,
// for now). The constant events GEX_EVENT_INVALID and GEX_EVENT_NO_OP are
// not objects.
#ifndef GEX_API_EVENT_H_
#define GEX_API_EVENT_H_

#include "gasnetex.h"

struct gex_Event_opaque {
  // Makes progress and returns whether the event has completed.
  bool (*test)(gex_Event_opaque* self) = nullptr;
};

#endif  // GEX_API_EVENT_H_
