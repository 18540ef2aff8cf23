#include "firehose/move_server.h"

#include <vector>

#include "absl/strings/str_format.h"

namespace gexrt::firehose {

MoveServer::~MoveServer() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, hold] : holds_) cache_->Release(hold);
  holds_.clear();
}

absl::StatusOr<Registration> MoveServer::Serve(uint32_t requester,
                                               const MoveRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  // Releases first: they may make the room the new pinning needs.
  for (uint64_t ticket : request.releases) {
    auto it = holds_.find(std::make_pair(requester, ticket));
    if (it == holds_.end()) {
      ++unknown_releases_;
      continue;
    }
    cache_->Release(it->second);
    holds_.erase(it);
  }
  if (request.length == 0) return Registration{};
  const auto key = std::make_pair(requester, request.ticket);
  if (holds_.contains(key)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("firehose: rank %d's move %d is already pinned",
                        requester, request.ticket));
  }
  absl::StatusOr<LocalCache::Hold> hold =
      cache_->TryAcquire(request.base, request.length);
  if (!hold.ok()) return hold.status();
  holds_.emplace(key, *hold);
  return hold->registration();
}

void MoveServer::ReleaseAll(uint32_t requester) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<uint32_t, uint64_t>> keys;
  for (const auto& [key, hold] : holds_) {
    if (key.first == requester) keys.push_back(key);
  }
  for (const auto& key : keys) {
    cache_->Release(holds_[key]);
    holds_.erase(key);
  }
}

size_t MoveServer::held(uint32_t requester) const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, hold] : holds_) n += key.first == requester;
  return n;
}

uint64_t MoveServer::unknown_releases() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unknown_releases_;
}

}  // namespace gexrt::firehose
