// Implicit-event (NBI) operations: what the calling thread has started and
// not yet synced, by event category, and its access region.
//
// Each thread has its own counters (GASNet's rule: gex_NBI_Test/Wait see
// the calling thread's operations only), so issuing an NBI operation is a
// thread-local increment, PAR-safe with no lock. Inside an access region a
// thread's NBI operations count in the region's Operation instead, which
// gex_NBI_EndAccessRegion returns as an explicit event; regions do not
// nest.
#ifndef GEX_RMA_NBI_H_
#define GEX_RMA_NBI_H_

#include <cstdint>

#include "rma/event.h"

namespace gexrt::rma {

// Event categories, with the values of gasnetex.h's GEX_EC_* (checked
// there).
inline constexpr uint32_t kEcGet = 1u << 0;
inline constexpr uint32_t kEcPut = 1u << 1;
inline constexpr uint32_t kEcAm = 1u << 2;
inline constexpr uint32_t kEcLc = 1u << 3;
inline constexpr uint32_t kEcRmw = 1u << 4;
inline constexpr uint32_t kEcAll = kEcGet | kEcPut | kEcAm | kEcLc | kEcRmw;

class Nbi {
 public:
  // The calling thread's.
  static Nbi& Mine() { return tl_nbi; }

  // Where the next NBI Get, Put, and GEX_EVENT_GROUP local completion
  // count: the open region's operation, or this thread's counters.
  Counter& get() { return region_ != nullptr ? region_->rc : get_; }
  Counter& put() { return region_ != nullptr ? region_->rc : put_; }
  Counter& lc() { return region_ != nullptr ? region_->lc : lc_; }
  // Remote atomics (gasnet_ratomic.h) other than GEX_OP_SET and GET,
  // which count as Puts and Gets.
  Counter& rmw() { return region_ != nullptr ? region_->rc : rmw_; }

  // Whether every operation of the categories in `mask` that this thread
  // started outside access regions has completed. AM operations are never
  // pending here (AM local completion is synchronous).
  bool Done(uint32_t mask) const {
    return (!(mask & kEcGet) || get_.Done()) &&
           (!(mask & kEcPut) || put_.Done()) &&
           (!(mask & kEcLc) || lc_.Done()) && (!(mask & kEcRmw) || rmw_.Done());
  }

  bool in_region() const { return region_ != nullptr; }
  // Opens a region (fatal, naming `call`, when one is open).
  void Begin(const char* call);
  // Closes the open region (fatal, naming `call`, when none is) and returns
  // its operation, or null when everything in it has already completed.
  Operation* End(const char* call);

 private:
  Counter get_;
  Counter put_;
  Counter lc_;
  Counter rmw_;
  Operation* region_ = nullptr;

  static thread_local Nbi tl_nbi;
};

}  // namespace gexrt::rma

#endif  // GEX_RMA_NBI_H_
