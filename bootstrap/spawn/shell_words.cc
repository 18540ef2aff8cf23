#include "bootstrap/spawn/shell_words.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"

namespace gexrt::spawn {
namespace {

bool IsSeparator(char c) { return c == ' ' || c == '\t' || c == '\n'; }

bool IsBareChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '/' ||
         c == ':' || c == '=' || c == '@' || c == '%' || c == '+' || c == ',' ||
         c == '-';
}

// Whether sh, seeing `word` bare where a command name may stand, would
// take it for something else: an assignment (NAME=...) or a reserved word
// (POSIX's, plus those bash and ksh add).
bool IsSpecialInCommandPosition(std::string_view word) {
  const size_t equals = word.find('=');
  if (equals != std::string_view::npos && equals > 0) {
    const std::string_view name = word.substr(0, equals);
    const bool is_name = !(name[0] >= '0' && name[0] <= '9') &&
                         std::all_of(name.begin(), name.end(), [](char c) {
                           return (c >= 'a' && c <= 'z') ||
                                  (c >= 'A' && c <= 'Z') ||
                                  (c >= '0' && c <= '9') || c == '_';
                         });
    if (is_name) return true;
  }
  static constexpr std::string_view kReserved[] = {
      "case",  "do",   "done",   "elif",     "else",  "esac",
      "fi",    "for",  "if",     "in",       "then",  "until",
      "while", "time", "select", "function", "coproc"};
  return std::find(std::begin(kReserved), std::end(kReserved), word) !=
         std::end(kReserved);
}

std::string SingleQuote(std::string_view word) {
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      // Close the quote, add an escaped quote, reopen.
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SplitShellWords(
    std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  // A word exists once any part of it has been seen, even an empty quoted
  // one: "" is a word, while a lone line continuation is not.
  bool in_word = false;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (IsSeparator(c)) {
      if (in_word) {
        words.push_back(std::move(word));
        word.clear();
        in_word = false;
      }
      ++i;
    } else if (c == '\\') {
      if (i + 1 == text.size()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "trailing backslash at offset %d escapes nothing", i));
      }
      if (text[i + 1] != '\n') {
        word += text[i + 1];
        in_word = true;
      }
      i += 2;
    } else if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "unterminated single quote: the ' at offset %d is never closed",
            i));
      }
      word.append(text.substr(i + 1, close - i - 1));
      in_word = true;
      i = close + 1;
    } else if (c == '"') {
      const size_t open = i++;
      for (;;) {
        if (i >= text.size()) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "unterminated double quote: the \" at offset %d is never "
              "closed",
              open));
        }
        const char d = text[i];
        if (d == '"') {
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < text.size()) {
          const char next = text[i + 1];
          if (next == '"' || next == '\\' || next == '$' || next == '`') {
            word += next;
            i += 2;
            continue;
          }
          if (next == '\n') {
            i += 2;
            continue;
          }
        }
        // Any other backslash stands for itself inside double quotes.
        word += d;
        ++i;
      }
      in_word = true;
    } else {
      word += c;
      in_word = true;
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string ShellQuote(std::string_view word) {
  if (!word.empty() && std::all_of(word.begin(), word.end(), IsBareChar)) {
    return std::string(word);
  }
  return SingleQuote(word);
}

std::string ShellJoin(absl::Span<const std::string> words) {
  std::string joined;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) joined += ' ';
    if (i == 0 && IsSpecialInCommandPosition(words[i])) {
      joined += SingleQuote(words[i]);
    } else {
      joined += ShellQuote(words[i]);
    }
  }
  return joined;
}

}  // namespace gexrt::spawn
