#!/usr/bin/env bash
# job_size_test.sh CONDUIT LAUNCHER CLIENT: what the job's size costs one
# rank, from the conduit's own stats line (GASNET_<CONDUIT>_STATS=1), at 2,
# 4 and 8 ranks of gex_scale (every message through the conduit, except on
# smp, whose ranks share one supernode). Counts, not times:
#   - every rank prints one stats line, with `peers` = N-1;
#   - connected_peers (and, on ucx, endpoints and rkeys) = N-1 on ucx
#     (static connections), 0 on smp;
#   - the bytes that grow with the job (ucx: conduit_bytes; smp:
#     pshm_region_bytes; smp's conduit_bytes must stay 0) grow linearly:
#     the cost of one more peer from 4 to 8 ranks is no more than from 2
#     to 4 (plus a little slack), so O(N) state per peer (O(N^2) per job)
#     fails, and one peer costs at most PER_PEER_LIMIT bytes.
set -u
conduit=$1 launcher=$2 client=$3
fail() {
  echo "FAIL: $*"
  exit 1
}
case $conduit in
  smp)
    grow=pshm_region_bytes
    per_peer_limit=4096  # two channels' queues of 8 cache-line slots
    env=(GASNET_SMP_STATS=1)
    ;;
  ucx)
    grow=conduit_bytes
    per_peer_limit=1024  # an endpoint, a segment entry, an address, a key
    env=(GASNET_UCX_STATS=1 GASNET_SUPERNODE_MAXSIZE=1 GASNET_UCX_TLS=tcp
      GASNET_UCX_NET_DEVICES=lo UCX_NET_DEVICES=lo)
    ;;
  *) fail "no stats checks for conduit '$conduit'" ;;
esac
# Nothing from the caller's environment may change the job.
for v in $(compgen -e); do
  case $v in GASNET_* | UCX_* | FI_*) unset "$v" ;; esac
done
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/job_size.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT

declare -A bytes
for n in 2 4 8; do
  out=$work/$n.out
  if ! env "${env[@]}" timeout -k 5 60 "$launcher" -n "$n" "$client" -i 2 \
    </dev/null >"$out" 2>"$work/$n.err"; then
    cat "$work/$n.err"
    fail "$n ranks: the job failed"
  fi
  # One "scale:" line per rank from rank 0: the benchmark ran to its end.
  scale_lines=$(grep -c "^scale: rank " "$out")
  [ "$scale_lines" -eq "$n" ] ||
    fail "$n ranks: $scale_lines scale lines, expected $n"
  # field VALUE of each rank's stats line, one "rank value" per line
  field() {
    awk -v c="$conduit:" -v f="$1" '
      $1 == c && $2 == "rank" {
        r = $3; sub(/:$/, "", r)
        for (i = 4; i < NF; i++) if ($i == f) { print r, $(i + 1); next }
        print r, "missing"
      }' "$out"
  }
  ranks=$(field peers | wc -l)
  [ "$ranks" -eq "$n" ] || fail "$n ranks: $ranks $conduit stats lines"
  expect() {  # field value
    local bad
    bad=$(field "$1" | awk -v want="$2" '$2 != want')
    [ -z "$bad" ] || fail "$n ranks: $1 should be $2 on every rank; got: $bad"
  }
  expect peers $((n - 1))
  if [ "$conduit" = ucx ]; then
    expect connected_peers $((n - 1))
    expect endpoints $((n - 1))
    expect rkeys $((n - 1))
  else
    expect connected_peers 0
    expect conduit_bytes 0
    expect supernode_peers $((n - 1))
  fi
  # The largest over ranks (rank 0 also gathers the figures: a rank's
  # pools may differ by what it received).
  bytes[$n]=$(field "$grow" | awk '$2 > m { m = $2 } END { print m + 0 }')
  echo "$n ranks: $grow (largest over ranks) ${bytes[$n]}"
done
first=$(((bytes[4] - bytes[2]) / 2))
second=$(((bytes[8] - bytes[4]) / 4))
echo "per peer: $first bytes from 2 to 4 ranks, $second from 4 to 8"
[ "$second" -le $((first + first / 4 + 64)) ] ||
  fail "$grow grows faster than the job: $second bytes per peer from 4 to 8 ranks, $first from 2 to 4 (state per peer that grows with N)"
[ "$second" -le "$per_peer_limit" ] ||
  fail "$grow: $second bytes per peer, over $per_peer_limit"
echo "PASS"
