#include "am/handler_table.h"

#include <bitset>
#include <vector>

#include "absl/strings/str_format.h"

namespace gexrt::am {
namespace {

std::string Describe(const Entry& e) {
  return e.name != nullptr ? absl::StrFormat("handler '%s'", e.name)
                           : std::string("a handler");
}

}  // namespace

absl::Status HandlerTable::Register(Entry* entries, size_t count,
                                    bool internal) {
  const unsigned lo = internal ? 1 : kClientIndexBase;
  const unsigned hi = internal ? kClientIndexBase - 1 : kTableSize - 1;
  const char* range = internal ? "1-127 (internal)" : "128-255";
  // First the entries with a fixed index, then the ones to place, so an
  // assigned index never takes one asked for later in the same table.
  std::bitset<kTableSize> used;
  for (unsigned i = 0; i < kTableSize; ++i) used[i] = entries_[i].fn != nullptr;
  for (size_t i = 0; i < count; ++i) {
    const Entry& e = entries[i];
    if (e.fn == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "entry %u (%s): null handler function", i, Describe(e)));
    }
    if ((e.flags & kCategoryFlags) == 0 || (e.flags & kKindFlags) == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("entry %u (%s): flags 0x%x name no category "
                          "(GEX_FLAG_AM_SHORT/MEDIUM/LONG/MEDLONG) or no kind "
                          "(GEX_FLAG_AM_REQUEST/REPLY/REQREP)",
                          i, Describe(e), e.flags));
    }
    // (A legacy gasnet_attach entry declares neither its category nor its
    // argument count, and may serve any.)
    if ((e.flags & kFlagShort) != 0 && (e.flags & (kFlagMedium | kFlagLong)) &&
        e.nargs != kAnyArgs) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "entry %u (%s): a handler is either Short or Medium/Long (flags "
          "0x%x)",
          i, Describe(e), e.flags));
    }
    if (e.nargs > kMaxArgs && e.nargs != kAnyArgs) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "entry %u (%s): gex_nargs %u exceeds gex_AM_MaxArgs() = %u", i,
          Describe(e), e.nargs, kMaxArgs));
    }
    if (e.index == 0) continue;
    if (e.index < lo || e.index > hi) {
      return absl::InvalidArgumentError(
          absl::StrFormat("entry %u (%s): index %u is outside the range %s", i,
                          Describe(e), e.index, range));
    }
    if (used[e.index]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("entry %u (%s): index %u is already registered", i,
                          Describe(e), e.index));
    }
    used[e.index] = true;
  }
  std::vector<uint8_t> assigned(count, 0);
  unsigned next = lo;
  for (size_t i = 0; i < count; ++i) {
    if (entries[i].index != 0) {
      assigned[i] = entries[i].index;
      continue;
    }
    while (next <= hi && used[next]) ++next;
    if (next > hi) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("entry %u (%s): no free handler index left in %s", i,
                          Describe(entries[i]), range));
    }
    used[next] = true;
    assigned[i] = static_cast<uint8_t>(next);
  }
  for (size_t i = 0; i < count; ++i) {
    entries[i].index = assigned[i];
    entries_[assigned[i]] = entries[i];
  }
  return absl::OkStatus();
}

std::string HandlerTable::Mismatch(const Entry& entry, Category category,
                                   bool is_request, unsigned nargs) {
  if ((entry.flags & CategoryFlag(category)) == 0) {
    return absl::StrFormat("%s (index %u) is not registered for %s messages",
                           Describe(entry), entry.index,
                           CategoryName(category));
  }
  if ((entry.flags & (is_request ? kFlagRequest : kFlagReply)) == 0) {
    return absl::StrFormat("%s (index %u) is not registered for %s messages",
                           Describe(entry), entry.index,
                           is_request ? "Request" : "Reply");
  }
  if (entry.nargs != kAnyArgs && entry.nargs != nargs) {
    return absl::StrFormat(
        "%s (index %u) takes %u arguments, the message carries %u",
        Describe(entry), entry.index, entry.nargs, nargs);
  }
  return "";
}

}  // namespace gexrt::am
