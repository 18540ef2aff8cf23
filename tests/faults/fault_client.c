/* fault_client: one rank of a job that a fault is injected into, started by
 * gasnetrun_<conduit> from fault_injection_test, which picks the fault and
 * its moment and judges the job from the outside. It exists to give the
 * faults a job with a life worth interrupting (start-up, sequenced traffic,
 * a flood, collectives, the exit) and to leave behind, in files that
 * survive a SIGKILL, what it had delivered: the driver checks that no
 * message delivered before the fault was lost or duplicated. Public headers
 * only; built with -Wall -Wextra -Wpedantic -Werror.
 *
 *   fault_client <dir> <msgs>
 *
 * <dir> is the trial's directory. Every rank writes there (with write(2),
 * so nothing waits in a stdio buffer when the rank is killed):
 *   <R>.pid               its pid, right after gex_Client_Init
 *   <R>.job               its GEX_JOB_ID (names its shared memory)
 *   phase.<name>.<R>      created as the rank enters a phase
 *   recv.<R>              "S K\n": sequenced Request K from rank S ran its
 *                         handler here (written before the Reply is sent)
 *   ack.<R>               "D K\n": the Reply to Request K sent to rank D
 *                         came back (so rank D logged K before replying)
 *
 * Phases, in order:
 *   startup     after gex_Client_Init: gex_Segment_Attach, handlers, a
 *               barrier
 *   traffic     <msgs> AM Short Requests to each other rank, carrying their
 *               sequence number; the rank polls until every Reply is back
 *   flood       4 * <msgs> AM Medium Requests of 4 KiB (or the largest
 *               Medium every conduit takes, if smaller) round the job
 *               (flow control, not logged); every Reply back, a barrier,
 *               then each rank checks it ran exactly the expected number
 *   collective  <msgs> / 2 (at least 8) ReduceToAll sums, each checked, and
 *               as many barriers
 *   exit        gasnet_exit(0)
 *
 * "A rank that exits alone" comes from the environment:
 * FAULTS_EXIT_RANK=R, FAULTS_EXIT_PHASE=<name>, FAULTS_EXIT_AFTER=I and
 * FAULTS_EXIT_CODE=C make rank R call exit(C) at step I of that phase (or
 * at its start when the phase has fewer steps).
 *
 * A misuse or a failed check prints "rank R: fault_client: ..." on stderr
 * and ends the rank with _exit(1). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <gasnet.h>
#include <gasnetex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kSegSize = 1 << 20, kFloodBytes = 4096, kMaxPath = 4096 };

enum {
  kSeqIndex = GEX_AM_INDEX_BASE,
  kSeqReplyIndex,
  kFloodIndex,
  kFloodReplyIndex
};

static gex_Client_t g_client;
static gex_EP_t g_ep;
static gex_TM_t g_tm;
static gex_Segment_t g_seg;
static gex_Rank_t g_me;
static gex_Rank_t g_n;
static const char *g_dir;
static int g_recv_fd = -1;
static int g_ack_fd = -1;

static volatile long g_acks;
static volatile long g_flood_replies;
static volatile long g_flood_received;
static size_t g_flood_bytes;

/* The self-exit of FAULTS_EXIT_*: the phase's name, step and code. */
static const char *g_exit_phase;
static long g_exit_after;
static int g_exit_code;

static void Die(const char *fmt, ...) __attribute__((format(printf, 1, 2)))
__attribute__((noreturn));

static void Die(const char *fmt, ...) {
  char message[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  fprintf(stderr, "rank %d: fault_client: %s\n", (int)g_me, message);
  fflush(stderr);
  _exit(1);
}

static int OpenIn(const char *name, int flags) {
  char path[kMaxPath];
  int fd;
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  fd = open(path, flags | O_CLOEXEC, 0644);
  if (fd < 0) Die("cannot open %s: %s", path, strerror(errno));
  return fd;
}

/* One whole line with one write(2): a kill between two writes cannot tear
 * a record. */
static void WriteLine(int fd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void WriteLine(int fd, const char *fmt, ...) {
  char line[160];
  int len;
  va_list ap;
  va_start(ap, fmt);
  len = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (write(fd, line, (size_t)len) != len) Die("write failed");
}

static void MaybeExitAlone(const char *phase, long step) {
  if (g_exit_phase != NULL && strcmp(g_exit_phase, phase) == 0 &&
      step == g_exit_after) {
    exit(g_exit_code);
  }
}

/* Marks the start of a phase for the driver, and runs a self-exit due at
 * its start. */
static void EnterPhase(const char *phase) {
  char name[128];
  snprintf(name, sizeof name, "phase.%s.%d", phase, (int)g_me);
  close(OpenIn(name, O_WRONLY | O_CREAT | O_TRUNC));
  if (g_exit_phase != NULL && strcmp(g_exit_phase, phase) == 0 &&
      g_exit_after <= 0) {
    exit(g_exit_code);
  }
}

static void SeqRequest(gex_Token_t token, gex_AM_Arg_t seq) {
  gex_Token_Info_t info;
  if (gex_Token_Info(token, &info, GEX_TI_SRCRANK) == 0) {
    Die("gex_Token_Info gave no source rank");
  }
  WriteLine(g_recv_fd, "%u %ld\n", (unsigned)info.gex_srcrank, (long)seq);
  if (gex_AM_ReplyShort1(token, kSeqReplyIndex, 0, seq) != GASNET_OK) {
    Die("gex_AM_ReplyShort1 failed");
  }
}

static void SeqReply(gex_Token_t token, gex_AM_Arg_t seq) {
  gex_Token_Info_t info;
  if (gex_Token_Info(token, &info, GEX_TI_SRCRANK) == 0) {
    Die("gex_Token_Info gave no source rank");
  }
  WriteLine(g_ack_fd, "%u %ld\n", (unsigned)info.gex_srcrank, (long)seq);
  ++g_acks;
}

static void FloodRequest(gex_Token_t token, void *buf, size_t nbytes) {
  (void)buf;
  if (nbytes != g_flood_bytes) Die("a flood message of %zu bytes", nbytes);
  ++g_flood_received;
  if (gex_AM_ReplyShort0(token, kFloodReplyIndex, 0) != GASNET_OK) {
    Die("gex_AM_ReplyShort0 failed");
  }
}

static void FloodReply(gex_Token_t token) {
  (void)token;
  ++g_flood_replies;
}

static void RegisterHandlers(void) {
  gex_AM_Entry_t entries[] = {
      {kSeqIndex, (gex_AM_Fn_t)SeqRequest,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, NULL, "seq"},
      {kSeqReplyIndex, (gex_AM_Fn_t)SeqReply,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 1, NULL, "seq_reply"},
      {kFloodIndex, (gex_AM_Fn_t)FloodRequest,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, NULL, "flood"},
      {kFloodReplyIndex, (gex_AM_Fn_t)FloodReply,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, NULL, "flood_reply"},
  };
  if (gex_EP_RegisterHandlers(
          g_ep, entries, sizeof entries / sizeof entries[0]) != GASNET_OK) {
    Die("gex_EP_RegisterHandlers failed");
  }
}

static void Traffic(long msgs) {
  long k;
  gex_Rank_t d;
  long step = 0;
  for (k = 0; k < msgs; ++k) {
    for (d = 1; d < g_n; ++d) {
      const gex_Rank_t peer = (g_me + d) % g_n;
      MaybeExitAlone("traffic", step++);
      if (gex_AM_RequestShort1(g_tm, peer, kSeqIndex, 0, (gex_AM_Arg_t)k) !=
          GASNET_OK) {
        Die("gex_AM_RequestShort1 failed");
      }
    }
    gasnet_AMPoll();
  }
  while (g_acks < msgs * (long)(g_n - 1)) gasnet_AMPoll();
}

static void Flood(long msgs) {
  static unsigned char payload[kFloodBytes];
  long k;
  const long sends = g_n > 1 ? msgs : 0;
  const long expected = sends; /* each rank sends to one rank per step,
                                  round the job: all receive equally */
  gex_Rank_t peer = (g_me + 1) % g_n;
  memset(payload, (int)g_me, sizeof payload);
  for (k = 0; k < sends; ++k) {
    MaybeExitAlone("flood", k);
    if (gex_AM_RequestMedium0(g_tm, peer, kFloodIndex, payload, g_flood_bytes,
                              GEX_EVENT_NOW, 0) != GASNET_OK) {
      Die("gex_AM_RequestMedium0 failed");
    }
    peer = (peer + 1) % g_n;
    if (peer == g_me) peer = (peer + 1) % g_n;
    gasnet_AMPoll();
  }
  while (g_flood_replies < sends) gasnet_AMPoll();
  gex_Coll_BarrierBlocking(g_tm, 0);
  /* Every rank sends `sends` messages spread evenly over the others, in
   * the same order of offsets; the job receives n * sends in all, and
   * each rank its share: check the whole with a reduction below. */
  {
    int64_t mine = g_flood_received;
    int64_t total = 0;
    gex_Event_Wait(gex_Coll_ReduceToAllNB(g_tm, &total, &mine, GEX_DT_I64,
                                          sizeof total, 1, GEX_OP_ADD, NULL,
                                          NULL, 0));
    if (total != (int64_t)expected * (int64_t)g_n) {
      Die("the flood delivered %lld messages in all, expected %lld",
          (long long)total, (long long)expected * (long long)g_n);
    }
  }
}

static void Collective(long rounds) {
  long k;
  for (k = 0; k < rounds; ++k) {
    int64_t mine = (int64_t)g_me + k;
    int64_t sum = 0;
    const int64_t want =
        (int64_t)g_n * (int64_t)(g_n - 1) / 2 + (int64_t)g_n * k;
    MaybeExitAlone("collective", k);
    gex_Event_Wait(gex_Coll_ReduceToAllNB(g_tm, &sum, &mine, GEX_DT_I64,
                                          sizeof sum, 1, GEX_OP_ADD, NULL, NULL,
                                          0));
    if (sum != want) {
      Die("reduction %ld gave %lld, expected %lld", k, (long long)sum,
          (long long)want);
    }
    gex_Coll_BarrierBlocking(g_tm, 0);
  }
}

static long ParseLong(const char *text, const char *what) {
  char *end = NULL;
  long value;
  errno = 0;
  value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') {
    Die("bad %s '%s'", what, text);
  }
  return value;
}

static void ReadSelfExit(void) {
  const char *rank = getenv("FAULTS_EXIT_RANK");
  if (rank == NULL || ParseLong(rank, "FAULTS_EXIT_RANK") != (long)g_me) {
    return;
  }
  g_exit_phase = getenv("FAULTS_EXIT_PHASE");
  if (g_exit_phase == NULL) Die("FAULTS_EXIT_RANK without FAULTS_EXIT_PHASE");
  g_exit_after =
      ParseLong(getenv("FAULTS_EXIT_AFTER") ? getenv("FAULTS_EXIT_AFTER") : "0",
                "FAULTS_EXIT_AFTER");
  g_exit_code = (int)ParseLong(
      getenv("FAULTS_EXIT_CODE") ? getenv("FAULTS_EXIT_CODE") : "1",
      "FAULTS_EXIT_CODE");
}

int main(int argc, char **argv) {
  long msgs;
  const char *job;
  int pid_fd;
  char name[64];

  if (gex_Client_Init(&g_client, &g_ep, &g_tm, "FAULTS", &argc, &argv, 0) !=
      GASNET_OK) {
    Die("gex_Client_Init failed");
  }
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  if (argc != 3) Die("usage: fault_client <dir> <msgs>");
  g_dir = argv[1];
  msgs = ParseLong(argv[2], "<msgs>");
  if (msgs < 1) Die("<msgs> must be at least 1, not %ld", msgs);
  ReadSelfExit();

  snprintf(name, sizeof name, "%d.pid", (int)g_me);
  pid_fd = OpenIn(name, O_WRONLY | O_CREAT | O_TRUNC);
  WriteLine(pid_fd, "%ld\n", (long)getpid());
  close(pid_fd);
  snprintf(name, sizeof name, "%d.job", (int)g_me);
  pid_fd = OpenIn(name, O_WRONLY | O_CREAT | O_TRUNC);
  job = getenv("GEX_JOB_ID");
  WriteLine(pid_fd, "%s\n", job != NULL ? job : "");
  close(pid_fd);
  snprintf(name, sizeof name, "recv.%d", (int)g_me);
  g_recv_fd = OpenIn(name, O_WRONLY | O_CREAT | O_APPEND);
  snprintf(name, sizeof name, "ack.%d", (int)g_me);
  g_ack_fd = OpenIn(name, O_WRONLY | O_CREAT | O_APPEND);

  EnterPhase("startup");
  if (gex_Segment_Attach(&g_seg, g_tm, kSegSize) != GASNET_OK) {
    Die("gex_Segment_Attach failed");
  }
  RegisterHandlers();
  /* Before the barrier: a peer's flood may arrive while this rank is still
   * in its traffic phase. */
  g_flood_bytes = gex_AM_LUBRequestMedium();
  if (g_flood_bytes > kFloodBytes) g_flood_bytes = kFloodBytes;
  printf("rank %d: job=%s pid=%ld\n", (int)g_me, job != NULL ? job : "",
         (long)getpid());
  fflush(stdout);
  gex_Coll_BarrierBlocking(g_tm, 0);

  EnterPhase("traffic");
  Traffic(msgs);
  EnterPhase("flood");
  Flood(4 * msgs);
  EnterPhase("collective");
  Collective(msgs / 2 < 8 ? 8 : msgs / 2);
  EnterPhase("exit");
  printf("rank %d: done\n", (int)g_me);
  gasnet_exit(0);
  return 0;
}
