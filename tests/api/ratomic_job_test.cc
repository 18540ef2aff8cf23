// Remote atomics (gasnet_ratomic.h) through the GASNet-EX C API over any
// conduit (api_tests.bzl), end to end: jobs of ratomic_client (C11, SEQ)
// and ratomic_par_client (C++, PAR) started by the conduit's launcher, at
// 1, 2, 3, 4 and 8 ranks, each both ways: on the default path (a target in
// this rank's supernode is operated on with CPU atomics through the mapped
// segment; any other target over Active Messages through the conduit) and
// with GEX_RMA_FORCE_AM=1 (every operation an Active Message, performed by
// the target's handler). The clients check every opcode on every type,
// fetching and not, in the NB, NBI and Blocking forms against the C
// expression (ops), exact sums of concurrent updates from every rank
// (sum) and every thread (par), and contended compare-and-swap (cas); see
// ratomic_client.c's header. Misuse is fatal and names the call.
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"
#include "tests/api/tsan_reports.h"

namespace gexrt::testing {
namespace {

// Operations per type: each opcode (12 non-fetching and their fetching
// forms, CAS both ways; FLT and DBL without the 6 bit-wise ones) in 3
// forms, each after a SET (the "* 2"); then a SET and GET in 3 forms, and
// one NBI in an access region. Integer types run twice: a domain of every
// opcode, and one without MULT, MIN and MAX (what a network may offload).
constexpr long long kIntegerOps = (12 * 2 + 2) * 3 * 2 + 1 + 3 + 1;
constexpr long long kOffloadableOps = ((12 - 3) * 2 + 2) * 3 * 2 + 1 + 3 + 1;
constexpr long long kFloatOps = ((12 - 3) * 2 + 2) * 3 * 2 + 1 + 3 + 1;
// NB calls per domain: one per (op, CAS case), plus GET's.
constexpr long long kIntegerNb = 12 * 2 + 2 + 1;
constexpr long long kOffloadableNb = 9 * 2 + 2 + 1;
constexpr long long kFloatNb = 9 * 2 + 2 + 1;

// Whether the instance's conduit performs the offloadable domains' atomics
// itself, this rank's included: ucx, when some rank is off the supernode
// (its default GASNET_UCX_OFFLOAD_ATOMICS=1).
bool Offloading(int n) { return Conduit() == "ucx" && SpansSupernodes(n); }

class RatomicJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {};

TEST_P(RatomicJobTest, EveryOpEveryTypeAndExactSums) {
  if (kTsan) GTEST_SKIP() << "the SEQ client is not threaded";
  const auto& [mode, n, force_am] = GetParam();
  const JobResult r =
      RunApiJob("ratomic_client", n, {mode}, ForceAmEnv(force_am));
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    if (mode == "ops") {
      const int targets = n == 1 ? 1 : 2;
      EXPECT_EQ(Field(line, "ops"),
                targets * (4 * (kIntegerOps + kOffloadableOps) + 2 * kFloatOps))
          << line;
      // NB calls: direct (GEX_EVENT_INVALID) exactly where the target is
      // mapped here and the domain is not the network's.
      const long long nb_per_target =
          4 * (kIntegerNb + (Offloading(n) ? 0 : kOffloadableNb)) +
          2 * kFloatNb;
      long long direct = 0;
      if (!force_am) {
        direct += nb_per_target;  // this rank's own cells
        if (n > 1 && SameSupernode(n, rank, (rank + 1) % n)) {
          direct += nb_per_target;
        }
      }
      EXPECT_EQ(Field(line, "direct"), direct) << line;
      // IMMEDIATE: never refused on the direct path.
      const long long refused = Field(line, "refused");
      EXPECT_GE(refused, 0) << line;
      if (!Offloading(n) && direct == (n == 1 ? 1 : 2) * nb_per_target) {
        EXPECT_EQ(refused, 0) << line;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModesRanksPaths, RatomicJobTest,
    ::testing::Combine(::testing::Values("ops", "sum", "cas"),
                       ::testing::Values(1, 2, 3, 4, 8), ::testing::Bool()),
    [](const auto& info) {
      return absl::StrFormat("%s_n%d_%s", std::get<0>(info.param),
                             std::get<1>(info.param),
                             PathName(std::get<2>(info.param)));
    });

// A domain over a sub-team whose ranks run backwards: operations address
// team ranks (and job ranks with GEX_FLAG_RANK_IS_JOBRANK).
class RatomicSubteamJobTest
    : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(RatomicSubteamJobTest, TeamRanksReachTheirMembers) {
  if (kTsan) GTEST_SKIP() << "the SEQ client is not threaded";
  const auto& [n, force_am] = GetParam();
  const JobResult r =
      RunApiJob("ratomic_client", n, {"subteam"}, ForceAmEnv(force_am));
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "subteam ok")) {
    const long long size = (n + (rank % 2 == 0 ? 1 : 0)) / 2;
    EXPECT_EQ(Field(line, "size"), size) << line;
    EXPECT_EQ(Field(line, "ops"), 50 * size) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(RanksPaths, RatomicSubteamJobTest,
                         ::testing::Combine(::testing::Values(1, 3, 4),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return absl::StrFormat(
                               "n%d_%s", std::get<0>(info.param),
                               PathName(std::get<1>(info.param)));
                         });

// ---------------------------------------------------------------------------
// PAR: every thread of every rank updates every rank's counters.

class RatomicParJobTest
    : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(RatomicParJobTest, ThreadsSumExactly) {
  const auto& [n, force_am] = GetParam();
  std::vector<std::string> env = ForceAmEnv(force_am);
  const std::string tsan_dir = MakeTempDir("tsan");
  for (std::string& v : TsanEnv(tsan_dir)) env.push_back(std::move(v));
  const int threads = 4;
  const int rounds = kTsan ? 5 : 40;
  const JobResult r =
      RunApiJob("ratomic_par_client", n,
                {"par", std::to_string(threads), std::to_string(rounds)}, env);
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "par ok")) {
    EXPECT_EQ(Field(line, "ops"), 1LL * threads * rounds * (3 * n + 2)) << line;
  }
  ExpectNoTsanReports(tsan_dir, n);
}

INSTANTIATE_TEST_SUITE_P(RanksPaths, RatomicParJobTest,
                         ::testing::Combine(::testing::Values(1, 2, 4),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return absl::StrFormat(
                               "n%d_%s", std::get<0>(info.param),
                               PathName(std::get<1>(info.param)));
                         });

// ---------------------------------------------------------------------------
// Release/acquire through one domain (the mp and mp3 modes): a writer
// raises X then sets Y with GEX_FLAG_AD_REL; a reader that sees Y (with
// GEX_FLAG_AD_ACQ) must then see X at least as new. The reader is X and
// Y's owner (GEX_FLAG_AD_MY_RANK) or a third rank. On ucx with ranks off
// the supernode, every operation goes through UCP (issue 34: the owner's
// own reads saw the new Y with the old X). mpput and mp3put: X is plain
// data, Put by the writer and read by a Get or a load.

class RatomicOrderJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {};

TEST_P(RatomicOrderJobTest, AcquireSeesWhatWasReleased) {
  if (kTsan) GTEST_SKIP() << "the SEQ client is not threaded";
  const auto& [mode, n, force_am] = GetParam();
  const JobResult r =
      RunApiJob("ratomic_client", n, {mode}, ForceAmEnv(force_am));
  const int reader = mode.rfind("mp3", 0) == 0 ? 1 : 0;
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    // The reader saw Y move at least once (the writer's last value).
    if (rank == reader) {
      EXPECT_GT(Field(line, "reads"), 0) << line;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ReadersRanksPaths, RatomicOrderJobTest,
                         ::testing::Values(std::make_tuple("mp", 2, false),
                                           std::make_tuple("mp", 3, false),
                                           std::make_tuple("mp", 4, false),
                                           std::make_tuple("mp", 2, true),
                                           std::make_tuple("mp3", 3, false),
                                           std::make_tuple("mp3", 4, false),
                                           std::make_tuple("mp3", 3, true),
                                           std::make_tuple("mpput", 4, false),
                                           std::make_tuple("mp3put", 4, false)),
                         [](const auto& info) {
                           return absl::StrFormat(
                               "%s_n%d_%s", std::get<0>(info.param),
                               std::get<1>(info.param),
                               PathName(std::get<2>(info.param)));
                         });

// ---------------------------------------------------------------------------
// Network atomics (ucx only): the sum, cas and PAR modes with UCP
// performing the domains it can (GASNET_UCX_OFFLOAD_ATOMICS, default on)
// and with every domain kept generic; the sums are exact either way, and
// GASNET_UCX_STATS counts the operations UCP carried on every rank: some
// where offloaded (this rank's own included, so every rank has some), none
// where not.

class RatomicOffloadJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(RatomicOffloadJobTest, ExactWithAndWithoutTheNetworksAtomics) {
  constexpr int kRanks = 4;
  if (Conduit() != "ucx") GTEST_SKIP() << "only ucx offloads atomics";
  if (!SpansSupernodes(kRanks)) GTEST_SKIP() << "no rank is off-supernode";
  const auto& [mode, offload] = GetParam();
  const bool par = mode == "par";
  if (kTsan && !par) GTEST_SKIP() << "the SEQ client is not threaded";
  std::vector<std::string> env = {
      "GASNET_UCX_STATS=1",
      absl::StrFormat("GASNET_UCX_OFFLOAD_ATOMICS=%d", offload ? 1 : 0)};
  const std::string tsan_dir = MakeTempDir("tsan");
  for (std::string& v : TsanEnv(tsan_dir)) env.push_back(std::move(v));
  const JobResult r =
      par ? RunApiJob("ratomic_par_client", kRanks, {"par", "4", "20"}, env)
          : RunApiJob("ratomic_client", kRanks, {mode}, env);
  ExpectEveryRankOk(r, kRanks, mode + " ok");
  int stats = 0;
  for (const std::string& line : Lines(r.out)) {
    if (line.rfind("ucx: rank ", 0) != 0) continue;
    ++stats;
    const size_t at = line.find(" atomics ");
    ASSERT_NE(at, std::string::npos) << line;
    const long long atomics = std::stoll(line.substr(at + 9));
    if (offload) {
      EXPECT_GT(atomics, 0) << line;
    } else {
      EXPECT_EQ(atomics, 0) << line;
    }
  }
  EXPECT_EQ(stats, kRanks) << r.out;
  if (par) ExpectNoTsanReports(tsan_dir, kRanks);
}

INSTANTIATE_TEST_SUITE_P(
    ModesWays, RatomicOffloadJobTest,
    ::testing::Combine(::testing::Values("sum", "cas", "par"),
                       ::testing::Bool()),
    [](const auto& info) {
      return absl::StrFormat("%s_%s", std::get<0>(info.param),
                             std::get<1>(info.param) ? "offloaded" : "generic");
    });

// ---------------------------------------------------------------------------
// Misuse.

struct BadInput {
  std::string mode;
  std::string call;
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.mode; }

class RatomicBadInputJobTest
    : public ::testing::TestWithParam<std::tuple<BadInput, bool>> {};

TEST_P(RatomicBadInputJobTest, IsFatalAndNamesTheCall) {
  if (kTsan) GTEST_SKIP() << "the SEQ client is not threaded";
  const auto& [b, force_am] = GetParam();
  const JobResult r =
      RunApiJob("ratomic_client", 2, {b.mode}, ForceAmEnv(force_am));
  ExpectFatal(r, 0, b.call);
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, RatomicBadInputJobTest,
    ::testing::Combine(
        ::testing::Values(BadInput{"not-in-mask", "gex_AD_OpNB_U64"},
                          BadInput{"type-mismatch", "gex_AD_OpBlocking_I64"},
                          BadInput{"null-ad", "gex_AD_OpNBI_U32"},
                          BadInput{"garbage-ad", "gex_AD_OpNB_DBL"},
                          BadInput{"destroyed-ad", "gex_AD_OpBlocking_U64"},
                          BadInput{"two-ops", "gex_AD_OpBlocking_U64"},
                          BadInput{"null-result", "gex_AD_OpBlocking_U64"},
                          BadInput{"outside", "gex_AD_OpNBI_U64"},
                          BadInput{"misaligned", "gex_AD_OpBlocking_U64"},
                          BadInput{"bad-rank", "gex_AD_OpNB_I32"},
                          BadInput{"my-rank-false", "gex_AD_OpBlocking_U64"},
                          BadInput{"bitwise-float", "gex_AD_Create"},
                          BadInput{"bad-tm", "gex_AD_Create"}),
        ::testing::Bool()),
    [](const auto& info) {
      return TestName(std::get<0>(info.param).mode) + "_" +
             PathName(std::get<1>(info.param));
    });

}  // namespace
}  // namespace gexrt::testing
