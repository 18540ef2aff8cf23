#!/usr/bin/env bash
# Drives gex's GASNet-shaped distribution the way a client library that
# embeds GASNet-EX does (UPC++'s and Chapel's builds):
#   1. makes the tarball (tools/install/dist/make_dist.sh, what
#      `bazel run //:dist -- X.tar.gz` runs) and unpacks it;
#   2. checks what such a client checks first: gasnetex.h, gasnet.h and
#      gasnet_config.h.in at the top, the specification version in
#      docs/GASNet-EX.* (GEX_SPEC_VERSION_MAJOR/MINOR lines);
#   3. configures two build directories outside the source tree, an
#      optimised one and a debug one, with a client's kind of options
#      (--prefix, --enable/--disable-<conduit>, --disable-parsync,
#      --enable/--disable-debug, CC=, CXX= and options gex ignores, which
#      must each get a message), and reads config.status's @CONDUITS@ and
#      compiler families through CONFIG_FILES=out:in, as UPC++ does;
#   4. in both directories at once (parallel builds, one source tree):
#      make -C smp-conduit smp-seq.mak seq par, then make install;
#   5. builds the C client from each installed tree's fragment and runs it
#      as a 2-rank job with the tree's gasnetrun_smp, and checks that an
#      object compiled with the debug tree's flags does not link with the
#      optimised tree's library (and the other way round).
# It runs Bazel (in the unpacked tree, with an output base of its own that
# is removed at the end, and gex's disk cache), so it is a binary:
#   bazel run //tests/install:check_dist
# Prints "check_dist: PASS" and exits 0, or "check_dist: FAIL ..." and 1.
# KEEP_SCRATCH=1 keeps the scratch directory.
set -euo pipefail

if [[ -n "${BUILD_WORKSPACE_DIRECTORY:-}" ]]; then
  gex_root="$BUILD_WORKSPACE_DIRECTORY"
else
  gex_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fi
bazel="${BAZEL:-bazel}"
top="$(mktemp -d /tmp/gex_dist.XXXXXX)"
verdict=""
src=""
cleanup() {
  local rc=$?
  if [[ -n "$src" && -d "$src" ]]; then
    (cd "$src" && $bazel --output_base="$top/output_base" shutdown) >/dev/null 2>&1 || true
  fi
  if [[ -z "$verdict" ]]; then
    ((rc != 0)) || rc=1
    verdict="check_dist: FAIL: stopped early (exit $rc)"
  fi
  if [[ -n "${KEEP_SCRATCH:-}" ]]; then
    echo "check_dist: scratch kept in $top"
  else
    chmod -R u+w "$top" 2>/dev/null || true
    rm -rf "$top"
  fi
  echo "$verdict"
  exit "$rc"
}
trap cleanup EXIT
fail() {
  verdict="check_dist: FAIL: $*"
  exit 1
}

# ---- 1. the tarball --------------------------------------------------------
BUILD_WORKSPACE_DIRECTORY="$gex_root" \
  bash "$gex_root/tools/install/dist/make_dist.sh" "$top/GASNet-dist.tar.gz" ||
  fail "make_dist.sh exited $?"
tar -C "$top" -xzf "$top/GASNet-dist.tar.gz"
src="$top/GASNet-dist"

# ---- 2. what an embedding client checks first -----------------------------
for f in gasnetex.h gasnet.h gasnet_config.h.in configure; do
  [[ -r "$src/$f" ]] || fail "the distribution has no $f at its top"
done
spec_files=("$src"/docs/GASNet-EX.*)
[[ -r "${spec_files[0]}" ]] || fail "no docs/GASNet-EX.* in the distribution"
major="$(grep 'EX_SPEC_VERSION_MAJOR' "${spec_files[0]}" | head -1 | tr -s ' \t' ' ' | cut -d' ' -f3)"
minor="$(grep 'EX_SPEC_VERSION_MINOR' "${spec_files[0]}" | head -1 | tr -s ' \t' ' ' | cut -d' ' -f3)"
want_major="$(sed -n 's/^#define GEX_SPEC_VERSION_MAJOR \([0-9]*\)/\1/p' "$gex_root/api/include/gasnetex.h")"
want_minor="$(sed -n 's/^#define GEX_SPEC_VERSION_MINOR \([0-9]*\)/\1/p' "$gex_root/api/include/gasnetex.h")"
[[ "$major.$minor" == "$want_major.$want_minor" ]] ||
  fail "docs/GASNet-EX.* says specification '$major.$minor', gasnetex.h $want_major.$want_minor"

# ---- 3. configure, out of tree, twice --------------------------------------
bz="$bazel --output_base=$top/output_base"
configure() { # DIR KIND-OPTION
  mkdir -p "$top/bld/$1"
  (cd "$top/bld/$1" && "$src/configure" --prefix="$top/inst/$1" \
    --enable-smp --disable-ofi --disable-ucx --disable-ibv --disable-parsync \
    "$2" CC=gcc CXX=g++ --with-max-segsize=4GB --enable-pshm \
    BAZEL="$bz") >"$top/configure.$1.log" 2>&1 || {
    cat "$top/configure.$1.log" >&2
    fail "configure ($1) exited nonzero"
  }
  for ignored in --disable-parsync --with-max-segsize=4GB --enable-pshm; do
    grep -q "ignoring '$ignored'" "$top/configure.$1.log" ||
      fail "configure ($1) said nothing about ignoring $ignored"
  done
}
configure opt --disable-debug
configure debug --enable-debug
printf '%s\n' 'CONDUITS = @CONDUITS@' 'GASNET_CC_FAMILY = @CC_FAMILY@' \
  'GASNET_CXX_FAMILY = @CXX_FAMILY@' >"$top/probe.in"
(cd "$top/bld/opt" && env CONFIG_COMMANDS= CONFIG_LINKS= CONFIG_HEADERS= \
  CONFIG_FILES="$top/probe.txt:$top/probe.in" ./config.status) ||
  fail "config.status with CONFIG_FILES failed"
grep -qx 'CONDUITS = *smp' "$top/probe.txt" || fail "config.status: CONDUITS is not smp: $(cat "$top/probe.txt")"
grep -qx 'GASNET_CC_FAMILY = GNU' "$top/probe.txt" || fail "config.status: CC_FAMILY: $(cat "$top/probe.txt")"
grep -qx 'GASNET_CXX_FAMILY = GNU' "$top/probe.txt" || fail "config.status: CXX_FAMILY: $(cat "$top/probe.txt")"
grep -q '^#define GASNETI_BUILD_KIND "debug"' "$top/bld/debug/gasnet_config.h" ||
  fail "the debug directory's gasnet_config.h is not a debug configuration"

# ---- 4. the conduit targets and install, both directories at once ---------
build() {
  make -C "$top/bld/$1/smp-conduit" smp-seq.mak seq par &&
    make -C "$top/bld/$1" install
}
build opt >"$top/make.opt.log" 2>&1 &
opt_pid=$!
build debug >"$top/make.debug.log" 2>&1 &
debug_pid=$!
rc_opt=0
rc_debug=0
wait "$opt_pid" || rc_opt=$?
wait "$debug_pid" || rc_debug=$?
for k in opt debug; do
  rc_var="rc_$k"
  if ((${!rc_var} != 0)); then
    tail -n 40 "$top/make.$k.log" >&2
    fail "make ($k) exited ${!rc_var}"
  fi
  [[ -f "$top/bld/$k/smp-conduit/smp-seq.mak" ]] || fail "make ($k) wrote no smp-seq.mak"
  [[ -f "$top/inst/$k/include/smp-conduit/smp-seq.mak" && -f "$top/inst/$k/lib/libgasnet-smp-par.a" ]] ||
    fail "make install ($k) did not install the smp tree"
done
grep -q '^GASNET_BUILD_KIND = debug' "$top/inst/debug/include/smp-conduit/smp-seq.mak" ||
  fail "the debug tree's fragment is not a debug one"
grep -q '^GASNET_BUILD_KIND = optimised' "$top/inst/opt/include/smp-conduit/smp-seq.mak" ||
  fail "the optimised tree's fragment is not an optimised one"

# ---- 5. clients of the installed trees -------------------------------------
for k in opt debug; do
  d="$top/client.$k"
  mkdir -p "$d"
  cp "$gex_root/tests/consumer/workspace/c_client.c" "$d/"
  cat >"$d/Makefile" <<EOF
include $top/inst/$k/include/smp-conduit/smp-seq.mak
c_client: c_client.o
	\$(GASNET_LD) \$(GASNET_LDFLAGS) -o \$@ \$^ \$(GASNET_LIBS)
c_client.o: c_client.c
	\$(GASNET_CC) \$(GASNET_CPPFLAGS) \$(GASNET_CFLAGS) -c \$<
print-libs:
	@echo \$(GASNET_LD) \$(GASNET_LDFLAGS) \$(GASNET_LIBS)
EOF
  make -C "$d" >"$d/make.log" 2>&1 || {
    cat "$d/make.log" >&2
    fail "the C client did not build from the $k tree's fragment"
  }
  "$top/inst/$k/bin/gasnetrun_smp" -n 2 "$d/c_client" >"$d/run.log" 2>&1 || {
    cat "$d/run.log" >&2
    fail "the C client of the $k tree failed as a 2-rank job"
  }
  [[ "$(grep -c 'c_client: rank [01] of 2: .* ok$' "$d/run.log")" == 2 ]] ||
    fail "the C client of the $k tree: not every rank ok: $(cat "$d/run.log")"
done
# Cross links: each object with the other tree's library.
for pair in "opt debug" "debug opt"; do
  read -r obj lib <<<"$pair"
  # shellcheck disable=SC2046
  if $(make -s -C "$top/client.$lib" print-libs) \
    -o "$top/cross.$obj.$lib" "$top/client.$obj/c_client.o" >"$top/cross.log" 2>&1; then
    fail "an object compiled with the $obj tree's flags linked with the $lib tree's library"
  fi
  grep -q 'gex_install_i_build_' "$top/cross.log" ||
    fail "the $obj/$lib cross link failed without naming the build-kind symbol: $(cat "$top/cross.log")"
done

verdict="check_dist: PASS"
