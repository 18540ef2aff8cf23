#include "bootstrap/spawn/launcher.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/env/settings.h"
#include "base/fatal.h"
#include "base/host_id.h"
#include "base/stderr_line.h"
#include "bootstrap/bootstrap_timeout.h"
#include "bootstrap/exit_timeout.h"
#include "bootstrap/messages.h"
#include "bootstrap/spawn/child_process.h"
#include "bootstrap/spawn/control_listener.h"
#include "bootstrap/spawn/control_node.h"
#include "bootstrap/spawn/host_list.h"
#include "bootstrap/spawn/job_secret.h"
#include "bootstrap/spawn/pmi_spawner.h"
#include "bootstrap/spawn/shell_words.h"
#include "bootstrap/spawn/ssh_plan.h"
#include "bootstrap/spawn/tcp.h"
#include "bootstrap/wire.h"

extern char** environ;

namespace gexrt::spawn {
namespace {

constexpr int kUsageError = 2;
constexpr int kStartError = 1;

void Print(const std::string& tool, const std::string& message) {
  WriteStderrLine(absl::StrFormat("%s: %s", tool, message));
}

// Settings errors read before any child exists end the launcher with a
// plain nonzero exit, not the abort() base/fatal uses by default.
void ExitOnFatal() { _exit(kStartError); }

std::string CurrentDirectory() {
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof buf) == nullptr) return "/";
  return buf;
}

std::string SelfExecutable() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "gasnetrun";
  return std::string(buf, n);
}

// The program as every host will run it: an absolute path, so that the
// remote shell's PATH and directory do not matter.
absl::StatusOr<std::vector<std::string>> ResolveCommand(
    const std::vector<std::string>& program_and_args) {
  absl::StatusOr<std::string> path = ResolveProgram(program_and_args[0]);
  if (!path.ok()) return path.status();
  std::vector<std::string> argv = program_and_args;
  argv[0] = (*path)[0] == '/' ? *path : CurrentDirectory() + "/" + *path;
  return argv;
}

std::string RankRange(int64_t first, int64_t count) {
  return count == 1 ? absl::StrFormat("rank %d", first)
                    : absl::StrFormat("ranks %d-%d", first, first + count - 1);
}

// The agents `parent` (-1: gasnetrun itself) starts, each with the ranks of
// its subtree and the remote-shell command that starts it.
std::vector<AgentLaunch> PlanAgents(int64_t parent, const SshSettings& ssh,
                                    const std::vector<HostRanks>& layout,
                                    AgentParams params,
                                    const std::vector<std::string>& env,
                                    const std::vector<std::string>& program) {
  std::vector<AgentLaunch> out;
  const uint32_t hosts = static_cast<uint32_t>(layout.size());
  for (uint32_t h : TreeChildren(parent, hosts, ssh.topology, ssh.out_degree)) {
    AgentLaunch a;
    a.host_index = h;
    a.host = layout[h].host;
    for (uint32_t s : Subtree(h, hosts, ssh.topology, ssh.out_degree)) {
      for (int64_t r = 0; r < layout[s].count; ++r) {
        a.ranks.push_back(static_cast<Rank>(layout[s].first_rank + r));
      }
    }
    std::sort(a.ranks.begin(), a.ranks.end());
    a.gets_stdin = !a.ranks.empty() && a.ranks.front() == 0;
    params.host_index = h;
    a.argv =
        RemoteShellArgv(ssh, a.host,
                        RemoteCommand(ssh.remote_dir, env, SelfExecutable(),
                                      EncodeAgentArgs(params), program));
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<std::string> HostNames(const std::vector<HostRanks>& layout) {
  std::vector<std::string> names;
  for (const HostRanks& h : layout) names.push_back(h.host);
  return names;
}

// The -E names travel with the job (kPropagateVar), so that agents further
// down a tree pass on the same variables.
constexpr char kPropagateVar[] = "GEX_SPAWN_PROPAGATE";
// Whether ranks start with address-space randomisation off (default yes).
constexpr char kSameLayoutVar[] = "GEX_SPAWN_SAME_LAYOUT";

std::vector<std::string> PropagatedNames() {
  // GEX_SPAWN_SAME_LAYOUT too: every host's agent starts its ranks alike.
  std::vector<std::string> names = {kPropagateVar, kSameLayoutVar};
  if (const char* list = std::getenv(kPropagateVar)) {
    for (absl::string_view n : absl::StrSplit(list, ',', absl::SkipEmpty())) {
      names.emplace_back(n);
    }
  }
  return names;
}

int AgentMain(const std::vector<std::string>& args, JobCleanup cleanup) {
  // args: kAgentFlag, 9 parameters, "--", program...
  const std::string tool = "gasnetrun agent";
  size_t dashdash = 1;
  while (dashdash < args.size() && args[dashdash] != "--") ++dashdash;
  if (dashdash + 1 >= args.size()) {
    Print(tool, absl::StrFormat("%s needs '-- program' (it is for "
                                "gasnetrun's own use)",
                                kAgentFlag));
    return kUsageError;
  }
  absl::StatusOr<AgentParams> params =
      DecodeAgentArgs(absl::MakeConstSpan(args).subspan(1, dashdash - 1));
  if (!params.ok()) {
    Print(tool, std::string(params.status().message()));
    return kUsageError;
  }
  const std::vector<std::string> program(args.begin() + dashdash + 1,
                                         args.end());
  const std::string name = absl::StrFormat("gasnetrun agent on %s",
                                           params->hosts[params->host_index]);
  SetFatalExitHook(&ExitOnFatal);
  const absl::Duration bootstrap_timeout = BootstrapTimeoutFromEnv();

  // The job token is the first line of stdin (never on the command line,
  // which every local user can read); what follows is rank 0's stdin.
  absl::StatusOr<uint64_t> token =
      ReadTokenLine(0, absl::Now() + bootstrap_timeout);
  if (!token.ok()) {
    Print(name, std::string(token.status().message()));
    return kStartError;
  }

  absl::StatusOr<int> parent =
      ConnectTo(params->parent_address, params->parent_port,
                absl::Now() + bootstrap_timeout);
  if (!parent.ok()) {
    Print(name, std::string(parent.status().message()));
    return kStartError;
  }
  wire::Hello hello;
  hello.role = wire::PeerRole::kAgent;
  hello.id = params->host_index;
  hello.pid = static_cast<uint32_t>(getpid());
  hello.token = *token;
  hello.hostname = Hostname().substr(0, kMaxHelloHostname);
  if (absl::Status s = wire::WriteFrame(*parent, wire::Encode(hello));
      !s.ok()) {
    Print(name, std::string(s.message()));
    return kStartError;
  }

  // The event loop reads every channel until it would block.
  fcntl(*parent, F_SETFL, fcntl(*parent, F_GETFL) | O_NONBLOCK);

  HostList hosts{params->hosts, "the agent's host list"};
  absl::StatusOr<std::vector<HostRanks>> layout = LayOutRanks(
      params->job_size, static_cast<int64_t>(params->hosts.size()), hosts);
  if (!layout.ok()) {
    Print(name, std::string(layout.status().message()));
    return kStartError;
  }

  ControlNodeOptions options;
  options.job_size = params->job_size;
  options.is_root = false;
  options.parent_fd = *parent;
  options.host_index = params->host_index;
  options.name = name;
  options.bootstrap_timeout = bootstrap_timeout;
  options.verbose = params->verbose;
  options.job_id = params->job_id;
  options.cleanup = cleanup;
  options.same_layout = env::GetBool(kSameLayoutVar, true);
  ControlNode node(options);
  auto fail = [&](const absl::Status& s) {
    (void)wire::WriteFrame(
        *parent,
        wire::Encode(wire::AgentError{
            kStartError, absl::StrFormat("%s: %s", name, s.message())}));
    return kStartError;
  };
  if (absl::Status s = node.Init(); !s.ok()) return fail(s);
  const HostRanks& mine = (*layout)[params->host_index];
  if (absl::Status s =
          node.StartLocalRanks(static_cast<Rank>(mine.first_rank),
                               static_cast<Rank>(mine.count), program);
      !s.ok()) {
    return fail(s);
  }
  if (!TreeChildren(params->host_index, params->hosts.size(), params->topology,
                    params->out_degree)
           .empty()) {
    SshSettings ssh;
    auto settings = SshSettingsFromEnvironment(&getenv, CurrentDirectory());
    if (!settings.ok()) return fail(settings.status());
    ssh = *settings;
    ssh.topology = params->topology;
    ssh.out_degree = params->out_degree;
    // The children call back on the interface that reaches this agent's
    // parent, and only that interface listens.
    absl::StatusOr<std::string> address = LocalAddressOf(*parent);
    if (!address.ok()) return fail(address.status());
    absl::StatusOr<Listener> listener = ListenOn(*address);
    if (!listener.ok()) return fail(listener.status());
    AgentParams child = *params;
    child.parent_address = *address;
    child.parent_port = listener->port;
    std::vector<AgentLaunch> agents =
        PlanAgents(params->host_index, ssh, *layout, child,
                   PropagatedEnvironment(environ, PropagatedNames()), program);
    if (absl::Status s =
            node.StartAgents(std::move(agents), listener->fd, *token);
        !s.ok()) {
      return fail(s);
    }
  }
  return node.Run();
}

}  // namespace

int GasnetrunMain(int argc, char** argv, const ConduitLauncher& conduit) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == kAgentFlag)
    return AgentMain(args, conduit.cleanup);

  const std::string tool = absl::StrFormat("gasnetrun_%s", conduit.conduit);
  const std::string upper = absl::AsciiStrToUpper(conduit.conduit);
  SetFatalExitHook(&ExitOnFatal);

  absl::StatusOr<LaunchOptions> parsed = ParseLaunchOptions(args);
  if (!parsed.ok()) {
    Print(tool, std::string(parsed.status().message()));
    Print(tool, absl::StrFormat("run '%s -h' for usage", tool));
    return kUsageError;
  }
  const LaunchOptions& opts = *parsed;
  if (opts.help) {
    std::fputs(LaunchUsage(tool).c_str(), stdout);
    return 0;
  }
  absl::StatusOr<SpawnerKind> spawner =
      ResolveSpawner(opts, upper, std::getenv(SpawnerVariable(upper).c_str()),
                     conduit.default_spawner);
  if (!spawner.ok()) {
    Print(tool, std::string(spawner.status().message()));
    return kUsageError;
  }
  if (*spawner == SpawnerKind::kFork && opts.nodes > 1) {
    Print(tool, absl::StrFormat("-N %d: the fork spawner runs every rank on "
                                "this host; use -spawner=ssh for more hosts",
                                opts.nodes));
    return kUsageError;
  }
  absl::StatusOr<std::vector<std::string>> program =
      ResolveCommand(opts.program_and_args);
  if (!program.ok()) {
    Print(tool, std::string(program.status().message()));
    return kStartError;
  }
  // The external launcher starts, watches and ends the ranks itself.
  if (*spawner == SpawnerKind::kPmi) {
    return RunPmiJob(tool, opts, *program, conduit.cleanup);
  }
  if (opts.ranks > static_cast<int64_t>(UINT32_MAX) - 1) {
    Print(tool, absl::StrFormat("-n %d is too many ranks", opts.ranks));
    return kUsageError;
  }
  const Rank ranks = static_cast<Rank>(opts.ranks);

  ControlNodeOptions options;
  options.job_size = ranks;
  options.is_root = true;
  options.name = tool;
  options.bootstrap_timeout = BootstrapTimeoutFromEnv();
  options.exit_timeout = ExitTimeoutFromEnv(ranks);
  options.verbose = opts.verbose;
  // The job id names shared memory objects every local user can list, so
  // it is drawn apart from the (secret) token and shares nothing with it.
  absl::StatusOr<std::string> job_id = NewJobId();
  if (!job_id.ok()) {
    Print(tool, std::string(job_id.status().message()));
    return kStartError;
  }
  options.job_id = *job_id;
  options.cleanup = conduit.cleanup;
  options.same_layout = env::GetBool(kSameLayoutVar, true);

  if (*spawner == SpawnerKind::kFork) {
    if (opts.verbose) {
      Print(tool, absl::StrFormat("fork spawner: %d rank(s) of %s on this "
                                  "host; exit timeout %s",
                                  ranks, ShellJoin(*program),
                                  absl::FormatDuration(options.exit_timeout)));
    }
    if (opts.test_only) {
      for (Rank r = 0; r < ranks; ++r) {
        std::printf("rank %u: %s\n", r, ShellJoin(*program).c_str());
      }
      return 0;
    }
    ControlNode node(options);
    absl::Status s = node.Init();
    if (s.ok()) s = node.StartLocalRanks(0, ranks, *program);
    if (!s.ok()) {
      Print(tool, absl::StrFormat("cannot start the job: %s", s.message()));
      node.KillEverything();  // the ranks already started
      node.Run();
      return kStartError;
    }
    return node.Run();
  }

  // ssh spawner.
  absl::StatusOr<HostList> hosts = HostListFromEnvironment(&getenv);
  if (!hosts.ok()) {
    Print(tool, absl::StrFormat("-spawner=ssh: %s", hosts.status().message()));
    return kUsageError;
  }
  absl::StatusOr<std::vector<HostRanks>> layout =
      LayOutRanks(opts.ranks, opts.nodes, *hosts);
  if (!layout.ok()) {
    Print(tool, std::string(layout.status().message()));
    return kUsageError;
  }
  absl::StatusOr<SshSettings> ssh =
      SshSettingsFromEnvironment(&getenv, CurrentDirectory());
  if (!ssh.ok()) {
    Print(tool, std::string(ssh.status().message()));
    return kUsageError;
  }
  absl::StatusOr<uint64_t> token = SecureRandom64();
  if (!token.ok()) {
    Print(tool, std::string(token.status().message()));
    return kStartError;
  }
  AgentParams params;
  params.parent_address = DefaultAdvertisedAddress();
  // Only the advertised address listens: the port is not offered on every
  // network this host is on.
  std::string listen_note;
  absl::StatusOr<Listener> listener =
      ListenOn(params.parent_address, &listen_note);
  if (!listener.ok()) {
    Print(tool, std::string(listener.status().message()));
    return kStartError;
  }
  if (!listen_note.empty() && opts.verbose) Print(tool, listen_note);
  params.parent_port = listener->port;
  params.job_size = ranks;
  params.hosts = HostNames(*layout);
  params.topology = ssh->topology;
  params.out_degree = ssh->out_degree;
  params.job_id = options.job_id;
  params.verbose = opts.verbose;
  std::vector<std::string> env = PropagatedEnvironment(environ, opts.env_vars);
  env.push_back(absl::StrFormat("%s=%s", kPropagateVar,
                                absl::StrJoin(opts.env_vars, ",")));
  std::vector<AgentLaunch> agents =
      PlanAgents(-1, *ssh, *layout, params, env, *program);
  if (opts.verbose) {
    Print(tool,
          absl::StrFormat("ssh spawner: %d rank(s) on %d host(s) from "
                          "%s, %s fan-out; agents call back on %s:%d",
                          ranks, layout->size(), hosts->source,
                          ssh->topology == SshTopology::kFlat ? "flat" : "tree",
                          params.parent_address, params.parent_port));
    for (const HostRanks& h : *layout) {
      Print(tool, absl::StrFormat("  %s: %s", h.host,
                                  RankRange(h.first_rank, h.count)));
    }
  }
  if (opts.test_only) {
    for (const AgentLaunch& a : agents)
      std::printf("%s\n", ShellJoin(a.argv).c_str());
    close(listener->fd);
    return 0;
  }
  ControlNode node(options);
  absl::Status s = node.Init();
  if (s.ok()) s = node.StartAgents(std::move(agents), listener->fd, *token);
  if (!s.ok()) {
    Print(tool, absl::StrFormat("cannot start the job: %s", s.message()));
    node.KillEverything();
    node.Run();
    return kStartError;
  }
  return node.Run();
}

}  // namespace gexrt::spawn
