// Jobs of the ofi conduit that only it has: the bounded-memory AM flood,
// each bad setting's message, and the device listing. Every job pins
// libfabric to loopback (FI_TCP_IFACE / FI_SOCKETS_IFACE, and the udp
// provider's domain by GASNET_OFI_DEVICE=lo) and sends everything through
// libfabric (GASNET_SUPERNODE_MAXSIZE=1) unless a case says otherwise.
// (The API and exit suites run over ofi too: tests/api, tests/exit.)
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::HasSubstr;

JobResult RunOfiJob(int n, const std::vector<std::string>& args,
                    const std::vector<std::string>& env,
                    absl::Duration limit = absl::Seconds(120)) {
  BecomeSubreaper();
  JobSpec spec;
  spec.argv = {Runfile("tools/gasnetrun_ofi"), "-n", std::to_string(n),
               Runfile("tests/ofi/ofi_client")};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  const std::string tmpdir = MakeTempDir("ofi");
  spec.env = {"GASNET_SUPERNODE_MAXSIZE=1",
              "FI_PROVIDER=tcp;ofi_rxm",
              "FI_TCP_IFACE=lo",
              "FI_SOCKETS_IFACE=lo",
              "GASNET_OFI_DEVICE",
              "GASNET_OFI_SPAWNER",
              "GASNET_SSH_SERVERS",
              "GASNET_SSH_NODEFILE",
              "GASNET_TMPDIR=" + tmpdir,
              "TMPDIR=" + tmpdir};
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  spec.limit = limit;
  return RunJob(spec);
}

std::string Describe(const JobResult& r) {
  return absl::StrFormat(
      "command: %s\nexit: %d\nsurvivors: %d\nstdout:\n%s\n"
      "stderr:\n%s",
      r.command, r.exit_code, r.survivors.size(), r.out.substr(0, 4000),
      r.err.substr(0, 4000));
}

// The number after "key=" in `line`, or -1.
long long Field(const std::string& line, const std::string& key) {
  const size_t at = line.find(key + "=");
  if (at == std::string::npos) return -1;
  return std::stoll(line.substr(at + key.size() + 1));
}

std::string RankLine(const JobResult& r, int rank, const std::string& what) {
  const std::string prefix = absl::StrFormat("rank %d: %s", rank, what);
  for (const std::string& line : Lines(r.out)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

// One rank floods another with 3 million AM Medium 8 B Requests that it
// never answers: the credits stop the sender whenever the receiver is
// behind, so neither side buffers more than a bounded number of messages.
// Every message is counted; each rank's peak RSS may grow by at most
// 64 MiB over the flood (unbounded, tcp;ofi_rxm would queue ~300 MiB of
// unexpected messages at the receiver). (10 million took up to the 280 s
// limit on a loaded 2-CPU CI machine.)
TEST(OfiFloodTest, ThreeMillionRequestsExactCountBoundedMemory) {
  constexpr long long kMessages = 3'000'000;
  constexpr long long kRssBoundKb = 64 * 1024;
  const JobResult r = RunOfiJob(2, {"flood", std::to_string(kMessages)}, {},
                                absl::Seconds(280));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(r.survivors.empty());
  for (int rank = 0; rank < 2; ++rank) {
    const std::string line = RankLine(r, rank, "flood ok");
    ASSERT_FALSE(line.empty()) << Describe(r);
    EXPECT_EQ(Field(line, "count"), kMessages) << line;
    const long long growth = Field(line, "rss_growth_kb");
    EXPECT_GE(growth, 0) << line;
    EXPECT_LT(growth, kRssBoundKb) << line;
  }
}

struct BadSetting {
  const char* name;
  std::vector<std::string> env;
  const char* message;  // what the fatal line must say
};

class OfiBadInputTest : public ::testing::TestWithParam<BadSetting> {};

TEST_P(OfiBadInputTest, ClearMessageNonzeroExitNothingLeft) {
  const JobResult r = RunOfiJob(2, {"hello"}, GetParam().env);
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("*** FATAL ERROR")) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr(GetParam().message)) << Describe(r);
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("hello ok"))) << Describe(r);
  EXPECT_TRUE(r.survivors.empty()) << Describe(r);
}

INSTANTIATE_TEST_SUITE_P(
    Settings, OfiBadInputTest,
    ::testing::Values(
        BadSetting{"UnknownProvider",
                   {"FI_PROVIDER=no_such_provider"},
                   "FI_PROVIDER=no_such_provider matches no provider"},
        BadSetting{"ExcludedEveryProvider",
                   {"FI_PROVIDER=^tcp,udp,shm,sockets,net"},
                   "FI_PROVIDER=^tcp,udp,shm,sockets,net matches no "
                   "provider"},
        BadSetting{"UnknownDevice",
                   {"GASNET_OFI_DEVICE=no-such-nic"},
                   "GASNET_OFI_DEVICE=no-such-nic: no such device"},
        BadSetting{"MaxMediumTooSmall",
                   {"GASNET_OFI_MAX_MEDIUM=100"},
                   "GASNET_OFI_MAX_MEDIUM=100 is too small: at least 512"},
        BadSetting{"BounceBufferCondition",
                   {"GASNET_OFI_BBUF_SIZE=4096", "GASNET_OFI_NUM_BBUFS=2",
                    "GASNET_OFI_BBUF_THRESHOLD=65536"},
                   "GASNET_OFI_NUM_BBUFS=2 is too small for "
                   "GASNET_OFI_BBUF_THRESHOLD=65536"},
        BadSetting{"MalformedDeviceNodeList",
                   {"GASNET_OFI_LIST_DEVICES=1",
                    "GASNET_OFI_LIST_DEVICES_NODES=0,x-3"},
                   "GASNET_OFI_LIST_DEVICES_NODES"},
        BadSetting{"MalformedReceiveBuffers",
                   {"GASNET_OFI_NUM_RECEIVE_BUFFS=lots"},
                   "GASNET_OFI_NUM_RECEIVE_BUFFS"},
        BadSetting{"ReceiveBufferTooSmallForMedium",
                   {"GASNET_OFI_RECEIVE_BUFF_SIZE=4096"},
                   "GASNET_OFI_RECEIVE_BUFF_SIZE=4096 must hold at least two"},
        BadSetting{
            "BadCredits", {"GASNET_AM_CREDITS_PP=0"}, "GASNET_AM_CREDITS_PP"},
        BadSetting{"BadDataProgress",
                   {"GASNET_OFI_DATA_PROGRESS=sometimes"},
                   "GASNET_OFI_DATA_PROGRESS=sometimes: expected manual or "
                   "auto"},
        BadSetting{"ProgressTheProviderLacks",
                   {"FI_PROVIDER=shm", "FI_SHM_DISABLE_CMA=1",
                    "GASNET_OFI_DATA_PROGRESS=auto"},
                   "shm (domain shm, fabric shm): does not offer automatic "
                   "data progress (GASNET_OFI_DATA_PROGRESS)"},
        BadSetting{"NoTransmitContexts",
                   {"GASNET_OFI_NUM_TX_CONTEXTS=0"},
                   "GASNET_OFI_NUM_TX_CONTEXTS"},
        BadSetting{"MalformedTaggedSetting",
                   {"GASNET_OFI_TAGGED_AM=sometimes"},
                   "GASNET_OFI_TAGGED_AM"}),
    [](const ::testing::TestParamInfo<BadSetting>& info) {
      return std::string(info.param.name);
    });

// GASNET_OFI_LIST_DEVICES reports every usable provider/device pair, from
// the ranks GASNET_OFI_LIST_DEVICES_NODES names only.
TEST(OfiListDevicesTest, OnlyTheNamedRanksReport) {
  const JobResult r = RunOfiJob(
      3, {"hello"},
      {"GASNET_OFI_LIST_DEVICES=1", "GASNET_OFI_LIST_DEVICES_NODES=1-2"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("ofi: rank 0:")));
  EXPECT_THAT(r.out, HasSubstr("ofi: rank 1: usable provider/device: "
                               "tcp;ofi_rxm / lo"));
  EXPECT_THAT(r.out, HasSubstr("ofi: rank 2: usable provider/device: "
                               "tcp;ofi_rxm / lo"));
}

// Each provider this machine has carries a job, with the device picked by
// name where the provider offers more than loopback.
struct Provider {
  const char* name;
  std::vector<std::string> env;
  // What every rank's GASNET_OFI_STATS line must say (the configuration
  // the conduit really ran with).
  std::vector<std::string> stats = {};
};

class OfiProviderTest : public ::testing::TestWithParam<Provider> {};

// The ring: Put/Get 64 KiB to the next rank, an AM to it, a barrier and a
// reduction, over every pair of neighbours.
TEST_P(OfiProviderTest, RingOverEveryRank) {
  std::vector<std::string> env = GetParam().env;
  env.push_back("GASNET_OFI_STATS=yes");
  const JobResult r = RunOfiJob(4, {"ring"}, env);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string line = RankLine(r, rank, "ring ok");
    EXPECT_FALSE(line.empty()) << Describe(r);
    EXPECT_EQ(Field(line, "sum"), 10) << line;
    const std::string prefix = absl::StrFormat("ofi: rank %d: provider ", rank);
    const size_t at = r.out.find(prefix);
    ASSERT_NE(at, std::string::npos) << Describe(r);
    const std::string stats = r.out.substr(at, r.out.find('\n', at) - at);
    for (const std::string& want : GetParam().stats) {
      EXPECT_THAT(stats, HasSubstr(want));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Providers, OfiProviderTest,
    ::testing::Values(
        Provider{"tcp_rxm",
                 {"FI_PROVIDER=tcp;ofi_rxm"},
                 {"tcp;ofi_rxm", "one receiving endpoint",
                  "header in the message", "manual progress"}},
        // Requests and Replies at endpoints of their own, with one CQ or
        // one each.
        Provider{"tcp_rxm_split",
                 {"FI_PROVIDER=tcp;ofi_rxm", "GASNET_OFI_SPLIT_ENDPOINTS=yes"},
                 {"two receiving endpoints (one CQ)"}},
        Provider{"sockets_split_two_cqs",
                 {"FI_PROVIDER=sockets", "GASNET_OFI_SPLIT_ENDPOINTS=yes",
                  "GASNET_OFI_SHARED_CQ=no"},
                 {"two receiving endpoints (two CQs)"}},
        Provider{"shm_split_tagged",
                 {"FI_PROVIDER=shm", "FI_SHM_DISABLE_CMA=1",
                  "GASNET_OFI_SPLIT_ENDPOINTS=yes", "GASNET_OFI_TAGGED_AM=yes"},
                 {"two receiving endpoints (one CQ)", "header in the tag"}},
        Provider{
            "sockets", {"FI_PROVIDER=sockets"}, {"one receiving endpoint"}},
        Provider{"udp_rxd",
                 {"FI_PROVIDER=udp;ofi_rxd", "GASNET_OFI_DEVICE=lo"}},
        Provider{"shm", {"FI_PROVIDER=shm", "FI_SHM_DISABLE_CMA=1"}},
        // The header in the tag (GASNET_OFI_TAGGED_AM), on each provider;
        // with the source rank in the tag too where CQ data is refused.
        Provider{"tcp_rxm_tagged",
                 {"FI_PROVIDER=tcp;ofi_rxm", "GASNET_OFI_TAGGED_AM=yes"},
                 {"header in the tag", "source in CQ data"}},
        Provider{"tcp_rxm_tagged_source_in_tag",
                 {"FI_PROVIDER=tcp;ofi_rxm", "GASNET_OFI_TAGGED_AM=yes",
                  "GASNET_OFI_USE_CQ_DATA=no"},
                 {"header in the tag", "source in the tag"}},
        Provider{"sockets_tagged",
                 {"FI_PROVIDER=sockets", "GASNET_OFI_TAGGED_AM=yes"},
                 {"header in the tag"}},
        Provider{"udp_rxd_tagged",
                 {"FI_PROVIDER=udp;ofi_rxd", "GASNET_OFI_DEVICE=lo",
                  "GASNET_OFI_TAGGED_AM=yes"},
                 {"header in the tag"}},
        Provider{"shm_tagged",
                 {"FI_PROVIDER=shm", "FI_SHM_DISABLE_CMA=1",
                  "GASNET_OFI_TAGGED_AM=yes"},
                 {"header in the tag"}},
        // Automatic data progress (sockets' progress thread): the RMA
        // path that polls only for manual progress.
        Provider{"sockets_auto_progress",
                 {"FI_PROVIDER=sockets", "GASNET_OFI_DATA_PROGRESS=auto"},
                 {"automatic progress"}}),
    [](const ::testing::TestParamInfo<Provider>& info) {
      return std::string(info.param.name);
    });

// A rank killed while its peers still send to it and read from it: the
// job ends with the dead rank's code (137), no survivor's own fatal error
// first, and nothing left behind. (sockets reports the loss as I/O errors
// and may hand the survivors corrupted messages meanwhile: README.md.)
class OfiPeerDeathTest : public ::testing::TestWithParam<Provider> {};

TEST_P(OfiPeerDeathTest, TheDeadRanksCodeEndsTheJob) {
  const JobResult r = RunOfiJob(3, {"die", "200"}, GetParam().env);
  EXPECT_EQ(r.exit_code, 137) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("rank 2: dying")) << Describe(r);
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("survived"))) << Describe(r);
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("a send or RMA failed")))
      << Describe(r);
  EXPECT_TRUE(r.survivors.empty()) << Describe(r);
}

INSTANTIATE_TEST_SUITE_P(
    Providers, OfiPeerDeathTest,
    ::testing::Values(
        Provider{"tcp_rxm", {"FI_PROVIDER=tcp;ofi_rxm"}},
        Provider{"sockets", {"FI_PROVIDER=sockets"}},
        Provider{"udp_rxd",
                 {"FI_PROVIDER=udp;ofi_rxd", "GASNET_OFI_DEVICE=lo"}},
        Provider{"shm", {"FI_PROVIDER=shm", "FI_SHM_DISABLE_CMA=1"}}),
    [](const ::testing::TestParamInfo<Provider>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace gexrt::testing
