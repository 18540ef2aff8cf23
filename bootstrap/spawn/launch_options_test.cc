#include "bootstrap/spawn/launch_options.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::spawn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

absl::StatusOr<LaunchOptions> Parse(std::vector<std::string> args) {
  return ParseLaunchOptions(args);
}

// The error message of a parse that must fail.
std::string ErrorOf(std::vector<std::string> args) {
  absl::StatusOr<LaunchOptions> o = ParseLaunchOptions(args);
  if (o.ok()) return "<parsed without error>";
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(o.status().message());
}

TEST(SpawnerNameTest, NamesRoundTripInAnyCase) {
  for (SpawnerKind kind :
       {SpawnerKind::kFork, SpawnerKind::kSsh, SpawnerKind::kPmi}) {
    std::string name(SpawnerName(kind));
    EXPECT_EQ(*ParseSpawnerName(name), kind) << name;
    for (char& c : name) c = static_cast<char>(c - 'a' + 'A');
    EXPECT_EQ(*ParseSpawnerName(name), kind) << name;
  }
  EXPECT_EQ(SpawnerName(SpawnerKind::kFork), "fork");
  EXPECT_EQ(SpawnerName(SpawnerKind::kSsh), "ssh");
  EXPECT_EQ(SpawnerName(SpawnerKind::kPmi), "pmi");
  EXPECT_EQ(*ParseSpawnerName(" Ssh\n"), SpawnerKind::kSsh);
}

TEST(SpawnerNameTest, UnknownNameIsQuotedAndValidNamesListed) {
  absl::StatusOr<SpawnerKind> k = ParseSpawnerName("mpi");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(k.status().message(), HasSubstr("'mpi'"));
  EXPECT_THAT(k.status().message(), HasSubstr("fork, ssh, pmi"));
  EXPECT_FALSE(ParseSpawnerName("").ok());
  EXPECT_FALSE(ParseSpawnerName("sshx").ok());
}

TEST(ParseLaunchOptionsTest, MinimalCommandLine) {
  absl::StatusOr<LaunchOptions> o = Parse({"-n", "4", "./hello"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ranks, 4);
  EXPECT_EQ(o->nodes, 0);
  EXPECT_THAT(o->env_vars, IsEmpty());
  EXPECT_FALSE(o->verbose);
  EXPECT_FALSE(o->test_only);
  EXPECT_FALSE(o->keep_files);
  EXPECT_FALSE(o->help);
  EXPECT_FALSE(o->spawner.has_value());
  EXPECT_THAT(o->program_and_args, ElementsAre("./hello"));
}

TEST(ParseLaunchOptionsTest, EveryOptionTogether) {
  absl::StatusOr<LaunchOptions> o =
      Parse({"-n", "8", "-N", "2", "-E", "FOO,BAR_2", "-v", "-spawner=SSH",
             "--", "prog", "a", "-b"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ranks, 8);
  EXPECT_EQ(o->nodes, 2);
  EXPECT_THAT(o->env_vars, ElementsAre("FOO", "BAR_2"));
  EXPECT_TRUE(o->verbose);
  EXPECT_EQ(o->spawner, SpawnerKind::kSsh);
  EXPECT_THAT(o->program_and_args, ElementsAre("prog", "a", "-b"));
}

TEST(ParseLaunchOptionsTest, AttachedAndAlternativeSpellings) {
  absl::StatusOr<LaunchOptions> o =
      Parse({"-n4", "-N2", "-EA", "-spawner", "fork", "p"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ranks, 4);
  EXPECT_EQ(o->nodes, 2);
  EXPECT_THAT(o->env_vars, ElementsAre("A"));
  EXPECT_EQ(o->spawner, SpawnerKind::kFork);

  o = Parse({"-np", "3", "p"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ranks, 3);
  o = Parse({"-np5", "p"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ranks, 5);
}

TEST(ParseLaunchOptionsTest, EnvVarsAccumulateOnceAndFlagsMayRepeat) {
  absl::StatusOr<LaunchOptions> o =
      Parse({"-n", "2", "-E", "A,B", "-v", "-E", "C,A", "-EB,D", "-v", "-t",
             "-t", "p"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ranks, 2);
  EXPECT_THAT(o->env_vars, ElementsAre("A", "B", "C", "D"));
  EXPECT_TRUE(o->verbose);
  EXPECT_TRUE(o->test_only);
}

// A second -n (-N, -spawner) would silently win over the first: refused,
// naming the option and both values, whatever the spellings.
TEST(ParseLaunchOptionsTest, RepeatedSingleValuedOptionIsRefused) {
  EXPECT_EQ(ErrorOf({"-n", "2", "-n", "3", "p"}),
            "-n is given more than once ('2', then '3'): give it once");
  EXPECT_EQ(ErrorOf({"-np", "2", "-n3", "p"}),
            "-n is given more than once ('2', then '3'): give it once");
  EXPECT_EQ(ErrorOf({"-n2", "-np4", "p"}),
            "-n is given more than once ('2', then '4'): give it once");
  EXPECT_EQ(ErrorOf({"-n", "2", "-n", "2", "p"}),
            "-n is given more than once ('2', then '2'): give it once");
  EXPECT_EQ(ErrorOf({"-n", "4", "-N", "1", "-N2", "p"}),
            "-N is given more than once ('1', then '2'): give it once");
  EXPECT_EQ(ErrorOf({"-n", "4", "-spawner=ssh", "-spawner", "pmi", "p"}),
            "-spawner is given more than once ('ssh', then 'pmi'): give it "
            "once");
  // Past the options, "-n" belongs to the program.
  absl::StatusOr<LaunchOptions> o = Parse({"-n", "2", "p", "-n", "3"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ranks, 2);
  EXPECT_THAT(o->program_and_args, ElementsAre("p", "-n", "3"));
}

TEST(ParseLaunchOptionsTest, TestOnlyAndKeepImplyVerbose) {
  absl::StatusOr<LaunchOptions> o = Parse({"-n1", "-t", "p"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->test_only);
  EXPECT_TRUE(o->verbose);
  EXPECT_FALSE(o->keep_files);

  o = Parse({"-n1", "-k", "p"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->keep_files);
  EXPECT_TRUE(o->verbose);
  EXPECT_FALSE(o->test_only);
}

TEST(ParseLaunchOptionsTest, OptionsEndAtFirstNonOption) {
  // Everything after the program belongs to it, even what looks like ours.
  absl::StatusOr<LaunchOptions> o =
      Parse({"-n", "2", "prog", "-n", "7", "--", "-x"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ranks, 2);
  EXPECT_THAT(o->program_and_args, ElementsAre("prog", "-n", "7", "--", "-x"));
}

TEST(ParseLaunchOptionsTest, DoubleDashLetsProgramStartWithDash) {
  absl::StatusOr<LaunchOptions> o = Parse({"-n", "2", "--", "-weird", "--"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_THAT(o->program_and_args, ElementsAre("-weird", "--"));
}

TEST(ParseLaunchOptionsTest, HelpNeedsNothingElse) {
  for (const char* help : {"-h", "-help", "--help"}) {
    absl::StatusOr<LaunchOptions> o = Parse({help});
    ASSERT_TRUE(o.ok()) << help << ": " << o.status();
    EXPECT_TRUE(o->help) << help;
  }
  // Help wins over errors after it.
  absl::StatusOr<LaunchOptions> o = Parse({"-v", "-h", "-bogus"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->help);
  // ... but after the program it is the program's argument.
  o = Parse({"-n", "1", "prog", "-h"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->help);
  EXPECT_THAT(o->program_and_args, ElementsAre("prog", "-h"));
}

TEST(ParseLaunchOptionsTest, UnknownOptionIsNamed) {
  std::string e = ErrorOf({"-n", "2", "-x", "prog"});
  EXPECT_THAT(e, HasSubstr("unknown option '-x'"));
  EXPECT_THAT(ErrorOf({"-n", "2", "-", "prog"}), HasSubstr("'-'"));
  EXPECT_THAT(ErrorOf({"-n", "2", "--spawner=ssh", "prog"}),
              HasSubstr("'--spawner=ssh'"));
}

TEST(ParseLaunchOptionsTest, MissingValueNamesTheOption) {
  EXPECT_THAT(ErrorOf({"-n"}), HasSubstr("-n needs a value"));
  EXPECT_THAT(ErrorOf({"-np"}), HasSubstr("-n needs a value"));
  EXPECT_THAT(ErrorOf({"-n", "2", "-N"}), HasSubstr("-N needs a value"));
  EXPECT_THAT(ErrorOf({"-n", "2", "-E"}), HasSubstr("-E needs a value"));
  EXPECT_THAT(ErrorOf({"-n", "2", "-spawner"}),
              HasSubstr("-spawner needs a value"));
}

TEST(ParseLaunchOptionsTest, BadCountsNameOptionAndValue) {
  EXPECT_EQ(ErrorOf({"-n", "0", "p"}), "-n must be at least 1, got '0'");
  EXPECT_EQ(ErrorOf({"-n", "-3", "p"}), "-n must be at least 1, got '-3'");
  EXPECT_EQ(ErrorOf({"-n", "2", "-N0", "p"}), "-N must be at least 1, got '0'");
  for (const char* bad : {"four", "4x", "", " 4", "4.0", "+4", "0x4", "-"}) {
    std::string e = ErrorOf({"-n", bad, "p"});
    EXPECT_THAT(e, HasSubstr("-n needs a whole number")) << bad;
    EXPECT_THAT(e, HasSubstr(std::string("'") + bad + "'")) << bad;
  }
  EXPECT_THAT(ErrorOf({"-n", "2", "-N", "x", "p"}),
              HasSubstr("-N needs a whole number, got 'x'"));
  EXPECT_THAT(ErrorOf({"-n", "99999999999999999999", "p"}),
              HasSubstr("-n is too large, got '99999999999999999999'"));
  // The largest int64 still parses.
  absl::StatusOr<LaunchOptions> o = Parse({"-n", "9223372036854775807", "p"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ranks, INT64_MAX);
}

TEST(ParseLaunchOptionsTest, NodesMayNotExceedRanks) {
  EXPECT_EQ(ErrorOf({"-n", "2", "-N", "3", "p"}),
            "-N 3 is more than -n 2: every node needs at least one process");
  // Order of the options does not matter.
  EXPECT_THAT(ErrorOf({"-N", "3", "-n", "2", "p"}), HasSubstr("-N 3"));
  absl::StatusOr<LaunchOptions> o = Parse({"-N", "2", "-n", "2", "p"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->nodes, 2);
}

TEST(ParseLaunchOptionsTest, BadEnvVarNamesAreQuoted) {
  for (const char* bad :
       {"1ABC", "A-B", "A=B", "A B", "", "A,,B", "A,", "$HOME", "\xc3\xa9"}) {
    std::string e = ErrorOf({"-n", "1", "-E", bad, "p"});
    EXPECT_THAT(e, HasSubstr("-E: '")) << bad;
    EXPECT_THAT(e, HasSubstr(std::string("in '") + bad + "'")) << bad;
  }
  EXPECT_THAT(ErrorOf({"-n", "1", "-E", "GOOD,9bad", "p"}),
              HasSubstr("'9bad' in 'GOOD,9bad'"));
  absl::StatusOr<LaunchOptions> o = Parse({"-n", "1", "-E", "_x,X9,_", "p"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_THAT(o->env_vars, ElementsAre("_x", "X9", "_"));
}

TEST(ParseLaunchOptionsTest, UnknownSpawnerIsNamed) {
  std::string e = ErrorOf({"-n", "1", "-spawner=mpi", "p"});
  EXPECT_THAT(e, HasSubstr("-spawner"));
  EXPECT_THAT(e, HasSubstr("'mpi'"));
  EXPECT_THAT(e, HasSubstr("fork, ssh, pmi"));
  EXPECT_THAT(ErrorOf({"-n", "1", "-spawner=", "p"}), HasSubstr("''"));
  EXPECT_THAT(ErrorOf({"-n", "1", "-spawner", "rsh", "p"}), HasSubstr("'rsh'"));
}

TEST(ParseLaunchOptionsTest, RequiredPartsMissing) {
  EXPECT_THAT(ErrorOf({"prog"}), HasSubstr("-n is required"));
  EXPECT_THAT(ErrorOf({}), HasSubstr("-n is required"));
  EXPECT_THAT(ErrorOf({"-n", "2"}), HasSubstr("no program"));
  EXPECT_THAT(ErrorOf({"-n", "2", "--"}), HasSubstr("no program"));
}

TEST(LaunchUsageTest, NamesToolAndEveryOption) {
  const std::string usage = LaunchUsage("gasnetrun_smp");
  EXPECT_THAT(usage, ::testing::StartsWith(
                         "usage: gasnetrun_smp -n <n> [options] [--] prog"));
  for (const char* option :
       {"-n <n>", "-N <N>", "-E <VAR1[,VAR2...]>", "-v ", "-t ", "-k ",
        "-spawner=(fork|ssh|pmi)", "--help"}) {
    EXPECT_THAT(usage, HasSubstr(option)) << option;
  }
  EXPECT_EQ(usage.back(), '\n');
}

TEST(ResolveSpawnerTest, CommandLineThenEnvironmentThenDefault) {
  LaunchOptions o;
  EXPECT_EQ(*ResolveSpawner(o, "SMP", nullptr, SpawnerKind::kFork),
            SpawnerKind::kFork);
  EXPECT_EQ(*ResolveSpawner(o, "SMP", "", SpawnerKind::kFork),
            SpawnerKind::kFork);
  EXPECT_EQ(*ResolveSpawner(o, "SMP", "  ", SpawnerKind::kSsh),
            SpawnerKind::kSsh);
  EXPECT_EQ(*ResolveSpawner(o, "SMP", "PMI", SpawnerKind::kFork),
            SpawnerKind::kPmi);
  o.spawner = SpawnerKind::kSsh;
  EXPECT_EQ(*ResolveSpawner(o, "SMP", "pmi", SpawnerKind::kFork),
            SpawnerKind::kSsh);
  // The command line wins even over a bad environment value.
  EXPECT_EQ(*ResolveSpawner(o, "SMP", "bogus", SpawnerKind::kFork),
            SpawnerKind::kSsh);
}

TEST(ResolveSpawnerTest, BadEnvironmentValueNamesVariable) {
  LaunchOptions o;
  absl::StatusOr<SpawnerKind> k =
      ResolveSpawner(o, "UCX", "mpi", SpawnerKind::kSsh);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(k.status().message(), HasSubstr("GASNET_UCX_SPAWNER"));
  EXPECT_THAT(k.status().message(), HasSubstr("'mpi'"));
  EXPECT_EQ(SpawnerVariable("SMP"), "GASNET_SMP_SPAWNER");
}

}  // namespace
}  // namespace gexrt::spawn
