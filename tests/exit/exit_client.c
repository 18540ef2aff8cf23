/* exit_client: one rank of a job that ends in one chosen way, started by
 * gasnetrun_<conduit> from exit_job_test, which judges the job from the
 * outside (exit code, survivors, leaked shared memory, delivered output).
 * It exists to drive every exit path of the graceful exit (issue 7) through
 * the public headers only, on any conduit (exit_tests.bzl builds it once per
 * conduit); it is built with -Wall -Wextra -Wpedantic -Werror.
 *
 *   exit_client <mode> <code>
 *
 * Every rank: gex_Client_Init, gex_Segment_Attach (1 MiB), registers its AM
 * handlers, prints and flushes "rank R: job=<GEX_JOB_ID> pid=<pid>", waits
 * in a barrier, then prints "rank R line K" (K = 0, 1, 2) WITHOUT flushing
 * them (stdout is a pipe: they stay in the stdio buffer, and only the exit
 * path can deliver them), waits in a second barrier (so every rank's lines
 * are written before any exit begins), then does its mode. The "exiter" is rank
 * N-1 (rank 0 for rank0-dead); "the others" are every other rank; "spin" means
 * looping forever on gasnet_AMPoll().
 *
 *   collective       every rank calls gasnet_exit(code)
 *   barrier          exiter gasnet_exit(code); the others wait forever in
 *                    an anonymous gasnet_barrier_notify/wait
 *   spin             exiter gasnet_exit(code); the others spin
 *   mismatch         before gex_Segment_Attach, the exiter waits in
 *                    gex_Coll_BarrierBlocking while the others attach
 *                    (bootstrap collectives): the job can only end by
 *                    GASNET_BOOTSTRAP_TIMEOUT, whose message names both
 *                    calls
 *   compute          exiter gasnet_exit(code); the others count in a loop
 *                    that never polls nor calls GASNet (only a signal
 *                    reaches them)
 *   rma              exiter gasnet_exit(code); the others loop forever on a
 *                    4 KiB gex_RMA_PutBlocking then GetBlocking to/from the
 *                    next rank's segment, never polling
 *   return-all       every rank returns code from main
 *   return-one       exiter returns code from main; the others spin
 *   exit-all         every rank calls exit(code)
 *   exit-one         exiter calls exit(code); the others spin
 *   request-handler  exiter sends an AM Short Request to rank 0 whose
 *                    handler calls gasnet_exit(code); every rank spins
 *   reply-handler    exiter sends an AM Short Request to rank 0 that
 *                    replies; the Reply handler (on the exiter) calls
 *                    gasnet_exit(code); every rank spins
 *   sigsegv          exiter stores to a page mapped without access; the
 *                    others spin
 *   sigabrt          exiter calls abort(); the others spin
 *   launcher-signal  rank 0 creates the file named by
 *                    $EXIT_TEST_READY_FILE (the test then signals the
 *                    launcher); every rank spins
 *   sigkill          exiter flushes stdout and SIGKILLs itself; the others
 *                    spin
 *   threads          (PAR build only) every rank runs 3 threads sending AM
 *                    Requests round the job and polling; once its threads
 *                    have had 200 replies, the exiter's main thread and one
 *                    of its threads call gasnet_exit(code) at the same
 *                    time; the others' main threads spin
 *   rank0-dead       as sigkill, but the exiter is rank 0
 *   sigquit-handler  every rank installs a SIGQUIT handler that writes
 *                    "rank R: SIGQUIT" (write(2)) and returns; exiter
 *                    gasnet_exit(code); the others spin
 *   sigquit-default  as spin (no SIGQUIT handler of the client's own)
 *   traffic-launcher  every rank floods the next ranks with AM Medium
 *                    Requests (1 KiB, each answered) and polls, forever;
 *                    once rank 0 has had 300 replies it creates
 *                    $EXIT_TEST_READY_FILE (the test then signals the
 *                    launcher) and goes on. So the end signal lands while
 *                    the ranks are inside the conduit's sends and polls
 *   traffic-rank     as traffic-launcher, but rank 0 itself sends signal
 *                    <code> (SIGTERM, SIGINT, SIGHUP or SIGQUIT; any
 *                    other: SIGTERM) to the exiter's pid (put into rank
 *                    0's segment before the traffic starts) once it has
 *                    had 300 replies
 *   (In the PAR client, two more threads of every rank flood and poll
 *   beside the main thread in both traffic modes.)
 *
 * A misuse of the client itself (bad arguments, a failed call) prints
 * "rank R: exit_client: ..." on stderr and ends the rank with _exit(1). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */

#include <fcntl.h>
#include <gasnet.h>
#include <gasnetex.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#ifdef GASNET_PAR
#include <pthread.h>
#include <stdatomic.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kSegSize = 1 << 20, kRmaBytes = 4096 };

enum {
  kExitRequestIndex = GEX_AM_INDEX_BASE,
  kAskReplyIndex,
  kExitReplyIndex,
  kPingIndex,
  kPongIndex,
  kFloodIndex
};

static gex_Client_t g_client;
static gex_EP_t g_ep;
static gex_TM_t g_tm;
static gex_Segment_t g_seg;
static gex_Rank_t g_me;
static gex_Rank_t g_n;
static int g_code;

/* Written by the SIGQUIT handler with write(2) (async-signal-safe). */
static char g_sigquit_line[64];
static size_t g_sigquit_len;

static unsigned char g_rma_buf[kRmaBytes];

static void Die(const char *fmt, ...) __attribute__((format(printf, 1, 2)))
__attribute__((noreturn));

static void Die(const char *fmt, ...) {
  char message[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  fprintf(stderr, "rank %d: exit_client: %s\n", (int)g_me, message);
  fflush(stderr);
  _exit(1);
}

/* A store to a page mapped without access: a real SIGSEGV, and not
 * undefined behaviour (which UBSan would report instead of letting the
 * fault happen, as it does for a store through NULL). */
static void Fault(void) {
  int *volatile page =
      (int *)mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if ((void *)page == MAP_FAILED) Die("mmap failed");
  *page = 1;
}

static void Spin(void) __attribute__((noreturn));
static void Spin(void) {
  for (;;) gasnet_AMPoll();
}

/* Never polls and makes no call into GASNet: only a signal reaches it. */
static void Compute(void) __attribute__((noreturn));
static void Compute(void) {
  volatile unsigned long counter = 0;
  for (;;) ++counter;
}

static void ExitRequest(gex_Token_t token) {
  (void)token;
  gasnet_exit(g_code);
}

static void AskReply(gex_Token_t token) {
  if (gex_AM_ReplyShort0(token, kExitReplyIndex, 0) != GASNET_OK) {
    Die("gex_AM_ReplyShort0 failed");
  }
}

static void ExitReply(gex_Token_t token) {
  (void)token;
  gasnet_exit(g_code);
}

#ifdef GASNET_PAR
static atomic_long g_pongs;
#else
static long g_pongs;
#endif

static void Ping(gex_Token_t token) {
  if (gex_AM_ReplyShort0(token, kPongIndex, 0) != GASNET_OK) {
    Die("gex_AM_ReplyShort0 failed");
  }
}

static void Pong(gex_Token_t token) {
  (void)token;
#ifdef GASNET_PAR
  atomic_fetch_add(&g_pongs, 1);
#else
  ++g_pongs;
#endif
}

static void Flood(gex_Token_t token, void *buf, size_t nbytes) {
  (void)buf;
  (void)nbytes;
  if (gex_AM_ReplyShort0(token, kPongIndex, 0) != GASNET_OK) {
    Die("gex_AM_ReplyShort0 failed");
  }
}

static void RegisterHandlers(void) {
  gex_AM_Entry_t entries[] = {
      {kPingIndex, (gex_AM_Fn_t)Ping, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST,
       0, NULL, "ping"},
      {kPongIndex, (gex_AM_Fn_t)Pong, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0,
       NULL, "pong"},
      {kFloodIndex, (gex_AM_Fn_t)Flood,
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, NULL, "flood"},
      {kExitRequestIndex, (gex_AM_Fn_t)ExitRequest,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, NULL, "exit_request"},
      {kAskReplyIndex, (gex_AM_Fn_t)AskReply,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, NULL, "ask_reply"},
      {kExitReplyIndex, (gex_AM_Fn_t)ExitReply,
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, NULL, "exit_reply"},
  };
  if (gex_EP_RegisterHandlers(
          g_ep, entries, sizeof entries / sizeof entries[0]) != GASNET_OK) {
    Die("gex_EP_RegisterHandlers failed");
  }
}

static void OnSigquit(int sig) {
  (void)sig;
  ssize_t ignored = write(STDOUT_FILENO, g_sigquit_line, g_sigquit_len);
  (void)ignored;
}

static void InstallSigquitHandler(void) {
  struct sigaction sa;
  snprintf(g_sigquit_line, sizeof g_sigquit_line, "rank %d: SIGQUIT\n",
           (int)g_me);
  g_sigquit_len = strlen(g_sigquit_line);
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnSigquit;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGQUIT, &sa, NULL) != 0) Die("sigaction(SIGQUIT) failed");
}

/* The others' loop of the rma mode: never returns, never polls. */
static void RmaForever(void) __attribute__((noreturn));
static void RmaForever(void) {
  const gex_Rank_t next = (g_me + 1) % g_n;
  void *owner = NULL;
  uintptr_t size = 0;
  gex_Event_t ev =
      gex_EP_QueryBoundSegmentNB(g_tm, next, &owner, NULL, &size, 0);
  gex_Event_Wait(ev);
  if (owner == NULL || size < 2 * kRmaBytes) {
    Die("rank %d's segment is unknown", (int)next);
  }
  memset(g_rma_buf, (int)g_me, sizeof g_rma_buf);
  for (;;) {
    if (gex_RMA_PutBlocking(g_tm, next, owner, g_rma_buf, kRmaBytes, 0) != 0) {
      Die("gex_RMA_PutBlocking failed");
    }
    if (gex_RMA_GetBlocking(g_tm, g_rma_buf, next,
                            (unsigned char *)owner + kRmaBytes, kRmaBytes,
                            0) != 0) {
      Die("gex_RMA_GetBlocking failed");
    }
  }
}

static void KillSelf(void) __attribute__((noreturn));
static void KillSelf(void) {
  /* A SIGKILLed process cannot flush: its lines are written only if it
   * flushed them first. */
  fflush(stdout);
  kill(getpid(), SIGKILL);
  Spin();
}

static void CreateReadyFile(void) {
  const char *path = getenv("EXIT_TEST_READY_FILE");
  int fd;
  if (path == NULL || path[0] == '\0') Die("EXIT_TEST_READY_FILE is not set");
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) Die("cannot create %s", path);
  close(fd);
}

/* The traffic modes: Medium Requests round the job and polls, forever;
 * rank 0 sets the end signal off once it has had kPongsBeforeSignal
 * replies (see the file comment). */
enum { kFloodBytes = 1024, kPongsBeforeSignal = 300 };

static long Pongs(void) {
#ifdef GASNET_PAR
  return atomic_load(&g_pongs);
#else
  return *(volatile long *)&g_pongs;
#endif
}

static int TrafficSignal(void) {
  return g_code == SIGINT || g_code == SIGHUP || g_code == SIGQUIT ? g_code
                                                                   : SIGTERM;
}

#ifdef GASNET_PAR
/* A flooding thread beside the main one: Requests round the job and polls,
 * until the process ends. */
static void *FloodThread(void *arg) {
  static unsigned char payload[kFloodBytes];
  gex_Rank_t peer = (g_me + 1 + (gex_Rank_t)(long)arg) % g_n;
  for (;;) {
    if (peer != g_me &&
        gex_AM_RequestMedium0(g_tm, peer, kFloodIndex, payload, sizeof payload,
                              GEX_EVENT_NOW, 0) != GASNET_OK) {
      Die("gex_AM_RequestMedium0 failed");
    }
    peer = (peer + 1) % g_n;
    gasnet_AMPoll();
  }
  return NULL;
}
#endif

static void Traffic(int signal_rank) __attribute__((noreturn));
static void Traffic(int signal_rank) {
  static unsigned char payload[kFloodBytes];
  gex_Rank_t peer = (g_me + 1) % g_n;
  int signalled = 0;
  pid_t exiter_pid = 0;
  if (signal_rank && g_me == 0) {
    exiter_pid = ((volatile pid_t *)gex_Segment_QueryAddr(g_seg))[0];
    if (exiter_pid <= 0) Die("the exiter's pid is not in the segment");
  }
#ifdef GASNET_PAR
  {
    pthread_t t;
    long i;
    for (i = 1; i <= 2; ++i) {
      if (pthread_create(&t, NULL, FloodThread, (void *)i) != 0) {
        Die("pthread_create failed");
      }
    }
  }
#endif
  for (;;) {
    if (peer != g_me &&
        gex_AM_RequestMedium0(g_tm, peer, kFloodIndex, payload, sizeof payload,
                              GEX_EVENT_NOW, 0) != GASNET_OK) {
      Die("gex_AM_RequestMedium0 failed");
    }
    peer = (peer + 1) % g_n;
    gasnet_AMPoll();
    if (g_me == 0 && !signalled && Pongs() >= kPongsBeforeSignal) {
      signalled = 1;
      if (signal_rank) {
        if (kill(exiter_pid, TrafficSignal()) != 0)
          Die("kill(%ld) failed", (long)exiter_pid);
      } else {
        CreateReadyFile();
      }
    }
  }
}

#ifdef GASNET_PAR
enum { kThreads = 3, kPongsBeforeExit = 200 };

/* A worker: Requests round the job, polling between them. Worker 0 of the
 * exiter also calls gasnet_exit once enough replies came back. */
static void *Worker(void *arg) {
  const long id = (long)arg;
  gex_Rank_t peer = (g_me + 1 + (gex_Rank_t)id) % g_n;
  for (;;) {
    if (gex_AM_RequestShort0(g_tm, peer, kPingIndex, 0) != GASNET_OK) {
      Die("gex_AM_RequestShort0 failed");
    }
    peer = (peer + 1) % g_n;
    gasnet_AMPoll();
    if (id == 0 && g_me == g_n - 1 &&
        atomic_load(&g_pongs) >= kPongsBeforeExit) {
      gasnet_exit(g_code);
    }
  }
  return NULL;
}

static void Threads(void) __attribute__((noreturn));
static void Threads(void) {
  pthread_t t;
  long i;
  for (i = 0; i < kThreads; ++i) {
    if (pthread_create(&t, NULL, Worker, (void *)i) != 0) {
      Die("pthread_create failed");
    }
  }
  if (g_me == g_n - 1) {
    while (atomic_load(&g_pongs) < kPongsBeforeExit) gasnet_AMPoll();
    gasnet_exit(g_code);
  }
  Spin();
}
#endif

static const char *const kModes[] = {
    "collective",       "barrier",       "spin",       "rma",
    "return-all",       "return-one",    "exit-all",   "exit-one",
    "request-handler",  "reply-handler", "sigsegv",    "sigabrt",
    "launcher-signal",  "sigkill",       "rank0-dead", "sigquit-handler",
    "sigquit-default",  "threads",       "compute",    "mismatch",
    "traffic-launcher", "traffic-rank"};

static int Is(const char *mode, const char *name) {
  return strcmp(mode, name) == 0;
}

int main(int argc, char **argv) {
  const char *mode;
  const char *job;
  char *end = NULL;
  size_t i;
  int known = 0;
  gex_Rank_t exiter;
  int k;

  if (gex_Client_Init(&g_client, &g_ep, &g_tm, "EXIT_TEST", &argc, &argv, 0) !=
      GASNET_OK) {
    Die("gex_Client_Init failed");
  }
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  if (argc != 3) Die("usage: exit_client <mode> <code>");
  mode = argv[1];
  for (i = 0; i < sizeof kModes / sizeof kModes[0]; ++i) {
    known |= Is(mode, kModes[i]);
  }
  if (!known) Die("unknown mode '%s'", mode);
  g_code = (int)strtol(argv[2], &end, 10);
  if (end == argv[2] || *end != '\0') Die("bad code '%s'", argv[2]);

  if (Is(mode, "mismatch") && g_me == g_n - 1) {
    gex_Coll_BarrierBlocking(g_tm, 0);
    Die("a barrier completed while the other ranks were attaching");
  }
  if (gex_Segment_Attach(&g_seg, g_tm, kSegSize) != GASNET_OK) {
    Die("gex_Segment_Attach failed");
  }
  RegisterHandlers();
  job = getenv("GEX_JOB_ID");
  printf("rank %d: job=%s pid=%ld\n", (int)g_me, job != NULL ? job : "",
         (long)getpid());
  fflush(stdout);
  exiter = Is(mode, "rank0-dead") ? 0 : g_n - 1;
  if (Is(mode, "sigquit-handler")) InstallSigquitHandler();
  if (Is(mode, "traffic-rank") && g_me == exiter) {
    /* Rank 0 signals this process: its pid goes to rank 0's segment. */
    pid_t pid = getpid();
    void *owner = NULL;
    gex_Event_Wait(gex_EP_QueryBoundSegmentNB(g_tm, 0, &owner, NULL, NULL, 0));
    if (owner == NULL) Die("rank 0's segment is unknown");
    if (gex_RMA_PutBlocking(g_tm, 0, owner, &pid, sizeof pid, 0) != 0) {
      Die("gex_RMA_PutBlocking failed");
    }
  }
  gex_Coll_BarrierBlocking(g_tm, 0);

  /* Left in the stdio buffer on purpose: the exit path must flush them. */
  for (k = 0; k < 3; ++k) printf("rank %d line %d\n", (int)g_me, k);
  /* Every rank's lines are written before any rank's exit begins (a rank
   * told to exit while still printing never wrote its later lines). */
  gex_Coll_BarrierBlocking(g_tm, 0);

  if (Is(mode, "collective")) gasnet_exit(g_code);
  if (Is(mode, "threads")) {
#ifdef GASNET_PAR
    Threads();
#else
    Die("mode 'threads' needs the PAR build (exit_client_par_<conduit>)");
#endif
  }
  if (Is(mode, "return-all")) return g_code;
  if (Is(mode, "exit-all")) exit(g_code);
  if (Is(mode, "launcher-signal")) {
    /* Every rank has its lines buffered (the barrier above) before the
     * test signals. */
    if (g_me == 0) CreateReadyFile();
    Spin();
  }
  if (Is(mode, "traffic-launcher") || Is(mode, "traffic-rank")) {
    if (g_n < 2) Die("mode '%s' needs 2 ranks or more", mode);
    Traffic(Is(mode, "traffic-rank"));
  }
  if (Is(mode, "request-handler") || Is(mode, "reply-handler")) {
    if (g_me == exiter) {
      const gex_AM_Index_t handler =
          Is(mode, "request-handler") ? kExitRequestIndex : kAskReplyIndex;
      if (gex_AM_RequestShort0(g_tm, 0, handler, 0) != GASNET_OK) {
        Die("gex_AM_RequestShort0 failed");
      }
    }
    Spin();
  }

  if (g_me != exiter) {
    if (Is(mode, "barrier")) {
      gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
      gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
      Die("a barrier completed without the exiter");
    }
    if (Is(mode, "rma")) RmaForever();
    if (Is(mode, "compute")) Compute();
    Spin();
  }

  /* The exiter. */
  if (Is(mode, "return-one")) return g_code;
  if (Is(mode, "exit-one")) exit(g_code);
  if (Is(mode, "sigsegv")) {
    Fault();
    Die("a store to an inaccessible page did not fault");
  }
  if (Is(mode, "sigabrt")) abort();
  if (Is(mode, "sigkill") || Is(mode, "rank0-dead")) KillSelf();
  /* barrier, spin, rma, compute, sigquit-handler, sigquit-default. */
  gasnet_exit(g_code);
}
