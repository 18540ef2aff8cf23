#!/bin/bash
# Smoke test of gex_bench (//tools:gex_bench_smp) as users run it, under
# gasnetrun_smp: tiny iteration counts and sizes, so it checks that every
# measurement runs and is reported, never how fast (no timing is checked).
#   1. 2 ranks, every test and category: exit 0, the baseline and ratio
#      lines, a CSV with the header and a row for every (test, category),
#      flood-short-oneway's Short/Medium ratio line and its two rows.
#   2. 4 ranks (two pairs): pair 2-3's rows reach rank 0's CSV; 3 ranks
#      (the last one idles) end too.
#   3. -h exits 0 with the usage; a bad option exits 2 naming it.
# Usage: gex_bench_smoke_test.sh GASNETRUN_SMP GEX_BENCH_SMP
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
  echo "--- gasnetrun_smp -n $ranks gex_bench_smp $* (exit $rc)"
  echo "$out"
}

# ---- 1. two ranks, everything ----------------------------------------------
csv="$tmp/two.csv"
job 2 -i 20 -w 2 --max-size 64 --csv "$csv"
[[ $rc -eq 0 ]] || fail "2-rank run exited $rc"
grep -qE '^baseline: cache-line ping-pong round trip, ranks 0-1: [0-9.]+ us' \
  <<<"$out" || fail "no baseline line"
grep -qE 'AM Medium 8 B round trip: [0-9.]+ us = [0-9.]+x cache-line \([0-9.]+ us\)' \
  <<<"$out" || fail "no Medium 8 B ratio line"
grep -qE 'AM Short 0 B round trip: [0-9.]+ us = [0-9.]+x cache-line' \
  <<<"$out" || fail "no Short ratio line"
grep -qE 'AM Medium 8 B flood one-way: [0-9.]+ us/msg' <<<"$out" ||
  fail "no flood one-way line"
for t in pingpong-reqrep pingpong-reqreq flood-oneway flood-roundtrip twoway \
  flood-short-oneway; do
  grep -q "^== $t: " <<<"$out" || fail "no table for $t"
done
grep -qE '^  Short 0 B / Medium 8 B: [0-9.]+x \(median of 9 alternating rounds' \
  <<<"$out" || fail "no flood-short-oneway ratio line"
grep -qE 'AM flood one-way, handler only counts: Short 0 B [0-9.]+ us/msg, Medium 8 B [0-9.]+ us/msg, Short/Medium = [0-9.]+x' \
  <<<"$out" || fail "no flood-short-oneway summary line"

header="test,category,size,iterations,usec_per_op,mbytes_per_sec,ratio_to_cacheline,pair"
if [[ ! -s "$csv" ]]; then
  fail "no CSV written to $csv"
else
  echo "--- $csv"
  cat "$csv"
  [[ "$(head -n 1 "$csv")" == "$header" ]] || fail "CSV header is not $header"
  grep -qE '^baseline,cacheline,64,[0-9]+,[0-9.]+,[0-9.]+,1\.000,0-1$' "$csv" ||
    fail "no baseline row"
  for t in pingpong-reqrep pingpong-reqreq flood-oneway flood-roundtrip twoway; do
    for c in short medium long; do
      grep -qE "^$t,$c,0,20," "$csv" || fail "no CSV row for $t $c size 0"
    done
    for c in medium long; do
      # Sizes 0, 1, 2, ..., 64: 8 rows, each with 20 iterations.
      n=$(grep -cE "^$t,$c,[0-9]+,20,[0-9.]+,[0-9.]+,[0-9.]*,0-1$" "$csv")
      [[ $n -eq 8 ]] || fail "$t $c: $n CSV rows, want 8 (sizes 0..64)"
    done
  done
  # flood-short-oneway: Short 0 B and Medium 8 B, whatever --max-size says.
  grep -qE '^flood-short-oneway,short,0,20,[0-9.]+,0\.000,[0-9.]*,0-1$' "$csv" ||
    fail "no CSV row for flood-short-oneway short"
  grep -qE '^flood-short-oneway,medium,8,20,[0-9.]+,[0-9.]+,[0-9.]*,0-1$' "$csv" ||
    fail "no CSV row for flood-short-oneway medium"
  rows=$(($(wc -l <"$csv") - 1))
  # 1 baseline + 5 tests x (1 short + 8 medium + 8 long) + 2.
  [[ $rows -eq 88 ]] || fail "CSV has $rows rows, want 88"
fi

# ---- 2. two pairs -----------------------------------------------------------
csv4="$tmp/four.csv"
job 4 -i 10 -w 1 --max-size 8 --tests pingpong-reqrep,twoway,flood-short-oneway \
  --categories short,medium --csv "$csv4"
[[ $rc -eq 0 ]] || fail "4-rank run exited $rc"
grep -q '^== every pair, us/op ==' <<<"$out" || fail "no per-pair table"
if [[ -s "$csv4" ]]; then
  cat "$csv4"
  for pair in 0-1 2-3; do
    # baseline + 2 tests x (1 short + 5 medium: 0,1,2,4,8) + 2.
    n=$(grep -c ",$pair\$" "$csv4")
    [[ $n -eq 15 ]] || fail "pair $pair: $n CSV rows, want 15"
    grep -q "^flood-short-oneway,medium,8,10,.*,$pair\$" "$csv4" ||
      fail "pair $pair: no flood-short-oneway Medium row"
  done
else
  fail "no CSV from the 4-rank run"
fi

job 3 -i 10 -w 1 --tests flood-short-oneway
[[ $rc -eq 0 ]] || fail "3-rank run exited $rc"
grep -q 'the last rank idles' <<<"$out" || fail "3 ranks: no idle rank line"
grep -qE '^  Short 0 B / Medium 8 B: [0-9.]+x' <<<"$out" ||
  fail "3 ranks: no flood-short-oneway ratio line"

# ---- 3. help and bad options ------------------------------------------------
job 2 -h
[[ $rc -eq 0 ]] || fail "-h exited $rc"
grep -q -- '--max-size' <<<"$out" || fail "-h printed no usage"

job 2 --bogus
[[ $rc -eq 2 ]] || fail "a bad option exited $rc, want 2"
grep -q "unknown option '--bogus'" <<<"$out" || fail "bad option not named"

job 2 -i 0
[[ $rc -eq 2 ]] || fail "-i 0 exited $rc, want 2"

job 2 --tests nosuchtest
[[ $rc -eq 2 ]] || fail "--tests nosuchtest exited $rc, want 2"
grep -q "unknown name 'nosuchtest'" <<<"$out" || fail "bad test not named"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo PASS
