// Starting the processes a launcher owns (ranks, remote-shell commands)
// so that none of them can outlive it, and describing how they ended.
//
// Every child:
//   - gets PR_SET_PDEATHSIG(SIGKILL): if the launcher dies, even by
//     SIGKILL, the kernel kills its children, so a job never leaves
//     orphans behind (checked again after the fork, closing the race with a
//     launcher that died in between);
//   - starts with the default signal dispositions and an empty signal mask
//     (the launcher blocks the signals it reads through a signalfd);
//   - is placed in the process group the caller chooses, so that the
//     launcher can signal a host's ranks, and whatever they started, at
//     once, and so that a terminal's Ctrl-C reaches only the launcher, which
//     forwards it.
#ifndef GEX_BOOTSTRAP_SPAWN_CHILD_PROCESS_H_
#define GEX_BOOTSTRAP_SPAWN_CHILD_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gexrt::spawn {

struct ChildSpec {
  // argv[0] is looked up in PATH when it has no '/'.
  std::vector<std::string> argv;
  // "NAME=value" entries added to (or replacing in) the inherited
  // environment.
  std::vector<std::string> env;
  // Descriptor for the child's stdin; -1 means /dev/null.
  int stdin_fd = -1;
  // Descriptor the child gets at the same number with close-on-exec
  // cleared (the control channel); -1 for none.
  int inherit_fd = -1;
  // 0: the child leads a new process group; otherwise join this one.
  pid_t process_group = 0;
  // Capture stdout and stderr through pipes (the launcher forwards them
  // line by line); otherwise the child shares the launcher's.
  bool capture_output = true;
  // A personality(2) persona the child takes between fork and exec, -1 to
  // keep the launcher's: SameLayoutPersona()'s, for ranks.
  int persona = -1;
  // Prefixes what the child itself prints before its exec (the launcher's
  // name, e.g. "gasnetrun_smp" or "gasnetrun agent on n1"); empty: this
  // program's name (program_invocation_short_name), which is the tool's
  // for every gasnetrun_<conduit> binary.
  std::string name;
};

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;  // read ends, non-blocking, close-on-exec; -1 when
  int stderr_fd = -1;  // output is not captured
};

// Forks and execs. An exec failure is reported by the child itself on its
// stderr ("gasnetrun_smp: cannot execute 'prog': No such file or
// directory", prefixed with spec.name) with exit code 127, as shells do.
absl::StatusOr<Child> StartChild(const ChildSpec& spec);

// The persona that starts programs with address-space randomisation off
// (the launcher's own persona plus ADDR_NO_RANDOMIZE), for
// ChildSpec::persona: every rank exec'd with it from the same program loads
// the program, its shared libraries, its stack and heap start at the same
// addresses on one host (one kernel, one binary), as ranks forked from one
// process (GASNet-EX's smp conduit) have them. Clients rely on that when they
// exchange pointers to functions or static data.
//   - a persona: set it in the children;
//   - nullopt: nothing to do (the launcher already runs with randomisation
//     off, e.g. under `setarch -R`, and its children inherit that, or the
//     kernel does not randomise: kernel.randomize_va_space = 0);
//   - an error: the kernel refuses the change (personality(2) is filtered
//     by seccomp in some containers); the message says so and what to do.
// Probed once per process (the launcher's persona is set and put back).
absl::StatusOr<std::optional<int>> SameLayoutPersona();

// "exited with code 3", "was killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int wait_status);

// The exit code a job reports for a rank that ended this way: its own exit
// code, or 128 + the signal that killed it (as shells report it).
int ExitCodeOf(int wait_status);

// Where `program` would be executed from (PATH lookup for a bare name),
// or an error saying why it cannot be: not found, not executable, a
// directory.
absl::StatusOr<std::string> ResolveProgram(const std::string& program);

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_CHILD_PROCESS_H_
