// The out-of-line part of gasnet.h's legacy RMA family: value Gets in flight
// (gasnet_get_nb_val / gasnet_wait_syncnb_valget) and gasnet_memset*. The
// put/get/sync forms themselves are inline wrappers in gasnet.h.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "am/token.h"
#include "api/runtime.h"
#include "base/fatal.h"
#include "gasnet.h"

// A value Get in flight: its event and the value's bytes. Kept on a free
// list (per thread) after it is synced.
struct _gasnet_valget_op {
  gex_Event_t event = GEX_EVENT_INVALID;
  gex_RMA_Value_t value = 0;
  _gasnet_valget_op* next_free = nullptr;
};

namespace gexrt::api {
namespace {

// The free list of the thread that synced the ops on it (an op may be
// synced by a thread other than the one that started it; it then joins
// the syncing thread's list). Ops live until the process exits.
thread_local _gasnet_valget_op* t_free_valgets = nullptr;

_gasnet_valget_op* NewValget() {
  _gasnet_valget_op* op = t_free_valgets;
  if (op != nullptr) {
    t_free_valgets = op->next_free;
    op->next_free = nullptr;
    op->value = 0;
    return op;
  }
  return new _gasnet_valget_op;
}

// Where the nbytes of a value lie in a gex_RMA_Value_t (its low-order
// bytes, as gex_RMA_GetBlockingVal reads them).
unsigned char* ValueBytes(gex_RMA_Value_t* v, size_t nbytes) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return reinterpret_cast<unsigned char*>(v) + sizeof *v - nbytes;
#else
  (void)nbytes;
  return reinterpret_cast<unsigned char*>(v);
#endif
}

void CheckNotInHandler(const char* call) {
  if (am::HandlerContext::InHandler()) {
    FatalErrorF("%s: called from an AM handler", call);
  }
}

// Sets [dest, +nbytes) of `node`'s segment to `val`: in place when the
// segment is mapped here, else by blocking Puts of a filled buffer (which
// check the range and name the call's gex_ form on misuse).
void Memset(const char* call, gasnet_node_t node, void* dest, int val,
            size_t nbytes) {
  RuntimeFor(call);
  CheckNotInHandler(call);
  if (nbytes == 0) return;
  const gex_TM_t tm = _gasnet_tm();
  const unsigned char byte = static_cast<unsigned char>(val);
  if (void* local = _gex_RMA_DirectAddress(tm, node, dest, &byte, nbytes)) {
    std::memset(local, byte, nbytes);
    return;
  }
  constexpr size_t kPiece = 64 * 1024;
  const size_t piece = std::min(nbytes, kPiece);
  const std::unique_ptr<unsigned char[]> buffer(new unsigned char[piece]);
  std::memset(buffer.get(), byte, piece);
  auto* at = static_cast<unsigned char*>(dest);
  for (size_t done = 0; done < nbytes; done += piece) {
    const size_t n = std::min(piece, nbytes - done);
    _gex_RMA_PutBlocking(tm, node, at + done, buffer.get(), n, 0);
  }
}

}  // namespace
}  // namespace gexrt::api

extern "C" {

gasnet_valget_handle_t gasnet_get_nb_val(gasnet_node_t node, void* src,
                                         size_t nbytes) {
  static constexpr char kCall[] = "gasnet_get_nb_val";
  gexrt::api::RuntimeFor(kCall);
  if (nbytes == 0 || nbytes > SIZEOF_GASNET_REGISTER_VALUE_T) {
    gexrt::FatalErrorF("%s: nbytes %zu is not 1..%d", kCall, nbytes,
                       SIZEOF_GASNET_REGISTER_VALUE_T);
  }
  _gasnet_valget_op* op = gexrt::api::NewValget();
  op->event =
      gex_RMA_GetNB(_gasnet_tm(), gexrt::api::ValueBytes(&op->value, nbytes),
                    node, src, nbytes, 0);
  return op;
}

gasnet_register_value_t gasnet_wait_syncnb_valget(
    gasnet_valget_handle_t handle) {
  static constexpr char kCall[] = "gasnet_wait_syncnb_valget";
  gexrt::api::RuntimeFor(kCall);
  if (handle == nullptr) {
    gexrt::FatalErrorF("%s: NULL handle", kCall);
  }
  gex_Event_Wait(handle->event);
  const gasnet_register_value_t value = handle->value;
  handle->event = GEX_EVENT_INVALID;
  handle->next_free = gexrt::api::t_free_valgets;
  gexrt::api::t_free_valgets = handle;
  return value;
}

void gasnet_memset(gasnet_node_t node, void* dest, int val, size_t nbytes) {
  gexrt::api::Memset("gasnet_memset", node, dest, val, nbytes);
}

gasnet_handle_t gasnet_memset_nb(gasnet_node_t node, void* dest, int val,
                                 size_t nbytes) {
  gexrt::api::Memset("gasnet_memset_nb", node, dest, val, nbytes);
  return GASNET_INVALID_HANDLE;
}

void gasnet_memset_nbi(gasnet_node_t node, void* dest, int val, size_t nbytes) {
  gexrt::api::Memset("gasnet_memset_nbi", node, dest, val, nbytes);
}

}  // extern "C"
