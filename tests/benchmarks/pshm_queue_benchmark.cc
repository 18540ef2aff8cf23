// The PSHM Active Message network (pshm/am_network.h) between two
// processes, against a raw cache-line ping-pong measured in the same run.
//
// Every benchmark forks a helper process (an echo server or a sink) that
// lives for that benchmark function call: the parent maps the shared
// memory, formats it, forks, and each side pins itself to its own CPU and
// builds its own view. The helper dies with the parent (PR_SET_PDEATHSIG),
// is reaped before the function returns, and a helper that dies early
// stops the whole run with a message (SIGCHLD) instead of a hang.
//
//   BM_CacheLinePingPong/1   the baseline: a counter written by the parent
//                            and echoed by the child in the same line
//   BM_CacheLinePingPong/2   ... echoed in a second line
//   BM_CacheLinePingPong/16  ... over two rings of 8 lines, the queue's
//                            layout at depth 8 with nothing else in it
//   BM_QueueRoundTrip/N      request, echo reply sent from inside the
//                            child's request handler, parent polls;
//                            N = 0: Short, 0 args; N > 0: Medium of N
//                            bytes, 0 args, echoed back in full
//   BM_QueueOneWayRate       Medium 8-byte requests flooded to a sink; the
//                            last iteration waits for the sink's count, so
//                            the drain is timed too
//
// main() first measures the one-line and the ring ping-pong, and every
// benchmark reports its time per iteration as `ratio_to_cacheline` and
// `ratio_to_rings` of them. See README.md here for how to run it and how
// to read the figures.

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/spin_wait.h"
#include "benchmark/benchmark.h"
#include "pshm/am_network.h"
#include "pshm/queue_config.h"
#include "pshm/queue_layout.h"

namespace gexrt::pshm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kPage = 4096;

// ---------------------------------------------------------------------------
// Processes and CPUs.

struct Cpus {
  int parent = -1;
  int child = -1;
  // Only one CPU to run on: every wait yields instead of spinning (the
  // figures then measure the scheduler, not the caches).
  bool shared = false;
};
Cpus g_cpus;
QueueConfig g_config;

// Measurements of a baseline: ns per round trip, and how many round trips
// each took. The baseline is their median weighted by round trips: main()
// measures first (short runs), and then every run of the same ping-pong
// as a benchmark (long runs, which outweigh the short ones, so that a
// burst of other load during main's measurement does not skew every ratio).
class Samples {
 public:
  void Add(double ns, double trips) {
    if (ns > 0 && trips > 0) samples_.push_back({ns, trips});
  }
  // 0 when there is none.
  double Median() const {
    std::vector<std::pair<double, double>> v = samples_;
    std::sort(v.begin(), v.end());
    double total = 0;
    for (const auto& [ns, trips] : v) total += trips;
    double seen = 0;
    for (const auto& [ns, trips] : v) {
      seen += trips;
      if (seen >= total / 2) return ns;
    }
    return 0;
  }

 private:
  std::vector<std::pair<double, double>> samples_;
};
// The one-line ping-pong, and the two rings (RingLines()).
Samples g_cacheline;
Samples g_rings;

Cpus ChooseCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> allowed;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) allowed.push_back(cpu);
    }
  }
  if (allowed.size() >= 2) return {allowed[0], allowed[1], false};
  if (allowed.size() == 1) return {allowed[0], allowed[0], true};
  return {-1, -1, true};
}

bool PinTo(int cpu) {
  if (cpu < 0) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// What every spin loop does between two looks (both processes, baseline
// and queue alike): a spin-wait pause, as the runtime's own waits do
// (api's WaitProgress), or a yield when they share one CPU. The pause
// matters to the queue: a side that looks again at once pulls the line
// its peer is still writing a message into back out of the peer's cache.
inline void Relax() { PoliteSpinWait(g_cpus.shared).Pause(); }

// 0 while a helper runs that must not exit yet.
volatile sig_atomic_t g_child_may_exit = 1;

void OnSigchld(int) {
  if (g_child_may_exit) return;
  static constexpr char kMessage[] =
      "pshm_queue_benchmark: the helper process died in the middle of a "
      "benchmark; stopping\n";
  ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  (void)ignored;
  _exit(70);
}

void InstallSigchldHandler() {
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnSigchld;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &action, nullptr);
}

// One forked helper. Start runs `body` in the child (pinned to the child
// CPU, killed if the parent dies) and exits with what it returns; Finish
// reaps it (killing it after a timeout); the destructor kills and reaps a
// helper not finished.
class Helper {
 public:
  Helper() = default;
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;
  ~Helper() {
    if (pid_ > 0) {
      g_child_may_exit = 1;
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  template <typename Body>
  bool Start(Body body) {
    const pid_t parent = getpid();
    std::fflush(nullptr);  // Nothing buffered is written twice.
    g_child_may_exit = 0;
    pid_ = fork();
    if (pid_ < 0) {
      g_child_may_exit = 1;
      return false;
    }
    if (pid_ == 0) {
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
        _exit(71);
      }
      if (!PinTo(g_cpus.child)) _exit(72);
      _exit(body());
    }
    return true;
  }

  // The helper may exit from now on (call before telling it to).
  void ExpectExit() { g_child_may_exit = 1; }

  // Waits up to 10 s for the helper; returns its exit status (128 + the
  // signal if it was killed).
  int Finish() {
    g_child_may_exit = 1;
    int status = 0;
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
    pid_t got;
    while ((got = waitpid(pid_, &status, WNOHANG)) == 0 &&
           Clock::now() < deadline) {
      usleep(1000);
    }
    if (got == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }

 private:
  pid_t pid_ = -1;
};

// One anonymous MAP_SHARED mapping, made before the fork.
class SharedMapping {
 public:
  explicit SharedMapping(size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    base_ = p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
  }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  ~SharedMapping() {
    if (base_ != nullptr) munmap(base_, bytes_);
  }
  unsigned char* base() const { return base_; }

 private:
  size_t bytes_;
  unsigned char* base_;
};

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

struct alignas(kCacheLine) Line {
  std::atomic<uint64_t> word[kCacheLine / sizeof(uint64_t)];
};
static_assert(sizeof(Line) == kCacheLine);

// ---------------------------------------------------------------------------
// The baselines: raw cache-line ping-pong.
//
// `lines` = 1: the parent writes word 0 of a line and the child echoes it
// in word 1 of the same line. `lines` = 2 * d (d a power of two): a ring
// of d request lines and a ring of d reply lines on different pages, the
// geometry of the queue with depth d (requests land in the child's region,
// replies in the parent's), with nothing else in the lines. Round trip n
// uses request line n mod d and reply line n mod d of the current set.
//
// What a transfer costs depends on where the line's address is homed (on
// this machine type one line in three takes ~165 ns per one-line round
// trip instead of ~118 ns), so one line would make the baseline a matter
// of luck. Instead there are kSets such sets of lines, and the ping-pong
// moves to the next set every kTripsPerSet round trips: the figure is the
// mean over 64 placements. (The queue reuses one slot for back-to-back
// round trips, so its figures carry the luck of that one line; see
// README.md.) Every round trip is still a plain ping-pong on lines the two
// sides have been passing back and forth.

constexpr uint64_t kStopWord = ~uint64_t{0};
constexpr uint64_t kSets = 64;
constexpr int kSetShift = 10;
constexpr uint64_t kTripsPerSet = uint64_t{1} << kSetShift;

// The lines of one ping-pong (in shared memory) and its two steps: the
// parent's round trip and the helper's echo. Round trip n (from 1) uses
// request line LineOf(n) and the reply line of the same index.
class RawLines {
 public:
  // Bytes of each side (pings, echoes) for `lines` (ValidLines).
  static size_t SideBytes(int lines) {
    return RoundUp(kSets * Ring(lines) * kCacheLine, kPage);
  }
  static bool ValidLines(int lines) {
    return lines == 1 ||
           (lines >= 2 && lines <= 8192 && (lines & (lines - 1)) == 0);
  }

  RawLines() = default;
  // Formats the lines at `base` (2 * SideBytes(lines), zeroed or not).
  RawLines(unsigned char* base, int lines) : ring_(Ring(lines)) {
    const size_t side = SideBytes(lines);
    for (uint64_t i = 0; i < kSets * ring_; ++i) {
      new (base + i * kCacheLine) Line{};
      new (base + side + i * kCacheLine) Line{};
    }
    ping_ = reinterpret_cast<Line*>(base);
    // One line: the echo is word 1 of the ping's line.
    echo_word_ = lines == 1 ? 1 : 0;
    echo_ = lines == 1 ? ping_ : reinterpret_cast<Line*>(base + side);
  }

  // Parent: round trip n.
  void RoundTrip(uint64_t n) const {
    const uint64_t line = LineOf(n);
    ping_[line].word[0].store(n, std::memory_order_release);
    const std::atomic<uint64_t>& reply = echo_[line].word[echo_word_];
    while (reply.load(std::memory_order_acquire) != n) Relax();
  }
  // Helper: echoes round trip n; false when told to stop instead.
  bool Echo(uint64_t n) const {
    const uint64_t line = LineOf(n);
    const std::atomic<uint64_t>& in = ping_[line].word[0];
    uint64_t v;
    while ((v = in.load(std::memory_order_acquire)) != n) {
      if (v == kStopWord) return false;
      Relax();
    }
    echo_[line].word[echo_word_].store(n, std::memory_order_release);
    return true;
  }
  // Parent: tells a helper waiting for round trip n to stop.
  void Stop(uint64_t n) const {
    ping_[LineOf(n)].word[0].store(kStopWord, std::memory_order_release);
  }

 private:
  static uint64_t Ring(int lines) {
    return static_cast<uint64_t>(std::max(lines / 2, 1));
  }
  // The line of round trip n in each side's array (ring: a power of two).
  uint64_t LineOf(uint64_t n) const {
    return ((n >> kSetShift) & (kSets - 1)) * ring_ + (n & (ring_ - 1));
  }

  uint64_t ring_ = 1;
  Line* ping_ = nullptr;
  Line* echo_ = nullptr;
  int echo_word_ = 0;
};

class PingPong {
 public:
  explicit PingPong(int lines)
      : lines_(lines), mapping_(2 * RawLines::SideBytes(lines)) {}

  bool Start() {
    if (!RawLines::ValidLines(lines_) || mapping_.base() == nullptr) {
      return false;
    }
    raw_ = RawLines(mapping_.base(), lines_);
    const RawLines raw = raw_;
    return helper_.Start([raw] {
      for (uint64_t n = 1;; ++n) {
        if (!raw.Echo(n)) return 0;
      }
    });
  }

  // One round trip.
  void RoundTrip() { raw_.RoundTrip(++count_); }

  int Stop() {
    helper_.ExpectExit();
    raw_.Stop(count_ + 1);
    return helper_.Finish();
  }

 private:
  const int lines_;
  SharedMapping mapping_;
  Helper helper_;
  RawLines raw_;
  uint64_t count_ = 0;
};

// ---------------------------------------------------------------------------
// The queue: two ranks, the parent (index 0) and the helper (index 1).

enum Handler : uint8_t {
  kPing = 1,  // Request: echo it back as a kPong reply.
  kPong,      // Reply.
  kSink,      // Request: count it.
  kFlush,     // Request: reply kFlushAck with the count.
  kFlushAck,  // Reply.
  kStop,      // Request: the helper leaves its loop.
  kRawBurst,  // Request: echo args[0] | args[1] << 32 raw round trips.
};

// One process's handler state.
struct Context {
  AmNetwork* net = nullptr;
  // Parent.
  uint64_t replies = 0;
  size_t expect_len = 0;
  bool acked = false;
  uint64_t ack_count = 0;
  uint64_t ack_bad = 0;
  // Helper.
  uint64_t sunk = 0;
  uint64_t burst = 0;  // Raw round trips still to echo.
  bool stop = false;
  // Both: messages that were not what was sent.
  uint64_t bad = 0;
};

// Passed for `args` when there are none: Commit's memcpy of zero
// arguments from a null pointer draws GCC's -Wnonnull at -O2.
constexpr uint32_t kNoArgs[1] = {0};

uint64_t Load64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

void Dispatch(void* context, const Message& m) {
  Context& c = *static_cast<Context*>(context);
  switch (m.handler) {
    case kPing:
      // The reply goes out from inside the request handler, from the
      // request's own payload (valid until the handler returns). (The
      // category is spelled out: with a run-time category GCC's -Wnonnull
      // sees the Long branch of Send copy to a null long_local.)
      if (m.category == Category::kShort) {
        c.net->SendReply(*m.reply, Category::kShort, kPong, m.args, m.nargs,
                         nullptr, 0, nullptr, 0,
                         /*immediate=*/false);
      } else {
        c.net->SendReply(*m.reply, Category::kMedium, kPong, m.args, m.nargs,
                         m.payload, m.payload_len, nullptr, 0,
                         /*immediate=*/false);
      }
      return;
    case kPong:
      ++c.replies;
      // The first 8 bytes of a Medium carry the round trip's number.
      if (m.payload_len != c.expect_len ||
          (m.payload_len >= 8 && Load64(m.payload) != c.replies)) {
        ++c.bad;
      }
      return;
    case kSink:
      if (m.payload_len < 8 || Load64(m.payload) != c.sunk) ++c.bad;
      ++c.sunk;
      return;
    case kFlush: {
      const uint32_t args[4] = {
          static_cast<uint32_t>(c.sunk), static_cast<uint32_t>(c.sunk >> 32),
          static_cast<uint32_t>(c.bad), static_cast<uint32_t>(c.bad >> 32)};
      c.net->SendReply(*m.reply, Category::kShort, kFlushAck, args, 4, nullptr,
                       0, nullptr, 0, false);
      return;
    }
    case kFlushAck:
      c.ack_count = m.args[0] | uint64_t{m.args[1]} << 32;
      c.ack_bad = m.args[2] | uint64_t{m.args[3]} << 32;
      c.acked = true;
      return;
    case kStop:
      c.stop = true;
      return;
    case kRawBurst:
      c.burst = m.args[0] | uint64_t{m.args[1]} << 32;
      return;
    default:
      ++c.bad;
      return;
  }
}

class QueuePair {
 public:
  QueuePair()
      : region_bytes_(RoundUp(AmNetwork::RegionBytes(g_config, 2), kPage)),
        mapping_(kPage + 2 * region_bytes_ + 2 * RawLines::SideBytes(1)) {}

  bool Start() {
    if (mapping_.base() == nullptr) return false;
    ready_ = new (mapping_.base()) Line{};
    void* r0 = mapping_.base() + kPage;
    void* r1 = mapping_.base() + kPage + region_bytes_;
    AmNetwork::FormatRegion(r0, g_config, 2, 0);
    AmNetwork::FormatRegion(r1, g_config, 2, 1);
    raw_ = RawLines(mapping_.base() + kPage + 2 * region_bytes_, 1);
    std::atomic<uint64_t>* ready = &ready_->word[0];
    const RawLines raw = raw_;
    if (!helper_.Start([r0, r1, ready, raw] {
          Context ctx;
          AmNetwork net(Options(1, r0, r1, &ctx));
          ctx.net = &net;
          ready->store(1, std::memory_order_release);
          uint64_t echoed = 0;
          while (!ctx.stop) {
            if (net.Poll() == 0) Relax();
            // A burst of the one-line baseline, between two messages.
            for (; ctx.burst != 0; --ctx.burst) {
              if (!raw.Echo(++echoed)) return 3;
            }
          }
          return ctx.bad == 0 ? 0 : 2;
        })) {
      return false;
    }
    net_ = std::make_unique<AmNetwork>(Options(0, r0, r1, &ctx_));
    ctx_.net = net_.get();
    while (ready->load(std::memory_order_acquire) == 0) Relax();
    return true;
  }

  AmNetwork& net() { return *net_; }
  Context& ctx() { return ctx_; }

  // One echo round trip of `len` bytes (0: a Short) from `buf`.
  void RoundTrip(void* buf, size_t len) {
    const uint64_t want = ctx_.replies + 1;
    if (len != 0) {
      if (len >= 8) std::memcpy(buf, &want, sizeof(want));
      net_->SendRequest(1, Category::kMedium, kPing, kNoArgs, 0, buf, len,
                        nullptr, 0, /*immediate=*/false);
    } else {
      net_->SendRequest(1, Category::kShort, kPing, kNoArgs, 0, nullptr, 0,
                        nullptr, 0, /*immediate=*/false);
    }
    while (ctx_.replies != want) {
      if (net_->Poll() == 0) Relax();
    }
  }

  // `trips` round trips of the one-line ping-pong with the same helper
  // (it runs them between two polls); returns their seconds. The first
  // round trip, which waits for the helper to take the request, is not
  // timed.
  double RawBurst(uint64_t trips) {
    const uint64_t echoes = trips + 1;
    const uint32_t args[2] = {static_cast<uint32_t>(echoes),
                              static_cast<uint32_t>(echoes >> 32)};
    net_->SendRequest(1, Category::kShort, kRawBurst, args, 2, nullptr, 0,
                      nullptr, 0, /*immediate=*/false);
    raw_.RoundTrip(++raw_count_);
    const Clock::time_point t0 = Clock::now();
    for (uint64_t i = 0; i < trips; ++i) raw_.RoundTrip(++raw_count_);
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  // Waits until the helper has run every request sent before; returns its
  // count of kSink messages.
  uint64_t Flush() {
    ctx_.acked = false;
    net_->SendRequest(1, Category::kShort, kFlush, kNoArgs, 0, nullptr, 0,
                      nullptr, 0, false);
    while (!ctx_.acked) {
      if (net_->Poll() == 0) Relax();
    }
    return ctx_.ack_count;
  }

  // Stops the helper; returns its exit status (0: it saw nothing wrong).
  int Stop() {
    helper_.ExpectExit();
    net_->SendRequest(1, Category::kShort, kStop, kNoArgs, 0, nullptr, 0,
                      nullptr, 0, false);
    return helper_.Finish();
  }

 private:
  static AmNetwork::Options Options(uint32_t index, void* r0, void* r1,
                                    Context* ctx) {
    AmNetwork::Options o;
    o.my_index = index;
    o.ranks = {0, 1};
    o.regions = {r0, r1};
    o.dispatcher = &Dispatch;
    o.context = ctx;
    o.thread_safe = false;
    o.polite = g_cpus.shared;
    return o;
  }

  size_t region_bytes_;
  SharedMapping mapping_;
  Helper helper_;
  Line* ready_ = nullptr;
  RawLines raw_;
  uint64_t raw_count_ = 0;
  Context ctx_;
  std::unique_ptr<AmNetwork> net_;
};

// Untimed warm-up: at least `count` calls, but no more than 100 ms of
// them (a loaded machine must not make the smoke test slow).
template <typename F>
void WarmUp(uint64_t count, F f) {
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(100);
  for (uint64_t i = 0; i < count; ++i) {
    f();
    if ((i & 255) == 255 && Clock::now() > deadline) break;
  }
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The ratios of this run's time per iteration to the baselines.
void SetRatios(benchmark::State& state, double seconds) {
  if (state.iterations() == 0) return;
  const double ns = seconds * 1e9 / static_cast<double>(state.iterations());
  if (const double base = g_cacheline.Median(); base > 0) {
    state.counters["ratio_to_cacheline"] = ns / base;
  }
  if (const double base = g_rings.Median(); base > 0) {
    state.counters["ratio_to_rings"] = ns / base;
  }
}

// The lines of the ring baseline for this queue depth: two rings of the
// queue's RingSlots(depth) slots (0 when too many to measure).
int RingLines() {
  const uint32_t slots = layout::RingSlots(g_config.depth);
  return slots <= 4096 ? static_cast<int>(2 * slots) : 0;
}

// ---------------------------------------------------------------------------
// The benchmarks.

void BM_CacheLinePingPong(benchmark::State& state) {
  const int lines = static_cast<int>(state.range(0));
  PingPong pp(lines);
  if (!pp.Start()) {
    state.SkipWithError("could not map shared memory or fork");
    return;
  }
  WarmUp(10000, [&] { pp.RoundTrip(); });
  const Clock::time_point t0 = Clock::now();
  for (auto _ : state) pp.RoundTrip();
  const Clock::time_point t1 = Clock::now();
  if (const int rc = pp.Stop(); rc != 0) {
    state.SkipWithError(absl::StrFormat("helper exit %d", rc).c_str());
    return;
  }
  state.SetLabel(lines == 1 ? "ping and echo in one line"
                 : lines == 2
                     ? "ping line and echo line"
                     : absl::StrFormat("two rings of %d lines", lines / 2));
  const double trips = static_cast<double>(state.iterations());
  const double ns = Seconds(t1 - t0) * 1e9 / trips;
  if (lines == 1) {
    g_cacheline.Add(ns, trips);
  } else if (lines == RingLines()) {
    g_rings.Add(ns, trips);
  }
  SetRatios(state, Seconds(t1 - t0));
}
BENCHMARK(BM_CacheLinePingPong)->Arg(1)->Arg(2)->Arg(16)->UseRealTime();

// Stops an echo helper; false, with the run marked as skipped, when the
// helper or the replies it sent were wrong.
bool StopEcho(QueuePair& q, benchmark::State& state) {
  const uint64_t bad = q.ctx().bad;
  if (const int rc = q.Stop(); rc != 0 || bad != 0) {
    state.SkipWithError(
        absl::StrFormat("echo wrong: helper exit %d, %u bad replies", rc, bad)
            .c_str());
    return false;
  }
  return true;
}

void BM_QueueRoundTrip(benchmark::State& state) {
  const size_t len = static_cast<size_t>(state.range(0));
  QueuePair q;
  if (!q.Start()) {
    state.SkipWithError("could not map shared memory or fork");
    return;
  }
  q.ctx().expect_len = len;
  std::vector<unsigned char> buf(std::max<size_t>(len, 8), 0x5a);
  // Warm up past two laps of the payload pools (a pool chunk is reused
  // only when the ring wraps).
  const size_t body = layout::BodyBytes(
      len == 0 ? Category::kShort : Category::kMedium, 0, len);
  const bool inline_body = body <= layout::kInlineBytes;
  const uint64_t laps =
      inline_body ? 0 : 2 * g_config.memory / layout::ChunkBytes(body);
  WarmUp(std::max<uint64_t>(2000, laps + 16),
         [&] { q.RoundTrip(buf.data(), len); });

  const Clock::time_point t0 = Clock::now();
  for (auto _ : state) q.RoundTrip(buf.data(), len);
  const Clock::time_point t1 = Clock::now();

  if (!StopEcho(q, state)) return;
  state.SetLabel(len == 0
                     ? "Short, inline"
                     : absl::StrFormat("Medium %u B, %s", len,
                                       inline_body ? "inline" : "pool chunk"));
  if (len != 0) {
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 *
                            static_cast<int64_t>(len));
  }
  SetRatios(state, Seconds(t1 - t0));
}
BENCHMARK(BM_QueueRoundTrip)
    ->Arg(0)
    ->Arg(8)
    ->Arg(48)
    ->Arg(64)
    ->Arg(256)
    ->Arg(1024)
    ->Arg(4096)
    ->Arg(65536)
    ->UseRealTime();

// The round trip and the one-line baseline in alternating bursts with the
// same helper: what each pair of bursts measures shares the machine's
// state of the moment (on a virtual machine, where the two CPUs sit and
// what else runs), so the ratio holds even when the absolute figures
// move between runs.
void BM_QueueVsCacheLine(benchmark::State& state) {
  constexpr uint64_t kBurst = 512;
  const size_t len = static_cast<size_t>(state.range(0));
  QueuePair q;
  if (!q.Start()) {
    state.SkipWithError("could not map shared memory or fork");
    return;
  }
  q.ctx().expect_len = len;
  std::vector<unsigned char> buf(std::max<size_t>(len, 8), 0x5a);
  WarmUp(2000, [&] { q.RoundTrip(buf.data(), len); });
  q.RawBurst(kBurst);
  std::vector<double> raw_ns, queue_ns, ratios;
  for (auto _ : state) {
    const double raw = q.RawBurst(kBurst) * 1e9 / kBurst;
    const Clock::time_point t0 = Clock::now();
    for (uint64_t i = 0; i < kBurst; ++i) q.RoundTrip(buf.data(), len);
    const double seconds = Seconds(Clock::now() - t0);
    const double queue = seconds * 1e9 / kBurst;
    state.SetIterationTime(seconds);
    raw_ns.push_back(raw);
    queue_ns.push_back(queue);
    ratios.push_back(queue / raw);
  }
  if (!StopEcho(q, state)) return;
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  state.counters["queue_ns"] = median(queue_ns);
  state.counters["cacheline_ns"] = median(raw_ns);
  state.counters["ratio"] = median(ratios);
  state.SetLabel(absl::StrFormat(
      "%s; Time per burst of %u round trips, each after as many of the "
      "one-line ping-pong; *_ns and ratio: medians over the bursts",
      len == 0 ? "Short" : absl::StrFormat("Medium %u B", len), kBurst));
}
BENCHMARK(BM_QueueVsCacheLine)->Arg(0)->Arg(8)->UseManualTime();

// The software path alone: one process, one rank, requests to itself (the
// loopback queue), so no line ever leaves the CPU. A round trip is the
// send, one Poll that runs the request handler (which replies into the
// slot) and one that runs the reply: what the queue adds to the transfers
// a cross-process round trip pays for. Also the cost of a Poll that finds
// nothing (two peers, neither sending), which sets how soon a spinning
// rank notices a message.
class Loopback {
 public:
  explicit Loopback(uint32_t peers)
      : bytes_(RoundUp(AmNetwork::RegionBytes(g_config, peers), kPage)),
        mapping_(peers * bytes_) {}
  bool Start(uint32_t peers) {
    if (mapping_.base() == nullptr) return false;
    AmNetwork::Options o;
    for (uint32_t i = 0; i < peers; ++i) {
      void* region = mapping_.base() + i * bytes_;
      AmNetwork::FormatRegion(region, g_config, peers, i);
      o.regions.push_back(region);
      o.ranks.push_back(i);
    }
    o.my_index = 0;
    o.dispatcher = &Dispatch;
    o.context = &ctx_;
    net_ = std::make_unique<AmNetwork>(o);
    ctx_.net = net_.get();
    return true;
  }
  AmNetwork& net() { return *net_; }
  Context& ctx() { return ctx_; }

 private:
  size_t bytes_;
  SharedMapping mapping_;
  Context ctx_;
  std::unique_ptr<AmNetwork> net_;
};

void BM_LoopbackRoundTrip(benchmark::State& state) {
  const size_t len = static_cast<size_t>(state.range(0));
  Loopback l(1);
  if (!l.Start(1)) {
    state.SkipWithError("could not map shared memory");
    return;
  }
  l.ctx().expect_len = len;
  unsigned char buf[8] = {};
  AmNetwork& net = l.net();
  Context& ctx = l.ctx();
  for (auto _ : state) {
    const uint64_t want = ctx.replies + 1;
    if (len != 0) {
      std::memcpy(buf, &want, sizeof(want));
      net.SendRequest(0, Category::kMedium, kPing, kNoArgs, 0, buf, len,
                      nullptr, 0, /*immediate=*/false);
    } else {
      net.SendRequest(0, Category::kShort, kPing, kNoArgs, 0, nullptr, 0,
                      nullptr, 0, /*immediate=*/false);
    }
    while (ctx.replies != want) net.Poll();
  }
  if (ctx.bad != 0) state.SkipWithError("a reply was not what was sent");
  state.SetLabel(len == 0 ? "Short, one process"
                          : absl::StrFormat("Medium %u B, one process", len));
}
BENCHMARK(BM_LoopbackRoundTrip)->Arg(0)->Arg(8);

void BM_EmptyPoll(benchmark::State& state) {
  Loopback l(2);
  if (!l.Start(2)) {
    state.SkipWithError("could not map shared memory");
    return;
  }
  AmNetwork& net = l.net();
  int delivered = 0;
  for (auto _ : state) delivered += net.Poll();
  if (delivered != 0) state.SkipWithError("an empty network delivered");
  state.SetLabel("2 peers, nothing to deliver");
}
BENCHMARK(BM_EmptyPoll);

void BM_QueueOneWayRate(benchmark::State& state) {
  constexpr size_t kLen = 8;
  QueuePair q;
  if (!q.Start()) {
    state.SkipWithError("could not map shared memory or fork");
    return;
  }
  AmNetwork& net = q.net();
  alignas(8) unsigned char buf[kLen] = {};
  uint64_t seq = 0;
  auto send = [&] {
    std::memcpy(buf, &seq, sizeof(seq));
    ++seq;
    net.SendRequest(1, Category::kMedium, kSink, kNoArgs, 0, buf, kLen, nullptr,
                    0, /*immediate=*/false);
  };
  WarmUp(10000, send);
  if (q.Flush() != seq) {
    state.SkipWithError("the sink lost messages in the warm-up");
    q.Stop();
    return;
  }
  const uint64_t waits0 = net.waits();
  const benchmark::IterationCount n = state.max_iterations;
  benchmark::IterationCount i = 0;
  uint64_t counted = 0;
  for (auto _ : state) {
    send();
    // The last message is timed until the sink has run it.
    if (++i == n) counted = q.Flush();
  }
  const uint64_t waits = net.waits() - waits0;
  const uint64_t bad = q.ctx().ack_bad;
  if (const int rc = q.Stop(); rc != 0 || counted != seq || bad != 0) {
    state.SkipWithError(
        absl::StrFormat("sink wrong: helper exit %d, counted %u of %u, %u out "
                        "of order",
                        rc, counted, seq, bad)
            .c_str());
    return;
  }
  state.SetLabel("Medium 8 B, inline");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["msgs_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  // Rounds of waiting for a free slot, per message.
  state.counters["full_waits"] = benchmark::Counter(
      static_cast<double>(waits), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_QueueOneWayRate)->UseRealTime();

// A baseline: the median of 3 helpers x 3 runs, each helper on a fresh
// mapping, each run one pass over all the sets of lines.
struct Baseline {
  double median = 0, min = 0, max = 0;
};
Baseline MeasureBaseline(int lines, Samples* samples) {
  constexpr int kHelpers = 3, kRuns = 3;
  constexpr uint64_t kTrips = kSets * kTripsPerSet;
  std::vector<double> ns;
  for (int h = 0; h < kHelpers; ++h) {
    PingPong pp(lines);
    if (!pp.Start()) return {};
    WarmUp(20000, [&] { pp.RoundTrip(); });
    for (int r = 0; r < kRuns; ++r) {
      const Clock::time_point t0 = Clock::now();
      for (uint64_t i = 0; i < kTrips; ++i) pp.RoundTrip();
      ns.push_back(Seconds(Clock::now() - t0) * 1e9 / kTrips);
      samples->Add(ns.back(), kTrips);
    }
    if (pp.Stop() != 0) return {};
  }
  std::sort(ns.begin(), ns.end());
  return {ns[ns.size() / 2], ns.front(), ns.back()};
}

std::string Describe(const Baseline& b, std::string_view what) {
  if (b.median <= 0) return "not measured";
  return absl::StrFormat(
      "%.1f ns measured first (%s; median of 3 x 3 x %u round trips, min "
      "%.1f, max %.1f); each ratio uses the median, weighted by round "
      "trips, of this and of the runs of that benchmark so far",
      b.median, what, kSets * kTripsPerSet, b.min, b.max);
}

bool HasFlag(int argc, char** argv, std::string_view flag) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.substr(0, flag.size()) == flag &&
        (arg.size() == flag.size() || arg[flag.size()] == '=')) {
      return arg.size() == flag.size() || arg.substr(flag.size()) != "=false";
    }
  }
  return false;
}

}  // namespace
}  // namespace gexrt::pshm

int main(int argc, char** argv) {
  using namespace gexrt::pshm;  // NOLINT
  const bool listing = HasFlag(argc, argv, "--benchmark_list_tests");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  absl::StatusOr<QueueConfig> config = QueueConfigFromEnv();
  if (!config.ok()) {
    std::fprintf(stderr, "pshm_queue_benchmark: %s\n",
                 std::string(config.status().message()).c_str());
    return 1;
  }
  g_config = *config;
  g_cpus = ChooseCpus();
  if (!PinTo(g_cpus.parent)) {
    std::perror("pshm_queue_benchmark: sched_setaffinity");
    return 1;
  }
  InstallSigchldHandler();

  benchmark::AddCustomContext(
      "pshm_cpus",
      g_cpus.shared
          ? absl::StrFormat("parent and helper share CPU %d (waits yield)",
                            g_cpus.parent)
          : absl::StrFormat("parent on CPU %d, helper on CPU %d", g_cpus.parent,
                            g_cpus.child));
  benchmark::AddCustomContext("pshm_queue",
                              absl::StrFormat("GASNET_PSHMNET_QUEUE_DEPTH=%u "
                                              "GASNET_PSHMNET_QUEUE_MEMORY=%u",
                                              g_config.depth, g_config.memory));
  if (!listing) {
    const Baseline one = MeasureBaseline(1, &g_cacheline);
    benchmark::AddCustomContext(
        "ratio_to_cacheline",
        Describe(one, "one line, as BM_CacheLinePingPong/1"));
    if (const int lines = RingLines(); lines != 0) {
      const Baseline rings = MeasureBaseline(lines, &g_rings);
      benchmark::AddCustomContext(
          "ratio_to_rings",
          Describe(rings, absl::StrFormat("two rings of %d lines, as "
                                          "BM_CacheLinePingPong/%d",
                                          lines / 2, lines)));
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
