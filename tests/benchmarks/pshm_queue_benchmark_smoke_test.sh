#!/bin/bash
# Smoke test of pshm_queue_benchmark: every benchmark runs (briefly), reports
# a result, and none fails; the binary exits 0. No timing is checked.
set -u
bin="$1"

out="$("$bin" --benchmark_min_time=0.01 2>&1)"
rc=$?
echo "$out"
if [[ $rc -ne 0 ]]; then
  echo "FAIL: $bin exited with $rc"
  exit 1
fi
if grep -q "ERROR OCCURRED" <<<"$out"; then
  echo "FAIL: a benchmark reported an error"
  exit 1
fi
for name in \
    BM_CacheLinePingPong/1/ BM_CacheLinePingPong/2/ \
    BM_QueueRoundTrip/0/ BM_QueueRoundTrip/8/ BM_QueueRoundTrip/48/ \
    BM_QueueRoundTrip/64/ BM_QueueRoundTrip/256/ BM_QueueRoundTrip/1024/ \
    BM_QueueRoundTrip/4096/ BM_QueueRoundTrip/65536/ BM_QueueOneWayRate/; do
  if ! grep -q "^${name}" <<<"$out"; then
    echo "FAIL: no result for ${name}"
    exit 1
  fi
done
if ! grep -q "ratio_to_cacheline=" <<<"$out"; then
  echo "FAIL: no ratio_to_cacheline counter"
  exit 1
fi
echo PASS
