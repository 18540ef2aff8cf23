#include "bootstrap/spawn/host_list.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::spawn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

// A fake environment for HostListFromEnvironment.
class FakeEnv {
 public:
  FakeEnv& Set(const std::string& name, const std::string& value) {
    vars_[name] = value;
    return *this;
  }
  std::function<const char*(const char*)> Getenv() const {
    return [this](const char* name) -> const char* {
      auto it = vars_.find(name);
      return it == vars_.end() ? nullptr : it->second.c_str();
    };
  }

 private:
  std::map<std::string, std::string> vars_;
};

// Writes `contents` to a fresh file under the test's temporary directory.
std::string WriteTempFile(const std::string& contents) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path =
      std::string(dir != nullptr ? dir : "/tmp") + "/host_list_test_XXXXXX";
  const int fd = mkstemp(path.data());
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, contents.data(), contents.size()),
            static_cast<ssize_t>(contents.size()));
  close(fd);
  return path;
}

TEST(IsValidHostTokenTest, PlainNamesUsersAndAddresses) {
  for (const char* good :
       {"n1", "node-01.cluster.example.org", "user@host", "10.0.0.1", "[::1]",
        "fe80::1", "a_b", "[2001:db8::1]", "u.ser@h-1"}) {
    EXPECT_TRUE(IsValidHostToken(good)) << good;
  }
}

TEST(IsValidHostTokenTest, RejectsWhatAShellOrSshWouldMisread) {
  for (const char* bad : {"",      "-oProxyCommand=x",
                          "-n",    "a;b",
                          "a b",   "\"x",
                          "x'y",   "$(id)",
                          "`id`",  "a|b",
                          "a&b",   "h\x01",
                          "h\n",   "h\t",
                          "a,b",   "a#b",
                          "~user", "h/x",
                          "h\\x",  "h\xc3\xa9",
                          "*",     "a=b"}) {
    EXPECT_FALSE(IsValidHostToken(bad)) << bad;
  }
}

TEST(ParseNodeFileTest, FirstTokenOfEachLineSkippingBlanksAndComments) {
  absl::StatusOr<std::vector<std::string>> hosts = ParseNodeFile(
      "# the job's nodes\n"
      "n1\n"
      "\n"
      "   \t\n"
      "  n2   4 slots  \n"
      "n3 # trailing comment\n"
      "   # indented comment\n"
      "n1\r\n"
      "n4",  // No final newline.
      "/tmp/nodes");
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  // Duplicates are the caller's business here.
  EXPECT_THAT(*hosts, ElementsAre("n1", "n2", "n3", "n1", "n4"));
}

TEST(ParseNodeFileTest, SgeHostfileFormat) {
  absl::StatusOr<std::vector<std::string>> hosts = ParseNodeFile(
      "c1.example 4 all.q@c1.example UNDEFINED\n"
      "c2.example 2 all.q@c2.example UNDEFINED\n",
      "pe_hostfile");
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  EXPECT_THAT(*hosts, ElementsAre("c1.example", "c2.example"));
}

TEST(ParseNodeFileTest, EmptyAndCommentOnlyFilesGiveNoHosts) {
  EXPECT_THAT(*ParseNodeFile("", "f"), IsEmpty());
  EXPECT_THAT(*ParseNodeFile("# nothing\n\n  \n", "f"), IsEmpty());
}

TEST(ParseNodeFileTest, BadHostNamesFileLineAndToken) {
  absl::StatusOr<std::vector<std::string>> hosts =
      ParseNodeFile("n1\n\nn2;reboot\n", "/etc/nodes");
  ASSERT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(hosts.status()),
              ::testing::StartsWith("/etc/nodes:3: invalid host 'n2;reboot'"));

  hosts = ParseNodeFile("-oProxyCommand=evil\n", "f");
  ASSERT_FALSE(hosts.ok());
  EXPECT_THAT(Message(hosts.status()), HasSubstr("f:1:"));
  EXPECT_THAT(Message(hosts.status()), HasSubstr("starts with '-'"));

  hosts = ParseNodeFile("ok\n\"x y\"\n", "f");
  ASSERT_FALSE(hosts.ok());
  EXPECT_THAT(Message(hosts.status()), HasSubstr("f:2: invalid host '\\\"x'"));

  // Control characters are escaped in the message.
  hosts = ParseNodeFile("h\x01x\n", "f");
  ASSERT_FALSE(hosts.ok());
  EXPECT_THAT(Message(hosts.status()), HasSubstr("'h\\x01x'"));
}

TEST(ParseServerListTest, CommasAndWhitespaceSeparate) {
  absl::StatusOr<std::vector<std::string>> hosts =
      ParseServerList(" a,b  c,\td ,, e\n", "GASNET_SSH_SERVERS");
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  EXPECT_THAT(*hosts, ElementsAre("a", "b", "c", "d", "e"));
  EXPECT_THAT(*ParseServerList("", "V"), IsEmpty());
  EXPECT_THAT(*ParseServerList(" , ,", "V"), IsEmpty());
  EXPECT_THAT(*ParseServerList("a,a", "V"), ElementsAre("a", "a"));
}

TEST(ParseServerListTest, BadHostNamesVariableAndToken) {
  absl::StatusOr<std::vector<std::string>> hosts =
      ParseServerList("a,b;c", "GASNET_SSH_SERVERS");
  ASSERT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(hosts.status()),
              ::testing::StartsWith("GASNET_SSH_SERVERS: invalid host 'b;c'"));
  hosts = ParseServerList("a -x", "LSB_HOSTS");
  ASSERT_FALSE(hosts.ok());
  EXPECT_THAT(Message(hosts.status()),
              HasSubstr("LSB_HOSTS: invalid host '-x'"));
}

TEST(HostListFromEnvironmentTest, NothingSetIsNotFound) {
  FakeEnv env;
  env.Set("GASNET_SSH_KEEPDUP", "1");  // Irrelevant without hosts.
  absl::StatusOr<HostList> list = HostListFromEnvironment(env.Getenv());
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(list.status()), HasSubstr("GASNET_SSH_SERVERS"));
  EXPECT_THAT(Message(list.status()), HasSubstr("GASNET_SSH_NODEFILE"));
}

TEST(HostListFromEnvironmentTest, ServerListWithDuplicatesRemoved) {
  FakeEnv env;
  env.Set("GASNET_SSH_SERVERS", "b a,b c a");
  absl::StatusOr<HostList> list = HostListFromEnvironment(env.Getenv());
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(list->hosts, ElementsAre("b", "a", "c"));
  EXPECT_EQ(list->source, "GASNET_SSH_SERVERS");
}

TEST(HostListFromEnvironmentTest, KeepDupKeepsThem) {
  for (const char* yes : {"1", "yes", "TRUE", "on"}) {
    FakeEnv env;
    env.Set("GASNET_SSH_SERVERS", "b a,b").Set("GASNET_SSH_KEEPDUP", yes);
    absl::StatusOr<HostList> list = HostListFromEnvironment(env.Getenv());
    ASSERT_TRUE(list.ok()) << list.status();
    EXPECT_THAT(list->hosts, ElementsAre("b", "a", "b")) << yes;
  }
  for (const char* no : {"0", "no", "false", ""}) {
    FakeEnv env;
    env.Set("GASNET_SSH_SERVERS", "b a,b").Set("GASNET_SSH_KEEPDUP", no);
    absl::StatusOr<HostList> list = HostListFromEnvironment(env.Getenv());
    ASSERT_TRUE(list.ok()) << list.status();
    EXPECT_THAT(list->hosts, ElementsAre("b", "a")) << no;
  }
  FakeEnv env;
  env.Set("GASNET_SSH_SERVERS", "a").Set("GASNET_SSH_KEEPDUP", "sometimes");
  absl::StatusOr<HostList> list = HostListFromEnvironment(env.Getenv());
  ASSERT_FALSE(list.ok());
  EXPECT_THAT(Message(list.status()),
              HasSubstr("GASNET_SSH_KEEPDUP='sometimes'"));
}

TEST(HostListFromEnvironmentTest, NodeFileIsReadAndNamedInSource) {
  const std::string path = WriteTempFile("n1 2\nn2 2\nn1\n# end\n");
  FakeEnv env;
  env.Set("GASNET_SSH_NODEFILE", path);
  absl::StatusOr<HostList> list = HostListFromEnvironment(env.Getenv());
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(list->hosts, ElementsAre("n1", "n2"));
  EXPECT_EQ(list->source, "GASNET_SSH_NODEFILE (" + path + ")");
  unlink(path.c_str());
}

TEST(HostListFromEnvironmentTest, PrecedenceFollowsGasnet) {
  const std::string ssh_nodefile = WriteTempFile("from-ssh-nodefile\n");
  const std::string nodefile = WriteTempFile("from-nodefile\n");
  const std::string pbs = WriteTempFile("from-pbs\n");
  const std::string sge = WriteTempFile("from-sge 1 q UNDEFINED\n");
  struct Step {
    const char* variable;
    std::string value;
    const char* host;
  };
  // Each step adds a variable of higher precedence than all before it.
  const std::vector<Step> steps = {
      {"LSB_HOSTS", "from-lsb from-lsb", "from-lsb"},
      {"PE_HOSTFILE", sge, "from-sge"},
      {"PBS_NODEFILE", pbs, "from-pbs"},
      {"GASNET_SSH_SERVERS", "from-servers", "from-servers"},
      {"GASNET_NODEFILE", nodefile, "from-nodefile"},
      {"GASNET_SSH_NODEFILE", ssh_nodefile, "from-ssh-nodefile"},
  };
  FakeEnv env;
  for (const Step& step : steps) {
    env.Set(step.variable, step.value);
    absl::StatusOr<HostList> list = HostListFromEnvironment(env.Getenv());
    ASSERT_TRUE(list.ok()) << step.variable << ": " << list.status();
    EXPECT_THAT(list->hosts, ElementsAre(step.host)) << step.variable;
    EXPECT_THAT(list->source, ::testing::StartsWith(step.variable));
  }
  // An empty value counts as unset: the next one down is used.
  env.Set("GASNET_SSH_NODEFILE", "");
  absl::StatusOr<HostList> list = HostListFromEnvironment(env.Getenv());
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(list->hosts, ElementsAre("from-nodefile"));
  for (const std::string& p : {ssh_nodefile, nodefile, pbs, sge}) {
    unlink(p.c_str());
  }
}

TEST(HostListFromEnvironmentTest, UnreadableFileNamesVariablePathAndErrno) {
  FakeEnv env;
  env.Set("PBS_NODEFILE", "/nonexistent/gex/nodes");
  absl::StatusOr<HostList> list = HostListFromEnvironment(env.Getenv());
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(list.status()), HasSubstr("PBS_NODEFILE"));
  EXPECT_THAT(Message(list.status()), HasSubstr("'/nonexistent/gex/nodes'"));
  EXPECT_THAT(Message(list.status()), HasSubstr("No such file or directory"));

  // A directory opens but cannot be read.
  const char* dir = std::getenv("TEST_TMPDIR");
  env = FakeEnv();
  env.Set("GASNET_NODEFILE", dir != nullptr ? dir : "/tmp");
  list = HostListFromEnvironment(env.Getenv());
  ASSERT_FALSE(list.ok());
  EXPECT_THAT(Message(list.status()), HasSubstr("GASNET_NODEFILE"));
  EXPECT_THAT(Message(list.status()), HasSubstr("Is a directory"));
}

TEST(HostListFromEnvironmentTest, BadHostInFileNamesVariableFileAndLine) {
  const std::string path = WriteTempFile("good\nbad|host\n");
  FakeEnv env;
  env.Set("GASNET_SSH_NODEFILE", path);
  absl::StatusOr<HostList> list = HostListFromEnvironment(env.Getenv());
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(list.status()),
            "GASNET_SSH_NODEFILE: " + path +
                ":2: invalid host 'bad|host' (host names may use only "
                "letters, digits and . _ : @ [ ] -)");
  unlink(path.c_str());
}

TEST(HostListFromEnvironmentTest, SourcesWithoutHostsAreErrors) {
  FakeEnv env;
  env.Set("GASNET_SSH_SERVERS", " , ");
  absl::StatusOr<HostList> list = HostListFromEnvironment(env.Getenv());
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(Message(list.status()), "GASNET_SSH_SERVERS lists no hosts");

  const std::string path = WriteTempFile("# nobody\n");
  env = FakeEnv();
  env.Set("GASNET_SSH_NODEFILE", path).Set("GASNET_SSH_SERVERS", "unused");
  list = HostListFromEnvironment(env.Getenv());
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(Message(list.status()),
            "GASNET_SSH_NODEFILE (" + path + ") lists no hosts");
  unlink(path.c_str());
}

HostList Hosts(std::vector<std::string> hosts,
               std::string source = "GASNET_SSH_SERVERS") {
  return HostList{std::move(hosts), std::move(source)};
}

// "host:first+count" for each entry, for compact comparisons.
std::vector<std::string> Describe(const std::vector<HostRanks>& layout) {
  std::vector<std::string> out;
  for (const HostRanks& h : layout) {
    out.push_back(h.host + ":" + std::to_string(h.first_rank) + "+" +
                  std::to_string(h.count));
  }
  return out;
}

TEST(LayOutRanksTest, BlockDistributionExtraRanksGoFirst) {
  absl::StatusOr<std::vector<HostRanks>> layout =
      LayOutRanks(7, 3, Hosts({"a", "b", "c", "d"}));
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_THAT(Describe(*layout), ElementsAre("a:0+3", "b:3+2", "c:5+2"));

  layout = LayOutRanks(8, 4, Hosts({"a", "b", "c", "d"}));
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_THAT(Describe(*layout),
              ElementsAre("a:0+2", "b:2+2", "c:4+2", "d:6+2"));

  layout = LayOutRanks(5, 1, Hosts({"a", "b"}));
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_THAT(Describe(*layout), ElementsAre("a:0+5"));
}

TEST(LayOutRanksTest, DefaultNodesUsesAsManyHostsAsUseful) {
  // More hosts than ranks: one rank per host, extra hosts unused.
  absl::StatusOr<std::vector<HostRanks>> layout =
      LayOutRanks(2, 0, Hosts({"a", "b", "c"}));
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_THAT(Describe(*layout), ElementsAre("a:0+1", "b:1+1"));
  // More ranks than hosts: every host used.
  layout = LayOutRanks(10, 0, Hosts({"a", "b", "c"}));
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_THAT(Describe(*layout), ElementsAre("a:0+4", "b:4+3", "c:7+3"));
}

TEST(LayOutRanksTest, EveryRankExactlyOnceForManyShapes) {
  for (int64_t ranks = 1; ranks <= 20; ++ranks) {
    for (int64_t nodes = 1; nodes <= ranks && nodes <= 6; ++nodes) {
      absl::StatusOr<std::vector<HostRanks>> layout =
          LayOutRanks(ranks, nodes, Hosts({"a", "b", "c", "d", "e", "f"}));
      ASSERT_TRUE(layout.ok()) << layout.status();
      ASSERT_EQ(layout->size(), static_cast<size_t>(nodes));
      int64_t next = 0;
      for (const HostRanks& h : *layout) {
        EXPECT_EQ(h.first_rank, next);
        EXPECT_GE(h.count, ranks / nodes);
        EXPECT_LE(h.count, ranks / nodes + 1);
        next += h.count;
      }
      EXPECT_EQ(next, ranks) << ranks << " over " << nodes;
    }
  }
}

TEST(LayOutRanksTest, ErrorsNameTheNumbersAndTheSource) {
  absl::StatusOr<std::vector<HostRanks>> layout =
      LayOutRanks(8, 4, Hosts({"a", "b", "c"}));
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(layout.status()),
            "-N 4 needs 4 hosts but GASNET_SSH_SERVERS lists 3");

  layout = LayOutRanks(8, 4, Hosts({"a"}, "GASNET_SSH_NODEFILE (/tmp/nodes)"));
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(Message(layout.status()),
              HasSubstr("but GASNET_SSH_NODEFILE (/tmp/nodes) lists 1"));

  layout = LayOutRanks(2, 3, Hosts({"a", "b", "c"}));
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(Message(layout.status()), HasSubstr("-N 3 is more than -n 2"));

  EXPECT_FALSE(LayOutRanks(0, 0, Hosts({"a"})).ok());
  EXPECT_FALSE(LayOutRanks(1, -1, Hosts({"a"})).ok());
  layout = LayOutRanks(1, 0, Hosts({}));
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(Message(layout.status()), HasSubstr("lists no hosts"));
}

}  // namespace
}  // namespace gexrt::spawn
