#!/usr/bin/env bash
# The main demonstration: a GASNet-EX client written against <gasnetex.h>
# only (examples/hello_am.c), built against the smp conduit and run as a
# 4-rank job by gasnetrun_smp (fork spawner, no network needed): AM Medium
# greetings, Short replies, a Long into each neighbour's segment checked
# after a barrier. Then a short gex_bench run (AM round trips against the
# cache-line baseline measured in the same run), and what the launcher
# does with a failing rank, a dry run, and the configuration as the base
# layer parses it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh

bazel build --noshow_progress //examples:hello_am //tools:gasnetrun_smp \
  //tools:gex_hello //tools:gex_config
bin=$(bazel info bazel-bin 2>/dev/null)

echo "== a 4-rank GASNet-EX job: gasnetrun_smp -n 4 examples/hello_am =="
"$bin/tools/gasnetrun_smp" -n 4 "$bin/examples/hello_am"
echo "gasnetrun_smp exit code: $?"

# Timings mean something only in an optimised build.
echo
echo "== gex_bench, 2 ranks, a short run (optimised build) =="
bazel build --noshow_progress -c opt //tools:gex_bench_smp //tools:gasnetrun_smp
optbin=$(bazel info -c opt bazel-bin 2>/dev/null)
"$optbin/tools/gasnetrun_smp" -n 2 "$optbin/tools/gex_bench_smp" \
  -i 5000 -w 500 --max-size 4K --tests pingpong-reqrep,pingpong-reqreq,flood-oneway |
  sed -n '1,/^$/p;/^baseline/p;/^Summary/,$p'
echo "(the full tables: gasnetrun_smp -n 2 gex_bench_smp; options: -h)"

echo
echo "== rank 2 exits with code 3: the others are told, the job exits 3 =="
set +e
"$bin/tools/gasnetrun_smp" -n 4 "$bin/tools/gex_hello" 2
echo "gasnetrun_smp exit code: $?"
set -e

echo
echo "== what -t (dry run) would start =="
"$bin/tools/gasnetrun_smp" -t -n 2 "$bin/examples/hello_am"

echo
echo "== gex_config, with a few settings given =="
GASNET_VERBOSEENV=1 \
  GASNET_PHYSMEM_MAX=5/8 \
  GASNET_FIREHOSE_M=64 \
  GASNET_IBV_PORTS='mlx5_0+mlx5_1:2' \
  "$bin/tools/gex_config"

echo
echo "== and a malformed one: the error names the variable =="
(GASNET_FIREHOSE_M=lots "$bin/tools/gex_config" || true) 2>&1 | grep "FATAL" || true
