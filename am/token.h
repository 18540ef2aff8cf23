// A token: what the runtime knows about the message a handler runs for,
// handed to the handler as an opaque gex_Token_t (a pointer to this, on
// the stack of the code that delivers the message). Replies go back
// through it, and it enforces GASNet's rules: only a Request handler may
// reply, at most once. Those checks are one load and one store, so they are
// on in every build.
#ifndef GEX_AM_TOKEN_H_
#define GEX_AM_TOKEN_H_

#include <cstdint>

#include "am/handler_table.h"

// The calling thread's handler depth. It has a C name because
// <gasnetex.h>'s inline RMA path reads it: the one check that path keeps
// besides the segment bounds (am/token.cc defines it).
extern "C" {
extern __thread unsigned _gex_am_handler_depth;
}

namespace gexrt::am {

// Which transport delivered a message, so that its reply goes back the
// same way.
enum class Route : uint8_t {
  kShared,   // PSHM: a supernode peer.
  kConduit,  // The conduit's network.
};

struct Token {
  uint32_t source = 0;  // The sender's job rank.
  const Entry* entry = nullptr;
  bool is_request = false;
  bool is_long = false;
  bool replied = false;
  Route route = Route::kShared;
  // The transport's handle for where the reply goes (a Request's only).
  void* reply = nullptr;
};

// Handler context of the calling thread: how deep in handlers it is, so
// that calls a handler must not make (a Request, a barrier, a blocking
// wait) are reported. One thread-local counter, kept in every build.
class HandlerContext {
 public:
  static bool InHandler() { return _gex_am_handler_depth != 0; }
  static const Token* Current() { return current_; }

  // Marks the calling thread as running `token`'s handler while alive.
  class Scope {
   public:
    explicit Scope(const Token* token) : saved_(current_) {
      ++_gex_am_handler_depth;
      current_ = token;
    }
    ~Scope() {
      --_gex_am_handler_depth;
      current_ = saved_;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const Token* saved_;
  };

 private:
  static inline thread_local const Token* current_ = nullptr;
};

}  // namespace gexrt::am

#endif  // GEX_AM_TOKEN_H_
