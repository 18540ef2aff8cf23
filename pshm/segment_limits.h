// How big a segment a rank may attach: GASNET_MAX_SEGSIZE and the shared
// memory the host has left.
//
// GASNET_MAX_SEGSIZE is a memory amount (base/env/parse.h: an absolute
// size such as "4G", or a fraction of physical memory such as "0.85" or
// "5/8"), optionally followed by "/H" (for the whole host: divided among
// the ranks on it) or "/P" (for each process). Without a suffix a fraction
// is per host and a size per process. The default is "0.85/H".
//
// MaxLocal (gasnet_getMaxLocalSegmentSize) is the smaller of that limit
// and this mechanism's free shared memory divided among the ranks on the
// host, rounded down to whole pages; MaxGlobal is the smallest MaxLocal of
// the job. Nothing is allocated to find out (the probing GASNet once did by
// mapping could crash small machines).
#ifndef GEX_PSHM_SEGMENT_LIMITS_H_
#define GEX_PSHM_SEGMENT_LIMITS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "base/env/parse.h"

namespace gexrt::pshm {

struct MaxSegSize {
  env::MemoryAmount amount;
  bool per_host;

  std::string ToString() const;  // "0.85/H", "4G/P"
};

absl::StatusOr<MaxSegSize> ParseMaxSegSize(std::string_view text);
// GASNET_MAX_SEGSIZE (default 0.85/H); a malformed value is a fatal error
// naming the variable.
MaxSegSize MaxSegSizeFromEnv();
// The same, returning the error (naming the variable) instead.
absl::StatusOr<MaxSegSize> TryMaxSegSizeFromEnv();

struct SegmentLimitInputs {
  MaxSegSize max_segsize;
  uint64_t physical_memory;   // Bytes.
  uint64_t shared_available;  // AvailableSharedMemory().
  uint32_t host_ranks;        // Ranks sharing this host's memory.
  uint64_t page_size;
};

// The largest segment one rank may attach, in bytes (a multiple of the
// page size; may be 0 on a host with no shared memory to give).
uint64_t MaxLocalSegmentSize(const SegmentLimitInputs& in);

// Why the limit is what it is, for error messages ("GASNET_MAX_SEGSIZE
// 0.85/H of 23.4 GiB physical memory, 11.7 GiB free in /dev/shm, shared by
// 4 ranks on this host").
std::string DescribeSegmentLimit(const SegmentLimitInputs& in);

// The inputs for this process now.
SegmentLimitInputs CurrentSegmentLimitInputs(uint32_t host_ranks);
// With GASNET_MAX_SEGSIZE already read.
SegmentLimitInputs CurrentSegmentLimitInputs(uint32_t host_ranks,
                                             const MaxSegSize& max_segsize);

}  // namespace gexrt::pshm

#endif  // GEX_PSHM_SEGMENT_LIMITS_H_
