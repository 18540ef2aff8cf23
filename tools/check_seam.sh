#!/usr/bin/env bash
# Keeps the conduit seam (core/) the only way down to the transports:
#   1. rma/ does not depend on pshm/, directly or transitively (the engine
#      reads segments through rma::SegmentView; core/ fills it);
#   2. api/ names pshm:: (or includes pshm/) only in the barrier's and the
#      collectives' supernode shared-memory fast paths (api/barrier.*,
#      api/coll.*): everything else goes through core/ (the router,
#      progress, the segment table).
#
# Usage: tools/check_seam.sh [WORKSPACE_ROOT]   ($BAZEL: the bazel binary)
# Exit status: 0 when both hold, 1 on a violation, 2 on a usage or query
# error.
set -euo pipefail

root="${1:-${BUILD_WORKSPACE_DIRECTORY:-$PWD}}"
bazel="${BAZEL:-bazel}"
cd "$root"
if [[ ! -f WORKSPACE || ! -d core || ! -d api ]]; then
  echo "check_seam: $root is not the gex workspace root" >&2
  exit 2
fi

violations=0

if ! path="$("$bazel" query --noshow_progress --ui_event_filters=-info \
  --output=label 'somepath(//rma/..., //pshm/...)')"; then
  echo "check_seam: bazel query failed" >&2
  exit 2
fi
if [[ -n "$path" ]]; then
  echo "VIOLATION: rma/ depends on pshm/:"
  sed 's/^/  /' <<<"$path"
  violations=$((violations + 1))
fi

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
echo "check_seam: OK: rma/ does not depend on pshm/; api/ uses pshm/ only in the barrier and collectives"
