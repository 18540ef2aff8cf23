#include "tools/gex_bench_options.h"

#include <cstdio>
#include <string>

namespace gex_bench {
namespace {

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
    {Test::kFloodShortOneWay, "flood-short-oneway",
     "testam's one-way flood, Short 0-arg against Medium 8 B: the sender "
     "only sends (polling inside a send that finds the queue full), the "
     "handler only counts; us/op per message, medians of alternating "
     "rounds"},
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
  ArgReader args(argc, argv);
  while (args.Next()) {
    const std::string_view name = args.name();
    auto value = [&](std::string_view* out) { return args.Value(out); };
    auto no_value = [&]() { return args.NoValue(); };
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
      return "unknown option '" + std::string(args.arg()) + "'";
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
      "                       (flood-short-oneway: Short 0 B against Medium\n"
      "                       8 B whatever -c and -m say, with their ratio)\n"
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

}  // namespace gex_bench
