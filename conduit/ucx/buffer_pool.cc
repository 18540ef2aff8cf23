#include "conduit/ucx/buffer_pool.h"

#include <algorithm>

namespace gexrt::ucx {

BufferPool::BufferPool(size_t size, size_t initial, size_t max,
                       bool thread_safe)
    : size_((size + 15) & ~size_t{15}),
      max_(std::max<size_t>(max, 1)),
      thread_safe_(thread_safe) {
  initial = std::min(initial, max_);
  free_.reserve(std::min<size_t>(max_, 4096));
  for (size_t i = 0; i < initial; ++i) free_.push_back(Grow());
}

unsigned char* BufferPool::Grow() {
  // new[] of unsigned char is aligned for any fundamental type (16 bytes
  // here), so headers and payloads built at 8-byte offsets are aligned.
  all_.emplace_back(new unsigned char[size_]);
  return all_.back().get();
}

unsigned char* BufferPool::GetLocked() {
  if (!free_.empty()) {
    unsigned char* b = free_.back();
    free_.pop_back();
    return b;
  }
  if (all_.size() >= max_) return nullptr;
  return Grow();
}

unsigned char* BufferPool::Get() {
  if (!thread_safe_) return GetLocked();
  std::lock_guard<std::mutex> lock(mutex_);
  return GetLocked();
}

void BufferPool::Put(unsigned char* buffer) {
  if (!thread_safe_) {
    free_.push_back(buffer);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(buffer);
}

size_t BufferPool::allocated() const {
  if (!thread_safe_) return all_.size();
  std::lock_guard<std::mutex> lock(mutex_);
  return all_.size();
}

}  // namespace gexrt::ucx
