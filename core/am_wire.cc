#include "core/am_wire.h"

#include <cstring>

#include "base/fatal.h"

namespace gexrt::core::wire {

void CheckOutbound(const char* conduit, bool request, const Outbound& m,
                   size_t max_medium, size_t max_long) {
  if (m.nargs > am::kMaxArgs ||
      (m.category == Category::kMedium && m.len > max_medium) ||
      (m.category == Category::kLong && m.len > max_long)) {
    FatalErrorF(
        "%s conduit: a %s of %u arguments and %zu payload bytes (at most %u "
        "arguments, Medium %zu, Long %zu bytes)",
        conduit, request ? "Request" : "Reply", m.nargs, m.len, am::kMaxArgs,
        max_medium, max_long);
  }
}

size_t Encode(const Outbound& m, Rank source, bool request, bool credits_only,
              bool long_by_rdma, bool inline_payload, unsigned char* msg) {
  Header h{};
  h.flags = static_cast<uint8_t>(static_cast<uint8_t>(m.category) & 3) |
            (request ? kFlagRequest : 0) |
            (credits_only ? kFlagCreditsOnly : 0) |
            (long_by_rdma ? kFlagLongByRdma : 0);
  h.handler = m.handler;
  h.nargs = m.nargs;
  h.source = source;
  h.len = static_cast<uint32_t>(m.len);
  h.long_dest = m.long_dest;
  std::memcpy(msg, &h, sizeof h);
  if (m.nargs != 0) std::memcpy(msg + sizeof h, m.args, 4 * size_t{m.nargs});
  if (!inline_payload || m.len == 0) return ArgsEnd(m.nargs);
  const size_t at = PayloadOffset(m.nargs);
  std::memset(msg + ArgsEnd(m.nargs), 0, at - ArgsEnd(m.nargs));
  std::memcpy(msg + at, m.payload, m.len);
  return at + m.len;
}

Header Decode(const Receiver& me, const unsigned char* msg, size_t len,
              Inbound& in, uint32_t (&args)[am::kMaxArgs]) {
  Header h;
  if (len < sizeof h) {
    FatalErrorF("%s conduit: rank %u: a malformed message (%zu bytes)",
                me.conduit, me.rank, len);
  }
  std::memcpy(&h, msg, sizeof h);
  const auto category = static_cast<Category>(h.flags & 3);
  const bool is_long = category == Category::kLong;
  if (h.source >= me.size || h.nargs > am::kMaxArgs || ArgsEnd(h.nargs) > len ||
      (h.flags & 3) == 3) {
    FatalErrorF(
        "%s conduit: rank %u: a malformed message (%zu bytes, source %u, "
        "flags 0x%x, %u arguments)",
        me.conduit, me.rank, len, h.source, h.flags, h.nargs);
  }
  if ((h.flags & kFlagCreditsOnly) != 0) return h;

  std::memcpy(args, msg + sizeof(Header), 4 * size_t{h.nargs});
  in.source = h.source;
  in.category = category;
  in.is_request = (h.flags & kFlagRequest) != 0;
  in.handler = h.handler;
  in.nargs = h.nargs;
  in.args = args;
  in.len = h.len;
  in.reply = nullptr;
  const size_t payload_at = PayloadOffset(h.nargs);
  const bool inline_payload = category == Category::kMedium ||
                              (is_long && (h.flags & kFlagLongByRdma) == 0);
  if (inline_payload && h.len != 0 && payload_at + h.len > len) {
    FatalErrorF(
        "%s conduit: rank %u: a message of %zu bytes from rank %u claims %u "
        "payload bytes",
        me.conduit, me.rank, len, h.source, h.len);
  }
  const unsigned char* payload = msg + payload_at;
  in.payload = nullptr;
  if (category == Category::kMedium) {
    in.payload = const_cast<unsigned char*>(payload);
  } else if (is_long) {
    if (h.len != 0) {
      if (me.segment_size == 0 || h.long_dest < me.segment_base ||
          h.len > me.segment_size ||
          h.long_dest - me.segment_base > me.segment_size - h.len) {
        FatalErrorF(
            "%s conduit: rank %u: a Long from rank %u to [%p, +%u) is "
            "outside this rank's segment [%p, +%zu)",
            me.conduit, me.rank, h.source, reinterpret_cast<void*>(h.long_dest),
            h.len, reinterpret_cast<void*>(me.segment_base), me.segment_size);
      }
      if ((h.flags & kFlagLongByRdma) == 0) {
        std::memcpy(reinterpret_cast<void*>(h.long_dest), payload, h.len);
      }
    }
    in.payload = reinterpret_cast<void*>(h.long_dest);
  }
  return h;
}

}  // namespace gexrt::core::wire
