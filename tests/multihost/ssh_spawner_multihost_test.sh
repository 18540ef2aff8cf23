#!/bin/bash
# The ssh spawner across three "hosts" on one machine.
#
#   ssh_spawner_multihost_test.sh GASNETRUN_SMP BOOTSTRAP_CLIENT NETNS_SSH
#
# Each host is a network namespace plus a UTS namespace with its own
# hostname (gexhI-<run suffix>) and address (10.213.0.1I/24 on eth0), one end
# of a veth pair whose other end is a port of a bridge that lives in a
# namespace of its own; the machine's own network is never touched. A
# holder process (`sleep infinity` under `unshare --uts` inside the netns)
# keeps each UTS namespace alive. gasnetrun_smp runs inside host 0's
# namespaces, like a login node, with GASNET_SSH_CMD=netns_ssh.sh, whose
# host table (-F, passed in GASNET_SSH_OPTIONS) maps the labels gexh0..2 to
# the namespaces. netns_ssh.sh logs "CALLER_HOSTNAME TARGET_LABEL" for each
# call, which shows who started which agent (flat or tree fan-out).
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

skip() {
  echo "SKIPPED: $*"
  exit 0
}
die() {
  echo "FAIL: setup: $*"
  exit 1
}

[ "$(id -u)" = 0 ] || skip "not root (network namespaces need root)"
[ $# -eq 3 ] || die "usage: $0 GASNETRUN_SMP BOOTSTRAP_CLIENT NETNS_SSH"
absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
LAUNCHER=$(absolute "$1")
CLIENT=$(absolute "$2")
SSH=$(absolute "$3")
for f in "$LAUNCHER" "$CLIENT" "$SSH"; do
  [ -x "$f" ] || die "$f is not an executable file"
done

for tool in ip unshare nsenter timeout stat; do
  command -v "$tool" >/dev/null || skip "no '$tool' command"
done

# Nothing from the caller's environment may steer the launcher.
for v in $(compgen -e); do
  case $v in GASNET_* | NETNS_SSH_*) unset "$v" ;; esac
done

SFX=$$-$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')
BRNS=gexbr-$SFX
HOSTS=3
LABEL=() NS=() HOSTNAME_OF=() ADDR=() HOLDER=()
for ((i = 0; i < HOSTS; i++)); do
  LABEL[i]=gexh$i
  NS[i]=gexh$i-$SFX
  HOSTNAME_OF[i]=gexh$i-$SFX
  ADDR[i]=10.213.0.$((10 + i))
done
CREATED_NS=()
JOB=
WORK=$(mktemp -d "${TEST_TMPDIR:-/tmp}/multihost.XXXXXX") ||
  die "cannot make a work directory"

# Polls CONDITION (a command) until it succeeds, for at most 10 s.
poll() {
  local deadline=$((SECONDS + 10))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.02
  done
}
gone() { ! kill -0 "$1" 2>/dev/null; }

# --- cleanup, on every exit path -------------------------------------------

cleanup() {
  trap - EXIT INT TERM HUP
  if [ -n "$JOB" ]; then kill -TERM "$JOB" 2>/dev/null; fi
  local ns p
  # Whatever still runs in a host (a launcher, an agent, a rank) was
  # started by this test: end it by pid, then the holders.
  for ns in "${CREATED_NS[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  done
  for p in "${HOLDER[@]}"; do kill -KILL "$p" 2>/dev/null; done
  if [ -n "$JOB" ]; then wait "$JOB" 2>/dev/null; fi
  for p in "${HOLDER[@]}"; do
    poll gone "$p" || echo "cleanup: holder $p did not exit"
  done
  # Deleting a namespace destroys its links (veth pairs, the bridge).
  for ns in "${CREATED_NS[@]}"; do
    ip netns del "$ns" 2>/dev/null || echo "cleanup: could not delete netns $ns"
  done
  local left
  left=$(ip netns list 2>/dev/null | grep -F -- "-$SFX")
  if [ -n "$left" ]; then
    echo "cleanup: namespaces left behind: $left"
  else
    echo "cleanup: removed ${#CREATED_NS[@]} namespaces and their links"
  fi
  rm -rf "$WORK"
}
on_exit() {
  local rc=$?
  cleanup
  exit "$rc"
}
trap on_exit EXIT
trap 'echo "interrupted (SIGINT)"; exit 130' INT
trap 'echo "interrupted (SIGTERM)"; exit 143' TERM
trap 'echo "interrupted (SIGHUP)"; exit 129' HUP

# --- the hosts ---------------------------------------------------------------

if ! err=$(ip netns add "$BRNS" 2>&1); then
  skip "cannot create a network namespace ('ip netns add' said: $err)"
fi
CREATED_NS+=("$BRNS")

ip -n "$BRNS" link set lo up || die "loopback of the bridge namespace"
ip -n "$BRNS" link add br0 type bridge || die "creating the bridge"
ip -n "$BRNS" link set br0 up || die "bringing the bridge up"

holder_ready() {  # index
  local pid=${HOLDER[$1]}
  kill -0 "$pid" 2>/dev/null || die "the holder of ${NS[$1]} died"
  [ "$(readlink "/proc/$pid/ns/uts")" != "$(readlink /proc/self/ns/uts)" ] ||
    return 1
  [ "$(stat -L -c '%d:%i' "/proc/$pid/ns/net")" = \
    "$(stat -L -c '%d:%i' "/run/netns/${NS[$1]}")" ] || return 1
  [ "$(nsenter --uts="/proc/$pid/ns/uts" hostname)" = "${HOSTNAME_OF[$1]}" ]
}
link_up() {  # netns link
  ip -n "$1" -o link show "$2" 2>/dev/null | grep -q 'state UP'
}
port_forwarding() {  # port
  ip -n "$BRNS" -d -o link show dev "$1" 2>/dev/null |
    grep -q 'bridge_slave state forwarding'
}

for ((i = 0; i < HOSTS; i++)); do
  ns=${NS[i]}
  ip netns add "$ns" || die "ip netns add $ns"
  CREATED_NS+=("$ns")
  ip -n "$BRNS" link add "v$i" type veth peer name eth0 netns "$ns" ||
    die "veth pair for $ns"
  ip -n "$BRNS" link set "v$i" master br0 || die "v$i into the bridge"
  ip -n "$BRNS" link set "v$i" up || die "v$i up"
  ip -n "$ns" link set lo up || die "loopback of $ns"
  ip -n "$ns" addr add "${ADDR[i]}/24" dev eth0 || die "address of $ns"
  ip -n "$ns" link set eth0 up || die "eth0 of $ns up"
  # The holder: ip netns exec and unshare both exec, so $! is the process
  # that ends up as `sleep infinity` in the host's net and UTS namespaces.
  # shellcheck disable=SC2016  # $1 is the inner shell's
  ip netns exec "$ns" unshare --uts -- \
    sh -c 'hostname "$1" && exec sleep infinity' holder "${HOSTNAME_OF[i]}" \
    </dev/null >/dev/null 2>&1 &
  HOLDER[i]=$!
  disown "$!"  # no job report when cleanup kills it
done
for ((i = 0; i < HOSTS; i++)); do
  poll holder_ready "$i" || die "host ${NS[i]} did not come up (holder ${HOLDER[i]})"
  poll link_up "${NS[i]}" eth0 || die "eth0 of ${NS[i]} is not up"
  poll port_forwarding "v$i" || die "bridge port v$i is not forwarding"
done

CONFIG=$WORK/hosts
SSH_LOG=$WORK/ssh.log
{
  echo "# label netns uts_pid hostname"
  echo "@log $SSH_LOG"
  for ((i = 0; i < HOSTS; i++)); do
    echo "${LABEL[i]} ${NS[i]} ${HOLDER[i]} ${HOSTNAME_OF[i]}"
  done
} >"$CONFIG"

echo "hosts (run suffix $SFX, bridge in netns $BRNS):"
for ((i = 0; i < HOSTS; i++)); do
  echo "  ${LABEL[i]}: netns ${NS[i]}, hostname ${HOSTNAME_OF[i]}, ${ADDR[i]}, holder pid ${HOLDER[i]}"
done
echo "launcher runs in ${NS[0]}; GASNET_MASTERIP=${ADDR[0]}"

export GASNET_SSH_CMD=$SSH
export GASNET_SSH_OPTIONS="-F $CONFIG -o BatchMode=yes -q"
export GASNET_MASTERIP=${ADDR[0]}

# --- running jobs and reporting checks ----------------------------------------

# run_job NAME [VAR=VALUE...] -- LAUNCHER_ARGS...: runs gasnetrun_smp inside
# host 0 with a 120 s limit; sets OUT, ERR, RC and ELAPSED_MS.
run_job() {
  local name=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do
    envs+=("$1")
    shift
  done
  shift
  OUT=$WORK/$name.out
  ERR=$WORK/$name.err
  : >"$SSH_LOG"
  local t0
  t0=$(date +%s%N)
  timeout -k 5 120 \
    nsenter --net="/run/netns/${NS[0]}" --uts="/proc/${HOLDER[0]}/ns/uts" -- \
    env "${envs[@]}" "$LAUNCHER" "$@" </dev/null >"$OUT" 2>"$ERR" &
  JOB=$!
  wait "$JOB"
  RC=$?
  JOB=
  ELAPSED_MS=$((($(date +%s%N) - t0) / 1000000))
  local shown="${envs[*]}${envs[*]:+ }gasnetrun_smp $*"
  shown=${shown//"$CLIENT"/bootstrap_client}
  shown=${shown//"$WORK"/\$WORK}
  echo "  ran: $shown -> exit $RC in $ELAPSED_MS ms"
  # 137 alone may be the job's own code (a rank killed by SIGKILL).
  if [ "$RC" -eq 124 ] || [ "$ELAPSED_MS" -ge 120000 ]; then
    problem "timed out after 120 s (exit $RC)"
  fi
}

PASSED=0
FAILED=0
FAILED_CHECKS=()
begin_check() {
  CHECK=$1
  PROBLEMS=()
  echo
  echo "=== check $CHECK"
}
problem() { PROBLEMS+=("$*"); }
# Adds each line of stdin as a problem (at most 20).
problems_from() {
  local line n=0
  while IFS= read -r line; do
    n=$((n + 1))
    if [ $n -le 20 ]; then problem "$line"; fi
  done
  [ $n -le 20 ] || problem "... and $((n - 20)) more"
}
end_check() {
  if [ ${#PROBLEMS[@]} -eq 0 ]; then
    echo "PASS: check $CHECK"
    PASSED=$((PASSED + 1))
    return
  fi
  echo "FAIL: check $CHECK"
  local p
  for p in "${PROBLEMS[@]}"; do echo "  - $p"; done
  echo "  --- stdout (last 15 lines) ---"
  tail -n 15 "$OUT" | cut -c 1-200 | sed 's/^/  | /'
  echo "  --- stderr (last 15 lines) ---"
  tail -n 15 "$ERR" | cut -c 1-200 | sed 's/^/  | /'
  echo "  --- netns_ssh calls (caller target) ---"
  sed 's/^/  | /' "$SSH_LOG"
  FAILED=$((FAILED + 1))
  FAILED_CHECKS+=("$CHECK")
}

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
# Checks the netns_ssh log against "CALLER TARGET" lines (any order).
check_ssh_calls() {
  local want got
  want=$(printf '%s\n' "$@" | sort)
  got=$(sort "$SSH_LOG")
  [ "$want" = "$got" ] ||
    problem "remote shell calls were [$(echo "$got" | tr '\n' ';')], expected [$(echo "$want" | tr '\n' ';')]"
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
# This shell and its ancestors carry the client's path in their arguments.
ancestors=" "
p=$BASHPID
while [ -n "$p" ] && [ "$p" -gt 1 ]; do
  ancestors+="$p "
  p=$(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null)
done
in_our_hosts=" "
for ((i = 0; i < HOSTS; i++)); do
  for p in $(ip netns pids "${NS[i]}"); do
    [ "$p" = "${HOLDER[i]}" ] || in_our_hosts+="$p "
  done
done
OUT=/dev/null ERR=/dev/null
: >"$SSH_LOG"
for d in /proc/[0-9]*; do
  pid=${d#/proc/}
  case $ancestors in *" $pid "*) continue ;; esac
  cmd=$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null) || continue
  [ -n "$cmd" ] || continue
  case " $cmd " in
    *"$CLIENT"* | *" --gex-spawn-agent "*)
      case $cmd in
        *"$CLIENT"*) ;;
        # An agent of some other job (not in our hosts) is not ours.
        *) case $in_our_hosts in *" $pid "*) ;; *) continue ;; esac ;;
      esac
      problem "survivor: pid $pid: $(echo "$cmd" | cut -c 1-160)"
      ;;
  esac
done
for p in $in_our_hosts; do
  [ -d "/proc/$p" ] || continue
  problem "process left in a host namespace: pid $p:" \
    "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c 1-160)"
done
end_check

echo
echo "SUMMARY: $PASSED passed, $FAILED failed${FAILED_CHECKS[*]:+ (}$(
  IFS=';'
  echo "${FAILED_CHECKS[*]}"
)${FAILED_CHECKS[*]:+)}"
[ "$FAILED" -eq 0 ]
