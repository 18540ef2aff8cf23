#include "tools/gex_rma_bench_options.h"

#include <string>

namespace gex_bench {
namespace {

struct RmaTestInfo {
  RmaTest test;
  std::string_view name;
  std::string_view description;
};

constexpr RmaTestInfo kRmaTestInfo[] = {
    {RmaTest::kPutLatency, "put-latency",
     "Put latency: one Put at a time, each complete before the next"},
    {RmaTest::kGetLatency, "get-latency",
     "Get latency: one Get at a time, each complete before the next"},
    {RmaTest::kPutBandwidth, "put-bandwidth",
     "Put bandwidth: Puts back to back (blocking) or all in flight, then "
     "synced (NBI, NB)"},
    {RmaTest::kGetBandwidth, "get-bandwidth",
     "Get bandwidth: Gets back to back (blocking) or all in flight, then "
     "synced (NBI, NB)"},
    {RmaTest::kFaddLatency, "fadd-latency",
     "fetch-add latency: one 8-byte GEX_OP_FADD (U64 domain) at a time, "
     "each complete before the next"},
};

constexpr std::string_view kSyncNames[] = {"blocking", "nbi", "nb"};
constexpr std::string_view kLocalNames[] = {"in-segment", "out-of-segment"};

std::optional<RmaTest> RmaTestByName(std::string_view name) {
  for (const RmaTestInfo& info : kRmaTestInfo) {
    if (info.name == name) return info.test;
  }
  return std::nullopt;
}

template <typename E, size_t N>
std::optional<E> ByName(const std::string_view (&names)[N],
                        std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

template <size_t N>
std::string Joined(const std::string_view (&names)[N]) {
  std::string text;
  for (std::string_view name : names) {
    if (!text.empty()) text += ",";
    text += name;
  }
  return text;
}

std::string KnownRmaTests() {
  std::string known;
  for (const RmaTestInfo& info : kRmaTestInfo) {
    if (!known.empty()) known += ",";
    known += info.name;
  }
  return known;
}

}  // namespace

std::string_view RmaTestName(RmaTest test) {
  return kRmaTestInfo[static_cast<int>(test)].name;
}
std::string_view RmaTestDescription(RmaTest test) {
  return kRmaTestInfo[static_cast<int>(test)].description;
}
bool IsLatency(RmaTest test) {
  return test == RmaTest::kPutLatency || test == RmaTest::kGetLatency ||
         test == RmaTest::kFaddLatency;
}
bool IsPut(RmaTest test) {
  return test == RmaTest::kPutLatency || test == RmaTest::kPutBandwidth;
}
bool IsAtomic(RmaTest test) { return test == RmaTest::kFaddLatency; }
std::string_view SyncName(Sync sync) {
  return kSyncNames[static_cast<int>(sync)];
}
std::string_view LocalName(Local local) {
  return kLocalNames[static_cast<int>(local)];
}

std::optional<std::string> ParseRmaOptions(int argc, const char* const* argv,
                                           RmaOptions* options) {
  RmaOptions result;
  ArgReader args(argc, argv);
  while (args.Next()) {
    const std::string_view name = args.name();
    std::string_view text;
    // A size option's value into *out.
    auto size = [&](uint64_t* out) -> std::optional<std::string> {
      if (auto error = args.Value(&text)) return error;
      if (!ParseSize(text, out) || *out == 0) {
        return std::string(name) + ": '" + std::string(text) +
               "' is not a size of at least 1 (bytes, or with K, M or G)";
      }
      return std::nullopt;
    };
    if (name == "-h" || name == "--help") {
      if (auto error = args.NoValue()) return error;
      result.help = true;
    } else if (name == "-i" || name == "--iterations") {
      if (auto error = args.Value(&text)) return error;
      if (!ParseCount(text, &result.iterations) || result.iterations == 0) {
        return std::string(name) + ": '" + std::string(text) +
               "' is not a count of at least 1";
      }
    } else if (name == "-w" || name == "--warmup") {
      if (auto error = args.Value(&text)) return error;
      if (!ParseCount(text, &result.warmup)) {
        return std::string(name) + ": '" + std::string(text) +
               "' is not a count";
      }
    } else if (name == "--latency-min") {
      if (auto error = size(&result.latency_min)) return error;
    } else if (name == "--latency-max") {
      if (auto error = size(&result.latency_max)) return error;
    } else if (name == "--bandwidth-min") {
      if (auto error = size(&result.bandwidth_min)) return error;
    } else if (name == "--bandwidth-max") {
      if (auto error = size(&result.bandwidth_max)) return error;
    } else if (name == "-t" || name == "--tests") {
      if (auto error = args.Value(&text)) return error;
      if (auto error = ParseList(name, text, RmaTestByName, KnownRmaTests(),
                                 &result.tests)) {
        return error;
      }
    } else if (name == "-s" || name == "--sync") {
      if (auto error = args.Value(&text)) return error;
      auto lookup = [](std::string_view n) {
        return ByName<Sync>(kSyncNames, n);
      };
      if (auto error = ParseList(name, text, lookup, Joined(kSyncNames),
                                 &result.syncs)) {
        return error;
      }
    } else if (name == "-l" || name == "--local") {
      if (auto error = args.Value(&text)) return error;
      auto lookup = [](std::string_view n) {
        return ByName<Local>(kLocalNames, n);
      };
      if (auto error = ParseList(name, text, lookup, Joined(kLocalNames),
                                 &result.locals)) {
        return error;
      }
    } else if (name == "--csv") {
      if (auto error = args.Value(&text)) return error;
      if (text.empty()) return std::string("--csv needs a file name");
      result.csv_path = std::string(text);
    } else if (name == "--pin" || name == "--no-pin") {
      if (auto error = args.NoValue()) return error;
      result.pin = name == "--pin" ? Pin::kOn : Pin::kOff;
    } else {
      return "unknown option '" + std::string(args.arg()) + "'";
    }
  }
  if (result.latency_min > result.latency_max) {
    return "--latency-min " + std::to_string(result.latency_min) +
           " is above --latency-max " + std::to_string(result.latency_max);
  }
  if (result.bandwidth_min > result.bandwidth_max) {
    return "--bandwidth-min " + std::to_string(result.bandwidth_min) +
           " is above --bandwidth-max " + std::to_string(result.bandwidth_max);
  }
  *options = std::move(result);
  return std::nullopt;
}

std::string RmaUsage(std::string_view program) {
  std::string text = "usage: gasnetrun_<conduit> -n <ranks> " +
                     std::string(program) + " [options]\n";
  text +=
      "Measures Put and Get between rank pairs (r -> r^1) in GASNet's\n"
      "testsmall (latency) and testlarge (bandwidth) layout, each figure\n"
      "beside a local memcpy of the same size measured in the same run.\n"
      "\n"
      "  -i, --iterations N    timed operations per size (default 10000;\n"
      "                        sizes above 16K get proportionally fewer)\n"
      "  -w, --warmup N        untimed operations before each measurement\n"
      "                        (default 1000, scaled the same way)\n"
      "      --latency-min S   latency sizes, powers of two (default 1 ..\n"
      "      --latency-max S   2K); bytes, or with K, M or G\n"
      "      --bandwidth-min S bandwidth sizes (default 1K .. 4M)\n"
      "      --bandwidth-max S\n"
      "  -t, --tests LIST      comma-separated, from: " +
      KnownRmaTests() +
      "\n"
      "                        (default: all but fadd-latency, in that\n"
      "                        order). fadd-latency is 8 bytes only, its\n"
      "                        baseline a CPU fetch-add on this rank's own\n"
      "                        segment rather than a memcpy\n"
      "  -s, --sync LIST       blocking,nbi,nb (default all; latency has no\n"
      "                        nb form)\n"
      "  -l, --local LIST      where the local buffer lives: in-segment,\n"
      "                        out-of-segment (default both)\n"
      "      --csv FILE        also write every figure to FILE (rank 0):\n"
      "                        test,sync,local,size,iterations,usec_per_op,\n"
      "                        mbytes_per_sec,memcpy_usec_per_op,\n"
      "                        ratio_to_memcpy\n"
      "      --pin, --no-pin   pin rank r to allowed CPU r % ncpus (default:\n"
      "                        pin when the host's ranks fit its CPUs)\n"
      "  -h, --help            this text\n"
      "MB/s is 2^20 bytes per second. ratio_to_memcpy is time per operation\n"
      "over memcpy's time for the same size (1.00 = as fast as memcpy).\n"
      "Exit status: 0 done, 1 a failure during the run, 2 bad options.\n";
  return text;
}

std::vector<uint64_t> PowerOfTwoSizes(uint64_t min, uint64_t max) {
  std::vector<uint64_t> sizes;
  // The first power of two at least `min` (0: none up to `max`).
  uint64_t size = 1;
  while (size < min) {
    if (size > max / 2) {
      size = 0;
      break;
    }
    size *= 2;
  }
  for (; size != 0 && size <= max; size *= 2) {
    sizes.push_back(size);
    if (size > max / 2) break;
  }
  if (sizes.empty() || sizes.back() != max) sizes.push_back(max);
  return sizes;
}

std::vector<Sync> SyncsFor(RmaTest test, const std::vector<Sync>& wanted) {
  std::vector<Sync> syncs;
  for (Sync sync : wanted) {
    if (IsLatency(test) && sync == Sync::kNb) continue;
    syncs.push_back(sync);
  }
  return syncs;
}

}  // namespace gex_bench
