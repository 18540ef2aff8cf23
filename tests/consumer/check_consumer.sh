#!/usr/bin/env bash
# Proves another Bazel workspace can consume gex the way the README says. A
# scratch workspace gets exactly
#   - a WORKSPACE of the README's three lines (local_repository of gex, the
#     load of @gex//:repositories.bzl, gex_dependencies()),
#   - a BUILD file and its sources (copied from tests/consumer/workspace/),
# and nothing else: no .bazelrc, so nothing but gex's own BUILD files gives
# gex's sources the flags they need (C++20). Debian's /etc/bazel/bazelrc
# applies, as it does to every Bazel run on the machine. In it the script
#   1. builds @gex//tools:gasnetrun_smp and a C client on
#      @gex//conduit/smp:gasnet_smp_seq, and runs the client as a 2-rank job
#      through the launcher: Short and Medium Active Messages both ways,
#      every argument, payload and reply checked;
#   2. builds a C++ client on @gex//api/cpp:gex_cpp (plus gasnet_smp_seq) and
#      runs it as a 2-rank job with GASNET_PSHM_NODES=2: Put, get_nb,
#      get_val and typed AM round trips, every value checked;
#   3. builds a tools-only client (no conduit) on
#      @gex//api/tools:gasnet_tools_seq, and with GASNETT_THREAD_SAFE on
#      @gex//api/tools:gasnet_tools_par, and runs each (a plain process).
# Each job must exit 0 and each rank must print its "ok" line.
#
# Usage: tests/consumer/check_consumer.sh [GEX_LABEL]
#   GEX_LABEL: optionally, any gex target as a consumer names it
#              (@gex//...): a GoogleTest test (GoogleTest from
#              gex_dependencies()) that links it is also built and run.
# Environment:
#   BAZEL              bazel binary (default: bazel)
#   KEEP_SCRATCH=1     keep the scratch workspace and its output base
# Exit status 0 and a final "check_consumer: PASS" line when everything
# built and ran; otherwise 1 and "check_consumer: FAIL ...".
#
# The scratch workspace and its own output base live in one directory under
# /tmp. The builds use gex's disk cache (~/.cache/gex-bazel-disk), so a
# second run does not compile gex again. The command-line flags (the output
# base, the disk cache, no sandbox tracing) change nothing that is
# compiled. The Bazel server is shut down and the directory removed at the
# end.

set -euo pipefail

label="${1:-}"
bazel="${BAZEL:-bazel}"

# The gex checkout: where `bazel run` was started, else two levels up from
# this script.
if [[ -n "${BUILD_WORKSPACE_DIRECTORY:-}" ]]; then
  gex_root="$BUILD_WORKSPACE_DIRECTORY"
else
  gex_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fi
sources="$gex_root/tests/consumer/workspace"
if [[ ! -f "$gex_root/WORKSPACE" || ! -f "$gex_root/repositories.bzl" ||
  ! -f "$sources/consumer.BUILD" ]]; then
  echo "check_consumer: FAIL: $gex_root is not the gex workspace root" >&2
  exit 1
fi

if [[ -n "$label" && "$label" != @gex//* ]]; then
  echo "check_consumer: FAIL: '$label' is not a label in @gex" >&2
  exit 1
fi

# Our disk cache (from our .bazelrc), passed on so the consumer reuses it.
disk_cache="$(sed -n 's/^build[[:space:]].*--disk_cache=\([^[:space:]]*\).*/\1/p' \
  "$gex_root/.bazelrc" | tail -n 1)"
disk_cache="${disk_cache:-$HOME/.cache/gex-bazel-disk}"

top="$(mktemp -d /tmp/gex_consumer.XXXXXX)"
scratch="$top/workspace"
output_base="$top/output_base"
mkdir -p "$scratch"
verdict=""
# Every Bazel call: the same startup options, so one server serves them all.
bz() { "$bazel" --output_base="$output_base" --max_idle_secs=60 "$@"; }
cleanup() {
  local rc=$?
  # Whatever stopped the script, the last line is still the verdict.
  if [[ -z "$verdict" ]]; then
    ((rc != 0)) || rc=1
    verdict="check_consumer: FAIL: stopped early (exit $rc)"
  fi
  if [[ "${KEEP_SCRATCH:-0}" == 1 ]]; then
    echo "check_consumer: kept $scratch and $output_base"
  else
    (cd "$scratch" && bz shutdown >/dev/null 2>&1) || true
    chmod -R u+w "$top" 2>/dev/null || true
    rm -rf "$top"
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
cp "$sources/consumer.BUILD" "$scratch/BUILD.bazel"
cp "$sources/c_client.c" "$sources/cpp_client.cc" "$sources/tools_client.c" \
  "$scratch/"

if [[ -n "$label" ]]; then
  cat >>"$scratch/BUILD.bazel" <<EOF

# Added by check_consumer.sh for its GEX_LABEL argument.
cc_test(
    name = "label_test",
    srcs = ["label_test.cc"],
    copts = ["-std=c++20"],
    deps = [
        "$label",
        "@com_google_googletest//:gtest_main",
    ],
)
EOF
  cat >"$scratch/label_test.cc" <<EOF
// Built in a consumer workspace: links $label into a GoogleTest test.
#include "gtest/gtest.h"

TEST(ConsumerTest, LinksGexTarget) { SUCCEED(); }
EOF
fi

# ---- build and run it ------------------------------------------------------

echo "check_consumer: scratch workspace $scratch, gex at $gex_root"
cd "$scratch"
# Debian's /etc/bazel/bazelrc turns on --sandbox_debug, which traces every
# action into the log; keep the log readable (it changes no output).
flags=("--disk_cache=$disk_cache" --nosandbox_debug)

rc=0
bz build "${flags[@]}" //:c_client //:cpp_client //:tools_seq_client \
  //:tools_par_client @gex//tools:gasnetrun_smp || rc=$?
if ((rc != 0)); then
  verdict="check_consumer: FAIL: bazel build of //:c_client, //:cpp_client, //:tools_seq_client, //:tools_par_client and @gex//tools:gasnetrun_smp exited $rc"
  exit 1
fi
bin="$(bz info "${flags[@]}" bazel-bin 2>/dev/null)"

# Runs a 2-rank job (the command after the check's name); it must exit 0
# and each rank must print its ok line ("<name>: rank R of 2: ... ok").
# A wedged job must not hang the check: the timeout ends it (the launcher
# ends its ranks; with GASNET_PSHM_NODES rank 0 is the parent of the others).
run_job() {
  local name="$1"
  shift
  local out jrc=0
  echo "check_consumer: running $*"
  out="$(timeout 120 "$@" 2>&1)" || jrc=$?
  echo "$out"
  if ((jrc != 0)); then
    verdict="check_consumer: FAIL: the 2-rank $name job exited $jrc"
    exit 1
  fi
  for r in 0 1; do
    if ! grep -q "^$name: rank $r of 2: .* ok\$" <<<"$out"; then
      verdict="check_consumer: FAIL: rank $r of the $name job printed no ok line"
      exit 1
    fi
  done
}

run_job c_client "$bin/external/gex/tools/gasnetrun_smp" -n 2 "$bin/c_client"
run_job cpp_client env GASNET_PSHM_NODES=2 "$bin/cpp_client"

# The tools-only clients: plain processes, one line each.
for model in seq par; do
  upper="$(tr a-z A-Z <<<"$model")"
  echo "check_consumer: running $bin/tools_${model}_client"
  out="$(timeout 60 "$bin/tools_${model}_client" 2>&1)" || {
    echo "$out"
    verdict="check_consumer: FAIL: tools_${model}_client exited nonzero"
    exit 1
  }
  echo "$out"
  if ! grep -q "^tools_client: $upper ok\$" <<<"$out"; then
    verdict="check_consumer: FAIL: tools_${model}_client printed no ok line"
    exit 1
  fi
done

if [[ -n "$label" ]]; then
  rc=0
  bz test "${flags[@]}" --test_output=errors //:label_test || rc=$?
  if ((rc != 0)); then
    verdict="check_consumer: FAIL: bazel test //:label_test (linking $label) exited $rc"
    exit 1
  fi
fi

verdict="check_consumer: PASS: a consumer workspace with only the README's three WORKSPACE lines built and ran a 2-rank C client on @gex//conduit/smp:gasnet_smp_seq and a 2-rank C++ client on @gex//api/cpp:gex_cpp and tools-only clients on @gex//api/tools:gasnet_tools_seq and _par${label:+, and a test linking $label}"
