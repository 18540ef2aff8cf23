#include "am/credits.h"

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "base/env/settings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::am {
namespace {

using ::testing::HasSubstr;

// ---------------------------------------------------------------------------
// CreditConfigFromEnv

class CreditConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { Clear(); }
  void TearDown() override { Clear(); }
  static void Clear() {
    for (const char* name : kTouched) unsetenv(name);
    env::internal::ResetForTest();
  }
  static void Set(const char* name, const char* value) {
    setenv(name, value, /*overwrite=*/1);
  }
  // The config for `peers`, failing the test when there is none.
  static CreditConfig Read(uint32_t peers) {
    absl::StatusOr<CreditConfig> config = CreditConfigFromEnv(peers);
    EXPECT_TRUE(config.ok()) << config.status();
    return config.ok() ? *config : CreditConfig{};
  }
  static constexpr const char* kTouched[] = {
      "GASNET_AM_CREDITS_PP", "GASNET_AM_CREDITS_TOTAL",
      "GASNET_AM_CREDITS_SLACK", "GASNET_QUIET", "GASNET_VERBOSEENV"};
};

void ExpectConfig(const CreditConfig& c, uint32_t per_peer, uint32_t total,
                  uint32_t slack) {
  EXPECT_EQ(c.per_peer, per_peer);
  EXPECT_EQ(c.total, total);
  EXPECT_EQ(c.slack, slack);
}

TEST_F(CreditConfigTest, Defaults) {
  ExpectConfig(Read(1), 32, 32, 1);
  ExpectConfig(Read(3), 32, 96, 1);
  ExpectConfig(Read(8), 32, 256, 1);
  // 15 * 32 > 256: per_peer is cut to 256 / 15.
  ExpectConfig(Read(15), 17, 256, 1);
  // More peers than 256: each still gets one, and slack drops to 0.
  ExpectConfig(Read(300), 1, 300, 0);
  // No conduit peers (a single-node job): nothing to share out.
  ExpectConfig(Read(0), 32, 0, 1);
}

TEST_F(CreditConfigTest, EachVariableIsRead) {
  Set("GASNET_AM_CREDITS_PP", "8");
  ExpectConfig(Read(4), 8, 32, 1);
  Set("GASNET_AM_CREDITS_PP", "0x10");
  ExpectConfig(Read(4), 16, 64, 1);
  unsetenv("GASNET_AM_CREDITS_PP");

  Set("GASNET_AM_CREDITS_TOTAL", "1000");
  ExpectConfig(Read(4), 32, 1000, 1);
  unsetenv("GASNET_AM_CREDITS_TOTAL");

  Set("GASNET_AM_CREDITS_SLACK", "5");
  ExpectConfig(Read(4), 32, 128, 5);
  Set("GASNET_AM_CREDITS_SLACK", "0");
  ExpectConfig(Read(4), 32, 128, 0);

  // Empty means unset.
  Set("GASNET_AM_CREDITS_SLACK", "");
  Set("GASNET_AM_CREDITS_PP", " ");
  ExpectConfig(Read(2), 32, 64, 1);
}

TEST_F(CreditConfigTest, TotalReducesPerPeer) {
  Set("GASNET_AM_CREDITS_TOTAL", "64");
  ExpectConfig(Read(4), 16, 64, 1);
  Set("GASNET_AM_CREDITS_PP", "64");
  Set("GASNET_AM_CREDITS_TOTAL", "100");
  ExpectConfig(Read(3), 33, 100, 1);
  // Exactly enough: no reduction.
  Set("GASNET_AM_CREDITS_TOTAL", "192");
  ExpectConfig(Read(3), 64, 192, 1);
}

TEST_F(CreditConfigTest, ConduitDefaultPerPeer) {
  // The ibv conduit's default of 12: the default total follows it.
  absl::StatusOr<CreditConfig> c = CreditConfigFromEnv(4, 12);
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectConfig(*c, 12, 48, 1);
  // 12 * 30 > 256: cut to 256 / 30 as with any default.
  c = CreditConfigFromEnv(30, 12);
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectConfig(*c, 8, 256, 1);
  // The omitted argument is still 32 (the ofi and ucx callers).
  ExpectConfig(Read(4), 32, 128, 1);
  // A set GASNET_AM_CREDITS_PP wins over the conduit's default.
  Set("GASNET_AM_CREDITS_PP", "5");
  c = CreditConfigFromEnv(4, 12);
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectConfig(*c, 5, 20, 1);
  // A default of zero credits is the caller's bug, reported as such.
  unsetenv("GASNET_AM_CREDITS_PP");
  c = CreditConfigFromEnv(4, 0);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CreditConfigTest, TotalBelowPeersStillGivesEachPeerOne) {
  Set("GASNET_QUIET", "1");  // the warning is not what is tested here
  Set("GASNET_AM_CREDITS_TOTAL", "2");
  ExpectConfig(Read(5), 1, 5, 0);
}

TEST_F(CreditConfigTest, SlackIsReducedBelowPerPeer) {
  Set("GASNET_AM_CREDITS_PP", "4");
  Set("GASNET_AM_CREDITS_SLACK", "4");
  ExpectConfig(Read(2), 4, 8, 3);
  Set("GASNET_AM_CREDITS_SLACK", "1000");
  ExpectConfig(Read(2), 4, 8, 3);
  Set("GASNET_AM_CREDITS_SLACK", "3");
  ExpectConfig(Read(2), 4, 8, 3);
  Set("GASNET_AM_CREDITS_PP", "1");
  ExpectConfig(Read(2), 1, 2, 0);
  // The reduction follows the per_peer that TOTAL left.
  Set("GASNET_AM_CREDITS_PP", "32");
  Set("GASNET_AM_CREDITS_TOTAL", "8");
  Set("GASNET_AM_CREDITS_SLACK", "10");
  ExpectConfig(Read(4), 2, 8, 1);
}

TEST_F(CreditConfigTest, InvalidValuesNameTheVariable) {
  struct Case {
    const char* name;
    const char* value;
  };
  const Case cases[] = {
      {"GASNET_AM_CREDITS_PP", "lots"},
      {"GASNET_AM_CREDITS_PP", "0"},
      {"GASNET_AM_CREDITS_PP", "-4"},
      {"GASNET_AM_CREDITS_PP", "x1"},
      {"GASNET_AM_CREDITS_PP", "99999999999"},
      {"GASNET_AM_CREDITS_TOTAL", "many"},
      {"GASNET_AM_CREDITS_TOTAL", "0"},
      {"GASNET_AM_CREDITS_TOTAL", "-1"},
      {"GASNET_AM_CREDITS_SLACK", "some"},
      {"GASNET_AM_CREDITS_SLACK", "-1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + "=" + c.value);
    Set(c.name, c.value);
    absl::StatusOr<CreditConfig> config = CreditConfigFromEnv(4);
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(std::string(config.status().message()),
                HasSubstr(std::string("environment variable ") + c.name +
                          " has the invalid value \"" + c.value + "\""));
    unsetenv(c.name);
  }
}

TEST_F(CreditConfigTest, ResultAlwaysFitsItsOwnRules) {
  const char* const pps[] = {"", "1", "3", "32", "1000"};
  const char* const totals[] = {"", "1", "7", "256", "100000"};
  const char* const slacks[] = {"", "0", "1", "31", "5000"};
  Set("GASNET_QUIET", "1");
  for (const char* pp : pps) {
    for (const char* total : totals) {
      for (const char* slack : slacks) {
        for (uint32_t peers : {0u, 1u, 2u, 7u, 255u, 1000u}) {
          SCOPED_TRACE(absl::StrFormat("PP=%s TOTAL=%s SLACK=%s peers=%u", pp,
                                       total, slack, peers));
          Set("GASNET_AM_CREDITS_PP", pp);
          Set("GASNET_AM_CREDITS_TOTAL", total);
          Set("GASNET_AM_CREDITS_SLACK", slack);
          const CreditConfig c = Read(peers);
          EXPECT_GE(c.per_peer, 1u);
          EXPECT_LT(c.slack, c.per_peer);
          EXPECT_GE(c.total, peers);
          EXPECT_LE(uint64_t{c.per_peer} * peers, c.total);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Credits, one thread

CreditConfig MakeConfig(uint32_t per_peer, uint32_t slack) {
  CreditConfig c;
  c.per_peer = per_peer;
  c.total = per_peer * 4;
  c.slack = slack;
  return c;
}

TEST(CreditsTest, EachPeerStartsFullAndStopsAtZero) {
  Credits credits(3, MakeConfig(4, 1));
  for (uint32_t peer = 0; peer < 3; ++peer) {
    EXPECT_EQ(credits.Available(peer), 4u);
    EXPECT_EQ(credits.Banked(peer), 0u);
  }
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(credits.TryAcquire(1));
  EXPECT_FALSE(credits.TryAcquire(1));
  EXPECT_FALSE(credits.TryAcquire(1));
  EXPECT_EQ(credits.Available(1), 0u);
  // The other peers are untouched.
  EXPECT_EQ(credits.Available(0), 4u);
  EXPECT_EQ(credits.Available(2), 4u);
  credits.Grant(1, 3);
  EXPECT_EQ(credits.Available(1), 3u);
  credits.Grant(1, 0);
  EXPECT_EQ(credits.Available(1), 3u);
  EXPECT_TRUE(credits.TryAcquire(1));
  EXPECT_EQ(credits.Available(1), 2u);
}

TEST(CreditsTest, BankSignalsOnlyAboveTheSlack) {
  Credits credits(2, MakeConfig(8, 2));
  EXPECT_FALSE(credits.Bank(1));
  EXPECT_FALSE(credits.Bank(1));
  EXPECT_TRUE(credits.Bank(1));  // 3 > 2
  EXPECT_TRUE(credits.Bank(1));  // still above
  EXPECT_EQ(credits.Banked(1), 4u);
  EXPECT_EQ(credits.Banked(0), 0u);
  EXPECT_EQ(credits.TakeBanked(1), 4u);
  EXPECT_EQ(credits.Banked(1), 0u);
  EXPECT_EQ(credits.TakeBanked(1), 0u);
  EXPECT_FALSE(credits.Bank(1));
}

TEST(CreditsTest, ZeroSlackSignalsEveryBank) {
  Credits credits(2, MakeConfig(3, 0));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(credits.Bank(0));
    EXPECT_EQ(credits.TakeBanked(0), 1u);
  }
}

TEST(CreditsDeathTest, PeerOutOfRangeIsFatal) {
  Credits credits(2, MakeConfig(4, 1));
  EXPECT_DEATH(credits.TryAcquire(2), "peer 2 is out of range \\[0, 2\\)");
  EXPECT_DEATH(credits.Grant(7, 1), "peer 7 is out of range");
  EXPECT_DEATH(credits.Bank(2), "peer 2 is out of range");
  EXPECT_DEATH(credits.TakeBanked(2), "peer 2 is out of range");
  EXPECT_DEATH(credits.Available(2), "peer 2 is out of range");
}

TEST(CreditsDeathTest, MoreCreditsBackThanTakenIsFatal) {
  Credits credits(2, MakeConfig(4, 1));
  ASSERT_TRUE(credits.TryAcquire(1));
  EXPECT_DEATH(credits.Grant(1, 2), "2 credits came back from peer 1");
}

TEST(CreditsDeathTest, BankingMoreThanPerPeerIsFatal) {
  Credits credits(2, MakeConfig(2, 1));
  credits.Bank(0);
  credits.Bank(0);
  EXPECT_DEATH(credits.Bank(0), "3 credits banked for peer 0");
}

TEST(CreditsDeathTest, ConfigBreakingItsRulesIsFatal) {
  EXPECT_DEATH(Credits(2, MakeConfig(4, 4)), "slack 4");
  EXPECT_DEATH(Credits(2, MakeConfig(0, 0)), "per_peer 0");
}

// ---------------------------------------------------------------------------
// A fake transport: ranks in one process, a FIFO per ordered pair, driven by
// a seeded random schedule on one thread so that every step can be checked
// against the whole state.

enum class Kind { kRequest, kReply, kCredit };

struct Message {
  Kind kind;
  uint64_t seq;      // Request: its number on its pair; Reply: the Request's
  uint32_t credits;  // credits returned to the receiver of this message
};

struct FloodOptions {
  uint32_t ranks = 2;
  CreditConfig config;
  // requests[s][d]: how many Requests rank s sends rank d.
  std::vector<std::vector<uint64_t>> requests;
  // Whether the handler of Request `seq` (on its pair) sends a Reply.
  std::function<bool(uint64_t seq)> replies = [](uint64_t) { return true; };
  // A receiver bug the deadlock check must catch: never sends the explicit
  // credit message.
  bool ignore_bank_signal = false;
  uint32_t seed = 1;
};

struct FloodResult {
  bool deadlocked = false;
  std::string error;  // the first broken rule, if any
  // [s][d]: Requests from s handled at d; Replies from d received at s;
  // the most Requests from s queued at d at once.
  std::vector<std::vector<uint64_t>> handled, replies, max_queued;
  uint64_t explicit_credit_messages = 0;
  uint64_t piggybacked_credits = 0;  // credits that rode on a Request
};

class FakeTransport {
 public:
  explicit FakeTransport(const FloodOptions& options)
      : o_(options), rng_(options.seed) {
    const uint32_t n = o_.ranks;
    for (uint32_t r = 0; r < n; ++r) {
      credits_.push_back(std::make_unique<Credits>(n, o_.config));
    }
    auto square = [n] {
      return std::vector<std::vector<uint64_t>>(n, std::vector<uint64_t>(n));
    };
    queues_.assign(n, std::vector<std::deque<Message>>(n));
    sent_ = square();
    expected_seq_ = square();
    queued_requests_ = square();
    returning_ = square();
    last_reply_ = square();
    result_.handled = square();
    result_.replies = square();
    result_.max_queued = square();
  }

  FloodResult Run() {
    std::vector<uint32_t> order(o_.ranks);
    for (uint32_t r = 0; r < o_.ranks; ++r) order[r] = r;
    while (!Done() && result_.error.empty()) {
      std::shuffle(order.begin(), order.end(), rng_);
      bool progressed = false;
      for (uint32_t r : order) {
        progressed |= Flood(r);
        progressed |= Poll(r);
      }
      // Polling handles any queued message, so no progress in a whole
      // round means every queue is empty and no credit is left to send
      // with: nothing will ever change.
      if (!progressed) {
        result_.deadlocked = true;
        break;
      }
    }
    if (result_.error.empty() && !result_.deadlocked) CheckQuiescent();
    return result_;
  }

  const Credits& credits(uint32_t rank) const { return *credits_[rank]; }

 private:
  bool Done() const {
    for (uint32_t s = 0; s < o_.ranks; ++s) {
      for (uint32_t d = 0; d < o_.ranks; ++d) {
        if (sent_[s][d] < o_.requests[s][d] || !queues_[s][d].empty()) {
          return false;
        }
      }
    }
    return true;
  }

  void Send(uint32_t from, uint32_t to, Message m) {
    returning_[to][from] += m.credits;
    queues_[from][to].push_back(m);
  }

  // Sends Requests while credits last, to each destination in turn.
  bool Flood(uint32_t s) {
    bool sent = false;
    for (uint32_t d = 0; d < o_.ranks; ++d) {
      while (sent_[s][d] < o_.requests[s][d] && credits_[s]->TryAcquire(d)) {
        const uint32_t carried = credits_[s]->TakeBanked(d);
        result_.piggybacked_credits += carried;
        ++queued_requests_[s][d];
        result_.max_queued[s][d] =
            std::max(result_.max_queued[s][d], queued_requests_[s][d]);
        Send(s, d, {Kind::kRequest, sent_[s][d]++, carried});
        sent = true;
        if (!CheckPairs()) return true;
      }
    }
    return sent;
  }

  // Handles 1 to 4 messages, each from a randomly chosen non-empty queue.
  bool Poll(uint32_t r) {
    const int budget = std::uniform_int_distribution<int>(1, 4)(rng_);
    bool handled = false;
    for (int i = 0; i < budget; ++i) {
      std::vector<uint32_t> ready;
      for (uint32_t s = 0; s < o_.ranks; ++s) {
        if (!queues_[s][r].empty()) ready.push_back(s);
      }
      if (ready.empty()) break;
      const uint32_t s = ready[std::uniform_int_distribution<size_t>(
          0, ready.size() - 1)(rng_)];
      Message m = queues_[s][r].front();
      queues_[s][r].pop_front();
      Handle(r, s, m);
      handled = true;
      if (!CheckPairs()) break;
    }
    return handled;
  }

  void Handle(uint32_t r, uint32_t s, const Message& m) {
    Credits& mine = *credits_[r];
    returning_[r][s] -= m.credits;
    if (m.credits > 0) mine.Grant(s, m.credits);
    switch (m.kind) {
      case Kind::kRequest: {
        --queued_requests_[s][r];
        if (m.seq != expected_seq_[s][r]) {
          Fail("request %u->%u: got #%u, expected #%u", s, r, m.seq,
               expected_seq_[s][r]);
          return;
        }
        ++expected_seq_[s][r];
        ++result_.handled[s][r];
        if (o_.replies(m.seq)) {
          Send(r, s, {Kind::kReply, m.seq, 1 + mine.TakeBanked(s)});
        } else if (mine.Bank(s) && !o_.ignore_bank_signal) {
          const uint32_t n = mine.TakeBanked(s);
          if (n <= o_.config.slack) {
            Fail("explicit credit message %u->%u carries only %u", r, s, n);
          }
          ++result_.explicit_credit_messages;
          Send(r, s, {Kind::kCredit, 0, n});
        }
        break;
      }
      case Kind::kReply:
        // Replies come back in Request order, once each, only for
        // Requests whose handler replies.
        if (!o_.replies(m.seq) ||
            (result_.replies[r][s] > 0 && m.seq <= last_reply_[r][s])) {
          Fail("reply %u->%u for request #%u out of place", s, r, m.seq);
        }
        last_reply_[r][s] = m.seq;
        ++result_.replies[r][s];
        break;
      case Kind::kCredit:
        break;
    }
  }

  // For every ordered pair (s, d), each of s's credits for d is in exactly
  // one place: held by s, spent on a Request queued to d, banked at d, or
  // riding on a message from d back to s. So Requests from s queued at d,
  // plus the ones d has handled but not yet answered, never exceed
  // per_peer: the buffering bound.
  bool CheckPairs() {
    const uint64_t pp = o_.config.per_peer;
    for (uint32_t s = 0; s < o_.ranks; ++s) {
      for (uint32_t d = 0; d < o_.ranks; ++d) {
        if (s == d) continue;
        const uint64_t held = credits_[s]->Available(d);
        const uint64_t banked = credits_[d]->Banked(s);
        const uint64_t unanswered = queued_requests_[s][d] + banked;
        if (held + unanswered + returning_[s][d] != pp) {
          Fail(
              "pair %u->%u: %u held + %u queued + %u banked + %u returning "
              "!= %u",
              s, d, held, queued_requests_[s][d], banked, returning_[s][d], pp);
          return false;
        }
        if (unanswered > pp) {
          Fail("pair %u->%u: %u Requests unanswered", s, d, unanswered);
          return false;
        }
      }
    }
    return true;
  }

  void CheckQuiescent() {
    for (uint32_t s = 0; s < o_.ranks; ++s) {
      for (uint32_t d = 0; d < o_.ranks; ++d) {
        if (s == d) continue;
        if (credits_[s]->Available(d) + credits_[d]->Banked(s) !=
            o_.config.per_peer) {
          Fail("pair %u->%u ends with %u held and %u banked", s, d,
               credits_[s]->Available(d), credits_[d]->Banked(s));
        }
      }
    }
  }

  template <typename... Args>
  void Fail(const absl::FormatSpec<Args...>& format, const Args&... args) {
    if (result_.error.empty()) result_.error = absl::StrFormat(format, args...);
  }

  const FloodOptions& o_;
  std::mt19937 rng_;
  std::vector<std::unique_ptr<Credits>> credits_;
  // queues_[s][d]: messages from s to d, in order.
  std::vector<std::vector<std::deque<Message>>> queues_;
  std::vector<std::vector<uint64_t>> sent_, expected_seq_, queued_requests_,
      last_reply_;
  // returning_[s][d]: s's credits for d riding on messages from d to s.
  std::vector<std::vector<uint64_t>> returning_;
  FloodResult result_;
};

std::vector<std::vector<uint64_t>> Counts(uint32_t ranks) {
  return std::vector<std::vector<uint64_t>>(ranks,
                                            std::vector<uint64_t>(ranks));
}

uint64_t RepliesFor(const FloodOptions& o, uint64_t requests) {
  uint64_t n = 0;
  for (uint64_t seq = 0; seq < requests; ++seq) n += o.replies(seq) ? 1 : 0;
  return n;
}

uint64_t LongestNoReplyRun(const FloodOptions& o, uint64_t requests) {
  uint64_t longest = 0, run = 0;
  for (uint64_t seq = 0; seq < requests; ++seq) {
    run = o.replies(seq) ? 0 : run + 1;
    longest = std::max(longest, run);
  }
  return longest;
}

// Runs the flood and checks what every flood must end with.
FloodResult RunAndCheck(const FloodOptions& o) {
  FakeTransport transport(o);
  FloodResult result = transport.Run();
  EXPECT_FALSE(result.deadlocked);
  EXPECT_EQ(result.error, "");
  for (uint32_t s = 0; s < o.ranks; ++s) {
    for (uint32_t d = 0; d < o.ranks; ++d) {
      SCOPED_TRACE(absl::StrFormat("pair %u->%u", s, d));
      EXPECT_EQ(result.handled[s][d], o.requests[s][d]);
      EXPECT_EQ(result.replies[s][d], RepliesFor(o, o.requests[s][d]));
      EXPECT_LE(result.max_queued[s][d], o.config.per_peer);
      // A flood uses all the credits it has.
      if (o.requests[s][d] >= o.config.per_peer) {
        EXPECT_EQ(result.max_queued[s][d], o.config.per_peer);
      }
    }
  }
  return result;
}

struct Mix {
  const char* name;
  std::function<bool(uint64_t)> replies;
};

const Mix kMixes[] = {
    {"all reply", [](uint64_t) { return true; }},
    {"none reply", [](uint64_t) { return false; }},
    {"every third replies", [](uint64_t seq) { return seq % 3 == 0; }},
    {"runs of replies", [](uint64_t seq) { return (seq / 37) % 2 == 0; }},
};

constexpr uint64_t kFlood = 100000;

TEST(CreditsFloodTest, OneWayFloodDeliversEverythingWithinTheBound) {
  constexpr uint32_t kPerPeer = 8;
  for (uint32_t slack : {0u, 1u, kPerPeer - 1}) {
    for (const Mix& mix : kMixes) {
      SCOPED_TRACE(absl::StrFormat("slack %u, %s", slack, mix.name));
      FloodOptions o;
      o.config = MakeConfig(kPerPeer, slack);
      o.requests = Counts(2);
      o.requests[0][1] = kFlood;
      o.replies = mix.replies;
      o.seed = slack + 1;
      const FloodResult result = RunAndCheck(o);
      const uint64_t no_reply = kFlood - RepliesFor(o, kFlood);
      if (slack == 0) {
        // Every unanswered Request is acknowledged at once.
        EXPECT_EQ(result.explicit_credit_messages, no_reply);
      } else {
        EXPECT_LE(result.explicit_credit_messages, no_reply / (slack + 1));
      }
      // Replies carry banked credits back, so an explicit message is
      // needed only when more than `slack` no-reply Requests come in a row.
      if (LongestNoReplyRun(o, kFlood) > slack) {
        EXPECT_GT(result.explicit_credit_messages, 0u);
      } else {
        EXPECT_EQ(result.explicit_credit_messages, 0u);
      }
    }
  }
}

TEST(CreditsFloodTest, OneCreditPerPeerStillFlows) {
  for (const Mix& mix : kMixes) {
    SCOPED_TRACE(mix.name);
    FloodOptions o;
    o.config = MakeConfig(1, 0);
    o.requests = Counts(2);
    o.requests[0][1] = 20000;
    o.replies = mix.replies;
    RunAndCheck(o);
  }
}

TEST(CreditsFloodTest, TwoRanksFloodingEachOther) {
  constexpr uint32_t kPerPeer = 8;
  for (uint32_t slack : {0u, 1u, kPerPeer - 1}) {
    for (const Mix& mix : kMixes) {
      SCOPED_TRACE(absl::StrFormat("slack %u, %s", slack, mix.name));
      FloodOptions o;
      o.config = MakeConfig(kPerPeer, slack);
      o.requests = Counts(2);
      o.requests[0][1] = kFlood;
      o.requests[1][0] = kFlood;
      o.replies = mix.replies;
      o.seed = 100 + slack;
      const FloodResult result = RunAndCheck(o);
      // With Requests going both ways, banked credits ride on them.
      if (slack > 0 && mix.replies(1) == false) {
        EXPECT_GT(result.piggybacked_credits, 0u);
      }
    }
  }
}

TEST(CreditsFloodTest, ThreeRanksAllToAll) {
  for (uint32_t slack : {0u, 1u, 3u}) {
    SCOPED_TRACE(absl::StrFormat("slack %u", slack));
    FloodOptions o;
    o.ranks = 3;
    o.config = MakeConfig(4, slack);
    o.requests = Counts(3);
    for (uint32_t s = 0; s < 3; ++s) {
      for (uint32_t d = 0; d < 3; ++d) {
        if (s != d) o.requests[s][d] = 20000 + 1000 * s + d;
      }
    }
    o.replies = kMixes[2].replies;
    o.seed = 7 + slack;
    RunAndCheck(o);
  }
}

// The check above would catch a lost credit: a receiver that never sends
// the explicit credit message stalls a flood of no-reply Requests.
TEST(CreditsFloodTest, IgnoringTheBankSignalDeadlocksAndIsDetected) {
  FloodOptions o;
  o.config = MakeConfig(8, 1);
  o.requests = Counts(2);
  o.requests[0][1] = 1000;
  o.replies = kMixes[1].replies;
  o.ignore_bank_signal = true;
  FakeTransport transport(o);
  const FloodResult result = transport.Run();
  EXPECT_TRUE(result.deadlocked);
  EXPECT_EQ(result.error, "");
  EXPECT_EQ(result.handled[0][1], 8u);
  EXPECT_EQ(transport.credits(0).Available(1), 0u);
  EXPECT_EQ(transport.credits(1).Banked(0), 8u);
}

// ---------------------------------------------------------------------------
// Threads

TEST(CreditsThreadTest, ConcurrentAcquireAndGrantKeepTheBound) {
  constexpr uint32_t kPerPeer = 8;
  constexpr int kThreads = 4;
  constexpr int kSteps = 50000;
  Credits credits(2, MakeConfig(kPerPeer, 1));
  std::atomic<int> outstanding{0};
  std::atomic<uint64_t> acquired{0}, granted{0}, violations{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t + 1);
      uint32_t held = 0;
      start.arrive_and_wait();
      for (int i = 0; i < kSteps; ++i) {
        // Each thread holds up to 3, so 4 threads want more than there are.
        if (held < 3 && (held == 0 || rng() % 2 == 0)) {
          if (credits.TryAcquire(1)) {
            ++held;
            acquired.fetch_add(1, std::memory_order_relaxed);
            if (outstanding.fetch_add(1) + 1 > static_cast<int>(kPerPeer)) {
              violations.fetch_add(1);
            }
          }
        } else if (held > 0) {
          const uint32_t n = 1 + rng() % held;
          held -= n;
          outstanding.fetch_sub(n);
          granted.fetch_add(n, std::memory_order_relaxed);
          credits.Grant(1, n);
        }
        if (credits.Available(1) > kPerPeer) violations.fetch_add(1);
      }
      outstanding.fetch_sub(held);
      granted.fetch_add(held, std::memory_order_relaxed);
      credits.Grant(1, held);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(violations.load(), 0u);
  EXPECT_GT(acquired.load(), 0u);
  EXPECT_EQ(acquired.load(), granted.load());
  EXPECT_EQ(outstanding.load(), 0);
  EXPECT_EQ(credits.Available(1), kPerPeer);
  EXPECT_EQ(credits.Available(0), kPerPeer);
}

TEST(CreditsThreadTest, ConcurrentBankAndTakeLoseNothing) {
  constexpr int kThreads = 3;
  constexpr uint32_t kBanks = 100000;
  // Room for every Bank at once: this tests the counting, not the bound.
  Credits credits(1, MakeConfig(kThreads * kBanks, 15));
  std::atomic<uint64_t> taken{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (uint32_t i = 0; i < kBanks; ++i) {
        if (credits.Bank(0)) taken.fetch_add(credits.TakeBanked(0));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(taken.load() + credits.Banked(0), uint64_t{kThreads} * kBanks);
  // The last Bank above the slack is followed by its TakeBanked.
  EXPECT_LE(credits.Banked(0), 15u);
}

// Two ranks, each a sending thread and a polling thread sharing its
// Credits (PAR), flooding each other through mutex-guarded queues.
TEST(CreditsThreadTest, TwoThreadedRanksFloodEachOther) {
  constexpr uint32_t kPerPeer = 4;
  constexpr uint64_t kRequests = 20000;
  const auto replies = [](uint64_t seq) { return seq % 3 != 0; };
  uint64_t expected_replies = 0;
  for (uint64_t seq = 0; seq < kRequests; ++seq) {
    expected_replies += replies(seq) ? 1 : 0;
  }
  struct Queue {
    std::mutex mu;
    std::deque<Message> messages;
    uint64_t queued_requests = 0;
  };
  Queue to[2];  // to[r]: messages for rank r
  Credits credits0(2, MakeConfig(kPerPeer, 1));
  Credits credits1(2, MakeConfig(kPerPeer, 1));
  Credits* credits[2] = {&credits0, &credits1};
  std::atomic<bool> sender_done[2] = {false, false};
  std::atomic<uint64_t> over_bound{0}, out_of_order{0};
  uint64_t handled[2] = {0, 0}, replied[2] = {0, 0};

  auto push = [&](uint32_t dest, const Message& m) {
    std::lock_guard<std::mutex> lock(to[dest].mu);
    if (m.kind == Kind::kRequest && ++to[dest].queued_requests > kPerPeer) {
      over_bound.fetch_add(1);
    }
    to[dest].messages.push_back(m);
  };
  auto pop = [&](uint32_t r, Message* m) {
    std::lock_guard<std::mutex> lock(to[r].mu);
    if (to[r].messages.empty()) return false;
    *m = to[r].messages.front();
    to[r].messages.pop_front();
    if (m->kind == Kind::kRequest) --to[r].queued_requests;
    return true;
  };
  // Handles one message for rank r; false when there was none.
  auto handle_one = [&](uint32_t r) {
    const uint32_t peer = 1 - r;
    Message m;
    if (!pop(r, &m)) return false;
    if (m.credits > 0) credits[r]->Grant(peer, m.credits);
    if (m.kind == Kind::kRequest) {
      if (m.seq != handled[r]) out_of_order.fetch_add(1);
      ++handled[r];
      if (replies(m.seq)) {
        push(peer, {Kind::kReply, m.seq, 1 + credits[r]->TakeBanked(peer)});
      } else if (credits[r]->Bank(peer)) {
        // The sending thread may have taken the bank in between: then its
        // Request carries it, and there is nothing to send.
        const uint32_t n = credits[r]->TakeBanked(peer);
        if (n > 0) push(peer, {Kind::kCredit, 0, n});
      }
    } else if (m.kind == Kind::kReply) {
      ++replied[r];
    }
    return true;
  };

  std::latch start(4);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {  // sender
      const uint32_t peer = 1 - r;
      start.arrive_and_wait();
      for (uint64_t seq = 0; seq < kRequests;) {
        if (credits[r]->TryAcquire(peer)) {
          push(peer, {Kind::kRequest, seq++, credits[r]->TakeBanked(peer)});
        } else {
          std::this_thread::yield();  // the poller brings credits back
        }
      }
      sender_done[r].store(true);
    });
    threads.emplace_back([&, r] {  // poller
      start.arrive_and_wait();
      while (!sender_done[r].load() || handled[r] < kRequests ||
             replied[r] < expected_replies) {
        if (!handle_one(r)) std::this_thread::yield();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Explicit credit messages may still be queued; deliver them.
  for (uint32_t r = 0; r < 2; ++r) {
    while (handle_one(r)) {
    }
  }
  EXPECT_EQ(over_bound.load(), 0u);
  EXPECT_EQ(out_of_order.load(), 0u);
  for (uint32_t r = 0; r < 2; ++r) {
    const uint32_t peer = 1 - r;
    EXPECT_EQ(handled[r], kRequests);
    EXPECT_EQ(replied[r], expected_replies);
    EXPECT_EQ(credits[r]->Available(peer) + credits[peer]->Banked(r), kPerPeer);
  }
}

// A conduit's credit wait: no round while a credit is free; with none,
// the wait is counted, an IMMEDIATE send takes nothing, and a blocking one
// runs rounds until one came back.
TEST(CreditsTest, AcquireOrWaitRunsRoundsOnlyWhileNoCreditIsFree) {
  CreditConfig c;
  c.per_peer = 1;
  c.total = 1;
  c.slack = 0;
  Credits credits(2, c);
  std::atomic<uint64_t> waits{0};
  int rounds = 0;
  EXPECT_TRUE(credits.AcquireOrWait(1, false, waits, [&] { ++rounds; }));
  EXPECT_EQ(rounds, 0);
  EXPECT_EQ(waits.load(), 0u);

  EXPECT_FALSE(
      credits.AcquireOrWait(1, /*immediate=*/true, waits, [&] { ++rounds; }));
  EXPECT_EQ(rounds, 0);
  EXPECT_EQ(waits.load(), 1u);
  EXPECT_EQ(credits.Available(1), 0u);

  // The third round brings the credit back (a Reply arrived).
  EXPECT_TRUE(credits.AcquireOrWait(1, false, waits, [&] {
    if (++rounds == 3) credits.Grant(1, 1);
  }));
  EXPECT_EQ(rounds, 3);
  EXPECT_EQ(waits.load(), 2u);
  EXPECT_EQ(credits.Available(1), 0u);
}

}  // namespace
}  // namespace gexrt::am
