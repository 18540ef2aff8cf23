// The put/get engine: one-sided copies between this rank's memory and any
// rank's segment, over a ladder of three rungs, the first that applies:
//
//  - Direct, for supernode peers: the peer's segment is mapped here
//    (SegmentView::Translate), so a Put or Get is one memcpy, complete
//    (locally and remotely) when it returns. On smp every peer is one.
//  - The conduit's RDMA, when the conduit has it (Transport::rdma_put /
//    rdma_get): the conduit moves the bytes and completes the counters.
//  - Active Messages, for every other peer, and for all of them with
//    GEX_RMA_FORCE_AM=1 (the debug setting that lets tests drive this
//    path on one host). Transport-neutral: it needs only a Request, a
//    Reply and a wait (Transport, filled by the layer that owns the AM
//    network). Protocol, in chunks of at most kChunk bytes (the Long and
//    Medium maximum):
//      Put: a Long Request carrying the chunk into the target's segment;
//           its handler replies with a Short that completes the counter.
//      Get: a Short Request naming the source, destination and length; its
//           handler replies with a Long straight into the initiator's
//           destination when that lies in the initiator's segment, else
//           with a Medium whose handler (on the initiator) copies it out.
//    The initiator copies the Put's source itself (into the Long payload),
//    and a Get's Medium reply handler writes the destination, so local
//    addresses need not be in any segment. A Transport copies a payload
//    before its request call returns, so a Put's local completion is
//    synchronous on this path too; the `lc` counter records it for
//    GEX_EVENT_GROUP and leaf events all the same.
//
// Completion is counted in rma::Counters (event.h): one start per chunk,
// one completion per reply. Callers pass the counters of an NB operation,
// of the thread's NBI state or of a blocking call (on the stack).
//
// Misuse is fatal and names the call: a rank outside the team, a range
// that wraps the address space, a remote range outside the peer's segment,
// an RMA call from an AM handler.
#ifndef GEX_RMA_ENGINE_H_
#define GEX_RMA_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "am/handler_table.h"
#include "am/token.h"
#include "bootstrap/bootstrap.h"
#include "rma/event.h"
#include "rma/segment_view.h"

namespace gexrt::rma {

// How the AM path sends and waits.
struct Transport {
  void* context = nullptr;
  // Sends a Request to `rank`. A Medium's or Long's payload [payload,
  // +len) has been copied out when the call returns (a Long's to
  // `long_dest`, an address in `rank`'s segment as `rank` sees it).
  // Returns false, having sent nothing, when `immediate` and sending
  // would have to wait.
  bool (*request)(void* context, Rank rank, am::Category category,
                  uint8_t handler, const uint32_t* args, unsigned nargs,
                  const void* payload, size_t len, void* long_dest,
                  bool immediate) = nullptr;
  // Replies from the Request handler whose token is `token` (a Long's
  // `long_dest` is in the requester's segment, as the requester sees it).
  void (*reply)(void* context, am::Token* token, am::Category category,
                uint8_t handler, const uint32_t* args, unsigned nargs,
                const void* payload, size_t len, void* long_dest) = nullptr;
  // One round of waiting: poll, and yield when the host is oversubscribed.
  void (*wait)(void* context) = nullptr;

  // The conduit's RDMA (null: the conduit has none, the AM path serves).
  // Starts a Put of [src, +len) to `dest` (in `rank`'s segment, as `rank`
  // sees it) or a Get of [src, +len) there into `dest`, and calls
  // Complete() on `rc` once the data is delivered (and on `lc`, when not
  // null, once the source may be reused), from any thread or a later
  // poll. The engine has called Start(1) on each. Returns false, having
  // started nothing, when `immediate` and it would have to wait.
  bool (*rdma_put)(void* context, Rank rank, void* dest, const void* src,
                   size_t len, bool immediate, Counter& rc,
                   Counter* lc) = nullptr;
  bool (*rdma_get)(void* context, void* dest, Rank rank, const void* src,
                   size_t len, bool immediate, Counter& rc) = nullptr;
};

enum class Issue {
  kPending,     // started: the counters complete later
  kWouldBlock,  // immediate, and nothing was started
};

class Engine {
 public:
  // The largest chunk of one AM (the Long and Medium maximum) by default;
  // Options::chunk lowers it for a network with smaller AMs.
  static constexpr size_t kChunk = 65536;

  struct Options {
    Rank rank = 0;
    Rank size = 1;
    // The job's segments (core's table; read when each call is made, so
    // it may be filled after the engine is built).
    const SegmentView* segments = nullptr;
    Transport transport;
    // GEX_RMA_FORCE_AM: every operation over Active Messages.
    bool force_am = false;
    // The AM path's chunk: at most kChunk, and no more than the largest
    // Medium and Long every peer accepts (a conduit's Medium may be
    // smaller than PSHM's, e.g. GASNET_OFI_MAX_MEDIUM).
    size_t chunk = kChunk;
  };

  // Registers the AM path's handlers in the internal index range of
  // `handlers`. Every rank must construct its engine at the same point of
  // start-up (indices are assigned in order).
  Engine(const Options& options, am::HandlerTable& handlers);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // An engine for the segments bound to another endpoint index (those of
  // gex_EP_Create's endpoints): `segments` (read at each call, like the
  // primordial table) in place of Options::segments, this engine's
  // handlers and transport otherwise. Its ladder has no RDMA rung (the
  // conduit registered the primordial segments only), and its AM-path Put
  // is a Medium the target copies from (a Long lands only in the
  // primordial segment; a segment in client memory is not mapped by
  // anyone but its owner). `ep_index` names the endpoint in messages.
  std::unique_ptr<Engine> ForEndpoint(const SegmentView* segments,
                                      uint32_t ep_index) const;

  bool force_am() const { return force_am_; }

  // Whether the conduit has registered every rank's primordial segment
  // (true by default, and after gex_Segment_Attach). A segment bound to
  // the primordial endpoint and published over a team before every rank
  // of the job had published one is not known to the conduit: until then
  // this engine skips the RDMA rung, and its AM-path Put and Get carry
  // the bytes in Mediums the receiver copies (a Long may travel by the
  // conduit's RDMA, which needs that registration).
  void set_conduit_segments(bool registered) { conduit_segments_ = registered; }

  // Checks the arguments of a Put of `n` bytes to `dest` at `rank` and, when
  // the peer is mapped here, copies it: returns true when the Put is done
  // (n == 0 included), false when it must go over Active Messages
  // (PutAm). Never blocks.
  bool PutDirect(const char* call, Rank rank, void* dest, const void* src,
                 size_t n) {
    Check(call, rank, dest, src, n);
    if (n == 0) return true;
    if (!force_am_) {
      void* local =
          segments_->Translate(rank, reinterpret_cast<uintptr_t>(dest), n);
      if (ABSL_PREDICT_TRUE(local != nullptr)) {
        std::memcpy(local, src, n);
        return true;
      }
    }
    return false;
  }
  // The same for a Get of `n` bytes from `src` at `rank` into `dest`.
  bool GetDirect(const char* call, void* dest, Rank rank, const void* src,
                 size_t n) {
    Check(call, rank, src, dest, n);
    if (n == 0) return true;
    if (!force_am_) {
      const void* local =
          segments_->Translate(rank, reinterpret_cast<uintptr_t>(src), n);
      if (ABSL_PREDICT_TRUE(local != nullptr)) {
        std::memcpy(dest, local, n);
        return true;
      }
    }
    return false;
  }

  // The rungs below direct, after PutDirect/GetDirect returned false: a
  // fatal error when the remote range is outside the peer's segment; else
  // the conduit's RDMA when it has one, or the AM path, which starts the
  // chunks in `rc` (and, for a Put, in `lc` when not null, completing them
  // as each chunk's payload is copied). With `immediate` only the first
  // chunk may be refused (then nothing is started); later ones wait.
  Issue PutRemote(const char* call, Rank rank, void* dest, const void* src,
                  size_t n, bool immediate, Counter& rc, Counter* lc);
  Issue GetRemote(const char* call, void* dest, Rank rank, const void* src,
                  size_t n, bool immediate, Counter& rc);

  // Waits (making progress) until `c` is done. Fatal, naming `call`, from
  // an AM handler.
  void Wait(const char* call, const Counter& c) const {
    if (c.Done()) return;
    WaitSlow(call, c);
  }
  // One round of waiting.
  void Progress() const { transport_.wait(transport_.context); }

 private:
  void Check(const char* call, Rank rank, const void* remote, const void* local,
             size_t n) const {
    const auto r = reinterpret_cast<uintptr_t>(remote);
    const auto l = reinterpret_cast<uintptr_t>(local);
    if (ABSL_PREDICT_FALSE(rank >= size_ || r + n < r || l + n < l ||
                           am::HandlerContext::InHandler())) {
      BadCall(call, rank, remote, local, n);
    }
  }
  [[noreturn]] ABSL_ATTRIBUTE_NOINLINE void BadCall(const char* call, Rank rank,
                                                    const void* remote,
                                                    const void* local,
                                                    size_t n) const;
  // Fatal unless [remote, +n) lies in `rank`'s segment.
  void CheckSegment(const char* call, Rank rank, const void* remote,
                    size_t n) const;
  void WaitSlow(const char* call, const Counter& c) const;
  // The endpoint engine's (ForEndpoint).
  Engine(const Engine& primary, const SegmentView* segments, uint32_t ep_index);

  static void PutRequestHandler(void* token, void* buf, size_t nbytes,
                                int32_t c0, int32_t c1);
  static void PutMediumRequestHandler(void* token, void* buf, size_t nbytes,
                                      int32_t d0, int32_t d1, int32_t c0,
                                      int32_t c1);
  static void DoneReplyHandler(void* token, int32_t c0, int32_t c1);
  static void GetRequestHandler(void* token, int32_t s0, int32_t s1, int32_t d0,
                                int32_t d1, int32_t len, int32_t c0, int32_t c1,
                                int32_t medium);
  static void GetLongReplyHandler(void* token, void* buf, size_t nbytes,
                                  int32_t c0, int32_t c1);
  static void GetMediumReplyHandler(void* token, void* buf, size_t nbytes,
                                    int32_t d0, int32_t d1, int32_t c0,
                                    int32_t c1);

  Rank rank_;
  Rank size_;
  // The segments this engine's calls address, and this rank's primordial
  // ones (where a Get's Long reply may land): the same table except in an
  // endpoint engine.
  const SegmentView* segments_;
  const SegmentView* primordial_;
  Transport transport_;
  bool force_am_;
  bool conduit_segments_ = true;
  size_t chunk_;
  // 0: the primordial endpoint's engine; else ForEndpoint's (Medium Puts).
  uint32_t ep_index_ = 0;
  uint8_t put_request_ = 0;
  uint8_t put_medium_request_ = 0;
  uint8_t done_reply_ = 0;
  uint8_t get_request_ = 0;
  uint8_t get_long_reply_ = 0;
  uint8_t get_medium_reply_ = 0;
};

}  // namespace gexrt::rma

#endif  // GEX_RMA_ENGINE_H_
