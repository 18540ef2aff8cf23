// Running the API test clients as jobs (<launcher> -n N <client> args)
// and judging them from the outside: the exit code, each rank's one success
// line ("rank R: <what>..."), the fatal line that names a misused call, and
// that no process of the job outlived it.
//
// The conduit instance comes from the test's environment, set by
// api_tests.bzl: API_TEST_LAUNCHER (the launcher's runfiles path),
// API_TEST_CLIENT_SUFFIX (of the clients' names), API_TEST_CONDUIT and
// API_TEST_ENV (the instance's "NAME=value" variables, one per line).
#ifndef GEX_TESTS_API_API_JOB_H_
#define GEX_TESTS_API_API_JOB_H_

#include <map>
#include <string>
#include <vector>

#include "tests/testing/job_runner.h"

namespace gexrt::testing {

// Runs `n` ranks of tests/api/<client><API_TEST_CLIENT_SUFFIX> with `args`
// under API_TEST_LAUNCHER, with none of the PSHM and launcher variables of
// the test's environment, then the instance's (InstanceEnv), then those of
// `env` ("NAME=value").
JobResult RunApiJob(const std::string& client, int n,
                    const std::vector<std::string>& args,
                    const std::vector<std::string>& env = {});

// The instance's conduit name ("smp", "socket", ...).
std::string Conduit();

// The instance's "NAME=value" variables (API_TEST_ENV, one per line).
std::vector<std::string> InstanceEnv();

// The instance's GASNET_SUPERNODE_MAXSIZE; 0 when it sets none (every rank
// of a job on this host in one supernode, as on smp).
int SupernodeMaxSize();

// Whether a job of `n` ranks of this instance has ranks in more than one
// supernode, i.e. some peers reached over the conduit, not PSHM. Cases
// whose checks only hold within one supernode skip then:
//   if (SpansSupernodes(n)) GTEST_SKIP() << Layout(n) << ": <why>";
bool SpansSupernodes(int n);

// "4 ranks over conduit socket with GASNET_SUPERNODE_MAXSIZE=2 span 2
// supernodes", for skip messages.
std::string Layout(int n);

// Whether ranks `a` and `b` of a job of `n` ranks of this instance (on one
// host) share a supernode, i.e. map each other's segments. The host's ranks
// form the fewest supernodes of at most GASNET_SUPERNODE_MAXSIZE ranks,
// sizes as equal as possible (larger first), each a consecutive run
// (bootstrap/node_map.h).
bool SameSupernode(int n, int a, int b);

// The command, exit code and output, for failure messages.
std::string Describe(const JobResult& r);

// Lines "rank R: <what>..." of stdout by rank; a rank printing such a line
// twice is a test failure.
std::map<int, std::string> RankLines(const JobResult& r,
                                     const std::string& what);

// The job exited 0, each of ranks 0..n-1 printed "rank R: <what>" once,
// and nothing survived it. Returns the lines by rank.
std::map<int, std::string> ExpectEveryRankOk(const JobResult& r, int n,
                                             const std::string& what);

// The job failed (nonzero exit) with a line
// "*** FATAL ERROR (proc P): <call>: ..." on stderr (P = `proc`, or any rank
// when `proc` is -1), no rank printed "survived", and nothing survived it.
void ExpectFatal(const JobResult& r, int proc, const std::string& call);

// The environment of an RMA job on the direct path (force_am false) or with
// every Put and Get over Active Messages (GEX_RMA_FORCE_AM=1), and the
// path's name for test names ("direct", "am").
std::vector<std::string> ForceAmEnv(bool force_am);
std::string PathName(bool force_am);

// `mode` as a GoogleTest parameter name ('-' becomes '_').
std::string TestName(std::string mode);

// The number after "key=" in `line` (-1 when absent).
long long Field(const std::string& line, const std::string& key);

}  // namespace gexrt::testing

#endif  // GEX_TESTS_API_API_JOB_H_
