#include "conduit/ibv/settings.h"

#include <stdlib.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/env/settings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::ibv {
namespace {

using ::testing::HasSubstr;

// Every variable ReadSettings (and CreditConfigFromEnv) reads, and the
// switches of the settings layer itself.
constexpr const char* kTouched[] = {
    "GASNET_HCA_ID",
    "GASNET_PORT_NUM",
    "GASNET_IBV_PORTS",
    "GASNET_IBV_PORTS_TYPE",
    "GASNET_IBV_PORTS_VERBOSE",
    "GASNET_IBV_LIST_PORTS",
    "GASNET_IBV_LIST_PORTS_NODES",
    "GASNET_IBV_PKEY",
    "GASNET_NUM_QPS",
    "GASNET_CONNECT_STATIC",
    "GASNET_CONNECT_DYNAMIC",
    "GASNET_CONNECT_RETRANS_MIN",
    "GASNET_CONNECT_RETRANS_MAX",
    "GASNET_CONNECT_SNDS",
    "GASNET_CONNECT_RCVS",
    "GASNET_CONNECTFILE_IN",
    "GASNET_CONNECTFILE_OUT",
    "GASNET_CONNECTFILE_BASE",
    "GASNET_USE_SRQ",
    "GASNET_USE_XRC",
    "GASNET_QP_TIMEOUT",
    "GASNET_QP_RETRY_COUNT",
    "GASNET_QP_RD_ATOM",
    "GASNET_MAX_MTU",
    "GASNET_AM_CREDITS_PP",
    "GASNET_AM_CREDITS_TOTAL",
    "GASNET_AM_CREDITS_SLACK",
    "GASNET_NETWORKDEPTH_PP",
    "GASNET_NETWORKDEPTH_TOTAL",
    "GASNET_RBUF_COUNT",
    "GASNET_RBUF_SPARES",
    "GASNET_BBUF_COUNT",
    "GASNET_INLINESEND_LIMIT",
    "GASNET_PACKEDLONG_LIMIT",
    "GASNET_AM_GATHER_MIN",
    "GASNET_NONBULKPUT_BOUNCE_LIMIT",
    "GASNET_PUTINMOVE_LIMIT",
    "GASNET_PUT_STRIPE_SZ",
    "GASNET_GET_STRIPE_SZ",
    "GASNET_USE_FENCED_PUTS",
    "GASNET_PHYSMEM_MAX",
    "GASNET_PHYSMEM_PROBE",
    "GASNET_PHYSMEM_WARN",
    "GASNET_MAXIMIZE_MEMLOCK",
    "GASNET_USE_ODP",
    "GASNET_ODP_VERBOSE",
    "GASNET_RCV_THREAD",
    "GASNET_RCV_THREAD_RATE",
    "GASNET_RCV_THREAD_IDLE",
    "GASNET_RCV_THREAD_POLL_MODE",
    "GASNET_RCV_THREAD_LOAD",
    "GASNET_SND_THREAD",
    "GASNET_SND_THREAD_RATE",
    "GASNET_SND_THREAD_IDLE",
    "GASNET_SND_THREAD_POLL_MODE",
    "GASNET_SND_THREAD_LOAD",
    "GASNET_THREAD_STACK_MIN",
    "GASNET_THREAD_STACK_PAD",
    "GASNET_IBV_STATS",
    "GASNET_IBV_MAX_MEDIUM",
    "GASNET_IBV_LARGE_JOB",
    "GASNET_QUIET",
    "GASNET_VERBOSEENV",
};

class IbvSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override { Clear(); }
  void TearDown() override { Clear(); }
  static void Clear() {
    for (const char* name : kTouched) unsetenv(name);
    // The per-object members of the GASNET_IBV_PORTS family.
    for (int i = 0; i < 64; ++i) {
      unsetenv(absl::StrCat("GASNET_IBV_PORTS_", i).c_str());
    }
    env::internal::ResetForTest();
  }
  static void Set(const char* name, const char* value) {
    setenv(name, value, /*overwrite=*/1);
  }
  static SettingsContext Job(uint32_t ranks) {
    SettingsContext c;
    c.rank = 0;
    c.ranks = ranks;
    c.remote_peers = ranks - 1;
    return c;
  }
  // The settings, failing the test when there are none.
  static Settings Read(const SettingsContext& context) {
    absl::StatusOr<Settings> s = ReadSettings(context);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : Settings{};
  }
  // The error message, failing the test when reading succeeds or the error
  // is not InvalidArgument.
  static std::string Error(const SettingsContext& context) {
    absl::StatusOr<Settings> s = ReadSettings(context);
    EXPECT_FALSE(s.ok()) << "read succeeded";
    if (s.ok()) return "";
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument)
        << s.status();
    return std::string(s.status().message());
  }
};

TEST_F(IbvSettingsTest, DefaultsWithAnEmptyEnvironment) {
  const Settings s = Read(Job(4));
  EXPECT_TRUE(s.ports.empty());
  EXPECT_EQ(s.ports_variable, "GASNET_IBV_PORTS");
  EXPECT_FALSE(s.list_ports);
  EXPECT_EQ(s.num_qps, 0u);
  EXPECT_EQ(s.ports_verbose, 1u);
  EXPECT_EQ(s.pkey, 0u);
  EXPECT_EQ(s.large_job_ranks, 256u);
  EXPECT_FALSE(s.large_job);
  EXPECT_TRUE(s.connect_static);
  EXPECT_TRUE(s.connect_dynamic);
  EXPECT_EQ(s.connect_retrans_min_us, 1000u);
  EXPECT_EQ(s.connect_retrans_max_us, 8000000u);
  EXPECT_EQ(s.connect_snds, 4u);
  EXPECT_EQ(s.connect_rcvs, 8u);  // 4 + 2 * ceil(log2(3))
  EXPECT_EQ(s.connectfile_in, "");
  EXPECT_EQ(s.connectfile_out, "");
  EXPECT_EQ(s.connectfile_base, 36u);
  EXPECT_EQ(s.use_srq, -1);
  EXPECT_FALSE(s.srq);  // 1024 buffers cover 2 * 12 * 3
  EXPECT_TRUE(s.use_xrc);
  EXPECT_EQ(s.qp_timeout, 18);
  EXPECT_EQ(s.qp_retry_count, 7);
  EXPECT_EQ(s.qp_rd_atom, 0u);
  EXPECT_EQ(s.max_mtu, 0u);
  EXPECT_FALSE(s.max_mtu_active);
  EXPECT_EQ(s.credits.per_peer, 12u);
  EXPECT_EQ(s.credits.total, 36u);
  EXPECT_EQ(s.credits.slack, 1u);
  EXPECT_EQ(s.networkdepth_pp, 24u);
  EXPECT_EQ(s.networkdepth_total, 255u);
  EXPECT_EQ(s.rbuf_count, 1024u);
  EXPECT_EQ(s.rbuf_spares, 2u);
  EXPECT_EQ(s.bbuf_count, 255u);  // bounded by the total network depth
  EXPECT_EQ(s.inlinesend_limit, 72);
  EXPECT_EQ(s.max_medium, 4016u);
  EXPECT_EQ(s.packedlong_limit, 4016u);
  EXPECT_FALSE(s.packedlong_set);
  EXPECT_EQ(s.am_gather_min, 1500);
  EXPECT_EQ(s.nonbulkput_bounce_limit, 64u << 10);
  EXPECT_EQ(s.putinmove_limit, 3u << 10);
  EXPECT_EQ(s.put_stripe_sz, 0u);
  EXPECT_EQ(s.get_stripe_sz, 0u);
  EXPECT_FALSE(s.use_fenced_puts);
  EXPECT_FALSE(s.physmem_max_set);
  EXPECT_TRUE(s.physmem_max.is_fraction);
  EXPECT_DOUBLE_EQ(s.physmem_max.fraction, 2.0 / 3.0);
  EXPECT_TRUE(s.physmem_probe);
  EXPECT_TRUE(s.physmem_warn);
  EXPECT_TRUE(s.maximize_memlock);
  EXPECT_TRUE(s.use_odp);
  EXPECT_EQ(s.odp_verbose, 1);
  for (const ThreadSettings* t : {&s.rcv_thread, &s.snd_thread}) {
    EXPECT_FALSE(t->enabled);
    EXPECT_EQ(t->rate, 0u);
    EXPECT_EQ(t->idle_ns, 0u);
    EXPECT_EQ(t->poll_mode, PollMode::kSerialized);
    EXPECT_EQ(t->load, 0.0);
  }
  EXPECT_EQ(s.thread_stack, 0u);
  EXPECT_EQ(s.thread_stack_pad, 0u);
  EXPECT_FALSE(s.print_stats);
}

TEST_F(IbvSettingsTest, EachMalformedValueNamesItsVariable) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"GASNET_IBV_PORTS", "mlx5_0:x"},
      {"GASNET_IBV_PORTS_VERBOSE", "loud"},
      {"GASNET_IBV_LIST_PORTS", "perhaps"},
      {"GASNET_IBV_LIST_PORTS_NODES", "3-1"},
      {"GASNET_IBV_PKEY", "1"},
      {"GASNET_IBV_PKEY", "0x10000"},
      {"GASNET_NUM_QPS", "-1"},
      {"GASNET_CONNECT_STATIC", "2x"},
      {"GASNET_IBV_LARGE_JOB", "-1"},
      {"GASNET_IBV_LARGE_JOB", "many"},
      {"GASNET_CONNECT_DYNAMIC", "maybe"},
      {"GASNET_CONNECT_RETRANS_MIN", "0"},
      {"GASNET_CONNECT_RETRANS_MAX", "soon"},
      {"GASNET_CONNECT_SNDS", "0"},
      {"GASNET_CONNECT_RCVS", "many"},
      {"GASNET_CONNECTFILE_BASE", "1"},
      {"GASNET_CONNECTFILE_BASE", "37"},
      {"GASNET_USE_SRQ", "-2"},
      {"GASNET_USE_XRC", "xrc"},
      {"GASNET_QP_TIMEOUT", "32"},
      {"GASNET_QP_RETRY_COUNT", "8"},
      {"GASNET_QP_RD_ATOM", "256"},
      {"GASNET_MAX_MTU", "1500"},
      {"GASNET_MAX_MTU", "-2"},
      {"GASNET_AM_CREDITS_PP", "0"},
      {"GASNET_NETWORKDEPTH_PP", "0"},
      {"GASNET_NETWORKDEPTH_TOTAL", "deep"},
      {"GASNET_RBUF_COUNT", "-5"},
      {"GASNET_RBUF_SPARES", "x"},
      {"GASNET_BBUF_COUNT", "1"},
      {"GASNET_INLINESEND_LIMIT", "-2"},
      {"GASNET_PACKEDLONG_LIMIT", "big"},
      {"GASNET_AM_GATHER_MIN", "-3"},
      {"GASNET_NONBULKPUT_BOUNCE_LIMIT", "-1"},
      {"GASNET_PUTINMOVE_LIMIT", "3073"},
      {"GASNET_PUTINMOVE_LIMIT", "4K"},
      {"GASNET_PUT_STRIPE_SZ", "wide"},
      {"GASNET_GET_STRIPE_SZ", "-1K"},
      {"GASNET_USE_FENCED_PUTS", "fenced"},
      {"GASNET_PHYSMEM_MAX", "lots"},
      {"GASNET_PHYSMEM_PROBE", "probe"},
      {"GASNET_PHYSMEM_WARN", "warn"},
      {"GASNET_MAXIMIZE_MEMLOCK", "max"},
      {"GASNET_USE_ODP", "odp"},
      {"GASNET_ODP_VERBOSE", "-1"},
      {"GASNET_RCV_THREAD", "thread"},
      {"GASNET_RCV_THREAD_RATE", "-1"},
      {"GASNET_RCV_THREAD_IDLE", "idle"},
      {"GASNET_RCV_THREAD_POLL_MODE", "sometimes"},
      {"GASNET_RCV_THREAD_LOAD", "1.5"},
      {"GASNET_RCV_THREAD_LOAD", "-0.1"},
      {"GASNET_SND_THREAD", "thread"},
      {"GASNET_SND_THREAD_RATE", "fast"},
      {"GASNET_SND_THREAD_IDLE", "-1"},
      {"GASNET_SND_THREAD_POLL_MODE", "parallel"},
      {"GASNET_SND_THREAD_LOAD", "half"},
      {"GASNET_THREAD_STACK_MIN", "tall"},
      {"GASNET_THREAD_STACK_PAD", "-1"},
      {"GASNET_IBV_STATS", "stats"},
      {"GASNET_IBV_MAX_MEDIUM", "511"},
      {"GASNET_IBV_MAX_MEDIUM", "65537"},
      {"GASNET_IBV_MAX_MEDIUM", "medium"},
  };
  for (const auto& [name, value] : cases) {
    SCOPED_TRACE(absl::StrCat(name, "=", value));
    Set(name, value);
    const std::string message = Error(Job(4));
    EXPECT_THAT(message, HasSubstr(name));
    EXPECT_THAT(message, HasSubstr(value));
    unsetenv(name);
  }
}

TEST_F(IbvSettingsTest, ValuesAreRead) {
  Set("GASNET_NUM_QPS", "2");
  Set("GASNET_IBV_PKEY", "0x8123");  // the membership bit is dropped
  Set("GASNET_CONNECT_STATIC", "no");
  Set("GASNET_CONNECTFILE_IN", "conn.%");
  Set("GASNET_CONNECTFILE_BASE", "10");
  Set("GASNET_QP_TIMEOUT", "31");
  Set("GASNET_QP_RETRY_COUNT", "0");
  Set("GASNET_MAX_MTU", "2048");
  Set("GASNET_INLINESEND_LIMIT", "-1");
  Set("GASNET_PUTINMOVE_LIMIT", "3K");
  Set("GASNET_PUT_STRIPE_SZ", "64");  // K is the default unit
  Set("GASNET_GET_STRIPE_SZ", "2M");
  Set("GASNET_THREAD_STACK_MIN", "1M");
  Set("GASNET_IBV_STATS", "yes");
  Set("GASNET_IBV_MAX_MEDIUM", "8K");
  Set("GASNET_PACKEDLONG_LIMIT", "0");
  const Settings s = Read(Job(4));
  EXPECT_EQ(s.num_qps, 2u);
  EXPECT_EQ(s.pkey, 0x123u);
  EXPECT_FALSE(s.connect_static);
  EXPECT_EQ(s.connectfile_in, "conn.%");
  EXPECT_EQ(s.connectfile_base, 10u);
  EXPECT_EQ(s.qp_timeout, 31);
  EXPECT_EQ(s.qp_retry_count, 0);
  EXPECT_EQ(s.max_mtu, 2048u);
  EXPECT_EQ(s.inlinesend_limit, -1);
  EXPECT_EQ(s.putinmove_limit, 3072u);
  EXPECT_EQ(s.put_stripe_sz, 64u << 10);
  EXPECT_EQ(s.get_stripe_sz, 2u << 20);
  EXPECT_EQ(s.thread_stack, 1u << 20);
  EXPECT_TRUE(s.print_stats);
  EXPECT_EQ(s.max_medium, 8192u);
  EXPECT_EQ(s.packedlong_limit, 0u);
  EXPECT_TRUE(s.packedlong_set);
}

TEST_F(IbvSettingsTest, MaxMtuMinusOneMeansThePortsActiveMtu) {
  Set("GASNET_MAX_MTU", "-1");
  const Settings s = Read(Job(2));
  EXPECT_TRUE(s.max_mtu_active);
  EXPECT_EQ(s.max_mtu, 0u);
}

TEST_F(IbvSettingsTest, PackedLongDefaultFollowsMaxMedium) {
  Set("GASNET_IBV_MAX_MEDIUM", "1024");
  Settings s = Read(Job(2));
  EXPECT_EQ(s.packedlong_limit, 1024u);
  EXPECT_FALSE(s.packedlong_set);
  Set("GASNET_PACKEDLONG_LIMIT", "1024");
  s = Read(Job(2));
  EXPECT_EQ(s.packedlong_limit, 1024u);
  EXPECT_TRUE(s.packedlong_set);
}

TEST_F(IbvSettingsTest, PortsFamilyIsParsed) {
  Set("GASNET_IBV_PORTS", "mlx5_0+mlx5_1:1,2");
  const Settings s = Read(Job(2));
  const std::vector<env::PortSpec> want = {{"mlx5_0", {}}, {"mlx5_1", {1, 2}}};
  EXPECT_EQ(s.ports, want);
  // Unbound, or bound with no GASNET_IBV_PORTS_<n> set: the plain name.
  EXPECT_EQ(s.ports_variable, "GASNET_IBV_PORTS");
}

TEST_F(IbvSettingsTest, PortsTypeIsChecked) {
  Set("GASNET_IBV_PORTS_TYPE", "Galaxy");
  EXPECT_THAT(Error(Job(2)), HasSubstr("GASNET_IBV_PORTS_TYPE"));
}

TEST_F(IbvSettingsTest, ListPortsOnlyOnListedNodes) {
  SettingsContext c = Job(8);
  c.rank = 3;
  EXPECT_FALSE(Read(c).list_ports);
  Set("GASNET_IBV_LIST_PORTS", "1");
  EXPECT_TRUE(Read(c).list_ports);  // every node by default
  Set("GASNET_IBV_LIST_PORTS_NODES", "0,2-4");
  EXPECT_TRUE(Read(c).list_ports);
  Set("GASNET_IBV_LIST_PORTS_NODES", "0,4-6");
  EXPECT_FALSE(Read(c).list_ports);
  // The node list alone does not turn listing on.
  Set("GASNET_IBV_LIST_PORTS", "0");
  Set("GASNET_IBV_LIST_PORTS_NODES", "3");
  EXPECT_FALSE(Read(c).list_ports);
}

TEST_F(IbvSettingsTest, ConnectRcvsDefaultGrowsWithLog2OfPeers) {
  auto rcvs = [](uint32_t peers) {
    SettingsContext c;
    c.ranks = peers + 1;
    c.remote_peers = peers;
    return Read(c).connect_rcvs;
  };
  EXPECT_EQ(rcvs(0), 6u);
  EXPECT_EQ(rcvs(1), 6u);     // 4 + 2 * 0
  EXPECT_EQ(rcvs(2), 6u);     // 4 + 2 * 1
  EXPECT_EQ(rcvs(7), 10u);    // 4 + 2 * 3
  EXPECT_EQ(rcvs(8), 10u);    // 4 + 2 * 3
  EXPECT_EQ(rcvs(9), 12u);    // 4 + 2 * 4
  EXPECT_EQ(rcvs(100), 18u);  // 4 + 2 * 7
  Set("GASNET_CONNECT_RCVS", "3");
  EXPECT_EQ(rcvs(100), 3u);
}

TEST_F(IbvSettingsTest, CreditDefaultIsTwelveAndTotalReducesIt) {
  Settings s = Read(Job(5));
  EXPECT_EQ(s.credits.per_peer, 12u);
  EXPECT_EQ(s.credits.total, 48u);
  // The default total, MIN(256, peers * 12), cuts it for a large job.
  s = Read(Job(31));
  EXPECT_EQ(s.credits.total, 256u);
  EXPECT_EQ(s.credits.per_peer, 8u);  // 256 / 30
  // A set total cuts it too.
  Set("GASNET_AM_CREDITS_TOTAL", "20");
  s = Read(Job(5));
  EXPECT_EQ(s.credits.per_peer, 5u);
  EXPECT_EQ(s.credits.total, 20u);
}

TEST_F(IbvSettingsTest, ReceiveBuffersNeededIsTwoPerCreditPerPeer) {
  am::CreditConfig credits;
  credits.per_peer = 12;
  EXPECT_EQ(ReceiveBuffersNeeded(credits, 10), 240u);
  EXPECT_EQ(ReceiveBuffersNeeded(credits, 0), 0u);
  credits.per_peer = 1u << 31;
  EXPECT_EQ(ReceiveBuffersNeeded(credits, 1u << 31), uint64_t{1} << 63);
}

TEST_F(IbvSettingsTest, SrqDefaultFollowsTheBufferCount) {
  // 11 peers need 2 * 12 * 11 = 264 buffers without SRQ.
  Set("GASNET_RBUF_COUNT", "200");
  EXPECT_TRUE(Read(Job(12)).srq);
  Set("GASNET_RBUF_COUNT", "264");
  EXPECT_FALSE(Read(Job(12)).srq);
  Set("GASNET_RBUF_COUNT", "0");  // no limit: never saves anything
  EXPECT_FALSE(Read(Job(12)).srq);
  // A threshold: SRQ from that many ranks on.
  unsetenv("GASNET_RBUF_COUNT");
  Set("GASNET_USE_SRQ", "12");
  EXPECT_TRUE(Read(Job(12)).srq);
  EXPECT_FALSE(Read(Job(11)).srq);
  Set("GASNET_USE_SRQ", "1");
  EXPECT_TRUE(Read(Job(2)).srq);
  Set("GASNET_USE_SRQ", "0");
  EXPECT_FALSE(Read(Job(100)).srq);
}

// From GASNET_IBV_LARGE_JOB ranks (256 by default) a job connects on
// demand and shares one receive queue; what is set explicitly still wins.
TEST_F(IbvSettingsTest, LargeJobDefaultsToDynamicConnectionsAndSrq) {
  const Settings below = Read(Job(255));
  EXPECT_FALSE(below.large_job);
  EXPECT_TRUE(below.connect_static);
  EXPECT_FALSE(below.srq);
  const Settings at = Read(Job(256));
  EXPECT_TRUE(at.large_job);
  EXPECT_FALSE(at.connect_static);
  EXPECT_TRUE(at.connect_dynamic);
  EXPECT_TRUE(at.srq);
  EXPECT_EQ(at.use_srq, -1);

  Set("GASNET_IBV_LARGE_JOB", "4");
  EXPECT_FALSE(Read(Job(3)).large_job);
  EXPECT_FALSE(Read(Job(4)).connect_static);
  EXPECT_TRUE(Read(Job(4)).srq);
  Set("GASNET_IBV_LARGE_JOB", "0");  // never
  EXPECT_FALSE(Read(Job(1 << 16)).large_job);
  EXPECT_TRUE(Read(Job(1 << 16)).connect_static);

  // Explicit settings win over the large-job defaults.
  Set("GASNET_IBV_LARGE_JOB", "2");
  Set("GASNET_CONNECT_STATIC", "1");
  Set("GASNET_USE_SRQ", "0");
  const Settings kept = Read(Job(8));
  EXPECT_TRUE(kept.large_job);
  EXPECT_TRUE(kept.connect_static);
  EXPECT_FALSE(kept.srq);
  unsetenv("GASNET_CONNECT_STATIC");
  unsetenv("GASNET_USE_SRQ");
  // A connect file asks for the pairs it names at start-up.
  Set("GASNET_CONNECTFILE_IN", "/nonexistent/conn.%");
  EXPECT_TRUE(Read(Job(8)).connect_static);
  EXPECT_TRUE(Read(Job(8)).srq);
}

TEST_F(IbvSettingsTest, RbufCountBelowCreditsWithoutSrqIsAnError) {
  Set("GASNET_USE_SRQ", "0");
  Set("GASNET_RBUF_COUNT", "100");
  const std::string message = Error(Job(11));  // needs 2 * 12 * 10 = 240
  EXPECT_THAT(message, HasSubstr("GASNET_RBUF_COUNT=100"));
  EXPECT_THAT(message, HasSubstr("GASNET_USE_SRQ=0"));
  EXPECT_THAT(message, HasSubstr("GASNET_AM_CREDITS_PP=12"));
  EXPECT_THAT(message, HasSubstr("240"));
  // Enough buffers, fewer credits, or SRQ allowed: no error.
  Set("GASNET_RBUF_COUNT", "240");
  EXPECT_TRUE(ReadSettings(Job(11)).ok());
  Set("GASNET_RBUF_COUNT", "100");
  Set("GASNET_AM_CREDITS_PP", "5");
  EXPECT_TRUE(ReadSettings(Job(11)).ok());
  unsetenv("GASNET_AM_CREDITS_PP");
  unsetenv("GASNET_USE_SRQ");
  EXPECT_TRUE(Read(Job(11)).srq);
  // Without SRQ an unset count is not used, so a large job is fine.
  Set("GASNET_USE_SRQ", "0");
  unsetenv("GASNET_RBUF_COUNT");
  const Settings s = Read(Job(101));  // needs 2400 > the default 1024
  EXPECT_FALSE(s.srq);
}

TEST_F(IbvSettingsTest, NetworkDepthTotalBelowPerPeerIsAnError) {
  Set("GASNET_NETWORKDEPTH_PP", "32");
  Set("GASNET_NETWORKDEPTH_TOTAL", "16");
  const std::string message = Error(Job(4));
  EXPECT_THAT(message, HasSubstr("GASNET_NETWORKDEPTH_TOTAL=16"));
  EXPECT_THAT(message, HasSubstr("GASNET_NETWORKDEPTH_PP=32"));
  Set("GASNET_NETWORKDEPTH_TOTAL", "32");
  EXPECT_EQ(Read(Job(4)).networkdepth_total, 32u);
  // 0: the device's limit, whatever PP is.
  Set("GASNET_NETWORKDEPTH_TOTAL", "0");
  EXPECT_EQ(Read(Job(4)).networkdepth_total, 0u);
}

TEST_F(IbvSettingsTest, BbufCountIsBoundedByTheNetworkDepth) {
  Set("GASNET_BBUF_COUNT", "100");
  EXPECT_EQ(Read(Job(4)).bbuf_count, 100u);
  Set("GASNET_BBUF_COUNT", "0");
  EXPECT_EQ(Read(Job(4)).bbuf_count, 255u);
  Set("GASNET_NETWORKDEPTH_TOTAL", "0");
  EXPECT_EQ(Read(Job(4)).bbuf_count, 0u);  // the device decides
  // A total depth of 1 leaves a single send buffer: too few.
  Set("GASNET_BBUF_COUNT", "64");
  Set("GASNET_NETWORKDEPTH_PP", "1");
  Set("GASNET_NETWORKDEPTH_TOTAL", "1");
  const std::string message = Error(Job(4));
  EXPECT_THAT(message, HasSubstr("GASNET_BBUF_COUNT"));
  EXPECT_THAT(message, HasSubstr("GASNET_NETWORKDEPTH_TOTAL=1"));
}

TEST_F(IbvSettingsTest, RbufSparesAboveRbufCountIsAnError) {
  Set("GASNET_RBUF_COUNT", "300");
  Set("GASNET_RBUF_SPARES", "301");
  const std::string message = Error(Job(2));
  EXPECT_THAT(message, HasSubstr("GASNET_RBUF_SPARES=301"));
  EXPECT_THAT(message, HasSubstr("GASNET_RBUF_COUNT=300"));
  Set("GASNET_RBUF_SPARES", "300");
  EXPECT_EQ(Read(Job(2)).rbuf_spares, 300u);
}

TEST_F(IbvSettingsTest, RbufSparesDefaultCountsPollers) {
  SettingsContext c = Job(2);
  EXPECT_EQ(Read(c).rbuf_spares, 2u);
  Set("GASNET_RCV_THREAD", "1");
  EXPECT_EQ(Read(c).rbuf_spares, 4u);
  c.thread_safe = true;
  const uint32_t par = Read(c).rbuf_spares;
  EXPECT_GT(par, 4u);
  // Never more than a quarter of the buffers.
  Set("GASNET_RBUF_COUNT", "8");
  EXPECT_EQ(Read(c).rbuf_spares, 2u);
}

TEST_F(IbvSettingsTest, RetransMinAboveMaxIsAnError) {
  Set("GASNET_CONNECT_RETRANS_MIN", "5000");
  Set("GASNET_CONNECT_RETRANS_MAX", "4000");
  const std::string message = Error(Job(2));
  EXPECT_THAT(message, HasSubstr("GASNET_CONNECT_RETRANS_MIN=5000"));
  EXPECT_THAT(message, HasSubstr("GASNET_CONNECT_RETRANS_MAX=4000"));
  Set("GASNET_CONNECT_RETRANS_MAX", "5000");
  EXPECT_EQ(Read(Job(2)).connect_retrans_max_us, 5000u);
}

TEST_F(IbvSettingsTest, PackedLongAboveMaxMediumIsAnError) {
  Set("GASNET_IBV_MAX_MEDIUM", "2048");
  Set("GASNET_PACKEDLONG_LIMIT", "2049");
  const std::string message = Error(Job(2));
  EXPECT_THAT(message, HasSubstr("GASNET_PACKEDLONG_LIMIT=2049"));
  EXPECT_THAT(message, HasSubstr("GASNET_IBV_MAX_MEDIUM=2048"));
  // The default medium limit bounds a set value too.
  unsetenv("GASNET_IBV_MAX_MEDIUM");
  Set("GASNET_PACKEDLONG_LIMIT", "4017");
  EXPECT_THAT(Error(Job(2)), HasSubstr("GASNET_IBV_MAX_MEDIUM=4016"));
}

TEST_F(IbvSettingsTest, MaxMediumBounds) {
  Set("GASNET_IBV_MAX_MEDIUM", "512");
  EXPECT_EQ(Read(Job(2)).max_medium, 512u);
  Set("GASNET_IBV_MAX_MEDIUM", "64K");
  EXPECT_EQ(Read(Job(2)).max_medium, 65536u);
}

TEST_F(IbvSettingsTest, PhysmemMaxSetTurnsTheProbeOff) {
  Set("GASNET_PHYSMEM_MAX", "5/8");
  Settings s = Read(Job(2));
  EXPECT_TRUE(s.physmem_max_set);
  EXPECT_TRUE(s.physmem_max.is_fraction);
  EXPECT_DOUBLE_EQ(s.physmem_max.fraction, 0.625);
  EXPECT_FALSE(s.physmem_probe);
  Set("GASNET_PHYSMEM_MAX", "16G");
  s = Read(Job(2));
  EXPECT_FALSE(s.physmem_max.is_fraction);
  EXPECT_EQ(s.physmem_max.bytes, uint64_t{16} << 30);
  // The probe can still be asked for.
  Set("GASNET_PHYSMEM_PROBE", "1");
  EXPECT_TRUE(Read(Job(2)).physmem_probe);
}

TEST_F(IbvSettingsTest, ThreadFamilies) {
  Set("GASNET_RCV_THREAD", "1");
  Set("GASNET_RCV_THREAD_RATE", "1000");
  Set("GASNET_RCV_THREAD_IDLE", "50000");
  Set("GASNET_RCV_THREAD_POLL_MODE", "EXCLUSIVE");
  Set("GASNET_RCV_THREAD_LOAD", "0.25");
  Set("GASNET_SND_THREAD", "yes");
  Set("GASNET_SND_THREAD_POLL_MODE", "Concurrent");
  Set("GASNET_SND_THREAD_LOAD", "1");
  Settings s = Read(Job(2));
  EXPECT_TRUE(s.rcv_thread.enabled);
  EXPECT_EQ(s.rcv_thread.rate, 1000u);
  EXPECT_EQ(s.rcv_thread.idle_ns, 50000u);
  EXPECT_EQ(s.rcv_thread.poll_mode, PollMode::kExclusive);
  EXPECT_DOUBLE_EQ(s.rcv_thread.load, 0.25);
  EXPECT_TRUE(s.snd_thread.enabled);
  EXPECT_EQ(s.snd_thread.rate, 0u);
  EXPECT_EQ(s.snd_thread.poll_mode, PollMode::kConcurrent);
  EXPECT_DOUBLE_EQ(s.snd_thread.load, 1.0);
  // GASNet's spelling of the concurrent mode.
  Set("GASNET_SND_THREAD_POLL_MODE", "unserialized");
  EXPECT_EQ(Read(Job(2)).snd_thread.poll_mode, PollMode::kConcurrent);
}

}  // namespace
}  // namespace gexrt::ibv
