// Parsers for every value syntax GASNet users write in GASNET_* variables.
//
// Each parser takes the raw text of one value and returns the parsed value,
// or an InvalidArgument status whose message says what was wrong and lists
// the accepted forms. The messages never name the variable: the settings
// layer (base/env/settings.h) adds the name and the value. Leading and
// trailing whitespace is ignored everywhere.
//
//   ParseBool("Yes")                  -> true
//   ParseInt("0x10", 0, 100)          -> 16
//   ParseSize("64", SizeUnit::kKiB)   -> 65536   (default unit applies)
//   ParseSize("2M", SizeUnit::kKiB)   -> 2097152 (suffix wins)
//   ParseMemoryAmount("5/8", ...)     -> fraction 0.625 of physical memory
//   ParseNodeList("0,2-4,6")          -> {0, 2, 3, 4, 6}
//   ParsePortFilter("mlx5_0+mlx5_1:2") -> {mlx5_0: any port, mlx5_1: port 2}
#ifndef GEX_BASE_ENV_PARSE_H_
#define GEX_BASE_ENV_PARSE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace gexrt::env {

// Booleans: 1/0, yes/no, y/n, true/false, on/off, in any case.
absl::StatusOr<bool> ParseBool(std::string_view text);

// Whether environment variable `name` holds a true boolean; unset or
// malformed is false. Reads getenv directly, without the settings layer's
// reporting or errors: for switches read on fatal or exit paths (and
// before settings can be used), where a bad value must not recurse into a
// fatal error.
bool FlagEnabled(const char* name);

// Integers: optional sign, then decimal digits or 0x-prefixed hex digits.
// The result must lie in [min, max].
absl::StatusOr<int64_t> ParseInt(std::string_view text, int64_t min,
                                 int64_t max);

// Decimal numbers: an integer, a decimal ("0.66", ".5", "1e3") or a
// fraction of two integers ("5/8"). Must be finite.
absl::StatusOr<double> ParseDecimal(std::string_view text);

// The unit a size without a suffix is measured in. Each setting has its own
// (the firehose sizes default to MiB, the stripe sizes to KiB).
enum class SizeUnit : uint64_t {
  kBytes = 1,
  kKiB = uint64_t{1} << 10,
  kMiB = uint64_t{1} << 20,
  kGiB = uint64_t{1} << 30,
  kTiB = uint64_t{1} << 40,
};

// A suffix letter for a unit ("", "K", "M", "G", "T").
std::string_view SizeUnitSuffix(SizeUnit unit);

// Sizes in bytes: a non-negative integer or decimal, then an optional
// suffix K, M, G or T (any case, optionally followed by "B" or "iB"; all
// are powers of 1024), or B for bytes. Without a suffix the number is in
// `default_unit`. Hex integers ("0x1000") are accepted and are in
// `default_unit` too. A fractional byte count is rounded down.
absl::StatusOr<uint64_t> ParseSize(std::string_view text,
                                   SizeUnit default_unit);

// GASNet-EX's reading of integer and size settings, which the settings
// layer falls back to when the exact forms above reject a value: the
// longest leading number is read and whatever follows it is tolerated (a
// client that sets "50%" gets 50). `ignored` is that trailing text, without
// surrounding whitespace, for the caller to warn about; empty when the value
// was exact.
//
//   ParseLeadingInt("50%", ...)                -> {50, "%"}
//   ParseLeadingInt("1.5", ...)                -> {1, ".5"}
//   ParseLeadingSize("50%", SizeUnit::kMiB)    -> {50 MiB, "%"}
//   ParseLeadingSize("1000MB/P", SizeUnit::kKiB) -> {1000 MiB, "/P"}
//   ParseLeadingSize("41 GB", ...)             -> {41 GiB, ""}
//
// Still errors: no leading number at all ("lots", "M"), a number out of
// range or too large, and for sizes a minus sign.
template <typename T>
struct Leading {
  T value;
  std::string ignored;
};
// An optional sign, then decimal digits or 0x and hex digits; the result
// must lie in [min, max].
absl::StatusOr<Leading<int64_t>> ParseLeadingInt(std::string_view text,
                                                 int64_t min, int64_t max);
// An optional '+', a number as ParseSize reads it (decimal, with at most
// one '.', or 0x-prefixed hex), optional whitespace, then an optional unit
// letter B, K, M, G or T (any case; the rest of the unit's name may follow:
// "KB", "KiB", "Kbytes", "Bytes"). Without a unit letter the number is in
// `default_unit`.
absl::StatusOr<Leading<uint64_t>> ParseLeadingSize(std::string_view text,
                                                   SizeUnit default_unit);

// A memory amount that is either absolute or relative to a whole: the
// syntax of GASNET_PHYSMEM_MAX, GASNET_MAX_SEGSIZE and kin. A value that
// parses as a number below 1.0 (a decimal such as "0.66" or a fraction such
// as "5/8") is a fraction of the whole; anything else is a size as
// ParseSize reads it. "0" is an absolute zero.
struct MemoryAmount {
  static MemoryAmount Absolute(uint64_t bytes) { return {false, bytes, 0.0}; }
  static MemoryAmount Fraction(double fraction) { return {true, 0, fraction}; }

  // The amount in bytes, given the size of the whole (physical memory,
  // say). Fractions round down.
  uint64_t Resolve(uint64_t whole_bytes) const;

  // The value as a user would write it: "5G"-style sizes in exact units, or
  // the fraction as a decimal.
  std::string ToString() const;

  bool is_fraction;
  uint64_t bytes;   // When !is_fraction.
  double fraction;  // When is_fraction: in [0, 1).

  friend bool operator==(const MemoryAmount&, const MemoryAmount&) = default;
};
absl::StatusOr<MemoryAmount> ParseMemoryAmount(std::string_view text,
                                               SizeUnit default_unit);

// A set of node (rank) numbers: "*" or empty for all, else comma-separated
// non-negative integers and inclusive ranges "lo-hi" with lo <= hi, such as
// "0,2-4,6". Also the format of Linux cpulist files.
class NodeList {
 public:
  // The list that contains every node.
  static NodeList All() { return NodeList(); }
  // A list of the given inclusive ranges (normalised: sorted, merged).
  static NodeList Of(std::vector<std::pair<int64_t, int64_t>> ranges);

  bool Contains(int64_t node) const;
  bool IsAll() const { return all_; }
  // Sorted, disjoint, non-adjacent inclusive ranges; empty when IsAll().
  const std::vector<std::pair<int64_t, int64_t>>& ranges() const {
    return ranges_;
  }
  // The members in increasing order, up to `limit` of them (a list such as
  // "0-4000000000" would not fit in memory).
  std::vector<int64_t> Members(size_t limit) const;
  // "*" or the canonical "0,2-4,6" form.
  std::string ToString() const;

  friend bool operator==(const NodeList&, const NodeList&) = default;

 private:
  NodeList() = default;
  bool all_ = true;
  std::vector<std::pair<int64_t, int64_t>> ranges_;
};
absl::StatusOr<NodeList> ParseNodeList(std::string_view text);

// One entry of an HCA/port filter: an HCA (device) name and the ports that
// may be used on it; no ports means "the first active port".
struct PortSpec {
  std::string hca;
  std::vector<int> ports;

  friend bool operator==(const PortSpec&, const PortSpec&) = default;
};
// An HCA/port filter such as GASNET_IBV_PORTS: '+'-separated entries, each
// an HCA name ([A-Za-z0-9_.-]+) and optionally ':' and a comma-separated
// list of port numbers (1-255), as in "mlx5_0+mlx5_1:1,2". Empty means no
// filter (an empty vector). Duplicates are kept: the filter's user decides.
absl::StatusOr<std::vector<PortSpec>> ParsePortFilter(std::string_view text);
// The canonical text of a filter ("mlx5_0+mlx5_1:1,2"; empty for none),
// which ParsePortFilter reads back as the same filter.
std::string PortFilterToString(const std::vector<PortSpec>& specs);

// The kind of hardware object a topology-aware family (NAME_TYPE) keys on.
enum class TopologyLevel {
  kNumaNode,  // "Node", "NUMANode", "NUMA"
  kSocket,    // "Socket", "Package"
  kCore,      // "Core"
  kPu,        // "PU" (a hardware thread)
  kL1Cache,   // "L1Cache"
  kL2Cache,   // "L2Cache"
  kL3Cache,   // "L3Cache"
};
absl::StatusOr<TopologyLevel> ParseTopologyLevel(std::string_view text);
std::string_view TopologyLevelName(TopologyLevel level);

}  // namespace gexrt::env

#endif  // GEX_BASE_ENV_PARSE_H_
