#include "base/host_id.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "base/env/settings.h"
#include "base/fatal.h"

namespace gexrt {

std::string Hostname() {
  // HOST_NAME_MAX is 64 on Linux, but other systems allow more, and POSIX
  // leaves it unspecified whether a truncated name is terminated. So a name
  // that fills the buffer is treated as possibly truncated and fetched again
  // with a buffer twice the size.
  std::string buffer(256, '\0');
  while (buffer.size() <= (size_t{1} << 16)) {
    if (gethostname(buffer.data(), buffer.size()) == 0) {
      const size_t length = strnlen(buffer.data(), buffer.size());
      if (length + 1 < buffer.size()) {
        buffer.resize(length);
        return buffer;
      }
    } else if (errno != ENAMETOOLONG) {
      FatalErrorF("gethostname failed: %s", std::strerror(errno));
    }
    buffer.assign(buffer.size() * 2, '\0');
  }
  FatalError("gethostname: the host name is longer than 64 KiB");
}

HostDetectMode HostDetectModeFromEnv() {
  const std::string mode = env::GetChoice("GASNET_HOST_DETECT", "hostname",
                                          {"hostname", "gethostid", "conduit"});
  if (mode == "gethostid") return HostDetectMode::kGethostid;
  if (mode == "conduit") return HostDetectMode::kConduit;
  return HostDetectMode::kHostname;
}

uint64_t HostId() { return HostIdFor(HostDetectModeFromEnv()); }

uint64_t HostIdFor(HostDetectMode mode) {
  // gethostid() may resolve the host name (glibc does, when /etc/hostid is
  // missing), so it is called only when asked for.
  const uint32_t hostid = mode == HostDetectMode::kGethostid
                              ? static_cast<uint32_t>(gethostid())
                              : 0;
  HostIdResult result = ResolveHostId(mode, Hostname(), hostid);
  // Once per process: the answer, and so the warning, never changes.
  static std::atomic<bool> warned{false};
  if (!result.warning.empty() && !env::Quiet() &&
      !warned.exchange(true, std::memory_order_relaxed)) {
    Warning(result.warning);
  }
  return result.id;
}

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325u;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3u;
  }
  return hash;
}

bool GethostidLooksUnset(uint32_t hostid) {
  if (hostid == 0) return true;
  // glibc returns the address rotated by 16 bits; rotate back and look at
  // the first byte of the address in network order.
  const uint32_t s_addr = (hostid << 16) | (hostid >> 16);
  unsigned char address[4];
  std::memcpy(address, &s_addr, sizeof(address));
  return address[0] == 127;
}

HostIdResult ResolveHostId(HostDetectMode mode, std::string_view hostname,
                           uint32_t hostid) {
  switch (mode) {
    case HostDetectMode::kGethostid:
      if (!GethostidLooksUnset(hostid)) return {hostid, ""};
      return {
          Fnv1a64(hostname),
          absl::StrFormat(
              "GASNET_HOST_DETECT=gethostid, but gethostid() returned "
              "0x%08x, %s, which does not tell hosts apart (is "
              "/etc/hostid missing?); identifying this host by its "
              "name, \"%s\", instead",
              hostid, hostid == 0 ? "zero" : "derived from a loopback address",
              hostname)};
    case HostDetectMode::kConduit:
      // No conduit supplies a host id yet; when one does, it will pass it
      // in, and until then its hosts are told apart by name.
    case HostDetectMode::kHostname:
      break;
  }
  return {Fnv1a64(hostname), ""};
}

}  // namespace gexrt
