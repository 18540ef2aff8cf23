#include "tools/gex_bench_options.h"

#include <charconv>
#include <cstdio>
#include <string>

namespace gex_bench {
namespace {

// Sizes of 16 KiB and below get the full iteration count.
constexpr uint64_t kFullIterationsUpTo = 16 * 1024;

struct TestInfo {
  Test test;
  std::string_view name;
  std::string_view description;
};

constexpr TestInfo kTestInfo[] = {
    {Test::kPingPongReqRep, "pingpong-reqrep",
     "ping-pong round trip, Request then Reply from the handler"},
    {Test::kPingPongReqReq, "pingpong-reqreq",
     "ping-pong round trip, Request then Request back from the target's "
     "main loop"},
    {Test::kFloodOneWay, "flood-oneway",
     "flood one-way: N Requests, counted at the target, one Reply at the "
     "end; us/op per message"},
    {Test::kFloodRoundTrip, "flood-roundtrip",
     "flood round trip: N Requests in flight, each replied; us/op per "
     "round trip"},
    {Test::kTwoWay, "twoway",
     "two-way: both ranks of the pair flood round trips at once; us/op per "
     "round trip of the pair together, MB/s both ways"},
};

struct CategoryInfo {
  Category category;
  std::string_view name;
};

constexpr CategoryInfo kCategoryInfo[] = {
    {Category::kShort, "short"},
    {Category::kMedium, "medium"},
    {Category::kLong, "long"},
};

// A count: decimal digits only.
bool ParseCount(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

// A size: a count with an optional K, M or G suffix (powers of 1024).
bool ParseSize(std::string_view text, uint64_t* out) {
  uint64_t scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'k':
      case 'K':
        scale = uint64_t{1} << 10;
        break;
      case 'm':
      case 'M':
        scale = uint64_t{1} << 20;
        break;
      case 'g':
      case 'G':
        scale = uint64_t{1} << 30;
        break;
      default:
        break;
    }
    if (scale != 1) text.remove_suffix(1);
  }
  uint64_t value = 0;
  if (!ParseCount(text, &value)) return false;
  if (value > UINT64_MAX / scale) return false;
  *out = value * scale;
  return true;
}

// Splits "a,b,c" and maps each name through `lookup`; an empty list or an
// unknown name is an error naming it.
template <typename T, typename Lookup>
std::optional<std::string> ParseList(std::string_view option,
                                     std::string_view text, Lookup lookup,
                                     std::string_view known,
                                     std::vector<T>* out) {
  std::vector<T> result;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view name = text.substr(0, comma);
    std::optional<T> item = lookup(name);
    if (!item) {
      return std::string(option) + ": unknown name '" + std::string(name) +
             "' (known: " + std::string(known) + ")";
    }
    // Each measurement once, in the order given.
    bool seen = false;
    for (const T& have : result) seen = seen || have == *item;
    if (!seen) result.push_back(*item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  *out = std::move(result);
  return std::nullopt;
}

std::optional<Test> TestByName(std::string_view name) {
  for (const TestInfo& info : kTestInfo) {
    if (info.name == name) return info.test;
  }
  return std::nullopt;
}

std::optional<Category> CategoryByName(std::string_view name) {
  for (const CategoryInfo& info : kCategoryInfo) {
    if (info.name == name) return info.category;
  }
  return std::nullopt;
}

std::string KnownTests() {
  std::string known;
  for (const TestInfo& info : kTestInfo) {
    if (!known.empty()) known += ",";
    known += info.name;
  }
  return known;
}

}  // namespace

std::string_view TestName(Test test) {
  for (const TestInfo& info : kTestInfo) {
    if (info.test == test) return info.name;
  }
  return "?";
}

std::string_view TestDescription(Test test) {
  for (const TestInfo& info : kTestInfo) {
    if (info.test == test) return info.description;
  }
  return "?";
}

std::string_view CategoryName(Category category) {
  for (const CategoryInfo& info : kCategoryInfo) {
    if (info.category == category) return info.name;
  }
  return "?";
}

bool IsPingPong(Test test) {
  return test == Test::kPingPongReqRep || test == Test::kPingPongReqReq;
}

std::optional<std::string> ParseOptions(int argc, const char* const* argv,
                                        Options* options) {
  Options result;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    // "--name=value" and "--name value" both work; short options take the
    // value as the next argument.
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (arg.starts_with("--")) {
      const size_t eq = arg.find('=');
      if (eq != std::string_view::npos) {
        name = arg.substr(0, eq);
        inline_value = arg.substr(eq + 1);
      }
    }
    auto value = [&](std::string_view* out) -> std::optional<std::string> {
      if (inline_value) {
        *out = *inline_value;
      } else if (i + 1 < argc) {
        *out = argv[++i];
      } else {
        return std::string(name) + " needs a value";
      }
      return std::nullopt;
    };
    auto no_value = [&]() -> std::optional<std::string> {
      if (inline_value) return std::string(name) + " takes no value";
      return std::nullopt;
    };

    std::string_view text;
    if (name == "-h" || name == "--help") {
      if (auto error = no_value()) return error;
      result.help = true;
    } else if (name == "-i" || name == "--iterations") {
      if (auto error = value(&text)) return error;
      if (!ParseCount(text, &result.iterations) || result.iterations == 0) {
        return std::string(name) + ": '" + std::string(text) +
               "' is not a count of at least 1";
      }
    } else if (name == "-w" || name == "--warmup") {
      if (auto error = value(&text)) return error;
      if (!ParseCount(text, &result.warmup)) {
        return std::string(name) + ": '" + std::string(text) +
               "' is not a count";
      }
    } else if (name == "-m" || name == "--max-size") {
      if (auto error = value(&text)) return error;
      if (!ParseSize(text, &result.max_size)) {
        return std::string(name) + ": '" + std::string(text) +
               "' is not a size (bytes, or with K, M or G)";
      }
    } else if (name == "-t" || name == "--tests") {
      if (auto error = value(&text)) return error;
      if (auto error =
              ParseList(name, text, TestByName, KnownTests(), &result.tests)) {
        return error;
      }
    } else if (name == "-c" || name == "--categories") {
      if (auto error = value(&text)) return error;
      if (auto error = ParseList(name, text, CategoryByName,
                                 "short,medium,long", &result.categories)) {
        return error;
      }
    } else if (name == "--csv") {
      if (auto error = value(&text)) return error;
      if (text.empty()) return std::string("--csv needs a file name");
      result.csv_path = std::string(text);
    } else if (name == "--pin") {
      if (auto error = no_value()) return error;
      result.pin = Pin::kOn;
    } else if (name == "--no-pin") {
      if (auto error = no_value()) return error;
      result.pin = Pin::kOff;
    } else {
      return "unknown option '" + std::string(arg) + "'";
    }
  }
  *options = std::move(result);
  return std::nullopt;
}

std::string Usage(std::string_view program) {
  std::string text = "usage: gasnetrun_<conduit> -n <ranks> " +
                     std::string(program) + " [options]\n";
  text +=
      "Measures Active Messages between rank pairs (r <-> r^1) and, as the\n"
      "baseline, a cache-line ping-pong between the same two processes.\n"
      "\n"
      "  -i, --iterations N   timed operations per size (default 10000;\n"
      "                       sizes above 16K get proportionally fewer)\n"
      "  -w, --warmup N       untimed operations before each measurement\n"
      "                       (default 1000, scaled the same way)\n"
      "  -m, --max-size S     largest payload, bytes or with K/M/G (default\n"
      "                       2M; the conduit's limits apply too)\n"
      "  -t, --tests LIST     comma-separated, in this order by default:\n"
      "                       " +
      KnownTests() +
      "\n"
      "  -c, --categories L   comma-separated: short,medium,long (default "
      "all)\n"
      "      --csv FILE       also write every figure to FILE (rank 0):\n"
      "                       test,category,size,iterations,usec_per_op,\n"
      "                       mbytes_per_sec,ratio_to_cacheline,pair\n"
      "      --pin, --no-pin  pin rank r to allowed CPU r % ncpus (default:\n"
      "                       pin when the host's ranks fit its CPUs)\n"
      "  -h, --help           this text\n"
      "MB/s is 2^20 bytes per second of payload (both directions for round\n"
      "trips). Exit status: 0 done, 1 a failure during the run, 2 bad "
      "options.\n";
  return text;
}

std::vector<uint64_t> Sizes(Category category, uint64_t limit) {
  std::vector<uint64_t> sizes{0};
  if (category == Category::kShort) return sizes;
  uint64_t size = 1;
  while (size <= limit) {
    sizes.push_back(size);
    if (size > limit / 2) break;
    size *= 2;
  }
  if (sizes.back() != limit) sizes.push_back(limit);
  return sizes;
}

uint64_t ScaledIterations(uint64_t iterations, uint64_t size) {
  if (size <= kFullIterationsUpTo || iterations == 0) return iterations;
  const uint64_t divisor =
      (size + kFullIterationsUpTo - 1) / kFullIterationsUpTo;
  const uint64_t scaled = iterations / divisor;
  return scaled == 0 ? 1 : scaled;
}

}  // namespace gex_bench
