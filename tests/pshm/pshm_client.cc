// A job of the PSHM layer, one process per rank, started by gasnetrun_smp
// in pshm_job_test. Each mode exercises one behaviour and prints what the
// test checks; a failed check is a fatal error (rank-prefixed, ends the
// job), so a job that exits 0 has passed every check below.
//
//   segments SIZE [BIGRANK]
//       Attaches SIZE + 1000*rank bytes (SIZE "max": every rank attaches
//       max_local_segment_size()); checks each segment starts zeroed; every
//       rank writes a pattern (writer, owner, offset) into its own slice of
//       EVERY supernode peer's segment through Translate; after a barrier
//       each rank checks its own segment (my_segment()) and every peer's
//       (through Translate), and Translate's bounds. Rank 0 then counts the
//       job's shared objects that still exist (pshm::ListJobObjects: named
//       objects for posix/file, attached segments for sysv). With BIGRANK,
//       that rank asks for 1T instead (every rank's attach must fail).
//       Prints "rank R: segments ok prefix=P mechanism=M peers=K
//       outsiders=O size=S max_local=L" (O: job ranks outside my supernode,
//       checked to translate to nothing) and, on rank 0, "rank 0:
//       objects=N".
//   flood COUNT SIZE
//       Three phases (Medium, Long, Short), each: every rank sends COUNT
//       requests to every supernode peer (itself too) while polling; args
//       carry (sender, sequence number, phase, pattern words); Medium and
//       Long payloads are up to SIZE bytes of a pattern; receivers check
//       that each sender's messages arrive once, in order, intact, and
//       answer some with replies (every Long: the reply returns the
//       sender's credit for that destination area). Prints per phase
//       "rank R: flood PHASE ok sent=S received=V replies=P" and then
//       "rank R: flood ok prefix=P mechanism=M waits=W".
//   backpressure COUNT SIZE
//       The same (for GASNET_PSHMNET_QUEUE_DEPTH=1 and the minimum
//       GASNET_PSHMNET_QUEUE_MEMORY); the final line says "backpressure ok".
//   immediate
//       Every rank in turn sends immediate requests to each peer (itself
//       too) while every other rank sits in a bootstrap barrier: first a
//       reserved-then-cancelled slot, then 3-argument Shorts until
//       kWouldBlock (prints "rank R: immediate shorts to rank D: K"), then
//       full-size Mediums round-robin until the first kWouldBlock. After the
//       barrier the count of messages sent is broadcast and every receiver
//       polls until each one has arrived exactly once, in order, intact.
//       Prints "rank R: immediate ok".
//   spin
//       Starts up, attaches a small segment, then (DIR/ready written by rank
//       0 after a barrier) polls and sends immediate Shorts forever: for a
//       test to kill a rank or the launcher.
//   die-at-startup
//       Rank 1 creates its network object itself (SharedObject::Create with
//       the job's names) and never removes the name, prints "rank 1:
//       created PATH", writes DIR/created, waits (bounded) for DIR/go and
//       raises SIGKILL. The other ranks call Supernode::Create, which waits
//       in the bootstrap for rank 1 forever. Only the launcher's clean-up
//       can remove what is left.
//
// Options before the mode:
//   --pids DIR   every rank writes DIR/<rank>.pid first; after a barrier
//                rank 0 writes DIR/job_id (its GEX_JOB_ID).
//
// When Supernode::Create or AttachSegment returns an error, the rank prints
// "rank R: <call> failed: <status>" to stderr and exits with 1.
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/env/parse.h"
#include "base/fatal.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/create_bootstrap.h"
#include "bootstrap/node_map.h"
#include "pshm/am_network.h"
#include "pshm/queue_layout.h"
#include "pshm/shared_object.h"
#include "pshm/supernode.h"

namespace {

namespace pshm = gexrt::pshm;
using gexrt::Bootstrap;
using gexrt::Rank;
using pshm::Category;
using pshm::Channel;
using pshm::SendStatus;

// Handler numbers (the dispatcher switches on them).
constexpr uint8_t kFloodRequest = 1;
constexpr uint8_t kFloodReply = 2;
constexpr uint8_t kImmediateRequest = 3;
constexpr uint8_t kSpinRequest = 4;

enum Phase : uint32_t { kMediumPhase = 0, kLongPhase = 1, kShortPhase = 2 };
const char* PhaseName(uint32_t phase) {
  switch (phase) {
    case kMediumPhase:
      return "medium";
    case kLongPhase:
      return "long";
    default:
      return "short";
  }
}

// Long payload areas per (sender, receiver): a sender may have this many
// Longs to one receiver not yet answered.
constexpr uint32_t kLongAreas = 4;
constexpr size_t kReplyPayload = 24;

#define CHECK_OR_DIE(cond, ...)                                      \
  do {                                                               \
    if (!(cond)) {                                                   \
      gexrt::FatalError(absl::StrCat("check failed: " #cond ": ",    \
                                     absl::StrFormat(__VA_ARGS__))); \
    }                                                                \
  } while (0)

// --- patterns -------------------------------------------------------------

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t Seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return Mix(Mix(Mix(Mix(a) ^ b) ^ c) ^ d);
}
uint64_t Word(uint64_t seed, uint64_t i) { return Mix(seed ^ Mix(i)); }

// Fills [dst, dst+len) with the pattern `seed`, word `first_word` first.
void Fill(void* dst, size_t len, uint64_t seed, uint64_t first_word = 0) {
  auto* p = static_cast<unsigned char*>(dst);
  const size_t words = len / 8;
  for (size_t i = 0; i < words; ++i) {
    const uint64_t w = Word(seed, first_word + i);
    std::memcpy(p + 8 * i, &w, 8);
  }
  if (len % 8 != 0) {
    const uint64_t w = Word(seed, first_word + words);
    std::memcpy(p + 8 * words, &w, len % 8);
  }
}

// The offset of the first byte that differs from the pattern, or `len`.
size_t FirstMismatch(const void* src, size_t len, uint64_t seed,
                     uint64_t first_word = 0) {
  const auto* p = static_cast<const unsigned char*>(src);
  const size_t words = len / 8;
  for (size_t i = 0; i < words; ++i) {
    const uint64_t w = Word(seed, first_word + i);
    if (std::memcmp(p + 8 * i, &w, 8) != 0) {
      for (size_t b = 0; b < 8; ++b) {
        if (p[8 * i + b] != reinterpret_cast<const unsigned char*>(&w)[b]) {
          return 8 * i + b;
        }
      }
    }
  }
  if (len % 8 != 0) {
    const uint64_t w = Word(seed, first_word + words);
    for (size_t b = 0; b < len % 8; ++b) {
      if (p[8 * words + b] != reinterpret_cast<const unsigned char*>(&w)[b]) {
        return 8 * words + b;
      }
    }
  }
  return len;
}

uint32_t ArgWord(uint32_t sender, uint32_t dest, uint32_t seq, uint32_t i) {
  return static_cast<uint32_t>(
      Seed(0xa5, sender, dest, uint64_t{seq} << 8 | i));
}

// --- message shapes, a function of (phase, seq) so receivers can check ----

// Medium and Long payload lengths: full size, empty, about half, and a
// spread of others.
size_t PayloadLen(uint32_t seq, size_t max) {
  switch (seq % 4) {
    case 0:
      return max;
    case 1:
      return 0;
    case 2:
      return max / 2 + 1 > max ? max : max / 2 + 1;
    default:
      return (uint64_t{seq} * 7919) % (max + 1);
  }
}

uint8_t NumArgs(uint32_t phase, uint32_t seq) {
  if (phase == kShortPhase && seq % 2 == 0) return pshm::kMaxArgs;
  return static_cast<uint8_t>(3 + seq % (pshm::kMaxArgs - 2));  // 3..16
}

bool WantsReply(uint32_t phase, uint32_t seq) {
  switch (phase) {
    case kMediumPhase:
      return seq % 3 == 0;
    case kLongPhase:
      return true;  // The reply gives the area back.
    default:
      return seq % 2 == 0;
  }
}

uint32_t ExpectedReplies(uint32_t phase, uint32_t count) {
  uint32_t n = 0;
  for (uint32_t seq = 0; seq < count; ++seq) n += WantsReply(phase, seq);
  return n;
}

Category PhaseCategory(uint32_t phase) {
  switch (phase) {
    case kMediumPhase:
      return Category::kMedium;
    case kLongPhase:
      return Category::kLong;
    default:
      return Category::kShort;
  }
}

// --- process state ----------------------------------------------------------

struct State {
  Bootstrap* b = nullptr;
  pshm::Supernode* sn = nullptr;
  // Every rank's segment, as AttachSegment reported them.
  std::vector<pshm::Supernode::Segment> job_segments;
  Rank me = 0;
  Rank n = 0;

  // Flood.
  uint32_t phase = 0;
  uint32_t count = 0;
  size_t size = 0;
  size_t area_bytes = 0;
  std::vector<uint32_t> next_seq;       // By sender rank.
  std::vector<uint32_t> replies;        // By replier rank.
  std::vector<int64_t> last_reply_seq;  // By replier rank.
  uint64_t received = 0;
  uint64_t replies_total = 0;

  // Immediate.
  uint32_t step = 0;
  std::vector<uint32_t> immediate_next;  // By sender rank.

  // Spin.
  uint64_t spin_received = 0;
};

State g;

pshm::AmNetwork& Net() { return g.sn->network(); }

size_t LongOffset(uint32_t sender_index, uint32_t seq) {
  return (size_t{sender_index} * kLongAreas + seq % kLongAreas) * g.area_bytes;
}

void SendReply(const pshm::Message& m, uint32_t seq) {
  const uint32_t args[4] = {g.me, seq, g.phase,
                            ArgWord(g.me, m.source, seq, 99)};
  unsigned char payload[kReplyPayload];
  const bool medium = g.phase == kMediumPhase;
  if (medium) Fill(payload, sizeof payload, Seed(0x4e, g.me, m.source, seq));
  const SendStatus s =
      Net().SendReply(*m.reply, medium ? Category::kMedium : Category::kShort,
                      kFloodReply, args, 4, medium ? payload : nullptr,
                      medium ? sizeof payload : 0, nullptr, 0,
                      /*immediate=*/false);
  CHECK_OR_DIE(s == SendStatus::kOk, "blocking reply send returned %d",
               static_cast<int>(s));
}

void OnFloodRequest(const pshm::Message& m) {
  CHECK_OR_DIE(m.channel == Channel::kRequest, "flood request on channel %d",
               static_cast<int>(m.channel));
  CHECK_OR_DIE(m.source < g.n, "source %u", m.source);
  CHECK_OR_DIE(
      g.sn->LocalIndex(m.source) == static_cast<int32_t>(m.source_index),
      "source %u arrived with index %u, its index is %d", m.source,
      m.source_index, g.sn->LocalIndex(m.source));
  CHECK_OR_DIE(m.nargs >= 3, "%u args", m.nargs);
  const uint32_t seq = m.args[1];
  CHECK_OR_DIE(m.args[0] == m.source, "args[0]=%u from rank %u", m.args[0],
               m.source);
  CHECK_OR_DIE(m.args[2] == g.phase, "phase %u during phase %u", m.args[2],
               g.phase);
  CHECK_OR_DIE(seq == g.next_seq[m.source],
               "from rank %u: sequence %u arrived, expected %u (phase %s)",
               m.source, seq, g.next_seq[m.source], PhaseName(g.phase));
  CHECK_OR_DIE(seq < g.count, "sequence %u of %u", seq, g.count);
  ++g.next_seq[m.source];
  ++g.received;
  CHECK_OR_DIE(m.category == PhaseCategory(g.phase), "category %d in phase %s",
               static_cast<int>(m.category), PhaseName(g.phase));
  CHECK_OR_DIE(m.nargs == NumArgs(g.phase, seq), "seq %u: %u args, sent %u",
               seq, m.nargs, NumArgs(g.phase, seq));
  for (uint32_t i = 3; i < m.nargs; ++i) {
    CHECK_OR_DIE(m.args[i] == ArgWord(m.source, g.me, seq, i),
                 "from rank %u seq %u: arg %u is %u", m.source, seq, i,
                 m.args[i]);
  }
  const uint64_t seed = Seed(g.phase, m.source, g.me, seq);
  switch (g.phase) {
    case kMediumPhase: {
      const size_t len = PayloadLen(seq, g.size);
      CHECK_OR_DIE(m.payload_len == len,
                   "from rank %u seq %u: %u bytes, sent %u", m.source, seq,
                   m.payload_len, len);
      const size_t bad = FirstMismatch(m.payload, len, seed);
      CHECK_OR_DIE(bad == len,
                   "from rank %u seq %u: Medium payload byte %u of %u wrong",
                   m.source, seq, bad, len);
      break;
    }
    case kLongPhase: {
      const size_t len = PayloadLen(seq, g.size);
      CHECK_OR_DIE(m.payload_len == len,
                   "from rank %u seq %u: %u bytes, sent %u", m.source, seq,
                   m.payload_len, len);
      void* want = static_cast<unsigned char*>(g.sn->my_segment()) +
                   LongOffset(m.source_index, seq);
      CHECK_OR_DIE(m.payload == want,
                   "from rank %u seq %u: Long payload at %p, sent to %p",
                   m.source, seq, m.payload, want);
      const size_t bad = FirstMismatch(m.payload, len, seed);
      CHECK_OR_DIE(bad == len,
                   "from rank %u seq %u: Long payload byte %u of %u wrong",
                   m.source, seq, bad, len);
      break;
    }
    default:
      CHECK_OR_DIE(m.payload_len == 0, "Short with %u payload bytes",
                   m.payload_len);
  }
  if (WantsReply(g.phase, seq)) SendReply(m, seq);
}

void OnFloodReply(const pshm::Message& m) {
  CHECK_OR_DIE(m.channel == Channel::kReply, "reply on channel %d",
               static_cast<int>(m.channel));
  CHECK_OR_DIE(m.nargs == 4, "reply with %u args", m.nargs);
  const uint32_t seq = m.args[1];
  CHECK_OR_DIE(m.args[0] == m.source, "reply args[0]=%u from rank %u",
               m.args[0], m.source);
  CHECK_OR_DIE(m.args[2] == g.phase, "reply of phase %u in phase %u", m.args[2],
               g.phase);
  CHECK_OR_DIE(m.args[3] == ArgWord(m.source, g.me, seq, 99),
               "reply from rank %u seq %u: arg 3 wrong", m.source, seq);
  CHECK_OR_DIE(seq < g.count && WantsReply(g.phase, seq),
               "reply from rank %u to seq %u, which wants none", m.source, seq);
  CHECK_OR_DIE(static_cast<int64_t>(seq) > g.last_reply_seq[m.source],
               "reply from rank %u to seq %u after seq %d (duplicate or out "
               "of order)",
               m.source, seq, g.last_reply_seq[m.source]);
  g.last_reply_seq[m.source] = seq;
  if (g.phase == kMediumPhase) {
    CHECK_OR_DIE(
        m.category == Category::kMedium && m.payload_len == kReplyPayload,
        "Medium reply of %u bytes", m.payload_len);
    const size_t bad = FirstMismatch(m.payload, kReplyPayload,
                                     Seed(0x4e, m.source, g.me, seq));
    CHECK_OR_DIE(bad == kReplyPayload, "reply from rank %u seq %u: byte %u",
                 m.source, seq, bad);
  } else {
    CHECK_OR_DIE(m.category == Category::kShort, "reply category %d",
                 static_cast<int>(m.category));
  }
  ++g.replies[m.source];
  ++g.replies_total;
}

void OnImmediateRequest(const pshm::Message& m) {
  CHECK_OR_DIE(m.channel == Channel::kRequest && m.nargs == 3,
               "immediate message with %u args", m.nargs);
  const uint32_t seq = m.args[1];
  CHECK_OR_DIE(m.args[0] == m.source && m.args[2] == g.step,
               "immediate message args %u,%u,%u from rank %u in step %u",
               m.args[0], m.args[1], m.args[2], m.source, g.step);
  CHECK_OR_DIE(seq == g.immediate_next[m.source],
               "immediate from rank %u: seq %u arrived, expected %u (a lost, "
               "repeated or cancelled message)",
               m.source, seq, g.immediate_next[m.source]);
  ++g.immediate_next[m.source];
  if (g.step == 1) {
    CHECK_OR_DIE(m.category == Category::kShort, "step 1 category %d",
                 static_cast<int>(m.category));
  } else {
    CHECK_OR_DIE(
        m.category == Category::kMedium && m.payload_len == pshm::kMaxMedium,
        "step 2: category %d, %u bytes", static_cast<int>(m.category),
        m.payload_len);
    const size_t bad = FirstMismatch(m.payload, m.payload_len,
                                     Seed(0x1d, m.source, g.me, seq));
    CHECK_OR_DIE(bad == m.payload_len, "immediate Medium seq %u byte %u", seq,
                 bad);
  }
}

void Dispatch(void*, const pshm::Message& m) {
  switch (m.handler) {
    case kFloodRequest:
      OnFloodRequest(m);
      break;
    case kFloodReply:
      OnFloodReply(m);
      break;
    case kImmediateRequest:
      OnImmediateRequest(m);
      break;
    case kSpinRequest:
      ++g.spin_received;
      break;
    default:
      gexrt::FatalErrorF("unknown handler %u from rank %u", m.handler,
                         m.source);
  }
}

// Polls once; yields the CPU when nothing arrived (ranks outnumber cores).
void PollOnce() {
  if (Net().Poll() == 0) sched_yield();
}

void PrintLine(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::string Identity() {
  return absl::StrFormat("prefix=%s mechanism=%s", g.sn->job_prefix(),
                         pshm::MechanismName());
}

// --- modes ----------------------------------------------------------------

[[noreturn]] void Fail(const std::string& call, const absl::Status& s) {
  std::fprintf(stderr, "rank %u: %s failed: %s\n", g.me, call.c_str(),
               s.ToString().c_str());
  std::fflush(stderr);
  g.b->Fini();
  std::exit(1);
}

std::unique_ptr<pshm::Supernode> StartUp(const gexrt::NodeMap& map) {
  pshm::Supernode::Options options;
  options.dispatcher = &Dispatch;
  auto sn = pshm::Supernode::Create(*g.b, map, options);
  if (!sn.ok()) Fail("Supernode::Create", sn.status());
  return std::move(*sn);
}

void Attach(size_t size) {
  if (absl::Status s = g.sn->AttachSegment(*g.b, size, &g.job_segments);
      !s.ok()) {
    Fail(absl::StrFormat("AttachSegment(%u)", size), s);
  }
  CHECK_OR_DIE(g.sn->attached(), "attached() after AttachSegment");
}

size_t ParseSizeArg(const std::string& text) {
  auto v = gexrt::env::ParseSize(text, gexrt::env::SizeUnit::kBytes);
  if (!v.ok())
    gexrt::FatalErrorF("bad size %s: %s", text, v.status().message());
  return static_cast<size_t>(*v);
}

void CheckTranslateBounds(Rank r) {
  const pshm::Supernode::Segment s = g.sn->segment(r);
  CHECK_OR_DIE(g.sn->Translate(r, s.base, s.size) != nullptr,
               "rank %u: whole segment", r);
  CHECK_OR_DIE(g.sn->Translate(r, s.base + s.size - 1, 1) != nullptr,
               "rank %u: last byte", r);
  CHECK_OR_DIE(
      static_cast<unsigned char*>(g.sn->Translate(r, s.base + s.size - 1, 1)) ==
          static_cast<unsigned char*>(g.sn->Translate(r, s.base, 1)) + s.size -
              1,
      "rank %u: last byte not at base + size - 1", r);
  CHECK_OR_DIE(g.sn->Translate(r, s.base - 1, 1) == nullptr,
               "rank %u: byte before the segment", r);
  CHECK_OR_DIE(g.sn->Translate(r, s.base - 1, 2) == nullptr,
               "rank %u: range starting before the segment", r);
  CHECK_OR_DIE(g.sn->Translate(r, s.base + s.size, 1) == nullptr,
               "rank %u: byte after the segment", r);
  CHECK_OR_DIE(g.sn->Translate(r, s.base, s.size + 1) == nullptr,
               "rank %u: one byte too long", r);
  CHECK_OR_DIE(g.sn->Translate(r, s.base + s.size - 1, 2) == nullptr,
               "rank %u: range crossing the end", r);
  CHECK_OR_DIE(g.sn->Translate(r, s.base + 1, SIZE_MAX) == nullptr,
               "rank %u: huge length", r);
  CHECK_OR_DIE(g.sn->Translate(r, UINTPTR_MAX, 2) == nullptr,
               "rank %u: address at the top of memory", r);
  CHECK_OR_DIE(g.sn->Translate(r, 0, 1) == nullptr, "rank %u: address 0", r);
}

int Segments(const std::vector<std::string>& args) {
  CHECK_OR_DIE(!args.empty(), "segments SIZE [BIGRANK]");
  gexrt::NodeMap map = gexrt::DiscoverNodeMap(*g.b);
  auto sn = StartUp(map);
  g.sn = sn.get();
  const bool use_max = args[0] == "max";
  const size_t base_size = use_max ? 0 : ParseSizeArg(args[0]);
  auto request_of = [&](Rank r) -> size_t {
    if (args.size() > 1 && std::atoi(args[1].c_str()) == static_cast<int>(r)) {
      return size_t{1} << 40;
    }
    return use_max ? 0 : base_size + 1000 * size_t{r};
  };
  const bool big =
      args.size() > 1 && std::atoi(args[1].c_str()) == static_cast<int>(g.me);
  Attach(big       ? request_of(g.me)
         : use_max ? g.sn->max_local_segment_size()
                   : request_of(g.me));

  const long page = sysconf(_SC_PAGESIZE);
  const std::vector<Rank>& members = g.sn->members();
  const uint32_t peers = static_cast<uint32_t>(members.size());
  CHECK_OR_DIE(members[g.sn->my_index()] == g.me, "members()[my_index()]");
  CHECK_OR_DIE(g.sn->LocalIndex(g.me) == static_cast<int32_t>(g.sn->my_index()),
               "LocalIndex(me)");
  CHECK_OR_DIE(reinterpret_cast<uintptr_t>(g.sn->my_segment()) ==
                   g.sn->segment(g.me).base,
               "my_segment() is not segment(me).base");
  CHECK_OR_DIE(
      g.sn->Translate(g.me, g.sn->segment(g.me).base, 1) == g.sn->my_segment(),
      "my own segment translates elsewhere");
  for (uint32_t i = 0; i < peers; ++i) {
    const Rank r = members[i];
    CHECK_OR_DIE(g.sn->LocalIndex(r) == static_cast<int32_t>(i),
                 "LocalIndex(%u)", r);
    const pshm::Supernode::Segment s = g.sn->segment(r);
    if (!use_max) {
      CHECK_OR_DIE(s.size >= request_of(r), "rank %u: segment of %u bytes < %u",
                   r, s.size, request_of(r));
      CHECK_OR_DIE(s.size < request_of(r) + page,
                   "rank %u: segment of %u bytes for %u", r, s.size,
                   request_of(r));
    }
    CHECK_OR_DIE(s.size % page == 0 && s.size > 0, "rank %u: size %u", r,
                 s.size);
    CHECK_OR_DIE(s.base % page == 0, "rank %u: base %x", r, s.base);
    CheckTranslateBounds(r);
  }
  // Ranks outside my supernode (GASNET_SUPERNODE_MAXSIZE) and outside the
  // job translate to nothing.
  uint32_t outsiders = 0;
  for (Rank r = 0; r < g.n; ++r) {
    if (std::find(members.begin(), members.end(), r) != members.end()) continue;
    ++outsiders;
    CHECK_OR_DIE(g.sn->LocalIndex(r) == -1, "LocalIndex(%u) of a non-peer", r);
    CHECK_OR_DIE(g.sn->Translate(r, g.job_segments[r].base, 1) == nullptr,
                 "non-peer rank %u translates", r);
    CHECK_OR_DIE(g.sn->segment(r).size == 0,
                 "non-peer rank %u has a segment in the supernode", r);
  }
  CHECK_OR_DIE(g.sn->LocalIndex(g.n) == -1, "LocalIndex(size())");
  CHECK_OR_DIE(g.sn->Translate(g.n, g.sn->segment(g.me).base, 1) == nullptr,
               "rank size() translates");

  // Fresh memory: my own segment is all zero before anyone writes.
  {
    const pshm::Supernode::Segment s = g.sn->segment(g.me);
    const auto* p = static_cast<const unsigned char*>(g.sn->my_segment());
    for (size_t i = 0; i < s.size; ++i) {
      CHECK_OR_DIE(p[i] == 0, "fresh segment byte %u is %u", i, p[i]);
    }
  }
  g.b->Barrier();

  // My slice of every peer's segment, and my segment's tail past the
  // slices.
  auto slice = [&](Rank owner) {
    return (g.sn->segment(owner).size / peers) & ~size_t{7};
  };
  const uint32_t my_index = g.sn->my_index();
  for (Rank owner : members) {
    const size_t len = slice(owner);
    const uintptr_t address = g.sn->segment(owner).base + my_index * len;
    void* p = g.sn->Translate(owner, address, len);
    CHECK_OR_DIE(p != nullptr, "Translate(%u, slice %u)", owner, my_index);
    Fill(p, len, Seed(0x5e, g.me, owner, 0), my_index * len / 8);
  }
  {
    const size_t len = slice(g.me);
    const size_t tail = g.sn->segment(g.me).size - peers * len;
    Fill(static_cast<unsigned char*>(g.sn->my_segment()) + peers * len, tail,
         Seed(0x5e, 0xffff, g.me, 0), peers * len / 8);
  }
  g.b->Barrier();

  // Every slice of every peer's segment (mine through my_segment()).
  for (Rank owner : members) {
    const pshm::Supernode::Segment s = g.sn->segment(owner);
    const auto* base =
        owner == g.me ? static_cast<const unsigned char*>(g.sn->my_segment())
                      : static_cast<const unsigned char*>(
                            g.sn->Translate(owner, s.base, s.size));
    const size_t len = slice(owner);
    for (uint32_t w = 0; w < peers; ++w) {
      const size_t bad = FirstMismatch(
          base + w * len, len, Seed(0x5e, members[w], owner, 0), w * len / 8);
      CHECK_OR_DIE(bad == len,
                   "segment of rank %u: byte %u of rank %u's slice (offset "
                   "%u) is wrong",
                   owner, bad, members[w], w * len + bad);
    }
    const size_t tail = s.size - peers * len;
    const size_t bad =
        FirstMismatch(base + peers * len, tail, Seed(0x5e, 0xffff, owner, 0),
                      peers * len / 8);
    CHECK_OR_DIE(bad == tail, "segment of rank %u: tail byte %u is wrong",
                 owner, bad);
  }
  PrintLine(absl::StrFormat(
      "rank %u: segments ok %s peers=%u outsiders=%u size=%u max_local=%u",
      g.me, Identity(), peers, outsiders, g.sn->segment(g.me).size,
      g.sn->max_local_segment_size()));

  // Which of the job's objects exist now, while every rank still holds its
  // mappings: names are gone (posix, file); segments are attached (sysv).
  const pid_t my_pid = getpid();
  std::vector<pid_t> pids(g.n);
  g.b->Allgather(&my_pid, sizeof(pid_t), pids.data());
  if (g.me == 0) {
    const std::vector<std::string> objects =
        pshm::ListJobObjects(g.sn->job_prefix(), pids);
    PrintLine(absl::StrFormat("rank 0: objects=%u", objects.size()));
  }
  g.b->Barrier();
  return 0;
}

void FloodPhase(uint32_t phase, uint32_t count, size_t size) {
  g.phase = phase;
  g.count = count;
  g.size = size;
  g.next_seq.assign(g.n, 0);
  g.replies.assign(g.n, 0);
  g.last_reply_seq.assign(g.n, -1);
  g.received = 0;
  g.replies_total = 0;
  // Nobody sends this phase's messages before everyone has reset.
  g.b->Barrier();

  const std::vector<Rank>& members = g.sn->members();
  const uint32_t peers = static_cast<uint32_t>(members.size());
  const uint32_t my_index = g.sn->my_index();
  const Category category = PhaseCategory(phase);
  std::vector<unsigned char> buffer(std::max<size_t>(size, 1));
  uint32_t args[pshm::kMaxArgs];
  uint64_t sent = 0;
  for (uint32_t seq = 0; seq < count; ++seq) {
    for (uint32_t k = 0; k < peers; ++k) {
      const uint32_t dest_index = (my_index + k) % peers;
      const Rank dest = members[dest_index];
      const uint8_t nargs = NumArgs(phase, seq);
      args[0] = g.me;
      args[1] = seq;
      args[2] = phase;
      for (uint32_t i = 3; i < nargs; ++i)
        args[i] = ArgWord(g.me, dest, seq, i);
      const uint64_t seed = Seed(phase, g.me, dest, seq);
      SendStatus s;
      if (category == Category::kMedium) {
        const size_t len = PayloadLen(seq, size);
        Fill(buffer.data(), len, seed);
        s = Net().SendRequest(dest_index, category, kFloodRequest, args, nargs,
                              buffer.data(), len, nullptr, 0, false);
      } else if (category == Category::kLong) {
        // The destination area is free once its previous Long is answered.
        while (seq - g.replies[dest] >= kLongAreas) PollOnce();
        const size_t len = PayloadLen(seq, size);
        Fill(buffer.data(), len, seed);
        const uintptr_t address =
            g.sn->segment(dest).base + LongOffset(my_index, seq);
        void* local = g.sn->Translate(dest, address, len);
        CHECK_OR_DIE(local != nullptr, "Translate(%u, %x, %u)", dest, address,
                     len);
        s = Net().SendRequest(dest_index, category, kFloodRequest, args, nargs,
                              buffer.data(), len, local, address, false);
      } else {
        s = Net().SendRequest(dest_index, category, kFloodRequest, args, nargs,
                              nullptr, 0, nullptr, 0, false);
      }
      CHECK_OR_DIE(s == SendStatus::kOk, "blocking send returned %d",
                   static_cast<int>(s));
      ++sent;
    }
    Net().Poll();
  }
  const uint32_t want_replies = ExpectedReplies(phase, count);
  auto done = [&] {
    for (Rank r : members) {
      if (g.next_seq[r] != count || g.replies[r] != want_replies) return false;
    }
    return true;
  };
  while (!done()) PollOnce();
  CHECK_OR_DIE(g.received == uint64_t{count} * peers, "received %u",
               g.received);
  CHECK_OR_DIE(g.replies_total == uint64_t{want_replies} * peers, "replies %u",
               g.replies_total);
  // Everyone has all of its messages and replies: nothing more can come.
  g.b->Barrier();
  CHECK_OR_DIE(Net().Poll() == 0, "a message arrived after the phase ended");
  PrintLine(absl::StrFormat(
      "rank %u: flood %s ok sent=%u received=%u "
      "replies=%u",
      g.me, PhaseName(phase), sent, g.received, g.replies_total));
}

int Flood(const std::vector<std::string>& args, const char* what) {
  CHECK_OR_DIE(args.size() >= 2, "%s COUNT SIZE", what);
  const uint32_t count = static_cast<uint32_t>(std::atoi(args[0].c_str()));
  const size_t size = ParseSizeArg(args[1]);
  CHECK_OR_DIE(size <= pshm::kMaxMedium, "SIZE %u > kMaxMedium", size);
  gexrt::NodeMap map = gexrt::DiscoverNodeMap(*g.b);
  auto sn = StartUp(map);
  g.sn = sn.get();
  g.area_bytes = (std::max<size_t>(size, 1) + 63) & ~size_t{63};
  Attach(g.sn->members().size() * kLongAreas * g.area_bytes);
  FloodPhase(kMediumPhase, count, size);
  FloodPhase(kLongPhase, count, size);
  FloodPhase(kShortPhase, count, size);
  g.b->Barrier();
  PrintLine(absl::StrFormat(
      "rank %u: %s ok %s waits=%u depth=%u memory=%u", g.me, what, Identity(),
      Net().waits(), g.sn->queue_config().depth, g.sn->queue_config().memory));
  return 0;
}

int Immediate() {
  gexrt::NodeMap map = gexrt::DiscoverNodeMap(*g.b);
  auto sn = StartUp(map);
  g.sn = sn.get();
  const std::vector<Rank>& members = g.sn->members();
  const uint32_t peers = static_cast<uint32_t>(members.size());
  g.immediate_next.assign(g.n, 0);
  std::vector<unsigned char> buffer(pshm::kMaxMedium);
  for (uint32_t step = 1; step <= 2; ++step) {
    for (Rank sender = 0; sender < g.n; ++sender) {
      g.step = step;
      std::vector<uint32_t> sent(g.n, 0);  // By destination rank.
      g.immediate_next.assign(g.n, 0);
      g.b->Barrier();  // Everyone reset.
      if (g.me == sender) {
        if (step == 1) {
          // Per destination: a cancelled slot, then Shorts until full.
          for (uint32_t d = 0; d < peers; ++d) {
            pshm::Reservation r;
            CHECK_OR_DIE(Net().ReserveRequest(d, Category::kMedium, 3, 100,
                                              true, &r) == SendStatus::kOk,
                         "Reserve in an empty queue");
            Net().Cancel(r);
            uint32_t seq = 0;
            for (;; ++seq) {
              const uint32_t args[3] = {g.me, seq, step};
              const SendStatus s = Net().SendRequest(
                  d, Category::kShort, kImmediateRequest, args, 3, nullptr, 0,
                  nullptr, 0, /*immediate=*/true);
              if (s == SendStatus::kWouldBlock) break;
              CHECK_OR_DIE(seq < 1000000, "never got kWouldBlock");
            }
            sent[members[d]] = seq;
            PrintLine(
                absl::StrFormat("rank %u: immediate shorts to rank %u: %u",
                                g.me, members[d], seq));
          }
        } else {
          // Full-size Mediums, one destination after another, until the
          // first that would block (a full queue or a full pool).
          bool blocked = false;
          for (uint64_t i = 0; !blocked; ++i) {
            CHECK_OR_DIE(i < 1000000, "never got kWouldBlock");
            const uint32_t d = static_cast<uint32_t>(i % peers);
            const Rank dest = members[d];
            const uint32_t seq = sent[dest];
            const uint32_t args[3] = {g.me, seq, step};
            Fill(buffer.data(), buffer.size(), Seed(0x1d, g.me, dest, seq));
            const SendStatus s = Net().SendRequest(
                d, Category::kMedium, kImmediateRequest, args, 3, buffer.data(),
                buffer.size(), nullptr, 0, true);
            if (s == SendStatus::kWouldBlock) {
              blocked = true;
              PrintLine(absl::StrFormat(
                  "rank %u: immediate mediums: %u sent, then kWouldBlock from "
                  "rank %u",
                  g.me, i, dest));
            } else {
              ++sent[dest];
            }
          }
        }
      }
      // The receivers were here, not polling, while the sender sent.
      g.b->Barrier();
      std::vector<uint32_t> all_sent(g.n);
      g.b->Broadcast(sent.data(), sizeof(uint32_t) * g.n, all_sent.data(),
                     sender);
      const uint32_t expected =
          g.sn->LocalIndex(sender) >= 0 ? all_sent[g.me] : 0;
      while (g.immediate_next[sender] < expected) PollOnce();
      g.b->Barrier();
      // Nothing more (a message that was refused must never arrive).
      Net().Poll();
      CHECK_OR_DIE(g.immediate_next[sender] == expected,
                   "step %u: %u messages from rank %u arrived, it sent %u",
                   step, g.immediate_next[sender], sender, expected);
      g.b->Barrier();
    }
  }
  PrintLine(absl::StrFormat("rank %u: immediate ok %s depth=%u", g.me,
                            Identity(), g.sn->queue_config().depth));
  return 0;
}

void WriteFile(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  CHECK_OR_DIE(f != nullptr, "cannot open %s", path);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

[[noreturn]] void Spin(const std::string& pid_dir) {
  gexrt::NodeMap map = gexrt::DiscoverNodeMap(*g.b);
  auto sn = StartUp(map);
  g.sn = sn.get();
  Attach(1 << 20);
  std::memset(g.sn->my_segment(), 0x5a, g.sn->segment(g.me).size);
  PrintLine(absl::StrFormat("rank %u: spinning %s", g.me, Identity()));
  g.b->Barrier();
  if (g.me == 0 && !pid_dir.empty()) WriteFile(pid_dir + "/ready", "ready\n");
  const uint32_t peers = static_cast<uint32_t>(g.sn->members().size());
  const uint32_t next = (g.sn->my_index() + 1) % peers;
  for (uint32_t seq = 0;; ++seq) {
    const uint32_t args[2] = {g.me, seq};
    (void)Net().SendRequest(next, Category::kShort, kSpinRequest, args, 2,
                            nullptr, 0, nullptr, 0, /*immediate=*/true);
    PollOnce();
  }
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

int DieAtStartup(const std::string& pid_dir) {
  CHECK_OR_DIE(g.n >= 2, "die-at-startup needs 2 ranks");
  CHECK_OR_DIE(!pid_dir.empty(), "die-at-startup needs --pids");
  gexrt::NodeMap map = gexrt::DiscoverNodeMap(*g.b);
  const std::string prefix = pshm::AgreeJobPrefix(*g.b);
  if (g.me != 1) {
    // Waits in the bootstrap for rank 1, which never comes.
    pshm::Supernode::Options options;
    options.dispatcher = &Dispatch;
    auto sn = pshm::Supernode::Create(*g.b, map, options);
    PrintLine(absl::StrFormat("rank %u: Supernode::Create returned: %s", g.me,
                              sn.ok() ? "ok" : sn.status().ToString()));
    return 1;
  }
  const pshm::ObjectName name{prefix, g.me, 0};
  auto object = pshm::SharedObject::Create(name, 1 << 20);
  if (!object.ok()) Fail("SharedObject::Create", object.status());
  std::memset(object->address(), 1, 1 << 20);
  PrintLine(absl::StrFormat("rank 1: created %s prefix=%s mechanism=%s",
                            name.Path(), prefix, pshm::MechanismName()));
  WriteFile(pid_dir + "/created", name.Path() + "\n");
  // The test looks at what exists now, then says go. (Bounded: a test that
  // never answers still gets a dead rank.)
  for (int i = 0; i < 6000 && !FileExists(pid_dir + "/go"); ++i) {
    poll(nullptr, 0, 10);
  }
  raise(SIGKILL);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string pid_dir;
  size_t a = 0;
  while (a < args.size() && args[a].rfind("--", 0) == 0) {
    if (args[a] == "--pids" && a + 1 < args.size()) {
      pid_dir = args[a + 1];
      a += 2;
    } else {
      std::fprintf(stderr, "pshm_client: unknown option %s\n", args[a].c_str());
      return 2;
    }
  }
  if (a >= args.size()) {
    std::fprintf(stderr, "pshm_client: no mode\n");
    return 2;
  }
  const std::string mode = args[a];
  const std::vector<std::string> rest(args.begin() + a + 1, args.end());

  std::unique_ptr<Bootstrap> b = gexrt::CreateBootstrap();
  g.b = b.get();
  g.me = b->rank();
  g.n = b->size();
  if (!pid_dir.empty()) {
    WriteFile(absl::StrFormat("%s/%u.pid", pid_dir, g.me),
              absl::StrFormat("%d\n", getpid()));
  }
  // Every pid file exists before anything can create a shared object.
  b->Barrier();
  if (!pid_dir.empty() && g.me == 0) {
    const char* id = std::getenv("GEX_JOB_ID");
    WriteFile(pid_dir + "/job_id", std::string(id ? id : "") + "\n");
  }

  int code = 0;
  if (mode == "segments") {
    code = Segments(rest);
  } else if (mode == "flood") {
    code = Flood(rest, "flood");
  } else if (mode == "backpressure") {
    code = Flood(rest, "backpressure");
  } else if (mode == "immediate") {
    code = Immediate();
  } else if (mode == "spin") {
    Spin(pid_dir);
  } else if (mode == "die-at-startup") {
    code = DieAtStartup(pid_dir);
  } else {
    std::fprintf(stderr, "pshm_client: unknown mode %s\n", mode.c_str());
    return 2;
  }
  b->Fini();
  return code;
}
