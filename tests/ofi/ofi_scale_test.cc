// What an ofi rank allocates as the job grows (issue 37): the same job at
// 2, 4 and 6 ranks over tcp;ofi_rxm on loopback, every peer through
// libfabric (GASNET_SUPERNODE_MAXSIZE=1), each rank sending one Medium and
// one 8-byte Put to every other rank (ofi_client's "scale" mode) and
// printing its GASNET_OFI_STATS line at exit. From the conduit's own
// counts it checks that
//  - every peer is reached, connected and in the address vector once (one
//    entry per rank: O(1) per peer);
//  - the fixed part (receive, send and bounce buffers, RMA descriptors)
//    does not change with the job;
//  - what grows with the job grows linearly, by at most 1 KiB a peer, so
//    an O(N) table per peer (O(N^2) per job) fails;
//  - each rank's peak resident set stays under 40 MiB (the default
//    settings' footprint; not under sanitizers, which multiply it).
// Counts and bytes only, no times. About 3 s on 2 cores.
#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GEX_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define GEX_SANITIZED 1
#endif
#endif

namespace gexrt::testing {
namespace {

constexpr long long kMaxBytesPerPeer = 1024;
constexpr long long kMaxPeakRssKb = 40 * 1024;

JobResult RunScaleJob(int n) {
  BecomeSubreaper();
  JobSpec spec;
  spec.argv = {Runfile("tools/gasnetrun_ofi"), "-n", std::to_string(n),
               Runfile("tests/ofi/ofi_client"), "scale"};
  const std::string tmpdir = MakeTempDir("ofi_scale");
  // Default settings otherwise: the user's FI_OFI_RXM_* and GASNET_OFI_*
  // buffer settings are unset so the conduit's defaults are what is seen.
  spec.env = {"GASNET_SUPERNODE_MAXSIZE=1",
              "FI_PROVIDER=tcp;ofi_rxm",
              "FI_TCP_IFACE=lo",
              "GASNET_OFI_STATS=1",
              "FI_OFI_RXM_BUFFER_SIZE",
              "GASNET_OFI_SET_RXM_BUFFER_SIZE",
              "GASNET_OFI_NUM_RECEIVE_BUFFS",
              "GASNET_OFI_RECEIVE_BUFF_SIZE",
              "GASNET_OFI_NUM_INITIAL_REQUEST_BUFFS",
              "GASNET_OFI_NUM_INITIAL_REPLY_BUFFS",
              "GASNET_OFI_SPLIT_ENDPOINTS",
              "GASNET_OFI_SPAWNER",
              "GASNET_SSH_SERVERS",
              "GASNET_SSH_NODEFILE",
              "GASNET_TMPDIR=" + tmpdir,
              "TMPDIR=" + tmpdir};
  spec.limit = absl::Seconds(120);
  return RunJob(spec);
}

std::string Describe(const JobResult& r) {
  return absl::StrFormat("command: %s\nexit: %d\nstdout:\n%s\nstderr:\n%s",
                         r.command, r.exit_code, r.out.substr(0, 6000),
                         r.err.substr(0, 4000));
}

// One rank's figures: the stats line's "key N" pairs and the client's
// "key=N" ones.
using Figures = std::map<std::string, long long>;

void ParsePairs(const std::string& text, Figures& out) {
  const std::vector<std::string> words = absl::StrSplit(text, ' ');
  for (size_t i = 0; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    if (eq != std::string::npos && eq + 1 < words[i].size() &&
        isdigit(static_cast<unsigned char>(words[i][eq + 1]))) {
      out[words[i].substr(0, eq)] = std::stoll(words[i].substr(eq + 1));
    } else if (i + 1 < words.size() && !words[i + 1].empty() &&
               isdigit(static_cast<unsigned char>(words[i + 1][0]))) {
      out[words[i]] = std::stoll(words[i + 1]);
    }
  }
}

// Every rank's figures, or a failure naming what is missing.
std::vector<Figures> RankFigures(const JobResult& r, int n) {
  std::vector<Figures> all(n);
  std::vector<int> seen(n, 0);
  for (const std::string& line : Lines(r.out)) {
    int rank = -1;
    char what[32] = {0};
    if (std::sscanf(line.c_str(), "ofi: rank %d: %31s", &rank, what) == 2 &&
        rank >= 0 && rank < n) {
      const size_t at = line.find("; ");
      if (at != std::string::npos) ParsePairs(line.substr(at + 2), all[rank]);
      seen[rank] |= 1;
    } else if (std::sscanf(line.c_str(), "rank %d: scale ok", &rank) == 1 &&
               rank >= 0 && rank < n) {
      ParsePairs(line, all[rank]);
      seen[rank] |= 2;
    }
  }
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ(seen[rank], 3)
        << "rank " << rank << " lacks its stats (1) or scale (2) line\n"
        << Describe(r);
  }
  return all;
}

long long Get(const Figures& f, const std::string& key) {
  const auto it = f.find(key);
  EXPECT_NE(it, f.end()) << "no " << key;
  return it == f.end() ? -1 : it->second;
}

TEST(OfiScaleTest, PerPeerAllocationIsConstantAndSmall) {
  const std::vector<int> sizes = {2, 4, 6};
  std::vector<std::vector<Figures>> jobs;
  for (int n : sizes) {
    const JobResult r = RunScaleJob(n);
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    jobs.push_back(RankFigures(r, n));
    if (::testing::Test::HasFailure()) return;
  }
  const Figures& base = jobs[0][0];
  for (size_t j = 0; j < sizes.size(); ++j) {
    const long long n = sizes[j];
    for (long long rank = 0; rank < n; ++rank) {
      const Figures& f = jobs[j][rank];
      SCOPED_TRACE(absl::StrFormat("%d ranks, rank %d", n, rank));
      EXPECT_EQ(Get(f, "peers"), n - 1);
      EXPECT_EQ(Get(f, "connected_peers"), n - 1);
      // One receiving endpoint per rank (this rank's own included).
      EXPECT_EQ(Get(f, "av_entries"), n);
      // The fixed part is the same at every size.
      for (const char* key :
           {"recv_buffers", "send_buffers", "bounce_buffers", "rma_ops"}) {
        EXPECT_EQ(Get(f, key), Get(base, key)) << key;
      }
      // Linear in the job: the same bytes per rank at every size.
      EXPECT_EQ(Get(f, "per_rank_bytes") * 2, Get(base, "per_rank_bytes") * n);
      EXPECT_LE(Get(f, "per_rank_bytes"), kMaxBytesPerPeer * n);
      EXPECT_EQ(Get(f, "conduit_bytes") - Get(f, "per_rank_bytes"),
                Get(base, "conduit_bytes") - Get(base, "per_rank_bytes"));
#ifndef GEX_SANITIZED
      EXPECT_LT(Get(f, "hwm_kb"), kMaxPeakRssKb);
#endif
    }
  }
  // And so the whole grows by the same amount per added peer.
  const long long grow_a =
      Get(jobs[1][0], "conduit_bytes") - Get(jobs[0][0], "conduit_bytes");
  const long long grow_b =
      Get(jobs[2][0], "conduit_bytes") - Get(jobs[1][0], "conduit_bytes");
  EXPECT_EQ(grow_a, grow_b);
  EXPECT_GT(grow_a, 0);
  EXPECT_LE(grow_a / 2, kMaxBytesPerPeer);
}

}  // namespace
}  // namespace gexrt::testing
