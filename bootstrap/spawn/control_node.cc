#include "bootstrap/spawn/control_node.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "base/stderr_line.h"
#include "bootstrap/exit_signal.h"
#include "bootstrap/launcher_bootstrap.h"
#include "bootstrap/spawn/job_secret.h"
#include "bootstrap/wire.h"

namespace gexrt::spawn {
namespace {

// After the job has been killed, how long stragglers (remote shells,
// pipes held open by the ranks' own children) may take before this node
// stops waiting for them.
constexpr absl::Duration kKillGrace = absl::Seconds(5);
// Output still arriving after every process has been reaped.
constexpr absl::Duration kDrainGrace = absl::Seconds(2);
// Beyond GASNET_EXITTIMEOUT, before ranks still running after the first
// one ended are killed: a rank told to exit at that moment bounds its own
// exit by the timeout (exit/), and should be the one to end it.
constexpr absl::Duration kExitKillGrace = absl::Seconds(1);

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// "unexpected abort message", or for a type byte this build does not know
// "unexpected message of unknown type 37".
std::string UnexpectedMessage(std::string_view body) {
  const wire::MessageType type = wire::TypeOf(body);
  const std::string_view name = wire::MessageTypeName(type);
  // MessageTypeName's answer for a type byte it has no name for.
  if (name == "unknown message") {
    return absl::StrFormat("unexpected message of unknown type %d",
                           static_cast<uint8_t>(type));
  }
  return absl::StrFormat("unexpected %s message", name);
}

std::string Ranks(const std::vector<Rank>& ranks) {
  if (ranks.empty()) return "no ranks";
  if (ranks.size() == 1) return absl::StrFormat("rank %d", ranks[0]);
  return absl::StrFormat("ranks %d-%d", ranks.front(), ranks.back());
}

}  // namespace

struct ControlNode::Source {
  int fd = -1;
  bool is_stderr = false;
};

struct ControlNode::LocalRank {
  Rank rank = 0;
  pid_t pid = -1;
  int control_fd = -1;
  wire::FrameAssembler assembler;
  bool reaped = false;
};

struct ControlNode::AgentChild {
  AgentLaunch launch;
  pid_t pid = -1;  // the remote shell
  bool reaped = false;
  int status = 0;
  int conn_fd = -1;
  bool connected = false;
  bool closed = false;  // connection ended (or never will start)
  bool lost = false;    // reported as lost: ignore what it says afterwards
  wire::FrameAssembler assembler;
};

ControlNode::ControlNode(ControlNodeOptions options)
    : options_(std::move(options)),
      // A closed stdout is noticed here (ReadOutput), not by the
      // forwarder ending the process: the job must still be ended and
      // reaped first.
      stdout_(1, 64 * 1024, BrokenPipe::kDrop),
      stderr_(2, 64 * 1024, BrokenPipe::kDrop),
      rank_fini_(options_.job_size, false),
      exit_ready_(options_.job_size, false),
      rank_exited_(options_.job_size, false) {}

ControlNode::~ControlNode() {
  for (auto& s : sources_) {
    if (s->fd >= 0) close(s->fd);
  }
  for (auto& l : locals_) {
    if (l->control_fd >= 0) close(l->control_fd);
  }
  for (auto& a : agents_) {
    if (a->conn_fd >= 0) close(a->conn_fd);
  }
  if (stdin_pipe_ >= 0) close(stdin_pipe_);
  if (signal_fd_ >= 0) close(signal_fd_);
}

void ControlNode::Say(const std::string& message) const {
  WriteStderrLine(absl::StrFormat("%s: %s", options_.name, message));
}

void ControlNode::Verbose(const std::string& message) const {
  if (options_.verbose) Say(message);
}

absl::Status ControlNode::Init() {
  if (options_.cleanup != nullptr && !options_.job_id.empty()) {
    absl::StatusOr<CleanupGuard> guard =
        CleanupGuard::Start(options_.cleanup, options_.job_id, options_.name);
    if (!guard.ok()) return guard.status();
    guard_ = std::move(*guard);
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int sig : kForwardedSignals) sigaddset(&set, sig);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) {
    return ErrnoToStatus(errno, "sigprocmask");
  }
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) return ErrnoToStatus(errno, "signalfd");
  // Writes to a closed socket or pipe must fail with EPIPE where they
  // happen (a lost agent, a rank's dead control channel), not kill the
  // launcher. A closed stdout is the one exception, and the line forwarder
  // decides it (it ends the launcher by SIGPIPE on purpose).
  signal(SIGPIPE, SIG_IGN);
  // Whatever the ranks start and leave behind is re-parented here rather
  // than to init, so the launcher sees it, kills it, and reaps it before it
  // exits: no process of the job outlives the launcher.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  return absl::OkStatus();
}

absl::Status ControlNode::StartLocalRanks(
    Rank first, Rank count, const std::vector<std::string>& argv) {
  int persona = -1;
  if (options_.same_layout && count > 0) {
    absl::StatusOr<std::optional<int>> same = SameLayoutPersona();
    if (same.ok()) {
      persona = same->value_or(-1);
    } else {
      // Once per launcher (ranks are started once), on the launcher's stderr.
      WriteStderrLine(absl::StrFormat("%s: WARNING: %s", options_.name,
                                      same.status().message()));
    }
  }
  for (Rank r = first; r < first + count; ++r) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return ErrnoToStatus(errno, "socketpair for a rank's control channel");
    }
    ChildSpec spec;
    spec.name = options_.name;
    spec.argv = argv;
    spec.env = options_.rank_env;
    spec.env.push_back(absl::StrFormat("%s=%d", kBootstrapFdVar, sv[1]));
    spec.env.push_back(absl::StrFormat("%s=%d", kBootstrapRankVar, r));
    spec.env.push_back(
        absl::StrFormat("%s=%d", kBootstrapSizeVar, options_.job_size));
    if (!options_.job_id.empty()) {
      spec.env.push_back(absl::StrFormat("GEX_JOB_ID=%s", options_.job_id));
    }
    spec.stdin_fd = (r == 0) ? 0 : -1;
    spec.inherit_fd = sv[1];
    spec.process_group = process_group_;
    spec.persona = persona;
    absl::StatusOr<Child> child = StartChild(spec);
    close(sv[1]);
    if (!child.ok()) {
      close(sv[0]);
      return child.status();
    }
    if (process_group_ == 0) process_group_ = child->pid;
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    auto local = std::make_unique<LocalRank>();
    local->rank = r;
    local->pid = child->pid;
    local->control_fd = sv[0];
    guard_.Watch(child->pid);
    local_by_pid_[child->pid] = locals_.size();
    locals_.push_back(std::move(local));
    sources_.push_back(
        std::make_unique<Source>(Source{child->stdout_fd, false}));
    sources_.push_back(
        std::make_unique<Source>(Source{child->stderr_fd, true}));
    Verbose(absl::StrFormat("started rank %d (pid %d)", r, child->pid));
  }
  return absl::OkStatus();
}

absl::Status ControlNode::StartAgents(std::vector<AgentLaunch> agents,
                                      int listen_fd, uint64_t token) {
  ControlListener::Options listen_options;
  listen_options.token = token;
  listen_options.log = [this](const std::string& m) { Verbose(m); };
  listener_ = ControlListener(listen_fd, std::move(listen_options));
  const std::string token_line = TokenLine(token);
  for (AgentLaunch& launch : agents) {
    // The token goes in before the remote shell starts: it is the first
    // line the agent reads from its stdin (an empty pipe takes 17 bytes
    // without blocking).
    int in[2];
    if (pipe2(in, O_CLOEXEC) != 0) {
      return ErrnoToStatus(errno, "pipe for an agent's stdin");
    }
    if (write(in[1], token_line.data(), token_line.size()) !=
        static_cast<ssize_t>(token_line.size())) {
      const int e = errno;
      close(in[0]);
      close(in[1]);
      return ErrnoToStatus(e, "writing the job token to an agent's stdin");
    }
    ChildSpec spec;
    spec.name = options_.name;
    spec.argv = launch.argv;
    spec.stdin_fd = in[0];
    spec.process_group = 0;
    absl::StatusOr<Child> child = StartChild(spec);
    close(in[0]);
    if (!child.ok()) {
      close(in[1]);
      return child.status();
    }
    if (launch.gets_stdin && stdin_pipe_ < 0) {
      fcntl(in[1], F_SETFL, O_NONBLOCK);
      stdin_pipe_ = in[1];
    } else {
      close(in[1]);
    }
    auto agent = std::make_unique<AgentChild>();
    agent->launch = std::move(launch);
    agent->pid = child->pid;
    Verbose(absl::StrFormat("starting %s on host %s (pid %d)",
                            Ranks(agent->launch.ranks), agent->launch.host,
                            child->pid));
    agent_by_pid_[child->pid] = agents_.size();
    agents_.push_back(std::move(agent));
    sources_.push_back(
        std::make_unique<Source>(Source{child->stdout_fd, false}));
    sources_.push_back(
        std::make_unique<Source>(Source{child->stderr_fd, true}));
  }
  connect_deadline_ = absl::Now() + options_.bootstrap_timeout;
  return absl::OkStatus();
}

void ControlNode::ReadStdin() {
  char buf[65536];
  // One read per wakeup: stdin may be a blocking descriptor shared with
  // other processes, so it is never switched to non-blocking, and poll
  // said a read will not block.
  const ssize_t k = read(0, buf, sizeof buf);
  if (k > 0) {
    stdin_buffer_.append(buf, static_cast<size_t>(k));
    return;
  }
  if (k < 0 && (errno == EINTR || errno == EAGAIN)) return;
  stdin_eof_ = true;  // end of input, or no usable stdin at all
  if (stdin_buffer_.empty()) StopStdin();
}

void ControlNode::WriteStdin() {
  while (!stdin_buffer_.empty()) {
    const ssize_t k =
        write(stdin_pipe_, stdin_buffer_.data(), stdin_buffer_.size());
    if (k > 0) {
      stdin_buffer_.erase(0, static_cast<size_t>(k));
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) return;
    // The remote shell stopped reading (it ended): the rest has nowhere
    // to go.
    StopStdin();
    return;
  }
  if (stdin_eof_) StopStdin();
}

void ControlNode::StopStdin() {
  if (stdin_pipe_ >= 0) close(stdin_pipe_);
  stdin_pipe_ = -1;
  stdin_buffer_.clear();
}

void ControlNode::SendToChild(size_t child, const std::string& frame) {
  const absl::Time deadline = absl::Now() + options_.bootstrap_timeout;
  if (child < locals_.size()) {
    LocalRank& l = *locals_[child];
    // A rank that has gone cannot read; its exit is handled elsewhere.
    if (l.control_fd >= 0)
      (void)wire::WriteFrame(l.control_fd, frame, deadline);
    return;
  }
  AgentChild& a = *agents_[child - locals_.size()];
  if (a.conn_fd >= 0) (void)wire::WriteFrame(a.conn_fd, frame, deadline);
}

void ControlNode::SendToParent(const std::string& frame) {
  if (options_.parent_fd < 0 || parent_gone_) return;
  absl::Status s = wire::WriteFrame(options_.parent_fd, frame,
                                    absl::Now() + options_.bootstrap_timeout);
  if (!s.ok()) {
    parent_gone_ = true;
    Say(
        absl::StrFormat("lost the parent launcher (%s); ending this host's "
                        "ranks",
                        s.message()));
    KillAll(SIGKILL);
  }
}

void ControlNode::SetJobCode(int code) {
  if (job_code_ == 0 && code != 0) job_code_ = code;
}

void ControlNode::NoteFirstExit(absl::Time now) {
  if (!exit_deadline_.has_value()) {
    exit_deadline_ = now + options_.exit_timeout + kExitKillGrace;
  }
}

void ControlNode::KillAll(int sig) {
  if (killed_with_ == SIGKILL) return;
  killed_with_ = sig;
  bool any_local = false;
  for (auto& l : locals_) {
    if (!l->reaped) {
      kill(l->pid, sig);
      any_local = true;
    }
  }
  // The group also holds whatever the ranks started themselves.
  if (any_local && process_group_ > 0) kill(-process_group_, sig);
  const std::string frame = wire::Encode(wire::Kill{sig});
  for (auto& a : agents_) {
    if (a->conn_fd >= 0) {
      (void)wire::WriteFrame(a->conn_fd, frame, absl::Now() + absl::Seconds(1));
    } else if (!a->reaped) {
      kill(a->pid, sig);
    }
  }
  if (sig == SIGKILL) kill_deadline_ = absl::Now() + kKillGrace;
}

void ControlNode::HandleFini(Rank rank) {
  if (rank >= options_.job_size) return;
  if (!options_.is_root) SendToParent(wire::Encode(wire::Fini{rank}));
  rank_fini_[rank] = true;
  relay_->OnRankGone(rank, "left the job (Bootstrap::Fini)");
}

void ControlNode::HandleAbort(const wire::Abort& abort) {
  if (!options_.is_root) {
    SendToParent(wire::Encode(abort));
    return;
  }
  if (!job_failing_ || options_.verbose) {
    Say(absl::StrFormat("rank %d ended the job with exit code %d: %s",
                        abort.rank, abort.exit_code, abort.reason));
  }
  SetJobCode(abort.exit_code != 0 ? abort.exit_code : 1);
  job_failing_ = true;
  KillAll(SIGKILL);
}

void ControlNode::HandleRankExit(Rank rank, int wait_status) {
  if (rank >= options_.job_size || rank_exited_[rank]) return;
  rank_exited_[rank] = true;
  if (!options_.is_root) {
    AskLocalRanksToExit(rank, wait_status);
    SendToParent(wire::Encode(wire::RankExited{rank, wait_status}));
    relay_->OnRankGone(rank, rank_fini_[rank]
                                 ? "left the job (Bootstrap::Fini)"
                                 : DescribeWaitStatus(wait_status));
    return;
  }
  NoteFirstExit(absl::Now());
  const bool killed_by_us = killed_with_ != 0 && WIFSIGNALED(wait_status);
  const bool clean = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
  if (killed_by_us) {
    Verbose(
        absl::StrFormat("rank %d %s", rank, DescribeWaitStatus(wait_status)));
  } else {
    if (WIFSIGNALED(wait_status)) {
      Say(absl::StrFormat("rank %d %s", rank, DescribeWaitStatus(wait_status)));
    } else {
      Verbose(
          absl::StrFormat("rank %d %s", rank, DescribeWaitStatus(wait_status)));
    }
    SetJobCode(ExitCodeOf(wait_status));
    if (!clean) job_failing_ = true;
    AskLocalRanksToExit(rank, wait_status);
  }
  relay_->OnRankGone(rank, rank_fini_[rank] ? "left the job (Bootstrap::Fini)"
                                            : DescribeWaitStatus(wait_status));
}

void ControlNode::AskLocalRanksToExit(Rank rank, int wait_status) {
  const bool clean = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
  // Ranks we killed, ranks that left on purpose, and ranks blocked in a
  // bootstrap collective (its failure names the rank that left, which says
  // more) need no request.
  if (clean || rank_fini_[rank] || asked_to_exit_ || killed_with_ != 0 ||
      relay_->HasPending()) {
    return;
  }
  // It died, or failed without leaving the job: the others may be waiting
  // for it forever (a barrier, a spin loop), and their exit protocol would
  // wait for it until the exit timeout. Every rank whose graceful exit is
  // in place (exit/) is told at once, on every host, to exit without
  // waiting for anyone; the rest are left to the exit timeout, then
  // killed. This host's ranks hear now, the others through the root.
  asked_to_exit_ = true;
  const wire::ExitJob decision{rank, ExitCodeOf(wait_status), true};
  if (options_.is_root) {
    DecideExit(decision);
  } else {
    DeliverExit(decision);
  }
}

void ControlNode::HandleExitRequest(const wire::ExitRequest& request) {
  if (request.rank >= options_.job_size) return;
  if (!options_.is_root) {
    SendToParent(wire::Encode(request));
    return;
  }
  Verbose(absl::StrFormat(
      "rank %d's exit is not collective (code %d); asking every rank to exit",
      request.rank, request.exit_code & 0xff));
  DecideExit(wire::ExitJob{request.rank, request.exit_code & 0xff, false});
}

void ControlNode::DecideExit(const wire::ExitJob& decision) {
  // The first request or death decides; later ones find the ranks
  // already exiting.
  if (exit_decided_ || killed_with_ != 0) return;
  exit_decided_ = true;
  const std::string frame = wire::Encode(decision);
  for (auto& a : agents_) {
    if (a->conn_fd >= 0) {
      (void)wire::WriteFrame(a->conn_fd, frame, absl::Now() + absl::Seconds(1));
    }
  }
  const int asked = DeliverExit(decision);
  if (!decision.peer_lost) return;
  // Other hosts' ranks are counted by their launchers, which say nothing.
  if (!agents_.empty()) {
    Say(
        absl::StrFormat("rank %d ended without leaving the job; asking the "
                        "other ranks to exit",
                        decision.initiator));
  } else if (asked > 0) {
    Say(
        absl::StrFormat("rank %d ended without leaving the job; asking %d "
                        "other rank(s) to exit",
                        decision.initiator, asked));
  }
}

void ControlNode::AskCalls(size_t child, uint32_t seq) {
  if (child >= locals_.size()) {
    SendToChild(child, wire::Encode(wire::CallQuery{seq}));
    return;
  }
  // A rank answers from exit/'s signal handler, in place once it said
  // ExitReady; before that the signal would be ignored anyway.
  const LocalRank& l = *locals_[child];
  if (l.reaped || !exit_ready_[l.rank]) return;
  ExitSignalValue query;
  query.call_query = true;
  (void)SendExitSignal(l.pid, query);
}

int ControlNode::DeliverExit(const wire::ExitJob& decision) {
  if (killed_with_ != 0) return 0;
  int asked = 0;
  for (auto& l : locals_) {
    if (l->reaped || !exit_ready_[l->rank]) continue;
    // The rank that asked hears the decision too: it waits for the code.
    if (decision.peer_lost && l->rank == decision.initiator) continue;
    if (SendExitSignal(l->pid, ExitSignalValue{decision.initiator,
                                               decision.exit_code & 0xff,
                                               decision.peer_lost})) {
      ++asked;
    }
  }
  return asked;
}

void ControlNode::HandleAgentError(int exit_code, const std::string& message) {
  if (!options_.is_root) {
    SendToParent(wire::Encode(wire::AgentError{exit_code, message}));
    return;
  }
  Say(message);
  SetJobCode(exit_code != 0 ? exit_code : 1);
  job_failing_ = true;
  KillAll(SIGKILL);
}

void ControlNode::AgentLost(size_t index, const std::string& why) {
  AgentChild& a = *agents_[index];
  if (a.lost) return;
  a.lost = true;
  int code = 1;
  if (a.reaped && WIFEXITED(a.status) && WEXITSTATUS(a.status) != 0) {
    code = WEXITSTATUS(a.status);
  }
  {
    for (Rank r : a.launch.ranks) {
      if (!rank_exited_[r]) {
        rank_exited_[r] = true;
        relay_->OnRankGone(
            r, absl::StrFormat("was lost with host %s", a.launch.host));
      }
    }
  }
  HandleAgentError(code,
                   absl::StrFormat("%s on host %s: %s", Ranks(a.launch.ranks),
                                   a.launch.host, why));
}

void ControlNode::HandleRankFrame(size_t index, std::string_view body) {
  LocalRank& rank = *locals_[index];
  absl::Status bad;
  switch (wire::TypeOf(body)) {
    case wire::MessageType::kCollectiveUp: {
      auto up = wire::Decode<wire::CollectiveUp>(body);
      if (!up.ok()) {
        bad = up.status();
        break;
      }
      bad = relay_->OnUp(index, *std::move(up), absl::Now());
      break;
    }
    case wire::MessageType::kExitReady: {
      auto m = wire::Decode<wire::ExitReady>(body);
      if (!m.ok() || m->rank != rank.rank) {
        bad = m.ok() ? absl::DataLossError("exit ready names another rank")
                     : m.status();
        break;
      }
      exit_ready_[rank.rank] = true;
      break;
    }
    case wire::MessageType::kCallReport: {
      auto m = wire::Decode<wire::CallReport>(body);
      if (!m.ok() || m->rank != rank.rank) {
        bad = m.ok() ? absl::DataLossError("call report names another rank")
                     : m.status();
        break;
      }
      relay_->OnCallReport(*m);
      break;
    }
    case wire::MessageType::kExitRequest: {
      auto m = wire::Decode<wire::ExitRequest>(body);
      if (!m.ok() || m->rank != rank.rank) {
        bad = m.ok() ? absl::DataLossError("exit request names another rank")
                     : m.status();
        break;
      }
      HandleExitRequest(*m);
      break;
    }
    case wire::MessageType::kFini: {
      auto m = wire::Decode<wire::Fini>(body);
      if (!m.ok() || m->rank != rank.rank) {
        bad = m.ok() ? absl::DataLossError("fini names another rank")
                     : m.status();
        break;
      }
      HandleFini(rank.rank);
      break;
    }
    case wire::MessageType::kAbort: {
      auto m = wire::Decode<wire::Abort>(body);
      if (!m.ok()) {
        bad = m.status();
        break;
      }
      m->rank = rank.rank;
      HandleAbort(*m);
      break;
    }
    default:
      bad = absl::DataLossError(UnexpectedMessage(body));
  }
  if (!bad.ok()) {
    HandleAbort(wire::Abort{
        rank.rank, 1,
        absl::StrFormat("broke the control protocol: %s", bad.message())});
  }
}

void ControlNode::HandleAgentFrame(size_t index, std::string_view body) {
  AgentChild& a = *agents_[index];
  if (a.lost) return;
  absl::Status bad;
  switch (wire::TypeOf(body)) {
    case wire::MessageType::kCollectiveUp: {
      auto up = wire::Decode<wire::CollectiveUp>(body);
      bad = up.ok() ? relay_->OnUp(ChildIndexOfAgent(index), *std::move(up),
                                   absl::Now())
                    : up.status();
      break;
    }
    case wire::MessageType::kCollectiveFailed: {
      auto m = wire::Decode<wire::CollectiveFailed>(body);
      if (m.ok()) relay_->OnFailedFromChild(*m);
      bad = m.status();
      break;
    }
    case wire::MessageType::kFini: {
      auto m = wire::Decode<wire::Fini>(body);
      if (m.ok()) HandleFini(m->rank);
      bad = m.status();
      break;
    }
    case wire::MessageType::kAbort: {
      auto m = wire::Decode<wire::Abort>(body);
      if (m.ok()) HandleAbort(*m);
      bad = m.status();
      break;
    }
    case wire::MessageType::kRankExited: {
      auto m = wire::Decode<wire::RankExited>(body);
      if (m.ok()) HandleRankExit(m->rank, m->wait_status);
      bad = m.status();
      break;
    }
    case wire::MessageType::kExitRequest: {
      auto m = wire::Decode<wire::ExitRequest>(body);
      if (m.ok()) HandleExitRequest(*m);
      bad = m.status();
      break;
    }
    case wire::MessageType::kCallReport: {
      auto m = wire::Decode<wire::CallReport>(body);
      if (m.ok()) relay_->OnCallReport(*m);
      bad = m.status();
      break;
    }
    case wire::MessageType::kAgentError: {
      auto m = wire::Decode<wire::AgentError>(body);
      if (m.ok()) HandleAgentError(m->exit_code, m->message);
      bad = m.status();
      break;
    }
    case wire::MessageType::kAgentReady: {
      auto m = wire::Decode<wire::AgentReady>(body);
      if (m.ok()) {
        Verbose(absl::StrFormat("host %s: %s started", a.launch.host,
                                Ranks(a.launch.ranks)));
      }
      bad = m.status();
      break;
    }
    default:
      bad = absl::DataLossError(UnexpectedMessage(body));
  }
  if (!bad.ok()) {
    AgentLost(index, absl::StrFormat("the agent broke the control protocol: "
                                     "%s",
                                     bad.message()));
  }
}

void ControlNode::HandleParentFrame(std::string_view body) {
  switch (wire::TypeOf(body)) {
    case wire::MessageType::kCollectiveDown: {
      auto m = wire::Decode<wire::CollectiveDown>(body);
      if (m.ok()) {
        relay_->OnDown(*m);
        return;
      }
      break;
    }
    case wire::MessageType::kCollectiveFailed: {
      auto m = wire::Decode<wire::CollectiveFailed>(body);
      if (m.ok()) {
        relay_->OnFailedFromParent(*m);
        return;
      }
      break;
    }
    case wire::MessageType::kKill: {
      auto m = wire::Decode<wire::Kill>(body);
      if (m.ok() && m->signal > 0 && m->signal < NSIG) {
        KillAll(m->signal);
        return;
      }
      break;
    }
    case wire::MessageType::kExitJob: {
      auto m = wire::Decode<wire::ExitJob>(body);
      if (m.ok()) {
        DeliverExit(*m);
        return;
      }
      break;
    }
    case wire::MessageType::kCallQuery: {
      auto m = wire::Decode<wire::CallQuery>(body);
      if (m.ok()) {
        relay_->OnCallQuery(m->seq);
        return;
      }
      break;
    }
    default:
      break;
  }
  Say(absl::StrFormat("%s from the parent launcher; ending this host's ranks",
                      UnexpectedMessage(body)));
  KillAll(SIGKILL);
}

void ControlNode::AdmitAgent(ControlListener::Arrival arrival) {
  const wire::Hello& hello = arrival.hello;
  std::string problem = "unknown host index";
  for (size_t i = 0; i < agents_.size(); ++i) {
    AgentChild& a = *agents_[i];
    if (a.launch.host_index != hello.id) continue;
    if (a.connected || a.lost) {
      problem = "host connected twice";
      break;
    }
    a.conn_fd = arrival.fd;
    a.connected = true;
    Verbose(absl::StrFormat("host %s connected (agent pid %d on %s)",
                            a.launch.host, hello.pid, hello.hostname));
    // A kill that went out before this agent could hear it.
    if (killed_with_ != 0) {
      (void)wire::WriteFrame(a.conn_fd, wire::Encode(wire::Kill{killed_with_}),
                             absl::Now() + absl::Seconds(1));
    }
    // Frames the agent sent right behind its hello.
    a.assembler.Append(arrival.rest);
    while (a.conn_fd >= 0 && !a.lost) {
      auto frame = a.assembler.Next();
      if (!frame.ok()) {
        AgentLost(i, std::string(frame.status().message()));
        break;
      }
      if (!frame->has_value()) break;
      HandleAgentFrame(i, **frame);
    }
    CloseListenerWhenDone();
    return;
  }
  Verbose(absl::StrFormat("rejected a connection: %s", problem));
  close(arrival.fd);
}

void ControlNode::CloseListenerWhenDone() {
  if (!listener_.listening()) return;
  for (const auto& a : agents_) {
    if (!a->connected && !a->lost && !a->reaped) return;
  }
  // Nothing can connect any more: no port left open for the rest of the
  // job, and no unauthenticated connection held.
  listener_.Close();
  Verbose("every agent has connected; closed the control port");
}

void ControlNode::ReadControl(
    int fd, wire::FrameAssembler& assembler, bool* eof,
    const std::function<void(std::string_view)>& handle) {
  char buf[65536];
  while (true) {
    const ssize_t k = read(fd, buf, sizeof buf);
    if (k > 0) {
      assembler.Append(std::string_view(buf, k));
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) break;
    *eof = true;  // end of file, or a reset connection
    break;
  }
  while (true) {
    auto frame = assembler.Next();
    if (!frame.ok()) {
      *eof = true;
      return;
    }
    if (!frame->has_value()) return;
    handle(**frame);
  }
}

void ControlNode::ReadOutput(Source& source) {
  LineForwarder& out = source.is_stderr ? stderr_ : stdout_;
  const int id = source.fd;
  char buf[65536];
  while (true) {
    const ssize_t k = read(source.fd, buf, sizeof buf);
    if (k > 0) {
      out.Append(id, std::string_view(buf, k));
      if (out.failed() && out.error() == EPIPE && !output_closed_) {
        // `gasnetrun ... | head`: the reader has gone. Like any writer in
        // a pipeline the launcher ends by SIGPIPE, once it has ended the
        // job (every process of it, here and on other hosts) and cleaned
        // up after it.
        output_closed_ = true;
        Verbose(absl::StrFormat("%s was closed by its reader; ending the job",
                                source.is_stderr ? "stderr" : "stdout"));
        job_failing_ = true;
        SetJobCode(128 + SIGPIPE);
        KillAll(SIGKILL);
      }
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) return;
    out.Finish(id);
    close(source.fd);
    source.fd = -1;
    return;
  }
}

bool ControlNode::AllRanksReported(const AgentChild& agent) const {
  for (Rank r : agent.launch.ranks) {
    if (!rank_exited_[r]) return false;
  }
  return true;
}

void ControlNode::Reap() {
  while (true) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    if (auto it = local_by_pid_.find(pid); it != local_by_pid_.end()) {
      LocalRank& l = *locals_[it->second];
      l.reaped = true;
      // What it said before it died (an abort, a fini) comes first.
      if (l.control_fd >= 0) {
        bool eof = false;
        const size_t index = it->second;
        ReadControl(
            l.control_fd, l.assembler, &eof,
            [&](std::string_view body) { HandleRankFrame(index, body); });
        close(l.control_fd);
        l.control_fd = -1;
      }
      HandleRankExit(l.rank, status);
      continue;
    }
    if (auto it = agent_by_pid_.find(pid); it != agent_by_pid_.end()) {
      AgentChild& a = *agents_[it->second];
      a.reaped = true;
      a.status = status;
      if (a.conn_fd >= 0) {
        bool eof = false;
        const size_t index = it->second;
        ReadControl(a.conn_fd, a.assembler, &eof, [&](std::string_view body) {
          HandleAgentFrame(index, body);
        });
        close(a.conn_fd);
        a.conn_fd = -1;
      }
      a.closed = true;
      if (!a.connected) {
        AgentLost(
            it->second,
            absl::StrFormat("could not be started: '%s' %s before the "
                            "agent connected",
                            a.launch.argv[0], DescribeWaitStatus(status)));
      } else if (!AllRanksReported(a) && killed_with_ != SIGKILL) {
        AgentLost(it->second, absl::StrFormat("lost: '%s' %s", a.launch.argv[0],
                                              DescribeWaitStatus(status)));
      }
      continue;
    }
    // A grandchild adopted because this process is a subreaper, or a
    // stray: nothing to account for.
  }
}

void ControlNode::OnSignal(int sig) {
  if (sig == SIGCHLD) {
    Reap();
    return;
  }
  ++signals_received_;
  if (signals_received_ == 1) {
    Say(
        absl::StrFormat("received signal %d (%s); passing it to the job's "
                        "processes",
                        sig, sigdescr_np(sig)));
    if (options_.is_root) SetJobCode(128 + sig);
    job_failing_ = true;
    NoteFirstExit(absl::Now());
    KillAll(sig);
  } else {
    KillAll(SIGKILL);
  }
}

void ControlNode::OnTimers(absl::Time now) {
  relay_->OnTick(now);
  if (options_.is_root && exit_deadline_.has_value() && !exit_deadline_fired_ &&
      now >= *exit_deadline_ && killed_with_ != SIGKILL) {
    int running = 0;
    for (Rank r = 0; r < options_.job_size; ++r) running += !rank_exited_[r];
    exit_deadline_fired_ = true;
    if (running > 0) {
      Say(absl::StrFormat(
          "%d rank(s) still running %s after the first "
          "rank ended (GASNET_EXITTIMEOUT); killing them",
          running, absl::FormatDuration(options_.exit_timeout)));
      KillAll(SIGKILL);
    }
  }
  if (kill_deadline_.has_value() && now >= *kill_deadline_) {
    for (size_t i = 0; i < agents_.size(); ++i) {
      AgentChild& a = *agents_[i];
      if (!a.reaped) kill(a.pid, SIGKILL);
      if (a.conn_fd >= 0) {
        close(a.conn_fd);
        a.conn_fd = -1;
      }
      a.closed = true;
    }
    kill_deadline_.reset();
  }
  if (connect_deadline_.has_value() && now >= *connect_deadline_) {
    for (size_t i = 0; i < agents_.size(); ++i) {
      AgentChild& a = *agents_[i];
      if (!a.connected && !a.reaped && !a.lost) {
        kill(a.pid, SIGKILL);
        AgentLost(i, absl::StrFormat(
                         "the agent did not connect within %s "
                         "(GASNET_BOOTSTRAP_TIMEOUT)",
                         absl::FormatDuration(options_.bootstrap_timeout)));
      }
    }
    connect_deadline_.reset();
  }
  listener_.OnTimers(now);
  CloseListenerWhenDone();
}

bool ControlNode::HasChildren() {
  siginfo_t info{};
  const int r = waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT);
  return !(r < 0 && errno == ECHILD);
}

void ControlNode::KillStrayChildren() {
  // Children of this process that are neither ranks nor remote shells:
  // adopted descendants of ranks (which may have left the ranks' process
  // group). Found through /proc, since the kernel offers no list.
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return;
  const pid_t self = getpid();
  while (dirent* e = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;
    char buf[512];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* close_paren = std::strrchr(buf, ')');
    char state = 0;
    int ppid = 0;
    if (close_paren != nullptr &&
        std::sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2 &&
        ppid == self) {
      kill(pid, SIGKILL);
    }
  }
  closedir(proc);
}

bool ControlNode::Finished() const {
  for (const auto& l : locals_) {
    if (!l->reaped) return false;
  }
  for (const auto& a : agents_) {
    if (!a->reaped || !a->closed) return false;
  }
  for (const auto& s : sources_) {
    if (s->fd >= 0) return false;
  }
  return !HasChildren();
}

int ControlNode::Run() {
  CollectiveRelay::Options relay_options;
  relay_options.job_size = options_.job_size;
  relay_options.is_root = options_.is_root;
  relay_options.timeout = options_.bootstrap_timeout;
  for (const auto& l : locals_) relay_options.children.push_back({l->rank});
  for (const auto& a : agents_) {
    relay_options.children.push_back(a->launch.ranks);
  }
  // The root waits a little longer than the agents, so that an agent's
  // message naming the exact late rank wins over the root's coarser one.
  if (options_.is_root && !agents_.empty()) {
    relay_options.timeout += absl::Seconds(2);
  }
  relay_options.describe_child = [this](size_t c) {
    if (c < locals_.size()) {
      return absl::StrFormat("rank %d", locals_[c]->rank);
    }
    return absl::StrFormat("host %s", agents_[c - locals_.size()]->launch.host);
  };
  relay_ = std::make_unique<CollectiveRelay>(
      relay_options,
      CollectiveRelay::Outlet{
          [this](size_t c, const std::string& f) { SendToChild(c, f); },
          [this](const std::string& f) { SendToParent(f); },
          [this](size_t c, uint32_t seq) { AskCalls(c, seq); }});
  if (!options_.is_root) {
    SendToParent(wire::Encode(wire::AgentReady{options_.host_index}));
  }

  std::optional<absl::Time> drain_deadline;
  bool group_killed = false;
  enum class Kind {
    kSignal,
    kLocal,
    kAgent,
    kParent,
    kListen,
    kPending,
    kOutput,
    kStdinIn,
    kStdinOut
  };
  std::vector<pollfd> fds;
  std::vector<std::pair<Kind, size_t>> what;
  while (!Finished()) {
    fds.clear();
    what.clear();
    auto add = [&](int fd, Kind kind, size_t index) {
      fds.push_back(pollfd{fd, POLLIN, 0});
      what.emplace_back(kind, index);
    };
    // Control channels before output and signals: a rank's last words (an
    // abort) must be read before its death is handled.
    for (size_t i = 0; i < locals_.size(); ++i) {
      if (locals_[i]->control_fd >= 0) {
        add(locals_[i]->control_fd, Kind::kLocal, i);
      }
    }
    for (size_t i = 0; i < agents_.size(); ++i) {
      if (agents_[i]->conn_fd >= 0) add(agents_[i]->conn_fd, Kind::kAgent, i);
    }
    if (options_.parent_fd >= 0 && !parent_gone_) {
      add(options_.parent_fd, Kind::kParent, 0);
    }
    absl::Time now = absl::Now();
    if (const int fd = listener_.ListenFdToPoll(now); fd >= 0) {
      add(fd, Kind::kListen, 0);
    }
    for (size_t i = 0; i < listener_.slots(); ++i) {
      if (listener_.SlotFd(i) >= 0) add(listener_.SlotFd(i), Kind::kPending, i);
    }
    if (stdin_pipe_ >= 0) {
      if (!stdin_buffer_.empty()) {
        fds.push_back(pollfd{stdin_pipe_, POLLOUT, 0});
        what.emplace_back(Kind::kStdinOut, 0);
      } else if (!stdin_eof_) {
        add(0, Kind::kStdinIn, 0);
      }
    }
    for (size_t i = 0; i < sources_.size(); ++i) {
      if (sources_[i]->fd >= 0) add(sources_[i]->fd, Kind::kOutput, i);
    }
    add(signal_fd_, Kind::kSignal, 0);

    // Every process gone but output pipes still open: something the ranks
    // started holds them. It belongs to the job and must not outlive it.
    bool all_reaped = true;
    for (const auto& l : locals_) all_reaped &= l->reaped;
    for (const auto& a : agents_) all_reaped &= a->reaped;
    if (all_reaped && !group_killed) {
      if (process_group_ > 0) kill(-process_group_, SIGKILL);
      group_killed = true;
      drain_deadline = absl::Now() + kDrainGrace;
    }

    now = absl::Now();
    absl::Time next =
        std::min(relay_->NextDeadline(), listener_.NextDeadline(now));
    if (options_.is_root && exit_deadline_.has_value() &&
        !exit_deadline_fired_ && killed_with_ != SIGKILL) {
      next = std::min(next, *exit_deadline_);
    }
    for (const auto& d : {kill_deadline_, connect_deadline_, drain_deadline}) {
      if (d.has_value()) next = std::min(next, *d);
    }
    const int timeout = wire::PollTimeoutMs(next, now);
    const int n = poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) {
      Say(absl::StrFormat("poll failed: %s", strerror(errno)));
      KillAll(SIGKILL);
      break;
    }
    for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const auto [kind, index] = what[i];
      switch (kind) {
        case Kind::kLocal: {
          LocalRank& l = *locals_[index];
          if (l.control_fd < 0) break;
          bool eof = false;
          ReadControl(
              l.control_fd, l.assembler, &eof,
              [&](std::string_view body) { HandleRankFrame(index, body); });
          if (eof && l.control_fd >= 0) {
            close(l.control_fd);
            l.control_fd = -1;
          }
          break;
        }
        case Kind::kAgent: {
          AgentChild& a = *agents_[index];
          if (a.conn_fd < 0) break;
          bool eof = false;
          ReadControl(a.conn_fd, a.assembler, &eof, [&](std::string_view body) {
            HandleAgentFrame(index, body);
          });
          if (eof && a.conn_fd >= 0) {
            close(a.conn_fd);
            a.conn_fd = -1;
            a.closed = true;
            if (!AllRanksReported(a) && killed_with_ != SIGKILL) {
              AgentLost(index,
                        "the agent closed its connection before its "
                        "ranks ended");
            }
          }
          break;
        }
        case Kind::kParent: {
          bool eof = false;
          ReadControl(options_.parent_fd, parent_assembler_, &eof,
                      [&](std::string_view body) { HandleParentFrame(body); });
          if (eof) {
            parent_gone_ = true;
            bool done = true;
            for (const auto& l : locals_) done &= l->reaped;
            if (!done) {
              Verbose(
                  "the parent launcher went away; ending this host's "
                  "ranks");
            }
            KillAll(SIGKILL);
          }
          break;
        }
        case Kind::kListen:
          listener_.OnListenReady(absl::Now());
          break;
        case Kind::kPending: {
          // Only a connection that presented the job token comes out;
          // nothing else it sent reaches the relay or any handler.
          std::optional<ControlListener::Arrival> arrival =
              listener_.OnPendingReady(index);
          if (arrival.has_value()) AdmitAgent(*std::move(arrival));
          break;
        }
        case Kind::kStdinIn:
          if (stdin_pipe_ >= 0) ReadStdin();
          break;
        case Kind::kStdinOut:
          if (stdin_pipe_ >= 0) WriteStdin();
          break;
        case Kind::kOutput:
          if (sources_[index]->fd >= 0) ReadOutput(*sources_[index]);
          break;
        case Kind::kSignal: {
          signalfd_siginfo info;
          while (read(signal_fd_, &info, sizeof info) == sizeof info) {
            OnSignal(static_cast<int>(info.ssi_signo));
          }
          // SIGCHLD may have been merged with others; reaping is cheap.
          Reap();
          break;
        }
      }
    }
    listener_.Sweep();
    now = absl::Now();
    OnTimers(now);
    if (drain_deadline.has_value() && now >= *drain_deadline) {
      drain_deadline.reset();
      KillStrayChildren();
      for (auto& s : sources_) {
        if (s->fd >= 0) {
          (s->is_stderr ? stderr_ : stdout_).Finish(s->fd);
          close(s->fd);
          s->fd = -1;
        }
      }
    }
  }
  stdout_.FinishAll();
  stderr_.FinishAll();
  if (options_.cleanup != nullptr) {
    std::vector<pid_t> pids;
    for (const auto& [pid, index] : local_by_pid_) pids.push_back(pid);
    options_.cleanup(options_.job_id, pids);
  }
  guard_.Dismiss();
  if (output_closed_ && options_.is_root) EndBySigpipe();
  return options_.is_root ? job_code_ : 0;
}

}  // namespace gexrt::spawn
