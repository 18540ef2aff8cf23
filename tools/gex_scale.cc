// gex_scale: what one rank costs at this job size. Each rank initialises,
// attaches a segment (4 MiB by default), sends one Medium to every other
// rank (the first contact), Puts 8 bytes into every other rank's segment,
// times barrier, broadcast and reduce-to-all, and an all-to-all of Short
// AMs; then reports its peak (VmHWM) and steady (VmRSS) resident memory.
// With -p K the Medium, the Put and the all-to-all go to the next K ranks
// only: a conduit that connects on demand then connects K peers, which
// separates what a rank costs per peer from what it costs per connected
// peer.
// Rank 0 gathers every rank's figures and prints one line per rank:
//
//   scale: rank R size N spawn_us S init_us I attach_us A medium_us M
//     put_us P barrier_us B bcast_us C reduce_us D alltoall_us E
//     hwm_kb H rss_kb R startup_cpu_us U cpu_us V
//
// (one line; the conduit's own lines -- GASNET_<CONDUIT>_STATS=1 at exit,
// GASNET_STARTUP_TIMES=1 at attach -- come from the library). spawn_us is
// the time from GEX_SCALE_T0 (CLOCK_REALTIME in ns, set by the driver just
// before it starts the launcher) to this rank's main(); -1 when unset.
// The driver, tools/gex_scale.py, runs this at a list of job sizes and
// turns the lines into a table, CSV and plots.
//
//   bazel-bin/tools/gasnetrun_ucx -n 8 bazel-bin/tools/gex_scale_ucx
//
// Written against <gasnetex.h> only, so it builds for any conduit.
#include <gasnetex.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "tools/bench_args.h"

namespace gex_scale {
namespace {

enum : gex_AM_Index_t {
  kFirstContact = GEX_AM_INDEX_BASE,  // Medium: counted
  kAllToAll,                          // Short: counted
  kFigures,                           // Medium to rank 0: one rank's Figures
};

// One rank's figures, as they travel to rank 0 (POD).
struct Figures {
  uint32_t rank;
  uint32_t size;
  int64_t spawn_us;
  int64_t init_us;
  int64_t attach_us;
  int64_t medium_us;
  int64_t put_us;
  double barrier_us;
  double bcast_us;
  double reduce_us;
  int64_t alltoall_us;
  int64_t hwm_kb;
  int64_t rss_kb;
  int64_t startup_cpu_us;  // this process's CPU time to the end of attach
  int64_t cpu_us;          // and to the end of the run
};

std::atomic<uint64_t> g_first_contacts{0};
std::atomic<uint64_t> g_alltoall{0};
std::vector<Figures> g_gathered;  // rank 0: filled by kFigures
std::atomic<uint64_t> g_figures{0};

void Check(int rc, const char* what) {
  if (rc != GASNET_OK) {
    std::fprintf(stderr, "gex_scale: %s failed: %s (%s)\n", what,
                 gasnet_ErrorName(rc), gasnet_ErrorDesc(rc));
    std::fflush(stderr);
    gasnet_exit(1);
  }
}

void OnFirstContact(gex_Token_t, void*, size_t) {
  g_first_contacts.fetch_add(1, std::memory_order_release);
}
void OnAllToAll(gex_Token_t) {
  g_alltoall.fetch_add(1, std::memory_order_release);
}
void OnFigures(gex_Token_t, void* buf, size_t nbytes) {
  Figures f;
  if (nbytes != sizeof f) {
    std::fprintf(stderr, "gex_scale: figures of %zu bytes, not %zu\n", nbytes,
                 sizeof f);
    std::abort();
  }
  std::memcpy(&f, buf, sizeof f);
  if (f.rank < g_gathered.size()) g_gathered[f.rank] = f;
  g_figures.fetch_add(1, std::memory_order_release);
}

using Clock = std::chrono::steady_clock;
int64_t MicrosSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t)
      .count();
}

// User and system CPU time of this process so far. On a host with more
// ranks than cores, wall times grow with the job's total work; a rank's
// own CPU time is what it would cost with a core of its own.
int64_t CpuMicros() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (int64_t{u.ru_utime.tv_sec} + u.ru_stime.tv_sec) * 1000000 +
         u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

// "VmHWM:  1234 kB" from /proc/self/status; -1 when absent.
int64_t StatusKb(const char* key) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t kb = -1;
  const size_t len = std::strlen(key);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, key, len) == 0 && line[len] == ':') {
      kb = std::strtoll(line + len + 1, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kb;
}

int Usage(const char* argv0, int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: %s [-s segment_bytes] [-i collective_iterations] "
               "[-p peers]\n"
               "  -s  segment size to attach (default 4M)\n"
               "  -i  iterations of each timed collective (default 20)\n"
               "  -p  the Medium, Put and all-to-all go to the next p ranks\n"
               "      only (default: every other rank), so that a conduit\n"
               "      connecting on demand connects p peers\n",
               argv0);
  return code;
}

int Main(int argc, char** argv) {
  // Before anything else: how long the launcher took to get here.
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const int64_t main_ns = int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
  int64_t spawn_us = -1;
  if (const char* t0 = std::getenv("GEX_SCALE_T0"); t0 != nullptr) {
    spawn_us = (main_ns - std::strtoll(t0, nullptr, 10)) / 1000;
  }

  const Clock::time_point init_start = Clock::now();
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  Check(gex_Client_Init(&client, &ep, &tm, "gex_scale", &argc, &argv, 0),
        "gex_Client_Init");
  const int64_t init_us = MicrosSince(init_start);

  uint64_t seg_bytes = uint64_t{4} << 20;
  uint64_t iterations = 20;
  uint64_t contacts = UINT64_MAX;  // -p: the next K ranks only
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h") return Usage(argv[0], 0);
    if ((a == "-s" || a == "-i" || a == "-p") && i + 1 < argc) {
      uint64_t v = 0;
      const bool ok = a == "-s" ? gex_bench::ParseSize(argv[++i], &v)
                                : gex_bench::ParseCount(argv[++i], &v);
      if (!ok || (a != "-s" && v == 0)) {
        std::fprintf(stderr, "gex_scale: %s: bad value '%s'\n", a.c_str(),
                     argv[i]);
        gasnet_exit(2);
      }
      (a == "-s" ? seg_bytes : a == "-i" ? iterations : contacts) = v;
      continue;
    }
    std::fprintf(stderr, "gex_scale: unknown option '%s'\n", a.c_str());
    return Usage(argv[0], 2);
  }
  seg_bytes = std::max<uint64_t>(seg_bytes, 4096);

  const gex_Rank_t me = gex_TM_QueryRank(tm);
  const gex_Rank_t n = gex_TM_QuerySize(tm);
  // The ranks each rank contacts: me+1 .. me+k (mod n), and it hears from
  // me-1 .. me-k.
  const gex_Rank_t k =
      static_cast<gex_Rank_t>(std::min<uint64_t>(contacts, n - 1u));
  if (me == 0) g_gathered.assign(n, Figures{});
  gex_AM_Entry_t table[] = {
      {kFirstContact, reinterpret_cast<gex_AM_Fn_t>(OnFirstContact),
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, nullptr,
       "gex_scale first contact"},
      {kAllToAll, reinterpret_cast<gex_AM_Fn_t>(OnAllToAll),
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, nullptr,
       "gex_scale all-to-all"},
      {kFigures, reinterpret_cast<gex_AM_Fn_t>(OnFigures),
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, nullptr,
       "gex_scale figures"},
  };
  Check(gex_EP_RegisterHandlers(ep, table, sizeof table / sizeof table[0]),
        "gex_EP_RegisterHandlers");

  Clock::time_point t = Clock::now();
  gex_Segment_t segment;
  Check(gex_Segment_Attach(&segment, tm, seg_bytes), "gex_Segment_Attach");
  const int64_t attach_us = MicrosSince(t);
  const int64_t startup_cpu_us = CpuMicros();

  // Every other rank's segment, for the Puts (one query per rank: O(N)).
  std::vector<void*> peer_base(n, nullptr);
  for (gex_Rank_t r = 0; r < n; ++r) {
    gex_Event_Wait(
        gex_EP_QueryBoundSegmentNB(tm, r, &peer_base[r], nullptr, nullptr, 0));
  }
  gex_Coll_BarrierBlocking(tm, 0);

  // One Medium to every other rank, starting at the next one so that no
  // rank is everyone's first destination.
  char payload[64];
  std::memset(payload, static_cast<int>(me & 0xff), sizeof payload);
  t = Clock::now();
  for (gex_Rank_t i = 1; i <= k; ++i) {
    Check(gex_AM_RequestMedium0(tm, (me + i) % n, kFirstContact, payload,
                                sizeof payload, GEX_EVENT_NOW, 0),
          "gex_AM_RequestMedium0");
  }
  GASNET_BLOCKUNTIL(g_first_contacts.load(std::memory_order_acquire) == k);
  const int64_t medium_us = MicrosSince(t);
  gex_Coll_BarrierBlocking(tm, 0);

  // 8 bytes into every other rank's segment, at this rank's own slot.
  const uint64_t value = 0x5ca1e000ull + me;
  t = Clock::now();
  for (gex_Rank_t i = 1; i <= k; ++i) {
    const gex_Rank_t r = (me + i) % n;
    char* dest = static_cast<char*>(peer_base[r]) + (8 * me) % seg_bytes;
    gex_RMA_PutNBI(tm, r, dest, const_cast<uint64_t*>(&value), sizeof value,
                   GEX_EVENT_DEFER, 0);
  }
  gex_NBI_Wait(GEX_EC_PUT, 0);
  const int64_t put_us = MicrosSince(t);
  gex_Coll_BarrierBlocking(tm, 0);

  auto per_iteration = [&](auto&& op) {
    op();  // the first round sets things up; not timed
    const Clock::time_point start = Clock::now();
    for (uint64_t i = 0; i < iterations; ++i) op();
    return static_cast<double>(MicrosSince(start)) / iterations;
  };
  const double barrier_us =
      per_iteration([&] { gex_Event_Wait(gex_Coll_BarrierNB(tm, 0)); });
  uint64_t bcast = me, reduced = 0;
  const double bcast_us = per_iteration([&] {
    gex_Event_Wait(gex_Coll_BroadcastNB(tm, 0, &bcast, &bcast, 8, 0));
  });
  const uint64_t one = 1;
  const double reduce_us = per_iteration([&] {
    gex_Event_Wait(gex_Coll_ReduceToAllNB(tm, &reduced, &one, GEX_DT_U64, 8, 1,
                                          GEX_OP_ADD, nullptr, nullptr, 0));
  });
  if (reduced != n || bcast != 0) {
    std::fprintf(stderr,
                 "gex_scale: rank %u: reduce gave %" PRIu64
                 " (not %u) or broadcast %" PRIu64 " (not 0)\n",
                 me, reduced, n, bcast);
    gasnet_exit(1);
  }
  gex_Coll_BarrierBlocking(tm, 0);

  // All-to-all: a Short to every other rank, all ranks at once.
  t = Clock::now();
  for (gex_Rank_t i = 1; i <= k; ++i) {
    Check(gex_AM_RequestShort0(tm, (me + i) % n, kAllToAll, 0),
          "gex_AM_RequestShort0");
  }
  GASNET_BLOCKUNTIL(g_alltoall.load(std::memory_order_acquire) == k);
  const int64_t alltoall_us = MicrosSince(t);
  gex_Coll_BarrierBlocking(tm, 0);

  // The Puts landed: every other rank's value at its slot here.
  const char* mine = static_cast<const char*>(gex_Segment_QueryAddr(segment));
  for (gex_Rank_t i = 1; i <= k; ++i) {
    const gex_Rank_t r = (me + n - i) % n;
    uint64_t got;
    std::memcpy(&got, mine + (8 * r) % seg_bytes, sizeof got);
    if (8 * static_cast<uint64_t>(n) <= seg_bytes && got != 0x5ca1e000ull + r) {
      std::fprintf(stderr, "gex_scale: rank %u: rank %u's Put is missing\n", me,
                   r);
      gasnet_exit(1);
    }
  }

  Figures f{me,
            n,
            spawn_us,
            init_us,
            attach_us,
            medium_us,
            put_us,
            barrier_us,
            bcast_us,
            reduce_us,
            alltoall_us,
            StatusKb("VmHWM"),
            StatusKb("VmRSS"),
            startup_cpu_us,
            CpuMicros()};
  if (me == 0) {
    g_gathered[0] = f;
    g_figures.fetch_add(1, std::memory_order_release);
  } else {
    Check(
        gex_AM_RequestMedium0(tm, 0, kFigures, &f, sizeof f, GEX_EVENT_NOW, 0),
        "gex_AM_RequestMedium0");
  }
  if (me == 0) {
    GASNET_BLOCKUNTIL(g_figures.load(std::memory_order_acquire) == n);
    for (const Figures& g : g_gathered) {
      std::printf(
          "scale: rank %u size %u spawn_us %" PRId64 " init_us %" PRId64
          " attach_us %" PRId64 " medium_us %" PRId64 " put_us %" PRId64
          " barrier_us %.1f bcast_us %.1f reduce_us %.1f alltoall_us %" PRId64
          " hwm_kb %" PRId64 " rss_kb %" PRId64 " startup_cpu_us %" PRId64
          " cpu_us %" PRId64 "\n",
          g.rank, g.size, g.spawn_us, g.init_us, g.attach_us, g.medium_us,
          g.put_us, g.barrier_us, g.bcast_us, g.reduce_us, g.alltoall_us,
          g.hwm_kb, g.rss_kb, g.startup_cpu_us, g.cpu_us);
    }
    std::fflush(stdout);
  }
  gex_Coll_BarrierBlocking(tm, 0);
  gasnet_exit(0);
  return 0;
}

}  // namespace
}  // namespace gex_scale

int main(int argc, char** argv) { return gex_scale::Main(argc, argv); }
