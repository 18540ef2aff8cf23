#!/bin/bash
# The fault-injection driver (fault_injection_test.cc) over the ssh spawner
# across namespace hosts (tests/multihost/netns_hosts.sh): the launcher runs
# inside host 0, its agents and ranks on hosts 1 and 2, reached through
# netns_ssh.sh. This script only makes the hosts and hands them to the
# driver (FAULTS_SSH_*, FAULTS_MASTERIP, FAULTS_LAUNCH_PREFIX); the trials,
# checks and table are the driver's.
#
#   netns_faults_test.sh DRIVER GASNETRUN CLIENT NETNS_SSH
#
# FAULTS_* of the instance come from the test's environment
# (fault_tests.bzl). Without root or namespaces: "SKIPPED: <reason>", 0.
set -u

# shellcheck source=tests/multihost/netns_hosts.sh
. "$(dirname "${BASH_SOURCE[0]}")/../multihost/netns_hosts.sh" ||
  { echo "FAIL: setup: cannot read netns_hosts.sh"; exit 1; }

[ $# -eq 4 ] || die "usage: $0 DRIVER GASNETRUN CLIENT NETNS_SSH"
DRIVER=$(absolute "$1")
shift
[ -x "$DRIVER" ] || die "$DRIVER is not an executable file"
take_programs "GASNETRUN CLIENT NETNS_SSH" "$@"

hosts_setup

export FAULTS_SPAWNER=ssh
export FAULTS_SSH_CMD=$GASNET_SSH_CMD
export FAULTS_SSH_OPTIONS=$GASNET_SSH_OPTIONS
export FAULTS_MASTERIP=$GASNET_MASTERIP
export FAULTS_SSH_SERVERS="${LABEL[1]} ${LABEL[2]}"
# job_runner execs without a PATH search.
export FAULTS_LAUNCH_PREFIX="$(command -v nsenter) --net=/run/netns/${NS[0]} --uts=/proc/${HOLDER[0]}/ns/uts --"
"$DRIVER"
