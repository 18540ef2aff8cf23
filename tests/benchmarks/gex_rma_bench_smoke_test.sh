#!/bin/bash
# Smoke test of gex_rma_bench (//tools:gex_rma_bench_smp) as users run it,
# under gasnetrun_smp: tiny iteration counts and sizes, so it checks that
# every measurement runs and is reported, never how fast.
#   1. 2 ranks, every test x sync x local buffer: exit 0, a table per test,
#      the summary's ratio lines, a CSV with a row for every combination.
#   2. The same over the AM engine (GEX_RMA_FORCE_AM=1) at 3 ranks (the
#      odd rank idles): the NB and NBI paths with real events.
#   3. -h exits 0 with the usage; bad options exit 2 naming them.
# Usage: gex_rma_bench_smoke_test.sh GASNETRUN_SMP GEX_RMA_BENCH_SMP
set -u
run="$1"
bench="$2"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# Runs the benchmark as a job; sets $out and $rc.
job() {
  local ranks=$1
  shift
  out="$("$run" -n "$ranks" "$bench" "$@" 2>&1)"
  rc=$?
  echo "--- gasnetrun_smp -n $ranks gex_rma_bench_smp $* (exit $rc)"
  echo "$out"
}

tests="put-latency get-latency put-bandwidth get-bandwidth"
header="test,sync,local,size,iterations,usec_per_op,mbytes_per_sec,memcpy_usec_per_op,ratio_to_memcpy"

# Checks $out and the CSV $1 of a run with latency sizes 1..16 and
# bandwidth sizes 1K..4K (iterations $2).
check_run() {
  local csv=$1 iters=$2
  for t in $tests; do
    grep -q "^== $t: " <<<"$out" || fail "no table for $t"
  done
  for op in Put Get; do
    for l in in-segment out-of-segment; do
      grep -qE "^  $op 8 B blocking, $l: [0-9.]+ ns = [0-9.]+x memcpy \([0-9.]+ ns\)" \
        <<<"$out" || fail "no $op 8 B $l latency summary line"
      for s in blocking nbi nb; do
        grep -qE "^  $op 4096 B bandwidth, $s, $l: [0-9]+ MB/s = [0-9.]+x memcpy" \
          <<<"$out" || fail "no $op 4096 B $s $l bandwidth summary line"
      done
    done
  done
  if [[ ! -s "$csv" ]]; then
    fail "no CSV written to $csv"
    return
  fi
  [[ "$(head -n 1 "$csv")" == "$header" ]] || fail "CSV header is not $header"
  local row="[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+"
  for l in in-segment out-of-segment; do
    for t in put-latency get-latency; do
      for s in blocking nbi; do
        # Sizes 1, 2, 4, 8, 16.
        n=$(grep -cE "^$t,$s,$l,[0-9]+,$iters,$row$" "$csv")
        [[ $n -eq 5 ]] || fail "$t $s $l: $n CSV rows, want 5"
      done
      grep -qE "^$t,nb," "$csv" && fail "$t has an nb row (latency has none)"
    done
    for t in put-bandwidth get-bandwidth; do
      for s in blocking nbi nb; do
        # Sizes 1024, 2048, 4096.
        n=$(grep -cE "^$t,$s,$l,(1024|2048|4096),$iters,$row$" "$csv")
        [[ $n -eq 3 ]] || fail "$t $s $l: $n CSV rows, want 3"
      done
    done
  done
  rows=$(($(wc -l <"$csv") - 1))
  # 2 locals x (2 latency tests x 2 syncs x 5 + 2 bandwidth x 3 syncs x 3).
  [[ $rows -eq 76 ]] || fail "CSV has $rows rows, want 76"
}

sizes=(--latency-max 16 --bandwidth-min 1K --bandwidth-max 4K)

# ---- 1. two ranks, direct path ----------------------------------------------
job 2 -i 20 -w 2 "${sizes[@]}" --csv "$tmp/direct.csv"
[[ $rc -eq 0 ]] || fail "2-rank run exited $rc"
check_run "$tmp/direct.csv" 20

# ---- 2. three ranks, every operation over Active Messages -------------------
out="$(GEX_RMA_FORCE_AM=1 "$run" -n 3 "$bench" -i 10 -w 1 "${sizes[@]}" \
  --csv "$tmp/am.csv" 2>&1)"
rc=$?
echo "--- GEX_RMA_FORCE_AM=1 gasnetrun_smp -n 3 (exit $rc)"
echo "$out"
[[ $rc -eq 0 ]] || fail "forced-AM run exited $rc"
grep -q "the last rank idles" <<<"$out" || fail "no idle-rank note at 3 ranks"
check_run "$tmp/am.csv" 10

# ---- 3. help and bad options ------------------------------------------------
job 2 -h
[[ $rc -eq 0 ]] || fail "-h exited $rc"
grep -q -- '--bandwidth-max' <<<"$out" || fail "-h printed no usage"

job 2 --bogus
[[ $rc -eq 2 ]] || fail "a bad option exited $rc, want 2"
grep -q "unknown option '--bogus'" <<<"$out" || fail "bad option not named"

job 2 --sync sometimes
[[ $rc -eq 2 ]] || fail "--sync sometimes exited $rc, want 2"
grep -q "unknown name 'sometimes'" <<<"$out" || fail "bad sync not named"

job 1
[[ $rc -eq 2 ]] || fail "1 rank exited $rc, want 2"
grep -q "needs at least 2 ranks" <<<"$out" || fail "1 rank: no reason given"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo PASS
