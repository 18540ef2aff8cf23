#!/bin/bash
# Smoke test of gex_par_bench (//tools:gex_par_bench_smp, GASNET_PAR) as
# users run it, under gasnetrun_smp, with tiny counts: it checks that every
# thread count runs to the end with exact counts (the program itself checks
# each thread's replies and each rank's served requests, and exits 1 on a
# mismatch), never how fast (no timing is checked). 2 ranks with 8 threads
# each are 16 waiting threads on this machine's CPUs: the oversubscribed
# waits are exercised too.
#   1. 2 ranks, threads 1,2,4,8, 2 rounds: exit 0, a line per (round, T),
#      the summary with every T, "counts exact on every rank".
#   2. --wait poll (the client's own gex_AM_Poll loop); 3 ranks (the last
#      one with itself).
#   3. -h exits 0 with the usage; bad options and 1 rank exit 2.
# Usage: gex_par_bench_smoke_test.sh GASNETRUN_SMP GEX_PAR_BENCH_SMP
set -u
run="$1"
bench="$2"
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
  echo "--- gasnetrun_smp -n $ranks gex_par_bench_smp $* (exit $rc)"
  echo "$out"
}

# ---- 1. two ranks, every thread count ---------------------------------------
job 2 -i 300 -w 20 --threads 1,2,4,8 --rounds 2
[[ $rc -eq 0 ]] || fail "2-rank run exited $rc"
grep -q 'conduit SMP, PAR' <<<"$out" || fail "no header naming SMP and PAR"
for round in 0 1; do
  for t in 1 2 4 8; do
    grep -qE "^  round $round: T=$t: $((t * 300)) round trips per rank in [0-9.]+ s \([0-9.]+ us each per thread\) = [0-9.]+x T=1$" \
      <<<"$out" || fail "no line for round $round T=$t"
  done
done
grep -qE '^summary \(median of 2 round\(s\)\): T=1 [0-9.]+ s 1\.00x; T=2 [0-9.]+ s [0-9.]+x; T=4 [0-9.]+ s [0-9.]+x; T=8 [0-9.]+ s [0-9.]+x;$' \
  <<<"$out" || fail "no summary line"
grep -q '^counts exact on every rank$' <<<"$out" || fail "counts not exact"

# ---- 2. the client's own poll loop; an odd rank out --------------------------
job 2 -i 200 -w 0 --threads 3 --wait poll
[[ $rc -eq 0 ]] || fail "--wait poll exited $rc"
grep -q 'waiting with gex_AM_Poll' <<<"$out" || fail "--wait poll not named"
grep -q '^counts exact on every rank$' <<<"$out" || fail "poll: counts not exact"

job 3 -i 200 -w 5 --threads 2,1
[[ $rc -eq 0 ]] || fail "3-rank run exited $rc"
grep -q 'the last with itself' <<<"$out" || fail "3 ranks: no loopback line"
grep -q '^counts exact on every rank$' <<<"$out" || fail "3 ranks: counts not exact"

# ---- 3. help and bad options ------------------------------------------------
job 2 -h
[[ $rc -eq 0 ]] || fail "-h exited $rc"
grep -q -- '--threads LIST' <<<"$out" || fail "-h printed no usage"

job 2 --bogus
[[ $rc -eq 2 ]] || fail "a bad option exited $rc, want 2"
grep -q "unknown option '--bogus'" <<<"$out" || fail "bad option not named"

for bad in 0 65 1,x ""; do
  job 2 --threads "$bad"
  [[ $rc -eq 2 ]] || fail "--threads '$bad' exited $rc, want 2"
  grep -q -- "--threads: '$bad' is not a list of thread counts" <<<"$out" ||
    fail "--threads '$bad' not named"
done

job 2 --wait sometimes
[[ $rc -eq 2 ]] || fail "--wait sometimes exited $rc, want 2"

job 2 -i 0
[[ $rc -eq 2 ]] || fail "-i 0 exited $rc, want 2"

job 1 -i 10
[[ $rc -eq 2 ]] || fail "1 rank exited $rc, want 2"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo PASS
