/* A GASNet-EX client that includes only <gasnet.h> and uses what
 * GASNet-EX's gasnet.h brings with it: the tools (GASNETT_IDENT, if_pf,
 * gasnett_* calls) and the portable-platform macros. ident_test reads the
 * linked executable's "$GASNet...$" identification strings; the program is
 * built for every conduit and mode, and never needs to run. */
#include <gasnet.h>

#include "fwd_user.h"

GASNETT_IDENT(ident_client_ident, "$IdentClient: built against gex $");

#if !PLATFORM_COMPILER_VERSION_GE(4, 0, 0)
#error "PLATFORM_COMPILER_VERSION_GE must be usable in #if"
#endif

int main(int argc, char **argv) {
  gasnett_tick_t start = gasnett_ticks_now();
  if_pf(argc < 0) return 2;
  if_pt(argv != NULL) {
    /* The client's own header names GASNet types through gasnet_fwd.h. */
    gex_Rank_t ranks = FwdUserRanks(GEX_TM_INVALID);
    void *page = gasnett_mmap(GASNETT_PAGESIZE);
    gasnett_munmap(page, GASNETT_PAGESIZE);
    printf("%u %" PRIu64 "\n", (unsigned)ranks,
           (uint64_t)gasnett_ticks_to_ns(gasnett_ticks_now() - start));
  }
  return 0;
}
