#include "exit/signals.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <optional>

#include "absl/strings/str_format.h"
#include "base/fatal.h"
#include "base/freeze.h"
#include "base/job_rank.h"
#include "base/stderr_line.h"
#include "bootstrap/exit_signal.h"
#include "exit/graceful_exit.h"
#include "exit/protocol.h"

namespace gexrt::exit {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS,  SIGILL,
                                 SIGFPE,  SIGABRT, SIGSYS};
constexpr int kEndSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

// Lines from a signal handler: formatted on the stack, written at once.
template <typename... Args>
void Say(const absl::FormatSpec<int, Args...>& format, const Args&... args) {
  char line[256];
  absl::SNPrintF(line, sizeof line, format, JobRank(), args...);
  WriteStderrLine(line);
}

const char* SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? abbrev : "?";
}

// Ends the process by `sig` itself (its default action), so the launcher
// and shells see how it died and a core is dumped where enabled.
[[noreturn]] void DieOf(int sig, int code) {
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  _exit(code);  // A signal whose default is not fatal (none of ours).
}

void OnFatalSignal(int sig) {
  // FatalError's own abort(): the job is already being ended.
  if (sig == SIGABRT && FatalErrorInProgress()) DieOf(sig, 128 + sig);
  Say("*** Caught a fatal signal (proc %d): SIG%s(%d)", SignalName(sig), sig);
  if (BacktraceEnabled()) PrintBacktrace(STDERR_FILENO);
  FreezeForDebuggerIfEnabled();
  if (!ExitHead(128 + sig)) {
    // A crash during the exit itself: end with the code saved.
    _exit(SavedExitCode(128 + sig));
  }
  ExitBody();
  DieOf(sig, 128 + sig);
}

// What waits while the thread is inside the conduit (signals.h): the
// latest end signal, and the body of an exit a remote request or the
// launcher's decision started (OnRemoteExit: its code is taken at once).
// g_exit_deferred is set after each and cleared before they are taken,
// so none is missed.
std::atomic<int> g_deferred_end_signal{0};
std::atomic<bool> g_deferred_exit_body{false};

std::atomic<pthread_t> g_client_thread{};
std::atomic<bool> g_have_client_thread{false};

void Defer() {
  internal::g_exit_deferred.store(1, std::memory_order_release);
  // Recorded on a thread that is not the client's (signals.h): the
  // client's first thread acts on it in its nudge handler, or as it
  // leaves the conduit.
  if (!internal::tl_client_thread &&
      g_have_client_thread.load(std::memory_order_acquire)) {
    pthread_kill(g_client_thread.load(std::memory_order_relaxed), kNudgeSignal);
  }
}

void StartEndSignalExit(int sig) {
  if (ExitInProgress()) return;
  if (sig != SIGQUIT && ClientHandlesSigquit()) {
    raise(SIGQUIT);
    return;
  }
  ExitJob(128 + sig);
}

void OnEndSignal(int sig) {
  if (ExitInProgress()) return;
  if (InsideConduit()) {
    g_deferred_end_signal.store(sig, std::memory_order_relaxed);
    Defer();
    return;
  }
  StartEndSignalExit(sig);
}

// kNudgeSignal is also kExitSignal: queued by a launcher, it carries the
// job's exit decision; sent by a supernode peer (kill), the request waits
// in this rank's shared cell. Either is recorded at once (the protocol's
// atomics); the exit it starts waits while the thread is inside the
// conduit (OnRemoteExit).
void OnNudge(int, siginfo_t* info, void*) {
  Protocol* p = InstalledProtocol();
  if (p == nullptr) return;
  if (info != nullptr && info->si_code == SI_QUEUE) {
    const std::optional<ExitSignalValue> v =
        DecodeExitSignal(reinterpret_cast<uintptr_t>(info->si_value.sival_ptr));
    if (v.has_value() && v->call_query) {
      if (Bootstrap* b = InstalledBootstrap()) b->ReportCurrentCall();
      return;
    }
    if (v.has_value()) {
      p->LauncherRequest(v->initiator, v->code, v->peer_lost);
      return;
    }
  }
  p->TakeSharedRequest();
  // Also the poke of a library thread that recorded an exit (Defer).
  if (!InsideConduit()) ActOnDeferredExit();
}

void OnAlarm(int) {
  int code = SavedExitCode(1);
  if (code == 0) code = 1;
  Say("*** EXIT (proc %d): the exit did not finish within "
      "GASNET_EXITTIMEOUT; ending this process with code %d",
      code);
  _exit(code);
}

// Installs `sa` for `sig`; with `only_if_default`, only where nobody
// installed a handler yet (a client's or a sanitizer's, SA_SIGINFO ones
// included, stays).
void Install(int sig, struct sigaction& sa, bool only_if_default) {
  struct sigaction old;
  if (sigaction(sig, nullptr, &old) != 0) return;
  if (only_if_default &&
      ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL)) {
    return;
  }
  sigemptyset(&sa.sa_mask);
  sa.sa_flags |= SA_RESTART;
  sigaction(sig, &sa, nullptr);
}

void Handle(int sig, void (*handler)(int), bool only_if_default) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  Install(sig, sa, only_if_default);
}

void HandleWithInfo(int sig, void (*handler)(int, siginfo_t*, void*),
                    bool only_if_default) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO;
  Install(sig, sa, only_if_default);
}

}  // namespace

namespace internal {

std::atomic<int> g_exit_deferred{0};

void ActOnDeferredExitSlow() {
  g_exit_deferred.store(0, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // An exit already begun (its code taken) first: it ends the process.
  if (g_deferred_exit_body.exchange(false, std::memory_order_acquire)) {
    RunRemoteExitBody();
  }
  if (const int sig =
          g_deferred_end_signal.exchange(0, std::memory_order_acquire)) {
    StartEndSignalExit(sig);
  }
}

std::atomic<bool> g_exit_body_running{false};

void ParkUnlessExiting() {
  if (ThisThreadRunsExitBody()) return;
  for (;;) pause();
}

void DeferExitBody() {
  g_deferred_exit_body.store(true, std::memory_order_relaxed);
  Defer();
}

}  // namespace internal

void InstallSignalHandlers() {
  internal::tl_client_thread = true;
  g_client_thread.store(pthread_self(), std::memory_order_relaxed);
  g_have_client_thread.store(true, std::memory_order_release);
  for (int sig : kFatalSignals) Handle(sig, &OnFatalSignal, true);
  for (int sig : kEndSignals) Handle(sig, &OnEndSignal, true);
  HandleWithInfo(kNudgeSignal, &OnNudge, true);
}

bool ClientHandlesSigquit() {
  struct sigaction sa;
  if (sigaction(SIGQUIT, nullptr, &sa) != 0) return false;
  if ((sa.sa_flags & SA_SIGINFO) != 0) return true;
  return sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN &&
         sa.sa_handler != &OnEndSignal;
}

void ArmExitAlarm(absl::Duration timeout) {
  Handle(SIGALRM, &OnAlarm, false);
  struct itimerval t = {};
  const int64_t us = absl::ToInt64Microseconds(timeout);
  t.it_value.tv_sec = us / 1000000;
  t.it_value.tv_usec = us % 1000000;
  if (us <= 0) t.it_value.tv_usec = 1;
  setitimer(ITIMER_REAL, &t, nullptr);
}

void DisarmExitAlarm() {
  struct itimerval t = {};
  setitimer(ITIMER_REAL, &t, nullptr);
}

void DropLibrarySignalHandlers(std::initializer_list<const char*> libraries) {
  static constexpr int kSignals[] = {SIGSEGV, SIGBUS,  SIGILL, SIGFPE, SIGABRT,
                                     SIGSYS,  SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  for (int sig : kSignals) {
    struct sigaction now;
    if (sigaction(sig, nullptr, &now) != 0) continue;
    void* fn = (now.sa_flags & SA_SIGINFO) != 0
                   ? reinterpret_cast<void*>(now.sa_sigaction)
                   : reinterpret_cast<void*>(now.sa_handler);
    if (fn == reinterpret_cast<void*>(SIG_DFL) ||
        fn == reinterpret_cast<void*>(SIG_IGN)) {
      continue;
    }
    Dl_info where;
    if (dladdr(fn, &where) == 0 || where.dli_fname == nullptr) continue;
    for (const char* library : libraries) {
      if (strstr(where.dli_fname, library) != nullptr) {
        signal(sig, SIG_DFL);
        break;
      }
    }
  }
}

}  // namespace gexrt::exit
