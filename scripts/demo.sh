#!/usr/bin/env bash
# The main demonstration: a multi-process job on this machine, started by
# gasnetrun_smp with the fork spawner (no network needed). Until the smp
# conduit lands the job is gex_hello, which runs on the bootstrap layer:
# node map, allgather, barriers. Then: how a failing rank ends the job, and
# the configuration as the base layer parses it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh

bazel build --noshow_progress //tools:gasnetrun_smp //tools:gex_hello \
  //tools:gex_config
bin=$(bazel info bazel-bin 2>/dev/null)

echo "== a 4-rank job: gasnetrun_smp -n 4 gex_hello =="
"$bin/tools/gasnetrun_smp" -n 4 "$bin/tools/gex_hello"

echo
echo "== the same job split into supernodes of 2 (GASNET_SUPERNODE_MAXSIZE=2) =="
GASNET_SUPERNODE_MAXSIZE=2 "$bin/tools/gasnetrun_smp" -n 4 "$bin/tools/gex_hello" |
  grep -E "^(a job|  rank)"

echo
echo "== rank 2 exits with code 3: the others are told, the job exits 3 =="
set +e
"$bin/tools/gasnetrun_smp" -n 4 "$bin/tools/gex_hello" 2
echo "gasnetrun_smp exit code: $?"
set -e

echo
echo "== what -t (dry run) would start =="
"$bin/tools/gasnetrun_smp" -t -n 2 "$bin/tools/gex_hello"

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
