// gex_rma_bench: Put and Get performance between rank pairs, in the layout
// GASNet's testsmall (latency, 1 B .. 2 KiB) and testlarge (bandwidth,
// 1 KiB .. 4 MiB) users know, for blocking, NBI and NB synchronisation and
// with the local buffer inside or outside the segment.
//
//   bazel build --config=opt //tools:gex_rma_bench_smp //tools:gasnetrun_smp
//   bazel-bin/tools/gasnetrun_smp -n 2 bazel-bin/tools/gex_rma_bench_smp
//
// Rank r (even) puts to and gets from rank r^1's segment; the odd rank
// waits in a barrier meanwhile (which polls, so a conduit that needs the
// target's help gets it). Every figure stands beside its BASELINE, measured
// by the same process in the same run just before it: a plain memcpy of
// the same size from the same local buffer into this rank's own segment
// (for a Get, the other way round), timed the same way. On a conduit that
// maps the peer's segment (smp) a Put is that memcpy plus the call, the
// checks and the address translation, so the ratio shows what the runtime
// adds; elsewhere it shows the network against local memory.
//
// fadd-latency (only when named in -t) times 8-byte fetch-adds
// (GEX_OP_FADD) through a GEX_DT_U64 atomic domain of that opcode alone,
// made at start-up, into the peer's target area; its result lands in the
// local buffer. Its baseline is a CPU fetch-add on this rank's own target
// area. (A conduit that offloads such domains, ucx, does them over the
// network; smp, and supernode peers, do them as CPU atomics.)
//
// Figures are pair 0-1's (rank 0 prints them and writes the CSV); other
// pairs measure at the same time, as in testsmall.
//
// Written against <gasnetex.h> and the C++ library only, so it builds for
// any conduit. See -h for the options.
#include <gasnet_ratomic.h>
#include <gasnetex.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "tools/bench_job.h"
#include "tools/gex_rma_bench_options.h"

namespace gex_bench {
namespace {

constexpr size_t kPage = 4096;
constexpr const char* kProgram = "gex_rma_bench";

// Segment layout: [target area: what the peer puts into and gets from]
// [local area: the in-segment local buffers]. Each area holds the largest
// size; the out-of-segment local buffer is a heap block of the same size.
struct Job {
  gex_TM_t tm = GEX_TM_INVALID;
  gex_Rank_t me = 0;
  gex_Rank_t size = 0;
  gex_Rank_t peer = GEX_RANK_INVALID;  // GEX_RANK_INVALID: the odd one out
  bool initiator = false;              // the even rank of a pair
  bool polite = false;
  uint64_t area_bytes = 0;
  char* my_target = nullptr;    // my target area (the memcpy baseline's)
  char* peer_target = nullptr;  // the peer's target area, its address
  char* local[2] = {nullptr, nullptr};  // by Local
  gex_AD_t ad = GEX_AD_INVALID;         // fadd-latency's domain, if run
  std::vector<gex_Event_t> events;      // NB bandwidth: one per operation
};
Job g_job;

void Check(int rc, const char* what) {
  if (rc != GASNET_OK) {
    std::fprintf(stderr, "%s: rank %u: %s failed: %s (%s)\n", kProgram,
                 g_job.me, what, gasnet_ErrorName(rc), gasnet_ErrorDesc(rc));
    std::fflush(stderr);
    gasnet_exit(1);
  }
}

using Clock = std::chrono::steady_clock;

void Barrier() { gex_Coll_BarrierBlocking(g_job.tm, 0); }

// Keeps the compiler from merging or dropping the copies of a timed loop:
// each iteration's memcpy must really happen, as each Put does.
inline void CompilerBarrier() { asm volatile("" ::: "memory"); }

// `n` operations of one kind. A template per direction and sync, so each
// timed loop is as plain as the memcpy loop it is compared with: the call
// and nothing else (no per-iteration dispatch on the kind).
template <bool kPut, Sync kSync, bool kLatency>
void OperationsOf(char* local, size_t size, uint64_t n) {
  const gex_TM_t tm = g_job.tm;
  const gex_Rank_t peer = g_job.peer;
  char* remote = g_job.peer_target;
  constexpr gex_EC_t kEc = kPut ? GEX_EC_PUT : GEX_EC_GET;
  if constexpr (kSync == Sync::kBlocking) {
    for (uint64_t i = 0; i < n; ++i) {
      if constexpr (kPut) {
        gex_RMA_PutBlocking(tm, peer, remote, local, size, 0);
      } else {
        gex_RMA_GetBlocking(tm, local, peer, remote, size, 0);
      }
    }
  } else if constexpr (kSync == Sync::kNbi) {
    // Latency: each synced before the next; bandwidth: all, then one sync.
    for (uint64_t i = 0; i < n; ++i) {
      if constexpr (kPut) {
        gex_RMA_PutNBI(tm, peer, remote, local, size, GEX_EVENT_DEFER, 0);
      } else {
        gex_RMA_GetNBI(tm, local, peer, remote, size, 0);
      }
      if constexpr (kLatency) gex_NBI_Wait(kEc, 0);
    }
    if constexpr (!kLatency) gex_NBI_Wait(kEc, 0);
  } else {
    gex_Event_t* events = g_job.events.data();
    for (uint64_t i = 0; i < n; ++i) {
      if constexpr (kPut) {
        events[i] =
            gex_RMA_PutNB(tm, peer, remote, local, size, GEX_EVENT_DEFER, 0);
      } else {
        events[i] = gex_RMA_GetNB(tm, local, peer, remote, size, 0);
      }
    }
    gex_Event_WaitAll(events, n, 0);
  }
}

// `n` fetch-adds of 1 into the peer's first target word, each complete
// before the next; the old value goes to `local`.
template <Sync kSync>
void FetchAddsOf(char* local, uint64_t n) {
  const gex_AD_t ad = g_job.ad;
  const gex_Rank_t peer = g_job.peer;
  void* remote = g_job.peer_target;
  uint64_t* result = reinterpret_cast<uint64_t*>(local);
  for (uint64_t i = 0; i < n; ++i) {
    if constexpr (kSync == Sync::kBlocking) {
      gex_AD_OpBlocking_U64(ad, result, peer, remote, GEX_OP_FADD, 1, 0, 0);
    } else {
      gex_AD_OpNBI_U64(ad, result, peer, remote, GEX_OP_FADD, 1, 0, 0);
      gex_NBI_Wait(GEX_EC_RMW, 0);
    }
  }
}

template <bool kPut, bool kLatency>
void OperationsIn(Sync sync, char* local, size_t size, uint64_t n) {
  switch (sync) {
    case Sync::kBlocking:
      return OperationsOf<kPut, Sync::kBlocking, kLatency>(local, size, n);
    case Sync::kNbi:
      return OperationsOf<kPut, Sync::kNbi, kLatency>(local, size, n);
    case Sync::kNb:
      return OperationsOf<kPut, Sync::kNb, kLatency>(local, size, n);
  }
}

// `n` operations of `test` with `sync` (latency has no NB form: SyncsFor).
void Operations(RmaTest test, Sync sync, char* local, size_t size, uint64_t n) {
  if (IsAtomic(test)) {
    sync == Sync::kBlocking ? FetchAddsOf<Sync::kBlocking>(local, n)
                            : FetchAddsOf<Sync::kNbi>(local, n);
  } else if (IsPut(test)) {
    IsLatency(test) ? OperationsIn<true, true>(sync, local, size, n)
                    : OperationsIn<true, false>(sync, local, size, n);
  } else {
    IsLatency(test) ? OperationsIn<false, true>(sync, local, size, n)
                    : OperationsIn<false, false>(sync, local, size, n);
  }
}

// The baseline: `n` memcpys of `size` bytes between `local` and this rank's
// own target area, in the direction of the operation.
void Memcpys(bool put, char* local, size_t size, uint64_t n) {
  char* dst = put ? g_job.my_target : local;
  const char* src = put ? local : g_job.my_target;
  for (uint64_t i = 0; i < n; ++i) {
    std::memcpy(dst, src, size);
    CompilerBarrier();
  }
}

// fadd-latency's baseline: `n` CPU fetch-adds on this rank's own first
// target word, the old value stored to `local`.
void CpuFetchAdds(char* local, uint64_t n) {
  uint64_t* word = reinterpret_cast<uint64_t*>(g_job.my_target);
  uint64_t* result = reinterpret_cast<uint64_t*>(local);
  for (uint64_t i = 0; i < n; ++i) {
    *result = __atomic_fetch_add(word, 1, __ATOMIC_SEQ_CST);
    CompilerBarrier();
  }
}

// Seconds for `f`, run on the initiator between two barriers that every
// rank enters (so pairs start together and targets poll meanwhile).
template <typename F>
double Timed(F f) {
  Barrier();
  double seconds = 0;
  if (g_job.initiator) {
    const Clock::time_point start = Clock::now();
    f();
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  Barrier();
  return seconds;
}

struct Row {
  RmaTest test;
  Sync sync;
  Local local;
  uint64_t size;
  uint64_t iterations;
  double usec_per_op;
  double mbytes_per_sec;
  double memcpy_usec_per_op;
};

double MBytesPerSec(uint64_t size, double usec_per_op) {
  return usec_per_op > 0
             ? static_cast<double>(size) / usec_per_op * 1e6 / (1 << 20)
             : 0;
}

// Measures one row: the memcpy baseline, then the operations, each warmed
// first. Every rank calls it in the same order.
Row Measure(const RmaOptions& opt, RmaTest test, Sync sync, Local local,
            uint64_t size) {
  const uint64_t n = ScaledIterations(opt.iterations, size);
  const uint64_t warm = ScaledIterations(opt.warmup, size);
  char* buf = g_job.local[static_cast<int>(local)];
  const bool put = IsPut(test);
  auto baseline = [&](uint64_t count) {
    IsAtomic(test) ? CpuFetchAdds(buf, count) : Memcpys(put, buf, size, count);
  };
  Timed([&] { baseline(warm); });
  const double copy_s = Timed([&] { baseline(n); });
  if (warm > 0) Timed([&] { Operations(test, sync, buf, size, warm); });
  const double op_s = Timed([&] { Operations(test, sync, buf, size, n); });
  Row row{test, sync, local, size, n, op_s * 1e6 / n, 0, copy_s * 1e6 / n};
  row.mbytes_per_sec = MBytesPerSec(size, row.usec_per_op);
  return row;
}

double Ratio(const Row& row) {
  return row.memcpy_usec_per_op > 0 ? row.usec_per_op / row.memcpy_usec_per_op
                                    : 0;
}

void PrintTableHeader(RmaTest test) {
  std::printf("\n== %s: %s ==\n", std::string(RmaTestName(test)).c_str(),
              std::string(RmaTestDescription(test)).c_str());
  std::printf("  %-9s %-15s %9s %8s %10s %10s %10s %9s\n", "sync", "local",
              "size", "iters", "us/op", "MB/s", "memcpy us", "x memcpy");
  std::fflush(stdout);
}

void PrintTableRow(const Row& row) {
  std::printf(
      "  %-9s %-15s %9" PRIu64 " %8" PRIu64 " %10.4f %10.1f %10.4f %8.2fx\n",
      std::string(SyncName(row.sync)).c_str(),
      std::string(LocalName(row.local)).c_str(), row.size, row.iterations,
      row.usec_per_op, row.mbytes_per_sec, row.memcpy_usec_per_op, Ratio(row));
  std::fflush(stdout);
}

const Row* FindRow(const std::vector<Row>& rows, RmaTest test, Sync sync,
                   Local local, uint64_t size) {
  for (const Row& row : rows) {
    if (row.test == test && row.sync == sync && row.local == local &&
        row.size == size) {
      return &row;
    }
  }
  return nullptr;
}

// The figures the targets are stated in: 8-byte blocking latency
// and 4 MiB bandwidth, each against memcpy.
void PrintSummary(const std::vector<Row>& rows, const RmaOptions& opt) {
  std::printf(
      "\nSummary, pair 0-1 (ratios against memcpy of the same size, "
      "same run):\n");
  for (RmaTest test : {RmaTest::kPutLatency, RmaTest::kGetLatency}) {
    for (Local local : kAllLocals) {
      const Row* row = FindRow(rows, test, Sync::kBlocking, local, 8);
      if (row == nullptr) continue;
      std::printf("  %s 8 B blocking, %s: %.1f ns = %.2fx memcpy (%.1f ns)\n",
                  IsPut(test) ? "Put" : "Get",
                  std::string(LocalName(local)).c_str(), row->usec_per_op * 1e3,
                  Ratio(*row), row->memcpy_usec_per_op * 1e3);
    }
  }
  for (Sync sync : kAllSyncs) {
    for (Local local : kAllLocals) {
      const Row* row = FindRow(rows, RmaTest::kFaddLatency, sync, local, 8);
      if (row == nullptr) continue;
      std::printf(
          "  Fetch-add 8 B %s, %s: %.1f ns = %.2fx CPU fetch-add (%.1f ns)\n",
          std::string(SyncName(sync)).c_str(),
          std::string(LocalName(local)).c_str(), row->usec_per_op * 1e3,
          Ratio(*row), row->memcpy_usec_per_op * 1e3);
    }
  }
  for (RmaTest test : {RmaTest::kPutBandwidth, RmaTest::kGetBandwidth}) {
    for (Sync sync : kAllSyncs) {
      for (Local local : kAllLocals) {
        const Row* row = FindRow(rows, test, sync, local, opt.bandwidth_max);
        if (row == nullptr) continue;
        const double copy_mbps =
            MBytesPerSec(row->size, row->memcpy_usec_per_op);
        std::printf("  %s %" PRIu64
                    " B bandwidth, %s, %s: %.0f MB/s = %.2fx memcpy "
                    "(%.0f MB/s)\n",
                    IsPut(test) ? "Put" : "Get", row->size,
                    std::string(SyncName(sync)).c_str(),
                    std::string(LocalName(local)).c_str(), row->mbytes_per_sec,
                    copy_mbps > 0 ? row->mbytes_per_sec / copy_mbps : 0,
                    copy_mbps);
      }
    }
  }
  std::fflush(stdout);
}

bool WriteCsv(std::FILE* f, const std::vector<Row>& rows) {
  std::fprintf(f,
               "test,sync,local,size,iterations,usec_per_op,mbytes_per_sec,"
               "memcpy_usec_per_op,ratio_to_memcpy\n");
  for (const Row& row : rows) {
    std::fprintf(f, "%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%.5f,%.2f,%.5f,%.3f\n",
                 std::string(RmaTestName(row.test)).c_str(),
                 std::string(SyncName(row.sync)).c_str(),
                 std::string(LocalName(row.local)).c_str(), row.size,
                 row.iterations, row.usec_per_op, row.mbytes_per_sec,
                 row.memcpy_usec_per_op, Ratio(row));
  }
  const bool ok = std::fflush(f) == 0 && !std::ferror(f);
  return std::fclose(f) == 0 && ok;
}

uint64_t RoundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

int Main(int argc, char** argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  Check(gex_Client_Init(&client, &ep, &tm, kProgram, &argc, &argv, 0),
        "gex_Client_Init");
  g_job.tm = tm;
  g_job.me = gex_TM_QueryRank(tm);
  g_job.size = gex_TM_QuerySize(tm);
  const bool leader = g_job.me == 0;

  RmaOptions opt;
  const std::optional<std::string> parse_error =
      ParseRmaOptions(argc, const_cast<const char* const*>(argv), &opt);
  if (std::optional<int> code = CommandLineVerdict(
          kProgram, argc, argv, leader, g_job.size, parse_error, opt.help,
          &RmaUsage, GASNET_CONDUIT_NAME_STR_LC)) {
    // Rank 0 has said why before anyone leaves: the first exit ends the
    // job, and its message must not be cut off.
    gex_Coll_BarrierBlocking(tm, 0);
    gasnet_exit(*code);
  }
  // Rank 0 opens the CSV before measuring, so a bad path costs nothing.
  bool csv_failed = false;
  std::FILE* csv =
      leader ? OpenCsv(kProgram, opt.csv_path, &csv_failed) : nullptr;
  if (csv_failed) gasnet_exit(2);

  const gex_Rank_t peer = g_job.me ^ 1u;
  g_job.peer = peer < g_job.size ? peer : GEX_RANK_INVALID;
  g_job.initiator = g_job.peer != GEX_RANK_INVALID && (g_job.me % 2) == 0;
  gex_RankInfo_t* host_info = nullptr;
  gex_Rank_t host_ranks = 0;
  gex_Rank_t host_index = 0;
  gex_System_QueryHostInfo(&host_info, &host_ranks, &host_index);
  const std::string pin_line = PinToCpu(opt.pin, host_ranks, host_index,
                                        kProgram, g_job.me, &g_job.polite);

  // Sizes the run walks, the same on every rank.
  uint64_t largest = 1;
  for (RmaTest test : opt.tests) {
    largest = std::max(largest,
                       IsLatency(test) ? opt.latency_max : opt.bandwidth_max);
  }
  g_job.area_bytes = RoundUp(largest, kPage);
  gex_Segment_t segment;
  const int attach_rc = gex_Segment_Attach(&segment, tm, 2 * g_job.area_bytes);
  if (attach_rc != GASNET_OK) {
    std::fprintf(stderr,
                 "%s: rank %u: gex_Segment_Attach(%" PRIu64
                 " bytes) failed: %s; smaller --latency-max/--bandwidth-max "
                 "need less\n",
                 kProgram, g_job.me, 2 * g_job.area_bytes,
                 gasnet_ErrorName(attach_rc));
    gasnet_exit(1);
  }
  char* seg = static_cast<char*>(gex_Segment_QueryAddr(segment));
  g_job.my_target = seg;
  g_job.local[static_cast<int>(Local::kInSegment)] = seg + g_job.area_bytes;
  char* heap = static_cast<char*>(std::aligned_alloc(kPage, g_job.area_bytes));
  if (heap == nullptr) {
    std::fprintf(stderr,
                 "%s: rank %u: no memory for a %" PRIu64 "-byte local buffer\n",
                 kProgram, g_job.me, g_job.area_bytes);
    gasnet_exit(1);
  }
  g_job.local[static_cast<int>(Local::kOutOfSegment)] = heap;
  // Touch everything now, not in the first timed loop.
  std::memset(seg, 0x5a, 2 * g_job.area_bytes);
  std::memset(heap, 0xa5, g_job.area_bytes);
  if (g_job.peer != GEX_RANK_INVALID) {
    void* owner = nullptr;
    gex_Event_Wait(gex_EP_QueryBoundSegmentNB(tm, g_job.peer, &owner, nullptr,
                                              nullptr, 0));
    g_job.peer_target = static_cast<char*>(owner);
  }
  uint64_t most_ops = 0;
  for (uint64_t size : PowerOfTwoSizes(opt.bandwidth_min, opt.bandwidth_max)) {
    most_ops = std::max({most_ops, ScaledIterations(opt.iterations, size),
                         ScaledIterations(opt.warmup, size)});
  }
  g_job.events.resize(most_ops);
  // Collective, so every rank makes it when fadd-latency is asked for.
  const bool fadd = std::find(opt.tests.begin(), opt.tests.end(),
                              RmaTest::kFaddLatency) != opt.tests.end();
  if (fadd) gex_AD_Create(&g_job.ad, tm, GEX_DT_U64, GEX_OP_FADD, 0);

  if (leader) {
    std::printf(
        "%s: %u ranks, %u pair(s) (rank r with r^1%s), conduit %s, "
        "%s\n",
        kProgram, g_job.size, g_job.size / 2,
        g_job.size % 2 ? "; the last rank idles" : "", GASNET_CONDUIT_NAME_STR,
        ThreadMode());
    std::printf("  %" PRIu64 " iterations, %" PRIu64
                " warm-up (both scaled down above 16 KiB); latency %" PRIu64
                "..%" PRIu64 " B, bandwidth %" PRIu64 "..%" PRIu64 " B\n",
                opt.iterations, opt.warmup, opt.latency_min, opt.latency_max,
                opt.bandwidth_min, opt.bandwidth_max);
    std::printf("  %s\n", pin_line.c_str());
    std::fflush(stdout);
  }

  std::vector<Row> rows;
  for (RmaTest test : opt.tests) {
    if (leader) PrintTableHeader(test);
    const std::vector<uint64_t> sizes =
        IsAtomic(test) ? std::vector<uint64_t>{8}
        : IsLatency(test)
            ? PowerOfTwoSizes(opt.latency_min, opt.latency_max)
            : PowerOfTwoSizes(opt.bandwidth_min, opt.bandwidth_max);
    for (Sync sync : SyncsFor(test, opt.syncs)) {
      for (Local local : opt.locals) {
        for (uint64_t size : sizes) {
          const Row row = Measure(opt, test, sync, local, size);
          if (leader) {
            rows.push_back(row);
            PrintTableRow(row);
          }
        }
      }
    }
  }

  if (leader) {
    PrintSummary(rows, opt);
    if (csv != nullptr) {
      if (!WriteCsv(csv, rows)) {
        std::fprintf(stderr, "%s: writing %s failed\n", kProgram,
                     opt.csv_path.c_str());
        gasnet_exit(1);
      }
      std::printf("wrote %zu rows to %s\n", rows.size(), opt.csv_path.c_str());
      std::fflush(stdout);
    }
  }
  Barrier();
  if (g_job.ad != GEX_AD_INVALID) gex_AD_Destroy(g_job.ad);
  std::free(heap);
  gasnet_exit(0);
  return 0;
}

}  // namespace
}  // namespace gex_bench

int main(int argc, char** argv) { return gex_bench::Main(argc, argv); }
