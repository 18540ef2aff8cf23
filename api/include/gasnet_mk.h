/* gasnet_mk.h: memory kinds (GASNet-EX's memory-kinds extension), as this
 * implementation offers them: host memory only. gex_MK_t, GEX_MK_HOST and
 * GEX_MK_INVALID come from gasnetex.h (included here).
 *
 * A kind is created from a class and its arguments; GEX_MK_CLASS_HOST gives
 * GEX_MK_HOST. The device classes are declared so that clients compile, but
 * no device class is available (GASNET_HAVE_MK_CLASS_MULTIPLE is 0 and
 * GASNET_HAVE_MK_CLASS_CUDA_UVA/_HIP/_ZE are undefined): creating one
 * returns GASNET_ERR_BAD_ARG. */
#ifndef _INCLUDED_GASNET_MK_H
#define _INCLUDED_GASNET_MK_H 1
#define _GASNET_MK_H 1

#include "gasnetex.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GEX_MK_CLASS_HOST = 0,     /* ordinary host memory (GEX_MK_HOST) */
  GEX_MK_CLASS_CUDA_UVA = 1, /* a CUDA device's memory [not available] */
  GEX_MK_CLASS_HIP = 2,      /* a HIP device's memory [not available] */
  GEX_MK_CLASS_ZE = 3        /* a oneAPI Level Zero device's [not available] */
} gex_MK_Class_t;

/* What gex_MK_Create makes: gex_class, and in gex_args the member of that
 * class (none for HOST). gex_flags: reserved, 0. */
typedef struct {
  uint64_t gex_flags;
  gex_MK_Class_t gex_class;
  union {
    struct {
      int gex_CUdevice;
    } gex_class_cuda_uva;
    struct {
      int gex_hipDevice;
    } gex_class_hip;
    struct {
      void *gex_zeDevice;
      void *gex_zeContext;
      uint32_t gex_zeMemoryOrdinal;
    } gex_class_ze;
  } gex_args;
} gex_MK_Create_args_t;

/* Creates a memory kind for `client` (not collective). GASNET_OK with
 * *memkind_p set, or GASNET_ERR_BAD_ARG (NULL arguments, non-zero flags,
 * a class not available here) with *memkind_p GEX_MK_INVALID. */
extern int gex_MK_Create(gex_MK_t *memkind_p, gex_Client_t client,
                         const gex_MK_Create_args_t *args, gex_Flags_t flags);
/* Releases a kind gex_MK_Create made (GEX_MK_HOST: nothing to release). */
extern void gex_MK_Destroy(gex_MK_t kind, gex_Flags_t flags);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* _INCLUDED_GASNET_MK_H */
