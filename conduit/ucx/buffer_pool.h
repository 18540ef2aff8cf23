// A pool of equal-sized byte buffers: a free list, grown on demand up to a
// maximum, for the ucx conduit's AM buffers (request, reply and receive
// pools). Allocation happens only while the pool grows; a steady state
// reuses. The high-water mark (buffers ever allocated) is what bounds the
// conduit's AM memory, and what its statistics report.
#ifndef GEX_CONDUIT_UCX_BUFFER_POOL_H_
#define GEX_CONDUIT_UCX_BUFFER_POOL_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace gexrt::ucx {

class BufferPool {
 public:
  // `initial` buffers now, at most `max` ever; each `size` bytes, 16-byte
  // aligned. `thread_safe`: Get and Put from any thread (PAR).
  BufferPool(size_t size, size_t initial, size_t max, bool thread_safe);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A free buffer, or null when all `max` are in use.
  unsigned char* Get();
  // Gives back a buffer of this pool's Get.
  void Put(unsigned char* buffer);

  size_t buffer_size() const { return size_; }
  // Buffers allocated so far (at most max).
  size_t allocated() const;

 private:
  unsigned char* GetLocked();
  unsigned char* Grow();

  const size_t size_;
  const size_t max_;
  const bool thread_safe_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<unsigned char[]>> all_;
  std::vector<unsigned char*> free_;
};

}  // namespace gexrt::ucx

#endif  // GEX_CONDUIT_UCX_BUFFER_POOL_H_
