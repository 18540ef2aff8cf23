// One launcher process of a job: gasnetrun itself (the root) or the agent
// it starts on each remote host (ssh spawner). A ControlNode owns its
// children, the ranks it started on this host and the agents it started on
// other hosts (each through a remote-shell process), and runs the event loop
// that
//   - relays bootstrap collectives (collective_relay.h),
//   - forwards every child's stdout and stderr, whole lines at a time,
//   - reaps children and reports how each rank ended (up the tree; the root
//     reduces them to the job's exit code: the first nonzero one),
//   - ends the job on every failure path: a rank that aborts or dies, a
//     host that cannot be reached or is lost, a signal to the launcher, the
//     launcher's parent going away (agents). Once a rank has exited the
//     others have GASNET_EXITTIMEOUT to follow before they are killed.
//
// Single-threaded; waits block in poll(2), so an oversubscribed host loses
// no CPU to the launcher.
#ifndef GEX_BOOTSTRAP_SPAWN_CONTROL_NODE_H_
#define GEX_BOOTSTRAP_SPAWN_CONTROL_NODE_H_

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/messages.h"
#include "bootstrap/spawn/child_process.h"
#include "bootstrap/spawn/cleanup_guard.h"
#include "bootstrap/spawn/collective_relay.h"
#include "bootstrap/spawn/control_listener.h"
#include "bootstrap/spawn/job_cleanup.h"
#include "bootstrap/spawn/line_forwarder.h"

namespace gexrt::spawn {

struct ControlNodeOptions {
  Rank job_size = 1;
  // The root has no parent and decides the job's exit code.
  bool is_root = true;
  // Agents: the connected socket to the parent launcher.
  int parent_fd = -1;
  // Agents: which host of the job this is.
  uint32_t host_index = 0;
  // "gasnetrun" or "gasnetrun agent on n1": prefixes its messages.
  std::string name = "gasnetrun";
  absl::Duration bootstrap_timeout = absl::Seconds(300);
  absl::Duration exit_timeout = absl::Seconds(4);
  bool verbose = false;
  // Start the ranks with address-space randomisation off, so that every rank
  // of this host has the same layout (SameLayoutPersona in
  // child_process.h); GEX_SPAWN_SAME_LAYOUT, default yes. When the kernel
  // refuses, the launcher says so once and starts the ranks anyway.
  bool same_layout = true;
  // Extra "NAME=value" entries for every rank's environment.
  std::vector<std::string> rank_env;
  // Job identity shared by all ranks (GEX_JOB_ID).
  std::string job_id;
  // Run at the end of Run(), after every local rank is reaped; should this
  // process die first, by its clean-up guard (cleanup_guard.h).
  JobCleanup cleanup = nullptr;
};

// An agent this node starts on another host through a remote shell.
struct AgentLaunch {
  uint32_t host_index = 0;
  std::string host;
  // Every rank in the agent's subtree (its own and its descendants').
  std::vector<Rank> ranks;
  // The remote-shell command (ssh host 'cmd').
  std::vector<std::string> argv;
  // Gets this launcher's stdin (the host of rank 0), else /dev/null.
  bool gets_stdin = false;
};

class ControlNode {
 public:
  explicit ControlNode(ControlNodeOptions options);
  ~ControlNode();
  ControlNode(const ControlNode&) = delete;
  ControlNode& operator=(const ControlNode&) = delete;

  // Starts the clean-up guard (when there is a clean-up to guard), blocks
  // the signals the event loop reads (SIGCHLD, SIGINT, SIGTERM, SIGHUP,
  // SIGQUIT) and opens the signalfd. Call before starting any child, so
  // that no child's exit can go unnoticed.
  absl::Status Init();

  // Starts ranks first..first+count-1 of `argv` on this host. Rank 0, if
  // among them, gets this process's stdin.
  absl::Status StartLocalRanks(Rank first, Rank count,
                               const std::vector<std::string>& argv);

  // Starts agents on other hosts; they connect back to `listen_fd` (owned)
  // presenting `token`, which each remote shell gets as the first line of
  // its stdin (never on a command line). The agent of rank 0's host then
  // gets the rest of this process's stdin, copied by the event loop.
  // Connections that have not presented the token are held to the limits
  // of control_listener.h; the port closes once every agent is connected.
  absl::Status StartAgents(std::vector<AgentLaunch> agents, int listen_fd,
                           uint64_t token);

  // Ends every child now (SIGKILL), e.g. when the job could not be fully
  // started; Run() then reaps them.
  void KillEverything() { KillAll(SIGKILL); }

  // Runs until every child has ended; returns the job's exit code (root)
  // or this agent's.
  int Run();

 private:
  struct Source;  // an output pipe being forwarded
  struct LocalRank;
  struct AgentChild;

  // Relay children: local ranks first (index = position in locals_), then
  // agents.
  size_t ChildIndexOfAgent(size_t agent) const {
    return locals_.size() + agent;
  }
  void SendToChild(size_t child, const std::string& frame);
  void SendToParent(const std::string& frame);

  void HandleRankFrame(size_t index, std::string_view body);
  void HandleAgentFrame(size_t agent, std::string_view body);
  void HandleParentFrame(std::string_view body);
  // A connection that presented the job token: the agent it names, unless
  // that host is unknown or already connected.
  void AdmitAgent(ControlListener::Arrival arrival);
  // Stops listening once no agent can still connect.
  void CloseListenerWhenDone();
  // Copies this process's stdin to the agent that gets it.
  void ReadStdin();
  void WriteStdin();
  void StopStdin();
  // A message that only the root acts on; others pass it up.
  void HandleFini(Rank rank);
  void HandleAbort(const wire::Abort& abort);
  void HandleRankExit(Rank rank, int wait_status);
  // Rank `rank` ended abnormally (`wait_status`) without Fini: SIGTERM to
  // this node's running ranks whose graceful exit is in place (once).
  void AskLocalRanksToExit(Rank rank, int wait_status);
  // A rank's non-collective exit: the root decides, agents pass it up.
  void HandleExitRequest(const wire::ExitRequest& request);
  // Root: the job ends with `decision`, told to every agent and to this
  // host's exit-ready ranks. Once per job.
  void DecideExit(const wire::ExitJob& decision);
  // Queues kExitSignal with the decision to this host's exit-ready ranks;
  // how many were signalled.
  int DeliverExit(const wire::ExitJob& decision);
  // The relay's ask_calls: a rank child gets the call query signal, an
  // agent a CallQuery frame.
  void AskCalls(size_t child, uint32_t seq);
  void HandleAgentError(int exit_code, const std::string& message);
  void AgentLost(size_t agent, const std::string& why);
  // Whether every rank below `agent` has been reported as exited.
  bool AllRanksReported(const AgentChild& agent) const;

  void ReadControl(int fd, wire::FrameAssembler& assembler, bool* eof,
                   const std::function<void(std::string_view)>& handle);
  void ReadOutput(Source& source);
  void Reap();
  void OnSignal(int sig);
  void OnTimers(absl::Time now);
  void KillAll(int sig);
  void NoteFirstExit(absl::Time now);
  bool Finished() const;
  // Whether this process still has children (reaped or not yet).
  static bool HasChildren();
  void KillStrayChildren();
  void Verbose(const std::string& message) const;
  void Say(const std::string& message) const;
  void SetJobCode(int code);

  ControlNodeOptions options_;
  CleanupGuard guard_;
  int signal_fd_ = -1;
  ControlListener listener_;
  // The stdin of rank 0's agent: the write end of the pipe that is its
  // remote shell's stdin (-1 when none), and what is read but not written.
  int stdin_pipe_ = -1;
  std::string stdin_buffer_;
  bool stdin_eof_ = false;
  std::unique_ptr<CollectiveRelay> relay_;
  LineForwarder stdout_;
  LineForwarder stderr_;
  std::vector<std::unique_ptr<Source>> sources_;
  std::vector<std::unique_ptr<LocalRank>> locals_;
  std::vector<std::unique_ptr<AgentChild>> agents_;
  absl::flat_hash_map<pid_t, size_t> local_by_pid_;
  absl::flat_hash_map<pid_t, size_t> agent_by_pid_;
  pid_t process_group_ = 0;
  wire::FrameAssembler parent_assembler_;
  bool parent_gone_ = false;

  // Root bookkeeping.
  std::vector<bool> rank_fini_;
  // Local ranks whose graceful exit is in place (wire::ExitReady), and
  // whether they have been asked to exit (once).
  std::vector<bool> exit_ready_;
  bool asked_to_exit_ = false;
  bool exit_decided_ = false;   // Root: DecideExit ran.
  bool output_closed_ = false;  // stdout's or stderr's reader went away.
  std::vector<bool> rank_exited_;
  int job_code_ = 0;
  bool job_failing_ = false;  // an abort, death or signal is ending the job
  int killed_with_ = 0;       // the signal this node sent its children
  int signals_received_ = 0;
  std::optional<absl::Time> exit_deadline_;
  bool exit_deadline_fired_ = false;
  std::optional<absl::Time> kill_deadline_;
  std::optional<absl::Time> connect_deadline_;
};

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_CONTROL_NODE_H_
