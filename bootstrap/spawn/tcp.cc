#include "bootstrap/spawn/tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "base/status.h"

namespace gexrt::spawn {

namespace {

// `*err` gets the errno of a failed bind or listen.
absl::StatusOr<Listener> ListenOnAddress(in_addr_t s_addr, int* err) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoToStatus(errno, "socket for the control channel");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = s_addr;
  addr.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd, 1024) != 0) {
    *err = errno;
    close(fd);
    return ErrnoToStatus(*err, "listening for agents on a TCP port");
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return Listener{fd, ntohs(addr.sin_port)};
}

}  // namespace

absl::StatusOr<Listener> ListenOn(const std::string& address,
                                  std::string* note) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(address.c_str(), nullptr, &hints, &res);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrFormat("cannot resolve the address agents call back on "
                        "'%s': %s",
                        address, gai_strerror(rc)));
  }
  const in_addr_t s_addr =
      reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr.s_addr;
  freeaddrinfo(res);
  int err = 0;
  absl::StatusOr<Listener> l = ListenOnAddress(s_addr, &err);
  if (l.ok() || err != EADDRNOTAVAIL) return l;
  if (note != nullptr) {
    *note = absl::StrFormat(
        "%s is not an address of this host; listening on every interface",
        address);
  }
  return ListenOnAddress(htonl(INADDR_ANY), &err);
}

absl::StatusOr<int> ConnectTo(const std::string& address, uint16_t port,
                              absl::Time deadline) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = absl::StrFormat("%d", port);
  const int rc = getaddrinfo(address.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot resolve launcher address '%s': %s", address, gai_strerror(rc)));
  }
  int last_errno = 0;
  while (true) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      freeaddrinfo(res);
      return ErrnoToStatus(errno, "socket");
    }
    if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      freeaddrinfo(res);
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    last_errno = errno;
    close(fd);
    if (absl::Now() >= deadline ||
        (last_errno != ECONNREFUSED && last_errno != EINTR &&
         last_errno != ETIMEDOUT && last_errno != ENETUNREACH)) {
      break;
    }
    poll(nullptr, 0, 100);  // the listener is not up yet: try again shortly
  }
  freeaddrinfo(res);
  return ErrnoToStatus(
      last_errno,
      absl::StrFormat("connecting to the launcher at %s:%d", address, port));
}

absl::StatusOr<std::string> LocalAddressOf(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return ErrnoToStatus(errno, "getsockname");
  }
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &addr.sin_addr, buf, sizeof buf);
  return std::string(buf);
}

std::string DefaultAdvertisedAddress() {
  if (const char* ip = std::getenv("GASNET_MASTERIP"); ip && *ip) return ip;
  ifaddrs* list = nullptr;
  std::string found = "127.0.0.1";
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) {
        continue;
      }
      if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK)) {
        continue;
      }
      char buf[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr,
                buf, sizeof buf);
      found = buf;
      break;
    }
    freeifaddrs(list);
  }
  return found;
}

absl::Status SplitHostPort(const std::string& text, std::string* host,
                           uint16_t* port) {
  const size_t colon = text.rfind(':');
  uint32_t p = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(text.substr(colon + 1), &p) || p == 0 || p > 65535) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' is not an address:port pair", text));
  }
  *host = text.substr(0, colon);
  *port = static_cast<uint16_t>(p);
  return absl::OkStatus();
}

}  // namespace gexrt::spawn
