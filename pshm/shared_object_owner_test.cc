// Objects that carry a job's name but were made by another user (a local
// user who predicted the name, to block the job): the launcher's clean-up
// (RemoveJobObjects) must leave them alone, even when it runs as root, and
// SharedObject::Create over such a name must say whose the object is.
// Making another user's object takes root (chown to nobody, uid 65534);
// without it the tests are skipped. Built once per mechanism.
#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pshm/shared_object.h"

namespace gexrt::pshm {
namespace {

using ::testing::HasSubstr;

constexpr uid_t kOtherUid = 65534;  // nobody

class SharedObjectOwnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) {
      GTEST_SKIP() << "needs root to make an object owned by another user";
    }
    // The file mechanism's directory: this test's own.
    const char* tmp = std::getenv("TEST_TMPDIR");
    setenv("GASNET_TMPDIR", tmp != nullptr ? tmp : "/tmp", 1);
    prefix_ = absl::StrFormat("owner%d", getpid());
  }

  // Where the object named `serial` of rank 0 lives in the file system.
  std::string FsPath(uint32_t serial) const {
    const std::string path = ObjectName{prefix_, 0, serial}.Path();
    return MechanismName() == "posix" ? "/dev/shm" + path : path;
  }

  // Makes a file-system object of the job, owned by `uid`; false when this
  // system will not give it that owner (a user namespace without uid
  // 65534, say).
  bool MakeObject(uint32_t serial, uid_t uid) {
    const std::string path = FsPath(serial);
    const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      ADD_FAILURE() << path << ": " << strerror(errno);
      return false;
    }
    made_.push_back(path);
    const bool ok = uid == geteuid() || fchown(fd, uid, uid) == 0;
    close(fd);
    return ok;
  }

  void TearDown() override {
    for (const std::string& path : made_) unlink(path.c_str());
  }

  static bool Exists(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
  }

  std::string prefix_;
  std::vector<std::string> made_;
};

TEST_F(SharedObjectOwnerTest, CleanupLeavesAnotherUsersObjectAlone) {
  if (MechanismName() == "sysv") GTEST_SKIP() << "named objects only";
  if (!MakeObject(0, kOtherUid)) GTEST_SKIP() << "cannot chown to 65534";
  ASSERT_TRUE(MakeObject(1, geteuid()));  // One the job left: removed.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RemoveJobObjects(prefix_, {}), 1);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(Exists(FsPath(0))) << "another user's object was removed";
  EXPECT_FALSE(Exists(FsPath(1)));
  EXPECT_THAT(err, HasSubstr(absl::StrFormat(
                       "not removing %s: it carries this job's name but is "
                       "owned by uid %u, not by this job's user (uid %u)",
                       FsPath(0), kOtherUid, geteuid())));
}

TEST_F(SharedObjectOwnerTest, CreateOverAnotherUsersNameSaysWhoseItIs) {
  if (MechanismName() == "sysv") GTEST_SKIP() << "named objects only";
  if (!MakeObject(0, kOtherUid)) GTEST_SKIP() << "cannot chown to 65534";
  const ObjectName name{prefix_, 0, 0};
  absl::StatusOr<SharedObject> o = SharedObject::Create(name, 4096);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(o.status().message(),
              HasSubstr(absl::StrFormat(
                  "cannot create shared memory object %s: it already exists "
                  "and is owned by another user (uid %u; this job runs as "
                  "uid %u)",
                  name.Path(), kOtherUid, geteuid())));
  EXPECT_TRUE(Exists(FsPath(0)));  // And it is left alone.
}

TEST_F(SharedObjectOwnerTest, CreateOverThisUsersLeftoverSaysSo) {
  if (MechanismName() == "sysv") GTEST_SKIP() << "named objects only";
  ASSERT_TRUE(MakeObject(0, geteuid()));
  absl::StatusOr<SharedObject> o =
      SharedObject::Create(ObjectName{prefix_, 0, 0}, 4096);
  ASSERT_FALSE(o.ok());
  EXPECT_THAT(o.status().message(),
              HasSubstr("it already exists (owned by this user"));
}

// SysV segments are the job's by creator pid; a segment whose creator pid
// is the job's but whose owner is another user's is left alone.
TEST_F(SharedObjectOwnerTest, CleanupLeavesAnotherUsersSegmentAlone) {
  if (MechanismName() != "sysv") GTEST_SKIP() << "SysV only";
  const int other = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  const int mine = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  ASSERT_GE(other, 0) << strerror(errno);
  ASSERT_GE(mine, 0) << strerror(errno);
  struct shmid_ds ds;
  ASSERT_EQ(shmctl(other, IPC_STAT, &ds), 0);
  ds.shm_perm.uid = kOtherUid;
  if (shmctl(other, IPC_SET, &ds) != 0) {
    shmctl(other, IPC_RMID, nullptr);
    shmctl(mine, IPC_RMID, nullptr);
    GTEST_SKIP() << "cannot give a segment to uid 65534";
  }
  const pid_t self = getpid();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RemoveJobObjects(prefix_, {self}), 1);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(shmctl(other, IPC_STAT, &ds), 0)
      << "another user's segment was removed";
  EXPECT_NE(shmctl(mine, IPC_STAT, &ds), 0);
  EXPECT_THAT(err,
              HasSubstr(absl::StrFormat("not removing SysV shmid %d", other)));
  shmctl(other, IPC_RMID, nullptr);
}

}  // namespace
}  // namespace gexrt::pshm
