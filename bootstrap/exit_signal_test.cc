#include "bootstrap/exit_signal.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "gtest/gtest.h"

namespace gexrt {
namespace {

TEST(ExitSignal, RoundTrips) {
  for (const ExitSignalValue v :
       {ExitSignalValue{0, 0, false}, ExitSignalValue{7, 3, true},
        ExitSignalValue{0xffffffffu, 255, false},
        ExitSignalValue{123456, 137, true}}) {
    const std::optional<ExitSignalValue> got =
        DecodeExitSignal(EncodeExitSignal(v));
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->initiator, v.initiator);
    EXPECT_EQ(got->code, v.code);
    EXPECT_EQ(got->peer_lost, v.peer_lost);
  }
}

TEST(ExitSignal, CallQueryRoundTrips) {
  ExitSignalValue query;
  query.call_query = true;
  const auto got = DecodeExitSignal(EncodeExitSignal(query));
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->call_query);
  EXPECT_FALSE(got->peer_lost);
  const auto exit = DecodeExitSignal(EncodeExitSignal({2, 1, false}));
  ASSERT_TRUE(exit.has_value());
  EXPECT_FALSE(exit->call_query);
}

TEST(ExitSignal, CodeKeepsItsLowByte) {
  const auto got = DecodeExitSignal(EncodeExitSignal({1, 256 + 9, false}));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->code, 9);
  EXPECT_FALSE(got->peer_lost);
}

TEST(ExitSignal, OtherValuesAreNotOurs) {
  EXPECT_FALSE(DecodeExitSignal(0).has_value());
  EXPECT_FALSE(DecodeExitSignal(42).has_value());
  const uint64_t ours = EncodeExitSignal({3, 4, false});
  EXPECT_FALSE(DecodeExitSignal(ours ^ (uint64_t{1} << 63)).has_value());
  EXPECT_FALSE(DecodeExitSignal(ours | (uint64_t{1} << 12)).has_value());
}

std::atomic<uint64_t> g_received{0};
std::atomic<int> g_code{0};

void OnSignal(int, siginfo_t* info, void*) {
  g_code.store(info->si_code);
  g_received.store(reinterpret_cast<uintptr_t>(info->si_value.sival_ptr));
}

TEST(ExitSignal, TheValueArrivesWithTheSignal) {
  struct sigaction sa = {};
  sa.sa_sigaction = &OnSignal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  struct sigaction old;
  ASSERT_EQ(sigaction(kExitSignal, &sa, &old), 0);
  // Blocked while sent, so it is pending until unblocked here: delivery
  // happens in sigprocmask, no waiting needed.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, kExitSignal);
  ASSERT_EQ(sigprocmask(SIG_BLOCK, &set, nullptr), 0);
  ASSERT_TRUE(SendExitSignal(getpid(), {5, 77, true}));
  ASSERT_EQ(sigprocmask(SIG_UNBLOCK, &set, nullptr), 0);
  EXPECT_EQ(g_code.load(), SI_QUEUE);
  const auto got = DecodeExitSignal(g_received.load());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->initiator, 5u);
  EXPECT_EQ(got->code, 77);
  EXPECT_TRUE(got->peer_lost);
  sigaction(kExitSignal, &old, nullptr);
}

}  // namespace
}  // namespace gexrt
