#!/bin/bash
# Smoke test of ratomic_benchmark: a 2-rank job (GASNET_PSHM_NODES=2) with
# tiny counts reports every measurement and ratio and exits 0; a 1-rank job
# and an unknown option exit 2 saying why. No timing is checked.
set -u
bin="$1"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

out="$(GASNET_PSHM_NODES=2 "$bin" --iters 200 --trials 3 2>&1)"
rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "the 2-rank job exited $rc"
for what in "ping-pong raw" "ping-pong gex " "ping-pong gex-am" \
  "uncontended fetch-add raw" "uncontended fetch-add gex"; do
  grep -qE "^${what}.* min +[0-9.]+ +median +[0-9.]+ ns/(hop|op)$" <<<"$out" ||
    fail "no result for '${what}'"
done
grep -qE "^ratio fetch-add ping-pong: gex/raw = [0-9.]+ \(min\) [0-9.]+ \(median\)" <<<"$out" ||
  fail "no ping-pong ratio line"
grep -qE "^ratio fetch-add ping-pong over AMs: gex-am/raw = [0-9.]+" <<<"$out" ||
  fail "no AM ratio line"
grep -qE "^ratio uncontended fetch-add: gex/raw = [0-9.]+ " <<<"$out" ||
  fail "no uncontended ratio line"

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
