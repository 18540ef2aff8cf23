#include "bootstrap/spawn/host_list.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/env/parse.h"
#include "base/status.h"
#include "base/string_view.h"

namespace gexrt::spawn {
namespace {

bool IsHostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == ':' || c == '@' || c == '[' || c == ']' || c == '-';
}

// "invalid host '<token>' (<why>)", with unprintable bytes escaped so that
// the message itself cannot be mangled by them.
std::string InvalidHostMessage(std::string_view token) {
  std::string_view why;
  if (token.empty()) {
    why = "it is empty";
  } else if (token[0] == '-') {
    why = "it starts with '-', which ssh would read as an option";
  } else {
    why = "host names may use only letters, digits and . _ : @ [ ] -";
  }
  return absl::StrFormat("invalid host '%s' (%s)",
                         absl::CHexEscape(ToAbsl(token)), why);
}

bool IsSpaceChar(char c) {
  return absl::ascii_isspace(static_cast<unsigned char>(c));
}

// The whole file at `path`, or the errno status of the failed call.
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     std::string_view variable) {
  const auto what = [&] {
    return absl::StrFormat("%s: cannot read '%s'", variable, path);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, what());
  std::string contents;
  char buffer[16 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return ErrnoToStatus(err, what());
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return contents;
}

absl::StatusOr<bool> KeepDuplicates(
    const std::function<const char*(const char*)>& getenv) {
  const char* value = getenv("GASNET_SSH_KEEPDUP");
  if (value == nullptr || StripWhitespace(value).empty()) return false;
  absl::StatusOr<bool> keep = env::ParseBool(value);
  if (!keep.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GASNET_SSH_KEEPDUP='%s': %s", value, ToStd(keep.status().message())));
  }
  return *keep;
}

std::vector<std::string> WithoutDuplicates(std::vector<std::string> hosts) {
  absl::flat_hash_set<std::string> seen;
  std::vector<std::string> unique;
  unique.reserve(hosts.size());
  for (std::string& host : hosts) {
    if (seen.insert(host).second) unique.push_back(std::move(host));
  }
  return unique;
}

}  // namespace

bool IsValidHostToken(std::string_view token) {
  return !token.empty() && token[0] != '-' &&
         std::all_of(token.begin(), token.end(), IsHostChar);
}

absl::StatusOr<std::vector<std::string>> ParseNodeFile(
    std::string_view contents, std::string_view path_for_errors) {
  std::vector<std::string> hosts;
  int line_number = 0;
  for (std::string_view line : SplitOn(contents, '\n')) {
    ++line_number;
    line = line.substr(0, line.find('#'));
    line = StripWhitespace(line);
    if (line.empty()) continue;
    const std::string_view host = line.substr(
        0, std::find_if(line.begin(), line.end(), IsSpaceChar) - line.begin());
    if (!IsValidHostToken(host)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: %s", path_for_errors, line_number, InvalidHostMessage(host)));
    }
    hosts.emplace_back(host);
  }
  return hosts;
}

absl::StatusOr<std::vector<std::string>> ParseServerList(
    std::string_view text, std::string_view variable_for_errors) {
  std::vector<std::string> hosts;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ',' || IsSpaceChar(text[i])) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < text.size() && text[i] != ',' && !IsSpaceChar(text[i])) ++i;
    const std::string_view host = text.substr(start, i - start);
    if (!IsValidHostToken(host)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %s", variable_for_errors, InvalidHostMessage(host)));
    }
    hosts.emplace_back(host);
  }
  return hosts;
}

absl::StatusOr<HostList> HostListFromEnvironment(
    const std::function<const char*(const char*)>& getenv) {
  struct Source {
    const char* variable;
    bool is_node_file;  // Else a server list.
  };
  // GASNet's order: its own variables first, the batch systems' after, so
  // a user can override what the batch system says.
  static constexpr Source kSources[] = {
      {"GASNET_SSH_NODEFILE", true}, {"GASNET_NODEFILE", true},
      {"GASNET_SSH_SERVERS", false}, {"PBS_NODEFILE", true},
      {"PE_HOSTFILE", true},         {"LSB_HOSTS", false},
  };
  for (const Source& source : kSources) {
    const char* value = getenv(source.variable);
    if (value == nullptr || value[0] == '\0') continue;

    absl::StatusOr<bool> keep_duplicates = KeepDuplicates(getenv);
    if (!keep_duplicates.ok()) return keep_duplicates.status();

    HostList list;
    absl::StatusOr<std::vector<std::string>> hosts;
    if (source.is_node_file) {
      list.source = absl::StrFormat("%s (%s)", source.variable, value);
      absl::StatusOr<std::string> contents = ReadFile(value, source.variable);
      if (!contents.ok()) return contents.status();
      hosts = ParseNodeFile(*contents, value);
      if (!hosts.ok()) {
        // The file's own "path:line:" plus the variable that named it.
        return absl::InvalidArgumentError(
            absl::StrCat(source.variable, ": ", hosts.status().message()));
      }
    } else {
      list.source = source.variable;
      hosts = ParseServerList(value, source.variable);
      if (!hosts.ok()) return hosts.status();
    }
    if (hosts->empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s lists no hosts", list.source));
    }
    list.hosts = *keep_duplicates ? *std::move(hosts)
                                  : WithoutDuplicates(*std::move(hosts));
    return list;
  }
  return absl::NotFoundError(
      "no hosts for the ssh spawner: set GASNET_SSH_SERVERS to a list of "
      "hosts, or GASNET_SSH_NODEFILE to a file naming one host per line "
      "(also read, in this order after those: GASNET_NODEFILE, PBS_NODEFILE, "
      "PE_HOSTFILE, LSB_HOSTS)");
}

absl::StatusOr<std::vector<HostRanks>> LayOutRanks(int64_t ranks, int64_t nodes,
                                                   const HostList& hosts) {
  if (ranks < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the number of processes must be at least 1, got %d", ranks));
  }
  if (nodes < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("-N must be at least 1, got %d", nodes));
  }
  const int64_t host_count = static_cast<int64_t>(hosts.hosts.size());
  if (host_count == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s lists no hosts", hosts.source));
  }
  if (nodes == 0) nodes = std::min(ranks, host_count);
  if (nodes > ranks) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "-N %d is more than -n %d: every node needs at least one process",
        nodes, ranks));
  }
  if (nodes > host_count) {
    return absl::InvalidArgumentError(
        absl::StrFormat("-N %d needs %d hosts but %s lists %d", nodes, nodes,
                        hosts.source, host_count));
  }
  const int64_t per_node = ranks / nodes;
  const int64_t extra = ranks % nodes;
  std::vector<HostRanks> layout;
  layout.reserve(static_cast<size_t>(nodes));
  int64_t next_rank = 0;
  for (int64_t i = 0; i < nodes; ++i) {
    const int64_t count = per_node + (i < extra ? 1 : 0);
    layout.push_back({hosts.hosts[static_cast<size_t>(i)], next_rank, count});
    next_rank += count;
  }
  return layout;
}

}  // namespace gexrt::spawn
