// The identification strings GASNet-EX embeds in every executable it
// links: launchers of client libraries read "$GASNetConduitName: SMP $" and
// its siblings from the executable before they start a job. Each argument
// names a client executable built for one conduit and mode
// ("<path>=<CONDUIT>:<MODE>"); its bytes must hold every string below.
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace {

struct Executable {
  std::string path;
  std::string conduit;  // "SMP", "OFI", ...
  std::string mode;     // "SEQ" or "PAR"
};

std::vector<Executable>& Executables() {
  static std::vector<Executable> list;
  return list;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(IdentTest, EveryExecutableCarriesGasnetsIdentStrings) {
  ASSERT_FALSE(Executables().empty());
  for (const Executable& e : Executables()) {
    SCOPED_TRACE(e.path);
    const std::string bytes = ReadAll(e.path);
    const std::vector<std::string> expected = {
        absl::StrCat("$GASNetConduitName: ", e.conduit, " $"),
        absl::StrCat("$GASNetThreadModel: GASNET_", e.mode, " $"),
        absl::StrCat("$GASNetConfig: (libgasnet.a) RELEASE=2025.8.0,SPEC=0.19,"
                     "CONDUIT=",
                     e.conduit, ",THREADMODEL=", e.mode, ","),
        "$GASNetEXAPIVersion: 0.19 $",
        "$GASNetAPIVersion: 1 $",
        "$GASNetReleaseVersion: 2025.8.0 $",
        "$GASNetSegment: GASNET_SEGMENT_FAST $",
        absl::StrCat("$GASNetCoreLibraryName: ", e.conduit, " $"),
        "$GASNetCompilerID: |COMPILER_FAMILY:",
        "$GASNetSystemTuple: ",
        // The client's own, through GASNETT_IDENT from <gasnet.h>.
        "$IdentClient: built against gex $",
    };
    for (const std::string& s : expected) {
      EXPECT_NE(bytes.find(s), std::string::npos) << "missing \"" << s << "\"";
    }
    const bool network = e.conduit != "SMP";
    EXPECT_EQ(bytes.find("$GASNetSSHSpawner: 1 $") != std::string::npos,
              network);
    // The other mode's model is not there.
    const std::string other = e.mode == "SEQ" ? "PAR" : "SEQ";
    EXPECT_EQ(bytes.find(absl::StrCat("$GASNetThreadModel: GASNET_", other)),
              std::string::npos);
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    std::vector<std::string> parts = absl::StrSplit(argv[i], '=');
    std::vector<std::string> what = absl::StrSplit(parts.back(), ':');
    if (parts.size() != 2 || what.size() != 2) {
      fprintf(stderr, "ident_test: bad argument %s\n", argv[i]);
      return 2;
    }
    Executables().push_back({parts[0], what[0], what[1]});
  }
  return RUN_ALL_TESTS();
}
