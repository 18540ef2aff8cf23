#include "firehose/fake_pinner.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"

namespace gexrt::firehose {

absl::StatusOr<Registration> FakePinner::Pin(uintptr_t base, size_t length) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_count_ > 0) {
    --fail_count_;
    events_.push_back({Event::kFailedPin, base, length, 0});
    return fail_status_;
  }
  if (length == 0) {
    ErrorLocked(absl::StrFormat("Pin(0x%x, 0): empty range", base));
  }
  Registration r;
  r.base = base;
  r.length = length;
  r.local_key = next_key_++;
  // Distinct from the local key, as on a real device.
  r.remote_key = r.local_key | (uint64_t{1} << 63);
  r.handle = reinterpret_cast<void*>(static_cast<uintptr_t>(r.local_key));
  live_.emplace(r.local_key, r);
  live_bytes_ += length;
  ++pins_;
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  peak_registrations_ = std::max(peak_registrations_, live_.size());
  events_.push_back({Event::kPin, base, length, r.local_key});
  return r;
}

void FakePinner::Unpin(const Registration& registration) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(registration.local_key);
  if (it == live_.end()) {
    ErrorLocked(absl::StrFormat("Unpin of key %d, which is not pinned",
                                registration.local_key));
    return;
  }
  if (it->second.base != registration.base ||
      it->second.length != registration.length ||
      it->second.handle != registration.handle) {
    ErrorLocked(absl::StrFormat(
        "Unpin of key %d with range [0x%x, +%d), pinned as [0x%x, +%d)",
        registration.local_key, registration.base, registration.length,
        it->second.base, it->second.length));
  }
  live_bytes_ -= it->second.length;
  ++unpins_;
  events_.push_back(
      {Event::kUnpin, it->second.base, it->second.length, it->first});
  live_.erase(it);
}

void FakePinner::FailNextPins(int count, absl::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_count_ = count;
  fail_status_ = std::move(status);
}

std::vector<FakePinner::Event> FakePinner::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

void FakePinner::ClearEvents() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
}

size_t FakePinner::live_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_bytes_;
}

size_t FakePinner::live_registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size();
}

size_t FakePinner::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_bytes_;
}

size_t FakePinner::peak_registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_registrations_;
}

size_t FakePinner::pins() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pins_;
}

size_t FakePinner::unpins() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unpins_;
}

bool FakePinner::Covers(uint64_t key, uintptr_t base, size_t length) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(key);
  if (it == live_.end()) return false;
  const Registration& r = it->second;
  return base >= r.base && base + length <= r.base + r.length;
}

bool FakePinner::CoversRemote(uint64_t remote_key, uintptr_t base,
                              size_t length) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, r] : live_) {
    if (r.remote_key == remote_key) {
      return base >= r.base && base + length <= r.base + r.length;
    }
  }
  return false;
}

int FakePinner::errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

std::string FakePinner::first_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

void FakePinner::ErrorLocked(std::string what) {
  if (errors_++ == 0) first_error_ = std::move(what);
}

}  // namespace gexrt::firehose
