#!/usr/bin/env bash
# Proves another Bazel workspace can consume gex the way the README says:
# a WORKSPACE of three lines (local_repository + gex_dependencies()), then
# ordinary labels. It builds and runs a cc_test in a scratch workspace that
# depends on GoogleTest from gex_dependencies() and on one gex library.
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
# test passed; otherwise 1 and "check_consumer: FAIL ...".
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
load("@rules_cc//cc:defs.bzl", "cc_test")

cc_test(
    name = "consumer_test",
    srcs = ["consumer_test.cc"],
    deps = [
        "$label",
        "@com_google_googletest//:gtest_main",
    ],
)
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
verdict="check_consumer: PASS: a consumer workspace built and ran a test against $label"
