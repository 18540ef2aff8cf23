// gex_rma_bench's command line: which RMA measurements, over which sizes,
// with which synchronisation and local buffers. Kept apart from the
// benchmark so it is tested without a job; standard C++ only.
#ifndef TOOLS_GEX_RMA_BENCH_OPTIONS_H_
#define TOOLS_GEX_RMA_BENCH_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/bench_args.h"  // IWYU pragma: export

namespace gex_bench {

// What one table measures, in the order a run makes them (GASNet's
// testsmall, then testlarge).
enum class RmaTest {
  kPutLatency,    // one Put at a time, completed before the next
  kGetLatency,    // one Get at a time
  kPutBandwidth,  // many Puts in flight (per the sync), 1 KiB and up
  kGetBandwidth,  // many Gets in flight
  // One 8-byte fetch-add (gex_AD_OpBlocking_U64 or _OpNBI_U64 + wait,
  // GEX_OP_FADD on a GEX_DT_U64 domain) at a time; only when named in -t.
  kFaddLatency,
};
inline constexpr RmaTest kAllRmaTests[] = {
    RmaTest::kPutLatency, RmaTest::kGetLatency, RmaTest::kPutBandwidth,
    RmaTest::kGetBandwidth, RmaTest::kFaddLatency};
// What a run measures without -t: GASNet's testsmall and testlarge.
inline constexpr RmaTest kDefaultRmaTests[] = {
    RmaTest::kPutLatency, RmaTest::kGetLatency, RmaTest::kPutBandwidth,
    RmaTest::kGetBandwidth};

// How operations are completed. Latency: blocking calls, or NBI each
// followed by gex_NBI_Wait. Bandwidth: blocking calls back to back; NBI
// issued together and synced once; NB issued together, their events
// waited together (gex_Event_WaitAll).
enum class Sync { kBlocking, kNbi, kNb };
inline constexpr Sync kAllSyncs[] = {Sync::kBlocking, Sync::kNbi, Sync::kNb};

// Where the local side (a Put's source, a Get's destination) lives.
enum class Local { kInSegment, kOutOfSegment };
inline constexpr Local kAllLocals[] = {Local::kInSegment, Local::kOutOfSegment};

std::string_view RmaTestName(RmaTest test);
std::string_view RmaTestDescription(RmaTest test);
bool IsLatency(RmaTest test);
bool IsPut(RmaTest test);
bool IsAtomic(RmaTest test);
std::string_view SyncName(Sync sync);
std::string_view LocalName(Local local);

struct RmaOptions {
  uint64_t iterations = 10000;
  uint64_t warmup = 1000;
  // testsmall's and testlarge's ranges.
  uint64_t latency_min = 1;
  uint64_t latency_max = 2048;
  uint64_t bandwidth_min = 1024;
  uint64_t bandwidth_max = uint64_t{4} << 20;
  std::vector<RmaTest> tests{std::begin(kDefaultRmaTests),
                             std::end(kDefaultRmaTests)};
  std::vector<Sync> syncs{std::begin(kAllSyncs), std::end(kAllSyncs)};
  std::vector<Local> locals{std::begin(kAllLocals), std::end(kAllLocals)};
  std::string csv_path;  // empty: no CSV
  Pin pin = Pin::kAuto;
  bool help = false;
};

// Parses argv[1..argc-1]. Returns an error message naming the bad argument,
// or nullopt when `options` holds the result.
std::optional<std::string> ParseRmaOptions(int argc, const char* const* argv,
                                           RmaOptions* options);

// The -h text.
std::string RmaUsage(std::string_view program);

// Powers of two from `min` to `max` (both rounded into that list: the first
// power of two at least `min`, and `max` itself when it is not one).
std::vector<uint64_t> PowerOfTwoSizes(uint64_t min, uint64_t max);

// The syncs that apply to `test` (latency, fetch-add included, has no NB
// form), in `wanted`'s order.
std::vector<Sync> SyncsFor(RmaTest test, const std::vector<Sync>& wanted);

}  // namespace gex_bench

#endif  // TOOLS_GEX_RMA_BENCH_OPTIONS_H_
