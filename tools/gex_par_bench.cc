// gex_par_bench: Active Message round trips from several threads of each
// rank at once (GASNET_PAR), for thread counts 1, 2, 4, 8 in one run, each
// timed and printed as a multiple of the first count's time. It shows how
// the runtime copes with more communicating threads than CPUs: on a host
// with 2 CPUs, 2 ranks of 4 threads each are 8 threads that all wait for
// replies.
//
//   bazel build --config=opt //tools:gex_par_bench_smp //tools:gasnetrun_smp
//   bazel-bin/tools/gasnetrun_smp -n 2 bazel-bin/tools/gex_par_bench_smp
//
// Rank r works with rank r^1 (an odd rank out with itself). For each thread
// count T, every rank starts T threads; each thread sends `-i` Short
// Requests to the peer, one at a time, and waits for each one's Reply
// (GASNET_BLOCKUNTIL, or its own gex_AM_Poll loop with --wait poll) before
// the next. So a rank makes T x -i round trips, and T = 4 is 4 times T = 1's
// work: on a host whose CPUs the T = 1 run already fills, a ratio of about
// T is the best there is. The main thread does not poll while the threads
// run (it is blocked joining them), then waits in a barrier for the peer's
// threads to finish too. Rank 0's time runs from the start barrier to that
// end barrier.
//
// Every count is checked exactly: each thread got one Reply per Request it
// sent (warm-up included), and each rank served exactly T x (-w + -i)
// Requests from its peer. A mismatch ends the job with 1.
//
// See -h for the options; tests/benchmarks/README.md for figures.
#include <gasnetex.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tools/bench_args.h"
#include "tools/bench_job.h"

namespace gex_bench {
namespace {

constexpr char kProgram[] = "gex_par_bench";
constexpr uint64_t kMaxThreads = 64;

enum : gex_AM_Index_t {
  kPing = GEX_AM_INDEX_BASE,  // request (arg: thread): reply
  kPong,                      // reply (arg: thread): count it
};

enum class WaitBy { kBlockUntil, kPoll };

struct Options {
  uint64_t iterations = 100000;  // round trips per thread
  uint64_t warmup = 1000;        // per thread, untimed
  uint64_t rounds = 1;
  std::vector<uint64_t> threads = {1, 2, 4, 8};
  WaitBy wait = WaitBy::kBlockUntil;
  bool help = false;
};

std::string Usage(std::string_view program) {
  const std::string p(program);
  return "usage: gasnetrun_smp -n 2 " + p +
         " [options]\n"
         "  Short Request/Reply round trips from T threads per rank at once,\n"
         "  rank r with rank r^1; each thread waits for each Reply before its\n"
         "  next Request. Prints each T's time and its ratio to the first T.\n"
         "  -i, --iterations N  round trips per thread (default 100000)\n"
         "  -w, --warmup N      untimed round trips per thread first "
         "(default 1000)\n"
         "  --threads LIST      thread counts, comma-separated, each 1-64 "
         "(default 1,2,4,8)\n"
         "  --rounds R          run the whole list R times; medians at the end "
         "(default 1)\n"
         "  --wait MODE         blockuntil (GASNET_BLOCKUNTIL, default) or "
         "poll (a gex_AM_Poll loop)\n"
         "  -h, --help          this text\n";
}

std::optional<std::string> NotCount(std::string_view name,
                                    std::string_view text,
                                    std::string_view what) {
  return std::string(name) + ": '" + std::string(text) + "' is not " +
         std::string(what);
}

std::optional<std::string> ParseOptions(int argc, const char* const* argv,
                                        Options* options) {
  Options result;
  ArgReader args(argc, argv);
  while (args.Next()) {
    const std::string_view name = args.name();
    std::string_view text;
    if (name == "-h" || name == "--help") {
      if (auto error = args.NoValue()) return error;
      result.help = true;
    } else if (name == "-i" || name == "--iterations") {
      if (auto error = args.Value(&text)) return error;
      if (!ParseCount(text, &result.iterations) || result.iterations == 0) {
        return NotCount(name, text, "a count of at least 1");
      }
    } else if (name == "-w" || name == "--warmup") {
      if (auto error = args.Value(&text)) return error;
      if (!ParseCount(text, &result.warmup)) {
        return NotCount(name, text, "a count");
      }
    } else if (name == "--rounds") {
      if (auto error = args.Value(&text)) return error;
      if (!ParseCount(text, &result.rounds) || result.rounds == 0) {
        return NotCount(name, text, "a count of at least 1");
      }
    } else if (name == "--threads") {
      if (auto error = args.Value(&text)) return error;
      result.threads.clear();
      std::string_view rest = text;
      while (true) {
        const size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        uint64_t n = 0;
        if (!ParseCount(item, &n) || n == 0 || n > kMaxThreads) {
          return NotCount(name, text, "a list of thread counts, each 1 to 64");
        }
        result.threads.push_back(n);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    } else if (name == "--wait") {
      if (auto error = args.Value(&text)) return error;
      if (text == "blockuntil") {
        result.wait = WaitBy::kBlockUntil;
      } else if (text == "poll") {
        result.wait = WaitBy::kPoll;
      } else {
        return NotCount(name, text, "blockuntil or poll");
      }
    } else {
      return "unknown option '" + std::string(args.arg()) + "'";
    }
  }
  *options = std::move(result);
  return std::nullopt;
}

// Per sender thread, each on its own line: the threads would otherwise
// measure their false sharing.
struct alignas(64) Counter {
  std::atomic<uint64_t> value{0};
};
Counter g_replies[kMaxThreads];  // Replies to this rank's thread t
Counter g_served[kMaxThreads];   // Requests served from the peer's thread t

gex_TM_t g_tm = GEX_TM_INVALID;
gex_Rank_t g_me = 0;
gex_Rank_t g_peer = 0;

void Fail(const char* what, int rc) {
  std::fprintf(stderr, "%s: rank %u: %s failed: %s\n", kProgram, g_me, what,
               gasnet_ErrorName(rc));
  std::fflush(stderr);
  gasnet_exit(1);
}

void Ping(gex_Token_t token, gex_AM_Arg_t thread) {
  g_served[thread].value.fetch_add(1, std::memory_order_relaxed);
  const int rc = gex_AM_ReplyShort1(token, kPong, 0, thread);
  if (rc != GASNET_OK) Fail("gex_AM_ReplyShort1", rc);
}

void Pong(gex_Token_t, gex_AM_Arg_t thread) {
  g_replies[thread].value.fetch_add(1, std::memory_order_release);
}

// `count` round trips from thread `t`, after `done` earlier ones.
void RoundTrips(int t, uint64_t done, uint64_t count, WaitBy wait) {
  std::atomic<uint64_t>& replies = g_replies[t].value;
  for (uint64_t i = done + 1; i <= done + count; ++i) {
    const int rc = gex_AM_RequestShort1(g_tm, g_peer, kPing, 0, t);
    if (rc != GASNET_OK) Fail("gex_AM_RequestShort1", rc);
    if (wait == WaitBy::kBlockUntil) {
      GASNET_BLOCKUNTIL(replies.load(std::memory_order_acquire) == i);
    } else {
      while (replies.load(std::memory_order_acquire) != i) gex_AM_Poll();
    }
  }
}

// One measurement with `threads` threads; returns rank 0's seconds (0 on
// other ranks). Checks every count before returning.
double Measure(int threads, const Options& opt) {
  for (int t = 0; t < threads; ++t) {
    g_replies[t].value.store(0, std::memory_order_relaxed);
    g_served[t].value.store(0, std::memory_order_relaxed);
  }
  gex_Coll_BarrierBlocking(g_tm, 0);  // both ranks have reset their counts

  std::atomic<int> warm{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([t, &warm, &go, &opt] {
      RoundTrips(t, 0, opt.warmup, opt.wait);
      warm.fetch_add(1, std::memory_order_release);
      // Waiting for the start polls too: the peer may still be warming up.
      GASNET_BLOCKUNTIL(go.load(std::memory_order_acquire));
      RoundTrips(t, opt.warmup, opt.iterations, opt.wait);
    });
  }
  GASNET_BLOCKUNTIL(warm.load(std::memory_order_acquire) == threads);
  gex_Coll_BarrierBlocking(g_tm, 0);
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& w : workers) w.join();
  // The peer's threads may still need this rank's replies: the barrier
  // polls until they are done.
  gex_Coll_BarrierBlocking(g_tm, 0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  const uint64_t each = opt.warmup + opt.iterations;
  for (int t = 0; t < threads; ++t) {
    const uint64_t got = g_replies[t].value.load(std::memory_order_acquire);
    const uint64_t served = g_served[t].value.load(std::memory_order_relaxed);
    if (got != each || served != each) {
      std::fprintf(stderr,
                   "%s: rank %u: %d threads: thread %d got %" PRIu64
                   " replies and served %" PRIu64
                   " requests from the peer's thread %d; expected %" PRIu64
                   " of each\n",
                   kProgram, g_me, threads, t, got, served, t, each);
      std::fflush(stderr);
      gasnet_exit(1);
    }
  }
  return g_me == 0 ? seconds : 0;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int Main(int argc, char** argv) {
  gex_Client_t client;
  gex_EP_t ep;
  if (const int rc =
          gex_Client_Init(&client, &ep, &g_tm, kProgram, &argc, &argv, 0);
      rc != GASNET_OK) {
    std::fprintf(stderr, "%s: gex_Client_Init failed: %s\n", kProgram,
                 gasnet_ErrorName(rc));
    return 1;
  }
  g_me = gex_TM_QueryRank(g_tm);
  const gex_Rank_t size = gex_TM_QuerySize(g_tm);
  const bool leader = g_me == 0;
  Options opt;
  const std::optional<std::string> parse_error =
      ParseOptions(argc, const_cast<const char* const*>(argv), &opt);
  if (std::optional<int> code =
          CommandLineVerdict(kProgram, argc, argv, leader, size, parse_error,
                             opt.help, &Usage, GASNET_CONDUIT_NAME_STR_LC)) {
    gex_Coll_BarrierBlocking(g_tm, 0);  // rank 0 has said why
    gasnet_exit(*code);
  }
  const uint64_t most =
      *std::max_element(opt.threads.begin(), opt.threads.end());
  if (most > 1 && gex_System_QueryMaxThreads() < most) {
    if (leader) {
      std::fprintf(stderr,
                   "%s: this build allows %" PRIu64
                   " client thread(s) (%s); --threads asks for %" PRIu64 "\n",
                   kProgram, gex_System_QueryMaxThreads(), ThreadMode(), most);
    }
    gex_Coll_BarrierBlocking(g_tm, 0);
    gasnet_exit(2);
  }
  g_peer = (g_me ^ 1u) < size ? (g_me ^ 1u) : g_me;

  gex_AM_Entry_t table[] = {
      {kPing, reinterpret_cast<gex_AM_Fn_t>(Ping),
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, nullptr, "ping"},
      {kPong, reinterpret_cast<gex_AM_Fn_t>(Pong),
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 1, nullptr, "pong"},
  };
  if (const int rc = gex_EP_RegisterHandlers(ep, table, 2); rc != GASNET_OK) {
    Fail("gex_EP_RegisterHandlers", rc);
  }
  if (leader) {
    std::printf(
        "%s: %u ranks (rank r with r^1%s), conduit %s, %s, %u CPUs; "
        "%" PRIu64 " Short round trips per thread (+%" PRIu64
        " warm-up), waiting with %s; %" PRIu64 " round(s)\n",
        kProgram, size, size % 2 ? ", the last with itself" : "",
        GASNET_CONDUIT_NAME_STR, ThreadMode(),
        static_cast<unsigned>(std::thread::hardware_concurrency()),
        opt.iterations, opt.warmup,
        opt.wait == WaitBy::kBlockUntil ? "GASNET_BLOCKUNTIL" : "gex_AM_Poll",
        opt.rounds);
    std::fflush(stdout);
  }

  // seconds[i][round], ratios[i][round] against the list's first count.
  const size_t counts = opt.threads.size();
  std::vector<std::vector<double>> seconds(counts), ratios(counts);
  for (uint64_t round = 0; round < opt.rounds; ++round) {
    for (size_t i = 0; i < counts; ++i) {
      const int t = static_cast<int>(opt.threads[i]);
      const double s = Measure(t, opt);
      if (!leader) continue;
      seconds[i].push_back(s);
      const double ratio = s / seconds[0].back();
      ratios[i].push_back(ratio);
      std::printf("  round %" PRIu64 ": T=%d: %" PRIu64
                  " round trips per rank in %.3f s (%.2f us each per "
                  "thread) = %.2fx T=%" PRIu64 "\n",
                  round, t, opt.iterations * static_cast<uint64_t>(t), s,
                  s * 1e6 / static_cast<double>(opt.iterations), ratio,
                  opt.threads[0]);
      std::fflush(stdout);
    }
  }
  // Every rank has checked its counts in each Measure.
  gex_Coll_BarrierBlocking(g_tm, 0);
  if (leader) {
    std::printf("summary (median of %" PRIu64 " round(s)):", opt.rounds);
    for (size_t i = 0; i < counts; ++i) {
      std::printf(" T=%" PRIu64 " %.3f s %.2fx;", opt.threads[i],
                  Median(seconds[i]), Median(ratios[i]));
    }
    std::printf("\ncounts exact on every rank\n");
    std::fflush(stdout);
  }
  // Rank 0 has printed before anyone leaves.
  gex_Coll_BarrierBlocking(g_tm, 0);
  gasnet_exit(0);
  return 0;
}

}  // namespace
}  // namespace gex_bench

int main(int argc, char** argv) { return gex_bench::Main(argc, argv); }
