// ratomic_par_client: one rank of a multi-threaded remote-atomics job (C++,
// PAR), started by ratomic_job_test. Usage: ratomic_par_client par THREADS
// ROUNDS.
//
// THREADS threads per rank each run ROUNDS rounds; in a round, for every
// rank t of the job (starting at its own rank, so the targets spread):
//   - Blocking FADD 1 on t's U64 counter A (the values this thread fetches
//     from one counter strictly increase);
//   - NBI FADD 1 on t's U64 counter B, synced with gex_NBI_Wait(GEX_EC_RMW)
//     at the end of the round (each thread's own NBI counters);
//   - NB ADD 0.25 on t's DBL counter C, waited at once;
//   - a CAS increment of rank 0's U64 counter D (GET, then FCAS(old,
//     old+1) until it takes).
// After the threads join and a barrier, each rank checks its own counters:
// A and B hold n*THREADS*ROUNDS, C a quarter of that, and rank 0's D the
// same total. Prints "rank R: par ok ops=K" (K: this rank's operations,
// retried FCASes excluded).
#include <gasnet_ratomic.h>
#include <gasnetex.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/api/client_check.h"

namespace {

constexpr size_t kSegSize = 64 * 1024;
constexpr size_t kCell = 64;  // one cache line each

gex_TM_t g_tm;
gex_Rank_t g_me;
gex_Rank_t g_n;
std::vector<unsigned char*> g_owner;
gex_AD_t g_u64;
gex_AD_t g_dbl;
std::atomic<long> g_ops{0};

void* Cell(gex_Rank_t t, int i) { return g_owner[t] + i * kCell; }

void Worker(int rounds) {
  std::vector<uint64_t> last(g_n, 0);
  // The NBI FADDs' results, written when each completes: they must stay
  // valid until the round's gex_NBI_Wait (a stack variable of the inner
  // loop would be reused by the CAS loop below while a late reply still
  // writes into it).
  std::vector<uint64_t> nbi_result(g_n, 0);
  long ops = 0;
  for (int k = 0; k < rounds; ++k) {
    for (gex_Rank_t j = 0; j < g_n; ++j) {
      const gex_Rank_t t = (g_me + j) % g_n;
      uint64_t old = 0;
      CHECK(gex_AD_OpBlocking_U64(g_u64, &old, t, Cell(t, 0), GEX_OP_FADD, 1, 0,
                                  0) == 0,
            "Blocking FADD");
      CHECK(k == 0 || old > last[t], "counter A on %u went from %llu to %llu",
            t, static_cast<unsigned long long>(last[t]),
            static_cast<unsigned long long>(old));
      last[t] = old;
      CHECK(gex_AD_OpNBI_U64(g_u64, &nbi_result[t], t, Cell(t, 1), GEX_OP_FADD,
                             1, 0, 0) == 0,
            "NBI FADD");
      gex_Event_Wait(gex_AD_OpNB_DBL(g_dbl, nullptr, t, Cell(t, 2), GEX_OP_ADD,
                                     0.25, 0, 0));
      ops += 3;
    }
    uint64_t seen = 0;
    gex_AD_OpBlocking_U64(g_u64, &seen, 0, Cell(0, 3), GEX_OP_GET, 0, 0, 0);
    for (;;) {
      uint64_t was = 0;
      gex_AD_OpBlocking_U64(g_u64, &was, 0, Cell(0, 3), GEX_OP_FCAS, seen,
                            seen + 1, 0);
      if (was == seen) break;
      seen = was;
      gasnet_AMPoll();  // a direct FCAS makes no progress
      sched_yield();
    }
    ops += 2;
    gex_NBI_Wait(GEX_EC_RMW, 0);
  }
  g_ops += ops;
}

}  // namespace

int main(int argc, char** argv) {
  gex_Client_t client;
  gex_EP_t ep;
  CHECK(gex_Client_Init(&client, &ep, &g_tm, "RATOMIC_PAR", &argc, &argv, 0) ==
            GASNET_OK,
        "gex_Client_Init failed");
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = static_cast<int>(g_me);
  CHECK(argc == 4 && std::strcmp(argv[1], "par") == 0,
        "usage: ratomic_par_client par THREADS ROUNDS");
  const int threads = std::atoi(argv[2]);
  const int rounds = std::atoi(argv[3]);
  gex_Segment_t seg;
  CHECK(gex_Segment_Attach(&seg, g_tm, kSegSize) == GASNET_OK, "attach");
  std::memset(gex_Segment_QueryAddr(seg), 0, kSegSize);
  g_owner.resize(g_n);
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    void* owner = nullptr;
    void* local = nullptr;
    uintptr_t size = 0;
    gex_Event_Wait(
        gex_EP_QueryBoundSegmentNB(g_tm, r, &owner, &local, &size, 0));
    CHECK(owner != nullptr && size >= kSegSize, "rank %u's segment", r);
    g_owner[r] = static_cast<unsigned char*>(owner);
  }
  gex_AD_Create(&g_u64, g_tm, GEX_DT_U64,
                GEX_OP_FADD | GEX_OP_GET | GEX_OP_FCAS, 0);
  gex_AD_Create(&g_dbl, g_tm, GEX_DT_DBL, GEX_OP_ADD | GEX_OP_GET, 0);
  gex_Coll_BarrierBlocking(g_tm, 0);

  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(Worker, rounds);
  for (std::thread& t : pool) t.join();
  gex_Coll_BarrierBlocking(g_tm, 0);

  const uint64_t total = static_cast<uint64_t>(g_n) * threads * rounds;
  uint64_t a = 0, b = 0, d = 0;
  double c = 0;
  gex_AD_OpBlocking_U64(g_u64, &a, g_me, Cell(g_me, 0), GEX_OP_GET, 0, 0, 0);
  gex_AD_OpBlocking_U64(g_u64, &b, g_me, Cell(g_me, 1), GEX_OP_GET, 0, 0, 0);
  gex_AD_OpBlocking_DBL(g_dbl, &c, g_me, Cell(g_me, 2), GEX_OP_GET, 0, 0, 0);
  CHECK(a == total, "counter A %llu, expected %llu",
        static_cast<unsigned long long>(a),
        static_cast<unsigned long long>(total));
  CHECK(b == total, "counter B %llu, expected %llu",
        static_cast<unsigned long long>(b),
        static_cast<unsigned long long>(total));
  CHECK(c == 0.25 * static_cast<double>(total), "counter C %g, expected %g", c,
        0.25 * static_cast<double>(total));
  if (g_me == 0) {
    gex_AD_OpBlocking_U64(g_u64, &d, 0, Cell(0, 3), GEX_OP_GET, 0, 0, 0);
    CHECK(d == total, "CAS counter D %llu, expected %llu",
          static_cast<unsigned long long>(d),
          static_cast<unsigned long long>(total));
  }
  gex_Coll_BarrierBlocking(g_tm, 0);
  gex_AD_Destroy(g_u64);
  gex_AD_Destroy(g_dbl);
  Say("par ok ops=%ld", g_ops.load());
  gex_Coll_BarrierBlocking(g_tm, 0);
  gasnet_exit(0);
  return 0;
}
