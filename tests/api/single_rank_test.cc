// Unit tests of the GASNet-EX C API in one process: a singleton job (no
// launcher, GASNET_PSHM_NODES unset) on the smp conduit in SEQ mode, every
// call made to this rank itself. The job tests next to this file run real
// multi-rank jobs from the outside; these look at each call's results,
// return codes and messages from the inside.
//
// The client is initialised once per process, by the first test that needs
// it (SingleRankTest::SetUp): gex_Client_Init, a segment of kSegmentRequest
// bytes, and every handler the tests use. Death tests run in the
// "threadsafe" style, so each one re-executes this program for the one
// test and starts a job of its own; the "fresh process" tests (no fixture)
// use that to run gex_Client_Init themselves, in a process that has not
// called it yet (before init, before attach, GEX_RMA_FORCE_AM=1).
//
// Segment layout (offsets from the segment's base):
//   kSweepRequestArea  Long requests of the category x argument sweep
//   kSweepReplyArea    their Long replies
//   kSizedRequestArea  maximum-size Long requests
//   kSizedReplyArea    maximum-size Long replies
//   kNpamRequestArea   negotiated-payload Long requests
//   kNpamReplyArea     negotiated-payload Long replies
//   kRmaArea           RMA destinations and sources (to the end)
#include <gasnetex.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace {

// ---------------------------------------------------------------------------
// Layout and payloads.

enum Cat { kShort = 0, kMedium = 1, kLong = 2 };
constexpr unsigned kCats = 3;
constexpr unsigned kMaxArgs = 16;
constexpr unsigned kCounts = kMaxArgs + 1;
const char* const kCatName[kCats] = {"Short", "Medium", "Long"};

constexpr size_t kSweepSlot = 8192;
constexpr size_t kSweepRequestArea = 0;
constexpr size_t kSweepReplyArea = 160 * 1024;
constexpr size_t kSizedRequestArea = 320 * 1024;
constexpr size_t kSizedReplyArea = 400 * 1024;
constexpr size_t kNpamRequestArea = 512 * 1024;
constexpr size_t kNpamReplyArea = 600 * 1024;
constexpr size_t kRmaArea = 1024 * 1024;
constexpr size_t kSegmentRequest = 2 * 1024 * 1024 + 100;  // not page-sized

unsigned char PatternByte(size_t i, unsigned seed) {
  return static_cast<unsigned char>((i * 131u + seed * 29u + (i >> 9)) & 0xff);
}
void Fill(void* p, size_t n, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) b[i] = PatternByte(i, seed);
}
std::vector<unsigned char> Pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  Fill(v.data(), n, seed);
  return v;
}
bool HasPattern(const void* p, size_t n, unsigned seed) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    if (b[i] != PatternByte(i, seed)) return false;
  }
  return true;
}
bool AllBytes(const void* p, size_t n, unsigned char v) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    if (b[i] != v) return false;
  }
  return true;
}

// Argument i of a message with n arguments of category `cat` (the reply's
// differ from the request's): INT32_MIN, INT32_MAX, -1 and 0 among them.
gex_AM_Arg_t ArgValue(unsigned cat, unsigned n, unsigned i, bool reply) {
  static const uint32_t kSpecial[] = {0x80000000u, 0x7fffffffu, 0xffffffffu,
                                      0u};
  uint32_t v = i % 5 == 0 ? kSpecial[(i / 5) % 4]
                          : cat * 1000003u + n * 1009u + i * 31u + 7u;
  if (i % 2 == 1) v = 0u - v;
  if (reply) v = ~v ^ 0x5a5a5a5au;
  return static_cast<gex_AM_Arg_t>(v);
}
size_t PayloadLen(unsigned cat, unsigned n, bool reply) {
  if (cat == kShort) return 0;
  return 1 + n * 97 + (reply ? 13 : 0) + (cat == kLong ? 5000 : 0);
}
unsigned Seed(unsigned cat, unsigned n, bool reply) {
  return cat * 100 + n * 2 + (reply ? 1 : 0);
}

// ---------------------------------------------------------------------------
// The job.

struct Job {
  int init_rc = -1;
  gex_Client_t client = GEX_CLIENT_INVALID;
  gex_EP_t ep = GEX_EP_INVALID;
  gex_TM_t tm = GEX_TM_INVALID;
  // Observed between init and attach.
  gex_Segment_t ep_segment_before_attach = GEX_SEGMENT_INVALID;
  size_t lub_medium_before_attach = 0;
  size_t lub_long_before_attach = 0;
  int attach_rc = -1;
  gex_Segment_t seg = GEX_SEGMENT_INVALID;
  unsigned char* base = nullptr;
  uintptr_t size = 0;
  int register_rc = -1;
  unsigned registered = 0;  // client handlers registered at start-up
};

Job g_job;

unsigned char* At(size_t offset) { return g_job.base + offset; }

// Polls until `done` holds (true) or 20 s pass (false).
bool PollUntil(const std::function<bool()>& done) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    gex_AM_Poll();
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}
// Polls `rounds` times.
void PollFor(int rounds) {
  for (int i = 0; i < rounds; ++i) gex_AM_Poll();
}

// ---------------------------------------------------------------------------
// The category x argument-count sweep: one handler per (category, count),
// registered for Requests and Replies. The Request handler checks its
// token, arguments and payload and replies with the same category and
// count; the Reply handler checks its own.

gex_AM_Fn_t g_sweep_fn[kCats][kCounts];
gex_AM_Index_t g_sweep_index[kCats][kCounts];
char g_sweep_name[kCats][kCounts][32];
int g_sweep_cdata[kCats][kCounts];
int g_sweep_requests[kCats][kCounts];
int g_sweep_replies[kCats][kCounts];

void* SweepLongDest(unsigned n, bool reply) {
  return At((reply ? kSweepReplyArea : kSweepRequestArea) + n * kSweepSlot);
}

gex_Flags_t CatFlag(unsigned cat) {
  return cat == kShort    ? GEX_FLAG_AM_SHORT
         : cat == kMedium ? GEX_FLAG_AM_MEDIUM
                          : GEX_FLAG_AM_LONG;
}

void OnSweep(unsigned cat, unsigned n, gex_Token_t token, void* buf,
             size_t nbytes, const gex_AM_Arg_t* a) {
  SCOPED_TRACE(testing::Message() << kCatName[cat] << " with " << n << " args");
  gex_Token_Info_t info;
  std::memset(&info, 0, sizeof info);
  EXPECT_EQ(gex_Token_Info(token, &info, GEX_TI_ALL), GEX_TI_ALL);
  EXPECT_EQ(info.gex_srcrank, 0u);
  EXPECT_EQ(info.gex_ep, g_job.ep);
  const gex_AM_Entry_t* e = info.gex_entry;
  EXPECT_NE(e, nullptr);
  if (e != nullptr) {
    EXPECT_EQ(e->gex_index, g_sweep_index[cat][n]);
    EXPECT_EQ(e->gex_fnptr, g_sweep_fn[cat][n]);
    EXPECT_EQ(e->gex_flags, CatFlag(cat) | GEX_FLAG_AM_REQREP);
    EXPECT_EQ(e->gex_nargs, n);
    EXPECT_EQ(e->gex_cdata, &g_sweep_cdata[cat][n]);
    EXPECT_STREQ(e->gex_name, g_sweep_name[cat][n]);
  }
  const bool is_req = info.gex_is_req != 0;
  EXPECT_EQ(info.gex_is_long != 0, cat == kLong);
  // Only the fields asked for are promised; each alone works.
  gex_Token_Info_t one;
  EXPECT_EQ(gex_Token_Info(token, &one, GEX_TI_SRCRANK), GEX_TI_SRCRANK);
  EXPECT_EQ(one.gex_srcrank, 0u);
  for (unsigned i = 0; i < n; ++i) {
    EXPECT_EQ(a[i], ArgValue(cat, n, i, !is_req)) << "argument " << i;
  }
  if (cat != kShort) {
    EXPECT_EQ(nbytes, PayloadLen(cat, n, !is_req));
    EXPECT_TRUE(HasPattern(buf, nbytes, Seed(cat, n, !is_req)));
  }
  if (cat == kLong) {
    EXPECT_EQ(buf, SweepLongDest(n, !is_req));
  }
  if (!is_req) {
    ++g_sweep_replies[cat][n];
    return;
  }
  ++g_sweep_requests[cat][n];
  if (cat != kShort) {
    EXPECT_EQ(gex_Token_MaxReplyMedium(token, GEX_EVENT_NOW, 0, n),
              gex_AM_LUBReplyMedium());
    EXPECT_EQ(gex_Token_MaxReplyLong(token, GEX_EVENT_NOW, 0, n),
              gex_AM_LUBReplyLong());
  }
  gex_AM_Arg_t ra[kMaxArgs];
  for (unsigned i = 0; i < n; ++i) ra[i] = ArgValue(cat, n, i, true);
  const std::vector<unsigned char> p =
      Pattern(PayloadLen(cat, n, true), Seed(cat, n, true));
  gex_Event_t lc = GEX_EVENT_NO_OP;
  gex_Event_t* lc_opt = n % 2 == 1 ? &lc : GEX_EVENT_NOW;
  int rc = -1;
  switch (cat) {
    case kShort:
      rc = _gex_AM_ReplyShortV(token, g_sweep_index[cat][n], 0, n, ra);
      break;
    case kMedium:
      rc = _gex_AM_ReplyMediumV(token, g_sweep_index[cat][n], p.data(),
                                p.size(), lc_opt, 0, n, ra);
      break;
    default:
      rc = _gex_AM_ReplyLongV(token, g_sweep_index[cat][n], p.data(), p.size(),
                              SweepLongDest(n, true), lc_opt, 0, n, ra);
      break;
  }
  EXPECT_EQ(rc, 0);
  if (cat != kShort && lc_opt == &lc) {
    EXPECT_EQ(lc, GEX_EVENT_INVALID);
  }
}

template <size_t>
using Arg = gex_AM_Arg_t;

template <typename Seq>
struct SweepHandlers;
template <size_t... I>
struct SweepHandlers<std::index_sequence<I...>> {
  static constexpr unsigned kN = sizeof...(I);
  static void Short(gex_Token_t t, Arg<I>... a) {
    const gex_AM_Arg_t v[] = {a..., 0};
    OnSweep(kShort, kN, t, nullptr, 0, v);
  }
  static void Medium(gex_Token_t t, void* buf, size_t nbytes, Arg<I>... a) {
    const gex_AM_Arg_t v[] = {a..., 0};
    OnSweep(kMedium, kN, t, buf, nbytes, v);
  }
  static void Long(gex_Token_t t, void* buf, size_t nbytes, Arg<I>... a) {
    const gex_AM_Arg_t v[] = {a..., 0};
    OnSweep(kLong, kN, t, buf, nbytes, v);
  }
};

template <size_t... N>
void FillSweepFns(std::index_sequence<N...>) {
  ((g_sweep_fn[kShort][N] = reinterpret_cast<gex_AM_Fn_t>(
        &SweepHandlers<std::make_index_sequence<N>>::Short),
    g_sweep_fn[kMedium][N] = reinterpret_cast<gex_AM_Fn_t>(
        &SweepHandlers<std::make_index_sequence<N>>::Medium),
    g_sweep_fn[kLong][N] = reinterpret_cast<gex_AM_Fn_t>(
        &SweepHandlers<std::make_index_sequence<N>>::Long)),
   ...);
}

// ---------------------------------------------------------------------------
// Maximum-size payloads: a Request of `len` bytes (argument 0) is answered
// with a Reply of the largest size gex_Token_MaxReply* allows.

gex_AM_Index_t g_sized_medium = 0;
gex_AM_Index_t g_sized_long = 0;
size_t g_sized_request_len = 0;        // what the last request carried
void* g_sized_request_dest = nullptr;  // where a Long request must land
size_t g_sized_reply_len = 0;          // what the last reply carried
int g_sized_replies = 0;

void SizedHandler(gex_Token_t token, void* buf, size_t nbytes,
                  gex_AM_Arg_t len) {
  gex_Token_Info_t info;
  gex_Token_Info(token, &info, GEX_TI_ALL);
  const bool is_long = info.gex_is_long != 0;
  if (!info.gex_is_req) {
    EXPECT_EQ(nbytes, static_cast<size_t>(len));
    EXPECT_TRUE(HasPattern(buf, nbytes, 78));
    if (is_long) {
      EXPECT_EQ(buf, At(kSizedReplyArea));
    }
    g_sized_reply_len = nbytes;
    ++g_sized_replies;
    return;
  }
  EXPECT_EQ(nbytes, static_cast<size_t>(len));
  EXPECT_TRUE(HasPattern(buf, nbytes, 77));
  if (is_long && nbytes != 0) {
    EXPECT_EQ(buf, g_sized_request_dest);
  }
  g_sized_request_len = nbytes;
  const size_t max = is_long
                         ? gex_Token_MaxReplyLong(token, GEX_EVENT_NOW, 0, 1)
                         : gex_Token_MaxReplyMedium(token, GEX_EVENT_NOW, 0, 1);
  const std::vector<unsigned char> p = Pattern(max, 78);
  const auto n = static_cast<gex_AM_Arg_t>(max);
  if (is_long) {
    EXPECT_EQ(gex_AM_ReplyLong1(token, g_sized_long, p.data(), p.size(),
                                At(kSizedReplyArea), GEX_EVENT_NOW, 0, n),
              0);
  } else {
    EXPECT_EQ(gex_AM_ReplyMedium1(token, g_sized_medium, p.data(), p.size(),
                                  GEX_EVENT_NOW, 0, n),
              0);
  }
}

// ---------------------------------------------------------------------------
// Negotiated payload. Arguments: (mode, len). A Request handler replies
// with its own category, by mode:
//   0  Prepare in a GASNet buffer (the whole of it filled), Commit len bytes
//   1  Prepare from a client buffer (filled after Prepare), Commit len bytes
//   2  Prepare and Cancel, then a Short reply to g_npam_done
// Payload bytes: Pattern(len, 80 + mode) for requests, 90 + mode replies.

gex_AM_Index_t g_npam_medium = 0;
gex_AM_Index_t g_npam_long = 0;
gex_AM_Index_t g_npam_done = 0;
int g_npam_requests = 0;
int g_npam_replies = 0;
int g_npam_done_replies = 0;
size_t g_npam_last_len = 0;

void NpamReply(gex_Token_t token, bool is_long, int mode, size_t len) {
  const gex_AM_Index_t h = is_long ? g_npam_long : g_npam_medium;
  void* dest = At(kNpamReplyArea);
  const auto m = static_cast<gex_AM_Arg_t>(mode);
  const auto l = static_cast<gex_AM_Arg_t>(len);
  if (mode == 0) {
    gex_AM_SrcDesc_t sd =
        is_long ? gex_AM_PrepareReplyLong(token, nullptr, len, len + 10, dest,
                                          nullptr, 0, 2)
                : gex_AM_PrepareReplyMedium(token, nullptr, len, len + 10,
                                            nullptr, 0, 2);
    EXPECT_NE(sd, GEX_AM_SRCDESC_NO_OP);
    EXPECT_EQ(gex_AM_SrcDescSize(sd), len + 10);
    // The bytes past `len` must not arrive.
    std::memset(gex_AM_SrcDescAddr(sd), 0x5c, len + 10);
    Fill(gex_AM_SrcDescAddr(sd), len, 90);
    if (is_long) {
      gex_AM_CommitReplyLong2(sd, h, len, dest, m, l);
    } else {
      gex_AM_CommitReplyMedium2(sd, h, len, m, l);
    }
  } else if (mode == 1) {
    std::vector<unsigned char> buf(len + 1);
    gex_Event_t lc = GEX_EVENT_NO_OP;
    gex_AM_SrcDesc_t sd =
        is_long
            ? gex_AM_PrepareReplyLong(token, buf.data(), 0, len, dest, &lc, 0,
                                      2)
            : gex_AM_PrepareReplyMedium(token, buf.data(), 0, len, &lc, 0, 2);
    EXPECT_EQ(gex_AM_SrcDescAddr(sd), buf.data());
    Fill(buf.data(), len, 91);
    if (is_long) {
      gex_AM_CommitReplyLong(sd, h, len, dest, m, l);  // variadic form
    } else {
      gex_AM_CommitReplyMedium(sd, h, len, m, l);
    }
    EXPECT_EQ(lc, GEX_EVENT_INVALID);
  } else {
    gex_AM_SrcDesc_t sd =
        is_long
            ? gex_AM_PrepareReplyLong(token, nullptr, 0, 100, dest, nullptr, 0,
                                      2)
            : gex_AM_PrepareReplyMedium(token, nullptr, 0, 100, nullptr, 0, 2);
    std::memset(gex_AM_SrcDescAddr(sd), 0x77, gex_AM_SrcDescSize(sd));
    EXPECT_EQ(is_long ? gex_AM_CancelReplyLong(sd, 0)
                      : gex_AM_CancelReplyMedium(sd, 0),
              GASNET_OK);
    // Still allowed to reply once.
    EXPECT_EQ(gex_AM_ReplyShort1(token, g_npam_done, 0, m), 0);
  }
}

void NpamHandler(gex_Token_t token, void* buf, size_t nbytes, gex_AM_Arg_t mode,
                 gex_AM_Arg_t len) {
  gex_Token_Info_t info;
  gex_Token_Info(token, &info, GEX_TI_ALL);
  const bool is_long = info.gex_is_long != 0;
  const auto n = static_cast<size_t>(len);
  EXPECT_EQ(nbytes, n);
  g_npam_last_len = nbytes;
  if (info.gex_is_req) {
    ++g_npam_requests;
    EXPECT_TRUE(HasPattern(buf, nbytes, 80 + mode));
    if (is_long && nbytes != 0) {
      EXPECT_EQ(buf, At(kNpamRequestArea));
    }
    NpamReply(token, is_long, mode, n);
  } else {
    ++g_npam_replies;
    EXPECT_TRUE(HasPattern(buf, nbytes, 90 + mode));
    if (is_long && nbytes != 0) {
      EXPECT_EQ(buf, At(kNpamReplyArea));
      // Nothing past the committed length (mode 0 filled 10 more bytes).
      EXPECT_TRUE(AllBytes(At(kNpamReplyArea) + n, 16, 0xee));
    }
  }
}

void NpamDoneHandler(gex_Token_t token, gex_AM_Arg_t mode) {
  gex_Token_Info_t info;
  gex_Token_Info(token, &info, GEX_TI_IS_REQ);
  EXPECT_FALSE(info.gex_is_req);
  EXPECT_EQ(mode, 2);
  ++g_npam_done_replies;
}

// ---------------------------------------------------------------------------
// IMMEDIATE: numbered Short requests (and Medium/Long ones that must be
// refused), checked to arrive once each and in order.

gex_AM_Index_t g_imm_short = 0;
gex_AM_Index_t g_imm_payload = 0;
int g_imm_received = 0;
int g_imm_payloads = 0;

void ImmShortHandler(gex_Token_t, gex_AM_Arg_t seq) {
  EXPECT_EQ(seq, g_imm_received);
  ++g_imm_received;
}
void ImmPayloadHandler(gex_Token_t, void*, size_t, gex_AM_Arg_t) {
  ++g_imm_payloads;
}

// ---------------------------------------------------------------------------
// Misuse from inside handlers: argument 0 says what to do.

gex_AM_Index_t g_misuse = 0;
enum Misuse : gex_AM_Arg_t {
  kRequestInHandler = 1,
  kReplyTwice = 2,
  kRmaInHandler = 3,
  kBarrierInHandler = 4,
  kCollInHandler = 5,
  kReplyFromReply = 6,  // the request replies with kReplyFromReplyStep2
  kReplyFromReplyStep2 = 7,
  kAttachInHandler = 8,
  kPrepareRequestInHandler = 9,
  kReplyToRequestOnlyHandler = 10,
  kBarrierNbInHandler = 11,
  kWaitInHandler = 12,  // waits on g_pending_event
};

gex_Event_t g_pending_event = GEX_EVENT_INVALID;

void MisuseHandler(gex_Token_t token, gex_AM_Arg_t what) {
  switch (what) {
    case kRequestInHandler:
      gex_AM_RequestShort0(g_job.tm, 0, g_imm_short, 0);
      break;
    case kReplyTwice:
      gex_AM_ReplyShort1(token, g_misuse, 0, 0);
      gex_AM_ReplyShort1(token, g_misuse, 0, 0);
      break;
    case kRmaInHandler: {
      int x = 0;
      gex_RMA_PutBlocking(g_job.tm, 0, At(kRmaArea), &x, sizeof x, 0);
      break;
    }
    case kBarrierInHandler:
      gex_Coll_BarrierBlocking(g_job.tm, 0);
      break;
    case kCollInHandler: {
      int x = 0, y = 0;
      gex_Coll_BroadcastNB(g_job.tm, 0, &y, &x, sizeof x, 0);
      break;
    }
    case kReplyFromReply:
      gex_AM_ReplyShort1(token, g_misuse, 0, kReplyFromReplyStep2);
      break;
    case kReplyFromReplyStep2:
      gex_AM_ReplyShort1(token, g_misuse, 0, 0);
      break;
    case kAttachInHandler: {
      gex_Segment_t s;
      gex_Segment_Attach(&s, g_job.tm, 4096);
      break;
    }
    case kPrepareRequestInHandler:
      gex_AM_PrepareRequestMedium(g_job.tm, 0, nullptr, 0, 8, nullptr, 0, 0);
      break;
    case kReplyToRequestOnlyHandler:
      gex_AM_ReplyShort1(token, g_imm_short, 0, 0);
      break;
    case kBarrierNbInHandler:
      gex_Coll_BarrierNB(g_job.tm, 0);
      break;
    case kWaitInHandler:
      gex_Event_Wait(g_pending_event);
      break;
    default:
      break;
  }
}

// ---------------------------------------------------------------------------
// Start-up, once per process.

void StartJob() {
  unsetenv("GASNET_PSHM_NODES");
  g_job.init_rc = gex_Client_Init(&g_job.client, &g_job.ep, &g_job.tm,
                                  "single_rank_test", nullptr, nullptr, 0);
  if (g_job.init_rc != GASNET_OK) return;
  g_job.ep_segment_before_attach = gex_EP_QuerySegment(g_job.ep);
  g_job.lub_medium_before_attach = gex_AM_LUBRequestMedium();
  g_job.lub_long_before_attach = gex_AM_LUBRequestLong();
  g_job.attach_rc = gex_Segment_Attach(&g_job.seg, g_job.tm, kSegmentRequest);
  if (g_job.attach_rc != GASNET_OK) return;
  g_job.base = static_cast<unsigned char*>(gex_Segment_QueryAddr(g_job.seg));
  g_job.size = gex_Segment_QuerySize(g_job.seg);

  FillSweepFns(std::make_index_sequence<kCounts>());
  std::vector<gex_AM_Entry_t> table;
  for (unsigned c = 0; c < kCats; ++c) {
    for (unsigned n = 0; n < kCounts; ++n) {
      std::snprintf(g_sweep_name[c][n], sizeof g_sweep_name[c][n],
                    "sweep %s %u", kCatName[c], n);
      table.push_back({0, g_sweep_fn[c][n], CatFlag(c) | GEX_FLAG_AM_REQREP, n,
                       &g_sweep_cdata[c][n], g_sweep_name[c][n]});
    }
  }
  const auto fn = [](auto* f) { return reinterpret_cast<gex_AM_Fn_t>(f); };
  const size_t first_other = table.size();
  table.push_back({0, fn(&SizedHandler),
                   GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQREP, 1, nullptr,
                   "sized medium"});
  table.push_back({0, fn(&SizedHandler), GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQREP,
                   1, nullptr, "sized long"});
  table.push_back({0, fn(&NpamHandler), GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQREP,
                   2, nullptr, "npam medium"});
  table.push_back({0, fn(&NpamHandler), GEX_FLAG_AM_LONG | GEX_FLAG_AM_REQREP,
                   2, nullptr, "npam long"});
  table.push_back({0, fn(&NpamDoneHandler),
                   GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 1, nullptr,
                   "npam done"});
  table.push_back({0, fn(&ImmShortHandler),
                   GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, nullptr,
                   "immediate short"});
  table.push_back({0, fn(&ImmPayloadHandler),
                   GEX_FLAG_AM_MEDLONG | GEX_FLAG_AM_REQUEST, 1, nullptr,
                   "immediate payload"});
  table.push_back({0, fn(&MisuseHandler),
                   GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQREP, 1, nullptr,
                   "misuse"});
  g_job.register_rc =
      gex_EP_RegisterHandlers(g_job.ep, table.data(), table.size());
  if (g_job.register_rc != GASNET_OK) return;
  g_job.registered = static_cast<unsigned>(table.size());
  for (unsigned c = 0; c < kCats; ++c) {
    for (unsigned n = 0; n < kCounts; ++n) {
      g_sweep_index[c][n] = table[c * kCounts + n].gex_index;
    }
  }
  g_sized_medium = table[first_other + 0].gex_index;
  g_sized_long = table[first_other + 1].gex_index;
  g_npam_medium = table[first_other + 2].gex_index;
  g_npam_long = table[first_other + 3].gex_index;
  g_npam_done = table[first_other + 4].gex_index;
  g_imm_short = table[first_other + 5].gex_index;
  g_imm_payload = table[first_other + 6].gex_index;
  g_misuse = table[first_other + 7].gex_index;
}

class SingleRankTest : public testing::Test {
 protected:
  void SetUp() override {
    static const bool started = (StartJob(), true);
    (void)started;
    ASSERT_EQ(g_job.init_rc, GASNET_OK);
    ASSERT_EQ(g_job.attach_rc, GASNET_OK);
    ASSERT_EQ(g_job.register_rc, GASNET_OK);
  }
  gex_TM_t tm() const { return g_job.tm; }
};

// Names for the test groups (each shares the process's one client).
using QueryTest = SingleRankTest;
using SegmentTest = SingleRankTest;
using RegisterTest = SingleRankTest;
using AmTest = SingleRankTest;
using NpamTest = SingleRankTest;
using RmaTest = SingleRankTest;
using CollTest = SingleRankTest;
using MisuseDeathTest = SingleRankTest;

// A regular expression for a fatal error naming `what`.
std::string Fatal(const std::string& what) {
  return "FATAL ERROR \\(proc 0\\): " + what;
}

// ---------------------------------------------------------------------------
// Queries.

TEST_F(QueryTest, TheJobIsOneRank) {
  EXPECT_EQ(gex_TM_QueryRank(tm()), 0u);
  EXPECT_EQ(gex_TM_QuerySize(tm()), 1u);
  EXPECT_EQ(gex_System_QueryJobRank(), 0u);
  EXPECT_EQ(gex_System_QueryJobSize(), 1u);
  EXPECT_EQ(gex_TM_TranslateRankToJobrank(tm(), 0), 0u);
  EXPECT_EQ(gex_TM_TranslateJobrankToRank(tm(), 0), 0u);
  EXPECT_EQ(gex_TM_TranslateJobrankToRank(tm(), 1), GEX_RANK_INVALID);

  gex_RankInfo_t* info = nullptr;
  gex_Rank_t count = 99, mine = 99;
  gex_System_QueryHostInfo(&info, &count, &mine);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(mine, 0u);
  EXPECT_EQ(info[0].gex_jobrank, 0u);
  info = nullptr;
  count = mine = 99;
  gex_System_QueryNbrhdInfo(&info, &count, &mine);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(mine, 0u);
  EXPECT_EQ(info[0].gex_jobrank, 0u);
  gex_System_QueryHostInfo(nullptr, nullptr, nullptr);  // all optional
  gex_System_QueryNbrhdInfo(nullptr, nullptr, nullptr);

  gex_Rank_t nbrhd_size = 9, nbrhd_rank = 9, host_size = 9, host_rank = 9;
  gex_System_QueryMyPosition(&nbrhd_size, &nbrhd_rank, &host_size, &host_rank);
  EXPECT_EQ(nbrhd_size, 1u);
  EXPECT_EQ(nbrhd_rank, 0u);
  EXPECT_EQ(host_size, 1u);
  EXPECT_EQ(host_rank, 0u);
  gex_System_QueryMyPosition(nullptr, nullptr, nullptr, nullptr);

  EXPECT_EQ(gex_System_QueryMaxThreads(), 1u);  // SEQ
  EXPECT_EQ(gex_System_QueryHiddenAMConcurrencyLevel(), 0);
}

TEST_F(QueryTest, ObjectsAndTheirData) {
  EXPECT_STREQ(gex_Client_QueryName(g_job.client), "single_rank_test");
  EXPECT_EQ(gex_Client_QueryFlags(g_job.client), 0u);
  EXPECT_EQ(gex_TM_QueryClient(tm()), g_job.client);
  EXPECT_EQ(gex_TM_QueryEP(tm()), g_job.ep);
  EXPECT_EQ(gex_EP_QueryClient(g_job.ep), g_job.client);
  EXPECT_EQ(gex_EP_QueryIndex(g_job.ep), 0);
  EXPECT_EQ(gex_EP_QueryFlags(g_job.ep), 0u);
  EXPECT_EQ(gex_TM_QueryFlags(tm()), 0u);

  int a = 0, b = 0, c = 0, d = 0;
  EXPECT_EQ(gex_Client_QueryCData(g_job.client), nullptr);
  gex_Client_SetCData(g_job.client, &a);
  gex_EP_SetCData(g_job.ep, &b);
  gex_TM_SetCData(tm(), &c);
  gex_Segment_SetCData(g_job.seg, &d);
  EXPECT_EQ(gex_Client_QueryCData(g_job.client), &a);
  EXPECT_EQ(gex_EP_QueryCData(g_job.ep), &b);
  EXPECT_EQ(gex_TM_QueryCData(tm()), &c);
  EXPECT_EQ(gex_Segment_QueryCData(g_job.seg), &d);
  gex_Client_SetCData(g_job.client, nullptr);
  gex_EP_SetCData(g_job.ep, nullptr);
  gex_TM_SetCData(tm(), nullptr);
  gex_Segment_SetCData(g_job.seg, nullptr);
  EXPECT_EQ(gex_Client_QueryCData(g_job.client), nullptr);
}

TEST_F(QueryTest, ConfigurationAndErrorNames) {
  EXPECT_NE(std::strstr(GASNET_CONFIG_STRING, "THREADMODEL=SEQ"), nullptr);
  EXPECT_NE(std::strstr(GASNET_CONFIG_STRING, "CONDUIT=SMP"), nullptr);
  EXPECT_STREQ(GASNET_CONDUIT_NAME_STR, "SMP");
  EXPECT_STREQ(gasnet_ErrorName(GASNET_OK), "GASNET_OK");
  EXPECT_STREQ(gasnet_ErrorName(GASNET_ERR_BAD_ARG), "GASNET_ERR_BAD_ARG");
  EXPECT_STREQ(gasnet_ErrorName(GASNET_ERR_RESOURCE), "GASNET_ERR_RESOURCE");
  EXPECT_STREQ(gasnet_ErrorName(GASNET_ERR_NOT_READY), "GASNET_ERR_NOT_READY");
  EXPECT_STREQ(gasnet_ErrorName(GASNET_ERR_NOT_INIT), "GASNET_ERR_NOT_INIT");
  EXPECT_STREQ(gasnet_ErrorName(GASNET_ERR_BARRIER_MISMATCH),
               "GASNET_ERR_BARRIER_MISMATCH");
  EXPECT_STREQ(gasnet_ErrorName(12345), "*unknown*");
  EXPECT_STREQ(gasnet_ErrorDesc(GASNET_ERR_BAD_ARG), "an argument is invalid");
  EXPECT_STREQ(gasnet_ErrorDesc(-1), "no such GASNet error code");
}

TEST_F(QueryTest, ASecondClientInitIsRefused) {
  gex_Client_t c = GEX_CLIENT_INVALID;
  gex_EP_t e = GEX_EP_INVALID;
  gex_TM_t t = GEX_TM_INVALID;
  testing::internal::CaptureStderr();
  EXPECT_EQ(gex_Client_Init(&c, &e, &t, "again", nullptr, nullptr, 0),
            GASNET_ERR_RESOURCE);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("gex_Client_Init: this process already has a client (one "
                     "per process) (GASNET_ERR_RESOURCE)"),
            std::string::npos)
      << err;
  EXPECT_EQ(c, GEX_CLIENT_INVALID);
  EXPECT_EQ(gex_TM_QuerySize(tm()), 1u);  // the first client is unharmed
}

TEST_F(QueryTest, VerboseErrorsCanBeTurnedOff) {
  EXPECT_EQ(gex_System_GetVerboseErrors(), 1);
  gex_AM_Entry_t bad = {0, nullptr, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST,
                        0, nullptr, "quiet"};
  gex_System_SetVerboseErrors(0);
  EXPECT_EQ(gex_System_GetVerboseErrors(), 0);
  testing::internal::CaptureStderr();
  EXPECT_EQ(gex_EP_RegisterHandlers(g_job.ep, &bad, 1), GASNET_ERR_BAD_ARG);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  gex_System_SetVerboseErrors(1);
  EXPECT_EQ(gex_System_GetVerboseErrors(), 1);
  testing::internal::CaptureStderr();
  EXPECT_EQ(gex_EP_RegisterHandlers(g_job.ep, &bad, 1), GASNET_ERR_BAD_ARG);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("*** WARNING (proc 0): gex_EP_RegisterHandlers: entry 0 "
                     "(handler 'quiet'): null handler function "
                     "(GASNET_ERR_BAD_ARG)"),
            std::string::npos)
      << err;
}

// ---------------------------------------------------------------------------
// The segment.

TEST_F(SegmentTest, AttachGaveAWholePageRoundedSegment) {
  EXPECT_EQ(g_job.ep_segment_before_attach, GEX_SEGMENT_INVALID);
  ASSERT_NE(g_job.seg, GEX_SEGMENT_INVALID);
  ASSERT_NE(g_job.base, nullptr);
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  EXPECT_GE(g_job.size, kSegmentRequest);
  EXPECT_LT(g_job.size, kSegmentRequest + page);
  EXPECT_EQ(g_job.size % page, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(g_job.base) % page, 0u);
  EXPECT_EQ(gex_Segment_QueryClient(g_job.seg), g_job.client);
  EXPECT_EQ(gex_Segment_QueryFlags(g_job.seg), 0u);
  EXPECT_EQ(gex_EP_QuerySegment(g_job.ep), g_job.seg);
  // Every byte of it is ours.
  std::memset(g_job.base, 0xab, g_job.size);
  EXPECT_TRUE(AllBytes(g_job.base, g_job.size, 0xab));
  std::memset(g_job.base, 0, g_job.size);
}

TEST_F(SegmentTest, BoundSegmentQuery) {
  void* owner = nullptr;
  void* local = nullptr;
  uintptr_t size = 0;
  EXPECT_EQ(gex_EP_QueryBoundSegmentNB(tm(), 0, &owner, &local, &size, 0),
            GEX_EVENT_INVALID);
  EXPECT_EQ(owner, g_job.base);
  EXPECT_EQ(local, g_job.base);  // this rank's own: mapped here
  EXPECT_EQ(size, g_job.size);
  // Every output is optional.
  EXPECT_EQ(gex_EP_QueryBoundSegmentNB(tm(), 0, nullptr, nullptr, nullptr, 0),
            GEX_EVENT_INVALID);
  size = 0;
  EXPECT_EQ(gex_EP_QueryBoundSegmentNB(tm(), 0, nullptr, nullptr, &size, 0),
            GEX_EVENT_INVALID);
  EXPECT_EQ(size, g_job.size);
}

TEST_F(SegmentTest, ASecondAttachAndBadArgumentsAreErrors) {
  gex_Segment_t s = GEX_SEGMENT_INVALID;
  testing::internal::CaptureStderr();
  EXPECT_EQ(gex_Segment_Attach(&s, tm(), 4096), GASNET_ERR_RESOURCE);
  EXPECT_EQ(gex_Segment_Attach(nullptr, tm(), 4096), GASNET_ERR_BAD_ARG);
  int not_a_tm = 0;
  EXPECT_EQ(gex_Segment_Attach(&s, reinterpret_cast<gex_TM_t>(&not_a_tm), 4096),
            GASNET_ERR_BAD_ARG);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("gex_Segment_Attach: the endpoint already has a segment "
                     "(GASNET_ERR_RESOURCE)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("gex_Segment_Attach: segment_p is NULL or tm is not this "
                     "client's team (GASNET_ERR_BAD_ARG)"),
            std::string::npos)
      << err;
  EXPECT_EQ(s, GEX_SEGMENT_INVALID);
  EXPECT_EQ(gex_EP_QuerySegment(g_job.ep), g_job.seg);
  EXPECT_EQ(gex_Segment_QuerySize(g_job.seg), g_job.size);
}

// ---------------------------------------------------------------------------
// Handler registration.

TEST_F(RegisterTest, StartUpIndicesAreTheLowestClientIndicesInOrder) {
  // 51 sweep handlers and 8 others, all with index 0, in one table.
  EXPECT_EQ(g_job.registered, kCats * kCounts + 8);
  for (unsigned c = 0; c < kCats; ++c) {
    for (unsigned n = 0; n < kCounts; ++n) {
      EXPECT_EQ(g_sweep_index[c][n], GEX_AM_INDEX_BASE + c * kCounts + n);
    }
  }
  EXPECT_EQ(g_misuse, GEX_AM_INDEX_BASE + g_job.registered - 1);
}

TEST_F(RegisterTest, FixedAndAssignedIndicesInOneTable) {
  gex_AM_Entry_t t[3] = {
      {0, reinterpret_cast<gex_AM_Fn_t>(&ImmShortHandler),
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, nullptr, "assigned a"},
      {254, reinterpret_cast<gex_AM_Fn_t>(&ImmShortHandler),
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, nullptr, "fixed 254"},
      {0, reinterpret_cast<gex_AM_Fn_t>(&ImmShortHandler),
       GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST, 1, nullptr, "assigned b"},
  };
  ASSERT_EQ(gex_EP_RegisterHandlers(g_job.ep, t, 3), GASNET_OK);
  EXPECT_EQ(t[1].gex_index, 254);
  EXPECT_GT(t[0].gex_index, g_misuse);
  EXPECT_EQ(t[2].gex_index, t[0].gex_index + 1);
  // The new entries run.
  g_imm_received = 0;
  for (gex_AM_Index_t h : {t[0].gex_index, t[1].gex_index, t[2].gex_index}) {
    ASSERT_EQ(gex_AM_RequestShort1(tm(), 0, h, 0, g_imm_received), 0);
    const int want = g_imm_received + 1;
    ASSERT_TRUE(PollUntil([&] { return g_imm_received == want; }));
  }
  // An index in use is refused, in this table or an earlier one.
  gex_AM_Entry_t again = t[1];
  EXPECT_EQ(gex_EP_RegisterHandlers(g_job.ep, &again, 1), GASNET_ERR_BAD_ARG);
  gex_AM_Entry_t twice[2] = {t[0], t[0]};
  twice[0].gex_index = twice[1].gex_index = 253;
  EXPECT_EQ(gex_EP_RegisterHandlers(g_job.ep, twice, 2), GASNET_ERR_BAD_ARG);
  // (253 was not taken by the refused table.)
  gex_AM_Entry_t once = twice[0];
  EXPECT_EQ(gex_EP_RegisterHandlers(g_job.ep, &once, 1), GASNET_OK);
  EXPECT_EQ(once.gex_index, 253);
}

TEST_F(RegisterTest, BadEntriesAreRefusedAndNothingIsRegistered) {
  const gex_AM_Fn_t f = reinterpret_cast<gex_AM_Fn_t>(&ImmShortHandler);
  const gex_Flags_t ok = GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST;
  struct Case {
    gex_AM_Entry_t entry;
    const char* why;
  };
  const Case cases[] = {
      {{0, nullptr, ok, 1, nullptr, "e"}, "null handler function"},
      {{0, f, 0, 1, nullptr, "e"}, "name no category"},
      {{0, f, GEX_FLAG_AM_REQUEST, 1, nullptr, "e"}, "name no category"},
      {{0, f, GEX_FLAG_AM_SHORT, 1, nullptr, "e"}, "or no kind"},
      {{0, f, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REQUEST, 1,
        nullptr, "e"},
       "a handler is either Short or Medium/Long"},
      {{0, f, ok, 17, nullptr, "e"},
       "gex_nargs 17 exceeds gex_AM_MaxArgs() = 16"},
      {{5, f, ok, 1, nullptr, "e"}, "index 5 is outside the range 128-255"},
      {{127, f, ok, 1, nullptr, "e"}, "index 127 is outside the range 128-255"},
      {{g_misuse, f, ok, 1, nullptr, "e"}, "is already registered"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    // A good entry with a fixed index first: all or nothing.
    gex_AM_Entry_t table[2] = {{252, f, ok, 1, nullptr, "good"}, c.entry};
    testing::internal::CaptureStderr();
    EXPECT_EQ(gex_EP_RegisterHandlers(g_job.ep, table, 2), GASNET_ERR_BAD_ARG);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(std::string("gex_EP_RegisterHandlers: entry 1 (handler "
                                   "'e'): ")),
              std::string::npos)
        << err;
    EXPECT_NE(err.find(c.why), std::string::npos) << err;
    EXPECT_NE(err.find("(GASNET_ERR_BAD_ARG)"), std::string::npos) << err;
  }
  // 252 is still free.
  gex_AM_Entry_t good = {252, f, ok, 1, nullptr, "good"};
  EXPECT_EQ(gex_EP_RegisterHandlers(g_job.ep, &good, 1), GASNET_OK);
  // Entry 0 with no index assigned: a refused table writes no index back.
  gex_AM_Entry_t table[2] = {{0, f, ok, 1, nullptr, "a"},
                             {0, nullptr, ok, 1, nullptr, "b"}};
  testing::internal::CaptureStderr();
  EXPECT_EQ(gex_EP_RegisterHandlers(g_job.ep, table, 2), GASNET_ERR_BAD_ARG);
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(table[0].gex_index, 0);
}

TEST_F(RegisterTest, BadEndpointOrTable) {
  gex_AM_Entry_t e = {0,
                      reinterpret_cast<gex_AM_Fn_t>(&ImmShortHandler),
                      GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST,
                      1,
                      nullptr,
                      "e"};
  int not_an_ep = 0;
  testing::internal::CaptureStderr();
  EXPECT_EQ(
      gex_EP_RegisterHandlers(reinterpret_cast<gex_EP_t>(&not_an_ep), &e, 1),
      GASNET_ERR_BAD_ARG);
  EXPECT_EQ(gex_EP_RegisterHandlers(g_job.ep, nullptr, 1), GASNET_ERR_BAD_ARG);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("gex_EP_RegisterHandlers: ep is not this client's "
                     "endpoint or the table is NULL (GASNET_ERR_BAD_ARG)"),
            std::string::npos)
      << err;
  EXPECT_EQ(e.gex_index, 0);
  // An empty table is fine.
  EXPECT_EQ(gex_EP_RegisterHandlers(g_job.ep, nullptr, 0), GASNET_OK);
}

// Registers one handler at a time until refused; exits 0 when exactly the
// client indices left after start-up were assigned, then BAD_ARG came.
void FillTheClientRange() {
  const unsigned free_indices = 128 - g_job.registered;
  unsigned got = 0;
  int rc = GASNET_OK;
  for (;;) {
    gex_AM_Entry_t e = {0,
                        reinterpret_cast<gex_AM_Fn_t>(&ImmShortHandler),
                        GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST,
                        1,
                        nullptr,
                        "filler"};
    rc = gex_EP_RegisterHandlers(g_job.ep, &e, 1);
    if (rc != GASNET_OK) break;
    ++got;
  }
  std::fprintf(stderr, "got %u of %u\n", got, free_indices);
  _exit(rc == GASNET_ERR_BAD_ARG && got == free_indices ? 0 : 1);
}

TEST_F(RegisterTest, TheClientRangeRunsOut) {
  // In a child process (it uses up the table).
  EXPECT_EXIT(FillTheClientRange(), testing::ExitedWithCode(0),
              "no free handler index left in 128-255 "
              "\\(GASNET_ERR_BAD_ARG\\)(.|\n)*got [0-9]+ of [0-9]+");
}

// ---------------------------------------------------------------------------
// Active Messages to this rank.

TEST_F(AmTest, Limits) {
  EXPECT_EQ(gex_AM_MaxArgs(), kMaxArgs);
  const size_t medium = gex_AM_LUBRequestMedium();
  const size_t long_max = gex_AM_LUBRequestLong();
  EXPECT_GE(medium, 512u);
  EXPECT_GE(long_max, 512u);
  EXPECT_EQ(gex_AM_LUBReplyMedium(), medium);
  EXPECT_EQ(gex_AM_LUBReplyLong(), long_max);
  EXPECT_EQ(medium, g_job.lub_medium_before_attach);
  EXPECT_EQ(long_max, g_job.lub_long_before_attach);
  for (unsigned n = 0; n <= kMaxArgs; ++n) {
    for (gex_Rank_t r : {gex_Rank_t{0}, GEX_RANK_INVALID}) {
      EXPECT_GE(gex_AM_MaxRequestMedium(tm(), r, GEX_EVENT_NOW, 0, n), medium);
      EXPECT_GE(gex_AM_MaxReplyMedium(tm(), r, GEX_EVENT_NOW, 0, n), medium);
      EXPECT_GE(gex_AM_MaxRequestLong(tm(), r, GEX_EVENT_NOW, 0, n), long_max);
      EXPECT_GE(gex_AM_MaxReplyLong(tm(), r, GEX_EVENT_NOW, 0, n), long_max);
    }
  }
  // A smp job of one rank: the maxima are the LUBs (PSHM's 64 KiB).
  EXPECT_EQ(medium, 65536u);
  EXPECT_EQ(long_max, 65536u);
  EXPECT_EQ(gex_AM_MaxRequestLong(tm(), 0, GEX_EVENT_NOW, 0, 16), 65536u);
}

TEST_F(AmTest, EveryCategoryAndArgumentCountLoopsBack) {
  for (unsigned c = 0; c < kCats; ++c) {
    for (unsigned n = 0; n < kCounts; ++n) {
      SCOPED_TRACE(testing::Message() << kCatName[c] << " " << n);
      std::memset(SweepLongDest(n, false), 0, kSweepSlot);
      std::memset(SweepLongDest(n, true), 0, kSweepSlot);
      gex_AM_Arg_t a[kMaxArgs];
      for (unsigned i = 0; i < n; ++i) a[i] = ArgValue(c, n, i, false);
      std::vector<unsigned char> p =
          Pattern(PayloadLen(c, n, false), Seed(c, n, false));
      gex_Event_t lc = GEX_EVENT_NO_OP;
      gex_Event_t* lc_opt = n % 2 == 0 ? &lc : GEX_EVENT_NOW;
      const int before_req = g_sweep_requests[c][n];
      const int before_rep = g_sweep_replies[c][n];
      int rc = -1;
      switch (c) {
        case kShort:
          rc = _gex_AM_RequestShortV(tm(), 0, g_sweep_index[c][n], 0, n, a);
          break;
        case kMedium:
          rc = _gex_AM_RequestMediumV(tm(), 0, g_sweep_index[c][n], p.data(),
                                      p.size(), lc_opt, 0, n, a);
          break;
        default:
          rc = _gex_AM_RequestLongV(tm(), 0, g_sweep_index[c][n], p.data(),
                                    p.size(), SweepLongDest(n, false), lc_opt,
                                    0, n, a);
          break;
      }
      ASSERT_EQ(rc, 0);
      if (c != kShort && lc_opt == &lc) {  // The source may be reused at once.
        EXPECT_EQ(lc, GEX_EVENT_INVALID);
      }
      if (!p.empty()) std::memset(p.data(), 0, p.size());
      ASSERT_TRUE(
          PollUntil([&] { return g_sweep_replies[c][n] == before_rep + 1; }));
      EXPECT_EQ(g_sweep_requests[c][n], before_req + 1);
      if (c == kLong) {
        EXPECT_TRUE(HasPattern(SweepLongDest(n, false), PayloadLen(c, n, false),
                               Seed(c, n, false)));
        EXPECT_TRUE(HasPattern(SweepLongDest(n, true), PayloadLen(c, n, true),
                               Seed(c, n, true)));
        // Nothing past the end.
        EXPECT_EQ(*(static_cast<unsigned char*>(SweepLongDest(n, false)) +
                    PayloadLen(c, n, false)),
                  0);
      }
    }
  }
}

// The numbered and variadic forms of <gex_am_calls.h>.
#define SA(n, i) ArgValue(kShort, n, i, false)
#define MA(n, i) ArgValue(kMedium, n, i, false)
#define LA(n, i) ArgValue(kLong, n, i, false)

TEST_F(AmTest, NumberedAndVariadicForms) {
  const auto round_trip = [&](unsigned c, unsigned n, const auto& send) {
    SCOPED_TRACE(testing::Message() << kCatName[c] << " " << n);
    const int before = g_sweep_replies[c][n];
    ASSERT_EQ(send(), 0);
    ASSERT_TRUE(PollUntil([&] { return g_sweep_replies[c][n] == before + 1; }));
  };
  const auto mp = [](unsigned n) {
    return Pattern(PayloadLen(kMedium, n, false), Seed(kMedium, n, false));
  };
  const auto lp = [](unsigned n) {
    return Pattern(PayloadLen(kLong, n, false), Seed(kLong, n, false));
  };
  round_trip(kShort, 0, [&] {
    return gex_AM_RequestShort(tm(), 0, g_sweep_index[kShort][0], 0);
  });
  round_trip(kShort, 0, [&] {
    return gex_AM_RequestShort0(tm(), 0, g_sweep_index[kShort][0], 0);
  });
  round_trip(kShort, 2, [&] {
    return gex_AM_RequestShort(tm(), 0, g_sweep_index[kShort][2], 0, SA(2, 0),
                               SA(2, 1));
  });
  round_trip(kShort, 16, [&] {
    return gex_AM_RequestShort16(
        tm(), 0, g_sweep_index[kShort][16], 0, SA(16, 0), SA(16, 1), SA(16, 2),
        SA(16, 3), SA(16, 4), SA(16, 5), SA(16, 6), SA(16, 7), SA(16, 8),
        SA(16, 9), SA(16, 10), SA(16, 11), SA(16, 12), SA(16, 13), SA(16, 14),
        SA(16, 15));
  });
  round_trip(kMedium, 1, [&] {
    const auto p = mp(1);
    return gex_AM_RequestMedium(tm(), 0, g_sweep_index[kMedium][1], p.data(),
                                p.size(), GEX_EVENT_NOW, 0, MA(1, 0));
  });
  round_trip(kMedium, 16, [&] {
    const auto p = mp(16);
    return gex_AM_RequestMedium(
        tm(), 0, g_sweep_index[kMedium][16], p.data(), p.size(), GEX_EVENT_NOW,
        0, MA(16, 0), MA(16, 1), MA(16, 2), MA(16, 3), MA(16, 4), MA(16, 5),
        MA(16, 6), MA(16, 7), MA(16, 8), MA(16, 9), MA(16, 10), MA(16, 11),
        MA(16, 12), MA(16, 13), MA(16, 14), MA(16, 15));
  });
  round_trip(kLong, 0, [&] {
    const auto p = lp(0);
    return gex_AM_RequestLong0(tm(), 0, g_sweep_index[kLong][0], p.data(),
                               p.size(), SweepLongDest(0, false), GEX_EVENT_NOW,
                               0);
  });
  round_trip(kLong, 3, [&] {
    const auto p = lp(3);
    return gex_AM_RequestLong(tm(), 0, g_sweep_index[kLong][3], p.data(),
                              p.size(), SweepLongDest(3, false), GEX_EVENT_NOW,
                              0, LA(3, 0), LA(3, 1), LA(3, 2));
  });
}

TEST_F(AmTest, LargestPayloadsBothWays) {
  for (bool is_long : {false, true}) {
    SCOPED_TRACE(is_long ? "Long" : "Medium");
    const size_t max =
        is_long ? gex_AM_MaxRequestLong(tm(), 0, GEX_EVENT_NOW, 0, 1)
                : gex_AM_MaxRequestMedium(tm(), 0, GEX_EVENT_NOW, 0, 1);
    for (size_t len : {size_t{0}, size_t{1}, max - 1, max}) {
      SCOPED_TRACE(len);
      const std::vector<unsigned char> p = Pattern(len, 77);
      g_sized_request_dest = At(kSizedRequestArea);
      std::memset(At(kSizedRequestArea), 0, 65536 + 64);
      std::memset(At(kSizedReplyArea), 0, 65536 + 64);
      const int before = g_sized_replies;
      const auto n = static_cast<gex_AM_Arg_t>(len);
      const int rc =
          is_long
              ? gex_AM_RequestLong1(tm(), 0, g_sized_long, p.data(), len,
                                    At(kSizedRequestArea), GEX_EVENT_NOW, 0, n)
              : gex_AM_RequestMedium1(tm(), 0, g_sized_medium, p.data(), len,
                                      GEX_EVENT_NOW, 0, n);
      ASSERT_EQ(rc, 0);
      ASSERT_TRUE(PollUntil([&] { return g_sized_replies == before + 1; }));
      EXPECT_EQ(g_sized_request_len, len);
      EXPECT_EQ(g_sized_reply_len, max);
      if (is_long) {
        EXPECT_TRUE(HasPattern(At(kSizedRequestArea), len, 77));
        EXPECT_TRUE(AllBytes(At(kSizedRequestArea) + len, 64, 0));
        EXPECT_TRUE(HasPattern(At(kSizedReplyArea), max, 78));
      }
    }
  }
}

TEST_F(AmTest, ALongOfZeroBytesMayNameAnyAddress) {
  const int before = g_sized_replies;
  ASSERT_EQ(gex_AM_RequestLong1(tm(), 0, g_sized_long, nullptr, 0, nullptr,
                                GEX_EVENT_NOW, 0, 0),
            0);
  ASSERT_TRUE(PollUntil([&] { return g_sized_replies == before + 1; }));
  EXPECT_EQ(g_sized_request_len, 0u);
}

TEST_F(AmTest, ALongRequestLandsAtTheEndOfTheSegment) {
  // The segment's last bytes are a valid destination.
  const size_t n = 5;
  unsigned char* end = g_job.base + g_job.size - n;
  std::memset(end, 0, n);
  const std::vector<unsigned char> p = Pattern(n, 77);
  const int before = g_sized_replies;
  g_sized_request_dest = end;
  ASSERT_EQ(gex_AM_RequestLong1(tm(), 0, g_sized_long, p.data(), n, end,
                                GEX_EVENT_NOW, 0, static_cast<int32_t>(n)),
            0);
  ASSERT_TRUE(PollUntil([&] { return g_sized_replies == before + 1; }));
  EXPECT_TRUE(HasPattern(end, n, 77));
}

TEST_F(AmTest, ImmediateIsRefusedOnlyWhenTheQueueIsFull) {
  g_imm_received = 0;
  g_imm_payloads = 0;
  constexpr int kBound = 1 << 20;
  int sent = 0;
  while (sent < kBound && gex_AM_RequestShort1(tm(), 0, g_imm_short,
                                               GEX_FLAG_IMMEDIATE, sent) == 0) {
    ++sent;
  }
  ASSERT_LT(sent, kBound) << "IMMEDIATE was never refused";
  EXPECT_GT(sent, 0);
  EXPECT_EQ(g_imm_received, 0);  // nothing ran: no one polled
  // Every category is refused while the queue is full.
  unsigned char b[8] = {};
  EXPECT_NE(gex_AM_RequestMedium1(tm(), 0, g_imm_payload, b, sizeof b,
                                  GEX_EVENT_NOW, GEX_FLAG_IMMEDIATE, -1),
            0);
  EXPECT_NE(
      gex_AM_RequestLong1(tm(), 0, g_imm_payload, b, sizeof b, At(kRmaArea),
                          GEX_EVENT_NOW, GEX_FLAG_IMMEDIATE, -1),
      0);
  EXPECT_EQ(gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 0, 8, nullptr,
                                        GEX_FLAG_IMMEDIATE, 1),
            GEX_AM_SRCDESC_NO_OP);
  // Polling drains it: each message once, in order.
  ASSERT_TRUE(PollUntil([&] { return g_imm_received == sent; }));
  PollFor(100);
  EXPECT_EQ(g_imm_received, sent);
  EXPECT_EQ(g_imm_payloads, 0);
  // And IMMEDIATE goes through again.
  EXPECT_EQ(
      gex_AM_RequestShort1(tm(), 0, g_imm_short, GEX_FLAG_IMMEDIATE, sent), 0);
  ASSERT_TRUE(PollUntil([&] { return g_imm_received == sent + 1; }));
  gex_AM_SrcDesc_t sd = gex_AM_PrepareRequestMedium(
      tm(), 0, nullptr, 0, 8, nullptr, GEX_FLAG_IMMEDIATE, 1);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  EXPECT_EQ(gex_AM_CancelRequestMedium(sd, 0), GASNET_OK);
}

// ---------------------------------------------------------------------------
// Negotiated payload.

TEST_F(NpamTest, MediumFromAGasnetBuffer) {
  const int req = g_npam_requests, rep = g_npam_replies;
  gex_AM_SrcDesc_t sd =
      gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 8, 3000, nullptr, 0, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  EXPECT_EQ(gex_AM_SrcDescSize(sd), 3000u);
  ASSERT_NE(gex_AM_SrcDescAddr(sd), nullptr);
  std::memset(gex_AM_SrcDescAddr(sd), 0x5c, 3000);
  Fill(gex_AM_SrcDescAddr(sd), 1234, 80);
  gex_AM_CommitRequestMedium2(sd, g_npam_medium, 1234, 0, 1234);
  ASSERT_TRUE(PollUntil([&] { return g_npam_replies == rep + 1; }));
  EXPECT_EQ(g_npam_requests, req + 1);
  EXPECT_EQ(g_npam_last_len, 1234u);
}

TEST_F(NpamTest, MediumFromAClientBuffer) {
  const int rep = g_npam_replies;
  std::vector<unsigned char> buf(500);
  gex_Event_t lc = GEX_EVENT_NO_OP;
  gex_AM_SrcDesc_t sd =
      gex_AM_PrepareRequestMedium(tm(), 0, buf.data(), 0, 500, &lc, 0, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  EXPECT_EQ(gex_AM_SrcDescAddr(sd), buf.data());
  EXPECT_EQ(gex_AM_SrcDescSize(sd), 500u);
  Fill(buf.data(), buf.size(), 81);  // read at Commit, not at Prepare
  gex_AM_CommitRequestMedium(sd, g_npam_medium, 500, 1, 500);
  EXPECT_EQ(lc, GEX_EVENT_INVALID);
  std::memset(buf.data(), 0, buf.size());  // reusable at once
  ASSERT_TRUE(PollUntil([&] { return g_npam_replies == rep + 1; }));
  EXPECT_EQ(g_npam_last_len, 500u);
}

TEST_F(NpamTest, PreparedSizeIsCappedByTheMaximum) {
  const size_t max = gex_AM_MaxRequestMedium(tm(), 0, nullptr, 0, 2);
  gex_AM_SrcDesc_t sd =
      gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 10, SIZE_MAX, nullptr,
                                  GEX_FLAG_AM_PREPARE_LEAST_ALLOC, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  EXPECT_EQ(gex_AM_SrcDescSize(sd), max);
  // All of it is writable.
  std::memset(gex_AM_SrcDescAddr(sd), 1, max);
  EXPECT_EQ(gex_AM_CancelRequestMedium(sd, 0), GASNET_OK);
  sd = gex_AM_PrepareRequestLong(tm(), 0, nullptr, 0, SIZE_MAX,
                                 At(kNpamRequestArea), nullptr, 0, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  EXPECT_EQ(gex_AM_SrcDescSize(sd),
            gex_AM_MaxRequestLong(tm(), 0, nullptr, 0, 2));
  EXPECT_EQ(gex_AM_CancelRequestLong(sd, 0), GASNET_OK);
}

TEST_F(NpamTest, ACancelledRequestSendsNothing) {
  const int req = g_npam_requests;
  std::memset(At(kNpamRequestArea), 0xee, 8192);
  gex_AM_SrcDesc_t sd =
      gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 0, 100, nullptr, 0, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  EXPECT_EQ(gex_AM_CancelRequestMedium(sd, 0), GASNET_OK);
  sd = gex_AM_PrepareRequestLong(tm(), 0, nullptr, 0, 4096,
                                 At(kNpamRequestArea), nullptr, 0, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  std::memset(gex_AM_SrcDescAddr(sd), 0x11, 4096);
  EXPECT_EQ(gex_AM_CancelRequestLong(sd, 0), GASNET_OK);
  std::vector<unsigned char> buf(64, 0x22);
  gex_Event_t lc = GEX_EVENT_NO_OP;
  sd = gex_AM_PrepareRequestLong(tm(), 0, buf.data(), 0, buf.size(),
                                 At(kNpamRequestArea), &lc, 0, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  EXPECT_EQ(gex_AM_CancelRequestLong(sd, 0), GASNET_OK);
  PollFor(200);
  EXPECT_EQ(g_npam_requests, req);
  EXPECT_TRUE(AllBytes(At(kNpamRequestArea), 8192, 0xee));
  // The descriptor is free again.
  sd = gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 0, 100, nullptr, 0, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  EXPECT_EQ(gex_AM_CancelRequestMedium(sd, 0), GASNET_OK);
}

TEST_F(NpamTest, LongFromAGasnetBufferWritesOnlyTheCommittedBytes) {
  const int rep = g_npam_replies;
  std::memset(At(kNpamRequestArea), 0xee, 8192);
  std::memset(At(kNpamReplyArea), 0xee, 8192);
  gex_AM_SrcDesc_t sd = gex_AM_PrepareRequestLong(
      tm(), 0, nullptr, 0, 4096, At(kNpamRequestArea), nullptr, 0, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  EXPECT_EQ(gex_AM_SrcDescSize(sd), 4096u);
  std::memset(gex_AM_SrcDescAddr(sd), 0x5c, 4096);
  Fill(gex_AM_SrcDescAddr(sd), 100, 80);
  gex_AM_CommitRequestLong2(sd, g_npam_long, 100, At(kNpamRequestArea), 0, 100);
  ASSERT_TRUE(PollUntil([&] { return g_npam_replies == rep + 1; }));
  EXPECT_TRUE(HasPattern(At(kNpamRequestArea), 100, 80));
  EXPECT_TRUE(AllBytes(At(kNpamRequestArea) + 100, 8192 - 100, 0xee));
  EXPECT_TRUE(HasPattern(At(kNpamReplyArea), 100, 90));
  EXPECT_TRUE(AllBytes(At(kNpamReplyArea) + 100, 8192 - 100, 0xee));
}

TEST_F(NpamTest, LongDestinationGivenAtCommit) {
  const int rep = g_npam_replies;
  std::memset(At(kNpamRequestArea), 0xee, 8192);
  std::memset(At(kNpamReplyArea), 0xee, 8192);
  gex_AM_SrcDesc_t sd = gex_AM_PrepareRequestLong(tm(), 0, nullptr, 0, 300,
                                                  nullptr, nullptr, 0, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  Fill(gex_AM_SrcDescAddr(sd), 300, 80);
  gex_AM_CommitRequestLong(sd, g_npam_long, 300, At(kNpamRequestArea), 0, 300);
  ASSERT_TRUE(PollUntil([&] { return g_npam_replies == rep + 1; }));
  EXPECT_TRUE(HasPattern(At(kNpamRequestArea), 300, 80));
}

TEST_F(NpamTest, LongFromAClientBuffer) {
  const int rep = g_npam_replies;
  std::memset(At(kNpamRequestArea), 0xee, 8192);
  std::memset(At(kNpamReplyArea), 0xee, 8192);
  std::vector<unsigned char> buf(2000);
  gex_Event_t lc = GEX_EVENT_NO_OP;
  gex_AM_SrcDesc_t sd = gex_AM_PrepareRequestLong(
      tm(), 0, buf.data(), 100, 2000, At(kNpamRequestArea), &lc, 0, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  EXPECT_EQ(gex_AM_SrcDescAddr(sd), buf.data());
  Fill(buf.data(), 1999, 81);
  gex_AM_CommitRequestLong2(sd, g_npam_long, 1999, At(kNpamRequestArea), 1,
                            1999);
  EXPECT_EQ(lc, GEX_EVENT_INVALID);
  ASSERT_TRUE(PollUntil([&] { return g_npam_replies == rep + 1; }));
  EXPECT_TRUE(HasPattern(At(kNpamRequestArea), 1999, 81));
  EXPECT_TRUE(AllBytes(At(kNpamRequestArea) + 1999, 16, 0xee));
  EXPECT_TRUE(HasPattern(At(kNpamReplyArea), 1999, 91));
}

TEST_F(NpamTest, ACancelledReplyLeavesTheHandlerItsOneReply) {
  for (bool is_long : {false, true}) {
    SCOPED_TRACE(is_long ? "Long" : "Medium");
    const int done = g_npam_done_replies, rep = g_npam_replies;
    std::memset(At(kNpamReplyArea), 0xee, 8192);
    const std::vector<unsigned char> p = Pattern(10, 82);
    const int rc =
        is_long
            ? gex_AM_RequestLong2(tm(), 0, g_npam_long, p.data(), 10,
                                  At(kNpamRequestArea), GEX_EVENT_NOW, 0, 2, 10)
            : gex_AM_RequestMedium2(tm(), 0, g_npam_medium, p.data(), 10,
                                    GEX_EVENT_NOW, 0, 2, 10);
    ASSERT_EQ(rc, 0);
    ASSERT_TRUE(PollUntil([&] { return g_npam_done_replies == done + 1; }));
    PollFor(50);
    EXPECT_EQ(g_npam_replies, rep);
    EXPECT_TRUE(AllBytes(At(kNpamReplyArea), 8192, 0xee));
  }
}

TEST_F(NpamTest, ZeroBytesCommitted) {
  const int rep = g_npam_replies;
  gex_AM_SrcDesc_t sd =
      gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 0, 64, nullptr, 0, 2);
  ASSERT_NE(sd, GEX_AM_SRCDESC_NO_OP);
  gex_AM_CommitRequestMedium2(sd, g_npam_medium, 0, 0, 0);
  ASSERT_TRUE(PollUntil([&] { return g_npam_replies == rep + 1; }));
  EXPECT_EQ(g_npam_last_len, 0u);
}

// ---------------------------------------------------------------------------
// RMA to this rank (its segment is mapped here: every call is a copy done
// before it returns).

TEST_F(RmaTest, BlockingPutAndGet) {
  for (size_t n :
       {size_t{1}, size_t{8}, size_t{4095}, size_t{65537}, size_t{300001}}) {
    SCOPED_TRACE(n);
    unsigned char* dest = At(kRmaArea) + 3;
    std::memset(At(kRmaArea), 0, n + 16);
    const auto src = Pattern(n, static_cast<unsigned>(n));
    EXPECT_EQ(gex_RMA_PutBlocking(tm(), 0, dest, src.data(), n, 0), 0);
    EXPECT_TRUE(HasPattern(dest, n, static_cast<unsigned>(n)));
    EXPECT_EQ(dest[-1], 0);
    EXPECT_EQ(dest[n], 0);
    std::vector<unsigned char> back(n + 2, 0x99);
    EXPECT_EQ(gex_RMA_GetBlocking(tm(), back.data() + 1, 0, dest, n, 0), 0);
    EXPECT_TRUE(HasPattern(back.data() + 1, n, static_cast<unsigned>(n)));
    EXPECT_EQ(back.front(), 0x99);
    EXPECT_EQ(back.back(), 0x99);
    // The out-of-line entry points do the same.
    std::memset(dest, 0, n);
    EXPECT_EQ(_gex_RMA_PutBlocking(tm(), 0, dest, src.data(), n, 0), 0);
    EXPECT_TRUE(HasPattern(dest, n, static_cast<unsigned>(n)));
    std::fill(back.begin(), back.end(), 0);
    EXPECT_EQ(_gex_RMA_GetBlocking(tm(), back.data(), 0, dest, n, 0), 0);
    EXPECT_TRUE(HasPattern(back.data(), n, static_cast<unsigned>(n)));
  }
}

TEST_F(RmaTest, TheWholeSegmentAndItsLastByte) {
  const auto src = Pattern(g_job.size, 5);
  EXPECT_EQ(gex_RMA_PutBlocking(tm(), 0, g_job.base, src.data(), g_job.size, 0),
            0);
  EXPECT_TRUE(HasPattern(g_job.base, g_job.size, 5));
  unsigned char last = 0;
  EXPECT_EQ(
      gex_RMA_GetBlocking(tm(), &last, 0, g_job.base + g_job.size - 1, 1, 0),
      0);
  EXPECT_EQ(last, PatternByte(g_job.size - 1, 5));
  std::memset(g_job.base, 0, g_job.size);
}

TEST_F(RmaTest, ZeroBytesDoNothingAnywhere) {
  int x = 7;
  EXPECT_EQ(gex_RMA_PutBlocking(tm(), 0, nullptr, &x, 0, 0), 0);
  EXPECT_EQ(gex_RMA_GetBlocking(tm(), &x, 0, nullptr, 0, 0), 0);
  EXPECT_EQ(gex_RMA_PutNB(tm(), 0, nullptr, &x, 0, GEX_EVENT_DEFER, 0),
            GEX_EVENT_INVALID);
  EXPECT_EQ(gex_RMA_GetNBI(tm(), &x, 0, nullptr, 0, 0), 0);
  EXPECT_EQ(x, 7);
}

TEST_F(RmaTest, NonBlockingCallsAreDoneOnReturn) {
  const size_t n = 70000;
  unsigned char* dest = At(kRmaArea);
  const auto src = Pattern(n, 21);
  std::vector<unsigned char> back(n);
  // Put NB with each lc_opt.
  for (int form = 0; form < 3; ++form) {
    SCOPED_TRACE(form);
    std::memset(dest, 0, n);
    gex_Event_t lc = GEX_EVENT_NO_OP;
    gex_Event_t* lc_opt = form == 0   ? GEX_EVENT_NOW
                          : form == 1 ? GEX_EVENT_DEFER
                                      : &lc;
    gex_Event_t e = gex_RMA_PutNB(tm(), 0, dest, src.data(), n, lc_opt, 0);
    EXPECT_EQ(e, GEX_EVENT_INVALID);
    if (form == 2) {
      EXPECT_EQ(lc, GEX_EVENT_INVALID);
    }
    EXPECT_TRUE(HasPattern(dest, n, 21));
    EXPECT_EQ(gex_Event_Test(e), GASNET_OK);
    gex_Event_Wait(e);
    EXPECT_EQ(gex_Event_QueryLeaf(e, GEX_EC_LC), GEX_EVENT_INVALID);
  }
  std::fill(back.begin(), back.end(), 0);
  gex_Event_t g = gex_RMA_GetNB(tm(), back.data(), 0, dest, n, 0);
  EXPECT_EQ(g, GEX_EVENT_INVALID);
  EXPECT_TRUE(HasPattern(back.data(), n, 21));
  // The out-of-line forms.
  gex_Event_t lc = GEX_EVENT_NO_OP;
  EXPECT_EQ(_gex_RMA_PutNB(tm(), 0, dest, src.data(), n, &lc, 0),
            GEX_EVENT_INVALID);
  EXPECT_EQ(lc, GEX_EVENT_INVALID);
  EXPECT_EQ(_gex_RMA_GetNB(tm(), back.data(), 0, dest, n, 0),
            GEX_EVENT_INVALID);
  // IMMEDIATE is never refused on the direct path.
  EXPECT_EQ(gex_RMA_PutNB(tm(), 0, dest, src.data(), n, GEX_EVENT_NOW,
                          GEX_FLAG_IMMEDIATE),
            GEX_EVENT_INVALID);
  EXPECT_EQ(
      gex_RMA_PutBlocking(tm(), 0, dest, src.data(), n, GEX_FLAG_IMMEDIATE), 0);
  // The array forms on completed events.
  gex_Event_t events[3] = {GEX_EVENT_INVALID, GEX_EVENT_INVALID,
                           GEX_EVENT_INVALID};
  EXPECT_EQ(gex_Event_TestAll(events, 3, 0), GASNET_OK);
  EXPECT_EQ(gex_Event_TestSome(events, 3, 0), GASNET_OK);
  gex_Event_WaitAll(events, 3, 0);
  gex_Event_WaitSome(events, 3, 0);
  EXPECT_EQ(gex_Event_Test(GEX_EVENT_NO_OP), GASNET_OK);
}

TEST_F(RmaTest, ImplicitEventsAndAccessRegions) {
  const size_t n = 5000;
  unsigned char* dest = At(kRmaArea) + 100;
  const auto src = Pattern(n, 22);
  std::vector<unsigned char> back(n);
  for (gex_Event_t* lc_opt :
       {GEX_EVENT_NOW, GEX_EVENT_DEFER, GEX_EVENT_GROUP}) {
    std::memset(dest, 0, n);
    EXPECT_EQ(gex_RMA_PutNBI(tm(), 0, dest, src.data(), n, lc_opt, 0), 0);
    EXPECT_TRUE(HasPattern(dest, n, 22));
  }
  EXPECT_EQ(gex_RMA_GetNBI(tm(), back.data(), 0, dest, n, 0), 0);
  EXPECT_TRUE(HasPattern(back.data(), n, 22));
  EXPECT_EQ(_gex_RMA_PutNBI(tm(), 0, dest, src.data(), n, GEX_EVENT_GROUP, 0),
            0);
  EXPECT_EQ(_gex_RMA_GetNBI(tm(), back.data(), 0, dest, n, 0), 0);
  for (gex_EC_t mask : {GEX_EC_PUT, GEX_EC_GET, GEX_EC_LC, GEX_EC_ALL}) {
    EXPECT_EQ(gex_NBI_Test(mask, 0), GASNET_OK);
    gex_NBI_Wait(mask, 0);
  }
  // An access region: its event covers the NBI calls in it (all done).
  gex_NBI_BeginAccessRegion(0);
  std::memset(dest, 0, n);
  EXPECT_EQ(gex_RMA_PutNBI(tm(), 0, dest, src.data(), n, GEX_EVENT_GROUP, 0),
            0);
  EXPECT_EQ(gex_RMA_GetNBI(tm(), back.data(), 0, dest, n, 0), 0);
  gex_Event_t e = gex_NBI_EndAccessRegion(0);
  EXPECT_EQ(e, GEX_EVENT_INVALID);
  gex_Event_Wait(e);
  EXPECT_TRUE(HasPattern(back.data(), n, 22));
  // An empty region.
  gex_NBI_BeginAccessRegion(0);
  EXPECT_EQ(gex_NBI_EndAccessRegion(0), GEX_EVENT_INVALID);
}

TEST_F(RmaTest, ValueForms) {
  const gex_RMA_Value_t v = 0x8877665544332211ull;
  unsigned char* dest = At(kRmaArea) + 1;  // unaligned
  for (size_t n = 1; n <= 8; ++n) {
    SCOPED_TRACE(n);
    const gex_RMA_Value_t mask = n == 8 ? ~0ull : (1ull << (8 * n)) - 1;
    std::memset(dest - 1, 0, 10);
    EXPECT_EQ(gex_RMA_PutBlockingVal(tm(), 0, dest, v, n, 0), 0);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(dest[i], static_cast<unsigned char>(v >> (8 * i))) << i;
    }
    EXPECT_EQ(dest[n], 0);
    EXPECT_EQ(gex_RMA_GetBlockingVal(tm(), 0, dest, n, 0), v & mask);
    std::memset(dest, 0, 8);
    EXPECT_EQ(gex_RMA_PutNBIVal(tm(), 0, dest, v, n, 0), 0);
    EXPECT_EQ(gex_RMA_GetBlockingVal(tm(), 0, dest, n, 0), v & mask);
    std::memset(dest, 0, 8);
    EXPECT_EQ(gex_RMA_PutNBVal(tm(), 0, dest, v, n, 0), GEX_EVENT_INVALID);
    EXPECT_EQ(gex_RMA_GetBlockingVal(tm(), 0, dest, n, 0), v & mask);
  }
}

// ---------------------------------------------------------------------------
// Collectives and the barrier on one rank.

int g_user_op_calls = 0;
void SumUser(const void* arg1, void* arg2_and_out, size_t count,
             const void* cdata) {
  ++g_user_op_calls;
  EXPECT_EQ(cdata, &g_user_op_calls);
  const auto* in = static_cast<const int64_t*>(arg1);
  auto* out = static_cast<int64_t*>(arg2_and_out);
  for (size_t i = 0; i < count; ++i) out[i] += in[i];
}

TEST_F(CollTest, Barriers) {
  gex_Coll_BarrierBlocking(tm(), 0);
  gex_Event_t e = gex_Coll_BarrierNB(tm(), 0);
  ASSERT_TRUE(PollUntil([&] { return gex_Event_Test(e) == GASNET_OK; }));
  // Several in flight, completed in any order.
  gex_Event_t es[4];
  for (gex_Event_t& x : es) x = gex_Coll_BarrierNB(tm(), 0);
  gex_Event_Wait(es[3]);
  gex_Event_WaitAll(es, 3, 0);
}

TEST_F(CollTest, BroadcastFromTheOnlyRank) {
  for (size_t n : {size_t{1}, size_t{100}, size_t{70000}}) {
    SCOPED_TRACE(n);
    const auto src = Pattern(n, 31);
    std::vector<unsigned char> dst(n + 1, 0);
    gex_Event_t e = gex_Coll_BroadcastNB(tm(), 0, dst.data(), src.data(), n, 0);
    gex_Event_Wait(e);
    EXPECT_TRUE(HasPattern(dst.data(), n, 31));
    EXPECT_EQ(dst[n], 0);
  }
  // In place, and nothing to do.
  auto buf = Pattern(64, 32);
  gex_Event_Wait(gex_Coll_BroadcastNB(tm(), 0, buf.data(), buf.data(), 64, 0));
  EXPECT_TRUE(HasPattern(buf.data(), 64, 32));
  EXPECT_EQ(gex_Coll_BroadcastNB(tm(), 0, nullptr, nullptr, 0, 0),
            GEX_EVENT_INVALID);
}

TEST_F(CollTest, ReductionsOfOneRankAreItsOwnValues) {
  const int32_t i32[3] = {1, -2, INT32_MAX};
  int32_t o32[3] = {};
  gex_Event_Wait(gex_Coll_ReduceToOneNB(tm(), 0, o32, i32, GEX_DT_I32,
                                        sizeof(int32_t), 3, GEX_OP_ADD, nullptr,
                                        nullptr, 0));
  EXPECT_EQ(std::memcmp(o32, i32, sizeof i32), 0);
  const double d[2] = {1.5, -0.25};
  double od[2] = {};
  gex_Event_Wait(gex_Coll_ReduceToAllNB(tm(), od, d, GEX_DT_DBL, sizeof(double),
                                        2, GEX_OP_MAX, nullptr, nullptr, 0));
  EXPECT_EQ(od[0], 1.5);
  EXPECT_EQ(od[1], -0.25);
  uint64_t u[4] = {1, 2, 3, 0xffffffffffffffffull};
  gex_Event_Wait(gex_Coll_ReduceToAllNB(tm(), u, u, GEX_DT_U64,
                                        sizeof(uint64_t), 4, GEX_OP_XOR,
                                        nullptr, nullptr, 0));  // in place
  EXPECT_EQ(u[3], 0xffffffffffffffffull);
  // User operators (not needed with one operand, but allowed).
  const int64_t s[2] = {40, 2};
  int64_t o[2] = {};
  for (gex_OP_t op : {GEX_OP_USER, GEX_OP_USER_NC}) {
    std::memset(o, 0, sizeof o);
    gex_Event_Wait(gex_Coll_ReduceToOneNB(tm(), 0, o, s, GEX_DT_USER,
                                          sizeof(int64_t), 2, op, &SumUser,
                                          &g_user_op_calls, 0));
    EXPECT_EQ(o[0], 40);
    EXPECT_EQ(o[1], 2);
  }
  // Nothing to do.
  EXPECT_EQ(gex_Coll_ReduceToAllNB(tm(), nullptr, nullptr, GEX_DT_I32, 4, 0,
                                   GEX_OP_ADD, nullptr, nullptr, 0),
            GEX_EVENT_INVALID);
}

TEST_F(CollTest, ManyInFlight) {
  int32_t in[8], out[8][8];
  gex_Event_t es[8];
  for (int i = 0; i < 8; ++i) {
    in[i] = i * 3;
    es[i] = gex_Coll_ReduceToAllNB(tm(), out[i], in, GEX_DT_I32, 4, i + 1,
                                   GEX_OP_MIN, nullptr, nullptr, 0);
  }
  gex_Event_WaitAll(es, 8, 0);
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j <= i; ++j) {
      EXPECT_EQ(out[i][j], in[j]);
    }
  }
}

// ---------------------------------------------------------------------------
// Misuse: fatal errors that name the call.

TEST_F(MisuseDeathTest, Queries) {
  EXPECT_DEATH(gex_TM_TranslateRankToJobrank(tm(), 1),
               Fatal("gex_TM_TranslateRankToJobrank: rank 1 is not in the team "
                     "\\(size 1\\)"));
  EXPECT_DEATH(
      gex_EP_QueryBoundSegmentNB(tm(), 1, nullptr, nullptr, nullptr, 0),
      Fatal("gex_EP_QueryBoundSegmentNB: rank 1 is not in the team"));
  EXPECT_DEATH(gex_Token_Info(nullptr, nullptr, GEX_TI_ALL),
               Fatal("gex_Token_Info: NULL token or info"));
}

TEST_F(MisuseDeathTest, AmSends) {
  unsigned char b[16] = {};
  EXPECT_DEATH(gex_AM_RequestShort0(tm(), 1, g_imm_short, 0),
               Fatal("gex_AM_RequestShort: rank 1 is not in the team \\(size "
                     "1\\)"));
  gex_AM_Arg_t args[17] = {};
  EXPECT_DEATH(_gex_AM_RequestShortV(tm(), 0, g_imm_short, 0, 17, args),
               Fatal("gex_AM_RequestShort: 17 arguments exceed "
                     "gex_AM_MaxArgs\\(\\) = 16"));
  std::vector<unsigned char> big(65537);
  EXPECT_DEATH(gex_AM_RequestMedium1(tm(), 0, g_imm_payload, big.data(),
                                     big.size(), GEX_EVENT_NOW, 0, 0),
               Fatal("gex_AM_RequestMedium: nbytes 65537 exceeds the maximum "
                     "payload 65536"));
  EXPECT_DEATH(gex_AM_RequestLong1(tm(), 0, g_imm_payload, big.data(),
                                   big.size(), At(0), GEX_EVENT_NOW, 0, 0),
               Fatal("gex_AM_RequestLong: nbytes 65537 exceeds"));
  EXPECT_DEATH(
      gex_AM_RequestMedium1(tm(), 0, g_imm_payload, b, sizeof b, nullptr, 0, 0),
      Fatal("gex_AM_RequestMedium: lc_opt NULL is not valid here"));
  EXPECT_DEATH(gex_AM_RequestLong1(tm(), 0, g_imm_payload, b, sizeof b, At(0),
                                   GEX_EVENT_DEFER, 0, 0),
               Fatal("gex_AM_RequestLong: lc_opt GEX_EVENT_DEFER is not valid "
                     "here"));
  EXPECT_DEATH(
      gex_AM_RequestLong1(tm(), 0, g_imm_payload, b, sizeof b,
                          g_job.base + g_job.size - 8, GEX_EVENT_NOW, 0, 0),
      Fatal("gex_AM_RequestLong: destination \\[.*, \\+16\\) is "
            "outside rank 0's segment"));
  EXPECT_DEATH(gex_AM_RequestLong1(tm(), 0, g_imm_payload, b, sizeof b, b,
                                   GEX_EVENT_NOW, 0, 0),
               Fatal("gex_AM_RequestLong: destination .* is outside rank 0's "
                     "segment"));
}

TEST_F(MisuseDeathTest, MessagesThatDoNotFitTheirHandler) {
  EXPECT_DEATH(
      {
        gex_AM_RequestShort0(tm(), 0, 250, 0);
        PollFor(1000);
      },
      Fatal("gex_AM_RequestShort from rank 0 to rank 0: handler index 250 is "
            "not registered there"));
  EXPECT_DEATH(
      {
        gex_AM_RequestShort3(tm(), 0, g_misuse, 0, 0, 0, 0);
        PollFor(1000);
      },
      Fatal("gex_AM_RequestShort from rank 0 to rank 0: handler 'misuse' "
            "\\(index [0-9]+\\) takes 1 arguments, the message carries 3"));
  EXPECT_DEATH(
      {
        unsigned char b[4] = {};
        gex_AM_RequestMedium1(tm(), 0, g_misuse, b, 4, GEX_EVENT_NOW, 0, 0);
        PollFor(1000);
      },
      Fatal("gex_AM_RequestMedium from rank 0 to rank 0: handler 'misuse' "
            "\\(index [0-9]+\\) is not registered for Medium messages"));
  EXPECT_DEATH(
      {
        gex_AM_RequestShort1(tm(), 0, g_misuse, 0, kReplyToRequestOnlyHandler);
        PollFor(1000);
      },
      Fatal("gex_AM_ReplyShort from rank 0 to rank 0: handler 'immediate "
            "short' \\(index [0-9]+\\) is not registered for Reply messages"));
}

TEST_F(MisuseDeathTest, CallsFromHandlers) {
  const auto from_handler = [&](Misuse what) {
    gex_AM_RequestShort1(tm(), 0, g_misuse, 0, what);
    PollFor(1000);
  };
  EXPECT_DEATH(from_handler(kRequestInHandler),
               Fatal("gex_AM_RequestShort: a Request from inside an AM handler "
                     "\\(handlers may only reply\\)"));
  EXPECT_DEATH(from_handler(kReplyTwice),
               Fatal("gex_AM_ReplyShort: this Request handler has already "
                     "replied"));
  EXPECT_DEATH(from_handler(kReplyFromReply),
               Fatal("gex_AM_ReplyShort: called from a Reply handler"));
  EXPECT_DEATH(from_handler(kRmaInHandler),
               Fatal("gex_RMA_PutBlocking: called from an AM handler"));
  EXPECT_DEATH(from_handler(kBarrierInHandler),
               Fatal("gex_Coll_BarrierBlocking: called from an AM handler"));
  EXPECT_DEATH(from_handler(kBarrierNbInHandler),
               Fatal("gex_Coll_BarrierNB: called from an AM handler"));
  EXPECT_DEATH(
      {
        g_pending_event = gex_Coll_BarrierNB(tm(), 0);
        from_handler(kWaitInHandler);
      },
      Fatal("gex_Event_Wait: called from an AM handler \\(it may block\\)"));
  EXPECT_DEATH(from_handler(kCollInHandler),
               Fatal("gex_Coll_BroadcastNB: called from an AM handler"));
  EXPECT_DEATH(from_handler(kAttachInHandler),
               Fatal("gex_Segment_Attach: called from an AM handler"));
  EXPECT_DEATH(from_handler(kPrepareRequestInHandler),
               Fatal("gex_AM_PrepareRequestMedium: a Request from inside an AM "
                     "handler"));
}

TEST_F(MisuseDeathTest, NegotiatedPayload) {
  EXPECT_DEATH(
      {
        gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 0, 8, nullptr, 0, 2);
        gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 0, 8, nullptr, 0, 2);
      },
      Fatal("gex_AM_PrepareRequestMedium: this thread already has a prepared "
            "Request awaiting its Commit or Cancel"));
  EXPECT_DEATH(
      {
        gex_AM_SrcDesc_t sd =
            gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 0, 8, nullptr, 0, 2);
        gex_AM_CancelRequestMedium(sd, 0);
        gex_AM_CommitRequestMedium2(sd, g_npam_medium, 0, 0, 0);
      },
      Fatal("gex_AM_CommitRequestMedium: the source descriptor is not "
            "prepared"));
  EXPECT_DEATH(
      {
        gex_AM_SrcDesc_t sd =
            gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 0, 8, nullptr, 0, 2);
        gex_AM_CommitRequestMedium2(sd, g_npam_medium, 9, 0, 9);
      },
      Fatal("gex_AM_CommitRequestMedium: nbytes 9 exceeds the prepared size "
            "8"));
  EXPECT_DEATH(
      {
        gex_AM_SrcDesc_t sd =
            gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 0, 8, nullptr, 0, 2);
        gex_AM_CommitRequestMedium3(sd, g_npam_medium, 0, 0, 0, 0);
      },
      Fatal("gex_AM_CommitRequestMedium: 3 arguments, but 2 were prepared"));
  EXPECT_DEATH(
      {
        gex_AM_SrcDesc_t sd =
            gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 0, 8, nullptr, 0, 2);
        gex_AM_CommitRequestLong2(sd, g_npam_long, 0, At(0), 0, 0);
      },
      Fatal("gex_AM_CommitRequestLong: the descriptor was prepared for a "
            "Medium Request"));
  EXPECT_DEATH(
      gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 9, 8, nullptr, 0, 2),
      Fatal("gex_AM_PrepareRequestMedium: least_payload 9 exceeds "
            "most_payload 8"));
  EXPECT_DEATH(
      gex_AM_PrepareRequestMedium(
          tm(), 0, nullptr, 0, 8, nullptr,
          GEX_FLAG_AM_PREPARE_LEAST_CLIENT | GEX_FLAG_AM_PREPARE_LEAST_ALLOC,
          2),
      Fatal("gex_AM_PrepareRequestMedium: GEX_FLAG_AM_PREPARE_LEAST_CLIENT "
            "and _LEAST_ALLOC exclude each other"));
  EXPECT_DEATH(
      gex_AM_PrepareRequestMedium(tm(), 0, nullptr, 0, 8, GEX_EVENT_NOW, 0, 2),
      Fatal("gex_AM_PrepareRequestMedium: with a GASNet buffer "
            "\\(client_buf NULL\\) lc_opt must be NULL"));
  EXPECT_DEATH(gex_AM_SrcDescAddr(GEX_AM_SRCDESC_NO_OP),
               Fatal("gex_AM_SrcDescAddr: the source descriptor is "
                     "GEX_AM_SRCDESC_NO_OP"));
  EXPECT_DEATH(
      gex_AM_PrepareRequestLong(tm(), 1, nullptr, 0, 8, nullptr, nullptr, 0, 0),
      Fatal("gex_AM_PrepareRequestLong: rank 1 is not in the team"));
  EXPECT_DEATH(
      {
        gex_AM_SrcDesc_t sd = gex_AM_PrepareRequestLong(tm(), 0, nullptr, 0, 8,
                                                        nullptr, nullptr, 0, 0);
        gex_AM_CommitRequestLong0(sd, g_npam_long, 8,
                                  g_job.base + g_job.size - 4);
      },
      Fatal("gex_AM_CommitRequestLong: destination .* is outside rank 0's "
            "segment"));
}

TEST_F(MisuseDeathTest, Rma) {
  int x = 0;
  unsigned char* end = g_job.base + g_job.size;
  EXPECT_DEATH(gex_RMA_PutBlocking(tm(), 0, end, &x, 1, 0),
               Fatal("gex_RMA_PutBlocking: remote range \\[.*, \\+1\\) is "
                     "outside rank 0's segment"));
  EXPECT_DEATH(gex_RMA_PutNB(tm(), 0, end - 2, &x, 4, GEX_EVENT_NOW, 0),
               Fatal("gex_RMA_PutNB: remote range .* is outside rank 0's "
                     "segment"));
  EXPECT_DEATH(gex_RMA_GetBlocking(tm(), &x, 0, g_job.base - 1, 1, 0),
               Fatal("gex_RMA_GetBlocking: remote range .* is outside rank "
                     "0's segment"));
  EXPECT_DEATH(gex_RMA_GetNBI(tm(), &x, 0, &x, sizeof x, 0),
               Fatal("gex_RMA_GetNBI: remote range .* is outside rank 0's "
                     "segment"));
  EXPECT_DEATH(gex_RMA_PutNBI(tm(), 1, g_job.base, &x, 1, GEX_EVENT_NOW, 0),
               Fatal("gex_RMA_PutNBI: rank 1 is not in the team \\(size 1\\)"));
  EXPECT_DEATH(gex_RMA_PutBlocking(tm(), 0, g_job.base, &x, SIZE_MAX, 0),
               Fatal("gex_RMA_PutBlocking: nbytes [0-9]+ overflows"));
  EXPECT_DEATH(gex_RMA_GetNB(tm(), reinterpret_cast<void*>(UINTPTR_MAX - 3), 0,
                             g_job.base, 16, 0),
               Fatal("gex_RMA_GetNB: nbytes 16 overflows: the local range"));
  EXPECT_DEATH(
      gex_RMA_PutNB(tm(), 0, g_job.base, &x, 1, GEX_EVENT_GROUP, 0),
      Fatal("gex_RMA_PutNB: lc_opt GEX_EVENT_GROUP is not valid here"));
  EXPECT_DEATH(gex_RMA_PutNB(tm(), 0, g_job.base, &x, 1, nullptr, 0),
               Fatal("gex_RMA_PutNB: lc_opt NULL is not valid here"));
  gex_Event_t ev;
  EXPECT_DEATH(gex_RMA_PutNBI(tm(), 0, g_job.base, &x, 1, &ev, 0),
               Fatal("gex_RMA_PutNBI: lc_opt \\(an event pointer\\) is not "
                     "valid here"));
  EXPECT_DEATH(gex_RMA_PutBlockingVal(tm(), 0, g_job.base, 1, 9, 0),
               Fatal("gex_RMA_PutBlockingVal: nbytes 9 is not between 1 and "
                     "8"));
  EXPECT_DEATH(gex_RMA_GetBlockingVal(tm(), 0, g_job.base, 0, 0),
               Fatal("gex_RMA_GetBlockingVal: nbytes 0 is not between 1 and "
                     "8"));
  int not_a_tm = 0;
  EXPECT_DEATH(gex_RMA_PutBlocking(reinterpret_cast<gex_TM_t>(&not_a_tm), 0,
                                   g_job.base, &x, 1, 0),
               Fatal("gex_RMA_PutBlocking: tm .* is not this client's team"));
}

TEST_F(MisuseDeathTest, EventsAndRegions) {
  alignas(64) static unsigned char junk[64] = {};
  gex_Event_t fake = reinterpret_cast<gex_Event_t>(junk);
  EXPECT_DEATH(gex_Event_Wait(fake),
               Fatal("gex_Event_Wait: .* is not a live event"));
  EXPECT_DEATH(gex_Event_Test(fake),
               Fatal("gex_Event_Test: .* is not a live event"));
  EXPECT_DEATH(
      {
        gex_Event_t es[2];
        es[0] = GEX_EVENT_INVALID;
        es[1] = fake;
        gex_Event_TestAll(es, 2, 0);
      },
      Fatal("gex_Event_TestAll: .* is not a live event"));
  EXPECT_DEATH(gex_Event_QueryLeaf(GEX_EVENT_NO_OP, GEX_EC_LC),
               Fatal("gex_Event_QueryLeaf: .* is not a live event"));
  EXPECT_DEATH(gex_NBI_Test(0x100, 0),
               Fatal("gex_NBI_Test: event_mask 0x100 has bits that are not "
                     "GEX_EC_\\*"));
  EXPECT_DEATH(gex_NBI_Wait(0x40, 0), Fatal("gex_NBI_Wait: event_mask 0x40"));
  EXPECT_DEATH(gex_NBI_EndAccessRegion(0),
               Fatal("gex_NBI_EndAccessRegion: this thread has no open access "
                     "region"));
  EXPECT_DEATH(
      {
        gex_NBI_BeginAccessRegion(0);
        gex_NBI_BeginAccessRegion(0);
      },
      Fatal("gex_NBI_BeginAccessRegion: this thread is already in an access "
            "region"));
}

TEST_F(MisuseDeathTest, Collectives) {
  int32_t a[4] = {}, b[4] = {};
  EXPECT_DEATH(gex_Coll_BroadcastNB(tm(), 1, b, a, sizeof a, 0),
               Fatal("gex_Coll_BroadcastNB: root 1 is not in the team \\(size "
                     "1\\)"));
  EXPECT_DEATH(gex_Coll_ReduceToOneNB(tm(), 1, b, a, GEX_DT_I32, 4, 4,
                                      GEX_OP_ADD, nullptr, nullptr, 0),
               Fatal("gex_Coll_ReduceToOneNB: root 1 is not in the team"));
  EXPECT_DEATH(gex_Coll_ReduceToAllNB(tm(), b, a, 0x80, 4, 4, GEX_OP_ADD,
                                      nullptr, nullptr, 0),
               Fatal("gex_Coll_ReduceToAllNB: dt 0x80 is not a data type"));
  EXPECT_DEATH(gex_Coll_ReduceToAllNB(tm(), b, a, GEX_DT_FLT, 4, 4, GEX_OP_AND,
                                      nullptr, nullptr, 0),
               Fatal("gex_Coll_ReduceToAllNB: .* is not defined for "
                     "GEX_DT_FLT"));
  EXPECT_DEATH(gex_Coll_ReduceToAllNB(tm(), b, a, GEX_DT_I32, 4, 4, GEX_OP_FADD,
                                      nullptr, nullptr, 0),
               Fatal("gex_Coll_ReduceToAllNB: .* is not a reduction "
                     "operation"));
  EXPECT_DEATH(gex_Coll_ReduceToOneNB(tm(), 0, b, a, GEX_DT_I32, 8, 2,
                                      GEX_OP_ADD, nullptr, nullptr, 0),
               Fatal("gex_Coll_ReduceToOneNB: dt_sz 8 does not match "
                     "GEX_DT_I32 \\(4 bytes\\)"));
  EXPECT_DEATH(gex_Coll_ReduceToAllNB(tm(), b, a, GEX_DT_USER, 4, 4,
                                      GEX_OP_USER, nullptr, nullptr, 0),
               Fatal("gex_Coll_ReduceToAllNB: user_op is NULL with "
                     "GEX_OP_USER"));
  EXPECT_DEATH(gex_Coll_ReduceToOneNB(tm(), 0, nullptr, a, GEX_DT_I32, 4, 4,
                                      GEX_OP_ADD, nullptr, nullptr, 0),
               Fatal("gex_Coll_ReduceToOneNB: dst is NULL"));
  int not_a_tm = 0;
  EXPECT_DEATH(
      gex_Coll_BarrierBlocking(reinterpret_cast<gex_TM_t>(&not_a_tm), 0),
      Fatal("gex_Coll_BarrierBlocking: tm is not this client's team"));
  EXPECT_DEATH(
      gex_Coll_ReduceToAllNB(reinterpret_cast<gex_TM_t>(&not_a_tm), b, a,
                             GEX_DT_I32, 4, 4, GEX_OP_ADD, nullptr, nullptr, 0),
      Fatal("gex_Coll_ReduceToAllNB: tm .* is not this client's "
            "team"));
}

// ---------------------------------------------------------------------------
// Fresh processes: gex_Client_Init in the child, which has not run one yet.

// Ends a fresh-process child: 0 with "<what> ok" when every check held.
#define CHILD_CHECK(cond)                                                \
  do {                                                                   \
    if (!(cond)) {                                                       \
      std::fprintf(stderr, "CHILD CHECK FAILED line %d: %s\n", __LINE__, \
                   #cond);                                               \
      _exit(1);                                                          \
    }                                                                    \
  } while (0)

void InitOnly(gex_Client_t* c, gex_EP_t* e, gex_TM_t* t) {
  unsetenv("GASNET_PSHM_NODES");
  CHILD_CHECK(gex_Client_Init(c, e, t, "fresh", nullptr, nullptr, 0) ==
              GASNET_OK);
}

TEST(FreshProcessDeathTest, CallsBeforeClientInit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // (No rank is known yet: "proc ?".)
  EXPECT_DEATH(gex_TM_QuerySize(GEX_TM_INVALID),
               "FATAL ERROR \\(proc \\?\\): gex_TM_QuerySize: called before "
               "gex_Client_Init");
  EXPECT_DEATH(gex_System_QueryJobRank(),
               "gex_System_QueryJobRank: called before gex_Client_Init");
  EXPECT_DEATH(gex_AM_RequestShort0(GEX_TM_INVALID, 0, 128, 0),
               "gex_AM_RequestShort: called before gex_Client_Init");
  EXPECT_DEATH(
      {
        int x = 0;
        gex_RMA_PutBlocking(GEX_TM_INVALID, 0, &x, &x, sizeof x, 0);
      },
      "gex_RMA_PutBlocking: called before gex_Client_Init");
  EXPECT_DEATH(gex_Coll_BarrierBlocking(GEX_TM_INVALID, 0),
               "gex_Coll_BarrierBlocking: called before gex_Client_Init");
  // The limits hold before init too; the verbose-errors switch reads on.
  EXPECT_EXIT(
      {
        CHILD_CHECK(gex_AM_LUBRequestMedium() == 65536);
        CHILD_CHECK(gex_AM_LUBReplyLong() == 65536);
        CHILD_CHECK(gex_AM_MaxArgs() == 16);
        CHILD_CHECK(gex_System_GetVerboseErrors() == 1);
        std::fprintf(stderr, "before-init ok\n");
        _exit(0);
      },
      testing::ExitedWithCode(0), "before-init ok");
}

TEST(FreshProcessDeathTest, ClientInitWithNullOutputs) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        gex_Client_t c;
        gex_EP_t e;
        const int rc =
            gex_Client_Init(&c, &e, nullptr, "null", nullptr, nullptr, 0);
        _exit(rc == GASNET_ERR_BAD_ARG ? 0 : 1);
      },
      testing::ExitedWithCode(0),
      "gex_Client_Init: client_p, ep_p and tm_p must not be NULL "
      "\\(GASNET_ERR_BAD_ARG\\)");
}

TEST(FreshProcessDeathTest, VerboseErrorsOffBeforeInitSilenceInit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The child prints only its own line: gex_Client_Init's complaint about
  // the NULL output is silenced by the switch turned off before it.
  EXPECT_EXIT(
      {
        gex_System_SetVerboseErrors(0);
        CHILD_CHECK(gex_System_GetVerboseErrors() == 0);
        gex_Client_t c;
        gex_EP_t e;
        const int rc =
            gex_Client_Init(&c, &e, nullptr, "quiet", nullptr, nullptr, 0);
        CHILD_CHECK(rc == GASNET_ERR_BAD_ARG);
        std::fprintf(stderr, "quiet-init ok\n");
        _exit(0);
      },
      testing::ExitedWithCode(0), "^quiet-init ok\n$");
}

TEST(FreshProcessDeathTest, ClientFlagsAndNameAreKept) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        gex_Client_t c;
        gex_EP_t e;
        gex_TM_t t;
        unsetenv("GASNET_PSHM_NODES");
        CHILD_CHECK(gex_Client_Init(&c, &e, &t, nullptr, nullptr, nullptr,
                                    GEX_FLAG_USES_GASNET1) == GASNET_OK);
        CHILD_CHECK(std::strcmp(gex_Client_QueryName(c), "") == 0);
        CHILD_CHECK(gex_Client_QueryFlags(c) == GEX_FLAG_USES_GASNET1);
        CHILD_CHECK(gex_EP_QuerySegment(e) == GEX_SEGMENT_INVALID);
        std::fprintf(stderr, "flags ok\n");
        _exit(0);
      },
      testing::ExitedWithCode(0), "flags ok");
}

TEST(FreshProcessDeathTest, CallsBeforeSegmentAttach) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  gex_Client_t c;
  gex_EP_t e;
  gex_TM_t t;
  EXPECT_DEATH(
      {
        InitOnly(&c, &e, &t);
        gex_EP_QueryBoundSegmentNB(t, 0, nullptr, nullptr, nullptr, 0);
      },
      "gex_EP_QueryBoundSegmentNB: no segment is attached yet");
  EXPECT_DEATH(
      {
        InitOnly(&c, &e, &t);
        static int x;
        gex_RMA_PutBlocking(t, 0, &x, &x, sizeof x, 0);
      },
      "gex_RMA_PutBlocking: no segment is attached yet");
  EXPECT_DEATH(
      {
        InitOnly(&c, &e, &t);
        static unsigned char b[8];
        gex_AM_RequestLong0(t, 0, 128, b, sizeof b, b, GEX_EVENT_NOW, 0);
      },
      "gex_AM_RequestLong: destination .* is outside rank 0's segment .*"
      "\\(no segment attached yet\\)");
}

TEST(FreshProcessDeathTest, ASegmentTooLargeIsAResourceError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        gex_Client_t c;
        gex_EP_t e;
        gex_TM_t t;
        InitOnly(&c, &e, &t);
        gex_Segment_t s = GEX_SEGMENT_INVALID;
        const int rc = gex_Segment_Attach(&s, t, uintptr_t{1} << 60);
        CHILD_CHECK(rc == GASNET_ERR_RESOURCE);
        CHILD_CHECK(s == GEX_SEGMENT_INVALID);
        std::fprintf(stderr, "too-large ok\n");
        _exit(0);
      },
      testing::ExitedWithCode(0),
      "gex_Segment_Attach: .*may attach at most(.|\n)*too-large ok");
}

// GEX_RMA_FORCE_AM=1: RMA to this rank over Active Messages, with real
// events.
void ForceAmChild() {
  setenv("GEX_RMA_FORCE_AM", "1", 1);
  gex_Client_t c;
  gex_EP_t e;
  gex_TM_t t;
  InitOnly(&c, &e, &t);
  gex_Segment_t s;
  CHILD_CHECK(gex_Segment_Attach(&s, t, 1 << 20) == GASNET_OK);
  auto* base = static_cast<unsigned char*>(gex_Segment_QueryAddr(s));
  const size_t n = 3 * 65536 + 5;  // four AM chunks
  const auto src = Pattern(n, 41);
  std::vector<unsigned char> heap(n);

  // Blocking.
  CHILD_CHECK(gex_RMA_PutBlocking(t, 0, base + 1, src.data(), n, 0) == 0);
  CHILD_CHECK(HasPattern(base + 1, n, 41));
  CHILD_CHECK(gex_RMA_GetBlocking(t, heap.data(), 0, base + 1, n, 0) == 0);
  CHILD_CHECK(HasPattern(heap.data(), n, 41));  // Medium replies
  unsigned char* in_seg = base + 512 * 1024;
  CHILD_CHECK(gex_RMA_GetBlocking(t, in_seg, 0, base + 1, n, 0) == 0);
  CHILD_CHECK(HasPattern(in_seg, n, 41));  // Long replies

  // NB: real events, and a local-completion leaf.
  std::memset(base, 0, n + 2);
  gex_Event_t lc = GEX_EVENT_NO_OP;
  gex_Event_t put = gex_RMA_PutNB(t, 0, base + 1, src.data(), n, &lc, 0);
  CHILD_CHECK(put != GEX_EVENT_INVALID && put != GEX_EVENT_NO_OP);
  CHILD_CHECK(lc != GEX_EVENT_NO_OP);
  CHILD_CHECK(gex_Event_QueryLeaf(put, GEX_EC_LC) == lc);
  gex_Event_Wait(lc);
  gex_Event_Wait(put);
  CHILD_CHECK(HasPattern(base + 1, n, 41));
  CHILD_CHECK(base[0] == 0 && base[n + 1] == 0);
  std::fill(heap.begin(), heap.end(), 0);
  gex_Event_t get = gex_RMA_GetNB(t, heap.data(), 0, base + 1, n, 0);
  CHILD_CHECK(get != GEX_EVENT_INVALID);
  while (gex_Event_Test(get) != GASNET_OK) {
  }
  CHILD_CHECK(HasPattern(heap.data(), n, 41));
  gex_Event_t both[2] = {
      gex_RMA_PutNB(t, 0, base, src.data(), 100, GEX_EVENT_NOW, 0),
      gex_RMA_GetNB(t, heap.data(), 0, base, 100, 0)};
  gex_Event_WaitAll(both, 2, 0);
  CHILD_CHECK(both[0] == GEX_EVENT_INVALID && both[1] == GEX_EVENT_INVALID);

  // NBI and an access region.
  std::memset(base, 0, n);
  CHILD_CHECK(gex_RMA_PutNBI(t, 0, base, src.data(), n, GEX_EVENT_GROUP, 0) ==
              0);
  gex_NBI_Wait(GEX_EC_LC, 0);
  gex_NBI_Wait(GEX_EC_PUT, 0);
  CHILD_CHECK(HasPattern(base, n, 41));
  std::fill(heap.begin(), heap.end(), 0);
  CHILD_CHECK(gex_RMA_GetNBI(t, heap.data(), 0, base, n, 0) == 0);
  while (gex_NBI_Test(GEX_EC_ALL, 0) != GASNET_OK) {
  }
  CHILD_CHECK(HasPattern(heap.data(), n, 41));
  gex_NBI_BeginAccessRegion(0);
  std::memset(base, 0, 1000);
  CHILD_CHECK(
      gex_RMA_PutNBI(t, 0, base, src.data(), 1000, GEX_EVENT_GROUP, 0) == 0);
  gex_Event_t region = gex_NBI_EndAccessRegion(0);
  CHILD_CHECK(region != GEX_EVENT_INVALID);
  gex_Event_Wait(gex_Event_QueryLeaf(region, GEX_EC_LC));
  gex_Event_Wait(region);
  CHILD_CHECK(HasPattern(base, 1000, 41));

  // Values.
  CHILD_CHECK(gex_RMA_PutBlockingVal(t, 0, base + 3, 0xa1b2c3d4ull, 4, 0) == 0);
  CHILD_CHECK(gex_RMA_GetBlockingVal(t, 0, base + 3, 4, 0) == 0xa1b2c3d4ull);
  gex_Event_t pv = gex_RMA_PutNBVal(t, 0, base + 3, 0x55, 1, 0);
  gex_Event_Wait(pv);
  CHILD_CHECK(base[3] == 0x55);
  std::fprintf(stderr, "force-am ok\n");
  _exit(0);
}

TEST(FreshProcessDeathTest, RmaOverActiveMessagesWithForceAm) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ForceAmChild(), testing::ExitedWithCode(0), "force-am ok");
}

TEST(FreshProcessDeathTest, ARetiredEventIsDeadWithForceAm) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        setenv("GEX_RMA_FORCE_AM", "1", 1);
        gex_Client_t c;
        gex_EP_t e;
        gex_TM_t t;
        InitOnly(&c, &e, &t);
        gex_Segment_t s;
        gex_Segment_Attach(&s, t, 1 << 16);
        static int x;
        gex_Event_t ev = gex_RMA_PutNB(t, 0, gex_Segment_QueryAddr(s), &x,
                                       sizeof x, GEX_EVENT_NOW, 0);
        gex_Event_Wait(ev);
        gex_Event_Wait(ev);
      },
      "gex_Event_Wait: .* is not a live event");
  EXPECT_DEATH(
      {
        setenv("GEX_RMA_FORCE_AM", "1", 1);
        gex_Client_t c;
        gex_EP_t e;
        gex_TM_t t;
        InitOnly(&c, &e, &t);
        gex_Segment_t s;
        gex_Segment_Attach(&s, t, 1 << 16);
        static int x;
        gex_Event_t ev = gex_RMA_PutNB(t, 0, gex_Segment_QueryAddr(s), &x,
                                       sizeof x, GEX_EVENT_NOW, 0);
        gex_Event_QueryLeaf(ev, GEX_EC_PUT);
      },
      "gex_Event_QueryLeaf: event_category 0x2: only GEX_EC_LC \\(0x8\\) "
      "leaves exist");
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  // Each death test re-executes this program, which starts its own job:
  // the parent's job (its shared memory, exit state) is never shared with
  // a child that dies.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  return RUN_ALL_TESTS();
}
