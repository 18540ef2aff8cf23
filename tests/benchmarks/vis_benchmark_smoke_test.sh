#!/bin/bash
# Smoke test of vis_benchmark: a 2-rank job (GASNET_PSHM_NODES=2) with tiny
# counts reports every measurement and ratio and exits 0; a 1-rank job and
# an unknown option exit 2 saying why. No timing is checked.
set -u
bin="$1"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

out="$(GASNET_PSHM_NODES=2 "$bin" --bytes 131072 --iters 2 --trials 3 2>&1)"
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "the 2-rank job exited $rc"
for e in 64 256 1024 4096; do
  for what in contiguous strided strided-2lv padded raw-strided; do
    grep -qE "^E=${e} +${what} +min +[0-9.]+ +median +[0-9.]+ GB/s$" <<<"$out" ||
      fail "no result for E=${e} ${what}"
  done
  grep -qE "^ratio strided/contiguous E=${e}: [0-9.]+ \(min\) [0-9.]+ \(median\); 2-level [0-9.]+ \(min\) [0-9.]+ \(median\); padded [0-9.]+ \(min\) [0-9.]+ \(median\); strided/raw-strided [0-9.]+ \(min\) [0-9.]+ \(median\)$" <<<"$out" ||
    fail "no ratio line for E=${e}"
done

out="$(GASNET_PSHM_NODES=1 "$bin" 2>&1)"
rc=$?
echo "$out"
[[ $rc -eq 2 ]] || fail "a 1-rank job exited $rc, want 2"
grep -q "run it as 2 ranks" <<<"$out" || fail "the 1-rank job did not say why"

out="$(GASNET_PSHM_NODES=2 "$bin" --bogus 2>&1)"
rc=$?
echo "$out"
[[ $rc -eq 2 ]] || fail "a bad option exited $rc, want 2"
grep -q "unknown argument" <<<"$out" || fail "the bad option was not named"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo PASS
