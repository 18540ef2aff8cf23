// Remote fetch-add latency (gasnet_ratomic.h) on smp against a raw CPU
// atomic ping-pong between the same two processes, measured in the same run.
//
//   GASNET_PSHM_NODES=2 bazel-bin/tests/benchmarks/ratomic_benchmark
//       [--iters N] [--trials T]   (defaults 5000 and 101)
//
// A job of 2 ranks (GASNET_PSHM_NODES=2 makes the program its own
// launcher; gasnetrun_smp -n 2 works too). One 64-bit counter lives in
// rank 1's segment, alone on its cache line; rank 0 reaches it through the
// cross-mapped segment (a supernode peer), rank 1 in its own.
//
// Ping-pong, N round trips, both ranks in the loop: rank r waits until the
// counter reads 2i + r, then adds 1, so every hop moves the cache line from
// one process's core to the other's. The time per hop (total / 2N) is the
// latency of one remote fetch-add that follows the other side's.
//   raw     the baseline: std::atomic_ref on the mapped address, a load
//           (acquire) to observe and a fetch_add (seq_cst) to increment,
//           no GASNet call;
//   gex     the same protocol through the API: gex_AD_OpBlocking_U64
//           with GEX_OP_GET to observe and GEX_OP_FADD to increment (the
//           direct path: CPU atomics on the mapped address);
//   gex-am  the same with GEX_RMA_FORCE_AM=1 (set in the program before
//           the domain is created): every operation an Active Message
//           request and reply over PSHM, the target applying it.
// Also, rank 0 alone (rank 1 waiting in a barrier, not touching the line):
//   uncontended  N fetch-adds on the same counter, raw and through
//           gex_AD_OpBlocking_U64: the per-call cost of the API on a line
//           already in this core's cache.
// Each measurement is taken T times, interleaved (raw, gex, raw, gex ...),
// short trials many times, so that a trial the scheduler interrupted (the
// machines here run more processes than they have CPUs, and a ping-pong
// needs both ranks on a CPU at once) is one of many. Prints, at rank 0,
// one line per measurement with the fastest trial (min: the cost with
// nothing else in the way; noise only adds) and the median, and the
// ratios of both:
//   ratio fetch-add ping-pong: gex/raw = R (min) ... (median)
// where the bound (<= 1.5) is on R.
#include <gasnet_ratomic.h>
#include <gasnetex.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

gex_TM_t g_tm;
gex_Rank_t g_me;
uint64_t* g_counter_owner;  // rank 1's address of the counter
uint64_t* g_counter_local;  // where it is mapped here

void Barrier() { gex_Coll_BarrierBlocking(g_tm, 0); }

double Now() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Sets the counter to 0 (rank 1, its own memory) with both ranks quiet.
void Reset() {
  Barrier();
  if (g_me == 1) {
    std::atomic_ref<uint64_t>(*g_counter_local).store(0);
  }
  Barrier();
}

double RawPingPong(long iters) {
  Reset();
  std::atomic_ref<uint64_t> c(*g_counter_local);
  const double t0 = Now();
  for (long i = 0; i < iters; ++i) {
    const uint64_t turn = 2 * static_cast<uint64_t>(i) + g_me;
    while (c.load(std::memory_order_acquire) != turn) {
    }
    c.fetch_add(1);
  }
  const double t = Now() - t0;
  Barrier();
  return t / (2.0 * static_cast<double>(iters));
}

double AdPingPong(gex_AD_t ad, long iters) {
  Reset();
  const double t0 = Now();
  for (long i = 0; i < iters; ++i) {
    const uint64_t turn = 2 * static_cast<uint64_t>(i) + g_me;
    uint64_t v = 0;
    do {
      gex_AD_OpBlocking_U64(ad, &v, 1, g_counter_owner, GEX_OP_GET, 0, 0, 0);
    } while (v != turn);
    uint64_t old = 0;
    gex_AD_OpBlocking_U64(ad, &old, 1, g_counter_owner, GEX_OP_FADD, 1, 0, 0);
  }
  const double t = Now() - t0;
  Barrier();
  return t / (2.0 * static_cast<double>(iters));
}

// Rank 0 alone; rank 1 waits in the barrier.
double RawUncontended(long iters) {
  Reset();
  double per = 0;
  if (g_me == 0) {
    std::atomic_ref<uint64_t> c(*g_counter_local);
    uint64_t sink = 0;
    const double t0 = Now();
    for (long i = 0; i < iters; ++i) sink += c.fetch_add(1);
    per = (Now() - t0) / static_cast<double>(iters);
    if (sink == 1) std::puts("");  // keep the results live
  }
  Barrier();
  return per;
}

double AdUncontended(gex_AD_t ad, long iters) {
  Reset();
  double per = 0;
  if (g_me == 0) {
    uint64_t sink = 0;
    const double t0 = Now();
    for (long i = 0; i < iters; ++i) {
      uint64_t old = 0;
      gex_AD_OpBlocking_U64(ad, &old, 1, g_counter_owner, GEX_OP_FADD, 1, 0, 0);
      sink += old;
    }
    per = (Now() - t0) / static_cast<double>(iters);
    if (sink == 1) std::puts("");
  }
  Barrier();
  return per;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Min(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}

struct Stat {
  double min;
  double median;
};

Stat Of(const std::vector<double>& v) { return Stat{Min(v), Median(v)}; }

void Usage(const char* why) {
  std::fprintf(stderr,
               "ratomic_benchmark: %s\nusage: GASNET_PSHM_NODES=2 "
               "ratomic_benchmark [--iters N] [--trials T]\n",
               why);
}

}  // namespace

int main(int argc, char** argv) {
  gex_Client_t client;
  gex_EP_t ep;
  if (gex_Client_Init(&client, &ep, &g_tm, "RATOMIC_BENCH", &argc, &argv, 0) !=
      GASNET_OK) {
    return 1;
  }
  g_me = gex_TM_QueryRank(g_tm);
  long iters = 5000;
  long trials = 101;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 < argc && std::strcmp(argv[i], "--iters") == 0) {
      iters = std::atol(argv[++i]);
    } else if (i + 1 < argc && std::strcmp(argv[i], "--trials") == 0) {
      trials = std::atol(argv[++i]);
    } else {
      if (g_me == 0) Usage("unknown argument");
      gasnet_exit(2);
    }
  }
  if (iters < 1 || trials < 1) {
    if (g_me == 0) Usage("--iters and --trials must be positive");
    gasnet_exit(2);
  }
  if (gex_TM_QuerySize(g_tm) != 2) {
    if (g_me == 0) {
      std::fprintf(stderr,
                   "ratomic_benchmark: run it as 2 ranks "
                   "(GASNET_PSHM_NODES=2)\n");
    }
    gasnet_exit(2);
  }
  gex_Segment_t seg;
  if (gex_Segment_Attach(&seg, g_tm, 4096) != GASNET_OK) gasnet_exit(1);
  void* owner = nullptr;
  void* local = nullptr;
  uintptr_t size = 0;
  gex_Event_Wait(gex_EP_QueryBoundSegmentNB(g_tm, 1, &owner, &local, &size, 0));
  if (local == nullptr) {
    if (g_me == 0) {
      std::fprintf(stderr,
                   "ratomic_benchmark: rank 1's segment is not mapped here "
                   "(run both ranks in one supernode)\n");
    }
    gasnet_exit(2);
  }
  // The counter on its own cache line (offset 128 into rank 1's segment).
  g_counter_owner =
      reinterpret_cast<uint64_t*>(static_cast<char*>(owner) + 128);
  g_counter_local =
      reinterpret_cast<uint64_t*>(static_cast<char*>(local) + 128);

  unsetenv("GEX_RMA_FORCE_AM");
  gex_AD_t ad;
  gex_AD_Create(&ad, g_tm, GEX_DT_U64, GEX_OP_GET | GEX_OP_FADD,
                GEX_FLAG_AD_FAVOR_MY_NBRHD);
  setenv("GEX_RMA_FORCE_AM", "1", 1);
  gex_AD_t ad_am;
  gex_AD_Create(&ad_am, g_tm, GEX_DT_U64, GEX_OP_GET | GEX_OP_FADD, 0);
  unsetenv("GEX_RMA_FORCE_AM");

  // Warm-up.
  RawPingPong(iters / 10 + 1);
  AdPingPong(ad, iters / 10 + 1);

  std::vector<double> raw, gex, raw_u, gex_u, am;
  const long am_iters = std::max(1L, iters / 10);
  for (long t = 0; t < trials; ++t) {
    raw.push_back(RawPingPong(iters));
    gex.push_back(AdPingPong(ad, iters));
    raw_u.push_back(RawUncontended(iters));
    gex_u.push_back(AdUncontended(ad, iters));
    am.push_back(AdPingPong(ad_am, am_iters));
  }
  if (g_me == 0) {
    const Stat r = Of(raw), g = Of(gex), ru = Of(raw_u), gu = Of(gex_u),
               a = Of(am);
    std::printf(
        "ratomic_benchmark: 2 ranks on smp, %ld trials of %ld round trips "
        "(gex-am: %ld), interleaved; min and median per trial\n",
        trials, iters, am_iters);
    const auto line = [](const char* what, Stat s, const char* unit) {
      std::printf("%-50s min %8.1f  median %8.1f %s\n", what, s.min, s.median,
                  unit);
    };
    line("ping-pong raw (atomic_ref load + fetch_add)", r, "ns/hop");
    line("ping-pong gex (gex_AD_OpBlocking_U64 GET + FADD)", g, "ns/hop");
    line("ping-pong gex-am (GEX_RMA_FORCE_AM=1)", a, "ns/hop");
    line("uncontended fetch-add raw", ru, "ns/op");
    line("uncontended fetch-add gex", gu, "ns/op");
    std::printf(
        "ratio fetch-add ping-pong: gex/raw = %.2f (min) %.2f (median); "
        "bound 1.5\n",
        g.min / r.min, g.median / r.median);
    std::printf(
        "ratio fetch-add ping-pong over AMs: gex-am/raw = %.2f (min) %.2f "
        "(median)\n",
        a.min / r.min, a.median / r.median);
    std::printf(
        "ratio uncontended fetch-add: gex/raw = %.2f (min) %.2f (median); "
        "+%.1f ns per call (min)\n",
        gu.min / ru.min, gu.median / ru.median, gu.min - ru.min);
    std::fflush(stdout);
  }
  Barrier();
  gex_AD_Destroy(ad);
  gex_AD_Destroy(ad_am);
  gasnet_exit(0);
  return 0;
}
