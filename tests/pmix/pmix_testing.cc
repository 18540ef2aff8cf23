#include "tests/pmix/pmix_testing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace gexrt::testing {
namespace {

// How long the ranks of a job may outlive its launcher (slurmstepd kills a
// failed step's tasks asynchronously), and daemons may take to stop.
constexpr absl::Duration kDrainLimit = absl::Seconds(20);
constexpr absl::Duration kPoll = absl::Milliseconds(20);

std::vector<std::string> MergedEnv(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const std::string& s : extra) {
      if (s.substr(0, s.find('=')) == name) overridden = true;
    }
    if (!overridden) env.push_back(entry);
  }
  // "NAME" alone unsets NAME; later entries win.
  for (const std::string& s : extra) {
    if (s.find('=') == std::string::npos) continue;
    const std::string name = s.substr(0, s.find('='));
    std::erase_if(env, [&](const std::string& e) {
      return e.substr(0, e.find('=')) == name;
    });
    env.push_back(s);
  }
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// The process's command line, words joined by spaces; empty once it has
// gone. Read with read(2): a process that exits while its file is read
// makes the read fail (ESRCH), which std::filebuf reports by throwing.
std::string Cmdline(pid_t pid) {
  std::string s;
  const int fd =
      open(absl::StrFormat("/proc/%d/cmdline", pid).c_str(), O_RDONLY);
  if (fd < 0) return s;
  char buf[4096];
  ssize_t got;
  while ((got = read(fd, buf, sizeof buf)) > 0) s.append(buf, got);
  close(fd);
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  return s;
}

bool Alive(pid_t pid) {
  std::ifstream f(absl::StrFormat("/proc/%d/stat", pid));
  std::string stat;
  if (!std::getline(f, stat)) return false;
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  const char state = stat[close + 2];
  return state != 'Z' && state != 'X';
}

// Whether `pid` still runs code of its own: it exists, is not a zombie,
// has not begun its exit in the kernel (PF_EXITING in stat's flags) and
// has no SIGKILL pending (status's SigPnd/ShdPnd).
bool RunningItsOwnCode(pid_t pid) {
  if (!Alive(pid)) return false;
  std::ifstream f(absl::StrFormat("/proc/%d/stat", pid));
  std::string stat;
  if (!std::getline(f, stat)) return false;
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return false;
  // After ')': state (field 3), ppid, pgrp, session, tty, tpgid, flags (9).
  std::vector<std::string> fields =
      absl::StrSplit(stat.substr(close + 2), ' ', absl::SkipEmpty());
  constexpr uint64_t kPfExiting = 0x4;
  uint64_t flags = 0;
  if (fields.size() > 6 && absl::SimpleAtoi(fields[6], &flags) &&
      (flags & kPfExiting) != 0) {
    return false;
  }
  std::ifstream status(absl::StrFormat("/proc/%d/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (!absl::StartsWith(line, "SigPnd:") &&
        !absl::StartsWith(line, "ShdPnd:")) {
      continue;
    }
    uint64_t pending = 0;
    if (absl::SimpleHexAtoi(absl::StripAsciiWhitespace(line.substr(7)),
                            &pending) &&
        (pending & (uint64_t{1} << (SIGKILL - 1))) != 0) {
      return false;
    }
  }
  return Alive(pid);
}

// The ranks of `out` ("rank R: job=... pid=P") still running `program`.
std::vector<std::string> RanksStillRunning(const std::string& out,
                                           const std::string& program) {
  std::vector<std::string> running;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    const size_t job = line.find(": job=");
    const size_t at = line.rfind(" pid=");
    if (!absl::StartsWith(line, "rank ") || job == absl::string_view::npos ||
        at == absl::string_view::npos) {
      continue;
    }
    int pid = 0;
    if (!absl::SimpleAtoi(line.substr(at + 5), &pid) || pid <= 0) continue;
    if (RunningItsOwnCode(pid) &&
        Cmdline(pid).find(program) != std::string::npos) {
      running.push_back(absl::StrCat(line.substr(0, job), " pid ", pid));
    }
  }
  return running;
}

// Live processes (not this one) whose command line contains `needle`.
std::vector<pid_t> ProcessesRunning(const std::string& needle) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    if (Cmdline(pid).find(needle) != std::string::npos && Alive(pid)) {
      out.push_back(pid);
    }
  }
  closedir(d);
  return out;
}

// Waits (a bounded poll for a condition) until nothing runs `needle`;
// returns "pid cmdline" of what still does, after killing it.
std::vector<std::string> DrainProcesses(const std::string& needle) {
  const absl::Time deadline = absl::Now() + kDrainLimit;
  std::vector<pid_t> left = ProcessesRunning(needle);
  while (!left.empty() && absl::Now() < deadline) {
    absl::SleepFor(kPoll);
    left = ProcessesRunning(needle);
  }
  std::vector<std::string> named;
  for (pid_t p : left) {
    named.push_back(absl::StrCat(p, " ", Cmdline(p)));
    kill(p, SIGKILL);
  }
  return named;
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

bool WriteFile(const std::string& path, const std::string& text, int mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0) return false;
  const bool ok =
      write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

std::string RunForOutput(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) {
  remove(path);
  return 0;
}

}  // namespace

std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  // Daemons live in sbin, which a test's PATH may lack.
  dirs += ":/usr/sbin:/sbin:/usr/bin";
  for (absl::string_view d : absl::StrSplit(dirs, ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(d, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

PmixJobResult RunPmixJob(const PmixJobSpec& spec) {
  PmixJobResult result;
  std::vector<std::string> argv = spec.launcher;
  argv.push_back(spec.program);
  argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  result.command = absl::StrJoin(argv, " ");
  if (spec.launcher.empty() || spec.launcher[0].empty()) {
    result.err = "no launcher";
    return result;
  }
  std::vector<std::string> env = MergedEnv(spec.env);
  std::vector<char*> argp = Pointers(argv), envp = Pointers(env);
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return result;
  const pid_t pid = fork();
  if (pid == 0) {
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execve(argp[0], argp.data(), envp.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  const absl::Time deadline = absl::Now() + spec.limit;
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    pollfd fds[2] = {{out_open ? out[0] : -1, POLLIN, 0},
                     {err_open ? err[0] : -1, POLLIN, 0}};
    const int r = poll(fds, 2, 20);
    if (r < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents == 0) continue;
      const ssize_t k = read(fds[i].fd, buf, sizeof buf);
      if (k > 0) {
        (i == 0 ? result.out : result.err).append(buf, k);
      } else if (k == 0 || errno != EINTR) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
    if (absl::Now() > deadline) {
      kill(pid, SIGKILL);
      result.err += "\n[pmix_testing: killed the launcher after the limit]\n";
      break;
    }
  }
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.alive_at_return = RanksStillRunning(result.out, spec.program);
  result.exit_code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.survivors = DrainProcesses(spec.program);
  return result;
}

std::vector<std::string> RanksRunning(const std::vector<pid_t>& pids,
                                      const std::string& program) {
  std::vector<std::string> running;
  for (pid_t pid : pids) {
    if (RunningItsOwnCode(pid) &&
        Cmdline(pid).find(program) != std::string::npos) {
      running.push_back(absl::StrCat("pid ", pid));
    }
  }
  return running;
}

std::vector<std::string> MpirunLauncher(int n) {
  const std::string mpirun = FindProgram("mpirun");
  if (mpirun.empty()) return {};
  return {mpirun, "--allow-run-as-root", "--oversubscribe", "-n",
          absl::StrCat(n)};
}

std::vector<std::string> MpirunEnv() {
  return {"PMIX_MCA_gds=hash", "TMPDIR=/tmp"};
}

std::vector<std::string> MpirunTwoHostsLauncher(int n, const std::string& dir) {
  std::vector<std::string> argv = MpirunLauncher(n);
  if (argv.empty()) return {};
  // Each "host"'s daemon (orted) gets a TMPDIR of its own: two daemons on
  // one machine otherwise race to create one session directory ("mkdir
  // ... File exists") and write one hwloc topology file (a daemon then
  // crashes in hwloc_shmem_topology_write).
  for (const char* host : {"a", "b"}) {
    mkdir(absl::StrCat(dir, "/", host).c_str(), 0700);
  }
  const std::string agent = dir + "/rsh_agent.sh";
  if (!WriteFile(agent,
                 absl::StrCat("#!/bin/sh\nexport TMPDIR=", dir,
                              "/\"$1\"\nshift\nexec sh -c \"$*\"\n"),
                 0755)) {
    return {};
  }
  argv.insert(argv.end(), {"--mca", "plm_rsh_agent", agent, "--host",
                           absl::StrFormat("a:%d,b:%d", n / 2, n - n / 2)});
  return argv;
}

void RemoveTree(const std::string& dir) {
  if (!dir.empty()) nftw(dir.c_str(), &RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

std::string NewTestJobId() {
  std::random_device random;
  return absl::StrFormat("GEX_JOB_ID=pmixt%08x%d", random(), getpid());
}

// ---------------------------------------------------------------------------
// SlurmCluster

absl::Status SlurmCluster::StartDaemon(const std::string& name,
                                       const std::vector<std::string>& argv) {
  const std::string log = absl::StrCat(dir_, "/", name, ".out");
  std::vector<std::string> args = argv;
  std::vector<std::string> env = MergedEnv({ConfEnv()});
  std::vector<char*> argp = Pointers(args), envp = Pointers(env);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", name));
  if (pid == 0) {
    // Dies with the test, whatever path the test takes out.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    const int devnull = open("/dev/null", O_RDONLY);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(devnull, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    execve(argp[0], argp.data(), envp.data());
    _exit(127);
  }
  daemons_.push_back({name, pid});
  return absl::OkStatus();
}

std::string SlurmCluster::LogTail(const std::string& name) const {
  std::ifstream f(absl::StrCat(dir_, "/", name, ".out"));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(f, line)) lines.push_back(line);
  const size_t from = lines.size() > 4 ? lines.size() - 4 : 0;
  return absl::StrJoin(lines.begin() + from, lines.end(), " | ");
}

absl::Status SlurmCluster::Start(int nodes) {
  if (nodes < 1 || nodes > 2) {
    return absl::InvalidArgumentError("SlurmCluster: 1 or 2 nodes");
  }
  nodes_.clear();
  if (nodes == 1) {
    nodes_.push_back("gexnode");
  } else {
    nodes_ = {"gexn1", "gexn2"};
  }
  for (const char* p : {"munged", "slurmctld", "slurmd", "srun", "sinfo"}) {
    if (FindProgram(p).empty()) {
      return absl::UnavailableError(
          absl::StrCat(p, " is not installed (scripts/install_deps.sh)"));
    }
  }
  // Under /tmp, not TEST_TMPDIR: munged's socket path must be short.
  char templ[] = "/tmp/gexslurm.XXXXXX";
  if (mkdtemp(templ) == nullptr) {
    return absl::InternalError("cannot create a directory under /tmp");
  }
  dir_ = templ;
  conf_ = dir_ + "/slurm.conf";
  for (const char* sub : {"/munge", "/state", "/spool", "/tmp"}) {
    mkdir((dir_ + sub).c_str(), 0700);
  }
  // Per node (%n): two slurmd on one host need their own spool, and the
  // pmix plugin its own TmpFS (else "Cannot create directory ...
  // spmix_appdir ... File exists").
  for (const std::string& node : nodes_) {
    for (const char* sub : {"/spool/", "/tmp/"}) {
      mkdir(absl::StrCat(dir_, sub, node).c_str(), 0700);
    }
  }
  std::string key(1024, '\0');
  std::random_device random;
  for (char& c : key) c = static_cast<char>(random());
  if (!WriteFile(dir_ + "/munge/munge.key", key, 0400)) {
    return absl::InternalError("cannot write the munge key");
  }
  const std::string socket = dir_ + "/munge/sock";
  if (absl::Status s =
          StartDaemon("munged", {FindProgram("munged"), "-F", "--force",
                                 "--socket=" + socket,
                                 "--key-file=" + dir_ + "/munge/munge.key",
                                 "--pid-file=" + dir_ + "/munge/pid",
                                 "--log-file=" + dir_ + "/munge/log",
                                 "--seed-file=" + dir_ + "/munge/seed"});
      !s.ok()) {
    return s;
  }
  {
    const absl::Time deadline = absl::Now() + kDrainLimit;
    struct stat st;
    while (stat(socket.c_str(), &st) != 0) {
      if (absl::Now() > deadline || !Alive(daemons_.back().second)) {
        return absl::UnavailableError(
            absl::StrCat("munged did not start: ", LogTail("munged")));
      }
      absl::SleepFor(kPoll);
    }
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  std::string node_lines;
  for (const std::string& node : nodes_) {
    absl::StrAppend(&node_lines, "NodeName=", node, " NodeHostname=", host,
                    " NodeAddr=127.0.0.1 Port=", FreePort(), " CPUs=", cpus,
                    " State=UNKNOWN\n");
  }
  const std::string conf = absl::StrCat(
      "ClusterName=gextest\n", "SlurmctldHost=localhost\n",
      "SlurmctldPort=", FreePort(), "\n", "SlurmUser=root\nSlurmdUser=root\n",
      "AuthType=auth/munge\nCredType=cred/munge\n", "AuthInfo=socket=", socket,
      "\n", "StateSaveLocation=", dir_, "/state\n", "SlurmdSpoolDir=", dir_,
      "/spool/%n\n", "SlurmctldPidFile=", dir_, "/slurmctld.pid\n",
      "SlurmdPidFile=", dir_, "/slurmd.%n.pid\n", "SlurmctldLogFile=", dir_,
      "/slurmctld.log\n", "SlurmdLogFile=", dir_, "/slurmd.%n.log\n",
      "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n",
      "SelectType=select/cons_tres\nSchedulerType=sched/builtin\n",
      "MpiDefault=none\nReturnToService=2\nKillOnBadExit=1\n", "TmpFS=", dir_,
      "/tmp/%n\n", node_lines,
      "PartitionName=gex Nodes=", absl::StrJoin(nodes_, ","),
      " Default=YES MaxTime=INFINITE State=UP\n");
  if (!WriteFile(conf_, conf, 0644)) {
    return absl::InternalError("cannot write slurm.conf");
  }
  if (absl::Status s = StartDaemon(
          "slurmctld", {FindProgram("slurmctld"), "-D", "-i", "-f", conf_});
      !s.ok()) {
    return s;
  }
  for (const std::string& node : nodes_) {
    const std::string name =
        nodes_.size() == 1 ? std::string("slurmd") : "slurmd." + node;
    if (absl::Status s = StartDaemon(
            name, {FindProgram("slurmd"), "-D", "-f", conf_, "-N", node});
        !s.ok()) {
      return s;
    }
  }
  return WaitForIdleNode();
}

absl::Status SlurmCluster::WaitForIdleNode() {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  const std::string sinfo = absl::StrCat(ConfEnv(), " ", FindProgram("sinfo"),
                                         " -h -N -o %t 2>/dev/null");
  while (true) {
    for (const auto& [name, pid] : daemons_) {
      if (!Alive(pid)) {
        return absl::UnavailableError(
            absl::StrCat(name, " exited at start: ", LogTail(name)));
      }
    }
    const std::string state = RunForOutput(sinfo);
    size_t idle = 0;
    for (absl::string_view line :
         absl::StrSplit(state, '\n', absl::SkipWhitespace())) {
      if (absl::StripAsciiWhitespace(line) == "idle") ++idle;
    }
    if (idle == nodes_.size()) return absl::OkStatus();
    if (absl::Now() > deadline) {
      std::string logs = absl::StrCat("slurmctld: ", LogTail("slurmctld"));
      for (const auto& [name, pid] : daemons_) {
        if (absl::StartsWith(name, "slurmd")) {
          absl::StrAppend(&logs, "; ", name, ": ", LogTail(name));
        }
      }
      return absl::UnavailableError(
          absl::StrCat("the Slurm nodes did not all become idle within 30 s "
                       "(sinfo: '",
                       state, "'); ", logs));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

void SlurmCluster::Stop() {
  if (daemons_.empty() && dir_.empty()) return;
  // slurmstepd lingers a moment after each step; let it finish before its
  // slurmd goes.
  (void)DrainProcesses("slurmstepd");
  for (auto it = daemons_.rbegin(); it != daemons_.rend(); ++it) {
    const pid_t pid = it->second;
    kill(pid, SIGTERM);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (waitpid(pid, nullptr, WNOHANG) == 0) {
      if (absl::Now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        break;
      }
      absl::SleepFor(kPoll);
    }
  }
  daemons_.clear();
  // slurmctld's helper (slurmscriptd) ends with it.
  if (!dir_.empty()) {
    (void)DrainProcesses(conf_);
    nftw(dir_.c_str(), &RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
    dir_.clear();
  }
}

std::vector<std::string> SlurmCluster::Srun(int n) const {
  return {FindProgram("srun"), "--mpi=pmix", "-K1", "-O", "-n",
          absl::StrCat(n)};
}

std::vector<std::string> SlurmCluster::SrunAcrossNodes(int n) const {
  std::vector<std::string> argv = Srun(n);
  argv.insert(argv.end() - 2, {"-N", absl::StrCat(nodes_.size())});
  return argv;
}

std::string SlurmCluster::ConfEnv() const {
  return absl::StrCat("SLURM_CONF=", conf_);
}

}  // namespace gexrt::testing
