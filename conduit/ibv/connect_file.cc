#include "conduit/ibv/connect_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace gexrt::ibv {
namespace {

constexpr uint32_t kMinBase = 2;
constexpr uint32_t kMaxBase = 36;

// Debian's abseil has its own absl::string_view, which StrCat and StrSplit
// need (base/string_view.h has the same helper; this target does not depend
// on base).
constexpr absl::string_view ToAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// Reads all of `s` as an unsigned number in `base` (2..36; letters in either
// case). std::from_chars takes the base, which absl::SimpleAtoi does not.
std::optional<uint64_t> ParseNumber(absl::string_view s, uint32_t base) {
  if (s.empty()) return std::nullopt;
  uint64_t value = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] =
      std::from_chars(s.data(), end, value, static_cast<int>(base));
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::string ToBase(uint32_t n, uint32_t base) {
  char buf[40];  // 32 binary digits at most
  auto [ptr, ec] =
      std::to_chars(buf, buf + sizeof(buf), n, static_cast<int>(base));
  return std::string(buf, ptr);
}

// Builds the InvalidArgument of one line of one file.
class LineError {
 public:
  LineError(absl::string_view file, size_t line) : file_(file), line_(line) {}
  absl::Status operator()(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("connect file ", file_, " line ", line_, ": ", what));
  }

 private:
  absl::string_view file_;
  size_t line_;
};

// A node number on a node line: in `base`, below `ranks`.
absl::StatusOr<uint32_t> ParseRank(absl::string_view token, uint32_t base,
                                   uint32_t ranks, const LineError& error) {
  std::optional<uint64_t> n = ParseNumber(token, base);
  if (!n.has_value()) {
    return error(absl::StrCat("'", token, "' is not a number in base ", base));
  }
  if (*n >= ranks) {
    return error(absl::StrCat("node '", token, "' (", *n,
                              ") is not below the job size ", ranks));
  }
  return static_cast<uint32_t>(*n);
}

// The decimal value of a "size:" or "base:" line.
absl::StatusOr<uint64_t> ParseDecimal(absl::string_view key,
                                      absl::string_view value,
                                      const LineError& error) {
  std::optional<uint64_t> n = ParseNumber(value, 10);
  if (!n.has_value()) {
    return error(absl::StrCat("'", key, ":' needs one decimal number, not '",
                              value, "'"));
  }
  return *n;
}

}  // namespace

std::string ConnectFilePath(std::string_view name, uint32_t rank) {
  return absl::StrJoin(absl::StrSplit(ToAbsl(name), '%'), absl::StrCat(rank));
}

absl::StatusOr<std::vector<bool>> ParseConnectFile(std::string_view text,
                                                   std::string_view file,
                                                   uint32_t rank,
                                                   uint32_t ranks) {
  if (rank >= ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("connect file ", ToAbsl(file), ": rank ", rank,
                     " is not below the job size ", ranks));
  }
  const absl::string_view file_name = ToAbsl(file);
  std::vector<bool> peers(ranks, false);
  uint32_t base = 10;
  size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(ToAbsl(text), '\n')) {
    ++line_number;
    const LineError error(file_name, line_number);
    // Trailing blanks (and a '\r' from a DOS editor) mean nothing.
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    if (absl::ascii_isspace(static_cast<unsigned char>(line.front()))) {
      return error("a line may not start with whitespace");
    }
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) {
      return error(absl::StrCat("no ':' in '", line,
                                "' (expected 'node: peer peer ...')"));
    }
    absl::string_view key =
        absl::StripTrailingAsciiWhitespace(line.substr(0, colon));
    absl::string_view rest = absl::StripAsciiWhitespace(line.substr(colon + 1));

    // The keywords win over node numbers ("size" and "base" are also
    // numbers in base 36, but far beyond any job size).
    if (key == "size") {
      absl::StatusOr<uint64_t> size = ParseDecimal(key, rest, error);
      if (!size.ok()) return size.status();
      if (*size != ranks) {
        return error(absl::StrCat("'size: ", *size,
                                  "' says the file is from another job of ",
                                  *size, " ranks; this job has ", ranks));
      }
      continue;
    }
    if (key == "base") {
      absl::StatusOr<uint64_t> new_base = ParseDecimal(key, rest, error);
      if (!new_base.ok()) return new_base.status();
      if (*new_base < kMinBase || *new_base > kMaxBase) {
        return error(absl::StrCat("base ", *new_base, " is not in ", kMinBase,
                                  "..", kMaxBase));
      }
      base = static_cast<uint32_t>(*new_base);
      continue;
    }

    absl::StatusOr<uint32_t> node = ParseRank(key, base, ranks, error);
    if (!node.ok()) return node.status();
    for (absl::string_view token :
         absl::StrSplit(rest, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      uint32_t first;
      uint32_t last;
      std::vector<absl::string_view> ends = absl::StrSplit(token, '-');
      if (ends.size() == 1) {
        absl::StatusOr<uint32_t> peer = ParseRank(token, base, ranks, error);
        if (!peer.ok()) return peer.status();
        first = last = *peer;
      } else if (ends.size() == 2) {
        absl::StatusOr<uint32_t> lo = ParseRank(ends[0], base, ranks, error);
        if (!lo.ok()) return lo.status();
        absl::StatusOr<uint32_t> hi = ParseRank(ends[1], base, ranks, error);
        if (!hi.ok()) return hi.status();
        if (*lo > *hi) {
          return error(
              absl::StrCat("range '", token, "' ends before it starts"));
        }
        first = *lo;
        last = *hi;
      } else {
        return error(absl::StrCat("'", token, "' is not a number or a range"));
      }
      // Connections are bidirectional: this rank's half is the peers on its
      // own lines and the nodes of lines naming it. A rank never connects
      // to itself, so naming it is allowed and ignored.
      if (*node == rank) {
        for (uint64_t p = first; p <= last; ++p) peers[p] = true;
      } else if (first <= rank && rank <= last) {
        peers[*node] = true;
      }
    }
  }
  peers[rank] = false;
  return peers;
}

absl::StatusOr<std::vector<bool>> ReadConnectFile(std::string_view name,
                                                  uint32_t rank,
                                                  uint32_t ranks) {
  std::string path = ConnectFilePath(name, rank);
  auto fail = [&path](absl::string_view what) {
    int err = errno;
    return absl::Status(
        absl::ErrnoToStatusCode(err),
        absl::StrCat("GASNET_CONNECTFILE_IN: cannot ", what, " connect file ",
                     path, ": ", std::strerror(err)));
  };
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("open");
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status status = fail("read");
      close(fd);
      return status;
    }
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return ParseConnectFile(text, path, rank, ranks);
}

std::string FormatConnectFile(uint32_t rank, uint32_t ranks, uint32_t base,
                              const std::vector<uint32_t>& peers) {
  if (base < kMinBase || base > kMaxBase) base = kMaxBase;
  std::vector<uint32_t> sorted = peers;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  sorted.erase(std::remove(sorted.begin(), sorted.end(), rank), sorted.end());

  std::vector<std::string> tokens;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (j - i >= 2) {  // three or more in a row: a range is shorter
      tokens.push_back(
          absl::StrCat(ToBase(sorted[i], base), "-", ToBase(sorted[j], base)));
    } else {
      for (size_t k = i; k <= j; ++k) tokens.push_back(ToBase(sorted[k], base));
    }
    i = j + 1;
  }
  std::string text = absl::StrCat("size: ", ranks, "\nbase: ", base, "\n",
                                  ToBase(rank, base), ":");
  if (!tokens.empty()) absl::StrAppend(&text, " ", absl::StrJoin(tokens, " "));
  text += "\n";
  return text;
}

absl::Status WriteConnectFile(std::string_view name, uint32_t rank,
                              uint32_t ranks, uint32_t base,
                              const std::vector<uint32_t>& peers) {
  std::string path = ConnectFilePath(name, rank);
  auto fail = [&path](absl::StatusCode code, absl::string_view what) {
    return absl::Status(
        code, absl::StrCat("GASNET_CONNECTFILE_OUT: connect file ", path, ": ",
                           what));
  };
  if (base < kMinBase || base > kMaxBase) {
    return fail(absl::StatusCode::kInvalidArgument,
                absl::StrCat("base ", base, " is not in ", kMinBase, "..",
                             kMaxBase, " (GASNET_CONNECTFILE_BASE)"));
  }
  if (rank >= ranks) {
    return fail(
        absl::StatusCode::kInvalidArgument,
        absl::StrCat("rank ", rank, " is not below the job size ", ranks));
  }
  for (uint32_t p : peers) {
    if (p >= ranks) {
      return fail(
          absl::StatusCode::kInvalidArgument,
          absl::StrCat("peer ", p, " is not below the job size ", ranks));
    }
  }
  std::string text = FormatConnectFile(rank, ranks, base, peers);

  // Write a temporary file beside the target and rename it over the target,
  // so a reader sees the old file or the whole new one, never a part.
  std::string temp = absl::StrCat(path, ".tmp.XXXXXX");
  int fd = mkstemp(temp.data());
  if (fd < 0) {
    int err = errno;
    return fail(absl::ErrnoToStatusCode(err),
                absl::StrCat("cannot create ", temp, ": ", std::strerror(err)));
  }
  auto abandon = [&](absl::string_view call) {
    int err = errno;
    close(fd);
    unlink(temp.c_str());
    return fail(absl::ErrnoToStatusCode(err),
                absl::StrCat(call, " ", temp, ": ", std::strerror(err)));
  };
  // mkstemp makes the file 0600; the files are meant to be shared and
  // concatenated, so make them readable like any other output.
  if (fchmod(fd, 0644) != 0) return abandon("fchmod");
  absl::string_view left = text;
  while (!left.empty()) {
    ssize_t n = write(fd, left.data(), left.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return abandon("write");
    }
    left.remove_prefix(static_cast<size_t>(n));
  }
  if (fsync(fd) != 0) return abandon("fsync");
  if (close(fd) != 0) {
    int err = errno;
    unlink(temp.c_str());
    return fail(absl::ErrnoToStatusCode(err),
                absl::StrCat("close ", temp, ": ", std::strerror(err)));
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(temp.c_str());
    return fail(absl::ErrnoToStatusCode(err),
                absl::StrCat("rename ", temp, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace gexrt::ibv
