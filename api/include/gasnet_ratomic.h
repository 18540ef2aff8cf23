/* gasnet_ratomic.h: GASNet-EX remote atomics, as this implementation (gex)
 * offers them. A client includes it after <gasnetex.h>.
 *
 * The contract is the "Remote Atomic Operations" section of the GASNet-EX
 * specification (docs/GASNet-EX.txt in BerkeleyLab/gasnet); this header is
 * our own. An atomic domain (gex_AD_t) is created collectively over a team
 * for one data type and a set of opcodes; operations then name the domain,
 * a target rank and an address in that rank's bound segment:
 *
 *   gex_AD_t ad;
 *   gex_AD_Create(&ad, tm, GEX_DT_U64, GEX_OP_FADD | GEX_OP_GET, 0);
 *   uint64_t old;
 *   gex_AD_OpBlocking_U64(ad, &old, peer, addr, GEX_OP_FADD, 1, 0, 0);
 *   gex_AD_Destroy(ad);
 *
 * Types: I32, U32, I64, U64 (every opcode), FLT and DBL (every opcode but
 * the bit-wise AND, OR, XOR and their fetching forms). Each type has an
 * NB form (returns an event: GEX_EVENT_INVALID when the operation finished
 * before returning), an NBI form (counted for gex_NBI_Test/Wait:
 * GEX_OP_SET as GEX_EC_PUT, GEX_OP_GET as GEX_EC_GET, every other opcode
 * GEX_EC_RMW) and a Blocking form. With GEX_FLAG_IMMEDIATE a call that
 * would have to wait may start nothing (NB: GEX_EVENT_NO_OP; NBI and
 * Blocking: non-zero).
 *
 * How they run: on a target whose segment is mapped here (this rank, or a
 * supernode peer) the operation is a CPU atomic instruction on the mapped
 * address, finished when the call returns; on any other target it is an
 * Active Message whose handler performs the same instruction there, so the
 * two ways are atomic against each other. GEX_RMA_FORCE_AM=1 sends every
 * operation as an Active Message (for tests). Every operation is
 * sequentially consistent, which covers GEX_FLAG_AD_ACQ and
 * GEX_FLAG_AD_REL. A direct operation makes no progress: a rank that spins
 * on one (a lock taken with FCAS) polls (gasnet_AMPoll) while it spins, or
 * the Active Messages other ranks send it wait.
 *
 * Misuse is a fatal error naming the call: a NULL or destroyed domain, the
 * call's type not the domain's, an opcode not in the domain's set (or more
 * than one), a fetching opcode with a NULL result_p, a target outside the
 * rank's segment or misaligned, a rank outside the team, flags the call
 * does not take, GEX_FLAG_AD_MY_RANK / _MY_NBRHD when they do not hold. */
#ifndef GASNET_RATOMIC_H
#define GASNET_RATOMIC_H
#define _GASNET_RATOMIC_H 1
#define _IN_GASNET_RATOMIC_H 1

#include <gasnetex.h>

/* The flags (GEX_FLAG_AD_ACQ, _REL, _MY_RANK, _MY_NBRHD, _FAVOR_*) and
 * GEX_EP_CAPABILITY_AD are gasnetex.h's, as in GASNet-EX. */

#ifdef __cplusplus
extern "C" {
#endif

/* An atomic domain (gex_AD_t, from gasnet_fwd.h). */
#define GEX_AD_INVALID ((gex_AD_t)0)

/* Collective over tm (today the primordial team, the only one), with the
 * same dt, ops and flags on every rank. dt: one GEX_DT_* of I32, U32, I64,
 * U64, FLT, DBL. ops: a bitwise OR of the opcodes the domain's operations
 * will use (the bit-wise ones only with an integer type). flags: 0 or one
 * of GEX_FLAG_AD_FAVOR_MY_RANK, _MY_NBRHD, _REMOTE (hints). Writes the
 * domain to *ad_p. */
extern void gex_AD_Create(gex_AD_t *ad_p, gex_TM_t tm, gex_DT_t dt,
                          gex_OP_t ops, gex_Flags_t flags);
/* Collective over the domain's team, once every operation on it is
 * complete on every rank (sync them, then a barrier). Not a barrier. */
extern void gex_AD_Destroy(gex_AD_t ad);

/* What the domain was created with, and one pointer of the client's. */
extern gex_Flags_t gex_AD_QueryFlags(gex_AD_t ad);
extern gex_TM_t gex_AD_QueryTM(gex_AD_t ad);
extern gex_DT_t gex_AD_QueryDT(gex_AD_t ad);
extern gex_OP_t gex_AD_QueryOps(gex_AD_t ad);
extern void gex_AD_SetCData(gex_AD_t ad, const void *val);
extern void *gex_AD_QueryCData(gex_AD_t ad);

/* The operations, one set per type. The opcode is one GEX_OP_* of the
 * domain's set; result_p receives the target's value before the
 * operation (op0) for a fetching opcode (GET, SWAP, FCAS, FADD, ...) and is
 * ignored otherwise; operand1 and operand2 are op1 and op2 (CAS: compare
 * with operand1, write operand2), ignored where the opcode takes fewer.
 * tgt_rank is a rank of the domain's team (GEX_FLAG_RANK_IS_JOBRANK: of
 * the primordial team); tgt_addr lies in its bound segment, aligned to the
 * type. flags: GEX_FLAG_IMMEDIATE, GEX_FLAG_RANK_IS_JOBRANK,
 * GEX_FLAG_AD_ACQ, GEX_FLAG_AD_REL and at most one of
 * GEX_FLAG_AD_MY_RANK, GEX_FLAG_AD_MY_NBRHD.
 *
 * The calls are inline: on an integer type, a target whose segment is
 * mapped here, a valid opcode other than MULT, MIN and MAX and no locality
 * flag, the operation is the CPU atomic itself, done here; anything else
 * (and every call in a debug build) goes to the library (_gex_AD_Op*),
 * which checks everything and reports misuse. */

/* Internal (not part of the API): the head of every domain, read by the
 * inline path. key is _GEX_AD_KEY | dt while the domain is live and its
 * operations may be direct (not GEX_RMA_FORCE_AM), else 0. */
typedef struct {
  uint32_t key;
  gex_OP_t ops;
} _gex_AD_Head_t;
#define _GEX_AD_KEY 0xad000000u

#define _GEX_AD_DECLARE(DT, T)                                                \
  extern gex_Event_t _gex_AD_OpNB_##DT(gex_AD_t ad, T *result_p,              \
                                       gex_Rank_t tgt_rank, void *tgt_addr,   \
                                       gex_OP_t opcode, T operand1,           \
                                       T operand2, gex_Flags_t flags);        \
  extern int _gex_AD_OpNBI_##DT(gex_AD_t ad, T *result_p,                     \
                                gex_Rank_t tgt_rank, void *tgt_addr,          \
                                gex_OP_t opcode, T operand1, T operand2,      \
                                gex_Flags_t flags);                           \
  extern int _gex_AD_OpBlocking_##DT(gex_AD_t ad, T *result_p,                \
                                     gex_Rank_t tgt_rank, void *tgt_addr,     \
                                     gex_OP_t opcode, T operand1, T operand2, \
                                     gex_Flags_t flags);

_GEX_AD_DECLARE(I32, int32_t)
_GEX_AD_DECLARE(U32, uint32_t)
_GEX_AD_DECLARE(I64, int64_t)
_GEX_AD_DECLARE(U64, uint64_t)
_GEX_AD_DECLARE(FLT, float)
_GEX_AD_DECLARE(DBL, double)
#undef _GEX_AD_DECLARE

/* The flags the inline path takes as they are. */
#define _GEX_AD_PLAIN_FLAGS                                            \
  ((gex_Flags_t)(GEX_FLAG_IMMEDIATE | GEX_FLAG_RANK_IS_JOBRANK |       \
                 GEX_FLAG_AD_ACQ | GEX_FLAG_AD_REL))

/* Where the operation can be done here and now, else NULL. */
static inline void *_gex_AD_DirectTarget(gex_AD_t ad, gex_DT_t dt,
                                         const void *result_p,
                                         gex_Rank_t tgt_rank, void *tgt_addr,
                                         gex_OP_t opcode, gex_Flags_t flags,
                                         size_t size) {
  const _gex_AD_Head_t *head = (const _gex_AD_Head_t *)(const void *)ad;
  if (ad == NULL || head->key != (_GEX_AD_KEY | dt) ||
      (opcode & head->ops) == 0 || (opcode & (opcode - 1)) != 0 ||
      (flags & ~_GEX_AD_PLAIN_FLAGS) != 0 ||
      ((uintptr_t)tgt_addr & (size - 1)) != 0 ||
      (result_p == NULL && (opcode & (GEX_OP_GET | (0xfffu << 12))) != 0)) {
    return NULL;
  }
  return _gex_RMA_DirectAddress(_gex_direct.tm, tgt_rank, tgt_addr, tgt_addr,
                                size);
}

/* Performs the opcode on an integer at p; returns 0 (and leaves *result_p)
 * where the inline path does not take it (MULT, MIN, MAX). */
#define _GEX_AD_INLINE_INT(T)                                                 \
  static inline int _gex_AD_Direct_##T(T *p, T *result_p, gex_OP_t opcode,    \
                                       T a, T b) {                            \
    T old;                                                                    \
    switch (opcode) {                                                         \
      case GEX_OP_GET:                                                        \
        *result_p = __atomic_load_n(p, __ATOMIC_SEQ_CST);                     \
        return 1;                                                             \
      case GEX_OP_SET:                                                        \
        __atomic_store_n(p, a, __ATOMIC_SEQ_CST);                             \
        return 1;                                                             \
      case GEX_OP_SWAP:                                                       \
        *result_p = __atomic_exchange_n(p, a, __ATOMIC_SEQ_CST);              \
        return 1;                                                             \
      case GEX_OP_CAS:                                                        \
      case GEX_OP_FCAS:                                                       \
        old = a;                                                              \
        __atomic_compare_exchange_n(p, &old, b, 0, __ATOMIC_SEQ_CST,          \
                                    __ATOMIC_SEQ_CST);                        \
        if (opcode == GEX_OP_FCAS) *result_p = old;                           \
        return 1;                                                             \
      case GEX_OP_ADD:                                                        \
        (void)__atomic_fetch_add(p, a, __ATOMIC_SEQ_CST);                     \
        return 1;                                                             \
      case GEX_OP_FADD:                                                       \
        *result_p = __atomic_fetch_add(p, a, __ATOMIC_SEQ_CST);               \
        return 1;                                                             \
      case GEX_OP_SUB:                                                        \
        (void)__atomic_fetch_sub(p, a, __ATOMIC_SEQ_CST);                     \
        return 1;                                                             \
      case GEX_OP_FSUB:                                                       \
        *result_p = __atomic_fetch_sub(p, a, __ATOMIC_SEQ_CST);               \
        return 1;                                                             \
      case GEX_OP_INC:                                                        \
        (void)__atomic_fetch_add(p, (T)1, __ATOMIC_SEQ_CST);                  \
        return 1;                                                             \
      case GEX_OP_FINC:                                                       \
        *result_p = __atomic_fetch_add(p, (T)1, __ATOMIC_SEQ_CST);            \
        return 1;                                                             \
      case GEX_OP_DEC:                                                        \
        (void)__atomic_fetch_sub(p, (T)1, __ATOMIC_SEQ_CST);                  \
        return 1;                                                             \
      case GEX_OP_FDEC:                                                       \
        *result_p = __atomic_fetch_sub(p, (T)1, __ATOMIC_SEQ_CST);            \
        return 1;                                                             \
      case GEX_OP_AND:                                                        \
        (void)__atomic_fetch_and(p, a, __ATOMIC_SEQ_CST);                     \
        return 1;                                                             \
      case GEX_OP_FAND:                                                       \
        *result_p = __atomic_fetch_and(p, a, __ATOMIC_SEQ_CST);               \
        return 1;                                                             \
      case GEX_OP_OR:                                                         \
        (void)__atomic_fetch_or(p, a, __ATOMIC_SEQ_CST);                      \
        return 1;                                                             \
      case GEX_OP_FOR:                                                        \
        *result_p = __atomic_fetch_or(p, a, __ATOMIC_SEQ_CST);                \
        return 1;                                                             \
      case GEX_OP_XOR:                                                        \
        (void)__atomic_fetch_xor(p, a, __ATOMIC_SEQ_CST);                     \
        return 1;                                                             \
      case GEX_OP_FXOR:                                                       \
        *result_p = __atomic_fetch_xor(p, a, __ATOMIC_SEQ_CST);               \
        return 1;                                                             \
      default:                                                                \
        return 0;                                                             \
    }                                                                         \
  }

_GEX_AD_INLINE_INT(int32_t)
_GEX_AD_INLINE_INT(uint32_t)
_GEX_AD_INLINE_INT(int64_t)
_GEX_AD_INLINE_INT(uint64_t)
#undef _GEX_AD_INLINE_INT

/* The calls: integer types try the inline path first. */
#define _GEX_AD_DEFINE_INT(DT, T)                                              \
  static inline gex_Event_t gex_AD_OpNB_##DT(                                  \
      gex_AD_t ad, T *result_p, gex_Rank_t tgt_rank, void *tgt_addr,           \
      gex_OP_t opcode, T operand1, T operand2, gex_Flags_t flags) {            \
    T *p = (T *)_gex_AD_DirectTarget(ad, GEX_DT_##DT, result_p, tgt_rank,      \
                                     tgt_addr, opcode, flags, sizeof(T));      \
    if (p != NULL &&                                                           \
        _gex_AD_Direct_##T(p, result_p, opcode, operand1, operand2)) {         \
      return GEX_EVENT_INVALID;                                                \
    }                                                                          \
    return _gex_AD_OpNB_##DT(ad, result_p, tgt_rank, tgt_addr, opcode,         \
                             operand1, operand2, flags);                       \
  }                                                                            \
  static inline int gex_AD_OpNBI_##DT(gex_AD_t ad, T *result_p,                \
                                      gex_Rank_t tgt_rank, void *tgt_addr,     \
                                      gex_OP_t opcode, T operand1, T operand2, \
                                      gex_Flags_t flags) {                     \
    T *p = (T *)_gex_AD_DirectTarget(ad, GEX_DT_##DT, result_p, tgt_rank,      \
                                     tgt_addr, opcode, flags, sizeof(T));      \
    if (p != NULL &&                                                           \
        _gex_AD_Direct_##T(p, result_p, opcode, operand1, operand2)) {         \
      return 0;                                                                \
    }                                                                          \
    return _gex_AD_OpNBI_##DT(ad, result_p, tgt_rank, tgt_addr, opcode,        \
                              operand1, operand2, flags);                      \
  }                                                                            \
  static inline int gex_AD_OpBlocking_##DT(                                    \
      gex_AD_t ad, T *result_p, gex_Rank_t tgt_rank, void *tgt_addr,          \
      gex_OP_t opcode, T operand1, T operand2, gex_Flags_t flags) {            \
    T *p = (T *)_gex_AD_DirectTarget(ad, GEX_DT_##DT, result_p, tgt_rank,      \
                                     tgt_addr, opcode, flags, sizeof(T));      \
    if (p != NULL &&                                                           \
        _gex_AD_Direct_##T(p, result_p, opcode, operand1, operand2)) {         \
      return 0;                                                                \
    }                                                                          \
    return _gex_AD_OpBlocking_##DT(ad, result_p, tgt_rank, tgt_addr, opcode,   \
                                   operand1, operand2, flags);                 \
  }

/* Floating point: the library (its compare-exchange loops). */
#define _GEX_AD_DEFINE_FP(DT, T)                                               \
  static inline gex_Event_t gex_AD_OpNB_##DT(                                  \
      gex_AD_t ad, T *result_p, gex_Rank_t tgt_rank, void *tgt_addr,           \
      gex_OP_t opcode, T operand1, T operand2, gex_Flags_t flags) {            \
    return _gex_AD_OpNB_##DT(ad, result_p, tgt_rank, tgt_addr, opcode,         \
                             operand1, operand2, flags);                       \
  }                                                                            \
  static inline int gex_AD_OpNBI_##DT(gex_AD_t ad, T *result_p,                \
                                      gex_Rank_t tgt_rank, void *tgt_addr,     \
                                      gex_OP_t opcode, T operand1, T operand2, \
                                      gex_Flags_t flags) {                     \
    return _gex_AD_OpNBI_##DT(ad, result_p, tgt_rank, tgt_addr, opcode,        \
                              operand1, operand2, flags);                      \
  }                                                                            \
  static inline int gex_AD_OpBlocking_##DT(                                    \
      gex_AD_t ad, T *result_p, gex_Rank_t tgt_rank, void *tgt_addr,          \
      gex_OP_t opcode, T operand1, T operand2, gex_Flags_t flags) {            \
    return _gex_AD_OpBlocking_##DT(ad, result_p, tgt_rank, tgt_addr, opcode,   \
                                   operand1, operand2, flags);                 \
  }

_GEX_AD_DEFINE_INT(I32, int32_t)
_GEX_AD_DEFINE_INT(U32, uint32_t)
_GEX_AD_DEFINE_INT(I64, int64_t)
_GEX_AD_DEFINE_INT(U64, uint64_t)
_GEX_AD_DEFINE_FP(FLT, float)
_GEX_AD_DEFINE_FP(DBL, double)
#undef _GEX_AD_DEFINE_INT
#undef _GEX_AD_DEFINE_FP

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GASNET_RATOMIC_H */
