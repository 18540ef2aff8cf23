"""The layer graph of gex, declared once, and its Bazel visibility.

LAYER_DEPS says, for each top-level package (a layer), which layers its
targets may depend on directly. It is the one declaration of the rule:

  * `visible_above(layer)` turns it into Bazel visibility (each layer's
    BUILD files use it as `default_visibility`), so an edge the graph does
    not allow fails the build;
  * tools/check_layers.sh (with tools/layer_graph.py, which reads this file)
    checks every edge of `bazel query` against it, so a visibility list
    widened by hand cannot hide a wrong edge;
  * tools/check_seam.sh asks the same graph whether rma/ can reach pshm/.

Layers are listed lowest first, and a layer may list only layers declared
before it, so the graph has no cycle (visible_above checks this on every
load; tools/layer_graph.py checks it again). Adding an edge is one word
here; say why in the commit, and see docs/architecture.md for what each
layer owns.
"""

LAYER_DEPS = {
    "base": [],
    "bootstrap": ["base"],
    "am": ["base"],
    "firehose": ["base"],
    "pshm": ["base", "bootstrap", "am"],
    # The RMA engine reads segments through rma::SegmentView, which core/
    # fills; it never sees pshm/ (the seam check relies on this).
    "rma": ["base", "bootstrap", "am"],
    "exit": ["base", "bootstrap"],
    "core": ["base", "bootstrap", "am", "pshm", "rma", "exit"],
    # api/ uses pshm/ only in the barrier and the collectives: a file-level
    # rule the graph cannot say, so tools/check_seam.sh checks it by grep.
    "api": ["base", "bootstrap", "am", "pshm", "rma", "exit", "core"],
    "conduit": [
        "base",
        "bootstrap",
        "am",
        "firehose",
        "pshm",
        "exit",
        "core",
        "api",
    ],
    # Launchers and benchmark CLIs: any library layer.
    "tools": [
        "base",
        "bootstrap",
        "am",
        "firehose",
        "pshm",
        "rma",
        "exit",
        "core",
        "api",
        "conduit",
    ],
    # Clients of the public API only, as users write them.
    "examples": ["api", "conduit"],
    # Tests may use everything.
    "tests": [
        "base",
        "bootstrap",
        "am",
        "firehose",
        "pshm",
        "rma",
        "exit",
        "core",
        "api",
        "conduit",
        "tools",
        "examples",
    ],
}

# The layers, lowest first (the keys of LAYER_DEPS in order).
LAYERS = list(LAYER_DEPS.keys())

def _check_graph():
    """Fails the load when a layer lists an unknown or a later layer."""
    seen = []
    for layer in LAYERS:
        for dep in LAYER_DEPS[layer]:
            if dep not in LAYER_DEPS:
                fail("layers.bzl: layer '%s' lists unknown layer '%s'" %
                     (layer, dep))
            if dep not in seen:
                fail(("layers.bzl: layer '%s' lists '%s', which is not " +
                      "declared before it (the graph must stay acyclic)") %
                     (layer, dep))
        seen.append(layer)

def visible_above(layer):
    """Visibility for `layer`'s targets: itself and each layer that may use it.

    The users come from LAYER_DEPS (direct edges only: Bazel visibility is
    about direct dependencies), so a layer the graph does not let use
    `layer` cannot name its targets.
    """
    if layer not in LAYER_DEPS:
        fail("unknown layer '%s'; known: %s" % (layer, ", ".join(LAYERS)))
    _check_graph()
    users = [name for name in LAYERS if layer in LAYER_DEPS[name]]
    return ["//%s:__subpackages__" % name for name in [layer] + users]
