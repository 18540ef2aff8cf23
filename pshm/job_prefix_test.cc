// The shared-memory name prefix a job makes up when no launcher gave it
// one (srun or mpirun starting the ranks directly): 64 random bits after
// the host id and the pid, as wide as gasnetrun's GEX_JOB_ID.
#include <unistd.h>

#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "base/host_id.h"
#include "gtest/gtest.h"
#include "pshm/supernode.h"

namespace gexrt::pshm {
namespace {

TEST(JobPrefixTest, HostIdPidThen64RandomBits) {
  const std::string head =
      absl::StrFormat("%08x%x", static_cast<uint32_t>(HostId()), getpid());
  const std::string prefix = MakeUpJobPrefix();
  ASSERT_EQ(prefix.size(), head.size() + 16) << prefix;
  EXPECT_EQ(prefix.substr(0, head.size()), head);
  for (char c : prefix) {
    EXPECT_TRUE(absl::ascii_isxdigit(static_cast<unsigned char>(c))) << prefix;
  }
}

TEST(JobPrefixTest, TheRandomPartUsesAll64Bits) {
  // Over 64 prefixes, every one of the 16 random hex digits takes more
  // than one value, the top ones included (16 random bits left the first
  // 12 digits constant). The chance that a truly random digit shows one
  // value in 64 draws is 16^-63.
  const size_t head = MakeUpJobPrefix().size() - 16;
  std::set<char> seen[16];
  std::set<std::string> prefixes;
  for (int i = 0; i < 64; ++i) {
    const std::string p = MakeUpJobPrefix();
    prefixes.insert(p);
    for (size_t d = 0; d < 16; ++d) seen[d].insert(p[head + d]);
  }
  EXPECT_EQ(prefixes.size(), 64u);
  for (size_t d = 0; d < 16; ++d) {
    EXPECT_GT(seen[d].size(), 1u) << "random digit " << d << " never varied";
  }
}

}  // namespace
}  // namespace gexrt::pshm
