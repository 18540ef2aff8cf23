#!/usr/bin/env bash
# The main demonstration. Until the smp conduit lands: the dependency smoke
# checks (each real library initialises here) and gex_config, which prints
# the configuration as the base layer parses it, with GASNET_VERBOSEENV on.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh

echo "== dependency smoke checks =="
bazel test //tests/deps/... --test_output=all 2>&1 |
  grep -E "^(found|ucp|libibverbs|PMIx|abseil|benchmark|  )|PASSED|FAILED" || true

echo
echo "== gex_config, with a few settings given =="
GASNET_VERBOSEENV=1 \
  GASNET_PHYSMEM_MAX=5/8 \
  GASNET_FIREHOSE_M=64 \
  GASNET_PUT_STRIPE_SZ=128 \
  GASNET_IBV_PORTS='mlx5_0+mlx5_1:2' \
  GASNET_IBV_LIST_PORTS_NODES='0,2-4,6' \
  bazel run --ui_event_filters=-info,-stdout,-stderr --noshow_progress \
  //tools:gex_config

echo
echo "== and a malformed one: the error names the variable =="
GASNET_FIREHOSE_M=lots bazel run --ui_event_filters=-info,-stdout,-stderr \
  --noshow_progress //tools:gex_config 2>&1 | grep "FATAL" || true
