// A standing fault-injection suite (issue 38, item 3): seeded trials, each a
// job of fault_client started by gasnetrun_<conduit> (fork or ssh spawner),
// with one fault injected at a random moment of one phase of the job's life,
// and every job judged against the same invariants. It exists because the exit
// tests (tests/exit) prove each exit path at a chosen moment; faults arrive
// at any moment, and only many drawn moments find the windows between.
//
// Faults (kinds): a rank's SIGKILL, SIGTERM or SIGINT; SIGSTOP then SIGCONT
// to a rank; a rank that calls exit(C) alone; SIGTERM, SIGINT or SIGKILL to
// the launcher; garbage written to every TCP port the job's processes
// listen on (the launcher's and the ranks'); a /dev/shm too small for the
// job (a private mount namespace with a 64 KiB tmpfs, where the test may
// make one); and "none", the control. Phases: startup, traffic, flood,
// collective, exit (fault_client.c); the fault lands a drawn 0-10 ms after
// the target rank enters the phase, and the table records where it landed.
//
// Invariants of every trial (violations by kind):
//   hang        the job ended by itself (the runner kills it at 60 s)
//   late        it ended within kEndBound of the fault (see there)
//   code        the documented exit code (ExpectedCodes)
//   survivors   no process of the job outlived the launcher
//   leak        no /dev/shm/GASNT<job id>.* and no GASNT* in GASNET_TMPDIR
//   lost        every Request whose Reply came back ran its handler
//   duplicated  no handler ran twice for one Request
//   incomplete  a job that ends with 0 delivered every Request and printed
//               every rank's "done" line
//   crash       no assertion, "malformed" message or fatal-signal report
//               on stderr beyond what the fault itself explains
//
// The instance comes from the environment (fault_tests.bzl): FAULTS_CONDUIT,
// FAULTS_LAUNCHER (runfiles path), FAULTS_ENV ("NAME=value" lines),
// FAULTS_KINDS (comma list; empty: all), FAULTS_KNOWN_BUGS ("<glob over
// kind@phase>=<why>" lines: such draws are redrawn and counted as
// avoided), FAULTS_SEED, FAULTS_TRIALS, FAULTS_RANKS, FAULTS_MSGS,
// FAULTS_SPAWNER (fork or ssh), and for namespace hosts FAULTS_SSH_CMD,
// FAULTS_SSH_SERVERS, FAULTS_SSH_OPTIONS, FAULTS_MASTERIP and
// FAULTS_LAUNCH_PREFIX (set by netns_faults_test.sh).
// FAULTS_ONLY_TRIAL=i reruns trial i of the seed alone; FAULTS_VERBOSE=1
// describes every trial (its output included), not only failed ones.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

extern char** environ;

namespace gexrt::testing {
namespace {

// The jobs' GASNET_EXITTIMEOUT (seconds): the smallest the formula gives.
constexpr int kExitTimeoutS = 2;
// The bound on the time from a fault to the job's end. exit/README.md:
// a non-collective exit or a dead rank ends the job "within about a
// second"; ranks that stop answering are ended by the alarm at
// GASNET_EXITTIMEOUT, and the launcher kills what is left 1 s after that.
// So the documented worst case is 1 s + GASNET_EXITTIMEOUT + 1 s; past it
// the trial counts as late. The table also reports how many trials took
// over 1 s and the largest time, as figures, not as failures.
constexpr absl::Duration kEndBound = absl::Seconds(1 + kExitTimeoutS + 1);
// A job that has not ended by then is killed by the runner (start-up of
// ranks loading libfabric or UCX on a loaded 2-core machine included).
constexpr absl::Duration kJobLimit = absl::Seconds(60);
constexpr char kKilledByRunner[] =
    "[job_runner: killed the launcher after the limit]";
constexpr int kShmBytes = 64 * 1024;

std::string FromEnv(const char* name, const std::string& fallback = "") {
  const char* value = std::getenv(name);
  return value == nullptr || *value == '\0' ? fallback : value;
}

int IntFromEnv(const char* name, int fallback) {
  int value = 0;
  return absl::SimpleAtoi(FromEnv(name), &value) ? value : fallback;
}

// ---------------------------------------------------------------------------
// Faults and phases.

enum class Kind {
  kNone,
  kRankKill,
  kRankTerm,
  kRankInt,
  kRankStopCont,
  kRankExitsAlone,
  kLauncherTerm,
  kLauncherInt,
  kLauncherKill,
  kGarbage,
  kFullShm,
};

struct KindInfo {
  Kind kind;
  const char* name;
  int signal;  // the signal sent, if any
};

const KindInfo kKinds[] = {
    {Kind::kNone, "none", 0},
    {Kind::kRankKill, "rank-SIGKILL", SIGKILL},
    {Kind::kRankTerm, "rank-SIGTERM", SIGTERM},
    {Kind::kRankInt, "rank-SIGINT", SIGINT},
    {Kind::kRankStopCont, "rank-SIGSTOP-SIGCONT", SIGSTOP},
    {Kind::kRankExitsAlone, "rank-exits-alone", 0},
    {Kind::kLauncherTerm, "launcher-SIGTERM", SIGTERM},
    {Kind::kLauncherInt, "launcher-SIGINT", SIGINT},
    {Kind::kLauncherKill, "launcher-SIGKILL", SIGKILL},
    {Kind::kGarbage, "garbage-connections", 0},
    {Kind::kFullShm, "full-dev-shm", 0},
};

const KindInfo& InfoOf(Kind kind) {
  for (const KindInfo& info : kKinds) {
    if (info.kind == kind) return info;
  }
  return kKinds[0];
}

const char* const kPhases[] = {"startup", "traffic", "flood", "collective",
                               "exit"};
constexpr int kNumPhases = 5;

bool IsLauncherKind(Kind k) {
  return k == Kind::kLauncherTerm || k == Kind::kLauncherInt ||
         k == Kind::kLauncherKill;
}

// ---------------------------------------------------------------------------
// The instance.

struct Instance {
  std::string conduit;
  std::string launcher;
  std::vector<std::string> env;
  std::vector<Kind> kinds;
  std::vector<std::pair<std::string, std::string>> known_bugs;  // glob, why
  uint64_t seed = 1;
  int trials = 4;
  int ranks = 2;
  int msgs = 200;
  int only_trial = -1;
  // "fork", or "ssh": the ssh spawner over tests/bootstrap/fake_ssh.sh with
  // two host labels on this machine (one launcher agent each, so the ssh
  // launcher's control port is among the garbage's targets).
  std::string spawner = "fork";
  // Over namespace hosts (netns_faults_test.sh): the remote shell, its
  // hosts and options, the master address, and the words run before the
  // launcher (nsenter into host 0). Defaults: fake_ssh.sh, "h1 h2".
  std::string ssh_cmd;
  std::string ssh_servers = "h1 h2";
  std::string ssh_options;
  std::string master_ip;
  std::vector<std::string> launch_prefix;
};

Instance ReadInstance() {
  Instance in;
  in.conduit = FromEnv("FAULTS_CONDUIT");
  in.launcher = FromEnv("FAULTS_LAUNCHER");
  in.env = absl::StrSplit(FromEnv("FAULTS_ENV"), '\n', absl::SkipEmpty());
  for (absl::string_view name :
       absl::StrSplit(FromEnv("FAULTS_KINDS"), ',', absl::SkipEmpty())) {
    for (const KindInfo& info : kKinds) {
      if (name == info.name) in.kinds.push_back(info.kind);
    }
  }
  if (in.kinds.empty()) {
    for (const KindInfo& info : kKinds) in.kinds.push_back(info.kind);
  }
  for (absl::string_view entry :
       absl::StrSplit(FromEnv("FAULTS_KNOWN_BUGS"), '\n', absl::SkipEmpty())) {
    const size_t eq = entry.find('=');
    in.known_bugs.emplace_back(std::string(entry.substr(0, eq)),
                               std::string(entry.substr(eq + 1)));
  }
  uint64_t seed = 1;
  if (absl::SimpleAtoi(FromEnv("FAULTS_SEED"), &seed)) in.seed = seed;
  in.trials = IntFromEnv("FAULTS_TRIALS", in.trials);
  in.ranks = IntFromEnv("FAULTS_RANKS", in.ranks);
  in.msgs = IntFromEnv("FAULTS_MSGS", in.msgs);
  in.only_trial = IntFromEnv("FAULTS_ONLY_TRIAL", -1);
  in.spawner = FromEnv("FAULTS_SPAWNER", "fork");
  in.ssh_cmd =
      FromEnv("FAULTS_SSH_CMD", Runfile("tests/bootstrap/fake_ssh.sh"));
  in.ssh_servers = FromEnv("FAULTS_SSH_SERVERS", in.ssh_servers);
  in.ssh_options = FromEnv("FAULTS_SSH_OPTIONS");
  in.master_ip = FromEnv("FAULTS_MASTERIP");
  in.launch_prefix =
      absl::StrSplit(FromEnv("FAULTS_LAUNCH_PREFIX"), ' ', absl::SkipEmpty());
  // Each instance draws its own sequence from one seed: FNV-1a of the
  // conduit and spawner mixed in.
  for (const char c : in.conduit + "/" + in.spawner) {
    in.seed = (in.seed ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return in;
}

// ---------------------------------------------------------------------------
// A trial: what is drawn from the seed.

struct Trial {
  int index = 0;
  Kind kind = Kind::kNone;
  int phase = 0;
  int target = 0;        // the rank hit (rank 0 for launcher)
  absl::Duration delay;  // after the target enters the phase
  absl::Duration stop;   // SIGSTOP's length
  int exit_code = 0;     // rank-exits-alone's code
  long exit_after = 0;   // ... at this step of the phase
  uint64_t garbage_seed = 0;
  int avoided = 0;  // redraws for known bugs
};

std::string TrialName(const Trial& t) {
  return absl::StrCat(InfoOf(t.kind).name, "@", kPhases[t.phase]);
}

// The steps of each phase of fault_client (for rank-exits-alone's draw).
long PhaseSteps(int phase, const Instance& in) {
  switch (phase) {
    case 1:
      return static_cast<long>(in.msgs) * (in.ranks - 1);
    case 2:
      return 4L * in.msgs;
    case 3:
      return std::max(8, in.msgs / 2);
    default:
      return 1;
  }
}

std::string KnownBugOf(const Instance& in, const std::string& name) {
  for (const auto& [glob, why] : in.known_bugs) {
    if (fnmatch(glob.c_str(), name.c_str(), 0) == 0) return why;
  }
  return "";
}

Trial DrawTrial(const Instance& in, int index) {
  std::mt19937_64 rng(in.seed * 1000003ULL + static_cast<uint64_t>(index));
  Trial t;
  t.index = index;
  // The kinds in turn from a drawn start, so a few trials cover as many
  // kinds as they can; the rest of the draw is random.
  const size_t first = std::mt19937_64(in.seed)() % in.kinds.size();
  for (int attempt = 0; attempt < 100; ++attempt) {
    t.kind = in.kinds[(first + index + attempt) % in.kinds.size()];
    // Full /dev/shm strikes at start-up by nature.
    t.phase = t.kind == Kind::kFullShm ? 0 : static_cast<int>(rng() % 5);
    if (KnownBugOf(in, TrialName(t)).empty()) break;
    ++t.avoided;
  }
  t.target = IsLauncherKind(t.kind) ? 0 : static_cast<int>(rng() % in.ranks);
  t.delay = absl::Microseconds(static_cast<int64_t>(rng() % 10000));
  t.stop = absl::Milliseconds(50 + static_cast<int64_t>(rng() % 250));
  t.exit_code = 3 + static_cast<int>(rng() % 60);
  t.exit_after = static_cast<long>(rng() % PhaseSteps(t.phase, in));
  t.garbage_seed = rng();
  return t;
}

// ---------------------------------------------------------------------------
// Files of the trial's directory.

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string PhaseFile(const std::string& dir, int phase, int rank) {
  return absl::StrFormat("%s/phase.%s.%d", dir, kPhases[phase], rank);
}

// The latest phase `rank` has entered (by its markers), or -1.
int LatestPhase(const std::string& dir, int rank) {
  for (int p = kNumPhases - 1; p >= 0; --p) {
    if (FileExists(PhaseFile(dir, p, rank))) return p;
  }
  return -1;
}

// When the marker was created (its mtime), as a conservative fault time
// for a rank that exits by itself at some step after it.
std::optional<absl::Time> MarkerTime(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return absl::TimeFromTimespec(st.st_mtim);
}

pid_t PidOf(const std::string& dir, int rank) {
  pid_t pid = 0;
  std::ifstream f(absl::StrFormat("%s/%d.pid", dir, rank));
  return f >> pid ? pid : 0;
}

// ---------------------------------------------------------------------------
// Garbage connections: every TCP port in LISTEN state whose socket belongs
// to a process below this one (the launcher and its ranks).

std::set<uint64_t> SocketInodes(const std::vector<pid_t>& pids) {
  std::set<uint64_t> inodes;
  for (pid_t pid : pids) {
    const std::string fd_dir = absl::StrCat("/proc/", pid, "/fd");
    DIR* d = opendir(fd_dir.c_str());
    if (d == nullptr) continue;
    while (dirent* e = readdir(d)) {
      char target[128];
      const std::string link = fd_dir + "/" + e->d_name;
      const ssize_t k = readlink(link.c_str(), target, sizeof target - 1);
      if (k <= 0) continue;
      target[k] = '\0';
      uint64_t inode = 0;
      if (std::sscanf(target, "socket:[%lu]", &inode) == 1) {
        inodes.insert(inode);
      }
    }
    closedir(d);
  }
  return inodes;
}

struct Port {
  bool v6;
  uint16_t port;
};

// Listening ports (any local address: connected to over loopback) of the
// sockets in `inodes`, from /proc/net/tcp and tcp6.
std::vector<Port> ListeningPorts(const std::set<uint64_t>& inodes) {
  std::vector<Port> ports;
  for (const bool v6 : {false, true}) {
    std::istringstream table(ReadFile(v6 ? "/proc/net/tcp6" : "/proc/net/tcp"));
    std::string line;
    std::getline(table, line);  // the header
    while (std::getline(table, line)) {
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout;
      uint64_t inode = 0;
      fields >> sl >> local >> remote >> state >> queues >> timer >> retr >>
          uid >> timeout >> inode;
      if (state != "0A" || inodes.count(inode) == 0) continue;
      const size_t colon = local.find(':');
      if (colon == std::string::npos) continue;
      ports.push_back({v6, static_cast<uint16_t>(std::strtoul(
                               local.c_str() + colon + 1, nullptr, 16))});
    }
  }
  return ports;
}

// Connects to each port over loopback, writes 1-2048 drawn bytes and
// closes; returns how many connections were made.
int SendGarbage(const std::vector<Port>& ports, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int made = 0;
  for (const Port& p : ports) {
    const int fd =
        socket(p.v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int rc;
    if (p.v6) {
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_port = htons(p.port);
      a.sin6_addr = in6addr_loopback;
      rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(p.port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc == 0) {
      ++made;
      std::vector<unsigned char> bytes(1 + rng() % 2048);
      for (unsigned char& b : bytes) b = static_cast<unsigned char>(rng());
      (void)!send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    close(fd);
  }
  return made;
}

// ---------------------------------------------------------------------------
// Running a trial.

struct Outcome {
  Trial trial;
  JobResult r;
  std::string dir;
  std::string job_id;
  bool injected = false;  // the fault reached a live target
  int landed = -1;        // the phase the target was in
  std::optional<absl::Time> fault_time;
  absl::Time end;
  absl::Duration after_fault = absl::ZeroDuration();
  int garbage_connections = 0;
  std::string note;                     // what the injector saw
  std::vector<std::string> violations;  // "kind: detail"
};

std::vector<std::string> InheritedRuntimeVariables() {
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("GASNET_", 0) == 0 || name.rfind("GEX_", 0) == 0) {
      names.push_back(name);
    }
  }
  return names;
}

// The injector: waits for the target to enter the phase, then the drawn
// delay (the fault's moment, not a synchronisation), then strikes.
void Inject(const Instance& in, Outcome& o, const std::atomic<bool>& done) {
  const Trial& t = o.trial;
  if (t.kind == Kind::kNone || t.kind == Kind::kFullShm) return;
  const std::string marker = PhaseFile(o.dir, t.phase, t.target);
  if (t.kind == Kind::kRankExitsAlone) return;  // the client does it
  while (!FileExists(marker)) {
    if (done.load()) {
      o.note = "the job ended before the phase";
      return;
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  absl::SleepFor(t.delay);
  o.landed = LatestPhase(o.dir, t.target);
  if (IsLauncherKind(t.kind)) {
    // job_runner signals the launcher once this file exists (it polls
    // every 20 ms: the measured time is an over-estimate by as much).
    o.fault_time = absl::Now();
    close(open((o.dir + "/launcher_go").c_str(), O_WRONLY | O_CREAT, 0644));
    o.injected = true;
    return;
  }
  if (t.kind == Kind::kGarbage) {
    const std::vector<Port> ports =
        ListeningPorts(SocketInodes(Descendants(getpid())));
    o.fault_time = absl::Now();
    o.garbage_connections = SendGarbage(ports, t.garbage_seed);
    o.injected = o.garbage_connections > 0;
    o.note = absl::StrCat(ports.size(), " listening port(s)");
    return;
  }
  const pid_t pid = PidOf(o.dir, t.target);
  if (pid <= 0 || LivePids({pid}).empty()) {
    o.note = "the target had ended";
    return;
  }
  o.fault_time = absl::Now();
  if (t.kind == Kind::kRankStopCont) {
    if (kill(pid, SIGSTOP) != 0) return;
    absl::SleepFor(t.stop);
    kill(pid, SIGCONT);
    o.fault_time = absl::Now();
    o.injected = true;
    return;
  }
  o.injected = kill(pid, InfoOf(t.kind).signal) == 0;
}

// The shell run in a private mount namespace for full-dev-shm: a tiny
// tmpfs on /dev/shm, the launcher, then what was left on it (it vanishes
// with the namespace, so it is reported on stderr before).
constexpr char kFullShmScript[] =
    "mount -t tmpfs -o size=%d faults_shm /dev/shm || exit 97\n"
    "\"$@\"\nrc=$?\n"
    "echo \"[faults: /dev/shm after the job: $(ls -A /dev/shm | tr '\\n' "
    "' ')]\" >&2\nexit $rc\n";

Outcome RunTrial(const Instance& in, const Trial& t) {
  Outcome o;
  o.trial = t;
  o.dir = MakeTempDir("fault");
  JobSpec spec;
  if (t.kind == Kind::kFullShm) {
    spec.argv = {"/usr/bin/unshare",
                 "-m",
                 "/bin/sh",
                 "-c",
                 absl::StrFormat(kFullShmScript, kShmBytes),
                 "sh"};
  }
  spec.argv.insert(spec.argv.end(), in.launch_prefix.begin(),
                   in.launch_prefix.end());
  spec.argv.insert(spec.argv.end(),
                   {Runfile(in.launcher), "-n", std::to_string(in.ranks),
                    "-spawner=" + in.spawner});
  spec.env = InheritedRuntimeVariables();
  spec.env.insert(spec.env.end(), in.env.begin(), in.env.end());
  const std::vector<std::string> sanitizer_env = SanitizerEnv();
  spec.env.insert(spec.env.end(), sanitizer_env.begin(), sanitizer_env.end());
  if (in.spawner == "ssh") {
    spec.env.push_back("GASNET_SSH_CMD=" + in.ssh_cmd);
    spec.env.push_back("GASNET_SSH_SERVERS=" + in.ssh_servers);
    if (!in.ssh_options.empty()) {
      spec.env.push_back("GASNET_SSH_OPTIONS=" + in.ssh_options);
    }
    if (!in.master_ip.empty()) {
      spec.env.push_back("GASNET_MASTERIP=" + in.master_ip);
    }
    spec.env.push_back("GASNET_SSH_NODEFILE");
    spec.env.push_back("GASNET_NODEFILE");
    // fake_ssh starts agents with an empty environment, as a login does:
    // what is not GASNET_* travels by -E.
    std::vector<std::string> names = {"TMPDIR", "FAULTS_EXIT_RANK",
                                      "FAULTS_EXIT_PHASE", "FAULTS_EXIT_AFTER",
                                      "FAULTS_EXIT_CODE"};
    if (!sanitizer_env.empty()) names.push_back("ASAN_OPTIONS");
    for (const std::string& entry : in.env) {
      const std::string name = entry.substr(0, entry.find('='));
      if (!absl::StartsWith(name, "GASNET_")) names.push_back(name);
    }
    spec.argv.push_back("-E");
    spec.argv.push_back(absl::StrJoin(names, ","));
  }
  spec.argv.insert(spec.argv.end(),
                   {Runfile("tests/faults/fault_client_" + in.conduit), o.dir,
                    std::to_string(in.msgs)});
  spec.env.push_back("GASNET_TMPDIR=" + o.dir);
  spec.env.push_back("TMPDIR=" + o.dir);
  spec.env.push_back(absl::StrFormat("GASNET_EXITTIMEOUT=%d", kExitTimeoutS));
  if (t.kind == Kind::kRankExitsAlone) {
    spec.env.push_back(absl::StrCat("FAULTS_EXIT_RANK=", t.target));
    spec.env.push_back(absl::StrCat("FAULTS_EXIT_PHASE=", kPhases[t.phase]));
    spec.env.push_back(absl::StrCat("FAULTS_EXIT_AFTER=", t.exit_after));
    spec.env.push_back(absl::StrCat("FAULTS_EXIT_CODE=", t.exit_code));
  }
  if (IsLauncherKind(t.kind)) {
    spec.signal = InfoOf(t.kind).signal;
    spec.signal_when_file = o.dir + "/launcher_go";
  }
  spec.limit = kJobLimit;
  // Over ssh a SIGKILLed launcher leaves its agents and their ranks to see
  // it gone; they must do so within the bound, and then it is counted
  // (the end time below includes the wait).
  spec.survivor_grace = kEndBound;
  std::atomic<bool> done{false};
  const absl::Time start = absl::Now();
  std::thread injector([&] { Inject(in, o, done); });
  o.r = RunJob(spec);
  o.end = absl::Now();
  done.store(true);
  injector.join();
  if (t.kind == Kind::kFullShm) {
    o.fault_time = start;
    o.injected = true;
    o.landed = 0;
  }
  if (t.kind == Kind::kRankExitsAlone) {
    o.fault_time = MarkerTime(PhaseFile(o.dir, t.phase, t.target));
    o.injected = o.fault_time.has_value();
    o.landed = o.injected ? t.phase : -1;
    if (!o.injected) o.note = "the job ended before the phase";
  }
  if (o.fault_time.has_value() && *o.fault_time > o.end) {
    // The injector struck after the job had ended (its delay outlasted
    // the phase): nothing was hit.
    o.injected = false;
    o.note = "the job ended before the fault";
  }
  if (o.injected && o.fault_time.has_value()) {
    o.after_fault = o.end - *o.fault_time;
  }
  for (int rank = 0; rank < in.ranks; ++rank) {
    std::string id = ReadFile(absl::StrFormat("%s/%d.job", o.dir, rank));
    while (!id.empty() && id.back() == '\n') id.pop_back();
    if (!id.empty()) o.job_id = id;
  }
  return o;
}

// ---------------------------------------------------------------------------
// Judging a trial.

// The exit codes the documentation gives the job (exit/README.md): a rank
// that dies of a signal gives 128+signal, a rank's exit(C) gives C, a
// signalled launcher passes its signal on and ends with 128+signal, a
// SIGKILLed launcher is reported as 137 by its parent. A fault that lands
// once the target is in its final gasnet_exit(0) may be too late to
// change the code (the job had agreed on 0), so 0 is accepted there too.
std::set<int> ExpectedCodes(const Outcome& o) {
  const Trial& t = o.trial;
  if (!o.injected) return {0};
  std::set<int> codes;
  switch (t.kind) {
    case Kind::kNone:
    case Kind::kRankStopCont:
    case Kind::kGarbage:
      return {0};
    case Kind::kRankKill:
    case Kind::kRankTerm:
    case Kind::kRankInt:
    case Kind::kLauncherTerm:
    case Kind::kLauncherInt:
    case Kind::kLauncherKill:
      codes.insert(128 + InfoOf(t.kind).signal);
      break;
    case Kind::kRankExitsAlone:
      codes.insert(t.exit_code);
      break;
    case Kind::kFullShm:
      return {};  // any nonzero code (Judge)
  }
  if (o.landed == kNumPhases - 1) codes.insert(0);
  return codes;
}

// Lines "A B" of a log file, counted.
std::map<std::pair<int, long>, int> ReadLog(const std::string& path) {
  std::map<std::pair<int, long>, int> counts;
  std::istringstream in(ReadFile(path));
  int who = 0;
  long seq = 0;
  while (in >> who >> seq) ++counts[{who, seq}];
  return counts;
}

void Judge(const Instance& in, Outcome& o) {
  const JobResult& r = o.r;
  auto add = [&](const std::string& kind, const std::string& detail) {
    o.violations.push_back(kind + ": " + detail);
  };
  if (r.err.find(kKilledByRunner) != std::string::npos) {
    add("hang", absl::StrCat("killed by the runner after ",
                             absl::FormatDuration(kJobLimit)));
  } else if (o.fault_time.has_value() && o.trial.kind != Kind::kNone &&
             ExpectedCodes(o) != std::set<int>{0} &&
             o.after_fault > kEndBound) {
    add("late", absl::StrCat("ended ", absl::FormatDuration(o.after_fault),
                             " after the fault (bound ",
                             absl::FormatDuration(kEndBound), ")"));
  }
  const std::set<int> codes = ExpectedCodes(o);
  if (codes.empty() ? r.exit_code == 0 : codes.count(r.exit_code) == 0) {
    add("code",
        absl::StrCat("exit code ", r.exit_code, ", expected ",
                     codes.empty() ? "nonzero" : absl::StrJoin(codes, " or ")));
  }
  std::vector<pid_t> live = LivePids(PidsInDir(o.dir));
  if (!r.survivors.empty() || !live.empty()) {
    add("survivors", absl::StrCat(absl::StrJoin(r.survivors, " "), " ",
                                  absl::StrJoin(live, " ")));
    for (pid_t pid : live) kill(pid, SIGKILL);
  }
  if (!o.job_id.empty()) {
    const std::vector<std::string> leaked =
        EntriesWithPrefix("/dev/shm", "GASNT" + o.job_id + ".");
    if (!leaked.empty()) add("leak", absl::StrJoin(leaked, " "));
  }
  const std::vector<std::string> leaked_files =
      EntriesWithPrefix(o.dir, "GASNT");
  if (!leaked_files.empty()) add("leak", absl::StrJoin(leaked_files, " "));
  if (o.trial.kind == Kind::kFullShm) {
    const size_t at = r.err.find("[faults: /dev/shm after the job: ");
    if (at == std::string::npos) {
      add("leak", "the full /dev/shm was not listed after the job");
    } else {
      const std::string rest = r.err.substr(at);
      if (absl::StrContains(rest.substr(0, rest.find(']')), "GASNT")) {
        add("leak", rest.substr(0, rest.find(']') + 1));
      }
    }
  }
  // Messages: every acknowledged Request ran its handler exactly once.
  std::vector<std::map<std::pair<int, long>, int>> recv(in.ranks),
      ack(in.ranks);
  for (int rank = 0; rank < in.ranks; ++rank) {
    recv[rank] = ReadLog(absl::StrFormat("%s/recv.%d", o.dir, rank));
    ack[rank] = ReadLog(absl::StrFormat("%s/ack.%d", o.dir, rank));
  }
  int lost = 0, duplicated = 0, received = 0;
  for (int rank = 0; rank < in.ranks; ++rank) {
    for (const auto& [key, count] : recv[rank]) {
      received += count;
      if (count > 1) ++duplicated;
    }
    for (const auto& [key, count] : ack[rank]) {
      const auto& [dest, seq] = key;
      if (count > 1) ++duplicated;
      if (dest < 0 || dest >= in.ranks || recv[dest].count({rank, seq}) == 0) {
        ++lost;
      }
    }
  }
  if (lost > 0) add("lost", absl::StrCat(lost, " acknowledged Request(s)"));
  if (duplicated > 0) {
    add("duplicated", absl::StrCat(duplicated, " Request(s) or Reply(ies)"));
  }
  if (r.exit_code == 0) {
    const int want = in.msgs * in.ranks * (in.ranks - 1);
    const std::vector<std::string> lines = Lines(r.out);
    int done_lines = 0;
    for (int rank = 0; rank < in.ranks; ++rank) {
      done_lines += std::count(lines.begin(), lines.end(),
                               absl::StrFormat("rank %d: done", rank)) == 1;
    }
    if (received != want || done_lines != in.ranks) {
      add("incomplete",
          absl::StrCat(received, " of ", want, " Requests, ", done_lines,
                       " of ", in.ranks, " \"done\" lines, exit code 0"));
    }
  }
  for (const char* bad : {"Assertion", "malformed", "Caught a fatal signal"}) {
    if (absl::StrContains(r.err, bad)) {
      add("crash", absl::StrCat("\"", bad, "\" on stderr"));
      break;
    }
  }
}

std::string Describe(const Outcome& o) {
  auto shorten = [](const std::string& s) {
    return s.size() <= 4000
               ? s
               : s.substr(0, 2000) + "\n...\n" + s.substr(s.size() - 2000);
  };
  return absl::StrFormat(
      "trial %d: %s (target rank %d, delay %s, landed in %s%s%s)\n"
      "command: %s\nexit code %d, %s after the fault, job id %s\n"
      "violations:\n  %s\nstdout:\n%s\nstderr:\n%s\n",
      o.trial.index, TrialName(o.trial), o.trial.target,
      absl::FormatDuration(o.trial.delay),
      o.landed >= 0 ? kPhases[o.landed] : "(none)", o.note.empty() ? "" : "; ",
      o.note, o.r.command, o.r.exit_code, absl::FormatDuration(o.after_fault),
      o.job_id.empty() ? "(unknown)" : o.job_id,
      absl::StrJoin(o.violations, "\n  "), shorten(o.r.out), shorten(o.r.err));
}

// ---------------------------------------------------------------------------
// The table: per fault kind, trials, injected, violations by kind, and the
// time from fault to end.

constexpr const char* kViolationKinds[] = {"hang",       "late",       "code",
                                           "survivors",  "leak",       "lost",
                                           "duplicated", "incomplete", "crash"};

struct Row {
  int trials = 0, injected = 0, clean = 0, over_1s = 0, avoided = 0;
  std::map<std::string, int> violations;
  absl::Duration max_after = absl::ZeroDuration();
};

std::string Table(const Instance& in, const std::vector<Outcome>& outcomes) {
  std::map<std::string, Row> rows;
  Row total;
  for (const Outcome& o : outcomes) {
    for (Row* row : {&rows[InfoOf(o.trial.kind).name], &total}) {
      ++row->trials;
      row->injected += o.injected;
      row->clean += o.violations.empty();
      row->avoided += o.trial.avoided;
      std::set<std::string> kinds;
      for (const std::string& v : o.violations) {
        kinds.insert(v.substr(0, v.find(':')));
      }
      for (const std::string& k : kinds) ++row->violations[k];
      const bool terminating = ExpectedCodes(o) != std::set<int>{0};
      if (o.injected && terminating) {
        row->over_1s += o.after_fault > absl::Seconds(1);
        row->max_after = std::max(row->max_after, o.after_fault);
      }
    }
  }
  std::string out = absl::StrFormat(
      "fault injection: conduit %s, spawner %s, %d rank(s), seed %s, %d "
      "trial(s), bound %s\n",
      in.conduit, in.spawner, in.ranks, FromEnv("FAULTS_SEED", "1"),
      outcomes.size(), absl::FormatDuration(kEndBound));
  std::string header = absl::StrFormat("%-22s %6s %8s %5s", "kind", "trials",
                                       "injected", "clean");
  for (const char* v : kViolationKinds)
    absl::StrAppendFormat(&header, " %s", v);
  absl::StrAppend(&header, "  >1s  max-after-fault  avoided\n");
  out += header;
  auto line = [&](const std::string& name, const Row& row) {
    std::string l = absl::StrFormat("%-22s %6d %8d %5d", name, row.trials,
                                    row.injected, row.clean);
    for (const char* v : kViolationKinds) {
      const auto it = row.violations.find(v);
      absl::StrAppendFormat(&l, " %*d", static_cast<int>(strlen(v)),
                            it == row.violations.end() ? 0 : it->second);
    }
    absl::StrAppendFormat(
        &l, "  %3d  %15s  %7d\n", row.over_1s,
        absl::FormatDuration(absl::Trunc(row.max_after, absl::Milliseconds(1))),
        row.avoided);
    return l;
  };
  for (const auto& [name, row] : rows) out += line(name, row);
  out += line("all", total);
  // Where the faults landed.
  std::map<std::string, int> landed;
  for (const Outcome& o : outcomes) {
    ++landed[o.landed >= 0 ? kPhases[o.landed] : "(not injected)"];
  }
  out += "landed in:";
  for (const auto& [phase, count] : landed) {
    absl::StrAppendFormat(&out, " %s %d", phase, count);
  }
  out += "\n";
  for (const auto& [glob, why] : in.known_bugs) {
    absl::StrAppendFormat(&out, "avoided (known bug) %s: %s\n", glob, why);
  }
  return out;
}

TEST(FaultInjection, SeededTrialsKeepTheInvariants) {
  const Instance in = ReadInstance();
  ASSERT_FALSE(in.conduit.empty()) << "FAULTS_CONDUIT is not set";
  ASSERT_FALSE(in.launcher.empty()) << "FAULTS_LAUNCHER is not set";
  ASSERT_GE(in.ranks, 2) << "FAULTS_RANKS: a fault needs a peer to notice it";
  BecomeSubreaper();
  std::vector<Outcome> outcomes;
  for (int i = 0; i < in.trials; ++i) {
    if (in.only_trial >= 0 && i != in.only_trial) continue;
    Outcome o = RunTrial(in, DrawTrial(in, i));
    Judge(in, o);
    std::printf("trial %d: %s -> code %d, %s after the fault%s%s\n", i,
                TrialName(o.trial).c_str(), o.r.exit_code,
                absl::FormatDuration(o.after_fault).c_str(),
                o.violations.empty() ? "" : ", VIOLATIONS: ",
                absl::StrJoin(o.violations, "; ").c_str());
    std::fflush(stdout);
    if (!o.violations.empty()) {
      ADD_FAILURE() << Describe(o);
    } else if (!FromEnv("FAULTS_VERBOSE").empty()) {
      std::printf("%s", Describe(o).c_str());
    }
    outcomes.push_back(std::move(o));
  }
  const std::string table = Table(in, outcomes);
  std::printf("%s", table.c_str());
  if (const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
    std::ofstream(std::string(dir) + "/faults_table.txt") << table;
  }
  // Every trial ran its job: a driver that ran nothing must not pass.
  EXPECT_EQ(outcomes.size(),
            static_cast<size_t>(in.only_trial >= 0 ? 1 : in.trials));
}

}  // namespace
}  // namespace gexrt::testing
