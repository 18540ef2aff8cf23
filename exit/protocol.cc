#include "exit/protocol.h"

#include <sched.h>
#include <time.h>

#include <algorithm>

#include "bootstrap/supernode_groups.h"

namespace gexrt::exit {
namespace {

int Larger(int a, uint64_t word) {
  return std::max(a, static_cast<int>(word & 0xff));
}

}  // namespace

int64_t MonotonicNanos() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

size_t SharedAreaBytes(uint32_t supernode_members) {
  return supernode_members * (sizeof(MemberCell) + sizeof(GroupCell));
}

Protocol::Protocol(const Topology& topology, void* area, Transport* transport,
                   bool polite, RemoteExitFn on_remote_exit, void* context)
    : topology_(topology),
      transport_(transport),
      polite_(polite),
      on_remote_exit_(on_remote_exit),
      context_(context),
      members_(static_cast<MemberCell*>(area)),
      groups_(reinterpret_cast<GroupCell*>(static_cast<unsigned char*>(area) +
                                           topology.supernode.size() *
                                               sizeof(MemberCell))),
      my_index_(topology.my_index),
      replied_(new std::atomic<uint8_t>[topology.size]()),
      requested_(new uint8_t[topology.size]()) {
  const auto members = static_cast<uint32_t>(topology_.supernode.size());
  SupernodeGroups groups =
      SupernodeGroups::Split(members, my_index_, topology_.group_size);
  groups.SetLeaders(topology_.leaders, topology_.rank);
  group_size_ = groups.group_size;
  group_first_ = groups.first;
  group_leader_ = groups.leader;
  my_leader_ = groups.my_leader;
  rounds_ = groups.rounds;
  for (uint32_t i = 0; i < members; ++i) {
    if (topology_.supernode[i] == 0) leader_taken_ = &member(i).leader_taken;
  }
}

void Protocol::Join(int32_t pid) {
  member(my_index_).pid.store(pid, std::memory_order_release);
}

Counts Protocol::counts() const {
  Counts c;
  for (int k = 0; k < kMessageKinds; ++k) {
    c.sent[k] = sent_[k].load(std::memory_order_relaxed);
  }
  return c;
}

bool Protocol::TrySend(Rank dest, const Message& m, bool reply) {
  if (!transport_->TrySend(dest, m, reply)) return false;
  sent_[static_cast<int>(m.kind)].fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool Protocol::SendBy(Rank dest, const Message& m, Deadline deadline,
                      bool stop_on_request) {
  while (!TrySend(dest, m, /*reply=*/false)) {
    if (stop_on_request && request_received()) return false;
    if (MonotonicNanos() >= deadline) return false;
    transport_->Poll();
    if (polite_) sched_yield();
  }
  return true;
}

template <typename Done>
bool Protocol::WaitUntil(Done done, Deadline deadline, bool stop_on_request) {
  while (!done()) {
    if (stop_on_request && request_received()) return done();
    if (MonotonicNanos() >= deadline) return done();
    transport_->Poll();
    if (polite_) sched_yield();
  }
  return true;
}

int Protocol::Reduce(int code, Deadline deadline) {
  // Asked to exit by a leader: this exit is not collective.
  if (request_received()) return -1;
  member(my_index_).arrive.store(kPresent | static_cast<uint64_t>(code),
                                 std::memory_order_release);
  int value = code;
  if (!group_leader_) {
    uint64_t result = 0;
    if (!WaitUntil(
            [&] {
              return (result = group_cell().result.load(
                          std::memory_order_acquire)) != 0;
            },
            deadline, /*stop_on_request=*/true)) {
      return -1;
    }
    return static_cast<int>(result & 0xff);
  }
  // Step 1: the group's codes, from shared memory.
  const auto members = static_cast<uint32_t>(topology_.supernode.size());
  const uint32_t group_end = std::min(members, group_first_ + group_size_);
  for (uint32_t i = group_first_ + 1; i < group_end; ++i) {
    uint64_t word = 0;
    if (!WaitUntil(
            [&] {
              return (word = member(i).arrive.load(
                          std::memory_order_acquire)) != 0;
            },
            deadline, true)) {
      return -1;
    }
    value = Larger(value, word);
  }
  // Step 2: dissemination among the leaders. In round r, leader i tells
  // leader i + 2^r and hears from leader i - 2^r (mod L). Taking the
  // maximum is idempotent, so overlapping contributions do no harm, and a
  // leader finishing its last round implies every leader joined.
  const size_t leaders = topology_.leaders.size();
  for (uint32_t r = 0; r < rounds_; ++r) {
    const Rank to =
        topology_.leaders[(static_cast<size_t>(my_leader_) + (size_t{1} << r)) %
                          leaders];
    if (!SendBy(to,
                Message{MessageKind::kReduce, r, static_cast<uint32_t>(value)},
                deadline, true)) {
      return -1;
    }
    uint64_t word = 0;
    if (!WaitUntil(
            [&] {
              return (word = arrivals_[r].load(std::memory_order_acquire)) != 0;
            },
            deadline, true)) {
      return -1;
    }
    value = Larger(value, word);
  }
  // Step 3: the result, for the group.
  group_cell().result.store(kPresent | static_cast<uint64_t>(value),
                            std::memory_order_release);
  return value;
}

Role Protocol::Elect(int code, Deadline fallback_at, Deadline deadline) {
  if (request_received()) return Role::kMember;
  if (topology_.rank == 0) {
    return TakeLeadFor(0) ? Role::kLeader : Role::kMember;
  }
  // Rank 0 a supernode peer: at `fallback_at` its shared word decides.
  // Elsewhere, with a launcher: at `fallback_at` the launcher decides.
  const Deadline ask_by = leader_taken_ != nullptr || launcher_ != nullptr
                              ? std::min(fallback_at, deadline)
                              : deadline;
  auto answered = [&] {
    return elect_answer_.load(std::memory_order_acquire) != 0;
  };
  const Message ask{MessageKind::kElect, static_cast<uint32_t>(code), 0};
  if (SendBy(0, ask, ask_by, true)) WaitUntil(answered, ask_by, true);
  if (request_received()) return Role::kMember;
  if (!answered() && leader_taken_ != nullptr) {
    // Rank 0 is silent (computing, stuck or dead): take the election in
    // its cell directly. Its own answers use the same word, so there is
    // still one leader, even when our ask reached it after we stopped
    // waiting for the answer.
    return TakeLeadFor(topology_.rank) ? Role::kLeader : Role::kMember;
  }
  if (!answered() && launcher_ != nullptr && launcher_->RequestJobExit(code)) {
    return Role::kHandedOff;
  }
  if (!answered() && launcher_ != nullptr) {
    // The launcher could not be asked: wait for rank 0 as without one.
    if (SendBy(0, ask, deadline, true)) WaitUntil(answered, deadline, true);
    if (request_received()) return Role::kMember;
  }
  switch (elect_answer_.load(std::memory_order_acquire)) {
    case 1:
      return Role::kLeader;
    case 2:
      return Role::kMember;
    default:
      return Role::kFailed;
  }
}

bool Protocol::TakeLeadFor(Rank candidate) {
  uint32_t holder = 0;
  const uint32_t word = candidate + 1;
  return leader_taken_->compare_exchange_strong(holder, word,
                                                std::memory_order_acq_rel) ||
         holder == word;
}

bool Protocol::MarkReplied(Rank r) {
  if (replied_[r].exchange(1) != 0) return false;
  replies_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void Protocol::Nudge(int code) {
  const uint64_t word = kPresent | uint64_t{topology_.rank} << 8 |
                        static_cast<uint64_t>(code & 0xff);
  const auto members = static_cast<uint32_t>(topology_.supernode.size());
  for (uint32_t i = 0; i < members; ++i) {
    const Rank peer = topology_.supernode[i];
    if (i == my_index_ || replied_[peer].load() != 0) continue;
    member(i).request.store(word, std::memory_order_release);
    const int32_t pid = member(i).pid.load(std::memory_order_acquire);
    if (pid > 0) kill(pid, kNudgeSignal);
  }
}

bool Protocol::Lead(int code, Deadline nudge_at, Deadline deadline) {
  const Rank size = topology_.size;
  const Rank others = size - 1;
  const auto members = static_cast<uint32_t>(topology_.supernode.size());
  const Message request{MessageKind::kExitRequest, static_cast<uint32_t>(code),
                        0};
  bool nudged = false;
  for (;;) {
    // Requests go out as queues have room: a peer that is dead or stuck
    // (its queue full) must not keep the others from hearing.
    for (Rank r = 0; r < size; ++r) {
      if (r == topology_.rank || requested_[r] != 0 || replied_[r] != 0) {
        continue;
      }
      if (TrySend(r, request, /*reply=*/false)) requested_[r] = 1;
    }
    // A peer answers with a message, or in its shared cell (nudged, or its
    // reply found no room).
    for (uint32_t i = 0; i < members; ++i) {
      if (i != my_index_ &&
          member(i).ack.load(std::memory_order_acquire) != 0) {
        MarkReplied(topology_.supernode[i]);
      }
    }
    if (replies_.load(std::memory_order_acquire) >= others) return true;
    const int64_t now = MonotonicNanos();
    if (now >= deadline) return false;
    if (!nudged && now >= nudge_at) {
      Nudge(code);
      nudged = true;
      // Ranks on other supernodes that do not poll (a compute loop, or a
      // rank blocked in a system call) hear nothing from the requests;
      // the launcher reaches them all, and its decision comes back here.
      if (launcher_ != nullptr && launcher_->RequestJobExit(code)) {
        return WaitUntil([&] { return request_received(); }, deadline, false);
      }
    }
    transport_->Poll();
    if (polite_) sched_yield();
  }
}

bool Protocol::AwaitRequest(Deadline deadline) {
  return WaitUntil([&] { return request_received(); }, deadline, false);
}

void Protocol::SendOwedReply(Deadline deadline) {
  const uint32_t owed = owed_reply_.exchange(0, std::memory_order_acq_rel);
  if (owed == 0) return;
  SendBy(owed - 1, Message{MessageKind::kExitReply, 0, 0}, deadline,
         /*stop_on_request=*/false);
}

void Protocol::RequestArrived(Rank leader, int code) {
  // The answer in shared memory too: a leader on this supernode reads it
  // even when the reply message found no room.
  member(my_index_).ack.store(1, std::memory_order_release);
  uint64_t none = 0;
  request_.compare_exchange_strong(
      none, kPresent | uint64_t{leader} << 8 | static_cast<uint64_t>(code),
      std::memory_order_acq_rel);
  if (on_remote_exit_ != nullptr) on_remote_exit_(context_, leader, code);
}

void Protocol::LauncherRequest(Rank initiator, int code, bool peer_lost) {
  if (peer_lost) peer_lost_.store(true, std::memory_order_release);
  RequestArrived(initiator, code);
}

bool Protocol::TakeSharedRequest() {
  const uint64_t word =
      member(my_index_).request.load(std::memory_order_acquire);
  if (word == 0) return false;
  RequestArrived(static_cast<Rank>((word >> 8) & 0xffffffffu),
                 static_cast<int>(word & 0xff));
  return true;
}

void Protocol::OnMessage(Rank source, const Message& m) {
  switch (m.kind) {
    case MessageKind::kReduce:
      if (m.a < kMaxRounds) {
        arrivals_[m.a].store(kPresent | (m.b & 0xff),
                             std::memory_order_release);
      }
      return;
    case MessageKind::kElect: {
      // Rank 0: the first candidate leads, whoever asks later follows.
      // A candidate asking again (its first answer was lost to its
      // deadline) hears the same answer.
      const bool lead = TakeLeadFor(source);
      // No room for the answer: the candidate falls back to the shared
      // word (a supernode peer) or fails its election at its deadline.
      TrySend(source, Message{MessageKind::kElectReply, lead ? 1u : 0u, 0},
              /*reply=*/true);
      return;
    }
    case MessageKind::kElectReply:
      elect_answer_.store(m.a != 0 ? 1 : 2, std::memory_order_release);
      return;
    case MessageKind::kExitRequest:
      // Reply first: the leader must hear from every rank, and this
      // handler may never return (on_remote_exit can end the process). A
      // reply that finds no room is owed, sent by SendOwedReply.
      if (!TrySend(source, Message{MessageKind::kExitReply, 0, 0},
                   /*reply=*/true)) {
        owed_reply_.store(source + 1, std::memory_order_release);
      }
      RequestArrived(source, static_cast<int>(m.a & 0xff));
      return;
    case MessageKind::kExitReply:
      if (source < topology_.size) MarkReplied(source);
      return;
  }
}

}  // namespace gexrt::exit
