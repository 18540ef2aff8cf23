#!/usr/bin/env bash
# Fails when api/include/gex_am_calls.h is not what api/gen/gen_am_calls.py
# writes today (someone edited the generated header, or the generator
# without regenerating). Fix: python3 api/gen/gen_am_calls.py >
# api/include/gex_am_calls.h
set -euo pipefail
gen="$1"
header="$2"
if ! diff -u "$header" <(python3 "$gen"); then
  echo "gex_am_calls.h is stale: run python3 api/gen/gen_am_calls.py > api/include/gex_am_calls.h" >&2
  exit 1
fi
echo "gex_am_calls.h matches its generator"
