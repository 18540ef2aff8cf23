#!/bin/bash
# Smoke test of fi_raw_bench: every test, briefly, over tcp;ofi_rxm and
# sockets pinned to loopback. Each run must exit 0 and print its info line
# and one line per test with a positive figure; bad options must exit 2
# with a message naming the option. No timing is checked.
set -u
bin="$1"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# check_figure OUTPUT TEST KEY: the line "fi_raw_bench TEST KEY=V ..." is
# there and V is a positive number.
check_figure() {
  local out="$1" test="$2" key="$3" value
  value="$(sed -n "s/^fi_raw_bench ${test} ${key}=\([0-9.e+-]*\)\( .*\)\{0,1\}\$/\1/p" \
    <<<"$out" | head -n 1)"
  if [[ -z "$value" ]]; then
    fail "$label: no '${test} ${key}=' line"
  elif ! awk -v v="$value" 'BEGIN { exit !(v + 0 > 0) }'; then
    fail "$label: ${test} ${key}=${value} is not positive"
  fi
}

run_provider() {
  local label="$1"
  shift
  local out rc
  out="$(env "$@" 2>&1)"
  rc=$?
  echo "== $label"
  echo "$out"
  [[ $rc -eq 0 ]] || fail "$label: exited $rc"
  grep -qE '^fi_raw_bench info provider=' <<<"$out" ||
    fail "$label: no info line"
  check_figure "$out" put8 usec_per_op
  check_figure "$out" get8 usec_per_op
  check_figure "$out" flood ns_per_msg
  check_figure "$out" put-bw mbytes_per_sec
  grep -qE '^fi_raw_bench put8 .* completion=(delivery|transmit|default)' \
    <<<"$out" || fail "$label: put8 does not say which completion it used"
}

# 4 MiB writes as in real runs, but few of everything.
common=(-i 300 -w 30 -T 25)
run_provider "tcp;ofi_rxm" FI_TCP_IFACE=lo "$bin" -p 'tcp;ofi_rxm' "${common[@]}"
run_provider "sockets" FI_SOCKETS_IFACE=lo "$bin" -p sockets "${common[@]}"
# FI_PROVIDER instead of -p, and a test subset in another order.
out="$(FI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=lo "$bin" -t flood,get8 \
  -i 100 -w 0 -T 25 2>&1)"
rc=$?
echo "== FI_PROVIDER, -t flood,get8"
echo "$out"
[[ $rc -eq 0 ]] || fail "FI_PROVIDER run exited $rc"
[[ "$(grep -c '^fi_raw_bench \(flood\|get8\|put8\|put-bw\) ' <<<"$out")" == 2 ]] ||
  fail "-t flood,get8 did not print exactly two test lines"
grep -q '^fi_raw_bench info provider=tcp;ofi_rxm ' <<<"$out" ||
  fail "FI_PROVIDER='tcp;ofi_rxm' was not used"

# bad_option WANT_TEXT ARGS...: exits 2 and names the option.
bad_option() {
  local want="$1"
  shift
  local out rc
  out="$("$bin" "$@" 2>&1)"
  rc=$?
  echo "== bad option: $* -> $out"
  [[ $rc -eq 2 ]] || fail "'$*' exited $rc, want 2"
  grep -qF -- "$want" <<<"$out" || fail "'$*' did not name $want: $out"
}
bad_option "-x" -x
bad_option "-i" -i abc
bad_option "-i" -i 0
bad_option "-t" -t put8,nope
bad_option "nope" -t nope
bad_option "-S" -S 4Q
bad_option "-W" -W 0
bad_option "-T" -T
bad_option "stray" stray

# An unknown provider is a failure (1) with libfabric's reason.
out="$("$bin" -p no_such_provider -T 25 2>&1)"
rc=$?
echo "== unknown provider -> $out"
[[ $rc -eq 1 ]] || fail "an unknown provider exited $rc, want 1"
grep -q 'fi_getinfo.*no_such_provider' <<<"$out" ||
  fail "an unknown provider was not reported by fi_getinfo"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo PASS
