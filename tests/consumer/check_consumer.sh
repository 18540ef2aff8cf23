#!/usr/bin/env bash
# Proves another Bazel workspace can consume gex the way the README says:
# a WORKSPACE of three lines (local_repository + gex_dependencies()), then
# ordinary labels. In a scratch workspace it
#   1. builds and runs a cc_test that depends on GoogleTest from
#      gex_dependencies() and on one gex library;
#   2. builds a C client of the GASNet-EX API (a cc_binary on
#      @gex//conduit/smp:gasnet_smp_par, including <gasnetex.h>) and the
#      launcher @gex//tools:gasnetrun_smp, and runs the client as a 2-rank
#      job: it must exit 0 and both ranks must print their line.
#
# Usage: tests/consumer/check_consumer.sh [GEX_LABEL]
#   GEX_LABEL: a gex library target as a consumer names it
#              (default: @gex//base:job_rank). For the default the test
#              also calls the library (JobRank/SetJobRank); for any other
#              label it proves the target builds and links into a test.
# Environment:
#   BAZEL              bazel binary (default: bazel)
#   KEEP_SCRATCH=1     keep the scratch workspace and its output base
# Exit status 0 and a final "check_consumer: PASS" line when the consumer
# test passed and the client job ran; otherwise 1 and
# "check_consumer: FAIL ...".
#
# The scratch workspace is a distinct workspace, so Bazel gives it its own
# output base (and server) under the default output root; it shares our disk
# cache, so what gex already built is not rebuilt. The server is shut down
# and the output base removed at the end.

set -euo pipefail

label="${1:-@gex//base:job_rank}"
bazel="${BAZEL:-bazel}"

# The gex checkout: where `bazel run` was started, else two levels up from
# this script.
if [[ -n "${BUILD_WORKSPACE_DIRECTORY:-}" ]]; then
  gex_root="$BUILD_WORKSPACE_DIRECTORY"
else
  gex_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fi
if [[ ! -f "$gex_root/WORKSPACE" || ! -f "$gex_root/repositories.bzl" ]]; then
  echo "check_consumer: FAIL: $gex_root is not the gex workspace root" >&2
  exit 1
fi

if [[ "$label" != @gex//* ]]; then
  echo "check_consumer: FAIL: '$label' is not a label in @gex" >&2
  exit 1
fi

# Our disk cache (from our .bazelrc), passed on so the consumer reuses it.
disk_cache="$(sed -n 's/^build[[:space:]].*--disk_cache=\([^[:space:]]*\).*/\1/p' \
  "$gex_root/.bazelrc" | tail -n 1)"

scratch="$(mktemp -d "${TMPDIR:-/tmp}/gex_consumer.XXXXXX")"
output_base=""
verdict=""
cleanup() {
  local rc=$?
  # Whatever stopped the script, the last line is still the verdict.
  if [[ -z "$verdict" ]]; then
    ((rc != 0)) || rc=1
    verdict="check_consumer: FAIL: stopped early (exit $rc)"
  fi
  if [[ "${KEEP_SCRATCH:-0}" == 1 ]]; then
    echo "check_consumer: kept $scratch${output_base:+ and $output_base}"
  else
    (cd "$scratch" && "$bazel" shutdown >/dev/null 2>&1) || true
    if [[ -n "$output_base" && -d "$output_base" ]]; then
      chmod -R u+w "$output_base" 2>/dev/null || true
      rm -rf "$output_base"
    fi
    rm -rf "$scratch"
  fi
  echo "$verdict"
  exit "$rc"
}
trap cleanup EXIT

# ---- the consumer workspace ------------------------------------------------

cat >"$scratch/WORKSPACE" <<EOF
local_repository(name = "gex", path = "$gex_root")
load("@gex//:repositories.bzl", "gex_dependencies")
gex_dependencies()
EOF

# gex is C++20; a consumer builds with at least that.
cat >"$scratch/.bazelrc" <<'EOF'
build --cxxopt=-std=c++20 --host_cxxopt=-std=c++20
test --test_output=errors
EOF

cat >"$scratch/BUILD.bazel" <<EOF
load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_test")

cc_test(
    name = "consumer_test",
    srcs = ["consumer_test.cc"],
    deps = [
        "$label",
        "@com_google_googletest//:gtest_main",
    ],
)

# A GASNet-EX client as users write one: C, one conduit target (which also
# picks the threading mode, PAR here), started by gex's launcher.
cc_binary(
    name = "hello_client",
    srcs = ["hello_client.c"],
    deps = ["@gex//conduit/smp:gasnet_smp_par"],
)
EOF

cat >"$scratch/hello_client.c" <<'EOF'
/* Built in a consumer workspace against @gex//conduit/smp:gasnet_smp_par:
 * every rank sends an AM Short request to the next rank, whose handler
 * replies; each rank waits for its reply and prints one line. */
#include <gasnetex.h>
#include <stdio.h>

#define HIDX_PING (GEX_AM_INDEX_BASE + 0)
#define HIDX_PONG (GEX_AM_INDEX_BASE + 1)

/* Handlers run inside the calls that poll, on this (only) thread. */
static volatile int replies = 0;
static volatile gex_AM_Arg_t replied_by = -1;
static gex_Rank_t me;

static void ping(gex_Token_t token) {
  gex_AM_ReplyShort1(token, HIDX_PONG, 0, (gex_AM_Arg_t)me);
}
static void pong(gex_Token_t token, gex_AM_Arg_t from) {
  (void)token;
  replied_by = from;
  replies = replies + 1;
}

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t ep;
  gex_TM_t tm;
  gex_Segment_t segment;
  if (gex_Client_Init(&client, &ep, &tm, "consumer", &argc, &argv, 0) !=
      GASNET_OK) {
    return 1;
  }
  me = gex_TM_QueryRank(tm);
  const gex_Rank_t ranks = gex_TM_QuerySize(tm);
  gex_AM_Entry_t handlers[] = {
      {HIDX_PING, (gex_AM_Fn_t)ping, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REQUEST,
       0, NULL, "ping"},
      {HIDX_PONG, (gex_AM_Fn_t)pong, GEX_FLAG_AM_SHORT | GEX_FLAG_AM_REPLY, 1,
       NULL, "pong"},
  };
  if (gex_EP_RegisterHandlers(ep, handlers, 2) != GASNET_OK) gasnet_exit(1);
  /* Collective: every rank has registered its handlers once it returns. */
  if (gex_Segment_Attach(&segment, tm, 4096) != GASNET_OK) gasnet_exit(1);
  const gex_Rank_t next = (me + 1) % ranks;
  if (gex_AM_RequestShort0(tm, next, HIDX_PING, 0) != GASNET_OK) {
    gasnet_exit(1);
  }
  GASNET_BLOCKUNTIL(replies == 1);
  printf("consumer client: rank %u of %u: rank %d answered (%s)\n",
         (unsigned)me, (unsigned)ranks, (int)replied_by, GASNET_CONFIG_STRING);
  fflush(stdout);
  gex_Coll_BarrierBlocking(tm, 0);
  gasnet_exit(replied_by == (gex_AM_Arg_t)next ? 0 : 1);
  return 0;
}
EOF

if [[ "$label" == "@gex//base:job_rank" ]]; then
  cat >"$scratch/consumer_test.cc" <<'EOF'
// Built in a consumer workspace: gex's header is found as "base/job_rank.h"
// and its library links.
#include "base/job_rank.h"

#include "gtest/gtest.h"

TEST(ConsumerTest, JobRankFromGex) {
  EXPECT_EQ(gex::JobRank(), -1);  // Unknown until set.
  gex::SetJobRank(3);
  EXPECT_EQ(gex::JobRank(), 3);
}
EOF
else
  cat >"$scratch/consumer_test.cc" <<EOF
// Built in a consumer workspace: links $label into a test.
#include "gtest/gtest.h"

TEST(ConsumerTest, LinksGexTarget) { SUCCEED(); }
EOF
fi

# ---- build and run it ------------------------------------------------------

echo "check_consumer: scratch workspace $scratch, gex at $gex_root, target $label"
cd "$scratch"
output_base="$("$bazel" info output_base 2>/dev/null || true)"

flags=(--jobs=2)
[[ -n "$disk_cache" ]] && flags+=("--disk_cache=$disk_cache")

rc=0
"$bazel" test "${flags[@]}" //:consumer_test || rc=$?
if ((rc != 0)); then
  verdict="check_consumer: FAIL: bazel test //:consumer_test exited $rc (target $label)"
  exit 1
fi

# The client, run as a 2-rank job by gex's own launcher, as built here.
rc=0
"$bazel" build "${flags[@]}" //:hello_client @gex//tools:gasnetrun_smp || rc=$?
if ((rc != 0)); then
  verdict="check_consumer: FAIL: bazel build of //:hello_client and @gex//tools:gasnetrun_smp exited $rc"
  exit 1
fi
bin="$("$bazel" info "${flags[@]}" bazel-bin 2>/dev/null)"
launcher="$bin/external/gex/tools/gasnetrun_smp"
echo "check_consumer: running $launcher -n 2 $bin/hello_client"
# A wedged job must not hang the suite: the timeout ends the launcher,
# which ends its ranks.
out="$(timeout 120 "$launcher" -n 2 "$bin/hello_client" 2>&1)" || rc=$?
echo "$out"
if ((rc != 0)); then
  verdict="check_consumer: FAIL: the 2-rank client job exited $rc"
  exit 1
fi
for r in 0 1; do
  if ! grep -q "^consumer client: rank $r of 2: rank $((r ^ 1)) answered" <<<"$out"; then
    verdict="check_consumer: FAIL: rank $r of the client job printed no line"
    exit 1
  fi
done
verdict="check_consumer: PASS: a consumer workspace built and ran a test against $label, and a 2-rank GASNet-EX client on @gex//conduit/smp:gasnet_smp_par"
