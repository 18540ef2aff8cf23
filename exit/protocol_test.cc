// The exit protocol with ranks as threads of one process: a fake transport
// (a mailbox per rank) and plain memory as each supernode's shared area.
// Checks the agreed codes, the roles, the timeouts, and the message counts
// GASNet's analysis promises (O(log N) per rank for a collective exit, 2N
// best and 4N-2 worst for a non-collective one).
#include "exit/protocol.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/supernode_groups.h"
#include "gtest/gtest.h"

namespace gexrt::exit {
namespace {

constexpr int64_t kMs = 1000 * 1000;

// A deadline no test should reach (a hang fails by the test's timeout).
Deadline Far() { return MonotonicNanos() + 60'000 * kMs; }
Deadline Soon() { return MonotonicNanos() + 100 * kMs; }

uint32_t Log2Ceil(uint32_t n) {
  uint32_t r = 0;
  while ((1u << r) < n) ++r;
  return r;
}

class Job;

class FakeTransport : public Transport {
 public:
  FakeTransport(Job* job, Rank me) : job_(job), me_(me) {}
  bool TrySend(Rank dest, const Message& m, bool reply) override;
  void Poll() override;

 private:
  Job* job_;
  Rank me_;
};

// N ranks in supernodes of `per_supernode` consecutive ranks, each split
// into groups of `group_size` (0: one group per supernode).
class Job {
 public:
  Job(Rank n, Rank per_supernode, uint32_t group_size) : n_(n) {
    mailboxes_ = std::vector<Mailbox>(n);
    const Rank supernodes = (n + per_supernode - 1) / per_supernode;
    for (Rank s = 0; s < supernodes; ++s) {
      const Rank first = s * per_supernode;
      const Rank members = std::min(per_supernode, n - first);
      const size_t bytes = SharedAreaBytes(members);
      void* area = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      std::memset(area, 0, bytes);
      areas_.push_back(area);
    }
    std::vector<Rank> leaders;
    for (Rank r = 0; r < n; ++r) {
      const Rank first = r / per_supernode * per_supernode;
      const Rank members = std::min(per_supernode, n - first);
      if (SupernodeGroups::Split(members, r - first, group_size).leader) {
        leaders.push_back(r);
      }
    }
    for (Rank r = 0; r < n; ++r) {
      const Rank first = r / per_supernode * per_supernode;
      const Rank members = std::min(per_supernode, n - first);
      Topology t;
      t.rank = r;
      t.size = n;
      for (Rank m = 0; m < members; ++m) t.supernode.push_back(first + m);
      t.my_index = r - first;
      t.group_size = group_size;
      t.leaders = leaders;
      transports_.push_back(std::make_unique<FakeTransport>(this, r));
      protocols_.push_back(std::make_unique<Protocol>(
          t, areas_[r / per_supernode], transports_.back().get(),
          /*polite=*/true, &Job::RemoteExit, &remote_[r]));
    }
  }
  ~Job() {
    for (void* a : areas_) std::free(a);
  }

  Protocol& at(Rank r) { return *protocols_[r]; }
  Rank size() const { return n_; }
  // The code a remote exit request brought rank r (-1: none).
  int remote_code(Rank r) const { return remote_[r].code.load(); }
  int remote_calls(Rank r) const { return remote_[r].calls.load(); }

  // False, as a full queue would, when `to` is marked full.
  bool Deliver(Rank from, Rank to, const Message& m) {
    std::lock_guard<std::mutex> lock(mailboxes_[to].mu);
    if (mailboxes_[to].full) return false;
    mailboxes_[to].queue.emplace_back(from, m);
    return true;
  }
  // Replies sent by `r` find no room (its IMMEDIATE reply from a handler
  // meets a full queue); its other messages go.
  void RefuseRepliesFrom(Rank r) { refuse_replies_[r].store(true); }
  bool RefusesRepliesFrom(Rank r) const { return refuse_replies_[r].load(); }
  // From now on nothing can be sent to `r` (a stuck or dead peer).
  void MarkFull(Rank r) {
    std::lock_guard<std::mutex> lock(mailboxes_[r].mu);
    mailboxes_[r].full = true;
  }
  void Poll(Rank me) {
    std::deque<std::pair<Rank, Message>> got;
    {
      std::lock_guard<std::mutex> lock(mailboxes_[me].mu);
      got.swap(mailboxes_[me].queue);
    }
    for (const auto& [from, m] : got) protocols_[me]->OnMessage(from, m);
  }

  // Messages of `kind` sent, over every rank.
  uint32_t Total(MessageKind kind) const {
    uint32_t total = 0;
    for (const auto& p : protocols_) {
      total += p->counts().sent[static_cast<int>(kind)];
    }
    return total;
  }
  uint32_t NonCollectiveTotal() const {
    return Total(MessageKind::kElect) + Total(MessageKind::kElectReply) +
           Total(MessageKind::kExitRequest) + Total(MessageKind::kExitReply);
  }

  // Runs body(rank) on a thread per rank and joins them.
  template <typename Body>
  void Run(Body body) {
    std::vector<std::thread> threads;
    for (Rank r = 0; r < n_; ++r) threads.emplace_back([&, r] { body(r); });
    for (auto& t : threads) t.join();
  }

 private:
  struct Mailbox {
    std::mutex mu;
    bool full = false;
    std::deque<std::pair<Rank, Message>> queue;
  };
  struct Remote {
    std::atomic<int> code{-1};
    std::atomic<int> calls{0};
  };
  static void RemoteExit(void* context, Rank, int code) {
    auto* r = static_cast<Remote*>(context);
    r->code.store(code);
    r->calls.fetch_add(1);
  }

  Rank n_;
  std::vector<Mailbox> mailboxes_;
  std::vector<void*> areas_;
  std::vector<std::unique_ptr<FakeTransport>> transports_;
  std::vector<std::unique_ptr<Protocol>> protocols_;
  Remote remote_[64];
  std::atomic<bool> refuse_replies_[64] = {};
};

bool FakeTransport::TrySend(Rank dest, const Message& m, bool reply) {
  if (reply && job_->RefusesRepliesFrom(me_)) return false;
  return job_->Deliver(me_, dest, m);
}
void FakeTransport::Poll() { job_->Poll(me_); }

// A rank that is not exiting: it polls until the leader's request reaches
// it (what a client spinning on gasnet_AMPoll does).
void PollUntilRequested(Job& job, Rank r) {
  while (!job.at(r).request_received()) job.Poll(r);
}

struct Shape {
  Rank n;
  Rank per_supernode;
  uint32_t group_size;
};

class CollectiveTest : public ::testing::TestWithParam<Shape> {};

TEST_P(CollectiveTest, EveryRankGetsTheLargestCodeInLogRounds) {
  const Shape s = GetParam();
  Job job(s.n, s.per_supernode, s.group_size);
  std::vector<int> got(s.n, -2);
  job.Run([&](Rank r) {
    got[r] = job.at(r).Reduce(static_cast<int>(10 + r % 5), Far());
  });
  const int expected = 10 + static_cast<int>(std::min<Rank>(s.n - 1, 4));
  for (Rank r = 0; r < s.n; ++r) EXPECT_EQ(got[r], expected) << "rank " << r;
  // Leaders send one message per round; members none.
  uint32_t leaders = 0;
  for (Rank r = 0; r < s.n; ++r) {
    const Topology& t = job.at(r).topology();
    for (Rank l : t.leaders) leaders += l == r;
  }
  const uint32_t rounds = Log2Ceil(leaders);
  for (Rank r = 0; r < s.n; ++r) {
    const Topology& t = job.at(r).topology();
    const bool leader =
        std::find(t.leaders.begin(), t.leaders.end(), r) != t.leaders.end();
    EXPECT_EQ(job.at(r).counts().sent[0], leader ? rounds : 0u) << "rank " << r;
  }
  EXPECT_EQ(job.NonCollectiveTotal(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CollectiveTest,
                         ::testing::Values(Shape{1, 1, 0}, Shape{2, 2, 0},
                                           Shape{2, 2, 1}, Shape{5, 5, 1},
                                           Shape{8, 8, 0}, Shape{8, 8, 1},
                                           Shape{8, 8, 3}, Shape{8, 4, 0},
                                           Shape{7, 3, 2}, Shape{16, 4, 1}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return "n" + std::to_string(info.param.n) + "_sn" +
                                  std::to_string(info.param.per_supernode) +
                                  "_g" + std::to_string(info.param.group_size);
                         });

TEST(CollectiveTest, AMissingRankMakesTheReduceFailEverywhereElse) {
  for (uint32_t group : {0u, 1u}) {
    Job job(4, 4, group);
    std::vector<int> got(4, -2);
    job.Run([&](Rank r) {
      if (r != 2) got[r] = job.at(r).Reduce(3, Soon());
    });
    for (Rank r : {0u, 1u, 3u}) {
      EXPECT_EQ(got[r], -1) << "rank " << r << " group " << group;
    }
  }
}

class NonCollectiveTest : public ::testing::TestWithParam<Rank> {};

// One rank exits, the others poll: the best case of 2N messages when the
// exiting rank is not rank 0 (2N - 2 when it is: its election is local).
TEST_P(NonCollectiveTest, OneExitingRankLeadsAndEveryOtherGetsItsCode) {
  const Rank n = GetParam();
  for (Rank exiter : {n - 1, Rank{0}}) {
    Job job(n, n, 1);
    bool led = false;
    Role role = Role::kUnknown;
    job.Run([&](Rank r) {
      if (r != exiter) {
        PollUntilRequested(job, r);
        return;
      }
      EXPECT_EQ(job.at(r).Reduce(42, Soon()), -1);
      role = job.at(r).Elect(42, Far(), Far());
      if (role == Role::kLeader) led = job.at(r).Lead(42, Far(), Far());
    });
    EXPECT_EQ(role, Role::kLeader);
    EXPECT_TRUE(led);
    for (Rank r = 0; r < n; ++r) {
      if (r == exiter) continue;
      EXPECT_EQ(job.remote_code(r), 42) << "rank " << r;
      EXPECT_EQ(job.at(r).counts().sent[4], 1u) << "rank " << r;
    }
    EXPECT_EQ(job.at(exiter).counts().sent[3], n - 1);
    EXPECT_EQ(job.NonCollectiveTotal(), exiter == 0 ? 2 * n - 2 : 2 * n)
        << "exiter " << exiter;
  }
}

// Every rank elects at once: one leader, N-1 members, at most 4N-2
// messages.
TEST_P(NonCollectiveTest, EveryoneElectingAtOnceGivesOneLeader) {
  const Rank n = GetParam();
  Job job(n, n, 1);
  std::vector<Role> roles(n, Role::kUnknown);
  std::vector<int> ok(n, 0);  // Not vector<bool>: one thread per element.
  job.Run([&](Rank r) {
    roles[r] = job.at(r).Elect(static_cast<int>(r), Far(), Far());
    if (roles[r] == Role::kLeader) {
      ok[r] = job.at(r).Lead(static_cast<int>(r), Far(), Far());
    } else if (roles[r] == Role::kMember) {
      ok[r] = job.at(r).AwaitRequest(Far());
    }
  });
  Rank leaders = 0;
  for (Rank r = 0; r < n; ++r) {
    EXPECT_TRUE(ok[r]) << "rank " << r;
    leaders += roles[r] == Role::kLeader;
    EXPECT_NE(roles[r], Role::kFailed) << "rank " << r;
  }
  EXPECT_EQ(leaders, 1u);
  EXPECT_LE(job.NonCollectiveTotal(), 4 * n - 2);
  EXPECT_GE(job.NonCollectiveTotal(), 2 * n - 2);
}

INSTANTIATE_TEST_SUITE_P(Ranks, NonCollectiveTest,
                         ::testing::Values(2u, 3u, 4u, 8u));

TEST(ElectTest, SilentRankZeroOnAnotherSupernodeMeansFailedNotHung) {
  Job job(4, 2, 0);
  Role role = Role::kUnknown;
  // Rank 0 never polls and rank 2 cannot reach its cell: nobody answers.
  job.Run([&](Rank r) {
    if (r == 2) role = job.at(r).Elect(5, MonotonicNanos(), Soon());
  });
  EXPECT_EQ(role, Role::kFailed);
}

TEST(ElectTest, SilentRankZeroOnTheSupernodeIsBypassedInSharedMemory) {
  Job job(3, 3, 1);
  std::vector<Role> roles(3, Role::kUnknown);
  // Rank 0 never polls; ranks 1 and 2 both fall back to its cell: exactly
  // one of them leads, and no election message is answered.
  job.Run([&](Rank r) {
    if (r != 0) roles[r] = job.at(r).Elect(5, MonotonicNanos(), Far());
  });
  EXPECT_EQ((roles[1] == Role::kLeader) + (roles[2] == Role::kLeader), 1);
  EXPECT_EQ((roles[1] == Role::kMember) + (roles[2] == Role::kMember), 1);
  EXPECT_EQ(job.Total(MessageKind::kElectReply), 0u);
}

TEST(ElectTest, RankZerosAnswerAndTheFallbackAgreeOnOneLeader) {
  Job job(3, 3, 1);
  std::vector<Role> roles(3, Role::kUnknown);
  // Rank 1 asks by message and rank 0 answers; rank 2 falls back to the
  // shared word at once. One leader either way.
  // Rank 2's ask may reach rank 0 too (it is sent before the fallback):
  // rank 0 polls until rank 1, which waits for its answer, has it.
  std::atomic<bool> rank1_answered{false};
  job.Run([&](Rank r) {
    if (r == 0) {
      while (!rank1_answered.load()) job.Poll(r);
    } else if (r == 1) {
      roles[r] = job.at(r).Elect(5, Far(), Far());
      rank1_answered.store(true);
    } else {
      roles[r] = job.at(r).Elect(5, MonotonicNanos(), Far());
    }
  });
  EXPECT_EQ((roles[1] == Role::kLeader) + (roles[2] == Role::kLeader), 1);
  EXPECT_EQ((roles[1] == Role::kMember) + (roles[2] == Role::kMember), 1);
}

TEST(ElectTest, AnAskGrantedAfterTheCandidateFellBackStillLeads) {
  Job job(3, 3, 1);
  // Rank 2's ask reaches rank 0, which grants it, after rank 2 stopped
  // waiting for the answer (here: its ask arrives first, its election
  // runs with the fallback due at once). Its fallback must find the word
  // taken for itself, not by someone else: otherwise nobody leads.
  ASSERT_TRUE(job.Deliver(2, 0, Message{MessageKind::kElect, 5, 0}));
  job.Poll(0);
  EXPECT_EQ(job.at(2).Elect(5, MonotonicNanos(), Far()), Role::kLeader);
  // Rank 1 asks later and follows, by rank 0's answer or by the word.
  Role role1 = Role::kUnknown;
  std::atomic<bool> rank1_answered{false};
  job.Run([&](Rank r) {
    if (r == 0) {
      while (!rank1_answered.load()) job.Poll(0);
    } else if (r == 1) {
      role1 = job.at(1).Elect(5, Far(), Far());
      rank1_answered.store(true);
    }
  });
  EXPECT_EQ(role1, Role::kMember);
}

TEST(LeadTest, APeerThatNeverAnswersMakesTheLeadFail) {
  Job job(3, 3, 1);
  bool led = true;
  job.Run([&](Rank r) {
    if (r == 0) {
      ASSERT_EQ(job.at(r).Elect(9, Far(), Far()), Role::kLeader);
      led = job.at(r).Lead(9, Soon(), Soon());
    } else if (r == 1) {
      PollUntilRequested(job, r);
    }
    // Rank 2 is gone.
  });
  EXPECT_FALSE(led);
  EXPECT_EQ(job.remote_code(1), 9);
}

// A rank that never polls is reached through its shared cell (in a real
// job the nudge signal makes its handler look; here the thread looks).
TEST(LeadTest, ARankThatNeverPollsIsReachedThroughSharedMemory) {
  Job job(3, 3, 1);
  bool led = false;
  job.Run([&](Rank r) {
    if (r == 0) {
      ASSERT_EQ(job.at(r).Elect(17, Far(), Far()), Role::kLeader);
      led = job.at(r).Lead(17, MonotonicNanos(), Far());
    } else if (r == 1) {
      PollUntilRequested(job, r);
    } else {
      while (!job.at(r).TakeSharedRequest()) {
      }
    }
  });
  EXPECT_TRUE(led);
  EXPECT_EQ(job.remote_code(2), 17);
  EXPECT_EQ(job.at(2).counts().sent[4], 0u);  // Answered in shared memory.
  EXPECT_TRUE(job.at(2).request_received());
}

// A peer whose queue stays full (stuck in its own handlers, or dead) must
// not keep the leader from the others, nor from its deadline; on the
// supernode it is still reached through its cell.
TEST(LeadTest, AFullQueueDoesNotStopTheLeader) {
  Job job(4, 4, 1);
  job.MarkFull(1);
  bool led = false;
  job.Run([&](Rank r) {
    if (r == 0) {
      ASSERT_EQ(job.at(r).Elect(8, Far(), Far()), Role::kLeader);
      led = job.at(r).Lead(8, MonotonicNanos(), Far());
    } else if (r == 1) {
      while (!job.at(r).TakeSharedRequest()) {
      }
    } else {
      PollUntilRequested(job, r);
    }
  });
  EXPECT_TRUE(led);
  for (Rank r = 1; r < 4; ++r) EXPECT_EQ(job.remote_code(r), 8) << r;
  EXPECT_EQ(job.at(0).counts().sent[3], 2u);  // Rank 1's never went out.
}

TEST(LeadTest, AFullQueueOffTheSupernodeEndsAtTheDeadline) {
  Job job(4, 2, 0);
  job.MarkFull(3);
  bool led = true;
  job.Run([&](Rank r) {
    if (r == 0) {
      ASSERT_EQ(job.at(r).Elect(8, Far(), Far()), Role::kLeader);
      led = job.at(r).Lead(8, MonotonicNanos(), Soon());
    } else if (r != 3) {
      PollUntilRequested(job, r);
    }
  });
  EXPECT_FALSE(led);
  EXPECT_EQ(job.remote_code(3), -1);
}

// A member on another supernode whose reply found no room in the
// request's handler sends it afterwards as a message of its own: the
// leader hears from every rank (the best case's 2N messages still), where
// it used to wait for that rank until its deadline.
TEST(LeadTest, AReplyThatFoundNoRoomIsSentAfterwards) {
  constexpr Rank kRanks = 4;
  Job job(kRanks, 1, 0);  // every rank its own supernode: no shared cells
  job.RefuseRepliesFrom(1);
  bool led = false;
  job.Run([&](Rank r) {
    if (r == kRanks - 1) {
      EXPECT_EQ(job.at(r).Reduce(5, Soon()), -1);
      ASSERT_EQ(job.at(r).Elect(5, Far(), Far()), Role::kLeader);
      led = job.at(r).Lead(5, Far(), MonotonicNanos() + 20'000 * kMs);
    } else {
      PollUntilRequested(job, r);
      job.at(r).SendOwedReply(Far());
    }
  });
  EXPECT_TRUE(led);
  for (Rank r = 0; r + 1 < kRanks; ++r) {
    EXPECT_EQ(job.remote_code(r), 5) << "rank " << r;
    EXPECT_EQ(job.at(r).counts().sent[4], 1u) << "rank " << r;
  }
  EXPECT_EQ(job.NonCollectiveTotal(), 2 * kRanks);
}

TEST(ElectTest, AFullRankZeroQueueFallsBackToSharedMemory) {
  Job job(3, 3, 1);
  job.MarkFull(0);
  Role role = Role::kUnknown;
  job.Run([&](Rank r) {
    if (r == 2) role = job.at(r).Elect(5, Soon(), Far());
  });
  EXPECT_EQ(role, Role::kLeader);
  EXPECT_EQ(job.at(2).counts().sent[1], 0u);  // The ask never went out.
}

TEST(ReduceTest, AnExitRequestStopsTheReduceEarly) {
  Job job(3, 3, 1);
  int got = -2;
  job.Run([&](Rank r) {
    if (r == 0) {
      ASSERT_EQ(job.at(r).Elect(4, Far(), Far()), Role::kLeader);
      EXPECT_TRUE(job.at(r).Lead(4, Far(), Far()));
    } else if (r == 1) {
      // Would wait a minute for rank 2, but the request ends it.
      got = job.at(r).Reduce(6, Far());
      EXPECT_TRUE(job.at(r).request_received());
    } else {
      PollUntilRequested(job, r);
    }
  });
  EXPECT_EQ(got, -1);
  EXPECT_EQ(job.remote_code(1), 4);
  EXPECT_EQ(job.remote_calls(1), 1);
}

// A launcher (Bootstrap::RequestJobExit) that decides at once: it records
// the code and hands the decision to every rank of the job, as the real
// one does with kExitSignal.
class FakeLauncher : public Bootstrap {
 public:
  explicit FakeLauncher(Job* job) : job_(job) {}
  Rank rank() const override { return 0; }
  Rank size() const override { return job_->size(); }
  void Barrier() override {}
  void Allgather(const void*, size_t, void*) override {}
  void Alltoall(const void*, size_t, void*) override {}
  void Broadcast(const void*, size_t, void*, Rank) override {}
  [[noreturn]] void Abort(int, std::string_view) override { std::abort(); }
  void Fini() override {}
  bool RequestJobExit(int code) override {
    requests_.fetch_add(1);
    int none = -1;
    if (decided_.compare_exchange_strong(none, code)) {
      for (Rank r = 0; r < job_->size(); ++r) {
        job_->at(r).LauncherRequest(/*initiator=*/0, code, false);
      }
    }
    return true;
  }
  int requests() const { return requests_.load(); }

 private:
  Job* job_;
  std::atomic<int> requests_{0};
  std::atomic<int> decided_{-1};
};

// Rank 0 computes on another supernode and never answers the election:
// with a launcher, the candidate hands the exit to it at the fallback time
// instead of waiting for the deadline.
TEST(LauncherTest, ASilentRankZeroElsewhereHandsTheExitToTheLauncher) {
  Job job(2, 1, 0);
  FakeLauncher launcher(&job);
  job.at(1).SetLauncher(&launcher);
  EXPECT_EQ(job.at(1).Elect(6, MonotonicNanos(), Far()), Role::kHandedOff);
  EXPECT_EQ(launcher.requests(), 1);
  EXPECT_TRUE(job.at(1).AwaitRequest(Far()));
  EXPECT_EQ(job.at(1).request_code(), 6);
  // Rank 0 heard the decision without ever polling.
  EXPECT_TRUE(job.at(0).request_received());
  EXPECT_EQ(job.remote_code(0), 6);
  EXPECT_FALSE(job.at(0).peer_lost());
}

// Without a launcher the same silence is waited out until the deadline.
TEST(LauncherTest, WithoutALauncherASilentRankZeroFailsTheElection) {
  Job job(2, 1, 0);
  EXPECT_EQ(job.at(1).Elect(6, MonotonicNanos(), Soon()), Role::kFailed);
}

// A leader whose peer on another supernode never polls: at the nudge time
// the launcher takes over, and the lead succeeds once its decision is back.
TEST(LauncherTest, ALeaderHandsSilentRanksToTheLauncher) {
  Job job(3, 1, 0);
  FakeLauncher launcher(&job);
  bool led = false;
  job.Run([&](Rank r) {
    if (r != 0) return;  // Ranks 1 and 2 compute: they never poll.
    job.at(0).SetLauncher(&launcher);
    ASSERT_EQ(job.at(0).Elect(12, Far(), Far()), Role::kLeader);
    led = job.at(0).Lead(12, MonotonicNanos(), Far());
  });
  EXPECT_TRUE(led);
  EXPECT_EQ(launcher.requests(), 1);
  EXPECT_EQ(job.remote_code(1), 12);
  EXPECT_EQ(job.remote_code(2), 12);
}

// The launcher's word that a rank died reaches the protocol.
TEST(LauncherTest, ALostPeerIsRemembered) {
  Job job(2, 2, 0);
  job.at(1).LauncherRequest(0, 137, /*peer_lost=*/true);
  EXPECT_TRUE(job.at(1).request_received());
  EXPECT_TRUE(job.at(1).peer_lost());
  EXPECT_EQ(job.at(1).request_code(), 137);
  EXPECT_EQ(job.remote_code(1), 137);
  // A request makes the reduce give up at once: the exit is not collective.
  EXPECT_EQ(job.at(1).Reduce(3, Far()), -1);
}

}  // namespace
}  // namespace gexrt::exit
