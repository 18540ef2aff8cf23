// vis_par_client: one rank of a multi-threaded VIS job (gasnet_vis.h) over
// any conduit in PAR mode (built against the conduit's PAR library),
// started by its launcher from vis_job_test. C++, -Wall -Wextra -Wpedantic
// -Werror.
//
//   par ROUNDS  4 threads per rank, each with its own slice of the next
//               rank's segment, run ROUNDS rounds of: a Strided Put NB (a
//               2-D block), a Vector Put NBI synced with gex_NBI_Wait
//               (GEX_EC_PUT: each thread's NBI counters are its own), an
//               Indexed Put Blocking armed with a peer completion handler
//               (the arming is the calling thread's alone: the other
//               threads' calls meanwhile notify no one), then a Strided Get
//               NBI and a Vector Get NB of everything it wrote, checked
//               byte by byte. Replies (on the AM path) run on whichever
//               thread polls, so completions cross threads. The target
//               counts the notes by source thread; after the threads join,
//               each rank polls until its predecessor's notes are all in,
//               and after a barrier checks exactly one per armed call.
//               Prints "rank R: par ok ops=K notes=N".
#include <gasnet_vis.h>
#include <gasnetex.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/client_check.h"

namespace {

constexpr int kThreads = 4;
constexpr size_t kSlice = 64 * 1024;  // per thread, in the next rank
constexpr gex_AM_Index_t kNoteHandler = 201;
// Shape of the strided block: 10 rows of 20 elements of 40 bytes.
constexpr size_t kElem = 40;
constexpr size_t kCols = 20;
constexpr size_t kRows = 10;
constexpr ptrdiff_t kColStride = 48;
constexpr ptrdiff_t kRowStride = 1000;
constexpr size_t kBlock = kElem * kCols * kRows;  // 8000 bytes
constexpr size_t kVecOffset = 12000;
constexpr size_t kVecBytes = 9000;
constexpr size_t kIdxOffset = 24000;
constexpr size_t kIdxBytes = 6000;

gex_TM_t g_tm;
gex_Rank_t g_me;
gex_Rank_t g_n;
unsigned char* g_next;  // the next rank's segment, as it sees it
std::atomic<long> g_ops{0};
std::atomic<long> g_notes[kThreads];

void NoteHandler(gex_Token_t token, void* buf, size_t nbytes) {
  gex_Token_Info_t info;
  gex_Token_Info(token, &info, GEX_TI_SRCRANK);
  CHECK(nbytes == sizeof(int), "note of %zu bytes", nbytes);
  int thread;
  std::memcpy(&thread, buf, sizeof thread);
  CHECK(thread >= 0 && thread < kThreads, "note from thread %d", thread);
  CHECK(info.gex_srcrank == (g_me + g_n - 1) % g_n, "note from rank %u",
        info.gex_srcrank);
  g_notes[thread].fetch_add(1);
}

unsigned char Value(int thread, int round, size_t i) {
  return static_cast<unsigned char>(thread * 41 + round * 7 + i % 13 + 1);
}

void Worker(int thread, int rounds) {
  const gex_Rank_t next = (g_me + 1) % g_n;
  unsigned char* slice = g_next + kSlice * thread;
  std::vector<unsigned char> src(kBlock + kVecBytes + kIdxBytes);
  std::vector<unsigned char> back(src.size());
  const size_t count[2] = {kCols, kRows};
  const ptrdiff_t remote_strides[2] = {kColStride, kRowStride};
  const ptrdiff_t local_strides[2] = {static_cast<ptrdiff_t>(kElem),
                                      static_cast<ptrdiff_t>(kElem * kCols)};
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < src.size(); ++i) src[i] = Value(thread, round, i);
    unsigned char* block = src.data();
    unsigned char* vec = src.data() + kBlock;
    unsigned char* idx = vec + kVecBytes;
    // Strided Put NB.
    gex_Event_t ev =
        gex_VIS_StridedPutNB(g_tm, next, slice, remote_strides, block,
                             local_strides, kElem, count, 2, 0);
    // Vector Put NBI: three remote pieces from two local ones.
    gex_Memvec_t vd[3] = {{slice + kVecOffset, 4000},
                          {slice + kVecOffset + 4000, 0},
                          {slice + kVecOffset + 4000, 5000}};
    gex_Memvec_t vs[2] = {{vec, 2500}, {vec + 2500, 6500}};
    CHECK(gex_VIS_VectorPutNBI(g_tm, next, 3, vd, 2, vs, 0) == 0, "NBI");
    gex_NBI_Wait(GEX_EC_PUT, 0);
    gex_Event_Wait(ev);
    // Indexed Put Blocking with a note.
    gex_VIS_SetPeerCompletionHandler(kNoteHandler, &thread, sizeof thread, 0);
    void* id[3] = {slice + kIdxOffset, slice + kIdxOffset + 2000,
                   slice + kIdxOffset + 4000};
    void* is[1] = {idx};
    CHECK(gex_VIS_IndexedPutBlocking(g_tm, next, 3, id, 2000, 1, is, kIdxBytes,
                                     0) == 0,
          "blocking");
    // Read everything back.
    std::memset(back.data(), 0, back.size());
    CHECK(gex_VIS_StridedGetNBI(g_tm, back.data(), local_strides, next, slice,
                                remote_strides, kElem, count, 2, 0) == 0,
          "get NBI");
    gex_Memvec_t gd[1] = {{back.data() + kBlock, kVecBytes + kIdxBytes}};
    gex_Memvec_t gs[2] = {{slice + kVecOffset, kVecBytes},
                          {slice + kIdxOffset, kIdxBytes}};
    gex_Event_t get = gex_VIS_VectorGetNB(g_tm, 1, gd, next, 2, gs, 0);
    gex_NBI_Wait(GEX_EC_GET, 0);
    gex_Event_Wait(get);
    for (size_t i = 0; i < src.size(); ++i) {
      if (back[i] != src[i]) {
        CHECK(false, "thread %d round %d: byte %zu is %u, want %u", thread,
              round, i, back[i], src[i]);
      }
    }
    g_ops.fetch_add(5);
  }
}

}  // namespace

int main(int argc, char** argv) {
  gex_Client_t client;
  gex_EP_t ep;
  CHECK(gex_Client_Init(&client, &ep, &g_tm, "VIS_PAR_TEST", &argc, &argv, 0) ==
            GASNET_OK,
        "gex_Client_Init failed");
  g_me = gex_TM_QueryRank(g_tm);
  g_n = gex_TM_QuerySize(g_tm);
  check_rank = static_cast<int>(g_me);
  CHECK(argc == 3 && std::strcmp(argv[1], "par") == 0,
        "usage: vis_par_client par ROUNDS");
  const int rounds = std::atoi(argv[2]);
  gex_AM_Entry_t entry = {kNoteHandler,
                          reinterpret_cast<gex_AM_Fn_t>(&NoteHandler),
                          GEX_FLAG_AM_MEDIUM | GEX_FLAG_AM_REPLY,
                          0,
                          nullptr,
                          "vis par note"};
  CHECK(gex_EP_RegisterHandlers(ep, &entry, 1) == GASNET_OK, "register");
  gex_Segment_t seg;
  CHECK(gex_Segment_Attach(&seg, g_tm, kThreads * kSlice) == GASNET_OK,
        "gex_Segment_Attach failed");
  void* owner;
  void* local;
  uintptr_t size;
  gex_Event_Wait(gex_EP_QueryBoundSegmentNB(g_tm, (g_me + 1) % g_n, &owner,
                                            &local, &size, 0));
  g_next = static_cast<unsigned char*>(owner);
  gex_Coll_BarrierBlocking(g_tm, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(Worker, t, rounds);
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    while (g_notes[t].load() < rounds) gasnet_AMPoll();
  }
  gex_Coll_BarrierBlocking(g_tm, 0);
  long notes = 0;
  for (int t = 0; t < kThreads; ++t) {
    CHECK(g_notes[t].load() == rounds, "thread %d: %ld notes, want %d", t,
          g_notes[t].load(), rounds);
    notes += g_notes[t].load();
  }
  const std::string line = "par ok ops=" + std::to_string(g_ops.load()) +
                           " notes=" + std::to_string(notes);
  Say("%s", line.c_str());
  gex_Coll_BarrierBlocking(g_tm, 0);
  gasnet_exit(0);
}
