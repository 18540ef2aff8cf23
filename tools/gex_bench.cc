// gex_bench: Active Message performance between rank pairs, in the layout
// GASNet's testam users know (ping-pong Request/Reply and Request/Request,
// flood one-way and round trip, plus two-way), over Short, Medium and Long
// and payload sizes 0, 1, 2, 4, ... up to the conduit's limit; and
// flood-short-oneway, testam's one-way flood exactly (the sender only
// sends, the handler only counts) for a Short with no arguments against a
// Medium of 8 bytes, alternated in one run, with their ratio.
//
//   bazel build --config=opt //tools:gex_bench_smp //tools:gasnetrun_smp
//   bazel-bin/tools/gasnetrun_smp -n 2 bazel-bin/tools/gex_bench_smp -i 20000
//
// Rank r measures with rank r^1 (the even rank times, the odd one answers;
// an odd rank out idles). Before the AMs, each pair measures its BASELINE in
// the same run: a raw ping-pong of one atomic counter in one cache line of
// the even rank's segment, which the odd rank reaches through its own
// mapping of that segment (gex_EP_QueryBoundSegmentNB). That is the floor
// for any shared-memory round trip between these two processes on these
// CPUs; every AM round trip is also printed as a multiple of it.
//
// Reading the figures:
//  - us/op is one round trip for the ping-pongs (the "x cache-line" column
//    divides it by the baseline), one message for flood one-way, and the
//    inverse rate for the floods and two-way; MB/s is 2^20 bytes of payload
//    per second, both directions counted for round trips.
//  - Request/Reply echoes the payload back from the request handler's
//    buffer (as testam does), so the payload's lines cross between the two
//    cores on every round trip. In Request/Request nobody reads a payload,
//    so a Long's lines stay in the writer's cache: for Long, ReqReq is the
//    cheaper of the two by design, not by a faster path.
//  - The first measurement after start-up runs cold; -w (default 1000)
//    warms each measurement with the same traffic, untimed.
//  - Noise from other processes shows directly; compare several runs.
//
// Written against <gasnetex.h> and the C++ library only, so it builds for
// any conduit; where the peer's segment is not mapped locally there is no
// baseline and the ratios are left out. See -h for the options.
#include <gasnetex.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tools/bench_job.h"
#include "tools/gex_bench_options.h"

namespace gex_bench {
namespace {

// ---- segment layout -------------------------------------------------------
//
// [baseline lines: one per page] [receive area] [source area]
// Long payloads land in the peer's receive area; Medium and Long payloads
// are sent from the source area (in the segment, as testam sends by
// default).
constexpr size_t kPage = 4096;
// The baseline runs once on each of several lines, each on its own page,
// and averages them: how long one line takes to move between two cores
// depends on where its address is homed, and the AM queues spread their
// traffic over many lines too.
constexpr int kBaselineLines = 8;
constexpr size_t kLinesBytes = kBaselineLines * kPage;

// ---- handlers --------------------------------------------------------------

// One handler of each kind per category (index + category).
enum : gex_AM_Index_t {
  kPingBase = GEX_AM_INDEX_BASE,  // request: reply with the same payload
  kPongBase = kPingBase + 3,      // request or reply: count it
  kSinkBase = kPongBase + 3,      // request: count, reply once at the end
  kFloodDone = kSinkBase + 3,     // reply: the sink saw the last one
  kPeerDone,                      // request: the peer's two-way half is done
  kResultCount,                   // request to rank 0: how many rows follow
  kResultRows,                    // request to rank 0: result rows
  kCountShort,                    // request: count it, nothing else
  kCountMedium,                   // request: count it, nothing else
};

constexpr gex_AM_Index_t Ping(Category c) {
  return static_cast<gex_AM_Index_t>(kPingBase + static_cast<int>(c));
}
constexpr gex_AM_Index_t Pong(Category c) {
  return static_cast<gex_AM_Index_t>(kPongBase + static_cast<int>(c));
}
constexpr gex_AM_Index_t Sink(Category c) {
  return static_cast<gex_AM_Index_t>(kSinkBase + static_cast<int>(c));
}
constexpr gex_AM_Index_t Count(Category c) {
  return c == Category::kShort ? kCountShort : kCountMedium;
}

// One measured figure. POD: rows travel to rank 0 in Medium payloads.
struct Row {
  int32_t test;      // a Test, or kBaselineTest
  int32_t category;  // a Category, or -1 for the baseline
  uint32_t initiator;
  uint32_t seq;  // measurement order, the same on every rank
  uint64_t size;
  uint64_t iterations;
  double usec_per_op;
  double mbytes_per_sec;
};
constexpr int32_t kBaselineTest = -1;

// What this rank is in the run. Set before the first message and read-only
// afterwards, except where noted.
struct Job {
  gex_TM_t tm = GEX_TM_INVALID;
  gex_Rank_t me = 0;
  gex_Rank_t size = 0;
  gex_Rank_t peer = GEX_RANK_INVALID;  // GEX_RANK_INVALID: the odd one out
  bool initiator = false;              // the even rank of a pair
  bool polite = false;                 // more ranks than CPUs: yield in spins
  char* my_seg = nullptr;
  char* src = nullptr;             // source area, in my segment
  void* peer_recv = nullptr;       // peer's receive area, peer's address
  char* peer_seg_local = nullptr;  // peer's segment as mapped here, or null
  uint64_t area_bytes = 0;
  uint64_t medium_limit = 0;
  uint64_t long_limit = 0;
};
Job g_job;

// Counters the handlers bump; reset before each measurement's start
// barrier, so nothing from one measurement reaches the next (each ends
// with every message it sent handled, see Measure).
std::atomic<uint64_t> g_replies{0};  // Pong handlers run here
std::atomic<uint64_t> g_served{0};   // Ping handlers run here
std::atomic<uint64_t> g_sunk{0};     // Sink handlers run here
std::atomic<uint64_t> g_sink_expect{0};
std::atomic<uint64_t> g_flood_done{0};
std::atomic<uint64_t> g_peer_done{0};
std::atomic<uint64_t> g_counted{0};  // Count handlers run here

// flood-short-oneway: each round measures a Short 0 B flood and a Medium
// 8 B flood, each after its own warm-up, Short first in even rounds and
// Medium first in odd ones, so a change in the machine during the run
// reaches both alike. Rank 0 keeps its pair's Short/Medium ratio (the
// median of the per-round ratios) for the summary; 0 when not measured.
constexpr int kFloodRounds = 9;
constexpr uint64_t kFloodMediumBytes = 8;
double g_short_medium_ratio = 0;

// Rank 0's collection of the other pairs' rows.
std::mutex g_rows_mutex;
std::vector<Row> g_gathered;
std::atomic<uint64_t> g_rows_expected{0};
std::atomic<uint64_t> g_rows_received{0};
std::atomic<uint32_t> g_row_senders{0};

// A failed call ends the job: a benchmark that lost a message would
// otherwise wait for it forever.
void Check(int rc, const char* what) {
  if (rc != GASNET_OK) {
    std::fprintf(stderr, "gex_bench: rank %u: %s failed: %s (%s)\n", g_job.me,
                 what, gasnet_ErrorName(rc), gasnet_ErrorDesc(rc));
    std::fflush(stderr);
    gasnet_exit(1);
  }
}

void PingShort(gex_Token_t token) {
  g_served.fetch_add(1, std::memory_order_relaxed);
  Check(gex_AM_ReplyShort0(token, Pong(Category::kShort), 0),
        "gex_AM_ReplyShort0");
}
void PingMedium(gex_Token_t token, void* buf, size_t nbytes) {
  g_served.fetch_add(1, std::memory_order_relaxed);
  Check(gex_AM_ReplyMedium0(token, Pong(Category::kMedium), buf, nbytes,
                            GEX_EVENT_NOW, 0),
        "gex_AM_ReplyMedium0");
}
void PingLong(gex_Token_t token, void* buf, size_t nbytes) {
  g_served.fetch_add(1, std::memory_order_relaxed);
  Check(gex_AM_ReplyLong0(token, Pong(Category::kLong), buf, nbytes,
                          g_job.peer_recv, GEX_EVENT_NOW, 0),
        "gex_AM_ReplyLong0");
}

void PongShort(gex_Token_t) {
  g_replies.fetch_add(1, std::memory_order_release);
}
void PongPayload(gex_Token_t, void*, size_t) {
  g_replies.fetch_add(1, std::memory_order_release);
}

void SinkArrived(gex_Token_t token) {
  const uint64_t seen = g_sunk.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (seen == g_sink_expect.load(std::memory_order_relaxed)) {
    Check(gex_AM_ReplyShort0(token, kFloodDone, 0), "gex_AM_ReplyShort0");
  }
}
void SinkShort(gex_Token_t token) { SinkArrived(token); }
void SinkPayload(gex_Token_t token, void*, size_t) { SinkArrived(token); }

// testam's pong_*handler_flood: count, nothing else. A plain increment,
// as testam's `flag++` is, not a locked one: one thread runs handlers
// here (SEQ), and the main loop only reads the count.
void CountOne() {
  g_counted.store(g_counted.load(std::memory_order_relaxed) + 1,
                  std::memory_order_release);
}
void CountShort(gex_Token_t) { CountOne(); }
void CountMedium(gex_Token_t, void*, size_t) { CountOne(); }

void FloodDone(gex_Token_t) {
  g_flood_done.fetch_add(1, std::memory_order_release);
}
void PeerDone(gex_Token_t) {
  g_peer_done.fetch_add(1, std::memory_order_release);
}

void ResultCount(gex_Token_t, gex_AM_Arg_t count) {
  g_rows_expected.fetch_add(static_cast<uint32_t>(count),
                            std::memory_order_relaxed);
  g_row_senders.fetch_add(1, std::memory_order_release);
}
void ResultRows(gex_Token_t, void* buf, size_t nbytes) {
  const size_t n = nbytes / sizeof(Row);
  {
    std::lock_guard<std::mutex> lock(g_rows_mutex);
    const size_t old = g_gathered.size();
    g_gathered.resize(old + n);
    std::memcpy(g_gathered.data() + old, buf, n * sizeof(Row));
  }
  g_rows_received.fetch_add(n, std::memory_order_release);
}

template <typename F>
gex_AM_Fn_t Fn(F* f) {
  return reinterpret_cast<gex_AM_Fn_t>(f);
}

void RegisterHandlers(gex_EP_t ep) {
  constexpr gex_Flags_t kShort = GEX_FLAG_AM_SHORT;
  constexpr gex_Flags_t kMedium = GEX_FLAG_AM_MEDIUM;
  constexpr gex_Flags_t kLong = GEX_FLAG_AM_LONG;
  constexpr gex_Flags_t kReq = GEX_FLAG_AM_REQUEST;
  constexpr gex_Flags_t kRep = GEX_FLAG_AM_REPLY;
  constexpr gex_Flags_t kReqRep = GEX_FLAG_AM_REQREP;
  gex_AM_Entry_t table[] = {
      {Ping(Category::kShort), Fn(PingShort), kShort | kReq, 0, nullptr,
       "gex_bench ping short"},
      {Ping(Category::kMedium), Fn(PingMedium), kMedium | kReq, 0, nullptr,
       "gex_bench ping medium"},
      {Ping(Category::kLong), Fn(PingLong), kLong | kReq, 0, nullptr,
       "gex_bench ping long"},
      // Pongs are replies in the Request/Reply tests and requests in the
      // Request/Request one.
      {Pong(Category::kShort), Fn(PongShort), kShort | kReqRep, 0, nullptr,
       "gex_bench pong short"},
      {Pong(Category::kMedium), Fn(PongPayload), kMedium | kReqRep, 0, nullptr,
       "gex_bench pong medium"},
      {Pong(Category::kLong), Fn(PongPayload), kLong | kReqRep, 0, nullptr,
       "gex_bench pong long"},
      {Sink(Category::kShort), Fn(SinkShort), kShort | kReq, 0, nullptr,
       "gex_bench sink short"},
      {Sink(Category::kMedium), Fn(SinkPayload), kMedium | kReq, 0, nullptr,
       "gex_bench sink medium"},
      {Sink(Category::kLong), Fn(SinkPayload), kLong | kReq, 0, nullptr,
       "gex_bench sink long"},
      {kFloodDone, Fn(FloodDone), kShort | kRep, 0, nullptr,
       "gex_bench flood done"},
      {kPeerDone, Fn(PeerDone), kShort | kReq, 0, nullptr,
       "gex_bench peer done"},
      {kResultCount, Fn(ResultCount), kShort | kReq, 1, nullptr,
       "gex_bench result count"},
      {kResultRows, Fn(ResultRows), kMedium | kReq, 0, nullptr,
       "gex_bench result rows"},
      {kCountShort, Fn(CountShort), kShort | kReq, 0, nullptr,
       "gex_bench count short"},
      {kCountMedium, Fn(CountMedium), kMedium | kReq, 0, nullptr,
       "gex_bench count medium"},
  };
  Check(gex_EP_RegisterHandlers(ep, table, sizeof table / sizeof table[0]),
        "gex_EP_RegisterHandlers");
}

// ---- the measurements ------------------------------------------------------

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Barrier() { gex_Coll_BarrierBlocking(g_job.tm, 0); }

// Sends one request of category C to the peer with handler `h`.
template <Category C>
inline void Request(gex_AM_Index_t h, size_t size) {
  if constexpr (C == Category::kShort) {
    Check(gex_AM_RequestShort0(g_job.tm, g_job.peer, h, 0),
          "gex_AM_RequestShort0");
  } else if constexpr (C == Category::kMedium) {
    Check(gex_AM_RequestMedium0(g_job.tm, g_job.peer, h, g_job.src, size,
                                GEX_EVENT_NOW, 0),
          "gex_AM_RequestMedium0");
  } else {
    Check(gex_AM_RequestLong0(g_job.tm, g_job.peer, h, g_job.src, size,
                              g_job.peer_recv, GEX_EVENT_NOW, 0),
          "gex_AM_RequestLong0");
  }
}

inline uint64_t Load(const std::atomic<uint64_t>& counter) {
  return counter.load(std::memory_order_acquire);
}

// One measurement between this rank and its peer, `n` operations. Returns
// the initiator's elapsed seconds (0 on the responder). Each returns only
// once every message it sent has been handled and every message sent to it
// has been too, which is what lets the next measurement reset the counters.
template <Category C>
double Run(Test test, size_t size, uint64_t n) {
  const bool init = g_job.initiator;
  const Clock::time_point start = Clock::now();
  switch (test) {
    case Test::kPingPongReqRep:
      if (init) {
        for (uint64_t i = 0; i < n; ++i) {
          Request<C>(Ping(C), size);
          GASNET_BLOCKUNTIL(Load(g_replies) == i + 1);
        }
      } else {
        GASNET_BLOCKUNTIL(Load(g_served) == n);
      }
      break;
    case Test::kPingPongReqReq:
      // The answer is a new request from the target's main loop, not a
      // reply from inside the handler.
      for (uint64_t i = 0; i < n; ++i) {
        if (init) Request<C>(Pong(C), size);
        GASNET_BLOCKUNTIL(Load(g_replies) == i + 1);
        if (!init) Request<C>(Pong(C), size);
      }
      break;
    case Test::kFloodOneWay:
      if (init) {
        for (uint64_t i = 0; i < n; ++i) Request<C>(Sink(C), size);
        GASNET_BLOCKUNTIL(Load(g_flood_done) == 1);
      } else {
        GASNET_BLOCKUNTIL(Load(g_sunk) == n);
      }
      break;
    case Test::kFloodRoundTrip:
      if (init) {
        for (uint64_t i = 0; i < n; ++i) Request<C>(Ping(C), size);
        GASNET_BLOCKUNTIL(Load(g_replies) == n);
      } else {
        GASNET_BLOCKUNTIL(Load(g_served) == n);
      }
      break;
    case Test::kTwoWay:
      // Both sides flood; each tells the other when all its replies are
      // in, so the initiator's time covers both halves.
      for (uint64_t i = 0; i < n; ++i) Request<C>(Ping(C), size);
      GASNET_BLOCKUNTIL(Load(g_replies) == n);
      Check(gex_AM_RequestShort0(g_job.tm, g_job.peer, kPeerDone, 0),
            "gex_AM_RequestShort0");
      GASNET_BLOCKUNTIL(Load(g_peer_done) == 1 && Load(g_served) == n);
      break;
    case Test::kFloodShortOneWay:
      // testam's one-way flood: the sender's loop only sends (a send that
      // finds the queue full polls inside, until a slot is free), the
      // handler only counts, and the target polls until it has counted
      // them all. It then says so with a Request from its main loop, so
      // that the time ends per pair (testam ends it with a barrier).
      if (init) {
        for (uint64_t i = 0; i < n; ++i) Request<C>(Count(C), size);
        GASNET_BLOCKUNTIL(Load(g_peer_done) == 1);
      } else {
        GASNET_BLOCKUNTIL(Load(g_counted) == n);
        Check(gex_AM_RequestShort0(g_job.tm, g_job.peer, kPeerDone, 0),
              "gex_AM_RequestShort0");
      }
      break;
  }
  return init ? SecondsSince(start) : 0.0;
}

void ResetCounters(uint64_t n) {
  g_replies.store(0, std::memory_order_relaxed);
  g_served.store(0, std::memory_order_relaxed);
  g_sunk.store(0, std::memory_order_relaxed);
  g_sink_expect.store(n, std::memory_order_relaxed);
  g_flood_done.store(0, std::memory_order_relaxed);
  g_peer_done.store(0, std::memory_order_relaxed);
  g_counted.store(0, std::memory_order_relaxed);
}

// Every rank calls this for every measurement, in the same order; the
// barrier starts each pair's measurement together.
double Measure(Test test, Category category, size_t size, uint64_t n) {
  ResetCounters(n);
  Barrier();
  if (g_job.peer == GEX_RANK_INVALID || n == 0) return 0.0;
  switch (category) {
    case Category::kShort:
      return Run<Category::kShort>(test, size, n);
    case Category::kMedium:
      return Run<Category::kMedium>(test, size, n);
    case Category::kLong:
      return Run<Category::kLong>(test, size, n);
  }
  return 0.0;
}

inline void Relax() {
  // With more ranks than CPUs the peer may need this CPU to answer.
  if (g_job.polite) sched_yield();
}

// The baseline: one 8-byte counter in one line of the initiator's segment.
// The initiator writes 2i+1 and waits for 2i+2; the responder waits for
// 2i+1 and writes 2i+2. Release stores and acquire loads, as a real
// handoff of data through that line needs. Returns the initiator's seconds.
double CacheLinePingPong(int line, uint64_t n) {
  if (g_job.peer == GEX_RANK_INVALID || g_job.peer_seg_local == nullptr) {
    Barrier();
    return 0.0;
  }
  char* base = g_job.initiator ? g_job.my_seg : g_job.peer_seg_local;
  std::atomic_ref<uint64_t> word(
      *reinterpret_cast<uint64_t*>(base + line * kPage));
  // Only the owner resets it, before the barrier; a stale value left by a
  // previous run is even, so the responder never mistakes it for 2i+1.
  if (g_job.initiator) word.store(0, std::memory_order_relaxed);
  Barrier();
  const Clock::time_point start = Clock::now();
  if (g_job.initiator) {
    for (uint64_t i = 0; i < n; ++i) {
      word.store(2 * i + 1, std::memory_order_release);
      while (word.load(std::memory_order_acquire) != 2 * i + 2) Relax();
    }
    return SecondsSince(start);
  }
  for (uint64_t i = 0; i < n; ++i) {
    while (word.load(std::memory_order_acquire) != 2 * i + 1) Relax();
    word.store(2 * i + 2, std::memory_order_release);
  }
  return 0.0;
}

// ---- output ----------------------------------------------------------------

std::string PairName(uint32_t initiator) {
  return std::to_string(initiator) + "-" + std::to_string(initiator ^ 1u);
}

std::string RowTestName(const Row& row) {
  return row.test == kBaselineTest
             ? "baseline"
             : std::string(TestName(static_cast<Test>(row.test)));
}

std::string RowCategoryName(const Row& row) {
  return row.category < 0
             ? "cacheline"
             : std::string(CategoryName(static_cast<Category>(row.category)));
}

void PrintTableHeader(Test test, bool ratio) {
  std::printf("\n== %s: %s ==\n", std::string(TestName(test)).c_str(),
              std::string(TestDescription(test)).c_str());
  std::printf("  %-8s %10s %9s %10s %10s %11s%s\n", "category", "size", "iters",
              "total s", "us/op", "MB/s", ratio ? "  x cache-line" : "");
  std::fflush(stdout);
}

void PrintTableRow(const Row& row, double baseline_us, bool ratio) {
  std::printf("  %-8s %10" PRIu64 " %9" PRIu64 " %10.4f %10.3f %11.2f",
              RowCategoryName(row).c_str(), row.size, row.iterations,
              row.usec_per_op * 1e-6 * static_cast<double>(row.iterations) *
                  (row.test == static_cast<int32_t>(Test::kTwoWay) ? 2 : 1),
              row.usec_per_op, row.mbytes_per_sec);
  if (ratio && baseline_us > 0) {
    std::printf("  %12.2fx", row.usec_per_op / baseline_us);
  }
  std::printf("\n");
  std::fflush(stdout);
}

const Row* FindRow(const std::vector<Row>& rows, Test test, Category category,
                   uint64_t size) {
  for (const Row& row : rows) {
    if (row.test == static_cast<int32_t>(test) &&
        row.category == static_cast<int32_t>(category) && row.size == size) {
      return &row;
    }
  }
  return nullptr;
}

// The lines users compare against the baseline (rank 0's own pair).
void PrintSummary(const std::vector<Row>& rows, double baseline_us) {
  std::printf("\nSummary, pair %s:\n", PairName(0).c_str());
  if (baseline_us > 0) {
    std::printf("  baseline: cache-line round trip %.3f us\n", baseline_us);
  }
  struct Wanted {
    Test test;
    Category category;
    uint64_t size;
    const char* label;
  };
  const Wanted wanted[] = {
      {Test::kPingPongReqRep, Category::kShort, 0, ""},
      {Test::kPingPongReqRep, Category::kMedium, 0, ""},
      {Test::kPingPongReqRep, Category::kMedium, 8, ""},
      {Test::kPingPongReqRep, Category::kLong, 8, ""},
      {Test::kPingPongReqReq, Category::kMedium, 8, " (Request/Request)"},
  };
  for (const Wanted& w : wanted) {
    const Row* row = FindRow(rows, w.test, w.category, w.size);
    if (row == nullptr) continue;
    std::string name(CategoryName(w.category));
    name[0] = static_cast<char>(name[0] - 'a' + 'A');
    std::printf("  AM %s %" PRIu64 " B round trip%s: %.3f us", name.c_str(),
                w.size, w.label, row->usec_per_op);
    if (baseline_us > 0) {
      std::printf(" = %.2fx cache-line (%.3f us)",
                  row->usec_per_op / baseline_us, baseline_us);
    }
    std::printf("\n");
  }
  if (const Row* row =
          FindRow(rows, Test::kFloodOneWay, Category::kMedium, 8)) {
    std::printf(
        "  AM Medium 8 B flood one-way: %.3f us/msg (%.2f million msgs/s)\n",
        row->usec_per_op, 1.0 / row->usec_per_op);
  }
  const Row* short_row =
      FindRow(rows, Test::kFloodShortOneWay, Category::kShort, 0);
  const Row* medium_row = FindRow(rows, Test::kFloodShortOneWay,
                                  Category::kMedium, kFloodMediumBytes);
  if (short_row != nullptr && medium_row != nullptr) {
    std::printf(
        "  AM flood one-way, handler only counts: Short 0 B %.4f us/msg, "
        "Medium 8 B %.4f us/msg, Short/Medium = %.3fx\n",
        short_row->usec_per_op, medium_row->usec_per_op, g_short_medium_ratio);
  }
  std::fflush(stdout);
}

// With more than one pair: every pair's us/op side by side.
void PrintPairs(const std::vector<Row>& rows, uint32_t pairs) {
  std::printf("\n== every pair, us/op ==\n  %-16s %-9s %10s", "test",
              "category", "size");
  for (uint32_t p = 0; p < pairs; ++p) {
    std::printf(" %10s", PairName(2 * p).c_str());
  }
  std::printf("\n");
  // Rows are sorted by (seq, initiator): one line per seq.
  for (size_t i = 0; i < rows.size();) {
    const Row& first = rows[i];
    std::printf("  %-16s %-9s %10" PRIu64, RowTestName(first).c_str(),
                RowCategoryName(first).c_str(), first.size);
    for (; i < rows.size() && rows[i].seq == first.seq; ++i) {
      std::printf(" %10.3f", rows[i].usec_per_op);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

bool WriteCsv(std::FILE* f, const std::vector<Row>& rows,
              const std::vector<double>& baseline_by_pair) {
  std::fprintf(f,
               "test,category,size,iterations,usec_per_op,mbytes_per_sec,"
               "ratio_to_cacheline,pair\n");
  for (const Row& row : rows) {
    const double base = baseline_by_pair[row.initiator / 2];
    std::fprintf(f, "%s,%s,%" PRIu64 ",%" PRIu64 ",%.4f,%.3f,",
                 RowTestName(row).c_str(), RowCategoryName(row).c_str(),
                 row.size, row.iterations, row.usec_per_op, row.mbytes_per_sec);
    if (base > 0) std::fprintf(f, "%.3f", row.usec_per_op / base);
    std::fprintf(f, ",%s\n", PairName(row.initiator).c_str());
  }
  const bool ok = std::fflush(f) == 0 && !std::ferror(f);
  return std::fclose(f) == 0 && ok;
}

// ---- flood-short-oneway ----------------------------------------------------

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 != 0 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// kFloodRounds rounds of Short 0 B and Medium 8 B (see kFloodRounds); the
// rows carry the medians, the table line the median per-round ratio.
void FloodShortVsMedium(const Options& opt, uint32_t* seq,
                        std::vector<Row>* rows) {
  const bool leader = g_job.me == 0;
  if (leader) PrintTableHeader(Test::kFloodShortOneWay, false);
  const uint64_t n = opt.iterations;
  std::vector<double> short_us;
  std::vector<double> medium_us;
  std::vector<double> ratios;
  for (int round = 0; round < kFloodRounds; ++round) {
    double us[2] = {0, 0};  // Short, Medium
    for (int k = 0; k < 2; ++k) {
      const int medium = k ^ (round % 2);
      const Category c = medium ? Category::kMedium : Category::kShort;
      const uint64_t size = medium ? kFloodMediumBytes : 0;
      Measure(Test::kFloodShortOneWay, c, size, opt.warmup);
      us[medium] = Measure(Test::kFloodShortOneWay, c, size, n) * 1e6 /
                   static_cast<double>(n);
    }
    short_us.push_back(us[0]);
    medium_us.push_back(us[1]);
    ratios.push_back(us[1] > 0 ? us[0] / us[1] : 0);
  }
  if (g_job.initiator) {
    const double s_us = Median(short_us);
    const double m_us = Median(medium_us);
    const int32_t test = static_cast<int32_t>(Test::kFloodShortOneWay);
    rows->push_back(Row{test, static_cast<int32_t>(Category::kShort), g_job.me,
                        *seq, 0, n, s_us, 0});
    rows->push_back(
        Row{test, static_cast<int32_t>(Category::kMedium), g_job.me, *seq + 1,
            kFloodMediumBytes, n, m_us,
            m_us > 0 ? kFloodMediumBytes / m_us * 1e6 / (1 << 20) : 0});
    if (leader) {
      PrintTableRow((*rows)[rows->size() - 2], 0, false);
      PrintTableRow(rows->back(), 0, false);
      g_short_medium_ratio = Median(ratios);
      std::printf(
          "  Short 0 B / Medium 8 B: %.3fx (median of %d alternating rounds "
          "of %" PRIu64
          " messages each; rounds %.3f .. %.3f; medians %.1f / "
          "%.1f ns per message)\n",
          g_short_medium_ratio, kFloodRounds, n,
          *std::min_element(ratios.begin(), ratios.end()),
          *std::max_element(ratios.begin(), ratios.end()), s_us * 1e3,
          m_us * 1e3);
      std::fflush(stdout);
    }
  }
  *seq += 2;
}

// ---- set-up ----------------------------------------------------------------

uint64_t RoundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

// Sends this initiator's rows to rank 0, or (on rank 0) waits for every
// other pair's.
void GatherRows(const std::vector<Row>& mine, uint32_t pairs) {
  if (g_job.me == 0) {
    GASNET_BLOCKUNTIL(g_row_senders.load(std::memory_order_acquire) ==
                          pairs - 1 &&
                      g_rows_received.load(std::memory_order_acquire) ==
                          g_rows_expected.load(std::memory_order_relaxed));
    return;
  }
  if (!g_job.initiator || g_job.peer == GEX_RANK_INVALID) return;
  Check(gex_AM_RequestShort1(g_job.tm, 0, kResultCount, 0,
                             static_cast<gex_AM_Arg_t>(mine.size())),
        "gex_AM_RequestShort1");
  const size_t per_message = std::max<size_t>(
      1,
      gex_AM_MaxRequestMedium(g_job.tm, 0, GEX_EVENT_NOW, 0, 0) / sizeof(Row));
  for (size_t i = 0; i < mine.size(); i += per_message) {
    const size_t n = std::min(per_message, mine.size() - i);
    Check(gex_AM_RequestMedium0(g_job.tm, 0, kResultRows, &mine[i],
                                n * sizeof(Row), GEX_EVENT_NOW, 0),
          "gex_AM_RequestMedium0");
  }
}

int Main(int argc, char** argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  Check(gex_Client_Init(&client, &ep, &tm, "gex_bench", &argc, &argv, 0),
        "gex_Client_Init");
  g_job.tm = tm;
  g_job.me = gex_TM_QueryRank(tm);
  g_job.size = gex_TM_QuerySize(tm);
  const bool leader = g_job.me == 0;

  Options opt;
  const std::optional<std::string> parse_error =
      ParseOptions(argc, const_cast<const char* const*>(argv), &opt);
  if (std::optional<int> code = CommandLineVerdict(
          "gex_bench", argc, argv, leader, g_job.size, parse_error, opt.help,
          &Usage, GASNET_CONDUIT_NAME_STR_LC)) {
    // Rank 0 has said why before anyone leaves: the first exit ends the
    // job, and its message must not be cut off.
    gex_Coll_BarrierBlocking(tm, 0);
    gasnet_exit(*code);
  }
  // Rank 0 opens the CSV before measuring, so a bad path costs nothing.
  bool csv_failed = false;
  std::FILE* csv =
      leader ? OpenCsv("gex_bench", opt.csv_path, &csv_failed) : nullptr;
  if (csv_failed) gasnet_exit(2);

  const gex_Rank_t peer = g_job.me ^ 1u;
  g_job.peer = peer < g_job.size ? peer : GEX_RANK_INVALID;
  g_job.initiator = g_job.peer != GEX_RANK_INVALID && (g_job.me % 2) == 0;
  const uint32_t pairs = g_job.size / 2;
  // Pin before the segment is touched, so its pages are placed near the
  // CPU that uses them.
  gex_RankInfo_t* host_info = nullptr;
  gex_Rank_t host_ranks = 0;
  gex_Rank_t host_index = 0;
  gex_System_QueryHostInfo(&host_info, &host_ranks, &host_index);
  const std::string pin_line = PinToCpu(opt.pin, host_ranks, host_index,
                                        "gex_bench", g_job.me, &g_job.polite);

  // Every rank asks for the same segment; the limits are taken for any peer
  // (GEX_RANK_INVALID) so every rank walks the same list of sizes.
  g_job.area_bytes = RoundUp(std::max<uint64_t>(opt.max_size, 1), kPage);
  const uint64_t seg_bytes = kLinesBytes + 2 * g_job.area_bytes;
  gex_Segment_t segment;
  const int attach_rc = gex_Segment_Attach(&segment, tm, seg_bytes);
  if (attach_rc != GASNET_OK) {
    std::fprintf(stderr,
                 "gex_bench: rank %u: gex_Segment_Attach(%" PRIu64
                 " bytes) failed: %s; a smaller --max-size needs less\n",
                 g_job.me, seg_bytes, gasnet_ErrorName(attach_rc));
    gasnet_exit(1);
  }
  g_job.my_seg = static_cast<char*>(gex_Segment_QueryAddr(segment));
  g_job.src = g_job.my_seg + kLinesBytes + g_job.area_bytes;
  RegisterHandlers(ep);
  if (g_job.peer != GEX_RANK_INVALID) {
    void* owner = nullptr;
    void* local = nullptr;
    gex_Event_Wait(
        gex_EP_QueryBoundSegmentNB(tm, g_job.peer, &owner, &local, nullptr, 0));
    g_job.peer_recv = static_cast<char*>(owner) + kLinesBytes;
    g_job.peer_seg_local = static_cast<char*>(local);
  }
  g_job.medium_limit = std::min<uint64_t>(
      {opt.max_size,
       gex_AM_MaxRequestMedium(tm, GEX_RANK_INVALID, GEX_EVENT_NOW, 0, 0),
       gex_AM_MaxReplyMedium(tm, GEX_RANK_INVALID, GEX_EVENT_NOW, 0, 0)});
  g_job.long_limit = std::min<uint64_t>(
      {opt.max_size, g_job.area_bytes,
       gex_AM_MaxRequestLong(tm, GEX_RANK_INVALID, GEX_EVENT_NOW, 0, 0),
       gex_AM_MaxReplyLong(tm, GEX_RANK_INVALID, GEX_EVENT_NOW, 0, 0)});
  // Touch both areas now, not in the first timed loop.
  std::memset(g_job.my_seg + kLinesBytes, 0, 2 * g_job.area_bytes);

  if (leader) {
    std::printf(
        "gex_bench: %u ranks, %u pair(s) (rank r with r^1%s), "
        "conduit %s, %s\n",
        g_job.size, pairs, g_job.size % 2 ? "; the last rank idles" : "",
        GASNET_CONDUIT_NAME_STR, ThreadMode());
    std::printf("  %" PRIu64 " iterations, %" PRIu64
                " warm-up (both scaled down above 16 KiB); "
                "payloads up to Medium %" PRIu64 " B, Long %" PRIu64
                " B (--max-size %" PRIu64 ")\n",
                opt.iterations, opt.warmup, g_job.medium_limit,
                g_job.long_limit, opt.max_size);
    std::printf("  %s\n", pin_line.c_str());
    std::fflush(stdout);
  }

  // ---- baseline ----
  std::vector<Row> rows;
  uint32_t seq = 0;
  double baseline_us = 0;
  {
    double sum = 0;
    double lo = 0;
    double hi = 0;
    for (int line = 0; line < kBaselineLines; ++line) {
      CacheLinePingPong(line, opt.warmup);
      const double us =
          CacheLinePingPong(line, opt.iterations) * 1e6 / opt.iterations;
      sum += us;
      lo = line == 0 ? us : std::min(lo, us);
      hi = line == 0 ? us : std::max(hi, us);
    }
    baseline_us = sum / kBaselineLines;
    if (g_job.initiator && g_job.peer_seg_local != nullptr) {
      rows.push_back(Row{kBaselineTest, -1, g_job.me, seq, 64,
                         opt.iterations * kBaselineLines, baseline_us, 0});
    } else {
      baseline_us = 0;
    }
    ++seq;
    if (leader) {
      if (baseline_us > 0) {
        std::printf(
            "\nbaseline: cache-line ping-pong round trip, ranks %s: %.3f us "
            "(mean over %d lines; %.3f .. %.3f us)\n",
            PairName(0).c_str(), baseline_us, kBaselineLines, lo, hi);
      } else {
        std::printf(
            "\nbaseline: none (the peer's segment is not mapped in this "
            "process)\n");
      }
      std::fflush(stdout);
    }
  }

  // ---- the AM tests ----
  for (Test test : opt.tests) {
    if (test == Test::kFloodShortOneWay) {
      FloodShortVsMedium(opt, &seq, &rows);
      continue;
    }
    const bool ratio = IsPingPong(test) && baseline_us > 0;
    if (leader) PrintTableHeader(test, ratio);
    for (Category category : opt.categories) {
      const uint64_t limit =
          category == Category::kLong ? g_job.long_limit : g_job.medium_limit;
      for (uint64_t size : Sizes(category, limit)) {
        const uint64_t n = ScaledIterations(opt.iterations, size);
        const uint64_t warm = ScaledIterations(opt.warmup, size);
        Measure(test, category, size, warm);
        const double seconds = Measure(test, category, size, n);
        if (g_job.initiator) {
          // Two-way counts the round trips of both ranks.
          const double ops =
              static_cast<double>(n) * (test == Test::kTwoWay ? 2 : 1);
          const double us = seconds * 1e6 / ops;
          const double bytes_per_op =
              static_cast<double>(size) * (test == Test::kFloodOneWay ? 1 : 2);
          const double mbps =
              seconds > 0 ? bytes_per_op * ops / seconds / (1 << 20) : 0;
          rows.push_back(Row{static_cast<int32_t>(test),
                             static_cast<int32_t>(category), g_job.me, seq,
                             size, n, us, mbps});
          if (leader) PrintTableRow(rows.back(), baseline_us, ratio);
        }
        ++seq;
      }
    }
  }

  // ---- results ----
  Barrier();
  GatherRows(rows, pairs);
  if (leader) {
    std::vector<Row> all = rows;
    all.insert(all.end(), g_gathered.begin(), g_gathered.end());
    std::stable_sort(all.begin(), all.end(), [](const Row& a, const Row& b) {
      return a.seq != b.seq ? a.seq < b.seq : a.initiator < b.initiator;
    });
    std::vector<double> baseline_by_pair(pairs, 0.0);
    for (const Row& row : all) {
      if (row.test == kBaselineTest) {
        baseline_by_pair[row.initiator / 2] = row.usec_per_op;
      }
    }
    if (pairs > 1) PrintPairs(all, pairs);
    PrintSummary(rows, baseline_us);
    if (csv != nullptr) {
      if (!WriteCsv(csv, all, baseline_by_pair)) {
        std::fprintf(stderr, "gex_bench: writing %s failed\n",
                     opt.csv_path.c_str());
        gasnet_exit(1);
      }
      std::printf("wrote %zu rows to %s\n", all.size(), opt.csv_path.c_str());
      std::fflush(stdout);
    }
  }
  // Rank 0 has printed everything (or ended the job with 1) before anyone
  // leaves.
  Barrier();
  gasnet_exit(0);
  return 0;
}

}  // namespace
}  // namespace gex_bench

int main(int argc, char** argv) { return gex_bench::Main(argc, argv); }
