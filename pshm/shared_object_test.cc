// Shared objects, for whichever mechanism this binary was built with
// (shared_object_test_{posix,sysv,file} run it once per mechanism).
#include "pshm/shared_object.h"

#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace gexrt::pshm {
namespace {

bool IsSysV() { return MechanismName() == "sysv"; }
bool IsFile() { return MechanismName() == "file"; }

// Every test gets its own job prefix (letters and digits only), and the
// file mechanism its own fresh directory under $TEST_TMPDIR.
class SharedObjectTest : public testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    prefix_ = absl::StrFormat("t%dx%d", getpid(), ++counter);
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string dir_template =
        absl::StrFormat("%s/pshmXXXXXX", tmp != nullptr ? tmp : "/tmp");
    ASSERT_NE(mkdtemp(dir_template.data()), nullptr) << std::strerror(errno);
    dir_ = dir_template;
    setenv("GASNET_TMPDIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    // Whatever a failed test left behind.
    RemoveJobObjects(prefix_, Pids());
    unsetenv("GASNET_TMPDIR");
    rmdir(dir_.c_str());
  }

  ObjectName Name(uint32_t owner = 0, uint32_t serial = 0) const {
    ObjectName name;
    name.job_prefix = prefix_;
    name.owner = owner;
    name.serial = serial;
    return name;
  }
  // The pids that SysV listing and removal look at: this process made
  // every segment here.
  static std::vector<pid_t> Pids() { return {getpid()}; }

  // Whether ListJobObjects shows `object` (by name, or by SysV id).
  bool Listed(const ObjectName& name, int64_t id) const {
    for (const std::string& entry : ListJobObjects(prefix_, Pids())) {
      if (IsSysV()) {
        if (absl::StrContains(entry, absl::StrFormat("shmid %d ", id))) {
          return true;
        }
      } else {
        const size_t slash = entry.rfind('/');
        const std::string base =
            slash == std::string::npos ? entry : entry.substr(slash);
        if (absl::EndsWith(name.Path(), base)) return true;
      }
    }
    return false;
  }

  std::string prefix_;
  std::string dir_;
};

void Fill(void* p, size_t n, unsigned char seed) {
  auto* bytes = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    bytes[i] = static_cast<unsigned char>(seed + i * 7 + (i >> 9));
  }
}

bool Holds(const void* p, size_t n, unsigned char seed) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    if (bytes[i] != static_cast<unsigned char>(seed + i * 7 + (i >> 9))) {
      return false;
    }
  }
  return true;
}

TEST_F(SharedObjectTest, MechanismIsKnown) {
  const std::string_view m = MechanismName();
  EXPECT_TRUE(m == "posix" || m == "sysv" || m == "file") << m;
}

TEST_F(SharedObjectTest, PathNamesTheJobOwnerAndSerial) {
  const std::string path = Name(3, 7).Path();
  if (IsSysV()) {
    EXPECT_NE(path.find(prefix_), std::string::npos) << path;
    EXPECT_NE(path.find('3'), std::string::npos) << path;
    EXPECT_NE(path.find('7'), std::string::npos) << path;
  } else if (IsFile()) {
    EXPECT_EQ(path, absl::StrFormat("%s/GASNT%s.3.7", dir_, prefix_));
  } else {
    EXPECT_EQ(path, absl::StrFormat("/GASNT%s.3.7", prefix_));
  }
  EXPECT_NE(Name(3, 7).Path(), Name(3, 8).Path());
  EXPECT_NE(Name(3, 7).Path(), Name(4, 7).Path());
}

TEST_F(SharedObjectTest, FileDirectoryPrefersGasnetTmpdirThenTmpdir) {
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::string saved = old_tmpdir != nullptr ? old_tmpdir : "";
  EXPECT_EQ(internal::FileDirectory(), dir_);
  setenv("TMPDIR", "/some/tmp", 1);
  EXPECT_EQ(internal::FileDirectory(), dir_);
  setenv("GASNET_TMPDIR", "", 1);  // Empty means unset.
  EXPECT_EQ(internal::FileDirectory(), "/some/tmp");
  unsetenv("GASNET_TMPDIR");
  EXPECT_EQ(internal::FileDirectory(), "/some/tmp");
  unsetenv("TMPDIR");
  EXPECT_EQ(internal::FileDirectory(), "/tmp");
  if (old_tmpdir != nullptr) setenv("TMPDIR", saved.c_str(), 1);
  setenv("GASNET_TMPDIR", dir_.c_str(), 1);
}

TEST_F(SharedObjectTest, PeerMappingSeesTheCreatorsWrites) {
  const size_t size = (1 << 20) + 12345;  // Not a whole number of pages.
  absl::StatusOr<SharedObject> mine = SharedObject::Create(Name(), size);
  ASSERT_TRUE(mine.ok()) << mine.status();
  ASSERT_NE(mine->address(), nullptr);
  EXPECT_EQ(mine->size(), size);
  if (!IsSysV()) {
    EXPECT_EQ(mine->id(), 0);
  }
  Fill(mine->address(), size, 1);

  absl::StatusOr<SharedObject> peer =
      SharedObject::Map(Name(), mine->id(), size);
  ASSERT_TRUE(peer.ok()) << peer.status();
  ASSERT_NE(peer->address(), nullptr);
  EXPECT_NE(peer->address(), mine->address());
  EXPECT_EQ(peer->size(), size);
  EXPECT_EQ(peer->id(), mine->id());
  EXPECT_TRUE(Holds(peer->address(), size, 1));

  // And the other way.
  Fill(peer->address(), size, 2);
  EXPECT_TRUE(Holds(mine->address(), size, 2));

  // A part of it maps too.
  absl::StatusOr<SharedObject> part =
      SharedObject::Map(Name(), mine->id(), 4096);
  ASSERT_TRUE(part.ok()) << part.status();
  EXPECT_TRUE(Holds(part->address(), 4096, 2));
  EXPECT_TRUE(mine->RemoveName().ok());
}

TEST_F(SharedObjectTest, OwnersAndSerialsAreSeparateObjects) {
  std::vector<SharedObject> objects;
  const ObjectName names[] = {Name(0, 0), Name(0, 1), Name(1, 0), Name(1, 1)};
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<SharedObject> o = SharedObject::Create(names[i], 8192);
    ASSERT_TRUE(o.ok()) << o.status();
    Fill(o->address(), 8192, static_cast<unsigned char>(10 * i));
    objects.push_back(*std::move(o));
  }
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<SharedObject> peer =
        SharedObject::Map(names[i], objects[i].id(), 8192);
    ASSERT_TRUE(peer.ok()) << peer.status();
    EXPECT_TRUE(
        Holds(peer->address(), 8192, static_cast<unsigned char>(10 * i)))
        << i;
  }
}

TEST_F(SharedObjectTest, AfterRemoveNameNoNewMapping) {
  const size_t size = 65536;
  absl::StatusOr<SharedObject> mine = SharedObject::Create(Name(), size);
  ASSERT_TRUE(mine.ok()) << mine.status();
  absl::StatusOr<SharedObject> peer =
      SharedObject::Map(Name(), mine->id(), size);
  ASSERT_TRUE(peer.ok()) << peer.status();
  ASSERT_TRUE(mine->RemoveName().ok());
  EXPECT_TRUE(mine->RemoveName().ok());  // Idempotent.

  // The existing mappings still share the memory.
  Fill(mine->address(), size, 3);
  EXPECT_TRUE(Holds(peer->address(), size, 3));

  absl::StatusOr<SharedObject> late =
      SharedObject::Map(Name(), mine->id(), size);
  if (IsSysV()) {
    // Linux attaches a removed segment by id while it is attached.
    ASSERT_TRUE(late.ok()) << late.status();
    EXPECT_TRUE(Holds(late->address(), size, 3));
  } else {
    ASSERT_FALSE(late.ok());
    EXPECT_NE(late.status().message().find(Name().Path()), std::string::npos)
        << late.status();
  }
}

TEST_F(SharedObjectTest, ListedUntilTheNameOrTheLastMappingGoes) {
  absl::StatusOr<SharedObject> mine = SharedObject::Create(Name(0, 4), 4096);
  ASSERT_TRUE(mine.ok()) << mine.status();
  const int64_t id = mine->id();
  EXPECT_TRUE(Listed(Name(0, 4), id));
  if (!IsSysV()) {
    EXPECT_EQ(ListJobObjects(prefix_, {}).size(), 1u);
    // Another job's listing does not show it.
    EXPECT_TRUE(ListJobObjects(prefix_ + "0", {}).empty());
    EXPECT_TRUE(
        ListJobObjects(prefix_.substr(0, prefix_.size() - 1), {}).empty());
  }
  {
    absl::StatusOr<SharedObject> peer = SharedObject::Map(Name(0, 4), id, 4096);
    ASSERT_TRUE(peer.ok()) << peer.status();
    ASSERT_TRUE(mine->RemoveName().ok());
    // POSIX and file objects are unlisted with their name; a SysV segment
    // while someone has it attached.
    EXPECT_EQ(Listed(Name(0, 4), id), IsSysV());
    *mine = SharedObject::Empty();
    EXPECT_EQ(Listed(Name(0, 4), id), IsSysV());
  }
  // The last mapping is gone.
  EXPECT_FALSE(Listed(Name(0, 4), id));
  EXPECT_FALSE(SharedObject::Map(Name(0, 4), id, 4096).ok());
}

TEST_F(SharedObjectTest, DestroyingTheCreatorRemovesTheName) {
  int64_t id;
  {
    absl::StatusOr<SharedObject> mine = SharedObject::Create(Name(), 4096);
    ASSERT_TRUE(mine.ok()) << mine.status();
    id = mine->id();
    EXPECT_TRUE(Listed(Name(), id));
  }
  EXPECT_FALSE(Listed(Name(), id));
  EXPECT_FALSE(SharedObject::Map(Name(), id, 4096).ok());
  if (IsFile()) {
    struct stat st;
    EXPECT_NE(stat(Name().Path().c_str(), &st), 0);
  }
}

TEST_F(SharedObjectTest, APeersRemoveNameLeavesTheNameAlone) {
  absl::StatusOr<SharedObject> mine = SharedObject::Create(Name(), 4096);
  ASSERT_TRUE(mine.ok()) << mine.status();
  {
    absl::StatusOr<SharedObject> peer =
        SharedObject::Map(Name(), mine->id(), 4096);
    ASSERT_TRUE(peer.ok()) << peer.status();
    EXPECT_TRUE(peer->RemoveName().ok());
  }
  EXPECT_TRUE(Listed(Name(), mine->id()));
  EXPECT_TRUE(SharedObject::Map(Name(), mine->id(), 4096).ok());
}

TEST_F(SharedObjectTest, MovesTransferOwnership) {
  absl::StatusOr<SharedObject> created = SharedObject::Create(Name(0, 0), 4096);
  ASSERT_TRUE(created.ok()) << created.status();
  void* const address = created->address();
  const int64_t id = created->id();
  Fill(address, 4096, 5);

  SharedObject moved(*std::move(created));
  EXPECT_EQ(created->address(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(created->size(), 0u);
  EXPECT_EQ(moved.address(), address);
  EXPECT_EQ(moved.size(), 4096u);
  EXPECT_EQ(moved.id(), id);
  *created = SharedObject::Empty();  // Destroying the moved-from is harmless.
  EXPECT_TRUE(Listed(Name(0, 0), id));
  EXPECT_TRUE(Holds(moved.address(), 4096, 5));

  // Assigning over an owner releases what it held (and removes its name).
  absl::StatusOr<SharedObject> other = SharedObject::Create(Name(0, 1), 8192);
  ASSERT_TRUE(other.ok()) << other.status();
  const int64_t other_id = other->id();
  moved = *std::move(other);
  EXPECT_EQ(moved.size(), 8192u);
  EXPECT_FALSE(Listed(Name(0, 0), id));
  EXPECT_TRUE(Listed(Name(0, 1), other_id));
  EXPECT_FALSE(SharedObject::Map(Name(0, 0), id, 4096).ok());
  EXPECT_TRUE(SharedObject::Map(Name(0, 1), other_id, 8192).ok());
}

TEST_F(SharedObjectTest, EmptyMapsNothing) {
  SharedObject empty = SharedObject::Empty();
  EXPECT_EQ(empty.address(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.id(), 0);
  EXPECT_TRUE(empty.RemoveName().ok());
}

TEST_F(SharedObjectTest, CreatingAnExistingNameFails) {
  absl::StatusOr<SharedObject> first = SharedObject::Create(Name(), 4096);
  ASSERT_TRUE(first.ok()) << first.status();
  Fill(first->address(), 4096, 6);
  absl::StatusOr<SharedObject> second = SharedObject::Create(Name(), 4096);
  if (IsSysV()) {
    // SysV segments have no name: two of them are simply two segments.
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_NE(second->id(), first->id());
    return;
  }
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(Name().Path()), std::string::npos)
      << second.status();
  // The failed attempt left the first object alone.
  EXPECT_TRUE(Listed(Name(), 0));
  absl::StatusOr<SharedObject> peer = SharedObject::Map(Name(), 0, 4096);
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_TRUE(Holds(peer->address(), 4096, 6));
}

TEST_F(SharedObjectTest, HugeSizeFailsCleanlyNamingTheObject) {
  absl::StatusOr<SharedObject> huge =
      SharedObject::Create(Name(2, 9), size_t{1} << 50);
  ASSERT_FALSE(huge.ok());
  const std::string message(huge.status().message());
  EXPECT_NE(message.find(Name(2, 9).Path()), std::string::npos) << message;
  // Nothing left behind.
  EXPECT_TRUE(ListJobObjects(prefix_, Pids()).empty());
  // And the name can be used after all.
  absl::StatusOr<SharedObject> small = SharedObject::Create(Name(2, 9), 4096);
  EXPECT_TRUE(small.ok()) << small.status();
}

TEST_F(SharedObjectTest, MappingMoreThanThereIsFails) {
  absl::StatusOr<SharedObject> mine = SharedObject::Create(Name(), 8192);
  ASSERT_TRUE(mine.ok()) << mine.status();
  absl::StatusOr<SharedObject> peer =
      SharedObject::Map(Name(), mine->id(), 1 << 20);
  ASSERT_FALSE(peer.ok());
  EXPECT_NE(peer.status().message().find(Name().Path()), std::string::npos)
      << peer.status();
}

TEST_F(SharedObjectTest, MappingWhatDoesNotExistFails) {
  int64_t id = -1;
  if (IsSysV()) {
    // A segment that existed and is gone.
    absl::StatusOr<SharedObject> gone = SharedObject::Create(Name(), 4096);
    ASSERT_TRUE(gone.ok()) << gone.status();
    id = gone->id();
  }
  absl::StatusOr<SharedObject> peer = SharedObject::Map(Name(5, 5), id, 4096);
  ASSERT_FALSE(peer.ok());
  EXPECT_NE(peer.status().message().find(Name(5, 5).Path()), std::string::npos)
      << peer.status();
}

// A job killed before RemoveName leaves its objects behind; the launcher's
// clean-up removes them, and only them.
TEST_F(SharedObjectTest, RemoveJobObjectsRemovesLeftBehindObjects) {
  if (IsSysV()) {
    // SysV objects are removed at Create; only a segment made and never
    // marked (killed between shmget and shmctl) can be left behind.
    const int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    ASSERT_GE(id, 0) << std::strerror(errno);
    EXPECT_TRUE(Listed(Name(), id));
    // An attached one is in use, and stays.
    absl::StatusOr<SharedObject> in_use = SharedObject::Create(Name(), 4096);
    ASSERT_TRUE(in_use.ok()) << in_use.status();
    const int64_t in_use_id = in_use->id();
    // Another job's pids remove nothing of ours (a process that made
    // nothing, so nothing of anyone else's goes either).
    const pid_t stranger = fork();
    ASSERT_GE(stranger, 0);
    if (stranger == 0) _exit(0);
    ASSERT_EQ(waitpid(stranger, nullptr, 0), stranger);
    EXPECT_EQ(RemoveJobObjects(prefix_, {stranger}), 0);
    EXPECT_TRUE(Listed(Name(), id));
    EXPECT_GE(RemoveJobObjects(prefix_, Pids()), 1);
    EXPECT_FALSE(Listed(Name(), id));
    struct shmid_ds ds;
    EXPECT_NE(shmctl(id, IPC_STAT, &ds), 0);
    EXPECT_TRUE(Listed(Name(), in_use_id));
    EXPECT_TRUE(SharedObject::Map(Name(), in_use_id, 4096).ok());
    return;
  }

  // A child creates objects and dies without cleaning up.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (uint32_t serial = 0; serial < 3; ++serial) {
      absl::StatusOr<SharedObject> o =
          SharedObject::Create(Name(1, serial), 4096);
      if (!o.ok()) _exit(1);
      Fill(o->address(), 4096, 9);
      new SharedObject(*std::move(o));  // Never destroyed.
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  // Another job's object, with a prefix that starts like ours.
  const std::string other_prefix = prefix_ + "z1";
  ObjectName other = Name();
  other.job_prefix = other_prefix;
  absl::StatusOr<SharedObject> others = SharedObject::Create(other, 4096);
  ASSERT_TRUE(others.ok()) << others.status();

  EXPECT_EQ(ListJobObjects(prefix_, {}).size(), 3u);
  absl::StatusOr<SharedObject> leaked = SharedObject::Map(Name(1, 0), 0, 4096);
  ASSERT_TRUE(leaked.ok()) << leaked.status();
  EXPECT_TRUE(Holds(leaked->address(), 4096, 9));

  EXPECT_EQ(RemoveJobObjects(prefix_, {child}), 3);
  EXPECT_TRUE(ListJobObjects(prefix_, {}).empty());
  EXPECT_FALSE(SharedObject::Map(Name(1, 0), 0, 4096).ok());
  EXPECT_EQ(RemoveJobObjects(prefix_, {child}), 0);  // Nothing left.

  // The other job's object was not touched.
  EXPECT_EQ(ListJobObjects(other_prefix, {}).size(), 1u);
  EXPECT_TRUE(SharedObject::Map(other, 0, 4096).ok());
}

TEST_F(SharedObjectTest, EmptyJobPrefixMatchesNothing) {
  absl::StatusOr<SharedObject> mine = SharedObject::Create(Name(), 4096);
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_TRUE(ListJobObjects("", Pids()).empty());
  EXPECT_EQ(RemoveJobObjects("", Pids()), 0);
  EXPECT_TRUE(Listed(Name(), mine->id()));
}

TEST_F(SharedObjectTest, AvailableSharedMemoryIsPositive) {
  EXPECT_GT(AvailableSharedMemory(), 0u);
}

}  // namespace
}  // namespace gexrt::pshm
