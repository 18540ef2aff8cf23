// fi_raw_bench: libfabric on its own, as the baseline for the ofi conduit's
// figures (tests/benchmarks/README.md, ofi_vs_raw.sh). Two processes, one
// FI_EP_RDM endpoint each, nothing but libfabric's public API:
//
//   put8    one 8-byte fi_writemsg (FI_INJECT) into the peer's registered
//           buffer, waited for, then the next: FI_DELIVERY_COMPLETE unless
//           the provider refuses it, then FI_TRANSMIT_COMPLETE, then its
//           default; the output says which. "Not refused" is all a program
//           can see: libfabric 1.17's tcp;ofi_rxm, sockets, udp;ofi_rxd and
//           shm take any flags, and sockets completes a write once sent.
//   get8    one 8-byte fi_readmsg from the peer's buffer, waited for
//   flood   N messages of 24 bytes by fi_inject, counted by the receiver
//           from pre-posted receives, which then answers with one message;
//           time from the first send to that answer, per message
//   put-bw  writes of -S bytes (default 4 MiB), at most -W in flight
//
// The process started is the client (it measures); it forks the target,
// which polls its completion queue (manual progress) until the client tells
// it to stop. Addresses and memory keys travel over a socketpair, so no
// port is needed. One line per test on stdout, e.g.
//
//   fi_raw_bench put8 usec_per_op=3.21 iterations=10000 completion=delivery
//
// Run it with FI_PROVIDER or -p, e.g. FI_TCP_IFACE=lo fi_raw_bench -p
// 'tcp;ofi_rxm'; -h lists the options. Exit status: 0 done, 1 a failure
// (every libfabric error is printed with fi_strerror), 2 bad options.
#define _GNU_SOURCE

#include <errno.h>
#include <inttypes.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROGRAM "fi_raw_bench"
#define API_VERSION FI_VERSION(1, 9)

// ---- options ---------------------------------------------------------------

enum test_id { TEST_PUT8, TEST_GET8, TEST_FLOOD, TEST_PUT_BW, TEST_COUNT };
static const char *const kTestNames[TEST_COUNT] = {"put8", "get8", "flood",
                                                   "put-bw"};

struct options {
  const char *provider;  // NULL: FI_PROVIDER or libfabric's first
  const char *domain;    // NULL: any
  uint64_t iterations;
  uint64_t warmup;
  uint64_t bw_size;
  uint64_t window;
  unsigned timeout_s;
  bool pin;
  int tests[TEST_COUNT];  // in the order asked for
  int test_count;
};

static struct options g_opt = {
    .iterations = 10000,
    .warmup = 1000,
    .bw_size = 4u << 20,
    .window = 8,
    .timeout_s = 60,
    .pin = true,
};

// ---- process state ---------------------------------------------------------

// Every message is one of these (24 bytes, as the flood sends).
enum msg_type { MSG_FLOOD = 1, MSG_ACK, MSG_QUIT, MSG_BYE };
struct msg {
  uint32_t type;
  uint32_t round;
  uint64_t seq;
  uint64_t total;  // MSG_FLOOD: messages in this round
};
_Static_assert(sizeof(struct msg) == 24, "a message is 24 bytes");

// A receive buffer: one multi-receive area, or room for one message.
struct rx_buf {
  struct fi_context2 ctx;  // first: op_context points here
  char *data;
  size_t size;
};

// As the ofi conduit's defaults (GASNET_OFI_NUM_RECEIVE_BUFFS and
// GASNET_OFI_RECEIVE_BUFF_SIZE; 1024 single buffers with "recv").
#define RX_MULTI_BUFS 8
#define RX_MULTI_BYTES (1u << 20)
#define RX_SINGLE_BUFS 1024
#define RX_SINGLE_BYTES 64

// What the peer told us over the socketpair.
struct peer_info {
  uint64_t name_len;
  uint64_t key;
  uint64_t base;  // address of its RMA area, or 0 without FI_MR_VIRT_ADDR
  uint64_t bytes;
};

static struct {
  const char *role;  // "client" or "target"
  bool is_client;
  int sock;
  pid_t child;  // client: the target's pid
  volatile sig_atomic_t child_exit_expected;
  volatile sig_atomic_t child_exited;  // after child_exit_expected was set

  struct fi_info *info;
  struct fid_fabric *fabric;
  struct fid_domain *domain;
  struct fid_av *av;
  struct fid_cq *cq;
  struct fid_ep *ep;
  struct fid_mr *mr;
  fi_addr_t peer;
  struct peer_info peer_info;
  bool multi_recv;
  bool manual_progress;

  char *rma_area;  // registered, the peer's puts and gets land here
  size_t rma_bytes;
  char *local;  // a put's source, a get's destination (not registered)

  struct rx_buf *rx;
  int rx_count;
  int *rx_unposted;  // indices of buffers to (re)post
  int rx_unposted_count;

  // Completions of sends, writes and reads this process started.
  uint64_t started;
  uint64_t completed;
  struct fi_context2 tx_ctx;
  // While probing which completion flag a write takes: a failed completion
  // is recorded here instead of being fatal.
  bool tolerate_tx_error;
  int tx_error;

  // Flood bookkeeping (both roles).
  uint32_t flood_round;
  uint64_t flood_count;
  bool ack_due;
  uint32_t ack_round;
  uint32_t acked_round;
  bool quit;
  bool bye;
} g;

// ---- errors ----------------------------------------------------------------

static void stop_child(void) {
  if (g.is_client && g.child > 0) {
    g.child_exit_expected = 1;
    kill(g.child, SIGKILL);
    waitpid(g.child, NULL, 0);
    g.child = 0;
  }
}

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt,
                                                                ...) {
  va_list ap;
  va_start(ap, fmt);
  fflush(stdout);
  fprintf(stderr, PROGRAM ": %s: ", g.role);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  stop_child();
  exit(1);
}

static void check_fi(int rc, const char *what) {
  if (rc != 0) die("%s: %s (%d)", what, fi_strerror(rc < 0 ? -rc : rc), rc);
}

// A send or RMA refused for now: the provider's queue is full, or (sockets
// on a busy host) its connection is not made yet. Retried while polling;
// the -T alarm bounds it.
static bool retryable(ssize_t rc) {
  return rc == -FI_EAGAIN || rc == -FI_ENOENT || rc == -FI_ECONNREFUSED;
}

static void write_str(int fd, const char *s) {
  ssize_t unused = write(fd, s, strlen(s));
  (void)unused;
}

static void on_alarm(int sig) {
  (void)sig;
  write_str(2, PROGRAM ": ");
  write_str(2, g.role);
  write_str(2, ": timed out (-T); stopping\n");
  if (g.is_client && g.child > 0) {
    g.child_exit_expected = 1;
    kill(g.child, SIGKILL);
  }
  _exit(1);
}

static void on_child(int sig) {
  (void)sig;
  if (g.child_exit_expected) {
    g.child_exited = 1;
    return;
  }
  write_str(2,
            PROGRAM ": client: the target process ended before the run did\n");
  _exit(1);
}

static void install_handler(int sig, void (*fn)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(sig, &sa, NULL) != 0) die("sigaction: %s", strerror(errno));
}

// ---- option parsing --------------------------------------------------------

static void usage(FILE *out) {
  fprintf(out,
          "usage: " PROGRAM
          " [options]\n"
          "Raw libfabric baseline: two processes (this one and a forked "
          "target),\n"
          "one FI_EP_RDM endpoint each, FI_MSG|FI_RMA, manual progress where "
          "the\n"
          "provider has it.\n"
          "\n"
          "  -p PROVIDER  provider name, e.g. 'tcp;ofi_rxm' (default: "
          "FI_PROVIDER,\n"
          "               else libfabric's first usable one)\n"
          "  -d DOMAIN    domain (e.g. lo for udp;ofi_rxd)\n"
          "  -i N         timed operations / flood messages (default 10000;\n"
          "               put-bw: N * 16K / size, at least 1)\n"
          "  -w N         untimed operations before each test (default "
          "1000,\n"
          "               scaled the same way for put-bw)\n"
          "  -t LIST      comma-separated: put8,get8,flood,put-bw (default "
          "all)\n"
          "  -S SIZE      put-bw write size, bytes or with K/M/G (default "
          "4M)\n"
          "  -W N         put-bw writes in flight (default 8)\n"
          "  -T SECONDS   stop with an error after this long (default 60)\n"
          "  -u           do not pin the two processes to two CPUs\n"
          "  -h           this text\n"
          "Output: what was opened, then one line per test:\n"
          "  " PROGRAM
          " info provider=P fabric=F domain=D progress=manual|auto "
          "multi_recv=...\n"
          "  " PROGRAM
          " put8 usec_per_op=U iterations=N completion=C inject=yes|no\n"
          "  " PROGRAM
          " get8 usec_per_op=U iterations=N\n"
          "  " PROGRAM
          " flood ns_per_msg=T messages=N\n"
          "  " PROGRAM
          " put-bw mbytes_per_sec=B size=S writes=N window=W completion=C\n"
          "MB/s is 2^20 bytes per second; C is delivery, transmit or default "
          "(the\n"
          "write completion flag passed: the first the provider did not "
          "refuse;\n"
          "whether it honours it is the provider's business). Exit status: "
          "0\n"
          "done, 1 a failure, 2 bad options.\n");
}

__attribute__((format(printf, 1, 2), noreturn)) static void bad_option(
    const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, PROGRAM ": ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see -h)\n");
  va_end(ap);
  exit(2);
}

static uint64_t parse_count(char opt, const char *text, uint64_t min,
                            bool suffixes) {
  const char *p = text;
  if (*p == '\0' || *p == '-' || *p == '+') {
    bad_option("-%c: '%s' is not a number", opt, text);
  }
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(p, &end, 10);
  if (errno != 0 || end == p) {
    bad_option("-%c: '%s' is not a number", opt, text);
  }
  unsigned shift = 0;
  if (suffixes && *end != '\0' && end[1] == '\0') {
    switch (*end) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      default:
        break;
    }
    if (shift != 0) ++end;
  }
  if (*end != '\0') bad_option("-%c: '%s' is not a number", opt, text);
  if (shift != 0 && v > (UINT64_MAX >> shift)) {
    bad_option("-%c: '%s' is too large", opt, text);
  }
  v <<= shift;
  if (v < min) bad_option("-%c: '%s' is below %" PRIu64, opt, text, min);
  return v;
}

static void parse_tests(const char *text) {
  g_opt.test_count = 0;
  char *copy = strdup(text);
  if (copy == NULL) die("out of memory");
  char *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok != NULL;
       tok = strtok_r(NULL, ",", &save)) {
    int found = -1;
    for (int t = 0; t < TEST_COUNT; ++t) {
      if (strcmp(tok, kTestNames[t]) == 0) found = t;
    }
    if (found < 0) {
      bad_option("-t: unknown test '%s' (known: put8,get8,flood,put-bw)", tok);
    }
    for (int i = 0; i < g_opt.test_count; ++i) {
      if (g_opt.tests[i] == found) bad_option("-t: '%s' twice", tok);
    }
    g_opt.tests[g_opt.test_count++] = found;
  }
  free(copy);
  if (g_opt.test_count == 0) bad_option("-t: no test named");
}

static void parse_options(int argc, char **argv) {
  for (int t = 0; t < TEST_COUNT; ++t) g_opt.tests[t] = t;
  g_opt.test_count = TEST_COUNT;
  opterr = 0;
  int c;
  while ((c = getopt(argc, argv, ":p:d:i:w:t:S:W:T:uh")) != -1) {
    switch (c) {
      case 'p':
        g_opt.provider = optarg;
        break;
      case 'd':
        g_opt.domain = optarg;
        break;
      case 'i':
        g_opt.iterations = parse_count('i', optarg, 1, false);
        break;
      case 'w':
        g_opt.warmup = parse_count('w', optarg, 0, false);
        break;
      case 't':
        parse_tests(optarg);
        break;
      case 'S':
        g_opt.bw_size = parse_count('S', optarg, 1, true);
        if (g_opt.bw_size > (1u << 30)) {
          bad_option("-S: '%s' is above 1G", optarg);
        }
        break;
      case 'W':
        g_opt.window = parse_count('W', optarg, 1, false);
        if (g_opt.window > 4096) bad_option("-W: '%s' is above 4096", optarg);
        break;
      case 'T': {
        const uint64_t t = parse_count('T', optarg, 1, false);
        if (t > 86400) bad_option("-T: '%s' is above 86400", optarg);
        g_opt.timeout_s = (unsigned)t;
        break;
      }
      case 'u':
        g_opt.pin = false;
        break;
      case 'h':
        usage(stdout);
        exit(0);
      case ':':
        bad_option("option -%c needs a value", optopt);
      default:
        if (optopt != 0) bad_option("unknown option -%c", optopt);
        bad_option("unknown option %s", argv[optind - 1]);
    }
  }
  if (optind < argc) bad_option("unexpected argument '%s'", argv[optind]);
}

// ---- out-of-band channel ---------------------------------------------------

static void oob_write(const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(g.sock, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die("writing to the peer's socket: %s", strerror(errno));
    p += n;
    len -= (size_t)n;
  }
}

static void oob_read(void *buf, size_t len) {
  char *p = buf;
  while (len > 0) {
    ssize_t n = read(g.sock, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("reading from the peer's socket: %s", strerror(errno));
    if (n == 0) die("the peer closed its socket (it failed; see above)");
    p += n;
    len -= (size_t)n;
  }
}

// ---- libfabric set-up ------------------------------------------------------

static void *map_area(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) die("mmap of %zu bytes: %s", bytes, strerror(errno));
  memset(p, 0, bytes);  // touched now, not in a timed loop
  return p;
}

static size_t round_page(size_t n) {
  const size_t page = 4096;
  return (n + page - 1) / page * page;
}

// The first entry of `list` in domain -d (any without -d). Layered
// providers (udp;ofi_rxd) ignore a domain name in the hints, so the list
// is filtered here.
static const struct fi_info *pick_domain(const struct fi_info *list) {
  for (const struct fi_info *i = list; i != NULL; i = i->next) {
    if (g_opt.domain == NULL ||
        (i->domain_attr->name != NULL &&
         strcmp(i->domain_attr->name, g_opt.domain) == 0)) {
      return i;
    }
  }
  return NULL;
}

// fi_getinfo with our hints: manual progress first (we poll ourselves),
// multi-receive first; each relaxed in turn when nothing matches.
static void get_info(void) {
  static const struct {
    bool manual;
    bool multi;
  } kTries[] = {{true, true}, {true, false}, {false, true}, {false, false}};
  int last = -FI_ENODATA;
  char domains[512] = "";  // what was offered, for the error
  for (size_t t = 0; t < sizeof kTries / sizeof kTries[0]; ++t) {
    struct fi_info *hints = fi_allocinfo();
    if (hints == NULL) die("fi_allocinfo: out of memory");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_RMA | (kTries[t].multi ? FI_MULTI_RECV : 0);
    hints->mode = FI_RX_CQ_DATA;  // we never send remote CQ data
    hints->domain_attr->mr_mode =
        FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->data_progress =
        kTries[t].manual ? FI_PROGRESS_MANUAL : FI_PROGRESS_UNSPEC;
    hints->domain_attr->av_type = FI_AV_UNSPEC;
    if (g_opt.provider != NULL) {
      hints->fabric_attr->prov_name = strdup(g_opt.provider);
      if (hints->fabric_attr->prov_name == NULL) die("out of memory");
    }
    struct fi_info *list = NULL;
    last = fi_getinfo(API_VERSION, NULL, NULL, 0, hints, &list);
    fi_freeinfo(hints);
    if (last != 0 && last != -FI_ENODATA) break;
    const struct fi_info *pick = last == 0 ? pick_domain(list) : NULL;
    if (pick != NULL) {
      struct fi_info *copy = fi_dupinfo(pick);
      if (copy == NULL) die("fi_dupinfo: out of memory");
      copy->next = NULL;  // one entry (fi_dupinfo copies one anyway)
      g.info = copy;
      fi_freeinfo(list);
      g.multi_recv = kTries[t].multi;
      g.manual_progress =
          g.info->domain_attr->data_progress == FI_PROGRESS_MANUAL;
      return;
    }
    for (const struct fi_info *i = list; i != NULL; i = i->next) {
      const char *d =
          i->domain_attr->name != NULL ? i->domain_attr->name : "(unnamed)";
      if (strstr(domains, d) != NULL) continue;
      if (strlen(domains) + strlen(d) + 3 >= sizeof domains) break;
      if (domains[0] != '\0') strcat(domains, ", ");
      strcat(domains, d);
    }
    if (list != NULL) fi_freeinfo(list);
  }
  const char *env = getenv("FI_PROVIDER");
  const char *prov = g_opt.provider != NULL ? g_opt.provider
                     : env != NULL          ? env
                                            : "any";
  if (last == 0 || (last == -FI_ENODATA && domains[0] != '\0')) {
    die("-d: provider %s has no domain '%s' (it offers: %s)", prov,
        g_opt.domain, domains);
  }
  die("fi_getinfo (FI_EP_RDM, FI_MSG|FI_RMA, provider %s): %s", prov,
      fi_strerror(-last));
}

static int post_rx(struct rx_buf *b) {
  struct iovec iov = {.iov_base = b->data, .iov_len = b->size};
  struct fi_msg m;
  memset(&m, 0, sizeof m);
  m.msg_iov = &iov;
  m.iov_count = 1;
  m.addr = FI_ADDR_UNSPEC;
  m.context = &b->ctx;
  ssize_t rc = fi_recvmsg(g.ep, &m, g.multi_recv ? FI_MULTI_RECV : 0);
  if (rc != 0 && rc != -FI_EAGAIN) check_fi((int)rc, "fi_recvmsg");
  return (int)rc;
}

// Posts what is waiting to be posted; a buffer the provider refuses for
// now (-FI_EAGAIN) stays on the list for the next poll.
static void post_unposted(void) {
  int kept = 0;
  for (int i = 0; i < g.rx_unposted_count; ++i) {
    const int idx = g.rx_unposted[i];
    if (post_rx(&g.rx[idx]) != 0) g.rx_unposted[kept++] = idx;
  }
  g.rx_unposted_count = kept;
}

static void handle_message(const void *data, size_t len) {
  if (len != sizeof(struct msg)) {
    die("received a message of %zu bytes, expected %zu", len,
        sizeof(struct msg));
  }
  struct msg m;
  memcpy(&m, data, sizeof m);
  switch (m.type) {
    case MSG_FLOOD:
      if (m.round != g.flood_round) {
        g.flood_round = m.round;
        g.flood_count = 0;
      }
      if (++g.flood_count == m.total) {
        g.ack_due = true;
        g.ack_round = m.round;
      }
      break;
    case MSG_ACK:
      g.acked_round = m.round;
      break;
    case MSG_QUIT:
      g.quit = true;
      break;
    case MSG_BYE:
      g.bye = true;
      break;
    default:
      die("received a message of unknown type %" PRIu32, m.type);
  }
}

// The receive buffer a completion's context names, or NULL.
static struct rx_buf *rx_of(void *context) {
  const uintptr_t c = (uintptr_t)context;
  const uintptr_t first = (uintptr_t)g.rx;
  if (c < first || (c - first) % sizeof(struct rx_buf) != 0) return NULL;
  const uintptr_t i = (c - first) / sizeof(struct rx_buf);
  return i < (uintptr_t)g.rx_count ? &g.rx[i] : NULL;
}

static void cq_error(void) {
  struct fi_cq_err_entry err;
  memset(&err, 0, sizeof err);
  ssize_t rc = fi_cq_readerr(g.cq, &err, 0);
  if (rc < 0) check_fi((int)rc, "fi_cq_readerr");
  const bool tx = err.op_context == &g.tx_ctx;
  if (tx && g.tolerate_tx_error) {
    g.tx_error = err.err != 0 ? err.err : FI_EOTHER;
    ++g.completed;
    return;
  }
  char detail[256] = "";
  const char *prov =
      fi_cq_strerror(g.cq, err.prov_errno, err.err_data, detail, sizeof detail);
  die("a %s completed with an error: %s (provider: %s)",
      !tx                      ? "receive"
      : (err.flags & FI_WRITE) ? "write"
      : (err.flags & FI_READ)  ? "read"
                               : "send",
      fi_strerror(err.err), prov != NULL ? prov : "no detail");
}

// One look at the completion queue (a progress pass under manual
// progress). Returns the number of completions handled.
static int poll_cq(void) {
  struct fi_cq_data_entry e[16];
  ssize_t n = fi_cq_read(g.cq, e, 16);
  if (n == -FI_EAGAIN) {
    if (g.rx_unposted_count > 0) post_unposted();
    return 0;
  }
  if (n == -FI_EAVAIL) {
    cq_error();
    return 1;
  }
  if (n < 0) check_fi((int)n, "fi_cq_read");
  for (ssize_t i = 0; i < n; ++i) {
    // Told apart by context, not by flags: shm reports a multi-receive
    // buffer's release with FI_MULTI_RECV alone, without FI_RECV.
    struct rx_buf *b = rx_of(e[i].op_context);
    if (b != NULL) {
      if (e[i].len > 0) {
        handle_message(g.multi_recv ? e[i].buf : b->data, e[i].len);
      }
      // A single buffer is done after one message, a multi-receive one
      // once the provider releases it.
      if (!g.multi_recv || (e[i].flags & FI_MULTI_RECV) != 0) {
        g.rx_unposted[g.rx_unposted_count++] = (int)(b - g.rx);
      }
    } else if (e[i].op_context == &g.tx_ctx) {
      ++g.completed;
    } else {
      die("a completion with an unknown context (flags 0x%" PRIx64 ")",
          (uint64_t)e[i].flags);
    }
  }
  if (g.rx_unposted_count > 0) post_unposted();
  return (int)n;
}

static void wait_tx_done(void) {
  while (g.completed < g.started) poll_cq();
}

// shm names its endpoint fi_shm://<pid> in /dev/shm, which processes in
// other pid namespaces (a sandboxed test beside another) share; give ours
// a name of its own.
static struct fi_info *endpoint_info(void) {
  if (g.info->addr_format != FI_ADDR_STR || g.info->src_addr == NULL ||
      strncmp(g.info->src_addr, "fi_shm://", 9) != 0) {
    return NULL;
  }
  struct fi_info *named = fi_dupinfo(g.info);
  if (named == NULL) die("fi_dupinfo: out of memory");
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char name[96];
  snprintf(name, sizeof name, "fi_shm://firaw_%ld_%ld_%d", (long)ts.tv_sec,
           (long)ts.tv_nsec, (int)getpid());
  free(named->src_addr);
  named->src_addr = strdup(name);
  if (named->src_addr == NULL) die("out of memory");
  named->src_addrlen = strlen(name) + 1;
  return named;
}

static void open_fabric(void) {
  get_info();
  if (g.info->tx_attr->inject_size < sizeof(struct msg)) {
    die("provider %s injects at most %zu bytes; the flood needs %zu",
        g.info->fabric_attr->prov_name, g.info->tx_attr->inject_size,
        sizeof(struct msg));
  }
  check_fi(fi_fabric(g.info->fabric_attr, &g.fabric, NULL), "fi_fabric");
  check_fi(fi_domain(g.fabric, g.info, &g.domain, NULL), "fi_domain");

  struct fi_cq_attr cq_attr;
  memset(&cq_attr, 0, sizeof cq_attr);
  cq_attr.format = FI_CQ_FORMAT_DATA;
  cq_attr.wait_obj = FI_WAIT_NONE;
  check_fi(fi_cq_open(g.domain, &cq_attr, &g.cq, NULL), "fi_cq_open");

  struct fi_av_attr av_attr;
  memset(&av_attr, 0, sizeof av_attr);
  av_attr.type = g.info->domain_attr->av_type == FI_AV_UNSPEC
                     ? FI_AV_TABLE
                     : g.info->domain_attr->av_type;
  av_attr.count = 2;
  check_fi(fi_av_open(g.domain, &av_attr, &g.av, NULL), "fi_av_open");

  struct fi_info *named = endpoint_info();
  check_fi(fi_endpoint(g.domain, named != NULL ? named : g.info, &g.ep, NULL),
           "fi_endpoint");
  if (named != NULL) fi_freeinfo(named);
  check_fi(fi_ep_bind(g.ep, &g.av->fid, 0), "fi_ep_bind (address vector)");
  check_fi(fi_ep_bind(g.ep, &g.cq->fid, FI_TRANSMIT | FI_RECV),
           "fi_ep_bind (completion queue)");
  check_fi(fi_enable(g.ep), "fi_enable");
  if (g.multi_recv) {
    // No message straddles two buffers: a buffer is released once less
    // than this fits.
    size_t min = RX_SINGLE_BYTES;
    check_fi(fi_setopt(&g.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
                       sizeof min),
             "fi_setopt(FI_OPT_MIN_MULTI_RECV)");
  }

  // The RMA area (the peer's puts and gets), registered; the local
  // buffers need no registration (FI_MR_LOCAL is not accepted).
  g.rma_bytes = round_page(g_opt.bw_size > 4096 ? g_opt.bw_size : 4096);
  g.rma_area = map_area(g.rma_bytes);
  g.local = map_area(g.rma_bytes);
  memset(g.local, 0x5a, g.rma_bytes);
  const uint64_t mr_mode = (uint64_t)g.info->domain_attr->mr_mode;
  const uint64_t requested_key = 0x7261;  // ignored with FI_MR_PROV_KEY
  check_fi(fi_mr_reg(g.domain, g.rma_area, g.rma_bytes,
                     FI_REMOTE_READ | FI_REMOTE_WRITE, 0, requested_key, 0,
                     &g.mr, NULL),
           "fi_mr_reg");
  if ((mr_mode & FI_MR_ENDPOINT) != 0) {
    check_fi(fi_mr_bind(g.mr, &g.ep->fid, 0), "fi_mr_bind (FI_MR_ENDPOINT)");
    check_fi(fi_mr_enable(g.mr), "fi_mr_enable (FI_MR_ENDPOINT)");
  }

  // Receive buffers, all posted before the peer learns our address.
  g.rx_count = g.multi_recv ? RX_MULTI_BUFS : RX_SINGLE_BUFS;
  const size_t each = g.multi_recv ? RX_MULTI_BYTES : RX_SINGLE_BYTES;
  char *rx_area = map_area(round_page((size_t)g.rx_count * each));
  g.rx = calloc((size_t)g.rx_count, sizeof *g.rx);
  g.rx_unposted = calloc((size_t)g.rx_count, sizeof *g.rx_unposted);
  if (g.rx == NULL || g.rx_unposted == NULL) die("out of memory");
  for (int i = 0; i < g.rx_count; ++i) {
    g.rx[i].data = rx_area + (size_t)i * each;
    g.rx[i].size = each;
    g.rx_unposted[g.rx_unposted_count++] = i;
  }
  while (g.rx_unposted_count > 0) poll_cq();
}

static void exchange_addresses(void) {
  char name[1024];
  size_t name_len = sizeof name;
  check_fi(fi_getname(&g.ep->fid, name, &name_len), "fi_getname");
  struct peer_info mine = {
      .name_len = name_len,
      .key = fi_mr_key(g.mr),
      .base = ((uint64_t)g.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0
                  ? (uint64_t)(uintptr_t)g.rma_area
                  : 0,
      .bytes = g.rma_bytes,
  };
  if (mine.key == FI_KEY_NOTAVAIL) die("fi_mr_key: no key for the RMA area");
  oob_write(&mine, sizeof mine);
  oob_write(name, name_len);

  oob_read(&g.peer_info, sizeof g.peer_info);
  if (g.peer_info.name_len == 0 || g.peer_info.name_len > sizeof name) {
    die("the peer's address is %" PRIu64 " bytes", g.peer_info.name_len);
  }
  char peer_name[1024];
  oob_read(peer_name, g.peer_info.name_len);
  int n = fi_av_insert(g.av, peer_name, 1, &g.peer, 0, NULL);
  if (n != 1) {
    die("fi_av_insert of the peer's address: %s",
        n < 0 ? fi_strerror(-n) : "not inserted");
  }
  // Neither side sends before the other can address it.
  char ready = 'r';
  oob_write(&ready, 1);
  oob_read(&ready, 1);
}

static void close_fid(struct fid *f, const char *what) {
  if (f != NULL) check_fi(fi_close(f), what);
}

static void close_fabric(void) {
  // The registration first: one bound to the endpoint (FI_MR_ENDPOINT)
  // may keep the endpoint busy.
  close_fid(&g.mr->fid, "fi_close (memory region)");
  close_fid(&g.ep->fid, "fi_close (endpoint)");
  close_fid(&g.av->fid, "fi_close (address vector)");
  close_fid(&g.cq->fid, "fi_close (completion queue)");
  close_fid(&g.domain->fid, "fi_close (domain)");
  close_fid(&g.fabric->fid, "fi_close (fabric)");
  fi_freeinfo(g.info);
}

// ---- sending ---------------------------------------------------------------

static void inject_msg(uint32_t type, uint32_t round, uint64_t seq,
                       uint64_t total) {
  const struct msg m = {
      .type = type, .round = round, .seq = seq, .total = total};
  for (;;) {
    ssize_t rc = fi_inject(g.ep, &m, sizeof m, g.peer);
    if (rc == 0) return;
    if (!retryable(rc)) check_fi((int)rc, "fi_inject");
    poll_cq();
  }
}

// A control message sent with a completion, so that it has left before
// the sender closes its endpoint.
static void send_msg_and_wait(uint32_t type) {
  static struct msg m;
  m.type = type;
  for (;;) {
    ssize_t rc = fi_send(g.ep, &m, sizeof m, NULL, g.peer, &g.tx_ctx);
    if (rc == 0) break;
    if (!retryable(rc)) check_fi((int)rc, "fi_send");
    poll_cq();
  }
  ++g.started;
  wait_tx_done();
}

static void post_rma(bool write, size_t len, uint64_t flags, int *error_out) {
  struct iovec iov = {.iov_base = g.local, .iov_len = len};
  struct fi_rma_iov rma = {
      .addr = g.peer_info.base, .len = len, .key = g.peer_info.key};
  struct fi_msg_rma m;
  memset(&m, 0, sizeof m);
  m.msg_iov = &iov;
  m.iov_count = 1;
  m.addr = g.peer;
  m.rma_iov = &rma;
  m.rma_iov_count = 1;
  m.context = &g.tx_ctx;
  for (;;) {
    ssize_t rc =
        write ? fi_writemsg(g.ep, &m, flags) : fi_readmsg(g.ep, &m, flags);
    if (rc == 0) break;
    if (!retryable(rc)) {
      if (error_out != NULL) {
        *error_out = (int)-rc;
        return;
      }
      check_fi((int)rc, write ? "fi_writemsg" : "fi_readmsg");
    }
    poll_cq();
  }
  ++g.started;
}

// Which completion flag a write of `len` bytes with `flags` takes: delivery
// complete unless the provider refuses it (when posted or in the
// completion), else transmit complete, else its default. One write is made
// (and waited for) per flag tried.
static uint64_t choose_write_completion(size_t len, uint64_t flags,
                                        const char **name) {
  static const struct {
    uint64_t flag;
    const char *name;
  } kTries[] = {{FI_DELIVERY_COMPLETE, "delivery"},
                {FI_TRANSMIT_COMPLETE, "transmit"},
                {0, "default"}};
  for (size_t i = 0; i < sizeof kTries / sizeof kTries[0]; ++i) {
    int err = 0;
    g.tolerate_tx_error = true;
    g.tx_error = 0;
    post_rma(true, len, flags | kTries[i].flag, &err);
    if (err == 0) {
      wait_tx_done();
      err = g.tx_error;
    }
    g.tolerate_tx_error = false;
    if (err == 0) {
      *name = kTries[i].name;
      return kTries[i].flag;
    }
    if (kTries[i].flag == 0) {
      die("fi_writemsg of %zu bytes: %s", len, fi_strerror(err));
    }
  }
  die("unreachable");
}

// ---- the tests (client side) -----------------------------------------------

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void blocking_rma(bool write, uint64_t flags) {
  post_rma(write, 8, flags, NULL);
  wait_tx_done();
}

static void test_put8(void) {
  const uint64_t inject = g.info->tx_attr->inject_size >= 8 ? FI_INJECT : 0;
  const char *completion = NULL;
  const uint64_t flags =
      FI_COMPLETION | inject |
      choose_write_completion(8, FI_COMPLETION | inject, &completion);
  for (uint64_t i = 0; i < g_opt.warmup; ++i) blocking_rma(true, flags);
  const double t0 = now_s();
  for (uint64_t i = 0; i < g_opt.iterations; ++i) blocking_rma(true, flags);
  const double t1 = now_s();
  printf(PROGRAM " put8 usec_per_op=%.3f iterations=%" PRIu64
                 " completion=%s inject=%s\n",
         (t1 - t0) * 1e6 / (double)g_opt.iterations, g_opt.iterations,
         completion, inject != 0 ? "yes" : "no");
  fflush(stdout);
}

static void test_get8(void) {
  for (uint64_t i = 0; i < g_opt.warmup; ++i) {
    blocking_rma(false, FI_COMPLETION);
  }
  const double t0 = now_s();
  for (uint64_t i = 0; i < g_opt.iterations; ++i) {
    blocking_rma(false, FI_COMPLETION);
  }
  const double t1 = now_s();
  printf(PROGRAM " get8 usec_per_op=%.3f iterations=%" PRIu64 "\n",
         (t1 - t0) * 1e6 / (double)g_opt.iterations, g_opt.iterations);
  fflush(stdout);
}

static uint32_t g_round;

// One flood of n messages and the receiver's answer; returns the seconds
// from the first send to the answer.
static double flood_round(uint64_t n) {
  const uint32_t round = ++g_round;
  const double t0 = now_s();
  for (uint64_t i = 0; i < n; ++i) inject_msg(MSG_FLOOD, round, i, n);
  while (g.acked_round != round) poll_cq();
  return now_s() - t0;
}

static void test_flood(void) {
  if (g_opt.warmup > 0) flood_round(g_opt.warmup);
  const double s = flood_round(g_opt.iterations);
  printf(PROGRAM " flood ns_per_msg=%.1f messages=%" PRIu64 "\n",
         s * 1e9 / (double)g_opt.iterations, g_opt.iterations);
  fflush(stdout);
}

// As gex_rma_bench: sizes above 16 KiB get proportionally fewer operations.
static uint64_t scaled(uint64_t n, uint64_t size) {
  const uint64_t full = 16384;
  if (size <= full || n == 0) return n;
  const uint64_t r = n / ((size + full - 1) / full);
  return r == 0 ? 1 : r;
}

static void windowed_writes(uint64_t count, uint64_t flags) {
  const size_t len = (size_t)g_opt.bw_size;
  for (uint64_t posted = 0; posted < count;) {
    while (posted < count && g.started - g.completed < g_opt.window) {
      post_rma(true, len, flags, NULL);
      ++posted;
    }
    poll_cq();
  }
  wait_tx_done();
}

static void test_put_bw(void) {
  const size_t len = (size_t)g_opt.bw_size;
  const char *completion = NULL;
  const uint64_t flags =
      FI_COMPLETION | choose_write_completion(len, FI_COMPLETION, &completion);
  const uint64_t count = scaled(g_opt.iterations, len);
  windowed_writes(scaled(g_opt.warmup, len), flags);
  const double t0 = now_s();
  windowed_writes(count, flags);
  const double t1 = now_s();
  printf(PROGRAM " put-bw mbytes_per_sec=%.1f size=%zu writes=%" PRIu64
                 " window=%" PRIu64 " completion=%s\n",
         (double)count * (double)len / (1u << 20) / (t1 - t0), len, count,
         g_opt.window, completion);
  fflush(stdout);
}

// ---- the two roles ---------------------------------------------------------

static const char *mr_mode_names(uint64_t mode, char *buf, size_t len) {
  static const struct {
    uint64_t bit;
    const char *name;
  } kBits[] = {{FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR"},
               {FI_MR_ALLOCATED, "FI_MR_ALLOCATED"},
               {FI_MR_PROV_KEY, "FI_MR_PROV_KEY"},
               {FI_MR_ENDPOINT, "FI_MR_ENDPOINT"}};
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof kBits / sizeof kBits[0]; ++i) {
    if ((mode & kBits[i].bit) == 0) continue;
    if (buf[0] != '\0') strncat(buf, "|", len - strlen(buf) - 1);
    strncat(buf, kBits[i].name, len - strlen(buf) - 1);
  }
  if (buf[0] == '\0') snprintf(buf, len, "none");
  return buf;
}

static int run_client(const char *pinned) {
  char modes[128];
  printf(PROGRAM
         " info provider=%s fabric=%s domain=%s progress=%s "
         "multi_recv=%s mr_mode=%s inject_size=%zu pinned=%s\n",
         g.info->fabric_attr->prov_name, g.info->fabric_attr->name,
         g.info->domain_attr->name, g.manual_progress ? "manual" : "auto",
         g.multi_recv ? "yes" : "no",
         mr_mode_names((uint64_t)g.info->domain_attr->mr_mode, modes,
                       sizeof modes),
         g.info->tx_attr->inject_size, pinned);
  fflush(stdout);
  for (int i = 0; i < g_opt.test_count; ++i) {
    switch (g_opt.tests[i]) {
      case TEST_PUT8:
        test_put8();
        break;
      case TEST_GET8:
        test_get8();
        break;
      case TEST_FLOOD:
        test_flood();
        break;
      case TEST_PUT_BW:
        test_put_bw();
        break;
    }
  }
  // The target answers QUIT with BYE, each sent with a completion, so
  // neither closes its endpoint with a message still queued.
  // Once told to quit the target may exit before BYE is read here; its
  // exit status says whether it ended well.
  g.child_exit_expected = 1;
  send_msg_and_wait(MSG_QUIT);
  while (!g.bye && !g.child_exited) poll_cq();
  close_fabric();
  int status = 0;
  while (waitpid(g.child, &status, 0) < 0) {
    if (errno != EINTR) die("waitpid: %s", strerror(errno));
  }
  g.child = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    die("the target process failed (%s %d)",
        WIFEXITED(status) ? "exit status" : "signal",
        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  }
  return 0;
}

static int run_target(void) {
  // Polls until told to stop: under manual progress the client's writes
  // and reads into our area move only while we do.
  while (!g.quit) {
    poll_cq();
    if (g.ack_due) {
      g.ack_due = false;
      inject_msg(MSG_ACK, g.ack_round, 0, 0);
    }
  }
  send_msg_and_wait(MSG_BYE);
  close_fabric();
  return 0;
}

static void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    die("sched_setaffinity(cpu %d): %s", cpu, strerror(errno));
  }
}

int main(int argc, char **argv) {
  g.role = "client";
  g.is_client = true;
  parse_options(argc, argv);

  // The first two allowed CPUs, one per process.
  int cpus[2] = {-1, -1};
  char pinned[32] = "no";
  if (g_opt.pin) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      int found = 0;
      for (int c = 0; c < CPU_SETSIZE && found < 2; ++c) {
        if (CPU_ISSET(c, &set)) cpus[found++] = c;
      }
      if (found < 2) cpus[0] = cpus[1] = -1;
    }
    if (cpus[1] >= 0)
      snprintf(pinned, sizeof pinned, "%d,%d", cpus[0], cpus[1]);
  }

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    die("socketpair: %s", strerror(errno));
  }
  install_handler(SIGCHLD, on_child);
  install_handler(SIGALRM, on_alarm);
  signal(SIGPIPE, SIG_IGN);
  fflush(stdout);
  fflush(stderr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) {
    g.role = "target";
    g.is_client = false;
    signal(SIGCHLD, SIG_DFL);
    // Dies with the client, whatever ends it.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
      die("prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
    }
    if (getppid() != parent) _exit(1);
    close(sv[0]);
    g.sock = sv[1];
    if (cpus[1] >= 0) pin_to(cpus[1]);
  } else {
    g.child = pid;
    close(sv[1]);
    g.sock = sv[0];
    if (cpus[0] >= 0) pin_to(cpus[0]);
  }
  // Not inherited: each process sets its own. The client's comes first
  // (it stops the target); the target's is the backstop should the client
  // be stopped and PR_SET_PDEATHSIG not reach it.
  alarm(g.is_client ? g_opt.timeout_s : g_opt.timeout_s + 5);

  // The client opens its endpoint first and then lets the target open
  // its own, so a bad provider or domain is reported once, by the client.
  char go = 'g';
  if (g.is_client) {
    open_fabric();
    oob_write(&go, 1);
  } else {
    ssize_t n;
    do {
      n = read(g.sock, &go, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) _exit(1);  // the client failed and has said why
    open_fabric();
  }
  exchange_addresses();
  return g.is_client ? run_client(pinned) : run_target();
}
