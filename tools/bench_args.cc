#include "tools/bench_args.h"

#include <charconv>
#include <system_error>

namespace gex_bench {
namespace {

// Sizes of 16 KiB and below get the full iteration count.
constexpr uint64_t kFullIterationsUpTo = 16 * 1024;

}  // namespace

bool ParseCount(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return false;
  *out = value;
  return true;
}

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

uint64_t ScaledIterations(uint64_t iterations, uint64_t size) {
  if (size <= kFullIterationsUpTo || iterations == 0) return iterations;
  const uint64_t divisor =
      (size + kFullIterationsUpTo - 1) / kFullIterationsUpTo;
  const uint64_t scaled = iterations / divisor;
  return scaled == 0 ? 1 : scaled;
}

bool ArgReader::Next() {
  if (++i_ >= argc_) return false;
  arg_ = argv_[i_];
  name_ = arg_;
  inline_value_.reset();
  if (arg_.starts_with("--")) {
    const size_t eq = arg_.find('=');
    if (eq != std::string_view::npos) {
      name_ = arg_.substr(0, eq);
      inline_value_ = arg_.substr(eq + 1);
    }
  }
  return true;
}

std::optional<std::string> ArgReader::Value(std::string_view* out) {
  if (inline_value_) {
    *out = *inline_value_;
  } else if (i_ + 1 < argc_) {
    *out = argv_[++i_];
  } else {
    return std::string(name_) + " needs a value";
  }
  return std::nullopt;
}

std::optional<std::string> ArgReader::NoValue() const {
  if (inline_value_) return std::string(name_) + " takes no value";
  return std::nullopt;
}

}  // namespace gex_bench
