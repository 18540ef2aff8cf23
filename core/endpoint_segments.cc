#include "core/endpoint_segments.h"

#include <unistd.h>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/runtime.h"

namespace gexrt::core {
namespace {

// Serials of the shared objects holding created segments: past the
// supernode's own (pshm::SharedSerial, 0-3), one per segment of this rank.
constexpr uint32_t kFirstCreatedSerial = 1u << 16;
std::atomic<uint32_t> g_next_serial{kFirstCreatedSerial};

// One record of the exchange: a rank's endpoint and its segment.
struct Record {
  uint32_t ep_index;
  uint32_t flags;
  uint64_t base;
  uint64_t size;
  int64_t id;  // The shared object's id (SharedObject::id).
  uint32_t serial;
  uint32_t pad;
};
constexpr uint32_t kValid = 1;           // This slot names an endpoint.
constexpr uint32_t kShared = 2;          // In a shared object peers can map.
constexpr uint32_t kFailed = 4;          // Slot 0 only: this rank's arguments
                                         // were bad.
constexpr uint32_t kPrimordialDone = 8;  // Slot 0 only: this rank's
                                         // primordial endpoint has a
                                         // segment published (now or
                                         // before).

}  // namespace

void EndpointSegments::Set(uint32_t ep, Rank r, Rank size,
                           const rma::SegmentEntry& entry,
                           pshm::SharedObject mapping) {
  std::vector<Slot>& t = tables_[ep];
  if (t.size() < size) t.resize(size);
  t[r].entry = entry;
  t[r].published = true;
  t[r].mapping = std::move(mapping);
  std::vector<rma::SegmentEntry>& v = views_[ep];
  v.resize(size);
  v[r] = entry;
  spans_[ep] = rma::SegmentView(v);
}

absl::StatusOr<pshm::SharedObject> CreateSharedSegment(Runtime& rt, size_t size,
                                                       uint32_t* serial) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t rounded = (size + page - 1) / page * page;
  if (rounded < size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a segment of %u bytes is too large", size));
  }
  *serial = g_next_serial.fetch_add(1);
  return pshm::SharedObject::Create(
      pshm::ObjectName{rt.supernode->job_prefix(), rt.rank, *serial}, rounded);
}

absl::Status PublishSegments(Runtime& rt, absl::Span<const LocalSegment> mine,
                             bool local_error, bool* primordial,
                             const PublishGroup* group) {
  if (primordial != nullptr) *primordial = false;
  std::vector<Record> records(kMaxEndpoints, Record{});
  if (local_error || mine.size() > kMaxEndpoints) {
    records[0].flags = kFailed;
  } else {
    for (size_t i = 0; i < mine.size(); ++i) {
      const LocalSegment& s = mine[i];
      Record& rec = records[i];
      rec.ep_index = s.ep_index;
      rec.flags = kValid;
      rec.base = reinterpret_cast<uintptr_t>(s.base);
      rec.size = s.size;
      if (s.object != nullptr && s.size != 0) {
        rec.flags |= kShared;
        rec.id = s.object->id();
        rec.serial = s.serial;
      }
      if (s.ep_index == 0 && s.size != 0) records[0].flags |= kPrimordialDone;
    }
    if (rt.endpoint_segments.segment(0, rt.rank).size != 0) {
      records[0].flags |= kPrimordialDone;
    }
  }
  const size_t per_rank = kMaxEndpoints * sizeof(Record);
  // The participants (job ranks) in the order of their records.
  std::vector<Rank> members;
  if (group == nullptr) {
    members.resize(rt.size);
    for (Rank r = 0; r < rt.size; ++r) members[r] = r;
  } else {
    members = group->members;
  }
  std::vector<Record> all(size_t{kMaxEndpoints} * members.size());
  if (group == nullptr) {
    rt.bootstrap->Allgather(records.data(), per_rank, all.data());
  } else {
    group->allgather(records.data(), per_rank, all.data());
  }

  std::vector<std::string> failed;
  for (size_t m = 0; m < members.size(); ++m) {
    if ((all[m * kMaxEndpoints].flags & kFailed) != 0) {
      failed.push_back(std::to_string(members[m]));
    }
  }
  if (!failed.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rank(s) %s passed arguments that cannot be published (nothing was "
        "published)",
        absl::StrJoin(failed, ",")));
  }

  // Map the supernode peers' shared segments; record everyone's.
  absl::Status status = absl::OkStatus();
  bool any0 = false;
  // Every rank of the job has published its primordial segment: the
  // conduit can register them all (its AttachSegment is collective over
  // the job, so only a publication every rank takes part in decides it,
  // and every rank decides the same from the same records).
  bool all0 = members.size() == rt.size;
  for (size_t m = 0; m < members.size(); ++m) {
    if ((all[m * kMaxEndpoints].flags & kPrimordialDone) == 0) all0 = false;
  }
  for (size_t m = 0; m < members.size(); ++m) {
    const Rank r = members[m];
    for (uint32_t i = 0; i < kMaxEndpoints; ++i) {
      const Record& rec = all[m * kMaxEndpoints + i];
      if ((rec.flags & kValid) == 0) break;
      if (rec.ep_index >= kMaxEndpoints) continue;
      if (rec.ep_index == 0) any0 = true;
      if (rec.size == 0) continue;  // No segment: no credential.
      if (rec.ep_index == 0 && rt.endpoint_segments.published(0, r)) {
        // A primordial segment (never destroyed) published here before,
        // now again over another team: keep the mapping made then.
        const rma::SegmentEntry known = rt.endpoint_segments.segment(0, r);
        if (known.base == rec.base && known.size == rec.size) continue;
      }
      rma::SegmentEntry entry;
      entry.base = rec.base;
      entry.size = rec.size;
      pshm::SharedObject mapping = pshm::SharedObject::Empty();
      if (r == rt.rank) {
        entry.local = reinterpret_cast<unsigned char*>(rec.base);
      } else if ((rec.flags & kShared) != 0 &&
                 rt.supernode->LocalIndex(r) >= 0) {
        const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        const size_t rounded = (rec.size + page - 1) / page * page;
        absl::StatusOr<pshm::SharedObject> m = pshm::SharedObject::Map(
            pshm::ObjectName{rt.supernode->job_prefix(), r, rec.serial}, rec.id,
            rounded);
        if (m.ok()) {
          entry.local = static_cast<unsigned char*>(m->address());
          mapping = *std::move(m);
        } else if (status.ok()) {
          status = m.status();
        }
      }
      rt.endpoint_segments.Set(rec.ep_index, r, rt.size, entry,
                               std::move(mapping));
    }
  }
  // Every peer has mapped what it will: the names can go.
  if (group == nullptr) {
    rt.bootstrap->Barrier();
  } else {
    group->barrier();
  }
  // A primordial segment published over a team smaller than the job keeps
  // its name until a publication reaches every rank: a supernode peer
  // outside the team may still have to map it then (the launcher removes
  // names a job leaves behind).
  const bool whole_job = members.size() == rt.size;
  for (const LocalSegment& s : mine) {
    if (s.object != nullptr && (s.ep_index != 0 || whole_job)) {
      if (absl::Status n = s.object->RemoveName(); !n.ok() && status.ok()) {
        status = n;
      }
    }
  }

  // The conduit's segment attach: once, when every rank's primordial
  // endpoint has a segment published (with this publication, or over
  // teams before it). Collective over the job, so made in a publication
  // every rank of the job takes part in (the primordial team's, or a
  // team's with the same members).
  const bool attach0 = all0 && !rt.conduit_segments;
  if (attach0) {
    const rma::SegmentEntry own = rt.endpoint_segments.segment(0, rt.rank);
    if (absl::Status a = rt.conduit->AttachSegment(
            reinterpret_cast<void*>(own.base), own.size);
        !a.ok() && status.ok()) {
      status = a;
    }
    if (status.ok()) rt.conduit_segments = true;
  }

  if (group != nullptr) {
    // A team's: the conduit's PublishSegments hook is the job's (see
    // PublishGroup).
    if (!status.ok()) {
      return absl::Status(
          status.code(), absl::StrFormat("the %s conduit or PSHM: %s",
                                         rt.conduit->name(), status.message()));
    }
    if (primordial != nullptr) *primordial = any0;
    return absl::OkStatus();
  }

  // The rest go to the conduit's PublishSegments hook (collective too);
  // endpoint 0's, registered above or not (yet), are the attach's.
  std::vector<PublishedSegment> to_conduit;
  for (const LocalSegment& s : mine) {
    if (s.ep_index != 0) {
      to_conduit.push_back(PublishedSegment{s.ep_index, s.base, s.size});
    }
  }
  if (absl::Status p = rt.conduit->PublishSegments(to_conduit);
      !p.ok() && status.ok()) {
    status = p;
  }
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrFormat("the %s conduit or PSHM: %s",
                                        rt.conduit->name(), status.message()));
  }
  if (primordial != nullptr) *primordial = any0;
  return absl::OkStatus();
}

void RefreshPrimordialTable(Runtime& rt) {
  std::vector<rma::SegmentEntry> entries(rt.size);
  for (Rank r = 0; r < rt.size; ++r) {
    entries[r] = rt.endpoint_segments.segment(0, r);
  }
  rt.segments.Fill(std::move(entries));
}

}  // namespace gexrt::core
