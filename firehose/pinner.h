// The one thing firehose asks of a network: pin (register) a range of
// this process's memory, and unpin it again.
//
// Firehose decides *what* to keep pinned and for how long; a Pinner does
// the pinning. Each transport supplies one: ibv registers a verbs memory
// region (ibv_reg_mr), ofi a libfabric MR on providers that need
// FI_MR_LOCAL, ucx a ucp_mem_map handle. Tests use FakePinner
// (fake_pinner.h).
//
//   class VerbsPinner : public firehose::Pinner {
//     absl::StatusOr<Registration> Pin(uintptr_t base, size_t length) override
//     {
//       ibv_mr* mr = ibv_reg_mr(pd_, (void*)base, length, kAccess);
//       if (mr == nullptr) return ErrnoStatus(errno, "ibv_reg_mr");
//       return Registration{base, length, mr->lkey, mr->rkey, mr};
//     }
//     void Unpin(const Registration& r) override {
//       ibv_dereg_mr(static_cast<ibv_mr*>(r.handle));
//     }
//   };
#ifndef GEX_FIREHOSE_PINNER_H_
#define GEX_FIREHOSE_PINNER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace gexrt::firehose {

// A pinned range and the keys the network needs to use it. Firehose never
// interprets the keys or the handle; it hands them back to the conduit.
struct Registration {
  uintptr_t base = 0;
  size_t length = 0;
  // What a local work request names the memory by (a verbs lkey, a
  // libfabric descriptor's key, ...).
  uint64_t local_key = 0;
  // What a peer names the memory by in an RDMA access (a verbs rkey, a
  // libfabric MR key, a packed ucx rkey's id, ...).
  uint64_t remote_key = 0;
  // The pinner's own object for the registration (ibv_mr*, fid_mr*, ...),
  // given back to Unpin.
  void* handle = nullptr;
};

class Pinner {
 public:
  virtual ~Pinner() = default;

  // Pins [base, base + length). Both are multiples of the cache's bucket
  // size. A failure is returned as is to whoever asked for the memory.
  //
  // Called without the cache's lock, from any thread that uses the cache,
  // possibly from several at once (and beside Unpin): it must be
  // thread-safe. The range is reserved in the cache meanwhile.
  virtual absl::StatusOr<Registration> Pin(uintptr_t base, size_t length) = 0;

  // Unpins a registration Pin returned, exactly once. Must not fail
  // (a transport that sees an error reports it itself). Called with the
  // cache's lock held, so that what is pinned never exceeds the limits:
  // it must not call back into the cache.
  virtual void Unpin(const Registration& registration) = 0;
};

}  // namespace gexrt::firehose

#endif  // GEX_FIREHOSE_PINNER_H_
