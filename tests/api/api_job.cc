// Running API test clients as jobs and judging them from the outside (see
// api_job.h).
#include "tests/api/api_job.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::testing {

namespace {

std::string FromEnv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

}  // namespace

std::string Conduit() { return FromEnv("API_TEST_CONDUIT"); }

std::vector<std::string> InstanceEnv() {
  return absl::StrSplit(FromEnv("API_TEST_ENV"), '\n', absl::SkipEmpty());
}

int SupernodeMaxSize() {
  int size = 0;
  for (const std::string& entry : InstanceEnv()) {
    constexpr absl::string_view kName = "GASNET_SUPERNODE_MAXSIZE=";
    if (absl::StartsWith(entry, kName) &&
        !absl::SimpleAtoi(entry.substr(kName.size()), &size)) {
      size = 0;
    }
  }
  return size > 0 ? size : 0;
}

bool SpansSupernodes(int n) {
  const int size = SupernodeMaxSize();
  return size > 0 && n > size;
}

std::string Layout(int n) {
  return absl::StrFormat(
      "%d ranks over conduit %s with GASNET_SUPERNODE_MAXSIZE=%d span %d "
      "supernodes",
      n, Conduit(), SupernodeMaxSize(),
      (n + SupernodeMaxSize() - 1) / std::max(SupernodeMaxSize(), 1));
}

namespace {

int SupernodeOf(int n, int rank) {
  const int max = SupernodeMaxSize();
  if (max == 0 || n <= max) return 0;
  const int count = (n + max - 1) / max;
  const int base = n / count;
  const int larger = n % count;  // supernodes of base + 1 ranks, first
  if (rank < larger * (base + 1)) return rank / (base + 1);
  return larger + (rank - larger * (base + 1)) / base;
}

}  // namespace

bool SameSupernode(int n, int a, int b) {
  return SupernodeOf(n, a) == SupernodeOf(n, b);
}

JobResult RunApiJob(const std::string& client, int n,
                    const std::vector<std::string>& args,
                    const std::vector<std::string>& env) {
  BecomeSubreaper();
  JobSpec spec;
  const std::string launcher = FromEnv("API_TEST_LAUNCHER");
  if (launcher.empty()) {
    // Not started by a test of api_tests.bzl: no job to judge.
    JobResult r;
    r.command = client;
    r.err = "API_TEST_LAUNCHER is not set (api_tests.bzl sets it)";
    ADD_FAILURE() << r.err;
    return r;
  }
  spec.argv = {
      Runfile(launcher), "-n", std::to_string(n),
      Runfile("tests/api/" + client + FromEnv("API_TEST_CLIENT_SUFFIX"))};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  const std::string tmpdir = MakeTempDir("api");
  spec.env = {"GASNET_PSHMNET_QUEUE_DEPTH",
              "GASNET_PSHMNET_QUEUE_MEMORY",
              "GASNET_MAX_SEGSIZE",
              "GASNET_SUPERNODE_MAXSIZE",
              "GASNET_PSHM_NODES",
              "GASNET_SMP_SPAWNER",
              "GASNET_EXITTIMEOUT",
              "GASNET_TMPDIR=" + tmpdir,
              "TMPDIR=" + tmpdir};
  // The instance's variables, then the case's (which win).
  for (std::string& entry : InstanceEnv()) spec.env.push_back(std::move(entry));
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  spec.limit = absl::Seconds(120);
  return RunJob(spec);
}

std::vector<std::string> ForceAmEnv(bool force_am) {
  return {force_am ? "GEX_RMA_FORCE_AM=1" : "GEX_RMA_FORCE_AM"};
}

std::string PathName(bool force_am) { return force_am ? "am" : "direct"; }

std::string Describe(const JobResult& r) {
  std::string out = r.out;
  std::string err = r.err;
  // A job killed at its limit: the stacks the runner took are kept whole
  // (up to 48 KB), they say where each rank hung.
  std::string stacks;
  if (const size_t at = err.find("[job_runner: the job ran past its limit");
      at != std::string::npos) {
    stacks = err.substr(at, 48 * 1024);
    err.resize(at);
  }
  for (std::string* text : {&out, &err}) {
    if (text->size() > 6000) {
      *text = absl::StrCat(text->substr(0, 3000), "\n...\n",
                           text->substr(text->size() - 3000));
    }
  }
  err += stacks;
  return absl::StrFormat(
      "command: %s\nexit: %d\nsurvivors: %d\nstdout:\n%s\n"
      "stderr:\n%s",
      r.command, r.exit_code, r.survivors.size(), out, err);
}

std::map<int, std::string> RankLines(const JobResult& r,
                                     const std::string& what) {
  std::map<int, std::string> by_rank;
  for (const std::string& line : Lines(r.out)) {
    int rank = -1;
    int consumed = 0;
    if (sscanf(line.c_str(), "rank %d: %n", &rank, &consumed) != 1 ||
        consumed == 0) {
      continue;
    }
    if (line.compare(consumed, what.size(), what) != 0) continue;
    EXPECT_EQ(by_rank.count(rank), 0u)
        << "rank " << rank << " reported \"" << what << "\" twice: " << line;
    by_rank[rank] = line;
  }
  return by_rank;
}

std::map<int, std::string> ExpectEveryRankOk(const JobResult& r, int n,
                                             const std::string& what) {
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  std::map<int, std::string> lines = RankLines(r, what);
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ(lines.count(rank), 1u)
        << "rank " << rank << " did not print \"rank " << rank << ": " << what
        << "\"\n"
        << Describe(r);
  }
  EXPECT_EQ(lines.size(), static_cast<size_t>(n)) << Describe(r);
  EXPECT_THAT(r.survivors, ::testing::IsEmpty()) << Describe(r);
  return lines;
}

void ExpectFatal(const JobResult& r, int proc, const std::string& call) {
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  const std::string proc_re = proc < 0 ? "[0-9]+" : std::to_string(proc);
  const std::regex fatal("(^|\n)\\*\\*\\* FATAL ERROR \\(proc " + proc_re +
                         "\\): " + call + "[: ]");
  EXPECT_TRUE(std::regex_search(r.err, fatal))
      << "no \"*** FATAL ERROR (proc " << (proc < 0 ? "P" : proc_re) << "): ..."
      << call << "\" line\n"
      << Describe(r);
  EXPECT_THAT(r.out, ::testing::Not(::testing::HasSubstr("survived")))
      << Describe(r);
  EXPECT_THAT(r.survivors, ::testing::IsEmpty()) << Describe(r);
}

std::string TestName(std::string mode) {
  for (char& c : mode) {
    if (c == '-') c = '_';
  }
  return mode;
}

long long Field(const std::string& line, const std::string& key) {
  const std::regex re("(^| )" + key + "=(-?[0-9]+)");
  std::smatch m;
  if (!std::regex_search(line, m, re)) return -1;
  return std::atoll(m[2].str().c_str());
}

}  // namespace gexrt::testing
