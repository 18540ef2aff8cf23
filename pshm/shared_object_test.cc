#include "pshm/shared_object.h"

#include <cstring>

#include "gtest/gtest.h"

namespace gex::pshm {
namespace {

TEST(SharedObjectTest, MechanismIsKnown) {
  const std::string_view m = MechanismName();
  EXPECT_TRUE(m == "posix" || m == "sysv" || m == "file") << m;
}

}  // namespace
}  // namespace gex::pshm
