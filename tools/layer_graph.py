#!/usr/bin/env python3
"""Reads the layer graph of layers.bzl and checks Bazel's edges against it.

layers.bzl declares LAYER_DEPS once (which layers each layer may use
directly); this script is how the shell checks read that declaration
instead of restating it. It parses the file with Python's own parser and
evaluates only the LAYER_DEPS literal, so nothing in the file runs.

Usage:
  layer_graph.py dump LAYERS_BZL
      One line per layer, lowest first: "layer: dep dep ...".
  layer_graph.py reaches LAYERS_BZL FROM TO
      Exit 0 and print the path when FROM may reach TO through the graph,
      exit 1 when it may not.
  layer_graph.py check LAYERS_BZL < GRAPH
      GRAPH is `bazel query --output=graph --nograph:factored` over the
      workspace's targets. Prints each edge that leaves its layer for one
      the graph does not allow, or for a package outside the layers; exit 1
      when there is one.
Exit 2 on a malformed layers.bzl or a usage error.
"""

import ast
import re
import sys


class GraphError(Exception):
  """layers.bzl does not hold a well-formed LAYER_DEPS."""


def load(path):
  """LAYER_DEPS of the file at `path`, as an ordered dict of lists."""
  with open(path, encoding="utf-8") as f:
    source = f.read()
  try:
    tree = ast.parse(source, filename=path)
  except SyntaxError as e:
    raise GraphError(f"{path}: cannot parse: {e}") from e
  value = None
  for node in tree.body:
    if (isinstance(node, ast.Assign) and len(node.targets) == 1 and
        isinstance(node.targets[0], ast.Name) and
        node.targets[0].id == "LAYER_DEPS"):
      try:
        value = ast.literal_eval(node.value)
      except ValueError as e:
        raise GraphError(f"{path}: LAYER_DEPS is not a literal: {e}") from e
  if not isinstance(value, dict) or not value:
    raise GraphError(f"{path}: no LAYER_DEPS = {{...}} dict found")
  # The same rules as layers.bzl's _check_graph: known layers, each listed
  # after what it uses, so the graph is acyclic.
  seen = set()
  for layer, deps in value.items():
    if not isinstance(layer, str) or not isinstance(deps, list):
      raise GraphError(f"{path}: LAYER_DEPS[{layer!r}] is not a list")
    for dep in deps:
      if dep not in value:
        raise GraphError(f"{path}: layer '{layer}' lists unknown layer '{dep}'")
      if dep not in seen:
        raise GraphError(f"{path}: layer '{layer}' lists '{dep}', which is not "
                         "declared before it (the graph must stay acyclic)")
    seen.add(layer)
  return value


def path_between(graph, start, goal):
  """A list of layers from `start` to `goal` along allowed edges, or None."""
  stack = [[start]]
  visited = set()
  while stack:
    path = stack.pop()
    if path[-1] == goal:
      return path
    if path[-1] in visited:
      continue
    visited.add(path[-1])
    stack.extend(path + [dep] for dep in graph[path[-1]])
  return None


_EDGE = re.compile(r'^\s*"([^"]+)"\s*->\s*"([^"]+)"\s*$')


def layer_of(label):
  """The top-level package of a main-repository label ('' for //:x)."""
  if not label.startswith("//"):
    return None  # an external repository: not ours to check
  return re.split(r"[/:]", label[2:], maxsplit=1)[0]


def check(graph, lines):
  """(violations, edges checked, sorted packages outside the layers)."""
  violations = []
  checked = 0
  outside = set()
  for line in lines:
    m = _EDGE.match(line)
    if not m:
      continue
    src, dst = m.group(1), m.group(2)
    src_layer, dst_layer = layer_of(src), layer_of(dst)
    if src_layer is None or dst_layer is None or src_layer == dst_layer:
      continue
    if dst_layer == "" and dst.endswith(".bzl"):
      continue  # the workspace's own declarations (layers.bzl): anyone's
    if src_layer not in graph:
      # The root package's aliases and third_party's exported files sit
      # outside the layers; nothing a layer builds may depend on them.
      outside.add(src_layer or "//")
      continue
    checked += 1
    if dst_layer not in graph:
      violations.append(f"VIOLATION: {src} -> {dst}: package "
                        f"'{dst_layer or '//'}' is no layer of layers.bzl")
    elif dst_layer not in graph[src_layer]:
      allowed = ", ".join(graph[src_layer]) or "nothing"
      violations.append(
          f"VIOLATION: {src} -> {dst}: layer '{src_layer}' may not use "
          f"'{dst_layer}' (layers.bzl lets it use: {allowed})")
  return violations, checked, sorted(outside)


def main(argv):
  if len(argv) < 3 or argv[1] not in ("dump", "reaches", "check"):
    print(__doc__.strip(), file=sys.stderr)
    return 2
  try:
    graph = load(argv[2])
  except (GraphError, OSError) as e:
    print(f"layer_graph: {e}", file=sys.stderr)
    return 2
  command = argv[1]
  if command == "dump":
    for layer, deps in graph.items():
      print(f"{layer}: {' '.join(deps)}".rstrip())
    return 0
  if command == "reaches":
    if len(argv) != 5 or argv[3] not in graph or argv[4] not in graph:
      print("layer_graph: reaches needs two known layers", file=sys.stderr)
      return 2
    path = path_between(graph, argv[3], argv[4])
    if path is None:
      return 1
    print(" -> ".join(path))
    return 0
  violations, checked, outside = check(graph, sys.stdin)
  for v in violations:
    print(v)
  if outside:
    print("layer_graph: not layers (their own edges unchecked): " +
          " ".join(outside))
  print(f"layer_graph: {checked} cross-layer edge(s) checked, "
        f"{len(violations)} not allowed")
  return 1 if violations else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
