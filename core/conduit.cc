#include "core/conduit.h"

#include <memory>

#include "absl/strings/str_format.h"
#include "base/cpu.h"
#include "base/wait_policy.h"

namespace gexrt::core {
namespace {

// The default negotiated-payload buffers: one per thread for a Request
// and one for a Reply (a thread has at most one of each prepared, as the
// specification allows), allocated on first use.
thread_local std::unique_ptr<unsigned char[]> tl_request_bounce;
thread_local std::unique_ptr<unsigned char[]> tl_reply_bounce;
thread_local size_t tl_request_bounce_size = 0;
thread_local size_t tl_reply_bounce_size = 0;

void* Bounce(bool request, size_t size) {
  auto& buffer = request ? tl_request_bounce : tl_reply_bounce;
  size_t& have = request ? tl_request_bounce_size : tl_reply_bounce_size;
  if (have < size) {
    buffer.reset(new unsigned char[size]);
    have = size;
  }
  return buffer.get();
}

}  // namespace

absl::StatusOr<WaitPolicy*> CheckInitArgs(const char* conduit,
                                          const InitArgs& args,
                                          WaitPolicy& own) {
  if (args.bootstrap == nullptr || args.map == nullptr ||
      args.sink.deliver == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s conduit: no bootstrap, node map or sink", conduit));
  }
  if (args.waits != nullptr) return args.waits;
  own.Configure(1, OnlineCpuCount(), args.thread_safe);
  own.set_always_yield(args.polite);
  return &own;
}

SendStatus Conduit::Reserve(Reservation& r, size_t max_payload,
                            bool immediate) {
  // Nothing is claimed in the network until Commit, which may wait: an
  // IMMEDIATE Prepare is not refused here.
  (void)immediate;
  r.buffer = Bounce(r.is_request, max_payload == 0 ? 1 : max_payload);
  r.capacity = max_payload;
  return SendStatus::kOk;
}

void Conduit::Commit(Reservation& r, const Outbound& m) {
  Outbound out = m;
  if (m.category == Category::kMedium) out.payload = r.buffer;
  if (r.is_request) {
    Request(r.dest, out, /*immediate=*/false);
  } else {
    Reply(r.reply, out, /*immediate=*/false);
  }
}

void Conduit::Cancel(Reservation& r) { (void)r; }

}  // namespace gexrt::core
