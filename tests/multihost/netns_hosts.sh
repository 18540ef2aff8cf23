# shellcheck shell=bash
# netns_hosts.sh: sourced (bash) by the multi-host tests. Three "hosts" on
# one machine, jobs run from host 0, and PASS/FAIL checks.
#
# Each host is a network namespace plus a UTS namespace with its own
# hostname (gexhI-<run suffix>) and address (10.213.0.1I/24 on eth0), one
# end of a veth pair whose other end is a port of a bridge that lives in a
# namespace of its own; the machine's own network is never touched. A
# holder process (`sleep infinity` under `unshare --uts` inside the netns)
# keeps each UTS namespace alive. Jobs run inside host 0's namespaces, like
# a login node, with GASNET_SSH_CMD=netns_ssh.sh, whose host table (-F,
# passed in GASNET_SSH_OPTIONS) maps the labels gexh0..2 to the namespaces.
# netns_ssh.sh logs "CALLER_HOSTNAME TARGET_LABEL" for each call, which
# shows who started which agent (flat or tree fan-out).
#
# The test script sets, before calling anything here:
#   LAUNCHER  the gasnetrun binary (absolute); messages name its basename
#   CLIENT    the job's program (absolute); messages name its basename
#   SSH       netns_ssh.sh (absolute)
#
# Functions:
#   skip REASON / die REASON     print SKIPPED / FAIL: setup, and exit
#   absolute PATH                PATH made absolute
#   hosts_setup                  the hosts, the host table, the traps that
#                                remove everything on every exit path, and
#                                GASNET_SSH_CMD/OPTIONS, GASNET_MASTERIP
#   run_job NAME [VAR=VALUE...] -- LAUNCHER_ARGS...
#                                runs $LAUNCHER inside host 0
#   begin_check / problem / problems_from / end_check / finish_checks
#   check_ssh_calls "CALLER TARGET"...
#   check_no_survivors           no $CLIENT process or agent of ours left
#   check_no_shm_leftovers       no /dev/shm object of any job run here
# and, for the conduits' tests (clients that print the lines below):
#   eth0_bytes I tx|rx           bytes host I's eth0 has sent / received
#   check_ring_output [SKIP_ERE] 6 "rank R: ring ok host=H from=F sum=S"
#                                lines, 2 ranks per host in rank order
#   check_ring_calls             one agent per host, all started by host 0
#   check_flood N TX0 RX0 [SKIP_ERE]
#                                2 "rank R: flood ok count=N ..." lines, one
#                                rank each on hosts 1 and 2, and at least
#                                N x 8 bytes through both hosts' eth0 since
#                                TX0 (host 1's tx) and RX0 (host 2's rx)
#
# Without the tools or permission to create namespaces, hosts_setup prints
# "SKIPPED: <reason>" and exits 0.

# `awk ... | problems_from` must add to PROBLEMS in this shell, not in a
# subshell: the last command of a pipeline runs here (scripts have no job
# control, which lastpipe needs).
shopt -s lastpipe

skip() {
  echo "SKIPPED: $*"
  exit 0
}
die() {
  echo "FAIL: setup: $*"
  exit 1
}
absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

# The start of a test that runs one launcher and client over the hosts:
# skips without root, then takes its three arguments (the launcher, the
# client, netns_ssh.sh; USAGE names them) as absolute paths in LAUNCHER,
# CLIENT and SSH, each an executable file.
#   take_programs "GASNETRUN_X X_CLIENT NETNS_SSH" "$@"
take_programs() {
  [ "$(id -u)" = 0 ] || skip "not root (network namespaces need root)"
  local usage=$1 f
  shift
  [ $# -eq 3 ] || die "usage: $0 $usage"
  LAUNCHER=$(absolute "$1")
  CLIENT=$(absolute "$2")
  SSH=$(absolute "$3")
  for f in "$LAUNCHER" "$CLIENT" "$SSH"; do
    [ -x "$f" ] || die "$f is not an executable file"
  done
}

# Polls CONDITION (a command) until it succeeds, for at most 10 s.
poll() {
  local deadline=$((SECONDS + 10))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.02
  done
}
gone() { ! kill -0 "$1" 2>/dev/null; }

HOSTS=3
LABEL=() NS=() HOSTNAME_OF=() ADDR=() HOLDER=()
CREATED_NS=()
JOB=
WORK=
# The pid of each launcher run_job started (it names the job's PSHM
# objects: /dev/shm/GASNT<8 hex digits><pid><16 hex digits>.*).
LAUNCHER_PIDS=()
# run_job's time limit, in seconds.
JOB_LIMIT_S=${JOB_LIMIT_S:-120}

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
  if [ -n "$WORK" ]; then rm -rf "$WORK"; fi
}
on_exit() {
  local rc=$?
  cleanup
  exit "$rc"
}

# --- the hosts ---------------------------------------------------------------

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

hosts_setup() {
  local tool v i ns err
  for tool in ip unshare nsenter timeout stat; do
    command -v "$tool" >/dev/null || skip "no '$tool' command"
  done

  # Nothing from the caller's environment may steer the launcher.
  for v in $(compgen -e); do
    case $v in GASNET_* | NETNS_SSH_*) unset "$v" ;; esac
  done

  SFX=$$-$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')
  BRNS=gexbr-$SFX
  for ((i = 0; i < HOSTS; i++)); do
    LABEL[i]=gexh$i
    NS[i]=gexh$i-$SFX
    HOSTNAME_OF[i]=gexh$i-$SFX
    ADDR[i]=10.213.0.$((10 + i))
  done
  WORK=$(mktemp -d "${TEST_TMPDIR:-/tmp}/multihost.XXXXXX") ||
    die "cannot make a work directory"

  trap on_exit EXIT
  trap 'echo "interrupted (SIGINT)"; exit 130' INT
  trap 'echo "interrupted (SIGTERM)"; exit 143' TERM
  trap 'echo "interrupted (SIGHUP)"; exit 129' HUP

  if ! err=$(ip netns add "$BRNS" 2>&1); then
    skip "cannot create a network namespace ('ip netns add' said: $err)"
  fi
  CREATED_NS+=("$BRNS")

  ip -n "$BRNS" link set lo up || die "loopback of the bridge namespace"
  ip -n "$BRNS" link add br0 type bridge || die "creating the bridge"
  ip -n "$BRNS" link set br0 up || die "bringing the bridge up"

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
}

# --- running jobs ------------------------------------------------------------

# run_job NAME [VAR=VALUE...] -- LAUNCHER_ARGS...: runs $LAUNCHER inside
# host 0 with a $JOB_LIMIT_S limit; sets OUT, ERR, RC and ELAPSED_MS, and
# adds the launcher's pid to LAUNCHER_PIDS.
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
  local pid_file=$WORK/$name.pid
  : >"$SSH_LOG"
  rm -f "$pid_file"
  local t0
  t0=$(date +%s%N)
  # The inner shell records its pid, which exec makes the launcher's.
  # shellcheck disable=SC2016  # $$ and $0 are the inner shell's
  timeout -k 5 "$JOB_LIMIT_S" \
    nsenter --net="/run/netns/${NS[0]}" --uts="/proc/${HOLDER[0]}/ns/uts" -- \
    sh -c 'echo $$ >"$0" && exec "$@"' "$pid_file" \
    env "${envs[@]}" "$LAUNCHER" "$@" </dev/null >"$OUT" 2>"$ERR" &
  JOB=$!
  wait "$JOB"
  RC=$?
  JOB=
  ELAPSED_MS=$((($(date +%s%N) - t0) / 1000000))
  if [ -s "$pid_file" ]; then LAUNCHER_PIDS+=("$(cat "$pid_file")"); fi
  local shown="${envs[*]}${envs[*]:+ }${LAUNCHER##*/} $*"
  shown=${shown//"$CLIENT"/${CLIENT##*/}}
  shown=${shown//"$WORK"/\$WORK}
  echo "  ran: $shown -> exit $RC in $ELAPSED_MS ms"
  # 137 alone may be the job's own code (a rank killed by SIGKILL).
  if [ "$RC" -eq 124 ] || [ "$ELAPSED_MS" -ge $((JOB_LIMIT_S * 1000)) ]; then
    problem "timed out after $JOB_LIMIT_S s (exit $RC)"
  fi
}

# --- checks --------------------------------------------------------------------

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
# Prints the summary; returns 0 when no check failed.
finish_checks() {
  echo
  echo "SUMMARY: $PASSED passed, $FAILED failed${FAILED_CHECKS[*]:+ (}$(
    IFS=';'
    echo "${FAILED_CHECKS[*]}"
  )${FAILED_CHECKS[*]:+)}"
  [ "$FAILED" -eq 0 ]
}

# Checks the netns_ssh log against "CALLER TARGET" lines (any order).
check_ssh_calls() {
  local want got
  want=$(printf '%s\n' "$@" | sort)
  got=$(sort "$SSH_LOG")
  [ "$want" = "$got" ] ||
    problem "remote shell calls were [$(echo "$got" | tr '\n' ';')], expected [$(echo "$want" | tr '\n' ';')]"
}

# No process running $CLIENT, no agent in our hosts, and nothing but the
# holders in our hosts' namespaces. For use in a check of its own (it
# clears OUT, ERR and the ssh log, which end_check shows).
check_no_survivors() {
  local ancestors p i d pid cmd in_our_hosts
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
    # (2>/dev/null first: a process that has just ended has no cmdline.)
    cmd=$(tr '\0' ' ' 2>/dev/null <"$d/cmdline") || continue
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
}

# No /dev/shm entry named for any job run_job started. The namespaces share
# the machine's /dev/shm, so every host's objects are seen here.
check_no_shm_leftovers() {
  local pid f
  for pid in "${LAUNCHER_PIDS[@]}"; do
    for f in /dev/shm/GASNT????????"$pid"????????????????.*; do
      [ -e "$f" ] || continue
      problem "left in /dev/shm (job of launcher pid $pid): ${f#/dev/shm/}"
    done
  done
}

# --- checks of the conduits' multi-host tests ---------------------------------

# Bytes that host I's eth0 has sent or received (DIR: tx or rx).
eth0_bytes() {  # index dir
  ip netns exec "${NS[$1]}" cat "/sys/class/net/eth0/statistics/$2_bytes"
}

# Checks a ring run of 6 ranks, 2 per host in rank order: every rank's
# "rank R: ring ok host=H from=F sum=S" line, the host of rank r is
# gexh(r/2) (so r and r^1 share one), `from` is rank r-1's host, and
# sum=21. Lines matching SKIP_ERE (e.g. a conduit's device listing) are
# left to the caller; any other line is a problem.
check_ring_output() {  # [skip_ere]
  awk -v sfx="$SFX" -v n=6 -v skip="${1:-}" '
    skip != "" && $0 ~ skip { next }
    { total++ }
    !/^rank [0-9]+: ring ok host=[^ ]+ from=[^ ]+ sum=-?[0-9]+$/ {
      print "unexpected line: " substr($0, 1, 120); next
    }
    {
      rank = $2 + 0
      sub(/^host=/, "", $5); sub(/^from=/, "", $6); sub(/^sum=/, "", $7)
      if (seen[rank]++) print "rank " rank " reported twice"
      if (rank >= n) { print "rank " rank " in a job of " n; next }
      host[rank] = $5; from[rank] = $6
      want = "gexh" int(rank / 2) "-" sfx
      if ($5 != want) print "rank " rank ": host=" $5 ", expected " want
      if ($7 != n * (n + 1) / 2)
        print "rank " rank ": sum=" $7 ", expected " n * (n + 1) / 2
    }
    END {
      if (total != n) print "expected " n " lines, got " total
      for (r = 0; r < n; r++) {
        if (!seen[r]) { print "rank " r " printed no ring line"; continue }
        prev = (r + n - 1) % n
        if (seen[prev] && from[r] != host[prev])
          print "rank " r ": from=" from[r] ", expected the host of rank " prev ", " host[prev]
        if (seen[r ^ 1] && host[r] != host[r ^ 1])
          print "ranks " r " and " (r ^ 1) " on different hosts: " host[r] ", " host[r ^ 1]
      }
    }' "$OUT" | problems_from
}

# The ring jobs' agents: one per host, all started by host 0 (flat).
check_ring_calls() {
  check_ssh_calls "${HOSTNAME_OF[0]} gexh0" "${HOSTNAME_OF[0]} gexh1" \
    "${HOSTNAME_OF[0]} gexh2"
}

# Checks a flood job of 2 ranks, rank 0 on host 1 and rank 1 on host 2
# (GASNET_SSH_SERVERS="gexh1 gexh2", -N 2): both ranks' "rank R: flood ok
# count=N rss_growth_kb=K" lines and nothing else, one agent per host, and
# at least the N 8-byte payloads through host 1's eth0 (sent since TX0)
# and host 2's (received since RX0): the flood crossed the bridge, not lo.
# Lines matching SKIP_ERE are ignored.
check_flood() {  # n tx0 rx0 [skip_ere]
  local n=$1 sent received
  awk -v n="$n" -v skip="${4:-}" '
    skip != "" && $0 ~ skip { next }
    { total++ }
    /^rank [01]: flood ok count=[0-9]+ rss_growth_kb=-?[0-9]+$/ {
      rank = $2 + 0; count = $5; sub(/^count=/, "", count)
      if (seen[rank]++) print "rank " rank " reported twice"
      if (count != n) print "rank " rank ": count=" count ", expected " n
      next
    }
    { print "unexpected line: " substr($0, 1, 120) }
    END {
      if (total != 2) print "expected 2 lines, got " total
      for (r = 0; r < 2; r++) if (!seen[r]) print "rank " r " did not report ok"
    }' "$OUT" | problems_from
  check_ssh_calls "${HOSTNAME_OF[0]} gexh1" "${HOSTNAME_OF[0]} gexh2"
  sent=$(($(eth0_bytes 1 tx) - $2)) received=$(($(eth0_bytes 2 rx) - $3))
  [ "$sent" -ge $((n * 8)) ] ||
    problem "host 1's eth0 sent $sent bytes during the flood (< $n x 8)"
  [ "$received" -ge $((n * 8)) ] ||
    problem "host 2's eth0 received $received bytes during the flood (< $n x 8)"
  echo "  $(grep -o 'rank [01]: flood ok .*' "$OUT" | tr '\n' ';')" \
    "eth0: host 1 sent $sent bytes, host 2 received $received"
}
