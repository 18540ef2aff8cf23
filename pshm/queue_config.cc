#include "pshm/queue_config.h"

#include "absl/strings/str_format.h"
#include "base/env/settings.h"
#include "pshm/queue_layout.h"

namespace gexrt::pshm {

uint64_t MinQueueMemory() { return layout::kMaxChunkBytes; }

absl::Status ValidateQueueConfig(const QueueConfig& config) {
  if (config.depth < 1 || config.depth > kMaxQueueDepth) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GASNET_PSHMNET_QUEUE_DEPTH=%u is out of range: a queue needs 1 to "
        "%u slots",
        config.depth, kMaxQueueDepth));
  }
  if (config.memory < MinQueueMemory() || config.memory > kMaxQueueMemory) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GASNET_PSHMNET_QUEUE_MEMORY=%u is out of range: the payload pool "
        "must hold one full-size message (%u bytes: a %u-byte Medium with "
        "%u arguments) and be at most %u bytes",
        config.memory, MinQueueMemory(), kMaxMedium, kMaxArgs,
        kMaxQueueMemory));
  }
  return absl::OkStatus();
}

absl::StatusOr<QueueConfig> QueueConfigFromEnv() {
  QueueConfig config;
  absl::StatusOr<int64_t> depth = env::TryGetInt(
      "GASNET_PSHMNET_QUEUE_DEPTH", kDefaultQueueDepth, 1, kMaxQueueDepth);
  if (!depth.ok()) return depth.status();
  config.depth = static_cast<uint32_t>(*depth);
  absl::StatusOr<uint64_t> memory =
      env::TryGetSize("GASNET_PSHMNET_QUEUE_MEMORY", kDefaultQueueMemory,
                      env::SizeUnit::kBytes);
  if (!memory.ok()) return memory.status();
  config.memory = *memory;
  if (absl::Status s = ValidateQueueConfig(config); !s.ok()) return s;
  return config;
}

}  // namespace gexrt::pshm
