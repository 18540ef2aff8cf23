#include "rma/atomic.h"

#include "base/fatal.h"

namespace gexrt::rma {

uint64_t AtomicApply(void* target, uint32_t dt, uint32_t op, uint64_t operand1,
                     uint64_t operand2) {
  switch (dt) {
    case kDtI32:
      return AtomicApplyAs<int32_t>(target, op, operand1, operand2);
    case kDtU32:
      return AtomicApplyAs<uint32_t>(target, op, operand1, operand2);
    case kDtI64:
      return AtomicApplyAs<int64_t>(target, op, operand1, operand2);
    case kDtU64:
      return AtomicApplyAs<uint64_t>(target, op, operand1, operand2);
    case kDtFlt:
      return AtomicApplyAs<float>(target, op, operand1, operand2);
    case kDtDbl:
      return AtomicApplyAs<double>(target, op, operand1, operand2);
    default:
      break;
  }
  FatalErrorF("remote atomic: data type 0x%x is not an atomic type", dt);
}

void BadArithmeticOp(uint32_t base) {
  FatalErrorF("remote atomic: opcode 0x%x is not an arithmetic operation",
              base);
}

}  // namespace gexrt::rma
