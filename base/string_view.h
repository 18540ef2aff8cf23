// std::string_view at the abseil boundary.
//
// Debian's abseil is built with ABSL_OPTION_USE_STD_STRING_VIEW 0, so
// absl::string_view is its own type and absl::StrCat, StrSplit, StrJoin and
// friends do not accept std::string_view. Our interfaces use
// std::string_view (C++20); these helpers convert without copying.
#ifndef GEX_BASE_STRING_VIEW_H_
#define GEX_BASE_STRING_VIEW_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace gexrt {

constexpr absl::string_view ToAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

constexpr std::string_view ToStd(absl::string_view s) {
  return std::string_view(s.data(), s.size());
}

// `s` without leading and trailing ASCII whitespace.
inline std::string_view StripWhitespace(std::string_view s) {
  return ToStd(absl::StripAsciiWhitespace(ToAbsl(s)));
}

// `s` split at every `separator`; pieces may be empty ("a,,b" has three).
inline std::vector<std::string_view> SplitOn(std::string_view s,
                                             char separator) {
  std::vector<std::string_view> pieces;
  for (absl::string_view piece : absl::StrSplit(ToAbsl(s), separator)) {
    pieces.push_back(ToStd(piece));
  }
  return pieces;
}

// `s` with ASCII letters lower-cased.
inline std::string ToLower(std::string_view s) {
  return absl::AsciiStrToLower(ToAbsl(s));
}

}  // namespace gexrt

#endif  // GEX_BASE_STRING_VIEW_H_
