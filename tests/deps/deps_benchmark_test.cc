// Google Benchmark links and runs: a registered benchmark runs through
// RunSpecifiedBenchmarks and a custom reporter sees it, with iterations.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace {

void BM_Sum(benchmark::State& state) {
  long sum = 0;
  for (auto _ : state) {
    for (int i = 0; i < 64; ++i) benchmark::DoNotOptimize(sum += i);
  }
  state.counters["sum_positive"] = sum > 0 ? 1 : 0;
}
BENCHMARK(BM_Sum);

// Records what the library reports instead of printing it.
class RecordingReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context& context) override {
    saw_context = true;
    return true;
  }
  void ReportRuns(const std::vector<Run>& reports) override {
    runs.insert(runs.end(), reports.begin(), reports.end());
  }

  bool saw_context = false;
  std::vector<Run> runs;
};

TEST(BenchmarkTest, RegisteredBenchmarkRuns) {
  // Short runs: this checks that the machinery works, it measures nothing.
  std::vector<std::string> args = {"deps_benchmark_test",
                                   "--benchmark_min_time=0.01",
                                   "--benchmark_filter=BM_Sum"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  EXPECT_FALSE(benchmark::ReportUnrecognizedArguments(argc, argv.data()));

  RecordingReporter reporter;
  size_t matched = benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  EXPECT_EQ(matched, 1u);
  EXPECT_TRUE(reporter.saw_context);
  ASSERT_FALSE(reporter.runs.empty());
  const benchmark::BenchmarkReporter::Run& run = reporter.runs.front();
  std::printf(
      "%s: %lld iterations, %.1f ns/iteration\n", run.benchmark_name().c_str(),
      static_cast<long long>(run.iterations), run.GetAdjustedRealTime());
  EXPECT_EQ(run.benchmark_name(), "BM_Sum");
  EXPECT_FALSE(run.error_occurred);
  EXPECT_GT(run.iterations, 0);
  EXPECT_EQ(run.counters.at("sum_positive").value, 1);
}

}  // namespace
