// The C++ API (<gex/gex.hpp>) against the C API it wraps, measured in the
// same run, pair by pair: whatever the C++ layer adds (a copy, an
// allocation, an indirect call) shows as a C++/C ratio above 1.
//
//   GASNET_PSHM_NODES=2 bazel-bin/tests/benchmarks/cpp_api_benchmark
//
// A job of 2 ranks (GASNET_PSHM_NODES=2 makes the program its own
// launcher; gasnetrun_smp -n 2 works too). Rank 0 runs the benchmarks
// against rank 1, which only polls (runs the AM handlers) until rank 0 is
// done. Pairs, each BM_<what>_C then BM_<what>_Cpp:
//
//   Put8        8-byte blocking Put       gex_RMA_PutBlocking / gex::put
//   Get8        8-byte blocking Get       gex_RMA_GetBlocking / gex::get
//   PutNB8      8-byte NB Put + wait      gex_RMA_PutNB + gex_Event_Wait /
//                                         gex::put_nb(...).wait()
//   PutNBI8     8-byte NBI Put + NBI wait gex_RMA_PutNBI + gex_NBI_Wait /
//                                         gex::put_nbi + gex::nbi_wait
//   AmShort     Short request, the handler replies, wait for the reply
//               (C handlers registered with a table / typed handlers)
//   AmMedium8   the same with an 8-byte Medium echoed back
//
// After the table, one line per pair: "ratio <what>: C++/C = R". Times are
// wall-clock per operation; see README.md here.
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "gex/gex.hpp"

namespace {

gex::Team g_team;
gex_TM_t g_tm;
constexpr gex::Rank kPeer = 1;
uint64_t* g_peer_word;  // 8 bytes in rank 1's segment (its address)
uint64_t g_local_word = 0x0102030405060708ull;

// Round trips completed, and whether rank 0 is done.
std::atomic<uint64_t> g_replies{0};
std::atomic<bool> g_done{false};

// ---- C handlers --------------------------------------------------------
enum : gex_AM_Index_t {
  kCPing = 200,
  kCPong,
  kCMedPing,
  kCMedPong,
};

void CPing(gex_Token_t token) { gex_AM_ReplyShort0(token, kCPong, 0); }
void CPong(gex_Token_t) { g_replies.fetch_add(1, std::memory_order_release); }
void CMedPing(gex_Token_t token, void* buf, size_t nbytes) {
  gex_AM_ReplyMedium0(token, kCMedPong, buf, nbytes, GEX_EVENT_NOW, 0);
}
void CMedPong(gex_Token_t, void*, size_t) {
  g_replies.fetch_add(1, std::memory_order_release);
}

// ---- typed handlers -------------------------------------------------------
void CppPong(gex::Token) { g_replies.fetch_add(1, std::memory_order_release); }
void CppPing(gex::Token t) { gex::reply_short<CppPong>(t); }
void CppMedPong(gex::Token, std::span<const std::byte>) {
  g_replies.fetch_add(1, std::memory_order_release);
}
void CppMedPing(gex::Token t, std::span<const std::byte> p) {
  gex::reply_medium<CppMedPong>(t, p);
}
void Done(gex::Token) { g_done.store(true, std::memory_order_release); }

void RegisterHandlers(gex::Endpoint ep) {
  gex_AM_Entry_t table[] = {
      {kCPing, reinterpret_cast<gex_AM_Fn_t>(&CPing),
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 0, nullptr, "c ping"},
      {kCPong, reinterpret_cast<gex_AM_Fn_t>(&CPong),
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 0, nullptr, "c pong"},
      {kCMedPing, reinterpret_cast<gex_AM_Fn_t>(&CMedPing),
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 0, nullptr, "c med ping"},
      {kCMedPong, reinterpret_cast<gex_AM_Fn_t>(&CMedPong),
       GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REPLY, 0, nullptr, "c med pong"},
  };
  if (gex_EP_RegisterHandlers(ep.c_handle(), table, 4) != GASNET_OK) {
    std::fprintf(stderr, "cpp_api_benchmark: registration failed\n");
    gex::exit_job(1);
  }
  gex::register_handlers<CppPing, CppPong, CppMedPing, CppMedPong, Done>(ep);
}

// ---- RMA pairs --------------------------------------------------------------

void BM_Put8_C(benchmark::State& state) {
  for (auto _ : state) {
    gex_RMA_PutBlocking(g_tm, kPeer, g_peer_word, &g_local_word, 8, 0);
  }
}
void BM_Put8_Cpp(benchmark::State& state) {
  const std::span<const uint64_t> src(&g_local_word, 1);
  for (auto _ : state) gex::put(g_team, kPeer, g_peer_word, src);
}

void BM_Get8_C(benchmark::State& state) {
  for (auto _ : state) {
    gex_RMA_GetBlocking(g_tm, &g_local_word, kPeer, g_peer_word, 8, 0);
    benchmark::DoNotOptimize(g_local_word);
  }
}
void BM_Get8_Cpp(benchmark::State& state) {
  const std::span<uint64_t> dst(&g_local_word, 1);
  for (auto _ : state) {
    gex::get(g_team, dst, kPeer, g_peer_word);
    benchmark::DoNotOptimize(g_local_word);
  }
}

void BM_PutNB8_C(benchmark::State& state) {
  for (auto _ : state) {
    gex_Event_Wait(gex_RMA_PutNB(g_tm, kPeer, g_peer_word, &g_local_word, 8,
                                 GEX_EVENT_DEFER, 0));
  }
}
void BM_PutNB8_Cpp(benchmark::State& state) {
  const std::span<const uint64_t> src(&g_local_word, 1);
  for (auto _ : state) gex::put_nb(g_team, kPeer, g_peer_word, src).wait();
}

void BM_PutNBI8_C(benchmark::State& state) {
  for (auto _ : state) {
    gex_RMA_PutNBI(g_tm, kPeer, g_peer_word, &g_local_word, 8, GEX_EVENT_DEFER,
                   0);
    gex_NBI_Wait(GEX_EC_PUT, 0);
  }
}
void BM_PutNBI8_Cpp(benchmark::State& state) {
  const std::span<const uint64_t> src(&g_local_word, 1);
  for (auto _ : state) {
    gex::put_nbi(g_team, kPeer, g_peer_word, src);
    gex::nbi_wait(gex::ec::put);
  }
}

// ---- AM pairs ---------------------------------------------------------------

void BM_AmShort_C(benchmark::State& state) {
  uint64_t expected = g_replies.load();
  for (auto _ : state) {
    gex_AM_RequestShort0(g_tm, kPeer, kCPing, 0);
    ++expected;
    GASNET_BLOCKUNTIL(g_replies.load(std::memory_order_acquire) == expected);
  }
}
void BM_AmShort_Cpp(benchmark::State& state) {
  uint64_t expected = g_replies.load();
  for (auto _ : state) {
    gex::request_short<CppPing>(g_team, kPeer);
    ++expected;
    gex::poll_until(
        [&] { return g_replies.load(std::memory_order_acquire) == expected; });
  }
}

void BM_AmMedium8_C(benchmark::State& state) {
  uint64_t expected = g_replies.load();
  for (auto _ : state) {
    gex_AM_RequestMedium0(g_tm, kPeer, kCMedPing, &g_local_word, 8,
                          GEX_EVENT_NOW, 0);
    ++expected;
    GASNET_BLOCKUNTIL(g_replies.load(std::memory_order_acquire) == expected);
  }
}
void BM_AmMedium8_Cpp(benchmark::State& state) {
  uint64_t expected = g_replies.load();
  const std::span<const uint64_t> payload(&g_local_word, 1);
  for (auto _ : state) {
    gex::request_medium<CppMedPing>(g_team, kPeer, payload);
    ++expected;
    gex::poll_until(
        [&] { return g_replies.load(std::memory_order_acquire) == expected; });
  }
}

BENCHMARK(BM_Put8_C)->UseRealTime();
BENCHMARK(BM_Put8_Cpp)->UseRealTime();
BENCHMARK(BM_Get8_C)->UseRealTime();
BENCHMARK(BM_Get8_Cpp)->UseRealTime();
BENCHMARK(BM_PutNB8_C)->UseRealTime();
BENCHMARK(BM_PutNB8_Cpp)->UseRealTime();
BENCHMARK(BM_PutNBI8_C)->UseRealTime();
BENCHMARK(BM_PutNBI8_Cpp)->UseRealTime();
BENCHMARK(BM_AmShort_C)->UseRealTime();
BENCHMARK(BM_AmShort_Cpp)->UseRealTime();
BENCHMARK(BM_AmMedium8_C)->UseRealTime();
BENCHMARK(BM_AmMedium8_Cpp)->UseRealTime();

// The console table, and then each pair's C++/C ratio of time per
// iteration (of the medians when there are repetitions).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal (a custom reporter does not see
  // --benchmark_color).
  RatioReporter()
      : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_Defaults : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const std::string& name = run.run_name.function_name;
      if (run.run_type == Run::RT_Aggregate) {
        if (run.aggregate_name == "median") {
          medians_[name] = run.GetAdjustedRealTime();
        }
      } else {
        times_[name] = run.GetAdjustedRealTime();
      }
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    for (const auto& [name, t] : medians_) times_[name] = t;
    for (const auto& [name, cpp] : times_) {
      const std::string suffix = "_Cpp";
      if (name.size() < suffix.size() ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) !=
              0) {
        continue;
      }
      const std::string what = name.substr(0, name.size() - suffix.size());
      const auto c = times_.find(what + "_C");
      if (c == times_.end() || c->second <= 0) continue;
      std::printf("ratio %s: C++/C = %.3f (%.1f ns / %.1f ns)\n",
                  what.substr(3).c_str(), cpp / c->second, cpp, c->second);
    }
    std::fflush(stdout);
  }

 private:
  std::map<std::string, double> times_;    // the last run of each
  std::map<std::string, double> medians_;  // with repetitions
};

// Pins this rank to the rank-th CPU it may run on, so that neither rank
// migrates during a run (an unpinned pair moves between placements whose
// round trips differ by several times, mid-run).
void PinToOwnCpu(gex::Rank rank) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  const int count = CPU_COUNT(&allowed);
  if (count < 2) return;
  int seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen++ == static_cast<int>(rank) % count) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      sched_setaffinity(0, sizeof one, &one);
      return;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  gex::Client client(argc, argv, "CPP_API_BENCH");
  g_team = client.team();
  g_tm = g_team.c_handle();
  if (g_team.size() != 2) {
    std::fprintf(stderr,
                 "cpp_api_benchmark: run it as 2 ranks "
                 "(GASNET_PSHM_NODES=2 or gasnetrun_smp -n 2), not %u\n",
                 g_team.size());
    gex::exit_job(2);
  }
  PinToOwnCpu(g_team.rank());
  RegisterHandlers(client.endpoint());
  const gex::Segment seg(g_team, 1 << 16);
  g_peer_word = static_cast<uint64_t*>(g_team.bound_segment(kPeer).owner_addr);
  g_team.barrier();

  int rc = 0;
  if (g_team.rank() == 0) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
      rc = 2;
    } else {
      RatioReporter reporter;
      benchmark::RunSpecifiedBenchmarks(&reporter);
    }
    gex::request_short<Done>(g_team, kPeer);
  } else {
    // A plain spin: a polite wait (one that may yield) would put its own
    // wake-up into every round trip.
    while (!g_done.load(std::memory_order_acquire)) gex::poll();
  }
  g_team.barrier();
  gex::exit_job(rc);
}
