#!/usr/bin/env bash
# Keeps the conduit seam (core/) the only way down to the transports:
#   1. rma/ cannot reach pshm/ (the engine reads segments through
#      rma::SegmentView; core/ fills it). The layer graph of layers.bzl
#      carries this rule and tools/check_layers.sh proves every Bazel edge
#      keeps to that graph; here we check the graph itself still says it, so
#      adding "pshm" (or a layer that reaches it) to rma's list is caught.
#   2. api/ names pshm:: (or includes pshm/) only in the barrier's and the
#      collectives' supernode shared-memory fast paths (api/barrier.*,
#      api/coll.*): everything else goes through core/ (the router,
#      progress, the segment table). api/ is one package, so the layer graph
#      (which lets api/ use pshm/) cannot say this; a grep does.
#
# Usage: tools/check_seam.sh [WORKSPACE_ROOT]   ($PYTHON: python3)
# Exit status: 0 when both hold, 1 on a violation, 2 on a usage error or a
# malformed layers.bzl.
set -euo pipefail

root="${1:-${BUILD_WORKSPACE_DIRECTORY:-$PWD}}"
python="${PYTHON:-python3}"
# layers.bzl's reader: beside this script (the source tree), else in its
# runfiles (`bazel run`).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
graph_tool="$here/layer_graph.py"
[[ -f "$graph_tool" ]] || graph_tool="${BASH_SOURCE[0]}.runfiles/gex/tools/layer_graph.py"
cd "$root"
if [[ ! -f WORKSPACE || ! -f layers.bzl || ! -d core || ! -d api ]]; then
  echo "check_seam: $root is not the gex workspace root" >&2
  exit 2
fi

violations=0

rc=0
path="$("$python" "$graph_tool" reaches layers.bzl rma pshm)" || rc=$?
case "$rc" in
  1) ;;
  0)
    echo "VIOLATION: layers.bzl lets rma/ reach pshm/: $path"
    violations=$((violations + 1))
    ;;
  *)
    echo "check_seam: could not read the layer graph of layers.bzl" >&2
    exit 2
    ;;
esac

# Every mention outside the two allowed files, comments included: a
# comment that says "pshm::" is a sign the code still thinks in it.
hits="$(grep -rnE 'pshm::|"pshm/' api --include='*.cc' --include='*.h' \
  --include='*.c' | grep -vE '^api/(barrier|coll)\.(h|cc):' || true)"
if [[ -n "$hits" ]]; then
  echo "VIOLATION: api/ reaches into pshm/ outside the barrier and collectives:"
  sed 's/^/  /' <<<"$hits"
  violations=$((violations + 1))
fi

if ((violations > 0)); then
  echo "check_seam: FAIL: $violations violation(s)"
  exit 1
fi
echo "check_seam: OK: layers.bzl keeps rma/ from pshm/; api/ uses pshm/ only in the barrier and collectives"
