#!/bin/bash
# Smoke test of cpp_api_benchmark: a 2-rank job (GASNET_PSHM_NODES=2) runs
# every benchmark once, briefly; each must report a result, every pair its
# C++/C ratio line, none an error, and the job must exit 0. Also: a job of
# the wrong size exits 2 saying so. No timing is checked.
set -u
bin="$1"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

out="$(GASNET_PSHM_NODES=2 "$bin" --benchmark_min_time=0.01 2>&1)"
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "the 2-rank job exited $rc"
grep -q "ERROR OCCURRED" <<<"$out" && fail "a benchmark reported an error"
for what in Put8 Get8 PutNB8 PutNBI8 AmShort AmMedium8; do
  for side in C Cpp; do
    grep -qE "^BM_${what}_${side}/real_time +[0-9.]+ ns" <<<"$out" ||
      fail "no result for BM_${what}_${side}"
  done
  grep -qE "^ratio ${what}: C\+\+/C = [0-9.]+ " <<<"$out" ||
    fail "no ratio line for ${what}"
done

out="$(GASNET_PSHM_NODES=1 "$bin" 2>&1)"
rc=$?
echo "$out"
[[ $rc -eq 2 ]] || fail "a 1-rank job exited $rc, want 2"
grep -q "run it as 2 ranks" <<<"$out" || fail "the 1-rank job did not say why"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo PASS
