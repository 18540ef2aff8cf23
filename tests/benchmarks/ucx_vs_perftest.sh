#!/bin/bash
# The ucx conduit against UCX's own ucx_perftest on one transport,
# alternating in one run: R rounds, each running ours and the baseline
# (ours first in odd rounds, ucx_perftest first in even ones), then the
# medians. Every figure is a latency in microseconds, and every ratio is
# ours / baseline (above 1: ours slower):
#
#   AM 8 B    gex_bench pingpong-reqrep, Medium 8 B: one Request and its
#             Reply, a ROUND TRIP (us/op)
#             / 2 x ucx_perftest -t ucp_am_lat -s 8, which reports ONE-WAY
#             latency (half its AM ping-pong's round trip). Issue 21's
#             target over tcp: at most 1.15.
#   Put 8 B   gex_rma_bench put-latency, blocking, in-segment, 8 B: the Put
#             and its remote completion (a flush), a round trip
#             / ucx_perftest -t ucp_put_lat -s 8, which is ONE-WAY too: half
#             the round trip of a put ping-pong (each side puts 8 bytes
#             that the other polls for). The line also shows ours against
#             twice it, the like-for-like round trip.
#   Get 8 B   get-latency, the same row (a round trip)
#             / ucx_perftest -t ucp_get -s 8 -O 1: one ucp_get_nbx at a
#             time, waited for; a ROUND TRIP.
#   FADD 8 B  gex_rma_bench fadd-latency, blocking, in-segment:
#             gex_AD_OpBlocking_U64(GEX_OP_FADD) to the other rank, a round
#             trip. Twice: offloaded (ucp_atomic_op_nbx, the default) and
#             with GASNET_UCX_OFFLOAD_ATOMICS=0 (the generic path: an AM
#             Request and Reply), each checked against the conduit's
#             atomics count (GASNET_UCX_STATS=1)
#             / ucx_perftest -t ucp_fadd -s 8 -O 1: one fetching
#             ucp_atomic_op_nbx at a time, a ROUND TRIP.
#
# Ours is time over the timed iterations (an average, after warm-up); so is
# ucx_perftest's "overall" latency, which the first ratio uses. On a loaded
# host a few descheduled iterations move an average a lot, so a second
# ratio takes ucx_perftest's median (its 50th percentile) instead: ours,
# an average, against the baseline without its outliers (the harder
# comparison for ours).
#
# Every run has two processes on this host. Ours: GASNET_SUPERNODE_MAXSIZE=1
# (so all our traffic goes through UCX, none through PSHM),
# GASNET_UCX_TLS=<transport> (and GASNET_UCX_NET_DEVICES=lo for tcp);
# ucx_perftest: UCX_TLS=<transport> (and UCX_NET_DEVICES=lo), a server and
# a client on 127.0.0.1. Both pin their two processes to CPUs 0 and 1 when
# the host has two or more (-P: neither does).
#
# Build first (optimised, as benchmarks are measured):
#   bazel build --config=opt //tools:gex_bench_ucx //tools:gex_rma_bench_ucx \
#       //tools:gasnetrun_ucx
# then, from the workspace root:
#   tests/benchmarks/ucx_vs_perftest.sh [-T tcp|posix|sysv|sm] [-r 5]
# (If bazel-bin is not the --config=opt tree, point -B at it:
#  -B bazel-out/k8-opt/bin.) ucx_perftest comes with UCX (Debian:
# ucx-utils). Not a test: the figures depend on the machine and what else
# runs on it.
# Several arrays are read only through namerefs (local -n), which the
# linter does not follow.
# shellcheck disable=SC2034,SC2178
set -euo pipefail

me="ucx_vs_perftest"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# die, run, need, ratio, median, range (shared with the other same-run
# script).
# shellcheck source=tests/benchmarks/same_run.sh
. "$root/tests/benchmarks/same_run.sh"

usage() {
  cat <<EOF
usage: $0 [options]
  -T TLS       the UCX transport list for both (UCX_TLS and GASNET_UCX_TLS):
               tcp (default; pinned to lo), posix, sysv, sm, ...
  -r ROUNDS    rounds, each ours and the baseline (default 5)
  -i N         timed iterations per measurement (default 10000)
  -w N         warm-up iterations per measurement (default 1000)
  -B DIR       where the binaries are (default: <workspace>/bazel-bin)
  -p PORT      ucx_perftest's TCP port for its set-up (default 20000 +
               this shell's pid % 20000)
  -P           pin nothing (default: both pin their processes to CPUs 0, 1)
  -t SECONDS   limit for each program run (default 300)
  -k           keep every run's output and CSV (the directory is named)
  -h           this text
EOF
}

tls="tcp"
rounds=5
iterations=10000
warmup=1000
bin_dir="$root/bazel-bin"
port=$((20000 + $$ % 20000))
pin=1
limit=300
keep=0
while getopts ":T:r:i:w:B:p:Pt:kh" opt; do
  case "$opt" in
    T) tls="$OPTARG" ;;
    r) rounds="$OPTARG" ;;
    i) iterations="$OPTARG" ;;
    w) warmup="$OPTARG" ;;
    B) bin_dir="$OPTARG" ;;
    p) port="$OPTARG" ;;
    P) pin=0 ;;
    t) limit="$OPTARG" ;;
    k) keep=1 ;;
    h)
      usage
      exit 0
      ;;
    :)
      echo "$me: option -$OPTARG needs a value" >&2
      usage >&2
      exit 2
      ;;
    *)
      echo "$me: unknown option -$OPTARG" >&2
      usage >&2
      exit 2
      ;;
  esac
done
shift $((OPTIND - 1))
if (($# > 0)); then
  echo "$me: unexpected argument '$1'" >&2
  exit 2
fi
for pair in "-r:$rounds" "-i:$iterations" "-t:$limit" "-p:$port"; do
  [[ "${pair#*:}" =~ ^[1-9][0-9]*$ ]] ||
    { echo "$me: ${pair%%:*}: '${pair#*:}' is not a positive integer" >&2; exit 2; }
done
[[ "$warmup" =~ ^[0-9]+$ ]] ||
  { echo "$me: -w: '$warmup' is not a non-negative integer" >&2; exit 2; }
[[ -n "$tls" ]] || { echo "$me: -T: empty transport list" >&2; exit 2; }

# ---- binaries ----------------------------------------------------------------
build_cmd="bazel build --config=opt //tools:gex_bench_ucx //tools:gex_rma_bench_ucx //tools:gasnetrun_ucx"
gasnetrun="$bin_dir/tools/gasnetrun_ucx"
rma_bench="$bin_dir/tools/gex_rma_bench_ucx"
am_bench="$bin_dir/tools/gex_bench_ucx"
for b in "$gasnetrun" "$rma_bench" "$am_bench"; do
  [[ -x "$b" ]] ||
    die "missing $b (build it from $root with: $build_cmd; or point -B at the binaries)"
done
perftest="$(command -v ucx_perftest)" || die "needs ucx_perftest (Debian: ucx-utils)"
command -v timeout >/dev/null || die "needs timeout (coreutils)"

# ---- the environment of every run ----------------------------------------------
# Ours reads GASNET_UCX_*; UCX_TLS is only ever given to ucx_perftest.
unset UCX_TLS
export GASNET_SUPERNODE_MAXSIZE=1
export GASNET_UCX_TLS="$tls"
pt_env=(UCX_TLS="$tls")
if [[ "$tls" == *tcp* ]]; then
  export GASNET_UCX_NET_DEVICES=lo UCX_NET_DEVICES=lo
  pt_env+=(UCX_NET_DEVICES=lo)
fi
pin_ours=()
pt_server_pin=()
pt_client_pin=()
if ((pin)) && (($(nproc) >= 2)); then
  pin_ours=(--pin)
  pt_server_pin=(-c 0)
  pt_client_pin=(-c 1)
elif ((!pin)); then
  pin_ours=(--no-pin)
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/ucx_vs_perftest.XXXXXX")"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; fi
  if ((keep)); then
    echo "$me: outputs kept in $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# atomics NAME: rank 0's offloaded-atomics count from GASNET_UCX_STATS=1.
atomics() {
  sed -n 's/^ucx: rank 0: .* atomics \([0-9]*\).*/\1/p' "$work/$1.out" | head -n 1
}

rma_args=(-s blocking -l in-segment --latency-min 8 --latency-max 8
  -i "$iterations" -w "$warmup" "${pin_ours[@]}")

run_ours() {
  local r="$1" csv n
  csv="$work/am_$r.csv"
  run "ours_am_$r" "$gasnetrun" -n 2 "$am_bench" -t pingpong-reqrep \
    -c medium -m 8 -i "$iterations" -w "$warmup" "${pin_ours[@]}" --csv "$csv"
  # test,category,size,iterations,usec_per_op,...: a round trip
  ours_am[r]="$(awk -F, '$1=="pingpong-reqrep" && $2=="medium" && $3==8 {printf "%.3f", $5}' "$csv")"
  need "ours_am_$r" "${ours_am[r]}" "pingpong-reqrep Medium 8 B row"

  csv="$work/rma_$r.csv"
  GASNET_UCX_STATS=1 run "ours_rma_$r" "$gasnetrun" -n 2 "$rma_bench" \
    -t put-latency,get-latency,fadd-latency "${rma_args[@]}" --csv "$csv"
  # test,sync,local,size,iterations,usec_per_op,...
  ours_put[r]="$(awk -F, '$1=="put-latency" && $2=="blocking" && $4==8 {printf "%.3f", $6}' "$csv")"
  ours_get[r]="$(awk -F, '$1=="get-latency" && $2=="blocking" && $4==8 {printf "%.3f", $6}' "$csv")"
  ours_fadd[r]="$(awk -F, '$1=="fadd-latency" && $2=="blocking" && $4==8 {printf "%.3f", $6}' "$csv")"
  need "ours_rma_$r" "${ours_put[r]}" "8-byte blocking in-segment put-latency row"
  need "ours_rma_$r" "${ours_get[r]}" "8-byte blocking in-segment get-latency row"
  need "ours_rma_$r" "${ours_fadd[r]}" "blocking in-segment fadd-latency row"
  n="$(atomics "ours_rma_$r")"
  [[ -n "$n" ]] && ((n >= iterations)) || {
    cat "$work/ours_rma_$r.out" >&2
    die "ours_rma_$r: the conduit counted '${n}' offloaded atomics, want at least $iterations (above)"
  }

  csv="$work/fadd_am_$r.csv"
  GASNET_UCX_STATS=1 GASNET_UCX_OFFLOAD_ATOMICS=0 run "ours_fadd_am_$r" \
    "$gasnetrun" -n 2 "$rma_bench" -t fadd-latency "${rma_args[@]}" --csv "$csv"
  ours_fadd_am[r]="$(awk -F, '$1=="fadd-latency" && $2=="blocking" && $4==8 {printf "%.3f", $6}' "$csv")"
  need "ours_fadd_am_$r" "${ours_fadd_am[r]}" "blocking in-segment fadd-latency row"
  n="$(atomics "ours_fadd_am_$r")"
  [[ "$n" == 0 ]] || {
    cat "$work/ours_fadd_am_$r.out" >&2
    die "ours_fadd_am_$r: GASNET_UCX_OFFLOAD_ATOMICS=0 but the conduit counted '${n}' offloaded atomics (above)"
  }
}

# perftest NAME TEST ARGS...: one ucx_perftest server and client on
# loopback; the client's final CSV line into $work/NAME.csv
# (iterations,50.0_percentile_lat,avg_lat,overall_lat,...).
perftest() {
  local name="$1" test="$2" rc=0 i
  shift 2
  env "${pt_env[@]}" timeout -k 10 "$limit" "$perftest" -t "$test" \
    -p "$port" "${pt_server_pin[@]}" "$@" >"$work/$name.server.out" 2>&1 &
  server_pid=$!
  # Wait for its set-up port (up to 10 s), so the client need not retry.
  for ((i = 0; i < 100; ++i)); do
    ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  run "$name" env "${pt_env[@]}" "$perftest" 127.0.0.1 -t "$test" \
    -p "$port" "${pt_client_pin[@]}" "$@" -f -v
  wait "$server_pid" || rc=$?
  server_pid=""
  if ((rc != 0)); then
    cat "$work/$name.server.out" >&2
    die "$name: the ucx_perftest server exited $rc"
  fi
  # (The iteration count is right-aligned: a short one has leading spaces.)
  grep -E '^ *[0-9]+,[0-9.]+,[0-9.]+,[0-9.]+,' "$work/$name.out" | tail -n 1 \
    >"$work/$name.csv" || true
}
pt_overall() { awk -F, '{printf "%.3f", $4}' "$work/$1.csv"; }
pt_median() { awk -F, '{printf "%.3f", $2}' "$work/$1.csv"; }

run_perftest() {
  local r="$1" t
  local common=(-s 8 -n "$iterations" -w "$warmup")
  perftest "pt_am_$r" ucp_am_lat "${common[@]}"
  perftest "pt_put_$r" ucp_put_lat "${common[@]}"
  perftest "pt_get_$r" ucp_get "${common[@]}" -O 1
  perftest "pt_fadd_$r" ucp_fadd "${common[@]}" -O 1
  for t in am put get fadd; do
    local -n o="pt_$t" m="pt_${t}_med"
    o[r]="$(pt_overall "pt_${t}_$r")"
    m[r]="$(pt_median "pt_${t}_$r")"
    need "pt_${t}_$r" "${o[r]}" "final CSV line (-f -v)"
  done
}

declare -a ours_am ours_put ours_get ours_fadd ours_fadd_am
declare -a pt_am pt_put pt_get pt_fadd pt_am_med pt_put_med pt_get_med pt_fadd_med
declare -a pt_am2 pt_put2 r_am r_put r_put2 r_get r_fadd r_fadd_am
declare -a pt_am2_med pt_put2_med q_am q_put q_put2 q_get q_fadd q_fadd_am

echo "$me: transport $tls, $rounds round(s), -i $iterations -w $warmup, pinning $( ((${#pt_server_pin[@]})) && echo 'CPUs 0 and 1' || echo off)"
echo "$me: binaries in $bin_dir (build with --config=opt for figures worth quoting); UCX $(ucx_info -v 2>/dev/null | sed -n "s/^# Version //p" || true)"
echo "$me: load before: $(uptime)"
for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then
    run_ours "$r"
    run_perftest "$r"
  else
    run_perftest "$r"
    run_ours "$r"
  fi
  pt_am2[r]="$(awk -v a="${pt_am[r]}" 'BEGIN { printf "%.3f", 2 * a }')"
  pt_put2[r]="$(awk -v a="${pt_put[r]}" 'BEGIN { printf "%.3f", 2 * a }')"
  r_am[r]="$(ratio "${ours_am[r]}" "${pt_am2[r]}")"
  r_put[r]="$(ratio "${ours_put[r]}" "${pt_put[r]}")"
  r_put2[r]="$(ratio "${ours_put[r]}" "${pt_put2[r]}")"
  r_get[r]="$(ratio "${ours_get[r]}" "${pt_get[r]}")"
  r_fadd[r]="$(ratio "${ours_fadd[r]}" "${pt_fadd[r]}")"
  r_fadd_am[r]="$(ratio "${ours_fadd_am[r]}" "${pt_fadd[r]}")"
  # The same against ucx_perftest's medians.
  pt_am2_med[r]="$(awk -v a="${pt_am_med[r]}" 'BEGIN { printf "%.3f", 2 * a }')"
  pt_put2_med[r]="$(awk -v a="${pt_put_med[r]}" 'BEGIN { printf "%.3f", 2 * a }')"
  q_am[r]="$(ratio "${ours_am[r]}" "${pt_am2_med[r]}")"
  q_put[r]="$(ratio "${ours_put[r]}" "${pt_put_med[r]}")"
  q_put2[r]="$(ratio "${ours_put[r]}" "${pt_put2_med[r]}")"
  q_get[r]="$(ratio "${ours_get[r]}" "${pt_get_med[r]}")"
  q_fadd[r]="$(ratio "${ours_fadd[r]}" "${pt_fadd_med[r]}")"
  q_fadd_am[r]="$(ratio "${ours_fadd_am[r]}" "${pt_fadd_med[r]}")"
  printf 'round %d (%s first), us (perftest median in []): AM rt %s / 2x %s [%s] = %sx | put %s / %s [%s] = %sx | get %s / %s [%s] = %sx | fadd %s, generic %s / %s [%s] = %sx, %sx\n' \
    "$r" "$( ((r % 2)) && echo ours || echo ucx_perftest)" \
    "${ours_am[r]}" "${pt_am[r]}" "${pt_am_med[r]}" "${r_am[r]}" \
    "${ours_put[r]}" "${pt_put[r]}" "${pt_put_med[r]}" "${r_put[r]}" \
    "${ours_get[r]}" "${pt_get[r]}" "${pt_get_med[r]}" "${r_get[r]}" \
    "${ours_fadd[r]}" "${ours_fadd_am[r]}" "${pt_fadd[r]}" "${pt_fadd_med[r]}" \
    "${r_fadd[r]}" "${r_fadd_am[r]}"
done
echo "$me: load after: $(uptime)"

echo
echo "medians over $rounds round(s) on $tls, us. base: ucx_perftest's overall average (what ours is), p50: its median,"
echo "each as the line compares it (twice the one-way figure where it says 2x); ratios: the median of the per-round"
echo "ratios, then their range, against the average and against the median; >1: ours slower"
line() {  # line LABEL OURS BASE BASE_P50 RATIO RATIO_P50 NOTE (array names)
  local -n o="$2" b="$3" m="$4" q="$5" qm="$6"
  printf '  %-34s ours %8s  base %8s  p50 %8s  ours/base %6sx (%s)  ours/p50 %6sx (%s)  %s\n' \
    "$1" "$(median "${o[@]}")" "$(median "${b[@]}")" "$(median "${m[@]}")" \
    "$(median "${q[@]}")" "$(range "${q[@]}")" \
    "$(median "${qm[@]}")" "$(range "${qm[@]}")" "$7"
}
line "AM Medium 8 B rt / 2x ucp_am_lat" ours_am pt_am2 pt_am2_med r_am q_am \
  "(ucp_am_lat is one-way; target <= 1.15 over tcp)"
line "Put 8 B blocking / ucp_put_lat" ours_put pt_put pt_put_med r_put q_put \
  "(ucp_put_lat is one-way; ours a round trip)"
line "Put 8 B blocking / 2x ucp_put_lat" ours_put pt_put2 pt_put2_med r_put2 q_put2 \
  "(both a round trip)"
line "Get 8 B blocking / ucp_get -O 1" ours_get pt_get pt_get_med r_get q_get \
  "(both a round trip)"
line "FADD 8 B offloaded / ucp_fadd -O 1" ours_fadd pt_fadd pt_fadd_med r_fadd q_fadd \
  "(both a round trip)"
line "FADD 8 B generic (AM) / ucp_fadd" ours_fadd_am pt_fadd pt_fadd_med r_fadd_am q_fadd_am \
  "(GASNET_UCX_OFFLOAD_ATOMICS=0)"
