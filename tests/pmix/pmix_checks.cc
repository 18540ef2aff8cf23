#include "tests/pmix/pmix_checks.h"

#include <cctype>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Describe(const PmixJobResult& r) {
  return absl::StrFormat(
      "command: %s\nexit code: %d\nranks running at the launcher's return: "
      "%s\nstdout:\n%s\nstderr:\n%s",
      r.command, r.exit_code, absl::StrJoin(r.alive_at_return, "; "), r.out,
      r.err);
}

std::vector<std::string> ShmLeft(const std::string& job_id_env) {
  std::string prefix = "GASNT";
  for (char c : job_id_env.substr(job_id_env.find('=') + 1)) {
    if (std::isalnum(static_cast<unsigned char>(c))) prefix.push_back(c);
  }
  return EntriesWithPrefix("/dev/shm", prefix + ".");
}

std::vector<ExitCase> ExitCases() {
  return {{"collective", 3, true},
          {"collective", 0, true},
          {"spin", 3, true},
          {"exit-one", 3, false},
          {"sigkill", 9, false, 128 + 9}};
}

std::string ExitCaseName(const ExitCase& c) {
  std::string name = absl::StrFormat("%s_%d", c.mode, c.code);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

void PrintTo(const ExitCase& c, std::ostream* os) { *os << ExitCaseName(c); }

void ExpectExitOutcome(const PmixJobResult& r, const ExitCase& c,
                       const std::string& job_id_env) {
  if (c.exact) {
    EXPECT_EQ(r.exit_code, c.code) << Describe(r);
  } else if (c.launcher_code >= 0) {
    EXPECT_EQ(r.exit_code, c.launcher_code) << Describe(r);
  } else {
    EXPECT_NE(r.exit_code, 0) << Describe(r);
  }
  for (int rank = 0; rank < kExitRanks; ++rank) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrFormat("rank %d: job=", rank)))
        << Describe(r);
    if (c.mode != "collective" || c.code == 0) continue;
    // The lines each rank left in its stdio buffer arrive, whole.
    for (int k = 0; k < 3; ++k) {
      EXPECT_THAT(r.out,
                  HasSubstr(absl::StrFormat("rank %d line %d\n", rank, k)))
          << Describe(r);
    }
  }
  EXPECT_THAT(r.alive_at_return, IsEmpty()) << Describe(r);
  EXPECT_THAT(r.survivors, IsEmpty()) << Describe(r);
  EXPECT_THAT(ShmLeft(job_id_env), IsEmpty()) << Describe(r);
}

}  // namespace gexrt::testing
