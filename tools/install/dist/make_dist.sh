#!/usr/bin/env bash
# Makes gex's GASNet-shaped distribution, for client libraries that embed
# GASNet-EX (--with-gasnet=DIR or a tarball):
#
#   bazel run //:dist -- DIR            a source tree in DIR
#   bazel run //:dist -- DIR.tar.gz     a tarball unpacking to DIR/
#
# The tree is gex's workspace (every file git tracks, plus new ones it does
# not ignore) with, at its top, what such clients look for:
#   configure            GASNet-EX's options (tools/install/dist/configure)
#   gasnet_config.h.in   the template configure fills in
#   gasnetex.h, gasnet.h the public headers (links into api/include)
#   docs/GASNet-EX.txt   a note naming the specification version gex
#                        implements (GEX_SPEC_VERSION_MAJOR/MINOR lines),
#                        taken from gasnetex.h
# Exit status: 0 when written, 2 on a usage error, 1 otherwise.
set -euo pipefail

me="gex dist"
die() {
  echo "$me: $*" >&2
  exit 1
}
(($# == 1)) && [[ "$1" != -* ]] || {
  echo "usage: bazel run //:dist -- DIR | DIR.tar.gz" >&2
  exit 2
}
target="$1"
ws="${BUILD_WORKSPACE_DIRECTORY:-}"
[[ -n "$ws" && -f "$ws/WORKSPACE" ]] ||
  die "run it with bazel run //:dist (no workspace directory found)"
# A relative DIR is relative to where bazel was run.
[[ "$target" == /* ]] || target="${BUILD_WORKING_DIRECTORY:-$PWD}/$target"

tarball=""
if [[ "$target" == *.tar.gz ]]; then
  tarball="$target"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  out="$tmp/$(basename "$target" .tar.gz)"
else
  out="$target"
fi
if [[ -e "$out" && -n "$(ls -A "$out" 2>/dev/null)" ]]; then
  die "$out exists and is not empty"
fi
mkdir -p "$out"

# The sources: what git tracks and what it would add, as they are now.
cd "$ws"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -C "$out" -xf -
else
  tar --exclude='./bazel-*' --exclude=./.git -cf - . | tar -C "$out" -xf -
fi

dist="$ws/tools/install/dist"
install -m 0755 "$dist/configure" "$out/configure"
install -m 0644 "$dist/gasnet_config.h.in" "$out/gasnet_config.h.in"
ln -sf api/include/gasnetex.h "$out/gasnetex.h"
ln -sf api/include/gasnet.h "$out/gasnet.h"

value() {
  sed -n "s/^#define $1 \\([0-9][0-9]*\\).*/\\1/p" "$ws/api/include/gasnetex.h" | head -n 1
}
major="$(value GEX_SPEC_VERSION_MAJOR)"
minor="$(value GEX_SPEC_VERSION_MINOR)"
release="$(value GASNET_RELEASE_VERSION_MAJOR).$(value GASNET_RELEASE_VERSION_MINOR).$(value GASNET_RELEASE_VERSION_PATCH)"
[[ -n "$major" && -n "$minor" ]] || die "no GEX_SPEC_VERSION in api/include/gasnetex.h"
mkdir -p "$out/docs"
cat >"$out/docs/GASNet-EX.txt" <<EOF
gex: which GASNet-EX specification this distribution implements
=================================================================

This is gex, a C++20 implementation of the GASNet-EX communication
runtime, packaged the way GASNet-EX source releases are, so that client
libraries which embed GASNet-EX can configure, build and install it.
It does not contain the GASNet-EX specification itself; the specification
is published by the GASNet-EX project (docs/GASNet-EX.txt in its source
releases and in the repository BerkeleyLab/gasnet).

Implemented specification version (the values gasnetex.h defines):

  GEX_SPEC_VERSION_MAJOR $major
  GEX_SPEC_VERSION_MINOR $minor

Release number it reports: $release.

Building: ./configure [options] (or /path/to/configure from a build
directory), make, make install. Bazel 4.2.3 must be installed; see
tools/install/README.md.
EOF

if [[ -n "$tarball" ]]; then
  tar -C "$(dirname "$out")" -czf "$tarball" "$(basename "$out")"
  echo "$me: wrote $tarball"
else
  echo "$me: wrote $out"
fi
