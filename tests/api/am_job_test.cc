// Active Messages through the GASNet-EX C API over any conduit (api_tests.bzl),
// end to end: jobs of am_client (C11, SEQ) started by the conduit's launcher.
// Proves, at 1, 2, 4 and 8 ranks, every category x Request/Reply x 0..16
// arguments with every argument value and payload byte checked and every reply
// counted; Medium and Long at 0, 1, LUB and Max bytes with Longs landing at
// the named address; gex_Token_Info; negotiated payload (client and GASNet
// buffers, commit of fewer bytes, cancel, for Requests and Replies); and
// IMMEDIATE sends refused by a full queue (GASNET_PSHMNET_QUEUE_DEPTH) while
// the target spins without polling, with every accepted message delivered
// once. Each job must exit 0 with every rank's success line and leave no
// process behind (am_client checks the details; see its header comment).
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"

namespace gexrt::testing {
namespace {

std::string RanksName(const ::testing::TestParamInfo<int>& info) {
  return absl::StrFormat("n%d", info.param);
}

class AmJobTest : public ::testing::TestWithParam<int> {};

TEST_P(AmJobTest, EveryCategoryKindAndArgumentCountRoundTrips) {
  const int n = GetParam();
  const JobResult r = RunApiJob("am_client", n, {"args"});
  // 3 categories x 17 argument counts, to and from every rank.
  const long long each = 51LL * n;
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "args ok")) {
    EXPECT_EQ(Field(line, "requests"), each) << line;
    EXPECT_EQ(Field(line, "replies"), each) << line;
  }
}

TEST_P(AmJobTest, MediumAndLongAtZeroOneLubAndMax) {
  const int n = GetParam();
  const JobResult r = RunApiJob("am_client", n, {"sizes"});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "sizes ok")) {
    EXPECT_GE(Field(line, "max_medium"), 512) << line;
    EXPECT_GE(Field(line, "max_long"), 512) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, AmJobTest, ::testing::Values(1, 2, 4, 8),
                         RanksName);

// Negotiated payload, one job per group of cases (see am_client's npam
// modes) so that each failure names its case.
class NpamJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(NpamJobTest, OnlyCommittedMessagesArriveIntact) {
  const auto& [mode, n] = GetParam();
  const JobResult r = RunApiJob("am_client", n, {mode});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, mode + " ok")) {
    EXPECT_EQ(Field(line, "requests"), Field(line, "replies")) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, NpamJobTest,
    ::testing::Combine(
        // npam: Medium with client and GASNet buffers, Long with a client
        // buffer, cancels, cancelled replies followed by a reply.
        // long-alloc: Long in a GASNet buffer committing fewer bytes than
        // prepared (nothing past nbytes may change at the target).
        // long-alloc-cancel: a cancelled GASNet-buffer Long leaves the
        // target's memory untouched.
        // long-dest-at-commit: dest_addr NULL at Prepare, given at Commit.
        // long-segment-end: dest_addr 100 bytes before the end of the
        // segment with most_payload larger than that.
        ::testing::Values("npam", "npam-long-alloc", "npam-long-alloc-cancel",
                          "npam-long-dest-at-commit", "npam-long-segment-end"),
        ::testing::Values(1, 2, 4)),
    [](const auto& info) {
      return absl::StrFormat("%s_n%d", TestName(std::get<0>(info.param)),
                             std::get<1>(info.param));
    });

// IMMEDIATE under a full queue: every sender fills its PSHM queue to a
// target of its supernode that does not poll; the queue holds exactly
// GASNET_PSHMNET_QUEUE_DEPTH messages (8 by default), the next IMMEDIATE send
// is refused, and everything accepted arrives once the target polls. Only
// pairs of ranks in one supernode have such a queue: the others send nothing
// (and nothing from them may arrive).
class ImmediateJobTest : public ::testing::TestWithParam<std::tuple<int, int>> {
};

TEST_P(ImmediateJobTest, RefusedWhenFullAndEverythingAcceptedArrives) {
  const auto& [depth, n] = GetParam();
  if (SupernodeMaxSize() == 1) {
    GTEST_SKIP() << Layout(n)
                 << ": the case counts what a full PSHM queue of "
                    "GASNET_PSHMNET_QUEUE_DEPTH holds, and no two ranks "
                    "share a supernode (a PSHM queue)";
  }
  std::vector<std::string> env;
  if (depth != 8) {
    env.push_back(absl::StrFormat("GASNET_PSHMNET_QUEUE_DEPTH=%d", depth));
  }
  const JobResult r = RunApiJob("am_client", n, {"immediate"}, env);
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "immediate ok")) {
    int senders = 0;
    for (int from = 0; from < n; ++from) {
      senders += from != rank && SameSupernode(n, from, rank) ? 1 : 0;
    }
    EXPECT_EQ(Field(line, "senders"), senders) << line;
    EXPECT_EQ(Field(line, "received"), static_cast<long long>(depth) * senders)
        << line;
  }
  for (int from = 0; from < n; ++from) {
    for (int to = 0; to < n; ++to) {
      if (from == to) continue;
      const std::string pair =
          absl::StrFormat("rank %d: immediate to rank %d: ", from, to);
      if (SameSupernode(n, from, to)) {
        EXPECT_NE(r.out.find(absl::StrFormat("%ssent=%d\n", pair, depth)),
                  std::string::npos)
            << "rank " << from << " to rank " << to << Describe(r);
      } else {
        EXPECT_EQ(r.out.find(pair), std::string::npos)
            << "rank " << from << " sent to rank " << to
            << " outside its supernode" << Describe(r);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    DepthAndRanks, ImmediateJobTest,
    ::testing::Values(std::make_tuple(1, 2), std::make_tuple(1, 4),
                      std::make_tuple(2, 2), std::make_tuple(2, 4),
                      std::make_tuple(8, 2)),
    [](const auto& info) {
      return absl::StrFormat("depth%d_n%d", std::get<0>(info.param),
                             std::get<1>(info.param));
    });

}  // namespace
}  // namespace gexrt::testing
