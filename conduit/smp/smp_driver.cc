#include "conduit/smp/smp_driver.h"

#include <cstdlib>

#include "absl/strings/str_format.h"

namespace gex::smp {
namespace {

absl::Status CheckJob(const NodeMap& map) {
  if (map.supernode_count() == 1) return absl::OkStatus();
  const char* max = std::getenv("GASNET_SUPERNODE_MAXSIZE");
  return absl::FailedPreconditionError(absl::StrFormat(
      "the smp conduit reaches other ranks only through shared memory, so "
      "every rank must be in one supernode; this job has %u host(s) and %u "
      "supernode(s)%s",
      map.host_count(), map.supernode_count(),
      max != nullptr
          ? absl::StrFormat(" (GASNET_SUPERNODE_MAXSIZE=%s splits the host)",
                            max)
          : std::string()));
}

}  // namespace

const api::Driver& SmpDriver() {
  static const api::Driver driver{"smp", &CheckJob};
  return driver;
}

}  // namespace gex::smp
