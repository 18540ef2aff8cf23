// The ssh spawner's plan: which remote-shell command starts which host's
// agent, in a flat or tree fan-out, and the command line the remote shell
// runs there. Pure functions of the settings, so a dry run (-t) and the
// tests see exactly what would run.
//
// Settings (GASNet's ssh-spawner variables):
//   GASNET_SSH_CMD          the remote shell, without arguments (default
//                           "ssh"; looked up in PATH unless it has a '/').
//   GASNET_SSH_OPTIONS      options placed before the host name, split with
//                           shell quoting rules. For OpenSSH ("ssh") the
//                           options "-o StrictHostKeyChecking=no -o
//                           BatchMode=yes" come first, so it never prompts.
//   GASNET_SSH_REMOTE_PATH  the working directory on every host (default:
//                           the launcher's current directory).
//   GASNET_SSH_TOPOLOGY     "flat" (default): gasnetrun starts every host's
//                           agent itself; "nary": gasnetrun starts host 0's
//                           agent and each agent starts its children in a
//                           tree of degree GASNET_SSH_OUT_DEGREE. (GASNet
//                           fixes this at configure time; we read it at run
//                           time.)
//   GASNET_SSH_OUT_DEGREE   the tree's degree (default 32; 0 = unlimited:
//                           host 0 starts every other host).
// The job's environment travels in the remote command: every GASNET_*
// variable plus those named with -E.
#ifndef GEX_BOOTSTRAP_SPAWN_SSH_PLAN_H_
#define GEX_BOOTSTRAP_SPAWN_SSH_PLAN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace gexrt::spawn {

enum class SshTopology { kFlat, kNary };

struct SshSettings {
  // The remote shell and its options; the host and the command follow.
  std::vector<std::string> command;
  std::string remote_dir;
  SshTopology topology = SshTopology::kFlat;
  uint32_t out_degree = 32;
};

// Reads the variables above; `cwd` is the default remote directory. Errors
// name the variable (an unterminated quote in GASNET_SSH_OPTIONS, an
// unknown topology, a bad degree).
absl::StatusOr<SshSettings> SshSettingsFromEnvironment(
    const std::function<const char*(const char*)>& getenv,
    const std::string& cwd);

// The hosts whose agents `parent` starts: parent -1 is gasnetrun itself.
std::vector<uint32_t> TreeChildren(int64_t parent, uint32_t hosts,
                                   SshTopology topology, uint32_t degree);
// `host` and every host below it in the tree, ascending.
std::vector<uint32_t> Subtree(uint32_t host, uint32_t hosts,
                              SshTopology topology, uint32_t degree);

// What an agent needs to know, passed on its command line. The job token
// is not among them: a command line is public (ps, /proc/PID/cmdline on
// both hosts), so the token travels on the remote shell's stdin instead
// (job_secret.h).
struct AgentParams {
  uint32_t host_index = 0;
  std::string parent_address;
  uint16_t parent_port = 0;
  uint32_t job_size = 1;
  std::vector<std::string> hosts;  // the job's hosts, in order
  SshTopology topology = SshTopology::kFlat;
  uint32_t out_degree = 0;
  std::string job_id;
  bool verbose = false;
};

// The agent flag that starts a launcher binary in agent mode.
inline constexpr char kAgentFlag[] = "--gex-spawn-agent";

// The arguments after kAgentFlag, and back. Decoding checks everything (an
// agent may be started by hand): errors say which argument is wrong.
std::vector<std::string> EncodeAgentArgs(const AgentParams& params);
absl::StatusOr<AgentParams> DecodeAgentArgs(absl::Span<const std::string> args);

// The environment entries ("NAME=value") that travel to remote hosts:
// every GASNET_* variable of `environ`, then each variable named in
// `extra_names` that is set.
std::vector<std::string> PropagatedEnvironment(
    char** environ, const std::vector<std::string>& extra_names);

// The one command line the remote shell runs:
//   cd -- DIR && export NAME=value... && exec LAUNCHER --gex-spawn-agent
//   ARGS -- PROGRAM ARGS
// every word quoted for sh (the export part is left out when `env` is
// empty).
std::string RemoteCommand(const std::string& remote_dir,
                          const std::vector<std::string>& env,
                          const std::string& launcher,
                          const std::vector<std::string>& agent_args,
                          const std::vector<std::string>& program);

// The full argv of the remote shell for `host`.
std::vector<std::string> RemoteShellArgv(const SshSettings& settings,
                                         const std::string& host,
                                         const std::string& remote_command);

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_SSH_PLAN_H_
