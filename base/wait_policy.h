// How the threads of one process wait for progress (a reply, room in a
// queue, a barrier): spin while every waiting thread on the host can have a
// CPU of its own, give CPUs up once they cannot.
//
// Spinning (CpuRelax between polls) reacts fastest, but only while the
// thread that will end the wait is running too. With more waiting threads
// than CPUs, a spinner holds a CPU for its whole time slice while the
// threads it waits for (a peer rank's, or the one of its own rank that holds
// a lock or has its message half read) sit in the run queue: 2 ranks of 4
// threads on 2 CPUs ran 70-150 times slower than 2 ranks of 1 thread for 4
// times the work. GASNet's polite mode counts ranks only; this counts the
// threads that wait.
//
// Three regimes, decided at every round of a wait:
//  - always yield: more ranks on the host than CPUs, or
//    gasnet_set_waitmode(GASNET_WAIT_BLOCK); every round yields (as
//    before: a single-threaded rank has nothing better to do).
//  - oversubscribed by threads (PAR): (threads of this process in a wait
//    round now) x (ranks on the host) > CPUs, counting the other ranks as
//    busy as this one (their counts are not read: a host-wide count would
//    be a line every rank writes on every round). Bounded spin, then
//    yield: kSpinRounds empty rounds with CpuRelax, then one yield. A
//    round that made progress starts the spin again.
//  - otherwise: CpuRelax after a round that found nothing, exactly as a
//    single-threaded rank always did. SEQ clients (count_threads false)
//    pay no atomic at all. (Yielding here too after some 1024 empty
//    rounds was tried: with other processes loading the CPUs it cut each
//    rank's time on a CPU into short stretches, and 2 ranks of 1 thread,
//    which make progress only while both run, took 2-4 s where pure
//    spinning took 0.1-0.9 s.)
//
//   WaitPolicy policy;
//   policy.Configure(ranks_on_host, OnlineCpuCount(), /*count_threads=*/par);
//   ...
//   WaitPolicy::Round round(policy);  // counts this thread while it polls
//   round.Pause(Poll() != 0);
#ifndef GEX_BASE_WAIT_POLICY_H_
#define GEX_BASE_WAIT_POLICY_H_

#include <atomic>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "base/spin_wait.h"

namespace gexrt {

namespace wait_policy_internal {
// The calling thread's empty rounds since it last yielded or progressed.
// Per thread, not per wait: a client's wait loop (GASNET_BLOCKUNTIL) is
// one round per call, and nothing says when it ends. A wait that ends
// without progress of its own (another thread ran its reply) leaves its
// count to the thread's next wait, which then yields that much sooner:
// harmless.
inline thread_local int t_idle_rounds = 0;
}  // namespace wait_policy_internal

class WaitPolicy {
 public:
  // Empty rounds a thread spins through before it yields, when the
  // threads oversubscribe the CPUs. A round is a poll of every queue and
  // a CpuRelax (0.1-0.3 us here), so about 2-10 us: long enough for a
  // running peer's reply (one cache-line round trip), short beside a
  // time slice (milliseconds) that a descheduled peer would otherwise be
  // waited for.
  static constexpr int kSpinRounds = 32;

  WaitPolicy() = default;
  WaitPolicy(const WaitPolicy&) = delete;
  WaitPolicy& operator=(const WaitPolicy&) = delete;

  // Before any thread waits. `ranks_on_host`: the job's processes on this
  // host, assumed to share one CPU set; `cpus`: the CPUs this process may
  // run on (OnlineCpuCount()); `count_threads`: several threads may wait at
  // once (GASNET_PAR). Also sets always_yield when the ranks alone
  // outnumber the CPUs.
  void Configure(int ranks_on_host, int cpus, bool count_threads);

  // GASNET_WAIT_BLOCK: yield at every round. Any time, from any thread.
  void set_always_yield(bool yield) {
    always_yield_.store(yield, std::memory_order_relaxed);
  }
  bool always_yield() const {
    return always_yield_.load(std::memory_order_relaxed);
  }
  bool count_threads() const { return count_threads_; }

  // Threads in a Round now (for tests and statistics).
  int waiting() const { return waiting_.load(std::memory_order_relaxed); }

  // After a poll that is not part of a wait (gasnet_AMPoll, the Test
  // calls): whether the polling thread should give its CPU up now, which it
  // should while another thread of this process is in a Round, i.e. blocked
  // until progress is made (a blocking Get, a barrier wait). Threads that
  // spin in gasnet_AMPoll have nothing to wait for and would otherwise keep
  // their CPUs for whole time slices, each one a slice the waiter (and the
  // peer threads that must run for it) spend in the run queue: with 2 ranks
  // of 1 RMA thread + 3 spinning pollers on 2 CPUs, every blocking RMA round
  // trip cost about a time slice. Only with counted threads (PAR): a SEQ
  // client pays one test of a plain bool; a PAR poller one relaxed load of
  // a line the waiters write anyway.
  bool ShouldPollerYield() const {
    return count_threads_ && waiting_.load(std::memory_order_relaxed) > 0;
  }
  // Whether `waiting` threads of this process, in rounds at once, are more
  // than the CPUs give each rank's share (false when threads are not
  // counted).
  bool Oversubscribed(int waiting) const {
    return count_threads_ && waiting > threads_per_rank_;
  }

  // One round of a wait, from before its poll to after its pause: the
  // thread counts as waiting meanwhile (when threads are counted).
  class Round {
   public:
    explicit Round(WaitPolicy& policy)
        : policy_(policy), counted_(policy.count_threads_) {
      if (counted_) policy_.waiting_.fetch_add(1, std::memory_order_relaxed);
    }
    ~Round() {
      if (counted_) policy_.waiting_.fetch_sub(1, std::memory_order_relaxed);
    }
    Round(const Round&) = delete;
    Round& operator=(const Round&) = delete;

    // After the round's poll: `progressed` when it delivered something.
    // Yields after progress too when always yielding (a client's wait
    // loop: whatever arrived, the thread it woke may need this CPU).
    void Pause(bool progressed) { Step(progressed, true); }
    // The same, but no pause at all after a round that progressed (a send
    // waiting for room, which retries at once).
    void PauseIfIdle(bool progressed) { Step(progressed, false); }

   private:
    void Step(bool progressed, bool yield_after_progress) {
      if (ABSL_PREDICT_FALSE(policy_.always_yield())) {
        if (!progressed || yield_after_progress) YieldCpu();
        return;
      }
      if (ABSL_PREDICT_TRUE(!counted_ ||
                            !policy_.Oversubscribed(policy_.waiting()))) {
        if (!progressed) CpuRelax();
        return;
      }
      // Oversubscribed: the thread-local count, only here.
      int& idle = wait_policy_internal::t_idle_rounds;
      if (progressed) {
        idle = 0;
      } else if (++idle < kSpinRounds) {
        CpuRelax();
      } else {
        idle = 0;
        YieldCpu();
      }
    }

    WaitPolicy& policy_;
    const bool counted_;
  };

 private:
  bool count_threads_ = false;
  // cpus / ranks_on_host, rounded down: how many waiting threads of this
  // process the CPUs hold when every rank waits with as many.
  int threads_per_rank_ = 1;
  std::atomic<bool> always_yield_{false};
  // Written by every waiting thread twice a round: a line of its own.
  alignas(64) std::atomic<int> waiting_{0};
};

}  // namespace gexrt

#endif  // GEX_BASE_WAIT_POLICY_H_
