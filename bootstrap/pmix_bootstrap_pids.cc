#include "bootstrap/pmix_bootstrap_pids.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/host_id.h"

namespace gexrt {
namespace {

// The whole of a small file, or nullopt when it cannot be read.
std::optional<std::string> ReadSmallFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[512];
  ssize_t got;
  while ((got = read(fd, buf, sizeof buf)) > 0) text.append(buf, got);
  close(fd);
  if (got < 0) return std::nullopt;
  return text;
}

}  // namespace

std::string FormatRankRecord(const RankRecord& r) {
  return absl::StrFormat("%016x %d %d\n", r.host_id, r.pid, r.start_time);
}

std::optional<RankRecord> ParseRankRecord(uint32_t rank,
                                          std::string_view text) {
  std::vector<absl::string_view> words = absl::StrSplit(
      absl::string_view(text.data(), text.size()), ' ', absl::SkipEmpty());
  if (words.size() != 3 || text.empty() || text.back() != '\n') {
    return std::nullopt;
  }
  words[2].remove_suffix(1);
  RankRecord r;
  r.rank = rank;
  int64_t pid = 0;
  if (!absl::SimpleHexAtoi(words[0], &r.host_id) ||
      !absl::SimpleAtoi(words[1], &pid) || pid <= 0 || pid > INT32_MAX ||
      !absl::SimpleAtoi(words[2], &r.start_time)) {
    return std::nullopt;
  }
  r.pid = static_cast<pid_t>(pid);
  return r;
}

std::optional<uint64_t> LiveProcessStartTime(pid_t pid) {
  std::optional<std::string> stat =
      ReadSmallFile(absl::StrFormat("/proc/%d/stat", pid));
  if (!stat.has_value()) return std::nullopt;
  // The command name may hold spaces and parentheses: fields are counted
  // from the last ')'. After it: state (field 3), ... starttime (22).
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(*stat).substr(close + 1), ' ', absl::SkipEmpty());
  if (fields.size() < 20) return std::nullopt;
  if (fields[0] == "Z" || fields[0] == "X" || fields[0] == "x") {
    return std::nullopt;
  }
  uint64_t start = 0;
  if (!absl::SimpleAtoi(fields[19], &start)) return std::nullopt;
  return start;
}

absl::Status WriteOwnRankRecord(const std::string& dir, uint32_t rank) {
  RankRecord r;
  r.rank = rank;
  r.host_id = HostId();
  r.pid = getpid();
  std::optional<uint64_t> start = LiveProcessStartTime(r.pid);
  if (!start.has_value()) {
    return absl::InternalError("cannot read /proc/self/stat");
  }
  r.start_time = *start;
  const std::string path = absl::StrCat(dir, "/", rank);
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("open ", path, ": ", std::strerror(errno)));
  }
  const std::string text = FormatRankRecord(r);
  const bool ok =
      write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok) return absl::UnavailableError(absl::StrCat("write ", path));
  return absl::OkStatus();
}

std::vector<RankRecord> ReadRankRecords(const std::string& dir) {
  std::vector<RankRecord> records;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return records;
  while (dirent* e = readdir(d)) {
    uint32_t rank = 0;
    if (!absl::SimpleAtoi(e->d_name, &rank)) continue;
    std::optional<std::string> text =
        ReadSmallFile(absl::StrCat(dir, "/", e->d_name));
    if (!text.has_value()) continue;
    if (std::optional<RankRecord> r = ParseRankRecord(rank, *text)) {
      records.push_back(*r);
    }
  }
  closedir(d);
  return records;
}

bool RankRecordAlive(const RankRecord& r) {
  if (r.host_id != HostId()) return false;
  std::optional<uint64_t> start = LiveProcessStartTime(r.pid);
  return start.has_value() && *start == r.start_time;
}

}  // namespace gexrt
