#!/usr/bin/env bash
# Installs the Debian packages gex builds and tests with. Idempotent: does
# nothing (and needs no network) when everything is already installed.
# Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  bazel-bootstrap g++ clang clang-format libclang-rt-14-dev
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libfabric-dev libfabric-bin libucx-dev ucx-utils
  libibverbs-dev ibverbs-utils libpmix-dev
  openmpi-bin slurmctld slurmd slurm-client munge
  iproute2 util-linux procps python3 gdb
  make cmake pkg-config
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install_deps: installing ${missing[*]}"
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then
    as_root=(sudo)
  else
    echo "install_deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet; refresh only if the
# install cannot find a package.
if ! "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
  "${as_root[@]}" apt-get update
  "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi
