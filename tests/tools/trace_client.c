/* A conduit client compiled with GASNET_TRACE and GASNET_STATS (per target,
 * as --config=trace does for every file), in full mode: gasnetex.h first,
 * then gasnet_tools.h. trace_job_test runs it as a job and reads each
 * rank's trace and statistics files.
 *
 *   trace_client trace   traces and counts (what the driver checks), uses
 *                        the full-mode names, prints "rank R: trace ok ..."
 *   trace_client touch   one GASNETT_TRACE_ENABLED, so that the settings are
 *                        read (bad-settings cases)
 *
 * A failed check prints "rank R: CHECK FAILED ..." and exits 1. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
/* gasnetex.h first, as GASNet requires: it turns on gasnet_tools.h's full
 * mode. */
/* clang-format off */
#include <gasnetex.h>
#include <gasnet_tools.h>
/* clang-format on */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if !defined(GASNET_TRACE) || !defined(GASNET_STATS)
#error "trace_client is built with GASNET_TRACE and GASNET_STATS"
#endif

static int g_rank = -1;

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fflush(stdout);                                                        \
      fprintf(stderr, "rank %d: CHECK FAILED %s:%d: %s\n", g_rank, __FILE__, \
              __LINE__, #cond);                                              \
      _exit(1);                                                              \
    }                                                                        \
  } while (0)

static void stats_callback(gasnett_stats_printf_fn_t printfn) {
  printfn("callback of rank %d", g_rank);
}

/* The full-mode formatters against gasnetex.h's own constants. */
static void check_full_mode(gex_TM_t tm) {
  char buf[512];
  size_t n;
  n = gasnett_format_dt(NULL, GEX_DT_I32 | GEX_DT_DBL);
  CHECK(n == strlen("GEX_DT_I32|GEX_DT_DBL") + 1);
  CHECK(gasnett_format_dt(buf, GEX_DT_I32 | GEX_DT_DBL) == n);
  CHECK(strcmp(buf, "GEX_DT_I32|GEX_DT_DBL") == 0);
#define CHECK_NAME(fn, value, text)        \
  do {                                     \
    CHECK(fn(buf, value) == sizeof(text)); \
    CHECK(strcmp(buf, text) == 0);         \
  } while (0)
  CHECK_NAME(gasnett_format_dt, GEX_DT_I32, "GEX_DT_I32");
  CHECK_NAME(gasnett_format_dt, GEX_DT_U32, "GEX_DT_U32");
  CHECK_NAME(gasnett_format_dt, GEX_DT_I64, "GEX_DT_I64");
  CHECK_NAME(gasnett_format_dt, GEX_DT_U64, "GEX_DT_U64");
  CHECK_NAME(gasnett_format_dt, GEX_DT_FLT, "GEX_DT_FLT");
  CHECK_NAME(gasnett_format_dt, GEX_DT_DBL, "GEX_DT_DBL");
  CHECK_NAME(gasnett_format_dt, GEX_DT_USER, "GEX_DT_USER");
  CHECK_NAME(gasnett_format_dt, 0, "(empty)");
  CHECK_NAME(gasnett_format_dt, 1u << 30, "(invalid)");
  CHECK_NAME(gasnett_format_op, GEX_OP_ADD, "GEX_OP_ADD");
  CHECK_NAME(gasnett_format_op, GEX_OP_MULT, "GEX_OP_MULT");
  CHECK_NAME(gasnett_format_op, GEX_OP_MIN, "GEX_OP_MIN");
  CHECK_NAME(gasnett_format_op, GEX_OP_MAX, "GEX_OP_MAX");
  CHECK_NAME(gasnett_format_op, GEX_OP_SUB, "GEX_OP_SUB");
  CHECK_NAME(gasnett_format_op, GEX_OP_INC, "GEX_OP_INC");
  CHECK_NAME(gasnett_format_op, GEX_OP_DEC, "GEX_OP_DEC");
  CHECK_NAME(gasnett_format_op, GEX_OP_AND, "GEX_OP_AND");
  CHECK_NAME(gasnett_format_op, GEX_OP_OR, "GEX_OP_OR");
  CHECK_NAME(gasnett_format_op, GEX_OP_XOR, "GEX_OP_XOR");
  CHECK_NAME(gasnett_format_op, GEX_OP_SET, "GEX_OP_SET");
  CHECK_NAME(gasnett_format_op, GEX_OP_CAS, "GEX_OP_CAS");
  CHECK_NAME(gasnett_format_op, GEX_OP_FADD, "GEX_OP_FADD");
  CHECK_NAME(gasnett_format_op, GEX_OP_FMULT, "GEX_OP_FMULT");
  CHECK_NAME(gasnett_format_op, GEX_OP_FMIN, "GEX_OP_FMIN");
  CHECK_NAME(gasnett_format_op, GEX_OP_FMAX, "GEX_OP_FMAX");
  CHECK_NAME(gasnett_format_op, GEX_OP_FSUB, "GEX_OP_FSUB");
  CHECK_NAME(gasnett_format_op, GEX_OP_FINC, "GEX_OP_FINC");
  CHECK_NAME(gasnett_format_op, GEX_OP_FDEC, "GEX_OP_FDEC");
  CHECK_NAME(gasnett_format_op, GEX_OP_FAND, "GEX_OP_FAND");
  CHECK_NAME(gasnett_format_op, GEX_OP_FOR, "GEX_OP_FOR");
  CHECK_NAME(gasnett_format_op, GEX_OP_FXOR, "GEX_OP_FXOR");
  CHECK_NAME(gasnett_format_op, GEX_OP_SWAP, "GEX_OP_SWAP");
  CHECK_NAME(gasnett_format_op, GEX_OP_FCAS, "GEX_OP_FCAS");
  CHECK_NAME(gasnett_format_op, GEX_OP_GET, "GEX_OP_GET");
  CHECK_NAME(gasnett_format_op, GEX_OP_USER, "GEX_OP_USER");
  CHECK_NAME(gasnett_format_op, GEX_OP_USER_NC, "GEX_OP_USER_NC");
  CHECK_NAME(gasnett_format_op, GEX_OP_ADD | GEX_OP_FADD,
             "GEX_OP_ADD|GEX_OP_FADD");
  CHECK_NAME(gasnett_format_ti, GEX_TI_SRCRANK, "GEX_TI_SRCRANK");
  CHECK_NAME(gasnett_format_ti, GEX_TI_ENTRY, "GEX_TI_ENTRY");
  CHECK_NAME(gasnett_format_ti, GEX_TI_IS_REQ, "GEX_TI_IS_REQ");
  CHECK_NAME(gasnett_format_ti, GEX_TI_IS_LONG, "GEX_TI_IS_LONG");
  CHECK_NAME(gasnett_format_ti, GEX_TI_EP, "GEX_TI_EP");
  CHECK_NAME(gasnett_format_ti, GEX_TI_ALL,
             "GEX_TI_SRCRANK|GEX_TI_ENTRY|GEX_TI_IS_REQ|GEX_TI_IS_LONG|"
             "GEX_TI_EP");

  /* VIS descriptions: the total bytes, and text that names each piece. */
  {
    static char a[64], b[64];
    gex_Memvec_t list[2];
    void *addrs[3];
    char *text;
    char piece[64];
    list[0].gex_addr = a;
    list[0].gex_len = 10;
    list[1].gex_addr = b;
    list[1].gex_len = 7;
    text = (char *)malloc(gasnett_format_memveclist_bufsz(2));
    CHECK(gasnett_format_memveclist(text, 2, list) == 17);
    snprintf(piece, sizeof(piece), "[%p,10]", (void *)a);
    CHECK(strstr(text, piece) != NULL);
    CHECK(strstr(text, "(2 entries, 17 bytes)") != NULL);
    CHECK(strlen(text) < gasnett_format_memveclist_bufsz(2));
    free(text);
    addrs[0] = a;
    addrs[1] = b;
    addrs[2] = a + 8;
    text = (char *)malloc(gasnett_format_addrlist_bufsz(3));
    CHECK(gasnett_format_addrlist(text, 3, addrs, 8) == 24);
    CHECK(strstr(text, "(3 entries of 8 bytes, 24 bytes)") != NULL);
    free(text);
  }
  {
    static char dst[256], src[256];
    ptrdiff_t dststrides[2] = {16, 64};
    ptrdiff_t srcstrides[2] = {8, 32};
    size_t count[2] = {2, 3};
    char *text = (char *)malloc(gasnett_format_putsgets_bufsz(2));
    CHECK(gasnett_format_putsgets(text, NULL, tm, 0, dst, dststrides, src,
                                  srcstrides, 4, count, 2) == 24);
    CHECK(strstr(text, "(24 data bytes)") != NULL);
    CHECK(strstr(text, "strides=[16, 64]") != NULL);
    CHECK(strstr(text, "strides=[8, 32]") != NULL);
    CHECK(strstr(text, "count=[2, 3]") != NULL);
    CHECK(strlen(text) < gasnett_format_putsgets_bufsz(2));
    free(text);
  }

  CHECK((uint64_t)GASNETT_MAX_THREADS == gex_System_QueryMaxThreads());

  /* The diagnostics: their handlers registered first, as testinternal
   * does, then every section with 3 threads. */
  {
    gex_AM_Entry_t *table = NULL;
    int count = -1;
    gasnett_diagnostic_gethandlers(&table, &count);
    CHECK(table != NULL && count == 0);
    CHECK(gex_EP_RegisterHandlers(gex_TM_QueryEP(tm), table, (size_t)count) ==
          GASNET_OK);
    CHECK(gasnett_run_diagnostics(10, 3, NULL, tm, NULL, 0, NULL) == 0);
    CHECK(gasnett_run_diagnostics(5, 1, "AF", tm, NULL, 0, NULL) == 0);
  }
}

static void mode_trace(gex_TM_t tm) {
  const char *file = NULL;
  unsigned int line = 0;
  const char *mask = GASNETT_TRACE_GETMASK();
  char saved_mask[64];
  int traced = 0;
  snprintf(saved_mask, sizeof(saved_mask), "%s", mask);
  CHECK(GASNETT_TRACE_ENABLED);

  /* Source lines: set, read back, frozen, unfrozen. */
  GASNETT_TRACE_SETSOURCELINE("trace_client.c", 100 + g_rank);
  GASNETT_TRACE_GETSOURCELINE(&file, &line);
  CHECK(file != NULL && strcmp(file, "trace_client.c") == 0);
  CHECK(line == (unsigned int)(100 + g_rank));
  GASNETT_TRACE_PRINTF("hello from rank %d", g_rank);
  ++traced;
  GASNETT_TRACE_FREEZESOURCELINE();
  GASNETT_TRACE_SETSOURCELINE("elsewhere.c", 1);
  GASNETT_TRACE_GETSOURCELINE(&file, &line);
  CHECK(strcmp(file, "trace_client.c") == 0);
  CHECK(line == (unsigned int)(100 + g_rank));
  GASNETT_TRACE_UNFREEZESOURCELINE();
  GASNETT_TRACE_SETSOURCELINE("trace_client.c", 200);
  GASNETT_TRACE_GETSOURCELINE(&file, &line);
  CHECK(line == 200u);

  /* A mask without H: PRINTF writes nothing, FORCE still does. */
  GASNETT_TRACE_SETMASK("I");
  CHECK(strcmp(GASNETT_TRACE_GETMASK(), "I") == 0);
  CHECK(!GASNETT_TRACE_ENABLED);
  GASNETT_TRACE_PRINTF("suppressed from rank %d", g_rank);
  ++traced;
  GASNETT_TRACE_PRINTF_FORCE("forced from rank %d", g_rank);
  ++traced;
  GASNETT_TRACE_SETMASK(saved_mask);
  CHECK(strcmp(GASNETT_TRACE_GETMASK(), saved_mask) == 0);
  /* Inverted: everything but H. */
  GASNETT_TRACE_SETMASK("^H");
  CHECK(!GASNETT_TRACE_ENABLED);
  CHECK(strchr(GASNETT_TRACE_GETMASK(), 'I') != NULL);
  GASNETT_TRACE_SETMASK(saved_mask);

  CHECK(GASNETT_TRACE_GET_TRACELOCAL() == 1);
  GASNETT_TRACE_SET_TRACELOCAL(0);
  CHECK(GASNETT_TRACE_GET_TRACELOCAL() == 0);
  GASNETT_TRACE_SET_TRACELOCAL(1);

  /* Statistics: lines, a dump with reset, then one more message that the
   * exit-time dump must count alone. */
  CHECK(GASNETT_STATS_INIT(stats_callback) == 1);
  CHECK(strlen(GASNETT_STATS_GETMASK()) > 0);
  GASNETT_STATS_PRINTF("stats line from rank %d", g_rank);
  GASNETT_STATS_SETMASK("");
  GASNETT_STATS_PRINTF("suppressed stats line from rank %d", g_rank);
  GASNETT_STATS_PRINTF_FORCE("forced stats line from rank %d", g_rank);
  GASNETT_STATS_SETMASK("H");
  CHECK(strcmp(GASNETT_STATS_GETMASK(), "H") == 0);
  GASNETT_STATS_DUMP(1);
  GASNETT_TRACE_PRINTF("after the dump from rank %d", g_rank);

  check_full_mode(tm);
  printf("rank %d: trace ok traced=%d mask=%s\n", g_rank, traced,
         GASNETT_TRACE_GETMASK());
  fflush(stdout);
}

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  int rc = gex_Client_Init(&client, &ep, &tm, "trace_client", &argc, &argv, 0);
  CHECK(rc == GASNET_OK);
  g_rank = (int)gex_TM_QueryRank(tm);
  CHECK(argc == 2);
  if (strcmp(argv[1], "trace") == 0) {
    mode_trace(tm);
  } else if (strcmp(argv[1], "touch") == 0) {
    printf("rank %d: touch enabled=%d\n", g_rank, GASNETT_TRACE_ENABLED);
  } else {
    CHECK(!"unknown mode");
  }
  gex_Coll_BarrierBlocking(tm, 0);
  /* Return, not gasnet_exit: the trace and statistics files are closed (and
   * the final statistics written) by the process's exit handlers. */
  return 0;
}
