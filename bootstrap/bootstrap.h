// The Bootstrap interface: what every conduit uses to talk to the rest of
// the job before its own network is up (and at exit, after it is down).
//
// A Bootstrap knows this process's job rank and the job size, and offers a
// few collectives over the launcher's control channel: barrier, allgather,
// alltoall and broadcast. It is slow-path code (start-up and tear-down
// only), so it is an abstract class; what matters is that it is correct
// under any arrival order and that it never hangs: every wait is bounded by
// GASNET_BOOTSTRAP_TIMEOUT, and a wait that runs out is a fatal error naming
// the peer that did not answer.
//
// Implementations:
//   - CreateBootstrap() (bootstrap/create.h) picks one from the environment:
//     the launcher's control channel when started by gasnetrun_<conduit>,
//     else a singleton (a job of one rank).
//
// Collectives are called by every rank, in the same order, with the same
// sizes (the sizes are checked: a mismatch is a fatal error naming the
// rank).
#ifndef GEX_BOOTSTRAP_BOOTSTRAP_H_
#define GEX_BOOTSTRAP_BOOTSTRAP_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace gexrt {

using Rank = uint32_t;

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  // This process's rank in the job, 0 <= rank() < size().
  virtual Rank rank() const = 0;
  // The number of ranks in the job, at least 1.
  virtual Rank size() const = 0;

  // Returns once every rank has entered the barrier.
  virtual void Barrier() = 0;

  // Every rank contributes `len` bytes at `src`; on return `dst` holds
  // size() * len bytes, rank r's contribution at dst + r * len. `src` may
  // lie inside `dst`.
  virtual void Allgather(const void* src, size_t len, void* dst) = 0;

  // Every rank sends `len` bytes to every rank: `src` holds size() * len
  // bytes, the block at src + r * len for rank r; on return `dst` holds
  // size() * len bytes, the block from rank r at dst + r * len.
  virtual void Alltoall(const void* src, size_t len, void* dst) = 0;

  // Rank `root`'s `len` bytes at `src` are copied to `dst` on every rank
  // (including root; `src` is ignored elsewhere and may be null there).
  virtual void Broadcast(const void* src, size_t len, void* dst, Rank root) = 0;

  // Ends the whole job now: every rank is killed and the launcher exits
  // with `exit_code`. Never returns (this process exits with the code).
  [[noreturn]] virtual void Abort(int exit_code, std::string_view reason) = 0;

  // This process handles SIGTERM as a request to exit gracefully (exit/
  // is installed): the launcher may send it one when another rank dies
  // instead of waiting for the exit timeout. Optional; by default a no-op.
  virtual void ExitReady() {}

  // This rank's exit is not collective (the exit-code reduce ran out of
  // time) and the job should end with `code`: asks the launcher, which
  // decides once for the whole job (whoever asks first) and hands the
  // decision to every exit-ready rank, on every host, as kExitSignal
  // (bootstrap/exit_signal.h), this one included. False when there is no
  // launcher that can (exit/ then elects a leader over Active Messages
  // alone). May be called from a signal handler.
  virtual bool RequestJobExit(int /*code*/) { return false; }

  // The launcher asked which GASNet call this rank is in (a bootstrap
  // collective timed out without it): answers with CurrentCall()
  // (bootstrap/current_call.h). Called from a signal handler, so it must
  // not allocate. Optional; by default a no-op.
  virtual void ReportCurrentCall() {}

  // This process is leaving the job on purpose (its exit is not a crash):
  // tells the launcher, then closes the control channel. Not collective.
  // No collective may be called afterwards.
  virtual void Fini() = 0;

  // `fn(context)` is called over and over (about every millisecond) while
  // a collective waits for the others, from the next collective on; null
  // removes it. core/ sets it to the conduit's send-side progress once the
  // conduit is up: a message queued just before a collective must still
  // leave while this rank waits, and a manual-progress network sends only
  // when driven (the peer waiting for that message would wait forever).
  // The hook must run no handler. Both the launcher's channel and PMIx
  // (whose non-blocking fence and get complete on its own thread) wait in
  // slices and run it.
  void SetWaitHook(void (*fn)(void*), void* context) {
    wait_hook_ = fn;
    wait_hook_context_ = context;
  }

 protected:
  bool has_wait_hook() const { return wait_hook_ != nullptr; }
  void RunWaitHook() const {
    if (wait_hook_ != nullptr) wait_hook_(wait_hook_context_);
  }

 private:
  void (*wait_hook_)(void*) = nullptr;
  void* wait_hook_context_ = nullptr;
};

// The ranks, in order, that pass `mine` = true: an allgather of one byte
// per rank (collective). How the barrier and the exit protocol find every
// group's leader.
inline std::vector<Rank> RanksWithFlag(Bootstrap& bootstrap, bool mine) {
  const uint8_t flag = mine ? 1 : 0;
  std::vector<uint8_t> flags(bootstrap.size());
  bootstrap.Allgather(&flag, 1, flags.data());
  std::vector<Rank> ranks;
  for (Rank r = 0; r < bootstrap.size(); ++r) {
    if (flags[r] != 0) ranks.push_back(r);
  }
  return ranks;
}

}  // namespace gexrt

#endif  // GEX_BOOTSTRAP_BOOTSTRAP_H_
