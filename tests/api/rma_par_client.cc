// rma_par_client: one rank of a multi-threaded RMA job over any conduit in
// PAR mode (built against the conduit's PAR library), started by its
// launcher from rma_job_test (also under --config=tsan, which judges
// ThreadSanitizer's reports). C++, -Wall -Wextra -Wpedantic -Werror.
//
//   par ROUNDS  4 threads per rank, each with its own slice of every
//               segment area, run ROUNDS rounds of: NB Puts to the next rank
//               and NB Gets from the previous one (waited with WaitAll, or
//               their LC leaves first), an access region mixing NBI Puts and
//               Gets (its event waited, its LC leaf first), NBI operations
//               outside regions synced with gex_NBI_Wait by category (each
//               thread's counters are its own: another thread's pending
//               operations must not hold it up, nor be synced by it), and
//               blocking Puts and Gets; every destination is checked (a
//               Put's through the next rank's segment as mapped here, or,
//               when it is not, read back with a blocking Get). A
//               fifth thread only polls. Replies (on the AM path) are run by
//               whichever thread polls, so completions cross threads.
//               Prints "rank R: par ok ops=K".
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

constexpr int kThreads = 4;
constexpr int kOps = 6;
constexpr size_t kOpBytes = 70000;  // more than one AM chunk
constexpr size_t kSlot = 72 * 1024;
constexpr size_t kThreadArea = kOps * kSlot;
constexpr size_t kArea = kThreads * kThreadArea;
// Segment: IN (written by the previous rank), SRC (read by the next).
constexpr size_t kInOff = 0;
constexpr size_t kSrcOff = kArea;
constexpr size_t kLocalOff = 2 * kArea;
constexpr size_t kSegSize = 3 * kArea;

gex_TM_t g_tm;
gex_Rank_t g_me;
gex_Rank_t g_n;
gex_Rank_t g_next;
gex_Rank_t g_prev;
unsigned char* g_base;
std::vector<unsigned char*> g_owner;
std::vector<unsigned char*> g_local;  // null: not mapped here
std::atomic<bool> g_done{false};

unsigned char Pattern(uint32_t seed, size_t i) {
  return static_cast<unsigned char>(seed * 151u + i * 7u + (i >> 9) * 13u + 1u);
}

struct Slot {
  unsigned char* local;  // in-segment or heap, by op index
  size_t remote;         // offset in an area of the peer
  size_t n;
};

class Worker {
 public:
  explicit Worker(int t) : t_(t), heap_(kThreadArea), scratch_(kSlot) {}

  void Run(int rounds) {
    for (int round = 0; round < rounds; ++round) {
      NbRound(round);
      RegionRound(round);
      NbiRound(round);
      BlockingRound(round);
    }
  }
  long ops() const { return ops_; }

 private:
  Slot SlotFor(int i, int round) {
    Slot s;
    unsigned char* base =
        i % 2 == 0 ? g_base + kLocalOff + t_ * kThreadArea : heap_.data();
    s.local = base + i * kSlot + 1;
    s.remote = t_ * kThreadArea + i * kSlot + 3;
    s.n = 1 + (kOpBytes + static_cast<size_t>(round) * 977 + i * 13) % kOpBytes;
    return s;
  }
  uint32_t Seed(int i, int round) const {
    return static_cast<uint32_t>(g_me * 7919 + t_ * 104729 + round * 31 + i);
  }
  void FillPut(const Slot& s, uint32_t seed) {
    for (size_t k = 0; k < s.n; ++k) s.local[k] = Pattern(seed, k);
  }
  void CheckPut(const Slot& s, uint32_t seed, const char* what) {
    const unsigned char* view = nullptr;
    if (g_local[g_next] != nullptr) {
      view = g_local[g_next] + kInOff + s.remote;
    } else {
      std::memset(scratch_.data(), 0xCC, s.n);
      CHECK(gex_RMA_GetBlocking(g_tm, scratch_.data(), g_next, PutDest(s), s.n,
                                0) == 0,
            "thread %d %s put read back", t_, what);
      view = scratch_.data();
    }
    for (size_t k = 0; k < s.n; ++k) {
      CHECK(view[k] == Pattern(seed, k), "thread %d %s put byte %zu", t_, what,
            k);
    }
  }
  void CheckGet(const Slot& s, const char* what) {
    for (size_t k = 0; k < s.n; ++k) {
      CHECK(s.local[k] == Pattern(1000 + g_prev, s.remote + k),
            "thread %d %s get byte %zu", t_, what, k);
    }
  }
  void* PutDest(const Slot& s) { return g_owner[g_next] + kInOff + s.remote; }
  void* GetSrc(const Slot& s) { return g_owner[g_prev] + kSrcOff + s.remote; }

  // NB Puts (even i) and Gets (odd i).
  void NbRound(int round) {
    gex_Event_t evs[kOps];
    gex_Event_t leaves[kOps];
    Slot slots[kOps];
    for (int i = 0; i < kOps; ++i) {
      slots[i] = SlotFor(i, round);
      leaves[i] = GEX_EVENT_INVALID;
      if (i % 2 == 0) {
        FillPut(slots[i], Seed(i, round));
        evs[i] = gex_RMA_PutNB(g_tm, g_next, PutDest(slots[i]), slots[i].local,
                               slots[i].n, &leaves[i], 0);
      } else {
        std::memset(slots[i].local, 0xCC, slots[i].n);
        evs[i] = gex_RMA_GetNB(g_tm, slots[i].local, g_prev, GetSrc(slots[i]),
                               slots[i].n, 0);
      }
    }
    if (round % 2 == 1) {
      gex_Event_WaitAll(leaves, kOps, 0);
      for (int i = 0; i < kOps; i += 2) {
        std::memset(slots[i].local, 0x99, slots[i].n);
      }
    }
    gex_Event_WaitAll(evs, kOps, 0);
    for (int i = 0; i < kOps; ++i) {
      if (i % 2 == 0) {
        CheckPut(slots[i], Seed(i, round), "NB");
      } else {
        CheckGet(slots[i], "NB");
      }
    }
    ops_ += kOps;
  }

  void RegionRound(int round) {
    Slot slots[kOps];
    gex_NBI_BeginAccessRegion(0);
    for (int i = 0; i < kOps; ++i) {
      slots[i] = SlotFor(i, round + 1);
      if (i % 2 == 1) {
        FillPut(slots[i], Seed(i, round + 1));
        CHECK(gex_RMA_PutNBI(g_tm, g_next, PutDest(slots[i]), slots[i].local,
                             slots[i].n, GEX_EVENT_GROUP, 0) == 0,
              "PutNBI");
      } else {
        std::memset(slots[i].local, 0xCC, slots[i].n);
        CHECK(gex_RMA_GetNBI(g_tm, slots[i].local, g_prev, GetSrc(slots[i]),
                             slots[i].n, 0) == 0,
              "GetNBI");
      }
    }
    gex_Event_t ev = gex_NBI_EndAccessRegion(0);
    gex_Event_Wait(gex_Event_QueryLeaf(ev, GEX_EC_LC));
    for (int i = 1; i < kOps; i += 2) {
      std::memset(slots[i].local, 0x99, slots[i].n);
    }
    gex_Event_Wait(ev);
    for (int i = 0; i < kOps; ++i) {
      if (i % 2 == 1) {
        CheckPut(slots[i], Seed(i, round + 1), "region");
      } else {
        CheckGet(slots[i], "region");
      }
    }
    ops_ += kOps;
  }

  void NbiRound(int round) {
    Slot slots[kOps];
    for (int i = 0; i < kOps; ++i) {
      slots[i] = SlotFor(i, round + 2);
      if (i < kOps / 2) {
        FillPut(slots[i], Seed(i, round + 2));
        CHECK(gex_RMA_PutNBI(g_tm, g_next, PutDest(slots[i]), slots[i].local,
                             slots[i].n, GEX_EVENT_DEFER, 0) == 0,
              "PutNBI");
      } else {
        std::memset(slots[i].local, 0xCC, slots[i].n);
        CHECK(gex_RMA_GetNBI(g_tm, slots[i].local, g_prev, GetSrc(slots[i]),
                             slots[i].n, 0) == 0,
              "GetNBI");
      }
    }
    gex_NBI_Wait(GEX_EC_GET, 0);
    for (int i = kOps / 2; i < kOps; ++i) CheckGet(slots[i], "NBI");
    gex_NBI_Wait(GEX_EC_PUT, 0);
    for (int i = 0; i < kOps / 2; ++i) {
      CheckPut(slots[i], Seed(i, round + 2), "NBI");
    }
    CHECK(gex_NBI_Test(GEX_EC_ALL, 0) == GASNET_OK, "NBI pending after wait");
    ops_ += kOps;
  }

  void BlockingRound(int round) {
    const Slot put = SlotFor(0, round + 3);
    FillPut(put, Seed(0, round + 3));
    CHECK(gex_RMA_PutBlocking(g_tm, g_next, PutDest(put), put.local, put.n,
                              0) == 0,
          "PutBlocking");
    CheckPut(put, Seed(0, round + 3), "blocking");
    const Slot get = SlotFor(1, round + 3);
    CHECK(gex_RMA_GetBlocking(g_tm, get.local, g_prev, GetSrc(get), get.n, 0) ==
              0,
          "GetBlocking");
    CheckGet(get, "blocking");
    const gex_RMA_Value_t v = 0x0102030405060708ull + t_;
    CHECK(gex_RMA_PutBlockingVal(g_tm, g_next, PutDest(put), v, 8, 0) == 0,
          "PutBlockingVal");
    CHECK(gex_RMA_GetBlockingVal(g_tm, g_next, PutDest(put), 8, 0) == v,
          "GetBlockingVal");
    ops_ += 4;
  }

  int t_;
  std::vector<unsigned char> heap_;
  std::vector<unsigned char> scratch_;  // a Put's destination, read back
  long ops_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_Segment_t seg;
  CHECK(gex_Client_Init(&client, &ep, &g_tm, "RMA_PAR", &argc, &argv, 0) ==
            GASNET_OK,
        "gex_Client_Init");
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = static_cast<int>(g_me);
  CHECK(argc == 3 && std::strcmp(argv[1], "par") == 0,
        "usage: rma_par_client par ROUNDS");
  const int rounds = std::atoi(argv[2]);
  g_next = (g_me + 1) % g_n;
  g_prev = (g_me + g_n - 1) % g_n;
  CHECK(gex_Segment_Attach(&seg, g_tm, kSegSize) == GASNET_OK, "attach");
  g_base = static_cast<unsigned char*>(gex_Segment_QueryAddr(seg));
  g_owner.resize(g_n);
  g_local.resize(g_n);
  for (gex_Rank_t r = 0; r < g_n; ++r) {
    void* owner;
    void* local;
    uintptr_t size;
    gex_Event_Wait(
        gex_EP_QueryBoundSegmentNB(g_tm, r, &owner, &local, &size, 0));
    CHECK(owner != nullptr && size >= kSegSize, "rank %u's segment", r);
    g_owner[r] = static_cast<unsigned char*>(owner);
    g_local[r] = static_cast<unsigned char*>(local);
  }
  for (size_t k = 0; k < kArea; ++k) {
    g_base[kSrcOff + k] = Pattern(1000 + g_me, k);
  }
  gex_Coll_BarrierBlocking(g_tm, 0);

  std::thread poller([] {
    while (!g_done.load(std::memory_order_acquire)) {
      gasnet_AMPoll();
      sched_yield();
    }
  });
  std::vector<Worker> workers;
  workers.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) workers.emplace_back(t);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&workers, t, rounds] { workers[t].Run(rounds); });
  }
  for (std::thread& th : threads) th.join();
  long ops = 0;
  for (const Worker& w : workers) ops += w.ops();
  // Peers may still need this rank's replies: keep polling through the
  // barrier.
  gex_Coll_BarrierBlocking(g_tm, 0);
  g_done.store(true, std::memory_order_release);
  poller.join();
  Say("par ok ops=%ld", ops);
  gex_Coll_BarrierBlocking(g_tm, 0);
  gasnet_exit(0);
}
