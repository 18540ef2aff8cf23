"""The layer order of docs/architecture.md, as Bazel visibility.

A package may depend only on packages below it (earlier in LAYERS). Each
layer's targets use `visible_above("<layer>")` as their visibility, so an
upward edge fails the build; //tools:check_layers checks the same rule from
the other side with `bazel query`.
"""

# Lowest first. Keep in step with docs/architecture.md and
# tools/check_layers.sh.
LAYERS = [
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
    "tests",
]

def visible_above(layer):
    """Visibility for `layer`'s targets: itself and every layer above it."""
    if layer not in LAYERS:
        fail("unknown layer '%s'; known: %s" % (layer, ", ".join(LAYERS)))
    above = LAYERS[LAYERS.index(layer):]
    return ["//%s:__subpackages__" % name for name in above]
