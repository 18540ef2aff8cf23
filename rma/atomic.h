// Remote atomics' vocabulary and the CPU implementation every path shares
// (gasnet_ratomic.h's calls are in api/ratomic.cc).
//
// An operation is (type, opcode, operand1, operand2) on an aligned object
// of the type. Types and opcodes have the values of gasnetex.h's GEX_DT_*
// and GEX_OP_* (api/ratomic.cc checks), so the API hands them down
// unchanged; operands and results travel as 64-bit patterns (a float in
// the low 32 bits), which is also how the AM path carries them.
//
// Apply() performs one operation with the CPU's atomic instructions
// (std::atomic_ref, sequentially consistent), so every path that ends in
// it is atomic against every other: a supernode peer's direct call on the
// cross-mapped segment, this rank on its own segment, and the target's AM
// handler for a request from off the supernode.
//
//   const uint64_t old = rma::AtomicApply(p, rma::kDtU64, rma::kOpFadd,
//                                         rma::ToBits<uint64_t>(5), 0);
//
// A network conduit that performs atomics itself takes whole domains
// instead (core::Conduit::AtomicOps / Atomic, with core::AtomicOp in this
// vocabulary); Apply is the generic rung. See api/ratomic.cc.
#ifndef GEX_RMA_ATOMIC_H_
#define GEX_RMA_ATOMIC_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace gexrt::rma {

// Types (GEX_DT_*).
inline constexpr uint32_t kDtI32 = 1u << 0;
inline constexpr uint32_t kDtU32 = 1u << 1;
inline constexpr uint32_t kDtI64 = 1u << 2;
inline constexpr uint32_t kDtU64 = 1u << 3;
inline constexpr uint32_t kDtFlt = 1u << 4;
inline constexpr uint32_t kDtDbl = 1u << 5;
inline constexpr uint32_t kDtIntegers = kDtI32 | kDtU32 | kDtI64 | kDtU64;
inline constexpr uint32_t kDtAll = kDtIntegers | kDtFlt | kDtDbl;

// Non-fetching opcodes (GEX_OP_*); a fetching one is its non-fetching
// one << kFetchShift (SWAP is SET's), and GET is on its own.
inline constexpr uint32_t kOpAdd = 1u << 0;
inline constexpr uint32_t kOpMult = 1u << 1;
inline constexpr uint32_t kOpMin = 1u << 2;
inline constexpr uint32_t kOpMax = 1u << 3;
inline constexpr uint32_t kOpSub = 1u << 4;
inline constexpr uint32_t kOpInc = 1u << 5;
inline constexpr uint32_t kOpDec = 1u << 6;
inline constexpr uint32_t kOpAnd = 1u << 7;
inline constexpr uint32_t kOpOr = 1u << 8;
inline constexpr uint32_t kOpXor = 1u << 9;
inline constexpr uint32_t kOpSet = 1u << 10;
inline constexpr uint32_t kOpCas = 1u << 11;
inline constexpr unsigned kFetchShift = 12;
inline constexpr uint32_t kOpNonFetching = (1u << kFetchShift) - 1;
inline constexpr uint32_t kOpFetching = kOpNonFetching << kFetchShift;
inline constexpr uint32_t kOpGet = 1u << 24;
inline constexpr uint32_t kOpFadd = kOpAdd << kFetchShift;
inline constexpr uint32_t kOpSwap = kOpSet << kFetchShift;
inline constexpr uint32_t kOpFcas = kOpCas << kFetchShift;
// Opcodes valid on integer types only (either form).
inline constexpr uint32_t kOpBitwise =
    (kOpAnd | kOpOr | kOpXor) | (kOpAnd | kOpOr | kOpXor) << kFetchShift;
// Every opcode an atomic domain may hold.
inline constexpr uint32_t kOpAllAtomic = kOpNonFetching | kOpFetching | kOpGet;

// Whether `op` (one opcode) writes a result at the initiator.
constexpr bool IsFetching(uint32_t op) {
  return (op & (kOpFetching | kOpGet)) != 0;
}
// Whether `op` is exactly one opcode.
constexpr bool IsSingleOp(uint32_t op) {
  return op != 0 && (op & (op - 1)) == 0;
}

// The size in bytes of type `dt` (one GEX_DT_* of kDtAll), else 0.
constexpr size_t DtSize(uint32_t dt) {
  return (dt & (kDtI32 | kDtU32 | kDtFlt)) != 0 && IsSingleOp(dt)   ? 4
         : (dt & (kDtI64 | kDtU64 | kDtDbl)) != 0 && IsSingleOp(dt) ? 8
                                                                    : 0;
}

// A value's 64-bit pattern (zero-extended), and back.
template <typename T>
inline uint64_t ToBits(T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  if constexpr (sizeof(T) == 4) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
  } else {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return b;
  }
}
template <typename T>
inline T FromBits(uint64_t b) {
  T v;
  if constexpr (sizeof(T) == 4) {
    const auto w = static_cast<uint32_t>(b);
    std::memcpy(&v, &w, 4);
  } else {
    std::memcpy(&v, &b, 8);
  }
  return v;
}

// A fatal error: `base` is not an arithmetic opcode (a caller's bug).
[[noreturn]] void BadArithmeticOp(uint32_t base);

namespace atomic_internal {

// The unsigned integer of T's width: floating-point values are operated on
// through their bits (a compare-exchange loop), so every type needs only
// the integer atomics the CPU has.
template <typename T>
using BitsOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

// op0 combined with op1 for the arithmetic opcodes (C rules; integer
// arithmetic wraps, computed unsigned so signed overflow is defined).
template <typename T>
inline T Combine(uint32_t base, T op0, T op1) {
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
  BadArithmeticOp(base);
}

template <typename T>
inline uint64_t ApplyAs(void* target, uint32_t op, uint64_t operand1,
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

}  // namespace atomic_internal

// AtomicApply with the type known at compile time (T: int32_t, uint32_t,
// int64_t, uint64_t, float, double): what the direct path inlines.
template <typename T>
inline uint64_t AtomicApplyAs(void* target, uint32_t op, uint64_t operand1,
                              uint64_t operand2) {
  return atomic_internal::ApplyAs<T>(target, op, operand1, operand2);
}

// Performs `op` (one opcode valid for `dt`, checked by the caller) on the
// object of type `dt` at `target` (aligned to its size) with the operands'
// patterns, atomically; returns the pattern of the value it held before
// (0 for a non-fetching SET, which is a plain atomic store).
uint64_t AtomicApply(void* target, uint32_t dt, uint32_t op, uint64_t operand1,
                     uint64_t operand2);

// One operation as a conduit that offloads atomics would be handed it:
// the target in `rank`'s segment as `rank` sees it.
struct AtomicRequest {
  uint32_t dt = 0;
  uint32_t op = 0;
  uint64_t target = 0;
  uint64_t operand1 = 0;
  uint64_t operand2 = 0;
  // Where the fetched value goes (fetching ops), written before the
  // operation's counter completes.
  void* result = nullptr;
};

}  // namespace gexrt::rma

#endif  // GEX_RMA_ATOMIC_H_
