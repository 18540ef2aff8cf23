#include "base/host_id.h"

#include <sched.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace gexrt {
namespace {

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) {
      had_old_ = true;
      old_ = old;
    }
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, /*overwrite=*/1);
    }
  }
  ~ScopedEnv() {
    if (had_old_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_old_ = false;
  std::string old_;
};

// Expected values computed independently (a Python transcription of the
// FNV-1a definition); "", "a" and "foobar" are also the published FNV test
// vectors.
TEST(Fnv1a64Test, KnownValues) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325u);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cu);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8u);
  EXPECT_EQ(Fnv1a64("vm"), 0x08cf3707b570dbecu);
  EXPECT_EQ(Fnv1a64("node001.cluster.example.org"), 0xcb781d3765cbb4acu);
}

TEST(Fnv1a64Test, BytesAboveAsciiAreHashedUnsigned) {
  // '\xff' must be mixed in as 0xff, not sign-extended.
  const uint64_t expected = (0xcbf29ce484222325u ^ 0xffu) * 0x100000001b3u;
  EXPECT_EQ(Fnv1a64("\xff"), expected);
}

TEST(HostnameTest, MatchesUname) {
  utsname names;
  ASSERT_EQ(uname(&names), 0) << std::strerror(errno);
  EXPECT_EQ(Hostname(), std::string(names.nodename));
  EXPECT_FALSE(Hostname().empty());
}

// Runs `compute` in a fork()ed child and returns what it computed (sent
// back through a pipe), or nullopt if the child did not report.
template <typename Compute>
std::optional<uint64_t> ComputeInChild(Compute compute) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return std::nullopt;
  const pid_t child = fork();
  if (child < 0) return std::nullopt;
  if (child == 0) {
    close(pipe_fds[0]);
    const uint64_t value = compute();
    const bool ok = write(pipe_fds[1], &value, sizeof(value)) == sizeof(value);
    _exit(ok ? 0 : 1);
  }
  close(pipe_fds[1]);
  uint64_t value = 0;
  const bool got = read(pipe_fds[0], &value, sizeof(value)) == sizeof(value);
  close(pipe_fds[0]);
  int status = 0;
  const bool exited = waitpid(child, &status, 0) == child &&
                      WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!got || !exited) return std::nullopt;
  return value;
}

// The longest name Linux allows (64 bytes) comes back whole. Needs a private
// UTS namespace, so it runs in a child and is skipped where unshare(2) is
// not permitted.
TEST(HostnameTest, LongestNameIsNotTruncated) {
  const std::string long_name(64, 'h');
  constexpr uint64_t kSkipped = 2;
  std::optional<uint64_t> verdict = ComputeInChild([&]() -> uint64_t {
    if (unshare(CLONE_NEWUTS) != 0 ||
        sethostname(long_name.data(), long_name.size()) != 0) {
      return kSkipped;
    }
    return Hostname() == long_name ? 1 : 0;
  });
  ASSERT_TRUE(verdict.has_value());
  if (*verdict == kSkipped) {
    GTEST_SKIP() << "cannot enter a new UTS namespace here";
  }
  EXPECT_EQ(*verdict, 1u);
}

TEST(GethostidLooksUnsetTest, ZeroAndLoopbackDerivedValues) {
  EXPECT_TRUE(GethostidLooksUnset(0));
  // What glibc returns for 127.0.0.1 and 127.0.1.1 (Debian's usual entry
  // for the host's own name) on little-endian hosts.
  EXPECT_TRUE(GethostidLooksUnset(0x007f0100u));
  EXPECT_TRUE(GethostidLooksUnset(0x007f0101u));
  // 192.168.1.5 and 10.0.0.7 as glibc would return them, and values from
  // an /etc/hostid file.
  EXPECT_FALSE(GethostidLooksUnset(0xa8c00501u));
  EXPECT_FALSE(GethostidLooksUnset(0x000a0700u));
  EXPECT_FALSE(GethostidLooksUnset(0x12345678u));
}

TEST(ResolveHostIdTest, HostnameAndConduitModesHashTheName) {
  for (const HostDetectMode mode :
       {HostDetectMode::kHostname, HostDetectMode::kConduit}) {
    const HostIdResult result = ResolveHostId(mode, "foobar", 0x12345678u);
    EXPECT_EQ(result.id, 0x85944171f73967e8u);
    EXPECT_TRUE(result.warning.empty());
  }
}

TEST(ResolveHostIdTest, GethostidModeUsesAUsefulValue) {
  const HostIdResult result =
      ResolveHostId(HostDetectMode::kGethostid, "foobar", 0x12345678u);
  EXPECT_EQ(result.id, 0x12345678u);
  EXPECT_TRUE(result.warning.empty());
}

TEST(ResolveHostIdTest, GethostidModeFallsBackWithAWarning) {
  for (const uint32_t useless : {0u, 0x007f0101u}) {
    const HostIdResult result =
        ResolveHostId(HostDetectMode::kGethostid, "foobar", useless);
    EXPECT_EQ(result.id, 0x85944171f73967e8u);
    EXPECT_NE(result.warning.find("GASNET_HOST_DETECT"), std::string::npos)
        << result.warning;
    EXPECT_NE(result.warning.find("\"foobar\""), std::string::npos)
        << result.warning;
  }
}

TEST(HostIdTest, DefaultIsTheHostnameHash) {
  ScopedEnv env("GASNET_HOST_DETECT", nullptr);
  EXPECT_EQ(HostDetectModeFromEnv(), HostDetectMode::kHostname);
  EXPECT_EQ(HostId(), Fnv1a64(Hostname()));
}

TEST(HostIdTest, StableAcrossCalls) {
  ScopedEnv env("GASNET_HOST_DETECT", nullptr);
  EXPECT_EQ(HostId(), HostId());
}

TEST(HostIdTest, SameInAForkedChild) {
  ScopedEnv env("GASNET_HOST_DETECT", nullptr);
  const uint64_t parent_id = HostId();
  std::optional<uint64_t> child_id = ComputeInChild([] { return HostId(); });
  ASSERT_TRUE(child_id.has_value());
  EXPECT_EQ(*child_id, parent_id);
}

TEST(HostIdTest, GethostidMode) {
  ScopedEnv env("GASNET_HOST_DETECT", "gethostid");
  EXPECT_EQ(HostDetectModeFromEnv(), HostDetectMode::kGethostid);
  const uint32_t raw = static_cast<uint32_t>(gethostid());
  const uint64_t expected =
      GethostidLooksUnset(raw) ? Fnv1a64(Hostname()) : uint64_t{raw};
  EXPECT_EQ(HostId(), expected);
  EXPECT_EQ(HostId(), HostId());
}

TEST(HostIdTest, ModeIsMatchedInAnyCase) {
  ScopedEnv env("GASNET_HOST_DETECT", "GetHostID");
  EXPECT_EQ(HostDetectModeFromEnv(), HostDetectMode::kGethostid);
}

TEST(HostIdTest, ConduitModeBehavesLikeHostnameForNow) {
  ScopedEnv env("GASNET_HOST_DETECT", "conduit");
  EXPECT_EQ(HostDetectModeFromEnv(), HostDetectMode::kConduit);
  EXPECT_EQ(HostId(), Fnv1a64(Hostname()));
}

TEST(HostIdDeathTest, UnknownModeIsFatalAndNamesTheVariable) {
  ScopedEnv env("GASNET_HOST_DETECT", "mac-address");
  EXPECT_DEATH(HostDetectModeFromEnv(), "GASNET_HOST_DETECT");
}

}  // namespace
}  // namespace gexrt
