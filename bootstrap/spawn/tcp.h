// TCP for the control channel between launchers on different hosts: a
// listening socket on an ephemeral port, a connect with a deadline, and the
// address a launcher tells its children to call back on.
#ifndef GEX_BOOTSTRAP_SPAWN_TCP_H_
#define GEX_BOOTSTRAP_SPAWN_TCP_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gexrt::spawn {

struct Listener {
  int fd = -1;  // non-blocking, close-on-exec
  uint16_t port = 0;
};

// Listens on `address` (an IPv4 address or a name that resolves to one:
// the address the launcher advertises to its agents), on a port the kernel
// picks. Only that interface's traffic reaches the port, not every
// network the host is on. An address that is not this host's own
// (EADDRNOTAVAIL: GASNET_MASTERIP names a NAT or forwarding address) falls
// back to every interface, and `*note` says so.
absl::StatusOr<Listener> ListenOn(const std::string& address,
                                  std::string* note = nullptr);

// Connects to "address:port", retrying refused connections until
// `deadline`. The socket is blocking and close-on-exec.
absl::StatusOr<int> ConnectTo(const std::string& address, uint16_t port,
                              absl::Time deadline);

// The local IPv4 address of a connected socket: the interface that reaches
// the peer, which is what this host's own children should call back on.
absl::StatusOr<std::string> LocalAddressOf(int fd);

// The address gasnetrun advertises to the agents it starts:
// GASNET_MASTERIP when set, else the first non-loopback IPv4 address of an
// interface that is up, else 127.0.0.1 (every host is this one).
std::string DefaultAdvertisedAddress();

// Splits "host:port"; an error names `what` and the text.
absl::Status SplitHostPort(const std::string& text, std::string* host,
                           uint16_t* port);

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_TCP_H_
