#!/bin/bash
# The ofi conduit across three "hosts" on one machine, over tcp;ofi_rxm.
#
#   ofi_multihost_test.sh GASNETRUN_OFI OFI_CLIENT NETNS_SSH
#
# The hosts (network + UTS namespaces on a private bridge, labels gexh0..2,
# 10.213.0.1I/24 on eth0) and how jobs reach them are described in
# netns_hosts.sh, which this script sources. gasnetrun_ofi runs inside host
# 0 and, given a host list, starts the ranks through the ssh spawner with
# GASNET_SSH_CMD=netns_ssh.sh. Ranks on one host share memory (PSHM); ranks
# on different hosts talk through libfabric's tcp;ofi_rxm provider over each
# namespace's own eth0 (FI_TCP_IFACE=eth0), so all traffic stays on the
# private bridge. netns_ssh.sh gives the remote commands a fresh
# environment, as ssh does: GASNET_* travel with the job, and `-E
# FI_PROVIDER,FI_TCP_IFACE` forwards libfabric's settings.
#
# Checks (each printed as PASS/FAIL; any FAIL makes the test fail):
#   1 ring, 6 ranks on 3 hosts (2 each): exit 0, every rank's line, its
#     host (ranks r and r^1 on one host), `from` the previous rank's host,
#     sum=21; with GASNET_OFI_LIST_DEVICES=1, every rank lists only
#     tcp;ofi_rxm (so FI_PROVIDER was forwarded), eth0 among its devices
#   2 the same with GASNET_SUPERNODE_MAXSIZE=1 (no PSHM: all over libfabric)
#   3 flood 200000 from rank 0 on host 1 to rank 1 on host 2: exact count,
#     one agent per host, >= 1.6 MB through host 1's and host 2's eth0
#   4 an unknown mode: every rank calls gasnet_exit(2); the job exits 2
#   5 no rank or agent outlives the jobs, no /dev/shm object of theirs left
#
# Without root, the tools, or permission to create namespaces, prints
# "SKIPPED: <reason>" and exits 0. Everything created is removed on every
# exit path (trap).
set -u

# The hosts, run_job and the checks' framework (see netns_hosts.sh).
# shellcheck source=tests/multihost/netns_hosts.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns_hosts.sh" ||
  { echo "FAIL: setup: cannot read netns_hosts.sh"; exit 1; }

take_programs "GASNETRUN_OFI OFI_CLIENT NETNS_SSH" "$@"

# Nothing from the caller's environment may choose another provider or
# device (hosts_setup clears GASNET_*).
for v in $(compgen -e); do
  case $v in FI_* | GEX_*) unset "$v" ;; esac
done

hosts_setup

# libfabric's settings for every job; -E makes the launcher forward them.
OFI_ENV=(FI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=eth0)
FORWARD=(-E "FI_PROVIDER,FI_TCP_IFACE")

# Checks that every rank of 6 listed its usable provider/device pairs, all
# of them tcp;ofi_rxm: FI_PROVIDER reached every rank (on a host reached by
# netns_ssh.sh, only -E forwards it; without it the list has sockets, udp,
# shm, ...).
check_device_lists() {
  awk -v n=6 '
    !/^ofi: rank [0-9]+: usable provider\/device: / { next }
    {
      rank = $3 + 0; listed[rank]++
      pair = $0; sub(/^[^:]*: [^:]*: [^:]*: /, "", pair)
      if (pair !~ /^tcp;ofi_rxm \/ [^ ]+$/)
        print "rank " rank " lists " pair " (FI_PROVIDER not applied?)"
      if (pair == "tcp;ofi_rxm / eth0") eth0[rank] = 1
    }
    END {
      for (r = 0; r < n; r++) {
        if (!listed[r]) print "rank " r " listed no provider/device"
        else if (!eth0[r]) print "rank " r " did not list tcp;ofi_rxm / eth0"
      }
    }' "$OUT" | problems_from
}
# --- the checks ------------------------------------------------------------------

begin_check "1: ring, 6 ranks over 3 hosts (PSHM within a host)"
run_job ring "${OFI_ENV[@]}" GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" \
  GASNET_OFI_LIST_DEVICES=1 -- \
  "${FORWARD[@]}" -n 6 -N 3 "$CLIENT" ring
[ "$RC" -eq 0 ] || problem "exit code $RC, expected 0"
check_ring_output '^ofi: rank [0-9]+: usable provider/device: '
check_device_lists
check_ring_calls
end_check

begin_check "2: ring, 6 ranks over 3 hosts, GASNET_SUPERNODE_MAXSIZE=1 (all over libfabric)"
run_job ring-nopshm "${OFI_ENV[@]}" GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" \
  GASNET_SUPERNODE_MAXSIZE=1 -- \
  "${FORWARD[@]}" -n 6 -N 3 "$CLIENT" ring
[ "$RC" -eq 0 ] || problem "exit code $RC, expected 0"
check_ring_output
check_ring_calls
end_check

begin_check "3: flood 200000, rank 0 on host 1 to rank 1 on host 2"
# Two hosts for two ranks: one rank on each (rank 0 on the first).
tx0=$(eth0_bytes 1 tx) rx0=$(eth0_bytes 2 rx)
run_job flood "${OFI_ENV[@]}" GASNET_SSH_SERVERS="gexh1 gexh2" \
  GASNET_SUPERNODE_MAXSIZE=1 -- \
  "${FORWARD[@]}" -n 2 -N 2 "$CLIENT" flood 200000
[ "$RC" -eq 0 ] || problem "exit code $RC, expected 0"
check_flood 200000 "$tx0" "$rx0"
end_check

begin_check "4: an unknown mode: every rank calls gasnet_exit(2), the job exits 2"
run_job exit "${OFI_ENV[@]}" GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" -- \
  "${FORWARD[@]}" -n 6 -N 3 "$CLIENT" nosuchmode
[ "$RC" -eq 2 ] || problem "exit code $RC, expected 2"
grep -q '^rank [0-9]: CHECK FAILED unknown mode nosuchmode$' "$OUT" ||
  problem "no 'rank R: CHECK FAILED unknown mode nosuchmode' on stdout"
end_check

begin_check "5: no rank or agent outlives the jobs, no /dev/shm object is left"
check_no_survivors
check_no_shm_leftovers
[ ${#LAUNCHER_PIDS[@]} -eq 4 ] ||
  problem "recorded ${#LAUNCHER_PIDS[@]} launcher pids, expected 4"
echo "  launcher pids: ${LAUNCHER_PIDS[*]}"
end_check

finish_checks
