#include "bootstrap/spawn/pmi_command.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::spawn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

PmiJob Job(int64_t ranks, int64_t nodes = 0,
           std::vector<std::string> names = {}) {
  PmiJob j;
  j.ranks = ranks;
  j.nodes = nodes;
  j.env_names = std::move(names);
  j.program = {"/bin/prog", "a b"};
  return j;
}

TEST(PmiCommandTest, PlaceholdersAndProgram) {
  auto argv = ExpandPmiTemplate("srun --mpi=pmix -n %n %P", Job(4));
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv,
              ElementsAre("srun", "--mpi=pmix", "-n", "4", "/bin/prog", "a b"));
}

TEST(PmiCommandTest, GroupsDropWithoutNodesOrNames) {
  const char* t = "srun -n %n [ -N %N ] [ --export=ALL,%E ] %P";
  auto without = ExpandPmiTemplate(t, Job(4));
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_THAT(*without, ElementsAre("srun", "-n", "4", "/bin/prog", "a b"));
  auto with = ExpandPmiTemplate(t, Job(4, 2, {"A", "GASNET_B"}));
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_THAT(*with,
              ElementsAre("srun", "-n", "4", "-N", "2",
                          "--export=ALL,A,GASNET_B", "/bin/prog", "a b"));
}

TEST(PmiCommandTest, PerNameGroupRepeats) {
  auto argv =
      ExpandPmiTemplate("mpirun -n %n [ --map-by ppr:%R:node ] [ -x %e ] %P",
                        Job(5, 2, {"A", "B"}));
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv, ElementsAre("mpirun", "-n", "5", "--map-by", "ppr:3:node",
                                 "-x", "A", "-x", "B", "/bin/prog", "a b"));
}

TEST(PmiCommandTest, RanksPerNodeNeedsNodes) {
  auto argv = ExpandPmiTemplate("mpirun [ --map-by ppr:%R:node ] %P", Job(4));
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv, ElementsAre("mpirun", "/bin/prog", "a b"));
}

TEST(PmiCommandTest, QuotesAndLiteralPercent) {
  auto argv = ExpandPmiTemplate("'my launcher' --tag=50%% %P", Job(1));
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv,
              ElementsAre("my launcher", "--tag=50%", "/bin/prog", "a b"));
}

TEST(PmiCommandTest, MalformedTemplates) {
  struct Case {
    const char* tmpl;
    const char* message;
  } cases[] = {
      {"", "no words"},
      {"srun -n %n", "no %P"},
      {"srun %P %P", "more than once"},
      {"srun [ %P ]", "inside a group"},
      {"srun x%P", "word of its own"},
      {"srun %P [ -N %N", "without its ']'"},
      {"srun ] %P", "without its '['"},
      {"srun [ [ -N %N ] ] %P", "do not nest"},
      {"srun -q %q %P", "unknown placeholder '%q'"},
      {"srun -n 5% %P", "lone '%'"},
      {"srun -N %N %P", "needs -N"},
      {"srun -x %e %P", "only appear inside a group"},
      {"srun 'unterminated %P", "GASNET_PMI_LAUNCHER"},
      {"%P", "start with the launcher"},
  };
  for (const Case& c : cases) {
    auto argv = ExpandPmiTemplate(c.tmpl, Job(2));
    ASSERT_FALSE(argv.ok()) << c.tmpl;
    EXPECT_THAT(std::string(argv.status().message()), HasSubstr(c.message))
        << c.tmpl;
    EXPECT_THAT(std::string(argv.status().message()),
                HasSubstr("GASNET_PMI_LAUNCHER"))
        << c.tmpl;
  }
}

TEST(PmiCommandTest, Defaults) {
  PmiEnvironment slurm{.slurm_configured = true,
                       .has_srun = true,
                       .has_mpirun = true,
                       .root = false};
  EXPECT_THAT(*DefaultPmiTemplate(slurm), HasSubstr("srun --mpi=pmix"));
  PmiEnvironment mpi{.slurm_configured = false,
                     .has_srun = true,
                     .has_mpirun = true,
                     .root = true};
  EXPECT_THAT(*DefaultPmiTemplate(mpi),
              HasSubstr("mpirun --allow-run-as-root --oversubscribe"));
  auto none = DefaultPmiTemplate(PmiEnvironment{});
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(std::string(none.status().message()),
              HasSubstr("no PMIx launcher found"));
  // The defaults themselves are valid templates.
  for (const PmiEnvironment& e : {slurm, mpi}) {
    EXPECT_TRUE(
        ExpandPmiTemplate(*DefaultPmiTemplate(e), Job(4, 2, {"A"})).ok());
  }
}

}  // namespace
}  // namespace gexrt::spawn
