// A C++ client of gex's C++ API as a consumer workspace builds it:
// <gex/gex.hpp> from @gex//api/cpp:gex_cpp plus the conduit target
// @gex//conduit/smp:gasnet_smp_seq, run as a job of 2 (or more) ranks
// (GASNET_PSHM_NODES=2).
//
// Every rank Puts a block of its own pattern into the next rank's segment,
// Gets the previous rank's block back after a barrier, reads one value with
// get_val, and sends the next rank typed Short requests whose handler
// replies with a function of the arguments, each checked by the sender. A
// rank that sees everything right prints
//   cpp_client: rank R of N: put/get of B ints and A typed round trips ok
// and the job exits 0. A wrong value prints "cpp_client: rank R: FAILED ..."
// and ends the job with exit code 1; an error the API throws ends it with 2.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <span>
#include <vector>

#include "gex/gex.hpp"

namespace {

constexpr std::size_t kInts = 10000;
constexpr std::uint32_t kRounds = 200;

gex::Rank g_me = 0;
gex::Rank g_prev = 0;
// SEQ: handlers run inside the calls that poll, on this thread.
volatile std::uint32_t g_requests = 0;  // received, from the previous rank
volatile std::uint32_t g_replies = 0;   // received, from the next rank
volatile std::uint32_t g_bad = 0;       // wrong values seen

void Fail(const char* what, unsigned long got, unsigned long want) {
  std::printf("cpp_client: rank %u: FAILED %s: got %lu, expected %lu\n",
              static_cast<unsigned>(g_me), what, got, want);
  std::fflush(stdout);
  g_bad = g_bad + 1;
}

int Pattern(gex::Rank owner, std::size_t i) {
  return static_cast<int>(owner * 100003u + i * 7u + 1u);
}

std::uint32_t Answer(std::uint32_t round, std::int16_t delta) {
  return round * 5u + static_cast<std::uint32_t>(delta + 1000);
}

void OnReply(gex::Token, std::uint32_t round, std::uint32_t answer,
             std::int16_t delta) {
  if (answer != Answer(round, delta)) {
    Fail("reply", answer, Answer(round, delta));
  }
  g_replies = g_replies + 1;
}

void OnRequest(gex::Token t, std::uint32_t round, std::int16_t delta) {
  if (t.source() != g_prev) Fail("request source", t.source(), g_prev);
  g_requests = g_requests + 1;
  gex::reply_short<OnReply>(t, round, Answer(round, delta), delta);
}

int Run(int argc, char** argv) {
  gex::Client client(argc, argv, "cpp_client");
  const gex::Team team = client.team();
  g_me = team.rank();
  const gex::Rank ranks = team.size();
  const gex::Rank next = (g_me + 1) % ranks;
  g_prev = (g_me + ranks - 1) % ranks;
  gex::register_handlers<OnRequest, OnReply>(client.endpoint());
  const gex::Segment segment(team, kInts * sizeof(int));  // collective
  int* const mine = static_cast<int*>(segment.addr());
  int* const theirs = static_cast<int*>(team.bound_segment(next).owner_addr);

  std::vector<int> block(kInts);
  for (std::size_t i = 0; i < kInts; ++i) block[i] = Pattern(g_me, i);
  gex::put(team, next, theirs, block);  // blocking
  team.barrier();
  // What the previous rank put here, read locally and with a Get.
  for (std::size_t i = 0; i < kInts; ++i) {
    if (mine[i] != Pattern(g_prev, i)) {
      Fail("segment word after the Put", mine[i], Pattern(g_prev, i));
      break;
    }
  }
  std::vector<int> back(kInts, -1);
  gex::Event got = gex::get_nb(team, std::span(back), next, theirs);
  got.wait();
  for (std::size_t i = 0; i < kInts; ++i) {
    if (back[i] != Pattern(g_me, i)) {
      Fail("word read back with get_nb", back[i], Pattern(g_me, i));
      break;
    }
  }
  const int last = gex::get_val(team, next, theirs + kInts - 1);
  if (last != Pattern(g_me, kInts - 1)) {
    Fail("get_val", last, Pattern(g_me, kInts - 1));
  }

  for (std::uint32_t round = 0; round < kRounds; ++round) {
    // Exactly the handler's types: a plain int would not compile.
    const auto delta = static_cast<std::int16_t>(int(round % 97) - 48);
    gex::request_short<OnRequest>(team, next, round, delta);
  }
  gex::poll_until([] { return g_replies == kRounds && g_requests == kRounds; });
  team.barrier();
  if (g_bad == 0) {
    std::printf(
        "cpp_client: rank %u of %u: put/get of %zu ints and %u typed round "
        "trips ok\n",
        static_cast<unsigned>(g_me), static_cast<unsigned>(ranks), kInts,
        static_cast<unsigned>(kRounds));
    std::fflush(stdout);
  }
  team.barrier();
  gex::exit_job(g_bad == 0 ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::printf("cpp_client: FAILED: %s\n", e.what());
    std::fflush(stdout);
    gex::exit_job(2);
  }
}
