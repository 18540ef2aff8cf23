#include "bootstrap/spawn/collective_relay.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gexrt::spawn {
namespace {

// "3", "3, 5-7": compact lists of ranks for messages.
std::string RankRanges(const std::vector<Rank>& ranks) {
  std::string out;
  size_t i = 0;
  while (i < ranks.size()) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += (i == j) ? absl::StrFormat("%d", ranks[i])
                    : absl::StrFormat("%d-%d", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string DescribeCall(wire::CollectiveOp op, uint64_t len, Rank root) {
  switch (op) {
    case wire::CollectiveOp::kBarrier:
      return "barrier";
    case wire::CollectiveOp::kBroadcast:
      return absl::StrFormat("broadcast of %d bytes from rank %d", len, root);
    default:
      return absl::StrFormat("%s of %d bytes", wire::CollectiveOpName(op), len);
  }
}

// " (from gex_Segment_Attach)", or "" when the call is unknown.
std::string FromCall(const std::string& call) {
  return call.empty() ? "" : absl::StrCat(" (from ", call, ")");
}

}  // namespace

CollectiveRelay::CollectiveRelay(Options options, Outlet outlet)
    : options_(std::move(options)),
      outlet_(std::move(outlet)),
      owner_(options_.job_size, -1),
      gone_(options_.job_size),
      reported_(options_.job_size) {
  for (size_t c = 0; c < options_.children.size(); ++c) {
    for (Rank r : options_.children[c]) {
      owner_[r] = static_cast<int>(c);
      ++subtree_size_;
    }
  }
}

absl::Status CollectiveRelay::CheckShape(const Pending& p,
                                         const wire::CollectiveUp& up,
                                         const wire::CollectiveEntry& e) const {
  if (up.op != p.op || up.len != p.len ||
      (p.op == wire::CollectiveOp::kBroadcast && up.root != p.root)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "ranks disagree about bootstrap collective #%d: rank %d called %s%s, "
        "rank %d called %s%s",
        up.seq, p.first_rank, DescribeCall(p.op, p.len, p.root),
        FromCall(p.call[p.first_rank]), e.rank,
        DescribeCall(up.op, up.len, up.root), FromCall(e.call)));
  }
  // The result travels as one frame: a size whose result could not, or
  // whose arithmetic would overflow, is refused before any is computed.
  const uint64_t per_rank_limit = wire::kMaxFrameBytes / options_.job_size;
  if ((p.op == wire::CollectiveOp::kAllgather ||
       p.op == wire::CollectiveOp::kAlltoall) &&
      p.len > per_rank_limit) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "rank %d called bootstrap %s #%d with %d bytes per rank: the result "
        "for %d ranks would exceed the control channel's %d-byte message "
        "limit",
        p.first_rank, wire::CollectiveOpName(p.op), up.seq, p.len,
        options_.job_size, wire::kMaxFrameBytes));
  }
  if (p.op == wire::CollectiveOp::kBroadcast && p.len > wire::kMaxFrameBytes) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "rank %d called bootstrap broadcast #%d with %d bytes, over the "
        "control channel's %d-byte message limit",
        p.first_rank, up.seq, p.len, wire::kMaxFrameBytes));
  }
  uint64_t want = 0;
  switch (p.op) {
    case wire::CollectiveOp::kBarrier:
      want = 0;
      break;
    case wire::CollectiveOp::kAllgather:
      want = p.len;
      break;
    case wire::CollectiveOp::kAlltoall:
      want = p.len * options_.job_size;
      break;
    case wire::CollectiveOp::kBroadcast:
      want = (e.rank == p.root) ? p.len : 0;
      break;
  }
  if (e.data.size() != want) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "rank %d sent %d bytes for bootstrap %s #%d, expected %d", e.rank,
        e.data.size(), wire::CollectiveOpName(p.op), up.seq, want));
  }
  return absl::OkStatus();
}

absl::Status CollectiveRelay::OnUp(size_t child, wire::CollectiveUp up,
                                   absl::Time now) {
  for (const wire::CollectiveEntry& e : up.entries) {
    if (e.rank >= options_.job_size ||
        owner_[e.rank] != static_cast<int>(child)) {
      return absl::DataLossError(absl::StrFormat(
          "a contribution to bootstrap collective #%d names rank %d, which "
          "is not below %s",
          up.seq, e.rank,
          options_.describe_child ? options_.describe_child(child)
                                  : absl::StrFormat("child %d", child)));
    }
  }
  if (up.entries.empty() || failed_.contains(up.seq)) return absl::OkStatus();
  if (up.op == wire::CollectiveOp::kBroadcast && up.root >= options_.job_size) {
    Fail(up.seq, absl::StrFormat("rank %d called bootstrap broadcast #%d "
                                 "with root %d, but the job has %d ranks",
                                 up.entries[0].rank, up.seq, up.root,
                                 options_.job_size));
    return absl::OkStatus();
  }

  auto [it, inserted] = pending_.try_emplace(up.seq);
  Pending& p = it->second;
  if (inserted) {
    p.op = up.op;
    p.len = up.len;
    p.root = up.root;
    p.first_rank = up.entries[0].rank;
    p.deadline = now + options_.timeout;
    p.data.resize(options_.job_size);
    p.call.resize(options_.job_size);
    p.have.assign(options_.job_size, false);
    p.call[p.first_rank] = up.entries[0].call;
  }
  for (wire::CollectiveEntry& e : up.entries) {
    if (p.have[e.rank]) {
      return absl::DataLossError(absl::StrFormat(
          "rank %d contributed twice to bootstrap collective #%d", e.rank,
          up.seq));
    }
    if (absl::Status s = CheckShape(p, up, e); !s.ok()) {
      Fail(up.seq, std::string(s.message()));
      return absl::OkStatus();
    }
    p.have[e.rank] = true;
    p.data[e.rank] = std::move(e.data);
    p.call[e.rank] = std::move(e.call);
    ++p.count;
  }
  if (gone_count_ > 0) {
    // A collective that needs a rank which has gone can never complete.
    for (Rank r = 0; r < options_.job_size; ++r) {
      if (!gone_[r].empty() && !p.have[r]) {
        Fail(up.seq, absl::StrFormat("rank %d %s before joining bootstrap "
                                     "%s #%d",
                                     r, gone_[r], wire::CollectiveOpName(p.op),
                                     up.seq));
        return absl::OkStatus();
      }
    }
  }
  if (p.count == subtree_size_) Complete(up.seq, p);
  return absl::OkStatus();
}

void CollectiveRelay::Complete(uint32_t seq, Pending& p) {
  if (!options_.is_root) {
    wire::CollectiveUp merged;
    merged.seq = seq;
    merged.op = p.op;
    merged.len = p.len;
    merged.root = p.root;
    for (Rank r = 0; r < options_.job_size; ++r) {
      if (p.have[r]) {
        merged.entries.push_back({r, std::move(p.data[r]), p.call[r]});
      }
    }
    pending_.erase(seq);
    outlet_.to_parent(wire::Encode(merged));
    return;
  }
  wire::CollectiveDown down;
  down.seq = seq;
  const Rank n = options_.job_size;
  switch (p.op) {
    case wire::CollectiveOp::kBarrier:
      break;
    case wire::CollectiveOp::kAllgather:
      down.data.reserve(p.len * n);
      for (Rank r = 0; r < n; ++r) down.data += p.data[r];
      break;
    case wire::CollectiveOp::kBroadcast:
      down.data = std::move(p.data[p.root]);
      break;
    case wire::CollectiveOp::kAlltoall:
      down.uniform = false;
      down.entries.resize(n);
      for (Rank j = 0; j < n; ++j) {
        down.entries[j].rank = j;
        down.entries[j].data.reserve(p.len * n);
        for (Rank i = 0; i < n; ++i) {
          down.entries[j].data.append(p.data[i], j * p.len, p.len);
        }
      }
      break;
  }
  pending_.erase(seq);
  SendDown(down);
}

void CollectiveRelay::SendDown(const wire::CollectiveDown& down) {
  if (down.uniform) {
    const std::string frame = wire::Encode(down);
    for (size_t c = 0; c < options_.children.size(); ++c) {
      outlet_.to_child(c, frame);
    }
    return;
  }
  std::vector<wire::CollectiveDown> parts(options_.children.size());
  for (wire::CollectiveDown& part : parts) {
    part.seq = down.seq;
    part.uniform = false;
  }
  for (const wire::CollectiveEntry& e : down.entries) {
    if (e.rank < owner_.size() && owner_[e.rank] >= 0) {
      parts[owner_[e.rank]].entries.push_back(e);
    }
  }
  for (size_t c = 0; c < parts.size(); ++c) {
    outlet_.to_child(c, wire::Encode(parts[c]));
  }
}

void CollectiveRelay::OnDown(const wire::CollectiveDown& down) {
  pending_.erase(down.seq);
  SendDown(down);
}

void CollectiveRelay::Fail(uint32_t seq, const std::string& reason) {
  pending_.erase(seq);
  if (!failed_.insert(seq).second) return;
  const std::string frame = wire::Encode(wire::CollectiveFailed{seq, reason});
  if (options_.is_root) {
    for (size_t c = 0; c < options_.children.size(); ++c) {
      outlet_.to_child(c, frame);
    }
  } else {
    // The root tells everyone (including this subtree) once it hears.
    failed_.erase(seq);
    outlet_.to_parent(frame);
  }
}

void CollectiveRelay::OnFailedFromChild(const wire::CollectiveFailed& failed) {
  Fail(failed.seq, failed.reason);
}

void CollectiveRelay::OnFailedFromParent(const wire::CollectiveFailed& failed) {
  pending_.erase(failed.seq);
  failed_.insert(failed.seq);
  const std::string frame = wire::Encode(failed);
  for (size_t c = 0; c < options_.children.size(); ++c) {
    outlet_.to_child(c, frame);
  }
}

void CollectiveRelay::OnRankGone(Rank rank, const std::string& why) {
  if (rank >= options_.job_size || owner_[rank] < 0) return;
  if (gone_[rank].empty()) ++gone_count_;
  gone_[rank] = why;
  std::vector<std::pair<uint32_t, std::string>> doomed;
  for (const auto& [seq, p] : pending_) {
    if (!p.have[rank]) {
      doomed.emplace_back(
          seq, absl::StrFormat("rank %d %s before joining bootstrap %s #%d",
                               rank, why, wire::CollectiveOpName(p.op), seq));
    }
  }
  for (const auto& [seq, reason] : doomed) Fail(seq, reason);
}

std::vector<Rank> CollectiveRelay::MissingRanks(const Pending& p) const {
  std::vector<Rank> missing;
  for (Rank r = 0; r < options_.job_size; ++r) {
    if (owner_[r] >= 0 && !p.have[r]) missing.push_back(r);
  }
  return missing;
}

void CollectiveRelay::AskCalls(uint32_t seq, const std::vector<Rank>& ranks) {
  std::vector<bool> asked(options_.children.size(), false);
  for (Rank r : ranks) {
    const int c = owner_[r];
    if (c < 0 || asked[c]) continue;
    asked[c] = true;
    outlet_.ask_calls(static_cast<size_t>(c), seq);
  }
}

std::string CollectiveRelay::TimeoutReason(uint32_t seq,
                                           const Pending& p) const {
  const std::vector<Rank> missing = MissingRanks(p);
  std::string reason = absl::StrFormat(
      "bootstrap %s #%d timed out after %s (GASNET_BOOTSTRAP_TIMEOUT): "
      "rank(s) %s did not join",
      wire::CollectiveOpName(p.op), seq, absl::FormatDuration(options_.timeout),
      RankRanges(missing));
  // Ranks grouped by what they are doing, in order of first appearance.
  std::vector<std::pair<std::string, std::vector<Rank>>> groups;
  auto add = [&](std::string what, Rank r) {
    for (auto& [w, ranks] : groups) {
      if (w == what) {
        ranks.push_back(r);
        return;
      }
    }
    groups.push_back({std::move(what), {r}});
  };
  for (Rank r = 0; r < options_.job_size; ++r) {
    if (owner_[r] < 0 || !p.have[r] || p.call[r].empty()) continue;
    add(absl::StrCat("joined it from ", p.call[r]), r);
  }
  for (Rank r : missing) {
    if (!reported_[r].has_value()) {
      add("did not say which call they are in", r);
    } else if (reported_[r]->empty()) {
      add("are in no GASNet call that waits for other ranks (computing?)", r);
    } else {
      add(absl::StrCat("are in ", *reported_[r]), r);
    }
  }
  for (const auto& [what, ranks] : groups) {
    absl::StrAppend(&reason, "; rank(s) ", RankRanges(ranks), " ", what);
  }
  return reason;
}

void CollectiveRelay::OnTick(absl::Time now) {
  std::vector<std::pair<uint32_t, std::string>> expired;
  for (auto& [seq, p] : pending_) {
    if (now < p.deadline) continue;
    if (!p.asked && outlet_.ask_calls) {
      // Before failing, ask the late ranks where they are: the message
      // then names both sides' calls.
      p.asked = true;
      p.report_deadline = now + options_.call_report_grace;
      const std::vector<Rank> missing = MissingRanks(p);
      for (Rank r : missing) reported_[r].reset();
      AskCalls(seq, missing);
      continue;
    }
    if (p.asked && now < p.report_deadline) continue;
    expired.emplace_back(seq, TimeoutReason(seq, p));
  }
  for (const auto& [seq, reason] : expired) Fail(seq, reason);
  FailAnswered();
}

void CollectiveRelay::FailAnswered() {
  std::vector<std::pair<uint32_t, std::string>> answered;
  for (const auto& [seq, p] : pending_) {
    if (!p.asked) continue;
    bool all = true;
    for (Rank r : MissingRanks(p)) all = all && reported_[r].has_value();
    if (all) answered.emplace_back(seq, TimeoutReason(seq, p));
  }
  for (const auto& [seq, reason] : answered) Fail(seq, reason);
}

void CollectiveRelay::OnCallReport(const wire::CallReport& report) {
  if (report.rank >= options_.job_size || owner_[report.rank] < 0) return;
  reported_[report.rank] = report.call;
  if (!options_.is_root) outlet_.to_parent(wire::Encode(report));
  FailAnswered();
}

void CollectiveRelay::OnCallQuery(uint32_t seq) {
  if (!outlet_.ask_calls) return;
  std::vector<Rank> ranks;
  const auto it = pending_.find(seq);
  for (Rank r = 0; r < options_.job_size; ++r) {
    if (owner_[r] < 0) continue;
    if (it == pending_.end() || !it->second.have[r]) ranks.push_back(r);
  }
  AskCalls(seq, ranks);
}

absl::Time CollectiveRelay::NextDeadline() const {
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [seq, p] : pending_) {
    next = std::min(next, p.asked ? p.report_deadline : p.deadline);
  }
  return next;
}

}  // namespace gexrt::spawn
