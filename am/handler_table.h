// The Active Message handler table of one endpoint: 256 entries, indices
// below kClientIndexBase for the runtime's own handlers, the rest for the
// client (GASNet-EX's split). An entry records the handler's function, the
// categories and kinds it may run for, and how many arguments it takes, so
// a message that does not fit its handler is reported instead of calling
// the function with the wrong signature.
//
//   HandlerTable table;
//   Entry entries[] = {{0, fn, kShort | kRequest, 2, nullptr, "ping"}};
//   absl::Status s = table.Register(entries, /*internal=*/false);
//   // entries[0].index now holds the index picked for "ping".
#ifndef GEX_AM_HANDLER_TABLE_H_
#define GEX_AM_HANDLER_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "am/vocabulary.h"

namespace gexrt::am {

inline constexpr unsigned kTableSize = 256;
inline constexpr unsigned kClientIndexBase = 128;
// An entry's nargs may say "any": handlers registered through the legacy
// gasnet_attach table declare no argument count.
inline constexpr unsigned kAnyArgs = ~0u;

using HandlerFn = void (*)();

// Flags, with the values of gasnetex.h's GEX_FLAG_AM_* (checked there).
inline constexpr uint32_t kFlagShort = 1u << 8;
inline constexpr uint32_t kFlagMedium = 1u << 9;
inline constexpr uint32_t kFlagLong = 1u << 10;
inline constexpr uint32_t kFlagRequest = 1u << 11;
inline constexpr uint32_t kFlagReply = 1u << 12;
inline constexpr uint32_t kCategoryFlags = kFlagShort | kFlagMedium | kFlagLong;
inline constexpr uint32_t kKindFlags = kFlagRequest | kFlagReply;

// Laid out exactly as gex_AM_Entry_t (the API layer checks it), so a
// token can hand the client a pointer to the registered entry.
struct Entry {
  uint8_t index = 0;
  HandlerFn fn = nullptr;
  uint32_t flags = 0;
  unsigned nargs = 0;
  const void* cdata = nullptr;
  const char* name = nullptr;
};

inline uint32_t CategoryFlag(Category c) {
  return kFlagShort << static_cast<unsigned>(c);
}

class HandlerTable {
 public:
  HandlerTable() = default;
  HandlerTable(const HandlerTable&) = delete;
  HandlerTable& operator=(const HandlerTable&) = delete;

  // Registers `count` entries, all or none. An entry with index 0 gets the
  // lowest free index of its range (client: 128-255, internal: 1-127),
  // written back into the caller's entry. Errors (the table unchanged): a
  // null function, flags without a category or without a kind, Short mixed with
  // Medium/Long, nargs above kMaxArgs, an index out of the range, an index
  // already used (by this call or an earlier one), no free index left.
  absl::Status Register(Entry* entries, size_t count, bool internal);

  // The entry at `index`, or null when nothing is registered there.
  const Entry* Find(uint8_t index) const {
    const Entry& e = entries_[index];
    return e.fn != nullptr ? &e : nullptr;
  }

  // From now on messages for client handlers are dropped instead of run
  // (the exit path: the job is ending, and a client handler running then
  // could only get in the way). Internal handlers go on.
  void DisableClientHandlers() {
    client_disabled_.store(true, std::memory_order_relaxed);
  }
  bool client_handlers_disabled() const {
    return client_disabled_.load(std::memory_order_relaxed);
  }

  // Why a message of `category`, kind and `nargs` may not run `entry`'s
  // handler ("" when it may).
  static std::string Mismatch(const Entry& entry, Category category,
                              bool is_request, unsigned nargs);

 private:
  Entry entries_[kTableSize];
  std::atomic<bool> client_disabled_{false};
};

}  // namespace gexrt::am

#endif  // GEX_AM_HANDLER_TABLE_H_
