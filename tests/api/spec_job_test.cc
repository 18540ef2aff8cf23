// spec_job_test: the specification clauses of spec_client.c (see its header
// comment for the cases and the sections they check), as SEQ and PAR
// clients, at 1, 2, 3 and 4 ranks, on the conduit instance this test was
// declared for (tests/api/api_tests.bzl).
#include <iterator>
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/api/api_job.h"

namespace gexrt::testing {
namespace {

// Cases the client runs, in its order; each rank reports each.
constexpr const char* kCases[] = {"queries", "teams",  "am_zero", "rma_zero",
                                  "values",  "events", "nbi",     "immediate"};

class SpecJobTest
    : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(SpecJobTest, EveryClauseHolds) {
  const auto& [client, n] = GetParam();
  const JobResult r = RunApiJob(client, n, {});
  for (const auto& [rank, line] : ExpectEveryRankOk(r, n, "spec ok")) {
    EXPECT_EQ(Field(line, "cases"), static_cast<long long>(std::size(kCases)))
        << line;
  }
  for (const char* c : kCases) {
    for (int rank = 0; rank < n; ++rank) {
      EXPECT_NE(r.out.find(absl::StrFormat("rank %d: case %s ok", rank, c)),
                std::string::npos)
          << "rank " << rank << " did not pass case " << c << "\n"
          << Describe(r);
    }
  }
}

std::string Name(
    const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  const auto& [client, n] = info.param;
  return absl::StrFormat("%s_n%d", client == "spec_client" ? "seq" : "par", n);
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, SpecJobTest,
    ::testing::Combine(::testing::Values("spec_client", "spec_par_client"),
                       ::testing::Values(1, 2, 3, 4)),
    Name);

}  // namespace
}  // namespace gexrt::testing
