#include "core/conduit.h"

#include "absl/strings/str_format.h"
#include "base/cpu.h"
#include "base/thread_scratch.h"
#include "base/wait_policy.h"

namespace gexrt::core {
namespace {

// The default negotiated-payload buffers: one per thread for a Request
// and one for a Reply (a thread has at most one of each prepared, as the
// specification allows), allocated on first use. ThreadScratch: the exit
// protocol sends from the main thread's exit handler, after its
// thread_local destructors have run.
constinit thread_local ThreadScratch tl_request_bounce;
constinit thread_local ThreadScratch tl_reply_bounce;

void* Bounce(bool request, size_t size) {
  return (request ? tl_request_bounce : tl_reply_bounce).Get(size);
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
