#include "core/peer_lost.h"

#include "gtest/gtest.h"

namespace gexrt::core {
namespace {

TEST(PeerLostClockTest, NothingUntilAFailure) {
  PeerLostClock clock(absl::ZeroDuration());
  EXPECT_FALSE(clock.lost());
  clock.Check("test", 0);  // no failure: returns
}

TEST(PeerLostClockTest, WithinTheGraceNothingHappens) {
  PeerLostClock clock(absl::Hours(1));
  clock.Lost("a Put to rank 3 failed");
  EXPECT_TRUE(clock.lost());
  clock.Check("test", 0);  // an hour to go: returns
}

TEST(PeerLostClockDeathTest, AfterTheGraceTheFirstFailureIsNamed) {
  PeerLostClock clock(absl::ZeroDuration());
  clock.Lost("an AM Request to rank 3 failed");
  clock.Lost("a later failure");
  EXPECT_DEATH(clock.Check("test", 2),
               "test conduit: rank 2: an AM Request to rank 3 failed, and the "
               "job was not ended");
}

}  // namespace
}  // namespace gexrt::core
