#include "base/env/parse.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <span>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/string_view.h"

namespace gexrt::env {
namespace {

// The accepted forms, quoted in every error so the user sees how to fix it.
constexpr std::string_view kBoolForms =
    "a boolean: 1/0, yes/no, y/n, true/false or on/off (any case)";
constexpr std::string_view kIntForms =
    "an integer: decimal digits or 0x-prefixed hex, optionally signed";
constexpr std::string_view kDecimalForms =
    "a number: an integer, a decimal such as 0.66 or a fraction such as 5/8";
constexpr std::string_view kSizeForms =
    "a size: a non-negative number with an optional unit suffix "
    "B, K, M, G or T (KB/KiB... accepted, any case)";
constexpr std::string_view kMemoryForms =
    "a memory amount: a fraction below 1 of the whole (such as 5/8 or "
    "0.66), or a size with an optional suffix B, K, M, G or T";
constexpr std::string_view kNodeListForms =
    "a node list: '*', empty, or comma-separated non-negative integers and "
    "ranges lo-hi (lo <= hi), such as 0,2-4,6";
constexpr std::string_view kPortForms =
    "an HCA/port filter: '+'-separated entries HCA[:PORT[,PORT...]], such "
    "as mlx5_0+mlx5_1:1,2 (HCA names use letters, digits, '_', '.', '-'; "
    "ports are 1-255)";
constexpr std::string_view kTopologyForms =
    "a topology level: Node (or NUMANode, NUMA), Socket (or Package), Core, "
    "PU, L1Cache, L2Cache or L3Cache (any case)";

absl::Status Invalid(std::string_view problem, std::string_view forms) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s; expected %s", problem, forms));
}

// Parses all of `text` as an unsigned integer in `base`. No sign, no prefix.
bool ParseUnsigned(std::string_view text, int base, uint64_t* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out, base);
  return ec == std::errc() && ptr == end;
}

bool IsHexPrefixed(std::string_view text) {
  return text.size() > 2 && text[0] == '0' &&
         (text[1] == 'x' || text[1] == 'X');
}

// Parses all of `text` as a finite double. Accepts one leading '+' or '-'.
bool ParseFiniteDouble(std::string_view text, double* out) {
  // std::from_chars takes '-' but not '+'.
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text[0] == '+') return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && std::isfinite(*out);
}

// Splits "12.5 MiB" into the number and the (lower-cased) suffix.
void SplitNumberAndSuffix(std::string_view text, std::string_view* number,
                          std::string* suffix) {
  size_t split = text.size();
  if (IsHexPrefixed(text)) {
    split = 2;
    while (split < text.size() && absl::ascii_isxdigit(text[split])) ++split;
  } else {
    split = 0;
    while (split < text.size() &&
           (absl::ascii_isdigit(text[split]) || text[split] == '.' ||
            text[split] == '-' || text[split] == '+')) {
      ++split;
    }
  }
  *number = StripWhitespace(text.substr(0, split));
  *suffix = ToLower(StripWhitespace(text.substr(split)));
}

// The multiplier a size suffix stands for, or 0 for an unknown suffix.
uint64_t SuffixMultiplier(std::string_view suffix, SizeUnit default_unit) {
  if (suffix.empty()) return static_cast<uint64_t>(default_unit);
  if (suffix == "b") return 1;
  static constexpr std::pair<char, SizeUnit> kUnits[] = {{'k', SizeUnit::kKiB},
                                                         {'m', SizeUnit::kMiB},
                                                         {'g', SizeUnit::kGiB},
                                                         {'t', SizeUnit::kTiB}};
  for (const auto& [letter, unit] : kUnits) {
    if (suffix[0] != letter) continue;
    std::string_view rest = suffix.substr(1);
    if (rest.empty() || rest == "b" || rest == "ib") {
      return static_cast<uint64_t>(unit);
    }
  }
  return 0;
}

absl::StatusOr<int64_t> ParseNodeNumber(std::string_view text,
                                        std::string_view whole) {
  uint64_t value = 0;
  if (!ParseUnsigned(text, 10, &value) ||
      value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Invalid(absl::StrFormat("'%s' in \"%s\" is not a non-negative "
                                   "decimal integer",
                                   text, whole),
                   kNodeListForms);
  }
  return static_cast<int64_t>(value);
}

}  // namespace

absl::StatusOr<bool> ParseBool(std::string_view text) {
  const std::string word = ToLower(StripWhitespace(text));
  for (std::string_view yes : {"1", "yes", "y", "true", "on"}) {
    if (word == yes) return true;
  }
  for (std::string_view no : {"0", "no", "n", "false", "off"}) {
    if (word == no) return false;
  }
  return Invalid(word.empty() ? "the value is empty" : "not a boolean",
                 kBoolForms);
}

bool FlagEnabled(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return false;
  absl::StatusOr<bool> parsed = ParseBool(value);
  return parsed.ok() && *parsed;
}

absl::StatusOr<int64_t> ParseInt(std::string_view text, int64_t min,
                                 int64_t max) {
  std::string_view digits = StripWhitespace(text);
  if (digits.empty()) return Invalid("the value is empty", kIntForms);
  bool negative = false;
  if (digits[0] == '-' || digits[0] == '+') {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  const int base = IsHexPrefixed(digits) ? 16 : 10;
  if (base == 16) digits.remove_prefix(2);
  uint64_t magnitude = 0;
  if (!ParseUnsigned(digits, base, &magnitude)) {
    // Say "too large" rather than "not an integer" when it is all digits.
    const bool all_digits =
        !digits.empty() &&
        std::all_of(digits.begin(), digits.end(), [base](char c) {
          return base == 16 ? absl::ascii_isxdigit(c) : absl::ascii_isdigit(c);
        });
    return Invalid(
        all_digits ? "the integer is too large to represent" : "not an integer",
        kIntForms);
  }
  // Compare magnitudes in uint64 so that INT64_MIN is representable.
  constexpr uint64_t kMaxPositive = std::numeric_limits<int64_t>::max();
  if (magnitude > kMaxPositive + (negative ? 1 : 0)) {
    return Invalid("the integer is too large to represent", kIntForms);
  }
  const int64_t value = negative ? static_cast<int64_t>(0 - magnitude)
                                 : static_cast<int64_t>(magnitude);
  if (value < min || value > max) {
    return absl::OutOfRangeError(absl::StrFormat(
        "%d is outside the allowed range [%d, %d]", value, min, max));
  }
  return value;
}

absl::StatusOr<double> ParseDecimal(std::string_view text) {
  const std::string_view trimmed = StripWhitespace(text);
  if (trimmed.empty()) return Invalid("the value is empty", kDecimalForms);
  const size_t slash = trimmed.find('/');
  if (slash == std::string_view::npos) {
    double value = 0;
    if (!ParseFiniteDouble(trimmed, &value)) {
      return Invalid("not a number", kDecimalForms);
    }
    return value;
  }
  const std::string_view num = StripWhitespace(trimmed.substr(0, slash));
  const std::string_view den = StripWhitespace(trimmed.substr(slash + 1));
  uint64_t n = 0;
  uint64_t d = 0;
  if (!ParseUnsigned(num, 10, &n) || !ParseUnsigned(den, 10, &d)) {
    return Invalid("a fraction needs two non-negative integers, as in 5/8",
                   kDecimalForms);
  }
  if (d == 0) return Invalid("the fraction divides by zero", kDecimalForms);
  return static_cast<double>(n) / static_cast<double>(d);
}

std::string_view SizeUnitSuffix(SizeUnit unit) {
  switch (unit) {
    case SizeUnit::kBytes:
      return "";
    case SizeUnit::kKiB:
      return "K";
    case SizeUnit::kMiB:
      return "M";
    case SizeUnit::kGiB:
      return "G";
    case SizeUnit::kTiB:
      return "T";
  }
  return "?";
}

absl::StatusOr<uint64_t> ParseSize(std::string_view text,
                                   SizeUnit default_unit) {
  const std::string_view trimmed = StripWhitespace(text);
  if (trimmed.empty()) return Invalid("the value is empty", kSizeForms);
  if (trimmed[0] == '-')
    return Invalid("a size cannot be negative", kSizeForms);
  std::string_view number;
  std::string suffix;
  SplitNumberAndSuffix(trimmed, &number, &suffix);
  if (number.empty()) {
    return Invalid(
        absl::StrFormat("'%s' does not start with a number", trimmed),
        kSizeForms);
  }
  const uint64_t multiplier = SuffixMultiplier(suffix, default_unit);
  if (multiplier == 0) {
    return Invalid(absl::StrFormat("unknown unit suffix '%s'", suffix),
                   kSizeForms);
  }

  uint64_t whole = 0;
  if (IsHexPrefixed(number) ? ParseUnsigned(number.substr(2), 16, &whole)
                            : ParseUnsigned(number, 10, &whole)) {
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(whole, multiplier, &bytes)) {
      return Invalid("the size is too large (over 2^64 bytes)", kSizeForms);
    }
    return bytes;
  }
  // A decimal such as "1.5G". Only digits and one '.'; no exponent or sign.
  double value = 0;
  const bool plain_decimal =
      std::count(number.begin(), number.end(), '.') == 1 &&
      std::all_of(number.begin(), number.end(),
                  [](char c) { return absl::ascii_isdigit(c) || c == '.'; }) &&
      number != "." && ParseFiniteDouble(number, &value);
  if (!plain_decimal) {
    return Invalid(absl::StrFormat("'%s' is not a number", number), kSizeForms);
  }
  const long double bytes =
      static_cast<long double>(value) * static_cast<long double>(multiplier);
  if (bytes >= 18446744073709551616.0L) {
    return Invalid("the size is too large (over 2^64 bytes)", kSizeForms);
  }
  return static_cast<uint64_t>(bytes);
}

absl::StatusOr<Leading<int64_t>> ParseLeadingInt(std::string_view text,
                                                 int64_t min, int64_t max) {
  const std::string_view s = StripWhitespace(text);
  if (s.empty()) return Invalid("the value is empty", kIntForms);
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  const bool hex = s.size() > i + 2 && s[i] == '0' &&
                   (s[i + 1] == 'x' || s[i + 1] == 'X') &&
                   absl::ascii_isxdigit(s[i + 2]);
  if (hex) i += 2;
  const size_t first_digit = i;
  while (i < s.size() &&
         (hex ? absl::ascii_isxdigit(s[i]) : absl::ascii_isdigit(s[i]))) {
    ++i;
  }
  if (i == first_digit) {
    return Invalid(absl::StrFormat("'%s' does not start with an integer", s),
                   kIntForms);
  }
  // The exact parser on the number alone: the same range and overflow
  // checks, and the same messages.
  absl::StatusOr<int64_t> value = ParseInt(s.substr(0, i), min, max);
  if (!value.ok()) return value.status();
  return Leading<int64_t>{*value, std::string(StripWhitespace(s.substr(i)))};
}

absl::StatusOr<Leading<uint64_t>> ParseLeadingSize(std::string_view text,
                                                   SizeUnit default_unit) {
  const std::string_view s = StripWhitespace(text);
  if (s.empty()) return Invalid("the value is empty", kSizeForms);
  if (s[0] == '-') return Invalid("a size cannot be negative", kSizeForms);
  size_t i = s[0] == '+' ? 1 : 0;
  const size_t start = i;
  if (s.size() > i + 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') &&
      absl::ascii_isxdigit(s[i + 2])) {
    i += 2;
    while (i < s.size() && absl::ascii_isxdigit(s[i])) ++i;
  } else {
    size_t digits = 0;
    while (i < s.size() && absl::ascii_isdigit(s[i])) ++i, ++digits;
    // One '.' and the digits after it ("1.5", ".5", and "1." as the exact
    // form reads it).
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && absl::ascii_isdigit(s[i])) ++i, ++digits;
    }
    if (digits == 0) i = start;
  }
  if (i == start) {
    return Invalid(absl::StrFormat("'%s' does not start with a number", s),
                   kSizeForms);
  }
  const std::string_view number = s.substr(start, i - start);
  std::string_view rest = StripWhitespace(s.substr(i));
  std::string unit;
  if (!rest.empty() &&
      std::string_view("bkmgtBKMGT").find(rest[0]) != std::string_view::npos) {
    unit.assign(1, rest[0]);
    rest.remove_prefix(1);
    // The rest of the unit's name: "KB", "KiB", "Kbytes", "Bytes".
    static constexpr std::string_view kAfterLetter[] = {"ibytes", "ibyte", "ib",
                                                        "bytes",  "byte",  "b"};
    static constexpr std::string_view kAfterB[] = {"ytes", "yte"};
    const std::string lower = ToLower(rest);
    const bool bytes_letter = unit == "b" || unit == "B";
    for (std::string_view tail :
         bytes_letter ? std::span<const std::string_view>(kAfterB)
                      : std::span<const std::string_view>(kAfterLetter)) {
      if (std::string_view(lower).starts_with(tail)) {
        rest = StripWhitespace(rest.substr(tail.size()));
        break;
      }
    }
  }
  // The exact parser on the number and its unit: the same arithmetic,
  // overflow checks and messages.
  absl::StatusOr<uint64_t> bytes =
      ParseSize(absl::StrCat(ToAbsl(number), unit), default_unit);
  if (!bytes.ok()) return bytes.status();
  return Leading<uint64_t>{*bytes, std::string(rest)};
}

uint64_t MemoryAmount::Resolve(uint64_t whole_bytes) const {
  if (!is_fraction) return bytes;
  return static_cast<uint64_t>(static_cast<long double>(whole_bytes) *
                               static_cast<long double>(fraction));
}

std::string MemoryAmount::ToString() const {
  if (is_fraction) return absl::StrFormat("%g", fraction);
  // The largest unit that divides the amount exactly, for readability.
  for (SizeUnit unit :
       {SizeUnit::kTiB, SizeUnit::kGiB, SizeUnit::kMiB, SizeUnit::kKiB}) {
    const uint64_t m = static_cast<uint64_t>(unit);
    if (bytes != 0 && bytes % m == 0) {
      return absl::StrFormat("%d%s", bytes / m, SizeUnitSuffix(unit));
    }
  }
  return absl::StrCat(bytes, "B");
}

absl::StatusOr<MemoryAmount> ParseMemoryAmount(std::string_view text,
                                               SizeUnit default_unit) {
  const std::string_view trimmed = StripWhitespace(text);
  if (trimmed.empty()) return Invalid("the value is empty", kMemoryForms);
  if (trimmed[0] == '-') {
    return Invalid("a memory amount cannot be negative", kMemoryForms);
  }
  const bool relative_syntax = (trimmed.find('/') != std::string_view::npos) ||
                               (trimmed.find('.') != std::string_view::npos);
  const bool has_suffix =
      std::any_of(trimmed.begin(), trimmed.end(),
                  [](char c) { return absl::ascii_isalpha(c); });
  if (relative_syntax && !has_suffix) {
    absl::StatusOr<double> value = ParseDecimal(trimmed);
    if (!value.ok()) {
      return Invalid(
          absl::StrFormat("'%s' is neither a fraction nor a size", trimmed),
          kMemoryForms);
    }
    if (*value < 1.0) return MemoryAmount::Fraction(*value);
    if ((trimmed.find('/') != std::string_view::npos)) {
      return Invalid(
          "a fraction must be below 1 (use a size for absolute "
          "amounts)",
          kMemoryForms);
    }
    // A decimal of 1 or more ("1.5") is an absolute size in default units.
  }
  absl::StatusOr<uint64_t> bytes = ParseSize(trimmed, default_unit);
  if (!bytes.ok()) {
    return Invalid(
        absl::StrFormat("'%s' is neither a fraction nor a size", trimmed),
        kMemoryForms);
  }
  return MemoryAmount::Absolute(*bytes);
}

NodeList NodeList::Of(std::vector<std::pair<int64_t, int64_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  NodeList list;
  list.all_ = false;
  for (const auto& [lo, hi] : ranges) {
    // Sorted by lower end, so a range overlaps or touches only the last one
    // kept. (The INT64_MAX test keeps "+ 1" from overflowing.)
    if (!list.ranges_.empty()) {
      int64_t& last_hi = list.ranges_.back().second;
      if (last_hi == std::numeric_limits<int64_t>::max() || lo <= last_hi + 1) {
        last_hi = std::max(last_hi, hi);
        continue;
      }
    }
    list.ranges_.emplace_back(lo, hi);
  }
  return list;
}

bool NodeList::Contains(int64_t node) const {
  if (all_) return node >= 0;
  // First range whose upper end is >= node.
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), node,
                             [](const std::pair<int64_t, int64_t>& r,
                                int64_t n) { return r.second < n; });
  return it != ranges_.end() && it->first <= node;
}

std::vector<int64_t> NodeList::Members(size_t limit) const {
  std::vector<int64_t> out;
  for (const auto& [lo, hi] : ranges_) {
    for (int64_t n = lo; out.size() < limit; ++n) {
      out.push_back(n);
      if (n == hi) break;
    }
  }
  return out;
}

std::string NodeList::ToString() const {
  if (all_) return "*";
  return absl::StrJoin(ranges_, ",", [](std::string* out, const auto& r) {
    if (r.first == r.second) {
      absl::StrAppend(out, r.first);
    } else {
      absl::StrAppend(out, r.first, "-", r.second);
    }
  });
}

absl::StatusOr<NodeList> ParseNodeList(std::string_view text) {
  const std::string_view trimmed = StripWhitespace(text);
  if (trimmed.empty() || trimmed == "*") return NodeList::All();
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (std::string_view item : SplitOn(trimmed, ',')) {
    item = StripWhitespace(item);
    if (item.empty()) {
      return Invalid(absl::StrFormat("\"%s\" has an empty element", trimmed),
                     kNodeListForms);
    }
    if (item == "*") {
      return Invalid("'*' must stand alone", kNodeListForms);
    }
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      absl::StatusOr<int64_t> node = ParseNodeNumber(item, trimmed);
      if (!node.ok()) return node.status();
      ranges.emplace_back(*node, *node);
      continue;
    }
    absl::StatusOr<int64_t> lo =
        ParseNodeNumber(StripWhitespace(item.substr(0, dash)), trimmed);
    if (!lo.ok()) return lo.status();
    absl::StatusOr<int64_t> hi =
        ParseNodeNumber(StripWhitespace(item.substr(dash + 1)), trimmed);
    if (!hi.ok()) return hi.status();
    if (*lo > *hi) {
      return Invalid(absl::StrFormat("the range %d-%d is reversed", *lo, *hi),
                     kNodeListForms);
    }
    ranges.emplace_back(*lo, *hi);
  }
  return NodeList::Of(std::move(ranges));
}

absl::StatusOr<std::vector<PortSpec>> ParsePortFilter(std::string_view text) {
  const std::string_view trimmed = StripWhitespace(text);
  std::vector<PortSpec> specs;
  if (trimmed.empty()) return specs;
  for (std::string_view entry : SplitOn(trimmed, '+')) {
    entry = StripWhitespace(entry);
    if (entry.empty()) {
      return Invalid(absl::StrFormat("\"%s\" has an empty entry (a leading, "
                                     "trailing or doubled '+')",
                                     trimmed),
                     kPortForms);
    }
    std::vector<std::string_view> parts = SplitOn(entry, ':');
    if (parts.size() > 2) {
      return Invalid(absl::StrFormat("entry '%s' has more than one ':'", entry),
                     kPortForms);
    }
    PortSpec spec;
    spec.hca = std::string(parts[0]);
    const bool name_ok =
        !spec.hca.empty() &&
        std::all_of(spec.hca.begin(), spec.hca.end(), [](char c) {
          return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
        });
    if (!name_ok) {
      return Invalid(absl::StrFormat("entry '%s' has an invalid HCA name '%s'",
                                     entry, spec.hca),
                     kPortForms);
    }
    if (parts.size() == 2) {
      if (parts[1].empty()) {
        return Invalid(
            absl::StrFormat("entry '%s' has ':' but no ports after it", entry),
            kPortForms);
      }
      for (std::string_view port : SplitOn(parts[1], ',')) {
        uint64_t number = 0;
        if (!ParseUnsigned(port, 10, &number) || number < 1 || number > 255) {
          return Invalid(absl::StrFormat("entry '%s' has an invalid port '%s'",
                                         entry, port),
                         kPortForms);
        }
        spec.ports.push_back(static_cast<int>(number));
      }
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

std::string PortFilterToString(const std::vector<PortSpec>& specs) {
  return absl::StrJoin(specs, "+", [](std::string* out, const PortSpec& spec) {
    out->append(spec.hca);
    if (!spec.ports.empty()) {
      absl::StrAppend(out, ":", absl::StrJoin(spec.ports, ","));
    }
  });
}

absl::StatusOr<TopologyLevel> ParseTopologyLevel(std::string_view text) {
  const std::string word = ToLower(StripWhitespace(text));
  static constexpr std::pair<std::string_view, TopologyLevel> kNames[] = {
      {"node", TopologyLevel::kNumaNode},
      {"numanode", TopologyLevel::kNumaNode},
      {"numa", TopologyLevel::kNumaNode},
      {"socket", TopologyLevel::kSocket},
      {"package", TopologyLevel::kSocket},
      {"core", TopologyLevel::kCore},
      {"pu", TopologyLevel::kPu},
      {"l1cache", TopologyLevel::kL1Cache},
      {"l2cache", TopologyLevel::kL2Cache},
      {"l3cache", TopologyLevel::kL3Cache},
  };
  for (const auto& [name, level] : kNames) {
    if (word == name) return level;
  }
  return Invalid("not a topology level", kTopologyForms);
}

std::string_view TopologyLevelName(TopologyLevel level) {
  switch (level) {
    case TopologyLevel::kNumaNode:
      return "Node";
    case TopologyLevel::kSocket:
      return "Socket";
    case TopologyLevel::kCore:
      return "Core";
    case TopologyLevel::kPu:
      return "PU";
    case TopologyLevel::kL1Cache:
      return "L1Cache";
    case TopologyLevel::kL2Cache:
      return "L2Cache";
    case TopologyLevel::kL3Cache:
      return "L3Cache";
  }
  return "?";
}

}  // namespace gexrt::env
