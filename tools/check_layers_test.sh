#!/usr/bin/env bash
# Self-test of check_layers.sh and check_seam.sh with a fake `bazel` and
# small workspaces: each must pass a clean tree and fail, naming the edge,
# label or file, on each kind of break; and layer_graph.py must read the
# real layers.bzl as Starlark evaluates it.
#
# Usage (from Bazel): check_layers_test.sh <check_layers.sh> <check_seam.sh>
#   <layer_graph.py> <layers.bzl> LAYER:DEP,DEP...
#   LAYER:DEP,...: layers.bzl's LAYER_DEPS as Bazel evaluated it, in order.

set -euo pipefail

check="$(realpath "$1")"
seam="$(realpath "$2")"
graph_tool="$(realpath "$3")"
real_layers="$(realpath "$4")"
shift 4
((${#@} > 3)) || { echo "FAIL: too few layers passed in"; exit 1; }
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/check_layers_test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
failures=0

# ---- layer_graph.py reads the real layers.bzl as Starlark does ----------

want="$(for entry in "$@"; do
  layer="${entry%%:*}" deps="${entry#*:}"
  echo "$layer: ${deps//,/ }" | sed 's/ *$//'
done)"
got="$(python3 "$graph_tool" dump "$real_layers")"
if [[ "$got" != "$want" ]]; then
  echo "FAIL real_graph: layer_graph.py dump differs from Starlark's LAYER_DEPS"
  diff <(echo "$want") <(echo "$got") | sed 's/^/  | /'
  failures=$((failures + 1))
else
  echo "ok   real_graph ($# layers)"
fi

# ---- a small workspace -----------------------------------------------------

# The checks find layer_graph.py beside themselves, so they run from copies
# in the workspace's tools/, as in the real tree.
ws="$tmp/ws"
# Five layers have a package; pshm/ is a directory without one, and tools/
# (no layer here) holds the checks.
mkdir -p "$ws/tools" "$ws/core" "$ws/api" "$ws/base/env" "$ws/am" \
  "$ws/pshm" "$ws/tests/core"
cp "$check" "$seam" "$graph_tool" "$ws/tools/"
touch "$ws/WORKSPACE" "$ws/tools/BUILD.bazel" "$ws/core/BUILD" \
  "$ws/api/BUILD.bazel" "$ws/base/env/BUILD.bazel" "$ws/am/BUILD.bazel" \
  "$ws/tests/core/BUILD.bazel"
echo 'namespace gexrt::api { int Barrier() { return pshm::Go(); } }' \
  >"$ws/api/barrier.cc"
echo 'int Put();' >"$ws/api/rma.h"

# write_layers RMA_DEPS: a layers.bzl in the real file's shape
# (docstring, comments, a function after the dict); rma's deps vary.
write_layers() {
  cat >"$ws/layers.bzl" <<EOF
"""Layer graph (written by check_layers_test). A "quoted" word: no layer."""

LAYER_DEPS = {
    "base": [],
    "am": ["base"],  # comment
    "firehose": ["base"],
    "pshm": ["base", "am"],
    "rma": [$1],
    "core": ["base", "am", "pshm", "rma"],
    "api": ["base", "am", "pshm", "rma", "core"],
    "tests": [
        "base",
        "am",
        "core",
        "api",
    ],
}

LAYERS = list(LAYER_DEPS.keys())

def visible_above(layer):
    return ["//%s:__subpackages__" % layer]
EOF
}
write_layers '"base", "am"'

# The fake answers the two kinds of query check_layers.sh asks; the graph
# query must name exactly the layers with a BUILD file. The graph has edges
# inside a layer, between allowed layers, from the root package, into
# layers.bzl and into an external repository, which the check must all
# accept;
#   FAKE_EDGE='"//a:x" -> "//b:y"'  adds one edge;
#   FAKE_MISSING=label              that dependency target does not exist;
#   FAKE_QUERY_FAIL=1               the graph query fails.
fake="$tmp/bazel"
cat >"$fake" <<'FAKE'
#!/usr/bin/env bash
expr="${*: -1}"
echo "$expr" >>"$FAKE_LOG"
case "$expr" in
  "deps(//base/...:* + //am/...:* + //core/...:* + //api/...:* + //tests/...:*, 1)")
    [[ "${FAKE_QUERY_FAIL:-}" == 1 ]] && exit 7
    cat <<'GRAPH'
digraph mygraph {
  node [shape=box];
  "//api:api"
  "//api:api" -> "//core:runtime"
  "//api:api" -> "//api:rma.cc"
  "//core:runtime" -> "//rma:engine"
  "//core:runtime" -> "//pshm:supernode"
  "//rma:engine" -> "//am:handler_table"
  "//am:handler_table" -> "//base:fatal"
  "//am:handler_table" -> "@com_google_absl//:strings"
  "//tests/core:router_test" -> "//core:runtime"
  "//tests/core:router_test" -> "//:layers.bzl"
  "//:install" -> "//tools/install:install"
GRAPH
    [[ -n "${FAKE_EDGE:-}" ]] && echo "  $FAKE_EDGE"
    echo "}"
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

# run NAME SCRIPT WANT_RC WANT_TEXT [ENV...]: runs a check in the workspace,
# compares its exit code and looks for WANT_TEXT in its output.
run() {
  local name="$1" script="$2" want_rc="$3" want_text="$4"
  shift 4
  local out rc=0
  export FAKE_LOG="$tmp/$name.log"
  : >"$FAKE_LOG"
  out="$(cd "$ws" && env BAZEL="$fake" "$@" bash "tools/$script" 2>&1)" || rc=$?
  if [[ "$rc" != "$want_rc" ]] || ! grep -qF -- "$want_text" <<<"$out"; then
    echo "FAIL $name: exit $rc (want $want_rc), want text: $want_text"
    sed 's/^/  | /' <<<"$out"
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}

# ---- check_layers.sh --------------------------------------------------------

# Six edges leave their layer (api->core, core->rma, core->pshm, rma->am,
# am->base, tests->core); the root package's alias is outside the layers.
run clean check_layers.sh 0 \
  "check_layers: OK: 5 of 8 layers present (base am core api tests), 6 cross-layer edges checked against layers.bzl"
run clean_skips check_layers.sh 0 \
  "skipping layers with no package yet: firehose pshm rma"
run clean_graph_shown check_layers.sh 0 "  rma: base am"
run clean_root_unchecked check_layers.sh 0 "not layers (their own edges unchecked): //"
# Upward: am below firehose in the order.
run upward check_layers.sh 1 \
  "VIOLATION: //am:table -> //firehose:cache: layer 'am' may not use 'firehose' (layers.bzl lets it use: base)" \
  FAKE_EDGE='"//am:table" -> "//firehose:cache"'
# Below in the order, yet not in the graph: what a list could not say.
run not_in_graph check_layers.sh 1 \
  "VIOLATION: //rma:engine -> //pshm:supernode: layer 'rma' may not use 'pshm'" \
  FAKE_EDGE='"//rma:engine" -> "//pshm:supernode"'
# A file of another layer counts as much as a rule.
run file_edge check_layers.sh 1 \
  "VIOLATION: //base:fatal -> //am:token.h" \
  FAKE_EDGE='"//base:fatal" -> "//am:token.h"'
run outside_layers check_layers.sh 1 \
  "package 'third_party' is no layer of layers.bzl" \
  FAKE_EDGE='"//core:runtime" -> "//third_party:ucx.BUILD"'
run upward_verdict check_layers.sh 1 \
  "check_layers: FAIL: 1 edge(s) outside the layer graph, 0 missing" \
  FAKE_EDGE='"//am:table" -> "//firehose:cache"'
run missing check_layers.sh 1 "MISSING: @ucx//:ucp" FAKE_MISSING=@ucx//:ucp
run missing_verdict check_layers.sh 1 \
  "0 edge(s) outside the layer graph, 1 missing" FAKE_MISSING=@pmix//:pmix
run query_fails check_layers.sh 2 "bazel query of the dependency graph failed" \
  FAKE_QUERY_FAIL=1

# A graph that lists a later layer (a cycle in waiting) or an unknown one
# is refused before any query.
write_layers '"base", "am", "core"'
run cyclic check_layers.sh 2 \
  "layer 'rma' lists 'core', which is not declared before it"
write_layers '"base", "ma"'
run unknown_layer check_layers.sh 2 "layer 'rma' lists unknown layer 'ma'"
write_layers '"base", "am"'

# Outside a workspace root it refuses to run.
rc=0
(cd "$tmp" && BAZEL="$fake" bash "$ws/tools/check_layers.sh" >/dev/null 2>&1) || rc=$?
if [[ "$rc" != 2 ]]; then
  echo "FAIL not_a_workspace: exit $rc (want 2)"
  failures=$((failures + 1))
fi

# ---- check_seam.sh -----------------------------------------------------------

run seam_clean check_seam.sh 0 "check_seam: OK: layers.bzl keeps rma/ from pshm/"
write_layers '"base", "am", "pshm"'
run seam_rma_pshm check_seam.sh 1 \
  "VIOLATION: layers.bzl lets rma/ reach pshm/: rma -> pshm"
write_layers '"base", "am"'
echo '// Routes through pshm::AmNetwork.' >>"$ws/api/rma.h"
run seam_api check_seam.sh 1 "  api/rma.h:2:// Routes through pshm::AmNetwork."

if ((failures)); then
  echo "check_layers_test: $failures failure(s)"
  exit 1
fi
echo "check_layers_test: all passed"
