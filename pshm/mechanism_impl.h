// What each mechanism file (shared_object_{posix,sysv,file}.cc) provides to
// shared_object.cc. Internal to //pshm:shared_object.
#ifndef GEX_PSHM_MECHANISM_IMPL_H_
#define GEX_PSHM_MECHANISM_IMPL_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace gexrt::pshm::mechanism {

struct Mapping {
  void* address = nullptr;
  int64_t id = 0;
  bool named = false;  // Has a name to remove later.
};

std::string_view Name();
std::string Path(std::string_view job_prefix, uint32_t owner, uint32_t serial);
absl::Status Create(const std::string& path, size_t size, Mapping* out);
absl::Status Map(const std::string& path, int64_t id, size_t size,
                 Mapping* out);
void Unmap(void* address, size_t size);
absl::Status RemoveName(const std::string& path);
std::vector<std::string> List(std::string_view job_prefix,
                              absl::Span<const pid_t> rank_pids);
int RemoveAll(std::string_view job_prefix, absl::Span<const pid_t> rank_pids);
uint64_t Available();

}  // namespace gexrt::pshm::mechanism

#endif  // GEX_PSHM_MECHANISM_IMPL_H_
