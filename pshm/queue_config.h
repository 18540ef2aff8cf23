// GASNET_PSHMNET_QUEUE_DEPTH and GASNET_PSHMNET_QUEUE_MEMORY: the size of
// the PSHM Active Message network, as GASNet users know them.
#ifndef GEX_PSHM_QUEUE_CONFIG_H_
#define GEX_PSHM_QUEUE_CONFIG_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace gexrt::pshm {

struct QueueConfig {
  // Slots (one cache line each) in each receive queue; one queue per
  // (sender, receiver) pair in a supernode and channel.
  uint32_t depth = 8;
  // Bytes in each rank's payload pool, per channel (requests, replies).
  uint64_t memory = uint64_t{1} << 20;
};

inline constexpr uint32_t kDefaultQueueDepth = 8;
inline constexpr uint32_t kMaxQueueDepth = 65535;
inline constexpr uint64_t kDefaultQueueMemory = uint64_t{1} << 20;
inline constexpr uint64_t kMaxQueueMemory = uint64_t{1} << 30;

// Checks a configuration; the error names the variable, the value and the
// accepted range. The memory must hold one full-size message
// (MinQueueMemory()).
absl::Status ValidateQueueConfig(const QueueConfig& config);
uint64_t MinQueueMemory();

// Reads both variables (reported by GASNET_VERBOSEENV) and validates them.
absl::StatusOr<QueueConfig> QueueConfigFromEnv();

}  // namespace gexrt::pshm

#endif  // GEX_PSHM_QUEUE_CONFIG_H_
