// cpp_par_client: one rank of a multi-threaded job over the C++ API
// (<gex/gex.hpp>) over any conduit in PAR mode, started by its launcher
// from cpp_job_test (also under --config=tsan, which judges
// ThreadSanitizer's reports).
//
//   par ROUNDS  4 threads per rank, each with its own slice of every
//               segment area, its own gex::Events and its own
//               gex::AccessRegion, run ROUNDS rounds of: put_nb to the next
//               rank and get_nb from the previous one (wait_all over a span,
//               or the LC leaves first), an AccessRegion mixing put_nbi
//               (lc::group) and get_nbi (its Event waited, its ec::lc leaf
//               first), put_nbi/get_nbi outside regions synced with
//               nbi_wait by category (another thread's pending operations
//               must not hold it up, nor be synced by it), blocking put/get
//               and the value forms, and a typed Short request whose reply
//               carries the thread and round back; every destination is
//               checked (a put's through the next rank's segment as mapped
//               here, or, when it is not, read back with a blocking get). A
//               fifth thread only polls, so handlers and AM-path
//               completions run on threads other than the issuing one.
//               Prints "rank R: par ok ops=K".
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

#include "gex/gex.hpp"
#include "tests/api/client_check.h"

namespace {

constexpr int kThreads = 4;
constexpr int kOps = 6;
constexpr size_t kOpBytes = 70000;  // more than one AM chunk
constexpr size_t kSlot = 72 * 1024;
constexpr size_t kThreadArea = kOps * kSlot;
constexpr size_t kArea = kThreads * kThreadArea;
constexpr size_t kInOff = 0;
constexpr size_t kSrcOff = kArea;
constexpr size_t kLocalOff = 2 * kArea;
constexpr size_t kSegSize = 3 * kArea;

using Bytes = unsigned char;

gex::Team g_tm;
gex::Rank g_me;
gex::Rank g_n;
gex::Rank g_next;
gex::Rank g_prev;
Bytes* g_base;
std::vector<Bytes*> g_owner;
std::vector<Bytes*> g_local;  // null: not mapped here
std::atomic<bool> g_done{false};

// Replies per thread, and handler checks that failed.
std::atomic<int> g_pongs[kThreads];
std::atomic<int> g_bad{0};

Bytes Pattern(uint32_t seed, size_t i) {
  return static_cast<Bytes>(seed * 151u + i * 7u + (i >> 9) * 13u + 1u);
}

void Pong(gex::Token, uint8_t thread, uint16_t round) {
  if (thread >= kThreads) {
    g_bad.fetch_add(1);
    return;
  }
  // The reply echoes the round the thread is waiting for.
  if (round != g_pongs[thread].load(std::memory_order_relaxed)) {
    g_bad.fetch_add(1);
  }
  g_pongs[thread].fetch_add(1, std::memory_order_release);
}
void Ping(gex::Token t, uint8_t thread, uint16_t round) {
  if (t.source() != g_prev) g_bad.fetch_add(1);
  gex::reply_short<Pong>(t, thread, round);
}

struct Slot {
  Bytes* local;   // in-segment or heap, by op index
  size_t remote;  // offset in an area of the peer
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
      AmRound(round);
    }
  }
  long ops() const { return ops_; }

 private:
  Slot SlotFor(int i, int round) {
    Slot s;
    Bytes* base =
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
    const Bytes* view = nullptr;
    if (g_local[g_next] != nullptr) {
      view = g_local[g_next] + kInOff + s.remote;
    } else {
      std::memset(scratch_.data(), 0xCC, s.n);
      CHECK(gex::get(g_tm, std::span<Bytes>(scratch_.data(), s.n), g_next,
                     PutDest(s)),
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
  Bytes* PutDest(const Slot& s) { return g_owner[g_next] + kInOff + s.remote; }
  const Bytes* GetSrc(const Slot& s) {
    return g_owner[g_prev] + kSrcOff + s.remote;
  }
  static std::span<const Bytes> In(const Slot& s) { return {s.local, s.n}; }
  static std::span<Bytes> Out(const Slot& s) { return {s.local, s.n}; }

  // put_nb (even i) and get_nb (odd i).
  void NbRound(int round) {
    gex::Event evs[kOps];
    gex::Leaf leaves[kOps];
    Slot slots[kOps];
    for (int i = 0; i < kOps; ++i) {
      slots[i] = SlotFor(i, round);
      if (i % 2 == 0) {
        FillPut(slots[i], Seed(i, round));
        evs[i] = gex::put_nb(g_tm, g_next, PutDest(slots[i]), In(slots[i]),
                             leaves[i]);
      } else {
        std::memset(slots[i].local, 0xCC, slots[i].n);
        evs[i] = gex::get_nb(g_tm, Out(slots[i]), g_prev, GetSrc(slots[i]));
      }
    }
    if (round % 2 == 1) {
      for (int i = 0; i < kOps; i += 2) leaves[i].wait();
      for (int i = 0; i < kOps; i += 2) {
        std::memset(slots[i].local, 0x99, slots[i].n);
      }
    }
    gex::wait_all(std::span<gex::Event>(evs));
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
    gex::AccessRegion region;
    for (int i = 0; i < kOps; ++i) {
      slots[i] = SlotFor(i, round + 1);
      if (i % 2 == 1) {
        FillPut(slots[i], Seed(i, round + 1));
        CHECK(gex::put_nbi(g_tm, g_next, PutDest(slots[i]), In(slots[i]),
                           gex::lc::group),
              "put_nbi");
      } else {
        std::memset(slots[i].local, 0xCC, slots[i].n);
        CHECK(gex::get_nbi(g_tm, Out(slots[i]), g_prev, GetSrc(slots[i])),
              "get_nbi");
      }
    }
    gex::Event ev = region.end();
    ev.leaf(gex::ec::lc).wait();
    for (int i = 1; i < kOps; i += 2) {
      std::memset(slots[i].local, 0x99, slots[i].n);
    }
    ev.wait();
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
        CHECK(gex::put_nbi(g_tm, g_next, PutDest(slots[i]), In(slots[i])),
              "put_nbi");
      } else {
        std::memset(slots[i].local, 0xCC, slots[i].n);
        CHECK(gex::get_nbi(g_tm, Out(slots[i]), g_prev, GetSrc(slots[i])),
              "get_nbi");
      }
    }
    gex::nbi_wait(gex::ec::get);
    for (int i = kOps / 2; i < kOps; ++i) CheckGet(slots[i], "NBI");
    gex::nbi_wait(gex::ec::put);
    for (int i = 0; i < kOps / 2; ++i) {
      CheckPut(slots[i], Seed(i, round + 2), "NBI");
    }
    CHECK(gex::nbi_test(gex::ec::all), "NBI pending after wait");
    ops_ += kOps;
  }

  void BlockingRound(int round) {
    const Slot put = SlotFor(0, round + 3);
    FillPut(put, Seed(0, round + 3));
    CHECK(gex::put(g_tm, g_next, PutDest(put), In(put)), "put");
    CheckPut(put, Seed(0, round + 3), "blocking");
    const Slot get = SlotFor(1, round + 3);
    CHECK(gex::get(g_tm, Out(get), g_prev, GetSrc(get)), "get");
    CheckGet(get, "blocking");
    const uint64_t v = 0x0102030405060708ull + t_;
    auto* dest = reinterpret_cast<uint64_t*>(PutDest(put));
    CHECK(gex::put_val(g_tm, g_next, dest, v), "put_val");
    CHECK(gex::get_val(g_tm, g_next, dest) == v, "get_val");
    ops_ += 4;
  }

  void AmRound(int round) {
    CHECK(gex::request_short<Ping>(g_tm, g_next, static_cast<uint8_t>(t_),
                                   static_cast<uint16_t>(round)),
          "request_short");
    gex::poll_until([&] {
      return g_pongs[t_].load(std::memory_order_acquire) == round + 1;
    });
    CHECK(g_bad.load() == 0, "a handler check failed");
    ops_ += 1;
  }

  int t_;
  std::vector<Bytes> heap_;
  std::vector<Bytes> scratch_;  // a put's destination, read back
  long ops_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  gex::Client client(argc, argv, "CPP_PAR");
  g_tm = client.team();
  g_me = g_tm.rank();
  g_n = g_tm.size();
  check_rank = static_cast<int>(g_me);
  CHECK(argc == 3 && std::strcmp(argv[1], "par") == 0,
        "usage: cpp_par_client par ROUNDS");
  const int rounds = std::atoi(argv[2]);
  g_next = (g_me + 1) % g_n;
  g_prev = (g_me + g_n - 1) % g_n;
  gex::register_handlers<Ping, Pong>(client.endpoint());
  const gex::Segment seg(g_tm, kSegSize);
  g_base = static_cast<Bytes*>(seg.addr());
  g_owner.resize(g_n);
  g_local.resize(g_n);
  for (gex::Rank r = 0; r < g_n; ++r) {
    const gex::BoundSegment b = g_tm.bound_segment(r);
    CHECK(b.owner_addr != nullptr && b.size >= kSegSize, "rank %u's segment",
          r);
    g_owner[r] = static_cast<Bytes*>(b.owner_addr);
    g_local[r] = static_cast<Bytes*>(b.local_addr);
  }
  for (size_t k = 0; k < kArea; ++k) {
    g_base[kSrcOff + k] = Pattern(1000 + g_me, k);
  }
  g_tm.barrier();

  std::thread poller([] {
    while (!g_done.load(std::memory_order_acquire)) {
      gex::poll();
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
  g_tm.barrier();
  g_done.store(true, std::memory_order_release);
  poller.join();
  Say("par ok ops=%ld", ops);
  g_tm.barrier();
  gex::exit_job(0);
}
