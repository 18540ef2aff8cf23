// Connection files (GASNET_CONNECTFILE_IN / _OUT): which peers a rank
// connects to at start-up, in the ibv-conduit format GASNet users know
// (conduit/ibv/README.md):
//
//   size: 8          optional; checked against the job's size
//   base: 36         optional; the base of the node numbers after it
//   7: 0 4 6         rank 7 connects to ranks 0, 4 and 6
//   6:9-12           ranges; a rank may have several lines
//
// '%' in a file name is replaced by the rank (per-rank files). A line
// names a connection in both directions, so what one rank reads is only
// its half: the conduit agrees the whole set over the bootstrap.
//
// Details of this implementation:
//   - Blank (or all-whitespace) lines and lines starting with '#' are
//     ignored; any other line starting with whitespace is an error.
//   - "size:" and "base:" values are always decimal; "base:" applies to the
//     lines after it only. Node numbers are in the current base, letters in
//     either case ("1F" and "1f" are the same in base 16). "size" and
//     "base" before a colon are always the keywords, never base-36 numbers.
//   - Peers are separated by spaces or tabs; "a-b" is the range a..b and
//     needs a <= b. A line may list no peers ("7:").
//   - A rank naming itself as a peer is allowed and ignored (a rank never
//     connects to itself).
#ifndef GEX_CONDUIT_IBV_CONNECT_FILE_H_
#define GEX_CONDUIT_IBV_CONNECT_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gexrt::ibv {

// `name` with every '%' replaced by `rank` in decimal.
std::string ConnectFilePath(std::string_view name, uint32_t rank);

// The peers `rank` connects to according to the file text `text` (`file`
// names it in messages): a vector of `ranks` flags, true for every peer q
// on a line "rank: ... q ..." and for every p on a line "p: ... rank ...".
// Errors (InvalidArgument, naming the file and line): a malformed line, a
// number outside [0, ranks) or not in the current base, a base outside
// 2..36, a "size:" other than `ranks` (a file from another job).
absl::StatusOr<std::vector<bool>> ParseConnectFile(std::string_view text,
                                                   std::string_view file,
                                                   uint32_t rank,
                                                   uint32_t ranks);

// Reads ConnectFilePath(name, rank) and parses it. A missing or unreadable
// file is NotFound / PermissionDenied naming the path and the variable
// GASNET_CONNECTFILE_IN.
absl::StatusOr<std::vector<bool>> ReadConnectFile(std::string_view name,
                                                  uint32_t rank,
                                                  uint32_t ranks);

// The text of `rank`'s file: "size:" and "base:" lines, then one line
// "rank: peers..." listing `peers` (sorted, duplicates and `rank` itself
// dropped, runs of three or more written as ranges "a-b") in `base`.
// Expects base in 2..36 (any other base is written as 36) and every peer
// below `ranks`; WriteConnectFile checks both.
std::string FormatConnectFile(uint32_t rank, uint32_t ranks, uint32_t base,
                              const std::vector<uint32_t>& peers);

// Writes FormatConnectFile to ConnectFilePath(name, rank), replacing it
// atomically (a temporary file in the same directory, then rename).
// Errors name the path and GASNET_CONNECTFILE_OUT: InvalidArgument for a
// base outside 2..36 or a rank or peer not below `ranks`, else the code of
// the failing call's errno (NotFound for a missing directory).
absl::Status WriteConnectFile(std::string_view name, uint32_t rank,
                              uint32_t ranks, uint32_t base,
                              const std::vector<uint32_t>& peers);

}  // namespace gexrt::ibv

#endif  // GEX_CONDUIT_IBV_CONNECT_FILE_H_
