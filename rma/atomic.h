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
// Where a network conduit will offload: Apply is the generic rung; a
// conduit able to perform (type, ops) in its NIC would take every
// operation of an atomic domain created for them, supernode peers
// included (a NIC atomic is not atomic against a CPU one), through a hook
// of core::Conduit taking an AtomicRequest (below) and a completion
// Counter. See api/ratomic.cc.
#ifndef GEX_RMA_ATOMIC_H_
#define GEX_RMA_ATOMIC_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

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
