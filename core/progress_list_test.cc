#include "core/progress_list.h"

#include <vector>

#include "gtest/gtest.h"

namespace gexrt::core {
namespace {

void Record(void* context) {
  static_cast<std::vector<int>*>(context)->push_back(1);
}
void RecordTwo(void* context) {
  static_cast<std::vector<int>*>(context)->push_back(2);
}

TEST(ProgressListTest, RunsEveryFunctionInOrderOfRegistration) {
  ProgressList list;
  std::vector<int> calls;
  list.Run();  // Empty: nothing to call.
  list.Add(&Record, &calls);
  list.Add(&RecordTwo, &calls);
  EXPECT_EQ(list.size(), 2u);
  list.Run();
  list.Run();
  EXPECT_EQ(calls, (std::vector<int>{1, 2, 1, 2}));
}

TEST(ProgressListDeathTest, MoreThanCapacityIsFatal) {
  ProgressList list;
  std::vector<int> calls;
  for (size_t i = 0; i < ProgressList::kCapacity; ++i)
    list.Add(&Record, &calls);
  EXPECT_DEATH(list.Add(&Record, &calls), "more than 8 progress functions");
}

}  // namespace
}  // namespace gexrt::core
