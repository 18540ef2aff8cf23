#include "bootstrap/spawn/ssh_plan.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bootstrap/spawn/host_list.h"
#include "bootstrap/spawn/shell_words.h"

namespace gexrt::spawn {

absl::StatusOr<SshSettings> SshSettingsFromEnvironment(
    const std::function<const char*(const char*)>& getenv,
    const std::string& cwd) {
  SshSettings s;
  const char* cmd = getenv("GASNET_SSH_CMD");
  const std::string shell = (cmd && *cmd) ? cmd : "ssh";
  s.command.push_back(shell);
  const size_t slash = shell.rfind('/');
  const std::string base =
      slash == std::string::npos ? shell : shell.substr(slash + 1);
  if (base == "ssh") {
    for (const char* o :
         {"-o", "StrictHostKeyChecking=no", "-o", "BatchMode=yes"}) {
      s.command.push_back(o);
    }
  }
  if (const char* opts = getenv("GASNET_SSH_OPTIONS"); opts && *opts) {
    auto words = SplitShellWords(opts);
    if (!words.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "GASNET_SSH_OPTIONS='%s': %s", opts, words.status().message()));
    }
    for (std::string& w : *words) s.command.push_back(std::move(w));
  }
  const char* dir = getenv("GASNET_SSH_REMOTE_PATH");
  s.remote_dir = (dir && *dir) ? dir : cwd;
  if (const char* t = getenv("GASNET_SSH_TOPOLOGY"); t && *t) {
    if (std::strcmp(t, "flat") == 0) {
      s.topology = SshTopology::kFlat;
    } else if (std::strcmp(t, "nary") == 0) {
      s.topology = SshTopology::kNary;
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "GASNET_SSH_TOPOLOGY='%s' is not valid: use 'flat' or 'nary'", t));
    }
  }
  if (const char* d = getenv("GASNET_SSH_OUT_DEGREE"); d && *d) {
    uint32_t v = 0;
    if (!absl::SimpleAtoi(d, &v) || v > 1000000) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "GASNET_SSH_OUT_DEGREE='%s' is not valid: use a number of hosts "
          "(0 = unlimited)",
          d));
    }
    s.out_degree = v;
  }
  return s;
}

std::vector<uint32_t> TreeChildren(int64_t parent, uint32_t hosts,
                                   SshTopology topology, uint32_t degree) {
  std::vector<uint32_t> out;
  if (topology == SshTopology::kFlat) {
    if (parent < 0) {
      for (uint32_t h = 0; h < hosts; ++h) out.push_back(h);
    }
    return out;
  }
  if (parent < 0) {
    if (hosts > 0) out.push_back(0);
    return out;
  }
  if (degree == 0) {
    if (parent == 0) {
      for (uint32_t h = 1; h < hosts; ++h) out.push_back(h);
    }
    return out;
  }
  const uint64_t first = static_cast<uint64_t>(parent) * degree + 1;
  for (uint64_t h = first; h < first + degree && h < hosts; ++h) {
    out.push_back(static_cast<uint32_t>(h));
  }
  return out;
}

std::vector<uint32_t> Subtree(uint32_t host, uint32_t hosts,
                              SshTopology topology, uint32_t degree) {
  std::vector<uint32_t> out;
  std::vector<uint32_t> todo = {host};
  while (!todo.empty()) {
    const uint32_t h = todo.back();
    todo.pop_back();
    out.push_back(h);
    for (uint32_t c : TreeChildren(h, hosts, topology, degree)) {
      todo.push_back(c);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> EncodeAgentArgs(const AgentParams& p) {
  return {
      absl::StrFormat("%d", p.host_index),
      absl::StrFormat("%s:%d", p.parent_address, p.parent_port),
      absl::StrFormat("%d", p.job_size),
      absl::StrJoin(p.hosts, ","),
      p.topology == SshTopology::kFlat ? "flat" : "nary",
      absl::StrFormat("%d", p.out_degree),
      p.job_id,
      p.verbose ? "1" : "0",
  };
}

absl::StatusOr<AgentParams> DecodeAgentArgs(
    absl::Span<const std::string> args) {
  auto bad = [](const char* what, const std::string& value) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: bad %s '%s'", kAgentFlag, what, value));
  };
  if (args.size() != 8) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s takes 8 arguments, got %d (it is for gasnetrun's own use)",
        kAgentFlag, args.size()));
  }
  AgentParams p;
  if (!absl::SimpleAtoi(args[0], &p.host_index)) {
    return bad("host index", args[0]);
  }
  const size_t colon = args[1].rfind(':');
  uint32_t port = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(args[1].substr(colon + 1), &port) || port == 0 ||
      port > 65535) {
    return bad("parent address", args[1]);
  }
  p.parent_address = args[1].substr(0, colon);
  p.parent_port = static_cast<uint16_t>(port);
  if (!absl::SimpleAtoi(args[2], &p.job_size) || p.job_size == 0) {
    return bad("job size", args[2]);
  }
  for (absl::string_view h : absl::StrSplit(args[3], ',')) {
    if (!IsValidHostToken(std::string_view(h.data(), h.size()))) {
      return bad("host list", args[3]);
    }
    p.hosts.emplace_back(h);
  }
  if (p.host_index >= p.hosts.size()) return bad("host index", args[0]);
  if (args[4] == "flat") {
    p.topology = SshTopology::kFlat;
  } else if (args[4] == "nary") {
    p.topology = SshTopology::kNary;
  } else {
    return bad("topology", args[4]);
  }
  if (!absl::SimpleAtoi(args[5], &p.out_degree)) {
    return bad("out degree", args[5]);
  }
  p.job_id = args[6];
  if (args[7] != "0" && args[7] != "1") return bad("verbose flag", args[7]);
  p.verbose = args[7] == "1";
  return p;
}

std::vector<std::string> PropagatedEnvironment(
    char** environ, const std::vector<std::string>& extra_names) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "GASNET_", 7) == 0) out.emplace_back(*e);
  }
  for (const std::string& name : extra_names) {
    if (name.rfind("GASNET_", 0) == 0) continue;  // already there
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      if (std::strncmp(*e, name.c_str(), name.size()) == 0 &&
          (*e)[name.size()] == '=') {
        out.emplace_back(*e);
        break;
      }
    }
  }
  return out;
}

std::string RemoteCommand(const std::string& remote_dir,
                          const std::vector<std::string>& env,
                          const std::string& launcher,
                          const std::vector<std::string>& agent_args,
                          const std::vector<std::string>& program) {
  // The shell's own export, not env(1): env would take a launcher path that
  // contains '=' for one more assignment. "cd --" keeps a directory that
  // starts with '-' from being read as an option.
  std::string cmd = "cd -- " + ShellQuote(remote_dir) + " && ";
  if (!env.empty()) cmd += "export " + ShellJoin(env) + " && ";
  std::vector<std::string> words = {launcher, kAgentFlag};
  words.insert(words.end(), agent_args.begin(), agent_args.end());
  words.push_back("--");
  words.insert(words.end(), program.begin(), program.end());
  return cmd + "exec " + ShellJoin(words);
}

std::vector<std::string> RemoteShellArgv(const SshSettings& settings,
                                         const std::string& host,
                                         const std::string& remote_command) {
  std::vector<std::string> argv = settings.command;
  argv.push_back(host);
  argv.push_back(remote_command);
  return argv;
}

}  // namespace gexrt::spawn
