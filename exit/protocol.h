// The exit protocol: how the ranks of a job agree that the job is ending
// and with which exit code, whichever way the exit began.
//
// Three steps, each bounded by a deadline (the caller, exit/graceful_exit.h,
// derives them from GASNET_EXITTIMEOUT):
//
//  1. Reduce (collective exits). Every rank contributes its exit code; the
//     job agrees on the largest. Within a group of supernode peers (the
//     whole supernode by default) the codes meet in shared memory at the
//     group's first rank, its leader; the leaders combine theirs with a
//     dissemination over system Active Messages (ceil(log2 L) rounds for
//     L leaders, one message sent and one received per round); each leader
//     publishes the result in shared memory for its group. When every rank
//     exits at about the same time this is all: O(log N) messages per
//     rank, none at all on one supernode.
//  2. Elect (non-collective exits: the reduce ran out of time). Each rank
//     still exiting asks rank 0 whether it leads; rank 0 answers "leader"
//     to the first to ask and "member" to the rest. A rank that has
//     already received an exit request knows it is a member and does not
//     ask.
//  3. Lead. The leader sends an exit request with its code to every other
//     rank and waits for each one's reply. A rank that receives the
//     request replies at once, and its owner is told (on_remote_exit), so
//     a rank that did not know the job was ending (polling, in a barrier)
//     starts exiting with the leader's code. Supernode peers that have not
//     replied after a while are also nudged: the request is written into
//     their shared cell and they are sent kNudgeSignal, which reaches a
//     rank that never polls (a compute loop, direct RMA).
//
// Messages: best case (the exiting rank is way ahead) 2 for the election
// and 2(N-1) for the requests and replies, 2N in all; worst case (every
// rank asks rank 0) 2N-2 + 2(N-1) = 4N-2, as GASNet's ibv-conduit notes
// analyse.
//
// All of this may run in a signal handler or an Active Message handler,
// on any thread: the state the handlers share is atomics only, nothing
// allocates after construction, and every wait polls the transport.
#ifndef GEX_EXIT_PROTOCOL_H_
#define GEX_EXIT_PROTOCOL_H_

#include <signal.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/exit_signal.h"

namespace gexrt::exit {

// The signal that tells a supernode peer an exit request waits in its
// shared cell. Its default action is to ignore it, so a nudge that reaches
// a process before its handler is installed does no harm.
// The same signal as the launcher's kExitSignal, which carries a value.
inline constexpr int kNudgeSignal = kExitSignal;

enum class MessageKind : uint32_t {
  kReduce = 0,       // a: round, b: the largest code so far.
  kElect = 1,        // To rank 0: may the sender lead? a: its code.
  kElectReply = 2,   // a: 1 leader, 0 member.
  kExitRequest = 3,  // From the leader: a: the job's exit code.
  kExitReply = 4,    // To the leader.
};
inline constexpr int kMessageKinds = 5;

// A protocol message: three 32-bit Active Message arguments on the wire.
struct Message {
  MessageKind kind = MessageKind::kReduce;
  uint32_t a = 0;
  uint32_t b = 0;
};

// How the protocol reaches other ranks: the conduit's system Active
// Messages. Both calls may be made from a signal handler or from inside a
// message handler (where `reply` is true for the answer to the message
// being handled).
class Transport {
 public:
  virtual ~Transport() = default;
  // Sends `m` to rank `dest` (possibly this rank) if that can be done now;
  // false when there is no room (a full queue). Never waits: the peer may
  // be dead, or stuck itself, and the protocol must still reach its
  // deadline; it retries while polling, or falls back to shared memory.
  virtual bool TrySend(Rank dest, const Message& m, bool reply) = 0;
  // Delivers what has arrived, this protocol's messages to OnMessage.
  virtual void Poll() = 0;
};

// A point in CLOCK_MONOTONIC time, in nanoseconds (clock_gettime is
// async-signal-safe).
using Deadline = int64_t;
int64_t MonotonicNanos();

// The shared memory of one supernode: one cell per member, then one per
// group. Zeroed when created; written only during an exit.
struct alignas(64) MemberCell {
  std::atomic<uint64_t> arrive;   // kPresent | code: joined the reduce.
  std::atomic<uint64_t> request;  // kPresent | leader << 8 | code.
  std::atomic<uint32_t> ack;      // 1: answered `request`.
  std::atomic<int32_t> pid;       // Written at start-up.
  // In rank 0's cell only: 0 until a leader is elected, then the leader's
  // rank + 1. Rank 0's answers and its supernode peers' fallback (below)
  // both take it here; holding the winner (not just "taken") lets a
  // candidate whose ask rank 0 granted after the candidate stopped waiting
  // still find that it leads.
  std::atomic<uint32_t> leader_taken;
};
struct alignas(64) GroupCell {
  std::atomic<uint64_t> result;  // kPresent | the reduced code.
};
size_t SharedAreaBytes(uint32_t supernode_members);

// Where this rank sits: the supernode and its groups, and the leaders of
// every group of the job (collected by the caller at start-up).
struct Topology {
  Rank rank = 0;
  Rank size = 1;
  std::vector<Rank> supernode;  // Job ranks by supernode index.
  uint32_t my_index = 0;        // In the supernode.
  uint32_t group_size = 0;      // Members per group; 0: the whole supernode.
  // Every group's leader, in rank order (SupernodeGroups, which also
  // splits the supernode here).
  std::vector<Rank> leaders;
};

// kHandedOff: rank 0 did not answer and the launcher was asked to end the
// job instead (Bootstrap::RequestJobExit); its decision arrives as a
// request.
enum class Role { kUnknown, kLeader, kMember, kFailed, kHandedOff };

// Messages this rank sent, by kind.
struct Counts {
  uint32_t sent[kMessageKinds] = {};
};

class Protocol {
 public:
  // Told when an exit request arrives (after the reply went out), from the
  // handler that received it or from the nudge. May not return.
  using RemoteExitFn = void (*)(void* context, Rank leader, int code);

  // `area` is the supernode's shared area (SharedAreaBytes), mapped here;
  // `transport` outlives the protocol.
  Protocol(const Topology& topology, void* area, Transport* transport,
           bool polite, RemoteExitFn on_remote_exit, void* context);
  Protocol(const Protocol&) = delete;
  Protocol& operator=(const Protocol&) = delete;

  // Publishes this process's pid for nudges (`pid` 0: never nudged, as in
  // tests where ranks are threads).
  void Join(int32_t pid);

  // A launcher that can end the job for this rank (Bootstrap::
  // RequestJobExit): a silent rank 0 or silent ranks after the nudge are
  // then handed to it rather than waited for until the deadline. It
  // reaches every rank, computing or on another host, at once.
  void SetLauncher(Bootstrap* launcher) { launcher_ = launcher; }

  // Step 1: the job's largest exit code, or -1 when not every rank joined
  // by `deadline` (or an exit request arrived: the exit is not
  // collective).
  int Reduce(int code, Deadline deadline);
  // Step 2: kLeader, kMember, or kFailed when rank 0 did not answer by
  // `deadline`. A rank 0 that does not poll (a compute loop) cannot
  // answer; its supernode peers then take the election in rank 0's shared
  // cell themselves at `fallback_at`, and other ranks with a launcher hand
  // the exit to it then (kHandedOff).
  Role Elect(int code, Deadline fallback_at, Deadline deadline);
  // Step 3, leader: sends the requests, nudges supernode peers still
  // silent at `nudge_at` (and, with a launcher, hands the exit to it then
  // and waits for its decision), and returns whether every rank replied,
  // or the launcher's decision arrived, by `deadline`.
  bool Lead(int code, Deadline nudge_at, Deadline deadline);
  // Step 3, member: whether the leader's request arrived by `deadline`.
  bool AwaitRequest(Deadline deadline);
  // Step 3, member, after the request arrived: the reply that found no
  // room when the request's handler tried it (an IMMEDIATE send on a full
  // queue) goes now, as a message of its own, by `deadline`; without it a
  // leader on another supernode (no shared cell to read) would wait for
  // this rank until its deadline. Nothing when the reply went.
  void SendOwedReply(Deadline deadline);

  // The launcher's decision (exit/signals.cc receives it as kExitSignal):
  // an exit request from `initiator` with the job's code. `peer_lost`: a
  // rank died, so the exit must not wait for anyone.
  void LauncherRequest(Rank initiator, int code, bool peer_lost);

  // A protocol message from `source` (the conduit's handler calls this).
  void OnMessage(Rank source, const Message& m);
  // The nudge: when the leader left a request in this rank's cell, takes
  // it (acknowledging it in shared memory), tells on_remote_exit, and
  // returns true.
  bool TakeSharedRequest();

  bool request_received() const {
    return request_.load(std::memory_order_acquire) != 0;
  }
  // The code of the request that arrived (the job's: every rank that got
  // a request exits with it). Only after request_received().
  int request_code() const {
    return static_cast<int>(request_.load(std::memory_order_acquire) & 0xff);
  }
  // The launcher said a rank died: nothing should wait for peers now.
  bool peer_lost() const { return peer_lost_.load(std::memory_order_acquire); }
  Counts counts() const;
  const Topology& topology() const { return topology_; }

 private:
  static constexpr uint64_t kPresent = uint64_t{1} << 63;
  static constexpr int kMaxRounds = 32;

  MemberCell& member(uint32_t index) const { return members_[index]; }
  GroupCell& group_cell() const { return groups_[my_index_ / group_size_]; }
  // One try (counted when it went out).
  bool TrySend(Rank dest, const Message& m, bool reply);
  // Tries until sent, polling in between; false at `deadline` (or, with
  // `stop_on_request`, once an exit request has arrived).
  bool SendBy(Rank dest, const Message& m, Deadline deadline,
              bool stop_on_request);
  // Writes the request into the cells of supernode peers that have not
  // replied, and signals them.
  void Nudge(int code);
  // Polls until `done()` or `deadline`; with `stop_on_request`, also stops
  // when an exit request has arrived. Returns done().
  template <typename Done>
  bool WaitUntil(Done done, Deadline deadline, bool stop_on_request);
  // Records an exit request from `leader` and tells the owner.
  void RequestArrived(Rank leader, int code);
  // Marks `r` as having answered the request; returns true the first time.
  bool MarkReplied(Rank r);

  Topology topology_;
  Transport* transport_;
  bool polite_;
  RemoteExitFn on_remote_exit_;
  void* context_;
  MemberCell* members_;
  GroupCell* groups_;
  uint32_t my_index_;
  uint32_t group_first_;
  uint32_t group_size_;
  bool group_leader_;
  int my_leader_ = -1;  // Index in topology_.leaders, when a leader.
  uint32_t rounds_ = 0;
  // Rank 0's election word when rank 0 is a supernode peer (else null).
  std::atomic<uint32_t>* leader_taken_ = nullptr;
  // Whether `candidate` leads: it takes the empty word, or finds it
  // already holds `candidate` (granted to an earlier ask of its own).
  bool TakeLeadFor(Rank candidate);

  std::atomic<uint64_t> arrivals_[kMaxRounds] = {};  // kPresent | code.
  std::atomic<int> elect_answer_{0};                 // 1 leader, 2 member.
  std::atomic<uint64_t> request_{0};  // kPresent | leader << 8 | code.
  std::atomic<bool> peer_lost_{false};
  // 1 + the leader whose request's reply found no room; 0: none owed.
  std::atomic<uint32_t> owed_reply_{0};
  Bootstrap* launcher_ = nullptr;
  std::unique_ptr<std::atomic<uint8_t>[]> replied_;  // By rank.
  std::unique_ptr<uint8_t[]> requested_;  // Leader: request sent, by rank.
  std::atomic<uint32_t> replies_{0};
  std::atomic<uint32_t> sent_[kMessageKinds] = {};
};

}  // namespace gexrt::exit

#endif  // GEX_EXIT_PROTOCOL_H_
