#!/bin/bash
# The ssh spawner's control port probed as an attacker would, across three
# "hosts" on one machine (netns_hosts.sh). The attacker is a process in
# host 2's network namespace: any user on a machine of the network.
#
#   control_port_attack_test.sh GASNETRUN_SMP BOOTSTRAP_CLIENT NETNS_SSH GATED_SSH
#
# One job, gasnetrun -v -n 3 -N 3 over gated_ssh.sh, which holds every
# remote shell until the test says go, so the attacks come before any
# agent has connected:
#   1 the control port listens on the advertised address only
#   2 the job token (the first stdin line of every remote shell) appears in
#     no process's command line, while the remote shells wait
#   3 a frame header claiming 1 GiB, then 200 MB streamed behind it: the
#     launcher drops the connection and its peak memory (VmHWM) stays
#     under 64 MB
#   4 a hello with a wrong token followed by a forged abort: dropped, the
#     forged text is never printed and the job's code is not the forged one
#   5 200 idle connections: the launcher holds at most 64 of them (plus its
#     own descriptors) once it has accepted them all
#   6 the agents connect anyway; with every rank running, the token is in
#     no command line (agents, ranks) and the control port is closed
#   7 the job ends with exit code 0 and every rank's output
#   8 no process or /dev/shm object of the job outlives it
# Floods are bounded (a count and a timeout) and go only to the test's own
# namespaces. Without root, the tools, or permission to create namespaces,
# prints "SKIPPED: <reason>" and exits 0.
set -u

# shellcheck source=tests/multihost/netns_hosts.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns_hosts.sh" ||
  { echo "FAIL: setup: cannot read netns_hosts.sh"; exit 1; }

[ "$(id -u)" = 0 ] || skip "not root (network namespaces need root)"
[ $# -eq 4 ] ||
  die "usage: $0 GASNETRUN_SMP BOOTSTRAP_CLIENT NETNS_SSH GATED_SSH"
LAUNCHER=$(absolute "$1")
CLIENT=$(absolute "$2")
SSH=$(absolute "$3")
GATED=$(absolute "$4")
for f in "$LAUNCHER" "$CLIENT" "$SSH" "$GATED"; do
  [ -x "$f" ] || die "$f is not an executable file"
done
command -v ss >/dev/null || skip "no 'ss' command"
command -v dd >/dev/null || skip "no 'dd' command"

JOB_LIMIT_S=180
hosts_setup

GATE=$WORK/gate
PIDS=$WORK/pids
RELEASE=$WORK/release
mkdir -p "$GATE" "$PIDS" || die "cannot make $GATE"
export GASNET_SSH_CMD=$GATED GATED_SSH_REAL=$SSH GATED_SSH_DIR=$GATE
# The launcher's peak memory allowed under attack (kB).
HWM_LIMIT_KB=65536
HOLDER_PID=

# Polls CONDITION for at most SECONDS.
poll_for() {
  local limit=$1
  shift
  local deadline=$((SECONDS + limit))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.05
  done
}
in_attacker_host() { nsenter --net="/run/netns/${NS[2]}" -- "$@"; }
status_kb() {  # pid field
  awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status" 2>/dev/null
}
waiting_shells() { [ "$(find "$GATE" -name 'waiting.*' | wc -l)" -ge 3 ]; }
port_known() { grep -q 'agents call back on' "$ERR"; }
launcher_known() { [ -s "$WORK/job.pid" ]; }
ranks_ready() { [ -e "$PIDS/ready" ]; }
accept_queue_empty() {
  local q
  q=$(nsenter --net="/run/netns/${NS[0]}" -- ss -ltnH "sport = :$PORT" |
    awk '{print $2; exit}')
  [ "${q:-0}" = 0 ]
}
# Every process whose command line holds the token, one per line.
cmdlines_with_token() {
  local d cmd
  for d in /proc/[0-9]*; do
    # A process may end between the listing and the read.
    cmd=$({ tr '\0' ' ' <"$d/cmdline"; } 2>/dev/null) || continue
    case $cmd in
      *"$TOKEN"*) echo "pid ${d#/proc/}: $(echo "$cmd" | cut -c 1-160)" ;;
    esac
  done
}

# The job: started in the background inside host 0 (like run_job), held
# at the gate until the attacks are done.
OUT=$WORK/job.out
ERR=$WORK/job.err
: >"$SSH_LOG"
# shellcheck disable=SC2016  # $$ and $0 are the inner shell's
timeout -k 5 "$JOB_LIMIT_S" \
  nsenter --net="/run/netns/${NS[0]}" --uts="/proc/${HOLDER[0]}/ns/uts" -- \
  sh -c 'echo $$ >"$0" && exec "$@"' "$WORK/job.pid" \
  env GASNET_SSH_SERVERS="gexh0 gexh1 gexh2" "$LAUNCHER" -v -spawner=ssh \
  -n 3 -N 3 "$CLIENT" --pids "$PIDS" await "$RELEASE" \
  </dev/null >"$OUT" 2>"$ERR" &
JOB=$!
poll_for 30 launcher_known || die "the launcher did not start"
LPID=$(cat "$WORK/job.pid")
LAUNCHER_PIDS+=("$LPID")
poll_for 30 port_known || die "the launcher did not say its port: $(head -c 600 "$ERR")"
poll_for 30 waiting_shells || die "the remote shells did not reach the gate"
read -r ADVERTISED PORT < <(sed -n \
  's/.*agents call back on \([0-9.]*\):\([0-9]*\).*/\1 \2/p' "$ERR" | head -n 1)
echo "launcher pid $LPID, control port $ADVERTISED:$PORT;" \
  "VmHWM at start $(status_kb "$LPID" VmHWM) kB"

begin_check "1: the control port listens on the advertised address only"
listening=$(nsenter --net="/run/netns/${NS[0]}" -- ss -ltnH "sport = :$PORT" |
  awk '{print $4}')
echo "  listening: $listening"
[ "$listening" = "$ADVERTISED:$PORT" ] ||
  problem "listening on '$listening', expected only $ADVERTISED:$PORT"
end_check

begin_check "2: the job token is on no command line while the remote shells wait"
TOKEN=$(cat "$GATE"/stdin.* | sort -u)
if ! [[ $TOKEN =~ ^[0-9a-f]{16}$ ]]; then
  problem "the remote shells' first stdin lines are not one job token: [$(echo "$TOKEN" | tr '\n' ';')]"
  # The old way: the token as an argument of the agent's command line.
  # The old way: a 16-hex-digit word of the remote command.
  TOKEN=$(for p in $(pgrep -f -- '--gex-spawn-agent'); do
    { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null
    echo
  done | grep -o -E "(^|[ '])[0-9a-f]{16}($|[ '])" | tr -d " '" | head -n 1)
fi
if [ -n "$TOKEN" ]; then
  cmdlines_with_token | problems_from
else
  problem "no job token found anywhere"
fi
end_check

begin_check "3: a 1 GiB frame header and 200 MB behind it, before any hello"
# shellcheck disable=SC2016  # the inner shell's arguments
in_attacker_host timeout 60 bash -c '
  exec 3<>"/dev/tcp/$0/$1" || exit 90
  printf "\xff\xff\xff\x3f" >&3
  dd if=/dev/zero bs=64k count=3200 >&3 2>"$2"
  echo "dd exit $?" >>"$2"' "$ADVERTISED" "$PORT" "$WORK/flood.log"
echo "  attacker: $(tr '\n' ' ' <"$WORK/flood.log" | cut -c 1-300)"
hwm=$(status_kb "$LPID" VmHWM)
echo "  launcher VmRSS $(status_kb "$LPID" VmRSS) kB, VmHWM $hwm kB (limit $HWM_LIMIT_KB kB)"
[ -n "$hwm" ] || problem "cannot read the launcher's memory (pid $LPID)"
[ "${hwm:-0}" -lt "$HWM_LIMIT_KB" ] ||
  problem "the launcher's peak memory is $hwm kB after the flood"
end_check

begin_check "4: a hello with a wrong token, then a forged abort"
# Hello: role agent, host 1, pid 1, token 0, hostname "evil". Abort: rank
# 0, code 42, reason "forged abort by attacker".
# shellcheck disable=SC2016
in_attacker_host timeout 30 bash -c '
  exec 3<>"/dev/tcp/$0/$1" || exit 90
  printf "\x1a\x00\x00\x00\x01\x02\x01\x00\x00\x00\x01\x00\x00\x00" >&3
  printf "\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00evil" >&3
  printf "\x25\x00\x00\x00\x06\x00\x00\x00\x00\x2a\x00\x00\x00" >&3
  printf "\x18\x00\x00\x00forged abort by attacker" >&3
  cat <&3 >/dev/null' "$ADVERTISED" "$PORT"
rc=$?
[ "$rc" -ne 124 ] || problem "the launcher kept the forged connection open"
echo "  the launcher closed the forged connection (attacker exit $rc)"
end_check

begin_check "5: 200 idle connections: at most 64 held"
# The holder keeps its connections open until it is told to end (SIGTERM
# to its timeout, which passes it on) or 150 s have passed.
# shellcheck disable=SC2016
nsenter --net="/run/netns/${NS[2]}" -- timeout 150 bash -c '
  n=0
  for ((i = 0; i < 200; i++)); do
    exec {fd}<>"/dev/tcp/$0/$1" || break
    n=$((n + 1))
  done
  echo "$n" >"$2"
  exec sleep 1000' "$ADVERTISED" "$PORT" "$WORK/idle.count" &
HOLDER_PID=$!
poll_for 60 test -s "$WORK/idle.count" || problem "the idle connections were not opened"
echo "  opened $(cat "$WORK/idle.count" 2>/dev/null) idle connections"
poll_for 60 accept_queue_empty || problem "the launcher left connections unaccepted"
sockets=$(find "/proc/$LPID/fd" -lname 'socket:*' 2>/dev/null | wc -l)
echo "  the launcher holds $sockets sockets; VmHWM $(status_kb "$LPID" VmHWM) kB"
[ "$sockets" -le 80 ] || problem "the launcher holds $sockets sockets (cap 64 pending)"
end_check

begin_check "6: the agents connect; the token stays off every command line; the port closes"
: >"$GATE/go"
poll_for 120 ranks_ready || problem "the ranks did not all start"
if [ -n "$TOKEN" ]; then
  cmdlines_with_token | problems_from
fi
agents=$(pgrep -c -f -- '--gex-spawn-agent')
echo "  processes with --gex-spawn-agent in their command line: $agents"
if in_attacker_host timeout 10 bash -c 'exec 3<>"/dev/tcp/$0/$1"' \
  "$ADVERTISED" "$PORT" 2>/dev/null; then
  problem "the control port still accepts connections with every agent connected"
fi
end_check

begin_check "7: the job ends with exit code 0 and every rank's output"
: >"$RELEASE"
wait "$JOB"
RC=$?
JOB=
# timeout passes SIGTERM on to the connection holder.
kill -TERM "$HOLDER_PID" 2>/dev/null
wait "$HOLDER_PID" 2>/dev/null
[ "$RC" -eq 0 ] || problem "exit code $RC, expected 0"
for r in 0 1 2; do
  grep -q "^rank $r/3 released$" "$OUT" || problem "rank $r did not finish"
done
grep -q 'forged abort' "$ERR" && problem "the launcher printed the forged abort"
echo "  launcher messages about the control port:"
grep -E 'dropped a connection|cannot accept|closed the control port|rejected' "$ERR" |
  head -n 12 | cut -c 1-200 | sed 's/^/  | /'
end_check

begin_check "8: no rank or agent outlives the job, no /dev/shm object"
check_no_shm_leftovers
check_no_survivors
end_check

finish_checks
