// A Pinner for tests: pins nothing, remembers everything.
//
// Every Pin and Unpin is logged in order; the bytes and registrations live
// now, and the most ever live at once, are counted; Pin can be made to fail
// on demand. Keys are unique per registration, so a test can tell a
// re-pinned range from one that stayed pinned. Thread-safe.
//
//   FakePinner pinner;
//   pinner.FailNextPins(1, absl::ResourceExhaustedError("no MRs left"));
//   ...
//   EXPECT_LE(pinner.peak_bytes(), limit);
//   EXPECT_EQ(pinner.errors(), 0);  // no unknown or double Unpin
#ifndef GEX_FIREHOSE_FAKE_PINNER_H_
#define GEX_FIREHOSE_FAKE_PINNER_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "firehose/pinner.h"

namespace gexrt::firehose {

class FakePinner : public Pinner {
 public:
  struct Event {
    enum Kind { kPin, kUnpin, kFailedPin };
    Kind kind;
    uintptr_t base;
    size_t length;
    uint64_t key;  // The registration's local key (0 for kFailedPin).

    friend bool operator==(const Event&, const Event&) = default;
  };

  absl::StatusOr<Registration> Pin(uintptr_t base, size_t length) override;
  void Unpin(const Registration& registration) override;

  // The next `count` calls to Pin fail with `status` (not OK).
  void FailNextPins(int count, absl::Status status);

  // Every call so far, oldest first.
  std::vector<Event> events() const;
  // Drops the log (counters stay).
  void ClearEvents();

  size_t live_bytes() const;
  size_t live_registrations() const;
  size_t peak_bytes() const;
  size_t peak_registrations() const;
  // Successful pins and unpins so far.
  size_t pins() const;
  size_t unpins() const;
  // Whether [base, base + length) lies inside some live registration whose
  // local key is `key`: what a device would check on an access.
  bool Covers(uint64_t key, uintptr_t base, size_t length) const;
  // The same check by remote key: what a device checks on a peer's RDMA.
  bool CoversRemote(uint64_t remote_key, uintptr_t base, size_t length) const;
  // Unpins of a registration that is not live (unknown key, or already
  // unpinned, or base/length not as pinned), and pins of an empty or
  // unaligned range. Should stay 0.
  int errors() const;
  // A description of the first error, for test output.
  std::string first_error() const;

 private:
  void ErrorLocked(std::string what);

  mutable std::mutex mu_;  // Guards everything below.
  std::vector<Event> events_;
  absl::flat_hash_map<uint64_t, Registration> live_;
  uint64_t next_key_ = 1;
  size_t live_bytes_ = 0;
  size_t peak_bytes_ = 0;
  size_t peak_registrations_ = 0;
  size_t pins_ = 0;
  size_t unpins_ = 0;
  int fail_count_ = 0;
  absl::Status fail_status_;
  int errors_ = 0;
  std::string first_error_;
};

}  // namespace gexrt::firehose

#endif  // GEX_FIREHOSE_FAKE_PINNER_H_
