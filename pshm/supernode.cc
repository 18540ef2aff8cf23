#include "pshm/supernode.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/host_id.h"

namespace gexrt::pshm {
namespace {

constexpr uint32_t kNetworkSerial =
    static_cast<uint32_t>(SharedSerial::kNetwork);
constexpr uint32_t kSegmentSerial =
    static_cast<uint32_t>(SharedSerial::kSegments);
constexpr size_t kPrefixBytes = 48;

// What each rank tells the others about one of its objects.
struct Shared {
  int32_t ok;
  uint32_t unused;
  int64_t id;
  uint64_t size;
  uint64_t address;
};

std::string FailedRanks(const std::vector<int32_t>& ok) {
  std::vector<std::string> failed;
  for (size_t r = 0; r < ok.size(); ++r) {
    if (!ok[r]) failed.push_back(absl::StrFormat("%u", r));
  }
  return absl::StrJoin(failed, ",");
}

}  // namespace

std::string MakeUpJobPrefix() {
  std::random_device random;  // The kernel's randomness (getrandom).
  const uint64_t bits = (static_cast<uint64_t>(random()) << 32) | random();
  return absl::StrFormat("%08x%x%016x", static_cast<uint32_t>(HostId()),
                         getpid(), bits);
}

std::string AgreeJobPrefix(Bootstrap& bootstrap) {
  char buffer[kPrefixBytes] = {};
  if (bootstrap.rank() == 0) {
    std::string prefix;
    if (const char* id = std::getenv("GEX_JOB_ID"); id != nullptr) {
      for (const char* p = id; *p != '\0'; ++p) {
        if (absl::ascii_isalnum(static_cast<unsigned char>(*p))) {
          prefix.push_back(*p);
        }
      }
    }
    if (prefix.empty()) prefix = MakeUpJobPrefix();
    prefix.resize(std::min(prefix.size(), kPrefixBytes - 1));
    std::memcpy(buffer, prefix.data(), prefix.size());
  }
  char agreed[kPrefixBytes];
  bootstrap.Broadcast(buffer, sizeof(buffer), agreed, 0);
  agreed[kPrefixBytes - 1] = '\0';
  return agreed;
}

absl::StatusOr<std::unique_ptr<Supernode>> Supernode::Create(
    Bootstrap& bootstrap, const NodeMap& map, const Options& options) {
  std::unique_ptr<Supernode> sn(new Supernode());
  sn->job_prefix_ = AgreeJobPrefix(bootstrap);
  for (Rank r : map.my_supernode_members()) sn->members_.push_back(r);
  sn->my_index_ = map.my_place().supernode_index;
  sn->local_index_.assign(map.size(), -1);
  for (size_t i = 0; i < sn->members_.size(); ++i) {
    sn->local_index_[sn->members_[i]] = static_cast<int32_t>(i);
  }

  // A bad setting on one rank must not leave the others waiting: it joins
  // the exchange with a zero-size contribution marked failed.
  absl::Status config_status = absl::OkStatus();
  if (options.queue.has_value()) {
    sn->queue_config_ = *options.queue;
    config_status = ValidateQueueConfig(sn->queue_config_);
  } else {
    absl::StatusOr<QueueConfig> config = QueueConfigFromEnv();
    if (config.ok()) {
      sn->queue_config_ = *config;
    } else {
      config_status = config.status();
    }
  }
  // GASNET_MAX_SEGSIZE too is checked before anything is created.
  absl::StatusOr<MaxSegSize> max_segsize = TryMaxSegSizeFromEnv();
  if (!max_segsize.ok() && config_status.ok()) {
    config_status = max_segsize.status();
  }
  const uint32_t peers = static_cast<uint32_t>(sn->members_.size());
  const size_t net_bytes =
      config_status.ok() ? AmNetwork::RegionBytes(sn->queue_config_, peers) : 0;
  std::vector<uint64_t> addresses, sizes;
  const Rank me = bootstrap.rank();
  absl::Status s = sn->ShareObjects(
      bootstrap, kNetworkSerial, net_bytes, &sn->net_objects_, &addresses,
      &sizes,
      [&](void* region) {
        AmNetwork::FormatRegion(region, sn->queue_config_, peers, me);
      },
      config_status);
  if (!s.ok()) return s;

  AmNetwork::Options net;
  net.my_index = sn->my_index_;
  net.ranks = sn->members_;
  for (const SharedObject& object : sn->net_objects_) {
    net.regions.push_back(object.address());
  }
  net.dispatcher = options.dispatcher;
  net.context = options.context;
  net.other_poll = options.other_poll;
  net.thread_safe = options.thread_safe;
  net.polite = map.MyHostIsOversubscribed();
  net.wait_policy = options.wait_policy;
  sn->network_ = std::make_unique<AmNetwork>(std::move(net));

  // Segment limits, now that the network's memory is taken.
  const SegmentLimitInputs limits = CurrentSegmentLimitInputs(
      static_cast<uint32_t>(map.my_host_members().size()), *max_segsize);
  sn->page_size_ = limits.page_size;
  sn->max_local_ = MaxLocalSegmentSize(limits);
  sn->limit_reason_ = DescribeSegmentLimit(limits);
  std::vector<uint64_t> all(map.size());
  bootstrap.Allgather(&sn->max_local_, sizeof(uint64_t), all.data());
  sn->max_global_ = *std::min_element(all.begin(), all.end());
  return sn;
}

Supernode::~Supernode() {
  network_.reset();
  segment_objects_.clear();
  net_objects_.clear();
}

absl::Status Supernode::AttachSegment(Bootstrap& bootstrap, size_t size,
                                      std::vector<Segment>* job_segments) {
  if (attached_) {
    return absl::FailedPreconditionError(
        "the PSHM segment is already attached");
  }
  const uint64_t page = page_size_;
  const uint64_t rounded = (size + page - 1) / page * page;
  absl::Status local = absl::OkStatus();
  if (size > max_local_ || rounded > max_local_) {
    local = absl::ResourceExhaustedError(absl::StrFormat(
        "a segment of %u bytes was requested, but this rank may attach at "
        "most %u bytes (%s)",
        size, max_local_, limit_reason_));
  }
  std::vector<uint64_t> addresses, sizes;
  absl::Status s = ShareObjects(
      bootstrap, kSegmentSerial, local.ok() ? rounded : 0, &segment_objects_,
      &addresses, &sizes, [](void*) {}, local);
  if (!s.ok()) return s;
  local_bases_.assign(members_.size(), nullptr);
  for (size_t i = 0; i < members_.size(); ++i) {
    local_bases_[i] =
        static_cast<unsigned char*>(segment_objects_[i].address());
  }
  peer_segments_.assign(members_.size(), Segment{});
  for (size_t i = 0; i < members_.size(); ++i) {
    peer_segments_[i] = Segment{static_cast<uintptr_t>(addresses[members_[i]]),
                                static_cast<size_t>(sizes[members_[i]])};
  }
  if (job_segments != nullptr) {
    job_segments->assign(addresses.size(), Segment{});
    for (size_t r = 0; r < addresses.size(); ++r) {
      (*job_segments)[r] = Segment{static_cast<uintptr_t>(addresses[r]),
                                   static_cast<size_t>(sizes[r])};
    }
  }
  attached_ = true;
  return absl::OkStatus();
}

absl::StatusOr<SharedObject> ShareWithSupernode(Bootstrap& bootstrap,
                                                const Supernode& supernode,
                                                SharedSerial serial,
                                                size_t bytes) {
  const Rank first = supernode.members()[0];
  const ObjectName name{supernode.job_prefix(), first,
                        static_cast<uint32_t>(serial)};
  const bool creator = supernode.my_index() == 0;
  SharedObject object = SharedObject::Empty();
  absl::Status status;
  // Per rank: {created (creator only), the object's id}.
  int64_t mine[2] = {0, 0};
  if (creator) {
    absl::StatusOr<SharedObject> created = SharedObject::Create(name, bytes);
    if (created.ok()) {
      object = *std::move(created);
      mine[0] = 1;
      mine[1] = object.id();
    } else {
      status = created.status();
    }
  }
  std::vector<int64_t> all(2 * size_t{bootstrap.size()});
  bootstrap.Allgather(mine, sizeof mine, all.data());
  if (!creator && all[2 * size_t{first}] != 0) {
    absl::StatusOr<SharedObject> mapped =
        SharedObject::Map(name, all[2 * size_t{first} + 1], bytes);
    if (mapped.ok()) {
      object = *std::move(mapped);
    } else {
      status = mapped.status();
    }
  } else if (!creator) {
    status = absl::FailedPreconditionError(absl::StrFormat(
        "rank %u could not create the supernode's shared object %u", first,
        static_cast<uint32_t>(serial)));
  }
  bootstrap.Barrier();  // Everyone has mapped it: the name can go.
  if (creator && status.ok()) status = object.RemoveName();
  if (!status.ok()) return status;
  return object;
}

absl::Status Supernode::ShareObjects(Bootstrap& bootstrap, uint32_t serial,
                                     size_t size,
                                     std::vector<SharedObject>* mapped,
                                     std::vector<uint64_t>* addresses,
                                     std::vector<uint64_t>* sizes,
                                     const std::function<void(void*)>& format,
                                     absl::Status local) {
  const Rank me = bootstrap.rank();
  const Rank ranks = bootstrap.size();
  std::optional<SharedObject> mine;
  Shared entry{};
  if (local.ok() && size > 0) {
    absl::StatusOr<SharedObject> created =
        SharedObject::Create(ObjectName{job_prefix_, me, serial}, size);
    if (created.ok()) {
      mine.emplace(std::move(*created));
      format(mine->address());
    } else {
      local = created.status();
    }
  }
  entry.ok = local.ok() ? 1 : 0;
  if (mine.has_value()) {
    entry.id = mine->id();
    entry.size = mine->size();
    entry.address = reinterpret_cast<uintptr_t>(mine->address());
  }
  std::vector<Shared> all(ranks);
  bootstrap.Allgather(&entry, sizeof(entry), all.data());
  std::vector<int32_t> ok(ranks);
  for (Rank r = 0; r < ranks; ++r) ok[r] = all[r].ok;
  auto fail = [&](std::string_view what) -> absl::Status {
    if (!local.ok()) return local;
    return absl::AbortedError(
        absl::StrFormat("PSHM: rank(s) %s could not %s (see their messages)",
                        FailedRanks(ok), what));
  };
  if (!local.ok() || FailedRanks(ok) != "") {
    return fail("create their shared memory objects");
  }

  // Map every peer's object (after my own, which is mapped already).
  std::vector<std::optional<SharedObject>> peers(members_.size());
  for (size_t i = 0; i < members_.size() && local.ok(); ++i) {
    const Rank r = members_[i];
    if (r == me || all[r].size == 0) continue;
    absl::StatusOr<SharedObject> peer = SharedObject::Map(
        ObjectName{job_prefix_, r, serial}, all[r].id, all[r].size);
    if (peer.ok()) {
      peers[i].emplace(std::move(*peer));
    } else {
      local = peer.status();
    }
  }
  int32_t mapped_ok = local.ok() ? 1 : 0;
  bootstrap.Allgather(&mapped_ok, sizeof(mapped_ok), ok.data());
  // Every peer has mapped my object (or given up): the name can go.
  if (mine.has_value()) {
    if (absl::Status s = mine->RemoveName(); !s.ok() && local.ok()) {
      local = s;
    }
  }
  if (!local.ok() || FailedRanks(ok) != "") {
    return fail("map their peers' shared memory objects");
  }

  mapped->clear();
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i] == me) {
      if (mine.has_value()) {
        mapped->push_back(std::move(*mine));
      } else {
        mapped->push_back(SharedObject::Empty());
      }
    } else if (peers[i].has_value()) {
      mapped->push_back(std::move(*peers[i]));
    } else {
      mapped->push_back(SharedObject::Empty());
    }
  }
  addresses->assign(ranks, 0);
  sizes->assign(ranks, 0);
  for (Rank r = 0; r < ranks; ++r) {
    (*addresses)[r] = all[r].address;
    (*sizes)[r] = all[r].size;
  }
  return absl::OkStatus();
}

}  // namespace gexrt::pshm
