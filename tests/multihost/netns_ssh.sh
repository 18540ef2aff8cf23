#!/bin/bash
# netns_ssh.sh: an ssh stand-in for the multi-host tests. Each "host" is a
# network namespace plus a UTS namespace (its own hostname) on one machine;
# this script "logs in" to one by entering both and running the command.
#
#   netns_ssh.sh [options...] [user@]HOST COMMAND...
#
# Called exactly as gasnetrun calls ssh: options first, then the host, then
# the command (gasnetrun passes one shell-quoted string; several words are
# joined with spaces, as ssh does) which runs with `sh -c`.
#
# Options: every ssh option is accepted and ignored (those that take an
# argument, e.g. "-o X" or "-p 22", skip their argument too), except
#   -F FILE   the host table (ssh's config file), one host per line:
#               LABEL NETNS UTS_PID HOSTNAME
#             LABEL is the name callers use, NETNS the `ip netns` name,
#             UTS_PID a process holding the host's UTS namespace, HOSTNAME
#             its hostname. '#' starts a comment line. A line
#               @log FILE
#             appends "CALLER_HOSTNAME HOST" to FILE for every call (the
#             caller's hostname is that of the UTS namespace it runs in).
# Without -F the table is $NETNS_SSH_CONFIG. The multi-host test passes
# "-F table" in GASNET_SSH_OPTIONS, which gasnetrun forwards to its agents,
# so an agent inside one "host" can reach the others (tree fan-out).
#
# Like ssh, the command gets a fresh login-like environment (PATH, HOME,
# USER, LOGNAME, SHELL only): whatever the job needs must travel in the
# command itself. Like ssh, an unknown or unreachable host prints a message
# and exits 255; otherwise the exit status is the command's.
set -u

prog=netns_ssh
fail() {
  echo "$prog: $*" >&2
  exit 255
}

config=${NETNS_SSH_CONFIG:-}
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; break ;;
    -F)
      [ $# -ge 2 ] || fail "option -F needs an argument"
      config=$2
      shift 2
      ;;
    -F?*) config=${1#-F}; shift ;;
    # ssh's options that take an argument, as a separate word.
    -[BbcDEeIiJLlmOopQRSWw])
      [ $# -ge 2 ] || fail "option $1 needs an argument"
      shift 2
      ;;
    -?*) shift ;;  # a flag, flags run together, or -oValue
    *) break ;;
  esac
done

[ $# -ge 1 ] || fail "usage: netns_ssh.sh [options] HOST COMMAND"
host=${1#*@}
shift
[ $# -ge 1 ] || fail "no command for $host (a login shell is not supported)"
command="$*"

[ -n "$config" ] || fail "no host table (-F FILE or NETNS_SSH_CONFIG)"
[ -r "$config" ] || fail "cannot read host table $config"

netns=
uts_pid=
log=
while read -r label ns pid _; do
  case $label in
    '' | '#'*) continue ;;
    @log) log=$ns; continue ;;
  esac
  if [ "$label" = "$host" ]; then
    netns=$ns
    uts_pid=$pid
    break
  fi
done <"$config"
if [ -n "$log" ]; then
  # One short append per call: "CALLER_HOSTNAME TARGET".
  echo "$(cat /proc/sys/kernel/hostname) $host" >>"$log"
fi
[ -n "$netns" ] || fail "unknown host $host"

# The host must still exist: its namespace is mounted and its UTS holder
# is the process that was recorded (a reused pid would be another process,
# in another network namespace).
net_file=/run/netns/$netns
[ -e "$net_file" ] || fail "host $host is down (no namespace $netns)"
want=$(stat -L -c '%d:%i' "$net_file" 2>/dev/null)
have=$(stat -L -c '%d:%i' "/proc/$uts_pid/ns/net" 2>/dev/null)
if [ -z "$want" ] || [ "$want" != "$have" ]; then
  fail "host $host is down (process $uts_pid does not hold it)"
fi

nsenter_bin=$(command -v nsenter) || fail "nsenter not found"
exec env -i \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME="${HOME:-/}" USER="$(id -un)" LOGNAME="$(id -un)" SHELL=/bin/sh \
  "$nsenter_bin" --net="$net_file" --uts="/proc/$uts_pid/ns/uts" -- \
  sh -c "$command"
