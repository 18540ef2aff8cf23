// Which GASNet call this process is in, for messages that must say where
// each rank was when something went wrong: a bootstrap collective that timed
// out names the calls of the ranks that joined it (sent with their
// contribution) and of the ranks that did not (asked for by the launcher
// when the timeout expires, answered from a signal handler).
//
// The C API's blocking entry points that may wait for other ranks
// (gex_Client_Init, gex_Segment_Attach, barriers, gex_Event_Wait, ...) hold
// a ScopedCurrentCall for their duration. It is one atomic exchange on entry
// and one store on return, and it nests (an inner call restores the outer
// one). With several threads it says what the most recently entered,
// still running, annotated call was.
#ifndef GEX_BOOTSTRAP_CURRENT_CALL_H_
#define GEX_BOOTSTRAP_CURRENT_CALL_H_

#include <atomic>

namespace gexrt {

namespace current_call_internal {
inline std::atomic<const char*> g_current{nullptr};
}  // namespace current_call_internal

// The innermost annotated call in progress (a string literal), or nullptr
// when none. Async-signal-safe.
inline const char* CurrentCall() {
  return current_call_internal::g_current.load(std::memory_order_relaxed);
}

class ScopedCurrentCall {
 public:
  // `name` must live for the whole process (a string literal).
  explicit ScopedCurrentCall(const char* name)
      : previous_(current_call_internal::g_current.exchange(
            name, std::memory_order_relaxed)) {}
  ~ScopedCurrentCall() {
    current_call_internal::g_current.store(previous_,
                                           std::memory_order_relaxed);
  }
  ScopedCurrentCall(const ScopedCurrentCall&) = delete;
  ScopedCurrentCall& operator=(const ScopedCurrentCall&) = delete;

 private:
  const char* previous_;
};

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_CURRENT_CALL_H_
