#!/usr/bin/env bash
# gex used as an outsider uses GASNet-EX: no Bazel, only the install tree.
#
#   outsider_test.sh INSTALL CONDUIT VARIABLES C_CLIENT CPP_CLIENT TOOLS_CLIENT
#
# Installs CONDUIT's tree (INSTALL --as-built) into a temporary prefix,
# moves the tree elsewhere (it must still work: no file may name the old
# place), and there builds
#   - the C client and the C++ client with a plain Makefile that includes
#     the SEQ fragment (<conduit>-conduit/<conduit>-seq.mak);
#   - the C client with CMake through pkg_check_modules (gasnet-<c>-seq);
#   - the C client with `cc $(pkg-config --cflags --libs gasnet-<c>-par)`
#     on the command line (the PAR library);
# and runs each as a job of 2 and of 4 ranks with the tree's
# bin/gasnetrun_<conduit>; every job must exit 0 with every rank's "ok"
# line. The network conduits' jobs go through the network only
# (GASNET_SUPERNODE_MAXSIZE=1), pinned to loopback.
# With CONDUIT smp it also checks, once:
#   - every fragment (both modes, and the tools-only ones) defines every
#     variable of VARIABLES (written from GASNet-EX's documentation), and
#     the conduit fragments the spawner variables;
#   - the build-kind link check: the C client compiled as the other build
#     kind (GEX_DEBUG toggled, as the other tree's flags have it) must fail
#     to link, naming the other kind's symbol;
#   - the tools-only client builds from gasnet_tools-seq.mak and from
#     gasnet_tools-par.pc (GASNETT_THREAD_SAFE) and runs;
#   - bin/gex_config runs.
set -euo pipefail

install="$1"
conduit="$2"
variables="$3"
c_client="$4"
cpp_client="$5"
tools_client="$6"

fail() {
  echo "outsider_test($conduit): FAIL: $*" >&2
  exit 1
}

top="${TEST_TMPDIR:-$(mktemp -d)}/outsider_$conduit"
rm -rf "$top"
mkdir -p "$top"
staged="$top/staged"
prefix="$top/moved/gex"

# Jobs over the network only, pinned to loopback.
case "$conduit" in
  smp) ;;
  ofi)
    export GASNET_SUPERNODE_MAXSIZE=1 FI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=lo
    ;;
  ucx)
    export GASNET_SUPERNODE_MAXSIZE=1 GASNET_UCX_TLS=tcp UCX_TLS=tcp \
      UCX_NET_DEVICES=lo GASNET_UCX_NET_DEVICES=lo
    ;;
  *) fail "no job settings for conduit '$conduit'" ;;
esac

# ---- install, then move -------------------------------------------------
"$install" --as-built --prefix="$staged" --conduits="$conduit" ||
  fail "install exited $?"
mkdir -p "$(dirname "$prefix")"
mv "$staged" "$prefix"
if grep -rIl -- "$staged" "$prefix" >"$top/stale"; then
  fail "files in the moved tree name where it was installed: $(tr '\n' ' ' <"$top/stale")"
fi

mak="$prefix/include/$conduit-conduit/$conduit-seq.mak"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
for f in "$mak" "$prefix/include/$conduit-conduit/$conduit-par.mak" \
  "$PKG_CONFIG_PATH/gasnet-$conduit-seq.pc" "$PKG_CONFIG_PATH/gasnet-$conduit-par.pc" \
  "$prefix/lib/libgasnet-$conduit-seq.a" "$prefix/lib/libgasnet-$conduit-par.a" \
  "$prefix/bin/gasnetrun_$conduit"; do
  [[ -e "$f" ]] || fail "the tree has no ${f#"$prefix"/}"
done

# ---- 1. a plain Makefile including the fragment -------------------------
src="$top/make"
mkdir -p "$src"
cp "$c_client" "$src/c_client.c"
cp "$cpp_client" "$src/cpp_client.cc"
cat >"$src/Makefile" <<EOF
include $mak
all: c_client cpp_client
c_client.o: c_client.c
	\$(GASNET_CC) \$(GASNET_CPPFLAGS) \$(GASNET_CFLAGS) -c \$<
cpp_client.o: cpp_client.cc
	\$(GASNET_CXX) -std=c++20 \$(GASNET_CXXCPPFLAGS) \$(GASNET_CXXFLAGS) -c \$<
c_client: c_client.o
	\$(GASNET_LD) \$(GASNET_LDFLAGS) -o \$@ \$^ \$(GASNET_LIBS)
cpp_client: cpp_client.o
	\$(GASNET_LD) \$(GASNET_LDFLAGS) -o \$@ \$^ \$(GASNET_LIBS)
EOF
make -C "$src" >"$top/make.log" 2>&1 || {
  cat "$top/make.log" >&2
  fail "make with $conduit-seq.mak failed"
}

# ---- 2. CMake with pkg_check_modules ------------------------------------
cm="$top/cmake"
mkdir -p "$cm/src"
cp "$c_client" "$cm/src/c_client.c"
cat >"$cm/src/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(gex_outsider C)
find_package(PkgConfig REQUIRED)
pkg_check_modules(GASNET REQUIRED IMPORTED_TARGET gasnet-$conduit-seq)
add_executable(c_client c_client.c)
target_link_libraries(c_client PRIVATE PkgConfig::GASNET)
EOF
{ cmake -S "$cm/src" -B "$cm/build" && cmake --build "$cm/build"; } \
  >"$top/cmake.log" 2>&1 || {
  cat "$top/cmake.log" >&2
  fail "CMake with pkg_check_modules(gasnet-$conduit-seq) failed"
}

# ---- 3. pkg-config on the command line (PAR) ----------------------------
pc="$top/pkgconfig"
mkdir -p "$pc"
# shellcheck disable=SC2046
cc -o "$pc/c_client" $(pkg-config --cflags gasnet-"$conduit"-par) "$c_client" \
  $(pkg-config --libs gasnet-"$conduit"-par) >"$top/pc.log" 2>&1 || {
  cat "$top/pc.log" >&2
  fail "cc with pkg-config --cflags --libs gasnet-$conduit-par failed"
}

# ---- the jobs ------------------------------------------------------------
run_job() {
  local name="$1" prog="$2" ranks="$3" log="$top/$1.$3.log" rc=0 oks
  timeout 240 "$prefix/bin/gasnetrun_$conduit" -n "$ranks" "$prog" >"$log" 2>&1 || rc=$?
  oks="$(grep -c ": rank [0-9]* of $ranks: .* ok$" "$log" || true)"
  if ((rc != 0 || oks != ranks)); then
    cat "$log" >&2
    fail "$name at $ranks ranks: exit $rc, $oks of $ranks ranks ok"
  fi
  echo "outsider_test($conduit): $name at $ranks ranks ok"
}
for ranks in 2 4; do
  run_job make_c "$src/c_client" "$ranks"
  run_job make_cpp "$src/cpp_client" "$ranks"
  run_job cmake_c "$cm/build/c_client" "$ranks"
  run_job pkgconfig_par_c "$pc/c_client" "$ranks"
done

if [[ "$conduit" != smp ]]; then
  echo "outsider_test($conduit): PASS"
  exit 0
fi

# ---- smp only: the fragments' variables ---------------------------------
mapfile -t names < <(sed 's/#.*//; /^[[:space:]]*$/d' "$variables")
((${#names[@]} > 30)) || fail "read only ${#names[@]} names from $variables"
check_names() {
  local fragment="$1"
  shift
  local probe="$top/probe.mk" name origin
  {
    echo "include $fragment"
    echo "probe:"
    for name in "$@"; do
      printf '\t@echo "%s $(origin %s)"\n' "$name" "$name"
    done
  } >"$probe"
  make -s -f "$probe" probe >"$top/origins" 2>&1 || {
    cat "$top/origins" >&2
    fail "make could not read $fragment"
  }
  while read -r name origin; do
    [[ "$origin" == file ]] ||
      fail "${fragment#"$prefix"/} does not define $name (origin: $origin)"
  done <"$top/origins"
}
for m in seq par; do
  check_names "$prefix/include/smp-conduit/smp-$m.mak" "${names[@]}" \
    GASNET_SPAWNER CONDUIT_RUNCMD
  check_names "$prefix/include/gasnet_tools-$m.mak" "${names[@]}"
done
echo "outsider_test(smp): the fragments define all ${#names[@]} variables"

# The fragment's link line, evaluated, must name the conduit's library and
# the system libraries the merged archive needs.
libs="$(make -s -f - print <<EOF
include $mak
print: ; @echo \$(GASNET_LIBS)
EOF
)"
for want in "-L$prefix/lib" -lgasnet-smp-seq -lpmix -labsl_base -lstdc++; do
  [[ " $libs " == *" $want "* ]] || fail "GASNET_LIBS lacks $want: $libs"
done

# ---- smp only: the build-kind link check ---------------------------------
kind="$(pkg-config --variable=GASNET_BUILD_KIND gasnet-smp-seq)"
case "$kind" in
  debug) other=(-UGEX_DEBUG) other_symbol=gex_install_i_build_OPT ;;
  optimised | fastbuild | dbg)
    other=(-DGEX_DEBUG=1) other_symbol=gex_install_i_build_DEBUG
    ;;
  *) fail "gasnet-smp-seq.pc: GASNET_BUILD_KIND is '$kind'" ;;
esac
mm="$top/mismatch"
mkdir -p "$mm"
# shellcheck disable=SC2046
cc -c -o "$mm/c_client.o" $(pkg-config --cflags gasnet-smp-seq) "${other[@]}" \
  "$c_client" || fail "the C client does not compile as the other build kind"
# shellcheck disable=SC2046
if cc -o "$mm/c_client" "$mm/c_client.o" $(pkg-config --libs gasnet-smp-seq) \
  >"$mm/link.log" 2>&1; then
  fail "a client compiled for the other build kind linked with the $kind library"
fi
grep -q "$other_symbol" "$mm/link.log" ||
  fail "the mismatched link failed without naming $other_symbol: $(cat "$mm/link.log")"
echo "outsider_test(smp): the $kind library refuses a client of the other kind"

# ---- smp only: the tools-only library -------------------------------------
tl="$top/tools"
mkdir -p "$tl"
cp "$tools_client" "$tl/tools_client.c"
cat >"$tl/Makefile" <<EOF
include $prefix/include/gasnet_tools-seq.mak
tools_client: tools_client.c
	\$(GASNET_CC) \$(GASNET_CPPFLAGS) \$(GASNET_CFLAGS) -o \$@ \$< \$(GASNET_LIBS)
EOF
make -C "$tl" >"$top/tools.log" 2>&1 || {
  cat "$top/tools.log" >&2
  fail "make with gasnet_tools-seq.mak failed"
}
"$tl/tools_client" | grep -qx "tools_client: SEQ ok" || fail "tools_client (SEQ) did not pass"
# shellcheck disable=SC2046
cc -o "$tl/tools_client_par" $(pkg-config --cflags gasnet_tools-par) "$tools_client" \
  $(pkg-config --libs gasnet_tools-par) || fail "cc with gasnet_tools-par.pc failed"
"$tl/tools_client_par" | grep -qx "tools_client: PAR ok" || fail "tools_client (PAR) did not pass"
echo "outsider_test(smp): tools-only clients (SEQ, PAR) ok"

"$prefix/bin/gex_config" >"$top/gex_config.log" 2>&1 || {
  cat "$top/gex_config.log" >&2
  fail "bin/gex_config exited nonzero"
}
echo "outsider_test(smp): PASS"
