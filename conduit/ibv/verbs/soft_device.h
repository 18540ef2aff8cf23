// The software device: the verbs interface (verbs.h) between processes of
// one host, for machines with no HCA. README.md describes its model; in
// short:
//
//   - One POSIX shared-memory object per job ("/gexsoft-<job_key>") is the
//     device. Each process that opens it gets a LID and an arena in it,
//     where its queue pairs' receive queues, its completion queues, SRQs,
//     async-event ring and registration table live, so that a peer can
//     deliver to them without the owner's help -- as an HCA does.
//   - Data moves with cross-memory attach (process_vm_writev/readv) into
//     the target's memory, only after the target's published registration
//     table has approved the key, access flags and bounds. The initiator
//     does all the work (no target progress needed, like real RDMA); the
//     initiator's own polling drives retries after RNR NAKs and timeouts.
//
// Its devices are named gexsoft0, gexsoft1, ... (SoftDeviceOptions::
// num_devices of them, one port each, one shared object each), so that
// multi-rail code has several HCAs to open.
#ifndef GEX_CONDUIT_IBV_VERBS_SOFT_DEVICE_H_
#define GEX_CONDUIT_IBV_VERBS_SOFT_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "conduit/ibv/verbs/verbs.h"

namespace gexrt::ibv::verbs {

inline constexpr char kSoftDevicePrefix[] = "gexsoft";
inline constexpr char kSoftDeviceName[] = "gexsoft0";  // the first
inline constexpr uint32_t kMaxSoftDevices = 8;

struct SoftDeviceOptions {
  // Names the device instance: every process of one job passes the same
  // key ([A-Za-z0-9_.-], at most 64 characters).
  std::string job_key;
  // How many devices the provider lists (1 .. kMaxSoftDevices).
  uint32_t num_devices = 1;
  // The most processes (contexts) that may open the device, and the shared
  // memory each gets for its queues (sparse: untouched pages cost nothing).
  uint32_t max_procs = 64;
  uint64_t arena_bytes = uint64_t{64} << 20;
  // The port's active MTU (256 .. 4096) and the QP inline limit.
  uint32_t mtu = 4096;
  uint32_t max_inline_data = 256;
  // The port's P_Key table, as this process sees it (a subnet manager sets
  // it on real ports): by default the default partition, full member.
  // QPs whose P_Keys do not match (PkeysMatch) cannot reach each other:
  // RC packets are dropped (the requester retries until its retry count
  // runs out), UD datagrams are discarded.
  std::vector<uint16_t> pkeys = {0xffff};
};

// A provider whose one device is the software device for `options.job_key`.
absl::StatusOr<std::unique_ptr<Provider>> MakeSoftProvider(
    const SoftDeviceOptions& options);

// The shared-memory object of device `index` for `job_key`
// ("/gexsoft<index>-<key>").
std::string SoftDeviceShmName(const std::string& job_key, uint32_t index = 0);

// Removes the shared-memory objects of every device of `job_key` (normally
// the last context to close a device removes its object; this is for a
// launcher cleaning up after a crash). OK when there were none.
absl::Status RemoveSoftDevice(const std::string& job_key);

}  // namespace gexrt::ibv::verbs

#endif  // GEX_CONDUIT_IBV_VERBS_SOFT_DEVICE_H_
