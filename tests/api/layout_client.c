/* layout_client: one rank reports where its code, static data, a shared
 * library's code and a fresh heap block are, for same_layout_test: ranks
 * that a spawner of ours starts on one host run with the same address-space
 * layout (as GASNet-EX's smp conduit gives them by forking), so that clients
 * may exchange pointers to functions and static data.
 *
 *   layout   prints "rank R: layout function=0x... static=0x...
 *            library=0x... heap=0x..." (hex addresses). */
#include <gasnetex.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api/client_check.h"

/* Written at run time so that it stays a real object in .data. */
static volatile int layout_static = 7;

static void LayoutMarker(void) { layout_static = layout_static + 1; }

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  int rc = gex_Client_Init(&client, &ep, &tm, "layout_client", &argc, &argv, 0);
  CHECK(rc == GASNET_OK, "gex_Client_Init returned %d", rc);
  check_rank = (int)gex_TM_QueryRank(tm);
  CHECK(argc == 2 && strcmp(argv[1], "layout") == 0,
        "usage: layout_client layout");
  LayoutMarker();
  void *heap = malloc(64);
  CHECK(heap != NULL, "malloc(64) failed");
  /* Function pointers as integers: ISO C has no function-to-object pointer
   * conversion, but the integer one is defined here. */
  Say("layout function=0x%" PRIxPTR " static=0x%" PRIxPTR " library=0x%" PRIxPTR
      " heap=0x%" PRIxPTR,
      (uintptr_t)&LayoutMarker, (uintptr_t)&layout_static, (uintptr_t)&printf,
      (uintptr_t)heap);
  free(heap);
  gex_Coll_BarrierBlocking(tm, 0);
  gasnet_exit(0);
  return 0;
}
