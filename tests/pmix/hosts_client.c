/* Where the runtime places this rank: prints
 *   rank R: hosts H host h members a,b,... nbrhd N
 * (H hosts in the job, this rank on host h, the ranks on its host, and the
 * size of its neighbourhood), then "rank R: hosts ok" after a barrier with
 * every rank, so a job across emulated nodes shows the node map the C API
 * sees. Usage: hosts_client */
#include <gasnetex.h>
#include <stdio.h>
#include <string.h>

#include "tests/api/client_check.h"

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  gex_Segment_t seg;
  int rc = gex_Client_Init(&client, &ep, &tm, "hosts_client", &argc, &argv, 0);
  CHECK(rc == GASNET_OK, "gex_Client_Init returned %d", rc);
  check_rank = (int)gex_TM_QueryRank(tm);
  rc = gex_Segment_Attach(&seg, tm, 4096);
  CHECK(rc == GASNET_OK, "gex_Segment_Attach returned %d", rc);

  gex_Rank_t nbrhd_size, nbrhd_rank, host_count, host_rank;
  gex_System_QueryMyPosition(&nbrhd_size, &nbrhd_rank, &host_count, &host_rank);
  gex_RankInfo_t *info;
  gex_Rank_t count, mine;
  gex_System_QueryHostInfo(&info, &count, &mine);
  CHECK(mine < count, "my index %u of %u host members", (unsigned)mine,
        (unsigned)count);
  CHECK(info[mine].gex_jobrank == gex_TM_QueryRank(tm),
        "host member %u is rank %u, not me", (unsigned)mine,
        (unsigned)info[mine].gex_jobrank);
  char members[256] = "";
  for (gex_Rank_t i = 0; i < count; ++i) {
    const size_t used = strlen(members);
    snprintf(members + used, sizeof members - used, "%s%u", i > 0 ? "," : "",
             (unsigned)info[i].gex_jobrank);
  }
  gex_RankInfo_t *nbrhd;
  gex_Rank_t nbrhd_count, nbrhd_mine;
  gex_System_QueryNbrhdInfo(&nbrhd, &nbrhd_count, &nbrhd_mine);
  Say("hosts %u host %u members %s nbrhd %u", (unsigned)host_count,
      (unsigned)host_rank, members, (unsigned)nbrhd_count);
  gex_Coll_BarrierBlocking(tm, 0);
  Say("hosts ok");
  gex_Coll_BarrierBlocking(tm, 0);
  gasnet_exit(0);
  return 0;
}
