#include "rma/atomic.h"

#include <atomic>
#include <type_traits>

#include "base/fatal.h"

namespace gexrt::rma {
namespace {

// The unsigned integer of T's width: floating-point values are operated on
// through their bits (a compare-exchange loop), so every type needs only
// the integer atomics the CPU has.
template <typename T>
using BitsOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

// op0 combined with op1 for the arithmetic opcodes (C rules; integer
// arithmetic wraps, computed unsigned so signed overflow is defined).
template <typename T>
T Combine(uint32_t base, T op0, T op1) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    const U a = static_cast<U>(op0);
    const U b = static_cast<U>(op1);
    switch (base) {
      case kOpAdd:
        return static_cast<T>(static_cast<U>(a + b));
      case kOpSub:
        return static_cast<T>(static_cast<U>(a - b));
      case kOpMult:
        return static_cast<T>(static_cast<U>(a * b));
      case kOpInc:
        return static_cast<T>(static_cast<U>(a + 1u));
      case kOpDec:
        return static_cast<T>(static_cast<U>(a - 1u));
      case kOpAnd:
        return static_cast<T>(a & b);
      case kOpOr:
        return static_cast<T>(a | b);
      case kOpXor:
        return static_cast<T>(a ^ b);
      default:
        break;
    }
  } else {
    switch (base) {
      case kOpAdd:
        return op0 + op1;
      case kOpSub:
        return op0 - op1;
      case kOpMult:
        return op0 * op1;
      case kOpInc:
        return op0 + T(1);
      case kOpDec:
        return op0 - T(1);
      default:
        break;
    }
  }
  switch (base) {
    case kOpMin:
      return op0 < op1 ? op0 : op1;
    case kOpMax:
      return op0 > op1 ? op0 : op1;
    default:
      break;
  }
  FatalErrorF("remote atomic: opcode 0x%x is not an arithmetic operation",
              base);
}

template <typename T>
uint64_t Apply(void* target, uint32_t op, uint64_t operand1,
               uint64_t operand2) {
  using B = BitsOf<T>;
  std::atomic_ref<B> bits(*static_cast<B*>(target));
  const uint32_t base = op == kOpGet              ? kOpGet
                        : (op & kOpFetching) != 0 ? op >> kFetchShift
                                                  : op;
  const T a = FromBits<T>(operand1);
  switch (base) {
    case kOpGet:
      return bits.load();
    case kOpSet:
      if (op == kOpSet) {
        bits.store(static_cast<B>(operand1));
        return 0;
      }
      return bits.exchange(static_cast<B>(operand1));
    case kOpCas: {
      // On the bits, as the specification permits for floating point: no
      // spurious failure (strong), and the old value either way.
      B expected = static_cast<B>(operand1);
      bits.compare_exchange_strong(expected, static_cast<B>(operand2));
      return expected;
    }
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {
    // The CPU's own read-modify-write instructions where there is one.
    std::atomic_ref<T> v(*static_cast<T*>(target));
    switch (base) {
      case kOpAdd:
        return ToBits<T>(v.fetch_add(a));
      case kOpSub:
        return ToBits<T>(v.fetch_sub(a));
      case kOpInc:
        return ToBits<T>(v.fetch_add(1));
      case kOpDec:
        return ToBits<T>(v.fetch_sub(1));
      case kOpAnd:
        return ToBits<T>(v.fetch_and(a));
      case kOpOr:
        return ToBits<T>(v.fetch_or(a));
      case kOpXor:
        return ToBits<T>(v.fetch_xor(a));
      default:
        break;
    }
  }
  // MULT, MIN, MAX, and every floating-point arithmetic opcode.
  B old = bits.load(std::memory_order_relaxed);
  while (true) {
    const T next = Combine<T>(base, FromBits<T>(old), a);
    const B next_bits = static_cast<B>(ToBits<T>(next));
    if (bits.compare_exchange_weak(old, next_bits)) return old;
  }
}

}  // namespace

uint64_t AtomicApply(void* target, uint32_t dt, uint32_t op, uint64_t operand1,
                     uint64_t operand2) {
  switch (dt) {
    case kDtI32:
      return Apply<int32_t>(target, op, operand1, operand2);
    case kDtU32:
      return Apply<uint32_t>(target, op, operand1, operand2);
    case kDtI64:
      return Apply<int64_t>(target, op, operand1, operand2);
    case kDtU64:
      return Apply<uint64_t>(target, op, operand1, operand2);
    case kDtFlt:
      return Apply<float>(target, op, operand1, operand2);
    case kDtDbl:
      return Apply<double>(target, op, operand1, operand2);
    default:
      break;
  }
  FatalErrorF("remote atomic: data type 0x%x is not an atomic type", dt);
}

}  // namespace gexrt::rma
