// Host identity: which processes of a job share a host (and so may share
// memory). The bootstrap layer gathers every rank's HostId() to build the
// node map; ranks with equal ids form a supernode.
//
// GASNET_HOST_DETECT chooses how a host is identified:
//   hostname   (default) a 64-bit FNV-1a hash of the host name. Identical in
//              every process and every run on a host, and on any machine
//              that computes it: FNV-1a is fixed by its definition, unlike
//              std::hash. Hosts must have distinct names.
//   gethostid  the 32-bit gethostid() value (/etc/hostid). When it is 0 or
//              derived from a loopback address, as glibc computes it on
//              hosts with no /etc/hostid whose name resolves to 127.x.y.z,
//              it cannot tell hosts apart: a warning is printed and the
//              hostname hash used instead.
//   conduit    the conduit identifies hosts. No conduit supplies an id yet,
//              so this behaves like "hostname" for now.
// Any other value is a fatal error naming the variable.
#ifndef GEX_BASE_HOST_ID_H_
#define GEX_BASE_HOST_ID_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace gexrt {

// This host's name, as gethostname(2) returns it, in full: a name too long
// for a buffer is retried with a larger one, never cut short. A failure of
// the system call is a fatal error.
std::string Hostname();

enum class HostDetectMode { kHostname, kGethostid, kConduit };

// GASNET_HOST_DETECT, read through base/env (reported by GASNET_VERBOSEENV).
HostDetectMode HostDetectModeFromEnv();

// This host's id for the mode GASNET_HOST_DETECT names. Computed afresh on
// each call (the bootstrap layer calls it once); equal in all processes on
// one host, including fork()ed children.
uint64_t HostId();

// This host's id for `mode`, ignoring the environment. May print the
// gethostid warning described above (once per process, unless
// GASNET_QUIET).
uint64_t HostIdFor(HostDetectMode mode);

// ---------------------------------------------------------------------------
// The pure parts, for tests.

// The 64-bit FNV-1a hash of `bytes` (offset basis 0xcbf29ce484222325, prime
// 0x100000001b3).
uint64_t Fnv1a64(std::string_view bytes);

// Whether a gethostid() value is one that cannot tell hosts apart: 0, or
// computed by glibc from a 127.x.y.z address (glibc swaps the 16-bit halves
// of the IPv4 address, so 127.0.1.1 gives 0x007f0101 on little-endian
// hosts).
bool GethostidLooksUnset(uint32_t hostid);

struct HostIdResult {
  uint64_t id;
  // Non-empty when gethostid mode fell back to the hostname: the warning to
  // print.
  std::string warning;
};

// The id for `mode` given this host's name and gethostid() value (the
// latter used only in kGethostid mode).
HostIdResult ResolveHostId(HostDetectMode mode, std::string_view hostname,
                           uint32_t hostid);

}  // namespace gexrt

#endif  // GEX_BASE_HOST_ID_H_
