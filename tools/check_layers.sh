#!/usr/bin/env bash
# Proves the layer rule of docs/architecture.md with `bazel query`: no target in a layer
# depends, directly or transitively, on a target in a layer above it.
# Visibility (layers.bzl's visible_above) already makes such an edge fail the
# build; this checks the same rule from the other side, over the whole graph,
# so a visibility list widened by mistake cannot hide an upward edge.
#
# Also checks that the seven system-library repositories still provide the
# targets gex uses.
#
# Usage: tools/check_layers.sh [WORKSPACE_ROOT]
#   WORKSPACE_ROOT defaults to $BUILD_WORKSPACE_DIRECTORY (set by
#   `bazel run //tools:check_layers`), else the current directory.
#   $BAZEL names the bazel binary (default: bazel); the self-test
#   (//tools:check_layers_test) points it at a fake.
# Exit status: 0 when every check passes, 1 on a violation or a missing
# target, 2 on a usage or query error.

set -euo pipefail

root="${1:-${BUILD_WORKSPACE_DIRECTORY:-$PWD}}"
bazel="${BAZEL:-bazel}"

cd "$root"
if [[ ! -f WORKSPACE || ! -f layers.bzl ]]; then
  echo "check_layers: $root is not the gex workspace root (no WORKSPACE or layers.bzl)" >&2
  exit 2
fi

# Quiet query: labels on stdout, Bazel's progress chatter dropped.
query() {
  "$bazel" query --noshow_progress --ui_event_filters=-info --output=label "$@"
}

# ---- the layer order, read from layers.bzl (the one list) ----------------

# The string literals of `LAYERS = [ ... ]`, comments dropped.
mapfile -t layers < <(
  sed -n '/^LAYERS[[:space:]]*=[[:space:]]*\[/,/^\]/p' layers.bzl |
    sed 's/#.*//' | grep -o '"[^"]*"' | tr -d '"'
)
if ((${#layers[@]} < 2)); then
  echo "check_layers: could not read LAYERS from layers.bzl" >&2
  exit 2
fi

# A layer takes part once its directory holds a BUILD file somewhere;
# before that `//layer/...` matches nothing and the query would fail.
present=()
skipped=()
for layer in "${layers[@]}"; do
  if [[ -d "$layer" ]] &&
    [[ -n "$(find "$layer" \( -name BUILD -o -name BUILD.bazel \) -print -quit)" ]]; then
    present+=("$layer")
  else
    skipped+=("$layer")
  fi
done
if ((${#skipped[@]})); then
  echo "check_layers: skipping layers with no package yet: ${skipped[*]}"
fi

# ---- no edge from a lower layer to a higher one -------------------------

# One query per lower layer against the union of all layers above it, which
# is the pairwise check (lower < higher) in fewer Bazel calls. Of the higher
# targets reached (`$up`), only the entry points are reported: those a
# non-higher target depends on directly, i.e. the heads of the upward edges,
# not everything behind them. Each is attributed to its layer and explained
# with a `somepath`.
violations=0
pairs=0
for ((i = 0; i < ${#present[@]}; i++)); do
  lower="${present[i]}"
  higher=("${present[@]:i+1}")
  ((${#higher[@]})) || continue
  pairs=$((pairs + ${#higher[@]}))
  union="$(printf ' + //%s/...' "${higher[@]}")"
  union="${union# + }"
  below="deps(//$lower/...)"
  expr="let up = $below intersect ($union) in \$up intersect deps($below except \$up, 1)"
  if ! hits="$(query "$expr")"; then
    echo "check_layers: bazel query failed for layer '$lower'" >&2
    exit 2
  fi
  [[ -n "$hits" ]] || continue
  while IFS= read -r target; do
    [[ -n "$target" ]] || continue
    # The layer a label belongs to: its first package component.
    pkg="${target#//}"
    up="${pkg%%[/:]*}"
    echo "VIOLATION: layer '$lower' depends on '$target' in higher layer '$up'"
    echo "  evidence (somepath):"
    query "somepath(//$lower/..., $target)" | sed 's/^/    /' || true
    violations=$((violations + 1))
  done <<<"$hits"
done

# ---- the system-library targets exist ------------------------------------

# Every label //third_party's wrappers promise (repositories.bzl).
dep_targets=(
  @com_google_absl//:base
  @com_google_absl//:core_headers
  @com_google_absl//:strings
  @com_google_absl//:str_format
  @com_google_absl//:status
  @com_google_absl//:statusor
  @com_google_absl//:synchronization
  @com_google_absl//:time
  @com_google_absl//:flat_hash_map
  @com_google_absl//:flat_hash_set
  @com_google_absl//:inlined_vector
  @com_google_absl//:span
  @com_google_absl//:optional
  @com_google_absl//:numeric
  @com_google_absl//:random
  @com_google_absl//:hash
  @com_google_absl//:cleanup
  @com_google_absl//:log_severity
  @com_google_absl//:failure_signal_handler
  @com_google_absl//:symbolize
  @com_google_absl//:stacktrace
  @com_google_absl//:debugging
  @com_google_googletest//:gtest
  @com_google_googletest//:gtest_main
  @com_google_googletest//:gmock
  @com_google_googletest//:gmock_main
  @com_google_benchmark//:benchmark
  @com_google_benchmark//:benchmark_main
  @libfabric//:fabric
  @ucx//:ucs
  @ucx//:uct
  @ucx//:ucp
  @libibverbs//:ibverbs
  @pmix//:pmix
)

echo "bazel query: dependency repository targets"
# --keep_going lists what exists even when some label does not; the missing
# ones are then found by comparing, which names them all at once.
found="$(query --keep_going "set(${dep_targets[*]})" 2>/dev/null || true)"
sed 's/^/  /' <<<"$found"
missing=0
for label in "${dep_targets[@]}"; do
  if ! grep -qxF "$label" <<<"$found"; then
    echo "MISSING: $label"
    missing=$((missing + 1))
  fi
done

# ---- verdict ---------------------------------------------------------------

if ((violations > 0 || missing > 0)); then
  echo "check_layers: FAIL: $violations upward dependency edge(s), $missing missing dependency target(s)"
  exit 1
fi
echo "check_layers: OK: ${#present[@]} of ${#layers[@]} layers present (${present[*]}), $pairs lower<higher pairs checked, no upward edge; ${#dep_targets[@]} dependency targets found"
