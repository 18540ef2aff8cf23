// The Active Message vocabulary every layer shares: the three categories,
// the argument limit and what a send can answer. Transports (pshm/, the
// conduits), the handler table and the API layer all use these names, so a
// message's category crosses from one layer to the next without a cast.
#ifndef GEX_AM_VOCABULARY_H_
#define GEX_AM_VOCABULARY_H_

#include <cstdint>

namespace gexrt::am {

// The most arguments a message carries (gex_AM_MaxArgs()).
inline constexpr unsigned kMaxArgs = 16;

// A message's category; the values are those of the wire formats too.
enum class Category : uint8_t { kShort = 0, kMedium = 1, kLong = 2 };

// What a send answers: sent (or at least copied out and queued), or, for
// an IMMEDIATE send, refused because it would have had to wait.
enum class SendStatus { kOk, kWouldBlock };

// "Short", "Medium" or "Long", for messages.
const char* CategoryName(Category c);

}  // namespace gexrt::am

#endif  // GEX_AM_VOCABULARY_H_
