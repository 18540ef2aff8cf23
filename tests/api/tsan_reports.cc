#include "tests/api/tsan_reports.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

struct TsanReports {
  std::vector<std::string> private_memory;  // always a failure
  std::vector<std::string> shared_memory;   // a failure with one rank
};

// The reports in the files "<dir>/tsan.<pid>" (TSAN_OPTIONS log_path).
TsanReports ReadTsanReports(const std::string& dir) {
  TsanReports out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("tsan", 0) != 0) continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string report;
    for (const std::string& line : Lines(text.str())) {
      if (absl::StrContains(line, "WARNING: ThreadSanitizer")) report.clear();
      report += line + "\n";
      if (!absl::StartsWith(line, "SUMMARY: ThreadSanitizer")) continue;
      // "Location is global '<null>' at 0x0 (GASNT<job>.<rank>.<n> (deleted)
      // +0x304)" for the PSHM objects; heap, stack or a named global else.
      const bool shared = absl::StrContains(report, "  Location is ") &&
                          absl::StrContains(report, "(GASNT");
      (shared ? out.shared_memory : out.private_memory).push_back(report);
      report.clear();
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> TsanEnv(const std::string& dir) {
  if (!kTsan) return {};
  return {absl::StrFormat(
      "TSAN_OPTIONS=halt_on_error=0:exitcode=0:second_deadlock_stack=1:"
      "log_path=%s/tsan",
      dir)};
}

void ExpectNoTsanReports(const std::string& dir, int ranks) {
  const TsanReports reports = ReadTsanReports(dir);
  EXPECT_THAT(reports.private_memory, ::testing::IsEmpty())
      << absl::StrJoin(reports.private_memory, "\n");
  if (ranks == 1) {
    EXPECT_THAT(reports.shared_memory, ::testing::IsEmpty())
        << absl::StrJoin(reports.shared_memory, "\n");
  } else if (!reports.shared_memory.empty()) {
    std::cout << reports.shared_memory.size()
              << " ThreadSanitizer reports about memory shared between "
                 "processes (not judged with "
              << ranks << " ranks)\n";
  }
}

}  // namespace gexrt::testing
