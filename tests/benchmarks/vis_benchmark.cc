// VIS strided Put bandwidth (gasnet_vis.h) on smp against the contiguous
// Put (gex_RMA_PutBlocking) of the same number of bytes, measured in the
// same run between the same two processes.
//
//   GASNET_PSHM_NODES=2 bazel-bin/tests/benchmarks/vis_benchmark
//       [--bytes B] [--iters N] [--trials T]   (defaults 1 MiB, 20, 41)
//
// A job of 2 ranks (GASNET_PSHM_NODES=2 makes the program its own
// launcher; gasnetrun_smp -n 2 works too). Rank 0 puts into rank 1's
// segment, which it reaches through the cross-mapped segment (a supernode
// peer: the direct path); rank 1 waits in a barrier.
//
// For each element size E (64, 256, 1024, 4096 bytes) it moves B bytes per
// call:
//   contiguous  gex_RMA_PutBlocking of B bytes;
//   strided     gex_VIS_StridedPutBlocking of B/E elements of E bytes,
//               every other E-byte slot on both sides (strides 2E: a
//               column block of a two-column array), so no level folds
//               into a contiguous copy;
//   strided-2lv the same elements as a 2-level shape: groups of 8
//               elements at stride 2E, the groups at stride 18E (a gap
//               between groups, so the levels do not fold into one);
//   padded      gex_VIS_StridedPutBlocking of B/E elements at stride
//               E + 64 on both sides (rows of a padded 2-D array: a
//               footprint only a little larger than B);
//   raw-strided the baseline of the memory system: the strided pattern
//               (strides 2E) copied with a plain memcpy loop on the mapped
//               address, no GASNet call. A strided pattern spreads the same
//               bytes over twice the memory, which costs the hardware
//               something whatever copies them; strided/raw-strided is
//               what VIS itself adds.
// Each measurement is N calls, taken T times, interleaved (contiguous,
// strided, strided-2lv, padded, raw-strided, contiguous, ...), so that a trial
// the scheduler interrupted is one of many. Prints, at rank 0, one line per
// measurement with the fastest trial (min: the cost with nothing else in the
// way) and the median, in GB/s, and the ratios
//   ratio strided/contiguous E=<E>: R (min) R' (median); 2-level ...;
//         padded ...; strided/raw-strided ...
// where the bound (>= 0.8) is on R (bandwidth over bandwidth).
#include <gasnet_vis.h>
#include <gasnetex.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

gex_TM_t g_tm;
gex_Rank_t g_me;

void Barrier() { gex_Coll_BarrierBlocking(g_tm, 0); }

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Stats {
  double min = 0;
  double median = 0;
};

Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return Stats{v.front(), v[v.size() / 2]};
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "vis_benchmark: %s\nusage: GASNET_PSHM_NODES=2 vis_benchmark "
               "[--bytes B] [--iters N] [--trials T]\n",
               why);
  gasnet_exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  gex_Client_t client;
  gex_EP_t ep;
  if (gex_Client_Init(&client, &ep, &g_tm, "VIS_BENCH", &argc, &argv, 0) !=
      GASNET_OK) {
    return 1;
  }
  g_me = gex_TM_QueryRank(g_tm);
  size_t bytes = 1 << 20;
  long iters = 20;
  long trials = 41;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 < argc && std::strcmp(argv[i], "--bytes") == 0) {
      bytes = std::strtoul(argv[++i], nullptr, 0);
    } else if (i + 1 < argc && std::strcmp(argv[i], "--iters") == 0) {
      iters = std::atol(argv[++i]);
    } else if (i + 1 < argc && std::strcmp(argv[i], "--trials") == 0) {
      trials = std::atol(argv[++i]);
    } else {
      Usage("unknown argument");
    }
  }
  if (gex_TM_QuerySize(g_tm) != 2) {
    Usage("run it as 2 ranks (GASNET_PSHM_NODES=2)");
  }
  const size_t kElems[] = {64, 256, 1024, 4096};
  if (bytes < 2 * 16 * 4096 || bytes % (16 * 4096) != 0 || iters < 1 ||
      trials < 1) {
    Usage(
        "--bytes must be a multiple of 64 KiB (at least 128 KiB); "
        "--iters and --trials at least 1");
  }
  // Room for the largest strided footprint (2.25B) on rank 1.
  const size_t span = bytes / 4 * 9 + 64 * 1024;
  gex_Segment_t seg;
  if (gex_Segment_Attach(&seg, g_tm, span) != GASNET_OK) gasnet_exit(1);
  void* owner;
  void* local;
  uintptr_t size;
  gex_Event_Wait(gex_EP_QueryBoundSegmentNB(g_tm, 1, &owner, &local, &size, 0));
  if (g_me == 0 && local == nullptr) {
    std::fprintf(stderr,
                 "vis_benchmark: rank 1's segment is not mapped here "
                 "(the ranks must share a supernode)\n");
    gasnet_exit(1);
  }
  auto* dst = static_cast<unsigned char*>(owner);
  auto* mapped = static_cast<unsigned char*>(local);
  std::vector<unsigned char> src(span);
  for (size_t i = 0; i < span; ++i) src[i] = static_cast<unsigned char>(i);
  Barrier();

  if (g_me == 0) {
    std::printf(
        "VIS strided Put against contiguous Put, %zu bytes a call, "
        "%ld calls a trial, %ld trials (GB/s)\n",
        bytes, iters, trials);
    for (const size_t e : kElems) {
      const size_t n = bytes / e;
      const size_t count2[1] = {n};
      const ptrdiff_t stride2[1] = {static_cast<ptrdiff_t>(2 * e)};
      const size_t count3[2] = {8, n / 8};
      const ptrdiff_t stride3[2] = {static_cast<ptrdiff_t>(2 * e),
                                    static_cast<ptrdiff_t>(18 * e)};
      const ptrdiff_t pad[1] = {static_cast<ptrdiff_t>(e + 64)};
      std::vector<double> contiguous, strided, strided3, padded, raw;
      for (long t = 0; t < trials; ++t) {
        double t0 = Now();
        for (long i = 0; i < iters; ++i) {
          gex_RMA_PutBlocking(g_tm, 1, dst, src.data(), bytes, 0);
        }
        contiguous.push_back((Now() - t0) / iters);
        t0 = Now();
        for (long i = 0; i < iters; ++i) {
          gex_VIS_StridedPutBlocking(g_tm, 1, dst, stride2, src.data(), stride2,
                                     e, count2, 1, 0);
        }
        strided.push_back((Now() - t0) / iters);
        t0 = Now();
        for (long i = 0; i < iters; ++i) {
          gex_VIS_StridedPutBlocking(g_tm, 1, dst, stride3, src.data(), stride3,
                                     e, count3, 2, 0);
        }
        strided3.push_back((Now() - t0) / iters);
        t0 = Now();
        for (long i = 0; i < iters; ++i) {
          gex_VIS_StridedPutBlocking(g_tm, 1, dst, pad, src.data(), pad, e,
                                     count2, 1, 0);
        }
        padded.push_back((Now() - t0) / iters);
        t0 = Now();
        for (long i = 0; i < iters; ++i) {
          for (size_t k = 0; k < n; ++k) {
            std::memcpy(mapped + 2 * e * k, src.data() + 2 * e * k, e);
          }
          // Keep the copies: the compiler may not drop or merge them.
          asm volatile("" : : "r"(mapped) : "memory");
        }
        raw.push_back((Now() - t0) / iters);
      }
      const Stats c = Summarize(contiguous);
      const Stats s = Summarize(strided);
      const Stats s3 = Summarize(strided3);
      const Stats p = Summarize(padded);
      const Stats r = Summarize(raw);
      const double gb = static_cast<double>(bytes) / 1e9;
      std::printf("E=%-5zu %-12s min %7.2f  median %7.2f GB/s\n", e,
                  "contiguous", gb / c.min, gb / c.median);
      std::printf("E=%-5zu %-12s min %7.2f  median %7.2f GB/s\n", e, "strided",
                  gb / s.min, gb / s.median);
      std::printf("E=%-5zu %-12s min %7.2f  median %7.2f GB/s\n", e,
                  "strided-2lv", gb / s3.min, gb / s3.median);
      std::printf("E=%-5zu %-12s min %7.2f  median %7.2f GB/s\n", e, "padded",
                  gb / p.min, gb / p.median);
      std::printf("E=%-5zu %-12s min %7.2f  median %7.2f GB/s\n", e,
                  "raw-strided", gb / r.min, gb / r.median);
      std::printf(
          "ratio strided/contiguous E=%zu: %.2f (min) %.2f (median); "
          "2-level %.2f (min) %.2f (median); padded %.2f (min) %.2f "
          "(median); strided/raw-strided %.2f (min) %.2f (median)\n",
          e, c.min / s.min, c.median / s.median, c.min / s3.min,
          c.median / s3.median, c.min / p.min, c.median / p.median,
          r.min / s.min, r.median / s.median);
    }
    std::fflush(stdout);
  }
  Barrier();
  gasnet_exit(0);
}
