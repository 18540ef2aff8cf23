// A rank's view of its supernode: the PSHM network to its peers and, once
// attached, every peer's segment mapped into this process.
//
// Start-up, collective over the whole job (every rank calls each step):
//
//   NodeMap map = DiscoverNodeMap(bootstrap);
//   auto sn = Supernode::Create(bootstrap, map, options);   // network up
//   ... sn->max_local_segment_size() answers gasnet_getMaxLocalSegmentSize
//   sn->AttachSegment(bootstrap, size);   // segments mapped everywhere
//   void* p = sn->Translate(peer, address_in_peer_segment, len);
//
// Each step creates this rank's shared object, exchanges ids over the
// bootstrap, maps the peers' objects, and once every peer has mapped them
// removes the names (shared_object.h): from then on the job cannot leak
// shared memory, however it ends. Each rank maps its own segment before
// any peer's (first touch stays local). Failures are agreed on: when one
// rank cannot create or map an object, every rank's call returns an
// error, the failing rank's naming the object and the cause.
#ifndef GEX_PSHM_SUPERNODE_H_
#define GEX_PSHM_SUPERNODE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/node_map.h"
#include "pshm/am_network.h"
#include "pshm/queue_config.h"
#include "pshm/segment_limits.h"
#include "pshm/shared_object.h"

namespace gexrt::pshm {

// The job-unique prefix of every shared object name: rank 0's GEX_JOB_ID
// (set by gasnetrun) or, started some other way, one rank 0 makes up.
// Collective (a broadcast from rank 0).
std::string AgreeJobPrefix(Bootstrap& bootstrap);

// The prefix rank 0 makes up without GEX_JOB_ID (a job srun or mpirun
// started directly): the host id, the pid and 64 random bits, in hex. The
// random part is what keeps another user from squatting on the names (the
// host id and pid can be guessed), so it is as wide as gasnetrun's.
std::string MakeUpJobPrefix();

class Supernode;

// The serials of the shared objects of one supernode, in one place: each
// names a different object (ObjectName's serial), so two users must never
// share one.
enum class SharedSerial : uint32_t {
  kNetwork = 0,    // The AM network's regions (one per rank).
  kSegments = 1,   // The segments (one per rank).
  kBarrier = 2,    // The barrier's flags (one per supernode).
  kExitCells = 3,  // The exit protocol's cells (one per supernode).
};

// One shared object of `bytes` (zero-filled) for the whole supernode,
// created by its first member and mapped by the others, for runtime state
// its ranks share (barrier flags, the exit protocol's cells). `serial`
// tells the objects of one supernode apart. Collective over the job; the
// name is removed once every rank has mapped it, so nothing can leak
// afterwards.
absl::StatusOr<SharedObject> ShareWithSupernode(Bootstrap& bootstrap,
                                                const Supernode& supernode,
                                                SharedSerial serial,
                                                size_t bytes);

class Supernode {
 public:
  struct Options {
    Dispatcher dispatcher = nullptr;
    void* context = nullptr;
    // AmNetwork::Options::other_poll (called with `context`).
    OtherPoll other_poll = nullptr;
    bool thread_safe = false;
    // AmNetwork::Options::wait_policy (may be null).
    WaitPolicy* wait_policy = nullptr;
    // Network size; unset: QueueConfigFromEnv() (the error, if any, is
    // returned by Create).
    std::optional<QueueConfig> queue;
  };

  // A segment as its owner sees it.
  struct Segment {
    uintptr_t base = 0;
    size_t size = 0;
  };

  static absl::StatusOr<std::unique_ptr<Supernode>> Create(
      Bootstrap& bootstrap, const NodeMap& map, const Options& options);

  Supernode(const Supernode&) = delete;
  Supernode& operator=(const Supernode&) = delete;
  ~Supernode();

  AmNetwork& network() { return *network_; }
  const std::string& job_prefix() const { return job_prefix_; }
  const QueueConfig& queue_config() const { return queue_config_; }

  // This rank's supernode index of job rank `r`, or -1 when `r` is not a
  // supernode peer.
  int32_t LocalIndex(Rank r) const {
    return r < local_index_.size() ? local_index_[r] : -1;
  }
  uint32_t my_index() const { return my_index_; }
  // Job ranks by supernode index.
  const std::vector<Rank>& members() const { return members_; }

  // gasnet_getMaxLocalSegmentSize / gasnet_getMaxGlobalSegmentSize.
  uint64_t max_local_segment_size() const { return max_local_; }
  uint64_t max_global_segment_size() const { return max_global_; }

  // Creates this rank's segment of `size` bytes (rounded up to whole
  // pages; 0: no segment) and maps every peer's. Collective, once. A size
  // above max_local_segment_size() is an error on that rank (naming the
  // size, the limit and why), and every rank's call then fails. The
  // exchange is job-wide, so on success `job_segments` (when not null)
  // holds every rank's segment, by job rank: the job-wide table is the
  // caller's (core/segment_table.h); this class keeps its peers' only.
  absl::Status AttachSegment(Bootstrap& bootstrap, size_t size,
                             std::vector<Segment>* job_segments = nullptr);
  bool attached() const { return attached_; }

  // A supernode peer's segment (after AttachSegment), in its owner's
  // addresses; empty for a rank that is not a peer.
  Segment segment(Rank r) const {
    const int32_t index = LocalIndex(r);
    return index < 0 || !attached_ ? Segment{} : peer_segments_[index];
  }
  // My own segment's address here.
  void* my_segment() const { return local_bases_[my_index_]; }

  // Where [address, address + len) of rank `r`'s segment (an address as
  // `r` sees it) is mapped in this process, for direct loads and stores;
  // null when `r` is not a supernode peer or the range is not inside its
  // segment.
  void* Translate(Rank r, uintptr_t address, size_t len) const {
    const int32_t index = LocalIndex(r);
    if (index < 0 || !attached_) return nullptr;
    const Segment& s = peer_segments_[index];
    if (address < s.base || len > s.size || address - s.base > s.size - len) {
      return nullptr;
    }
    return local_bases_[index] + (address - s.base);
  }

 private:
  Supernode() = default;

  // Creates object `serial` of `size` bytes, exchanges ids, maps the
  // peers' and removes the name. Collective.
  absl::Status ShareObjects(Bootstrap& bootstrap, uint32_t serial, size_t size,
                            std::vector<SharedObject>* mapped,
                            std::vector<uint64_t>* addresses,
                            std::vector<uint64_t>* sizes,
                            const std::function<void(void*)>& format,
                            absl::Status local);

  std::string job_prefix_;
  QueueConfig queue_config_;
  uint32_t my_index_ = 0;
  std::vector<Rank> members_;
  std::vector<int32_t> local_index_;           // By job rank.
  std::vector<SharedObject> net_objects_;      // By supernode index.
  std::vector<SharedObject> segment_objects_;  // By supernode index.
  std::unique_ptr<AmNetwork> network_;
  uint64_t page_size_ = 4096;  // From the segment limit inputs.
  uint64_t max_local_ = 0;
  uint64_t max_global_ = 0;
  std::string limit_reason_;
  bool attached_ = false;
  std::vector<Segment> peer_segments_;       // By supernode index.
  std::vector<unsigned char*> local_bases_;  // By supernode index.
};

}  // namespace gexrt::pshm

#endif  // GEX_PSHM_SUPERNODE_H_
