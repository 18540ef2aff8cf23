#!/bin/bash
# The ofi conduit against raw libfabric (fi_raw_bench) on one provider,
# alternating in one run: R rounds, each running ours and the baseline
# (ours first in odd rounds, the baseline first in even ones), then the
# medians. Four figures, each as ours / raw:
#
#   Put 8 B   gex_rma_bench put-latency, blocking, in-segment, 8 B (us/op)
#             / fi_raw_bench put8 (one 8-byte fi_writemsg, waited for)
#   Get 8 B   get-latency, the same row / fi_raw_bench get8
#   AM flood  gex_bench flood-oneway, Medium 8 B (us per message, as ns)
#             / fi_raw_bench flood (24-byte fi_injects, ns per message)
#   Put 4 MiB gex_rma_bench put-bandwidth, blocking, in-segment, 4 MiB
#             (MB/s) / fi_raw_bench put-bw (4 MiB writes, 8 in flight)
#
# For the latencies and the flood a ratio above 1 means ours is slower; for
# the bandwidth a ratio below 1 does. Every run has two processes on this
# host, GASNET_SUPERNODE_MAXSIZE=1 (all our traffic through libfabric) and
# the provider pinned to loopback.
#
# Build first (optimised, as benchmarks are measured):
#   bazel build --config=opt //tools:gex_bench_ofi //tools:gex_rma_bench_ofi \
#       //tools:gasnetrun_ofi //tests/benchmarks:fi_raw_bench
# then, from the workspace root:
#   tests/benchmarks/ofi_vs_raw.sh [-p 'tcp;ofi_rxm'] [-r 5]
# Not a test: the figures depend on the machine and what else runs on it.
set -euo pipefail

me="ofi_vs_raw"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# die, run, need, ratio, median, range (shared with the other same-run
# script).
# shellcheck source=tests/benchmarks/same_run.sh
. "$root/tests/benchmarks/same_run.sh"

usage() {
  cat <<EOF
usage: $0 [options]
  -p PROVIDER  libfabric provider: 'tcp;ofi_rxm' (default), sockets,
               'udp;ofi_rxd', shm (with FI_SHM_DISABLE_CMA=1 unless set)
  -d DOMAIN    domain/device (default: lo for udp;ofi_rxd, else the first)
  -r ROUNDS    rounds, each ours and the baseline (default 5)
  -i N         iterations per measurement (default 10000; the 4 MiB Puts
               get N * 16K / 4M, as in gex_rma_bench)
  -w N         warm-up operations per measurement (default 1000)
  -B DIR       where the binaries are (default: <workspace>/bazel-bin)
  -t SECONDS   limit for each program run (default 300)
  -k           keep every run's output and CSV (the directory is named)
  -h           this text
EOF
}

provider='tcp;ofi_rxm'
domain=""
rounds=5
iterations=10000
warmup=1000
bin_dir="$root/bazel-bin"
limit=300
keep=0
while getopts ":p:d:r:i:w:B:t:kh" opt; do
  case "$opt" in
    p) provider="$OPTARG" ;;
    d) domain="$OPTARG" ;;
    r) rounds="$OPTARG" ;;
    i) iterations="$OPTARG" ;;
    w) warmup="$OPTARG" ;;
    B) bin_dir="$OPTARG" ;;
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
for pair in "-r:$rounds" "-i:$iterations" "-t:$limit"; do
  [[ "${pair#*:}" =~ ^[1-9][0-9]*$ ]] ||
    { echo "$me: ${pair%%:*}: '${pair#*:}' is not a positive integer" >&2; exit 2; }
done
[[ "$warmup" =~ ^[0-9]+$ ]] ||
  { echo "$me: -w: '$warmup' is not a non-negative integer" >&2; exit 2; }

# ---- binaries ----------------------------------------------------------------
build_cmd="bazel build --config=opt //tools:gex_bench_ofi //tools:gex_rma_bench_ofi //tools:gasnetrun_ofi //tests/benchmarks:fi_raw_bench"
gasnetrun="$bin_dir/tools/gasnetrun_ofi"
rma_bench="$bin_dir/tools/gex_rma_bench_ofi"
am_bench="$bin_dir/tools/gex_bench_ofi"
raw_bench="$bin_dir/tests/benchmarks/fi_raw_bench"
for b in "$gasnetrun" "$rma_bench" "$am_bench" "$raw_bench"; do
  [[ -x "$b" ]] ||
    die "missing $b (build it from $root with: $build_cmd; or point -B at the binaries)"
done
command -v timeout >/dev/null || die "needs timeout (coreutils)"

# ---- the environment of every run ----------------------------------------------
export GASNET_SUPERNODE_MAXSIZE=1
export FI_PROVIDER="$provider"
export FI_TCP_IFACE="${FI_TCP_IFACE:-lo}"
export FI_SOCKETS_IFACE="${FI_SOCKETS_IFACE:-lo}"
case "$provider" in
  "udp;ofi_rxd") domain="${domain:-lo}" ;;
  shm) export FI_SHM_DISABLE_CMA="${FI_SHM_DISABLE_CMA:-1}" ;;
esac
raw_domain=()
if [[ -n "$domain" ]]; then
  export GASNET_OFI_DEVICE="$domain"
  raw_domain=(-d "$domain")
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/ofi_vs_raw.XXXXXX")"
cleanup() {
  if ((keep)); then
    echo "$me: outputs kept in $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

run_ours() {
  local r="$1" csv
  csv="$work/rma_$r.csv"
  run "ours_rma_$r" "$gasnetrun" -n 2 "$rma_bench" \
    -t put-latency,get-latency,put-bandwidth -s blocking -l in-segment \
    --latency-min 8 --latency-max 8 --bandwidth-min 4M --bandwidth-max 4M \
    -i "$iterations" -w "$warmup" --csv "$csv"
  # test,sync,local,size,iterations,usec_per_op,mbytes_per_sec,...
  ours_put[r]="$(awk -F, '$1=="put-latency" && $2=="blocking" && $3=="in-segment" && $4==8 {printf "%.3f", $6}' "$csv")"
  ours_get[r]="$(awk -F, '$1=="get-latency" && $2=="blocking" && $3=="in-segment" && $4==8 {printf "%.3f", $6}' "$csv")"
  ours_bw[r]="$(awk -F, '$1=="put-bandwidth" && $2=="blocking" && $3=="in-segment" && $4==4194304 {printf "%.1f", $7}' "$csv")"
  need "ours_rma_$r" "${ours_put[r]}" "8-byte blocking in-segment put-latency row"
  need "ours_rma_$r" "${ours_get[r]}" "8-byte blocking in-segment get-latency row"
  need "ours_rma_$r" "${ours_bw[r]}" "4 MiB blocking in-segment put-bandwidth row"

  csv="$work/am_$r.csv"
  run "ours_am_$r" "$gasnetrun" -n 2 "$am_bench" -t flood-oneway -c medium \
    -m 8 -i "$iterations" -w "$warmup" --csv "$csv"
  # test,category,size,iterations,usec_per_op,...: us per message -> ns
  ours_flood[r]="$(awk -F, '$1=="flood-oneway" && $2=="medium" && $3==8 {printf "%.1f", $5 * 1000}' "$csv")"
  need "ours_am_$r" "${ours_flood[r]}" "flood-oneway Medium 8 B row"
}

raw_figure() {  # raw_figure NAME TEST KEY
  sed -n "s/^fi_raw_bench $2 $3=\([0-9.e+-]*\).*/\1/p" "$work/$1.out" | head -n 1
}

run_raw() {
  local r="$1"
  run "raw_$r" "$raw_bench" -p "$provider" "${raw_domain[@]}" \
    -i "$iterations" -w "$warmup" -t put8,get8,flood,put-bw -T "$limit"
  raw_put[r]="$(raw_figure "raw_$r" put8 usec_per_op)"
  raw_get[r]="$(raw_figure "raw_$r" get8 usec_per_op)"
  raw_flood[r]="$(raw_figure "raw_$r" flood ns_per_msg)"
  raw_bw[r]="$(raw_figure "raw_$r" put-bw mbytes_per_sec)"
  need "raw_$r" "${raw_put[r]}" "put8 line"
  need "raw_$r" "${raw_get[r]}" "get8 line"
  need "raw_$r" "${raw_flood[r]}" "flood line"
  need "raw_$r" "${raw_bw[r]}" "put-bw line"
  raw_completion="$(sed -n 's/^fi_raw_bench put8 .*completion=\([a-z]*\).*/\1/p' "$work/raw_$r.out")"
  raw_info="$(sed -n 's/^fi_raw_bench info //p' "$work/raw_$r.out")"
}

declare -a ours_put ours_get ours_flood ours_bw raw_put raw_get raw_flood raw_bw
declare -a r_put r_get r_flood r_bw
raw_completion=""
raw_info=""

echo "$me: provider $provider${domain:+, domain $domain}, $rounds round(s), -i $iterations -w $warmup"
echo "$me: binaries in $bin_dir (build with --config=opt for figures worth quoting)"
for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then
    run_ours "$r"
    run_raw "$r"
  else
    run_raw "$r"
    run_ours "$r"
  fi
  r_put[r]="$(ratio "${ours_put[r]}" "${raw_put[r]}")"
  r_get[r]="$(ratio "${ours_get[r]}" "${raw_get[r]}")"
  r_flood[r]="$(ratio "${ours_flood[r]}" "${raw_flood[r]}")"
  r_bw[r]="$(ratio "${ours_bw[r]}" "${raw_bw[r]}")"
  if ((r == 1)); then echo "raw: $raw_info"; fi
  printf 'round %d (%s first): put8 %s / %s us = %sx | get8 %s / %s us = %sx | flood %s / %s ns/msg = %sx | put 4 MiB %s / %s MB/s = %sx\n' \
    "$r" "$( ((r % 2)) && echo ours || echo raw)" \
    "${ours_put[r]}" "${raw_put[r]}" "${r_put[r]}" \
    "${ours_get[r]}" "${raw_get[r]}" "${r_get[r]}" \
    "${ours_flood[r]}" "${raw_flood[r]}" "${r_flood[r]}" \
    "${ours_bw[r]}" "${raw_bw[r]}" "${r_bw[r]}"
done

echo
echo "medians over $rounds round(s), ours / raw (ratio: the median of the per-round ratios, then their range):"
line() {  # line LABEL UNIT OURS_ARRAY RAW_ARRAY RATIO_ARRAY NOTE
  local -n o="$3" w="$4" q="$5"
  printf '  %-28s ours %10s  raw %10s %-6s  ours/raw %sx (%s)  %s\n' "$1" \
    "$(median "${o[@]}")" "$(median "${w[@]}")" "$2" \
    "$(median "${q[@]}")" "$(range "${q[@]}")" "$6"
}
line "Put 8 B blocking latency" "us" ours_put raw_put r_put "(>1: ours slower; raw write completion: $raw_completion)"
line "Get 8 B blocking latency" "us" ours_get raw_get r_get "(>1: ours slower)"
line "AM flood one-way, per msg" "ns" ours_flood raw_flood r_flood "(>1: ours slower; Medium 8 B vs 24-byte inject)"
line "Put 4 MiB bandwidth" "MB/s" ours_bw raw_bw r_bw "(<1: ours slower)"
