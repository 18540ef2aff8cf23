#include "bootstrap/spawn/ssh_plan.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bootstrap/spawn/shell_words.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::spawn {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// ---------------------------------------------------------------------------
// SshSettingsFromEnvironment.

std::function<const char*(const char*)> Env(
    std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

SshSettings Settings(std::map<std::string, std::string> vars,
                     const std::string& cwd = "/home/me/job") {
  absl::StatusOr<SshSettings> s =
      SshSettingsFromEnvironment(Env(std::move(vars)), cwd);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : SshSettings{};
}

std::string SettingsError(std::map<std::string, std::string> vars) {
  absl::StatusOr<SshSettings> s =
      SshSettingsFromEnvironment(Env(std::move(vars)), "/cwd");
  if (s.ok()) return "<no error>";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(s.status().message());
}

TEST(SshSettingsTest, Defaults) {
  const SshSettings s = Settings({});
  EXPECT_THAT(s.command, ElementsAre("ssh", "-o", "StrictHostKeyChecking=no",
                                     "-o", "BatchMode=yes"));
  EXPECT_EQ(s.remote_dir, "/home/me/job");
  EXPECT_EQ(s.topology, SshTopology::kFlat);
  EXPECT_EQ(s.out_degree, 32u);
}

TEST(SshSettingsTest, EmptyVariablesAreUnset) {
  const SshSettings s = Settings({{"GASNET_SSH_CMD", ""},
                                  {"GASNET_SSH_OPTIONS", ""},
                                  {"GASNET_SSH_REMOTE_PATH", ""},
                                  {"GASNET_SSH_TOPOLOGY", ""},
                                  {"GASNET_SSH_OUT_DEGREE", ""}});
  EXPECT_THAT(s.command, ElementsAre("ssh", "-o", "StrictHostKeyChecking=no",
                                     "-o", "BatchMode=yes"));
  EXPECT_EQ(s.remote_dir, "/home/me/job");
  EXPECT_EQ(s.topology, SshTopology::kFlat);
  EXPECT_EQ(s.out_degree, 32u);
}

TEST(SshSettingsTest, OpenSshByPathGetsTheOptionsToo) {
  for (const char* cmd : {"ssh", "/usr/bin/ssh", "/opt/openssh/bin/ssh"}) {
    EXPECT_THAT(Settings({{"GASNET_SSH_CMD", cmd}}).command,
                ElementsAre(cmd, "-o", "StrictHostKeyChecking=no", "-o",
                            "BatchMode=yes"))
        << cmd;
  }
}

TEST(SshSettingsTest, OtherRemoteShellsGetNoOptions) {
  for (const char* cmd : {"rsh", "/usr/bin/rsh", "myssh", "sshpass",
                          "/usr/bin/ssh-wrapper", "/opt/ssh/bin/launch"}) {
    EXPECT_THAT(Settings({{"GASNET_SSH_CMD", cmd}}).command, ElementsAre(cmd))
        << cmd;
  }
}

TEST(SshSettingsTest, OptionsAreSplitWithQuotesAndFollowTheOpenSshOptions) {
  const SshSettings s = Settings(
      {{"GASNET_SSH_OPTIONS",
        "-p 2222  -o 'ProxyCommand=ssh gw nc %h %p' -o \"User=a b\" -q"}});
  EXPECT_THAT(s.command, ElementsAre("ssh", "-o", "StrictHostKeyChecking=no",
                                     "-o", "BatchMode=yes", "-p", "2222", "-o",
                                     "ProxyCommand=ssh gw nc %h %p", "-o",
                                     "User=a b", "-q"));
  const SshSettings r = Settings(
      {{"GASNET_SSH_CMD", "rsh"}, {"GASNET_SSH_OPTIONS", "-l 'my user'"}});
  EXPECT_THAT(r.command, ElementsAre("rsh", "-l", "my user"));
}

TEST(SshSettingsTest, UnterminatedQuoteInOptions) {
  EXPECT_THAT(SettingsError({{"GASNET_SSH_OPTIONS", "-o 'ProxyCommand=x"}}),
              HasSubstr("GASNET_SSH_OPTIONS"));
  EXPECT_THAT(SettingsError({{"GASNET_SSH_OPTIONS", "-o \"x"}}),
              HasSubstr("GASNET_SSH_OPTIONS"));
  EXPECT_THAT(SettingsError({{"GASNET_SSH_OPTIONS", "-v \\"}}),
              HasSubstr("GASNET_SSH_OPTIONS"));
}

TEST(SshSettingsTest, RemoteDirectory) {
  EXPECT_EQ(Settings({}, "/launch/dir").remote_dir, "/launch/dir");
  EXPECT_EQ(Settings({{"GASNET_SSH_REMOTE_PATH", "/scratch/a b"}}, "/launch")
                .remote_dir,
            "/scratch/a b");
}

TEST(SshSettingsTest, Topology) {
  EXPECT_EQ(Settings({{"GASNET_SSH_TOPOLOGY", "flat"}}).topology,
            SshTopology::kFlat);
  EXPECT_EQ(Settings({{"GASNET_SSH_TOPOLOGY", "nary"}}).topology,
            SshTopology::kNary);
  for (const char* bad : {"tree", "FLAT", "nary ", "n"}) {
    EXPECT_THAT(SettingsError({{"GASNET_SSH_TOPOLOGY", bad}}),
                AllOf(HasSubstr("GASNET_SSH_TOPOLOGY"), HasSubstr(bad)))
        << bad;
  }
}

TEST(SshSettingsTest, OutDegree) {
  EXPECT_EQ(Settings({{"GASNET_SSH_OUT_DEGREE", "4"}}).out_degree, 4u);
  EXPECT_EQ(Settings({{"GASNET_SSH_OUT_DEGREE", "0"}}).out_degree, 0u);
  EXPECT_EQ(Settings({{"GASNET_SSH_OUT_DEGREE", "1"}}).out_degree, 1u);
  for (const char* bad : {"abc", "-1", "4x", "1.5", "99999999999"}) {
    EXPECT_THAT(SettingsError({{"GASNET_SSH_OUT_DEGREE", bad}}),
                HasSubstr("GASNET_SSH_OUT_DEGREE"))
        << bad;
  }
}

// ---------------------------------------------------------------------------
// The tree.

TEST(TreeTest, Flat) {
  EXPECT_THAT(TreeChildren(-1, 5, SshTopology::kFlat, 32),
              ElementsAre(0, 1, 2, 3, 4));
  for (int64_t h = 0; h < 5; ++h) {
    EXPECT_THAT(TreeChildren(h, 5, SshTopology::kFlat, 32), IsEmpty()) << h;
    EXPECT_THAT(Subtree(h, 5, SshTopology::kFlat, 32), ElementsAre(h)) << h;
  }
  // The degree does not matter.
  EXPECT_THAT(TreeChildren(-1, 3, SshTopology::kFlat, 1), ElementsAre(0, 1, 2));
  EXPECT_THAT(TreeChildren(-1, 0, SshTopology::kFlat, 32), IsEmpty());
}

TEST(TreeTest, NaryDegreeTwoSevenHosts) {
  const auto nary = SshTopology::kNary;
  EXPECT_THAT(TreeChildren(-1, 7, nary, 2), ElementsAre(0));
  EXPECT_THAT(TreeChildren(0, 7, nary, 2), ElementsAre(1, 2));
  EXPECT_THAT(TreeChildren(1, 7, nary, 2), ElementsAre(3, 4));
  EXPECT_THAT(TreeChildren(2, 7, nary, 2), ElementsAre(5, 6));
  for (int64_t h = 3; h < 7; ++h) {
    EXPECT_THAT(TreeChildren(h, 7, nary, 2), IsEmpty()) << h;
  }
  EXPECT_THAT(Subtree(0, 7, nary, 2), ElementsAre(0, 1, 2, 3, 4, 5, 6));
  EXPECT_THAT(Subtree(1, 7, nary, 2), ElementsAre(1, 3, 4));
  EXPECT_THAT(Subtree(2, 7, nary, 2), ElementsAre(2, 5, 6));
  EXPECT_THAT(Subtree(5, 7, nary, 2), ElementsAre(5));
  // A partial last level.
  EXPECT_THAT(TreeChildren(2, 6, nary, 2), ElementsAre(5));
  EXPECT_THAT(Subtree(2, 6, nary, 2), ElementsAre(2, 5));
}

TEST(TreeTest, NaryDegreeZeroIsUnlimited) {
  const auto nary = SshTopology::kNary;
  EXPECT_THAT(TreeChildren(-1, 5, nary, 0), ElementsAre(0));
  EXPECT_THAT(TreeChildren(0, 5, nary, 0), ElementsAre(1, 2, 3, 4));
  for (int64_t h = 1; h < 5; ++h) {
    EXPECT_THAT(TreeChildren(h, 5, nary, 0), IsEmpty()) << h;
  }
  EXPECT_THAT(Subtree(0, 5, nary, 0), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(TreeChildren(0, 1, nary, 0), IsEmpty());
  EXPECT_THAT(TreeChildren(-1, 0, nary, 0), IsEmpty());
}

TEST(TreeTest, NaryDegreeOneIsAChain) {
  const auto nary = SshTopology::kNary;
  EXPECT_THAT(TreeChildren(0, 4, nary, 1), ElementsAre(1));
  EXPECT_THAT(TreeChildren(2, 4, nary, 1), ElementsAre(3));
  EXPECT_THAT(TreeChildren(3, 4, nary, 1), IsEmpty());
  EXPECT_THAT(Subtree(1, 4, nary, 1), ElementsAre(1, 2, 3));
}

TEST(TreeTest, EveryHostIsStartedExactlyOnce) {
  for (SshTopology topology : {SshTopology::kFlat, SshTopology::kNary}) {
    for (uint32_t hosts = 0; hosts <= 70; ++hosts) {
      for (uint32_t degree : {0u, 1u, 2u, 3u, 4u, 5u, 7u, 8u, 32u, 1000000u}) {
        SCOPED_TRACE(
            std::string(topology == SshTopology::kFlat ? "flat" : "nary") +
            " hosts=" + std::to_string(hosts) +
            " degree=" + std::to_string(degree));
        std::vector<int> started(hosts, 0);
        std::vector<int64_t> parent_of(hosts, -2);
        for (int64_t parent = -1; parent < static_cast<int64_t>(hosts);
             ++parent) {
          for (uint32_t c : TreeChildren(parent, hosts, topology, degree)) {
            ASSERT_LT(c, hosts);
            ++started[c];
            parent_of[c] = parent;
            // Parents come before their children: no cycles.
            EXPECT_LT(parent, static_cast<int64_t>(c));
          }
        }
        for (uint32_t h = 0; h < hosts; ++h) {
          EXPECT_EQ(started[h], 1) << "host " << h;
        }
        if (hosts == 0) continue;
        std::vector<uint32_t> all;
        for (uint32_t h = 0; h < hosts; ++h) all.push_back(h);
        if (topology == SshTopology::kNary) {
          EXPECT_THAT(TreeChildren(-1, hosts, topology, degree),
                      ElementsAre(0));
          EXPECT_THAT(Subtree(0, hosts, topology, degree),
                      ElementsAreArray(all));
        } else {
          EXPECT_THAT(TreeChildren(-1, hosts, topology, degree),
                      ElementsAreArray(all));
        }
        // Subtree(h) is h and the subtrees of its children, ascending.
        for (uint32_t h = 0; h < hosts; ++h) {
          std::set<uint32_t> want = {h};
          for (uint32_t c : TreeChildren(h, hosts, topology, degree)) {
            for (uint32_t d : Subtree(c, hosts, topology, degree)) {
              EXPECT_TRUE(want.insert(d).second) << "host " << d << " twice";
            }
          }
          EXPECT_THAT(Subtree(h, hosts, topology, degree),
                      ElementsAreArray(want))
              << "subtree of " << h;
        }
        // Beyond the last host there is nothing.
        EXPECT_THAT(TreeChildren(hosts, hosts, topology, degree), IsEmpty());
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Agent arguments.

AgentParams SomeParams() {
  AgentParams p;
  p.host_index = 2;
  p.parent_address = "10.1.2.3";
  p.parent_port = 40123;
  p.job_size = 12;
  p.hosts = {"n1", "user@n2.example", "[::1]", "n4"};
  p.topology = SshTopology::kNary;
  p.out_degree = 3;
  p.job_id = "job-42";
  p.verbose = true;
  return p;
}

void ExpectSameParams(const AgentParams& got, const AgentParams& want) {
  EXPECT_EQ(got.host_index, want.host_index);
  EXPECT_EQ(got.parent_address, want.parent_address);
  EXPECT_EQ(got.parent_port, want.parent_port);
  EXPECT_EQ(got.job_size, want.job_size);
  EXPECT_EQ(got.hosts, want.hosts);
  EXPECT_EQ(got.topology, want.topology);
  EXPECT_EQ(got.out_degree, want.out_degree);
  EXPECT_EQ(got.job_id, want.job_id);
  EXPECT_EQ(got.verbose, want.verbose);
}

TEST(AgentArgsTest, RoundTrip) {
  const AgentParams p = SomeParams();
  const std::vector<std::string> args = EncodeAgentArgs(p);
  EXPECT_EQ(args.size(), 8u);
  absl::StatusOr<AgentParams> got = DecodeAgentArgs(args);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameParams(*got, p);
}

// The agent's command line is readable by every user of both hosts (ps),
// so nothing in it may be the job token or carry a 64-bit hex value that
// could be one: the token travels on stdin (job_secret.h).
TEST(AgentArgsTest, NoTokenOnTheCommandLine) {
  AgentParams p = SomeParams();
  p.job_id = "";
  for (const std::string& arg : EncodeAgentArgs(p)) {
    EXPECT_FALSE(arg.size() == 16 &&
                 arg.find_first_not_of("0123456789abcdef") == std::string::npos)
        << arg;
  }
}

TEST(AgentArgsTest, RoundTripVariants) {
  std::vector<AgentParams> variants;
  AgentParams p = SomeParams();
  p.host_index = 0;
  p.hosts = {"only"};
  p.topology = SshTopology::kFlat;
  p.out_degree = 0;
  p.verbose = false;
  p.job_size = 1;
  p.job_id = "";
  variants.push_back(p);
  p = SomeParams();
  p.parent_port = 65535;
  p.parent_address = "::1";  // the last ':' separates the port
  p.host_index = 3;
  p.job_size = 0xffffffff;
  p.out_degree = 1000000;
  p.job_id = "job with spaces, commas and 'quotes'";
  variants.push_back(p);
  p = SomeParams();
  p.parent_port = 1;
  p.parent_address = "launcher.example.org";
  variants.push_back(p);
  for (const AgentParams& v : variants) {
    absl::StatusOr<AgentParams> got = DecodeAgentArgs(EncodeAgentArgs(v));
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectSameParams(*got, v);
  }
}

// The error for `args` with argument `index` replaced by `value`.
std::string DecodeErrorWith(size_t index, const std::string& value) {
  std::vector<std::string> args = EncodeAgentArgs(SomeParams());
  args[index] = value;
  absl::StatusOr<AgentParams> got = DecodeAgentArgs(args);
  if (got.ok()) return "<decoded without error>";
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(got.status().message());
}

TEST(AgentArgsTest, WrongCount) {
  std::vector<std::string> args = EncodeAgentArgs(SomeParams());
  for (size_t n : {0, 1, 7}) {
    std::vector<std::string> fewer(args.begin(), args.begin() + n);
    absl::StatusOr<AgentParams> got = DecodeAgentArgs(fewer);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << n;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("8 arguments"));
  }
  args.push_back("extra");
  EXPECT_EQ(DecodeAgentArgs(args).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AgentArgsTest, BadHostIndex) {
  for (const char* bad : {"", "x", "-1", "1.0", "1x", "99999999999"}) {
    EXPECT_THAT(DecodeErrorWith(0, bad), HasSubstr("host index")) << bad;
  }
  // SomeParams has 4 hosts.
  EXPECT_THAT(DecodeErrorWith(0, "4"), HasSubstr("host index"));
  EXPECT_THAT(DecodeErrorWith(0, "1000"), HasSubstr("host index"));
  EXPECT_EQ(DecodeErrorWith(0, "3"), "<decoded without error>");
}

TEST(AgentArgsTest, BadParentAddress) {
  for (const char* bad : {"", "host", "host:", "host:0", "host:65536",
                          "host:-1", "host:abc", "host:80x", "host:99999999"}) {
    EXPECT_THAT(DecodeErrorWith(1, bad), HasSubstr("parent address")) << bad;
  }
}

TEST(AgentArgsTest, BadJobSize) {
  for (const char* bad : {"0", "", "x", "-3", "4294967296"}) {
    EXPECT_THAT(DecodeErrorWith(2, bad), HasSubstr("job size")) << bad;
  }
}

TEST(AgentArgsTest, BadHostList) {
  for (const char* bad :
       {"", "n1,,n2,n4", "n1,-oProxyCommand=x,n3,n4", "n1,a b,n3,n4",
        "n1,n2,n3,n4;rm", "n1,n2,n3,$(x)", "n1,n2,n3,n4,"}) {
    EXPECT_THAT(DecodeErrorWith(3, bad), HasSubstr("host list")) << bad;
  }
}

TEST(AgentArgsTest, BadTopology) {
  for (const char* bad : {"", "tree", "FLAT", "nary "}) {
    EXPECT_THAT(DecodeErrorWith(4, bad), HasSubstr("topology")) << bad;
  }
}

TEST(AgentArgsTest, BadOutDegree) {
  for (const char* bad : {"", "x", "-1"}) {
    EXPECT_THAT(DecodeErrorWith(5, bad), HasSubstr("out degree")) << bad;
  }
}

TEST(AgentArgsTest, BadVerboseFlag) {
  for (const char* bad : {"", "2", "yes", "true", "01"}) {
    EXPECT_THAT(DecodeErrorWith(7, bad), HasSubstr("verbose")) << bad;
  }
}

// ---------------------------------------------------------------------------
// The environment that travels.

class FakeEnviron {
 public:
  explicit FakeEnviron(std::vector<std::string> entries)
      : entries_(std::move(entries)) {
    for (std::string& e : entries_) pointers_.push_back(e.data());
    pointers_.push_back(nullptr);
  }
  char** get() { return pointers_.data(); }

 private:
  std::vector<std::string> entries_;
  std::vector<char*> pointers_;
};

TEST(PropagatedEnvironmentTest, GasnetVariablesAreKept) {
  FakeEnviron env({"PATH=/bin", "GASNET_A=1", "GASNETX=no", "gasnet_b=no",
                   "GASNET_B=x y", "MY_GASNET_C=no", "GASNET_EMPTY="});
  EXPECT_THAT(PropagatedEnvironment(env.get(), {}),
              ElementsAre("GASNET_A=1", "GASNET_B=x y", "GASNET_EMPTY="));
}

TEST(PropagatedEnvironmentTest, ExtraNamesAddedOnlyWhenSet) {
  FakeEnviron env({"PATH=/bin", "GASNET_A=1", "HOME=/home/me",
                   "EMPTY=", "OMP_NUM_THREADS=4"});
  EXPECT_THAT(PropagatedEnvironment(
                  env.get(), {"OMP_NUM_THREADS", "NOT_SET", "HOME", "EMPTY"}),
              ElementsAre("GASNET_A=1", "OMP_NUM_THREADS=4", "HOME=/home/me",
                          "EMPTY="));
}

TEST(PropagatedEnvironmentTest, GasnetNameInExtraIsNotDuplicated) {
  FakeEnviron env({"GASNET_A=1", "GASNET_B=2"});
  EXPECT_THAT(PropagatedEnvironment(env.get(), {"GASNET_B", "GASNET_UNSET"}),
              ElementsAre("GASNET_A=1", "GASNET_B=2"));
}

TEST(PropagatedEnvironmentTest, PrefixNamesAreNotConfused) {
  FakeEnviron foobar({"FOOBAR=2"});
  EXPECT_THAT(PropagatedEnvironment(foobar.get(), {"FOO"}), IsEmpty());
  FakeEnviron foo({"FOO=3"});
  EXPECT_THAT(PropagatedEnvironment(foo.get(), {"FOOBAR"}), IsEmpty());
  EXPECT_THAT(PropagatedEnvironment(foo.get(), {"FO"}), IsEmpty());
  FakeEnviron both({"FOOBAR=2", "FOO=3"});
  EXPECT_THAT(PropagatedEnvironment(both.get(), {"FOO"}), ElementsAre("FOO=3"));
  EXPECT_THAT(PropagatedEnvironment(both.get(), {"FOOBAR", "FOO"}),
              ElementsAre("FOOBAR=2", "FOO=3"));
}

TEST(PropagatedEnvironmentTest, NoEnvironment) {
  EXPECT_THAT(PropagatedEnvironment(nullptr, {"FOO"}), IsEmpty());
  FakeEnviron empty({});
  EXPECT_THAT(PropagatedEnvironment(empty.get(), {"FOO"}), IsEmpty());
}

// ---------------------------------------------------------------------------
// The remote command.

// Arguments no quoting rule may lose.
const std::vector<std::string>& TrickyProgram() {
  static const auto* program = new std::vector<std::string>{
      "./a.out", "a b",        "it's",   "\"dq\"",
      "$HOME",   "`id`",       "$(id)",  "",
      "--",      "-x",         "l1\nl2", "*",
      "A=1",     "semi;colon", "back\\", "t\tab",
      "!bang",   "~",          "#hash",  "a|b&c",
      "{x,y}",   "<in>",       " ",      "if",
      "'",       "\\'",        "%s",     "--gex-spawn-agent",
  };
  return *program;
}

const std::vector<std::string>& TrickyEnv() {
  static const auto* env = new std::vector<std::string>{
      "GASNET_QUOTE=it's \"quoted\"",
      "GASNET_SPACE=a  b",
      "GASNET_DOLLAR=$HOME `id` $(id) \\",
      "GASNET_EMPTY=",
      "GASNET_EQ=x=y",
      "OTHER_VAR=l1\nl2",
  };
  return *env;
}

TEST(RemoteCommandTest, WordsSplitBackExactly) {
  const std::vector<std::string> agent_args = EncodeAgentArgs(SomeParams());
  const std::string dir = "/scratch/my dir/it's $x";
  const std::string launcher = "/opt/gex bin/gasnetrun_smp";
  const std::string cmd =
      RemoteCommand(dir, TrickyEnv(), launcher, agent_args, TrickyProgram());

  const std::string prefix = "cd -- " + ShellQuote(dir) + " && ";
  ASSERT_EQ(cmd.substr(0, prefix.size()), prefix);
  absl::StatusOr<std::vector<std::string>> dir_words =
      SplitShellWords(cmd.substr(6, prefix.size() - 10));
  ASSERT_TRUE(dir_words.ok()) << dir_words.status();
  EXPECT_THAT(*dir_words, ElementsAre(dir));

  std::vector<std::string> want = {"export"};
  want.insert(want.end(), TrickyEnv().begin(), TrickyEnv().end());
  want.insert(want.end(), {"&&", "exec"});
  want.push_back(launcher);
  want.push_back("--gex-spawn-agent");
  want.insert(want.end(), agent_args.begin(), agent_args.end());
  want.push_back("--");
  want.insert(want.end(), TrickyProgram().begin(), TrickyProgram().end());
  absl::StatusOr<std::vector<std::string>> words =
      SplitShellWords(cmd.substr(prefix.size()));
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_EQ(*words, want);

  // No environment, no program arguments.
  const std::string bare = RemoteCommand("/", {}, "/bin/x", {}, {"p"});
  words = SplitShellWords(bare);
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_THAT(*words, ElementsAre("cd", "--", "/", "&&", "exec", "/bin/x",
                                  "--gex-spawn-agent", "--", "p"));
}

std::string TempDir() {
  const char* base = getenv("TEST_TMPDIR");
  std::string tmpl =
      std::string(base && *base ? base : "/tmp") + "/ssh plan 'test' $x XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  const char* made = mkdtemp(buf.data());
  EXPECT_NE(made, nullptr) << tmpl;
  return made ? made : "/tmp";
}

std::string RealPath(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return path;
  std::string out = real;
  free(real);
  return out;
}

// Writes a fake launcher at `path` that prints where it runs, the
// environment entries of TrickyEnv, and its arguments.
void WriteFakeLauncher(const std::string& path) {
  std::ofstream f(path);
  f << "#!/bin/sh\n"
       "printf 'pwd=[%s]\\n' \"$(pwd -P)\"\n"
       "printf 'GASNET_QUOTE=[%s]\\n' \"$GASNET_QUOTE\"\n"
       "printf 'GASNET_SPACE=[%s]\\n' \"$GASNET_SPACE\"\n"
       "printf 'GASNET_DOLLAR=[%s]\\n' \"$GASNET_DOLLAR\"\n"
       "printf 'GASNET_EMPTY=[%s]\\n' \"${GASNET_EMPTY-unset}\"\n"
       "printf 'GASNET_EQ=[%s]\\n' \"$GASNET_EQ\"\n"
       "printf 'OTHER_VAR=[%s]\\n' \"$OTHER_VAR\"\n"
       "for a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\n";
  f.close();
  ASSERT_EQ(chmod(path.c_str(), 0755), 0) << path;
}

// What the fake launcher should print when started in `dir` with `args`.
std::string ExpectedOutput(const std::string& dir,
                           const std::vector<std::string>& args) {
  std::string out = "pwd=[" + RealPath(dir) + "]\n";
  for (const std::string& e : TrickyEnv()) {
    const size_t eq = e.find('=');
    out += e.substr(0, eq) + "=[" + e.substr(eq + 1) + "]\n";
  }
  for (const std::string& a : args) out += "[" + a + "]\n";
  return out;
}

// Runs `command` with `sh -c` (popen) and returns its stdout.
std::string RunShell(const std::string& command, int* exit_code) {
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe == nullptr) return "";
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// Runs the remote command with a fake launcher at `launcher` and checks
// that the directory, the environment and every argument arrive intact.
void RunAndCheck(const std::string& remote_dir, const std::string& launcher) {
  WriteFakeLauncher(launcher);
  AgentParams params = SomeParams();
  params.job_id = "job 'id' $HOME";
  const std::vector<std::string> agent_args = EncodeAgentArgs(params);
  const std::string cmd = RemoteCommand(remote_dir, TrickyEnv(), launcher,
                                        agent_args, TrickyProgram());
  std::vector<std::string> want_args = {"--gex-spawn-agent"};
  want_args.insert(want_args.end(), agent_args.begin(), agent_args.end());
  want_args.push_back("--");
  want_args.insert(want_args.end(), TrickyProgram().begin(),
                   TrickyProgram().end());
  int exit_code = -1;
  const std::string out = RunShell(cmd, &exit_code);
  EXPECT_EQ(exit_code, 0) << cmd;
  EXPECT_EQ(out, ExpectedOutput(remote_dir, want_args)) << cmd;
}

TEST(RemoteCommandTest, RunsWithShAndEverythingArrivesIntact) {
  const std::string tmp = TempDir();
  const std::string remote_dir = tmp + "/remote dir 'q' \"dq\" $HOME `x` ;&";
  ASSERT_EQ(mkdir(remote_dir.c_str(), 0755), 0) << remote_dir;
  RunAndCheck(remote_dir, tmp + "/fake launcher's $bin");
}

TEST(RemoteCommandTest, LauncherPathWithAnEqualsSign) {
  // env(1) would take such a path for an assignment; the shell's export
  // does not.
  const std::string tmp = TempDir();
  const std::string bin = tmp + "/arch=x86";
  ASSERT_EQ(mkdir(bin.c_str(), 0755), 0) << bin;
  RunAndCheck(tmp, bin + "/launcher");
}

TEST(RemoteShellArgvTest, AppendsHostThenCommand) {
  SshSettings s;
  s.command = {"ssh", "-o", "BatchMode=yes", "-p", "2222"};
  EXPECT_THAT(RemoteShellArgv(s, "user@n7", "cd / && exec env x"),
              ElementsAre("ssh", "-o", "BatchMode=yes", "-p", "2222", "user@n7",
                          "cd / && exec env x"));
  s.command = {"rsh"};
  EXPECT_THAT(RemoteShellArgv(s, "n1", ""), ElementsAre("rsh", "n1", ""));
  // From the environment, end to end.
  const SshSettings env = Settings({{"GASNET_SSH_OPTIONS", "-p 22"}});
  EXPECT_THAT(RemoteShellArgv(env, "n2", "cmd"),
              ElementsAre("ssh", "-o", "StrictHostKeyChecking=no", "-o",
                          "BatchMode=yes", "-p", "22", "n2", "cmd"));
}

}  // namespace
}  // namespace gexrt::spawn
