// A client of the Bootstrap interface, started by gasnetrun_smp in the
// multi-process tests. Each mode exercises one behaviour and prints what
// the tests check:
//
//   collectives            barrier, allgather, alltoall and broadcast (every
//                          root) at several sizes, contents checked; prints
//                          "rank R/N collectives ok"
//   nodemap                prints "rank R/N host H/K supernode S/M name X"
//   exit CODE RANK         RANK exits with CODE; the others enter a barrier
//                          that can never complete
//   exit-all CODE          every rank finishes (Fini) and exits with CODE
//   abort CODE RANK        RANK calls Bootstrap::Abort(CODE); the others wait
//                          in a barrier
//   kill-self RANK         RANK kills itself with SIGKILL; the others spin
//                          (never calling the bootstrap again)
//   spin                   every rank spins forever (for signal tests)
//   hang RANK              RANK sleeps forever (alive, never joining); the
//                          others enter a barrier
//   lines K                every rank prints K long lines, each in pieces
//   stdin                  rank 0 copies its stdin to stdout
//   env NAME               prints "rank R NAME=value"
//   raw-frame TYPE         rank 0 sends its launcher a frame holding only
//                          the type byte TYPE (a protocol error for any
//                          type), then every rank enters a barrier
//   await FILE             every rank waits until FILE exists (at most
//                          120 s), prints "rank R/N released", then
//                          finishes: a job that stays up while a test
//                          looks at it from the outside
//
// Options before the mode:
//   --pids DIR             write DIR/<rank>.pid (and DIR/<rank>.child for a
//                          background child started with --child), then,
//                          once every rank has, DIR/ready
//   --child                start a long-sleeping child process first (it
//                          must not outlive the job)
//   --escape               the same, but the child leaves the ranks' process
//                          group and session (setsid) and closes its output,
//                          as a daemon would
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/fatal.h"
#include "base/host_id.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/create_bootstrap.h"
#include "bootstrap/node_map.h"

namespace {

using gexrt::Bootstrap;
using gexrt::Rank;

void Check(bool ok, const std::string& what) {
  if (!ok) gexrt::FatalErrorF("check failed: %s", what);
}

// A value only rank `from` sending to rank `to` at byte `i` produces.
uint8_t Pattern(Rank from, Rank to, size_t i) {
  return static_cast<uint8_t>(from * 131 + to * 31 + i * 7 + 1);
}

void Collectives(Bootstrap& b) {
  const Rank n = b.size();
  const Rank me = b.rank();
  b.Barrier();
  for (size_t len :
       {size_t{0}, size_t{1}, size_t{8}, size_t{1000}, size_t{65536}}) {
    // Allgather.
    std::vector<uint8_t> mine(len);
    for (size_t i = 0; i < len; ++i) mine[i] = Pattern(me, 0, i);
    std::vector<uint8_t> all(len * n + 1, 0xee);
    b.Allgather(mine.data(), len, all.data());
    for (Rank r = 0; r < n; ++r) {
      for (size_t i = 0; i < len; ++i) {
        Check(all[r * len + i] == Pattern(r, 0, i),
              absl::StrFormat("allgather len %d from rank %d byte %d", len, r,
                              i));
      }
    }
    Check(all[len * n] == 0xee, "allgather wrote past its buffer");
    // Alltoall.
    std::vector<uint8_t> out(len * n), in(len * n + 1, 0xee);
    for (Rank to = 0; to < n; ++to) {
      for (size_t i = 0; i < len; ++i) out[to * len + i] = Pattern(me, to, i);
    }
    b.Alltoall(out.data(), len, in.data());
    for (Rank from = 0; from < n; ++from) {
      for (size_t i = 0; i < len; ++i) {
        Check(in[from * len + i] == Pattern(from, me, i),
              absl::StrFormat("alltoall len %d from rank %d byte %d", len, from,
                              i));
      }
    }
    Check(in[len * n] == 0xee, "alltoall wrote past its buffer");
    // Broadcast from every root.
    for (Rank root = 0; root < n; ++root) {
      std::vector<uint8_t> src(len), dst(len + 1, 0xee);
      if (me == root) {
        for (size_t i = 0; i < len; ++i) src[i] = Pattern(root, root, i);
      }
      b.Broadcast(me == root ? src.data() : nullptr, len, dst.data(), root);
      for (size_t i = 0; i < len; ++i) {
        Check(dst[i] == Pattern(root, root, i),
              absl::StrFormat("broadcast len %d from root %d byte %d", len,
                              root, i));
      }
      Check(dst[len] == 0xee, "broadcast wrote past its buffer");
    }
  }
  b.Barrier();
  std::printf("rank %u/%u collectives ok\n", me, n);
  std::fflush(stdout);
}

[[noreturn]] void SpinForever() {
  while (true) sched_yield();
}

void WriteFile(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  Check(f != nullptr, "open " + path);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string pid_dir;
  bool start_child = false;
  bool escape = false;
  size_t a = 0;
  while (a < args.size() && args[a].rfind("--", 0) == 0) {
    if (args[a] == "--pids" && a + 1 < args.size()) {
      pid_dir = args[a + 1];
      a += 2;
    } else if (args[a] == "--child") {
      start_child = true;
      ++a;
    } else if (args[a] == "--escape") {
      start_child = true;
      escape = true;
      ++a;
    } else {
      std::fprintf(stderr, "bootstrap_client: unknown option %s\n",
                   args[a].c_str());
      return 2;
    }
  }
  if (a >= args.size()) {
    std::fprintf(stderr, "bootstrap_client: no mode\n");
    return 2;
  }
  const std::string mode = args[a];
  auto arg = [&](size_t i) { return std::atoi(args.at(a + i).c_str()); };

  // The bootstrap takes the variable away once it owns the descriptor.
  const char* fd_var = std::getenv("GEX_BOOTSTRAP_FD");
  const int control_fd = fd_var != nullptr ? std::atoi(fd_var) : -1;
  std::unique_ptr<Bootstrap> b = gexrt::CreateBootstrap();
  const Rank me = b->rank();
  if (!pid_dir.empty()) {
    WriteFile(absl::StrFormat("%s/%u.pid", pid_dir, me),
              absl::StrFormat("%d\n", getpid()));
  }
  if (start_child) {
    const pid_t child = fork();
    if (child == 0) {
      if (escape) {
        setsid();
        const int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
      }
      execlp("sleep", "sleep", "1000", static_cast<char*>(nullptr));
      _exit(127);
    }
    if (!pid_dir.empty()) {
      WriteFile(absl::StrFormat("%s/%u.child", pid_dir, me),
                absl::StrFormat("%d\n", child));
    }
  }
  // Every rank has written its files before any test action starts; then
  // rank 0 says so with DIR/ready (tests wait for it before signalling).
  b->Barrier();
  if (!pid_dir.empty() && me == 0) {
    WriteFile(pid_dir + "/ready", "ready\n");
  }

  if (mode == "collectives") {
    Collectives(*b);
  } else if (mode == "nodemap") {
    gexrt::NodeMap map = gexrt::DiscoverNodeMap(*b);
    std::printf("rank %u/%u host %u/%u supernode %u/%u name %s\n", me,
                b->size(), map.my_place().host, map.host_count(),
                map.my_place().supernode, map.supernode_count(),
                gexrt::Hostname().c_str());
    std::fflush(stdout);
  } else if (mode == "exit") {
    if (static_cast<int>(me) == arg(2)) {
      std::printf("rank %u exiting with %d\n", me, arg(1));
      std::fflush(stdout);
      _exit(arg(1));
    }
    b->Barrier();
    std::printf("rank %u: barrier completed without the exited rank\n", me);
    return 0;
  } else if (mode == "exit-all") {
    b->Barrier();
    b->Fini();
    return arg(1);
  } else if (mode == "abort") {
    if (static_cast<int>(me) == arg(2)) b->Abort(arg(1), "test abort");
    b->Barrier();
    return 0;
  } else if (mode == "kill-self") {
    if (static_cast<int>(me) == arg(1)) raise(SIGKILL);
    SpinForever();
  } else if (mode == "spin") {
    SpinForever();
  } else if (mode == "hang") {
    if (static_cast<int>(me) == arg(1)) {
      while (true) pause();
    }
    b->Barrier();
    return 0;
  } else if (mode == "lines") {
    const int k = arg(1);
    for (int i = 0; i < k; ++i) {
      const std::string line =
          absl::StrFormat("rank %u line %d %s end\n", me, i,
                          std::string(100 + (i * 37 + me * 11) % 300, 'x'));
      // Two writes per line: only the launcher's forwarding keeps it whole.
      const size_t half = line.size() / 2;
      (void)!write(1, line.data(), half);
      sched_yield();
      (void)!write(1, line.data() + half, line.size() - half);
    }
  } else if (mode == "stdin") {
    if (me == 0) {
      char buf[4096];
      ssize_t k;
      while ((k = read(0, buf, sizeof buf)) > 0) (void)!write(1, buf, k);
    }
  } else if (mode == "raw-frame") {
    if (me == 0) {
      // A 1-byte body: the length prefix (little-endian) and the type.
      const char frame[5] = {1, 0, 0, 0, static_cast<char>(arg(1))};
      Check(control_fd >= 0 && write(control_fd, frame, 5) == 5,
            "writing a raw frame to GEX_BOOTSTRAP_FD");
    }
    b->Barrier();
    return 0;
  } else if (mode == "await") {
    const std::string file = args.at(a + 1);
    // A bounded poll for the test's go-ahead, not a timing assumption.
    for (int i = 0; i < 6000 && access(file.c_str(), F_OK) != 0; ++i) {
      usleep(20000);
    }
    std::printf("rank %u/%u released\n", me, b->size());
    std::fflush(stdout);
  } else if (mode == "env") {
    const char* v = std::getenv(args.at(a + 1).c_str());
    std::printf("rank %u %s=%s\n", me, args.at(a + 1).c_str(),
                v ? v : "(unset)");
    std::fflush(stdout);
  } else {
    std::fprintf(stderr, "bootstrap_client: unknown mode %s\n", mode.c_str());
    return 2;
  }
  b->Barrier();
  b->Fini();
  return 0;
}
