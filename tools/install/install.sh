#!/usr/bin/env bash
# Writes a GASNet-EX-shaped install tree of gex for clients that do not
# build with Bazel (see tools/install/README.md):
#
#   bazel run -c opt //:install -- --prefix=DIR [--conduits=smp,ofi,ucx,ibv] [--debug]
#
#   DIR/include/                     the public headers (every header the
#                                    final targets export), gex_build_kind.h
#   DIR/include/<c>-conduit/<c>-<m>.mak   the makefile fragments
#   DIR/include/gasnet_tools-<m>.mak      the tools-only fragments
#   DIR/lib/libgasnet-<c>-<m>.a      every object of the conduit's stack
#   DIR/lib/libgasnet_tools-<m>.a    the tools-only library
#   DIR/lib/pkgconfig/gasnet-<c>-<m>.pc, gasnet_tools-<m>.pc
#   DIR/bin/gasnetrun_<c>, gex_config, the benchmark CLIs
#
# for each chosen conduit <c> and both modes <m> (seq, par). Paths inside
# the tree are relative to the file that holds them (a fragment computes
# GASNET_PREFIX from its own location, a .pc file uses ${pcfiledir}), so the
# tree can be moved or copied anywhere.
#
# Optimised (-c opt) is the default; --debug installs the debug build
# (--config=dbg: GEX_DEBUG checks on, -g). When the libraries this run has
# were built another way, the script runs Bazel again with the right
# options (under `bazel run`, from $BUILD_WORKSPACE_DIRECTORY). --as-built
# installs whatever kind this build has, without running Bazel (the tests
# use it).
#
# Exit status: 0 when the tree is written, 2 on a usage error, 1 otherwise.

set -euo pipefail

me="gex install"
usage() {
  cat <<EOF
usage: bazel run //:install -- --prefix=DIR [--conduits=LIST] [--debug] [--as-built]
                                 [--modes=LIST] [--cc=CC] [--cxx=CXX]
  --prefix=DIR      where the tree goes (created if missing; files there are
                    replaced)
  --conduits=LIST   comma-separated, from smp,ofi,ucx,ibv (default: all four)
  --modes=LIST      comma-separated, from seq,par (default: both)
  --cc=CC, --cxx=CXX  the C and C++ compilers the fragments and .pc files
                    name (default: those of Bazel's C++ toolchain)
  --debug           the debug build (GEX_DEBUG checks, -g) instead of the
                    optimised one
  --as-built        install the libraries as this Bazel build compiled them
                    (no rebuild, whatever the compilation mode)
EOF
}
die_usage() {
  echo "$me: $*" >&2
  usage >&2
  exit 2
}
die() {
  echo "$me: $*" >&2
  exit 1
}

all_conduits=(smp ofi ucx ibv)
prefix=""
conduits_arg="smp,ofi,ucx,ibv"
want_debug=0
as_built=0
modes_arg="seq,par"
cc=""
cxx=""
orig_args=("$@")
while (($#)); do
  case "$1" in
    --prefix=*) prefix="${1#--prefix=}" ;;
    --prefix)
      (($# >= 2)) || die_usage "--prefix needs a directory"
      prefix="$2"
      shift
      ;;
    --conduits=*) conduits_arg="${1#--conduits=}" ;;
    --conduits)
      (($# >= 2)) || die_usage "--conduits needs a list"
      conduits_arg="$2"
      shift
      ;;
    --modes=*) modes_arg="${1#--modes=}" ;;
    --cc=*) cc="${1#--cc=}" ;;
    --cxx=*) cxx="${1#--cxx=}" ;;
    --debug) want_debug=1 ;;
    --as-built) as_built=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) die_usage "unknown option '$1'" ;;
  esac
  shift
done
[[ -n "$prefix" ]] || die_usage "--prefix=DIR is required"
IFS=, read -r -a conduits <<<"$conduits_arg"
((${#conduits[@]})) || die_usage "--conduits: empty list"
for c in "${conduits[@]}"; do
  case " ${all_conduits[*]} " in
    *" $c "*) ;;
    *) die_usage "--conduits: unknown conduit '$c' (known: ${all_conduits[*]})" ;;
  esac
done

IFS=, read -r -a modes <<<"$modes_arg"
((${#modes[@]})) || die_usage "--modes: empty list"
for m in "${modes[@]}"; do
  [[ "$m" == seq || "$m" == par ]] || die_usage "--modes: unknown mode '$m' (known: seq par)"
done
[[ -z "$cc" || -n "$cxx" ]] || die_usage "--cc needs --cxx too"
[[ -z "$cxx" || -n "$cc" ]] || die_usage "--cxx needs --cc too"

# ---- where the built pieces are (this binary's runfiles) -----------------
if [[ -d "$0.runfiles/gex/tools/install" ]]; then
  runfiles="$0.runfiles/gex"
elif [[ -n "${RUNFILES_DIR:-}" && -d "$RUNFILES_DIR/gex/tools/install" ]]; then
  runfiles="$RUNFILES_DIR/gex"
elif [[ -n "${TEST_SRCDIR:-}" && -d "$TEST_SRCDIR/gex/tools/install" ]]; then
  runfiles="$TEST_SRCDIR/gex"
else
  die "cannot find the built libraries (run it with bazel run //:install)"
fi
pieces="$runfiles/tools/install"

# ---- the build kind: the one asked for, or rebuild ------------------------
built_mode="$(cat "$pieces/compilation_mode.txt")"
built_debug=0
# (grep reads all of nm's output: with -q it could stop early, and nm's
# SIGPIPE would fail the pipeline under pipefail.)
if nm -g "$pieces/smp_seq.a" 2>/dev/null | grep ' gex_install_i_build_DEBUG$' >/dev/null; then
  built_debug=1
fi
if ((as_built)); then
  if ((want_debug && !built_debug)); then
    die "--debug --as-built: this build is not a debug build (run bazel run --config=dbg //:install -- --as-built ...)"
  fi
  want_debug=$built_debug
else
  if ((want_debug)); then
    config=(--config=dbg)
    ok=0
    [[ "$built_mode" == dbg ]] && ((built_debug)) && ok=1
  else
    config=(-c opt)
    ok=0
    [[ "$built_mode" == opt ]] && ((!built_debug)) && ok=1
  fi
  if ((!ok)); then
    if [[ -n "${BUILD_WORKSPACE_DIRECTORY:-}" && -z "${GEX_INSTALL_REBUILT:-}" ]]; then
      echo "$me: these libraries were built with -c $built_mode; building with ${config[*]}" >&2
      cd "$BUILD_WORKSPACE_DIRECTORY"
      GEX_INSTALL_REBUILT=1 exec "${BAZEL:-bazel}" run "${config[@]}" //:install -- "${orig_args[@]}"
    fi
    die "these libraries were built with -c $built_mode$( ((built_debug)) && echo ' and GEX_DEBUG'); run: bazel run ${config[*]} //:install -- ${orig_args[*]} (or pass --as-built)"
  fi
fi
if ((want_debug)); then
  kind=debug
  opt_flags="-g -O0"
  kind_defines="-DGEX_DEBUG=1"
elif [[ "$built_mode" == opt ]]; then
  kind=optimised
  opt_flags="-O2"
  kind_defines=""
else
  # --as-built of a fastbuild or dbg build without GEX_DEBUG: the
  # optimised kind's link check and defines, but named as built.
  kind="$built_mode"
  opt_flags="-O2"
  kind_defines=""
fi

# ---- the tree -------------------------------------------------------------
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
mkdir -p "$prefix/include" "$prefix/lib/pkgconfig" "$prefix/bin"

if [[ -z "$cc" ]]; then
  cc="$(cat "$pieces/smp_seq.cc")"
  # The C++ driver beside the C one (gcc -> g++, clang -> clang++).
  case "$cc" in
    *clang) cxx="${cc}++" ;;
    *gcc) cxx="${cc%gcc}g++" ;;
    *) cxx="c++" ;;
  esac
fi
version="2025.8.0"

# Headers: the union of what the libraries' manifests list.
install_headers() {
  local path src
  while read -r path src; do
    mkdir -p "$prefix/include/$(dirname "$path")"
    install -m 0644 "$runfiles/$src" "$prefix/include/$path"
  done <"$1"
}

# One flag per line -> one line; defines get -D.
join_lines() { tr '\n' ' ' <"$1" | sed 's/ *$//'; }
defines_of() { sed 's/^/-D/' "$1" | tr '\n' ' ' | sed 's/ *$//'; }

# write_fragment FILE NAME CONDUIT MODE PIECE LIB DEFINES RUNCMD
# The makefile fragment: GASNet-EX's variable names and meanings, our
# values. GASNET_PREFIX is two directories up from the fragment unless the
# including Makefile (or the command line) sets it.
write_fragment() {
  local file="$1" what="$2" conduit="$3" mode="$4" piece="$5" lib="$6"
  local defines="$7" spawner="$8" up="$9"
  local MODE="${mode^^}"
  local extra_defines_par="-D_REENTRANT"
  local spawner_lines=""
  if [[ -n "$spawner" ]]; then
    spawner_lines="# The launcher (GASNet-EX's gasnetrun_<conduit>) and the command that runs
# N ranks of a program: %N ranks, %P program, %A its arguments.
GASNET_SPAWNER = $spawner
CONDUIT_RUNCMD = $spawner -n %N %P %A
"
  fi
  cat >"$file" <<EOF
# $(basename "$file"): makefile fragment of gex (a GASNet-EX implementation)
# for $what, GASNET_$MODE mode, $kind build. Written by gex's install
# command (tools/install/install.sh); do not edit.
#
# In a Makefile:
#   include <prefix>/${file#"$prefix"/}
#   foo.o: foo.c ; \$(GASNET_CC) \$(GASNET_CPPFLAGS) \$(GASNET_CFLAGS) -c \$<
#   bar.o: bar.cc ; \$(GASNET_CXX) \$(GASNET_CXXCPPFLAGS) \$(GASNET_CXXFLAGS) -c \$<
#   foo: foo.o ; \$(GASNET_LD) \$(GASNET_LDFLAGS) -o \$@ \$^ \$(GASNET_LIBS)
# GASNET_CFLAGS is \$(GASNET_OPT_CFLAGS) \$(GASNET_MISC_CFLAGS); GASNET_CPPFLAGS
# is \$(GASNET_MISC_CPPFLAGS) \$(GASNET_DEFINES) \$(GASNET_INCLUDES) (and the
# same for the CXX variables). MANUAL_CFLAGS, MANUAL_CXXFLAGS,
# MANUAL_DEFINES, MANUAL_LDFLAGS and MANUAL_LIBS, when the client sets them,
# are added where GASNet-EX adds them.
#
# The tree is relocatable: GASNET_PREFIX is found from this file's own
# path (GNU make) unless set before the include or on the command line.

GASNET_FRAGMENT_PREFIX := \$(abspath \$(dir \$(lastword \$(MAKEFILE_LIST)))$up)
GASNET_PREFIX ?= \$(GASNET_FRAGMENT_PREFIX)

# What this fragment is for.
GASNET_RELEASE_VERSION = $version
GASNET_CONDUIT_NAME = $conduit
GASNET_THREAD_MODEL = $MODE
GASNET_BUILD_KIND = $kind

# ----------------------------------------------------------------------
# Conduit settings (added to the GASNET_ variables below)
CONDUIT_INCLUDES =
CONDUIT_DEFINES = $defines
CONDUIT_LDFLAGS =
CONDUIT_LIBS = $(join_lines "$pieces/$piece.link")
$spawner_lines
# ----------------------------------------------------------------------
# Overridable linker and its flags
GASNET_LD_OVERRIDE = $cc
GASNET_LDFLAGS_OVERRIDE = $opt_flags
# Nothing but GASNET_LIBS is needed at link time: the C++ runtime is on
# that line, so a C linker works, and no MPI or Fortran is involved.
GASNET_LD_REQUIRES_CXX =
GASNET_LD_REQUIRES_MPI =
GASNET_LD_REQUIRES_FORTRAN =

# ----------------------------------------------------------------------
# Directories
GASNET_INCLUDES = -I\$(GASNET_PREFIX)/include${conduit:+ -I\$(GASNET_PREFIX)/include/$conduit-conduit} \$(CONDUIT_INCLUDES)
GASNET_LIBDIRS = -L\$(GASNET_PREFIX)/lib

# ----------------------------------------------------------------------
# C compiler and options
GASNET_CC = $cc
GASNET_OPT_CFLAGS = $opt_flags
GASNET_MISC_CFLAGS =
# The build kind's link check (see gex_build_kind.h).
GASNET_MISC_CPPFLAGS = -include gex_build_kind.h
GASNET_DEVWARN_CFLAGS = -Wall -Wextra -Wno-unused-parameter

# ----------------------------------------------------------------------
# C++ compiler and options (gex's own C++ API, <gex/gex.hpp>, needs
# -std=c++20; the C headers need nothing)
GASNET_CXX = $cxx
GASNET_OPT_CXXFLAGS = $opt_flags
GASNET_MISC_CXXFLAGS =
GASNET_MISC_CXXCPPFLAGS = -include gex_build_kind.h
GASNET_DEVWARN_CXXFLAGS = -Wall -Wextra -Wno-unused-parameter

# ----------------------------------------------------------------------
# Defines
GASNET_EXTRADEFINES_SEQ =
GASNET_EXTRADEFINES_PAR = $extra_defines_par
GASNET_EXTRADEFINES_PARSYNC = $extra_defines_par
GASNET_DEFINES = ${kind_defines:+$kind_defines }\$(GASNET_EXTRADEFINES_$MODE) \$(CONDUIT_DEFINES) \$(MANUAL_DEFINES)

# ----------------------------------------------------------------------
# Convenience aliases
GASNET_CFLAGS = \$(GASNET_OPT_CFLAGS) \$(GASNET_MISC_CFLAGS) \$(MANUAL_CFLAGS)
GASNET_CPPFLAGS = \$(GASNET_MISC_CPPFLAGS) \$(GASNET_DEFINES) \$(GASNET_INCLUDES)
GASNET_CXXFLAGS = \$(GASNET_OPT_CXXFLAGS) \$(GASNET_MISC_CXXFLAGS) \$(MANUAL_CXXFLAGS)
GASNET_CXXCPPFLAGS = \$(GASNET_MISC_CXXCPPFLAGS) \$(GASNET_DEFINES) \$(GASNET_INCLUDES)

# ----------------------------------------------------------------------
# Linker and options
GASNET_LD = \$(GASNET_LD_OVERRIDE)
GASNET_LDFLAGS = \$(GASNET_LDFLAGS_OVERRIDE) \$(CONDUIT_LDFLAGS) \$(MANUAL_LDFLAGS)
GASNET_EXTRALIBS_SEQ =
GASNET_EXTRALIBS_PAR = -lpthread
GASNET_EXTRALIBS_PARSYNC = -lpthread
GASNET_LIBS = \$(GASNET_LIBDIRS) -l$lib \$(CONDUIT_LIBS) \$(GASNET_EXTRALIBS_$MODE) \$(MANUAL_LIBS)
EOF
}

# write_pc FILE NAME DESCRIPTION CONDUIT MODE PIECE LIB DEFINES
write_pc() {
  local file="$1" name="$2" description="$3" conduit="$4" mode="$5"
  local piece="$6" lib="$7" defines="$8"
  local MODE="${mode^^}" libs cppflags includes
  libs="$(join_lines "$pieces/$piece.link")"
  [[ "$MODE" == PAR ]] && defines="-D_REENTRANT $defines"
  defines="${kind_defines:+$kind_defines }$defines"
  includes='-I${includedir}'
  if [[ -n "$conduit" ]]; then
    includes+=' -I${includedir}/'"$conduit-conduit"
  fi
  cppflags="-include gex_build_kind.h $defines $includes"
  cat >"$file" <<EOF
# $(basename "$file"): pkg-config file of gex (a GASNet-EX implementation),
# $kind build. Written by gex's install command; do not edit. Paths are
# relative to this file, so the tree can be moved.
prefix=\${pcfiledir}/../..
exec_prefix=\${prefix}
includedir=\${prefix}/include
libdir=\${prefix}/lib
bindir=\${prefix}/bin
GASNET_CONDUIT_NAME=$conduit
GASNET_THREAD_MODEL=$MODE
GASNET_BUILD_KIND=$kind
GASNET_CC=$cc
GASNET_CXX=$cxx
GASNET_LD=$cc
GASNET_DEFINES=$defines
GASNET_INCLUDES=$includes
GASNET_CPPFLAGS=$cppflags
GASNET_CXXCPPFLAGS=$cppflags
GASNET_CFLAGS=$opt_flags
GASNET_CXXFLAGS=$opt_flags
GASNET_LDFLAGS=$opt_flags
GASNET_LIBS=-L\${libdir} -l$lib $libs

Name: $name
Description: $description
Version: $version
Cflags: $cppflags
Libs: -L\${libdir} -l$lib $libs
Libs.private: $libs
EOF
}

header_lists=()
for c in "${conduits[@]}"; do
  mkdir -p "$prefix/include/$c-conduit"
  for m in "${modes[@]}"; do
    piece="${c}_$m"
    header_lists+=("$pieces/$piece.headers")
    install -m 0644 "$pieces/$piece.a" "$prefix/lib/libgasnet-$c-$m.a"
    defines="$(defines_of "$pieces/$piece.defines")"
    write_fragment "$prefix/include/$c-conduit/$c-$m.mak" "the $c conduit" \
      "$c" "$m" "$piece" "gasnet-$c-$m" "$defines" \
      "\$(GASNET_PREFIX)/bin/gasnetrun_$c" "/../.."
    write_pc "$prefix/lib/pkgconfig/gasnet-$c-$m.pc" "gasnet-$c-$m" \
      "gex's GASNet-EX library, $c conduit, ${m^^} mode" "$c" "$m" "$piece" \
      "gasnet-$c-$m" "$defines"
  done
  for tool in gasnetrun gex_bench gex_rma_bench; do
    install -m 0755 "$runfiles/tools/${tool}_$c" "$prefix/bin/${tool}_$c"
  done
done
for m in "${modes[@]}"; do
  piece="tools_$m"
  header_lists+=("$pieces/$piece.headers")
  install -m 0644 "$pieces/$piece.a" "$prefix/lib/libgasnet_tools-$m.a"
  defines="$(defines_of "$pieces/$piece.defines")"
  # The tools header's threading model, stated (not left to -pthread's
  # _REENTRANT, which GASNET_LIBS brings).
  if [[ "$m" == par ]]; then
    defines="${defines:+$defines }-DGASNETT_THREAD_SAFE=1"
  else
    defines="${defines:+$defines }-DGASNETT_THREAD_SINGLE=1"
  fi
  write_fragment "$prefix/include/gasnet_tools-$m.mak" "the tools-only library" \
    "" "$m" "$piece" "gasnet_tools-$m" "$defines" "" "/.."
  write_pc "$prefix/lib/pkgconfig/gasnet_tools-$m.pc" "gasnet_tools-$m" \
    "gex's GASNet tools library (no conduit), ${m^^} mode" "" "$m" "$piece" \
    "gasnet_tools-$m" "$defines"
done
for list in "${header_lists[@]}"; do
  install_headers "$list"
done
install -m 0755 "$runfiles/tools/gex_config" "$prefix/bin/gex_config"
if [[ " ${conduits[*]} " == *" smp "* && " ${modes[*]} " == *" par "* ]]; then
  install -m 0755 "$runfiles/tools/gex_par_bench_smp" "$prefix/bin/gex_par_bench_smp"
fi

echo "$me: $kind tree for ${conduits[*]} (${modes[*]^^}) written to $prefix"
