#include "exit/graceful_exit.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "base/env/parse.h"
#include "base/env/settings.h"
#include "base/job_rank.h"
#include "base/pre_exit.h"
#include "base/stderr_line.h"
#include "exit/signals.h"

namespace gexrt::exit {
namespace {

constexpr int kNoCode = -1;

// The steps' windows, in nanoseconds, whatever GASNET_EXITTIMEOUT is: the
// timeout is for ranks that stop answering, and a non-collective exit must
// not wait for it (ranks that compute never join the reduce). Ranks that
// exit together join the reduce within milliseconds of each other.
constexpr int64_t kReduceWindowNs = 500'000'000;
// How long a rank waits for rank 0's election answer, and a leader for
// replies, before the fallbacks (rank 0's shared cell, the nudge, the
// launcher).
constexpr int64_t kElectWindowNs = 100'000'000;
constexpr int64_t kReplyWindowNs = 200'000'000;
// GEX_EXIT_STEP_SCALE (a debug setting, like GEX_EXIT_GROUP): the three
// windows above times this, 1 to 100 (default 1). Tests that count the
// protocol's messages set it, so that a host loaded by other jobs does not
// push a step onto its fallback and change the count.
constexpr char kStepScale[] = "GEX_EXIT_STEP_SCALE";

enum class Outcome { kReduced, kLeader, kMember, kHandedOff, kFailed };

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kReduced:
      return "reduced";
    case Outcome::kLeader:
      return "leader";
    case Outcome::kMember:
      return "member";
    case Outcome::kHandedOff:
      return "handed_off";
    case Outcome::kFailed:
      return "failed";
  }
  return "?";
}

struct State {
  Environment env;
  bool report = false;
  int64_t step_scale = 1;
  std::atomic<int> first_code{kNoCode};
  std::atomic<bool> body_claimed{false};
};

// Set once by Install; never freed (the exit paths run until _exit).
std::atomic<State*> g_state{nullptr};

void Report(const State& s, int code, Outcome outcome) {
  const Counts c = s.env.protocol->counts();
  char line[256];
  absl::SNPrintF(line, sizeof line,
                 "*** EXIT (proc %d): code=%d outcome=%s sent: reduce=%u "
                 "elect=%u elect_reply=%u exit_request=%u exit_reply=%u",
                 JobRank(), code, OutcomeName(outcome), c.sent[0], c.sent[1],
                 c.sent[2], c.sent[3], c.sent[4]);
  WriteStderrLine(line);
}

// The process's own exit (return from main, exit()): the status is the
// code. on_exit rather than atexit, so the code is known.
void OnProcessExit(int status, void*) {
  ExitHead(status);
  State* s = g_state.load();
  if (s == nullptr || s->body_claimed.load()) return;
  const int code = ExitBody();
  // The job agreed on another code (a collective exit where ranks
  // differed): that one, not this rank's own.
  if (code != (status & 0xff)) _exit(code);
}

}  // namespace

void Install(const Environment& env) {
  auto* s = new State;
  s->env = env;
  s->report = env::FlagEnabled("GEX_EXIT_REPORT");
  // Read now: the exit itself may run in a signal handler.
  s->step_scale = env::GetInt(kStepScale, 1, 1, 100);
  g_state.store(s);
  env.protocol->Join(static_cast<int32_t>(getpid()));
  env.protocol->SetLauncher(env.bootstrap);
  InstallSignalHandlers();
  on_exit(&OnProcessExit, nullptr);
  // From now on SIGTERM is a request to exit cleanly: the launcher may
  // send one when another rank dies.
  if (env.bootstrap != nullptr) env.bootstrap->ExitReady();
}

Protocol* InstalledProtocol() {
  State* s = g_state.load();
  return s != nullptr ? s->env.protocol : nullptr;
}

Bootstrap* InstalledBootstrap() {
  State* s = g_state.load();
  return s != nullptr ? s->env.bootstrap : nullptr;
}

namespace {
constinit thread_local bool tl_runs_exit_body = false;
}  // namespace

bool ThisThreadRunsExitBody() { return tl_runs_exit_body; }

bool ExitInProgress() {
  State* s = g_state.load();
  return s != nullptr && s->first_code.load() != kNoCode;
}

int SavedExitCode(int fallback) {
  State* s = g_state.load();
  const int code = s != nullptr ? s->first_code.load() : kNoCode;
  return code == kNoCode ? fallback : code;
}

bool ExitHead(int code) {
  State* s = g_state.load();
  if (s == nullptr) return true;
  int none = kNoCode;
  return s->first_code.compare_exchange_strong(none, code & 0xff);
}

int ExitBody() {
  State* s = g_state.load();
  if (s->body_claimed.exchange(true)) {
    // Another thread is exiting the process; it ends this one too.
    for (;;) pause();
  }
  tl_runs_exit_body = true;
  internal::g_exit_body_running.store(true, std::memory_order_relaxed);
  // A remote request must not start a second exit from a signal.
  signal(SIGQUIT, SIG_IGN);
  const absl::Duration timeout = s->env.timeout;
  ArmExitAlarm(timeout);
  if (s->env.disable_client_handlers != nullptr) {
    s->env.disable_client_handlers(s->env.context);
  }
  Protocol& p = *s->env.protocol;
  const int own = SavedExitCode(0);
  const int64_t start = MonotonicNanos();
  const int64_t t = absl::ToInt64Nanoseconds(timeout);
  int code = own;
  bool coordinated = false;
  Outcome outcome = Outcome::kFailed;
  const int64_t scale = s->step_scale;
  const int reduced =
      p.Reduce(own, start + std::min(t / 2, scale * kReduceWindowNs));
  if (reduced >= 0) {
    code = reduced;
    coordinated = true;
    outcome = Outcome::kReduced;
  } else {
    switch (p.Elect(own,
                    MonotonicNanos() + std::min(t / 8, scale * kElectWindowNs),
                    start + t * 3 / 4)) {
      case Role::kLeader:
        outcome = Outcome::kLeader;
        coordinated = p.Lead(
            own, MonotonicNanos() + std::min(t / 4, scale * kReplyWindowNs),
            start + t * 9 / 10);
        break;
      case Role::kMember:
        outcome = Outcome::kMember;
        coordinated = p.AwaitRequest(start + t * 9 / 10);
        break;
      case Role::kHandedOff:
        outcome = Outcome::kHandedOff;
        coordinated = p.AwaitRequest(start + t * 9 / 10);
        break;
      default:
        break;
    }
    // The leader's (or the launcher's) code is the job's; a rank that was
    // already exiting with a larger one keeps it, so an error is never
    // reported as success.
    if (p.request_received()) {
      code = std::max(own, p.request_code());
      p.SendOwedReply(start + t * 9 / 10);
    }
  }
  // An exit nobody agreed on is not a success, whatever the code said.
  if (!coordinated && code == 0) code = 1;
  if (s->report) Report(*s, code, outcome);
  // Libraries' own buffered files (trace and statistics), then stdio.
  RunPreExitHooks();
  std::fflush(nullptr);
  // A rank died: releasing the network may wait for it (a flush to a peer
  // that will never answer), and the process is ending anyway.
  if (coordinated && !p.peer_lost() && s->env.fini_network != nullptr) {
    s->env.fini_network(s->env.context);
  }
  if (coordinated && s->env.bootstrap != nullptr) s->env.bootstrap->Fini();
  DisarmExitAlarm();
  return code;
}

void ExitTail(int code) { _exit(code); }

void ExitJob(int code) {
  if (g_state.load() == nullptr) {
    // Before Install (no job to coordinate with yet): this process only.
    std::fflush(nullptr);
    ExitTail(code & 0xff);
  }
  ExitHead(code);
  ExitTail(ExitBody());
}

void OnRemoteExit(void*, Rank, int code) {
  if (!ExitHead(code)) return;
  // Inside the conduit (an exit request's handler in a poll, the nudge on
  // a thread in the conduit's work): the code is taken now, so the
  // conduit's waits see the exit under way and give up rather than wait
  // for peers that are leaving; the body runs where the conduit returns
  // to the client, or at a wait round of its outermost call (signals.h).
  if (InsideConduit()) {
    internal::DeferExitBody();
    return;
  }
  RunRemoteExitBody();
}

void RunRemoteExitBody() {
  // The client asked to hear of remote exits: its handler runs now, and if
  // it returns (it did not call gasnet_exit itself), the exit goes on.
  if (ClientHandlesSigquit()) raise(SIGQUIT);
  ExitTail(ExitBody());
}

}  // namespace gexrt::exit
