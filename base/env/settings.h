// Typed access to GASNET_* environment settings.
//
// Every getter reads one variable, parses it with the syntax of parse.h and
// returns the value, or `default_value` when the variable is unset or empty.
// A malformed value is a fatal error naming the variable, the value and the
// accepted forms:
//
//   *** FATAL ERROR (proc 0): environment variable GASNET_PSHMNET_QUEUE_DEPTH
//   has the invalid value "lots": not an integer; expected an integer: ...
//
// Each Try* form returns that error as a status instead (for callers that
// can recover, and for tests).
//
// Integers and sizes are read as GASNet-EX reads them: a value that is not
// an exact form but starts with a number gives that number (ParseLeadingInt,
// ParseLeadingSize), and a warning, unless Quiet(), once per variable and
// value, names the variable, the value, what was used and what was ignored:
//
//   *** WARNING (proc 0): environment variable GASNET_T has the value
//   "50%": using 50, its leading number, and ignoring "%" after it, ...
//
// With GASNET_VERBOSEENV=1, each setting consulted is reported once, from
// rank 0 only, with its value and whether it was the default:
//
//   ENV parameter: GASNET_PSHMNET_QUEUE_DEPTH = 8   (default)
//
// Reports made before the job rank is known are held until it is.
//
// Settings are read at start-up, never on a hot path: getters take a lock
// and may allocate.
#ifndef GEX_BASE_ENV_SETTINGS_H_
#define GEX_BASE_ENV_SETTINGS_H_

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/env/parse.h"

namespace gexrt::env {

// The raw value, or nullopt when unset. Not reported by GASNET_VERBOSEENV.
std::optional<std::string> GetRaw(std::string_view name);

bool GetBool(std::string_view name, bool default_value);
absl::StatusOr<bool> TryGetBool(std::string_view name, bool default_value);

int64_t GetInt(std::string_view name, int64_t default_value,
               int64_t min = std::numeric_limits<int64_t>::min(),
               int64_t max = std::numeric_limits<int64_t>::max());
absl::StatusOr<int64_t> TryGetInt(
    std::string_view name, int64_t default_value,
    int64_t min = std::numeric_limits<int64_t>::min(),
    int64_t max = std::numeric_limits<int64_t>::max());

double GetDecimal(std::string_view name, double default_value);
absl::StatusOr<double> TryGetDecimal(std::string_view name,
                                     double default_value);

// A size in bytes; a value without a suffix is in `unit`.
uint64_t GetSize(std::string_view name, uint64_t default_bytes, SizeUnit unit);
absl::StatusOr<uint64_t> TryGetSize(std::string_view name,
                                    uint64_t default_bytes, SizeUnit unit);

// A fraction of a whole, or an absolute size (see MemoryAmount).
MemoryAmount GetMemoryAmount(std::string_view name, MemoryAmount default_value,
                             SizeUnit unit);
absl::StatusOr<MemoryAmount> TryGetMemoryAmount(std::string_view name,
                                                MemoryAmount default_value,
                                                SizeUnit unit);

// A node list; unset, empty and "*" all mean every node.
NodeList GetNodeList(std::string_view name);
absl::StatusOr<NodeList> TryGetNodeList(std::string_view name);

// An HCA/port filter; unset or empty means no filter (an empty vector).
std::vector<PortSpec> GetPortFilter(std::string_view name);
absl::StatusOr<std::vector<PortSpec>> TryGetPortFilter(std::string_view name);

// A free-form string.
std::string GetString(std::string_view name, std::string_view default_value);

// One of `choices`, matched in any case; returns the choice as listed.
std::string GetChoice(std::string_view name, std::string_view default_value,
                      std::initializer_list<std::string_view> choices);
absl::StatusOr<std::string> TryGetChoice(
    std::string_view name, std::string_view default_value,
    std::initializer_list<std::string_view> choices);

// Topology-aware families. For a family NAME, NAME_TYPE (default "Socket";
// see ParseTopologyLevel) names a kind of hardware object; when this process
// is bound within object n of that kind and NAME_<n> is set non-empty, the
// family's value is NAME_<n>, otherwise it is NAME. Returns the name of the
// variable to read, to pass to any getter above:
//
//   GetPortFilter(TopologyVariant("GASNET_IBV_PORTS"));
std::string TopologyVariant(std::string_view family);
absl::StatusOr<std::string> TryTopologyVariant(std::string_view family);
// The same choice with the binding given (nullopt: not bound within one
// object), for tests and tools. Does not read NAME_TYPE.
std::string TopologyVariantFor(std::string_view family,
                               std::optional<int> bound_index);

// Whether GASNET_QUIET is set (boolean, default no): configuration warnings
// are then not printed.
bool Quiet();

// Warns, unless Quiet(), once per variable, that `name` is set non-empty
// but no longer supported; `advice` says what to use instead.
void WarnIfSet(std::string_view name, std::string_view advice);

// Checks every deprecated or unsupported variable GASNet users may still
// set (GASNET_HCA_ID, GASNET_PORT_NUM, ...) with WarnIfSet. Conduits call it
// once at start-up.
void WarnUnsupportedVariables();

// Whether GASNET_VERBOSEENV is on (boolean, default no).
bool VerboseEnv();

// Reports a setting read by other means (a client's own, through
// gasnett_envstr_display / gasnett_envint_display) as the getters report
// theirs: once per name, from rank 0, only with GASNET_VERBOSEENV.
void Display(std::string_view name, std::string_view shown, bool is_default);
// The text the getters show for a size in bytes ("64K", "3G", "100").
std::string ShowBytes(uint64_t bytes);

namespace internal {
// Where report lines go; stderr unless a test captures them. Not
// thread-safe: set it before any getter runs.
using ReportSink = void (*)(std::string_view line);
void SetReportSinkForTest(ReportSink sink);
// Forgets which settings were reported and warned about, and re-reads
// GASNET_VERBOSEENV and GASNET_QUIET on next use.
void ResetForTest();
}  // namespace internal

}  // namespace gexrt::env

#endif  // GEX_BASE_ENV_SETTINGS_H_
