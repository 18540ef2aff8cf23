// cpp_client: one rank of a job over the C++ API (<gex/gex.hpp>) on any
// conduit (SEQ), started by its launcher from cpp_job_test. It mirrors
// rma_client.c's coverage through gex:: calls (a C call only where the C++
// API has no counterpart: gex_System_SetVerboseErrors), plus typed Active
// Messages. Every check is
// a CHECK (a failure prints "rank R: CHECK FAILED ..." and exits 1); a rank
// that passes its mode prints "rank R: <mode> ok ..." before the closing
// barrier and gex::exit_job(0).
//
// An RMA with a peer in this rank's supernode (its segment mapped here:
// Team::bound_segment's local_addr) is a direct copy, and its NB call
// returns an Event that is done() at once. With GEX_RMA_FORCE_AM=1 every RMA
// goes over Active Messages; then, and for peers not mapped here (the
// conduit carries those), NB calls of nbytes > 0 return real events. Each
// call is checked for what its peer and path imply.
//
// Segment (per rank): IN (written by the previous rank), SRC (a pattern of
// its owner's, read by Gets), LOCAL (in-segment local buffers), each
// 4 MiB + 4 pages; a heap buffer of that size is the out-of-segment local
// buffer. Puts go to the next rank, Gets come from the previous one. A
// Put's destination is set to 0xEE between two guard bytes before and
// checked after, guards included: through the peer's segment as mapped
// here when it is, else through the API (a blocking put of guards and fill
// before, a blocking get of the range and its guards after; Gets are
// checked on their own against SRC's known pattern).
//
//   forms    gex::put, put_nb (lc::now, lc::defer, a Leaf), put_nbi
//            (lc::now, lc::defer, lc::group), put_nb with flags::immediate;
//            gex::get, get_nb, get_nbi, get with flags::immediate; x
//            in-segment and heap local span x sizes 0, 1, 8, 13, 255, 4095,
//            8195, 65535, 65536, 65537, 200003, 4 MiB at odd offsets. Sources
//            are overwritten as soon as local completion is promised.
//            Prints "rank R: forms ok puts=P gets=G".
//   events   Rounds of 12 NB Puts and Gets in gex::Event objects, synced in
//            10 orders: wait_all(span), wait_some(span) until done,
//            test_all(span) and test_some(span) loops, wait() in reverse,
//            test() in a stride order, LC leaves (from the Leaf argument
//            and Event::leaf) waited first then the roots, the variadic
//            wait_all(e0, ..., e11), the variadic wait_some/test_all/
//            test_some, and Events left to their destructors (moved into a
//            scope first). Prints "rank R: events ok ops=K real=E".
//   nbi      put_nbi/get_nbi synced by nbi_wait(ec::put) then (ec::get),
//            (ec::all), nbi_test loops, (ec::lc) before overwriting
//            lc::group sources; AccessRegions mixing Puts and Gets (end()'s
//            Event and its ec::lc leaf, invisible to nbi_test), two regions
//            waited in reverse with NBI operations outside them pending, an
//            empty region, and a region closed by its destructor. Prints
//            "rank R: nbi ok ops=K".
//   values   put_val, put_val_nb, put_val_nbi and get_val for types of 1 to 8
//            bytes (integers, float, double, byte arrays). Prints
//            "rank R: values ok".
//   am       typed handlers with 0..16 arguments of mixed integer types
//            (bool, 8-, 16-, 32-bit, signed and not, an enum), extreme
//            values: Short, Medium and Long requests to the next rank whose
//            handlers check every argument and the payload and reply (Short;
//            Medium echoing the payload; Long into the requester's segment)
//            with the same arguments, checked again; also flags::immediate
//            sends, payload spans of several element types, a second
//            gex::Client and a second registration throwing gex::Error.
//            Prints "rank R: am ok requests=Q replies=P".
#include <sched.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "gex/gex.hpp"
#include "tests/api/client_check.h"

namespace {

constexpr size_t kPage = 4096;
constexpr size_t kMaxSize = size_t{4} << 20;
constexpr size_t kArea = kMaxSize + 4 * kPage;
constexpr size_t kInOff = 0;
constexpr size_t kSrcOff = kArea;
constexpr size_t kLocalOff = 2 * kArea;
constexpr size_t kSegSize = 3 * kArea;

using Bytes = unsigned char;

gex::Team g_tm;
gex::Rank g_me;
gex::Rank g_n;
gex::Rank g_next;  // Puts go here
gex::Rank g_prev;  // Gets come from here
bool g_forced;     // GEX_RMA_FORCE_AM=1
Bytes* g_base;
std::vector<Bytes*> g_owner;  // each rank's segment, as it sees it
std::vector<Bytes*> g_local;  // each rank's segment, mapped here, or null
std::vector<Bytes> g_heap_store;
Bytes* g_heap;                 // out-of-segment local buffer, kArea
std::vector<Bytes> g_scratch;  // kArea + 2: a peer's bytes, staged

Bytes Pattern(uint32_t seed, size_t i) {
  return static_cast<Bytes>(seed * 151u + i * 7u + (i >> 9) * 13u + 1u);
}
void Fill(Bytes* p, size_t n, uint32_t seed, size_t start) {
  for (size_t i = 0; i < n; ++i) p[i] = Pattern(seed, start + i);
}
void Verify(const Bytes* p, size_t n, uint32_t seed, size_t start,
            const char* what) {
  for (size_t i = 0; i < n; ++i) {
    CHECK(p[i] == Pattern(seed, start + i),
          "%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n, p[i],
          Pattern(seed, start + i));
  }
}
void SetGuards(Bytes* p, size_t n) {
  p[-1] = 0xA5;
  p[n] = 0x5A;
}
void CheckGuards(const Bytes* p, size_t n, const char* what) {
  CHECK(p[-1] == 0xA5 && p[n] == 0x5A,
        "%s: a guard byte changed (before 0x%02x, after 0x%02x, n=%zu)", what,
        p[-1], p[n], n);
}

// Whether rank r's segment is mapped here.
bool Mapped(gex::Rank r) { return g_local[r] != nullptr; }

// Whether RMA with rank r is a direct copy (done on return).
bool DirectTo(gex::Rank r) { return !g_forced && Mapped(r); }

// An NB call's Event for `n` bytes with `peer`: done at once for a direct
// copy or 0 bytes, else (the AM path, or the conduit for a peer not mapped
// here) a real event.
void CheckNbEvent(const gex::Event& ev, size_t n, gex::Rank peer,
                  const char* what) {
  CHECK(!ev.refused(), "%s: refused without flags::immediate", what);
  if (DirectTo(peer) || n == 0) {
    CHECK(ev.done(), "%s: a direct copy returned a pending event", what);
  } else {
    CHECK(!ev.done(),
          "%s: an operation that was not a direct copy (%s) returned no "
          "event",
          what, g_forced ? "GEX_RMA_FORCE_AM=1" : "peer not mapped here");
  }
}

void Sync(gex::Event& ev, unsigned how) {
  if (how % 2 == 0) {
    ev.wait();
  } else {
    while (!ev.test()) sched_yield();
  }
  CHECK(ev.done(), "a synced Event is not done");
}

std::span<const Bytes> In(const Bytes* p, size_t n) { return {p, n}; }
std::span<Bytes> Out(Bytes* p, size_t n) { return {p, n}; }

// Sets [roff, +n) of the next rank's IN area to 0xEE between guard bytes
// (SetGuards): through its mapping here, or with a blocking put of the
// n + 2 bytes.
void PrepareIn(size_t roff, size_t n) {
  if (Mapped(g_next)) {
    Bytes* view = g_local[g_next] + kInOff + roff;
    SetGuards(view, n);
    std::memset(view, 0xEE, n);
    return;
  }
  g_scratch[0] = 0xA5;
  std::memset(g_scratch.data() + 1, 0xEE, n);
  g_scratch[n + 1] = 0x5A;
  CHECK(gex::put(g_tm, g_next, g_owner[g_next] + kInOff + roff - 1,
                 In(g_scratch.data(), n + 2)),
        "preparing rank %u's [%zu, +%zu)", g_next, roff, n);
}

// [roff, +n) of the next rank's IN area as it is now, with a guard byte on
// each side (CheckGuards): its mapping here, or a copy fetched with a
// blocking get (valid until the next PrepareIn or ReadIn).
const Bytes* ReadIn(size_t roff, size_t n) {
  if (Mapped(g_next)) return g_local[g_next] + kInOff + roff;
  std::memset(g_scratch.data(), 0xCC, n + 2);
  CHECK(gex::get(g_tm, Out(g_scratch.data(), n + 2), g_next,
                 g_owner[g_next] + kInOff + roff - 1),
        "reading back rank %u's [%zu, +%zu)", g_next, roff, n);
  return g_scratch.data() + 1;
}

// The rank's handles, the peers' segments, the pattern in SRC.
void Start(gex::Client& client) {
  g_tm = client.team();
  g_me = g_tm.rank();
  g_n = g_tm.size();
  check_rank = static_cast<int>(g_me);
  CHECK(g_tm.endpoint() == client.endpoint(), "the team's endpoint");
  CHECK(gex::job_rank() == g_me && gex::job_size() == g_n, "job rank/size");
  CHECK(g_tm.to_jobrank(g_me) == g_me && g_tm.from_jobrank(g_me) == g_me,
        "rank translation");
  g_next = (g_me + 1) % g_n;
  g_prev = (g_me + g_n - 1) % g_n;
  const char* forced = std::getenv("GEX_RMA_FORCE_AM");
  g_forced = forced != nullptr && std::strcmp(forced, "1") == 0;
  CHECK(!client.endpoint().segment().valid(), "a segment before attach");
  const gex::Segment seg(g_tm, kSegSize);
  CHECK(seg.valid() && seg.size() >= kSegSize, "segment size");
  CHECK(client.endpoint().segment() == seg, "the endpoint's segment");
  CHECK(seg.bytes().data() == seg.addr() && seg.bytes().size() == seg.size(),
        "Segment::bytes");
  g_base = static_cast<Bytes*>(seg.addr());
  g_owner.resize(g_n);
  g_local.resize(g_n);
  for (gex::Rank r = 0; r < g_n; ++r) {
    const gex::BoundSegment b = g_tm.bound_segment(r);
    CHECK(b.owner_addr != nullptr && b.size >= kSegSize, "rank %u's segment",
          r);
    CHECK(r != g_me || (b.owner_addr == g_base && b.local_addr == g_base),
          "my own segment: owner=%p local=%p", b.owner_addr, b.local_addr);
    g_owner[r] = static_cast<Bytes*>(b.owner_addr);
    g_local[r] = static_cast<Bytes*>(b.local_addr);
  }
  g_heap_store.resize(kArea);
  g_heap = g_heap_store.data();
  g_scratch.resize(kArea + 2);
  Fill(g_base + kSrcOff, kArea, 1000 + g_me, 0);
  g_tm.barrier();
}

[[noreturn]] void Finish(const std::string& line) {
  g_tm.barrier();
  Say("%s", line.c_str());
  g_tm.barrier();
  gex::exit_job(0);
}

// ---------------------------------------------------------------------------
// forms

constexpr size_t kSizes[] = {0,    1,     8,     13,    255,    4095,
                             8195, 65535, 65536, 65537, 200003, kMaxSize};

enum PutForm {
  kPutBlocking,
  kPutNbNow,
  kPutNbDefer,
  kPutNbLeaf,
  kPutNbiNow,
  kPutNbiDefer,
  kPutNbiGroup,
  kPutImmediate,
  kPutForms
};
const char* const kPutFormName[kPutForms] = {
    "put",         "put_nb/now",    "put_nb/defer",  "put_nb/leaf",
    "put_nbi/now", "put_nbi/defer", "put_nbi/group", "put_nb/immediate"};

size_t RemoteOffset(unsigned seq) { return 1 + (seq * 1031u) % (3 * kPage); }
size_t LocalOffset(unsigned seq) { return 3 + (seq * 733u) % (3 * kPage); }

void PutCase(int form, bool in_segment, size_t n, unsigned seq) {
  char what[128];
  snprintf(what, sizeof what, "%s %s n=%zu to rank %u", kPutFormName[form],
           in_segment ? "segment" : "heap", n, g_next);
  const size_t roff = RemoteOffset(seq);
  Bytes* src = (in_segment ? g_base + kLocalOff : g_heap) + LocalOffset(seq);
  const uint32_t seed = seq * 31u + static_cast<uint32_t>(form);
  Fill(src, n, seed, 0);
  Bytes* dest = g_owner[g_next] + kInOff + roff;
  PrepareIn(roff, n);
  switch (form) {
    case kPutBlocking:
      CHECK(gex::put(g_tm, g_next, dest, In(src, n)), "%s", what);
      break;
    case kPutNbNow: {
      gex::Event ev = gex::put_nb(g_tm, g_next, dest, In(src, n), gex::lc::now);
      CheckNbEvent(ev, n, g_next, what);
      std::memset(src, 0x11, n);  // locally complete on return
      Sync(ev, seq);
      break;
    }
    case kPutNbDefer: {
      gex::Event ev =
          gex::put_nb(g_tm, g_next, dest, In(src, n), gex::lc::defer);
      CheckNbEvent(ev, n, g_next, what);
      Sync(ev, seq);
      break;
    }
    case kPutNbLeaf: {
      gex::Leaf lc(GEX_EVENT_NO_OP);
      gex::Event ev = gex::put_nb(g_tm, g_next, dest, In(src, n), lc);
      CheckNbEvent(ev, n, g_next, what);
      CHECK(lc.c_handle() != GEX_EVENT_NO_OP, "%s: the leaf not written", what);
      if (ev.done()) {
        CHECK(lc.trivially_done(), "%s: a leaf of a completed put", what);
        CHECK(ev.leaf(gex::ec::lc).trivially_done(), "%s", what);
      } else {
        CHECK(!lc.trivially_done(), "%s: no leaf event", what);
        CHECK(ev.leaf(gex::ec::lc) == lc, "%s: Event::leaf differs", what);
        lc.wait();
        CHECK(lc.test(), "%s: leaf tested again", what);
      }
      std::memset(src, 0x22, n);
      Sync(ev, seq);
      break;
    }
    case kPutNbiNow:
      CHECK(gex::put_nbi(g_tm, g_next, dest, In(src, n), gex::lc::now), "%s",
            what);
      std::memset(src, 0x33, n);
      gex::nbi_wait(gex::ec::put);
      break;
    case kPutNbiDefer:
      CHECK(gex::put_nbi(g_tm, g_next, dest, In(src, n)), "%s", what);
      gex::nbi_wait(gex::ec::put);
      break;
    case kPutNbiGroup:
      CHECK(gex::put_nbi(g_tm, g_next, dest, In(src, n), gex::lc::group), "%s",
            what);
      gex::nbi_wait(gex::ec::lc);
      std::memset(src, 0x44, n);
      gex::nbi_wait(gex::ec::put);
      break;
    case kPutImmediate: {
      gex::Event ev = gex::put_nb(g_tm, g_next, dest, In(src, n),
                                  gex::lc::defer, gex::flags::immediate);
      if (ev.refused()) {
        CHECK(!DirectTo(g_next), "%s: the direct path refused immediate", what);
        ev = gex::put_nb(g_tm, g_next, dest, In(src, n));
      }
      CheckNbEvent(ev, n, g_next, what);
      Sync(ev, seq);
      break;
    }
  }
  const Bytes* got = ReadIn(roff, n);
  Verify(got, n, seed, 0, what);
  CheckGuards(got, n, what);
}

enum GetForm { kGetBlocking, kGetNb, kGetNbi, kGetImmediate, kGetForms };
const char* const kGetFormName[kGetForms] = {"get", "get_nb", "get_nbi",
                                             "get/immediate"};

void GetCase(int form, bool in_segment, size_t n, unsigned seq) {
  char what[128];
  snprintf(what, sizeof what, "%s %s n=%zu from rank %u", kGetFormName[form],
           in_segment ? "segment" : "heap", n, g_prev);
  const size_t roff = RemoteOffset(seq);
  Bytes* dst = (in_segment ? g_base + kLocalOff : g_heap) + LocalOffset(seq);
  const Bytes* src = g_owner[g_prev] + kSrcOff + roff;
  SetGuards(dst, n);
  std::memset(dst, 0xCC, n);
  switch (form) {
    case kGetBlocking:
      CHECK(gex::get(g_tm, Out(dst, n), g_prev, src), "%s", what);
      break;
    case kGetNb: {
      gex::Event ev = gex::get_nb(g_tm, Out(dst, n), g_prev, src);
      CheckNbEvent(ev, n, g_prev, what);
      Sync(ev, seq);
      break;
    }
    case kGetNbi:
      CHECK(gex::get_nbi(g_tm, Out(dst, n), g_prev, src), "%s", what);
      if (seq % 2 == 0) {
        gex::nbi_wait(gex::ec::get);
      } else {
        while (!gex::nbi_test(gex::ec::get)) sched_yield();
      }
      break;
    case kGetImmediate:
      if (!gex::get(g_tm, Out(dst, n), g_prev, src, gex::flags::immediate)) {
        CHECK(!DirectTo(g_prev), "%s: the direct path refused immediate", what);
        CHECK(gex::get(g_tm, Out(dst, n), g_prev, src), "%s", what);
      }
      break;
  }
  Verify(dst, n, 1000 + g_prev, roff, what);
  CheckGuards(dst, n, what);
}

[[noreturn]] void Forms() {
  unsigned seq = 0;
  int puts = 0;
  int gets = 0;
  for (size_t n : kSizes) {
    for (bool in_segment : {false, true}) {
      for (int form = 0; form < kPutForms; ++form) {
        PutCase(form, in_segment, n, seq++);
        ++puts;
      }
      for (int form = 0; form < kGetForms; ++form) {
        GetCase(form, in_segment, n, seq++);
        ++gets;
      }
    }
  }
  CHECK(gex::nbi_test(gex::ec::all), "NBI operations pending");
  Finish("forms ok puts=" + std::to_string(puts) +
         " gets=" + std::to_string(gets));
}

// ---------------------------------------------------------------------------
// events

constexpr int kOps = 12;
constexpr size_t kSlot = 256 * 1024;
constexpr unsigned kOrders = 10;

struct Op {
  bool is_put = false;
  size_t n = 0;
  Bytes* local = nullptr;  // put source / get destination
  size_t roff = 0;
  uint32_t seed = 0;
};

int g_real_events = 0;

void IssueOps(Op* ops, gex::Event* evs, gex::Leaf* leaves, unsigned round) {
  static constexpr size_t kOpSizes[] = {1, 77, 4096, 65536, 65537, 200003};
  for (int i = 0; i < kOps; ++i) {
    Op& op = ops[i];
    op.is_put = (i + static_cast<int>(round)) % 2 == 0;
    op.n = kOpSizes[(i + round) % 6];
    op.local = (i % 2 == 0 ? g_base + kLocalOff : g_heap) + i * kSlot + 5;
    op.roff = i * kSlot + 9;
    op.seed = round * 97u + static_cast<uint32_t>(i);
    leaves[i] = gex::Leaf();
    if (op.is_put) {
      Fill(op.local, op.n, op.seed, 0);
      PrepareIn(op.roff, op.n);
      Bytes* dest = g_owner[g_next] + kInOff + op.roff;
      evs[i] = i % 3 == 0 ? gex::put_nb(g_tm, g_next, dest, In(op.local, op.n),
                                        leaves[i])
                          : gex::put_nb(g_tm, g_next, dest, In(op.local, op.n));
    } else {
      SetGuards(op.local, op.n);
      std::memset(op.local, 0xCC, op.n);
      evs[i] = gex::get_nb(g_tm, Out(op.local, op.n), g_prev,
                           g_owner[g_prev] + kSrcOff + op.roff);
    }
    CheckNbEvent(evs[i], op.n, op.is_put ? g_next : g_prev,
                 op.is_put ? "events put_nb" : "events get_nb");
    if (!evs[i].done()) ++g_real_events;
  }
}

void CheckOps(const Op* ops, int count = kOps) {
  for (int i = 0; i < count; ++i) {
    const Op& op = ops[i];
    if (op.is_put) {
      const Bytes* got = ReadIn(op.roff, op.n);
      Verify(got, op.n, op.seed, 0, "events put");
      CheckGuards(got, op.n, "events put");
    } else {
      Verify(op.local, op.n, 1000 + g_prev, op.roff, "events get");
      CheckGuards(op.local, op.n, "events get");
    }
  }
}

int CountDone(const gex::Event* evs) {
  int done = 0;
  for (int i = 0; i < kOps; ++i) done += evs[i].done() ? 1 : 0;
  return done;
}

template <size_t... I>
void WaitAllNamed(gex::Event* evs, std::index_sequence<I...>) {
  gex::wait_all(evs[I]...);
}
template <size_t... I>
size_t WaitSomeNamed(gex::Event* evs, std::index_sequence<I...>) {
  return gex::wait_some(evs[I]...);
}
template <size_t... I>
bool TestAllNamed(gex::Event* evs, std::index_sequence<I...>) {
  return gex::test_all(evs[I]...);
}
template <size_t... I>
bool TestSomeNamed(gex::Event* evs, std::index_sequence<I...>) {
  return gex::test_some(evs[I]...);
}
constexpr auto kAll = std::make_index_sequence<kOps>();

[[noreturn]] void Events() {
  Op ops[kOps];
  gex::Event evs[kOps];
  gex::Leaf leaves[kOps];
  const std::span<gex::Event> all(evs);
  int total = 0;
  for (unsigned round = 0; round < 3 * kOrders; ++round) {
    IssueOps(ops, evs, leaves, round);
    total += kOps;
    switch (round % kOrders) {
      case 0:
        gex::wait_all(all);
        break;
      case 1:
        while (CountDone(evs) < kOps) {
          const int before = CountDone(evs);
          gex::wait_some(all);
          CHECK(CountDone(evs) > before || before == kOps,
                "wait_some completed nothing");
        }
        CHECK(gex::test_some(all), "test_some over completed events");
        break;
      case 2:
        while (!gex::test_all(all)) sched_yield();
        break;
      case 3:
        while (CountDone(evs) < kOps) {
          if (!gex::test_some(all)) sched_yield();
        }
        break;
      case 4:
        for (int i = kOps - 1; i >= 0; --i) evs[i].wait();
        break;
      case 5:
        for (int k = 0; k < kOps; ++k) {
          const int i = (k * 5) % kOps;  // 5 is coprime with 12
          while (!evs[i].test()) sched_yield();
        }
        break;
      case 6:
        // Local completion first, in reverse; then the sources may change.
        for (int i = kOps - 1; i >= 0; --i) {
          if (!ops[i].is_put) continue;
          const gex::Leaf leaf = evs[i].leaf(gex::ec::lc);
          if (!leaves[i].trivially_done()) {
            CHECK(leaf == leaves[i], "Event::leaf differs from lc's leaf");
          }
          leaf.wait();
        }
        for (int i = 0; i < kOps; ++i) {
          if (ops[i].is_put) std::memset(ops[i].local, 0x5C, ops[i].n);
        }
        gex::wait_all(all);
        break;
      case 7:
        WaitAllNamed(evs, kAll);
        break;
      case 8: {
        size_t done = 0;
        while (done < static_cast<size_t>(kOps)) {
          done = WaitSomeNamed(evs, kAll);
          CHECK(done >= 1 && static_cast<int>(done) == CountDone(evs),
                "wait_some(e...) returned %zu, %d done", done, CountDone(evs));
          if (TestSomeNamed(evs, kAll)) continue;
          if (TestAllNamed(evs, kAll)) break;
        }
        CHECK(TestAllNamed(evs, kAll), "test_all(e...) after wait_some");
        break;
      }
      case 9: {
        // Destructors wait: the Events moved out (the originals are then
        // done) into a scope that ends.
        gex::Event* moved = new gex::Event[kOps];
        for (int i = 0; i < kOps; ++i) {
          moved[i] = std::move(evs[i]);
          CHECK(evs[i].done(), "a moved-from Event is not done");
        }
        delete[] moved;
        break;
      }
    }
    CHECK(CountDone(evs) == kOps, "round %u left events pending", round);
    CheckOps(ops);
  }
  Finish("events ok ops=" + std::to_string(total) +
         " real=" + std::to_string(g_real_events));
}

// ---------------------------------------------------------------------------
// nbi

constexpr size_t kNbiSlot = 128 * 1024;

template <class Lc>
void IssueNbi(Op* ops, unsigned round, Lc lc, bool only_gets, int set) {
  static constexpr size_t kOpSizes[] = {3, 4096, 65536, 65537, 100001, 9};
  for (int i = 0; i < kOps; ++i) {
    Op& op = ops[i];
    op.is_put = !only_gets && (i + static_cast<int>(round)) % 2 == 0;
    op.n = kOpSizes[(i + round) % 6];
    op.local = (i % 2 == 0 ? g_base + kLocalOff : g_heap) +
               (set * kOps + i) * kNbiSlot + 7;
    op.roff = i * kNbiSlot + 11;
    op.seed = round * 89u + static_cast<uint32_t>(i) + 5000;
    if (op.is_put) {
      Fill(op.local, op.n, op.seed, 0);
      PrepareIn(op.roff, op.n);
      CHECK(gex::put_nbi(g_tm, g_next, g_owner[g_next] + kInOff + op.roff,
                         In(op.local, op.n), lc),
            "put_nbi");
    } else {
      SetGuards(op.local, op.n);
      std::memset(op.local, 0xCC, op.n);
      CHECK(gex::get_nbi(g_tm, Out(op.local, op.n), g_prev,
                         g_owner[g_prev] + kSrcOff + op.roff),
            "get_nbi");
    }
  }
}

void ClobberPutSources(const Op* ops) {
  for (int i = 0; i < kOps; ++i) {
    if (ops[i].is_put) std::memset(ops[i].local, 0x77, ops[i].n);
  }
}

// A region's Event: done at once when every operation in it was a direct
// copy; a real event when they went over Active Messages to peers mapped
// here (whose replies wait for this rank to poll, which nothing in the
// region does); either for operations the conduit carries to peers not
// mapped here, which may all have completed by the time the region ends.
void CheckRegionEvent(const gex::Event& ev, bool puts) {
  const bool mapped = Mapped(g_prev) && (!puts || Mapped(g_next));
  CHECK(!ev.refused(), "a region gave GEX_EVENT_NO_OP");
  if (!g_forced && mapped) {
    CHECK(ev.done(), "a region of direct copies gave an event");
  } else if (mapped) {
    CHECK(!ev.done(), "an AM-path region gave no event");
  }
}

[[noreturn]] void Nbi() {
  Op ops[kOps];
  Op more[kOps];
  int total = 0;
  for (unsigned round = 0; round < 6; ++round) {
    // Outside regions.
    switch (round % 4) {
      case 0:
        IssueNbi(ops, round, gex::lc::defer, false, 0);
        gex::nbi_wait(gex::ec::put);
        for (int i = 0; i < kOps; ++i) {
          if (ops[i].is_put) {
            Verify(ReadIn(ops[i].roff, ops[i].n), ops[i].n, ops[i].seed, 0,
                   "nbi put");
          }
        }
        gex::nbi_wait(gex::ec::get);
        break;
      case 1:
        IssueNbi(ops, round, gex::lc::now, false, 0);
        ClobberPutSources(ops);
        gex::nbi_wait(gex::ec::all);
        break;
      case 2:
        IssueNbi(ops, round, gex::lc::defer, false, 0);
        while (!gex::nbi_test(gex::ec::get | gex::ec::put)) sched_yield();
        break;
      case 3:
        IssueNbi(ops, round, gex::lc::group, false, 0);
        gex::nbi_wait(gex::ec::lc);
        ClobberPutSources(ops);
        gex::nbi_wait(gex::ec::put | gex::ec::get);
        break;
    }
    CHECK(gex::nbi_test(gex::ec::all), "NBI left pending");
    CheckOps(ops);
    total += kOps;

    // A region mixing Puts (lc::group) and Gets; its leaf covers the Puts'
    // local completion; nbi_test does not see its operations.
    {
      gex::AccessRegion region;
      IssueNbi(ops, round + 100, gex::lc::group, false, 0);
      CHECK(gex::nbi_test(gex::ec::all),
            "nbi_test saw operations of an access region");
      gex::Event ev = region.end();
      CheckRegionEvent(ev, true);
      const gex::Leaf leaf = ev.leaf(gex::ec::lc);
      CHECK(leaf == ev.leaf(gex::ec::lc), "Event::leaf differs");
      leaf.wait();
      ClobberPutSources(ops);
      Sync(ev, round);
    }
    CheckOps(ops);
    total += kOps;

    // Two regions (the second Gets only, to other buffers), waited in
    // reverse; NBI Puts outside them pending meanwhile.
    IssueNbi(more, round + 200, gex::lc::defer, true, 1);
    gex::Event first;
    {
      gex::AccessRegion region;
      IssueNbi(ops, round + 300, gex::lc::defer, false, 0);
      first = region.end();
    }
    CheckRegionEvent(first, true);
    Op later[kOps];
    gex::AccessRegion second_region;
    for (int i = 0; i < kOps; ++i) {
      later[i].is_put = false;
      later[i].n = 1000 + i * 3;
      later[i].local = g_base + kLocalOff + 2 * kOps * kNbiSlot + i * 4096 + 1;
      later[i].roff = i * 5000 + 3;
      SetGuards(later[i].local, later[i].n);
      CHECK(gex::get_nbi(g_tm, Out(later[i].local, later[i].n), g_prev,
                         g_owner[g_prev] + kSrcOff + later[i].roff),
            "get_nbi");
    }
    gex::Event second = second_region.end();
    CheckRegionEvent(second, false);
    second.wait();
    gex::Event none;
    gex::wait_all(first, none);
    CheckOps(later);
    CheckOps(ops);
    gex::nbi_wait(gex::ec::all);
    CheckOps(more);
    total += 3 * kOps;

    // An empty region.
    {
      gex::AccessRegion region;
      gex::Event empty = region.end();
      CHECK(empty.done(), "an empty region gave an event");
    }
    // A region its destructor ends (and waits for).
    {
      gex::AccessRegion region;
      IssueNbi(ops, round + 400, gex::lc::defer, false, 0);
    }
    CHECK(gex::nbi_test(gex::ec::all), "the region's operations leaked out");
    CheckOps(ops);
    total += kOps;
  }
  Finish("nbi ok ops=" + std::to_string(total));
}

// ---------------------------------------------------------------------------
// values

template <size_t N>
struct Raw {
  Bytes b[N];
};

// Writes `value` with each value form and reads it back with get_val.
template <class T>
void ValueCase(T value, int seq) {
  constexpr size_t n = sizeof(T);
  for (int form = 0; form < 3; ++form) {
    const size_t roff = 1 + seq * 64 + form * 200 + (seq % 2) * (kPage - 24);
    T* dest = reinterpret_cast<T*>(g_owner[g_next] + kInOff + roff);
    PrepareIn(roff, n);
    if (form == 0) {
      CHECK(gex::put_val(g_tm, g_next, dest, value), "put_val");
    } else if (form == 1) {
      gex::Event ev = gex::put_val_nb(g_tm, g_next, dest, value);
      CheckNbEvent(ev, n, g_next, "put_val_nb");
      ev.wait();
    } else {
      CHECK(gex::put_val_nbi(g_tm, g_next, dest, value), "put_val_nbi");
      gex::nbi_wait(gex::ec::put);
    }
    const Bytes* view = ReadIn(roff, n);
    CHECK(std::memcmp(view, &value, n) == 0,
          "value form %d of %zu bytes: wrong bytes", form, n);
    CheckGuards(view, n, "put_val");
    // Read back from the peer.
    const T got = gex::get_val(g_tm, g_next, dest);
    CHECK(std::memcmp(&got, &value, n) == 0, "get_val of %zu bytes", n);
  }
  // And from SRC, where the pattern is known.
  const size_t soff = 17 + seq * 4099;
  const T got = gex::get_val(
      g_tm, g_prev,
      reinterpret_cast<const T*>(g_owner[g_prev] + kSrcOff + soff));
  Bytes expected[sizeof(T)];
  Fill(expected, n, 1000 + g_prev, soff);
  CHECK(std::memcmp(&got, expected, n) == 0, "get_val of %zu bytes from SRC",
        n);
}

template <size_t N>
Raw<N> RawValue(int seed) {
  Raw<N> r;
  for (size_t i = 0; i < N; ++i)
    r.b[i] = static_cast<Bytes>(seed * 17 + i * 29 + 3);
  return r;
}

[[noreturn]] void Values() {
  int seq = 0;
  ValueCase(uint8_t{0xA7}, seq++);
  ValueCase(int8_t{-3}, seq++);
  ValueCase(uint16_t{0xBEEF}, seq++);
  ValueCase(int16_t{-12345}, seq++);
  ValueCase(RawValue<3>(1), seq++);
  ValueCase(uint32_t{0xDEADBEEF}, seq++);
  ValueCase(int32_t{-2000000000}, seq++);
  ValueCase(3.25f, seq++);
  ValueCase(RawValue<5>(2), seq++);
  ValueCase(RawValue<6>(3), seq++);
  ValueCase(RawValue<7>(4), seq++);
  ValueCase(uint64_t{0x8877665544332211ull}, seq++);
  ValueCase(int64_t{-1}, seq++);
  ValueCase(-2.5e300, seq++);
  Finish("values ok");
}

// ---------------------------------------------------------------------------
// am: typed handlers with 0..16 arguments.

enum class Tint : uint8_t { kA = 3, kB = 250 };

// The type of argument I: a cycle over every kind an argument may be.
template <size_t I>
using ArgType =
    std::tuple_element_t<I % 9,
                         std::tuple<int32_t, uint32_t, int16_t, uint16_t,
                                    int8_t, uint8_t, bool, Tint, int32_t>>;

// Argument I of a message from `src` with `nargs` arguments: extremes of
// its type and values that depend on the position, arity and sender.
template <size_t I>
ArgType<I> ArgValue(gex::Rank src, size_t nargs) {
  using T = ArgType<I>;
  const uint32_t mix =
      static_cast<uint32_t>(I * 2654435761u + nargs * 40503u + src * 97u);
  if constexpr (std::is_same_v<T, bool>) {
    return (mix >> 7) % 2 == 1;
  } else if constexpr (std::is_enum_v<T>) {
    return mix % 2 == 0 ? Tint::kA : Tint::kB;
  } else {
    switch ((I + nargs) % 3) {
      case 0:
        return std::numeric_limits<T>::min();
      case 1:
        return std::numeric_limits<T>::max();
      default:
        return static_cast<T>(mix);
    }
  }
}

template <size_t... I>
bool ArgsMatch([[maybe_unused]] gex::Rank src, const ArgType<I>&... a) {
  return ((a == ArgValue<I>(src, sizeof...(I))) && ...);
}

// Counters: requests handled here, replies received here.
int g_requests = 0;
int g_replies = 0;
int g_bad = 0;  // handler checks that failed (reported by the main loop)
std::string g_bad_what;

void Bad(const std::string& what) {
  if (g_bad++ == 0) g_bad_what = what;
}

// The payload of a message of `nargs` arguments, of `n` bytes, from `src`.
uint32_t PayloadSeed(gex::Rank src, size_t nargs) {
  return 7000 + static_cast<uint32_t>(src * 131 + nargs);
}
bool PayloadOk(std::span<const std::byte> p, size_t n, gex::Rank src,
               size_t nargs) {
  if (p.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (static_cast<Bytes>(p[i]) != Pattern(PayloadSeed(src, nargs), i)) {
      return false;
    }
  }
  return true;
}

constexpr size_t kAmLongReplyOff = kLocalOff;  // in the requester's segment
size_t g_expect_bytes = 0;  // payload size of the message in flight

template <size_t... I>
void ShortRep(gex::Token t, ArgType<I>... a) {
  if (!t.is_request() && ArgsMatch<I...>(g_me, a...)) {
    ++g_replies;
  } else {
    Bad("short reply, " + std::to_string(sizeof...(I)) + " args");
  }
}
template <size_t... I>
void ShortReq(gex::Token t, ArgType<I>... a) {
  ++g_requests;
  if (!t.is_request() || t.source() != g_prev ||
      !ArgsMatch<I...>(g_prev, a...)) {
    Bad("short request, " + std::to_string(sizeof...(I)) + " args");
  }
  // The reply carries the requester's values back.
  gex::reply_short<ShortRep<I...>>(t, ArgValue<I>(t.source(), sizeof...(I))...);
}

template <size_t... I>
void PayloadRep(gex::Token t, std::span<const std::byte> p, ArgType<I>... a) {
  constexpr size_t nargs = sizeof...(I);
  if (!t.is_request() && ArgsMatch<I...>(g_me, a...) &&
      PayloadOk(p, g_expect_bytes, g_me, nargs) &&
      (!t.is_long() ||
       p.data() == reinterpret_cast<std::byte*>(g_base + kAmLongReplyOff))) {
    ++g_replies;
  } else {
    Bad(std::string(t.is_long() ? "long" : "medium") + " reply, " +
        std::to_string(nargs) + " args, " + std::to_string(p.size()) +
        " bytes");
  }
}
template <size_t... I>
void PayloadReq(gex::Token t, std::span<const std::byte> p, ArgType<I>... a) {
  constexpr size_t nargs = sizeof...(I);
  ++g_requests;
  const gex::Rank src = t.source();
  if (!t.is_request() || src != g_prev || !ArgsMatch<I...>(src, a...) ||
      !PayloadOk(p, p.size(), src, nargs) ||
      (t.is_long() &&
       p.data() != reinterpret_cast<std::byte*>(g_base + kInOff))) {
    Bad(std::string(t.is_long() ? "long" : "medium") + " request, " +
        std::to_string(nargs) + " args");
  }
  if (t.is_long()) {
    gex::reply_long<PayloadRep<I...>>(t, p, g_owner[src] + kAmLongReplyOff,
                                      ArgValue<I>(src, nargs)...);
  } else {
    gex::reply_medium<PayloadRep<I...>>(t, p, ArgValue<I>(src, nargs)...);
  }
}

template <size_t... I>
void RegisterArity(gex::Endpoint ep, std::index_sequence<I...>) {
  gex::register_handlers<ShortReq<I...>, ShortRep<I...>, PayloadReq<I...>,
                         PayloadRep<I...>>(ep);
  CHECK(gex::handler_index<ShortReq<I...>>() >= GEX_AM_INDEX_BASE &&
            gex::handler_index<PayloadRep<I...>>() >= GEX_AM_INDEX_BASE,
        "indices not assigned");
}
template <size_t... N>
void RegisterAll(gex::Endpoint ep, std::index_sequence<N...>) {
  (RegisterArity(ep, std::make_index_sequence<N>()), ...);
}

void AwaitReply(int expected, const char* what, size_t nargs) {
  gex::poll_until([&] { return g_replies >= expected || g_bad > 0; });
  CHECK(g_bad == 0, "%s", g_bad_what.c_str());
  CHECK(g_replies == expected, "%s with %zu args: %d replies, expected %d",
        what, nargs, g_replies, expected);
}

// One message of each category with nargs = sizeof...(I) to the next rank,
// each waited for its reply.
template <size_t... I>
void SendArity(std::index_sequence<I...>, size_t medium_bytes,
               size_t long_bytes, bool immediate) {
  constexpr size_t nargs = sizeof...(I);
  const gex::Rank me = g_me;
  if (immediate) {
    while (!gex::request_short<ShortReq<I...>>(
        gex::flags::immediate, g_tm, g_next, ArgValue<I>(me, nargs)...)) {
      gex::poll();
    }
  } else {
    CHECK(gex::request_short<ShortReq<I...>>(g_tm, g_next,
                                             ArgValue<I>(me, nargs)...),
          "request_short");
  }
  AwaitReply(g_replies + 1, "short", nargs);

  // Medium: the payload as a span of bytes, from the heap.
  std::vector<Bytes>& heap = g_heap_store;
  Fill(heap.data(), medium_bytes, PayloadSeed(me, nargs), 0);
  g_expect_bytes = medium_bytes;
  CHECK(gex::request_medium<PayloadReq<I...>>(
            g_tm, g_next, std::span<const Bytes>(heap.data(), medium_bytes),
            ArgValue<I>(me, nargs)...),
        "request_medium");
  AwaitReply(g_replies + 1, "medium", nargs);

  // Long: from the segment, into the next rank's IN area; the reply lands
  // in this rank's LOCAL area.
  Bytes* src = g_base + kSrcOff + kArea / 2;
  Fill(src, long_bytes, PayloadSeed(me, nargs), 0);
  std::memset(g_base + kAmLongReplyOff, 0, long_bytes);
  g_expect_bytes = long_bytes;
  CHECK(gex::request_long<PayloadReq<I...>>(
            g_tm, g_next, std::span<const Bytes>(src, long_bytes),
            g_owner[g_next] + kInOff, ArgValue<I>(me, nargs)...),
        "request_long");
  AwaitReply(g_replies + 1, "long", nargs);
  Verify(g_base + kAmLongReplyOff, long_bytes, PayloadSeed(me, nargs), 0,
         "long reply payload");
}

template <size_t... N>
void SendAll(std::index_sequence<N...>, int pass) {
  const size_t max_medium = gex::max_medium();
  const size_t max_long = std::min<size_t>(gex::max_long(), kArea / 2);
  static constexpr size_t kMediumSizes[] = {0, 1, 8, 13, 4095, 4097};
  static constexpr size_t kLongSizes[] = {0, 1, 8, 8195, 4097, 30001};
  (SendArity(
       std::make_index_sequence<N>(),
       N == 16 ? max_medium
               : std::min(max_medium, kMediumSizes[(N + pass) % 6]),
       N == 15 ? max_long : std::min(max_long, kLongSizes[(N + pass) % 6]),
       pass == 1),
   ...);
}

// A payload handler for element spans other than bytes: the payload of a
// vector<uint32_t> arrives as its bytes.
int g_words_seen = 0;
void Words(gex::Token, std::span<const std::byte> p, uint16_t count) {
  if (p.size() != count * sizeof(uint32_t)) {
    Bad("words: size");
    return;
  }
  for (uint16_t i = 0; i < count; ++i) {
    uint32_t w;
    std::memcpy(&w, p.data() + i * sizeof w, sizeof w);
    if (w != 0x01000000u * i + g_prev) Bad("words: value");
  }
  ++g_words_seen;
}

[[noreturn]] void Am(gex::Client& client) {
  const gex::Endpoint ep = client.endpoint();
  RegisterAll(ep, std::make_index_sequence<17>());
  gex::register_handler<Words>(ep, 250);
  CHECK(gex::handler_index<Words>() == 250, "fixed index");
  // An index already taken is refused, as a gex::Error, and the handler
  // keeps its index.
  gex_System_SetVerboseErrors(0);
  const gex_AM_Index_t before = gex::handler_index<ShortReq<>>();
  try {
    gex::register_handler<ShortReq<>>(ep, 250);
    CHECK(false, "a taken index did not throw");
  } catch (const gex::Error& e) {
    CHECK(e.code() == GASNET_ERR_BAD_ARG, "code %d", e.code());
    CHECK(std::strcmp(e.call(), "gex_EP_RegisterHandlers") == 0, "call %s",
          e.call());
  }
  CHECK(gex::handler_index<ShortReq<>>() == before, "index changed");
  // So is a second client.
  try {
    int argc = 0;
    char** argv = nullptr;
    gex::Client second(argc, argv, "second");
    CHECK(false, "a second client did not throw");
  } catch (const gex::Error& e) {
    CHECK(e.code() == GASNET_ERR_RESOURCE, "code %d", e.code());
    CHECK(std::string(e.what()).find("gex_Client_Init") != std::string::npos,
          "what: %s", e.what());
  }
  gex_System_SetVerboseErrors(1);
  g_tm.barrier();

  SendAll(std::make_index_sequence<17>(), 0);
  SendAll(std::make_index_sequence<17>(), 1);
  const std::vector<uint32_t> words = [] {
    std::vector<uint32_t> w(300);
    for (uint32_t i = 0; i < w.size(); ++i) w[i] = 0x01000000u * i + g_me;
    return w;
  }();
  CHECK(gex::request_medium<Words>(g_tm, g_next, words,
                                   static_cast<uint16_t>(words.size())),
        "request_medium of a vector");
  gex::poll_until([] { return g_words_seen == 1 || g_bad > 0; });
  CHECK(g_bad == 0, "%s", g_bad_what.c_str());
  // Every request from the previous rank has been handled once it has had
  // all its replies: the barrier makes sure of that.
  g_tm.barrier();
  CHECK(g_bad == 0, "%s", g_bad_what.c_str());
  const int expected = 2 * 17 * 3;
  CHECK(g_requests == expected && g_replies == expected,
        "requests %d replies %d, expected %d", g_requests, g_replies, expected);
  Finish("am ok requests=" + std::to_string(g_requests) +
         " replies=" + std::to_string(g_replies));
}

}  // namespace

int main(int argc, char** argv) {
  gex::Client client(argc, argv, "CPP_TEST");
  Start(client);
  CHECK(argc == 2, "usage: cpp_client MODE");
  const std::string mode = argv[1];
  if (mode == "forms") Forms();
  if (mode == "events") Events();
  if (mode == "nbi") Nbi();
  if (mode == "values") Values();
  if (mode == "am") Am(client);
  CHECK(false, "unknown mode %s", mode.c_str());
}
