// gex_bench's command line: what to measure and how long. Kept apart from
// the benchmark so it can be tested without starting a job, and written
// against the C++ standard library only (like gex_bench itself, which uses
// nothing of ours but <gasnetex.h>, so it builds for any conduit).
#ifndef TOOLS_GEX_BENCH_OPTIONS_H_
#define TOOLS_GEX_BENCH_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/bench_args.h"  // IWYU pragma: export

namespace gex_bench {

// The measurements, in the order a run makes them (GASNet's testam order).
enum class Test {
  kPingPongReqRep,  // one request, the handler replies; wait; repeat
  kPingPongReqReq,  // one request, the target's main loop requests back
  kFloodOneWay,     // N requests counted at the target, one reply at the end
  kFloodRoundTrip,  // N requests in flight, every one replied
  kTwoWay,          // both ranks of a pair flood round trips at once
  // testam's one-way flood exactly: the sender only sends (it polls only
  // inside a send that finds the queue full), the handler only counts, the
  // target polls until it has counted them all. Short with no arguments
  // and Medium of 8 bytes, alternated over several rounds in one run, and
  // the ratio of the two. Takes no categories or sizes.
  kFloodShortOneWay,
};
inline constexpr Test kAllTests[] = {
    Test::kPingPongReqRep, Test::kPingPongReqReq, Test::kFloodOneWay,
    Test::kFloodRoundTrip, Test::kTwoWay,         Test::kFloodShortOneWay};

enum class Category { kShort, kMedium, kLong };
inline constexpr Category kAllCategories[] = {
    Category::kShort, Category::kMedium, Category::kLong};

// The names used on the command line, in the tables and in the CSV.
std::string_view TestName(Test test);
std::string_view CategoryName(Category category);
// What one row of a test measures, for the table headings.
std::string_view TestDescription(Test test);
// Whether the test's us/op is a latency (one round trip at a time), the
// figure compared with the cache-line baseline.
bool IsPingPong(Test test);

struct Options {
  uint64_t iterations = 10000;
  uint64_t warmup = 1000;
  // Payload sizes stop here or at the conduit's limit, whichever is lower.
  // 2 MiB is GASNet's testam default.
  uint64_t max_size = uint64_t{2} << 20;
  std::vector<Test> tests{std::begin(kAllTests), std::end(kAllTests)};
  std::vector<Category> categories{std::begin(kAllCategories),
                                   std::end(kAllCategories)};
  std::string csv_path;  // empty: no CSV
  Pin pin = Pin::kAuto;
  bool help = false;
};

// Parses argv[1..argc-1] (the program's own arguments, as gex_Client_Init
// hands them back). Returns an error message naming the bad argument, or
// nullopt when `options` holds the result.
std::optional<std::string> ParseOptions(int argc, const char* const* argv,
                                        Options* options);

// The -h text.
std::string Usage(std::string_view program);

// Sizes to measure for a category whose limit is `limit` bytes: 0, then
// powers of two up to it, then the limit itself when it is not a power of
// two (so the largest message the conduit takes is always measured). Short
// messages carry no payload: {0}.
std::vector<uint64_t> Sizes(Category category, uint64_t limit);

}  // namespace gex_bench

#endif  // TOOLS_GEX_BENCH_OPTIONS_H_
