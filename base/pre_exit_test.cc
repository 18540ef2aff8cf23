#include "base/pre_exit.h"

#include <vector>

#include "gtest/gtest.h"

namespace gexrt {
namespace {

std::vector<int>& Calls() {
  static std::vector<int> calls;
  return calls;
}
void First() { Calls().push_back(1); }
void Second() { Calls().push_back(2); }

TEST(PreExit, RunsEachHookOnceInOrder) {
  AddPreExitHook(&First);
  AddPreExitHook(&Second);
  AddPreExitHook(&First);  // Already there: not added twice.
  RunPreExitHooks();
  RunPreExitHooks();  // The exit path and atexit both may call it.
  EXPECT_EQ(Calls(), (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace gexrt
