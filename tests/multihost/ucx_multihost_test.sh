#!/bin/bash
# The ucx conduit across three "hosts" on one machine, over UCX's tcp
# transport.
#
#   ucx_multihost_test.sh GASNETRUN_UCX UCX_CLIENT NETNS_SSH
#
# The hosts (network + UTS namespaces on a private bridge, labels gexh0..2,
# 10.213.0.1I/24 on eth0) and how jobs reach them are described in
# netns_hosts.sh, which this script sources. gasnetrun_ucx runs inside host
# 0 and, given a host list, starts the ranks through the ssh spawner with
# GASNET_SSH_CMD=netns_ssh.sh. Ranks on one host share memory (PSHM); ranks
# on different hosts talk through UCX, pinned to its tcp transport on each
# namespace's own eth0 (GASNET_UCX_TLS=tcp, GASNET_UCX_NET_DEVICES=eth0,
# which travel with the job as every GASNET_* does), so all traffic stays
# on the private bridge (or a host's own lo, for its own address). UCX
# logs which transport and device each endpoint uses at
# UCX_LOG_LEVEL=info (forwarded with -E), on the ranks' stdout, as
# "[time] [HOST:PID:thread] ucp_worker.c:N UCX INFO ep_cfg[I]: am(tcp/eth0)
# ...": that is how the test sees what UCX used on every rank.
#
# Checks (each printed as PASS/FAIL; any FAIL makes the test fail):
#   1 ring, 6 ranks on 3 hosts (2 each): exit 0, every rank's line, its
#     host (ranks r and r^1 on one host), `from` the previous rank's host,
#     sum=21 (Puts, Gets and a 64 KiB Long to the next rank, a Medium, a
#     reduction); every rank's UCX endpoints use tcp/eth0 and nothing else
#   2 the same with GASNET_SUPERNODE_MAXSIZE=1 (no PSHM: all over UCX tcp,
#     a host's own pair through its own address)
#   3 flood 200000 from rank 0 on host 1 to rank 1 on host 2: exact count,
#     one agent per host, >= 1.6 MB through host 1's and host 2's eth0
#   4 an unknown mode: every rank calls gasnet_exit(2); the job exits 2
#     (every rank says so)
#   5 no rank or agent outlives the jobs, no /dev/shm object of theirs left
#
# Not here: UCX's shared-memory transports (GASNET_UCX_TLS=tcp,sm). The
# namespaces share the machine's /dev/shm and IPC namespace, and UCX 1.13
# decides that sm reaches a peer by machine, not by hostname or network
# namespace: with tcp,sm every endpoint, the other "hosts'" too, went over
# sysv/posix (measured), so the job would not cross the bridge at all.
#
# Without root, the tools, or permission to create namespaces, prints
# "SKIPPED: <reason>" and exits 0. Everything created is removed on every
# exit path (trap).
set -u

# The hosts, run_job and the checks' framework (see netns_hosts.sh).
# shellcheck source=tests/multihost/netns_hosts.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns_hosts.sh" ||
  { echo "FAIL: setup: cannot read netns_hosts.sh"; exit 1; }

take_programs "GASNETRUN_UCX UCX_CLIENT NETNS_SSH" "$@"

# Nothing from the caller's environment may choose another transport or
# device (hosts_setup clears GASNET_*).
for v in $(compgen -e); do
  case $v in UCX_* | GEX_*) unset "$v" ;; esac
done

hosts_setup

# UCX's settings for every job: GASNET_* travel with the job on their own;
# -E forwards UCX's log level.
UCX_ENV=(GASNET_UCX_TLS=tcp GASNET_UCX_NET_DEVICES=eth0 UCX_LOG_LEVEL=info)
FORWARD=(-E UCX_LOG_LEVEL)
# What the ranks print besides their result lines: the job id (before
# init) and UCX's log lines, which check_ucx_lanes reads.
OTHER_LINES='^rank [?]: job=|^[[][0-9.]+[]] [[]'

# Checks UCX's "ep_cfg[I]: feature(tl/dev ...) ..." lines of a job of 6
# ranks, 2 per host: every rank (host:pid) logged at least one; every
# lane is one of ALLOWED (an ERE such as '^tcp/eth0$'); each rank used
# every transport/device pair listed in NEEDED (space separated); no UCX
# line is an error or a warning.
check_ucx_lanes() {  # allowed needed
  awk -v sfx="$SFX" -v allowed="$1" -v needed="$2" '
    / UCX +(ERROR|WARN) / { print "UCX said: " substr($0, 1, 160); next }
    !/ UCX +INFO +ep_cfg\[[0-9]+\]: / { next }
    {
      who = $2; gsub(/^\[|:[0-9]+\]$/, "", who)  # HOST:PID
      host = who; sub(/:.*/, "", host)
      if (host !~ ("^gexh[0-2]-" sfx "$")) {
        print "ep_cfg logged on host " host; next
      }
      if (!(who in ranks)) { ranks[who] = 1; per_host[host]++ }
      lanes = $0; sub(/.*ep_cfg\[[0-9]+\]: /, "", lanes)
      rest = lanes
      while (match(rest, /\([^)]*\)/)) {
        k = split(substr(rest, RSTART + 1, RLENGTH - 2), tl, " ")
        for (i = 1; i <= k; i++) {
          used[who, tl[i]] = 1
          if (tl[i] !~ allowed) print who ": lane " tl[i] " (" lanes ")"
        }
        rest = substr(rest, RSTART + RLENGTH)
      }
    }
    END {
      for (h = 0; h < 3; h++) {
        host = "gexh" h "-" sfx
        if (per_host[host] != 2)
          print host ": " per_host[host] + 0 " ranks logged endpoints, expected 2"
      }
      nn = split(needed, want, " ")
      for (who in ranks)
        for (i = 1; i <= nn; i++)
          if (!((who, want[i]) in used)) print who ": no lane over " want[i]
    }' "$OUT" | problems_from
}

# --- the checks ------------------------------------------------------------------

begin_check "1: ring, 6 ranks over 3 hosts (PSHM within a host, UCX tcp between)"
run_job ring "${UCX_ENV[@]}" GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" -- \
  "${FORWARD[@]}" -n 6 -N 3 "$CLIENT" ring
[ "$RC" -eq 0 ] || problem "exit code $RC, expected 0"
check_ring_output "$OTHER_LINES"
check_ucx_lanes '^tcp/eth0$' tcp/eth0
check_ring_calls
end_check

begin_check "2: ring, 6 ranks over 3 hosts, GASNET_SUPERNODE_MAXSIZE=1 (all over UCX tcp)"
run_job ring-nopshm "${UCX_ENV[@]}" GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" \
  GASNET_SUPERNODE_MAXSIZE=1 -- \
  "${FORWARD[@]}" -n 6 -N 3 "$CLIENT" ring
[ "$RC" -eq 0 ] || problem "exit code $RC, expected 0"
check_ring_output "$OTHER_LINES"
check_ucx_lanes '^tcp/eth0$' tcp/eth0
check_ring_calls
end_check

begin_check "3: flood 200000, rank 0 on host 1 to rank 1 on host 2"
# Two hosts for two ranks: one rank on each (rank 0 on the first).
tx0=$(eth0_bytes 1 tx) rx0=$(eth0_bytes 2 rx)
run_job flood "${UCX_ENV[@]}" GASNET_SSH_SERVERS="gexh1 gexh2" \
  GASNET_SUPERNODE_MAXSIZE=1 -- \
  "${FORWARD[@]}" -n 2 -N 2 "$CLIENT" flood 200000
[ "$RC" -eq 0 ] || problem "exit code $RC, expected 0"
check_flood 200000 "$tx0" "$rx0" "$OTHER_LINES"
end_check

begin_check "4: an unknown mode: every rank calls gasnet_exit(2), the job exits 2"
run_job exit "${UCX_ENV[@]}" GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" -- \
  "${FORWARD[@]}" -n 6 -N 3 "$CLIENT" nosuchmode
[ "$RC" -eq 2 ] || problem "exit code $RC, expected 2"
[ "$(grep -c '^rank [0-5]: CHECK FAILED unknown mode nosuchmode$' "$OUT")" -eq 6 ] ||
  problem "not every rank printed 'rank R: CHECK FAILED unknown mode nosuchmode'"
end_check

begin_check "5: no rank or agent outlives the jobs, no /dev/shm object is left"
check_no_survivors
check_no_shm_leftovers
[ ${#LAUNCHER_PIDS[@]} -eq 4 ] ||
  problem "recorded ${#LAUNCHER_PIDS[@]} launcher pids, expected 4"
echo "  launcher pids: ${LAUNCHER_PIDS[*]}"
end_check

finish_checks
