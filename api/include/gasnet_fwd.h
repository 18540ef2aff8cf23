/* gasnet_fwd.h: GASNet-EX's version macros and basic types, without the
 * rest of the API.
 *
 * A client's own headers include this one to name gex_TM_t, gex_Rank_t,
 * gex_Event_t and the other handle types in their declarations (and to
 * test the versions with #if), so that they need neither a threading mode
 * nor a conduit; the source files that call GASNet include <gasnetex.h>,
 * which includes this header. Valid as C99 and later, and as C++. */
#ifndef GASNET_FWD_H
#define GASNET_FWD_H
#define _GASNET_FWD_H 1
#define _IN_GASNET_FWD_H 1

#include <stddef.h>
#include <stdint.h>

/* Versions: of the release, of the GASNet-EX specification, and of the
 * GASNet-1 specification the legacy gasnet_* calls follow. */
#define GEX_SPEC_VERSION_MAJOR 0
#define GEX_SPEC_VERSION_MINOR 19
#define GASNET_SPEC_VERSION_MAJOR 1
#define GASNET_SPEC_VERSION_MINOR 8
#ifndef GASNET_RELEASE_VERSION_MAJOR /* gasnet_tools.h defines the same */
#define GASNET_RELEASE_VERSION_MAJOR 2025
#define GASNET_RELEASE_VERSION_MINOR 8
#define GASNET_RELEASE_VERSION_PATCH 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Scalars. */
typedef uint32_t gex_Rank_t;
typedef uint32_t gex_Flags_t;
typedef uint8_t gex_AM_Index_t;
typedef int32_t gex_AM_Arg_t;
typedef uint16_t gex_EP_Index_t;
typedef unsigned int gex_EP_Capabilities_t;
typedef unsigned int gex_TI_t;
typedef uint64_t gex_RMA_Value_t;
typedef uint32_t gex_DT_t;
typedef uint32_t gex_OP_t;

/* Opaque handles. */
typedef struct gex_Client_opaque *gex_Client_t;
typedef struct gex_EP_opaque *gex_EP_t;
typedef struct gex_TM_opaque *gex_TM_t;
typedef struct gex_Segment_opaque *gex_Segment_t;
typedef struct gex_Token_opaque *gex_Token_t;
typedef struct gex_Event_opaque *gex_Event_t;
typedef struct gex_AM_SrcDesc_opaque *gex_AM_SrcDesc_t;
typedef struct gex_MK_opaque *gex_MK_t;
typedef struct gex_AD_opaque *gex_AD_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GASNET_FWD_H */
