#!/usr/bin/env bash
# Self-test of check_layers.sh with a fake `bazel`: it must pass a clean
# graph, and fail, naming the edge or the label, on an upward edge and on a
# missing dependency target.
#
# Usage (from Bazel): check_layers_test.sh <check_layers.sh> LAYER...
#   LAYER...: layers.bzl's LAYERS as Bazel evaluated it. The test writes them
#   back in that file's layout (docstring, comments, one string per line) and
#   checks the script's text parser finds exactly them.

set -euo pipefail

check="$(realpath "$1")"
shift
layers=("$@")
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/check_layers_test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# A workspace with three layers present (base < am < firehose); the others
# have no directory or no BUILD file and must be skipped.
ws="$tmp/ws"
mkdir -p "$ws/base" "$ws/am" "$ws/firehose" "$ws/pshm"
touch "$ws/WORKSPACE" "$ws/base/BUILD.bazel" "$ws/am/BUILD.bazel" \
  "$ws/firehose/BUILD.bazel"
{
  echo '"""Layer order (written by check_layers_test)."""'
  echo
  echo '# Lowest first. A "quoted" word in a comment is no layer.'
  echo 'LAYERS = ['
  printf '    "%s",  # layer\n' "${layers[@]}"
  echo ']'
  echo
  echo 'def visible_above(layer):'
  echo '    return ["//%s:__subpackages__" % layer]'
} >"$ws/layers.bzl"
((${#layers[@]} > 3)) || { echo "FAIL: too few layers passed in"; exit 1; }

# The fake answers the three kinds of query check_layers.sh asks:
#   FAKE_UPWARD=1      am reaches //firehose:cache_engine (an upward edge);
#   FAKE_MISSING=label that dependency target does not exist.
# It logs every query so the test can see which layers were asked about.
fake="$tmp/bazel"
cat >"$fake" <<'FAKE'
#!/usr/bin/env bash
expr="${*: -1}"
echo "$expr" >>"$FAKE_LOG"
case "$expr" in
  "let up = deps(//am/...)"*)
    [[ "${FAKE_UPWARD:-}" == 1 ]] && echo "//firehose:cache_engine"
    ;;
  "somepath(//am/..., //firehose:cache_engine)")
    printf '%s\n' //am:table //firehose:cache_engine
    ;;
  "set("*)
    labels="${expr#set(}"
    for label in ${labels%)}; do
      [[ "$label" == "${FAKE_MISSING:-}" ]] || echo "$label"
    done
    ;;
esac
exit 0
FAKE
chmod +x "$fake"

failures=0
# run NAME WANT_RC WANT_TEXT [ENV...]: runs the check, compares exit code
# and looks for WANT_TEXT in its output.
run() {
  local name="$1" want_rc="$2" want_text="$3"
  shift 3
  local out rc=0
  export FAKE_LOG="$tmp/$name.log"
  : >"$FAKE_LOG"
  out="$(cd "$ws" && env BAZEL="$fake" "$@" "$check" 2>&1)" || rc=$?
  if [[ "$rc" != "$want_rc" ]] || ! grep -qF -- "$want_text" <<<"$out"; then
    echo "FAIL $name: exit $rc (want $want_rc), want text: $want_text"
    sed 's/^/  | /' <<<"$out"
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}

run clean 0 "check_layers: OK: 3 of ${#layers[@]} layers present (base am firehose)"
run clean_skips 0 "skipping layers with no package yet: bootstrap pshm"
run upward 1 "VIOLATION: layer 'am' depends on '//firehose:cache_engine' in higher layer 'firehose'" \
  FAKE_UPWARD=1
run upward_evidence 1 "    //am:table" FAKE_UPWARD=1
run missing 1 "MISSING: @ucx//:ucp" FAKE_MISSING=@ucx//:ucp
run missing_verdict 1 "0 upward dependency edge(s), 1 missing" \
  FAKE_MISSING=@pmix//:pmix

# Every lower<higher pair was covered: base against am and firehose,
# am against firehose, and firehose (the top present layer) against nothing.
log="$tmp/clean.log"
for want in "deps(//base/...) intersect (//am/... + //firehose/...)" \
  "deps(//am/...) intersect (//firehose/...)"; do
  if ! grep -qF -- "$want" "$log"; then
    echo "FAIL pairs: no query with: $want"
    failures=$((failures + 1))
  fi
done
if grep -q "deps(//firehose/...)" "$log"; then
  echo "FAIL pairs: the top layer was queried against nothing"
  failures=$((failures + 1))
fi

# Outside a workspace root it refuses to run.
rc=0
(cd "$tmp" && BAZEL="$fake" "$check" >/dev/null 2>&1) || rc=$?
if [[ "$rc" != 2 ]]; then
  echo "FAIL not_a_workspace: exit $rc (want 2)"
  failures=$((failures + 1))
fi

if ((failures)); then
  echo "check_layers_test: $failures failure(s)"
  exit 1
fi
echo "check_layers_test: all passed"
