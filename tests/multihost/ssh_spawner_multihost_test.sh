#!/bin/bash
# The ssh spawner across three "hosts" on one machine.
#
#   ssh_spawner_multihost_test.sh GASNETRUN_SMP BOOTSTRAP_CLIENT NETNS_SSH
#
# The hosts (network + UTS namespaces on a private bridge, labels gexh0..2)
# and how jobs reach them are described in netns_hosts.sh, which this
# script sources. gasnetrun_smp runs inside host 0, like a login node, with
# GASNET_SSH_CMD=netns_ssh.sh, which logs "CALLER_HOSTNAME TARGET_LABEL"
# for each call: that shows who started which agent (flat or tree fan-out).
#
# Checks (each printed as PASS/FAIL; any FAIL makes the test fail):
#   1 nodemap, flat fan-out, 6 ranks on 3 hosts
#   2 nodemap, tree fan-out of degree 1 (host 0 -> 1 -> 2)
#   3 collectives, 6 ranks on 3 hosts
#   4 lines 300: 1800 whole lines, 300 per rank
#   5 exit 3 at rank 4: the job exits 3
#   6 an unknown host: fails promptly, naming the host
#   7 a malformed node file: fails, naming the file
#   8 no job process or agent outlives its launcher
#
# Without root, the tools, or permission to create namespaces, prints
# "SKIPPED: <reason>" and exits 0. Everything created is removed on every
# exit path (trap).
set -u

# The hosts, run_job and the checks' framework (see netns_hosts.sh).
# shellcheck source=tests/multihost/netns_hosts.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns_hosts.sh" ||
  { echo "FAIL: setup: cannot read netns_hosts.sh"; exit 1; }

take_programs "GASNETRUN_SMP BOOTSTRAP_CLIENT NETNS_SSH" "$@"

hosts_setup

# Checks a nodemap run of 6 ranks, 2 per host in rank order.
check_nodemap_output() {
  awk -v sfx="$SFX" -v n=6 -v hosts=$HOSTS '
    { total++ }
    !/^rank [0-9]+\/[0-9]+ host [0-9]+\/[0-9]+ supernode [0-9]+\/[0-9]+ name [^ ]+$/ {
      print "unexpected line: " substr($0, 1, 120); next
    }
    {
      split($2, r, "/"); split($4, h, "/"); split($6, s, "/")
      rank = r[1] + 0; want = int(rank / 2); want_name = "gexh" want "-" sfx
      if (seen[rank]++) print "rank " rank " reported twice"
      if (r[2] != n) print "rank " rank ": job size " r[2] ", expected " n
      if (h[1] != want) print "rank " rank ": host " h[1] ", expected " want
      if (h[2] != hosts) print "rank " rank ": host count " h[2] ", expected " hosts
      if (s[1] != want || s[2] != hosts)
        print "rank " rank ": supernode " $6 ", expected " want "/" hosts
      if ($8 != want_name)
        print "rank " rank ": hostname " $8 ", expected " want_name
    }
    END {
      if (total != n) print "expected " n " lines, got " total
      for (i = 0; i < n; i++) if (!seen[i]) print "rank " i " printed nothing"
    }' "$OUT" | problems_from
}
# --- the checks ------------------------------------------------------------------

begin_check "1: nodemap, flat fan-out, 6 ranks over 3 hosts"
run_job nodemap-flat GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" -- \
  -spawner=ssh -n 6 -N 3 "$CLIENT" nodemap
[ "$RC" -eq 0 ] || problem "exit code $RC, expected 0"
check_nodemap_output
check_ssh_calls "${HOSTNAME_OF[0]} gexh0" "${HOSTNAME_OF[0]} gexh1" \
  "${HOSTNAME_OF[0]} gexh2"
end_check

begin_check "2: nodemap, tree fan-out (nary, degree 1: host 0 -> 1 -> 2)"
run_job nodemap-chain GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" \
  GASNET_SSH_TOPOLOGY=nary GASNET_SSH_OUT_DEGREE=1 -- \
  -spawner=ssh -n 6 -N 3 "$CLIENT" nodemap
[ "$RC" -eq 0 ] || problem "exit code $RC, expected 0"
check_nodemap_output
check_ssh_calls "${HOSTNAME_OF[0]} gexh0" "${HOSTNAME_OF[0]} gexh1" \
  "${HOSTNAME_OF[1]} gexh2"
end_check

begin_check "3: collectives, 6 ranks over 3 hosts"
run_job collectives GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" -- \
  -spawner=ssh -n 6 -N 3 "$CLIENT" collectives
[ "$RC" -eq 0 ] || problem "exit code $RC, expected 0"
awk -v n=6 '
  { total++ }
  /^rank [0-9]+\/[0-9]+ collectives ok$/ {
    split($2, r, "/")
    if (r[2] != n) print "job size " r[2] " in: " $0
    if (seen[r[1] + 0]++) print "rank " r[1] " reported twice"
    next
  }
  { print "unexpected line: " substr($0, 1, 120) }
  END {
    if (total != n) print "expected " n " lines, got " total
    for (i = 0; i < n; i++) if (!seen[i]) print "rank " i " did not report ok"
  }' "$OUT" | problems_from
end_check

begin_check "4: lines 300, 6 ranks over 3 hosts (1800 whole lines)"
run_job lines GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" -- \
  -spawner=ssh -n 6 -N 3 "$CLIENT" lines 300
[ "$RC" -eq 0 ] || problem "exit code $RC, expected 0"
# Each line is "rank R line I x...x end" with 100 + (37 I + 11 R) % 300 x's.
awk -v n=6 -v k=300 '
  { total++ }
  !/^rank [0-9]+ line [0-9]+ x+ end$/ {
    broken++
    if (broken <= 5) print "broken line " NR ": " substr($0, 1, 100)
    next
  }
  {
    rank = $2 + 0; i = $4 + 0; want = 100 + (i * 37 + rank * 11) % 300
    if (length($5) != want)
      print "rank " rank " line " i ": " length($5) " x, expected " want
    if (seen[rank " " i]++) print "rank " rank " line " i " printed twice"
    count[rank]++
  }
  END {
    if (broken > 5) print broken - 5 " more broken lines"
    if (total != n * k) print "expected " n * k " lines, got " total
    for (r = 0; r < n; r++)
      if (count[r] != k) print "rank " r ": " count[r] + 0 " lines, expected " k
  }' "$OUT" | problems_from
echo "  lines: $(wc -l <"$OUT") in all; per rank:" \
  "$(awk '/^rank [0-9]+ line /{c[$2]++} END{for (r = 0; r < 6; r++) printf "%d ", c[r]}' "$OUT")"
end_check

begin_check "5: exit 3 at rank 4 (on host 2): the job exits 3"
run_job exit GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" -- \
  -spawner=ssh -n 6 -N 3 "$CLIENT" exit 3 4
[ "$RC" -eq 3 ] || problem "exit code $RC, expected 3"
grep -q '^rank 4 exiting with 3$' "$OUT" ||
  problem "no 'rank 4 exiting with 3' on stdout"
end_check

begin_check "6: an unknown host (nosuchhost) fails promptly, naming it"
run_job unknown-host GASNET_SSH_SERVERS="gexh0 nosuchhost gexh2" -- \
  -spawner=ssh -n 6 -N 3 "$CLIENT" nodemap
[ "$RC" -ne 0 ] || problem "exit code 0, expected a failure"
grep -q nosuchhost "$ERR" || problem "stderr does not name nosuchhost"
[ "$ELAPSED_MS" -lt 60000 ] || problem "took $ELAPSED_MS ms (limit 60000)"
echo "  stderr: $(grep -m 3 nosuchhost "$ERR" | cut -c 1-300 | tr '\n' ' ')"
end_check

begin_check "7: a malformed node file (a line 'bad;host') fails, naming the file"
NODEFILE=$WORK/nodefile
printf 'gexh0\nbad;host\ngexh2\n' >"$NODEFILE"
run_job bad-nodefile GASNET_SSH_NODEFILE="$NODEFILE" -- \
  -spawner=ssh -n 6 -N 3 "$CLIENT" nodemap
[ "$RC" -ne 0 ] || problem "exit code 0, expected a failure"
grep -qF "$NODEFILE" "$ERR" || problem "stderr does not name $NODEFILE"
[ -s "$SSH_LOG" ] && problem "the remote shell ran although the node file is bad"
echo "  stderr: $(head -n 3 "$ERR" | cut -c 1-300 | tr '\n' ' ')"
end_check

begin_check "8: no rank or agent outlives the jobs"
check_no_survivors
end_check

finish_checks
