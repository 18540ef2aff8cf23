/* A client library's header: names GASNet-EX types through gasnet_fwd.h
 * only, as GASNet-EX's gasnet_fwd.h allows, so it needs no threading mode
 * or conduit of its own. */
#ifndef GEX_TESTS_IDENTS_FWD_USER_H_
#define GEX_TESTS_IDENTS_FWD_USER_H_

#include <gasnet_fwd.h>

#if GEX_SPEC_VERSION_MAJOR != 0 || GEX_SPEC_VERSION_MINOR < 19
#error "gasnet_fwd.h must give the specification version"
#endif
#if GASNET_RELEASE_VERSION_MAJOR < 2025
#error "gasnet_fwd.h must give the release version"
#endif

static inline gex_Rank_t FwdUserRanks(gex_TM_t tm) {
  gex_Event_t none = (gex_Event_t)0;
  gex_Client_t client = (gex_Client_t)0;
  gex_EP_t ep = (gex_EP_t)0;
  gex_Segment_t seg = (gex_Segment_t)0;
  gex_AD_t ad = (gex_AD_t)0;
  gex_MK_t mk = (gex_MK_t)0;
  gex_Flags_t flags = 0;
  return (gex_Rank_t)(tm == 0 && none == 0 && client == 0 && ep == 0 &&
                      seg == 0 && ad == 0 && mk == 0 && flags == 0);
}

#endif /* GEX_TESTS_IDENTS_FWD_USER_H_ */
