#include "pshm/queue_config.h"

#include <cstdlib>
#include <string>

#include "base/env/settings.h"
#include "gtest/gtest.h"
#include "pshm/queue_layout.h"

namespace gexrt::pshm {
namespace {

constexpr char kDepth[] = "GASNET_PSHMNET_QUEUE_DEPTH";
constexpr char kMemory[] = "GASNET_PSHMNET_QUEUE_MEMORY";

class QueueConfigTest : public testing::Test {
 protected:
  void SetUp() override { Clear(); }
  void TearDown() override { Clear(); }

  static void Clear() {
    unsetenv(kDepth);
    unsetenv(kMemory);
    env::internal::ResetForTest();
  }
  static void Set(const char* name, const std::string& value) {
    setenv(name, value.c_str(), /*overwrite=*/1);
  }
  // The error text of QueueConfigFromEnv, or "" when it succeeds.
  static std::string ErrorFromEnv() {
    absl::StatusOr<QueueConfig> config = QueueConfigFromEnv();
    if (config.ok()) return "";
    // (base/env reports a number outside its range as OUT_OF_RANGE.)
    EXPECT_TRUE(config.status().code() == absl::StatusCode::kInvalidArgument ||
                config.status().code() == absl::StatusCode::kOutOfRange)
        << config.status();
    return std::string(config.status().message());
  }
};

TEST_F(QueueConfigTest, DefaultsMatchTheDocumentedValues) {
  EXPECT_EQ(kDefaultQueueDepth, 8u);
  EXPECT_EQ(kDefaultQueueMemory, uint64_t{1} << 20);
  EXPECT_EQ(kMaxQueueDepth, 65535u);
  EXPECT_EQ(kMaxQueueMemory, uint64_t{1} << 30);
  const QueueConfig defaults;
  EXPECT_EQ(defaults.depth, kDefaultQueueDepth);
  EXPECT_EQ(defaults.memory, kDefaultQueueMemory);
  EXPECT_TRUE(ValidateQueueConfig(defaults).ok());

  absl::StatusOr<QueueConfig> config = QueueConfigFromEnv();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->depth, 8u);
  EXPECT_EQ(config->memory, uint64_t{1} << 20);
}

TEST_F(QueueConfigTest, EmptyValuesMeanTheDefaults) {
  Set(kDepth, "");
  Set(kMemory, "  ");
  absl::StatusOr<QueueConfig> config = QueueConfigFromEnv();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->depth, kDefaultQueueDepth);
  EXPECT_EQ(config->memory, kDefaultQueueMemory);
}

TEST_F(QueueConfigTest, MinimumMemoryHoldsTheLargestMessage) {
  const uint64_t largest = layout::ChunkBytes(
      layout::BodyBytes(Category::kMedium, kMaxArgs, kMaxMedium));
  EXPECT_GE(MinQueueMemory(), largest);
  EXPECT_LE(MinQueueMemory(), kDefaultQueueMemory);
  EXPECT_EQ(MinQueueMemory() % kCacheLine, 0u);
}

TEST_F(QueueConfigTest, ValidDepths) {
  for (const char* text : {"1", "2", "3", "8", "100", "65535", " 16 "}) {
    SCOPED_TRACE(text);
    Set(kDepth, text);
    absl::StatusOr<QueueConfig> config = QueueConfigFromEnv();
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->depth, static_cast<uint32_t>(std::atoi(text)));
    EXPECT_EQ(config->memory, kDefaultQueueMemory);
  }
}

TEST_F(QueueConfigTest, InvalidDepthsNameTheVariable) {
  for (const char* text : {"0", "65536", "abc", "-1", "-8", "4294967297"}) {
    SCOPED_TRACE(text);
    Set(kDepth, text);
    const std::string error = ErrorFromEnv();
    EXPECT_NE(error.find(kDepth), std::string::npos) << error;
    EXPECT_NE(error.find(text), std::string::npos) << error;
  }
}

// Trailing text after a number is ignored, with a warning, as GASNet-EX
// reads its integer settings (base/env: the leading number).
TEST_F(QueueConfigTest, TrailingTextAfterADepthIsIgnored) {
  const struct {
    const char* text;
    uint32_t depth;
  } cases[] = {{"1.5", 1}, {"8K", 8}, {"16 slots", 16}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    Set(kDepth, c.text);
    absl::StatusOr<QueueConfig> config = QueueConfigFromEnv();
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->depth, c.depth);
  }
}

TEST_F(QueueConfigTest, ValidMemory) {
  const struct {
    const char* text;
    uint64_t bytes;
  } cases[] = {
      {"2M", uint64_t{2} << 20},  {"2m", uint64_t{2} << 20},
      {"2MB", uint64_t{2} << 20}, {"512K", uint64_t{512} << 10},
      {"1G", uint64_t{1} << 30},  {"1048576", uint64_t{1} << 20},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    Set(kMemory, c.text);
    absl::StatusOr<QueueConfig> config = QueueConfigFromEnv();
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->memory, c.bytes);
    EXPECT_EQ(config->depth, kDefaultQueueDepth);
  }
  // The bounds themselves.
  Set(kMemory, std::to_string(MinQueueMemory()));
  absl::StatusOr<QueueConfig> config = QueueConfigFromEnv();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->memory, MinQueueMemory());
  Set(kMemory, std::to_string(kMaxQueueMemory));
  config = QueueConfigFromEnv();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->memory, kMaxQueueMemory);
}

TEST_F(QueueConfigTest, InvalidMemoryNamesTheVariable) {
  for (const std::string& text :
       {std::string("abc"), std::string("-1M"), std::string("0"),
        std::string("1K"), std::string("64K"),
        std::to_string(MinQueueMemory() - 1), std::string("2G"),
        std::to_string(kMaxQueueMemory + 1), std::string("1T")}) {
    SCOPED_TRACE(text);
    Set(kMemory, text);
    const std::string error = ErrorFromEnv();
    EXPECT_NE(error.find(kMemory), std::string::npos) << error;
    EXPECT_EQ(error.find(kDepth), std::string::npos) << error;
  }
}

TEST_F(QueueConfigTest, OutOfRangeMemorySaysWhatIsAllowed) {
  Set(kMemory, "64K");
  const std::string error = ErrorFromEnv();
  // The minimum and the maximum, in bytes.
  EXPECT_NE(error.find(std::to_string(MinQueueMemory())), std::string::npos)
      << error;
  EXPECT_NE(error.find(std::to_string(kMaxQueueMemory)), std::string::npos)
      << error;
}

TEST_F(QueueConfigTest, BothVariablesTogether) {
  Set(kDepth, "3");
  Set(kMemory, "4M");
  absl::StatusOr<QueueConfig> config = QueueConfigFromEnv();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->depth, 3u);
  EXPECT_EQ(config->memory, uint64_t{4} << 20);
  // A bad depth is reported even when the memory is fine, and the other
  // way round.
  Set(kDepth, "0");
  EXPECT_NE(ErrorFromEnv().find(kDepth), std::string::npos);
  Set(kDepth, "3");
  Set(kMemory, "4G");
  EXPECT_NE(ErrorFromEnv().find(kMemory), std::string::npos);
}

TEST_F(QueueConfigTest, ValidateQueueConfigChecksBothFields) {
  QueueConfig c;
  c.depth = 0;
  absl::Status s = ValidateQueueConfig(c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(kDepth), std::string_view::npos) << s;
  c.depth = kMaxQueueDepth + 1;
  s = ValidateQueueConfig(c);
  EXPECT_NE(s.message().find(kDepth), std::string_view::npos) << s;
  c.depth = kMaxQueueDepth;
  EXPECT_TRUE(ValidateQueueConfig(c).ok());
  c.depth = 1;
  EXPECT_TRUE(ValidateQueueConfig(c).ok());

  c.memory = MinQueueMemory() - 1;
  s = ValidateQueueConfig(c);
  EXPECT_NE(s.message().find(kMemory), std::string_view::npos) << s;
  c.memory = kMaxQueueMemory + 1;
  s = ValidateQueueConfig(c);
  EXPECT_NE(s.message().find(kMemory), std::string_view::npos) << s;
  c.memory = MinQueueMemory();
  EXPECT_TRUE(ValidateQueueConfig(c).ok());
  c.memory = MinQueueMemory() + 1;  // Not a multiple of a cache line: fine.
  EXPECT_TRUE(ValidateQueueConfig(c).ok());
  c.memory = kMaxQueueMemory;
  EXPECT_TRUE(ValidateQueueConfig(c).ok());
}

}  // namespace
}  // namespace gexrt::pshm
