// PMIx links and runs: the library reports a 4.x version, agreeing with the
// headers we compiled against.

#include <pmix.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace {

static_assert(PMIX_VERSION_MAJOR == 4, "expected PMIx 4 headers");

TEST(PmixTest, VersionIsFour) {
  const char* version = PMIx_Get_version();
  ASSERT_NE(version, nullptr);
  std::printf("%s\n", version);
  EXPECT_NE(std::string(version).find("4."), std::string::npos) << version;
}

TEST(PmixTest, ErrorStringsComeFromTheLibrary) {
  EXPECT_STREQ(PMIx_Error_string(PMIX_SUCCESS), "SUCCESS");
  EXPECT_STRNE(PMIx_Error_string(PMIX_ERR_NOT_FOUND), "SUCCESS");
}

TEST(PmixTest, NotInitializedWithoutAServer) {
  // Nothing called PMIx_Init, and this test runs under no PMIx server.
  EXPECT_EQ(PMIx_Initialized(), 0);
}

}  // namespace
