#include "base/status.h"

#include <cerrno>
#include <string>

#include "gtest/gtest.h"

namespace gexrt {
namespace {

TEST(ErrnoToStatusTest, CodeFollowsErrnoAndMessageNamesTheCall) {
  absl::Status missing = ErrnoToStatus(ENOENT, "shm_open(/gex-1)");
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(missing.message()),
            "shm_open(/gex-1): No such file or directory");
  EXPECT_EQ(ErrnoToStatus(EACCES, "open").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoToStatus(ENOMEM, "mmap").code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace gexrt
