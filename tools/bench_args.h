// What the benchmark CLIs (gex_bench, gex_rma_bench) share on their command
// lines: counts, sizes with K/M/G suffixes, and the rule that scales
// iteration counts down for large payloads. Standard C++ only, like the
// programs, which build for any conduit.
#ifndef TOOLS_BENCH_ARGS_H_
#define TOOLS_BENCH_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gex_bench {

// Whether a rank pins itself to one CPU: --pin, --no-pin, or by default
// when the host's ranks fit its CPUs.
enum class Pin { kAuto, kOn, kOff };

// A count: decimal digits only. False (and *out untouched) otherwise.
bool ParseCount(std::string_view text, uint64_t* out);

// A size: a count with an optional K, M or G suffix (powers of 1024).
// False on anything else, or when the result overflows.
bool ParseSize(std::string_view text, uint64_t* out);

// Iterations for one size: the full count up to 16 KiB, then fewer in
// proportion, so the large sizes take about as long as 16 KiB does (at
// least 1 when `iterations` is at least 1).
uint64_t ScaledIterations(uint64_t iterations, uint64_t size);

// Walks a command line: "--name=value" and "--name value" both work; short
// options take the value as the next argument.
//
//   ArgReader args(argc, argv);
//   while (args.Next()) {
//     if (args.name() == "-i") { std::string_view v; if (auto e =
//     args.Value(&v)) return e; ... }
//   }
class ArgReader {
 public:
  ArgReader(int argc, const char* const* argv) : argc_(argc), argv_(argv) {}

  // Moves to the next argument; false after the last.
  bool Next();
  // The option's name ("--iterations" of "--iterations=5") and the whole
  // argument.
  std::string_view name() const { return name_; }
  std::string_view arg() const { return arg_; }
  // The option's value (inline, or the next argument, which is consumed);
  // an error naming the option when there is none.
  std::optional<std::string> Value(std::string_view* out);
  // An error when a value was given inline to an option that takes none.
  std::optional<std::string> NoValue() const;

 private:
  int argc_;
  const char* const* argv_;
  int i_ = 0;
  std::string_view arg_;
  std::string_view name_;
  std::optional<std::string_view> inline_value_;
};

// Splits "a,b,c" and maps each name through `lookup` (returning
// std::optional<T>), each item once in the order given; an empty name or an
// unknown one is an error naming `option` and listing `known`.
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
    bool seen = false;
    for (const T& have : result) seen = seen || have == *item;
    if (!seen) result.push_back(*item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  *out = std::move(result);
  return std::nullopt;
}

}  // namespace gex_bench

#endif  // TOOLS_BENCH_ARGS_H_
