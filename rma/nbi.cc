#include "rma/nbi.h"

#include "base/fatal.h"

namespace gexrt::rma {

thread_local Nbi Nbi::tl_nbi;

void Nbi::Begin(const char* call) {
  if (region_ != nullptr) {
    FatalErrorF(
        "%s: this thread is already in an access region (regions do not "
        "nest; call gex_NBI_EndAccessRegion first)",
        call);
  }
  region_ = Operation::Allocate();
}

Operation* Nbi::End(const char* call) {
  Operation* op = region_;
  if (op == nullptr) {
    FatalErrorF(
        "%s: this thread has no open access region "
        "(gex_NBI_BeginAccessRegion)",
        call);
  }
  region_ = nullptr;
  if (op->Done()) {
    op->Release();
    return nullptr;
  }
  return op;
}

}  // namespace gexrt::rma
