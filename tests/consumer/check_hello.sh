#!/usr/bin/env bash
# The GASNet-EX hello world, written as GASNet's documentation writes it
# (it includes only <gasnetex.h>, starts with gex_Client_Init, waits in the
# legacy gasnet_barrier_notify/wait and leaves with gasnet_exit), built in a
# scratch Bazel workspace that has nothing but the README's three WORKSPACE
# lines, a BUILD file naming @gex//conduit/smp:gasnet_smp_seq, and the
# source; then run as a 1-, 2- and 4-rank job by @gex//tools:gasnetrun_smp.
# Every rank must print "hello: rank R of N: hello world ok" and each job
# must exit 0. (check_consumer.sh checks the other consumer clients; this is
# its own case so that either can change alone.)
#
# Usage: tests/consumer/check_hello.sh   (or bazel-free: run it from a gex
#        checkout; it runs bazel itself, in its own output base)
# Environment:
#   BAZEL              bazel binary (default: bazel)
#   KEEP_SCRATCH=1     keep the scratch workspace and its output base
# Exit status 0 and a final "check_hello: PASS" line when it built and ran;
# otherwise 1 and "check_hello: FAIL ...". The builds use gex's disk cache
# (~/.cache/gex-bazel-disk), shared with check_consumer.sh.

set -euo pipefail

bazel="${BAZEL:-bazel}"
if [[ -n "${BUILD_WORKSPACE_DIRECTORY:-}" ]]; then
  gex_root="$BUILD_WORKSPACE_DIRECTORY"
else
  gex_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fi
if [[ ! -f "$gex_root/WORKSPACE" || ! -f "$gex_root/repositories.bzl" ]]; then
  echo "check_hello: FAIL: $gex_root is not the gex workspace root" >&2
  exit 1
fi
disk_cache="$(sed -n 's/^build[[:space:]].*--disk_cache=\([^[:space:]]*\).*/\1/p' \
  "$gex_root/.bazelrc" | tail -n 1)"
disk_cache="${disk_cache:-$HOME/.cache/gex-bazel-disk}"

top="$(mktemp -d /tmp/gex_hello.XXXXXX)"
scratch="$top/workspace"
output_base="$top/output_base"
mkdir -p "$scratch"
verdict=""
bz() { "$bazel" --output_base="$output_base" --max_idle_secs=60 "$@"; }
cleanup() {
  local rc=$?
  if [[ -z "$verdict" ]]; then
    ((rc != 0)) || rc=1
    verdict="check_hello: FAIL: stopped early (exit $rc)"
  fi
  if [[ "${KEEP_SCRATCH:-0}" == 1 ]]; then
    echo "check_hello: kept $scratch and $output_base"
  else
    (cd "$scratch" && bz shutdown >/dev/null 2>&1) || true
    chmod -R u+w "$top" 2>/dev/null || true
    rm -rf "$top"
  fi
  echo "$verdict"
  exit "$rc"
}
trap cleanup EXIT

# ---- the consumer workspace: the README's three lines, BUILD, source -------

cat >"$scratch/WORKSPACE" <<EOF
local_repository(name = "gex", path = "$gex_root")
load("@gex//:repositories.bzl", "gex_dependencies")
gex_dependencies()
EOF

cat >"$scratch/BUILD.bazel" <<'EOF'
load("@rules_cc//cc:defs.bzl", "cc_binary")

# One conduit target brings <gasnetex.h>, the threading mode and the
# library. The warnings only prove the header is clean in a client.
cc_binary(
    name = "hello",
    srcs = ["hello.c"],
    copts = ["-Wall", "-Wextra", "-Wundef", "-Werror"],
    deps = ["@gex//conduit/smp:gasnet_smp_seq"],
)
EOF

cat >"$scratch/hello.c" <<'EOF'
/* Hello world over GASNet-EX: every rank starts, meets the others in a
 * barrier, greets, meets them again and leaves. Optional argument: how
 * many barriers to run before greeting. */
#include <gasnetex.h>

int main(int argc, char **argv) {
  gex_Client_t client;
  gex_EP_t endpoint;
  gex_TM_t team;
  long rounds = 1;
  long i;
  int rc = gex_Client_Init(&client, &endpoint, &team, "hello", &argc, &argv,
                           0);
  if (rc != GASNET_OK) {
    fprintf(stderr, "hello: gex_Client_Init failed: %s\n",
            gasnet_ErrorName(rc));
    return 1;
  }
  if (argc > 1) rounds = atol(argv[1]);
  gasnet_set_waitmode(GASNET_WAIT_BLOCK);
  for (i = 0; i < rounds; ++i) {
    gasnet_barrier_notify(0, GASNET_BARRIERFLAG_UNNAMED);
    rc = gasnet_barrier_wait(0, GASNET_BARRIERFLAG_UNNAMED);
    if (rc != GASNET_OK) {
      fprintf(stderr, "hello: barrier failed: %s\n", gasnet_ErrorName(rc));
      gasnet_exit(1);
    }
  }
  printf("hello: rank %u of %u: hello world ok\n",
         (unsigned)gex_TM_QueryRank(team), (unsigned)gex_TM_QuerySize(team));
  fflush(stdout);
  gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS);
  gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS);
  gasnet_exit(0);
  return 0;
}
EOF

# ---- build and run ----------------------------------------------------------

echo "check_hello: scratch workspace $scratch, gex at $gex_root"
cd "$scratch"
flags=("--disk_cache=$disk_cache" --nosandbox_debug)
rc=0
bz build "${flags[@]}" //:hello @gex//tools:gasnetrun_smp || rc=$?
if ((rc != 0)); then
  verdict="check_hello: FAIL: bazel build of //:hello and @gex//tools:gasnetrun_smp exited $rc"
  exit 1
fi
bin="$(bz info "${flags[@]}" bazel-bin 2>/dev/null)"

for n in 1 2 4; do
  out=""
  jrc=0
  echo "check_hello: running gasnetrun_smp -n $n hello 3"
  out="$(timeout 120 "$bin/external/gex/tools/gasnetrun_smp" -n "$n" \
    "$bin/hello" 3 2>&1)" || jrc=$?
  echo "$out"
  if ((jrc != 0)); then
    verdict="check_hello: FAIL: the $n-rank hello job exited $jrc"
    exit 1
  fi
  for ((r = 0; r < n; ++r)); do
    if ! grep -q "^hello: rank $r of $n: hello world ok\$" <<<"$out"; then
      verdict="check_hello: FAIL: rank $r of the $n-rank job printed no greeting"
      exit 1
    fi
  done
done

verdict="check_hello: PASS: GASNet's hello world (gasnetex.h only) built from a consumer workspace of the README's three WORKSPACE lines and ran at 1, 2 and 4 ranks"
