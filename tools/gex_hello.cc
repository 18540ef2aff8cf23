// gex_hello: the demonstration job until the smp conduit exists. Every rank
// joins the bootstrap, learns the node map, and shares its pid and host
// name with an allgather; rank 0 prints the job as every rank sees it.
//
//   bazel run //tools:gasnetrun_smp -- -n 4 $(bazel info
//   bazel-bin)/tools/gex_hello
//
// With an argument N, rank N exits with code 3 instead, to show how the
// launcher ends the job and reports it.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/host_id.h"
#include "bootstrap/create_bootstrap.h"
#include "bootstrap/node_map.h"

namespace {

struct RankCard {
  int32_t pid;
  char host[60];
};

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<gexrt::Bootstrap> b = gexrt::CreateBootstrap();
  const gexrt::Rank me = b->rank();
  const gexrt::Rank n = b->size();
  if (argc > 1 && static_cast<gexrt::Rank>(std::atoi(argv[1])) == me) {
    std::printf("rank %u: exiting with code 3 without saying goodbye\n", me);
    std::fflush(stdout);
    _exit(3);
  }
  gexrt::NodeMap map = gexrt::DiscoverNodeMap(*b);

  RankCard mine{};
  mine.pid = getpid();
  std::snprintf(mine.host, sizeof mine.host, "%s", gexrt::Hostname().c_str());
  std::vector<RankCard> all(n);
  b->Allgather(&mine, sizeof mine, all.data());

  if (me == 0) {
    std::printf("a job of %u rank(s) on %u host(s), %u supernode(s)\n", n,
                map.host_count(), map.supernode_count());
    for (gexrt::Rank r = 0; r < n; ++r) {
      const gexrt::RankPlace& p = map.place(r);
      std::printf(
          "  rank %u: pid %d on %s, host %u, supernode %u (%u of %zu)\n", r,
          all[r].pid, all[r].host, p.host, p.supernode, p.supernode_index,
          map.supernode_members(p.supernode).size());
    }
    std::fflush(stdout);
  }
  b->Barrier();
  std::printf("rank %u of %u says goodbye\n", me, n);
  std::fflush(stdout);
  b->Barrier();
  b->Fini();
  return 0;
}
