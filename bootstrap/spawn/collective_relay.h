// The launcher's half of the bootstrap collectives.
//
// Launcher processes form a tree: gasnetrun at the root, then (with the ssh
// spawner) one agent per host, and the ranks as leaves. Each rank sends its
// contribution to collective number `seq` up to its parent; every launcher
// process merges the contributions of its subtree and passes them up as one
// message once it has them all; the root computes the result and sends it
// down, each launcher forwarding to a child only what that child's ranks
// need. A CollectiveRelay is that logic for one launcher process, with the
// sockets left to its owner (so it is tested without any process).
//
// It never hangs: a collective that waits longer than `timeout` after its
// first contribution fails, naming the ranks that did not join and the
// GASNet call every rank is in (those that joined sent theirs with their
// contribution; those that did not are asked, through Outlet::ask_calls,
// and given `call_report_grace` to answer); a rank that
// has left the job fails every collective that needs it; ranks that
// disagree about the operation, size or root fail it too. A failure goes up
// to the root and from there down to every rank, which then ends with a
// fatal error carrying the reason.
#ifndef GEX_BOOTSTRAP_SPAWN_COLLECTIVE_RELAY_H_
#define GEX_BOOTSTRAP_SPAWN_COLLECTIVE_RELAY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/messages.h"

namespace gexrt::spawn {

class CollectiveRelay {
 public:
  struct Options {
    Rank job_size = 1;
    // children[c] = the job ranks reachable through child c (a rank itself,
    // or an agent's whole subtree). Disjoint.
    std::vector<std::vector<Rank>> children;
    // The root computes results; others pass merged contributions up.
    bool is_root = true;
    absl::Duration timeout = absl::Seconds(300);
    // Names a child in messages, e.g. "host n2" (ranks name themselves).
    std::function<std::string(size_t child)> describe_child;
    // How long a timed-out collective waits for the late ranks to say
    // which call they are in before it fails without their answers.
    absl::Duration call_report_grace = absl::Seconds(1);
  };
  // Where frames go; called synchronously from the On* methods.
  struct Outlet {
    std::function<void(size_t child, const std::string& frame)> to_child;
    std::function<void(const std::string& frame)> to_parent;
    // Asks the ranks below child `child` that have not joined collective
    // `seq` which call they are in (a signal to a rank, a CallQuery frame
    // to an agent); their CallReports come back through OnCallReport.
    // Optional: without it a timeout fails at once.
    std::function<void(size_t child, uint32_t seq)> ask_calls;
  };

  CollectiveRelay(Options options, Outlet outlet);

  // A contribution (possibly merged) from child `child`. An error is a
  // protocol violation by that child (a rank not below it, a duplicate):
  // the caller treats the child as broken.
  absl::Status OnUp(size_t child, wire::CollectiveUp up, absl::Time now);
  // A result from the parent: split among the children.
  void OnDown(const wire::CollectiveDown& down);
  // A failure: at the root, sent down to every child; elsewhere, from a
  // child it goes up, from the parent it goes down.
  void OnFailedFromChild(const wire::CollectiveFailed& failed);
  void OnFailedFromParent(const wire::CollectiveFailed& failed);
  // A rank's answer to ask_calls (from below): recorded, and passed up
  // toward the root (whichever node asked is on the way).
  void OnCallReport(const wire::CallReport& report);
  // The parent asks which call the ranks below that have not joined `seq`
  // are in: asks the children that hold them.
  void OnCallQuery(uint32_t seq);
  // Whether some collective has contributions waiting for others (its
  // ranks are blocked in the bootstrap and learn of a departed rank from
  // OnRankGone's failure).
  bool HasPending() const { return !pending_.empty(); }

  // Rank `rank` (below this node) is gone (exited, or left with Fini):
  // every collective that still needs it fails now, and so will every later
  // one it has not joined. Every node on the rank's path to the root is
  // told, since a node holds back a partial contribution until its subtree
  // is complete. `why` completes "rank 3 ...".
  void OnRankGone(Rank rank, const std::string& why);
  // Fails the collectives whose time is up.
  void OnTick(absl::Time now);
  // When OnTick next has something to do (InfiniteFuture when nothing is
  // pending).
  absl::Time NextDeadline() const;
  // Collectives waiting for contributions.
  size_t pending() const { return pending_.size(); }

 private:
  struct Pending {
    wire::CollectiveOp op;
    uint64_t len;
    Rank root;
    Rank first_rank;  // whose call set op/len/root, for mismatch messages
    absl::Time deadline;
    std::vector<std::string> data;  // by rank
    std::vector<std::string> call;  // by rank: the call it joined from
    std::vector<bool> have;         // by rank
    size_t count = 0;
    // Timed out: the late ranks were asked for their calls, and the
    // failure waits for their answers until report_deadline.
    bool asked = false;
    absl::Time report_deadline;
  };

  // Ranks of my subtree that have not contributed.
  std::vector<Rank> MissingRanks(const Pending& p) const;
  // Asks, through ask_calls, every child holding a rank in `ranks`.
  void AskCalls(uint32_t seq, const std::vector<Rank>& ranks);
  // The timeout's failure message: who did not join, and which calls
  // every rank is in.
  std::string TimeoutReason(uint32_t seq, const Pending& p) const;
  // Fails the timed-out collectives whose late ranks have all answered.
  void FailAnswered();
  void Fail(uint32_t seq, const std::string& reason);
  void Complete(uint32_t seq, Pending& p);
  void SendDown(const wire::CollectiveDown& down);
  absl::Status CheckShape(const Pending& p, const wire::CollectiveUp& up,
                          const wire::CollectiveEntry& e) const;

  Options options_;
  Outlet outlet_;
  std::vector<int> owner_;  // rank -> child index, -1 if not below me
  size_t subtree_size_ = 0;
  std::map<uint32_t, Pending> pending_;
  absl::flat_hash_set<uint32_t>
      failed_;  // seqs already failed: late parts are dropped
  std::vector<std::string> gone_;  // by rank: why it left, "" if present
  // By rank: its last answer to ask_calls (nullopt: none since asked).
  std::vector<std::optional<std::string>> reported_;
  size_t gone_count_ = 0;
};

}  // namespace gexrt::spawn

#endif  // GEX_BOOTSTRAP_SPAWN_COLLECTIVE_RELAY_H_
