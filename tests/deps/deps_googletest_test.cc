// GoogleTest and GoogleMock link and work: matchers match (and fail to
// match), a mock checks its expectations.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Return;
using ::testing::StartsWith;

TEST(GoogletestTest, Matchers) {
  std::vector<int> v = {1, 2, 3};
  EXPECT_THAT(v, ElementsAre(1, 2, 3));
  EXPECT_THAT(v, Not(ElementsAre(1, 2)));
  EXPECT_THAT("gasnet ofi-conduit",
              AllOf(StartsWith("gasnet"), HasSubstr("ofi")));
  // A matcher that must fail, so a no-op matcher would be caught.
  EXPECT_FALSE(testing::Matches(HasSubstr("ucx"))("gasnet ofi-conduit"));
}

class Clock {
 public:
  virtual ~Clock() = default;
  virtual long Now() = 0;
};

class MockClock : public Clock {
 public:
  MOCK_METHOD(long, Now, (), (override));
};

TEST(GoogletestTest, MockExpectations) {
  MockClock clock;
  EXPECT_CALL(clock, Now()).Times(2).WillOnce(Return(10)).WillOnce(Return(25));
  Clock& c = clock;
  long start = c.Now();
  EXPECT_EQ(c.Now() - start, 15);
}

}  // namespace
