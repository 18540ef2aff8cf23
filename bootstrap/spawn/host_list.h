// The hosts of the ssh spawner and how a job's ranks are laid out on them.
//
// Hosts come from a node file (one host per line, as batch systems write
// them) or a server list (one variable naming hosts), found through the
// environment the way GASNet's ssh spawner finds them:
//
//   GASNET_SSH_SERVERS="n1 n2,n3"  ->  {n1, n2, n3}
//   LayOutRanks(7, 0, hosts)       ->  n1: ranks 0-2, n2: 3-4, n3: 5-6
//
// Every host token is checked before it gets near a command line: the
// remote shell sees it, so a token that is not a plain host name is an
// error rather than something to quote.
#ifndef GEX_BOOTSTRAP_SPAWN_HOST_LIST_H_
#define GEX_BOOTSTRAP_SPAWN_HOST_LIST_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gexrt::spawn {

struct HostList {
  std::vector<std::string> hosts;
  // Where the hosts came from, for messages: "GASNET_SSH_NODEFILE (/path)"
  // for a node file, "GASNET_SSH_SERVERS" for a server list.
  std::string source;
};

// The hosts of a node file: one per line, the first whitespace-separated
// token of the line (batch systems append slot counts, queue names and the
// like). Blank lines and comments ('#' to the end of the line) are skipped.
// Duplicates are kept. An invalid host is an InvalidArgument error
// "<path_for_errors>:<line>: invalid host '<token>' ...".
absl::StatusOr<std::vector<std::string>> ParseNodeFile(
    std::string_view contents, std::string_view path_for_errors);

// The hosts of a server list, separated by commas and/or whitespace.
// Duplicates are kept. An invalid host is an InvalidArgument error naming
// `variable_for_errors` and the token.
absl::StatusOr<std::vector<std::string>> ParseServerList(
    std::string_view text, std::string_view variable_for_errors);

// Whether `token` can be handed to ssh as a host: non-empty, not starting
// with '-' (ssh would read it as an option), and only the characters
// [A-Za-z0-9._:@[]-] (so "user@host" and "[::1]" pass; anything a shell
// would treat specially does not).
bool IsValidHostToken(std::string_view token);

// The ssh spawner's hosts, from the first of these variables that is set
// and non-empty:
//   GASNET_SSH_NODEFILE  a node file
//   GASNET_NODEFILE      a node file
//   GASNET_SSH_SERVERS   a server list
//   PBS_NODEFILE         a node file (PBS/Torque)
//   PE_HOSTFILE          a node file (SGE: "host slots queue ...")
//   LSB_HOSTS            a server list (LSF)
// Duplicate hosts are removed, keeping the first occurrence (batch systems
// list a host once per slot), unless GASNET_SSH_KEEPDUP is true (1, yes,
// true, on; in any case). Hosts are compared exactly, without case folding.
//
// `getenv` is the environment lookup (::getenv in production; returns null
// for unset variables).
//
// Errors: NotFound when none of the variables is set (the message mentions
// GASNET_SSH_SERVERS and GASNET_SSH_NODEFILE); the errno-based status of an
// unreadable node file (naming the variable and the path); InvalidArgument
// for an invalid host, a bad GASNET_SSH_KEEPDUP, or a source that lists no
// hosts ("GASNET_SSH_SERVERS lists no hosts").
absl::StatusOr<HostList> HostListFromEnvironment(
    const std::function<const char*(const char*)>& getenv);

// A host and the block of consecutive ranks it runs.
struct HostRanks {
  std::string host;
  int64_t first_rank;
  int64_t count;
};

// Lays `ranks` out over the first `nodes` hosts of `hosts` (`nodes` 0 means
// min(ranks, number of hosts)) in blocks, as GASNet does: each host gets
// ranks / nodes consecutive ranks, and the first ranks % nodes hosts one
// more. Errors (InvalidArgument): ranks < 1, nodes < 0, nodes > ranks,
// nodes > number of hosts ("-N 4 needs 4 hosts but GASNET_SSH_SERVERS lists
// 3", using `hosts.source`).
absl::StatusOr<std::vector<HostRanks>> LayOutRanks(int64_t ranks, int64_t nodes,
                                                   const HostList& hosts);

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_HOST_LIST_H_
