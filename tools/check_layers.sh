#!/usr/bin/env bash
# Proves the layer graph of layers.bzl (LAYER_DEPS, the one declaration of
# which layers each layer may use directly) with `bazel query`: every edge
# between two top-level packages of the workspace, over all targets and
# every attribute (deps, data, srcs, ...), must be one the graph allows.
# Visibility (layers.bzl's visible_above) already makes such an edge fail the
# build; this checks the same rule from the other side, over the whole graph,
# so a visibility list widened by hand cannot hide a wrong edge. Direct edges
# suffice: the graph is acyclic (layer_graph.py checks that too), so no path
# of allowed edges goes upward.
#
# Also checks that the seven system-library repositories still provide the
# targets gex uses.
#
# Usage: tools/check_layers.sh [WORKSPACE_ROOT]
#   WORKSPACE_ROOT defaults to $BUILD_WORKSPACE_DIRECTORY (set by
#   `bazel run //tools:check_layers`), else the current directory.
#   $BAZEL names the bazel binary (default: bazel); the self-test
#   (//tools:check_layers_test) points it at a fake. $PYTHON names python3.
# Exit status: 0 when every check passes, 1 on a violation or a missing
# target, 2 on a usage or query error or a malformed layers.bzl.

set -euo pipefail

root="${1:-${BUILD_WORKSPACE_DIRECTORY:-$PWD}}"
bazel="${BAZEL:-bazel}"
python="${PYTHON:-python3}"
# layers.bzl's reader: beside this script (the source tree), else in its
# runfiles (`bazel run`).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
graph_tool="$here/layer_graph.py"
[[ -f "$graph_tool" ]] || graph_tool="${BASH_SOURCE[0]}.runfiles/gex/tools/layer_graph.py"

cd "$root"
if [[ ! -f WORKSPACE || ! -f layers.bzl ]]; then
  echo "check_layers: $root is not the gex workspace root (no WORKSPACE or layers.bzl)" >&2
  exit 2
fi

# Quiet query: results on stdout, Bazel's progress chatter dropped.
query() {
  "$bazel" query --noshow_progress --ui_event_filters=-info "$@"
}

# ---- every edge between layers is one layers.bzl allows -----------------

if ! layers="$("$python" "$graph_tool" dump layers.bzl)"; then
  echo "check_layers: could not read LAYER_DEPS from layers.bzl" >&2
  exit 2
fi
echo "layers.bzl: the layer graph (layer: the layers it may use)"
sed 's/^/  /' <<<"$layers"

# A layer takes part once its directory holds a BUILD file somewhere;
# before that `//layer/...` matches nothing and the query would fail.
present=()
skipped=()
while IFS=: read -r layer _; do
  if [[ -d "$layer" ]] &&
    [[ -n "$(find "$layer" \( -name BUILD -o -name BUILD.bazel \) -print -quit)" ]]; then
    present+=("$layer")
  else
    skipped+=("$layer")
  fi
done <<<"$layers"
if ((${#skipped[@]})); then
  echo "check_layers: skipping layers with no package yet: ${skipped[*]}"
fi
if ((${#present[@]} == 0)); then
  echo "check_layers: no layer has a package" >&2
  exit 2
fi

# Every target of the layers (rules and files) and what it uses directly,
# one "from" -> "to" line per edge. Named layer by layer, not //...: that
# would also walk the bazel-* convenience links of another output base.
union="$(printf ' + //%s/...:*' "${present[@]}")"
union="${union# + }"
if ! graph="$(query --output=graph --nograph:factored "deps($union, 1)")"; then
  echo "check_layers: bazel query of the dependency graph failed" >&2
  exit 2
fi
violations=0
graph_rc=0
verdict="$("$python" "$graph_tool" check layers.bzl <<<"$graph")" || graph_rc=$?
echo "$verdict"
case "$graph_rc" in
  0) ;;
  1) violations="$(grep -c '^VIOLATION' <<<"$verdict")" ;;
  *)
    echo "check_layers: layer_graph.py check failed" >&2
    exit 2
    ;;
esac
edges="$(sed -n 's/^layer_graph: \([0-9]*\) cross-layer.*/\1/p' <<<"$verdict")"

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
found="$(query --output=label --keep_going "set(${dep_targets[*]})" 2>/dev/null || true)"
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
  echo "check_layers: FAIL: $violations edge(s) outside the layer graph, $missing missing dependency target(s)"
  exit 1
fi
echo "check_layers: OK: ${#present[@]} of $(wc -l <<<"$layers") layers present (${present[*]}), $edges cross-layer edges checked against layers.bzl, none outside its graph; ${#dep_targets[@]} dependency targets found"
