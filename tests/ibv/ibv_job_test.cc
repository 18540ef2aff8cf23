// Jobs only the ibv conduit has, on the software verbs device (shared
// memory: no network traffic), every peer over verbs
// (GASNET_SUPERNODE_MAXSIZE=1), each checked by the client's own exact
// checks and by the conduit's counters (GASNET_IBV_STATS=1: one "ibv: rank
// R: key value ..." line per rank at exit):
//   - credit flow control: floods at two credits per peer meet no RNR NAK,
//     handlers that never Reply still return their credits (explicit
//     credit messages), Requests both ways carry them back (piggybacked);
//   - GASNET_RBUF_SPARES=0: Requests are copied out, Mediums intact;
//   - firehose: heap buffers far larger than GASNET_FIREHOSE_M are pinned,
//     missed and evicted, with the data checked;
//   - two rails with striping;
//   - connect files written, read back, and refused when malformed or from
//     another job;
//   - bad settings: a message naming them, nonzero exit, nothing left;
//   - PAR: the receive thread serves a rank that computes.
// No timings are asserted (benchmarks: tools/gex_bench_ibv).
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/job_runner.h"

namespace gexrt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

JobResult RunIbvJob(int n, const std::vector<std::string>& args,
                    const std::vector<std::string>& env, bool par = false,
                    absl::Duration limit = absl::Seconds(60)) {
  BecomeSubreaper();
  JobSpec spec;
  spec.argv = {
      Runfile("tools/gasnetrun_ibv"), "-n", std::to_string(n),
      Runfile(par ? "tests/ibv/ibv_client_par" : "tests/ibv/ibv_client")};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  const std::string tmpdir = MakeTempDir("ibv");
  spec.env = {"GASNET_SUPERNODE_MAXSIZE=1", "GASNET_IBV_SOFTWARE_DEVICE=yes",
              "GASNET_IBV_STATS=1",         "GASNET_IBV_SPAWNER",
              "GASNET_SSH_SERVERS",         "GASNET_SSH_NODEFILE",
              "GASNET_TMPDIR=" + tmpdir,    "TMPDIR=" + tmpdir};
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  spec.limit = limit;
  return RunJob(spec);
}

std::string Describe(const JobResult& r) {
  return absl::StrFormat(
      "command: %s\nexit: %d\nsurvivors: %d\nstdout:\n%s\nstderr:\n%s",
      r.command, r.exit_code, r.survivors.size(), r.out.substr(0, 4000),
      r.err.substr(0, 4000));
}

// The line of `rank` starting "rank R: <what>", or "".
std::string RankLine(const JobResult& r, int rank, const std::string& what) {
  const std::string prefix = absl::StrFormat("rank %d: %s", rank, what);
  for (const std::string& line : Lines(r.out)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

// The number after "key=" in `line`, or -1.
long long Field(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return -1;
  return std::stoll(line.substr(at + key.size() + 2));
}

// `rank`'s GASNET_IBV_STATS line, or "".
std::string StatsLine(const JobResult& r, int rank) {
  const std::string prefix = absl::StrFormat("ibv: rank %d: requests ", rank);
  for (const std::string& line : Lines(r.out)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

// The value after `key` in a stats line ("... key value ..."), or -1.
long long Stat(const std::string& line, const std::string& key) {
  std::vector<std::string> words = absl::StrSplit(line, ' ');
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == key) {
      long long v = -1;
      std::istringstream(words[i + 1]) >> v;
      return v;
    }
  }
  return -1;
}

// How often `what` occurs in `text`.
int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + what.size())) {
    ++n;
  }
  return n;
}

// The job id the ranks printed before init ("rank ?: job=<id>").
std::string JobId(const JobResult& r) {
  for (const std::string& line : Lines(r.out)) {
    const std::string prefix = "rank ?: job=";
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  return "";
}

// No rank left and nothing in /dev/shm under the job's name: neither PSHM
// objects (GASNT<job>.) nor the software device's (gexsoft<n>-<key>, the
// key being the job id's letters and digits).
void ExpectNothingLeft(const JobResult& r) {
  EXPECT_TRUE(r.survivors.empty()) << Describe(r);
  const std::string job = JobId(r);
  ASSERT_FALSE(job.empty()) << Describe(r);
  std::string key;
  for (char c : job) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c))) key.push_back(c);
  }
  key.resize(std::min<size_t>(key.size(), 47));
  EXPECT_THAT(EntriesWithPrefix("/dev/shm", "GASNT" + job + "."), IsEmpty());
  for (int device = 0; device < 8; ++device) {
    EXPECT_THAT(EntriesWithPrefix("/dev/shm",
                                  absl::StrFormat("gexsoft%d-%s", device, key)),
                IsEmpty());
  }
}

// Exit 0, every rank's "<what> ok" line and stats line, nothing left.
void ExpectOk(const JobResult& r, int ranks, const std::string& what) {
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (int rank = 0; rank < ranks; ++rank) {
    EXPECT_FALSE(RankLine(r, rank, what + " ok").empty()) << Describe(r);
    const std::string stats = StatsLine(r, rank);
    ASSERT_FALSE(stats.empty()) << Describe(r);
    EXPECT_THAT(stats, HasSubstr("device software")) << stats;
    // A send never met an empty receive queue.
    EXPECT_EQ(Stat(stats, "rnr_naks"), 0) << stats;
  }
  EXPECT_THAT(r.out, Not(HasSubstr("CHECK FAILED"))) << Describe(r);
  ExpectNothingLeft(r);
}

// 1. Flow control at two credits per peer.

// Every rank floods the next with Requests whose handler never Replies: the
// credits can come back only by explicit credit messages (without them the
// flood would hang at the third Request), and no send meets an empty
// receive queue.
TEST(IbvCreditTest, FloodWithoutRepliesReturnsCreditsExplicitly) {
  constexpr long long kMessages = 20'000;
  const JobResult r =
      RunIbvJob(4, {"flood", std::to_string(kMessages)},
                {"GASNET_AM_CREDITS_PP=2"}, false, absl::Seconds(60));
  ExpectOk(r, 4, "flood");
  for (int rank = 0; rank < 4; ++rank) {
    const std::string line = RankLine(r, rank, "flood ok");
    EXPECT_EQ(Field(line, "sent"), kMessages) << line;
    EXPECT_EQ(Field(line, "handled"), kMessages) << line;
    const std::string stats = StatsLine(r, rank);
    EXPECT_GE(Stat(stats, "requests"), kMessages) << stats;
    EXPECT_GT(Stat(stats, "credit_messages"), 0) << stats;
    // Two credits cannot cover 20000 Requests without waiting.
    EXPECT_GT(Stat(stats, "credit_waits"), 0) << stats;
  }
}

// Pairs of ranks send each other Requests in lock step (no Replies): the
// credit banked for each Request handled rides back on the next Request.
// Per pair, not per rank: a rank that always runs a round behind its peer
// handles the peer's two outstanding Requests in one poll, and its bank
// then exceeds the slack and goes back alone every time (seen under
// ASan in CI for rank 0: 1004 credit messages, no piggyback); its peer,
// a round ahead, handles one Request before each send and piggybacks.
TEST(IbvCreditTest, RequestsBothWaysPiggybackCredits) {
  constexpr long long kRounds = 2'000;
  const JobResult r =
      RunIbvJob(4, {"pingpong", std::to_string(kRounds)},
                {"GASNET_AM_CREDITS_PP=2"}, false, absl::Seconds(60));
  ExpectOk(r, 4, "pingpong");
  long long piggybacked[4] = {};
  for (int rank = 0; rank < 4; ++rank) {
    const std::string line = RankLine(r, rank, "pingpong ok");
    EXPECT_EQ(Field(line, "handled"), kRounds) << line;
    const std::string stats = StatsLine(r, rank);
    piggybacked[rank] = Stat(stats, "piggybacked_credits");
    // Every credit went back one way or the other.
    EXPECT_GT(piggybacked[rank] + Stat(stats, "credit_messages"), 0) << stats;
  }
  for (int pair = 0; pair < 4; pair += 2) {
    EXPECT_GT(piggybacked[pair] + piggybacked[pair + 1], 0)
        << "ranks " << pair << " and " << pair + 1 << "\n"
        << Describe(r);
  }
}

// 2. No spare receive buffer: every Request handled is copied out first;
// Mediums of every size up to the largest arrive intact (the handler checks
// every byte).
TEST(IbvReceiveBufferTest, NoSparesCopiesOutMediumsIntact) {
  constexpr long long kMessages = 2'000;
  const JobResult r =
      RunIbvJob(3, {"medium", std::to_string(kMessages)},
                {"GASNET_RBUF_SPARES=0"}, false, absl::Seconds(60));
  ExpectOk(r, 3, "medium");
  for (int rank = 0; rank < 3; ++rank) {
    const std::string line = RankLine(r, rank, "medium ok");
    EXPECT_EQ(Field(line, "handled"), kMessages) << line;
    EXPECT_GT(Field(line, "bytes"), 0) << line;
    const std::string stats = StatsLine(r, rank);
    // Every Request handled here (the client's and a few of the
    // barriers') was copied out.
    EXPECT_GE(Stat(stats, "copy_outs"), kMessages) << stats;
  }
}

// GASNET_AM_GATHER_MIN: Mediums from the segment at or above it are sent
// without a copy (a two-element gather), with every byte checked by the
// handler; -1 turns it off.
TEST(IbvGatherTest, SegmentPayloadsAreGatheredIntact) {
  constexpr long long kMessages = 500;
  for (const char* min : {"1500", "-1"}) {
    const JobResult r = RunIbvJob(2, {"medium-seg", std::to_string(kMessages)},
                                  {std::string("GASNET_AM_GATHER_MIN=") + min});
    ExpectOk(r, 2, "medium");
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_EQ(Field(RankLine(r, rank, "medium ok"), "handled"), kMessages)
          << Describe(r);
      const long long gathered = Stat(StatsLine(r, rank), "gathered");
      if (std::string(min) == "-1") {
        EXPECT_EQ(gathered, 0) << Describe(r);
      } else {
        EXPECT_GT(gathered, 0) << Describe(r);
      }
    }
  }
}

// The default keeps spares: the same job copies (almost) nothing out, so
// the case above is the corner it claims to be. (A handful of copy-outs,
// 6 per rank here, happen even so.)
TEST(IbvReceiveBufferTest, DefaultSparesRarelyCopyOut) {
  constexpr long long kMessages = 2'000;
  const JobResult r =
      RunIbvJob(3, {"medium", std::to_string(kMessages)}, {}, false);
  ExpectOk(r, 3, "medium");
  for (int rank = 0; rank < 3; ++rank) {
    const std::string stats = StatsLine(r, rank);
    EXPECT_LT(Stat(stats, "copy_outs"), kMessages / 10) << stats;
  }
}

// 3. Firehose: 8 MiB Puts and Gets from and to heap buffers, twice over
// fresh buffers, with the main pool at 1 MiB and the victims at 1 MiB:
// pins missed and evicted, every byte checked. The small Puts bounce by
// default; GASNET_NONBULKPUT_BOUNCE_LIMIT=0 pins them instead.
struct FirehoseCase {
  const char* name;
  std::vector<std::string> env;
  bool bounces;
};

class IbvFirehoseTest : public ::testing::TestWithParam<FirehoseCase> {};

TEST_P(IbvFirehoseTest, HeapBuffersLargerThanThePool) {
  std::vector<std::string> env = {"GASNET_FIREHOSE_M=1M",
                                  "GASNET_FIREHOSE_MAXVICTIM_M=1M"};
  env.insert(env.end(), GetParam().env.begin(), GetParam().env.end());
  const JobResult r = RunIbvJob(2, {"firehose"}, env);
  ExpectOk(r, 2, "firehose");
  for (int rank = 0; rank < 2; ++rank) {
    const std::string stats = StatsLine(r, rank);
    EXPECT_GT(Stat(stats, "firehose_misses"), 0) << stats;
    EXPECT_GT(Stat(stats, "firehose_evictions"), 0) << stats;
    EXPECT_GT(Stat(stats, "puts"), 0) << stats;
    EXPECT_GT(Stat(stats, "gets"), 0) << stats;
    if (GetParam().bounces) {
      EXPECT_GT(Stat(stats, "bounced_puts"), 0) << stats;
    } else {
      EXPECT_EQ(Stat(stats, "bounced_puts"), 0) << stats;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Pools, IbvFirehoseTest,
    ::testing::Values(
        FirehoseCase{"Default", {}, true},
        FirehoseCase{"NoBounce", {"GASNET_NONBULKPUT_BOUNCE_LIMIT=0"}, false}),
    [](const ::testing::TestParamInfo<FirehoseCase>& info) {
      return std::string(info.param.name);
    });

// 4. Two software devices, two rails: RMA striped in 4 KiB pieces over
// both, correct (the client checks every byte).
TEST(IbvRailsTest, TwoRailsStripedRmaCorrect) {
  const JobResult r = RunIbvJob(
      3, {"rma"}, {"GASNET_IBV_SOFTWARE_DEVICES=2", "GASNET_PUT_STRIPE_SZ=4K"},
      false);
  ExpectOk(r, 3, "rma");
  for (int rank = 0; rank < 3; ++rank) {
    const std::string stats = StatsLine(r, rank);
    EXPECT_EQ(Stat(stats, "rails"), 2) << stats;
    // Two Puts of 1 MiB + 123 bytes in 4 KiB stripes: 257 pieces each.
    EXPECT_GE(Stat(stats, "puts"), 2 * 257) << stats;
    EXPECT_EQ(Stat(stats, "fenced_puts"), 0) << stats;
  }
}

// GASNET_USE_FENCED_PUTS over two rails: every Put piece is followed by a
// fencing read on its QP, and the data still checks out.
TEST(IbvRailsTest, FencedPutsOverTwoRails) {
  const JobResult r =
      RunIbvJob(3, {"rma"},
                {"GASNET_IBV_SOFTWARE_DEVICES=2", "GASNET_PUT_STRIPE_SZ=64K",
                 "GASNET_USE_FENCED_PUTS=1"},
                false);
  ExpectOk(r, 3, "rma");
  for (int rank = 0; rank < 3; ++rank) {
    const std::string stats = StatsLine(r, rank);
    EXPECT_EQ(Stat(stats, "rails"), 2) << stats;
    EXPECT_GE(Stat(stats, "fenced_puts"), 2 * 17) << stats;
  }
}

// 5. Connect files.

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// The peers on `rank`'s "rank:" line of a connect file (base 36 or 10:
// small ranks are the same digits), or {-1} when there is no such line.
std::vector<int> PeersOnLine(const std::string& text, int rank) {
  const std::string prefix = absl::StrFormat("%d:", rank);
  for (const std::string& line : Lines(text)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::vector<int> peers;
    for (absl::string_view word :
         absl::StrSplit(line.substr(prefix.size()), ' ', absl::SkipEmpty())) {
      const std::string w(word);
      const size_t dash = w.find('-');
      if (dash == std::string::npos) {
        peers.push_back(std::stoi(w));
      } else {
        for (int p = std::stoi(w.substr(0, dash));
             p <= std::stoi(w.substr(dash + 1)); ++p) {
          peers.push_back(p);
        }
      }
    }
    return peers;
  }
  return {-1};
}

TEST(IbvConnectFileTest, WrittenThenReadBack) {
  constexpr int kRanks = 4;
  const std::string dir = MakeTempDir("conn");
  const JobResult out = RunIbvJob(
      kRanks, {"hello"}, {"GASNET_CONNECTFILE_OUT=" + dir + "/conn.%"});
  ExpectOk(out, kRanks, "hello");
  for (int rank = 0; rank < kRanks; ++rank) {
    const std::string text = ReadFile(absl::StrFormat("%s/conn.%d", dir, rank));
    ASSERT_FALSE(text.empty()) << "rank " << rank << "\n" << Describe(out);
    EXPECT_THAT(Lines(text),
                ::testing::Contains(absl::StrFormat("size: %d", kRanks)))
        << text;
    const std::vector<int> peers = PeersOnLine(text, rank);
    // The client's one AM went to the next rank.
    EXPECT_THAT(peers, ::testing::Contains((rank + 1) % kRanks)) << text;
    for (int p : peers) {
      EXPECT_GE(p, 0) << text;
      EXPECT_LT(p, kRanks) << text;
      EXPECT_NE(p, rank) << text;
    }
  }
  const JobResult in = RunIbvJob(kRanks, {"hello"},
                                 {"GASNET_CONNECTFILE_IN=" + dir + "/conn.%"});
  ExpectOk(in, kRanks, "hello");
}

// Dynamic connections: with no static ones (GASNET_CONNECT_STATIC=0) every
// pair connects over UD on first use, for AMs and for RMA alike; with a
// connect file naming only some pairs, the rest connect on demand; with
// GASNET_CONNECT_DYNAMIC=0 a pair the file left out is an error naming both.
TEST(IbvDynamicTest, EveryPairConnectsOnFirstUse) {
  constexpr int kRanks = 4;
  for (const char* mode : {"hello", "rma"}) {
    const JobResult r = RunIbvJob(kRanks, {mode}, {"GASNET_CONNECT_STATIC=0"});
    ExpectOk(r, kRanks, mode);
    for (int rank = 0; rank < kRanks; ++rank) {
      // Each rank talks to its next at least (and answers its previous).
      EXPECT_GE(Stat(StatsLine(r, rank), "dynamic_connections"), 1)
          << Describe(r);
    }
  }
}

TEST(IbvDynamicTest, FloodOverADynamicConnection) {
  const JobResult r =
      RunIbvJob(4, {"flood", "5000"},
                {"GASNET_CONNECT_STATIC=0", "GASNET_AM_CREDITS_PP=2"});
  ExpectOk(r, 4, "flood");
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(Stat(StatsLine(r, rank), "rnr_naks"), 0) << Describe(r);
    EXPECT_GE(Stat(StatsLine(r, rank), "dynamic_connections"), 1)
        << Describe(r);
  }
}

// An IMMEDIATE Request to a peer not yet connected does not wait for the
// handshake: it returns "would block" (GEX_FLAG_IMMEDIATE's contract; the
// exit protocol's sends rely on it, a peer may have left), and a retry
// once the handshake has finished goes out.
TEST(IbvDynamicTest, ImmediateRequestDoesNotWaitForTheHandshake) {
  constexpr int kRanks = 8;
  const JobResult r =
      RunIbvJob(kRanks, {"immediate"}, {"GASNET_CONNECT_STATIC=0"});
  ExpectOk(r, kRanks, "immediate");
  for (int rank = 0; rank < kRanks; ++rank) {
    const std::string line = RankLine(r, rank, "immediate ok");
    EXPECT_GE(Field(line, "would_block"), 1) << line;
  }
}

// One UD send buffer and two receive buffers for 8 ranks connecting every
// pair at once: sends wait for a free slot while answering others (a
// handler's REP or RTU polls the same CQ), receives overflow and are
// dropped, and the REQ retransmissions make up for it. (Handling a message
// before the send completions of its own batch were taken in once spun
// here forever.)
TEST(IbvDynamicTest, FewConnectionBuffersStillConnectEveryPair) {
  constexpr int kRanks = 8;
  const JobResult r =
      RunIbvJob(kRanks, {"immediate"},
                {"GASNET_CONNECT_STATIC=0", "GASNET_CONNECT_SNDS=1",
                 "GASNET_CONNECT_RCVS=2"});
  ExpectOk(r, kRanks, "immediate");
}

TEST(IbvDynamicTest, ConnectFileCoversSomePairsTheRestConnectOnDemand) {
  constexpr int kRanks = 4;
  const std::string dir = MakeTempDir("someconn");
  // Only 0-1 and 2-3 at start-up; the client's ring also needs 1-2, 3-0.
  WriteFile(dir + "/conn", "size: 4\n0: 1\n2: 3\n");
  const JobResult r =
      RunIbvJob(kRanks, {"hello"}, {"GASNET_CONNECTFILE_IN=" + dir + "/conn"});
  ExpectOk(r, kRanks, "hello");
  int dynamic = 0;
  for (int rank = 0; rank < kRanks; ++rank) {
    dynamic += Stat(StatsLine(r, rank), "dynamic_connections");
  }
  EXPECT_GE(dynamic, 4) << Describe(r);  // 1-2 and 3-0, both sides

  const JobResult refused = RunIbvJob(
      kRanks, {"hello"},
      {"GASNET_CONNECTFILE_IN=" + dir + "/conn", "GASNET_CONNECT_DYNAMIC=0"});
  EXPECT_NE(refused.exit_code, 0) << Describe(refused);
  EXPECT_THAT(refused.err, HasSubstr("GASNET_CONNECT_DYNAMIC=0"))
      << Describe(refused);
  EXPECT_THAT(refused.err, HasSubstr("GASNET_CONNECTFILE_IN="))
      << Describe(refused);
  ExpectNothingLeft(refused);
}

struct BadFile {
  const char* name;
  const char* text;
  const char* message;
};

class IbvBadConnectFileTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(IbvBadConnectFileTest, RefusedNamingTheFile) {
  constexpr int kRanks = 2;
  const std::string dir = MakeTempDir("badconn");
  for (int rank = 0; rank < kRanks; ++rank) {
    WriteFile(absl::StrFormat("%s/conn.%d", dir, rank), GetParam().text);
  }
  const JobResult r = RunIbvJob(kRanks, {"hello"},
                                {"GASNET_CONNECTFILE_IN=" + dir + "/conn.%"});
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr(dir + "/conn.")) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr(GetParam().message)) << Describe(r);
  EXPECT_THAT(r.out, Not(HasSubstr("hello ok"))) << Describe(r);
  ExpectNothingLeft(r);
}

INSTANTIATE_TEST_SUITE_P(
    Files, IbvBadConnectFileTest,
    ::testing::Values(BadFile{"Malformed", "0: 1\nthis is not a connect file\n",
                              " line 2: "},
                      BadFile{"OtherJob", "size: 99\n0: 1\n", "another job"}),
    [](const ::testing::TestParamInfo<BadFile>& info) {
      return std::string(info.param.name);
    });

// 5b. Partitions: GASNET_IBV_PKEY picks its entry in the port's P_Key table
// (the software ports' table set by GASNET_IBV_SOFTWARE_PKEYS). Entry 0 is
// a limited member of partition 1, with which no two ranks can talk: the
// job works only if every QP, RC and the dynamic connections' UD ones,
// was put at the chosen index.
TEST(IbvPartitionTest, EveryQpUsesTheChosenPartition) {
  constexpr int kRanks = 3;
  for (const char* connect :
       {"GASNET_CONNECT_STATIC=1", "GASNET_CONNECT_STATIC=0"}) {
    const JobResult r = RunIbvJob(
        kRanks, {"rma"},
        {"GASNET_IBV_SOFTWARE_PKEYS=0x0001,0x0123,0x8123",
         "GASNET_IBV_PKEY=0x123", "GASNET_IBV_LIST_PORTS=1", connect});
    ExpectOk(r, kRanks, "rma");
    for (int rank = 0; rank < kRanks; ++rank) {
      EXPECT_THAT(r.out,
                  HasSubstr(absl::StrFormat(
                      "ibv: rank %d: using:\ngexsoft0:1 ACTIVE lid", rank)))
          << Describe(r);
    }
    // The full-member entry, not the limited one before it.
    EXPECT_EQ(Occurrences(r.out, "pkey 0x8123 (index 2)"), kRanks)
        << Describe(r);
  }
}

// 5c. GASNET_IBV_PORTS_VERBOSE=2 reports every port probed and why it was
// or was not used, once per host (the first rank there); by default, on
// ports that are all active, nothing.
TEST(IbvPortsVerboseTest, TheProbeIsReportedOncePerHost) {
  JobResult r =
      RunIbvJob(2, {"hello"},
                {"GASNET_IBV_SOFTWARE_DEVICES=2", "GASNET_IBV_PORTS=gexsoft1",
                 "GASNET_IBV_PORTS_VERBOSE=2"});
  ExpectOk(r, 2, "hello");
  EXPECT_THAT(r.err, HasSubstr("ibv: rank 0: gexsoft0:1: not named by "
                               "GASNET_IBV_PORTS\nibv: rank 0: gexsoft1:1: "
                               "used\n"))
      << Describe(r);
  EXPECT_EQ(Occurrences(r.err, ": used\n"), 1) << Describe(r);
  r = RunIbvJob(2, {"hello"}, {"GASNET_IBV_SOFTWARE_DEVICES=2"});
  ExpectOk(r, 2, "hello");
  EXPECT_THAT(r.err, Not(HasSubstr("gexsoft"))) << Describe(r);
}

// 5b. Job size: what a rank allocates per peer, from the conduit's own
// count (GASNET_IBV_STATS' peers, connected_peers, qps, recv_buffers and
// conduit_*bytes), under the large-job defaults (GASNET_IBV_LARGE_JOB
// lowered to 2 so that jobs of 2 and 8 ranks get them): connections only
// to the peers a rank talks to, one shared receive queue, and less than
// 16 KiB per peer. An O(N) cost per peer, or buffers per connection,
// fails here; times are not looked at.

constexpr long long kMaxBytesPerPeer = 16 << 10;

struct JobMemory {
  long long peers, connected, qps, recv_buffers, total, fixed, tables,
      connections, srq;
};

JobMemory MemoryOf(const JobResult& r, int rank) {
  const std::string line = StatsLine(r, rank);
  return {Stat(line, "peers"),
          Stat(line, "connected_peers"),
          Stat(line, "qps"),
          Stat(line, "recv_buffers"),
          Stat(line, "conduit_bytes"),
          Stat(line, "conduit_fixed_bytes"),
          Stat(line, "conduit_table_bytes"),
          Stat(line, "conduit_connection_bytes"),
          Stat(line, "srq")};
}

TEST(IbvJobSizeTest, LargeJobAllocatesPerPeerTalkedToUnder16K) {
  const std::vector<std::string> large = {"GASNET_IBV_LARGE_JOB=2"};
  // "scale": one Medium and one Put to every other rank, so every pair
  // ends connected, on demand.
  const JobResult two = RunIbvJob(2, {"scale"}, large);
  ExpectOk(two, 2, "scale");
  const JobResult eight = RunIbvJob(8, {"scale"}, large);
  ExpectOk(eight, 8, "scale");
  for (int rank = 0; rank < 8; ++rank) {
    const JobMemory m = MemoryOf(eight, rank);
    const JobMemory small = MemoryOf(two, rank % 2);
    const std::string line = StatsLine(eight, rank);
    EXPECT_EQ(m.srq, 1) << line;
    EXPECT_EQ(m.peers, 7) << line;
    EXPECT_EQ(m.connected, 7) << line;
    EXPECT_EQ(Stat(line, "dynamic_connections"), 7) << line;
    EXPECT_EQ(m.qps, 7 + 1) << line;  // one RC QP per peer, and the UD QP
    // One shared pool of receive buffers, whatever the job.
    EXPECT_EQ(m.recv_buffers, small.recv_buffers) << line;
    ASSERT_GT(m.total, 0) << line;
    EXPECT_EQ(m.total, m.fixed + m.tables + m.connections) << line;
    EXPECT_LT(m.connections / m.connected, kMaxBytesPerPeer) << line;
    EXPECT_LT(m.tables / m.peers, kMaxBytesPerPeer) << line;
    // Six more peers cost less than 16 KiB each, all counted.
    EXPECT_LT((m.total - small.total) / 6, kMaxBytesPerPeer)
        << line << "\n"
        << StatsLine(two, rank % 2);
  }

  // "ring": a Medium and a Put to the next rank only. The barriers'
  // dissemination pairs each rank with the ranks 1, 2 and 4 away, both
  // ways: 5 of the 7 peers, never the one 3 away.
  const JobResult ring = RunIbvJob(8, {"ring"}, large);
  ExpectOk(ring, 8, "ring");
  for (int rank = 0; rank < 8; ++rank) {
    const JobMemory m = MemoryOf(ring, rank);
    const std::string line = StatsLine(ring, rank);
    EXPECT_EQ(m.peers, 7) << line;
    EXPECT_GE(m.connected, 2) << line;  // its next and its previous
    EXPECT_LE(m.connected, 5) << line;
    EXPECT_EQ(m.qps, m.connected + 1) << line;
  }
}

// Below the threshold (the default, 256 ranks) nothing changes: every pair
// is connected at start-up, each with its own receive buffers.
TEST(IbvJobSizeTest, SmallJobKeepsStaticConnections) {
  const JobResult r = RunIbvJob(8, {"ring"}, {});
  ExpectOk(r, 8, "ring");
  for (int rank = 0; rank < 8; ++rank) {
    const JobMemory m = MemoryOf(r, rank);
    const std::string line = StatsLine(r, rank);
    EXPECT_EQ(m.srq, 0) << line;
    EXPECT_EQ(m.connected, 7) << line;
    EXPECT_EQ(m.qps, 7) << line;  // no UD QP: nothing left to connect
    EXPECT_EQ(Stat(line, "dynamic_connections"), 0) << line;
  }
}

// 6. Bad settings: a fatal message naming them, nonzero exit, nothing left.
struct BadSetting {
  const char* name;
  std::vector<std::string> env;
  std::vector<std::string> messages;  // what stderr must say
};

class IbvBadInputTest : public ::testing::TestWithParam<BadSetting> {};

TEST_P(IbvBadInputTest, ClearMessageNonzeroExitNothingLeft) {
  const JobResult r = RunIbvJob(2, {"hello"}, GetParam().env);
  EXPECT_NE(r.exit_code, 0) << Describe(r);
  for (const std::string& m : GetParam().messages) {
    EXPECT_THAT(r.err, HasSubstr(m)) << Describe(r);
  }
  EXPECT_THAT(r.out, Not(HasSubstr("hello ok"))) << Describe(r);
  ExpectNothingLeft(r);
}

INSTANTIATE_TEST_SUITE_P(
    Settings, IbvBadInputTest,
    ::testing::Values(
        BadSetting{"NoSuchDevice",
                   {"GASNET_IBV_PORTS=nosuchdev"},
                   {"GASNET_IBV_PORTS names device 'nosuchdev', which does not "
                    "exist"}},
        BadSetting{"TooFewReceiveBuffers",
                   {"GASNET_AM_CREDITS_PP=64", "GASNET_RBUF_COUNT=16",
                    "GASNET_USE_SRQ=0"},
                   {"GASNET_RBUF_COUNT=16 and GASNET_USE_SRQ=0",
                    "GASNET_AM_CREDITS_PP=64"}},
        BadSetting{"NoSuchPartition",
                   {"GASNET_IBV_SOFTWARE_PKEYS=0xffff,0x8123",
                    "GASNET_IBV_PKEY=0x124"},
                   {"GASNET_IBV_PKEY=0x0124: port gexsoft0:1 has no such "
                    "partition (its P_Key table holds 0xffff, 0x8123)"}},
        BadSetting{"NoWayToConnect",
                   {"GASNET_CONNECT_STATIC=0", "GASNET_CONNECT_DYNAMIC=0"},
                   {"GASNET_CONNECT_STATIC=0 and GASNET_CONNECT_DYNAMIC=0",
                    "no way to connect"}}),
    [](const ::testing::TestParamInfo<BadSetting>& info) {
      return std::string(info.param.name);
    });

// 7. PAR with a receive thread: rank 1 computes (spins on an atomic the
// handler increments, never calling GASNet) while rank 0 sends it Requests
// that Reply; only the thread can handle them (the client gives up after
// 30 s).
class IbvThreadTest
    : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(IbvThreadTest, ReceiveThreadServesAComputingRank) {
  constexpr long long kRequests = 500;
  std::vector<std::string> env = {"GASNET_RCV_THREAD=1"};
  env.insert(env.end(), GetParam().begin(), GetParam().end());
  const JobResult r = RunIbvJob(2, {"thread", std::to_string(kRequests)}, env,
                                /*par=*/true, absl::Seconds(50));
  ExpectOk(r, 2, "thread");
  EXPECT_EQ(Field(RankLine(r, 0, "thread ok"), "acks"), kRequests)
      << Describe(r);
  EXPECT_EQ(Field(RankLine(r, 1, "thread ok"), "handled"), kRequests)
      << Describe(r);
}

// The thread's settings: only it polls for AMs (exclusive); it sleeps half
// the time (LOAD); a stack of its own; a send thread beside it.
INSTANTIATE_TEST_SUITE_P(
    Settings, IbvThreadTest,
    ::testing::Values(std::vector<std::string>{},
                      std::vector<std::string>{
                          "GASNET_RCV_THREAD_POLL_MODE=exclusive",
                          "GASNET_RCV_THREAD_LOAD=0.5",
                          "GASNET_THREAD_STACK_MIN=4M", "GASNET_SND_THREAD=1",
                          "GASNET_RCV_THREAD_RATE=100000"}));

// PAR with send threads (and the receive thread the computing rank needs,
// as above): with GASNET_SND_THREAD_POLL_MODE=exclusive only they reap
// send completions (the client's own polls and waits leave them), and the
// job still completes; by default both may.
TEST(IbvSendThreadTest, ExclusiveModeLeavesSendCompletionsToTheThreads) {
  constexpr long long kRequests = 500;
  for (const char* mode : {"exclusive", "serialized"}) {
    const JobResult r =
        RunIbvJob(2, {"thread", std::to_string(kRequests)},
                  {"GASNET_RCV_THREAD=1", "GASNET_SND_THREAD=1",
                   absl::StrCat("GASNET_SND_THREAD_POLL_MODE=", mode)},
                  /*par=*/true, absl::Seconds(50));
    ExpectOk(r, 2, "thread");
    EXPECT_EQ(Field(RankLine(r, 0, "thread ok"), "acks"), kRequests)
        << Describe(r);
    const std::string stats = StatsLine(r, 0);
    // Rank 0 sent every Request while the threads ran: their completions
    // were reaped.
    EXPECT_GE(Stat(stats, "send_cqes_client") + Stat(stats, "send_cqes_thread"),
              kRequests)
        << mode << ": " << stats;
    if (std::string(mode) == "exclusive") {
      for (int rank = 0; rank < 2; ++rank) {
        EXPECT_EQ(Stat(StatsLine(r, rank), "send_cqes_client"), 0)
            << StatsLine(r, rank);
      }
    }
  }
}

// One rank leaves with gasnet_exit(3) while the other, with a receive
// thread, waits in a barrier: the job exits 3, no rank dies of a signal,
// nothing is left.
TEST(IbvThreadExitTest, OneRankExitsWhileTheOtherHasAReceiveThread) {
  // (It aborted in 2 runs of 5 when the thread joined itself.)
  for (int run = 0; run < 5; ++run) {
    const JobResult r = RunIbvJob(2, {"exit", "3"}, {"GASNET_RCV_THREAD=1"},
                                  /*par=*/true, absl::Seconds(30));
    EXPECT_EQ(r.exit_code, 3) << Describe(r);
    EXPECT_THAT(r.out, HasSubstr("rank 1: exiting with 3")) << Describe(r);
    EXPECT_THAT(r.err, Not(HasSubstr("terminate called"))) << Describe(r);
    EXPECT_THAT(r.err, Not(HasSubstr("Caught a fatal signal"))) << Describe(r);
    EXPECT_THAT(r.out, Not(HasSubstr("CHECK FAILED"))) << Describe(r);
    ExpectNothingLeft(r);
  }
}

}  // namespace
}  // namespace gexrt::testing
