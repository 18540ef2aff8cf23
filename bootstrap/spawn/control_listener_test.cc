// The control port's rules for connections that have not presented the
// job token, driven in-process over loopback TCP with the clock passed in.
#include "bootstrap/spawn/control_listener.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bootstrap/messages.h"
#include "bootstrap/spawn/tcp.h"
#include "bootstrap/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gexrt::spawn {
namespace {

constexpr uint64_t kToken = 0x0123456789abcdefull;
const absl::Time kT0 = absl::FromUnixSeconds(1000000);

std::string HelloFrame(uint64_t token,
                       wire::PeerRole role = wire::PeerRole::kAgent,
                       std::string hostname = "n1") {
  wire::Hello h;
  h.role = role;
  h.id = 1;
  h.pid = 4242;
  h.token = token;
  h.hostname = std::move(hostname);
  return wire::Encode(h);
}

std::string LengthPrefix(uint32_t len) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  return s;
}

class ControlListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Listener> l = ListenOn("127.0.0.1");
    ASSERT_TRUE(l.ok()) << l.status();
    port_ = l->port;
    listen_fd_ = l->fd;
  }
  void TearDown() override {
    for (int fd : clients_) close(fd);
  }

  ControlListener Make(ControlListener::Options o = {}) {
    o.token = kToken;
    return ControlListener(listen_fd_, std::move(o));
  }

  // A connected client (the kernel completes the connection before it is
  // accepted, so it is waiting in the listener's queue on return).
  int Connect() {
    absl::StatusOr<int> fd =
        ConnectTo("127.0.0.1", port_, absl::Now() + absl::Seconds(30));
    EXPECT_TRUE(fd.ok()) << fd.status();
    clients_.push_back(*fd);
    return *fd;
  }

  static void Send(int fd, const std::string& bytes) {
    ASSERT_TRUE(
        wire::WriteFrame(fd, bytes, absl::Now() + absl::Seconds(30)).ok());
  }

  // Waits (bounded) until slot `slot`'s descriptor is readable: the bytes
  // a client sent have arrived.
  static void AwaitReadable(const ControlListener& l, size_t slot) {
    pollfd p{l.SlotFd(slot), POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 30000), 1);
  }

  // Whether the launcher closed the client's connection: end of file (or
  // a reset) rather than "nothing yet".
  static bool ClosedByListener(int client) {
    pollfd p{client, POLLIN, 0};
    if (poll(&p, 1, 30000) != 1) return false;
    char c;
    const ssize_t k = recv(client, &c, 1, MSG_DONTWAIT);
    return k == 0 || (k < 0 && errno == ECONNRESET);
  }
  static bool StillOpen(int client) {
    char c;
    const ssize_t k = recv(client, &c, 1, MSG_DONTWAIT);
    return k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  uint16_t port_ = 0;
  int listen_fd_ = -1;
  std::vector<int> clients_;
};

TEST_F(ControlListenerTest, HelloSizeLimitFollowsTheMessage) {
  // The longest host name a hello can carry fits; one byte more does not.
  EXPECT_EQ(HelloFrame(kToken, wire::PeerRole::kAgent,
                       std::string(kMaxHelloHostname, 'h'))
                .size(),
            MaxHelloFrameBytes());
  EXPECT_LT(MaxHelloFrameBytes(), 512u);
}

TEST_F(ControlListenerTest, AgentWithTheTokenArrivesWithWhatFollows) {
  ControlListener l = Make();
  const int c = Connect();
  l.OnListenReady(kT0);
  ASSERT_EQ(l.pending(), 1u);
  const std::string next = wire::Encode(wire::AgentReady{1});
  Send(c, HelloFrame(kToken, wire::PeerRole::kAgent,
                     std::string(kMaxHelloHostname, 'h')) +
              next);
  AwaitReadable(l, 0);
  std::optional<ControlListener::Arrival> a = l.OnPendingReady(0);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->hello.token, kToken);
  EXPECT_EQ(a->hello.id, 1u);
  EXPECT_EQ(a->hello.hostname, std::string(kMaxHelloHostname, 'h'));
  // The frame behind the hello is either handed over or still in the
  // socket; never lost, never read past one hello's size.
  std::string got = a->rest;
  char buf[64];
  ssize_t k;
  while (got.size() < next.size() &&
         (k = recv(a->fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
    got.append(buf, k);
  }
  EXPECT_EQ(got, next);
  close(a->fd);
  l.Sweep();
  EXPECT_EQ(l.pending(), 0u);
  EXPECT_EQ(l.dropped(), 0u);
}

// A connection that has not presented the token may not make the launcher
// buffer a big frame: a length prefix over a hello's size ends it at once.
TEST_F(ControlListenerTest, HugeFrameBeforeTheHelloIsDropped) {
  for (uint32_t len :
       {uint32_t{1} << 30, uint32_t{200} << 20,
        static_cast<uint32_t>(MaxHelloFrameBytes() - 4 + 1), uint32_t{0}}) {
    ControlListener l = Make();
    const int c = Connect();
    l.OnListenReady(kT0);
    ASSERT_EQ(l.pending(), 1u);
    Send(c, LengthPrefix(len) + std::string(1000, 'x'));
    AwaitReadable(l, 0);
    EXPECT_FALSE(l.OnPendingReady(0).has_value()) << len;
    EXPECT_EQ(l.SlotFd(0), -1) << len;
    EXPECT_EQ(l.dropped(), 1u) << len;
    EXPECT_TRUE(ClosedByListener(c)) << len;
    l.Sweep();
    EXPECT_EQ(l.pending(), 0u);
    listen_fd_ = -1;  // closed by `l`
    SetUp();
  }
}

// Wrong token, wrong role, a frame that is not a hello: the connection is
// dropped and nothing it sent (here a collective contribution right
// behind it) comes out.
TEST_F(ControlListenerTest, ForgedHellosAreDroppedWithWhatFollows) {
  wire::CollectiveUp up;
  up.entries.push_back({0, "forged"});
  const std::string forged = wire::Encode(up);
  const std::vector<std::string> firsts = {
      HelloFrame(kToken ^ 1), HelloFrame(0),
      HelloFrame(kToken, wire::PeerRole::kRank), forged,
      // A hello-sized frame whose fields do not parse.
      LengthPrefix(20) + std::string(20, '\x01')};
  for (const std::string& first : firsts) {
    ControlListener l = Make();
    const int c = Connect();
    l.OnListenReady(kT0);
    Send(c, first + forged);
    AwaitReadable(l, 0);
    EXPECT_FALSE(l.OnPendingReady(0).has_value());
    EXPECT_EQ(l.dropped(), 1u);
    EXPECT_TRUE(ClosedByListener(c));
    listen_fd_ = -1;
    SetUp();
  }
}

// A hello arriving in pieces is assembled, not mistaken for a bad one.
TEST_F(ControlListenerTest, HelloInPieces) {
  ControlListener l = Make();
  const int c = Connect();
  l.OnListenReady(kT0);
  const std::string hello = HelloFrame(kToken);
  for (size_t i = 0; i + 1 < hello.size(); ++i) {
    Send(c, hello.substr(i, 1));
    AwaitReadable(l, 0);
    ASSERT_FALSE(l.OnPendingReady(0).has_value()) << i;
    ASSERT_GE(l.SlotFd(0), 0) << i;
  }
  Send(c, hello.substr(hello.size() - 1));
  AwaitReadable(l, 0);
  std::optional<ControlListener::Arrival> a = l.OnPendingReady(0);
  ASSERT_TRUE(a.has_value());
  close(a->fd);
}

TEST_F(ControlListenerTest, PendingConnectionsHaveADeadline) {
  ControlListener::Options o;
  o.hello_timeout = absl::Seconds(5);
  ControlListener l = Make(o);
  const int c = Connect();
  l.OnListenReady(kT0);
  ASSERT_EQ(l.pending(), 1u);
  EXPECT_EQ(l.NextDeadline(kT0), kT0 + absl::Seconds(5));
  l.OnTimers(kT0 + absl::Seconds(5) - absl::Nanoseconds(1));
  EXPECT_EQ(l.pending(), 1u);
  EXPECT_TRUE(StillOpen(c));
  l.OnTimers(kT0 + absl::Seconds(5));
  EXPECT_EQ(l.pending(), 0u);
  EXPECT_EQ(l.dropped(), 1u);
  EXPECT_TRUE(ClosedByListener(c));
  EXPECT_EQ(l.NextDeadline(kT0), absl::InfiniteFuture());
}

// The default deadline is a few seconds, far below the 300 s bootstrap
// timeout, and the default cap is small.
TEST_F(ControlListenerTest, DefaultsAreShort) {
  ControlListener::Options o;
  EXPECT_LE(o.hello_timeout, absl::Seconds(10));
  EXPECT_LE(o.max_pending, 128u);
}

TEST_F(ControlListenerTest, CapClosesTheOldest) {
  ControlListener::Options o;
  o.max_pending = 4;
  ControlListener l = Make(o);
  std::vector<int> c;
  for (int i = 0; i < 6; ++i) c.push_back(Connect());
  l.OnListenReady(kT0);
  EXPECT_EQ(l.pending(), 4u);
  EXPECT_EQ(l.dropped(), 2u);
  EXPECT_TRUE(ClosedByListener(c[0]));
  EXPECT_TRUE(ClosedByListener(c[1]));
  for (int i = 2; i < 6; ++i) EXPECT_TRUE(StillOpen(c[i])) << i;
  // A real agent arriving now still gets in.
  const int agent = Connect();
  l.OnListenReady(kT0);
  Send(agent, HelloFrame(kToken));
  l.Sweep();
  ASSERT_EQ(l.pending(), 4u);
  const size_t last = l.slots() - 1;
  AwaitReadable(l, last);
  std::optional<ControlListener::Arrival> a = l.OnPendingReady(last);
  ASSERT_TRUE(a.has_value());
  close(a->fd);
}

TEST_F(ControlListenerTest, CloseStopsListeningAndDropsPending) {
  ControlListener l = Make();
  const int c = Connect();
  l.OnListenReady(kT0);
  l.Close();
  EXPECT_FALSE(l.listening());
  EXPECT_EQ(l.ListenFdToPoll(kT0), -1);
  EXPECT_TRUE(ClosedByListener(c));
  // Nobody listens on the port any more.
  EXPECT_FALSE(ConnectTo("127.0.0.1", port_, absl::Now()).ok());
}

// Uses up every descriptor this process may open (a low RLIMIT_NOFILE and
// duplicates), and gives them back.
class DescriptorExhaustion {
 public:
  DescriptorExhaustion() {
    getrlimit(RLIMIT_NOFILE, &old_);
    int highest = 0;
    if (DIR* d = opendir("/proc/self/fd")) {
      while (dirent* e = readdir(d))
        highest = std::max(highest, atoi(e->d_name));
      closedir(d);
    }
    rlimit low = old_;
    low.rlim_cur = static_cast<rlim_t>(highest + 8);
    EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fd;
    while ((fd = dup(0)) >= 0) fillers_.push_back(fd);
    EXPECT_EQ(errno, EMFILE);
  }
  ~DescriptorExhaustion() { Release(); }
  void Release() {
    for (int fd : fillers_) close(fd);
    fillers_.clear();
    setrlimit(RLIMIT_NOFILE, &old_);
  }

 private:
  rlimit old_{};
  std::vector<int> fillers_;
};

// Out of descriptors with a connection still waiting for its hello: that
// connection makes room for the new one.
TEST_F(ControlListenerTest, OutOfDescriptorsDropsTheOldestPending) {
  ControlListener l = Make();
  const int old_client = Connect();
  l.OnListenReady(kT0);
  ASSERT_EQ(l.pending(), 1u);
  const int new_client = Connect();
  {
    DescriptorExhaustion full;
    l.OnListenReady(kT0);
  }
  l.Sweep();
  EXPECT_EQ(l.pending(), 1u);
  EXPECT_EQ(l.dropped(), 1u);
  EXPECT_TRUE(ClosedByListener(old_client));
  EXPECT_TRUE(StillOpen(new_client));
  EXPECT_EQ(l.ListenFdToPoll(kT0), listen_fd_);
}

// Out of descriptors with nothing to give up: the listener (still
// readable) leaves the poll set until the back-off ends, so an event loop
// does not spin on it; then the waiting connections are accepted.
TEST_F(ControlListenerTest, OutOfDescriptorsBacksOff) {
  ControlListener::Options o;
  o.accept_backoff = absl::Milliseconds(250);
  ControlListener l = Make(o);
  Connect();
  Connect();
  {
    DescriptorExhaustion full;
    l.OnListenReady(kT0);
    EXPECT_EQ(l.pending(), 0u);
    EXPECT_EQ(l.ListenFdToPoll(kT0), -1);
    EXPECT_EQ(l.ListenFdToPoll(kT0 + absl::Milliseconds(249)), -1);
    EXPECT_EQ(l.NextDeadline(kT0), kT0 + absl::Milliseconds(250));
  }
  const absl::Time later = kT0 + absl::Milliseconds(250);
  EXPECT_EQ(l.ListenFdToPoll(later), listen_fd_);
  EXPECT_EQ(l.NextDeadline(later), absl::InfiniteFuture());
  l.OnListenReady(later);
  EXPECT_EQ(l.pending(), 2u);
}

}  // namespace
}  // namespace gexrt::spawn
