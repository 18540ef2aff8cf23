// Data-movement and computational collectives over a team
// (gex_Coll_BroadcastNB, gex_Coll_ReduceToOneNB, gex_Coll_ReduceToAllNB,
// and the barrier of sub-teams) as binomial trees over internal Medium
// Active Messages. One object per team: the job team's (id 0) and one per
// sub-team (api/team.h), each with its own sequence, so collectives on
// different teams never mix; every message carries the team's id. Ranks in
// the trees are team ranks, translated to job ranks only to send.
//
// Every call that has data (nbytes or dt_cnt not 0) takes the next number
// of this rank's collective sequence; every rank numbers the same calls
// the same way, and each message carries the full 32-bit number, so any
// number of collectives may be in flight and complete in any order, and a
// rank keeps what arrives for a collective it has not called yet.
//
// Broadcast: the tree is rooted at `root` (ranks relative to it); a rank
// forwards to its children once it holds all the data. Reductions: each
// rank combines its own operands with its children's results, lowest child
// first, and sends the result to its parent. A child's subtree is the next
// contiguous range of relative ranks, so with the tree rooted at rank 0 the
// operator is applied in rank order: GEX_OP_USER_NC reduces to rank 0 and
// rank 0 sends the result on to `root`; other operators reduce straight to
// `root`. ReduceToAll reduces to rank 0 and broadcasts from there.
// ceil(log2 N) rounds each way; payloads go in pieces of the largest
// Medium.
//
// What was received and what remains to send live in per-collective
// records from a free list (their buffers keep their capacity, up to
// kKeepBytes), and events come from a free list, so steady-state calls
// allocate nothing. A rank forwards or combines a payload once all of it
// has arrived: pieces are not pipelined through the tree (simpler, at a
// latency cost for payloads of many pieces). One mutex guards the records
// (handlers run on any thread in PAR). Sends run outside it (a send may
// poll, which runs handlers); combining runs under it (the user's operator
// may not call GASNet, so it cannot come back here).
#ifndef GEX_API_COLL_H_
#define GEX_API_COLL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "api/event.h"
#include "bootstrap/bootstrap.h"
#include "gasnetex.h"

namespace gexrt::api {

class Runtime;

class Collectives {
 public:
  enum class Kind : uint8_t { kBroadcast, kReduceToOne, kReduceToAll };

  // What one rank passed to a call, after the API's checks. For a
  // broadcast only root/dst/src/nbytes matter.
  struct Call {
    Kind kind = Kind::kBroadcast;
    Rank root = 0;
    void* dst = nullptr;
    const void* src = nullptr;
    size_t nbytes = 0;  // dt_sz * dt_cnt for a reduction; not 0.
    gex_DT_t dt = 0;
    size_t dt_sz = 0;
    size_t dt_cnt = 0;
    gex_OP_t op = 0;
    gex_Coll_ReduceFn_t user_op = nullptr;
    const void* user_cdata = nullptr;
    // A sub-team barrier: a ReduceToAll of one Barrier value held in the
    // record itself (src and dst are ignored); its outcome is the event's.
    bool barrier = false;
    int32_t barrier_value[3] = {};
  };

  Collectives() = default;
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;
  ~Collectives();

  // Registers the internal handler. Called once at init on every rank,
  // for the job team (id 0).
  void Init(Runtime* rt);
  // A sub-team's collectives (after the job team's Init): `members` are
  // job ranks in team order, `me` this rank's place. Also to reuse an
  // idle object for a new team.
  void InitTeam(Runtime* rt, uint32_t id, std::vector<Rank> members, Rank me);
  uint32_t id() const { return team_id_; }

  // The outcome of a barrier collective's event once done (then released):
  // true with *out set, or false.
  static bool FinishBarrier(gex_Event_t e, int32_t out[3]);

  // Starts this rank's part of the next collective (or of the collective
  // numbered `seq`, from Reserve); returns its event.
  gex_Event_t Start(const Call& call, int64_t seq = -1);
  // Takes the next number of the sequence for a collective started later
  // (gasnet_coll.h's synchronised steps): what arrives for it meanwhile is
  // kept, as for any collective not called yet.
  uint32_t Reserve();
  // Sends what can be sent, combines what has arrived, completes what is
  // complete. One atomic load when nothing is in flight.
  void Progress();

  // For the handler: `n` bytes at `offset` of a `total`-byte message of
  // collective `seq`. `tag`: kTagData, or kTagChild + k for the result of
  // this rank's child k.
  void Arrived(uint32_t seq, uint32_t tag, uint64_t offset, uint64_t total,
               const void* data, size_t n);

  static constexpr uint32_t kTagData = 0;
  static constexpr uint32_t kTagChild = 1;
  static constexpr unsigned kMaxChildren = 32;
  // A record's buffers keep at most this much memory between collectives.
  static constexpr size_t kKeepBytes = size_t{4} << 20;

 private:
  struct Event : gex_Event_opaque {
    Collectives* owner = nullptr;
    bool done = false;
    int32_t barrier_value[3] = {};
  };
  struct Record {
    uint32_t seq = 0;
    bool started = false;  // This rank has made the call.
    Call call;
    Rank tree_root = 0;   // Of the reduction.
    void* acc = nullptr;  // The running reduction (dst, src or scratch).
    std::vector<unsigned char> scratch;
    int32_t barrier_src[3] = {};
    int32_t barrier_dst[3] = {};
    // Children's results (reductions), and data that arrived before the
    // call (broadcast).
    std::vector<unsigned char> child[kMaxChildren];
    uint64_t child_got[kMaxChildren] = {};
    uint32_t children = 0;  // Reduction children still to combine (bits).
    std::vector<unsigned char> early;
    uint64_t data_got = 0;
    bool reduce_pending = false;   // To combine, then send up.
    bool data_pending = false;     // To receive (kTagData).
    bool forward_pending = false;  // To send down (or the result to root).
    unsigned sends = 0;            // Sends under way, outside the lock.
    Event* event = nullptr;
  };
  struct Send {
    Record* record;
    Rank peer;
    uint32_t tag;
    const void* data;
  };

  static bool TestEvent(gex_Event_opaque* e);
  // Under mu_.
  Record* Find(uint32_t seq);
  Record* NewRecord(uint32_t seq);
  size_t Advance(Send* sends, size_t max);
  size_t AdvanceOne(Record& r, Send* sends, size_t max);
  void Combine(Record& r, unsigned k);
  void Retire(Record& r);
  void SendAll(const Send& s);

  // The job rank of team rank `r`.
  Rank JobRank(Rank r) const { return members_.empty() ? r : members_[r]; }

  Runtime* rt_ = nullptr;
  uint8_t handler_index_ = 0;
  uint32_t team_id_ = 0;
  Rank me_ = 0;
  Rank size_ = 1;
  std::vector<Rank> members_;  // Empty: the job team (identity).
  std::mutex mu_;
  std::atomic<uint32_t> in_flight_{0};  // Records in active_.
  uint32_t next_seq_ = 0;
  std::vector<Record*> active_;
  std::vector<Record*> free_records_;
  std::vector<Event*> free_events_;
};

// The process's collectives (after CollInit).
void CollInit(Runtime& rt);
// The job team's collectives.
Collectives& JobColl();
// Where messages for sub-team `id` go (team.cc): its collectives, or null.
Collectives* FindTeamColl(uint32_t id);

}  // namespace gexrt::api

#endif  // GEX_API_COLL_H_
