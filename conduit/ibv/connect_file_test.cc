#include "conduit/ibv/connect_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::ibv {
namespace {

using ::testing::HasSubstr;

// The ranks whose flag is set, for readable expectations.
std::vector<uint32_t> Peers(const std::vector<bool>& flags) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < flags.size(); ++i) {
    if (flags[i]) out.push_back(i);
  }
  return out;
}

// Parses `text` as file "f" and returns the peers of `rank`, or fails the
// test.
std::vector<uint32_t> PeersOf(std::string_view text, uint32_t rank,
                              uint32_t ranks) {
  absl::StatusOr<std::vector<bool>> flags =
      ParseConnectFile(text, "f", rank, ranks);
  EXPECT_TRUE(flags.ok()) << flags.status();
  if (!flags.ok()) return {};
  EXPECT_EQ(flags->size(), ranks);
  return Peers(*flags);
}

// The error of parsing `text` as file "/tmp/x" for rank 0.
absl::Status ErrorOf(std::string_view text, uint32_t ranks = 16) {
  absl::StatusOr<std::vector<bool>> flags =
      ParseConnectFile(text, "/tmp/x", 0, ranks);
  EXPECT_FALSE(flags.ok()) << "parsed: " << text;
  return flags.status();
}

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ConnectFilePathTest, ReplacesEveryPercent) {
  EXPECT_EQ(ConnectFilePath("/d/conn.%", 12), "/d/conn.12");
  EXPECT_EQ(ConnectFilePath("%/a%b", 3), "3/a3b");
  EXPECT_EQ(ConnectFilePath("/d/conn", 5), "/d/conn");
}

TEST(ParseConnectFileTest, ReadmeExampleOneLine) {
  EXPECT_EQ(PeersOf("7: 0 4 6\n", 7, 8), (std::vector<uint32_t>{0, 4, 6}));
}

TEST(ParseConnectFileTest, ReadmeExampleRepeatedNodeLines) {
  EXPECT_EQ(PeersOf("7:0 4\n7:6\n", 7, 8), (std::vector<uint32_t>{0, 4, 6}));
}

TEST(ParseConnectFileTest, ReadmeExampleRange) {
  EXPECT_EQ(PeersOf("6:9-12\n", 6, 16), (std::vector<uint32_t>{9, 10, 11, 12}));
  // Each end of the range sees rank 6 from the other side.
  EXPECT_EQ(PeersOf("6:9-12\n", 10, 16), (std::vector<uint32_t>{6}));
  EXPECT_EQ(PeersOf("6:9-12\n", 13, 16), (std::vector<uint32_t>{}));
}

TEST(ParseConnectFileTest, ConnectionsAreBidirectional) {
  EXPECT_EQ(PeersOf("1:0\n", 0, 2), (std::vector<uint32_t>{1}));
  EXPECT_EQ(PeersOf("1:0\n", 1, 2), (std::vector<uint32_t>{0}));
  // Both directions named: still one connection, no error.
  EXPECT_EQ(PeersOf("1:0\n0:1\n", 0, 2), (std::vector<uint32_t>{1}));
}

TEST(ParseConnectFileTest, OtherNodesLinesDoNotConnectThisRank) {
  EXPECT_EQ(PeersOf("3: 1 2\n2: 5\n", 0, 8), (std::vector<uint32_t>{}));
  EXPECT_EQ(PeersOf("3: 1 2\n2: 5\n", 2, 8), (std::vector<uint32_t>{3, 5}));
}

TEST(ParseConnectFileTest, CommentsBlankLinesAndWhitespace) {
  EXPECT_EQ(PeersOf("# a comment\n\n   \n7:\t0  4 \r\n#7: 5\n7 : 6\n", 7, 8),
            (std::vector<uint32_t>{0, 4, 6}));
}

TEST(ParseConnectFileTest, SelfPeerIsIgnored) {
  EXPECT_EQ(PeersOf("3: 3 4\n", 3, 8), (std::vector<uint32_t>{4}));
  EXPECT_EQ(PeersOf("3: 2-5\n", 3, 8), (std::vector<uint32_t>{2, 4, 5}));
}

TEST(ParseConnectFileTest, EmptyPeerListIsAllowed) {
  EXPECT_EQ(PeersOf("size: 4\n2:\n", 2, 4), (std::vector<uint32_t>{}));
}

TEST(ParseConnectFileTest, BaseTwo) {
  EXPECT_EQ(PeersOf("base: 2\n111: 0 100 110\n", 7, 8),
            (std::vector<uint32_t>{0, 4, 6}));
}

TEST(ParseConnectFileTest, BaseThirtySixEitherCase) {
  // z = 35, 10 = 36, Z = 35 again.
  EXPECT_EQ(PeersOf("base: 36\nz: 10 a-c\nZ: 1\n", 35, 40),
            (std::vector<uint32_t>{1, 10, 11, 12, 36}));
}

TEST(ParseConnectFileTest, BaseOnlyAffectsLaterLines) {
  // "10" is ten before the base line and sixteen after it.
  EXPECT_EQ(PeersOf("0: 10\nbase: 16\n0: 10 F\n", 0, 20),
            (std::vector<uint32_t>{10, 15, 16}));
  // A letter before any base line is not a decimal number.
  absl::Status status = ErrorOf("0: a\nbase: 16\n");
  EXPECT_THAT(status.message(), HasSubstr("line 1"));
}

TEST(ParseConnectFileTest, SizeAndBaseValuesAreDecimal) {
  EXPECT_EQ(PeersOf("base: 16\nsize: 20\n13: 0\n", 0, 20),
            (std::vector<uint32_t>{19}));
}

TEST(ParseConnectFileTest, SizeMatchingTheJobIsAccepted) {
  EXPECT_EQ(PeersOf("size: 8\n7: 0\n", 0, 8), (std::vector<uint32_t>{7}));
}

TEST(ParseConnectFileTest, SizeFromAnotherJobIsAnError) {
  absl::Status status = ErrorOf("size: 4\n0: 1\n", 8);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("connect file /tmp/x line 1"));
  EXPECT_THAT(status.message(), HasSubstr("another job of 4 ranks"));
  EXPECT_THAT(status.message(), HasSubstr("this job has 8"));
}

TEST(ParseConnectFileTest, BadNumberNamesFileLineAndBase) {
  absl::Status status = ErrorOf("0: 1\n\n1: q\n");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "connect file /tmp/x line 3: 'q' is not a number in base 10");
}

TEST(ParseConnectFileTest, MalformedLines) {
  struct Case {
    std::string text;
    std::string line;
    std::string what;
  };
  const std::vector<Case> cases = {
      {"0: 1\n0 1 2\n", "line 2:", "no ':'"},
      {" 0: 1\n", "line 1:", "start with whitespace"},
      {"\t0: 1\n", "line 1:", "start with whitespace"},
      {"0: 1x\n", "line 1:", "'1x' is not a number in base 10"},
      {"0: -3\n", "line 1:", "is not a number"},
      {"0: 16\n", "line 1:", "not below the job size 16"},
      {"99: 1\n", "line 1:", "not below the job size 16"},
      {"0: 1-99\n", "line 1:", "not below the job size 16"},
      {"0: 5-3\n", "line 1:", "'5-3' ends before it starts"},
      {"0: 1-2-3\n", "line 1:", "not a number or a range"},
      {"0: 1-\n", "line 1:", "is not a number"},
      {"base: 37\n", "line 1:", "base 37 is not in 2..36"},
      {"base: 1\n", "line 1:", "base 1 is not in 2..36"},
      {"base: 0x10\n", "line 1:", "needs one decimal number"},
      {"size:\n", "line 1:", "needs one decimal number"},
      {"0: 99999999999999999999999\n", "line 1:", "is not a number"},
      {"base: 2\n0: 2\n", "line 2:", "'2' is not a number in base 2"},
  };
  for (const Case& c : cases) {
    absl::Status status = ErrorOf(c.text);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(status.message(), HasSubstr("connect file /tmp/x " + c.line))
        << c.text;
    EXPECT_THAT(status.message(), HasSubstr(c.what)) << c.text;
  }
}

TEST(ParseConnectFileTest, RankOutsideTheJobIsAnError) {
  absl::StatusOr<std::vector<bool>> flags = ParseConnectFile("", "f", 4, 4);
  EXPECT_EQ(flags.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FormatConnectFileTest, WritesSizeBaseAndOneSortedLine) {
  EXPECT_EQ(FormatConnectFile(7, 40, 10, {6, 0, 4, 4, 7}),
            "size: 40\nbase: 10\n7: 0 4 6\n");
  EXPECT_EQ(FormatConnectFile(3, 40, 10, {9, 10, 11, 12, 20, 21, 1}),
            "size: 40\nbase: 10\n3: 1 9-12 20 21\n");
  EXPECT_EQ(FormatConnectFile(35, 40, 36, {10, 36, 37, 38}),
            "size: 40\nbase: 36\nz: a 10-12\n");
  EXPECT_EQ(FormatConnectFile(2, 4, 36, {}), "size: 4\nbase: 36\n2:\n");
}

TEST(FormatConnectFileTest, RoundTripsThroughParse) {
  const uint32_t ranks = 200;
  const std::vector<std::vector<uint32_t>> peer_sets = {
      {},
      {0},
      {199},
      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
      {0, 2, 4, 100, 101, 102, 103, 150, 151, 198, 199},
      {5, 3, 9, 3, 36, 35, 37, 64, 65, 66},
  };
  for (uint32_t base : {2u, 7u, 10u, 16u, 36u}) {
    for (const std::vector<uint32_t>& peers : peer_sets) {
      for (uint32_t rank : {0u, 5u, 199u}) {
        std::string text = FormatConnectFile(rank, ranks, base, peers);
        std::vector<uint32_t> expected;
        for (uint32_t p = 0; p < ranks; ++p) {
          bool listed = false;
          for (uint32_t q : peers) listed = listed || q == p;
          if (listed && p != rank) expected.push_back(p);
        }
        EXPECT_EQ(PeersOf(text, rank, ranks), expected)
            << "base " << base << " rank " << rank << ":\n"
            << text;
      }
    }
  }
}

TEST(WriteConnectFileTest, WriteThenReadPerRankFiles) {
  const std::string name = TempDir() + "/conn.%";
  ASSERT_TRUE(WriteConnectFile(name, 3, 8, 36, {0, 5, 6, 7}).ok());
  ASSERT_TRUE(WriteConnectFile(name, 5, 8, 2, {3}).ok());
  EXPECT_EQ(ReadAll(TempDir() + "/conn.3"), "size: 8\nbase: 36\n3: 0 5-7\n");

  absl::StatusOr<std::vector<bool>> three = ReadConnectFile(name, 3, 8);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(Peers(*three), (std::vector<uint32_t>{0, 5, 6, 7}));
  absl::StatusOr<std::vector<bool>> five = ReadConnectFile(name, 5, 8);
  ASSERT_TRUE(five.ok()) << five.status();
  EXPECT_EQ(Peers(*five), (std::vector<uint32_t>{3}));
}

TEST(WriteConnectFileTest, ReplacesTheFileAndLeavesNoTemporary) {
  const std::string dir = TempDir() + "/replace";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  const std::string path = dir + "/conn";
  ASSERT_TRUE(WriteConnectFile(path, 0, 4, 10, {1, 2, 3}).ok());
  ASSERT_TRUE(WriteConnectFile(path, 0, 4, 10, {2}).ok());
  EXPECT_EQ(ReadAll(path), "size: 4\nbase: 10\n0: 2\n");
  // Only the file itself is in the directory.
  EXPECT_EQ(rmdir(dir.c_str()), -1);
  ASSERT_EQ(unlink(path.c_str()), 0);
  EXPECT_EQ(rmdir(dir.c_str()), 0);
}

TEST(WriteConnectFileTest, MissingDirectoryFailsNamingThePath) {
  const std::string name = TempDir() + "/no/such/dir/conn.%";
  absl::Status status = WriteConnectFile(name, 2, 4, 36, {1});
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("GASNET_CONNECTFILE_OUT"));
  EXPECT_THAT(status.message(), HasSubstr(TempDir() + "/no/such/dir/conn.2"));
}

TEST(WriteConnectFileTest, BadArgumentsAreInvalidArgument) {
  const std::string name = TempDir() + "/bad.%";
  EXPECT_EQ(WriteConnectFile(name, 0, 4, 37, {1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteConnectFile(name, 0, 4, 10, {4}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteConnectFile(name, 4, 4, 10, {1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_NE(access((TempDir() + "/bad.0").c_str(), F_OK), 0);
}

TEST(ReadConnectFileTest, MissingFileIsNotFoundNamingPathAndVariable) {
  const std::string name = TempDir() + "/missing.%";
  absl::StatusOr<std::vector<bool>> flags = ReadConnectFile(name, 6, 8);
  EXPECT_EQ(flags.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(flags.status().message(), HasSubstr("GASNET_CONNECTFILE_IN"));
  EXPECT_THAT(flags.status().message(), HasSubstr(TempDir() + "/missing.6"));
}

TEST(ReadConnectFileTest, ParseErrorsNameThePath) {
  const std::string path = TempDir() + "/broken";
  {
    std::ofstream out(path);
    out << "0: 1\n0: zz\n";
  }
  absl::StatusOr<std::vector<bool>> flags = ReadConnectFile(path, 0, 4);
  EXPECT_EQ(flags.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(flags.status().message(),
              HasSubstr("connect file " + path + " line 2"));
}

}  // namespace
}  // namespace gexrt::ibv
